// sextant against Pagefind over a 10-query session, the way a new visitor experiences it: each
// engine's drop-in UI in headless Chromium (fresh profile, cold cache), served gzip-compressed
// like a real host, the visitor typing ten queries one after another. For every query: the time
// from its first keystroke to its first results in the page, and the bytes on the wire during it
// (page load counts toward the first query), by kind: wasm, model, code (js, css, html) and
// index (everything else under the engine's folder). Each session runs on loopback and on a
// throttled phone connection (Chromium network emulation: 10 Mbit/s down, 5 Mbit/s up, 40 ms,
// set on the page and on every service worker; a 1 MB probe fetched from the page and from a Web
// Worker at the end of each session checks that the throttling held).
// node bench/pagefind-session.mjs <sextant binary> <name>=<site dir> …
//   or <name>=<sextant site>,<pagefind site>: sites each engine has indexed already (rust-doc)
// SESSION_TYPING_MS=<ms> types with that delay between keystrokes (default 0: as fast as
// Playwright types); the time after the last keystroke is reported beside the total.
// SESSION_PAUSE_MS=<ms> is the pause after each query's results (default 1000);
// SESSION_ENGINES="sextant" runs one engine only (default: sextant pagefind); SESSION_CONNECTIONS
// likewise ("loopback", "phone"; default both).
// A site named in FILTERED (python-sections: bench/sectioned-site.py's copy of the Python docs)
// is searched with a filter: after the first query's results the visitor ticks one value in the
// engine's filter panel and keeps it for the other nine queries; what the tick fetches is a row
// of its own.
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startStaticServer } from '../tests/js/static-server.mjs';
import { launch, watchedPage } from '../tests/js/browser.mjs';
import { ENGINES, PHONE, prebuiltSites, prepareSites, sextantPage, throttleWorkers } from './site-setup.mjs';
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { importPackage, modelDir } from '../tests/js/harness.mjs';

const [sextantBin, ...siteArgs] = process.argv.slice(2);
if (!sextantBin || !siteArgs.length) {
  console.error('usage: node bench/pagefind-session.mjs <sextant binary> <name>=<site dir> …');
  process.exit(2);
}
const QUERIES = {
  python: [
    'read a file line by line',
    'sort a list of dictionaries by a key',
    'string formatting',
    'datetime timezone',
    'subprocess run command output',
    'json dump to file',
    'regular expression named groups',
    'asyncio gather',
    'list comprehension',
    'dataclass default factory',
  ],
  // Debian's rust-doc (the standard library's API docs and the books): what a Rust programmer
  // looks up, written before the index was searched (bench/rust-queries.jsonl, the Worker's too).
  rust: readFileSync(new URL('./rust-queries.jsonl', import.meta.url), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text),
  demo: [
    'prompt injection',
    'how do I deploy to cloudflare',
    'api key',
    'bundle checksums',
    'model mismatch error',
    'token budget',
    'int8 weights memory',
    'exclude files from the index',
    'rate limits',
    'hybrid search',
  ],
};
// Sites searched with a filter ticked after the first query: the queries of `queries`, then
// `name: value` ticked in the UI's panel.
const FILTERED = {
  'python-sections': { queries: 'python', name: 'section', value: 'library' },
};
// SESSION_CONNECTIONS="phone" (or "loopback") runs one connection only.
const CONNECTIONS = [
  ['loopback', null],
  ['phone 10/5 Mbit/s, 40 ms', PHONE],
].filter(([name]) => (process.env.SESSION_CONNECTIONS ?? 'loopback phone').split(/[\s,]+/).includes(name.split(' ')[0]));
const TYPING_MS = Number(process.env.SESSION_TYPING_MS ?? 0);
// The visitor reads each query's results this long before typing the next; what the UI fetches
// meanwhile (result fragments, prefetches) counts toward the query it belongs to.
const PAUSE_MS = Number(process.env.SESSION_PAUSE_MS ?? 1000);
const RUN_ENGINES = (process.env.SESSION_ENGINES ?? 'sextant pagefind').split(/[\s,]+/).filter(Boolean);
const CATEGORIES = ['index', 'wasm', 'model', 'code', 'embed', 'other'];

