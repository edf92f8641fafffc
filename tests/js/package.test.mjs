// Tests of the *built* npm package (pkg/, packed and installed as a user would), in Node:
// API shape, typed errors, parity with the CLI, loading by URL with progress, and ask()
// against a local OpenAI-compatible SSE server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, mkdtemp } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { readFileSync, statSync } from 'node:fs';
import { fixtures, modelDir, sextantBin, importPackage, consumerProject, exampleFiles, taggedBlock, root, expectCode } from './harness.mjs';
import { startLlmServer, sseAnswer, chunkIdsIn } from './llm-server.mjs';

let api;
let bundle;
let model;
let tokenizer;
let sextant;

before(async () => {
  api = await importPackage();
  bundle = await readFile(path.join(fixtures, 'golden-v2.sxt'));
  model = await readFile(path.join(modelDir, 'model.onnx'));
  tokenizer = await readFile(path.join(modelDir, 'tokenizer.json'));
  sextant = await api.Sextant.load({ index: bundle, model, tokenizer });
});

after(() => sextant?.free());

test('the package exports its API, types and conditions', async () => {
  for (const name of ['Sextant', 'SextantError', 'verifyCitations', 'highlights', 'defaults', 'ready', 'readChatStream', 'fetchBytes']) {
    assert.ok(name in api, `missing export ${name}`);
  }
  const pkg = JSON.parse(readFileSync(path.join(consumerProject(), 'node_modules/sextant-search/package.json'), 'utf8'));
  assert.deepEqual(Object.keys(pkg.exports['.']), ['types', 'workerd', 'node', 'browser', 'default']);
  const types = readFileSync(path.join(consumerProject(), 'node_modules/sextant-search/index.d.ts'), 'utf8');
  assert.match(types, /static load\(options: LoadOptions\): Promise<Sextant>/);
  assert.match(api.defaults().system_prompt, /untrusted/);
});

test('search returns the CLI fields and per-stage timings', async () => {
  const response = await sextant.search('how do I clean the lens', { k: 3 });
  assert.equal(response.results.length, 3);
  const top = response.results[0];
  assert.equal(top.doc_id, 'notes.txt');
  for (const field of ['rank', 'chunk_id', 'doc_id', 'title', 'source', 'url', 'heading_path', 'text', 'score', 'dense', 'keyword']) {
    assert.ok(field in top, `missing ${field}`);
  }
  for (const stage of ['embed_ms', 'keyword_ms', 'vector_ms', 'fusion_ms', 'total_ms']) {
    assert.equal(typeof response.timings[stage], 'number');
  }
  assert.ok(response.timings.total_ms >= response.timings.embed_ms);
  assert.equal(response.vector_method, 'rescored');
});

test('the package gives the native CLI results in every mode', async () => {
  for (const mode of ['hybrid', 'dense', 'keyword']) {
    for (const query of ['how often should the bulb be changed', 'fog horn signals', 'prompt injection password']) {
      const cli = JSON.parse(
        execFileSync(sextantBin, ['search', path.join(fixtures, 'golden-v2.sxt'), query, '--mode', mode, '-k', '5', '--json'], {
          env: { ...process.env, SEXTANT_MODEL_DIR: modelDir },
        }),
      );
      const js = await sextant.search(query, { k: 5, mode });
      assert.deepEqual(js.results.map((r) => r.chunk_id), cli.results.map((r) => r.chunk_id), `${mode}: ${query}`);
      js.results.forEach((r, i) => assert.ok(Math.abs(r.score - cli.results[i].score) <= 1e-4, `${mode} ${query} ${r.chunk_id}`));
    }
  }
});

test('context frames results within the budget and blocks fake delimiters', async () => {
  const framed = await sextant.context('prompt injection password', { token_budget: 400, k: 4 });
  assert.ok(framed.tokens <= 400);
  assert.ok(framed.included.length >= 1);
  assert.match(framed.context, /\[blocked-retrieved-context-end\]/);
  for (const line of framed.context.split('\n')) {
    assert.ok(line.startsWith('<retrieved_context ') || line.startsWith('| ') || line === '</retrieved_context>', line);
  }
});

