// What a site needs of the package: the files the browser imports (browser.js, keyword.js and
// ui/search-worker.js, followed through their relative imports). `missingSitePackage(site)` lists
// those a `sextant build --site` left out of its `sextant/pkg.<hash>/` or of sextant.json's
// `files` (the CLI's PACKAGE_FILES must name them all); the site tests fail on any.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ENTRIES = ['browser.js', 'keyword.js', 'ui/search-worker.js'];

/** Every package file `entries` import, transitively (relative `.js` imports), as package paths. */
export function packageGraph(pkg, entries = ENTRIES) {
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(path.join(pkg, file), 'utf8');
    for (const [, spec] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+\.js)['"]/g)) {
      visit(path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)));
    }
  };
  for (const entry of entries) visit(entry);
  return [...seen].sort();
}

/** The package files the browser imports that a site build left out, as `pkg.<hash>/file`. */
export function missingSitePackage(site, pkg = process.env.SEXTANT_PACKAGE_DIR ?? path.join(here, '../../pkg')) {
  const entry = JSON.parse(readFileSync(path.join(site, 'sextant/sextant.json'), 'utf8'));
  const listed = new Set(entry.files ?? []);
  return packageGraph(pkg)
    .map((file) => `${entry.package}${file}`)
    .filter((name) => !existsSync(path.join(site, 'sextant', name)) || !listed.has(name));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const missing = missingSitePackage(process.argv[2]);
  if (missing.length) {
    console.error(`error: the site build left out package files the browser imports: ${missing.join(', ')} (add them to PACKAGE_FILES in cli/src/commands/site.rs)`);
    process.exit(1);
  }
}

/**
 * A request path that is part of the model a site's search box loads for meaning search (`build
 * --site`'s files: the whole model, its body, the encoder file, the word table's row files, the
 * tokenizer) or of the engines that run it (the full and the encoder wasm).
 */
export const MODEL_REQUEST = /\/model\/|\/model\.[0-9a-f]+\.onnx$|\/tokenizer\.[0-9a-f]+\.json$|\/sextant_(wasm|encoder)_bg\.wasm$/;
