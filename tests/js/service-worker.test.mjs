// The offline service worker (pkg-template/ui/sextant-sw.js, written by `sextant build --site` at
// the site root) in headless Chromium: it keeps what it may keep and stays out of the way of what
// it may not. A byte-range request (206), a `Vary: *` answer and a `Cache-Control: no-store,
// private` page pass through as the network answered them and are never stored; the files the
// entry manifest lists are kept, and a kept file the manifest no longer lists is dropped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildDemoSite } from './harness.mjs';
import { startStaticServer } from './static-server.mjs';
import { launch, watchedPage } from './browser.mjs';

let site;
let server;
let context;

before(async () => {
  const extra = mkdtempSync(path.join(tmpdir(), 'sextant-sw-extra-'));
  mkdirSync(path.join(extra, 'media'));
  mkdirSync(path.join(extra, 'private'));
  writeFileSync(path.join(extra, 'media/clip.bin'), Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256)));
  writeFileSync(path.join(extra, 'vary.txt'), 'varies by everything');
  writeFileSync(path.join(extra, 'private/index.html'), '<!doctype html><meta name="robots" content="noindex"><link rel="icon" href="data:,"><title>private</title><p>account page</p>');
  site = buildDemoSite('sextant-sw-', extra);
  server = await startStaticServer(site, {
    pathHeaders: [
      [/^\/vary\.txt$/, { vary: '*' }],
      [/^\/private\//, { 'cache-control': 'no-store, private' }],
    ],
  });
  context = await launch();
});

after(async () => {
  await context?.close();
  await server?.close();
});

/** A page of the site controlled by the site's service worker. */
async function controlledPage() {
  const page = await watchedPage(context);
  await page.goto(`${server.url}/cli/`);
  await page.evaluate(async () => {
    await navigator.serviceWorker.register('/sextant-sw.js', { scope: '/' });
    if (!navigator.serviceWorker.controller) await new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true }));
  });
  return page;
}

/** The paths Cache Storage holds, over every cache. */
const cachedPaths = (page) =>
  page.evaluate(async () => {
    const out = [];
    for (const name of await caches.keys()) for (const request of await (await caches.open(name)).keys()) out.push(new URL(request.url).pathname);
    return out.sort();
  });

