// The Worker (www/worker) in the real runtime: workerd on loopback, serving the Worker bundled by
// wrangler, with a Cranfield bundle built by the native CLI as its static assets, and a local
// OpenAI-compatible server as its LLM. Needs scripts/worker-build.sh and the parity fixtures
// (scripts/test-js.sh prepares both).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { root, modelDir, sextantBin } from './harness.mjs';
import { startLlmServer, sseAnswer, chunkIdsIn } from './llm-server.mjs';
import { startWorkerd, rss } from './workerd.mjs';
import { addBase, cranfieldAssets as cranfieldAssetsOf } from './assets.mjs';
import { assertSameRanking } from './ranking.mjs';
import { startReceiver, attr } from './otlp-receiver.mjs';

const parityDir = process.env.SEXTANT_PARITY_DIR;
const TOKEN = 'edge-secret-token';
const ORIGIN = 'https://docs.example';
let base;
let workerd;
let llm;
let rssAtStart;
let assetsDir;

const cranfieldAssets = () => cranfieldAssetsOf(parityDir);
/** The Cranfield index's own manifest, as the CLI reads it (format and counts the Worker must report). */
const cranfieldManifest = () =>
  JSON.parse(execFileSync(sextantBin, ['inspect', path.join(parityDir, 'cranfield.sxt'), '--json'], { encoding: 'utf8' })).manifest;

before(async () => {
  assert.ok(parityDir, 'SEXTANT_PARITY_DIR is not set: run scripts/test-js.sh');
  llm = await startLlmServer((req) => {
    // A judge's request (rerank=llm, not streamed): passage n of a call is rated n.
    if (req.body?.stream === false) {
      const count = (req.body.messages.at(-1).content.match(/<retrieved_context /g) ?? []).length;
      const content = Array.from({ length: count }, (_, i) => `${i + 1}: ${i + 1}`).join('\n');
      return { body: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }) };
    }
    const ids = chunkIdsIn(req.body);
    return { events: sseAnswer(`Heated models need similar thermal stresses [${ids[0]}].`), delayMs: 10 };
  });
  workerd = await startWorkerd({
    assetsDir: (assetsDir = cranfieldAssets()),
    name: 'test',
    env: { LLM_BASE_URL: llm.baseUrl, LLM_MODEL: 'edge-test-model', LLM_API_KEY: 'sk-edge', SEXTANT_TOKEN: TOKEN, CORS_ORIGINS: ORIGIN },
  });
  base = workerd.base;
  rssAtStart = rss(workerd.pid);
});

after(async () => {
  workerd?.stop();
  await llm?.close();
});

const get = (p) => fetch(base + p);
async function expectError(response, status, code) {
  assert.equal(response.status, status, `${response.url}: ${response.status}`);
  const body = await response.json();
  assert.equal(body.error.code, code);
  assert.equal(typeof body.error.message, 'string');
  assert.ok(body.error.message.length > 10);
  return response;
}

test('assets load lazily on the first request, and memory stays well under 128 MB', async () => {
  const health = await (await get('/healthz')).json();
  assert.equal(health.engine, 'not loaded', 'nothing may load at start-up');
  const first = await get('/search?q=heat+transfer+in+boundary+layers');
  assert.equal(first.status, 200);
  assert.equal(first.headers.get('x-sextant-cold-start'), 'true');
  const second = await get('/search?q=supersonic+wings');
  assert.equal(second.headers.get('x-sextant-cold-start'), 'false');
  const loaded = await (await get('/healthz')).json();
  assert.equal(loaded.engine, 'loaded');
  assert.equal(loaded.bases.length, 1);
  assert.equal(loaded.bases[0].base, 'docs');
  assert.equal(loaded.bases[0].model.dims, 384);
  assert.deepEqual(loaded.bases[0].format, cranfieldManifest().format);
  assert.equal(loaded.partial, false);
  assert.equal(loaded.weights, 'int8', 'the Worker holds int8 weights by default');
  const after = rss(workerd.pid);
  console.log(`workerd: wasm memory ${(loaded.wasm_memory_bytes / 1e6).toFixed(1)} MB; process RSS ${(rssAtStart / 1e6).toFixed(1)} MB at start, ${(after / 1e6).toFixed(1)} MB loaded; load ${loaded.load_ms} ms`);
  // Well under the 128 MB isolate limit with int8 weights (~60 MB with this 2,719-chunk bundle;
  // f32 weights would take ~100 MB: BENCHMARKS.md).
  assert.ok(loaded.wasm_memory_bytes < 80e6, `wasm memory ${loaded.wasm_memory_bytes} bytes`);
  // Two queries read only some of the index: the Worker does not hold the whole corpus.
  const indexDir = path.join(assetsDir, 'sextant/index');
  const files = readdirSync(indexDir).filter((f) => !f.startsWith('manifest.'));
  const total = files.reduce((n, f) => n + readFileSync(path.join(indexDir, f)).length, 0);
  console.log(`workerd: ${loaded.index_files_read} reads of ${files.length} index files (${loaded.index_bytes_read} of ${total} bytes)`);
  // Objects are read as byte ranges of the packs (the ASSETS binding answers Range with 206):
  // less than half the index's bytes, whatever the number of reads.
  assert.ok(loaded.index_files_read > 0, `${loaded.index_files_read} reads`);
  assert.ok(loaded.index_bytes_read < total / 2, `${loaded.index_bytes_read} bytes read`);
  // What the memory bound counts is held, within the bound (24 MB by default).
  assert.ok(loaded.bases[0].index_bytes_held > 0 && loaded.bases[0].index_bytes_held <= loaded.max_index_bytes, `${loaded.bases[0].index_bytes_held} bytes held`);
});

