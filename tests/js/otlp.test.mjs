// OpenTelemetry traces from the package: each search, context and answer (and a collection's
// ingest and embedding) sent as OTLP/JSON to a local OTLP/HTTP receiver that checks every
// request against the OTLP JSON encoding (ids, nanosecond times, attribute values, status), with
// the documented span names and attributes; a collector that is down or slow never fails or
// holds up a query, and what it does not take is counted as dropped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fixtures, modelDir, importPackage, consumerProject, sextantBin } from './harness.mjs';
import { startLlmServer, sseAnswer, chunkIdsIn } from './llm-server.mjs';
import { startReceiver, attr } from './otlp-receiver.mjs';

let api;
let model;
let tokenizer;
let bundle;

before(async () => {
  api = await importPackage();
  model = readFileSync(path.join(modelDir, 'model.onnx'));
  tokenizer = readFileSync(path.join(modelDir, 'tokenizer.json'));
  bundle = readFileSync(path.join(fixtures, 'golden-v2.sxt'));
});

test('a search, a context and an answer arrive as spans with the documented names and attributes', async () => {
  const receiver = await startReceiver();
  const llm = await startLlmServer((req) => ({ events: sseAnswer('', { pieces: ['It turns ', `[${chunkIdsIn(req.body)[0]}].`] }) }));
  const sextant = await api.Sextant.load({ index: bundle, model, tokenizer, otlp: { url: receiver.url, headers: { 'x-api-key': 'collector-key' }, service: 'docs-search', flush_ms: 0 } });
  try {
    const query = 'why does the lighthouse beam rotate';
    const response = await sextant.search(query, { k: 4 });
    assert.equal(receiver.spans.length, 0, 'nothing is sent before flush() with flush_ms 0');
    await sextant.otlp.flush();
    assert.deepEqual(receiver.rejected, []);
    const root = receiver.spans.find((s) => s.name === 'rag.search');
    assert.ok(root, receiver.spans.map((s) => s.name).join());
    assert.equal(root.headers['x-api-key'], 'collector-key');
    const children = receiver.spans.filter((s) => s.parentSpanId === root.spanId);
    assert.deepEqual(children.map((s) => s.name), ['rag.embed', 'rag.search.bm25', 'rag.search.dense', 'rag.rrf_fusion']);
    assert.ok(children.every((s) => s.traceId === root.traceId));
    const by = Object.fromEntries(children.map((s) => [s.name, s]));
    assert.equal(attr(by['rag.embed'], 'provider'), 'sextant');
    assert.equal(attr(by['rag.embed'], 'text_count'), 1);
    assert.equal(attr(by['rag.search.bm25'], 'query_length'), query.length);
    assert.equal(attr(by['rag.search.dense'], 'top_k'), 4);
    assert.equal(attr(by['rag.rrf_fusion'], 'input_lists'), 2);
    assert.equal(attr(by['rag.rrf_fusion'], 'output_count'), response.results.length);
    assert.equal(attr(root, 'result_count'), response.results.length);
    // Each stage lasts what the core timed, within the root span.
    const ms = (s) => Number(BigInt(s.endTimeUnixNano) - BigInt(s.startTimeUnixNano)) / 1e6;
    assert.ok(Math.abs(ms(by['rag.embed']) - response.timings.embed_ms) < 0.01);
    assert.ok(children.every((s) => BigInt(s.startTimeUnixNano) >= BigInt(root.startTimeUnixNano)));

    const framed = await sextant.context(query, { token_budget: 300 });
    const answer = await sextant.ask(query, { llm: { base_url: llm.baseUrl, model: 'm' } });
    await sextant.otlp.flush();
    assert.deepEqual(receiver.rejected, []);
    const assemble = receiver.spans.find((s) => s.name === 'rag.assemble');
    assert.equal(attr(assemble, 'token_budget'), 300);
    assert.equal(attr(assemble, 'chunks_assembled'), framed.included.length);
    assert.equal(receiver.spans.find((s) => s.spanId === assemble.parentSpanId).name, 'rag.context');
    const call = receiver.spans.find((s) => s.name === 'rag.llm');
    assert.ok(call, receiver.spans.map((s) => s.name).join());
    assert.equal(call.kind, 3, 'an LLM call is a client span');
    assert.equal(receiver.spans.find((s) => s.spanId === call.parentSpanId).name, 'rag.ask');
    assert.equal(attr(call, 'prompt_tokens'), answer.usage.prompt_tokens);
    assert.equal(attr(receiver.spans.find((s) => s.name === 'rag.search'), 'service.name'), undefined, 'service.name is the resource\'s');
    assert.deepEqual(sextant.otlp.stats(), { sent: receiver.spans.length, dropped: 0, queued: 0 });
  } finally {
    sextant.free();
    await llm.close();
    await receiver.close();
  }
});

