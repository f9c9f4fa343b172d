#!/usr/bin/env bash
# Installs what the lab and the tests need when it is missing: a ZooKeeper server (Debian's
# `zookeeper` package, 3.8), a Java runtime, kcat (librdkafka), kafka-python, and a C compiler (the
# race detector that `make test` uses needs cgo) and Chromium (a test loads the scenario report in
# it). As root it uses apt-get; otherwise it says what to
# install. Idempotent and quiet when all is present.
set -euo pipefail

need=()
have_zk() {
	[ -n "${ZOOKEEPER_HOME:-}" ] && ls "$ZOOKEEPER_HOME"/lib/*.jar >/dev/null 2>&1 && return 0
	[ -f /usr/share/java/zookeeper.jar ]
}
have_zk || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
python3 -c 'import kafka' >/dev/null 2>&1 || /usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
command -v "${CC:-gcc}" >/dev/null 2>&1 || command -v cc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v chromium >/dev/null 2>&1 || need+=(chromium) # the scenario report's browser test

[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing ${need[*]} with apt-get" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	exit 0
fi

cat >&2 <<MSG
deps: missing: ${need[*]}
  rebalancelab runs a REAL ZooKeeper server and tests against real Kafka clients. Get them by one of:
  - Debian/Ubuntu:  sudo apt-get install zookeeper default-jre-headless kcat python3-kafka gcc chromium
  - a ZooKeeper 3.8 tarball: export ZOOKEEPER_HOME=/path/to/apache-zookeeper-3.8.x-bin (needs java on PATH)
  - an external ensemble:    rebalancelab ... --zk HOST:PORT
MSG
exit 1
