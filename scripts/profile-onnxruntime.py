"""onnxruntime's per-operator profile of the model on the same inputs `profile_embed` gives tract:
for 8, 16 and 32 tokens, the first Cranfield queries that long (cut to that length, [SEP] last),
one thread, time per operator kind per run, slowest first (its JSON on stdout).

python3 scripts/profile-onnxruntime.py <queries.jsonl> <model dir> [rounds]
Needs `pip install onnxruntime tokenizers numpy` (benchmarks only; tests never use it).
"""
import json
import os
import tempfile
import time
from collections import defaultdict

import numpy as np
import onnxruntime as ort
from ort_common import setup

queries, model_dir, rounds, tok = setup(20)


def inputs_of(length, count=20):
    """`count` id sequences of exactly `length` tokens: queries cut there, [SEP] kept last."""
    out = []
    for q in queries:
        ids = tok.encode(q).ids
        if len(ids) >= length:
            out.append(ids[: length - 1] + [ids[-1]])
        if len(out) == count:
            break
    return out


report = {"onnxruntime": ort.__version__, "rounds": rounds, "lengths": {}}
for length in (8, 16, 32):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    sess = ort.InferenceSession(f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    seqs = inputs_of(length)
    runs = 0
    wall = []
    for _ in range(rounds):
        for ids in seqs:
            a = np.array([ids], dtype=np.int64)
            feed = {"input_ids": a, "attention_mask": np.ones_like(a)}
            if "token_type_ids" in names:
                feed["token_type_ids"] = np.zeros_like(a)
            t = time.perf_counter()
            sess.run(None, feed)
            wall.append((time.perf_counter() - t) * 1000)
            runs += 1
    path = sess.end_profiling()
    events = json.load(open(path))
    by_op = defaultdict(lambda: [0, 0.0])
    nodes = defaultdict(set)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            op = e["args"]["op_name"]
            by_op[op][1] += e["dur"] / 1000.0
            nodes[op].add(e["name"])
    ops = sorted(({"op": op, "nodes": len(nodes[op]), "ms": ms / runs} for op, (_, ms) in by_op.items()), key=lambda o: -o["ms"])
    wall.sort()
    report["lengths"][length] = {"runs": runs, "run_ms_p50": wall[len(wall) // 2], "ops": ops}
print(json.dumps(report, indent=1))
