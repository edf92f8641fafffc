// Where a first query's time goes: a built site's sextant page in a cold Chromium (fresh
// profile), gzip-served, on loopback or the phone link; the visitor clicks the box and types one
// query at once, and every request the server saw until the results showed is listed with the
// moment it arrived and was answered, counted from the click. No numbers for BENCHMARKS.md
// (bench/pagefind-session.mjs measures sessions); this says which request waits on which.
// node bench/first-query-trace.mjs <site built by sextant build --site> [query] [phone|loopback]
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startStaticServer } from '../tests/js/static-server.mjs';
import { launch, watchedPage } from '../tests/js/browser.mjs';
import { PHONE, sextantPage, throttleWorkers } from './site-setup.mjs';

const [site, query = 'read a file line by line', link = 'phone'] = process.argv.slice(2);
if (!site) {
  console.error('usage: node bench/first-query-trace.mjs <site> [query] [phone|loopback]');
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
  const first = server.log.length;
  const clicked = performance.now();
  await page.locator('.sextant-input').click();
  await page.keyboard.type(query);
  await page.waitForFunction((q) => document.querySelector('.sextant-results')?.dataset.query === q && document.querySelectorAll('.sextant-page').length > 0, query, { polling: 10, timeout: 120_000 });
  const shown = performance.now();
  console.log(`page load ${Math.round(loaded - t0)} ms (${first} requests); first results ${Math.round(shown - clicked)} ms after the click`);
  for (const e of server.log.slice(0, first)) console.log(`  load  ${String(Math.round(e.at - t0)).padStart(6)} ms  ${String(e.bytes ?? '-').padStart(9)} B  ${e.path}`);
  for (const e of server.log.slice(first)) {
    if (e.at > shown) break;
    console.log(`  query ${String(Math.round(e.at - clicked)).padStart(6)} ms  ${String(e.bytes ?? '-').padStart(9)} B  ${e.path}${e.range ? ` ${e.range}` : ''}`);
  }
  if (page.errors.length) console.log(page.errors.join('\n'));
} finally {
  await context.close();
  await server.close();
}
