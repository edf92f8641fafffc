// Static assets laid out as `sextant build --site` lays them out (a folder with sextant.json, the
// split index, the model and the tokenizer), around packed indexes the native CLI built: what the
// Worker serves in the tests and the benchmark.
import { mkdtempSync, mkdirSync, copyFileSync, writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { modelDir, sextantBin } from './harness.mjs';

const hash = (file) => createHash('sha256').update(readFileSync(file)).digest('hex').slice(0, 16);

/** Unpacks `sxt` into `<dir>/<folder>/index` and writes its sextant.json, model and tokenizer. */
export function addBase(dir, folder, sxt, pages) {
  const at = path.join(dir, folder);
  mkdirSync(at, { recursive: true });
  execFileSync(sextantBin, ['unpack', sxt, '-o', path.join(at, 'index')], { stdio: 'pipe' });
  const index = readdirSync(path.join(at, 'index')).find((f) => f.startsWith('manifest.'));
  const manifest = { version: 2, generator: 'sextant tests', pages, chunks: 0, bytes: {}, index: `index/${index}` };
  for (const [key, file, stem, ext] of [
    ['model', path.join(modelDir, 'model.onnx'), 'model', 'onnx'],
    ['tokenizer', path.join(modelDir, 'tokenizer.json'), 'tokenizer', 'json'],
  ]) {
    const name = `${stem}.${hash(file)}.${ext}`;
    copyFileSync(file, path.join(at, name));
    manifest[key] = name;
  }
  writeFileSync(path.join(at, 'sextant.json'), JSON.stringify(manifest));
  return at;
}

/** A new assets folder with the Cranfield index (built for the parity tests) in sextant/. */
export function cranfieldAssets(parityDir) {
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-worker-assets-'));
  addBase(dir, 'sextant', path.join(parityDir, 'cranfield.sxt'), 1400);
  return dir;
}
