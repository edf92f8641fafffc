// A split index (what `sextant build --site` writes) read lazily over HTTP by the built package:
// a query fetches only the files it needs, gets the CLI's results, and a damaged or missing file
// is a typed error naming it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { root, modelDir, sextantBin, importPackage } from './harness.mjs';
import { startStaticServer } from './static-server.mjs';

let api;
let site;
let server;
let entry;
let model;
let tokenizer;

before(async () => {
  api = await importPackage();
  site = mkdtempSync(path.join(tmpdir(), 'sextant-split-'));
  execFileSync(process.execPath, [path.join(root, 'www/build-site.mjs'), site], { stdio: 'pipe' });
  execFileSync(sextantBin, ['build', '--site', site], { stdio: 'pipe', env: { ...process.env, SEXTANT_MODEL_DIR: modelDir, SEXTANT_PACKAGE_DIR: path.join(root, 'pkg') } });
  entry = JSON.parse(readFileSync(path.join(site, 'sextant/sextant.json'), 'utf8'));
  server = await startStaticServer(path.join(site, 'sextant'));
  model = await readFile(path.join(modelDir, 'model.onnx'));
  tokenizer = await readFile(path.join(modelDir, 'tokenizer.json'));
});

after(async () => {
  await server?.close();
});

const indexUrl = () => `${server.url}/${entry.index}`;
const fetched = (from) => server.log.slice(from).map((e) => path.basename(e.path));
const kinds = (names) => [...new Set(names.map((n) => n.split('.')[0]))].sort();

test('keyword search fetches the manifest, the norms, its shards and fragments, nothing else', async () => {
  const start = server.log.length;
  const sextant = await api.Sextant.load({ index: indexUrl() });
  assert.deepEqual(kinds(fetched(start)), ['manifest']);
  const before = server.log.length;
  const response = await sextant.search('bundle checksums', { mode: 'keyword', k: 3 });
  assert.ok(response.results.length > 0);
  assert.deepEqual(kinds(fetched(before)), ['frag', 'kw', 'norms']);
  const again = server.log.length;
  await sextant.search('bundle checksums', { mode: 'keyword', k: 3 });
  assert.equal(server.log.length, again, 'a repeated query fetches nothing');
  await assert.rejects(sextant.search('bundle checksums'), (e) => e.code === 'NO_MODEL');
  sextant.free();
});

test('hybrid search fetches vectors too, and gives the CLI\'s results for the same index', async () => {
  const sextant = await api.Sextant.load({ index: indexUrl(), model, tokenizer });
  const manifestPath = path.join(site, 'sextant', entry.index);
  for (const mode of ['hybrid', 'dense', 'keyword']) {
    // Plain queries, a phrase, an exclusion and a typo (the fallback's shards fetched on the way).
    for (const query of ['what stops prompt injection', 'run the worker locally', 'section table checksums', '"split index" files', 'worker -wrangler', 'cheksums']) {
      const before = server.log.length;
      const js = await sextant.search(query, { k: 5, mode });
      if (mode !== 'keyword') assert.ok(kinds(fetched(0)).includes('codes'));
      const cli = JSON.parse(execFileSync(sextantBin, ['search', manifestPath, query, '--mode', mode, '-k', '5', '--json'], { env: { ...process.env, SEXTANT_MODEL_DIR: modelDir } }));
      assert.deepEqual(js.results.map((r) => r.chunk_id), cli.results.map((r) => r.chunk_id), `${mode}: ${query}`);
      // Integer products round each activation row to its own levels: a last-bit difference
      // between wasm's and the CPU's float arithmetic before a product can move one value a
      // level, so the scores agree within 1e-4 (f32 weights: within 1e-5), the results exactly.
      js.results.forEach((r, i) => assert.ok(Math.abs(r.score - cli.results[i].score) <= 1e-4, `${mode} ${query}: ${r.score} vs ${cli.results[i].score}`));
      assert.ok(server.log.length >= before);
    }
  }
  assert.deepEqual(kinds(fetched(0)).filter((k) => ['codes', 'vec', 'vmeta'].includes(k)), ['codes', 'vec', 'vmeta']);
  const framed = await sextant.context('what stops prompt injection', { token_budget: 300 });
  assert.ok(framed.included.length > 0 && framed.tokens <= 300);
  sextant.free();
});