/**
 * A stand-in for the Worker's GET /embed (the same package, wasm and weights as the site's body, so
 * the same vector bits; tests/js/embed.test.mjs checks the Worker's against the package's): the site's
 * index loaded with the model in Node from a static server of its own, answering with CORS.
 * Each answer is logged as the static server logs files, gzip-sized as a host would send it.
 */
async function startEmbedServer(site) {
  const files = await startStaticServer(site);
  const api = await importPackage();
  const entry = JSON.parse(readFileSync(path.join(site, 'sextant/sextant.json'), 'utf8'));
  const sextant = await api.Sextant.load({
    index: `${files.url}/sextant/${entry.index}`,
    model: await readFile(path.join(modelDir, 'model.onnx')),
    tokenizer: await readFile(path.join(modelDir, 'tokenizer.json')),
    // As the Worker does: the weights the site's search box holds its body with (int5 packed).
    weights: entry.model_body_weights,
  });
  const manifest = sextant.manifest();
  const log = [];
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    try {
      const vector = await sextant.queryVector(url.searchParams.get('q') ?? '');
      const body = JSON.stringify({
        model: { sha256: manifest.model.sha256, tokenizer_sha256: manifest.model.tokenizer_sha256, dims: manifest.model.dims },
        weights: entry.model_body_weights ?? 'int8',
        vector: Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64'),
      });
      log.push({ path: '/embed', bytes: gzipSync(body).length });
      res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' }).end(body);
    } catch (e) {
      res.writeHead(400, { 'access-control-allow-origin': '*' }).end(String(e.message));
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/embed`,
    log,
    close: async () => {
      server.close();
      await files.close();
      sextant.free();
    },
  };
}

/** The kind of a served path, by URL pattern only (file names change as the engines do). */
function category(engine, urlPath) {
  const file = urlPath.split('/').pop();
  if (/\.wasm$/i.test(file)) return 'wasm';
  // Pagefind ships its WebAssembly pre-compressed as wasm.<language>.pagefind.
  if (engine === 'pagefind' && /^wasm\.[^/]*\.pagefind$/.test(file)) return 'wasm';
  // The model: whole, or the search box's body (or sextant's own encoder file) and the rows of
  // its word table a query needs.
  if (/^(model|body)[^/]*\.onnx/i.test(file) || /^(rows|encoder)\.[0-9a-f]+\.bin$/.test(file) || /^tokenizer[^/]*\.json/i.test(file)) return 'model';
  if (/\.(m?js|css|html?)$/i.test(file) || urlPath.endsWith('/')) return 'code';
  if (urlPath.startsWith(`/${ENGINES[engine].folder}/`)) return 'index';
  if (urlPath.startsWith('/embed')) return 'embed';
  return 'other';
}

function sumBytes(engine, entries) {
  const out = Object.fromEntries(CATEGORIES.map((c) => [c, 0]));
  for (const e of entries) out[category(engine, e.path)] += e.bytes ?? 0;
  out.total = CATEGORIES.reduce((n, c) => n + out[c], 0);
  return out;
}

// The throttling probe: 1 MB that does not compress, fetched at the end of a session from the
// page and from a dedicated worker (through the service worker where there is one).
const PROBE_BYTES = 1_000_000;
const PROBE_WORKER = `onmessage = async (e) => {
  const t = performance.now();
  const body = await (await fetch(e.data, { cache: 'no-store' })).arrayBuffer();
  postMessage({ ms: performance.now() - t, bytes: body.byteLength });
};`;

async function probe(page) {
  return page.evaluate(async () => {
    const t = performance.now();
    const body = await (await fetch('/bench-probe.bin?page', { cache: 'no-store' })).arrayBuffer();
    const fromPage = { ms: performance.now() - t, bytes: body.byteLength };
    const worker = new Worker('/bench-probe-worker.js');
    const fromWorker = await new Promise((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(new Error(e.message));
      worker.postMessage(new URL('/bench-probe.bin?worker', location.href).href);
    });
    worker.terminate();
    return { page: fromPage, worker: fromWorker };
  });
}

/** The Chromium profile folder of a context launched by tests/js/browser.mjs, to delete it after. */
async function profileDir(context) {
  const page = await context.newPage();
  try {
    await page.goto('chrome://version');
    const profile = path.dirname((await page.locator('#profile_path').textContent()).trim());
    return path.dirname(profile) === tmpdir() && path.basename(profile).startsWith('sextant-chromium-') ? profile : null;
  } catch {
    return null;
  } finally {
    await page.close();
  }
}

/**
 * In the page: arms a watcher for one query. It records the first and last keydown and the
 * moment the UI shows results for exactly this query (number of results, 0 for the engine's
 * "no results"), never an earlier query's.
 */
function armWatcher({ engine, query }) {
  const state = { query, firstKey: null, lastKey: null, done: null, hybrid: null, count: null, error: null };
  window.benchQuery = state;
  window.benchObserver?.disconnect();
  if (!window.benchKeys) {
    window.benchKeys = true;
    document.addEventListener(
      'keydown',
      (e) => {
        const s = window.benchQuery;
        s.firstKey ??= e.timeStamp;
        s.lastKey = e.timeStamp;
      },
      true,
    );
  }
  const shown = () => {
    if (engine.startsWith('sextant')) {
      const status = document.querySelector('.sextant-status')?.textContent ?? '';
      if (status.startsWith('Search is unavailable')) return { error: status };
      const list = document.querySelector('.sextant-results');
      if (!list || list.dataset.query !== query) return null;
      const pages = list.querySelectorAll('.sextant-page').length;
      if (pages) return { count: pages, mode: list.dataset.mode };
      return status.startsWith('No results') ? { count: 0 } : null;
    }
    const message = document.querySelector('.pagefind-ui__message')?.textContent.trim() ?? '';
    if (message === `No results for ${query}`) return { count: 0 };
    const m = message.match(/^([\d.,\s]+) results? for ([\s\S]*)$/);
    if (!m || m[2] !== query) return null;
    const titles = [...document.querySelectorAll('.pagefind-ui__results .pagefind-ui__result-link')].filter((a) => a.textContent.trim());
    return titles.length ? { count: Number(m[1].replace(/\D/g, '')) } : null;
  };
  // sextant's box shows keyword results first and the same query's hybrid ones once its full
  // engine is in: the watcher stays until those are on screen (or the next query's watcher).
  const observer = new MutationObserver(() => {
    const seen = shown();
    if (!seen) return;
    if (state.done === null) {
      state.done = performance.now();
      state.count = seen.count ?? null;
      state.error = seen.error ?? null;
      state.mode = seen.mode ?? null;
    }
    if (seen.mode === 'hybrid') state.hybrid ??= performance.now();
    if (!engine.startsWith('sextant') || state.hybrid !== null || state.error) observer.disconnect();
  });
  window.benchObserver = observer;
  observer.observe(document.documentElement, { subtree: true, childList: true, attributes: true, characterData: true });
}

/**
 * Ticks `value` of filter `name` in the engine's panel as a visitor would (opening Pagefind's
 * collapsed filter block first), then waits until the UI has fetched what it needs: no request for
 * 1.5 s. Returns the milliseconds from the click to the last request before that quiet.
 */
async function tick(page, requests, engine, { name, value }) {
  const started = performance.now();
  if (engine.startsWith('sextant')) {
    await page.locator(`.sextant-filters input[data-filter="${name}"][data-value="${value}"]`).check();
  } else {
    const box = page.locator(`input.pagefind-ui__filter-checkbox[id="${name}-${value}"]`);
    if (!(await box.isVisible())) await page.locator('.pagefind-ui__filter-name', { hasText: name }).click();
    await box.check();
  }
  let last = performance.now();
  for (let seen = requests(); performance.now() - last < 1500; ) {
    await new Promise((r) => setTimeout(r, 100));
    if (requests() !== seen) [seen, last] = [requests(), performance.now()];
  }
  return Math.round(last - started);
}

async function session(site, engine, queries, conditions, filter) {
  writeFileSync(path.join(site, 'bench-probe.bin'), randomBytes(PROBE_BYTES));
  writeFileSync(path.join(site, 'bench-probe-worker.js'), PROBE_WORKER);
  const server = await startStaticServer(site, { gzip: true });
  // With /embed: the page names the endpoint, whose answers count with the page's files.
  const embed = engine === 'sextant-embed' ? await startEmbedServer(site) : null;
  if (embed) writeFileSync(path.join(site, ENGINES[engine].page), sextantPage(`data-embed-url="${embed.url}"`));
  const logOf = () => (embed ? [...server.log, ...embed.log] : server.log);
  const context = await launch();
  const profile = await profileDir(context);
  try {
    const throttledWorkers = conditions ? await throttleWorkers(context, conditions) : null;
    const page = await watchedPage(context);
    if (conditions) {
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.emulateNetworkConditions', conditions);
    }
    const { input } = ENGINES[engine];
    const started = performance.now();
    await page.goto(server.url + ENGINES[engine].page);
    await page.waitForSelector(input);
    const results = [];
    let mark = 0; // log entries up to here belong to earlier queries
    for (const [i, query] of queries.entries()) {
      await page.evaluate(armWatcher, { engine, query });
      if (i === 0) await page.locator(input).click();
      else await page.locator(input).selectText(); // the visitor types over the last query
      await page.keyboard.type(query, { delay: TYPING_MS });
      await page.waitForFunction(() => window.benchQuery.done !== null, null, { timeout: i === 0 ? 900_000 : 300_000, polling: 20 });
      let s = await page.evaluate(() => window.benchQuery);
      if (s.error) throw new Error(`${engine}: ${s.error}`);
      await page.waitForTimeout(PAUSE_MS);
      s = await page.evaluate(() => window.benchQuery);
      // sextant shows keyword results until its full engine is ready, then the same query's hybrid ones.
      const finalMode = engine.startsWith('sextant') ? await page.evaluate(() => document.querySelector('.sextant-results')?.dataset.mode ?? null) : null;
      const end = server.log.length;
      const embedded = embed ? embed.log.splice(0) : [];
      results.push({
        query,
        results: s.count,
        ms: Math.round(s.done - s.firstKey),
        after_typing_ms: Math.round(s.done - s.lastKey),
        // From the first keystroke to hybrid results on screen, when they came within the pause.
        ...(s.hybrid !== null ? { hybrid_ms: Math.round(s.hybrid - s.firstKey) } : {}),
        // The same moments counted from the page's navigation (the page's clock starts there).
        since_load_ms: Math.round(s.done),
        ...(s.hybrid !== null ? { hybrid_since_load_ms: Math.round(s.hybrid) } : {}),
        ...(engine.startsWith('sextant') ? { first_mode: s.mode, mode: finalMode } : {}),
        bytes: sumBytes(engine, [...server.log.slice(mark, end), ...embedded]),
      });
      mark = end;
      if (i === 0 && filter) {
        const quiet = await tick(page, () => logOf().length, engine, filter);
        const ticked = server.log.length;
        results.push({ query: `(tick ${filter.name}: ${filter.value})`, tick: true, results: null, ms: quiet, bytes: sumBytes(engine, [...server.log.slice(mark, ticked), ...(embed ? embed.log.splice(0) : [])]) });
        mark = ticked;
      }
    }
    const seconds = (performance.now() - started) / 1000;
    // Whatever the UI still fetches after the last result (prefetches, fragments) counts too.
    for (let quiet = 0, seen = server.log.length, waited = 0; quiet < 1500 && waited < 20000; waited += 250) {
      await new Promise((r) => setTimeout(r, 250));
      quiet = server.log.length === seen ? quiet + 250 : 0;
      seen = server.log.length;
    }
    const log = [...server.log, ...results.flatMap((r) => (r.bytes.embed ? [{ path: '/embed', bytes: r.bytes.embed }] : []))];
    const failed = log.filter((e) => e.status && e.status !== 200 && e.status !== 206).map((e) => `${e.status} ${e.path}`);
    return {
      results,
      session: sumBytes(engine, log),
      seconds,
      requests: log.length,
      probe: await probe(page),
      failed,
      errors: page.errors,
      throttled_workers: throttledWorkers ? await throttledWorkers() : [],
    };
  } finally {
    await context.close();
    await server.close();
    await embed?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const size = (b) => (b >= 1e6 ? `${(b / 1e6).toFixed(2)} MB` : b >= 1e3 ? `${(b / 1e3).toFixed(1)} kB` : `${b} B`);
const ms = (x) => `${Math.round(x).toLocaleString('en-US')} ms`;

const report = [];
for (const arg of siteArgs) {
  // name@label=…: the site `name`'s queries (and filter), reported as `label` (two builds of one site).
  const [label, dir] = arg.split('=');
  const name = label.split('@')[0];
  const filter = FILTERED[name];
  const queries = QUERIES[filter?.queries ?? name] ?? QUERIES.demo;
  // name=SEXTANT_SITE,PAGEFIND_SITE: two sites already indexed, one by each engine.
  const [sxDir, pfDir] = dir.split(',');
  const sites = pfDir ? prebuiltSites(label, sxDir, pfDir) : prepareSites(label, dir, sextantBin);
  try {
    for (const engine of RUN_ENGINES) {
      for (const [connection, conditions] of CONNECTIONS) {
        console.error(`session: ${label} ${engine} ${connection}`);
        const run = await session(sites[engine].site, engine, queries, conditions, filter);
        report.push({ site: label, engine, connection, ...run });
        if (conditions) {
          // The probe's 1 MB cannot arrive faster than the emulated link, from the page or a worker.
          const link = (PROBE_BYTES / conditions.downloadThroughput) * 1000;
          for (const [from, p] of Object.entries(run.probe)) {
            if (p.ms < 0.9 * link) console.error(`warning: ${engine} on ${connection}: 1 MB fetched from the ${from} in ${Math.round(p.ms)} ms, faster than the link allows (${Math.round(link)} ms): not throttled`);
          }
          // Nothing can arrive faster than the emulated link: a session shorter than its bytes at
          // 10 Mbit/s means some fetches escaped the throttling.
          const floor = run.session.total / conditions.downloadThroughput;
          if (run.seconds < floor) console.error(`warning: ${engine} on ${connection} took ${run.seconds.toFixed(1)} s for ${size(run.session.total)}, less than the link allows (${floor.toFixed(1)} s)`);
        }
      }
    }
  } finally {
    sites.cleanup();
  }
}

console.log(JSON.stringify(report, null, 1));
for (const name of [...new Set(report.map((r) => r.site))]) {
  const runs = report.filter((r) => r.site === name);
  const typing = TYPING_MS > 0;
  const filter = FILTERED[name.split('@')[0]];
  const asked = runs[0].results.filter((x) => !x.tick).length;
  const ticked = filter ? `, \`${filter.name}: ${filter.value}\` ticked after the first` : '';
  console.log(`\n### ${name}: ${asked}-query session${ticked}${typing ? ` (typing ${TYPING_MS} ms a key; after the last keystroke in brackets)` : ''}\n`);
  console.log('| engine | connection | query 1: first result | queries 2–10: median | index | wasm | model | code | total |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const r of runs) {
    const later = r.results.slice(1).filter((x) => !x.tick);
    const q1 = ms(r.results[0].ms) + (typing ? ` (${ms(r.results[0].after_typing_ms)})` : '');
    const rest = ms(median(later.map((x) => x.ms))) + (typing ? ` (${ms(median(later.map((x) => x.after_typing_ms)))})` : '');
    const b = r.session;
    const other = (b.embed ? ` (+${size(b.embed)} /embed)` : '') + (b.other ? ` (+${size(b.other)} other)` : '');
    console.log(`| ${r.engine === 'pagefind' ? 'Pagefind' : r.engine === 'sextant-embed' ? 'sextant, /embed' : 'sextant'} | ${r.connection} | ${q1} | ${rest} | ${size(b.index)} | ${size(b.wasm)} | ${size(b.model)} | ${size(b.code)} | ${size(b.total)}${other} |`);
  }
  for (const r of runs) {
    const first = r.results.find((x) => !x.tick);
    console.log(`\n${r.engine} ${r.connection}: first results ${ms(first.since_load_ms)} after the page began to load (typing at once)`);
  }
  for (const r of runs.filter((x) => x.engine.startsWith('sextant'))) {
    const hybrid = r.results.filter((x) => !x.tick && x.hybrid_ms !== undefined).map((x) => x.hybrid_ms);
    if (hybrid.length) console.log(`\n${r.engine} ${r.connection}: hybrid results on screen ${ms(median(hybrid))} after the first keystroke, median of the ${hybrid.length} queries that had them within the pause`);
    const asked = r.results.filter((x) => !x.tick);
    const firstHybrid = asked.findIndex((x) => x.hybrid_since_load_ms !== undefined);
    console.log(`${r.engine} ${r.connection}: first hybrid results ${firstHybrid < 0 ? 'never, within the session' : `${ms(asked[firstHybrid].hybrid_since_load_ms)} after the page began to load (query ${firstHybrid + 1})`}`);
  }
  console.log('\nPer query (time to first result / bytes on the wire; page load in query 1; for sextant the mode of the first results → after the pause):\n');
  console.log(`| query | ${runs.map((r) => `${r.engine} ${r.connection.split(' ')[0]}`).join(' | ')} |`);
  console.log(`|---|${runs.map(() => '---|').join('')}`);
  for (const [i, q] of runs[0].results.entries()) {
    const cells = runs.map((r) => {
      const x = r.results[i];
      const mode = x.first_mode ? ` · ${x.first_mode === x.mode ? x.mode : `${x.first_mode}→${x.mode}`}` : '';
      if (x.tick) return `quiet after ${ms(x.ms)} / ${size(x.bytes.total)}`;
      return `${ms(x.ms)} / ${size(x.bytes.total)}${mode}${x.results === 0 ? ' (no results)' : ''}`;
    });
    console.log(`| ${q.query} | ${cells.join(' | ')} |`);
  }
  const notes = runs.flatMap((r) => [
    ...r.failed.map((f) => `${r.engine} ${r.connection}: ${f}`),
    ...r.errors.map((e) => `${r.engine} ${r.connection}: page error ${e}`),
    ...(r.throttled_workers.length ? [`${r.engine} ${r.connection}: throttled ${r.throttled_workers.join(', ')} besides the page`] : []),
    `${r.engine} ${r.connection}: throttling probe, 1 MB fetched in ${Math.round(r.probe.page.ms)} ms from the page, ${Math.round(r.probe.worker.ms)} ms from a Web Worker`,
  ]);
  console.log(`\n${notes.map((n) => `- ${n}`).join('\n')}`);
}