test('errors are Errors with stable codes', async () => {
  const corrupt = Uint8Array.from(bundle);
  corrupt[corrupt.length - 20] ^= 0xff;
  await expectCode(api.Sextant.load({ index: corrupt, model, tokenizer }), 'CORRUPT_BUNDLE');
  await expectCode(api.Sextant.load({ index: new TextEncoder().encode('<html>'), model, tokenizer }), 'CORRUPT_BUNDLE');
  const future = Uint8Array.from(bundle);
  future[8] = 9; // major 9
  const e = await expectCode(api.Sextant.load({ index: future }), 'UNSUPPORTED_VERSION');
  assert.match(e.message, /reads majors 1 to 2/);
  const v1 = await readFile(path.join(fixtures, 'golden-v1.sxt'));
  const old = await expectCode(api.Sextant.load({ index: v1 }), 'UNSUPPORTED_VERSION');
  assert.match(old.message, /sextant upgrade/);
  const otherTokenizer = new Uint8Array([...tokenizer, 0x0a]);
  await expectCode(api.Sextant.load({ index: bundle, model, tokenizer: otherTokenizer }), 'MODEL_MISMATCH');
  await expectCode(api.Sextant.load({ index: bundle, model: model.subarray(0, 1000), tokenizer }), 'MODEL_MISMATCH');
  await expectCode(api.Sextant.load({ index: bundle, model }), 'BAD_ARGUMENT');
  await expectCode(api.Sextant.load({}), 'BAD_ARGUMENT');
  await expectCode(() => sextant.search('lamp', { k: 0 }), 'BAD_ARGUMENT');
  await expectCode(() => sextant.search('   '), 'BAD_ARGUMENT');
  await expectCode(() => sextant.search('lamp', { mode: 'fuzzy' }), 'BAD_ARGUMENT');
  await expectCode(() => sextant.search('lamp', { kk: 3 }), 'BAD_ARGUMENT');
  const keywordOnly = await api.Sextant.load({ index: bundle });
  assert.equal((await keywordOnly.search('fog horn', { mode: 'keyword' })).results[0].doc_id, 'faq-2');
  await expectCode(() => keywordOnly.search('fog horn'), 'NO_MODEL');
  keywordOnly.free();
});

test("weights: 'f32' gives the default int8 weights' results; an unknown value is BAD_ARGUMENT", async () => {
  const f32 = await api.Sextant.load({ index: bundle, model, tokenizer, weights: 'f32' });
  try {
    for (const mode of ['hybrid', 'dense']) {
      const want = (await f32.search('how do lighthouses warn ships in fog', { k: 5, mode })).results;
      const got = (await sextant.search('how do lighthouses warn ships in fog', { k: 5, mode })).results;
      assert.deepEqual(got.map((r) => r.chunk_id), want.map((r) => r.chunk_id), mode);
      // Integer products round each activation row to its own levels: scores within 1e-4.
      got.forEach((r, i) => assert.ok(Math.abs(r.score - want[i].score) <= 1e-4, `${mode} ${r.score} vs ${want[i].score}`));
      assert.ok(got.some((r, i) => r.score !== want[i].score), 'the two weights modes really differ');
    }
  } finally {
    f32.free();
  }
  const e = await expectCode(api.Sextant.load({ index: bundle, model, tokenizer, weights: 'int4' }), 'BAD_ARGUMENT');
  assert.match(e.message, /f32 or int8/);
});

test("weights: 'int8a8' embeds as `sextant build` embeds passages, bit for bit in WebAssembly and natively", async () => {
  // Activation rows rounded to bytes: natively the byte kernels (vpdpbusd) where the CPU has
  // them, in WebAssembly the same bytes through the 16-bit kernel; the same integer sums.
  const bytes = await api.Sextant.load({ index: bundle, model, tokenizer, weights: 'int8a8' });
  try {
    const texts = [
      'The boundary layer over a flat plate at hypersonic speeds thickens with the Mach number; the shock wave and the viscous layer interact near the leading edge.',
      'naïve café résumé — 东京是日本的首都',
      'x',
    ];
    for (const text of texts) {
      const ours = bytes.embed(text);
      const cli = JSON.parse(execFileSync(sextantBin, ['embed', '--passage', '--json', text], { encoding: 'utf8' })).vector;
      assert.equal(ours.length, cli.length);
      // The CLI prints each f32 in its shortest form: rounded back to f32, it is the same value.
      const differ = ours.findIndex((v, i) => v !== Math.fround(cli[i]));
      assert.equal(differ, -1, `${text}: dimension ${differ}: ${ours[differ]} vs ${cli[differ]}`);
      const int8 = sextant.embed(text);
      assert.ok(int8.some((v, i) => v !== ours[i]), 'int8a8 and int8 really differ');
    }
  } finally {
    bytes.free();
  }
});