test('/search gives the native CLI top 10 for Cranfield queries', async () => {
  const expected = readFileSync(path.join(parityDir, 'expected.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  let checked = 0;
  for (const line of expected) {
    const url = `/search?q=${encodeURIComponent(line.query)}&k=10&mode=${line.mode}`;
    const got = await (await get(url)).json();
    assertSameRanking(got.results, line.results, `${line.mode} ${line.query_id}`);
    for (const field of ['rank', 'chunk_id', 'doc_id', 'title', 'source', 'url', 'heading_path', 'text', 'score', 'dense', 'keyword']) {
      assert.ok(field in got.results[0]);
    }
    checked += 1;
  }
  assert.ok(checked >= 30, `only ${checked} query/mode pairs`);
});

test('bad input gets 400 or 405 with the core\'s error codes', async () => {
  await expectError(await get('/search'), 400, 'BAD_ARGUMENT');
  await expectError(await get('/search?q=%20%20'), 400, 'BAD_ARGUMENT');
  // The core's limit, in bytes: 4096 is fine, one more is not.
  await expectError(await get(`/search?q=${'a'.repeat(4097)}`), 400, 'BAD_ARGUMENT');
  assert.equal((await get(`/search?q=${'a'.repeat(4096)}`)).status, 200);
  for (const k of ['0', '1001', 'ten', '2.5']) await expectError(await get(`/search?q=wing&k=${k}`), 400, 'BAD_ARGUMENT');
  await expectError(await get('/search?q=wing&mode=fuzzy'), 400, 'BAD_ARGUMENT');
  await expectError(await get('/search?q=wing&kk=3'), 400, 'BAD_ARGUMENT');
  await expectError(await get('/context?q=wing&token_budget=0'), 400, 'BAD_ARGUMENT');
  const wrong = await expectError(await fetch(`${base}/search?q=wing`, { method: 'POST' }), 405, 'METHOD_NOT_ALLOWED');
  assert.match(wrong.headers.get('allow'), /GET/);
  await expectError(await get('/ask'), 405, 'METHOD_NOT_ALLOWED');
  await expectError(await fetch(`${base}/healthz`, { method: 'DELETE' }), 405, 'METHOD_NOT_ALLOWED');
  const post = (body) => fetch(`${base}/ask`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body });
  await expectError(await post('{"question": "cut'), 400, 'BAD_ARGUMENT');
  await expectError(await post('[1, 2]'), 400, 'BAD_ARGUMENT');
  await expectError(await post('{"k": 3}'), 400, 'BAD_ARGUMENT');
  await expectError(await post('{"question": "wings", "k": 1001}'), 400, 'BAD_ARGUMENT');
  // A client may not set the service's LLM settings.
  await expectError(await post('{"question": "wings", "max_tries": 10}'), 400, 'BAD_ARGUMENT');
  await expectError(await post(JSON.stringify({ question: 'wings', pad: 'x'.repeat(100_000) })), 413, 'PAYLOAD_TOO_LARGE');
  // Search options pass through by their core names.
  const deep = await (await get('/search?q=wing&k=3&mode=keyword&per_document=true&bm25.k1=1.2')).json();
  assert.equal(deep.results.length, 3);
});

test('filters, sort and filter counts pass as query parameters (an index without filters has no values)', async () => {
  const counted = await (await get('/search?q=wing&k=3&mode=keyword&filter_counts=true')).json();
  assert.equal(counted.results.length, 3);
  assert.deepEqual(counted.filter_counts, {}, 'no page has a filter');
  assert.equal((await (await get('/search?q=wing&mode=keyword')).json()).filter_counts, null, 'not asked');
  // A filter repeated is a list (every value needed); no Cranfield page has one.
  const filtered = await (await get('/search?q=wing&mode=keyword&filters.section=a&filters.section=b')).json();
  assert.deepEqual(filtered.results, []);
  // Alternatives and exclusions: no page has a or b, so excluding them keeps every result and
  // asking for either finds none.
  const kept = await (await get('/search?q=wing&k=3&mode=keyword&filters.section.none=a&filters.section.not=b')).json();
  assert.equal(kept.results.length, 3);
  const either = await (await get('/search?q=wing&mode=keyword&filters.section.any=a&filters.section.any=b')).json();
  assert.deepEqual(either.results, []);
  const mixed = await (await get('/search?q=wing&mode=keyword&filters.section=a&filters.section.none=b')).json();
  assert.deepEqual(mixed.results, [], 'a plain value beside a way is the filter\'s all');
  for (const bad of ['filters.section.sideways=a', 'filters.section.any.more=a', 'bm25.k1.any=1', 'filters.__proto__.any=a']) {
    await expectError(await get(`/search?q=wing&${bad}`), 400, 'BAD_ARGUMENT');
  }
  const sorted = await (await get('/search?q=wing&k=3&mode=keyword&sort.date=desc')).json();
  assert.equal(sorted.results.length, 3, 'a key no page has keeps the order');
  await expectError(await get('/search?q=wing&sort.date=sideways'), 400, 'BAD_ARGUMENT');
  await expectError(await get('/search?q=wing&sort.a=asc&sort.b=desc'), 400, 'BAD_ARGUMENT');
});

test('/ask needs the bearer token when SEXTANT_TOKEN is set', async () => {
  const ask = (headers) => fetch(`${base}/ask`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"question": "heated wings"}' });
  const none = await expectError(await ask({}), 401, 'UNAUTHORIZED');
  assert.equal(none.headers.get('www-authenticate'), 'Bearer');
  await expectError(await ask({ authorization: 'Bearer wrong' }), 401, 'UNAUTHORIZED');
});

test('rerank=llm on /search and /context: the Worker\'s LLM rates the results, held to /ask\'s token and origins', async () => {
  const auth = { authorization: `Bearer ${TOKEN}` };
  await expectError(await get('/search?q=shock+waves&rerank=llm'), 401, 'UNAUTHORIZED');
  await expectError(await fetch(`${base}/search?q=shock+waves&rerank=llm`, { headers: { ...auth, origin: 'https://elsewhere.example' } }), 403, 'FORBIDDEN');
  const plain = await (await get('/search?q=shock+waves&k=20')).json();
  const response = await fetch(`${base}/search?q=shock+waves&rerank=llm`, { headers: auth });
  assert.equal(response.status, 200);
  const found = await response.json();
  // Two calls of 10 rate passage n as n: each call's last first, ties in the fused order.
  assert.equal(found.rerank.calls, 2);
  assert.equal(found.rerank.fallback, null);
  assert.deepEqual(found.results.map((r) => r.chunk_id).slice(0, 4), [9, 19, 8, 18].map((i) => plain.results[i].chunk_id));
  assert.deepEqual(found.results.slice(0, 2).map((r) => r.rerank), [10, 10]);
  assert.equal(found.results.length, 10);
  const framed = await fetch(`${base}/context?q=shock+waves&rerank=llm&k=3&token_budget=2000`, { headers: auth });
  assert.equal(framed.status, 200);
  assert.equal(decodeURIComponent(framed.headers.get('x-sextant-chunks').split(' ')[0]), plain.results[9].chunk_id);
});

test('/ask streams the LLM answer as server-sent events with verified citations', async () => {
  const before = llm.requests.length;
  const response = await fetch(`${base}/ask`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ question: 'what similarity laws must be obeyed when constructing aeroelastic models of heated high speed aircraft', k: 4 }),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^text\/event-stream/);
  const events = [];
  const text = await response.text();
  for (const block of text.split('\n\n').filter(Boolean)) {
    const event = block.match(/^event: (.+)$/m)[1];
    const data = JSON.parse(block.match(/^data: (.+)$/m)[1]);
    events.push({ event, data });
  }
  const tokens = events.filter((e) => e.event === 'token').map((e) => e.data.text);
  assert.ok(tokens.length >= 5, 'the answer was not streamed');
  const done = events.at(-1);
  assert.equal(done.event, 'done');
  assert.equal(done.data.answer, tokens.join(''));
  assert.equal(done.data.grounded, true);
  assert.equal(done.data.refused, false);
  assert.equal(done.data.citations[0].valid, true);
  assert.ok(done.data.chunks.some((c) => c.chunk_id === done.data.citations[0].chunk_id));
  assert.equal(llm.requests.length, before + 1);
  const request = llm.requests.at(-1);
  assert.equal(request.headers.authorization, 'Bearer sk-edge');
  assert.equal(request.body.model, 'edge-test-model');
  assert.equal(chunkIdsIn(request.body).length, 4);
});

