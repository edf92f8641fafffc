// A split index (what `sextant build --site` writes) read lazily over HTTP by the built package:
// a query fetches only the objects it needs, gets the CLI's results, and a damaged or missing file
// is a typed error naming it. Most tests read the index with every object a file of its own
// (`pack_bytes = 0`), where what a query fetches shows by name; the last ones read the default
// layout, objects in packs read with Range requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root, modelDir, sextantBin, importPackage } from './harness.mjs';
import { startStaticServer } from './static-server.mjs';

let api;
let site;
let server;
let entry;
let packedSite;
let packedServer;
let packedEntry;
let model;
let tokenizer;

before(async () => {
  api = await importPackage();
  site = mkdtempSync(path.join(tmpdir(), 'sextant-split-'));
  execFileSync(process.execPath, [path.join(root, 'www/build-site.mjs'), site], { stdio: 'pipe' });
  const env = { ...process.env, SEXTANT_MODEL_DIR: modelDir, SEXTANT_PACKAGE_DIR: path.join(root, 'pkg') };
  packedSite = mkdtempSync(path.join(tmpdir(), 'sextant-packed-'));
  execFileSync(process.execPath, [path.join(root, 'www/build-site.mjs'), packedSite], { stdio: 'pipe' });
  const loose = path.join(tmpdir(), `sextant-loose-${process.pid}.toml`);
  writeFileSync(loose, '[layout]\npack_bytes = 0\n');
  execFileSync(sextantBin, ['build', '--site', site, '--config', loose], { stdio: 'pipe', env });
  execFileSync(sextantBin, ['build', '--site', packedSite], { stdio: 'pipe', env });
  entry = JSON.parse(readFileSync(path.join(site, 'sextant/sextant.json'), 'utf8'));
  packedEntry = JSON.parse(readFileSync(path.join(packedSite, 'sextant/sextant.json'), 'utf8'));
  server = await startStaticServer(path.join(site, 'sextant'));
  packedServer = await startStaticServer(path.join(packedSite, 'sextant'));
  model = await readFile(path.join(modelDir, 'model.onnx'));
  tokenizer = await readFile(path.join(modelDir, 'tokenizer.json'));
});

after(async () => {
  await server?.close();
  await packedServer?.close();
});

const indexUrl = () => `${server.url}/${entry.index}`;
const fetched = (from) => server.log.slice(from).map((e) => path.basename(e.path));
const kinds = (names) => [...new Set(names.map((n) => n.split('.')[0]))].sort();