test('loading by URL reports download progress', async () => {
  const files = { '/docs.sxt': path.join(fixtures, 'golden-v2.sxt'), '/model.onnx': path.join(modelDir, 'model.onnx'), '/tokenizer.json': path.join(modelDir, 'tokenizer.json') };
  const server = http.createServer(async (req, res) => {
    const file = files[req.url];
    if (!file) {
      res.writeHead(404).end('not found');
      return;
    }
    const body = await readFile(file);
    res.writeHead(200, { 'content-length': body.length });
    // Several writes so progress has steps.
    for (let i = 0; i < body.length; i += 1 << 20) res.write(body.subarray(i, i + (1 << 20)));
    res.end();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    const events = [];
    const s = await api.Sextant.load({
      index: `${base}/docs.sxt`,
      model: new URL(`${base}/model.onnx`),
      tokenizer: `${base}/tokenizer.json`,
      on_progress: (p) => events.push({ ...p }),
    });
    const modelEvents = events.filter((e) => e.file === 'model');
    assert.ok(modelEvents.length >= 3, `only ${modelEvents.length} model progress events`);
    for (let i = 1; i < modelEvents.length; i++) assert.ok(modelEvents[i].loaded >= modelEvents[i - 1].loaded);
    const last = modelEvents.at(-1);
    assert.equal(last.loaded, statSync(files['/model.onnx']).size);
    assert.equal(last.total, last.loaded);
    assert.ok(events.some((e) => e.file === 'index') && events.some((e) => e.file === 'tokenizer'));
    assert.equal((await s.search('fog horn', { k: 1 })).results[0].doc_id, 'faq-2');
    s.free();
    const e = await expectCode(api.Sextant.load({ index: `${base}/missing.sxt` }), 'FETCH_FAILED');
    assert.match(e.message, /404/);
  } finally {
    server.close();
  }
});

test('verifyCitations keeps citations of sent chunks and flags the rest', async () => {
  const results = (await sextant.search('fog horn', { k: 2 })).results;
  const id = results[0].chunk_id;
  const report = api.verifyCitations(`Fog horns sound a code [${id}] unlike [made-up.md#4].`, results);
  assert.deepEqual(report.valid, [id]);
  assert.deepEqual(report.unknown, ['made-up.md#4']);
  assert.equal(report.grounded, true);
  assert.equal(api.verifyCitations('no citations here', [id]).grounded, false);
});

test('ask streams tokens in order and verifies citations', async () => {
  const pieces = ['Ships ', 'count ', 'the ', 'seconds ', 'between ', 'flashes'];
  const llm = await startLlmServer((req) => {
    const [first] = chunkIdsIn(req.body);
    return { events: sseAnswer('', { pieces: [...pieces, ` [${first}].`] }), delayMs: 15 };
  });
  try {
    const tokens = [];
    const result = await sextant.ask('why does the lighthouse beam rotate', {
      llm: { base_url: llm.baseUrl, model: 'test-model', api_key: 'sk-secret-123' },
      on_token: (t) => tokens.push(t),
    });
    assert.equal(llm.requests.length, 1);
    const request = llm.requests[0];
    assert.equal(request.url, '/v1/chat/completions');
    assert.equal(request.headers.authorization, 'Bearer sk-secret-123');
    assert.equal(request.body.stream, true);
    assert.equal(request.body.model, 'test-model');
    const system = request.body.messages[0].content;
    assert.match(system, /untrusted/);
    assert.match(system, /<retrieved_context source="[^"]+" chunk_id="[^"]+">/);
    assert.equal(request.body.messages[1].content, 'why does the lighthouse beam rotate');
    assert.deepEqual(tokens.slice(0, pieces.length), pieces);
    assert.equal(result.answer, tokens.join(''));
    assert.equal(result.refused, false);
    assert.equal(result.grounded, true);
    assert.equal(result.citations.length, 1);
    assert.equal(result.citations[0].valid, true);
    assert.ok(result.chunks.some((c) => c.chunk_id === result.citations[0].chunk_id));
    assert.deepEqual(result.usage, { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 });
  } finally {
    await llm.close();
  }
});

test('ask retries 429 and 5xx, honouring Retry-After, at most 3 tries', async () => {
  const llm = await startLlmServer((req, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '0' } } : undefined));
  try {
    const retries = [];
    const result = await sextant.ask('who writes the logbook', {
      llm: { base_url: llm.baseUrl, model: 'm' },
      on_retry: (r) => retries.push(r),
    });
    assert.equal(llm.requests.length, 2);
    assert.deepEqual(retries, [{ attempt: 1, status: 429, wait_ms: 0 }]);
    assert.equal(result.grounded, true);
  } finally {
    await llm.close();
  }
  const down = await startLlmServer(() => ({ status: 503 }));
  try {
    const e = await expectCode(
      sextant.ask('who writes the logbook', { llm: { base_url: down.baseUrl, model: 'm' }, random: () => 0 }),
      'LLM_UNAVAILABLE',
    );
    assert.equal(down.requests.length, 3);
    assert.equal(e.status, 503);
  } finally {
    await down.close();
  }
});

