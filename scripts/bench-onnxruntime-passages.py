"""The anchor for passage embedding throughput: onnxruntime + HF tokenizers embedding the chunk
texts `examples/embed_throughput.rs --dump` wrote, with the same model.onnx (mean pooling, L2
norm, no padding, truncation at 256 tokens), on `threads` threads two ways: one session using
`threads` intra-op threads on each text in turn, and `threads` sessions of one thread each
taking texts side by side (sextant's way). Prints one JSON line per way.

python3 scripts/bench-onnxruntime-passages.py <chunks.jsonl> <model dir> <threads>
Needs `pip install onnxruntime tokenizers numpy` (benchmarks only; tests never use it).
"""
import json
import sys
import threading
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

texts = [json.loads(l)["text"] for l in open(sys.argv[1]) if l.strip()]
model_dir, threads = sys.argv[2], int(sys.argv[3])
tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
tok.no_padding()
tok.enable_truncation(256)


def session(intra):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = intra
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"])


def embed(sess, names, text):
    ids = np.array([tok.encode(text).ids], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "token_type_ids" in names:
        feed["token_type_ids"] = np.zeros_like(ids)
    v = sess.run(None, feed)[0][0].mean(axis=0)
    return v / np.linalg.norm(v)


tokens = sum(len(tok.encode(t).ids) for t in texts)


def report(way, seconds):
    print(json.dumps({"engine": f"onnxruntime {ort.__version__}", "way": way, "threads": threads, "chunks": len(texts),
                      "tokens": tokens, "seconds": seconds, "chunks_per_s": len(texts) / seconds,
                      "tokens_per_s": tokens / seconds}), flush=True)


sess = session(threads)
names = [i.name for i in sess.get_inputs()]
embed(sess, names, texts[0])
t = time.perf_counter()
for text in texts:
    embed(sess, names, text)
report(f"one session, {threads} intra-op threads", time.perf_counter() - t)

sessions = [session(1) for _ in range(threads)]
for s in sessions:
    embed(s, names, texts[0])
position = iter(range(len(texts)))
lock = threading.Lock()


def work(s):
    while True:
        with lock:
            i = next(position, None)
        if i is None:
            return
        embed(s, names, texts[i])


t = time.perf_counter()
workers = [threading.Thread(target=work, args=(s,)) for s in sessions]
for w in workers:
    w.start()
for w in workers:
    w.join()
report(f"{threads} sessions of one thread", time.perf_counter() - t)
