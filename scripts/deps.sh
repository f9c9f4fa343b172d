#!/usr/bin/env bash
# Installs what the lab and the tests need when it is missing: a ZooKeeper server (Debian's
# `zookeeper` package, 3.8), a JDK 17 (ZooKeeper's and Kafka's JVMs, the interop build) and Maven,
# kcat (librdkafka), kafka-python with its snappy and lz4 codecs, a C compiler (the race detector that `make test` uses needs cgo),
# Chromium (a test loads the scenario report in it), and Prometheus and Burrow (a test has each watch
# a running lab), and iproute2 (test hosts as network namespaces). As root it uses apt-get; otherwise it says
# what to install. Then the interop build (interop/, Maven): the pinned Kafka 3.9 broker's classpath, resolved
# from Maven Central into interop/<module>/target/lib (with the jar of a module's own Java sources, the
# lab's peers: Streams' MergeApp, Connect's connectors, the old connector's harness), rebuilt when
# missing or older than a POM or a module's source.
# Last, the documentation site's tools (scripts/site-deps.sh, also `make site-deps`: python3-venv and
# npm from apt-get when missing, MkDocs and Material pinned from PyPI into .cache/site-venv, mermaid
# and iframe-worker pinned from the npm registry into .cache/site-npm): the site's browser test
# (docs/site) builds the site.
# Idempotent and quiet when all is present.
#
# `scripts/deps.sh demo` (make demo-deps) installs only what `make demo` runs: a ZooKeeper server and a
# JRE (the demo's brokers and members are this repository's Go code; no Kafka jars, no interop build).
# A non-root user who has both needs neither root nor apt-get.
set -euo pipefail

mode=${1:-all}
case "$mode" in
all | demo) ;;
*)
	echo "deps: mode $mode: want all (what make test needs; the default) or demo (ZooKeeper and a JRE)" >&2
	exit 2
	;;
esac

need=()
have_zk() {
	[ -n "${ZOOKEEPER_HOME:-}" ] && ls "$ZOOKEEPER_HOME"/lib/*.jar >/dev/null 2>&1 && return 0
	[ -f /usr/share/java/zookeeper.jar ]
}
have_zk || need+=(zookeeper)
# install_or_say installs need[] with apt-get as root, or prints what to install ($1: what the packages
# are for, $2: the commands that get them) and exits 1. Nothing is missing: it returns.
install_or_say() {
	[ ${#need[@]} -gt 0 ] || return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps: installing ${need[*]} with apt-get$1" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
		return 0
	fi
	printf 'deps: missing: %s\n%s\n' "${need[*]}" "$2" >&2
	exit 1
}
if [ "$mode" = demo ]; then
	command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
	install_or_say " (what make demo runs)" "  make demo runs a REAL ZooKeeper server (a JVM). Get it by one of:
  - Debian/Ubuntu:  sudo apt-get install zookeeper openjdk-17-jre-headless
  - a ZooKeeper 3.8 tarball: export ZOOKEEPER_HOME=/path/to/apache-zookeeper-3.8.x-bin (needs java on PATH)"
	exit 0
fi
# The interop build and the Kafka 3.9 broker: a JDK 17 (javac marks the JDK) and Maven.
{ command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; } || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
python3 -c 'import kafka' >/dev/null 2>&1 || /usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
# kafka-python's snappy and lz4 codecs (lz4 in message format 0 needs xxhash for its header checksum).
/usr/bin/python3 -c 'import snappy' >/dev/null 2>&1 || need+=(python3-snappy)
/usr/bin/python3 -c 'import lz4.frame' >/dev/null 2>&1 || need+=(python3-lz4)
/usr/bin/python3 -c 'import xxhash' >/dev/null 2>&1 || need+=(python3-xxhash)
command -v "${CC:-gcc}" >/dev/null 2>&1 || command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v chromium >/dev/null 2>&1 || need+=(chromium) # the scenario report's browser test
# The operator's tools a test points at a running lab: Debian's Prometheus (2.42) and Burrow (1.2.1).
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v Burrow >/dev/null 2>&1 || need+=(burrow) # Debian installs it as /usr/bin/Burrow
# Test hosts as network namespaces (lab/hosts.go): ip and tc.
{ command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1; } || need+=(iproute2)

install_or_say "" "  rebalancelab runs a REAL ZooKeeper server and tests against real Kafka clients. Get them by one of:
  - Debian/Ubuntu:  sudo apt-get install zookeeper openjdk-17-jdk-headless maven kcat python3-kafka python3-snappy python3-lz4 python3-xxhash gcc chromium prometheus burrow iproute2
  - a ZooKeeper 3.8 tarball: export ZOOKEEPER_HOME=/path/to/apache-zookeeper-3.8.x-bin (needs java on PATH)
  - an external ensemble:    rebalancelab ... --zk HOST:PORT"

# The interop build: each module's runtime classpath in <module>/target/lib, stamped when complete.
root="$(cd "$(dirname "$0")/.." && pwd)"
for pom in "$root"/interop/*/pom.xml; do
	mod="$(dirname "$pom")"
	stamp="$mod/target/lib/.complete"
	if [ -f "$stamp" ] && [ "$stamp" -nt "$pom" ] && [ "$stamp" -nt "$root/interop/pom.xml" ] &&
		[ -z "$(find "$mod" -path "$mod/target" -prune -o -newer "$stamp" -type f -print -quit 2>/dev/null)" ]; then
		continue
	fi
	name="$(basename "$mod")"
	echo "deps: interop build of $name (Maven Central: the artifacts pinned in interop/$name/pom.xml)" >&2
	rm -rf "$mod/target/lib"
	log="$(mktemp)"
	if ! mvn -B -q -f "$root/interop/pom.xml" -pl "$name" -am package >"$log" 2>&1; then
		cat "$log" >&2
		missing="$(grep -oE 'org\.apache\.kafka:[A-Za-z0-9_.-]+:jar:[0-9][^ ,]*' "$log" | head -1 || true)"
		echo "deps: the interop build of $name failed${missing:+: could not resolve $missing}." >&2
		echo "  It needs Maven Central (https://repo.maven.apache.org/maven2) for the versions pinned in interop/$name/pom.xml." >&2
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
	touch "$stamp"
done

# The documentation site's tools (make site; docs/site's browser test builds the site).
"$root/scripts/site-deps.sh"
