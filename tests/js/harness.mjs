// Shared by the JS test suites: the *built* package (pkg/, packed with `npm pack` and installed
// into a scratch project, as a user would), fixture paths and the model files.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, writeFileSync, readdirSync, copyFileSync, existsSync } from 'node:fs';
import { tmpdir, homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { missingSitePackage } from './site-package.mjs';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const fixtures = path.join(root, 'tests/fixtures');
export const modelDir = process.env.SEXTANT_MODEL_DIR ?? path.join(homedir(), '.cache/sextant/models/minilm-l6-v2-int8');
export const sextantBin = process.env.SEXTANT_BIN ?? path.join(process.env.CARGO_TARGET_DIR ?? path.join(homedir(), '.cache/sextant/target'), 'debug/sextant');

let project;

/** A scratch npm project with the packed package installed; returns its directory. */
export function consumerProject() {
  if (project) return project;
  const pkg = path.join(root, 'pkg');
  if (!existsSync(path.join(pkg, 'package.json'))) {
    throw new Error('pkg/ is not built; run `make wasm` first');
  }
  project = mkdtempSync(path.join(tmpdir(), 'sextant-consumer-'));
  const packDir = path.join(project, 'pack');
  mkdirSync(packDir);
  execFileSync('npm', ['pack', pkg, '--pack-destination', packDir, '--silent'], { stdio: 'pipe' });
  const tarball = readdirSync(packDir).find((f) => f.endsWith('.tgz'));
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', path.join(packDir, tarball)], {
    cwd: project,
    stdio: 'pipe',
  });
  writeFileSync(path.join(project, 'api.mjs'), "export * from 'sextant-search';\n");
  return project;
}

/** The package as a consumer imports it (`import … from 'sextant-search'`, node condition). */
export async function importPackage() {
  return import(pathToFileURL(path.join(consumerProject(), 'api.mjs')).href);
}

/** Copies the files a README example expects (docs.sxt, model.onnx, tokenizer.json) into dir. */
export function exampleFiles(dir) {
  copyFileSync(path.join(fixtures, 'golden-v2.sxt'), path.join(dir, 'docs.sxt'));
  copyFileSync(path.join(modelDir, 'model.onnx'), path.join(dir, 'model.onnx'));
  copyFileSync(path.join(modelDir, 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
}

/** The fenced code block that follows `<!-- tested: NAME -->` in a Markdown file. */
export function taggedBlock(markdown, name) {
  const at = markdown.indexOf(`<!-- tested: ${name} -->`);
  if (at < 0) throw new Error(`no <!-- tested: ${name} --> block`);
  const match = markdown.slice(at).match(/```[a-z]*\n([\s\S]*?)```/);
  if (!match) throw new Error(`no code block after <!-- tested: ${name} -->`);
  return match[1];
}

/** Awaits a promise (or calls a function) that must fail with a SextantError of `code`; returns it. */
export async function expectCode(promiseOrFn, code) {
  let error;
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected an error with code ${code}`);
  assert.ok(error instanceof Error, `not an Error: ${error}`);
  assert.equal(error.code, code, `${error.code}: ${error.message}`);
  return error;
}

/** The demo site (www/build-site.mjs) built into a new temporary folder, with `extra` (a folder)
 * copied over it, indexed by `sextant build --site`; returns the folder. */
export function buildDemoSite(prefix, extra) {
  const site = mkdtempSync(path.join(tmpdir(), prefix));
  execFileSync(process.execPath, [path.join(root, 'www/build-site.mjs'), site], { stdio: 'pipe' });
  if (extra) cpSync(extra, site, { recursive: true });
  execFileSync(sextantBin, ['build', '--site', site], { stdio: 'pipe', env: { ...process.env, SEXTANT_MODEL_DIR: modelDir } });
  const missing = missingSitePackage(site);
  if (missing.length) throw new Error(`the site build left out package files the browser imports: ${missing.join(', ')}`);
  return site;
}
