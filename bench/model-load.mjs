// What loading the model costs in WebAssembly (Node, the package's wasm), by how its weights are
// held: the whole model.onnx with int8 or int5 weights (a Worker's load: int5 rounds the layers
// at load), and a site's model body as `build --site` wrote it (int5: packed, unpacked at load),
// each loaded `rounds` times in turn, medians, and the site's encoder file in the encoder wasm
// (sextant's own encoder, no tract: what the drop-in UI runs). Then one query's time with each
// (after its rows).
// node bench/model-load.mjs <site built with --body-weights int5> <site built with int8> [rounds]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [packedSite, plainSite, roundsArg] = process.argv.slice(2);
if (!packedSite || !plainSite) {
  console.error('usage: node bench/model-load.mjs <int5 site> <int8 site> [rounds]');
  process.exit(2);
}
const rounds = Number(roundsArg ?? 5);
const here = path.dirname(fileURLToPath(import.meta.url));
const { Sextant } = await import(path.join(here, '../pkg/node.js'));
// The encoder wasm in Node: its browser entry's API, the wasm given as bytes.
const encoderWasm = await import(path.join(here, '../pkg/sextant_encoder.js'));
const { makeApi } = await import(path.join(here, '../pkg/core.js'));
const Encoder = makeApi(encoderWasm, () => encoderWasm.default({ module_or_path: readFileSync(path.join(here, '../pkg/sextant_encoder_bg.wasm')) })).Sextant;
const site = (dir) => {
  const root = path.join(dir, 'sextant');
  return { root, entry: JSON.parse(readFileSync(path.join(root, 'sextant.json'), 'utf8')) };
};
const packed = site(packedSite);
const plain = site(plainSite);
const fromDisk = async (url) => new Response(readFileSync(fileURLToPath(url)));
const tokenizer = readFileSync(path.join(plain.root, plain.entry.tokenizer));
const whole = readFileSync(path.join(plain.root, plain.entry.model));
const variants = {
  'encoder (no tract), int5': () => ({ api: Encoder, index: pathToFileURL(path.join(packed.root, packed.entry.index)).href, model: pathToFileURL(path.join(packed.root, packed.entry.model_encoder)).href }),
  'whole model, int8': (s) => ({ index: s.index, model: whole, weights: 'int8' }),
  'whole model, int5': (s) => ({ index: s.index, model: whole, weights: 'int5' }),
  'body, int8': () => ({ index: pathToFileURL(path.join(plain.root, plain.entry.index)).href, model: pathToFileURL(path.join(plain.root, plain.entry.model_body)).href }),
  'body, int5 (packed)': () => ({ index: pathToFileURL(path.join(packed.root, packed.entry.index)).href, model: pathToFileURL(path.join(packed.root, packed.entry.model_body)).href }),
};
const index = pathToFileURL(path.join(plain.root, plain.entry.index)).href;
const times = Object.fromEntries(Object.keys(variants).map((k) => [k, { load: [], query: [] }]));
for (let r = 0; r < rounds; r++) {
  for (const [name, options] of Object.entries(variants)) {
    const { api = Sextant, ...given } = options({ index });
    const started = performance.now();
    const engine = await api.load({ tokenizer, fetch: fromDisk, ...given });
    times[name].load.push(performance.now() - started);
    await engine.queryVector('what stops prompt injection'); // its rows, for a body
    const q = performance.now();
    await engine.queryVector('how do I install the package offline');
    times[name].query.push(performance.now() - q);
    engine.free();
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, { load_ms: Math.round(median(v.load)), query_ms: +median(v.query).toFixed(1) }]));
console.log(JSON.stringify({ rounds, ...out }));
