// Headless Chromium benchmark of indexing in the page (issue 11): documents and chunks per second
// for a collection kept in OPFS (parse, chunk, embed, write the index), against Transformers.js
// embedding the same chunk texts with the same model.onnx in the same page (the collection on
// `workers` threads, default the browser's cores; Transformers.js on one);
// and the storage a collection takes per 1,000 chunks.
// node bench/collection-browser.mjs <pkg dir> <corpus.jsonl> <documents> <model dir> [rounds] [batch] [workers]
import { readFile } from 'node:fs/promises';
import { startStaticServer } from '../tests/js/static-server.mjs';
import { launch, watchedPage } from '../tests/js/browser.mjs';
import { anchorSite } from './anchor-site.mjs';

const [pkgDir, corpusPath, docsArg, modelDir, roundsArg, batchArg, workersArg] = process.argv.slice(2);
const lines = (await readFile(corpusPath, 'utf8')).split('\n').filter((l) => l.trim()).slice(0, Number(docsArg));
const site = await anchorSite(pkgDir, modelDir);
const server = await startStaticServer(site);
const context = await launch();
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor((v.length - 1) / 2)];
try {
  const page = await watchedPage(context);
  await page.goto(`${server.url}/page/collection.html`);
  await page.waitForFunction(() => window.benchReady === true);
  const result = await page.evaluate((config) => window.runCollectionBench(config), { jsonl: lines.join('\n'), rounds: Number(roundsArg ?? 3), batch: Number(batchArg ?? 8), workers: workersArg ? Number(workersArg) : undefined });
  const r = result.rounds;
  const stored = r.at(-1).stored_bytes;
  const storedTotal = Object.values(stored).reduce((a, b) => a + b, 0);
  const chunks = r[0].chunks;
  console.log(JSON.stringify({
    browser: context.browser()?.version(),
    documents: result.documents,
    chunks,
    sextant_docs_per_s_p50: median(r.map((x) => x.sextant.docs_per_s)),
    sextant_chunks_per_s_p50: median(r.map((x) => x.sextant.chunks_per_s)),
    sextant_embedding_threads: r[0].sextant.embedding_threads,
    sextant_embed_only_chunks_per_s_p50: median(r.map((x) => x.sextant.embed_chunks_per_s)),
    transformers_chunks_per_s_p50: median(r.map((x) => x.transformers.one_at_a_time_chunks_per_s)),
    transformers_batched_chunks_per_s_p50: median(r.map((x) => x.transformers.batched_chunks_per_s)),
    round_ratios_embed_vs_transformers: r.map((x) => x.sextant.embed_chunks_per_s / x.transformers.one_at_a_time_chunks_per_s),
    round_ratios_embed_vs_transformers_batched: r.map((x) => x.sextant.embed_chunks_per_s / x.transformers.batched_chunks_per_s),
    opfs_bytes: stored,
    opfs_bytes_per_1000_chunks: Math.round((storedTotal / chunks) * 1000),
    export_bytes_per_1000_chunks: Math.round((r.at(-1).export_bytes / chunks) * 1000),
    rounds: r,
  }));
  if (page.errors.length) console.error('console errors:', page.errors);
} finally {
  await context.close();
  await server.close();
}
