// Mutation fuzzing of the research workspace's DOCX check (www/research/archive.js): real
// archives (a DOCX, a deflated one, a small bomb, one whose directory lies) are flipped, cut,
// spliced and given boundary numbers, seeded and repeatable; every input must end in the check's
// verdict or its BAD_ARGUMENT refusal, never another exception, and quickly. Not coverage-guided
// (libFuzzer runs the Rust targets; this is JavaScript): many executions of cheap mutations.
//
// archive.test.mjs runs a short round in `make test`; `make fuzz` runs a long one:
//   node tests/js/fuzz-archive.mjs [executions] [seed]
// A failing input is written to fuzz/artifacts/archive/ and the seed printed.
import { deflateRawSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkZipExpansion } from '../../www/research/archive.js';
import { docxBomb, docxOf, zipEntries as zipOfEntries } from './documents.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The limits the fuzzed check runs under: small, so that an input passing them is cheap. */
const LIMITS = { max_bytes: 1 << 20, max_entries: 64 };

/** A small seeded generator (mulberry32). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The archives mutations start from. */
export function seeds() {
  const text = Buffer.from('<w:document><w:body><w:p><w:r><w:t>Tide tables</w:t></w:r></w:p></w:body></w:document>');
  return [
    docxOf([['Heading1', 'Tides'], [null, 'High water at noon.']]),
    zipOfEntries([
      { name: 'word/document.xml', deflated: deflateRawSync(text), size: text.length, crc: 0 },
      { name: 'a', data: Buffer.from('stored') },
    ]),
    docxBomb(1),
    docxBomb(1, { declare: 4096 }),
  ];
}

/** Numbers at the edges of what the ZIP fields hold. */
const EDGES = [0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];

/** One mutation of `bytes` (a new buffer). */
function mutate(bytes, next) {
  const pick = (n) => Math.floor(next() * n);
  const out = Buffer.from(bytes);
  const at = pick(Math.max(1, out.length));
  switch (pick(6)) {
    case 0: // flip bits
      for (let i = pick(8) + 1; i > 0; i--) out[pick(out.length)] ^= 1 << pick(8);
      return out;
    case 1: // a boundary number over a field (the ZIP's are little-endian u16 and u32)
      if (at + 4 <= out.length) out.writeUInt32LE(EDGES[pick(EDGES.length)] >>> 0, at);
      return out;
    case 2: // near the end: the directory and its end record
      if (out.length >= 26) out.writeUInt16LE(EDGES[pick(EDGES.length)] & 0xffff, out.length - 26 + pick(24));
      return out;
    case 3: // cut short
      return out.subarray(0, at);
    case 4: // a piece repeated in place
      return Buffer.concat([out.subarray(0, at), out.subarray(pick(out.length)).subarray(0, pick(256)), out.subarray(at)]);
    default: // random bytes over a stretch
      for (let i = pick(16) + 1; i > 0 && at + i <= out.length; i--) out[at + i - 1] = pick(256);
      return out;
  }
}

/**
 * Runs `executions` mutated inputs from `seed`; resolves with the counts, or rejects with the
 * first input that broke the check (written to fuzz/artifacts/archive/).
 */
export async function fuzzArchive({ executions, seed, progress = () => {} }) {
  const next = random(seed);
  const bases = seeds();
  const counts = { executions: 0, passed: 0, refused: 0, slowest_ms: 0 };
  for (let i = 0; i < executions; i++) {
    let input = bases[Math.floor(next() * bases.length)];
    for (let n = Math.floor(next() * 4) + 1; n > 0; n--) input = mutate(input, next);
    const started = performance.now();
    let failure = null;
    try {
      const verdict = await checkZipExpansion(input, LIMITS);
      if (!(verdict.entries <= LIMITS.max_entries && verdict.expanded <= LIMITS.max_bytes)) failure = `a verdict past the limits: ${JSON.stringify(verdict)}`;
      else counts.passed++;
    } catch (e) {
      if (e?.code === 'BAD_ARGUMENT' && typeof e.message === 'string' && e.message) counts.refused++;
      else failure = `${e?.name}: ${e?.message}`;
    }
    const ms = performance.now() - started;
    counts.slowest_ms = Math.max(counts.slowest_ms, ms);
    if (!failure && ms > 2000) failure = `took ${Math.round(ms)} ms`;
    if (failure) {
      const dir = path.join(root, 'fuzz/artifacts/archive');
      mkdirSync(dir, { recursive: true });
      const file = path.join(dir, `crash-${createHash('sha256').update(input).digest('hex').slice(0, 16)}`);
      writeFileSync(file, input);
      throw new Error(`seed ${seed}, execution ${i}: ${failure} (input: ${path.relative(root, file)})`);
    }
    counts.executions++;
    if (i % 100000 === 99999) progress(counts);
  }
  return counts;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const executions = Number(process.argv[2] ?? 1000000);
  const seed = Number(process.argv[3] ?? Date.now() % 2 ** 32);
  console.log(`## archive (${executions} executions, seed ${seed})`);
  const started = performance.now();
  const counts = await fuzzArchive({ executions, seed, progress: (c) => console.log(`  ${c.executions} executions`) });
  const s = (performance.now() - started) / 1000;
  console.log(`stat::number_of_executed_units: ${counts.executions}; passed ${counts.passed}, refused ${counts.refused}; slowest ${counts.slowest_ms.toFixed(1)} ms; ${s.toFixed(0)} s; new findings: 0`);
}
