// Headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, with a fresh
// profile and no background networking; every page records console errors and page errors.
import { chromium } from 'playwright-core';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export async function launch() {
  return chromium.launchPersistentContext(mkdtempSync(path.join(tmpdir(), 'sextant-chromium-')), {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-dev-shm-usage'],
  });
}

/** Opens a page that collects console errors and uncaught exceptions into page.errors. */
export async function watchedPage(context) {
  const page = await context.newPage();
  page.errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(m.text());
  });
  page.on('pageerror', (e) => page.errors.push(String(e)));
  return page;
}
