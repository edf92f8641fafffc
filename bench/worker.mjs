// The Worker in workerd over a site's split index: first-request (cold) latency, warm /search
// p50/p95 over the query texts, memory after them (the isolate's: V8 heap and backing stores read
// through the inspector, plus the wasm memory /healthz reports), and how much of the index they
// read. The anchor, in the same run: the built package in Node searching the same assets with the
// same queries.
// node --experimental-websocket bench/worker.mjs <assets dir> <queries.jsonl> [rounds]
//   WORKER_WEIGHTS="int8 f32"   the weights to measure (default both)
//   WORKER_FILES="assets r2"    where the Worker reads its search files: the static assets (the
//                               ASSETS binding, default) and/or an R2 bucket bound as SEXTANT_R2 in
//                               Miniflare's local R2 emulation, the site's sextant/ folder uploaded
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startWorkerd, rss, freePort, inspector, miniflareWithR2, filesUnder } from '../tests/js/workerd.mjs';

const [assetsDir, queriesPath, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 2);
const WEIGHTS = (process.env.WORKER_WEIGHTS ?? 'int8 f32').split(/[\s,]+/).filter(Boolean);
const FILES = (process.env.WORKER_FILES ?? 'assets').split(/[\s,]+/).filter(Boolean);
const queries = readFileSync(queriesPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text.slice(0, 512));
// The whole index on disk, to set the bytes the Worker read against.
const indexDir = path.join(assetsDir, 'sextant/index');
const indexFiles = readdirSync(indexDir);
const indexTotal = { files: indexFiles.length, mb: indexFiles.reduce((n, f) => n + statSync(path.join(indexDir, f)).size, 0) / 1e6 };
const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
};
const here = path.dirname(fileURLToPath(import.meta.url));

/** The bundled Worker in workerd reading the static assets, its inspector on. */
async function fromAssets(weights) {
  const port = await freePort();
  const workerd = await startWorkerd({ assetsDir, name: `bench-${weights}`, env: { SEXTANT_WEIGHTS: weights }, args: [`--inspector-addr=127.0.0.1:${port}`] });
  return { base: workerd.base, pid: workerd.pid, inspectorPort: port, stop: async () => workerd.stop() };
}

/** The bundled Worker in Miniflare (workerd with its local R2 emulation) reading the site's
 * sextant/ folder from an R2 bucket, as a site past the static assets' limits deploys it. */
async function fromR2(weights) {
  const port = await freePort();
  const inspectorPort = await freePort();
  const mf = await miniflareWithR2({ SEXTANT_WEIGHTS: weights }, { host: '127.0.0.1', port, inspectorPort });
  const bucket = await mf.getR2Bucket('SEXTANT_R2');
  let uploaded = 0;
  for (const rel of filesUnder(path.join(assetsDir, 'sextant'))) {
    // A plain copy: the proxy to the emulated bucket refuses a Buffer of a shared pool.
    await bucket.put(`sextant/${rel}`, new Uint8Array(readFileSync(path.join(assetsDir, 'sextant', rel))));
    uploaded += 1;
  }
  console.error(`bench-worker: ${uploaded} files uploaded to the emulated R2 bucket`);
  const url = await mf.ready;
  return { base: url.origin, pid: null, inspectorPort, stop: () => mf.dispose() };
}

for (const files of FILES) {
  for (const weights of WEIGHTS) {
    const worker = files === 'r2' ? await fromR2(weights) : await fromAssets(weights);
    try {
      const rssStart = worker.pid ? rss(worker.pid) : null;
      // The index reads (subrequests to the ASSETS binding or R2) each request made: requests go
      // one at a time, so the count /healthz reports grows by that request's own.
      const readsSoFar = async () => (await (await fetch(`${worker.base}/healthz`)).json()).index_files_read ?? 0;
      let t = performance.now();
      const cold = await fetch(`${worker.base}/search?q=${encodeURIComponent(queries[0])}&k=10`);
      const coldBody = await cold.json();
      if (!cold.ok) throw new Error(`${files}: ${cold.status} ${JSON.stringify(coldBody).slice(0, 300)}`);
      const coldMs = performance.now() - t;
      const coldReads = await readsSoFar();
      const warm = [];
      const reads = [];
      let before = coldReads;
      for (let r = 0; r < rounds; r++) {
        for (const q of queries) {
          t = performance.now();
          const response = await fetch(`${worker.base}/search?q=${encodeURIComponent(q)}&k=10`);
          await response.json();
          if (!response.ok) throw new Error(`${files}: ${response.status} for ${q}`);
          warm.push(performance.now() - t);
          const after = await readsSoFar();
          reads.push(after - before);
          before = after;
        }
      }
      const health = await (await fetch(`${worker.base}/healthz`)).json();
      const probe = await inspector(worker.inspectorPort);
      const heap = await probe.heap();
      probe.close();
      console.log(
        JSON.stringify({
          files: health.files,
          weights: health.weights,
          cold_first_request_ms: coldMs,
          engine_load_ms: health.load_ms,
          warm_search_ms: { p50: pct(warm, 50), p95: pct(warm, 95), n: warm.length },
          wasm_memory_mb: health.wasm_memory_bytes / 1e6,
          // The isolate's memory against the 128 MB Workers limit: V8's heap and backing stores
          // (the wasm memory is not among them) and the wasm memory.
          isolate_mb: (heap.totalSize + heap.backingStorageSize + health.wasm_memory_bytes) / 2 ** 20,
          js_heap_mb: { total: heap.totalSize / 2 ** 20, used: heap.usedSize / 2 ** 20, backing: heap.backingStorageSize / 2 ** 20 },
          max_index_bytes: health.max_index_bytes,
          ...(worker.pid ? { workerd_rss_mb: { start: rssStart / 1e6, loaded: rss(worker.pid) / 1e6 } } : {}),
          index_read: { files: health.index_files_read, mb: health.index_bytes_read / 1e6, of: indexTotal },
          // Index reads a request made (each a subrequest): the cold one, and the most and the
          // median of the rest (the first round's are the queries' own first reads).
          reads_per_request: { cold: coldReads, max: Math.max(0, ...reads), p50: reads.length ? pct(reads, 50) : 0 },
          // What the bound counts, held after the queries (every base's).
          index_held_mb: health.bases.reduce((n, b) => n + (b.index_bytes_held ?? 0), 0) / 1e6,
          chunks: health.chunks,
        }),
      );
    } finally {
      await worker.stop();
    }
  }
}

// The anchor: the same engine, files and queries in Node, no HTTP (the split index read from disk
// as queries need it).
const entry = JSON.parse(readFileSync(path.join(assetsDir, 'sextant/sextant.json'), 'utf8'));
const file = (name) => readFileSync(path.join(assetsDir, 'sextant', name));
const fromDisk = async (url) => new Response(readFileSync(fileURLToPath(url)));
const { Sextant } = await import(path.join(here, '../pkg/node.js'));
for (const weights of WEIGHTS) {
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
