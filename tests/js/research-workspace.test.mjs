// The research workspace (www/research/) in a fresh headless Chromium, at the edges of its life:
// files chosen or dropped in the first moments of a first visit, before the collection has
// opened; file names that would read backwards; documents that expand far past their size; and
// a collection whose WebAssembly has trapped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { watchedPage } from './browser.mjs';
import { openWorkspaceSite, TIDE_NOTES } from './documents.mjs';

let workspace;
before(async () => {
  workspace = await openWorkspaceSite('sextant-research-workspace-');
});
after(() => workspace?.close());

/** page.waitForFunction, failing with what the workspace shows when it times out. */
async function waitState(page, fn, arg, options = { timeout: 120000 }) {
  try {
    return await page.waitForFunction(fn, arg, options);
  } catch (e) {
    const text = async (sel) => (await page.locator(sel).textContent().catch(() => '')).slice(0, 400);
    throw new Error(`${e.message}\nstatus: ${await text('#status')}\nfiles: ${await text('#files')}\nresults: ${await text('#results')}`);
  }
}

/** The texts the status line showed, in order (recorded from the first moment of the page). */
async function recordStatus(page) {
  await page.addInitScript(() => {
    window.__said = [];
    new MutationObserver(() => {
      const status = document.getElementById('status');
      if (status && status.textContent !== window.__said.at(-1)) window.__said.push(status.textContent);
    }).observe(document, { childList: true, subtree: true, characterData: true });
  });
}

test('files chosen and dropped before the collection has opened are added once it is open', async () => {
  const page = await watchedPage(workspace.context);
  try {
    await recordStatus(page);
    await page.goto(`${workspace.server.url}/research/`, { waitUntil: 'domcontentloaded' });
    // At once, as a reader quick with the picker (or a drop) is, long before the model has loaded.
    await page.locator('#pick').setInputFiles([{ name: 'tides.md', mimeType: 'text/markdown', buffer: Buffer.from(TIDE_NOTES) }]);
    await page.evaluate(() => {
      const data = new DataTransfer();
      data.items.add(new File(['# Lights\n\nThe lamp of the lighthouse turns at dusk and stops at dawn.\n'], 'lights.md', { type: 'text/markdown' }));
      const drop = document.getElementById('drop');
      drop.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true }));
      drop.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await waitState(page, () => document.querySelectorAll('#files li').length === 2 && document.querySelector('#progress-text').textContent === 'every chunk embedded');
    const files = await page.$$eval('#files li .path', (items) => items.map((li) => li.textContent).sort());
    assert.deepEqual(files, ['lights.md', 'tides.md']);
    await page.locator('#query').fill('lamp turns at dusk');
    await waitState(page, () => document.querySelector('#results').children.length > 0 && document.querySelector('#results').dataset.query === 'lamp turns at dusk');
    const said = await page.evaluate(() => window.__said);
    assert.ok(!said.some((s) => /first/i.test(s) && /collection/i.test(s)), said.join('\n'));
    const text = await page.evaluate(() => document.body.innerText);
    assert.ok(!/(^|\s)--[a-z]/.test(text), `a CLI flag is shown: ${text.match(/\S*--[a-z]\S*/)?.[0]}`);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});
