// Headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, with a fresh
// profile and no background networking; every page records console errors and page errors.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A fresh headless Chromium; its profile folder (about 100 MB) is removed when it closes. */
export async function launch() {
  const profile = mkdtempSync(path.join(tmpdir(), 'sextant-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-dev-shm-usage'],
  });
  // Removed once close() has seen the browser exit (at the 'close' event it may still write).
  const close = context.close.bind(context);
  context.close = async (...args) => {
    await close(...args);
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    } catch (e) {
      console.error(`could not remove the browser profile ${profile}: ${e.message}`);
    }
  };
  return context;
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
