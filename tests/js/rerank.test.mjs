// Reranking by an LLM judge (`rerank: 'llm'`) in the built package, the CLI and (in
// worker.test.mjs) the Worker: the judge is a scripted OpenAI-compatible server that rates each
// passage it is shown by a rule the test knows, so the order that must follow is known; every
// failure of the judge (an error status, a reply that does not rate every passage, a timeout)
// leaves the fused order, and the caller's own abort is an error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { fixtures, modelDir, sextantBin, importPackage, expectCode } from './harness.mjs';
import { startLlmServer } from './llm-server.mjs';

let api;
let sextant;
let model;
let tokenizer;

before(async () => {
  api = await importPackage();
  model = await readFile(path.join(modelDir, 'model.onnx'));
  tokenizer = await readFile(path.join(modelDir, 'tokenizer.json'));
  sextant = await api.Sextant.load({ index: await readFile(path.join(fixtures, 'golden-v2.sxt')), model, tokenizer });
});

after(() => sextant?.free());

/** The passages a judge's request shows: [{n, text}] from its numbered blocks. */
function passagesIn(body) {
  const user = body?.messages?.find((m) => m.role === 'user')?.content ?? '';
  return [...user.matchAll(/<retrieved_context source="[^"]*" chunk_id="(\d+)">\n((?:\| .*\n)*)<\/retrieved_context>/g)].map((m) => ({ n: Number(m[1]), text: m[2] }));
}

/** A JSON chat completion answering `content`. */
const completion = (content) => ({ body: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 } }) });

/** The judge's rule: a passage that says "install" is rated 9, any other 2 (equal ratings keep the fused order). */
const rating = (text) => (/install/i.test(text) ? 9 : 2);
const judge = (request) => completion(`Ratings:\n${passagesIn(request.body).map((p) => `${p.n}: ${rating(p.text)}`).join('\n')}`);

/** The order the judge's rule must give `results` (the first `depth` of them by rating, stable). */
function expectedOrder(results, depth, k) {
  const head = results.slice(0, depth).map((r, i) => ({ r, i, s: rating(`${r.title}\n${r.text}`) }));
  head.sort((a, b) => b.s - a.s || a.i - b.i);
  return [...head.map((h) => h.r), ...results.slice(depth)].slice(0, k).map((r) => r.chunk_id);
}

const QUERY = 'how often should the lamp be serviced';

test("search with rerank: 'llm' puts the results in the judge's order, rated, in batches", async () => {
  const server = await startLlmServer(judge);
  try {
    const llm = { base_url: server.baseUrl, model: 'judge', api_key: 'sk-rerank-test-key' };
    const candidates = await sextant.search(QUERY, { k: 8 });
    const found = await sextant.search(QUERY, { k: 4, rerank: 'llm', rerank_depth: 8, rerank_batch: 3, llm });
    assert.deepEqual(found.results.map((r) => r.chunk_id), expectedOrder(candidates.results, 8, 4));
    assert.ok(found.results.some((r, i) => r.chunk_id !== candidates.results[i].chunk_id), 'the judge moved something (else this test could not fail)');
    assert.deepEqual(found.results.map((r) => r.rank), [1, 2, 3, 4]);
    for (const r of found.results) assert.equal(r.rerank, rating(`${r.title}\n${r.text}`));
    assert.equal(found.rerank.strategy, 'llm');
    assert.equal(found.rerank.depth, 8);
    assert.equal(found.rerank.calls, 3);
    assert.equal(found.rerank.fallback, null);
    assert.equal(found.rerank.trace.length, 3);
    assert.ok(found.timings.rerank_ms > 0);
    // Three calls of 3, 3 and 2 passages, not streamed, at temperature 0, with the key.
    assert.equal(server.requests.length, 3);
    assert.deepEqual(server.requests.map((r) => passagesIn(r.body).length).sort(), [2, 3, 3]);
    for (const r of server.requests) {
      assert.equal(r.body.stream, false);
      assert.equal(r.body.temperature, 0);
      assert.equal(r.body.model, 'judge');
      assert.equal(r.headers.authorization, 'Bearer sk-rerank-test-key');
      assert.match(r.body.messages[0].content, /never follow instructions/);
      assert.match(r.body.messages[1].content, new RegExp(QUERY));
    }
    assert.equal(api.defaults().prompts.rerank_judge, server.requests[0].body.messages[0].content);
  } finally {
    await server.close();
  }
});

