// Comparing a ranking with the native CLI's, for the Worker tests.
import assert from 'node:assert/strict';

// The same results in the same order, but for near-ties (scores within 1e-4, which a last bit
// can order either way; with int8 weights, one activation's level): each rank's score is the
// expected one within 1e-4, and its chunk the expected one or one expected at a score within
// 1e-4 of this rank's (tests/wasm_parity.rs checks the same way).
export function assertSameRanking(got, want, context) {
  const TIE = 1e-4;
  assert.equal(got.length, want.length, context);
  const last = want.at(-1)?.score ?? 0;
  got.forEach((r, i) => {
    assert.ok(Math.abs(r.score - want[i].score) <= TIE, `${context}: rank ${i} scores ${r.score}, expected ${want[i].score}`);
    const expected = want.find((w) => w.chunk_id === r.chunk_id);
    const tied = expected ? Math.abs(expected.score - want[i].score) <= TIE : Math.abs(r.score - last) <= TIE;
    assert.ok(r.chunk_id === want[i].chunk_id || tied, `${context}: rank ${i} is ${r.chunk_id}, expected ${want[i].chunk_id}`);
  });
}
