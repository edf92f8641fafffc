"""What the onnxruntime anchors share (scripts/bench-onnxruntime.py, scripts/profile-onnxruntime.py):
their command line `<queries.jsonl> <model dir> [rounds]`, the query texts, and the model's
tokenizer set up as sextant's (no padding, truncation at 256 tokens)."""
import json
import sys

from tokenizers import Tokenizer


def setup(default_rounds):
    """(query texts, model dir, rounds, tokenizer) from sys.argv."""
    queries = [json.loads(l)["text"] for l in open(sys.argv[1]) if l.strip()]
    model_dir = sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else default_rounds
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(256)
    return queries, model_dir, rounds, tok
