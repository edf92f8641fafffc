// Meaning search with no model download: the demo site served by the Worker in workerd, whose
// GET /embed gives a query's vector; the drop-in UI with data-embed-url="/embed" shows hybrid
// results for the first query (keyword ones while the vector comes) and never requests the
// model, the same results the model in the page gives (the vector is the same bits); a failing
// endpoint falls back to keyword results, then to the model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { modelDir, buildDemoSite, importPackage } from './harness.mjs';
import { MODEL_REQUEST } from './site-package.mjs';
import { startWorkerd } from './workerd.mjs';
import { launch, watchedPage } from './browser.mjs';

let site;
let worker;
let context;
let api;

/** A copy of the getting-started page whose search box has `attributes` added. */
function pageWith(slug, attributes) {
  const html = readFileSync(path.join(site, 'getting-started/index.html'), 'utf8').replace('<div id="search"', `<div id="search" ${attributes}`);
  mkdirSync(path.join(site, slug), { recursive: true });
  writeFileSync(path.join(site, slug, 'index.html'), html);
}

before(async () => {
  site = buildDemoSite('sextant-embed-site-');
  pageWith('remote', 'data-embed-url="/embed"');
  pageWith('broken', 'data-embed-url="/nowhere"');
  worker = await startWorkerd({ assetsDir: site, name: 'embed' });
  context = await launch();
  api = await importPackage();
});

after(async () => {
  await context?.close();
  worker?.stop();
});

/** The site's sextant.json. */
const entry = () => JSON.parse(readFileSync(path.join(site, 'sextant/sextant.json'), 'utf8'));

/**
 * The demo index in Node with the whole model, its weights rounded as the search box's body
 * holds them (five bits): the engine a page with the model runs.
 */
async function localEngine() {
  return api.Sextant.load({
    index: indexUrl(),
    model: await readFile(path.join(modelDir, 'model.onnx')),
    tokenizer: await readFile(path.join(modelDir, 'tokenizer.json')),
    weights: entry().model_body_weights,
  });
}

/** The demo index's manifest as the Worker serves it (the site's static files). */
const indexUrl = () => `${worker.base}/sextant/${entry().index}`;

const floats = (base64) => {
  const bytes = Buffer.from(base64, 'base64');
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
};

test('GET /embed gives the vector the package computes, bit for bit, with the model it comes from', async () => {
  const local = await localEngine();
  const manifest = local.manifest();
  for (const query of ['what stops prompt injection', 'install -npm "split index"', 'Ünïcödé ☃ query']) {
    const response = await fetch(`${worker.base}/embed?q=${encodeURIComponent(query)}`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('cache-control'), /max-age/);
    const body = await response.json();
    assert.deepEqual(body.model, { sha256: manifest.model.sha256, tokenizer_sha256: manifest.model.tokenizer_sha256, dims: manifest.model.dims });
    // The site's box holds its body at five bits, and the Worker embeds as the box does.
    assert.equal(entry().model_body_weights, 'int5');
    assert.equal(body.weights, 'int5');
    const theirs = floats(body.vector);
    const ours = await local.queryVector(query);
    assert.equal(theirs.length, manifest.model.dims);
    assert.deepEqual(Buffer.from(theirs.buffer, theirs.byteOffset, theirs.byteLength), Buffer.from(ours.buffer, ours.byteOffset, ours.byteLength), query);
    // A search with the vector is the search with the model.
    const keywordOnly = await api.Sextant.load({ index: indexUrl() });
    const remote = await keywordOnly.search(query, { k: 8, query_vector: theirs });
    const withModel = await local.search(query, { k: 8 });
    assert.deepEqual(remote.results.map((r) => [r.chunk_id, r.score]), withModel.results.map((r) => [r.chunk_id, r.score]), query);
  }
  // Bad queries are the core's errors.
  const empty = await fetch(`${worker.base}/embed?q=`);
  assert.equal(empty.status, 400);
  assert.equal((await empty.json()).error.code, 'BAD_ARGUMENT');
  const post = await fetch(`${worker.base}/embed?q=x`, { method: 'POST' });
  assert.equal(post.status, 405);
});

