// Collections in the built package (`sextant-search/collection`), in Node: files added one by
// one give the index `sextant build` writes for the same files (the same results), keyword search
// works before embedding ends, embedding reports progress and stops on a signal, removed files
// are gone from results, and saved vectors restore without embedding again.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cp } from 'node:fs/promises';
import { fixtures, modelDir, sextantBin, consumerProject, exampleFiles, taggedBlock, root, expectCode } from './harness.mjs';
import { startStaticServer } from './static-server.mjs';
import { launch, watchedPage } from './browser.mjs';

const tiny = path.join(fixtures, 'tiny');
const FILES = ['notes.txt', 'pages/security.html', 'guide/search.mdx', 'faq.jsonl', 'guide/install.md'];
let api;
let model;
let tokenizer;

before(async () => {
  const project = consumerProject();
  writeFileSync(path.join(project, 'collection.mjs'), "export * from 'sextant-search/collection';\n");
  api = await import(pathToFileURL(path.join(project, 'collection.mjs')).href);
  model = readFileSync(path.join(modelDir, 'model.onnx'));
  tokenizer = readFileSync(path.join(modelDir, 'tokenizer.json'));
});

let collection;
after(() => collection?.free());

test('a collection built file by file searches, embeds and exports the CLI index of the same files', async () => {
  collection = await api.Collection.create({ model, tokenizer });
  for (const f of FILES) {
    const summary = await collection.addFile(f, readFileSync(path.join(tiny, f)));
    assert.equal(summary.path, f);
    assert.ok(summary.chunks > 0 && summary.pending === summary.chunks, JSON.stringify(summary));
  }
  await expectCode(collection.addFile('extra.rst', readFileSync(path.join(tiny, 'extra.rst'))), 'BAD_ARGUMENT');
  await expectCode(collection.addFile('../escape.md', '# x'), 'BAD_ARGUMENT');
  assert.deepEqual(collection.files().map((f) => f.path), ['faq.jsonl', 'guide/install.md', 'guide/search.mdx', 'notes.txt', 'pages/security.html']);

  // Before embedding: keyword results, whatever the mode asked, and no export.
  const total = collection.pending;
  assert.ok(total > 0);
  const texts = collection.pendingTexts();
  assert.equal(texts.length, total);
  assert.ok(texts.some((t) => t.includes('make install')), 'the chunk texts as cut');
  const early = await collection.search('install', { mode: 'hybrid' });
  assert.equal(early.mode, 'keyword');
  assert.ok(early.results.length > 0);
  await expectCode(() => collection.export(), 'NOT_READY');

  // Embedding reports progress and stops between batches on a signal, keeping what it did.
  const stop = new AbortController();
  const progress = [];
  await expectCode(
    collection.embed({ batch: 2, signal: stop.signal, on_progress: (p) => (progress.push(p), p.done >= 4 && stop.abort()) }),
    'ABORTED',
  );
  assert.equal(progress.at(-1).done, 4);
  assert.equal(collection.pending, total - 4);
  const rest = [];
  assert.equal(await collection.embed({ on_progress: (p) => rest.push(p) }), total - 4);
  const last = rest.at(-1);
  assert.deepEqual({ done: last.done, total: last.total, left: last.seconds_left, workers: last.workers }, { done: total - 4, total: total - 4, left: 0, workers: 1 });
  assert.ok(last.chunks_per_s > 0);
  assert.equal(collection.pending, 0);

  // Hybrid now. The export is the CLI's index of the same files, byte for byte: passages are
  // embedded with integer products and fixed-order sums (int8a8), the same bits in wasm as
  // natively on any kernel, so the vectors, their calibration and centroids agree too.
  const exported = collection.export();
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-collection-'));
  const cli = path.join(dir, 'cli.sxt');
  execFileSync(sextantBin, ['build', tiny, '-o', cli, '--no-cache'], { stdio: 'pipe' });
  writeFileSync(path.join(dir, 'ours.sxt'), exported);
  // Every object each index holds (`inspect --json`), named by its digest.
  const files = (sxt) => JSON.parse(execFileSync(sextantBin, ['inspect', path.join(dir, sxt), '--json'], { encoding: 'utf8' })).objects;
  assert.deepEqual(files('ours.sxt'), files('cli.sxt'));
  assert.ok(['codes.', 'vec.', 'cent.'].every((kind) => files('cli.sxt').some((f) => f.startsWith(kind))), 'vectors, codes and centroids compared');
  assert.ok(Buffer.from(exported).equals(readFileSync(cli)), 'the same bytes');
  for (const query of ['how do I install it', 'security model', 'what does search rank by']) {
    for (const mode of ['hybrid', 'dense', 'keyword']) {
      const ours = await collection.search(query, { k: 5, mode });
      assert.equal(ours.mode, mode);
      const fromCli = JSON.parse(execFileSync(sextantBin, ['search', cli, query, '-k', '5', '--mode', mode, '--weights', 'f32', '--json'], { encoding: 'utf8' }));
      assert.deepEqual(ours.results.map((r) => r.chunk_id), fromCli.results.map((r) => r.chunk_id), `${mode}: ${query}`);
    }
  }

  // A removed file is gone from results; re-adding it embeds nothing.
  const security = (r) => r.doc_id === 'pages/security.html';
  assert.ok((await collection.search('security', { mode: 'keyword', k: 20 })).results.some(security));
  assert.equal(await collection.removeFile('pages/security.html'), true);
  assert.equal(await collection.removeFile('pages/security.html'), false);
  assert.ok(!(await collection.search('security', { mode: 'keyword', k: 20 })).results.some(security));
  await collection.addFile('pages/security.html', readFileSync(path.join(tiny, 'pages/security.html')));
  assert.equal(collection.pending, 0);

  // Saved vectors restore a new collection without embedding; damaged ones are refused.
  const saved = collection.vectors();
  const again = await api.Collection.create({ model, tokenizer });
  try {
    for (const f of FILES) await again.addFile(f, readFileSync(path.join(tiny, f)));
    assert.equal(again.pending, total);
    await expectCode(() => again.loadVectors(saved.slice(0, saved.length - 3)), 'CORRUPT_BUNDLE');
    assert.equal(again.pending, total);
    again.loadVectors(saved);
    assert.equal(again.pending, 0);
    assert.ok(Buffer.from(again.export()).equals(Buffer.from(exported)));
  } finally {
    again.free();
  }
});

