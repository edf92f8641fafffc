// The built package in headless Chromium: the README's browser example works as written, with
// a clean console.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, mkdtemp, cp } from 'node:fs/promises';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { consumerProject, exampleFiles, taggedBlock, root } from './harness.mjs';
import { startStaticServer } from './static-server.mjs';
import { launch, watchedPage } from './browser.mjs';

let context;
before(async () => {
  context = await launch();
});
after(async () => {
  await context?.close();
});

test('the README browser examples work as written', async () => {
  for (const readme of [path.join(root, 'README.md'), path.join(root, 'pkg-template/README.md')]) {
    const site = await mkdtemp(path.join(tmpdir(), 'sextant-browser-example-'));
    exampleFiles(site);
    await cp(path.join(consumerProject(), 'node_modules/sextant-search'), path.join(site, 'sextant'), { recursive: true, dereference: true });
    const html = taggedBlock(await readFile(readme, 'utf8'), 'browser-example');
    await writeFile(path.join(site, 'index.html'), `<!doctype html><meta charset="utf-8"><title>example</title><link rel="icon" href="data:,">\n${html}`);
    const server = await startStaticServer(site);
    try {
      const page = await watchedPage(context);
      await page.goto(server.url + '/');
      // The example wires the input once the engine has loaded.
      await page.waitForFunction(() => typeof document.querySelector('#q').oninput === 'function', null, { timeout: 120000 });
      await page.locator('#q').fill('what stops prompt injection');
      await page.waitForSelector('#results li', { timeout: 60000 });
      assert.equal(await page.locator('#results li').first().textContent(), 'Security model', readme);
      await page.locator('#q').fill('');
      await page.locator('#q').dispatchEvent('input');
      assert.equal(await page.locator('#results li').count(), 0);
      assert.deepEqual(page.errors, [], `${readme}: console errors`);
      await page.close();
    } finally {
      await server.close();
    }
  }
});
