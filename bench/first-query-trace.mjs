// Where a query's time goes: a built site's sextant page in a cold Chromium (fresh profile),
// gzip-served, on loopback or the phone link; the visitor clicks the box and types each query at
// once (a pause after each), and every request the server saw until its results showed is listed
// with the moment it arrived, counted from the first key, then the UI's `search` events. No
// numbers for BENCHMARKS.md (bench/pagefind-session.mjs measures sessions): which request waits on which.
// node bench/first-query-trace.mjs <site built by sextant build --site> [query|query…] [phone|loopback] [pause ms]
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startStaticServer } from '../tests/js/static-server.mjs';
import { launch, watchedPage } from '../tests/js/browser.mjs';
import { PHONE, sextantPage, throttleWorkers } from './site-setup.mjs';

const [site, queryList = 'read a file line by line', link = 'phone', pauseArg = '1000'] = process.argv.slice(2);
const queries = queryList.split('|');
const pause = Number(pauseArg);
if (!site) {
  console.error('usage: node bench/first-query-trace.mjs <site> [query|query…] [phone|loopback] [pause ms]');
  process.exit(2);
}
writeFileSync(path.join(site, 'trace.html'), sextantPage(''));
const server = await startStaticServer(site, { gzip: true });
const context = await launch();
try {
  // As bench/pagefind-session.mjs does: the service worker fetches on the page's behalf, throttled too.
  if (link === 'phone') await throttleWorkers(context, PHONE);
  const page = await watchedPage(context);
  if (link === 'phone') await (await context.newCDPSession(page)).send('Network.emulateNetworkConditions', PHONE);
  const t0 = performance.now();
  await page.goto(`${server.url}/trace.html`);
  await page.waitForSelector('.sextant-input');
  const loaded = performance.now();
  console.log(`page load ${Math.round(loaded - t0)} ms`);
  for (const e of server.log) console.log(`  load  ${String(Math.round(e.at - t0)).padStart(6)} ms  ${String(e.bytes ?? '-').padStart(9)} B  ${e.path}`);
  // The UI's own account of each search (its `search` event: mode, ms from the debounced start).
  await page.evaluate(() => {
    window.traceEvents = [];
    document.addEventListener('search', (e) => window.traceEvents.push({ at: performance.now(), ...e.detail }));
  });
  for (const [i, query] of queries.entries()) {
    const first = server.log.length;
    const clicked = performance.now();
    const pageClicked = await page.evaluate(() => performance.now());
    if (i === 0) await page.locator('.sextant-input').click();
    else await page.locator('.sextant-input').selectText();
    await page.keyboard.type(query);
    const typed = performance.now();
    await page.waitForFunction((q) => document.querySelector('.sextant-results')?.dataset.query === q && document.querySelectorAll('.sextant-page').length > 0, query, { polling: 10, timeout: 120_000 });
    const shown = performance.now();
    console.log(`"${query}": typed in ${Math.round(typed - clicked)} ms, first results ${Math.round(shown - clicked)} ms after the first key`);
    for (const e of server.log.slice(first)) {
      if (e.at > shown) break;
      console.log(`  query ${String(Math.round(e.at - clicked)).padStart(6)} ms  ${String(e.bytes ?? '-').padStart(9)} B  ${e.path}${e.range ? ` ${e.range}` : ''}`);
    }
    await page.waitForTimeout(pause);
    const events = await page.evaluate(() => window.traceEvents.splice(0));
    for (const e of events) console.log(`  search event ${String(Math.round(e.at - pageClicked)).padStart(6)} ms  "${e.query}" ${e.mode} ${e.ms} ms`);
  }
  if (page.errors.length) console.log(page.errors.join('\n'));
} finally {
  await context.close();
  await server.close();
}
