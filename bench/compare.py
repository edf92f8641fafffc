#!/usr/bin/env python3
"""Paired comparison of two `sextant eval --per-query` files (or textbook_bm25.py --per-query).

For each collection and mode present in both (a file without "collection" counts as the name
given with --collection), the mean of each metric before and after and the mean difference with
its 95% confidence interval from a paired bootstrap over queries (10,000 resamples, seeded,
printed), as `sextant eval --all-modes` computes it.

Usage: bench/compare.py BEFORE.jsonl AFTER.jsonl [--collection NAME] [--seed 1]
"""
import argparse
import json
import random
from collections import defaultdict

METRICS = ["ndcg@10", "mrr@10", "recall@100"]


def load(path, default):
    out = defaultdict(dict)
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("variant", "defaults") != "defaults":
            continue
        out[(r.get("collection", default), r["mode"])][r["query"]] = r
    return out


def bootstrap(diffs, rng, samples=10_000):
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    return means[int(0.025 * samples)], means[int(0.975 * samples) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--collection", default="collection")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    before, after = load(args.before, args.collection), load(args.after, args.collection)
    print(f"paired bootstrap, 10,000 resamples, seed {args.seed}")
    for key in sorted(set(before) & set(after)):
        queries = sorted(set(before[key]) & set(after[key]))
        line = f"{key[0]:<14} {key[1]:<8} ({len(queries)} queries)"
        for m in METRICS:
            b = [before[key][q][m] for q in queries]
            a = [after[key][q][m] for q in queries]
            rng = random.Random(args.seed)
            low, high = bootstrap([x - y for x, y in zip(a, b)], rng)
            mb, ma = sum(b) / len(b), sum(a) / len(a)
            line += f"  {m} {mb:.4f} → {ma:.4f} {ma - mb:+.4f} [{low:+.4f}, {high:+.4f}]"
        print(line)


if __name__ == "__main__":
    main()
