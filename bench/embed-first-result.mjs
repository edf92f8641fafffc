// Time to the first hybrid result from page load, with the model in the page against a Worker's
// /embed (data-embed-url), on loopback: the demo site served by the Worker in workerd, a cold
// Chromium (fresh profile) per round, the query typed as soon as the page has loaded. Bytes are
// what the page fetched until then, counted as gzip (level 6) of each body, as a host serving
// gzip would send them (workerd's local assets are not compressed).
//
//   node bench/embed-first-result.mjs [rounds]     (after make wasm and scripts/worker-build.sh)
import { gzipSync } from 'node:zlib';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildDemoSite } from '../tests/js/harness.mjs';
import { startWorkerd } from '../tests/js/workerd.mjs';
import { launch } from '../tests/js/browser.mjs';

const rounds = Number(process.argv[2] ?? 3);
const QUERY = 'what stops prompt injection';

const site = buildDemoSite('sextant-embed-bench-');
const page = readFileSync(path.join(site, 'getting-started/index.html'), 'utf8');
mkdirSync(path.join(site, 'remote'), { recursive: true });
writeFileSync(path.join(site, 'remote/index.html'), page.replace('<div id="search"', '<div id="search" data-embed-url="/embed"'));
const worker = await startWorkerd({ assetsDir: site, name: 'embed-bench' });

const kind = (p) => (/\/sextant\/model\/rows\./.test(p) ? 'model rows' : /\.onnx$|tokenizer\./.test(p) ? 'model' : /\.wasm$/.test(p) ? 'wasm' : /\/sextant\/index\//.test(p) ? 'index' : p === '/embed' ? 'embed' : 'page and code');

async function round(pathname) {
  const context = await launch();
  const tab = await context.newPage();
  const bytes = {};
  const pending = [];
  // Every request (the page's and its workers'), each body counted once: a static file from the
  // site folder (Playwright does not hand over the bodies of large worker fetches), a byte range
  // and /embed as sent.
  tab.on('response', (response) => {
    const pathname = new URL(response.url()).pathname;
    const file = path.join(site, decodeURIComponent(pathname).replace(/\/$/, '/index.html'));
    const whole = response.status() === 200 && existsSync(file) && statSync(file).isFile();
    const body = whole ? Promise.resolve(readFileSync(file)) : response.body(); // a range (206) as sent
    pending.push(
      body
        .then((b) => {
          bytes[kind(pathname)] = (bytes[kind(pathname)] ?? 0) + gzipSync(b, { level: 6 }).length;
        })
        .catch(() => {}),
    );
  });
  const started = Date.now();
  await tab.goto(`${worker.base}${pathname}`, { waitUntil: 'load' });
  await tab.locator('.sextant-input').fill(QUERY);
  const seen = await tab.evaluate(
    (q) =>
      new Promise((resolve) => {
        const at = {};
        const check = () => {
          const list = document.querySelector('.sextant-results');
          if (list.dataset.query === q && document.querySelector('.sextant-page')) {
            at.first ??= performance.now();
            if (list.dataset.mode === 'hybrid') {
              at.hybrid = performance.now();
              resolve(at);
              return;
            }
          }
          setTimeout(check, 10);
        };
        check();
      }),
    QUERY,
  );
  const navigationStart = await tab.evaluate(() => performance.timeOrigin);
  await Promise.all(pending.splice(0));
  await context.close();
  return { first: seen.first, hybrid: seen.hybrid, bytes, wall: Date.now() - started, navigationStart };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];
for (const [name, pathname] of [['model in the page', '/getting-started/'], ['/embed (data-embed-url)', '/remote/']]) {
  const results = [];
  for (let i = 0; i < rounds; i++) results.push(await round(pathname));
  const kinds = [...new Set(results.flatMap((r) => Object.keys(r.bytes)))].sort();
  const total = (r) => Object.values(r.bytes).reduce((a, b) => a + b, 0);
  rows.push({
    name,
    first: median(results.map((r) => r.first)),
    hybrid: median(results.map((r) => r.hybrid)),
    rounds: results.map((r) => Math.round(r.hybrid)),
    bytes: Object.fromEntries(kinds.map((k) => [k, median(results.map((r) => r.bytes[k] ?? 0))])),
    total: median(results.map(total)),
  });
}
worker.stop();
const kB = (n) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} MB` : `${(n / 1e3).toFixed(1)} kB`);
console.log(`${rounds} rounds each, query "${QUERY}" typed at load; medians (hybrid ms per round in brackets)`);
console.log('| page | first result | first hybrid result | bytes (gzip) until then | by kind |');
console.log('|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.name} | ${Math.round(r.first)} ms | ${Math.round(r.hybrid)} ms (${r.rounds.join(', ')}) | ${kB(r.total)} | ${Object.entries(r.bytes).map(([k, n]) => `${k} ${kB(n)}`).join(', ')} |`);
}