test('ask reports 401 at once and never leaks the key', async () => {
  const llm = await startLlmServer(() => ({ status: 401, body: JSON.stringify({ error: { message: 'Incorrect API key provided' } }) }));
  try {
    const e = await expectCode(
      sextant.ask('who writes the logbook', { llm: { base_url: llm.baseUrl, model: 'm', api_key: 'sk-do-not-print' } }),
      'LLM_AUTH',
    );
    assert.equal(llm.requests.length, 1);
    assert.match(e.message, /401/);
    assert.doesNotMatch(e.message + JSON.stringify(e), /sk-do-not-print/);
  } finally {
    await llm.close();
  }
});

test('ask survives malformed SSE lines', async () => {
  const llm = await startLlmServer((req) => {
    const [first] = chunkIdsIn(req.body);
    const events = sseAnswer(`Keepers write it [${first}].`);
    events.splice(1, 0, 'data: {"choices": [{"delta": {"content": "bro', ': keep-alive comment', 'event: ping');
    return { events };
  });
  try {
    const result = await sextant.ask('who writes the logbook', { llm: { base_url: llm.baseUrl, model: 'm' } });
    assert.match(result.answer, /^Keepers write it \[.+\]\.$/);
    assert.equal(result.malformed_events, 1);
    assert.equal(result.grounded, true);
  } finally {
    await llm.close();
  }
});

test('ask flags a citation to a chunk that was not retrieved', async () => {
  const llm = await startLlmServer(() => ({ events: sseAnswer('Trust me [guide/secret.md#7].') }));
  try {
    const result = await sextant.ask('who writes the logbook', { llm: { base_url: llm.baseUrl, model: 'm' } });
    assert.deepEqual(result.unknown_citations, ['guide/secret.md#7']);
    assert.equal(result.citations[0].valid, false);
    assert.equal(result.grounded, false);
  } finally {
    await llm.close();
  }
});

test('ask refuses without a request when nothing relevant is retrieved', async () => {
  const llm = await startLlmServer();
  try {
    const result = await sextant.ask('zxqv blorft wibble', { llm: { base_url: llm.baseUrl, model: 'm' } });
    assert.equal(result.refused, true);
    assert.equal(result.grounded, false);
    assert.deepEqual(result.chunks, []);
    assert.equal(llm.requests.length, 0);
  } finally {
    await llm.close();
  }
});

test('ask reports bad base URLs, unreachable hosts, timeouts and aborts clearly', async () => {
  const question = 'who writes the logbook';
  await expectCode(sextant.ask(question, { llm: { base_url: 'not a url', model: 'm' } }), 'LLM_BAD_URL');
  await expectCode(sextant.ask(question, { llm: { base_url: 'ftp://example.com/v1', model: 'm' } }), 'LLM_BAD_URL');
  await expectCode(sextant.ask(question, { llm: { model: 'm' } }), 'BAD_ARGUMENT');
  const closed = await startLlmServer();
  const deadUrl = closed.baseUrl;
  await closed.close();
  await expectCode(sextant.ask(question, { llm: { base_url: deadUrl, model: 'm' } }), 'LLM_UNREACHABLE');
  const hanging = await startLlmServer(() => ({ hang: true }));
  try {
    await expectCode(sextant.ask(question, { llm: { base_url: hanging.baseUrl, model: 'm' }, timeout_ms: 300 }), 'LLM_TIMEOUT');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expectCode(sextant.ask(question, { llm: { base_url: hanging.baseUrl, model: 'm' }, signal: controller.signal }), 'ABORTED');
  } finally {
    await hanging.close();
  }
});

