#!/usr/bin/env bash
# Installs the documentation site's tools (make site-deps; `make site` and scripts/deps.sh run it) into
# .cache/ when missing or when a pin changed:
#   - .cache/site-venv: a Python venv with MkDocs and the Material theme, every package pinned in
#     scripts/site/requirements.txt (from PyPI with the venv's pip);
#   - .cache/site-npm/mermaid/mermaid.min.js: mermaid's browser bundle, from the npm registry's
#     `mermaid` package at MERMAID_VERSION (npm pack; the tarball checked against MERMAID_INTEGRITY),
#     copied into the built site by scripts/site/stage.py (not committed: it is over 5 MB);
#   - .cache/site-npm/iframe-worker/index.js: the shim that lets Material's search worker run from
#     file:// (the npm package `iframe-worker`, which Material's offline plugin would take from a CDN).
# The venv needs python3 with its venv module (Debian: python3-venv) and npm: as root they come from
# apt-get when missing; otherwise it says what to install. Idempotent and quiet when all is present.
set -euo pipefail

MERMAID_VERSION=12.4.0
MERMAID_INTEGRITY=sha512-j2gvsGUFeS/53WdYLl9H5G2YtMZX9G/PlCvV3E5Pf4j5XSnK19DwazU6wki7OTcKeYKed7+qujRDLhy8NV2zBg==
IFRAME_WORKER_VERSION=1.0.4
IFRAME_WORKER_INTEGRITY=sha512-roeaaI+Lg1LJNfgpCjoRe/+WzEjy9+Z08LoEvu85MCPbBjwm+qXz8Ag5U05lHa6V1CysZyGzE0SOkAtSUA5q7Q==

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/.cache"
venv="$cache/site-venv"
req="$root/scripts/site/requirements.txt"
npmdir="$cache/site-npm"

need=()
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ -x "$venv/bin/python" ] || { command -v python3 >/dev/null 2>&1 && python3 -c 'import venv, ensurepip' >/dev/null 2>&1; }; then
	:
else
	need+=(python3-venv)
fi
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "deps: installing ${need[*]} with apt-get (the documentation site's tools)" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	else
		printf 'deps: missing: %s\n  the documentation site (make site) needs python3 with venv and npm:\n  - Debian/Ubuntu:  sudo apt-get install python3 python3-venv npm\n' "${need[*]}" >&2
		exit 1
	fi
fi

# The venv, rebuilt when the pins changed (its stamp is a copy of the requirements it was made from).
stamp="$venv/.requirements.txt"
if ! { [ -x "$venv/bin/mkdocs" ] && cmp -s "$req" "$stamp"; }; then
	echo "deps: site venv (.cache/site-venv): the packages pinned in scripts/site/requirements.txt" >&2
	rm -rf "$venv"
	python3 -m venv "$venv"
	log="$(mktemp)"
	if ! "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		echo "deps: pip could not install scripts/site/requirements.txt (it needs PyPI)" >&2
		exit 1
	fi
	rm -f "$log"
	cp "$req" "$stamp"
fi

# npm_vendor NAME VERSION INTEGRITY FILE: the package's tarball as npm packs it, checked against
# INTEGRITY, and of it only FILE (as .cache/site-npm/NAME/<basename>) and its LICENSE; again only when
# the pin changed.
npm_vendor() {
	local name=$1 version=$2 integrity=$3 file=$4 dir="$npmdir/$1"
	local want="$version $integrity $file"
	if [ -f "$dir/$(basename "$file")" ] && [ "$(cat "$dir/.version" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	echo "deps: $name $version (npm registry) into .cache/site-npm/$name" >&2
	rm -rf "$dir"
	mkdir -p "$dir"
	local tgz got
	tgz="$(cd "$dir" && npm pack --silent "$name@$version" | tail -1)"
	got="sha512-$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$dir/$tgz")"
	if [ "$got" != "$integrity" ]; then
		echo "deps: $tgz: integrity $got, want $integrity" >&2
		exit 1
	fi
	tar -xzf "$dir/$tgz" -C "$dir" "package/$file" package/LICENSE
	mv "$dir/package/$file" "$dir/"
	mv "$dir/package/LICENSE" "$dir/LICENSE"
	rm -rf "$dir/package" "$dir/$tgz"
	echo "$want" >"$dir/.version"
}
npm_vendor mermaid "$MERMAID_VERSION" "$MERMAID_INTEGRITY" dist/mermaid.min.js
npm_vendor iframe-worker "$IFRAME_WORKER_VERSION" "$IFRAME_WORKER_INTEGRITY" shim/index.js
