// The Worker reading its search files from an R2 bucket (SEXTANT_R2) instead of the static
// assets, as a site past the assets' file limits deploys it: the bundled Worker in Miniflare (the
// workerd runtime with its local R2 emulation), the Cranfield index the native CLI built uploaded
// to the bucket as `sextant build --site` lays it out. Needs scripts/worker-build.sh and the parity
// fixtures (scripts/test-js.sh prepares both).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { filesUnder, miniflareWithR2 } from './workerd.mjs';
import { cranfieldAssets } from './assets.mjs';
import { assertSameRanking } from './ranking.mjs';

const parityDir = process.env.SEXTANT_PARITY_DIR;
let mf;
let indexBytes = 0;

before(async () => {
  assert.ok(parityDir, 'SEXTANT_PARITY_DIR is not set: run scripts/test-js.sh');
  // A second base whose folder was never uploaded: reported, not fatal.
  mf = await miniflareWithR2({ SEXTANT_BASES: 'docs=sextant,gone=missing' });
  const bucket = await mf.getR2Bucket('SEXTANT_R2');
  const assets = cranfieldAssets(parityDir);
  for (const rel of filesUnder(assets)) {
    const bytes = readFileSync(path.join(assets, rel));
    if (rel.startsWith('sextant/index/') && !rel.includes('manifest.')) indexBytes += bytes.length;
    // A plain copy: the proxy to the emulated bucket refuses a Buffer of a shared pool.
    await bucket.put(rel, new Uint8Array(bytes));
  }
});

after(async () => {
  await mf?.dispose();
});

const get = async (p) => mf.dispatchFetch(`http://localhost${p}`);

test('from R2: the native CLI top 10, index objects read as byte ranges, a missing base named', async () => {
  const health = await (await get('/healthz')).json();
  assert.equal(health.engine, 'not loaded', 'nothing may load at start-up');
  assert.equal(health.files, 'r2');
  const expected = readFileSync(path.join(parityDir, 'expected.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .slice(0, 12);
  for (const line of expected) {
    const response = await get(`/search?q=${encodeURIComponent(line.query)}&k=10&mode=${line.mode}&bases=docs`);
    assert.equal(response.status, 200, await response.clone().text());
    const got = await response.json();
    assertSameRanking(got.results, line.results, `R2 ${line.mode} ${line.query_id}`);
  }
  const loaded = await (await get('/healthz')).json();
  assert.equal(loaded.engine, 'loaded');
  const docs = loaded.bases.find((b) => b.base === 'docs');
  assert.equal(docs.loaded, true);
  const gone = loaded.bases.find((b) => b.base === 'gone');
  assert.equal(gone.loaded, false);
  assert.equal(gone.code, 'NOT_BUILT');
  assert.match(gone.message, /missing\/ in the R2 bucket SEXTANT_R2.*upload that folder to the bucket under missing\//);
  assert.equal(loaded.partial, true);
  console.log(`R2: ${loaded.index_files_read} reads, ${loaded.index_bytes_read} of ${indexBytes} index bytes; wasm memory ${(loaded.wasm_memory_bytes / 1e6).toFixed(1)} MB`);
  // R2 answers the pack reader's Range requests (206) with the range: many small reads, less
  // than the index in all (a host that ignores ranges gives each pack whole, once).
  assert.ok(loaded.index_files_read > 20, `${loaded.index_files_read} reads`);
  assert.ok(loaded.index_bytes_read / loaded.index_files_read < 64e3, 'ranges, not packs');
  assert.ok(loaded.index_bytes_read < indexBytes, `${loaded.index_bytes_read} of ${indexBytes} bytes read`);
  assert.ok(loaded.wasm_memory_bytes < 80e6, `wasm memory ${loaded.wasm_memory_bytes} bytes`);
});

test('from R2: an index object damaged in the bucket is a typed error, not a wrong answer', async () => {
  const bucket = await mf.getR2Bucket('SEXTANT_R2');
  const listed = await bucket.list({ prefix: 'sextant/index/' });
  const packs = listed.objects.filter((o) => !o.key.includes('manifest.'));
  assert.ok(packs.length > 0);
  // Every object flipped in its middle: whatever a new query reads fails its digest check.
  for (const o of packs) {
    const bytes = new Uint8Array(await (await bucket.get(o.key)).arrayBuffer());
    for (let i = 0; i < bytes.length; i += 97) bytes[i] ^= 0xff;
    await bucket.put(o.key, bytes);
  }
  const response = await get(`/search?q=${encodeURIComponent('transonic flutter of swept panels in a cold tunnel')}&k=10&mode=keyword&bases=docs`);
  const body = await response.json();
  assert.ok(response.status >= 500, `${response.status}: ${JSON.stringify(body).slice(0, 300)}`);
  assert.equal(body.error.code, 'CORRUPT_BUNDLE', JSON.stringify(body.error));
  assert.match(body.error.message, /is corrupt.*of pack\.[0-9a-f]+\.bin/, 'the message names the damaged object and its pack');
});