test('/context returns framed context and CORS follows CORS_ORIGINS', async () => {
  const response = await get('/context?q=shock+waves&token_budget=400');
  assert.equal(response.status, 200);
  const text = await response.text();
  assert.match(text, /^<retrieved_context source="[^"]+" chunk_id="[^"]+">\n\| /);
  assert.ok(Number(response.headers.get('x-sextant-tokens')) <= 400);
  const preflight = await fetch(`${base}/search?q=x`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'GET' } });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), ORIGIN);
  const other = await fetch(`${base}/search?q=wing`, { headers: { origin: 'https://elsewhere.example' } });
  assert.equal(other.headers.get('access-control-allow-origin'), null);
});

test('50 concurrent searches all succeed', async () => {
  const queries = readFileSync(path.join(root, 'tests/fixtures/cranfield/queries.jsonl'), 'utf8').split('\n').filter(Boolean).slice(0, 50).map((l) => JSON.parse(l).text);
  const responses = await Promise.all(queries.map((q) => get(`/search?q=${encodeURIComponent(q.slice(0, 512))}&k=5`)));
  for (const r of responses) assert.equal(r.status, 200);
  const bodies = await Promise.all(responses.map((r) => r.json()));
  for (const b of bodies) assert.equal(b.results.length, 5);
});

test('a bad SEXTANT_WEIGHTS is a configuration error that says what to set', async () => {
  const misconfigured = await startWorkerd({ assetsDir: cranfieldAssets(), name: 'bad-weights', env: { SEXTANT_WEIGHTS: 'int4' } });
  try {
    const response = await fetch(`${misconfigured.base}/search?q=wing`);
    assert.equal(response.status, 500);
    const body = await response.json();
    assert.equal(body.error.code, 'BAD_CONFIG');
    assert.match(body.error.message, /SEXTANT_WEIGHTS is "int4".*f32 or int8/);
  } finally {
    misconfigured.stop();
  }
});