test('the README collection example works as written', () => {
  const code = taggedBlock(readFileSync(path.join(root, 'pkg-template/README.md'), 'utf8'), 'collection-example');
  const work = mkdtempSync(path.join(consumerProject(), 'example-'));
  exampleFiles(work);
  writeFileSync(path.join(work, 'example.mjs'), code);
  const lines = execFileSync(process.execPath, ['example.mjs'], { cwd: work, encoding: 'utf8' }).trim().split('\n');
  assert.equal(lines[0], 'keyword');
  assert.match(lines.at(-2), /^\d+\/\d+$/);
  assert.equal(lines.at(-1), 'hybrid Lighthouses');
});

/** A storage in memory, with the OPFS storage's four methods, counting writes. */
function memoryStorage() {
  const files = new Map();
  return {
    files,
    writes: 0,
    async list() {
      return [...files.keys()].sort();
    },
    async read(name) {
      return files.get(name) ?? null;
    },
    async write(name, bytes) {
      this.writes++;
      files.set(name, new Uint8Array(bytes));
    },
    async remove(name) {
      files.delete(name);
    },
  };
}

test('an opened collection writes through to its storage and reopens without embedding again', async () => {
  const storage = memoryStorage();
  const first = await api.Collection.open('notes', { model, tokenizer, storage });
  try {
    for (const f of FILES) await first.addFile(f, readFileSync(path.join(tiny, f)));
    await first.addHtml('memo.docx', '<title>Memo</title><h1>Memo</h1><p>The harbour pilot boards ships at the breakwater.</p>', { original: new Uint8Array([80, 75, 3, 4]) });
    await first.addDocuments('paper.pdf', [
      { id: 'paper.pdf', source: 'paper.pdf', url: null, title: 'A paper', metadata: {}, sections: [{ heading_path: ['Page 2'], anchor: 'page=2', text: 'Lighthouse lenses focus the beam with Fresnel rings.' }] },
    ]);
    await first.embed();
    await first.removeFile('notes.txt');
    await first.flush();
    assert.deepEqual([...storage.files.keys()].filter((k) => k.startsWith('file.') || k.startsWith('docs.')).sort(), [
      'docs.paper.pdf.json', 'file.faq.jsonl', 'file.guide%2Finstall.md', 'file.guide%2Fsearch.mdx', 'file.pages%2Fsecurity.html',
    ]);
    assert.deepEqual([...(await first.original('memo.docx'))], [80, 75, 3, 4]);
    assert.equal(await first.original('paper.pdf'), null);
  } finally {
    first.free();
  }
  const expected = await (async () => {
    const again = await api.Collection.open('notes', { model, tokenizer, storage });
    try {
      assert.deepEqual(again.skipped, []);
      assert.equal(again.pending, 0, 'reopening embedded something again');
      assert.deepEqual(again.files().map((f) => f.path), ['faq.jsonl', 'guide/install.md', 'guide/search.mdx', 'memo.docx', 'pages/security.html', 'paper.pdf']);
      assert.equal((await again.search('where does the harbour pilot board ships', { k: 1 })).results[0].doc_id, 'memo.docx');
      const hit = (await again.search('fresnel lens', { k: 3 })).results[0];
      assert.equal(hit.doc_id, 'paper.pdf');
      assert.deepEqual(hit.heading_path, ['Page 2']);
      return again.export();
    } finally {
      again.free();
    }
  })();
  // Damaged vectors in storage: reported, dropped, embedded again; never a wrong index.
  const damaged = storage.files.get('vectors.bin').slice(0, 100);
  storage.files.set('vectors.bin', damaged);
  const third = await api.Collection.open('notes', { model, tokenizer, storage });
  try {
    assert.equal(third.skipped.length, 1);
    assert.equal(third.skipped[0].code, 'CORRUPT_BUNDLE');
    assert.ok(third.pending > 0);
    await third.embed();
    assert.ok(Buffer.from(third.export()).equals(Buffer.from(expected)));
  } finally {
    third.free();
  }
  await expectCode(api.Collection.open('../x', { model, tokenizer, storage }), 'BAD_ARGUMENT');
  await expectCode(api.Collection.open('notes', { model, tokenizer, storage, config: { chunking: { max_tokens: 100 } } }), 'BAD_ARGUMENT');
});

