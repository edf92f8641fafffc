// The research workspace (www/research/) in a fresh headless Chromium, at the edges of its life:
// files chosen or dropped in the first moments of a first visit, before the collection has
// opened; file names that would read backwards; documents that expand far past their size; and
// a collection whose WebAssembly has trapped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { watchedPage } from './browser.mjs';
import { openWorkspaceSite, TIDE_NOTES, docxBomb, docxOf } from './documents.mjs';
import { startLlmServer, sseAnswer } from './llm-server.mjs';

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
    throw new Error(`${e.message}\nstatus: ${await text('#status')}\nfiles: ${await text('#files')}\nresults: ${await text('#results')}\nconversation: ${await text('#conversation')}\ngraph: ${await text('#graph-text')}`);
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

/** Opens the workspace on a new collection `name`; resolves once it is open. */
async function openCollection(page, name) {
  await page.goto(`${workspace.server.url}/research/`);
  await waitState(page, () => document.querySelector('#status').textContent.startsWith('Opened'));
  await page.locator('#new-name').fill(name);
  await page.locator('#new-collection button').click();
  await waitState(page, (n) => document.querySelector('#status').textContent.includes(`Opened`) && document.querySelector('#status').textContent.includes(n), name);
}

const completion = (message) => ({ body: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: null, ...message } }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }) });

test('a name with a right-to-left override is shown with the override visible and isolated, wherever it appears', async () => {
  const RLO = '\u202E';
  const name = `${RLO}gnp.md`; // reads as "dm.png" if the override acts
  const llm = await startLlmServer((request) => {
    if (!request.body.stream) return completion({ content: 'beacon' });
    const id = [...request.body.messages[0].content.matchAll(/chunk_id="([^"]+)"/g)].map((m) => m[1])[0];
    return { events: sseAnswer(`The beacon is lit [${id}].`) };
  });
  const page = await watchedPage(workspace.context);
  try {
    await openCollection(page, 'bidi');
    await page.locator('#pick').setInputFiles([{ name, mimeType: 'text/markdown', buffer: Buffer.from(`# ${RLO}Beacon notes\n\nThe beacon is lit at dusk by the keeper.\n`) }]);
    await waitState(page, () => document.querySelectorAll('#files li').length === 1 && document.querySelector('#progress-text').textContent === 'every chunk embedded');
    await page.locator('#query').fill('beacon lit at dusk');
    await waitState(page, () => document.querySelector('#results').children.length > 0);
    await page.evaluate(() => (document.querySelector('#llm-settings').open = true));
    await page.locator('#llm-form [name=base_url]').fill(llm.baseUrl);
    await page.locator('#llm-form [name=model]').fill('m');
    await page.locator('#llm-form [name=tools]').uncheck();
    await page.locator('#llm-form button').click();
    await page.locator('#question').fill('When is the beacon lit?');
    await page.locator('#ask').click();
    await waitState(page, () => document.querySelector("#conversation li .cite"), null, { timeout: 30000 });
    await page.locator('#conversation li .cite').first().click();
    await waitState(page, () => !document.querySelector('#source').hidden && document.querySelector('#source-where').textContent);
    // Every place the name (or the title it carries) is shown: the file list, the results, the
    // citation's title, the source panel. (A passage's own text is shown as it is, in a block of
    // its own: marks there may be the document's right-to-left writing.)
    const shown = await page.evaluate(() => {
      const raw = /[\u061C\u200E\u200F\u202A-\u202E]/;
      const places = {
        file: document.querySelector('#files li .path'),
        'result title': document.querySelector('#results li strong'),
        'result source': document.querySelector('#results li .where'),
        'source title': document.querySelector('#source-title'),
        'source where': document.querySelector('#source-where'),
      };
      const out = {};
      for (const [key, node] of Object.entries(places)) {
        out[key] = {
          raw: raw.test(node.textContent),
          visible: node.textContent.includes('U+202E'),
          isolated: [...node.querySelectorAll('bdi')].some((b) => b.textContent.includes('U+202E')) || node.tagName === 'BDI',
        };
      }
      const cite = document.querySelector('#conversation li .cite').title;
      out.cite = { raw: raw.test(cite), visible: cite.includes('U+202E'), isolated: cite.includes('\u2068') && cite.includes('\u2069') };
      return out;
    });
    for (const [place, s] of Object.entries(shown)) {
      assert.equal(s.raw, false, `${place}: the override is in the page as it is`);
      assert.equal(s.visible, true, `${place}: the override is not shown`);
      assert.equal(s.isolated, true, `${place}: the name is not isolated`);
    }
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
    await llm.close();
  }
});

