// Typo recall on a documentation site, sextant against Pagefind: the share of queries whose top 5
// pages hold a page judged relevant, for the queries as written and with one typo each (one word of
// five or more letters given one random edit: scripts/typo-queries.py, its seed printed). Both
// engines index the same copy of the site (bench/site-setup.mjs); sextant searches in Node with
// the package (keyword, and hybrid with the model), Pagefind in headless Chromium with its own JS
// API (`pagefind.search`), as its UI does. Judgements are by page.
//
//   node bench/typo-recall.mjs <sextant CLI> <site dir> <collection dir with queries.jsonl, qrels.tsv> [seed]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prepareSites } from './site-setup.mjs';
import { startStaticServer } from '../tests/js/static-server.mjs';
import { launch } from '../tests/js/browser.mjs';

const [sextantBin, siteDir, collection, seedArg] = process.argv.slice(2);
if (!sextantBin || !siteDir || !collection) {
  console.error('usage: node bench/typo-recall.mjs <sextant CLI> <site dir> <collection dir> [seed]');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const seed = seedArg ?? '7';
const typoDir = mkdtempSync(path.join(tmpdir(), 'typo-'));
execFileSync('python3', [path.join(here, '../scripts/typo-queries.py'), collection, typoDir, seed], { stdio: ['ignore', 'ignore', 'inherit'] });
const read = (file) => readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const clean = read(path.join(collection, 'queries.jsonl'));
const typos = new Map(read(path.join(typoDir, 'queries.jsonl')).map((q) => [q._id, q.text]));
const relevant = new Map();
for (const line of readFileSync(path.join(collection, 'qrels.tsv'), 'utf8').split('\n').slice(1)) {
  const [q, doc, score] = line.split('\t');
  if (q && Number(score) > 0) relevant.set(q, (relevant.get(q) ?? new Set()).add(doc));
}
const queries = clean.filter((q) => relevant.has(q._id)).map((q) => ({ id: q._id, clean: q.text, typo: typos.get(q._id) }));
const changed = queries.filter((q) => q.typo !== q.clean).length;

/** A result URL as a corpus id: the page path relative to the site, `a/` as `a/index.html`. */
const pageOf = (url) => {
  let p = decodeURIComponent(new URL(url, 'http://site/').pathname).replace(/^\/+/, '');
  if (p === '' || p.endsWith('/')) p += 'index.html';
  return p;
};
const top5 = (urls) => [...new Set(urls.map(pageOf))].slice(0, 5);
const hit = (q, pages) => pages.some((p) => relevant.get(q.id).has(p));

const sites = prepareSites('typo', siteDir, sextantBin);
const results = {};
try {
  // sextant, in Node, as the drop-in UI asks (pages fused, three sections each).
  const { Sextant } = await import(path.join(here, '../pkg/node.js'));
  const dir = path.join(sites.sextant.site, 'sextant');
  const entry = JSON.parse(readFileSync(path.join(dir, 'sextant.json'), 'utf8'));
  const fromDisk = async (url, init) => {
    const bytes = readFileSync(fileURLToPath(url));
    const range = /^bytes=(\d+)-(\d+)$/.exec(init?.headers?.Range ?? '');
    return range ? new Response(bytes.subarray(Number(range[1]), Number(range[2]) + 1), { status: 206 }) : new Response(bytes);
  };
  const sextant = await Sextant.load({ index: pathToFileURL(path.join(dir, entry.index)).href, model: readFileSync(path.join(dir, entry.model)), tokenizer: readFileSync(path.join(dir, entry.tokenizer)), fetch: fromDisk });
  for (const mode of ['keyword', 'hybrid']) {
    for (const form of ['clean', 'typo']) {
      let hits = 0;
      for (const q of queries) {
        const response = await sextant.search(q[form], { k: 15, mode, fuse_documents: true, sub_results: 3 });
        if (hit(q, top5(response.results.map((r) => r.url)))) hits += 1;
      }
      results[`sextant ${mode}`] = { ...results[`sextant ${mode}`], [form]: hits / queries.length };
    }
  }
  sextant.free();

  // Pagefind, in Chromium, through its JS API.
  const server = await startStaticServer(sites.pagefind.site, { gzip: true });
  const context = await launch();
  try {
    const page = await context.newPage();
    await page.goto(`${server.url}/pagefind-bench.html`);
    for (const form of ['clean', 'typo']) {
      const pages = await page.evaluate(async (texts) => {
        const pagefind = await import('/pagefind/pagefind.js');
        await pagefind.init();
        const out = [];
        for (const text of texts) {
          const search = await pagefind.search(text);
          const data = await Promise.all(search.results.slice(0, 10).map((r) => r.data()));
          out.push(data.map((d) => d.url));
        }
        return out;
      }, queries.map((q) => q[form]));
      const hits = queries.filter((q, i) => hit(q, top5(pages[i]))).length;
      results.Pagefind = { ...results.Pagefind, [form]: hits / queries.length };
    }
  } finally {
    await context.close();
    await server.close();
  }
} finally {
  sites.cleanup();
}
console.log(JSON.stringify({ seed, queries: queries.length, with_a_typo: changed, success_at_5: results }));