/** A site with the package under sextant/, the model files, and a page exposing the collection API as `window.collections`. */
async function collectionSite(prefix) {
  const site = mkdtempSync(path.join(tmpdir(), prefix));
  exampleFiles(site);
  await cp(path.join(consumerProject(), 'node_modules/sextant-search'), path.join(site, 'sextant'), { recursive: true, dereference: true });
  writeFileSync(path.join(site, 'index.html'), '<!doctype html><meta charset="utf-8"><title>collection</title><link rel="icon" href="data:,"><script type="module">import * as c from "./sextant/collection.js"; window.collections = c;</script>');
  return site;
}

test('in Chromium, a collection lives in OPFS: reload, and the same results come back without embedding', async () => {
  const site = await collectionSite('sextant-collection-site-');
  for (const f of FILES) await cp(path.join(tiny, f), path.join(site, 'docs', f), { recursive: true });
  const server = await startStaticServer(site);
  const context = await launch();
  try {
    const page = await watchedPage(context);
    await page.goto(server.url + '/');
    await page.waitForFunction(() => window.collections, null, { timeout: 60000 });
    const first = await page.evaluate(async (files) => {
      const { Collection, storageInfo, listCollections } = window.collections;
      const c = await Collection.open('research', { model: '/model.onnx', tokenizer: '/tokenizer.json' });
      for (const f of files) await c.addFile(f, await (await fetch(`/docs/${f}`)).arrayBuffer());
      const early = await c.search('security', { k: 3 });
      let steps = 0;
      await c.embed({ on_progress: () => steps++ });
      const hybrid = await c.search('how do I install it', { k: 5 });
      await c.removeFile('notes.txt');
      const after = await c.search('how do I install it', { k: 5 });
      await c.flush();
      const info = await storageInfo({ persist: true });
      return { early: early.mode, steps, hybrid: hybrid.mode, ids: after.results.map((r) => r.chunk_id), usage: info.usage, names: await listCollections() };
    }, FILES);
    assert.equal(first.early, 'keyword');
    assert.ok(first.steps > 0);
    assert.equal(first.hybrid, 'hybrid');
    assert.ok(first.usage > 0);
    assert.deepEqual(first.names, ['research']);

    await page.reload();
    await page.waitForFunction(() => window.collections, null, { timeout: 60000 });
    const second = await page.evaluate(async () => {
      const { Collection, deleteCollection, listCollections } = window.collections;
      const c = await Collection.open('research', { model: '/model.onnx', tokenizer: '/tokenizer.json' });
      const result = { pending: c.pending, skipped: c.skipped, files: c.files().map((f) => f.path), ids: (await c.search('how do I install it', { k: 5 })).results.map((r) => r.chunk_id) };
      c.free();
      await deleteCollection('research');
      return { ...result, names: await listCollections() };
    });
    assert.equal(second.pending, 0, 'the reload embedded again');
    assert.deepEqual(second.skipped, []);
    assert.deepEqual(second.files, ['faq.jsonl', 'guide/install.md', 'guide/search.mdx', 'pages/security.html']);
    assert.deepEqual(second.ids, first.ids);
    assert.deepEqual(second.names, []);
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
    await server.close();
  }
});

