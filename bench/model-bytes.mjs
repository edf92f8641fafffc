// What meaning search costs a visitor in model bytes, as a host serves them (gzip): once, the
// full engine's WebAssembly, the tokenizer and either the whole model or the model body
// (`sextant build --site`'s `model_body`, without its word table), or what the drop-in UI loads
// where the build wrote one: the encoder wasm (no tract) and the encoder file (`model_encoder`,
// the body's layers for sextant's own encoder); then, with the body, the row
// files each query's tokens are in (each file fetched once a session). The rows a query needs
// depend only on its words, so any site built with the model measures them; each query set runs
// as one session, in its order. The body's vectors are checked against the whole model's (with
// the body's weights: int5 when packed).
// node bench/model-bytes.mjs <built site dir> <queries.jsonl>...   → one JSON line
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const [site, ...querySets] = process.argv.slice(2);
if (!site || !querySets.length) {
  console.error('usage: node bench/model-bytes.mjs <built site dir> <queries.jsonl>...');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const { Sextant } = await import(path.join(here, '../pkg/node.js'));
// The encoder wasm in Node: its browser entry's API, the wasm given as bytes.
const encoderWasm = await import(path.join(here, '../pkg/sextant_encoder.js'));
const { makeApi } = await import(path.join(here, '../pkg/core.js'));
const Encoder = makeApi(encoderWasm, () => encoderWasm.default({ module_or_path: readFileSync(path.join(here, '../pkg/sextant_encoder_bg.wasm')) })).Sextant;
const dir = path.join(site, 'sextant');
const entry = JSON.parse(readFileSync(path.join(dir, 'sextant.json'), 'utf8'));
if (!entry.model_body) throw new Error(`${site} has no model_body: build it again with this sextant`);
const gz = (file) => gzipSync(readFileSync(file)).length;
const once = {
  wasm: gz(path.join(dir, entry.package, 'sextant_wasm_bg.wasm')),
  tokenizer: gz(path.join(dir, entry.tokenizer)),
  whole_model: gz(path.join(dir, entry.model)),
  model_body: gz(path.join(dir, entry.model_body)),
};
if (entry.model_encoder) {
  once.encoder_wasm = gz(path.join(dir, entry.package, 'sextant_encoder_bg.wasm'));
  once.model_encoder = gz(path.join(dir, entry.model_encoder));
}
// What a visitor downloads once for hybrid results: engine + tokenizer + model.
const totals = {
  with_whole_model: once.wasm + once.tokenizer + once.whole_model,
  with_body: once.wasm + once.tokenizer + once.model_body,
  ...(entry.model_encoder ? { with_encoder: once.encoder_wasm + once.tokenizer + once.model_encoder } : {}),
};
const index = pathToFileURL(path.join(dir, entry.index)).href;
const plainDisk = async (url) => new Response(readFileSync(fileURLToPath(url)));
// The whole model with the body's weights (five bits when `build --site` packed it): the same bits.
const whole = await Sextant.load({ index, model: readFileSync(path.join(dir, entry.model)), tokenizer: readFileSync(path.join(dir, entry.tokenizer)), fetch: plainDisk, weights: entry.model_body_weights });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sets = [];
for (const file of querySets) {
  const queries = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text);
  let rowBytes = 0;
  let rowFiles = 0;
  const fromDisk = async (url) => {
    const bytes = readFileSync(fileURLToPath(url));
    if (/\/rows\.[0-9a-f]{16}\.bin$/.test(String(url))) {
      rowBytes += gzipSync(bytes).length;
      rowFiles += 1;
    }
    return new Response(bytes);
  };
  // A new session per set: a fresh engine holds no rows.
  const body = await Sextant.load({ index, model: pathToFileURL(path.join(dir, entry.model_body)).href, tokenizer: readFileSync(path.join(dir, entry.tokenizer)), fetch: fromDisk });
  const perQuery = [];
  for (const q of queries) {
    const before = rowBytes;
    const [a, b] = [await body.queryVector(q), await whole.queryVector(q)];
    if (Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) !== 0) {
      throw new Error(`the body's vector differs from the whole model's for ${JSON.stringify(q)}`);
    }
    perQuery.push(rowBytes - before);
  }
  body.free();
  // The encoder file (the drop-in UI's model, where the build wrote one): the same bits.
  if (entry.model_encoder) {
    const encoder = await Encoder.load({ index, model: pathToFileURL(path.join(dir, entry.model_encoder)).href, tokenizer: readFileSync(path.join(dir, entry.tokenizer)), fetch: plainDisk });
    for (const q of queries) {
      const [a, b] = [await encoder.queryVector(q), await whole.queryVector(q)];
      if (Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) !== 0) {
        throw new Error(`the encoder's vector differs from the whole model's for ${JSON.stringify(q)}`);
      }
    }
    encoder.free();
  }
  const firstTen = perQuery.slice(0, 10).reduce((n, x) => n + x, 0);
  sets.push({
    queries: path.relative(process.cwd(), file),
    count: queries.length,
    first_query_row_bytes: perQuery[0],
    median_query_row_bytes: median(perQuery),
    first_ten_queries_row_bytes: firstTen,
    session_row_bytes: rowBytes,
    session_row_files: rowFiles,
  });
}
whole.free();
console.log(JSON.stringify({ model_body_weights: entry.model_body_weights ?? "int8", once, once_totals: totals, sets }));
