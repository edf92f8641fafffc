// Shared set-up of the static-site benchmarks (bench/pagefind.mjs, bench/pagefind-session.mjs):
// two copies of a built site, one indexed by `sextant build --site`, one by Pagefind (the binary
// from bench/node_modules, `npm install` in bench/), each with a page holding its drop-in UI.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, writeFileSync, readdirSync, statSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/** Each engine's UI page (written by prepareSites), search input and folder of search files. */
export const ENGINES = {
  sextant: { page: '/sextant-bench.html', input: '.sextant-input', folder: 'sextant' },
  // The same site and index, its box with data-embed-url (the page is written per session, with
  // the endpoint's URL: bench/pagefind-session.mjs).
  'sextant-embed': { page: '/sextant-embed-bench.html', input: '.sextant-input', folder: 'sextant' },
  pagefind: { page: '/pagefind-bench.html', input: '.pagefind-ui__search-input', folder: 'pagefind' },
};

const SEXTANT_PAGE = '<!doctype html><meta charset="utf-8"><title>bench</title><link rel="icon" href="data:,"><div id="search"></div><script type="module" src="/sextant/sextant-ui.js"></script>';
const PAGEFIND_PAGE = '<!doctype html><meta charset="utf-8"><title>bench</title><link rel="icon" href="data:,"><link href="/pagefind/pagefind-ui.css" rel="stylesheet"><script src="/pagefind/pagefind-ui.js"></script><div id="search"></div><script>window.addEventListener("DOMContentLoaded", () => new PagefindUI({ element: "#search", showSubResults: true }));</script>';