/** A small site with a bundle whose chunk ids hold `&`, CR and LF, served without a token. */
function oddSite() {
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-worker-odd-'));
  mkdirSync(path.join(dir, 'guide'));
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>home</title><p>home page</p>');
  writeFileSync(path.join(dir, 'guide/index.html'), '<!doctype html><title>guide</title><p>guide page</p>');
  writeFileSync(path.join(dir, 'app.js'), 'console.log(1);');
  writeFileSync(path.join(dir, 'site.css'), 'p {}');
  const corpus = path.join(dir, 'odd.jsonl');
  const records = [
    { _id: 'Q&A\r\nfaq', title: 'Questions', text: 'The keeper trims the wick of the lamp every evening at dusk.' },
    { _id: 'plain', title: 'Fog', text: 'In fog the horn sounds twice every minute so ships keep clear.' },
  ];
  writeFileSync(corpus, records.map((r) => JSON.stringify(r)).join('\n'));
  const bundle = path.join(dir, 'odd.sxt');
  execFileSync(sextantBin, ['build', corpus, '-o', bundle], { env: { ...process.env, SEXTANT_MODEL_DIR: modelDir }, stdio: 'pipe' });
  addBase(dir, 'sextant', bundle, 2);
  return dir;
}

test('without a token: chunk ids with CR/LF, body caps, static files as a web host serves them, and the LLM stops when the client goes', async () => {
  const slow = await startLlmServer((req) => {
    const [first] = chunkIdsIn(req.body);
    return { events: sseAnswer(`${'tick '.repeat(200)}[${first}]`), delayMs: 40 };
  });
  const oddDir = oddSite();
  mkdirSync(path.join(oddDir, 'research/vendor'), { recursive: true });
  writeFileSync(path.join(oddDir, 'research/vendor/lib.js'), 'export const x = 1;');
  const odd = await startWorkerd({ assetsDir: oddDir, name: 'odd', env: { LLM_BASE_URL: slow.baseUrl, LLM_MODEL: 'slow' } });
  try {
    // Chunk ids go into a header percent-encoded, so a CR or LF in a file name cannot break it.
    const context = await fetch(`${odd.base}/context?q=keeper+trims+the+wick&k=2`);
    assert.equal(context.status, 200);
    const ids = context.headers.get('x-sextant-chunks').split(' ').map(decodeURIComponent);
    assert.ok(ids.includes('Q&A\r\nfaq#0'), ids.join(' | '));
    // The body cap holds with no token configured too.
    const big = await fetch(`${odd.base}/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 'x', pad: 'y'.repeat(200_000) }) });
    assert.equal(big.status, 413);
    assert.equal((await big.json()).error.code, 'PAYLOAD_TOO_LARGE');
    // Pages render: HTML with its type, folders through index.html, no JSON listings.
    const home = await fetch(`${odd.base}/`);
    assert.match(home.headers.get('content-type'), /^text\/html/);
    assert.match(await home.text(), /home page/);
    const folder = await fetch(`${odd.base}/guide`, { redirect: 'manual' });
    assert.equal(folder.status, 308);
    assert.equal(new URL(folder.headers.get('location'), odd.base).href, `${odd.base}/guide/`);
    // A path that looks like another host never redirects there.
    for (const sneaky of ['//evil.example/guide', '/%5Cevil.example/guide']) {
      const away = await fetch(`${odd.base}${sneaky}`, { redirect: 'manual' });
      const location = away.headers.get('location');
      assert.ok(location === null || new URL(location, odd.base).origin === new URL(odd.base).origin, `${sneaky} → ${location}`);
    }
    // Query parameters cannot reach Object.prototype; a bad one is a 400.
    for (const hostile of ['__proto__.status=1', 'constructor.prototype=1', 'bm25=1&bm25.k1=2']) {
      const r = await fetch(`${odd.base}/search?q=wick&${hostile}`);
      assert.equal(r.status, 400, hostile);
    }
    assert.equal((await fetch(`${odd.base}/context?q=wick`)).status, 200);
    assert.match(await (await fetch(`${odd.base}/guide/`)).text(), /guide page/);
    assert.match((await fetch(`${odd.base}/app.js`)).headers.get('content-type'), /^text\/javascript/);
    assert.match((await fetch(`${odd.base}/site.css`)).headers.get('content-type'), /^text\/css/);
    const listing = await fetch(`${odd.base}/sextant/`);
    assert.equal(listing.status, 404);
    // A folder is never listed (workerd's disk service would answer one with JSON), whatever
    // its name; the files in it, JSON ones too, are served.
    for (const folder of ['/sextant', '/sextant/index', '/research/vendor', '/research']) {
      const r = await fetch(`${odd.base}${folder}`, { redirect: 'manual' });
      const text = await r.text();
      assert.equal(r.status, 404, `${folder}: ${r.status} ${text.slice(0, 80)}`);
      assert.ok(!text.includes('"type"'), `${folder} listed its files`);
    }
    assert.equal((await fetch(`${odd.base}/research/vendor/lib.js`)).status, 200);
    const entry = await fetch(`${odd.base}/sextant/sextant.json`);
    assert.equal(entry.status, 200);
    assert.ok((await entry.json()).index);
    // A client that hangs up before the first token stops the LLM call too.
    const hanging = await startLlmServer(() => ({ hang: true }));
    const quiet = await startWorkerd({ assetsDir: oddSite(), name: 'quiet', env: { LLM_BASE_URL: hanging.baseUrl, LLM_MODEL: 'hang' } });
    try {
      const early = new AbortController();
      const pending = fetch(`${quiet.base}/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"question": "when is the wick trimmed"}', signal: early.signal }).catch(() => null);
      for (let i = 0; i < 100 && hanging.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(hanging.requests.length, 1, 'the LLM was never called');
      early.abort();
      await pending;
      for (let i = 0; i < 100 && !hanging.requests[0].aborted; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(hanging.requests[0].aborted, true, 'the LLM call outlived the client');
    } finally {
      quiet.stop();
      await hanging.close();
    }
    // A client that hangs up stops the LLM's generation.
    const controller = new AbortController();
    const response = await fetch(`${odd.base}/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"question": "when is the wick trimmed"}', signal: controller.signal });
    const reader = response.body.getReader();
    await reader.read(); // the first token arrived: generation is under way
    controller.abort();
    const request = slow.requests.at(-1);
    for (let i = 0; i < 100 && !request.aborted; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(request.aborted, true, 'the upstream LLM request was not cancelled');
  } finally {
    odd.stop();
    await slow.close();
  }
});

/** An MCP client (the official SDK) connected to `url` with `headers`. */
async function mcpClient(url, headers = {}) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const client = new Client({ name: 'sextant-tests', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

test('/mcp: the MCP SDK client lists and calls search, fetch and describe behind the bearer token', async () => {
  await assert.rejects(mcpClient(`${base}/mcp`), /401|nauthori/i, 'no token, no session');
  await assert.rejects(mcpClient(`${base}/mcp`, { authorization: 'Bearer wrong-token-of-some-length' }), /401|nauthori/i);
  const client = await mcpClient(`${base}/mcp`, { authorization: `Bearer ${TOKEN}` });
  try {
    assert.equal(client.getServerVersion().name, 'sextant');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['describe', 'fetch', 'graph', 'search']);
    assert.ok(tools.every((t) => t.annotations.readOnlyHint === true));

    // search gives the native CLI's results (one base: the base's own ids and scores).
    const expected = readFileSync(path.join(parityDir, 'expected.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.mode === 'hybrid');
    const found = await client.callTool({ name: 'search', arguments: { query: expected.query, k: 5 } });
    assert.notEqual(found.isError, true);
    const results = found.structuredContent.results;
    assert.deepEqual(results.map((r) => r.id), expected.results.slice(0, 5).map((r) => r.chunk_id));
    assert.deepEqual(JSON.parse(found.content[0].text).results.map((r) => r.id), results.map((r) => r.id));
    const keyword = await client.callTool({ name: 'search', arguments: { query: 'boundary layer', mode: 'keyword', k: 3 } });
    assert.equal(keyword.structuredContent.results.length, 3);
    // Filters and sort as the package takes them (no Cranfield page has a filter or a sort key).
    const call = async (extra) => (await client.callTool({ name: 'search', arguments: { query: 'boundary layer', mode: 'keyword', k: 3, ...extra } })).structuredContent.results.map((r) => r.id);
    const ids = keyword.structuredContent.results.map((r) => r.id);
    assert.deepEqual(await call({ filters: { section: { none: ['a'], not: ['b'] } } }), ids, 'excluding values no page has keeps every result');
    assert.deepEqual(await call({ filters: { section: 'a' } }), [], 'a value no page has');
    assert.deepEqual(await call({ filters: { section: { any: ['a', 'b'] } } }), []);
    assert.deepEqual(await call({ sort: { date: 'desc' } }), ids, 'a key no page has keeps the order');
    await assert.rejects(client.callTool({ name: 'search', arguments: { query: 'wings', sort: { date: 'sideways' } } }), /sort must be/);
    await assert.rejects(client.callTool({ name: 'search', arguments: { query: 'wings', sort: { date: 'asc', title: 'asc' } } }), /sort must be/);
    await assert.rejects(client.callTool({ name: 'search', arguments: { query: 'wings', filters: { section: { some: ['a'] } } } }), /filters must be/);

    // fetch: the chunk's whole text, then its whole document.
    const chunk = await client.callTool({ name: 'fetch', arguments: { id: results[0].id } });
    assert.equal(chunk.structuredContent.kind, 'chunk');
    assert.equal(chunk.structuredContent.text, expected.results[0].text);
    const doc = await client.callTool({ name: 'fetch', arguments: { id: results[0].doc_id } });
    assert.equal(doc.structuredContent.kind, 'document');
    assert.ok(doc.structuredContent.chunk_ids.includes(results[0].id));
    assert.ok(doc.structuredContent.text.includes(expected.results[0].text));
    const missing = await client.callTool({ name: 'fetch', arguments: { id: 'no/such/page.md#4' } });
    assert.equal(missing.isError, true);
    assert.match(missing.content[0].text, /nothing has the id/);

    const described = await client.callTool({ name: 'describe', arguments: {} });
    const counts = cranfieldManifest().counts;
    assert.deepEqual(described.structuredContent.bases, [{ base: 'docs', loaded: true, documents: counts.documents, chunks: counts.chunks }]);
    assert.ok(described.structuredContent.bases[0].chunks >= 1400);

    // Bad arguments are the agent's to fix: a protocol error that says which.
    await assert.rejects(client.callTool({ name: 'search', arguments: { query: 'wings', k: 500 } }), /k must be an integer from 1 to 50/);
    await assert.rejects(client.callTool({ name: 'search', arguments: {} }), /query is required/);
    await assert.rejects(client.callTool({ name: 'delete', arguments: {} }), /no tool "delete"/);
  } finally {
    await client.close();
  }
  // The transport's edges: no event stream, other origins refused, a bad body is a parse error.
  const auth = { authorization: `Bearer ${TOKEN}` };
  assert.equal((await fetch(`${base}/mcp`, { headers: auth })).status, 405);
  await expectError(await fetch(`${base}/mcp`, { method: 'POST', headers: { ...auth, origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{}' }), 403, 'FORBIDDEN');
  const parse = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"jsonrpc": "2.0", "id": 1,' });
  assert.equal(parse.status, 400);
  assert.equal((await parse.json()).error.code, -32700);
  const note = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"jsonrpc": "2.0", "method": "notifications/initialized"}' });
  assert.equal(note.status, 202);
});

test('every request logs one JSON line: id, route, bases, stages, results, status; never the query or a secret', async () => {
  const response = await get('/search?q=transition+in+hypersonic+flow&k=4');
  const id = response.headers.get('x-request-id');
  assert.ok(id);
  await response.json();
  const bad = await get('/search?k=4');
  const badId = bad.headers.get('x-request-id');
  for (let i = 0; i < 50 && !workerd.logs.some((l) => l.request_id === badId); i++) await new Promise((r) => setTimeout(r, 50));
  const line = workerd.logs.find((l) => l.request_id === id);
  assert.ok(line, 'no log line for the request');
  assert.equal(line.route, '/search');
  assert.equal(line.status, 200);
  assert.deepEqual(line.bases, ['docs']);
  assert.equal(line.results, 4);
  for (const stage of ['embed_ms', 'keyword_ms', 'vector_ms', 'fusion_ms', 'total_ms', 'fetch_ms']) assert.equal(typeof line.stages[stage], 'number', stage);
  assert.equal(typeof line.ms, 'number');
  assert.equal(line.query, undefined, 'the query is logged only when SEXTANT_LOG_QUERIES is true');
  const failed = workerd.logs.find((l) => l.request_id === badId);
  assert.deepEqual([failed.status, failed.error], [400, 'BAD_ARGUMENT']);
  // One line per request, and no secret in any of them.
  assert.equal(workerd.logs.filter((l) => l.request_id === id).length, 1);
  const all = JSON.stringify(workerd.logs);
  for (const secret of [TOKEN, 'sk-edge']) assert.ok(!all.includes(secret), `${secret} was logged`);
});

test('OTEL_EXPORTER_OTLP_ENDPOINT: each search and answer sends its spans to the collector as valid OTLP/JSON, without the query; a collector that is down changes no answer', async () => {
  const receiver = await startReceiver();
  const traced = await startWorkerd({
    assetsDir: cranfieldAssets(),
    name: 'traced',
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url.replace(/\/v1\/traces$/, ''), OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=k%3D1', OTEL_SERVICE_NAME: 'docs-edge', LLM_BASE_URL: llm.baseUrl, LLM_MODEL: 'm' },
  });
  try {
    const q = 'heated aeroelastic models';
    const response = await fetch(`${traced.base}/search?q=${encodeURIComponent(q)}&k=5`);
    assert.equal(response.status, 200);
    const found = await response.json();
    const asked = await fetch(`${traced.base}/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 'what do heated models need' }) });
    assert.equal(asked.status, 200);
    await asked.text();
    for (let i = 0; i < 100 && !receiver.spans.some((s) => s.name === 'rag.llm'); i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(receiver.rejected, []);
    const root = receiver.spans.find((s) => s.name === 'rag.search');
    assert.ok(root, receiver.spans.map((s) => s.name).join());
    assert.equal(root.headers['x-collector-key'], 'k=1');
    assert.equal(attr(root, 'query_length'), q.length);
    assert.equal(attr(root, 'top_k'), 5);
    assert.equal(attr(root, 'result_count'), found.results.length);
    const children = receiver.spans.filter((s) => s.parentSpanId === root.spanId).map((s) => s.name);
    assert.deepEqual(children, ['rag.embed', 'rag.search.bm25', 'rag.search.dense', 'rag.rrf_fusion']);
    const ask = receiver.spans.find((s) => s.name === 'rag.ask');
    const call = receiver.spans.find((s) => s.name === 'rag.llm');
    assert.equal(call.parentSpanId, ask.spanId);
    assert.equal(attr(call, 'prompt_tokens'), 100);
    assert.ok(!JSON.stringify(receiver.spans).includes('heated'), 'a span holds the query');
  } finally {
    traced.stop();
    await receiver.close();
  }
  // The collector gone: the same answers.
  const gone = await startWorkerd({ assetsDir: cranfieldAssets(), name: 'untraced', env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url.replace(/\/v1\/traces$/, '') } });
  try {
    const response = await fetch(`${gone.base}/search?q=wing&k=3`);
    assert.equal(response.status, 200);
    assert.equal((await response.json()).results.length, 3);
  } finally {
    gone.stop();
  }
});

