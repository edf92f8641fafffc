// Query latency of the built package in Node: cold load (instantiate + model optimise + bundle
// parse) and per-stage p50/p95 over a query set.
// node bench/wasm-node.mjs <pkg dir> <bundle> <queries.jsonl> <model dir> [rounds]
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [pkgDir, bundlePath, queriesPath, modelDir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 3);
const { Sextant, ready, memoryBytes } = await import(pathToFileURL(path.resolve(pkgDir, 'node.js')).href);

const t0 = performance.now();
await ready();
const t1 = performance.now();
const sextant = await Sextant.load({
  index: await readFile(bundlePath),
  model: await readFile(path.join(modelDir, 'model.onnx')),
  tokenizer: await readFile(path.join(modelDir, 'tokenizer.json')),
});
const t2 = performance.now();
const queries = (await readFile(queriesPath, 'utf8')).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l).text);
const stages = { embed_ms: [], keyword_ms: [], vector_ms: [], fusion_ms: [], total_ms: [] };
for (let r = 0; r < rounds; r++) {
  for (const q of queries) {
    const { timings } = await sextant.search(q, { k: 10 });
    for (const key of Object.keys(stages)) stages[key].push(timings[key]);
  }
}
const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
};
const summary = { runtime: `node ${process.version}`, queries: queries.length, rounds, instantiate_ms: t1 - t0, load_ms: t2 - t1 };
for (const [key, v] of Object.entries(stages)) summary[key] = { p50: pct(v, 50), p95: pct(v, 95) };
summary.wasm_memory_mb = Math.round(memoryBytes() / 1e6);
summary.rss_mb = Math.round(process.memoryUsage().rss / 1e6);
console.log(JSON.stringify(summary));
