#!/usr/bin/env python3
"""Textbook Okapi BM25 on a BEIR-layout collection: the reference keyword search beside sextant's.

The definition of shared/data/npl/README.md: lower-case `[a-z0-9]+` tokens, Lucene's 33 English
stop words, the original Porter stemmer (NLTK's ORIGINAL_ALGORITHM mode), one field of
`title + " " + text`, idf = ln(1 + (N - df + 0.5) / (df + 0.5)), b = 0.75 and k1 as given. Scores
every document, ranks by score then document order, and prints nDCG@10 (gain 2^g - 1,
log2(rank + 1) discount), MRR@10 (any gain > 0 relevant) and Recall@100 as `sextant eval` does,
and with --per-query each query's nDCG@10 (for paired comparisons).

Usage: bench/textbook_bm25.py DIR [--k1 1.2] [--b 0.75] [--json] [--per-query]
(DIR holds corpus.jsonl, queries.jsonl, qrels.tsv). Needs `pip install nltk`.
"""
import argparse
import collections
import json
import math
import re
import sys

from nltk.stem.porter import PorterStemmer

# Lucene's EnglishAnalyzer stop words (ENGLISH_STOP_WORDS_SET), 33 of them.
STOP = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)
TOKEN = re.compile(r"[a-z0-9]+")


def analyzer():
    stemmer = PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)
    cache = {}

    def terms(text):
        out = []
        for t in TOKEN.findall(text.lower()):
            if t in STOP:
                continue
            s = cache.get(t)
            if s is None:
                s = cache[t] = stemmer.stem(t)
            out.append(s)
        return out

    return terms


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_qrels(path):
    qrels = collections.defaultdict(dict)
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            q, d, g = line.rstrip("\n").split("\t")
            if int(g) > 0:
                qrels[q][d] = int(g)
    return qrels


def metrics(ranked, relevant):
    dcg = sum((2 ** relevant.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    mrr = next((1 / (i + 1) for i, d in enumerate(ranked[:10]) if relevant.get(d, 0) > 0), 0.0)
    recall = len([d for d in ranked[:100] if d in relevant]) / len(relevant)
    return (dcg / idcg if idcg else 0.0), mrr, recall


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--k1", type=float, default=1.2)
    p.add_argument("--b", type=float, default=0.75)
    p.add_argument("--json", action="store_true")
    p.add_argument("--per-query", action="store_true")
    a = p.parse_args()
    terms = analyzer()
    docs = read_jsonl(f"{a.dir}/corpus.jsonl")
    ids = [d["_id"] for d in docs]
    postings = collections.defaultdict(list)
    lengths = []
    for n, d in enumerate(docs):
        t = terms(f"{d.get('title', '')} {d.get('text', '')}")
        lengths.append(len(t))
        for term, tf in collections.Counter(t).items():
            postings[term].append((n, tf))
    N = len(docs)
    avgdl = sum(lengths) / N
    qrels = read_qrels(f"{a.dir}/qrels.tsv")
    queries = [q for q in read_jsonl(f"{a.dir}/queries.jsonl") if q["_id"] in qrels]
    totals = [0.0, 0.0, 0.0]
    for q in queries:
        scores = collections.defaultdict(float)
        for term in terms(q["text"]):
            plist = postings.get(term, [])
            if not plist:
                continue
            idf = math.log(1 + (N - len(plist) + 0.5) / (len(plist) + 0.5))
            for n, tf in plist:
                norm = a.k1 * (1 - a.b + a.b * lengths[n] / avgdl)
                scores[n] += idf * tf * (a.k1 + 1) / (tf + norm)
        ranked = [ids[n] for n, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))]
        m = metrics(ranked, qrels[q["_id"]])
        if a.per_query:
            print(json.dumps({"query": q["_id"], "ndcg@10": m[0], "mrr@10": m[1], "recall@100": m[2]}))
        for i in range(3):
            totals[i] += m[i]
    n = len(queries)
    result = {"mode": "textbook-bm25", "k1": a.k1, "b": a.b, "ndcg@10": totals[0] / n, "mrr@10": totals[1] / n, "recall@100": totals[2] / n, "queries": n}
    if a.json or a.per_query:
        print(json.dumps(result))
    else:
        print(f"textbook BM25 (k1 {a.k1}, b {a.b}) on {n} queries: nDCG@10 {result['ndcg@10']:.4f}  MRR@10 {result['mrr@10']:.4f}  Recall@100 {result['recall@100']:.4f}")


if __name__ == "__main__":
    sys.exit(main())
