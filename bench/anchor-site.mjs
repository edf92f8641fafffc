// The static site the Chromium benchmarks serve: bench/browser/ as /page, the built package as
// /pkg, the model as /model, and Transformers.js (the anchor) with onnxruntime-web and the same
// model.onnx in Transformers.js's layout under /hf/minilm. Local files only.
import { rmSync } from 'node:fs';
import { mkdtemp, mkdir, symlink, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** A temporary folder laid out as above, removed when the process exits; `links` adds more
 *  `{name: target}` symlinks. */
export async function anchorSite(pkgDir, modelDir, links = {}) {
  const site = await mkdtemp(path.join(tmpdir(), 'sextant-bench-'));
  process.on('exit', () => rmSync(site, { recursive: true, force: true }));
  const link = async (target, name) => {
    await mkdir(path.dirname(path.join(site, name)), { recursive: true });
    await symlink(path.resolve(target), path.join(site, name));
  };
  await link(path.join(here, 'browser'), 'page');
  await link(pkgDir, 'pkg');
  await link(modelDir, 'model');
  await link(path.join(here, 'node_modules/@huggingface/transformers/dist'), 'tfjs');
  await link(path.join(here, 'node_modules/onnxruntime-web/dist'), 'ort');
  for (const [name, target] of Object.entries(links)) await link(target, name);
  const hf = path.join(site, 'hf/minilm');
  await mkdir(path.join(hf, 'onnx'), { recursive: true });
  for (const f of ['config.json', 'tokenizer_config.json', 'tokenizer.json']) await copyFile(path.join(modelDir, f), path.join(hf, f));
  await link(path.join(modelDir, 'model.onnx'), 'hf/minilm/onnx/model.onnx');
  return site;
}