test('the encoder entry in Chromium (sextant\'s own encoder, no tract) gives the five-bit body\'s query vectors and results bit for bit', async () => {
  const page = await watchedPage(context);
  const requested = [];
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  await page.goto(`${worker.base}/remote/`);
  const queries = ['what stops prompt injection', 'install -npm "split index"', 'Ünïcödé ☃ query', 'a'];
  const got = await page.evaluate(async ({ e, queries }) => {
    const { Sextant } = await import(`/sextant/${e.package}encoder.js`);
    const engine = await Sextant.load({ index: `/sextant/${e.index}`, model: `/sextant/${e.model_encoder}`, tokenizer: `/sextant/${e.tokenizer}` });
    const out = [];
    for (const q of queries) {
      const vector = await engine.queryVector(q);
      const found = await engine.search(q, { k: 8 });
      out.push({ vector: Array.from(new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength)), results: found.results.map((r) => [r.chunk_id, r.score]) });
    }
    return out;
  }, { e: entry(), queries });
  const local = await localEngine();
  for (const [i, query] of queries.entries()) {
    const ours = await local.queryVector(query);
    assert.deepEqual(Buffer.from(got[i].vector), Buffer.from(ours.buffer, ours.byteOffset, ours.byteLength), query);
    const expected = await local.search(query, { k: 8 });
    assert.deepEqual(got[i].results, expected.results.map((r) => [r.chunk_id, r.score]), query);
  }
  assert.ok(requested.some((p) => p.endsWith('/sextant_encoder_bg.wasm')), requested.join());
  assert.ok(!requested.some((p) => p.endsWith('/sextant_wasm_bg.wasm') || /\/(model|body)\.[0-9a-f]+\.onnx$/.test(p)), `tract or its model was requested: ${requested.join()}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('data-embed-url: the first query turns hybrid as soon as its vector comes (keyword results meanwhile), the model never requested, ranked as the model in the page ranks them', async () => {
  const page = await watchedPage(context);
  const requested = [];
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  await page.goto(`${worker.base}/remote/`);
  await page.evaluate(() => {
    window.shown = []; // the modes the result list showed, in turn
    const list = document.querySelector('.sextant-results');
    new MutationObserver(() => list.dataset.mode && window.shown.push(list.dataset.mode)).observe(list, { attributes: true, attributeFilter: ['data-mode'] });
  });
  const query = 'what stops prompt injection';
  await page.locator('.sextant-input').fill(query);
  await page.waitForFunction((q) => {
    const list = document.querySelector('.sextant-results');
    return list.dataset.query === q && list.dataset.mode === 'hybrid' && document.querySelectorAll('.sextant-page').length > 0;
  }, query, { timeout: 60000 });
  // Keyword results first, never waiting on the vector (a second search of the query, started
  // when the engine had loaded, used to replace them before they showed).
  assert.equal((await page.evaluate(() => window.shown))[0], 'keyword', await page.evaluate(() => window.shown.join()));
  assert.equal(await page.locator('.sextant-input').inputValue(), query, 'the input was touched');
  const shown = await page.locator('.sextant-page-title').evaluateAll((links) => links.map((a) => new URL(a.href).pathname));
  // The model in Node, with the options the box uses: the same pages in the same order.
  const local = await localEngine();
  const expected = await local.search(query, { k: 15, fuse_documents: true, sub_results: 3 });
  const pages = [...new Set(expected.results.map((r) => new URL(r.url, 'http://x/').pathname))];
  assert.deepEqual(shown, pages);
  await page.waitForTimeout(2500); // the full engine would start loading by now
  assert.ok(requested.includes('/embed'), requested.join());
  assert.ok(!requested.some((p) => MODEL_REQUEST.test(p)), `the model or an engine that runs it was requested: ${requested.join()}`);
  assert.ok(requested.some((p) => p.endsWith('/sextant_keyword_bg.wasm')), requested.join());
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('data-embed-url that fails: keyword results at once, then the model loads and results turn hybrid', async () => {
  const page = await watchedPage(context);
  const requested = [];
  page.on('request', (r) => requested.push(new URL(r.url()).pathname));
  await page.goto(`${worker.base}/broken/`);
  const query = 'what stops prompt injection';
  await page.locator('.sextant-input').fill(query);
  await page.waitForFunction((q) => document.querySelector('.sextant-results').dataset.query === q && document.querySelectorAll('.sextant-page').length > 0, query, { timeout: 60000 });
  await page.waitForFunction(() => document.querySelector('.sextant-results').dataset.mode === 'hybrid', null, { timeout: 180000 });
  assert.ok(requested.some((p) => /\/(model|body)\.[0-9a-f]+\.onnx$|\/encoder\.[0-9a-f]+\.bin$/.test(p)), 'the model was not loaded after the endpoint failed');
  assert.deepEqual(page.errors, []);
  await page.close();
});
