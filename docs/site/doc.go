// Package site holds the documentation site's browser test (site_test.go): `make site`
// (scripts/site.sh, mkdocs.yml) builds README.md, the course, the design, the reference pages,
// CONTRIBUTING.md, the figures and the HTML reports of docs/figures/ into site/, and the test loads
// every page of it in headless Chromium from the file system, as a reader opens it. No non-test code.
package site