test('the README Node examples work as written', async () => {
  for (const readme of [path.join(root, 'README.md'), path.join(root, 'pkg-template/README.md')]) {
    const code = taggedBlock(await readFile(readme, 'utf8'), 'node-example');
    const dir = consumerProject();
    const work = await mkdtemp(path.join(dir, 'example-'));
    exampleFiles(work);
    await writeFile(path.join(work, 'example.mjs'), code);
    const out = execFileSync(process.execPath, ['example.mjs'], { cwd: work, encoding: 'utf8' });
    const lines = out.trim().split('\n');
    assert.equal(lines.length, 3, `${readme}: ${out}`);
    assert.match(lines[0], /^1 Security model pages\/security\.html#/, `${readme}: ${out}`);
  }
});

test('defaults() is the core vocabulary: one JSON shape, every default and limit', async () => {
  const d = api.defaults();
  assert.deepEqual(Object.keys(d.search).sort(), ['bm25', 'dense_weight', 'depth', 'document_bm25', 'embed_corrections', 'filter_counts', 'filters', 'fuse_documents', 'fusion', 'k', 'min_similarity', 'mode', 'page_score', 'per_document', 'query_expansion', 'rerank', 'rerank_batch', 'rerank_depth', 'rerank_timeout_ms', 'score_threshold', 'sort', 'sub_results', 'vector_search']);
  assert.equal(d.search.k, 10);
  assert.equal(d.frame.token_budget, 1500);
  assert.deepEqual(Object.keys(d.context).sort(), [...Object.keys(d.search), 'token_budget'].sort());
  assert.equal(d.ask.k, 6);
  assert.equal(d.ask.min_similarity, 0.3);
  for (const key of ['timeout_ms', 'max_tries', 'temperature', 'max_answer_bytes', 'max_sse_line_bytes']) assert.equal(typeof d.ask[key], 'number', key);
  assert.equal(d.limits.max_query_bytes, 4096);
  assert.equal(d.load.weights, 'int8');
  const codes = new Map(d.error_codes.map((c) => [c.code, c.http_status]));
  assert.equal(codes.get('BAD_ARGUMENT'), 400);
  assert.equal(codes.get('CORRUPT_BUNDLE'), 500);
  // The CLI's JSON uses the same names: `sextant search --json` results carry the same keys.
  const cli = JSON.parse(execFileSync(sextantBin, ['search', path.join(fixtures, 'golden-v2.sxt'), 'fog horn', '--mode', 'keyword', '-k', '1', '--json']));
  assert.deepEqual(Object.keys(cli.results[0]).sort(), Object.keys((await sextant.search('fog horn', { mode: 'keyword', k: 1 })).results[0]).sort());
  // Every option takes its snake_case name; the camelCase ones of old are refused, not ignored.
  assert.equal((await sextant.search('fog horn', { mode: 'keyword', per_document: true, score_threshold: 0.1, depth: 30 })).results[0].doc_id, 'faq-2');
  await assert.rejects(sextant.search('fog horn', { perDocument: true }), (e) => e.code === 'BAD_ARGUMENT' && /per_document/.test(e.message));
});

test('a cross-encoder loaded with loadReranker reranks as the CLI with [rerank] does', async () => {
  // The tiny cross-encoder of tests/rerank.rs: it scores a passage by its "fog" tokens.
  const reranker = await readFile(path.join(fixtures, 'tiny-cross-encoder.onnx'));
  const index = await readFile(path.join(fixtures, 'golden-v2-fields.sxt'));
  const engine = await api.Sextant.load({ index, model, tokenizer });
  try {
    const plain = await engine.search('ships coast', { mode: 'keyword', k: 3 });
    assert.equal(plain.results[0].chunk_id, 'faq-1#0');
    assert.equal(plain.results[0].rerank, null);
    await assert.rejects(engine.loadReranker({ model: reranker }), (e) => e.code === 'BAD_ARGUMENT');
    await assert.rejects(engine.loadReranker({ model: reranker, tokenizer, max_tokens: 2 }), (e) => e.code === 'BAD_ARGUMENT' && /max_tokens/.test(e.message));
    await engine.loadReranker({ model: reranker, tokenizer });
    const config = path.join(await mkdtemp(path.join(tmpdir(), 'sextant-rerank-')), 'sextant.toml');
    await writeFile(config, `[rerank]\nmodel = ${JSON.stringify(path.join(fixtures, 'tiny-cross-encoder.onnx'))}\ntokenizer = ${JSON.stringify(path.join(modelDir, 'tokenizer.json'))}\n`);
    for (const mode of ['keyword', 'hybrid']) {
      const js = await engine.search('ships coast', { mode, k: 5 });
      const cli = JSON.parse(execFileSync(sextantBin, ['search', path.join(fixtures, 'golden-v2-fields.sxt'), 'ships coast', '--mode', mode, '-k', '5', '--json', '--config', config], { encoding: 'utf8' }));
      assert.deepEqual(js.results.map((r) => [r.chunk_id, r.rerank]), cli.results.map((r) => [r.chunk_id, r.rerank]), mode);
      assert.equal(js.results[0].chunk_id, 'faq-2#0', mode);
      assert.equal(js.results[0].rerank, 3);
      assert.equal(typeof js.timings.rerank_ms, 'number');
    }
    assert.equal((await engine.search('ships coast', { mode: 'keyword', k: 3, rerank_depth: 0 })).results[0].chunk_id, 'faq-1#0');
  } finally {
    engine.free();
  }
});

test('every error code the JS code can raise is in the core table', async () => {
  const table = new Set(api.defaults().error_codes.map((c) => c.code));
  const sources = ['errors.js', 'fetching.js', 'chat.js', 'rerank.js', 'graph.js', 'index-files.js', 'otlp.js', 'memory.js', 'core.js', 'collection.js', 'research.js', 'ui/search-worker.js', 'ui/sextant-ui.js'].map((f) => `pkg-template/${f}`).concat(['www/worker/src/index.js', 'www/worker/src/mcp.js', 'www/research/research.js', 'www/research/research-worker.js']);
  let seen = 0;
  for (const file of sources) {
    const text = readFileSync(path.join(root, file), 'utf8');
    for (const [, code] of text.matchAll(/(?:SextantError|HttpError)\('([A-Z_]+)'/g)) {
      assert.ok(table.has(code), `${file} raises ${code}, which the core's table lacks`);
      seen += 1;
    }
  }
  assert.ok(seen >= 15, `only ${seen} raised codes found`);
});

test('ask() sends exactly the messages `sextant frame --json` prints', async () => {
  const llm = await startLlmServer();
  try {
    const question = 'how often should the bulb be changed';
    await sextant.ask(question, { llm: { base_url: llm.baseUrl, model: 'm' } });
    const d = api.defaults().ask;
    const cli = JSON.parse(
      execFileSync(sextantBin, ['frame', path.join(fixtures, 'golden-v2.sxt'), question, '-k', String(d.k), '--min-similarity', String(d.min_similarity), '--token-budget', String(d.token_budget), '--json'], {
        env: { ...process.env, SEXTANT_MODEL_DIR: modelDir },
      }),
    );
    assert.deepEqual(llm.requests[0].body.messages, cli.messages);
    assert.equal(cli.messages[0].content.startsWith(cli.system_prompt), true);
    assert.equal(cli.system_prompt, api.defaults().system_prompt);
  } finally {
    await llm.close();
  }
});

test('a stream that ends without [DONE] or a finish reason is LLM_INCOMPLETE, with what arrived', async () => {
  const llm = await startLlmServer((req) => {
    const [first] = chunkIdsIn(req.body);
    // The answer, cut after two pieces: no finish_reason, no usage, no [DONE].
    return { events: sseAnswer('', { pieces: ['Keepers write ', `it [${first}] and`] }).slice(0, 2) };
  });
  try {
    const e = await expectCode(sextant.ask('who writes the logbook', { llm: { base_url: llm.baseUrl, model: 'm' } }), 'LLM_INCOMPLETE');
    assert.match(e.partial_answer, /^Keepers write it \[.+\] and$/);
  } finally {
    await llm.close();
  }
});

test('a 200 that is not an event stream, or is empty, is an error; a JSON completion is read', async () => {
  const html = await startLlmServer(() => ({ status: 200, contentType: 'text/html', body: '<html>login page</html>' }));
  try {
    const e = await expectCode(sextant.ask('who writes the logbook', { llm: { base_url: html.baseUrl, model: 'm' } }), 'LLM_BAD_RESPONSE');
    assert.match(e.message, /text\/html/);
  } finally {
    await html.close();
  }
  const empty = await startLlmServer(() => ({ events: ['data: [DONE]'] }));
  try {
    await expectCode(sextant.ask('who writes the logbook', { llm: { base_url: empty.baseUrl, model: 'm' } }), 'LLM_BAD_RESPONSE');
  } finally {
    await empty.close();
  }
  const whole = await startLlmServer((req) => {
    const [first] = chunkIdsIn(req.body);
    return { status: 200, body: JSON.stringify({ choices: [{ message: { role: 'assistant', content: `Keepers do [${first}].` }, finish_reason: 'stop' }] }) };
  });
  try {
    const result = await sextant.ask('who writes the logbook', { llm: { base_url: whole.baseUrl, model: 'm' } });
    assert.equal(result.grounded, true);
    assert.match(result.answer, /^Keepers do/);
  } finally {
    await whole.close();
  }
});

test('an answer over max_answer_bytes, or an event line over max_sse_line_bytes, ends clearly', async () => {
  const long = await startLlmServer(() => ({ events: sseAnswer('word '.repeat(2000)), delayMs: 0 }));
  try {
    const e = await expectCode(sextant.ask('who writes the logbook', { llm: { base_url: long.baseUrl, model: 'm' }, max_answer_bytes: 1000 }), 'LLM_INCOMPLETE');
    assert.ok(e.partial_answer.length <= 1000 && e.partial_answer.length > 900, `${e.partial_answer.length} characters kept`);
  } finally {
    await long.close();
  }
  const wide = await startLlmServer(() => ({ events: [`data: ${JSON.stringify({ choices: [{ delta: { content: 'x'.repeat(3 << 20) } }] })}`] }));
  try {
    const e = await expectCode(sextant.ask('who writes the logbook', { llm: { base_url: wide.baseUrl, model: 'm' } }), 'LLM_BAD_RESPONSE');
    assert.match(e.message, /max_sse_line_bytes/);
  } finally {
    await wide.close();
  }
});

test('readChatStream splits lines across chunk boundaries and keeps a long line whole', async () => {
  const event = (content) => `data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\r\n`;
  const text = event('a'.repeat(200_000)) + event('b') + 'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}\n' + 'data: [DONE]\n';
  const bytes = new TextEncoder().encode(text);
  const body = new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 997) controller.enqueue(bytes.subarray(i, i + 997));
      controller.close();
    },
  });
  const deltas = [];
  const result = await api.readChatStream(body, (d) => deltas.push(d), { max_line_bytes: 1 << 20 });
  assert.deepEqual(deltas.map((d) => d.length), [200_000, 1]);
  assert.equal(result.complete, true);
  assert.equal(result.finish_reason, 'stop');
});

