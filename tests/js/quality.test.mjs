// The quality check of `make test`: on both shared collections (tests/fixtures/cranfield and
// tests/fixtures/npl, copies of shared/data's), hybrid search with the defaults must rank at least
// as well as keyword search and dense search alone, on nDCG@10 and MRR@10. Each collection is
// indexed in memory by `sextant eval` (embeddings come from the cache after the first run; a cold
// one embeds NPL's 11,426 abstracts in about four minutes on 2 cores). Keyword search must also
// rank at least as well as textbook Okapi BM25, the reference figure NPL's README gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { root, sextantBin } from './harness.mjs';

test('hybrid ranks at least as well as either retriever alone on Cranfield and NPL, keyword as textbook BM25', () => {
  const collections = ['cranfield', 'npl'].map((c) => path.join(root, 'tests/fixtures', c));
  const out = execFileSync(sextantBin, ['eval', ...collections, '--all-modes', '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const lines = out.trim().split('\n').map((l) => JSON.parse(l));
  for (const name of ['cranfield', 'npl']) {
    const modes = Object.fromEntries(lines.filter((l) => l.collection === name && l.mode).map((l) => [l.mode, l]));
    assert.deepEqual(Object.keys(modes).sort(), ['dense', 'hybrid', 'keyword'], name);
    for (const metric of ['ndcg@10', 'mrr@10']) {
      for (const single of ['keyword', 'dense']) {
        assert.ok(modes.hybrid[metric] >= modes[single][metric], `${name}: hybrid ${metric} ${modes.hybrid[metric].toFixed(4)} under ${single}'s ${modes[single][metric].toFixed(4)}`);
      }
    }
  }
  // "textbook Okapi BM25 (…) gives nDCG@10 0.4315 / MRR@10 0.6847 with k1 = 1.2 and … with k1 = 1.5"
  const readme = readFileSync(path.join(root, 'tests/fixtures/npl/README.md'), 'utf8').replace(/\s+/g, ' ');
  const reference = readme.match(/gives nDCG@10 ([0-9.]+) \/ MRR@10 ([0-9.]+) with k1 = 1\.2/);
  assert.ok(reference, 'the NPL README states textbook BM25 figures');
  const keyword = lines.find((l) => l.collection === 'npl' && l.mode === 'keyword');
  for (const [metric, textbook] of [['ndcg@10', Number(reference[1])], ['mrr@10', Number(reference[2])]]) {
    assert.ok(keyword[metric] >= textbook, `npl: keyword ${metric} ${keyword[metric].toFixed(4)} under textbook BM25's ${textbook}`);
  }
});
