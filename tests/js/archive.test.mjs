// The research workspace's check of what a document expands to (www/research/archive.js), before
// mammoth reads a DOCX whole: generated "zip bombs" (a few hundred KB inflating to 100 MB; one
// whose directory lies about it) are refused in moments, without inflating them into memory; a
// real DOCX passes; a PDF's text is bounded the same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkZipExpansion, textBudget } from '../../www/research/archive.js';

/** The core's default `[input] max_file_bytes` (the workspace asks the collection's worker). */
const LIMIT = 64 * 1024 * 1024;
import { docxBomb, docxOf, zipOf } from './documents.mjs';
import { fuzzArchive } from './fuzz-archive.mjs';

/** Runs `fn`, returning its error (it must fail) and how long it took. */
async function refusal(fn) {
  const started = performance.now();
  try {
    await fn();
  } catch (e) {
    return { error: e, ms: performance.now() - started };
  }
  assert.fail('it was not refused');
}

test('a DOCX that says it expands past the limit is refused from its directory alone', async () => {
  const bomb = docxBomb(100);
  assert.ok(bomb.length < 1 << 20, `${bomb.length} bytes`);
  const { error, ms } = await refusal(() => checkZipExpansion(bomb, { max_bytes: LIMIT }));
  assert.equal(error.code, 'BAD_ARGUMENT');
  assert.match(error.message, /expands to 100 MB, over the 64 MB a file may hold/);
  assert.ok(ms < 1000, `${ms} ms`);
});

test('a DOCX whose directory lies about what it expands to is refused once an entry passes what it declares', async () => {
  const liar = docxBomb(100, { declare: 4096 });
  const heapBefore = process.memoryUsage().heapUsed;
  const { error, ms } = await refusal(() => checkZipExpansion(liar, { max_bytes: LIMIT }));
  assert.equal(error.code, 'BAD_ARGUMENT');
  assert.match(error.message, /word\/document\.xml" expands past the 4 KB it declares/);
  assert.ok(ms < 2000, `${ms} ms`);
  assert.ok(process.memoryUsage().heapUsed - heapBefore < 32 << 20, 'the check held what it inflated');
});

test('a real DOCX passes, and so does one just under a lower limit; damaged archives are refused', async () => {
  const docx = docxOf([['Heading1', 'Tides'], [null, 'Spring tides follow the moon.']]);
  const ok = await checkZipExpansion(docx, { max_bytes: LIMIT });
  assert.equal(ok.entries, 3);
  const small = docxBomb(2);
  assert.equal((await checkZipExpansion(small, { max_bytes: 3 << 20 })).entries, 3);
  assert.match((await refusal(() => checkZipExpansion(small, { max_bytes: 1 << 20 }))).error.message, /expands to 2 MB, over the 1 MB/);
  assert.match((await refusal(() => checkZipExpansion(new TextEncoder().encode('not a zip'), { max_bytes: LIMIT }))).error.message, /not a ZIP archive/);
  assert.match((await refusal(() => checkZipExpansion(docx.subarray(0, docx.length - 30), { max_bytes: LIMIT }))).error.message, /not a ZIP archive/);
  const many = zipOf(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, 'x'])));
  assert.match((await refusal(() => checkZipExpansion(many, { max_bytes: LIMIT, max_entries: 10 }))).error.message, /holds 20 entries/);
});

test("a PDF's text is bounded as it is made", () => {
  const take = textBudget('the PDF', 1000);
  for (let i = 0; i < 9; i++) take('x'.repeat(100));
  assert.throws(() => take('é'.repeat(60)), (e) => e.code === 'BAD_ARGUMENT' && /the PDF holds more than/.test(e.message));
});

test('mutated archives (flipped, cut, spliced, boundary sizes) end in a verdict within the limits or a BAD_ARGUMENT refusal, never another error', async () => {
  const seed = Number(process.env.SEXTANT_TEST_SEED ?? Date.now() % 2 ** 32);
  console.log(`# archive fuzz seed ${seed} (rerun with SEXTANT_TEST_SEED=${seed})`);
  const counts = await fuzzArchive({ executions: 3000, seed });
  assert.equal(counts.executions, 3000);
  assert.ok(counts.refused > 0 && counts.passed > 0, `the mutations reach both verdicts: ${JSON.stringify(counts)}`);
});
