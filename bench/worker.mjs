// The Worker in workerd over a site's split index: first-request (cold) latency, warm /search
// p50/p95 over the query texts, memory after them, and how much of the index they read. The anchor, in the
// same run: the built package in Node searching the same assets with the same queries.
// node bench/worker.mjs <assets dir> <queries.jsonl> [rounds]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startWorkerd, rss } from '../tests/js/workerd.mjs';

const [assetsDir, queriesPath, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 2);
const queries = readFileSync(queriesPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text.slice(0, 512));
// The whole index on disk, to set the bytes the Worker read against.
const indexDir = path.join(assetsDir, 'sextant/index');
const indexFiles = readdirSync(indexDir);
const indexTotal = { files: indexFiles.length, mb: indexFiles.reduce((n, f) => n + statSync(path.join(indexDir, f)).size, 0) / 1e6 };
const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
};
for (const weights of ['int8', 'f32']) {
  const workerd = await startWorkerd({ assetsDir, name: `bench-${weights}`, env: { SEXTANT_WEIGHTS: weights } });
  try {
    const rssStart = rss(workerd.pid);
    let t = performance.now();
    const cold = await fetch(`${workerd.base}/search?q=${encodeURIComponent(queries[0])}&k=10`);
    await cold.json();
    const coldMs = performance.now() - t;
    const warm = [];
    for (let r = 0; r < rounds; r++) {
      for (const q of queries) {
        t = performance.now();
        const response = await fetch(`${workerd.base}/search?q=${encodeURIComponent(q)}&k=10`);
        await response.json();
        warm.push(performance.now() - t);
      }
    }
    const health = await (await fetch(`${workerd.base}/healthz`)).json();
    console.log(
      JSON.stringify({
        weights: health.weights,
        cold_first_request_ms: coldMs,
        engine_load_ms: health.load_ms,
        warm_search_ms: { p50: pct(warm, 50), p95: pct(warm, 95), n: warm.length },
        wasm_memory_mb: health.wasm_memory_bytes / 1e6,
        workerd_rss_mb: { start: rssStart / 1e6, loaded: rss(workerd.pid) / 1e6 },
        index_read: { files: health.index_files_read, mb: health.index_bytes_read / 1e6, of: indexTotal },
        chunks: health.chunks,
      }),
    );
  } finally {
    workerd.stop();
  }
}

// The anchor: the same engine, files and queries in Node, no HTTP (the split index read from disk
// as queries need it).
const here = path.dirname(fileURLToPath(import.meta.url));
const entry = JSON.parse(readFileSync(path.join(assetsDir, 'sextant/sextant.json'), 'utf8'));
const file = (name) => readFileSync(path.join(assetsDir, 'sextant', name));
const fromDisk = async (url) => new Response(readFileSync(fileURLToPath(url)));
const { Sextant } = await import(path.join(here, '../pkg/node.js'));
for (const weights of ['int8', 'f32']) {
  const index = pathToFileURL(path.join(assetsDir, 'sextant', entry.index)).href;
  const sextant = await Sextant.load({ index, model: file(entry.model), tokenizer: file(entry.tokenizer), weights, fetch: fromDisk });
  const node = [];
  for (let r = 0; r < rounds; r++) {
    for (const q of queries) {
      const t = performance.now();
      JSON.stringify(await sextant.search(q, { k: 10 }));
      node.push(performance.now() - t);
    }
  }
  console.log(JSON.stringify({ anchor_node: weights, search_ms: { p50: pct(node, 50), p95: pct(node, 95), n: node.length } }));
  sextant.free();
}
