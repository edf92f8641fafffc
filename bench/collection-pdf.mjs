// The research workspace (the demo site's /research/) in headless Chromium with a fresh profile:
// the time from dropping a 100-page PDF (Cranfield abstracts, about 450 words a page) on the
// page to its first keyword result, and to hybrid results once every chunk is embedded.
// node bench/collection-pdf.mjs <corpus.jsonl> [pages] [rounds]
import { readFile } from 'node:fs/promises';
import { openWorkspaceSite, pdfOf } from '../tests/js/documents.mjs';

const [corpusPath, pagesArg, roundsArg] = process.argv.slice(2);
const pages = Number(pagesArg ?? 100);
const docs = (await readFile(corpusPath, 'utf8')).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
// Each page: three abstracts, wrapped at 90 characters (pdf.js reads the lines back in order).
const wrap = (text) => text.replace(/\s+/g, ' ').match(/.{1,90}(\s|$)/g).map((l) => l.trim());
const pageTexts = Array.from({ length: pages }, (_, p) => docs.slice(3 * p, 3 * p + 3).flatMap((d) => wrap(`${d.title}. ${d.text}`)).join('\n'));
const pdf = pdfOf(pageTexts);
// A query whose words are on page 50 (its first abstract's title).
const query = docs[3 * 49].title;
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor((v.length - 1) / 2)];

const workspace = await openWorkspaceSite('sextant-bench-pdf-');
const rounds = [];
try {
  for (let r = 0; r < Number(roundsArg ?? 3); r++) {
    const page = await workspace.context.newPage();
    await page.goto(`${workspace.server.url}/research/`);
    await page.waitForFunction(() => document.querySelector('#status').textContent.startsWith('Opened'), null, { timeout: 120000 });
    await page.locator('#new-name').fill(`pdf ${r}`);
    await page.locator('#new-collection button').click();
    await page.waitForFunction((n) => document.querySelector('#status').textContent === `Opened ${n}.`, `pdf ${r}`, { timeout: 120000 });
    await page.locator('#query').fill(query);
    const t0 = Date.now();
    await page.locator('#pick').setInputFiles([{ name: 'cranfield.pdf', mimeType: 'application/pdf', buffer: pdf }]);
    await page.waitForFunction(() => document.querySelector('#results').dataset.mode === 'keyword' && document.querySelector('#results').children.length > 0, null, { timeout: 600000, polling: 10 });
    const keyword = Date.now() - t0;
    const where = await page.locator('#results li .where').first().textContent();
    await page.waitForFunction(() => document.querySelector('#progress-text').textContent === 'every chunk embedded', null, { timeout: 600000, polling: 50 });
    const embedded = Date.now() - t0;
    // The search runs again with the full engine: the first hybrid result.
    await page.locator('#query').fill(`${query} `);
    await page.waitForFunction(() => document.querySelector('#results').dataset.mode === 'hybrid' && document.querySelector('#results').children.length > 0, null, { timeout: 600000, polling: 10 });
    const hybrid = Date.now() - t0;
    const chunks = await page.evaluate(() => Number(document.querySelector('#progress').max));
    rounds.push({ keyword_ms: keyword, embedded_ms: embedded, hybrid_ms: hybrid, chunks, first_keyword_hit: where });
    await page.close();
  }
  console.log(JSON.stringify({
    browser: workspace.context.browser()?.version(),
    pdf_bytes: pdf.length,
    pages,
    query,
    first_keyword_result_ms_p50: median(rounds.map((x) => x.keyword_ms)),
    full_hybrid_ms_p50: median(rounds.map((x) => x.hybrid_ms)),
    rounds,
  }));
} finally {
  await workspace.close();
}
