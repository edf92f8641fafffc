// The Worker under load: `clients` concurrent clients for `seconds` against workerd over the
// Cranfield split index, a mix of GET /search, GET /context and POST /mcp (tools search and
// fetch), after a one-client phase of the same mix as the anchor. Reports latency p50/p95/p99 per
// route, requests/s, every status, and memory sampled every 500 ms: the isolate's (the V8 heap
// and array buffer backing stores, read through workerd's inspector in a second run of the same
// load, plus the wasm memory /healthz reports) against the 128 MB Workers limit, and the workerd
// process's RSS. Exits 1 on any 5xx, any request left without an answer, or isolate memory at or
// over 128 MB. The request mix is seeded (SEED; printed).
// node --experimental-websocket bench/worker-load.mjs <assets dir> <queries.jsonl> [seconds] [clients]
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { startWorkerd, rss, freePort, inspector } from '../tests/js/workerd.mjs';

const [assetsDir, queriesPath, secondsArg, clientsArg] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 60);
const clients = Number(clientsArg ?? 50);
const seed = Number(process.env.SEED ?? Date.now() % 1e9);
console.error(`worker-load: seed ${seed} (SEED=${seed} repeats the request mix)`);
const queries = readFileSync(queriesPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text.slice(0, 512));
const LIMIT = 128 * 2 ** 20;

/** A small seeded PRNG (mulberry32), one per client. */
function prng(s) {
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pct = (v, p) => {
  if (v.length === 0) return null;
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
};

// Each request on a new connection: workerd's HTTP server, this overloaded, resets some kept-alive
// connections (35 of 542 requests in a 30 s run of /search and /context), which a deployed Worker
// never sees (Cloudflare's front end holds the clients' connections).
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

/** An HTTP request as `fetch` would make it: resolves to {status, ok, text()}. */
function send(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, agent }, (response) => {
      const parts = [];
      response.on('data', (d) => parts.push(d));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        resolve({ status: response.statusCode, ok: response.statusCode >= 200 && response.statusCode < 300, text: async () => text, json: async () => JSON.parse(text) });
      });
    });
    request.on('error', reject);
    request.end(body);
  });
}

