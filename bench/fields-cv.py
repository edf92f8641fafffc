"""Cross-validates the [fields] title weight on Cranfield and gives 95% paired-bootstrap intervals
for each fields change, from the per-query metrics scripts/bench-fields.sh wrote.
Usage: python3 bench/fields-cv.py <dir>"""
import json
import random
import sys

SEED = 1
out = sys.argv[1]


def load(name):
    runs = {}
    with open(f"{out}/{name}.jsonl") as f:
        for line in f:
            o = json.loads(line)
            runs[(o["mode"], o["query"])] = o
    return runs


def queries(run):
    return sorted({q for (m, q) in run if m == "hybrid"})


def bootstrap(a, b, mode, metric, qs, resamples=10_000):
    rng = random.Random(SEED)
    diffs = [b[(mode, q)][metric] - a[(mode, q)][metric] for q in qs]
    means = sorted(sum(rng.choice(diffs) for _ in qs) / len(qs) for _ in range(resamples))
    return sum(diffs) / len(diffs), means[int(0.025 * resamples)], means[int(0.975 * resamples)]


print(f"seed {SEED}")
for corpus in ["cranfield", "docs"]:
    runs = {n: load(f"{corpus}-{n}") for n in ["t0h1e0", "t1h1e0", "t2h1e0", "t3h1e0", "t1h1e1"]}
    qs = queries(runs["t0h1e0"])
    print(f"## {corpus}: differences, mean [95% CI]")
    for metric in ["ndcg@10", "mrr@10", "recall@100"]:
        for mode in ["hybrid", "dense", "keyword"]:
            t = bootstrap(runs["t0h1e0"], runs["t1h1e0"], mode, metric, qs)
            e = bootstrap(runs["t1h1e0"], runs["t1h1e1"], mode, metric, qs)
            print(f"{mode:8} {metric:10} title 0→1 {t[0]:+.4f} [{t[1]:+.4f}, {t[2]:+.4f}]   "
                  f"embed context off→on {e[0]:+.4f} [{e[1]:+.4f}, {e[2]:+.4f}]")
    if corpus != "cranfield":
        continue
    rng = random.Random(SEED)
    order = qs[:]
    rng.shuffle(order)
    folds = [order[i::5] for i in range(5)]
    for mode in ["keyword", "hybrid"]:
        print(f"## cranfield: 5-fold CV of the title weight (0-3), {mode}, nDCG@10")
        held = []
        for i, fold in enumerate(folds):
            train = [q for q in qs if q not in fold]
            best = max(["t0h1e0", "t1h1e0", "t2h1e0", "t3h1e0"],
                       key=lambda n: sum(runs[n][(mode, q)]["ndcg@10"] for q in train))
            held += [runs[best][(mode, q)]["ndcg@10"] for q in fold]
            test = sum(runs[best][(mode, q)]["ndcg@10"] for q in fold) / len(fold)
            print(f"fold {i}: chose {best}, held out {test:.4f} ({len(fold)} queries)")
        print(f"cross-validated {sum(held) / len(held):.4f}")