test('several bases: searched alone or together, each hit naming its base, a missing base reported and skipped', async () => {
  const dir = cranfieldAssets();
  addBase(dir, 'golden', path.join(root, 'tests/fixtures/golden-v2-fields.sxt'), 7);
  const multi = await startWorkerd({
    assetsDir: dir,
    name: 'bases',
    env: { SEXTANT_BASES: 'cranfield=sextant, golden=golden, lost=nowhere', SEXTANT_LOG_QUERIES: 'true', SEXTANT_TOKEN: TOKEN },
  });
  try {
    const both = await (await fetch(`${multi.base}/search?q=install+the+lamp+and+wing+flutter&k=10`)).json();
    assert.deepEqual(new Set(both.results.map((r) => r.base)), new Set(['cranfield', 'golden']));
    assert.deepEqual(both.results.map((r) => r.rank), [...Array(10).keys()].map((i) => i + 1));
    assert.equal(both.partial, true);
    assert.deepEqual(both.failed.map((f) => [f.base, f.code]), [['lost', 'NOT_BUILT']]);
    assert.deepEqual(both.bases.map((b) => b.base), ['cranfield', 'golden']);
    const alone = await (await fetch(`${multi.base}/search?q=install+the+lamp&k=3&bases=golden`)).json();
    assert.ok(alone.results.every((r) => r.base === 'golden'));
    assert.equal(alone.partial, false);
    assert.equal(alone.results[0].score, alone.results[0].base_score, 'one base keeps its own scores');
    await expectError(await fetch(`${multi.base}/search?q=lamp&bases=golden,nope`), 400, 'BAD_ARGUMENT');
    await expectError(await fetch(`${multi.base}/search?q=lamp&bases=,`), 400, 'BAD_ARGUMENT');
    await expectError(await fetch(`${multi.base}/search?q=lamp&bases=lost`), 503, 'NOT_BUILT');
    const framed = await fetch(`${multi.base}/context?q=install+the+lamp&k=4&token_budget=600`);
    assert.equal(framed.headers.get('x-sextant-partial'), 'lost');
    assert.match(await framed.text(), /chunk_id="(cranfield|golden):/);
    const health = await (await fetch(`${multi.base}/healthz`)).json();
    assert.deepEqual(health.bases.map((b) => [b.base, b.loaded]), [['cranfield', true], ['golden', true], ['lost', false]]);
    assert.equal(health.partial, true);

    // MCP over several bases: ids say their base, and fetch takes them back.
    const client = await mcpClient(`${multi.base}/mcp`, { authorization: `Bearer ${TOKEN}` });
    try {
      const found = await client.callTool({ name: 'search', arguments: { query: 'install from source', k: 4, bases: ['golden'] } });
      const first = found.structuredContent.results[0];
      assert.match(first.id, /^golden:guide\//);
      const chunk = await client.callTool({ name: 'fetch', arguments: { id: first.id } });
      assert.equal(chunk.structuredContent.text, first.text);
      assert.equal(chunk.structuredContent.base, 'golden');
      // An agent may send the base too; the document id from fetch fetches the document.
      const again = await client.callTool({ name: 'fetch', arguments: { id: first.id, base: 'golden' } });
      assert.equal(again.structuredContent.text, first.text);
      const doc = await client.callTool({ name: 'fetch', arguments: { id: chunk.structuredContent.doc_id } });
      assert.equal(doc.structuredContent.kind, 'document');
      const described = await client.callTool({ name: 'describe', arguments: {} });
      assert.deepEqual(described.structuredContent.bases.map((b) => [b.base, b.loaded]), [['cranfield', true], ['golden', true], ['lost', false]]);
      const ambiguous = await client.callTool({ name: 'fetch', arguments: { id: 'guide/install.md' } });
      assert.equal(ambiguous.isError, true);
      assert.match(ambiguous.content[0].text, /say which base/);
    } finally {
      await client.close();
    }
    // With SEXTANT_LOG_QUERIES, the query is in the line; the token never is.
    const line = multi.logs.find((l) => l.route === '/search' && l.query === 'install the lamp and wing flutter');
    assert.deepEqual(line.failed, ['lost']);
    assert.ok(!JSON.stringify(multi.logs).includes(TOKEN));
    assert.ok(multi.logs.some((l) => l.route === '/mcp' && l.tool === 'search' && l.query === 'install from source'));
  } finally {
    multi.stop();
  }
});

test('a SEXTANT_TOKEN under 16 characters is a configuration error, not a guard', async () => {
  const short = await startWorkerd({ assetsDir, name: 'short-token', env: { SEXTANT_TOKEN: 'short' } });
  try {
    const response = await fetch(`${short.base}/mcp`, { method: 'POST', headers: { authorization: 'Bearer short', 'content-type': 'application/json' }, body: '{}' });
    await expectError(response, 500, 'BAD_CONFIG');
  } finally {
    short.stop();
  }
});

test('safe defaults for a public Worker: /ask and /mcp only from origins named in CORS_ORIGINS ("*" is for the read-only routes), JSON bodies only, and an anonymous answer within defaults().ask unless the knobs raise it', async () => {
  const answering = await startLlmServer((req) => ({ events: sseAnswer(`Heated models need similar thermal stresses [${chunkIdsIn(req.body)[0]}].`) }));
  const EVIL = 'https://evil.example';
  const started = [];
  const worker = async (name, env) => {
    const w = await startWorkerd({ assetsDir, name, env: { LLM_BASE_URL: answering.baseUrl, LLM_MODEL: name, ...env } });
    started.push(w);
    return w;
  };
  const asker = (w) => (body, headers = {}) => fetch(`${w.base}/ask`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ question: 'what do heated models need?', ...body }) });
  try {
    // As shipped: CORS_ORIGINS = "*", no SEXTANT_TOKEN.
    const open = await worker('public', { CORS_ORIGINS: '*' });
    const ask = asker(open);
    // Another site's page may read search results (CORS "*")...
    const search = await fetch(`${open.base}/search?q=heated+wings&k=2`, { headers: { origin: EVIL } });
    assert.equal(search.status, 200);
    assert.equal(search.headers.get('access-control-allow-origin'), '*');
    // ...but not spend the operator's LLM key, nor drive the MCP tools (DNS rebinding).
    await expectError(await fetch(`${open.base}/ask`, { method: 'POST', headers: { origin: EVIL, 'content-type': 'text/plain' }, body: '{"question": "heated wings"}' }), 403, 'FORBIDDEN');
    const preflight = await fetch(`${open.base}/ask`, { method: 'OPTIONS', headers: { origin: EVIL, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    assert.equal(preflight.headers.get('access-control-allow-origin'), null, 'a preflight for /ask from another origin is granted');
    await expectError(await ask({}, { origin: EVIL }), 403, 'FORBIDDEN');
    await expectError(await fetch(`${open.base}/mcp`, { method: 'POST', headers: { origin: EVIL, 'content-type': 'application/json' }, body: '{"jsonrpc": "2.0", "id": 1, "method": "ping"}' }), 403, 'FORBIDDEN');
    // A body not declared JSON never reaches the LLM (a form or text/plain post needs no preflight).
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', null]) {
      const headers = type ? { 'content-type': type } : {};
      await expectError(await fetch(`${open.base}/ask`, { method: 'POST', headers, body: new TextEncoder().encode('{"question": "heated wings"}') }), 400, 'BAD_ARGUMENT');
    }
    await expectError(await fetch(`${open.base}/mcp`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"jsonrpc": "2.0", "id": 1, "method": "ping"}' }), 400, 'BAD_ARGUMENT');
    // Without a token, an answer reads at most defaults().ask's k and token_budget.
    await expectError(await ask({ token_budget: 100000 }), 400, 'BAD_ARGUMENT');
    await expectError(await ask({ k: 50 }), 400, 'BAD_ARGUMENT');
    assert.equal(answering.requests.length, 0, 'a refused request reached the LLM');
    // A page the Worker serves (its own origin) and callers without an Origin (servers, CLIs) may ask.
    const same = await ask({ k: 6, token_budget: 1500 }, { origin: open.base });
    assert.equal(same.status, 200, await same.clone().text());
    assert.match(await same.text(), /event: done/);
    const server = await ask({});
    assert.equal(server.status, 200);
    await server.text();
    // DNS rebinding: a page at rebound.example, its name now pointing at this Worker, is
    // same-origin by the browser's rule (Host and Origin agree); only the read-only routes answer it.
    const rebound = (w, route, body) => new Promise((resolve, reject) => {
      const port = new URL(w.base).port;
      const req = http.request({ host: '127.0.0.1', port, path: route, method: body ? 'POST' : 'GET', headers: { host: `rebound.example:${port}`, origin: `http://rebound.example:${port}`, 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ status: res.statusCode, text }));
      });
      req.on('error', reject);
      req.end(body ?? '');
    });
    const ping = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}';
    const question = JSON.stringify({ question: 'what do heated models need?' });
    for (const [route, body] of [['/mcp', ping], ['/ask', question]]) {
      const refused = await rebound(open, route, body);
      assert.equal(refused.status, 403, `${route}: ${refused.text}`);
      assert.match(refused.text, /SEXTANT_HOSTS/, 'the error says how a custom domain is named');
    }
    assert.equal((await rebound(open, '/search?q=heated+wings&k=2')).status, 200);

    // A host the operator names (a custom domain) is the Worker's own.
    const hosted = await worker('hosted', { SEXTANT_HOSTS: 'docs.example.com, rebound.example' });
    const pinged = await rebound(hosted, '/mcp', ping);
    assert.equal(pinged.status, 200, pinged.text);
    assert.match(pinged.text, /"result"/);

    // Named origins may ask; the knobs raise the caps.
    const named = await worker('named', { CORS_ORIGINS: ORIGIN, SEXTANT_ASK_MAX_K: '10', SEXTANT_ASK_MAX_TOKEN_BUDGET: '3000' });
    const asked = await asker(named)({ k: 10, token_budget: 3000 }, { origin: ORIGIN });
    assert.equal(asked.status, 200, await asked.clone().text());
    assert.equal(asked.headers.get('access-control-allow-origin'), ORIGIN);
    await asked.text();
    await expectError(await asker(named)({ k: 11 }), 400, 'BAD_ARGUMENT');

    // A knob that is not a number is the operator's error, said as such.
    const wrong = await worker('wrong', { SEXTANT_ASK_MAX_K: 'lots' });
    await expectError(await asker(wrong)({}), 500, 'BAD_CONFIG');
  } finally {
    for (const w of started) w.stop();
    await answering.close();
  }
});