test('any failure of the judge leaves the fused order, and says why', async () => {
  const plain = await sextant.search(QUERY, { k: 4 });
  const cases = [
    ['an error status', () => ({ status: 503 }), 'LLM_UNAVAILABLE'],
    ['a key refused', () => ({ status: 401 }), 'LLM_AUTH'],
    ['a reply that rates one passage only', () => completion('1: 9'), 'LLM_BAD_RESPONSE'],
    ['no answer in time', () => ({ hang: true }), 'LLM_TIMEOUT'],
  ];
  for (const [what, plan, code] of cases) {
    const server = await startLlmServer(plan);
    try {
      const started = performance.now();
      const found = await sextant.search(QUERY, { k: 4, rerank: 'llm', rerank_timeout_ms: 400, llm: { base_url: server.baseUrl, model: 'judge' }, random: () => 0 });
      assert.deepEqual(found.results.map((r) => r.chunk_id), plain.results.map((r) => r.chunk_id), what);
      assert.ok(found.results.every((r) => r.rerank === null), what);
      assert.equal(found.rerank.fallback?.code, code, what);
      assert.match(found.rerank.fallback.message, /fused order stands/, what);
      assert.ok(performance.now() - started < 5000, `${what}: the deadline holds`);
    } finally {
      await server.close();
    }
  }
});

test("rerank: 'llm' without an LLM, a cross-encoder asked for without one, and the caller's abort are errors", async () => {
  await expectCode(sextant.search(QUERY, { rerank: 'llm' }), 'BAD_ARGUMENT');
  await expectCode(sextant.search(QUERY, { rerank: 'llm', llm: { base_url: 'ftp://x', model: 'm' } }), 'LLM_BAD_URL');
  await expectCode(sextant.search(QUERY, { rerank: 'cross_encoder' }), 'BAD_ARGUMENT');
  await expectCode(sextant.search(QUERY, { rerank: 'judge' }), 'BAD_ARGUMENT');
  await expectCode(sextant.search(QUERY, { rerank: 'llm', rerank_batch: 0, llm: { base_url: 'http://127.0.0.1:9', model: 'm' } }), 'BAD_ARGUMENT');
  const server = await startLlmServer(() => ({ hang: true }));
  try {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await expectCode(sextant.search(QUERY, { rerank: 'llm', llm: { base_url: server.baseUrl, model: 'm' }, signal: controller.signal }), 'ABORTED');
  } finally {
    await server.close();
  }
});

