"""Lays the documentation site's pages out for MkDocs (scripts/site.sh runs it with the site venv).

Usage: stage.py ROOT OUT NPMDIR. OUT (.cache/site-src, mkdocs.yml's docs_dir) is emptied and gets the
pages at their paths in the repository, so that every relative link the Markdown has on GitHub holds in
the site too: README.md (the home page: MkDocs takes a folder's README.md as its index), CONTRIBUTING.md
and docs/ with its figures and HTML reports, less the Go packages under docs/ (a folder with a .go file:
docs/gen, docs/site) and Go files. Then every repository file a page links to (e.g. a scenario script
under scenarios/examples/) is copied beside the pages, docs/figures/ gets an index page listing its
reports and files (the course links the folder), and the npm packages' files from NPMDIR
(scripts/site-deps.sh: mermaid, iframe-worker) go to assets/<package>/. Prints nothing; errors end it with a traceback.
"""

import os
import re
import shutil
import sys

# A Markdown link or image target, or an HTML src/href, that is relative (no scheme, no leading /, no #).
LINK = re.compile(r"""(?:\]\(<?|\b(?:src|href)=["'])([^)\s>"'#?]+)""")


def is_go_package(path):
    return any(name.endswith(".go") for name in os.listdir(path))


def copy_docs(root, out):
    for top in ("README.md", "CONTRIBUTING.md"):
        if os.path.exists(os.path.join(root, top)):
            shutil.copy2(os.path.join(root, top), os.path.join(out, top))
    src = os.path.join(root, "docs")
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if not is_go_package(os.path.join(dirpath, d)))
        rel = os.path.relpath(dirpath, root)
        os.makedirs(os.path.join(out, rel), exist_ok=True)
        for name in filenames:
            if not name.endswith(".go"):
                shutil.copy2(os.path.join(dirpath, name), os.path.join(out, rel, name))


def copy_linked(root, out):
    """Copies the repository files the pages link to that are not pages themselves."""
    for dirpath, _, filenames in os.walk(out):
        for name in filenames:
            if not name.endswith(".md"):
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                text = f.read()
            for target in LINK.findall(text):
                if "://" in target or target.startswith(("/", "mailto:")):
                    continue
                dst = os.path.normpath(os.path.join(dirpath, target))
                rel = os.path.relpath(dst, out)
                if rel.startswith("..") or os.path.exists(dst):
                    continue
                src = os.path.join(root, rel)
                if os.path.isfile(src):
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    shutil.copy2(src, dst)


def figures_index(out):
    """Writes docs/figures/index.md when docs/figures has none: a page listing the HTML reports and
    every figure file, so that the course's links to the folder (figures/) open a page."""
    figures = os.path.join(out, "docs", "figures")
    index = os.path.join(figures, "index.md")
    if not os.path.isdir(figures) or os.path.exists(index):
        return
    reports, files = [], []
    for name in sorted(os.listdir(figures)):
        path = os.path.join(figures, name)
        if os.path.isfile(os.path.join(path, "index.html")):
            reports.append(name)
        elif os.path.isfile(path):
            files.append(name)
    lines = ["# The course's figures", "",
             "Every figure the chapters show, as docs/gen wrote it from a real run "
             "([the course](../README.md) says which chapter shows which).", "",
             "## Scenario reports", "",
             "The HTML report of each scenario run (per era: ownership lanes, member lanes, figures), "
             "with its result JSON and table.", ""]
    for name in reports:
        lines.append(f"- [{name}]({name}/index.html) ([result.json]({name}/result.json), "
                     f"[table.txt]({name}/table.txt))")
    lines += ["", "## Files", ""]
    for name in files:
        target = name[:-3] + ".md" if name.endswith(".md") else name
        lines.append(f"- [{name}]({target})")
    with open(index, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    root, out, npmdir = sys.argv[1:4]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    copy_docs(root, out)
    copy_linked(root, out)
    figures_index(out)
    # The npm packages' files (scripts/site-deps.sh), each folder as assets/<package>/.
    for name in ("mermaid", "iframe-worker"):
        shutil.copytree(os.path.join(npmdir, name), os.path.join(out, "assets", name),
                        ignore=shutil.ignore_patterns(".version"))


if __name__ == "__main__":
    main()
