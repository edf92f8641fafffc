// An agent's memory (`sextant-search/memory`) in the built package: values kept under keys, found
// again by meaning and by keyword, replaced and deleted; kept in a folder in Node and in OPFS in
// Chromium, where it survives a reload.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cp } from 'node:fs/promises';
import { modelDir, consumerProject, expectCode } from './harness.mjs';
import { startStaticServer } from './static-server.mjs';
import { launch, watchedPage } from './browser.mjs';

let api;
let collection;
let model;
let tokenizer;

before(async () => {
  const project = consumerProject();
  writeFileSync(path.join(project, 'memory.mjs'), "export * from 'sextant-search/memory';\n");
  api = await import(pathToFileURL(path.join(project, 'memory.mjs')).href);
  collection = await import(pathToFileURL(path.join(project, 'node_modules/sextant-search/collection.js')).href);
  model = readFileSync(path.join(modelDir, 'model.onnx'));
  tokenizer = readFileSync(path.join(modelDir, 'tokenizer.json'));
});

const FACTS = {
  'user.city': { city: 'Lisbon', said: 'I moved to Lisbon last spring and work from home' },
  'task.42': 'Draft the quarterly report on lighthouse maintenance costs',
  'pref.style': { tone: 'short answers, no emoji' },
  'build.error': 'cargo build failed: linker cc not found, install build-essential',
};

test('set, get, search by meaning and by keyword, replace and delete; a folder keeps it across a reopen', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-memory-'));
  const storage = collection.folderStorage(dir);
  const memory = await api.Memory.open('agent', { model, tokenizer, storage });
  for (const [key, value] of Object.entries(FACTS)) await memory.set(key, value);
  assert.deepEqual(memory.keys(), Object.keys(FACTS).sort());
  assert.deepEqual(await memory.get('user.city'), FACTS['user.city']);
  assert.equal(await memory.get('nobody'), undefined);
  // By meaning: no word of the question is in the value.
  const where = await memory.search('in which town does the person live?', { k: 2 });
  assert.equal(where[0].key, 'user.city', JSON.stringify(where));
  assert.deepEqual(where[0].value, FACTS['user.city']);
  // By keyword: a rare word.
  const linker = await memory.search('linker', { k: 1, mode: 'keyword' });
  assert.deepEqual(linker.map((r) => r.key), ['build.error']);
  // Replacing a key replaces what is found.
  await memory.set('task.42', 'Book the ferry to Madeira for the team offsite');
  assert.equal((await memory.search('boat trip for colleagues', { k: 1 }))[0].key, 'task.42');
  assert.ok(!(await memory.search('lighthouse maintenance', { k: 4, mode: 'keyword' })).some((r) => r.key === 'task.42'));
  assert.equal(await memory.delete('pref.style'), true);
  assert.equal(await memory.delete('pref.style'), false);
  await memory.flush();
  memory.free();
  assert.ok(readdirSync(dir).some((f) => f.startsWith('docs.')), readdirSync(dir).join());

  const again = await api.Memory.open('agent', { model, tokenizer, storage });
  assert.deepEqual(again.keys(), ['build.error', 'task.42', 'user.city']);
  assert.equal(await again.get('task.42'), 'Book the ferry to Madeira for the team offsite');
  assert.deepEqual(await again.get('user.city'), FACTS['user.city']);
  assert.equal((await again.search('where does the user live', { k: 1 }))[0].key, 'user.city');
  again.free();
});

test('bad keys and values are typed errors that change nothing', async () => {
  const memory = await api.Memory.create({ model, tokenizer });
  await memory.set('a', 1);
  for (const key of ['', 'x'.repeat(api.MAX_KEY_LENGTH + 1), 'é'.repeat(60), 7, null]) {
    await expectCode(memory.set(key, 'v'), 'BAD_ARGUMENT');
  }
  await expectCode(memory.set('f', () => 1), 'BAD_ARGUMENT');
  await expectCode(memory.set('big', 'x'.repeat(api.MAX_VALUE_BYTES)), 'BAD_ARGUMENT');
  assert.deepEqual(memory.keys(), ['a']);
  assert.equal(await memory.get('a'), 1);
  // A key of any characters within the bounds is kept as it is.
  await memory.set('../../etc/passwd?#%', { ok: true });
  assert.deepEqual(await memory.get('../../etc/passwd?#%'), { ok: true });
  assert.deepEqual(memory.keys(), ['../../etc/passwd?#%', 'a']);
  memory.free();
  // Keys that differ only in case are two keys, even in a folder that does not tell case apart:
  // no two stored names differ only in case.
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-memory-case-'));
  const cased = await api.Memory.open('cased', { model, tokenizer, storage: collection.folderStorage(dir) });
  await cased.set('User.Name', 'Ada');
  await cased.set('user.name', 'Grace');
  await cased.set('USER.NAME^', 'Lin');
  await cased.flush();
  assert.deepEqual(cased.keys(), ['USER.NAME^', 'User.Name', 'user.name']);
  assert.equal(await cased.get('User.Name'), 'Ada');
  assert.equal(await cased.get('user.name'), 'Grace');
  const names = readdirSync(dir).map((f) => f.toLowerCase());
  assert.equal(new Set(names).size, names.length, readdirSync(dir).join());
  cased.free();
});

test('in Chromium, a memory lives in OPFS: set, reload, and it is found again', async () => {
  const site = mkdtempSync(path.join(tmpdir(), 'sextant-memory-site-'));
  await cp(path.join(consumerProject(), 'node_modules/sextant-search'), path.join(site, 'sextant'), { recursive: true, dereference: true });
  await cp(path.join(modelDir, 'model.onnx'), path.join(site, 'model.onnx'));
  await cp(path.join(modelDir, 'tokenizer.json'), path.join(site, 'tokenizer.json'));
  writeFileSync(path.join(site, 'index.html'), '<!doctype html><meta charset="utf-8"><title>memory</title><link rel="icon" href="data:,"><script type="module">import * as m from "./sextant/memory.js"; window.memories = m;</script>');
  const server = await startStaticServer(site);
  const context = await launch();
  try {
    const page = await watchedPage(context);
    await page.goto(server.url + '/');
    await page.waitForFunction(() => window.memories, null, { timeout: 60000 });
    await page.evaluate(async (facts) => {
      const memory = await window.memories.Memory.open('agent', { model: '/model.onnx', tokenizer: '/tokenizer.json' });
      for (const [key, value] of Object.entries(facts)) await memory.set(key, value);
      await memory.delete('pref.style');
      await memory.flush();
      memory.free();
    }, FACTS);
    await page.reload();
    await page.waitForFunction(() => window.memories, null, { timeout: 60000 });
    const found = await page.evaluate(async () => {
      const memory = await window.memories.Memory.open('agent', { model: '/model.onnx', tokenizer: '/tokenizer.json' });
      const result = { keys: memory.keys(), city: await memory.get('user.city'), where: (await memory.search('which town does the person live in', { k: 1 }))[0]?.key };
      memory.free();
      return result;
    });
    assert.deepEqual(found.keys, ['build.error', 'task.42', 'user.city']);
    assert.deepEqual(found.city, FACTS['user.city']);
    assert.equal(found.where, 'user.city');
    assert.deepEqual(page.errors, []);
  } finally {
    await context.close();
    await server.close();
  }
});
