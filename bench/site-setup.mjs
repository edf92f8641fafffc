// Shared set-up of the static-site benchmarks (bench/pagefind.mjs, bench/pagefind-session.mjs):
// two copies of a built site, one indexed by `sextant build --site`, one by Pagefind (the binary
// from bench/node_modules, `npm install` in bench/), each with a page holding its drop-in UI.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync, readdirSync, statSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Each engine's UI page (written by prepareSites), search input and folder of search files. */
export const ENGINES = {
  sextant: { page: '/sextant-bench.html', input: '.sextant-input', folder: 'sextant' },
  // The same site and index, its box with data-embed-url (the page is written per session, with
  // the endpoint's URL: bench/pagefind-session.mjs).
  'sextant-embed': { page: '/sextant-embed-bench.html', input: '.sextant-input', folder: 'sextant' },
  pagefind: { page: '/pagefind-bench.html', input: '.pagefind-ui__search-input', folder: 'pagefind' },
};

const SEXTANT_PAGE = '<!doctype html><meta charset="utf-8"><title>bench</title><link rel="icon" href="data:,"><div id="search"></div><script type="module" src="/sextant/sextant-ui.js"></script>';
const PAGEFIND_PAGE = '<!doctype html><meta charset="utf-8"><title>bench</title><link rel="icon" href="data:,"><link href="/pagefind/pagefind-ui.css" rel="stylesheet"><script src="/pagefind/pagefind-ui.js"></script><div id="search"></div><script>window.addEventListener("DOMContentLoaded", () => new PagefindUI({ element: "#search", showSubResults: true }));</script>';

/** Total bytes and file count of a folder (recursively) plus extra files or folders. */
export function du(dir, extra = []) {
  let bytes = 0;
  let files = 0;
  const walk = (p) => {
    const st = statSync(p);
    if (st.isDirectory()) for (const f of readdirSync(p)) walk(path.join(p, f));
    else {
      bytes += st.size;
      files += 1;
    }
  };
  walk(dir);
  for (const f of extra) walk(f);
  return { bytes, files };
}

export function timed(fn) {
  const t = performance.now();
  const out = fn();
  return { out, seconds: (performance.now() - t) / 1000 };
}

/**
 * Copies the built site `dir` twice into a temporary folder (without any earlier sextant files),
 * indexes one copy with sextant and the other with Pagefind, and writes each engine's UI page.
 * Returns both site folders, the indexing summaries and times, the index sizes and `cleanup()`.
 */
/** The sextant UI page with its box's `attributes`. */
export const sextantPage = (attributes) => SEXTANT_PAGE.replace('<div id="search">', `<div id="search" ${attributes}>`);

export function prepareSites(name, dir, sextantBin) {
  const base = mkdtempSync(path.join(tmpdir(), `bench-${name}-`));
  const sx = path.join(base, 'sextant-site');
  const pf = path.join(base, 'pagefind-site');
  cpSync(dir, sx, { recursive: true, dereference: true });
  rmSync(path.join(sx, 'sextant'), { recursive: true, force: true });
  rmSync(path.join(sx, 'sextant-sw.js'), { force: true });
  cpSync(sx, pf, { recursive: true });
  const files = du(sx).files;
  const sxBuild = timed(() => execFileSync(sextantBin, ['build', '--site', sx, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const pfBuild = timed(() => execFileSync(path.join(here, 'node_modules/.bin/pagefind'), ['--site', pf], { encoding: 'utf8' }));
  writeFileSync(path.join(sx, ENGINES.sextant.page), SEXTANT_PAGE);
  writeFileSync(path.join(pf, ENGINES.pagefind.page), PAGEFIND_PAGE);
  return {
    name,
    files,
    'sextant-embed': { site: sx },
    sextant: { site: sx, summary: JSON.parse(sxBuild.out), seconds: sxBuild.seconds, size: du(path.join(sx, 'sextant'), [path.join(sx, 'sextant-sw.js')]) },
    pagefind: { site: pf, pages: Number(pfBuild.out.match(/Indexed (\d+) pages?/)?.[1] ?? NaN), seconds: pfBuild.seconds, size: du(path.join(pf, 'pagefind')) },
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
}
