"""The anchor for native embedding speed: onnxruntime + HF tokenizers embedding the same
queries with the same model (mean pooling, L2 norm, no padding, truncation 256).

python3 scripts/bench-onnxruntime.py <queries.jsonl> <model dir> [rounds]
Needs `pip install onnxruntime tokenizers numpy` (benchmarks only; tests never use it).
"""
import json
import time

import numpy as np
import onnxruntime as ort
from ort_common import setup

queries, model_dir, rounds, tok = setup(3)
opts = ort.SessionOptions()
opts.intra_op_num_threads = 1  # tract runs one query on one thread: compare like with like
sess = ort.InferenceSession(f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"])
names = [i.name for i in sess.get_inputs()]
times = []
for _ in range(rounds):
    for q in queries:
        t = time.perf_counter()
        ids = np.array([tok.encode(q).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.zeros_like(ids)
        out = sess.run(None, feed)[0][0]
        v = out.mean(axis=0)
        v /= np.linalg.norm(v)
        times.append((time.perf_counter() - t) * 1000)
times.sort()
p = lambda x: times[min(len(times) - 1, round(x / 100 * (len(times) - 1)))]
print(f"onnxruntime {ort.__version__} (1 thread) tokenise + embed: p50 {p(50):.3f} ms, p95 {p(95):.3f} ms over {len(times)} queries")
print(json.dumps({"ort_embed_p50_ms": p(50), "ort_embed_p95_ms": p(95)}))