test('in Chromium, a pool of embedding workers gives the index one thread gives', async () => {
  const server = await startStaticServer(await collectionSite('sextant-collection-pool-'));
  const context = await launch();
  try {
    const page = await watchedPage(context);
    await page.goto(server.url + '/');
    await page.waitForFunction(() => window.collections, null, { timeout: 60000 });
    const got = await page.evaluate(async () => {
      const { Collection } = window.collections;
      // 240 sections of their own words: enough chunks that the pool's workers load their model
      // and take batches before this thread is done (sixty were not, once passages ran through
      // sextant's own encoder).
      const words = ['tide', 'orbit', 'lunar', 'basin', 'current', 'estuary', 'harbour', 'surge', 'neap', 'spring'];
      const text = Array.from({ length: 240 }, (_, i) => `## Section ${i}\n\nThe ${words[i % 10]} and the ${words[(i * 7) % 10]} meet at station ${i * 13}, ${words[(i * 3) % 10]} rising.\n`).join('\n');
      const build = async (workers) => {
        const c = await Collection.create({ model: '/model.onnx', tokenizer: '/tokenizer.json' });
        await c.addFile('tides.md', text);
        let most = 0;
        let last = null;
        await c.embed({ workers, batch: 2, on_progress: (p) => ((most = Math.max(most, p.workers)), (last = p)) });
        const bytes = c.export();
        c.free();
        return { bytes: Array.from(bytes), most, last };
      };
      const one = await build(1);
      const pool = await build(3);
      return { one, pool };
    });
    assert.equal(got.one.most, 1);
    assert.ok(got.pool.most >= 2, `the pool's workers never embedded (${got.pool.most} threads)`);
    assert.equal(got.pool.last.done, got.pool.last.total);
    assert.ok(got.pool.last.chunks_per_s > 0 && got.pool.last.seconds_left === 0);
    assert.ok(got.one.bytes.length > 0);
    assert.deepEqual(got.pool.bytes, got.one.bytes, 'the pool gave another index');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
    await server.close();
  }
});