/** One request of the mix; `state` keeps the last ids a client saw, for fetch. */
async function request(base, random, state) {
  const q = queries[Math.floor(random() * queries.length)];
  const roll = random();
  let route;
  let response;
  const started = performance.now();
  state.started = started;
  if (roll < 0.4) {
    route = '/search'; state.route = route;
    response = await send(`${base}/search?q=${encodeURIComponent(q)}&k=10`);
  } else if (roll < 0.6) {
    route = '/context'; state.route = route;
    response = await send(`${base}/context?q=${encodeURIComponent(q)}&token_budget=1000`);
  } else {
    const fetching = roll >= 0.85 && state.ids.length > 0;
    route = fetching ? '/mcp fetch' : '/mcp search';
    state.route = route;
    const args = fetching ? { name: 'fetch', arguments: { id: state.ids[Math.floor(random() * state.ids.length)] } } : { name: 'search', arguments: { query: q, k: 5 } };
    response = await send(`${base}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' },
      body: JSON.stringify({ jsonrpc: '2.0', id: state.rpc++, method: 'tools/call', params: args }),
    });
  }
  const body = await response.text();
  const ms = performance.now() - started;
  state.route = null;
  let ok = response.ok;
  if (ok && route === '/mcp search') {
    const message = JSON.parse(body);
    ok = !message.error && !message.result?.isError;
    if (ok) state.ids = message.result.structuredContent.results.map((r) => r.id).slice(0, 3);
  }
  if (ok && route === '/mcp fetch') ok = !JSON.parse(body).error;
  return { route, status: response.status, ok, ms };
}

/** `n` clients for `duration` s against `workerd`; memory sampled every 500 ms (the isolate's
 * only with a `probe`). */
async function phase(workerd, n, duration, probe) {
  const records = [];
  const failures = [];
  const memory = [];
  const deadline = performance.now() + duration * 1000;
  let sampling = true;
  // The wasm memory is not among V8's backing stores: /healthz reports it (no engine work, but
  // queued behind the clients' requests, so it is read as often as it answers; it only grows).
  let wasm = (await (await send(`${workerd.base}/healthz`)).json()).wasm_memory_bytes;
  const wasmSampler = (async () => {
    while (sampling) {
      try {
        wasm = Math.max(wasm, (await (await send(`${workerd.base}/healthz`)).json()).wasm_memory_bytes);
      } catch {
        // With the inspector on, workerd resets a connection now and then: the next sample reads it.
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  const sampler = (async () => {
    while (sampling) {
      const heap = probe ? await probe.heap() : { totalSize: 0, backingStorageSize: 0 };
      memory.push({ isolate: heap.totalSize + heap.backingStorageSize + wasm, heap: heap.totalSize, backing: heap.backingStorageSize, wasm, rss: rss(workerd.pid) });
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: n }, async (_, c) => {
      const random = prng(seed + c);
      const state = { ids: [], rpc: 1 };
      while (performance.now() < deadline) {
        try {
          const r = await request(workerd.base, random, state);
          records.push(r);
          if (!r.ok) failures.push(`${r.route} ${r.status}`);
        } catch (e) {
          records.push({ route: state.route, status: 0, ok: false, ms: performance.now() - state.started });
          failures.push(`${state.route}: ${e.message} (${e.code ?? e.cause?.code ?? 'no code'}) after ${Math.round(performance.now() - state.started)} ms`);
        }
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  sampling = false;
  await Promise.all([sampler, wasmSampler]);
  const routes = {};
  for (const route of [...new Set(records.map((r) => r.route))].sort()) {
    const ms = records.filter((r) => r.route === route && r.ok).map((r) => r.ms);
    routes[route] = { n: ms.length, p50: pct(ms, 50), p95: pct(ms, 95), p99: pct(ms, 99) };
  }
  const all = records.filter((r) => r.ok).map((r) => r.ms);
  const statuses = {};
  for (const r of records) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const max = (key) => Math.max(...memory.map((m) => m[key]));
  return {
    clients: n,
    seconds: elapsed,
    requests: records.length,
    requests_per_s: records.length / elapsed,
    statuses,
    server_errors: records.filter((r) => r.status >= 500).length,
    failures: failures.slice(0, 20),
    all: { p50: pct(all, 50), p95: pct(all, 95), p99: pct(all, 99) },
    routes,
    memory_mb: probe
      ? { isolate_max: max('isolate') / 2 ** 20, wasm_max: max('wasm') / 2 ** 20, heap_max: max('heap') / 2 ** 20, backing_max: max('backing') / 2 ** 20, rss_max: max('rss') / 2 ** 20, samples: memory.length }
      : { wasm_max: max('wasm') / 2 ** 20, rss_max: max('rss') / 2 ** 20, samples: memory.length },
  };
}

/** workerd over the assets, its engine loaded by one request; with `inspect`, its inspector on. */
async function warmWorkerd(name, inspect) {
  const port = inspect ? await freePort() : null;
  const workerd = await startWorkerd({ assetsDir, name, args: [...(inspect ? [`--inspector-addr=127.0.0.1:${port}`] : []), ...(process.env.WORKERD_VERBOSE ? ['--verbose'] : [])] });
  const started = performance.now();
  await (await send(`${workerd.base}/search?q=warm+up&k=1`)).text();
  return { workerd, coldMs: performance.now() - started, probe: inspect ? await inspector(port) : null };
}

// Latency, throughput and statuses from a workerd without its inspector (attached, it makes
// workerd reset some connections under load); then the same load again with the inspector, for
// the isolate's memory.
let exit = 0;
const report = { seed };
const plain = await warmWorkerd('load', false);
try {
  report.cold_first_request_ms = plain.coldMs;
  report.anchor_one_client = await phase(plain.workerd, 1, Math.min(10, seconds));
  report.load = await phase(plain.workerd, clients, seconds);
  report.index_files_read = (await (await send(`${plain.workerd.base}/healthz`)).json()).index_files_read;
} finally {
  plain.workerd.stop();
}
const inspected = await warmWorkerd('load-memory', true);
try {
  const again = await phase(inspected.workerd, clients, seconds, inspected.probe);
  inspected.probe.close();
  report.memory_under_load = { ...again.memory_mb, requests: again.requests, statuses: again.statuses };
} finally {
  inspected.workerd.stop();
}
console.log(JSON.stringify(report, null, 1));
const errors5xx = report.load.server_errors + report.anchor_one_client.server_errors;
if (errors5xx > 0) {
  console.error(`worker-load: ${errors5xx} responses were 5xx: ${report.load.failures.join('; ')}`);
  exit = 1;
}
if (report.load.statuses[0]) {
  console.error(`worker-load: ${report.load.statuses[0]} requests failed without an answer: ${report.load.failures.join('; ')}`);
  exit = 1;
}
if (report.memory_under_load.isolate_max * 2 ** 20 >= LIMIT) {
  console.error(`worker-load: isolate memory reached ${report.memory_under_load.isolate_max.toFixed(1)} MB, at or over 128 MB`);
  exit = 1;
}
process.exit(exit);
