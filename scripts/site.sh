#!/usr/bin/env bash
# Builds the documentation site (make site): the site's tools first (scripts/site-deps.sh), then the
# pages laid out in .cache/site-src (scripts/site/stage.py) and MkDocs (mkdocs.yml) into SITE_DIR
# (default site/), a folder that opens from the file system (open site/index.html). The browser test
# (docs/site) builds it the same way and loads every page in headless Chromium.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${SITE_DIR:-$root/site}"
"$root/scripts/site-deps.sh"
"$root/.cache/site-venv/bin/python" "$root/scripts/site/stage.py" "$root" "$root/.cache/site-src" "$root/.cache/site-npm"
cd "$root"
NO_MKDOCS_2_WARNING=1 "$root/.cache/site-venv/bin/mkdocs" build --quiet --clean -f "$root/mkdocs.yml" -d "$out"
# 404.html is for a web server (its links are absolute, from the site's root): the site opens from files.
rm -f "$out/404.html"
echo "site: $(find "$out" -name '*.html' | wc -l) HTML pages in ${out#"$root"/} ($(du -sh "$out" | cut -f1)); open $out/index.html"