test('upstream error text never carries the key, and unreachable hosts stay out of the message', async () => {
  const key = 'sk-leaky-key-0123456789';
  // A provider that echoes the request's Authorization header in its error body.
  const echo = await startLlmServer((req) => ({ status: 401, body: JSON.stringify({ error: { message: `bad credentials: ${req.headers.authorization}` } }) }));
  try {
    const e = await expectCode(sextant.ask('who writes the logbook', { llm: { base_url: echo.baseUrl, model: 'm', api_key: key } }), 'LLM_AUTH');
    const everything = `${e.message} ${e.detail} ${JSON.stringify(e)}`;
    assert.ok(!everything.includes(key) && !everything.includes('0123456789'), everything);
    assert.match(e.detail, /bad credentials/);
  } finally {
    await echo.close();
  }
  const closed = await startLlmServer();
  const dead = closed.baseUrl;
  await closed.close();
  const e = await expectCode(sextant.ask('who writes the logbook', { llm: { base_url: dead, model: 'm' } }), 'LLM_UNREACHABLE');
  const port = new URL(dead).port;
  assert.ok(!e.message.includes(port) && !e.message.includes('127.0.0.1'), e.message);
  assert.match(e.detail, new RegExp(port));
});

test('citations of ids with entities, semicolons and line breaks are verified, with JS string spans', () => {
  const ids = ['Q&A.md#0', 'a;b.md#1', 'notes\r\nx.txt#2'];
  const answer = '🚢 Ships [Q&amp;A.md#0] and [a;b.md#1; notes  x.txt#2] or [ghost.md#9].';
  const report = api.verifyCitations(answer, ids);
  assert.deepEqual(report.valid, ['Q&A.md#0', 'a;b.md#1', 'notes\r\nx.txt#2']);
  assert.deepEqual(report.unknown, ['ghost.md#9']);
  assert.deepEqual(report.spans.map((s) => answer.slice(s.start, s.end)), ['[Q&amp;A.md#0]', '[a;b.md#1; notes  x.txt#2]', '[ghost.md#9]']);
  const single = api.verifyCitations('See [notes x.txt#2].', ids);
  assert.deepEqual(single.valid, ['notes\r\nx.txt#2']);
});