test('a DOCX zip bomb is refused in moments with a message that says why, and the workspace goes on', async () => {
  const page = await watchedPage(workspace.context);
  try {
    await openCollection(page, 'bombs');
    const started = Date.now();
    await page.locator('#pick').setInputFiles([
      { name: 'bomb.docx', mimeType: 'application/octet-stream', buffer: docxBomb(100) },
      { name: 'liar.docx', mimeType: 'application/octet-stream', buffer: docxBomb(100, { declare: 4096 }) },
      { name: 'tides.docx', mimeType: 'application/octet-stream', buffer: docxOf([['Heading1', 'Tide tables'], [null, 'Spring tides happen near the new and the full moon.']]) },
    ]);
    await waitState(page, () => {
      const rows = [...document.querySelectorAll('#files li')].map((li) => li.textContent);
      return rows.length === 3 && rows.filter((r) => r.includes('Could not add it')).length === 2 && rows.some((r) => r.startsWith('tides.docx') && /ready|embedded/.test(r));
    }, null, { timeout: 60000 });
    const seconds = (Date.now() - started) / 1000;
    const rows = await page.$$eval('#files li', (items) => items.map((li) => li.textContent));
    assert.match(rows.find((r) => r.startsWith('bomb.docx')), /expands to 100 MB, over the 64 MB a file may hold/);
    assert.match(rows.find((r) => r.startsWith('liar.docx')), /expands past the 4 KB it declares/);
    assert.ok(seconds < 30, `${seconds} s`);
    await page.locator('#query').fill('spring tides full moon');
    await waitState(page, () => document.querySelector('#results').children.length > 0);
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
  }
});

