// Several sites in one search box: the demo site merges a second site served from another origin
// (data-merge-index, or the build's --merge-index in sextant.json); in Chromium, a query about
// the other site's subject lands on its pages, linked to its origin, a query about the demo's on
// the demo's, and a lighter weight moves the other site's results down.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { root, modelDir, sextantBin, buildDemoSite } from './harness.mjs';
import { startStaticServer } from './static-server.mjs';
import { launch, watchedPage } from './browser.mjs';

let site;
let other;
let server;
let otherServer;
let context;

const PAGES = {
  tides: ['Tide tables', 'Spring tides follow the new and the full moon, when the sun and the moon pull together; neap tides come between, at the quarter moons, with the smallest range between high and low water.'],
  pilots: ['Harbour pilots', 'A harbour pilot boards an arriving ship outside the breakwater and takes it to its berth, knowing the channel, the shoals and the set of the current at each state of the tide.'],
  knots: ['Knots for mooring', 'A bowline makes a fixed loop at the end of a mooring line; a round turn and two half hitches hold a line to a ring or a post under load.'],
};

const env = { ...process.env, SEXTANT_MODEL_DIR: modelDir, SEXTANT_PACKAGE_DIR: process.env.SEXTANT_PACKAGE_DIR ?? path.join(root, 'pkg') };

before(async () => {
  other = mkdtempSync(path.join(tmpdir(), 'sextant-harbour-'));
  for (const [slug, [title, text]] of Object.entries(PAGES)) {
    mkdirSync(path.join(other, slug));
    writeFileSync(path.join(other, slug, 'index.html'), `<!doctype html><html lang="en"><head><title>${title}</title></head><body><main><h1>${title}</h1><p>${text}</p></main></body></html>`);
  }
  execFileSync(sextantBin, ['build', '--site', other], { stdio: 'pipe', env });
  // Another origin, which lets any site read its search files.
  otherServer = await startStaticServer(other, { headers: { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'content-range, content-length' } });
  site = buildDemoSite('sextant-multisite-');
  const page = readFileSync(path.join(site, 'getting-started/index.html'), 'utf8');
  for (const [slug, weight] of [['merged', 1], ['merged-light', 0.9]]) {
    mkdirSync(path.join(site, slug), { recursive: true });
    const merge = JSON.stringify([{ url: `${otherServer.url}/sextant/`, name: 'harbour', weight }]);
    writeFileSync(path.join(site, slug, 'index.html'), page.replace('<div id="search"', `<div id="search" data-merge-index='${merge}'`));
  }
  server = await startStaticServer(site);
  context = await launch();
});

after(async () => {
  await context?.close();
  await server?.close();
  await otherServer?.close();
});

/** The pages shown for `query` on `pathname`: [{href, site}] once hybrid results are in. */
async function shown(page, query) {
  await page.locator('.sextant-input').fill(query);
  await page.waitForFunction((q) => {
    const list = document.querySelector('.sextant-results');
    return list.dataset.query === q && list.dataset.mode === 'hybrid' && document.querySelectorAll('.sextant-page').length > 0;
  }, query, { timeout: 120000 });
  return page.locator('.sextant-page').evaluateAll((items) => items.map((li) => ({ href: li.querySelector('.sextant-page-title').href, base: li.dataset.base, site: li.querySelector('.sextant-site')?.textContent ?? null })));
}

test('a merged site: its pages found by their words and linked to its origin, this site\'s by theirs', async () => {
  const page = await watchedPage(context);
  await page.goto(`${server.url}/merged/`);
  const warnings = [];
  page.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
  const tides = await shown(page, 'spring tides and the full moon');
  assert.deepEqual(warnings, [], 'a merged site was left out');
  // Lists are fused by rank (scores of two indexes do not compare): each site's best page is in
  // the first two, a tie going to this site.
  const harbour = tides.findIndex((p) => p.base === 'harbour');
  assert.ok(harbour >= 0 && harbour <= 1, JSON.stringify(tides, null, 1));
  assert.equal(tides[harbour].href, `${otherServer.url}/tides/`);
  assert.equal(tides[harbour].site, new URL(otherServer.url).host);
  const ours = await shown(page, 'what stops prompt injection');
  assert.equal(new URL(ours[0].href).origin, server.url);
  assert.equal(new URL(ours[0].href).pathname, '/security/');
  assert.equal(ours[0].site, null, 'this site\'s results name no other site');
  // Following a merged result goes to the other site.
  await shown(page, 'spring tides and the full moon');
  await Promise.all([page.waitForURL(`${otherServer.url}/tides/`), page.locator('.sextant-page[data-base="harbour"] .sextant-page-title').first().click()]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a merged site\'s weight scales its results: at 0.9 its best page comes after several of this site\'s', async () => {
  const page = await watchedPage(context);
  const firstHarbour = async (pathname) => {
    await page.goto(`${server.url}${pathname}`);
    const found = await shown(page, 'spring tides and the full moon');
    return { at: found.findIndex((p) => p.base === 'harbour'), found };
  };
  const even = await firstHarbour('/merged/');
  const light = await firstHarbour('/merged-light/');
  // 0.9 / (60 + 1) falls between this site's 7th and 8th chunk (1 / (60 + r)).
  assert.ok(light.at > even.at + 1, JSON.stringify(light.found));
  assert.equal(light.found[light.at].href, `${otherServer.url}/tides/`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the build records merged sites in sextant.json (--merge-index URL[,WEIGHT]) and refuses what is not a URL or a weight', () => {
  const copy = mkdtempSync(path.join(tmpdir(), 'sextant-merge-build-'));
  for (const slug of Object.keys(PAGES)) cpSync(path.join(other, slug), path.join(copy, slug), { recursive: true });
  execFileSync(sextantBin, ['build', '--site', copy, '--merge-index', 'https://blog.example.com/sextant/,0.5', '--merge-index', '/docs/sextant/'], { stdio: 'pipe', env });
  const entry = JSON.parse(readFileSync(path.join(copy, 'sextant/sextant.json'), 'utf8'));
  assert.deepEqual(entry.merge, [{ url: 'https://blog.example.com/sextant/', weight: 0.5 }, { url: '/docs/sextant/', weight: 1 }]);
  for (const [bad, says] of [['ftp://x/sextant/', /is not a URL/], ['/x/sextant/,0', /not over 0/], ['/x/sextant/,500', /at most 100/]]) {
    const run = spawnSync(sextantBin, ['build', '--site', copy, '--merge-index', bad], { encoding: 'utf8', env });
    assert.notEqual(run.status, 0, bad);
    assert.match(run.stderr, says, run.stderr);
  }
  // Without the flag, no merge list (and the entry is what it was).
  execFileSync(sextantBin, ['build', '--site', copy], { stdio: 'pipe', env });
  assert.equal(JSON.parse(readFileSync(path.join(copy, 'sextant/sextant.json'), 'utf8')).merge, undefined);
});
