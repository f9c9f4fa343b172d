"""MkDocs hooks of the documentation site (mkdocs.yml's hooks).

A link to a folder (figures/herd-effect/) opens a directory listing from the file system, or nothing:
on_page_markdown points every relative link to a folder that holds an index.html (the HTML reports of
docs/figures/) or an index.md (docs/figures/ itself, its index written by stage.py) at that page, so
the site needs no web server.
"""

import os
import re

LINK = re.compile(r"(\]\(<?)([^)\s>#?]+)")


def on_page_markdown(markdown, page, config, files):
    here = os.path.dirname(page.file.abs_src_path)

    def fix(m):
        target = m.group(2)
        if "://" in target or target.startswith(("/", "mailto:")):
            return m.group(0)
        path = os.path.normpath(os.path.join(here, target))
        if os.path.isdir(path):
            for index in ("index.html", "index.md"):
                if os.path.isfile(os.path.join(path, index)):
                    return m.group(1) + target.rstrip("/") + "/" + index
        return m.group(0)

    return LINK.sub(fix, markdown)