test('a collector that is down or slow never fails or holds up a search; what it did not take is dropped and counted', async () => {
  const down = await startReceiver();
  await down.close(); // its port now refuses connections
  const sextant = await api.Sextant.load({ index: bundle, otlp: { url: down.url, flush_ms: 1 } });
  try {
    for (const q of ['lighthouse', 'beam', 'logbook']) await sextant.search(q, { k: 3, mode: 'keyword' });
    await new Promise((r) => setTimeout(r, 50));
    await sextant.otlp.flush();
    const stats = sextant.otlp.stats();
    assert.equal(stats.sent, 0);
    assert.ok(stats.dropped >= 3, JSON.stringify(stats));
  } finally {
    sextant.free();
  }
  // A collector that takes 1.5 s to answer: the search is back long before it has answered.
  const slow = await startReceiver({ delayMs: 1500 });
  const other = await api.Sextant.load({ index: bundle, otlp: { url: slow.url, flush_ms: 1 } });
  try {
    await other.search('lighthouse', { k: 3, mode: 'keyword' });
    await new Promise((r) => setTimeout(r, 20)); // the batch is on its way
    await other.search('beam', { k: 3, mode: 'keyword' });
    const back = Date.now();
    await other.otlp.flush();
    assert.ok(slow.spans.length > 0 && slow.spans.every((s) => s.at > back), 'the search waited for the collector');
    assert.equal(other.otlp.stats().dropped, 0);
  } finally {
    other.free();
    await slow.close();
  }
  // A URL that is not one is a typed error at load.
  await assert.rejects(api.Sextant.load({ index: bundle, otlp: { url: 'collector:4318' } }), (e) => e.code === 'BAD_ARGUMENT');
});

test('a collection sends rag.ingest for each file and rag.embed for an embedding run', async () => {
  const project = consumerProject();
  const { Collection } = await import(pathToFileURL(path.join(project, 'node_modules/sextant-search/collection.js')).href);
  const receiver = await startReceiver();
  const collection = await Collection.create({ model, tokenizer, otlp: { url: receiver.url, flush_ms: 0 } });
  try {
    const summary = await collection.addFile('notes/fog.md', '# Fog\n\nThe horn sounds twice a minute in fog.\n\n## Lamps\n\nThe lamp burns oil.');
    await collection.embed({ batch: 2 });
    await collection.otlp.flush();
    assert.deepEqual(receiver.rejected, []);
    const ingest = receiver.spans.find((s) => s.name === 'rag.ingest');
    assert.equal(attr(ingest, 'source'), 'notes/fog.md');
    assert.equal(attr(ingest, 'chunk_count'), summary.chunks);
    const embed = receiver.spans.find((s) => s.name === 'rag.embed');
    assert.equal(attr(embed, 'text_count'), summary.chunks);
    assert.equal(attr(embed, 'batch_size'), 2);
    assert.equal(attr(embed, 'provider'), 'sextant');
  } finally {
    collection.free();
    await receiver.close();
  }
});

test('the CLI\'s --otlp sends a search\'s and a build\'s spans with the package\'s names and attributes; a collector that is down is a warning', async () => {
  const receiver = await startReceiver();
  const sextant = await api.Sextant.load({ index: bundle, model, tokenizer, otlp: { url: receiver.url, flush_ms: 0 } });
  const run = promisify(execFile);
  try {
    const query = 'why does the lighthouse beam rotate';
    await sextant.search(query, { k: 4 });
    await sextant.otlp.flush();
    const fromPackage = receiver.spans.splice(0);
    const { stdout } = await run(sextantBin, ['search', path.join(fixtures, 'golden-v2.sxt'), query, '-k', '4', '--json', '--otlp', receiver.url]);
    assert.deepEqual(receiver.rejected, []);
    const shape = (spans) => spans.map((s) => `${s.name}(${s.attributes.map((a) => a.key).filter((k) => !['fetch_ms', 'files_fetched', 'method'].includes(k)).sort().join(',')})`).sort();
    assert.deepEqual(shape(receiver.spans), shape(fromPackage));
    const root = receiver.spans.find((s) => s.name === 'rag.search');
    assert.equal(attr(root, 'result_count'), JSON.parse(stdout).results.length);
    assert.equal(attr(root, 'query_length'), query.length);
    receiver.spans.splice(0);
    // A build: rag.ingest and rag.embed.
    const out = path.join(mkdtempSync(path.join(tmpdir(), 'sextant-otlp-')), 'tiny.sxt');
    const built = JSON.parse((await run(sextantBin, ['build', path.join(fixtures, 'tiny'), '-o', out, '--json', '--otlp', receiver.url])).stdout);
    assert.deepEqual(receiver.rejected, []);
    const ingest = receiver.spans.find((s) => s.name === 'rag.ingest');
    assert.equal(attr(ingest, 'chunk_count'), built.chunks);
    assert.equal(attr(ingest, 'document_count'), built.documents);
    assert.equal(attr(receiver.spans.find((s) => s.name === 'rag.embed'), 'provider'), 'sextant');
  } finally {
    sextant.free();
    await receiver.close();
  }
  // The collector gone: the results as before, and a warning that says so.
  const { stdout, stderr } = await run(sextantBin, ['search', path.join(fixtures, 'golden-v2.sxt'), 'beam', '--mode', 'keyword', '--json', '--otlp', receiver.url]);
  assert.ok(JSON.parse(stdout).results.length > 0);
  assert.match(stderr, /did not take \d+ spans .*dropped/);
  // A URL the CLI cannot send to is refused before anything runs.
  await assert.rejects(run(sextantBin, ['search', path.join(fixtures, 'golden-v2.sxt'), 'beam', '--otlp', 'https://collector.example/v1/traces']), (e) => /https is not supported/.test(e.stderr));
});
