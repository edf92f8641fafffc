#!/usr/bin/env python3
"""A small, fixed subset of a BEIR-layout collection, for a quality check fast enough for `make test`.

Keeps every other judged query (the 1st, 3rd, …, in file order), every document judged relevant
to a kept query, and a deterministic sample of the other documents (seeded, printed), in corpus
order; the judgements of the kept queries. Scores on a subset are higher than on the whole
collection (fewer distractors), so it checks the modes against each other, not absolute figures.

Usage: bench/subset.py SRC DST [--others 1500] [--seed 1]
"""
import argparse
import json
import random
from pathlib import Path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--others", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"seed {args.seed}")
    queries = [json.loads(l) for l in (args.src / "queries.jsonl").read_text().splitlines() if l.strip()]
    lines = (args.src / "qrels.tsv").read_text().splitlines()
    header, rows = lines[0], [l.split("\t") for l in lines[1:] if l.strip()]
    judged = {r[0] for r in rows}
    kept = [q for q in queries if q["_id"] in judged][::2]
    kept_ids = {q["_id"] for q in kept}
    rows = [r for r in rows if r[0] in kept_ids]
    relevant = {r[1] for r in rows if int(r[2]) > 0}
    corpus = [l for l in (args.src / "corpus.jsonl").read_text().splitlines() if l.strip()]
    ids = [json.loads(l)["_id"] for l in corpus]
    others = sorted(i for i, d in enumerate(ids) if d not in relevant)
    sample = set(random.Random(args.seed).sample(others, min(args.others, len(others))))
    args.dst.mkdir(parents=True, exist_ok=True)
    with open(args.dst / "corpus.jsonl", "w") as f:
        for i, line in enumerate(corpus):
            if ids[i] in relevant or i in sample:
                f.write(line + "\n")
    with open(args.dst / "queries.jsonl", "w") as f:
        for q in kept:
            f.write(json.dumps(q) + "\n")
    with open(args.dst / "qrels.tsv", "w") as f:
        f.write(header + "\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    print(f"{len(kept)} queries, {len(relevant)} relevant + {len(sample)} other documents")


if __name__ == "__main__":
    main()
