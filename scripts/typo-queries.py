"""A test collection's queries with one typo each, for measuring typo tolerance: every query of
<collection dir> (BEIR layout: corpus.jsonl, queries.jsonl, qrels.tsv) with one word of five or
more letters given one random edit (a letter dropped, doubled, changed, or swapped with the
next; never the first letter), written as a collection in <out dir> whose corpus and qrels are
links to the original's. Prints the seed; the same seed gives the same typos.

python3 scripts/typo-queries.py <collection dir> <out dir> [seed]
"""
import json
import os
import random
import re
import string
import sys

src, out = sys.argv[1], sys.argv[2]
seed = int(sys.argv[3]) if len(sys.argv) > 3 else random.SystemRandom().randrange(1 << 31)
print(f"typo-queries: seed {seed}", file=sys.stderr)
rng = random.Random(seed)


def typo(word):
    i = rng.randrange(1, len(word) - 1)
    edit = rng.choice(["drop", "double", "change", "swap"])
    if edit == "drop":
        return word[:i] + word[i + 1 :]
    if edit == "double":
        return word[:i] + word[i] + word[i:]
    if edit == "change":
        return word[:i] + rng.choice([c for c in string.ascii_lowercase if c != word[i]]) + word[i + 1 :]
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :] if word[i] != word[i + 1] else word[:i] + word[i + 1 :]


os.makedirs(out, exist_ok=True)
for name in ("corpus.jsonl", "qrels.tsv"):
    link = os.path.join(out, name)
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(os.path.join(src, name)), link)
lines = []
for line in open(os.path.join(src, "queries.jsonl")):
    if not line.strip():
        continue
    q = json.loads(line)
    words = list(re.finditer(r"[A-Za-z]{5,}", q["text"]))
    if words:
        m = rng.choice(words)
        q["text"] = q["text"][: m.start()] + typo(m.group()) + q["text"][m.end() :]
    lines.append(json.dumps(q))
with open(os.path.join(out, "queries.jsonl"), "w") as f:
    f.write("\n".join(lines) + "\n")