test('when the collection\'s WebAssembly traps, the operation that met it fails with a message and the workspace restarts it from storage', async () => {
  const page = await watchedPage(workspace.context);
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-trap-')); // the page reads its files from here
  try {
    await openCollection(page, 'trap');
    await page.locator('#pick').setInputFiles([{ name: 'tides.md', mimeType: 'text/markdown', buffer: Buffer.from(TIDE_NOTES) }]);
    await waitState(page, () => document.querySelectorAll('#files li').length === 1 && document.querySelector('#progress-text').textContent === 'every chunk embedded');
    // Leave the collection's WebAssembly no memory to grow into (as a long session might): its
    // next large allocation aborts, an `unreachable` trap, after which the instance is unusable.
    const researchWorker = page.workers().find((w) => w.url().endsWith('/research-worker.js'));
    assert.ok(researchWorker, page.workers().map((w) => w.url()).join(', '));
    const grown = await researchWorker.evaluate(async () => {
      const glue = await import(new URL('./pkg/sextant_collection.js', self.location.href).href);
      const { memory } = glue.initSync({ module: new Uint8Array() }); // the instance's exports
      for (let step = 16384; step >= 1; step = Math.floor(step / 2)) {
        for (;;) {
          try {
            memory.grow(step);
          } catch {
            break;
          }
        }
      }
      return memory.buffer.byteLength;
    });
    assert.ok(grown > 2 ** 31, `${grown} bytes`);
    // A file larger than what the allocator still has free inside the memory it holds (loading
    // the model leaves tens of MB free: a 10 MB file was read without growing), under the 64 MiB a
    // file may hold. Written to disk: Playwright takes at most 50 MB as a buffer.
    const big = path.join(dir, 'big.txt');
    writeFileSync(big, 'word '.repeat(12_000_000));
    await page.locator('#pick').setInputFiles(big);
    // The add that met the trap says it failed; the workspace starts a new engine and reopens the
    // collection from storage.
    await waitState(page, () => [...document.querySelectorAll('#files li')].some((li) => li.textContent.startsWith('big.txt') && li.textContent.includes('Could not add it')), null, { timeout: 60000 });
    await waitState(page, () => /restarted/.test(document.querySelector('#status').textContent), null, { timeout: 60000 });
    assert.match(await page.locator('#files').textContent(), /stopped/);
    // It works again, with what was stored.
    await page.locator('#query').fill('spring tides full moon');
    await waitState(page, () => document.querySelector('#results').children.length > 0 && document.querySelector('#results').dataset.query === 'spring tides full moon', null, { timeout: 60000 });
    await page.locator('#pick').setInputFiles([{ name: 'lights.md', mimeType: 'text/markdown', buffer: Buffer.from('# Lights\n\nThe lamp turns at dusk.\n') }]);
    await waitState(page, () => [...document.querySelectorAll('#files li .path')].some((p) => p.textContent === 'lights.md') && document.querySelector('#progress-text').textContent === 'every chunk embedded');
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('"Build graph": progress and cost, paused and resumed after a reload without reading a finished chunk again, kept, and a search that reads it shows its entities with links to their passages', async () => {
  const { readFileSync, readdirSync } = await import('node:fs');
  const path = await import('node:path');
  const { fixtures, importPackage } = await import('./harness.mjs');
  const { graphPlan, completion: graphCompletion } = await import('./graph-llm.mjs');
  const api = await importPackage();
  await api.ready();
  const prompts = api.defaults().prompts;
  const corpus = path.join(fixtures, 'graph-corpus');
  // Extraction answers take 400 ms each, so a pause lands midway; the pipeline's other calls are
  // scripted below, and the answer streams, citing the first passage it was shown.
  const rules = graphPlan(prompts);
  const server = await startLlmServer((request, i) => {
    const planned = rules(request, i);
    if (planned) return { ...planned, bodyDelayMs: request.body.messages[0].content === prompts.graph_extract ? 400 : 0 };
    if (request.body?.stream) {
      const first = /chunk_id="([^"]+)"/.exec(request.body.messages[0].content)?.[1];
      return { events: sseAnswer(`Tomas Varga started it [${first}].`) };
    }
    // The pipeline's rewrite keeps the question; its judge has what it needs.
    if (request.body.messages[0].content === prompts.research_rewrite) return graphCompletion(request.body.messages.at(-1).content);
    return graphCompletion('YES');
  });
  const firstAsks = () => server.requests.filter((r) => r.body?.messages?.[0]?.content === prompts.graph_extract && r.body.messages.length === 2).map((r) => r.body.messages[1].content);
  const page = await watchedPage(workspace.context);
  try {
    await openCollection(page, 'graph shelf');
    const files = readdirSync(corpus).filter((f) => f.endsWith('.md')).map((name) => ({ name, mimeType: 'text/markdown', buffer: readFileSync(path.join(corpus, name)) }));
    await page.locator('#pick').setInputFiles(files);
    await waitState(page, (n) => document.querySelectorAll('#files li').length === n && document.querySelector('#progress-text').textContent === 'every chunk embedded', files.length);
    await waitState(page, () => /No graph yet/.test(document.querySelector('#graph-text').textContent));
    await page.locator('#llm-settings summary').click().catch(() => {});
    await page.evaluate(() => (document.getElementById('llm-settings').open = true));
    await page.locator('#llm-form [name=base_url]').fill(server.baseUrl);
    await page.locator('#llm-form [name=model]').fill('rules');
    await page.locator('#llm-form [name=tools]').uncheck();
    await page.locator('#llm-form [name=graph]').check();
    await page.locator('#llm-form button').click();

    // The page may show every chunk embedded a moment before the worker's last file is (then
    // the worker answers NOT_READY, as a reader would read it): ask again until it builds.
    const build = async () => {
      for (let attempt = 0; attempt < 30; attempt++) {
        await page.locator('#build-graph').click();
        const state = await waitState(page, () => (/NOT_READY/.test(document.querySelector('#status').textContent) ? 'wait' : /Reading chunks|^Graph built/.test(document.querySelector('#graph-text').textContent) || /^Graph built/.test(document.querySelector('#status').textContent) ? 'building' : null));
        if ((await state.jsonValue()) === 'building') return;
        await page.evaluate(() => (document.querySelector('#status').textContent = ''));
        await new Promise((r) => setTimeout(r, 1000));
      }
      throw new Error('the graph never started');
    };
    await build();
    await waitState(page, () => /Reading chunks for the graph: [3-9] of \d+ · \d+ LLM calls, \d+ tokens/.test(document.querySelector('#graph-text').textContent));
    await page.locator('#pause-graph').click();
    await waitState(page, () => /Graph paused/.test(document.querySelector('#status').textContent));
    const before = firstAsks();
    // A chunk is done once its gleaning round (its last call: the rules find nothing more) was
    // answered.
    const finished = new Set(server.requests.filter((r) => r.body?.messages?.[0]?.content === prompts.graph_extract && r.body.messages.length === 4 && r.finished).map((r) => r.body.messages[1].content));
    assert.ok(before.length >= 3 && before.length < 11, `paused midway: ${before.length} chunks read`);

    // A reload: the chunks read are kept; building again reads only the others.
    await page.reload();
    // (Vectors are saved every few seconds: a reload soon after embedding may embed a few again.)
    await waitState(page, () => document.querySelector('#status').textContent.startsWith('Opened') && document.querySelector('#progress-text').textContent === 'every chunk embedded' && /No graph yet/.test(document.querySelector('#graph-text').textContent));
    await build();
    await waitState(page, () => /^Graph built/.test(document.querySelector('#status').textContent));
    const all = firstAsks();
    // Only the chunks in flight when it paused (two calls at a time) are asked about again.
    assert.equal(new Set(all).size, 11, 'every chunk read, over both builds');
    assert.ok(all.length - 11 <= 2, `${all.length - 11} chunks read twice`);
    assert.ok(finished.size >= 1, 'some chunks were done before the pause');
    for (const passage of all.slice(before.length)) assert.ok(!finished.has(passage), 'a chunk done before the pause is not read again');
    await waitState(page, () => /Graph built · \d+ entities, \d+ relations from 11 chunks \(\d+ already read/.test(document.querySelector('#graph-text').textContent));

    // Kept: after another reload it is there, and current.
    await page.reload();
    await waitState(page, () => document.querySelector('#progress-text').textContent === 'every chunk embedded' && /^Graph built/.test(document.querySelector('#graph-text').textContent));

    await page.locator('#question').fill('Who started the company that made the Harbor pump?');
    await page.locator('#ask').click();
    await waitState(page, () => document.querySelector('#conversation li:last-child .note')?.textContent.includes('cited passage'));
    await page.evaluate(() => (document.getElementById('trace-panel').open = true));
    const graphSummary = page.locator('#trace .graph-lines summary').first();
    assert.match(await graphSummary.textContent(), /graph: \d+ entities and relations/);
    await graphSummary.click();
    const line = page.locator('#trace .graph-lines li', { hasText: 'Tomas Varga' }).first();
    assert.ok(await line.count(), 'the founder is among the graph lines');
    await line.locator('a.cite').first().click();
    await waitState(page, () => !document.getElementById('source').hidden && /Tomas Varga/.test(document.getElementById('source-text').textContent));
    assert.deepEqual(page.errors, []);
  } finally {
    await page.close();
    await server.close();
  }
});
