// Node benchmark of a collection indexed in memory (issue 11): documents and chunks per second
// to parse, chunk, embed and write the index, with the built package's collection wasm.
// node bench/collection-node.mjs <pkg dir> <corpus.jsonl> <documents> <model dir> [rounds] [batch]
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [pkgDir, corpusPath, docsArg, modelDir, roundsArg, batchArg] = process.argv.slice(2);
const { Collection } = await import(pathToFileURL(path.resolve(pkgDir, 'collection.js')).href);
const lines = (await readFile(corpusPath, 'utf8')).split('\n').filter((l) => l.trim()).slice(0, Number(docsArg));
const file = new TextEncoder().encode(lines.join('\n'));
const [model, tokenizer] = await Promise.all([readFile(path.join(modelDir, 'model.onnx')), readFile(path.join(modelDir, 'tokenizer.json'))]);
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor((v.length - 1) / 2)];
const rounds = [];
for (let r = 0; r < Number(roundsArg ?? 3); r++) {
  const c = await Collection.create({ model, tokenizer });
  const t0 = performance.now();
  await c.addFile('cranfield.jsonl', file);
  const t1 = performance.now();
  const chunks = c.pending;
  await c.embed({ batch: Number(batchArg ?? 8) });
  const t2 = performance.now();
  c.export();
  const t3 = performance.now();
  c.free();
  rounds.push({ chunks, add_ms: t1 - t0, embed_ms: t2 - t1, write_ms: t3 - t2, total_ms: t3 - t0 });
}
const chunks = rounds[0].chunks;
console.log(JSON.stringify({
  node: process.version,
  documents: lines.length,
  chunks,
  docs_per_s_p50: median(rounds.map((x) => lines.length / (x.total_ms / 1000))),
  chunks_per_s_p50: median(rounds.map((x) => chunks / (x.total_ms / 1000))),
  embed_only_chunks_per_s_p50: median(rounds.map((x) => chunks / (x.embed_ms / 1000))),
  rounds,
}));