test('what the service worker does not cache passes through unchanged: a range (206), Vary: *, a no-store page', async () => {
  const page = await controlledPage();
  try {
    const got = await page.evaluate(async () => {
      const attempt = async (fn) => {
        try {
          return await fn();
        } catch (e) {
          return `failed: ${e.message}`;
        }
      };
      return {
        range: await attempt(async () => {
          const r = await fetch('/media/clip.bin', { headers: { range: 'bytes=10-19' } });
          return [r.status, r.headers.get('content-range'), [...new Uint8Array(await r.arrayBuffer())]];
        }),
        vary: await attempt(async () => {
          const r = await fetch('/vary.txt');
          return [r.status, await r.text()];
        }),
        private: await attempt(async () => {
          const r = await fetch('/private/');
          return [r.status, /account page/.test(await r.text())];
        }),
      };
    });
    assert.deepEqual(got.range, [206, 'bytes 10-19/4096', [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]]);
    assert.deepEqual(got.vary, [200, 'varies by everything']);
    assert.deepEqual(got.private, [200, true]);
    // A page the browser navigates to, under no-store, is not kept either.
    await page.goto(`${server.url}/private/`);
    assert.match(await page.textContent('p'), /account page/);
    // A page that may be cached, for offline reading, is.
    await page.goto(`${server.url}/js-api/`);
    let kept = [];
    for (let i = 0; i < 50 && !kept.includes('/js-api/'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      kept = await cachedPaths(page);
    }
    assert.ok(kept.includes('/js-api/'), kept.join(', '));
    assert.ok(!kept.some((p) => p.startsWith('/private')), `a no-store page was stored: ${kept.join(', ')}`);
    assert.ok(!kept.includes('/vary.txt'), 'a Vary: * answer was stored');
    assert.ok(!kept.includes('/media/clip.bin'), 'a partial answer was stored');
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('the files sextant.json lists are kept; a kept file it no longer lists is dropped', async () => {
  const page = await controlledPage();
  try {
    const entry = JSON.parse(readFileSync(path.join(site, 'sextant/sextant.json'), 'utf8'));
    const tokenizer = `/sextant/${entry.tokenizer}`;
    const kept = await page.evaluate(async ({ tokenizer }) => {
      await (await fetch('/sextant/sextant.json', { cache: 'no-store' })).json();
      await (await fetch(tokenizer)).arrayBuffer();
      // A file of an earlier build, kept then: the next manifest does not list it.
      const cache = await caches.open((await caches.keys())[0]);
      await cache.put('/sextant/index/frag.0123456789abcdef.json', new Response('{}'));
      await (await fetch('/sextant/sextant.json', { cache: 'no-store' })).json();
      await new Promise((r) => setTimeout(r, 500)); // the prune runs after the answer
      return (await cache.keys()).map((r) => new URL(r.url).pathname);
    }, { tokenizer });
    assert.ok(kept.includes(tokenizer), kept.join(', '));
    assert.ok(!kept.includes('/sextant/index/frag.0123456789abcdef.json'), kept.join(', '));
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('a restarted worker answers from what its cache holds: offline, a kept file and a kept range', async () => {
  const page = await controlledPage();
  const browser = await context.browser().newBrowserCDPSession();
  try {
    const entry = JSON.parse(readFileSync(path.join(site, 'sextant/sextant.json'), 'utf8'));
    const index = JSON.parse(readFileSync(path.join(site, 'sextant', entry.index), 'utf8'));
    const tokenizer = `/sextant/${entry.tokenizer}`;
    const pack = `/sextant/${entry.index.replace(/[^/]*$/, '')}${index.files.packs[0]}`;
    const read = (paths) =>
      page.evaluate(async ({ tokenizer, pack }) => {
        const whole = await (await fetch(tokenizer)).arrayBuffer();
        const part = await fetch(pack, { headers: { range: 'bytes=0-99' } });
        return [whole.byteLength, part.status, (await part.arrayBuffer()).byteLength];
      }, paths);
    await page.evaluate(() => fetch('/sextant/sextant.json', { cache: 'no-store' }).then((r) => r.json()));
    const online = await read({ tokenizer, pack });
    let kept = [];
    for (let i = 0; i < 50 && !(kept.includes(tokenizer) && kept.includes(pack)); i++) {
      await new Promise((r) => setTimeout(r, 100));
      kept = await cachedPaths(page);
    }
    assert.ok(kept.includes(tokenizer) && kept.includes(pack), kept.join(', '));
    const { targetInfos } = await browser.send('Target.getTargets');
    const workers = targetInfos.filter((t) => t.type === 'service_worker');
    assert.equal(workers.length, 1, JSON.stringify(targetInfos));
    await context.setOffline(true);
    await browser.send('Target.closeTarget', { targetId: workers[0].targetId }); // stops it
    const running = async () => (await browser.send('Target.getTargets')).targetInfos.filter((t) => t.type === 'service_worker');
    for (let i = 0; i < 50 && (await running()).length; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await running(), [], 'the worker still runs');
    const asked = server.log.length;
    // A worker started afresh knows the manifest only from its cache: it answers the same file
    // and range from there, and the server sees nothing.
    assert.deepEqual(await read({ tokenizer, pack }), online);
    assert.deepEqual(server.log.slice(asked).map((e) => e.path), [], 'asked the server while offline');
    assert.deepEqual(online.slice(1), [206, 100]);
  } finally {
    await context.setOffline(false);
    await browser.detach().catch(() => {});
    await page.close();
  }
});

test('a hard reload, which the active worker does not control, searches without waiting for it', async () => {
  const page = await controlledPage();
  try {
    await page.evaluate(() => (window.beforeReload = true));
    const cdp = await context.newCDPSession(page);
    const seen = server.log.length;
    const reloaded = performance.now();
    await cdp.send('Page.reload', { ignoreCache: true });
    await cdp.detach();
    // The old page is gone (its mark with it) and the new one is up.
    await page.waitForFunction(() => !window.beforeReload && document.readyState === 'complete' && document.querySelector('.sextant-input'));
    assert.equal(await page.evaluate(() => navigator.serviceWorker.controller), null, 'the hard reload was controlled');
    await page.locator('.sextant-input').fill('bundle checksums');
    await page.waitForFunction(() => document.querySelectorAll('.sextant-page').length > 0, null, { timeout: 60000 });
    const asked = server.log.slice(seen).find((e) => e.path === '/sextant/sextant.json');
    // It used to wait for a worker that would never take the page, for 3 s from the page's start.
    assert.ok(asked && asked.at - reloaded < 2500, `sextant.json asked ${asked ? Math.round(asked.at - reloaded) : 'never'} ms after the reload`);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});
