// TEMPORARY bridge, until `sextant build --site` copies the split package (cli/src/commands/
// site.rs PACKAGE_FILES): the package files the browser imports (browser.js, keyword.js and
// ui/search-worker.js, followed through their relative imports) that a site build left out are
// copied into its `sextant/pkg.<hash>/` and listed in sextant.json's `files`, as that build would
// have. Once the CLI copies them all, this does nothing; then delete it and its two callers
// (scripts/site.sh, tests/js/harness.mjs buildDemoSite).
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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

/** Copies the package files a site build left out; returns their names. */
export function completeSitePackage(site, pkg = process.env.SEXTANT_PACKAGE_DIR ?? path.join(here, '../../pkg')) {
  const manifestPath = path.join(site, 'sextant/sextant.json');
  const entry = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const added = [];
  for (const file of packageGraph(pkg)) {
    const target = path.join(site, 'sextant', entry.package, file);
    if (existsSync(target)) continue;
    mkdirSync(path.dirname(target), { recursive: true });
    copyFileSync(path.join(pkg, file), target);
    added.push(`${entry.package}${file}`);
  }
  if (added.length && Array.isArray(entry.files)) {
    entry.files = [...new Set([...entry.files, ...added])].sort();
    writeFileSync(manifestPath, JSON.stringify(entry));
  }
  return added;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const added = completeSitePackage(process.argv[2]);
  if (added.length) console.error(`site-package: copied ${added.join(', ')} (the CLI's PACKAGE_FILES lacks them)`);
}