test('highlights are whole words with the analyzer stems, as JS string offsets', () => {
  const text = '🗼 Start the art show: rotating beams, ROTATION of the lamp';
  const marks = api.highlights(text, 'art rotation').map(([a, b]) => text.slice(a, b));
  assert.deepEqual(marks, ['art', 'rotating', 'ROTATION']);
  assert.deepEqual(api.highlights(text, 'the of'), []);
});

test('the event-line limit holds for lines that start and end inside one network chunk', async () => {
  const stream = (text, size) => {
    const bytes = new TextEncoder().encode(text);
    return new ReadableStream({
      start(controller) {
        for (let i = 0; i < bytes.length; i += size) controller.enqueue(bytes.subarray(i, i + size));
        controller.close();
      },
    });
  };
  const long = `data: ${JSON.stringify({ choices: [{ delta: { content: 'y'.repeat(5000) } }] })}\n\ndata: [DONE]\n\n`;
  for (const size of [1 << 20, 3000, 1000]) {
    await expectCode(api.readChatStream(stream(long, size), () => {}, { max_line_bytes: 3000 }), 'LLM_BAD_RESPONSE');
  }
  const ok = await api.readChatStream(stream(long, 1000), () => {}, { max_line_bytes: 6000 });
  assert.equal(ok.complete, true);
});

test('custom header values are secrets too, and a partial BM25 override keeps the bundle\'s other parameter', async () => {
  const echo = await startLlmServer((req) => ({ status: 403, body: JSON.stringify({ error: { message: `denied for ${req.headers['x-api-key']}` } }) }));
  try {
    const e = await expectCode(
      sextant.ask('who writes the logbook', { llm: { base_url: echo.baseUrl, model: 'm', headers: { 'x-api-key': 'azure-secret-value-42' } } }),
      'LLM_AUTH',
    );
    assert.ok(!`${e.message} ${e.detail}`.includes('azure-secret-value-42'), e.detail);
  } finally {
    await echo.close();
  }
  const cli = JSON.parse(
    execFileSync(sextantBin, ['search', path.join(fixtures, 'golden-v2.sxt'), 'lamp lens clean', '--mode', 'keyword', '-k', '5', '--bm25-k1', '0.5', '--json']),
  );
  const js = await sextant.search('lamp lens clean', { mode: 'keyword', k: 5, bm25: { k1: 0.5 } });
  assert.deepEqual(js.results.map((r) => r.chunk_id), cli.results.map((r) => r.chunk_id));
  js.results.forEach((r, i) => assert.ok(Math.abs(r.score - cli.results[i].score) <= 1e-5, `${r.score} vs ${cli.results[i].score}`));
  // …and differs from the bundle's own parameters, so the override did reach the core.
  const plain = await sextant.search('lamp lens clean', { mode: 'keyword', k: 5 });
  assert.notDeepEqual(plain.results.map((r) => r.score), js.results.map((r) => r.score));
});