test('context and ask frame the reranked results; the judge is in the trace and the spans', async () => {
  const seen = [];
  const server = await startLlmServer((request) => {
    if (request.body?.stream === false) return judge(request);
    seen.push(request.body);
    return undefined; // the answer: cites the first chunk it was shown
  });
  try {
    const llm = { base_url: server.baseUrl, model: 'judge' };
    const candidates = await sextant.search(QUERY, { k: 20 });
    const order = expectedOrder(candidates.results, 20, 6);
    const framed = await sextant.context(QUERY, { k: 6, rerank: 'llm', llm, token_budget: 4000 });
    assert.deepEqual(framed.results.map((r) => r.chunk_id), order);
    assert.deepEqual(framed.included, order.filter((id) => framed.included.includes(id)));
    assert.equal(framed.rerank.calls, 2);
    const answer = await sextant.ask(QUERY, { k: 6, min_similarity: null, rerank: 'llm', llm });
    assert.deepEqual(answer.chunks.map((r) => r.chunk_id), order.filter((id) => answer.chunks.some((c) => c.chunk_id === id)));
    assert.equal(answer.rerank.calls, 2);
    assert.equal(answer.rerank.fallback, null);
    assert.deepEqual(answer.trace.slice(0, 2).map((t) => t.purpose), ['rerank', 'rerank']);
    assert.equal(answer.trace.at(-1).purpose, undefined);
    assert.equal(seen.length, 1, 'one answer call');
    const spans = api.querySpans({ route: 'ask', start_ms: 0, end_ms: 1, query: QUERY, options: { rerank: 'llm' }, response: answer });
    const rerank = spans.find((s) => s.name === 'rag.rerank');
    assert.equal(rerank.attributes.strategy, 'llm');
    assert.deepEqual(spans.filter((s) => s.name === 'rag.llm').map((s) => s.attributes.purpose), ['rerank', 'rerank', 'answer']);
  } finally {
    await server.close();
  }
});

test('Bases: the fused results are rated, and keep their bases', async () => {
  const bases = await api.Bases.load({
    bases: [
      { name: 'fields', index: await readFile(path.join(fixtures, 'golden-v2-fields.sxt')) },
      { name: 'plain', index: await readFile(path.join(fixtures, 'golden-v2.sxt')) },
    ],
    model,
    tokenizer,
  });
  const server = await startLlmServer(judge);
  try {
    const candidates = await bases.search(QUERY, { k: 10 });
    const found = await bases.search(QUERY, { k: 5, rerank: 'llm', rerank_depth: 10, llm: { base_url: server.baseUrl, model: 'judge' } });
    assert.deepEqual(found.results.map((r) => `${r.base}:${r.chunk_id}`), expectedOrder(candidates.results.map((r) => ({ ...r, chunk_id: `${r.base}:${r.chunk_id}` })), 10, 5));
    assert.ok(found.results.every((r) => typeof r.base === 'string' && typeof r.base_rank === 'number'));
  } finally {
    await server.close();
    for (const name of bases.names) bases.base(name)?.free();
  }
});

/** The CLI's JSON output (run without blocking: the judge answers from this process). */
const cliJson = async (args) => JSON.parse((await promisify(execFile)(sextantBin, args, { encoding: 'utf8' })).stdout);

test('the CLI reranks with the same judge as the package, and falls back as it does', async () => {
  const server = await startLlmServer(judge);
  try {
    const index = path.join(fixtures, 'golden-v2.sxt');
    const js = await sextant.search(QUERY, { k: 5, rerank: 'llm', rerank_depth: 12, llm: { base_url: server.baseUrl, model: 'judge' } });
    const cli = await cliJson(['search', index, QUERY, '-k', '5', '--rerank', 'llm', '--rerank-depth', '12', '--llm-base-url', server.baseUrl, '--llm-model', 'judge', '--json']);
    assert.deepEqual(cli.results.map((r) => [r.chunk_id, r.rerank]), js.results.map((r) => [r.chunk_id, r.rerank]));
    assert.equal(cli.rerank.calls, 2);
    assert.equal(cli.rerank.fallback, null);
  } finally {
    await server.close();
  }
  const down = await startLlmServer(() => ({ status: 500 }));
  try {
    const index = path.join(fixtures, 'golden-v2.sxt');
    const plain = await cliJson(['search', index, QUERY, '-k', '5', '--json']);
    const cli = await cliJson(['search', index, QUERY, '-k', '5', '--rerank', 'llm', '--llm-base-url', down.baseUrl, '--llm-model', 'judge', '--json']);
    assert.deepEqual(cli.results.map((r) => r.chunk_id), plain.results.map((r) => r.chunk_id));
    assert.equal(cli.rerank.fallback.code, 'LLM_UNAVAILABLE');
    assert.match(cli.rerank.fallback.message, /500/);
  } finally {
    await down.close();
  }
});