test('keyword search fetches the manifest, the norms, its shards and fragments (and their pages), nothing else', async () => {
  const start = server.log.length;
  const sextant = await api.Sextant.load({ index: indexUrl() });
  assert.deepEqual(kinds(fetched(start)), ['manifest']);
  const before = server.log.length;
  const response = await sextant.search('bundle checksums', { mode: 'keyword', k: 3 });
  assert.ok(response.results.length > 0);
  assert.deepEqual(kinds(fetched(before)), ['frag', 'kw', 'norms', 'page']);
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
    let error;
    for (const q of ['bundle', 'worker', 'model', 'prompt', 'format', 'search', 'site', 'command', 'answer', 'page']) {
      try {
        await sextant.search(q, { mode: 'keyword', k: 50 });
      } catch (e) {
        error = e;
        break;
      }
    }
    assert.ok(error, `no query showed a chunk of ${fragment}`);
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

test('a manifest claiming 2^32 - 1 chunks and documents, with files of a few bytes claiming as many entries, is a typed error in WebAssembly, not an abort, and the engine works after', async () => {
  // The native test (tests/index_robustness.rs) of the same crafted index: here the readers run
  // in wasm32, where a 206 GB allocation would trap and leave the instance unusable.
  const dir = path.join(site, 'sextant', path.dirname(entry.index));
  const manifest = JSON.parse(readFileSync(path.join(site, 'sextant', entry.index), 'utf8'));
  const huge = 2 ** 32 - 1;
  const varintHuge = [0xff, 0xff, 0xff, 0xff, 0x0f];
  const le32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32LE(n); return [...b]; };
  const put = (kind, ext, bytes) => {
    const data = Buffer.from(bytes);
    const name = `${kind}.${createHash('sha256').update(data).digest('hex').slice(0, 16)}.${ext}`;
    writeFileSync(path.join(dir, name), data);
    return name;
  };
  const magic = (m, tail) => [...Buffer.from(m), ...tail];
  manifest.counts.chunks = huge;
  manifest.counts.documents = huge;
  manifest.model.dims = Math.floor(huge / 8);
  manifest.files.norms = put('norms', 'bin', magic('SXnm', varintHuge));
  manifest.files.vectors.meta = put('vmeta', 'bin', magic('SXvm', le32(Math.floor(huge / 8))));
  manifest.files.vectors.codes = { chunks_per_file: huge, files: [put('codes', 'bin', magic('SXvc', le32(huge)))] };
  manifest.files.vectors.blocks = { chunks_per_file: huge, files: [put('vec', 'bin', magic('SXvb', le32(huge)))] };
  manifest.files.fragments = { chunks_per_file: huge, files: [put('frag', 'json', Buffer.from('{"first":0,"documents":[],"chunks":[]}'))] };
  manifest.files.keyword = [{ first: 'a', file: put('kw', 'bin', magic('SXkw', varintHuge)) }];
  writeFileSync(path.join(site, 'sextant/index/manifest.huge.json'), JSON.stringify(manifest));
  const names = [manifest.files.norms, manifest.files.keyword[0].file];
  const crafted = await api.Sextant.load({ index: `${server.url}/index/manifest.huge.json` });
  await assert.rejects(crafted.search('bundle', { mode: 'keyword' }), (e) => e.code === 'CORRUPT_BUNDLE' && names.some((n) => e.message.includes(n)));
  // The real files beside the crafted counts: refused with the manifest, which they do not fit.
  const real = JSON.parse(readFileSync(path.join(site, 'sextant', entry.index), 'utf8'));
  writeFileSync(path.join(site, 'sextant/index/manifest.counts.json'), JSON.stringify({ ...real, counts: manifest.counts }));
  await assert.rejects(api.Sextant.load({ index: `${server.url}/index/manifest.counts.json` }).then((s) => s.search('bundle', { mode: 'keyword' })), (e) => e.code === 'CORRUPT_BUNDLE' && /cannot hold 4294967295 chunks/.test(e.message));
  const sound = await api.Sextant.load({ index: indexUrl() });
  assert.ok((await sound.search('bundle', { mode: 'keyword' })).results.length > 0, 'the WebAssembly instance still answers');
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
  assert.ok(bounded.heldBytes > 0 && bounded.heldBytes < unbounded.heldBytes, `held ${bounded.heldBytes} bounded, ${unbounded.heldBytes} not`);
  // A packed index holds every file and is never trimmed.
  await assert.rejects(api.Sextant.load({ index: indexUrl(), max_index_bytes: -1 }), (e) => e.code === 'BAD_ARGUMENT' && /max_index_bytes/.test(e.message));
  bounded.free();
  unbounded.free();
});

test('max_index_bytes covers the binary codes: a keyword query lets them go, the next hybrid one reads them again', async () => {
  const unbounded = await api.Sextant.load({ index: indexUrl(), model, tokenizer });
  const bounded = await api.Sextant.load({ index: indexUrl(), model, tokenizer, max_index_bytes: 0 });
  const start = server.log.length;
  const steps = [['what stops prompt injection', 'hybrid'], ['bundle checksums', 'keyword'], ['what stops prompt injection', 'hybrid']];
  const held = [];
  for (const [q, mode] of steps) {
    const a = await bounded.search(q, { mode, k: 5 });
    const b = await unbounded.search(q, { mode, k: 5 });
    assert.deepEqual(a.results.map((r) => r.chunk_id), b.results.map((r) => r.chunk_id), `${mode}: ${q}`);
    held.push(bounded.heldBytes);
  }
  // The keyword query held no codes or blocks, so it holds less than the hybrid one before it;
  // the unbounded engine fetched each code file once, the bounded one twice.
  assert.ok(held[1] < held[0], `held after each query: ${held}`);
  const codes = fetched(start).filter((n) => n.startsWith('codes.'));
  const times = new Map();
  for (const name of codes) times.set(name, (times.get(name) ?? 0) + 1);
  assert.ok(times.size > 0 && [...times.values()].every((n) => n === 3), `code files fetched: ${JSON.stringify([...times])}`);
  bounded.free();
  unbounded.free();
});

test('max_index_bytes: a query waiting for its files while another ends keeps what it used and fetches nothing twice', async () => {
  // Query B's fragments (those query A does not read: A must not wait on them) are held back
  // until A, begun after B, has ended and trimmed to the bound of 0; B's keyword shards, read in
  // its earlier rounds, must still be held then.
  const [qa, qb] = ['prompt injection', 'bundle checksums'];
  const aReads = new Set();
  const probe = await api.Sextant.load({ index: indexUrl(), fetch: (url, init) => (aReads.add(path.basename(new URL(url).pathname)), fetch(url, init)) });
  await probe.search(qa, { mode: 'keyword', k: 5 });
  probe.free();
  let hold = null;
  let held;
  const waiting = new Promise((resolve) => (held = resolve));
  const boundedReads = [];
  const gated = async (url, init) => {
    const name = path.basename(new URL(url).pathname);
    boundedReads.push(name);
    if (hold && name.startsWith('frag.') && !aReads.has(name)) {
      held();
      await hold;
    }
    return fetch(url, init);
  };
  const unbounded = await api.Sextant.load({ index: indexUrl() });
  const bounded = await api.Sextant.load({ index: indexUrl(), max_index_bytes: 0, fetch: gated });
  let release;
  hold = new Promise((resolve) => (release = resolve));
  const b = bounded.search(qb, { mode: 'keyword', k: 5 });
  await waiting;
  hold = null;
  const a = await bounded.search(qa, { mode: 'keyword', k: 5 });
  release();
  const results = { [qa]: a, [qb]: await b };
  for (const q of [qa, qb]) {
    const want = await unbounded.search(q, { mode: 'keyword', k: 5 });
    assert.deepEqual(results[q].results.map((r) => r.chunk_id), want.results.map((r) => r.chunk_id), q);
  }
  const counts = new Map();
  for (const name of boundedReads.filter((n) => /^(kw|frag)\./.test(n))) counts.set(name, (counts.get(name) ?? 0) + 1);
  assert.ok(counts.size > 0 && [...counts.values()].every((n) => n === 1), `fetched more than once: ${JSON.stringify([...counts].filter(([, n]) => n > 1))}`);
  // Once nothing is in flight, the bound holds again: only the last query's files stay.
  assert.ok(bounded.heldBytes < unbounded.heldBytes, `held ${bounded.heldBytes} bounded, ${unbounded.heldBytes} not`);
  bounded.free();
  unbounded.free();
});

/** The packed index's requests since `from`: [path, range or null]. */
const packedRequests = (from) => packedServer.log.slice(from).map((e) => [path.basename(e.path), e.range ?? null, e.status ?? 200]);

test('over packs, a query reads byte ranges of a few packs and gives the CLI\'s results', async () => {
  const manifest = JSON.parse(readFileSync(path.join(packedSite, 'sextant', packedEntry.index), 'utf8'));
  assert.ok(manifest.files.packs.length >= 1 && manifest.files.page_entries > 0);
  const files = readdirSync(path.join(packedSite, 'sextant', path.dirname(packedEntry.index)));
  assert.deepEqual(kinds(files), ['manifest', 'pack'], 'a host serves packs and the manifest, nothing else');
  const start = packedServer.log.length;
  const sextant = await api.Sextant.load({ index: `${packedServer.url}/${packedEntry.index}`, model, tokenizer });
  const manifestPath = path.join(packedSite, 'sextant', packedEntry.index);
  for (const [query, mode] of [['bundle checksums', 'keyword'], ['what stops prompt injection', 'hybrid'], ['cheksums', 'keyword'], ['run the worker locally', 'dense']]) {
    const js = await sextant.search(query, { k: 5, mode });
    const cli = JSON.parse(execFileSync(sextantBin, ['search', manifestPath, query, '--mode', mode, '-k', '5', '--json'], { env: { ...process.env, SEXTANT_MODEL_DIR: modelDir } }));
    assert.deepEqual(js.results.map((r) => r.chunk_id), cli.results.map((r) => r.chunk_id), `${mode}: ${query}`);
    assert.ok(js.results.length > 0, query);
  }
  const requests = packedRequests(start);
  const ranges = requests.filter(([name]) => name.startsWith('pack.'));
  assert.ok(ranges.length > 0);
  assert.ok(ranges.every(([, range, status]) => range && status === 206), `every pack read is a range: ${JSON.stringify(ranges.slice(0, 3))}`);
  assert.deepEqual(kinds(requests.map(([n]) => n)), ['manifest', 'pack']);
  // Repeated, a query reads nothing.
  const again = packedServer.log.length;
  await sextant.search('bundle checksums', { k: 5, mode: 'keyword' });
  assert.equal(packedServer.log.length, again);
  sextant.free();
});

test('a damaged or truncated pack is a typed error naming it; a host without ranges still serves packs', async () => {
  const dir = path.join(packedSite, 'sextant', path.dirname(packedEntry.index));
  // The English index's pack (the folder holds each language's index).
  const [pack] = JSON.parse(readFileSync(path.join(packedSite, 'sextant', packedEntry.index), 'utf8')).files.packs;
  const original = readFileSync(path.join(dir, pack));
  const queries = ['bundle', 'worker', 'model', 'prompt', 'format', 'search', 'site', 'command', 'answer', 'page'];
  const firstError = async (load) => {
    const sextant = await api.Sextant.load(load);
    for (const q of queries) {
      try {
        await sextant.search(q, { mode: 'keyword', k: 20 });
      } catch (e) {
        return e;
      }
    }
    return null;
  };
  const index = `${packedServer.url}/${packedEntry.index}`;
  try {
    const damaged = Buffer.from(original);
    for (let i = 0; i < damaged.length; i += 97) damaged[i] ^= 0x5a;
    writeFileSync(path.join(dir, pack), damaged);
    const error = await firstError({ index });
    assert.ok(error, 'no query touched the damaged pack');
    assert.equal(error.code, 'CORRUPT_BUNDLE');
    assert.ok(error.message.includes(pack), error.message);
    writeFileSync(path.join(dir, pack), original.subarray(0, Math.floor(original.length / 3)));
    const cut = await firstError({ index });
    assert.ok(cut && cut.message.includes(pack), `a truncated pack is named: ${cut?.message}`);
  } finally {
    writeFileSync(path.join(dir, pack), original);
  }
  // A host that answers a Range with the whole file: each pack read whole, once, the same results.
  const whole = await startStaticServer(path.join(packedSite, 'sextant'), { ranges: false });
  try {
    const a = await api.Sextant.load({ index: `${whole.url}/${packedEntry.index}` });
    const b = await api.Sextant.load({ index });
    let afterFirst = null;
    for (const q of ['bundle checksums', 'prompt injection', 'worker locally', 'model files']) {
      const [x, y] = [await a.search(q, { mode: 'keyword', k: 5 }), await b.search(q, { mode: 'keyword', k: 5 })];
      assert.deepEqual(x.results.map((r) => r.chunk_id), y.results.map((r) => r.chunk_id), q);
      afterFirst ??= whole.log.length;
    }
    const packs = (log) => log.map((e) => path.basename(e.path)).filter((n) => n.startsWith('pack.'));
    assert.ok(packs(whole.log).length > 0 && whole.log.every((e) => !e.range), 'whole packs (200)');
    const first = new Set(packs(whole.log.slice(0, afterFirst)));
    assert.ok(packs(whole.log.slice(afterFirst)).every((p) => !first.has(p)), 'a pack read whole is not read again');
  } finally {
    await whole.close();
  }
});

test('the keyword-only build searches as the full engine does, and what frames passages for an LLM says NO_MODEL and what to import', async () => {
  const pkg = path.join(root, 'pkg');
  const bindings = await import(pathToFileURL(path.join(pkg, 'sextant_keyword.js')).href);
  const { makeApi } = await import(pathToFileURL(path.join(pkg, 'core.js')).href);
  const keyword = makeApi(bindings, async () => bindings.default({ module_or_path: await readFile(path.join(pkg, 'sextant_keyword_bg.wasm')) }));
  const index = `${packedServer.url}/${packedEntry.index}`;
  const [small, full] = [await keyword.Sextant.load({ index }), await api.Sextant.load({ index })];
  for (const q of ['bundle checksums', 'prompt injection', 'cheksums']) {
    const options = { mode: 'keyword', k: 5, filters: {} };
    const [x, y] = [await small.search(q, options), await full.search(q, options)];
    assert.deepEqual(x.results.map((r) => [r.chunk_id, r.score]), y.results.map((r) => [r.chunk_id, r.score]), q);
    assert.equal(x.did_you_mean ?? null, y.did_you_mean ?? null, q);
  }
  const id = (await full.search('bundle', { mode: 'keyword', k: 1 })).results[0].chunk_id;
  assert.equal((await small.get(id))?.text, (await full.get(id)).text);
  const defaults = keyword.defaults();
  assert.equal(defaults.search.mode, api.defaults().search.mode);
  assert.deepEqual(defaults.error_codes, api.defaults().error_codes);
  assert.equal(defaults.prompts, undefined, 'the prompts are not in the keyword-only build');
  const refused = (e) => e.code === 'NO_MODEL' && /sextant-search\/keyword/.test(e.message) && /import it from sextant-search/.test(e.message);
  await assert.rejects(small.context('bundle checksums'), refused);
  await assert.rejects(small.ask('bundle checksums', { llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' } }), refused);
  await assert.rejects(small.search('bundle checksums', { mode: 'keyword', rerank: 'llm', llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' } }), refused);
  await assert.rejects(small.search('bundle checksums', { mode: 'keyword', graph: true }), refused);
  assert.throws(() => small.frame([], {}), refused);
  assert.throws(() => keyword.verifyCitations('an answer [a#1]', ['a#1']), refused);
  small.free();
  full.free();
});