test('Bases: several indexes fused by rank, one model shared, a broken base reported and skipped', async () => {
  const { Bases } = await importPackage();
  const model = readFileSync(path.join(modelDir, 'model.onnx'));
  const tokenizer = readFileSync(path.join(modelDir, 'tokenizer.json'));
  const bases = await Bases.load({
    bases: [
      { name: 'fields', index: readFileSync(path.join(fixtures, 'golden-v2-fields.sxt')) },
      { name: 'plain', index: readFileSync(path.join(fixtures, 'golden-v2.sxt')) },
      { name: 'broken', index: new Uint8Array([1, 2, 3, 4]) },
    ],
    model,
    tokenizer,
  });
  assert.deepEqual(bases.names, ['fields', 'plain', 'broken']);
  assert.deepEqual(bases.failed.map((f) => [f.base, f.code]), [['broken', 'CORRUPT_BUNDLE']]);
  const both = await bases.search('install from source', { k: 6 });
  assert.equal(both.partial, true);
  assert.deepEqual(both.failed.map((f) => f.base), ['broken']);
  // Rank fusion: the two bases' firsts, then their seconds, ties to the base listed first.
  assert.deepEqual(both.results.map((r) => [r.base, r.base_rank]), [['fields', 1], ['plain', 1], ['fields', 2], ['plain', 2], ['fields', 3], ['plain', 3]]);
  // Each base alone gives what its own Sextant gives.
  const alone = await bases.search('install from source', { k: 3, bases: ['plain'] });
  const own = await bases.base('plain').search('install from source', { k: 3 });
  assert.deepEqual(alone.results.map((r) => [r.chunk_id, r.score]), own.results.map((r) => [r.chunk_id, r.score]));
  assert.equal(alone.partial, false);
  // The query was embedded once: the second base reused the first's vector.
  assert.ok(both.bases[1].timings.embed_ms < both.bases[0].timings.embed_ms / 10, JSON.stringify(both.bases.map((b) => b.timings)));
  await expectCode(bases.search('lamp', { bases: ['nope'] }), 'BAD_ARGUMENT');
  await expectCode(bases.search('lamp', { k: 0 }), 'BAD_ARGUMENT');
  // Context and ask frame `base:chunk_id` ids, and get() takes them back.
  const framed = await bases.context('install from source', { k: 4, token_budget: 800 });
  assert.ok(framed.included.length > 0 && framed.included.every((id) => /^(fields|plain):/.test(id)));
  const chunk = await bases.get(framed.included[0]);
  assert.equal(chunk.kind, 'chunk');
  assert.equal(chunk.text, framed.results.find((r) => r.chunk_id === framed.included[0]).text);
  const doc = await bases.get(chunk.doc_id, { base: chunk.base });
  assert.equal(doc.kind, 'document');
  assert.ok(doc.chunk_ids.includes(chunk.id));
  assert.equal(await bases.get('fields:no/such.md'), null);
  await expectCode(bases.get('no/such.md'), 'BAD_ARGUMENT');
  await expectCode(bases.get('broken:x'), 'CORRUPT_BUNDLE');
  const llm = await startLlmServer();
  try {
    const answer = await bases.ask('how do I install from source?', { llm: { base_url: llm.baseUrl, model: 'm' }, k: 4 });
    assert.equal(answer.grounded, true);
    assert.match(answer.citations[0].chunk_id, /^(fields|plain):/);
    assert.ok(answer.citations[0].base);
    assert.equal(answer.partial, true);
    assert.equal(answer.trace.length, 1);
  } finally {
    await llm.close();
  }
  // Nothing loads: one error naming every base.
  const none = await expectCode(Bases.load({ bases: [{ name: 'a', index: new Uint8Array([0]) }] }), 'CORRUPT_BUNDLE');
  assert.match(none.message, /no knowledge base loaded: a:/);
  await expectCode(Bases.load({ bases: [{ name: 'a:b', index: new Uint8Array([0]) }] }), 'BAD_ARGUMENT');
});
