// The quality check of `make test`: on both shared collections (tests/fixtures/cranfield and
// tests/fixtures/npl, copies of shared/data's), hybrid search with the defaults must rank at least
// as well as keyword search and dense search alone, on nDCG@10 and MRR@10. Each collection is
// indexed in memory by `sextant eval` (embeddings come from the cache after the first run; a cold
// one embeds NPL's 11,426 abstracts in about four minutes on 2 cores).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { root, sextantBin } from './harness.mjs';

test('hybrid ranks at least as well as either retriever alone on Cranfield and NPL', () => {
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
});
