// sextant against Pagefind on the same built sites, in one run: index size on disk and file
// count, indexing time, and in headless Chromium (cold cache, fresh profile) the bytes
// transferred and the time to the first result for a first query, then for a later query.
// node bench/pagefind.mjs <sextant binary> <name>=<site dir> …
import { startStaticServer } from '../tests/js/static-server.mjs';
import { launch, watchedPage } from '../tests/js/browser.mjs';
import { ENGINES, prepareSites } from './site-setup.mjs';

const [sextantBin, ...siteArgs] = process.argv.slice(2);
const QUERIES = {
  demo: ['how do I stop prompt injection', 'bundle file checksums'],
  python: ['how do I read a file line by line', 'sort a list of dictionaries by a key'],
};

async function measure(site, engine, queries) {
  const server = await startStaticServer(site);
  const context = await launch();
  try {
    const page = await watchedPage(context);
    await page.goto(server.url + ENGINES[engine].page);
    const { input } = ENGINES[engine];
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
  const sites = prepareSites(name, dir, sextantBin);
  const sxRun = await measure(sites.sextant.site, 'sextant', QUERIES[name] ?? QUERIES.demo);
  const pfRun = await measure(sites.pagefind.site, 'pagefind', QUERIES[name] ?? QUERIES.demo);
  rows.push({
    site: name,
    files_in_site: sites.files,
    sextant: { pages: sites.sextant.summary.pages_indexed, skipped: sites.sextant.summary.pages_skipped.length, chunks: sites.sextant.summary.chunks, index_seconds: sites.sextant.seconds, bytes: sites.sextant.size.bytes, files: sites.sextant.size.files, ...sxRun },
    pagefind: { pages: sites.pagefind.pages, index_seconds: sites.pagefind.seconds, bytes: sites.pagefind.size.bytes, files: sites.pagefind.size.files, ...pfRun },
  });
  sites.cleanup();
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
