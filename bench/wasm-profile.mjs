// Per-operator profile of the embedding model in the WebAssembly build (the package's wasm, run
// by Node's V8, the engine Chromium runs): the inputs `examples/profile_embed` gives tract
// natively (the first 20 Cranfield queries at least 8, 16 or 32 tokens long, cut there, [SEP]
// last), f32 and int8 weights, milliseconds per run by operator kind, slowest first (JSON).
// node bench/wasm-profile.mjs <queries.jsonl> <model dir> [rounds]   (after make wasm)
import { readFileSync } from 'node:fs';
import init, * as wasm from '../pkg/sextant_wasm.js';

const [queriesPath, modelDir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 5);
const texts = readFileSync(queriesPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text);
await init({ module_or_path: readFileSync(new URL('../pkg/sextant_wasm_bg.wasm', import.meta.url)) });
const model = readFileSync(`${modelDir}/model.onnx`);
const tokenizer = readFileSync(`${modelDir}/tokenizer.json`);
const index = readFileSync(new URL('../tests/fixtures/golden-v2.sxt', import.meta.url));
const report = {};
for (const weights of ['f32', 'int8']) {
  const engine = new wasm.Engine(index);
  engine.loadModel(model, tokenizer, { weights });
  const lengths = {};
  for (const length of [8, 16, 32]) {
    const sequences = [];
    for (const t of texts) {
      const ids = engine.tokenIds(t);
      if (ids.length >= length) sequences.push(Uint32Array.from([...ids.slice(0, length - 1), ids[ids.length - 1]]));
      if (sequences.length === 20) break;
    }
    const ops = new Map();
    for (const ids of sequences) {
      for (const op of engine.profileEmbedding(ids, rounds)) {
        const seen = ops.get(op.op) ?? { op: op.op, nodes: op.nodes, ms: 0 };
        seen.ms += op.ms / sequences.length;
        ops.set(op.op, seen);
      }
    }
    const list = [...ops.values()].sort((a, b) => b.ms - a.ms);
    lengths[length] = { ms: list.reduce((n, o) => n + o.ms, 0), ops: list };
  }
  report[weights] = lengths;
  engine.free();
}
console.log(JSON.stringify(report, null, 1));
