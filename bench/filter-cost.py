#!/usr/bin/env python3
"""What filtering, filter counts and sorting cost a query (BENCHMARKS.md, "Filters").

Writes a collection (default NPL: 11,426 abstracts) as a site, one HTML page a document, each
with a filter `group` (its number mod 10, `g0`…`g9`) and a sort key `n` (its number), builds it
with `sextant build --site`, then runs every query of the collection through `sextant search
--queries --json` in each mode, plain and with a filter, with filter counts, and sorted, and
prints the median and mean of `timings.total_ms` (the core's own timing of the query, the model
already loaded) for each.

    python3 bench/filter-cost.py ../shared/data/npl [--sextant target/release/sextant] [--work DIR]
"""

import argparse
import html
import json
import os
import statistics
import subprocess
import sys
import tempfile


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("collection", help="a BEIR-layout folder: corpus.jsonl and queries.jsonl")
    p.add_argument("--sextant", default=os.path.expanduser("~/.cache/sextant/target/release/sextant"))
    p.add_argument("--work", default=None, help="folder for the site (default: a new temporary one)")
    args = p.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="sextant-filter-cost-")
    site = os.path.join(work, "site")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(args.collection, "corpus.jsonl"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            doc = json.loads(line)
            page = os.path.join(site, f"d{i}.html")
            title = html.escape(doc.get("title") or f"Document {doc['_id']}")
            text = html.escape(doc["text"])
            with open(page, "w", encoding="utf-8") as out:
                out.write(
                    f'<html><head><title>{title}</title></head><body><main data-sextant-filter="group:g{i % 10}" '
                    f'data-sextant-sort="n:{i}"><p>{text}</p></main></body></html>'
                )
    print(f"site: {work}", file=sys.stderr)
    subprocess.run([args.sextant, "build", "--site", site], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(site, "sextant", "sextant.json"), encoding="utf-8") as f:
        index = os.path.join(site, "sextant", json.load(f)["index"])
    queries = os.path.join(args.collection, "queries.jsonl")

    variants = {
        "plain": [],
        "filter group=g3": ["--filter", "group=g3"],
        "filter group!=g3": ["--filter", "group!=g3"],
        "filter counts": ["--filter-counts"],
        "sort n:desc": ["--sort", "n:desc"],
    }
    print("| mode | variant | median ms | mean ms | results per query |")
    print("|---|---|---|---|---|")
    for mode in ["keyword", "hybrid"]:
        for name, extra in variants.items():
            out = subprocess.run(
                [args.sextant, "search", index, "--queries", queries, "--mode", mode, "--json", *extra],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            lines = [json.loads(l) for l in out.splitlines() if l.strip()]
            ms = [l["timings"]["total_ms"] for l in lines]
            n = statistics.mean(len(l["results"]) for l in lines)
            print(f"| {mode} | {name} | {statistics.median(ms):.2f} | {statistics.mean(ms):.2f} | {n:.1f} |")


if __name__ == "__main__":
    main()