test('an index the CLI built imports as a collection file, with its vectors, and stays after a reopen', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-import-'));
  const cli = path.join(dir, 'tiny.sxt');
  execFileSync(sextantBin, ['build', tiny, '-o', cli, '--no-cache'], { stdio: 'pipe' });
  const bytes = readFileSync(cli);
  const storage = memoryStorage();
  const imported = await api.Collection.open('imported', { model, tokenizer, storage });
  let expected;
  try {
    // A damaged file, a format-1 bundle and a stranger's file are refused and change nothing.
    const damaged = new Uint8Array(bytes);
    damaged[damaged.length - 10] ^= 0xff;
    await expectCode(imported.importIndex('tiny.sxt', damaged), 'CORRUPT_BUNDLE');
    await expectCode(imported.importIndex('tiny.sxt', bytes.subarray(0, 1000)), 'CORRUPT_BUNDLE');
    await expectCode(imported.importIndex('old.sxt', readFileSync(path.join(fixtures, 'golden-v1.sxt'))), 'UNSUPPORTED_VERSION');
    await expectCode(imported.importIndex('notes.sxt', new TextEncoder().encode('# not an index')), 'CORRUPT_BUNDLE');
    assert.deepEqual(imported.files(), []);

    const summary = await imported.importIndex('tiny.sxt', bytes);
    assert.equal(summary.path, 'tiny.sxt');
    assert.equal(summary.documents, readFileSync(path.join(tiny, 'faq.jsonl'), 'utf8').trim().split('\n').length + 4);
    assert.equal(summary.pending, 0, 'the index brought its vectors');
    assert.equal(summary.vectors, summary.chunks);
    // It answers as the CLI does over the index it came from, in every mode.
    for (const query of ['how do I install it', 'security model', 'what does search rank by']) {
      for (const mode of ['hybrid', 'dense', 'keyword']) {
        const ours = await imported.search(query, { k: 5, mode });
        const fromCli = JSON.parse(execFileSync(sextantBin, ['search', cli, query, '-k', '5', '--mode', mode, '--weights', 'f32', '--json'], { encoding: 'utf8' }));
        assert.deepEqual(ours.results.map((r) => [r.chunk_id, r.url, r.title]), fromCli.results.map((r) => [r.chunk_id, r.url, r.title]), `${mode}: ${query}`);
      }
    }
    // A file added beside it is indexed with it.
    await imported.addFile('extra/tides.md', '# Tides\n\nSpring tides follow the new and full moon.');
    await imported.embed();
    assert.equal((await imported.search('spring tides moon', { k: 1 })).results[0].doc_id, 'extra/tides.md');
    expected = imported.export();
    await imported.flush();
  } finally {
    imported.free();
  }
  // Reopened from storage: the same files, nothing to embed, the same index.
  const again = await api.Collection.open('imported', { model, tokenizer, storage });
  try {
    assert.deepEqual(again.skipped, []);
    assert.deepEqual(again.files().map((f) => f.path), ['extra/tides.md', 'tiny.sxt']);
    assert.equal(again.pending, 0);
    assert.ok(Buffer.from(again.export()).equals(Buffer.from(expected)));
    assert.equal(await again.removeFile('tiny.sxt'), true);
    await again.flush();
    assert.ok(![...storage.files.keys()].some((k) => k.startsWith('index.')));
  } finally {
    again.free();
  }
});

test('in WebAssembly too, YAML aliases in front matter cannot expand past the limit: the file is refused, the collection keeps working', async () => {
  // "Billion laughs" (the native test: src/loader/markdown.rs): nine levels of nine aliased
  // mappings, 9^9 key paths from under a kilobyte.
  let yaml = 'm0: &m0 {a: x, b: x, c: x, d: x, e: x, f: x, g: x, h: x, i: x}\n';
  for (let level = 1; level < 9; level++) yaml += `m${level}: &m${level} {${[...'abcdefghi'].map((k) => `${k}: *m${level - 1}`).join(', ')}}\n`;
  const bomb = `---\n${yaml}---\n# Bomb\n\ntext\n`;
  assert.ok(bomb.length < 1000);
  const small = await api.Collection.create({ model, tokenizer });
  try {
    const started = performance.now();
    const error = await expectCode(small.addFile('bomb.md', bomb), 'BAD_ARGUMENT');
    assert.match(error.message, /front matter flattens to more than 10000 values/);
    assert.ok(performance.now() - started < 5000, 'the aliases were followed past the limit');
    assert.deepEqual(small.files(), []);
    await small.addFile('tides.md', '---\ntitle: Tides\n---\n# Tides\n\nSpring tides follow the new moon.\n');
    assert.equal((await small.search('spring tides', { mode: 'keyword' })).results[0].title, 'Tides');
  } finally {
    small.free();
  }
});
