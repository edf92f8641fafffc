// Headless Chromium benchmark: sextant (the built pkg/) against Transformers.js embedding the same
// Cranfield queries with the same model.onnx, local files only, one thread each, in one page.
// node bench/wasm-browser.mjs <pkg dir> <bundle> <queries.jsonl> <model dir> [rounds]
import { readFile } from 'node:fs/promises';
import { startStaticServer } from '../tests/js/static-server.mjs';
import { launch, watchedPage } from '../tests/js/browser.mjs';
import { anchorSite } from './anchor-site.mjs';

const [pkgDir, bundlePath, queriesPath, modelDir, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 3);
const site = await anchorSite(pkgDir, modelDir, { 'data/cranfield.sxt': bundlePath });

const queries = (await readFile(queriesPath, 'utf8')).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l).text);
const server = await startStaticServer(site);
const context = await launch();
try {
  const page = await watchedPage(context);
  await page.goto(`${server.url}/page/index.html`);
  await page.waitForFunction(() => window.benchReady === true);
  const result = await page.evaluate((config) => window.runBench(config), { queries, rounds });
  const version = context.browser()?.version() ?? (await page.evaluate(() => navigator.userAgent));
  const ratio = result.sextant.total_ms.p50 / result.transformers.embed_ms.p50;
  const ratioInt8 = result.sextant_int8_weights.total_ms.p50 / result.transformers.embed_ms.p50;
  console.log(JSON.stringify({ browser: version, queries: queries.length, rounds, ...result, ratio_total_vs_transformers_embed_p50: ratio, ratio_int8_total_vs_transformers_embed_p50: ratioInt8 }));
  if (page.errors.length) console.error('console errors:', page.errors);
} finally {
  await context.close();
  await server.close();
}
