#!/usr/bin/env python3
"""Copies a built Sphinx site, each page marked with a `section` filter for both engines.

A filtered session (bench/pagefind-session.mjs, site `python-sections`) needs a site whose pages
carry filter values both engines read: Pagefind's own attribute, `data-pagefind-filter`, which
sextant reads as an alias of `data-sextant-filter`. A page's section is the first folder of its
path (`library`, `c-api`, `tutorial`, …) or `top` for a page at the root; the attribute goes on
the element holding the page's text (`<div class="body" role="main">` in Sphinx's themes), so
neither engine indexes anything else than before. Links are copied as the files they point to.

    python3 bench/sectioned-site.py /usr/share/doc/python3.11/html DEST

Prints the number of pages marked per section; fails when no page has the element (another
theme), so the session never runs unfiltered by mistake.
"""

import collections
import os
import shutil
import sys

MAIN = '<div class="body" role="main">'


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: sectioned-site.py SITE DEST")
    src, dest = sys.argv[1], sys.argv[2]
    if os.path.exists(dest):
        sys.exit(f"sectioned-site.py: {dest} exists; give a new folder")
    shutil.copytree(src, dest, symlinks=False)
    counts = collections.Counter()
    for root, _, files in os.walk(dest):
        for name in files:
            if not name.endswith(".html"):
                continue
            page = os.path.join(root, name)
            rel = os.path.relpath(page, dest)
            section = rel.split(os.sep)[0] if os.sep in rel else "top"
            with open(page, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            if MAIN not in text:
                continue
            marked = MAIN.replace(">", f' data-pagefind-filter="section:{section}">', 1)
            with open(page, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text.replace(MAIN, marked, 1))
            counts[section] += 1
    if not counts:
        sys.exit(f"sectioned-site.py: no page of {src} has {MAIN}")
    for section, n in counts.most_common():
        print(f"{section}\t{n}")


if __name__ == "__main__":
    main()