test('a cross-encoder reranks a split index as the CLI reranks it, fetching the fragments it reads', async () => {
  const sextant = await api.Sextant.load({ index: indexUrl(), model, tokenizer });
  const manifestPath = path.join(site, 'sextant', entry.index);
  const reranker = path.join(root, 'tests/fixtures/tiny-cross-encoder.onnx');
  await sextant.loadReranker({ model: await readFile(reranker), tokenizer });
  const config = path.join(site, 'rerank.toml');
  writeFileSync(config, `[rerank]\nmodel = ${JSON.stringify(reranker)}\ntokenizer = ${JSON.stringify(path.join(modelDir, 'tokenizer.json'))}\n`);
  for (const [query, mode] of [['what stops prompt injection', 'hybrid'], ['"split index" files', 'keyword']]) {
    const js = await sextant.search(query, { k: 5, mode, rerank_depth: 12 });
    const cli = JSON.parse(execFileSync(sextantBin, ['search', manifestPath, query, '--mode', mode, '-k', '5', '--rerank-depth', '12', '--json', '--config', config], { env: { ...process.env, SEXTANT_MODEL_DIR: modelDir } }));
    assert.deepEqual(js.results.map((r) => [r.chunk_id, r.rerank]), cli.results.map((r) => [r.chunk_id, r.rerank]), `${mode}: ${query}`);
    assert.ok(js.results.length > 0, query);
    assert.ok(js.results.every((r) => typeof r.rerank === 'number'), 'the first five of twelve were reranked');
  }
  sextant.free();
});

test('a damaged or missing file is a typed error naming it, and the index keeps working after', async () => {
  const dir = path.join(site, 'sextant', path.dirname(entry.index));
  const shard = readdirSync(dir).find((f) => f.startsWith('kw.'));
  const original = readFileSync(path.join(dir, shard));
  const damaged = Buffer.from(original);
  damaged[damaged.length - 1] ^= 0xff;
  writeFileSync(path.join(dir, shard), damaged);
  try {
    const sextant = await api.Sextant.load({ index: indexUrl() });
    let error;
    for (const q of ['bundle', 'worker', 'model', 'prompt', 'format', 'search', 'site', 'command']) {
      try {
        await sextant.search(q, { mode: 'keyword' });
      } catch (e) {
        error = e;
        break;
      }
    }
    assert.ok(error, 'no query touched the damaged shard');
    assert.equal(error.code, 'CORRUPT_BUNDLE');
    assert.ok(error.message.includes(shard), error.message);
  } finally {
    writeFileSync(path.join(dir, shard), original);
  }
  const fragment = readdirSync(dir).find((f) => f.startsWith('frag.'));
  const saved = readFileSync(path.join(dir, fragment));
  rmSync(path.join(dir, fragment));
  try {
    const sextant = await api.Sextant.load({ index: indexUrl() });
    const manifest = sextant.manifest();
    const chunk = manifest.files.fragments.files.indexOf(fragment) * manifest.files.fragments.chunks_per_file;
    let error;
    for (const q of ['bundle', 'worker', 'model', 'prompt', 'format', 'search', 'site', 'command', 'answer', 'page']) {
      try {
        await sextant.search(q, { mode: 'keyword', k: 50 });
      } catch (e) {
        error = e;
        break;
      }
    }
    assert.ok(error, `no query showed chunk ${chunk}`);
    assert.equal(error.code, 'FETCH_FAILED');
    assert.ok(error.message.includes(fragment) && /404/.test(error.message), error.message);
  } finally {
    writeFileSync(path.join(dir, fragment), saved);
  }
  // A manifest from another build names files that are not there.
  const other = JSON.parse(readFileSync(path.join(site, 'sextant', entry.index), 'utf8'));
  other.files.norms = 'norms.0000000000000000.bin';
  writeFileSync(path.join(site, 'sextant/index/manifest.other.json'), JSON.stringify(other));
  const stale = await api.Sextant.load({ index: `${server.url}/index/manifest.other.json` });
  await assert.rejects(stale.search('bundle', { mode: 'keyword' }), (e) => e.code === 'FETCH_FAILED' && e.message.includes('norms.0000000000000000.bin'));
});

test('max_index_bytes lets go of the least recently used files, which later queries fetch again', async () => {
  const unbounded = await api.Sextant.load({ index: indexUrl() });
  const bounded = await api.Sextant.load({ index: indexUrl(), max_index_bytes: 0 });
  const queries = ['bundle checksums', 'prompt injection', 'worker locally', 'bundle checksums'];
  const start = server.log.length;
  for (const q of queries) {
    const a = await bounded.search(q, { mode: 'keyword', k: 5 });
    const b = await unbounded.search(q, { mode: 'keyword', k: 5 });
    assert.deepEqual(a.results.map((r) => r.chunk_id), b.results.map((r) => r.chunk_id), q);
  }
  // The bounded engine fetched the first query's shards and fragments again for its repeat; the
  // unbounded one did not.
  const counts = new Map();
  for (const name of fetched(start).filter((n) => /^(kw|frag)\./.test(n))) counts.set(name, (counts.get(name) ?? 0) + 1);
  assert.ok([...counts.values()].some((n) => n >= 3), 'no file was fetched again after being let go');
  // A packed index holds every file and is never trimmed.
  await assert.rejects(api.Sextant.load({ index: indexUrl(), max_index_bytes: -1 }), (e) => e.code === 'BAD_ARGUMENT' && /max_index_bytes/.test(e.message));
  bounded.free();
  unbounded.free();
});
