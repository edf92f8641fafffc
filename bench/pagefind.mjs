// sextant against Pagefind on the same built sites, in one run: index size on disk and file
// count, indexing time, and in headless Chromium (cold cache, fresh profile) the bytes
// transferred and the time to the first result for a first query, then for a later query.
// node bench/pagefind.mjs <sextant binary> <name>=<site dir> …
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync, readdirSync, statSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStaticServer } from '../tests/js/static-server.mjs';
import { launch, watchedPage } from '../tests/js/browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const [sextantBin, ...siteArgs] = process.argv.slice(2);
const QUERIES = {
  demo: ['how do I stop prompt injection', 'bundle file checksums'],
  python: ['how do I read a file line by line', 'sort a list of dictionaries by a key'],
};

function du(dir, extra = []) {
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

function timed(fn) {
  const t = performance.now();
  const out = fn();
  return { out, seconds: (performance.now() - t) / 1000 };
}

async function measure(site, engine, queries) {
  const server = await startStaticServer(site);
  const context = await launch();
  try {
    const page = await watchedPage(context);
    const page_path = engine === 'sextant' ? '/sextant-bench.html' : '/pagefind-bench.html';
    await page.goto(server.url + page_path);
    const input = engine === 'sextant' ? '.sextant-input' : '.pagefind-ui__search-input';
    await page.waitForSelector(input);
    const results = [];
    for (const query of queries) {
      const before = server.log.reduce((n, e) => n + (e.bytes ?? 0), 0);
      const t0 = Date.now();
      await page.locator(input).fill(query);
      if (engine === 'sextant') {
        await page.waitForFunction((q) => document.querySelector('.sextant-results').dataset.query === q && document.querySelector('.sextant-page'), query, { timeout: 600000 });
      } else {
        await page.waitForSelector('.pagefind-ui__result', { timeout: 60000 });
      }
      const ms = Date.now() - t0;
      // Page load bytes count toward the first query (a cold visit).
      const after = server.log.reduce((n, e) => n + (e.bytes ?? 0), 0);
      results.push({ query, ms, bytes: results.length === 0 ? after : after - before });
      if (engine === 'pagefind') await page.locator(input).fill('');
    }
    return { results, errors: page.errors };
  } finally {
    await context.close();
    await server.close();
  }
}

const rows = [];
for (const arg of siteArgs) {
  const [name, dir] = arg.split('=');
  const base = mkdtempSync(path.join(tmpdir(), `bench-${name}-`));
  const sx = path.join(base, 'sextant-site');
  const pf = path.join(base, 'pagefind-site');
  cpSync(dir, sx, { recursive: true, dereference: true });
  rmSync(path.join(sx, 'sextant'), { recursive: true, force: true });
  rmSync(path.join(sx, 'sextant-sw.js'), { force: true });
  cpSync(sx, pf, { recursive: true });
  const pages = du(sx).files;
  const sxBuild = timed(() => execFileSync(sextantBin, ['build', '--site', sx, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const sxSummary = JSON.parse(sxBuild.out);
  const pfBuild = timed(() => execFileSync(path.join(here, 'node_modules/.bin/pagefind'), ['--site', pf], { encoding: 'utf8' }));
  const pfPages = Number(pfBuild.out.match(/Indexed (\d+) pages?/)?.[1] ?? NaN);
  writeFileSync(path.join(sx, 'sextant-bench.html'), '<!doctype html><meta charset="utf-8"><title>bench</title><link rel="icon" href="data:,"><div id="search"></div><script type="module" src="/sextant/sextant-ui.js"></script>');
  writeFileSync(path.join(pf, 'pagefind-bench.html'), '<!doctype html><meta charset="utf-8"><title>bench</title><link rel="icon" href="data:,"><link href="/pagefind/pagefind-ui.css" rel="stylesheet"><script src="/pagefind/pagefind-ui.js"></script><div id="search"></div><script>window.addEventListener("DOMContentLoaded", () => new PagefindUI({ element: "#search", showSubResults: true }));</script>');
  const sxSize = du(path.join(sx, 'sextant'), [path.join(sx, 'sextant-sw.js')]);
  const pfSize = du(path.join(pf, 'pagefind'));
  const sxRun = await measure(sx, 'sextant', QUERIES[name] ?? QUERIES.demo);
  const pfRun = await measure(pf, 'pagefind', QUERIES[name] ?? QUERIES.demo);
  rows.push({
    site: name,
    files_in_site: pages,
    sextant: { pages: sxSummary.pages_indexed, skipped: sxSummary.pages_skipped.length, chunks: sxSummary.chunks, index_seconds: sxBuild.seconds, bytes: sxSize.bytes, files: sxSize.files, ...sxRun },
    pagefind: { pages: pfPages, index_seconds: pfBuild.seconds, bytes: pfSize.bytes, files: pfSize.files, ...pfRun },
  });
  rmSync(base, { recursive: true, force: true });
}
console.log(JSON.stringify(rows, null, 1));
const mb = (b) => (b / 1e6).toFixed(2);
console.log('| site | engine | pages | index time s | index on disk MB | files | first query: bytes MB / ms | later query: bytes MB / ms |');
console.log('|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  for (const e of ['sextant', 'pagefind']) {
    const x = r[e];
    console.log(`| ${r.site} | ${e} | ${x.pages} | ${x.index_seconds.toFixed(1)} | ${mb(x.bytes)} | ${x.files} | ${mb(x.results[0].bytes)} / ${x.results[0].ms} | ${mb(x.results[1].bytes)} / ${x.results[1].ms} |`);
  }
}