/** Total bytes and file count of a folder (recursively) plus extra files or folders. */
export function du(dir, extra = []) {
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

export function timed(fn) {
  const t = performance.now();
  const out = fn();
  return { out, seconds: (performance.now() - t) / 1000 };
}

/**
 * Copies the built site `dir` twice into a temporary folder (without any earlier sextant files),
 * indexes one copy with sextant and the other with Pagefind, and writes each engine's UI page.
 * Returns both site folders, the indexing summaries and times, the index sizes and `cleanup()`.
 */
/** The sextant UI page with its box's `attributes`. */
export const sextantPage = (attributes) => SEXTANT_PAGE.replace('<div id="search">', `<div id="search" ${attributes}>`);

export function prepareSites(name, dir, sextantBin) {
  const base = mkdtempSync(path.join(tmpdir(), `bench-${name}-`));
  const sx = path.join(base, 'sextant-site');
  const pf = path.join(base, 'pagefind-site');
  cpSync(dir, sx, { recursive: true, dereference: true });
  rmSync(path.join(sx, 'sextant'), { recursive: true, force: true });
  rmSync(path.join(sx, 'sextant-sw.js'), { force: true });
  cpSync(sx, pf, { recursive: true });
  const files = du(sx).files;
  const sxBuild = timed(() => execFileSync(sextantBin, ['build', '--site', sx, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const pfBuild = timed(() => execFileSync(path.join(here, 'node_modules/.bin/pagefind'), ['--site', pf], { encoding: 'utf8' }));
  writeFileSync(path.join(sx, ENGINES.sextant.page), SEXTANT_PAGE);
  writeFileSync(path.join(pf, ENGINES.pagefind.page), PAGEFIND_PAGE);
  return {
    name,
    files,
    'sextant-embed': { site: sx },
    sextant: { site: sx, summary: JSON.parse(sxBuild.out), seconds: sxBuild.seconds, size: du(path.join(sx, 'sextant'), [path.join(sx, 'sextant-sw.js')]) },
    pagefind: { site: pf, pages: Number(pfBuild.out.match(/Indexed (\d+) pages?/)?.[1] ?? NaN), seconds: pfBuild.seconds, size: du(path.join(pf, 'pagefind')) },
    cleanup: () => rmSync(base, { recursive: true, force: true }),
  };
}

/**
 * Sites already indexed, for a site too large to index in the benchmark's own run (rust-doc: a
 * sharded build and a merge, then Pagefind, each measured with their own commands): `sxDir` holds
 * sextant's build (`sextant/`), `pfDir` Pagefind's (`pagefind/`). Writes each engine's UI page and
 * returns what `prepareSites` does, without summaries; `cleanup()` removes the pages only.
 */
export function prebuiltSites(name, sxDir, pfDir) {
  for (const [dir, engine] of [[sxDir, 'sextant'], [pfDir, 'pagefind']]) {
    if (!existsSync(path.join(dir, ENGINES[engine].folder))) throw new Error(`${dir} has no ${ENGINES[engine].folder}/ folder: index it with ${engine} first`);
  }
  writeFileSync(path.join(sxDir, ENGINES.sextant.page), SEXTANT_PAGE);
  writeFileSync(path.join(pfDir, ENGINES.pagefind.page), PAGEFIND_PAGE);
  return {
    name,
    'sextant-embed': { site: sxDir },
    sextant: { site: sxDir },
    pagefind: { site: pfDir },
    cleanup: () => {
      // The pages written here and the session's throttling probe (bench/pagefind-session.mjs).
      const written = [ENGINES.sextant.page, ENGINES['sextant-embed'].page, ENGINES.pagefind.page, '/bench-probe.bin', '/bench-probe-worker.js'];
      for (const dir of [sxDir, pfDir]) for (const p of written) rmSync(path.join(dir, p), { force: true });
    },
  };
}

// A phone on a good mobile connection: 10 Mbit/s down, 5 Mbit/s up, 40 ms round trip.
export const PHONE = { offline: false, latency: 40, downloadThroughput: 1_250_000, uploadThroughput: 625_000, connectionType: 'cellular4g' };

/**
 * Throttles every service worker and shared worker of the context: they are targets of their own,
 * and Chromium applies a page's network emulation to its dedicated workers but not to the
 * service worker that fetches on its behalf. A helper page gets a browser-level CDP channel
 * (Target.exposeDevToolsProtocol), auto-attaches to those workers as they start (paused until
 * the emulation is set) and emulates the connection on each. Returns the list of targets
 * throttled, read at the end.
 */
export async function throttleWorkers(context, conditions) {
  const browserSession = await context.browser().newBrowserCDPSession();
  const helper = await context.newPage();
  const helperSession = await context.newCDPSession(helper);
  const { targetInfo } = await helperSession.send('Target.getTargetInfo');
  await browserSession.send('Target.exposeDevToolsProtocol', { targetId: targetInfo.targetId, bindingName: 'benchCdp' });
  await helper.evaluate((cond) => {
    let id = 0;
    const pending = new Map();
    window.throttled = [];
    window.throttleErrors = [];
    const send = (method, params, sessionId) =>
      new Promise((resolve, reject) => {
        const message = { id: ++id, method, params };
        if (sessionId) message.sessionId = sessionId;
        pending.set(message.id, { resolve, reject });
        window.benchCdp.send(JSON.stringify(message));
      });
    window.benchCdp.onmessage = async (json) => {
      const m = JSON.parse(json);
      if (m.id && pending.has(m.id)) {
        const { resolve, reject } = pending.get(m.id);
        pending.delete(m.id);
        if (m.error) reject(new Error(m.error.message));
        else resolve(m.result);
      } else if (m.method === 'Target.attachedToTarget') {
        const { sessionId, targetInfo: info, waitingForDebugger } = m.params;
        try {
          await send('Network.emulateNetworkConditions', cond, sessionId);
          window.throttled.push(`${info.type} ${new URL(info.url).pathname}`);
        } catch (e) {
          window.throttleErrors.push(`${info.type} ${info.url}: ${e.message}`);
        }
        if (waitingForDebugger) await send('Runtime.runIfWaitingForDebugger', {}, sessionId).catch(() => {});
      }
    };
    return send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: [{ type: 'service_worker' }, { type: 'shared_worker' }] });
  }, conditions);
  return async () => {
    const { throttled, throttleErrors } = await helper.evaluate(() => ({ throttled: window.throttled, throttleErrors: window.throttleErrors }));
    if (throttleErrors.length) throw new Error(`could not throttle: ${throttleErrors.join('; ')}`);
    return throttled;
  };
}
