// sextant's service worker: after a first visit, search works offline for what was fetched.
// Installed at the site root, so it may serve every page.
//
// What it keeps comes from the entry manifest `sextant/sextant.json` (fetched fresh, network
// first): its `files` are every file the site build wrote under sextant/. Of those, the
// content-named ones (the index folder's, the package folder's, the model folder's, the model and the tokenizer, as
// the manifest names them) never change and are served from the cache first; the others (the
// UI's files) and the site's pages are fetched first and kept as a fallback for offline use. A
// cached file under sextant/ the current manifest no longer lists is dropped.
//
// It keeps only what a cache may keep (a whole 200 answer from this origin that does not say
// no-store or private, or Vary: *), and what it does not keep passes through as the network
// answered it: a failure to store never replaces an answer. Byte ranges are not intercepted,
// except those of the index's packs (immutable, read object by object with Range requests): each
// range is kept under its own key, and answered from a whole pack when `prefetch()` cached one,
// so what a visitor searched stays searchable offline.
const CACHE = 'sextant-v1';
const scopeUrl = new URL(self.registration.scope);
const sextantDir = new URL('sextant/', scopeUrl).pathname;
const entryPath = `${sextantDir}sextant.json`;

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

// A page it did not control when it loaded (a first visit: it was not there yet) names what it
// loaded, `{sextant: 'keep', urls}` (the UI sends it once this worker is active): the page and
// its files are kept where they are not yet, so the visit reloads offline.
self.addEventListener('message', (event) => {
  if (event.data?.sextant !== 'keep' || !Array.isArray(event.data.urls)) return;
  event.waitUntil(keepUrls(event.data.urls.slice(0, MAX_KEPT_URLS)));
});

/** The current entry manifest: {files: Set, immutable(path)}, or null before one is known. */
let known = null;

/** What a manifest says: the files it lists, and which of them are named by their content. */
function readEntry(entry) {
  if (!Array.isArray(entry?.files)) return null;
  const files = new Set(entry.files);
  const indexDir = String(entry.index ?? '').replace(/[^/]*$/, '');
  // A model body and its row files (`model_body`), each named by its content, in their folder.
  const modelDir = String(entry.model_body ?? '').replace(/[^/]*$/, '');
  const named = (rel) => rel === entry.model || rel === entry.tokenizer || (entry.package && rel.startsWith(entry.package)) || (indexDir && rel.startsWith(indexDir)) || (modelDir && rel.startsWith(modelDir));
  return { files, immutable: (rel) => files.has(rel) && named(rel) };
}

/** The last entry manifest seen (kept in the cache, so a restarted worker knows it too). */
async function entryManifest() {
  if (known) return known;
  try {
    const cached = await (await caches.open(CACHE)).match(entryPath);
    known = cached ? readEntry(await cached.json()) : null;
  } catch {}
  return known;
}

/** Whether a cache may keep this answer: whole, 200, this origin's, and not refused to caches. */
function storable(response) {
  if (response.status !== 200 || response.type !== 'basic') return false;
  const control = (response.headers.get('cache-control') ?? '').toLowerCase();
  if (/(^|[\s,])(no-store|private)([\s,=]|$)/.test(control)) return false;
  return !(response.headers.get('vary') ?? '').includes('*');
}

/** Keeps a copy of the answer if it may be kept; a failure to store changes nothing. */
function keep(event, request, response) {
  if (!storable(response)) return;
  const copy = response.clone();
  event.waitUntil(caches.open(CACHE).then((cache) => cache.put(request, copy)).catch(() => {}));
}

/** The most URLs one page may ask to keep. */
const MAX_KEPT_URLS = 500;

/** Keeps each URL of this scope not kept yet, as the network answers it now (if it may be kept). */
async function keepUrls(urls) {
  try {
    const cache = await caches.open(CACHE);
    for (const raw of urls) {
      let url;
      try {
        url = new URL(String(raw), scopeUrl);
      } catch {
        continue;
      }
      url.hash = '';
      if (!url.href.startsWith(scopeUrl.href) || url.pathname === entryPath || (await cache.match(url.href))) continue;
      const response = await fetch(url.href).catch(() => null);
      if (response && storable(response)) await cache.put(url.href, response);
    }
  } catch {}
}

async function cacheFirst(event, request) {
  const hit = await (await caches.open(CACHE)).match(request).catch(() => undefined);
  if (hit) return hit;
  const response = await fetch(request);
  keep(event, request, response);
  return response;
}

async function networkFirst(event, request, init) {
  try {
    const response = await fetch(request, init);
    keep(event, request, response);
    return response;
  } catch (error) {
    const hit = await (await caches.open(CACHE)).match(request, { ignoreSearch: true }).catch(() => undefined);
    if (hit) return hit;
    throw error;
  }
}

/** Learns the new manifest and drops cached files under sextant/ that it no longer lists. */
async function prune(response) {
  try {
    const entry = readEntry(await response.json());
    if (!entry) return;
    known = entry;
    const cache = await caches.open(CACHE);
    for (const request of await cache.keys()) {
      const { pathname } = new URL(request.url);
      if (!pathname.startsWith(sextantDir) || pathname === entryPath) continue;
      if (!entry.files.has(pathname.slice(sextantDir.length))) await cache.delete(request);
    }
  } catch {}
}

async function handle(event) {
  const { request } = event;
  const { pathname } = new URL(request.url);
  if (pathname === entryPath) {
    const response = await networkFirst(event, request, { cache: 'no-store' });
    if (response.ok) event.waitUntil(prune(response.clone()));
    return response;
  }
  if (pathname.startsWith(sextantDir)) {
    const entry = await entryManifest();
    if (entry?.immutable(pathname.slice(sextantDir.length))) return cacheFirst(event, request);
  }
  return networkFirst(event, request);
}

/** `bytes=a-b` → [a, b] (inclusive), or null for any other range. */
function byteRange(header) {
  const m = /^bytes=(\d+)-(\d+)$/.exec(header ?? '');
  return m && Number(m[1]) <= Number(m[2]) ? [Number(m[1]), Number(m[2])] : null;
}

/** A 206 answer of `bytes` (the range [a, b] of a file of `size` bytes, if known). */
function partial(bytes, [a, b], size) {
  return new Response(bytes, {
    status: 206,
    headers: { 'content-range': `bytes ${a}-${b}/${size ?? '*'}`, 'content-length': String(bytes.byteLength) },
  });
}

/** A range of an index pack: from a cached whole pack, a cached range, or the network (kept). */
async function packRange(event, request) {
  const range = byteRange(request.headers.get('range'));
  const { pathname } = new URL(request.url);
  const entry = await entryManifest();
  if (!range || !entry?.immutable(pathname.slice(sextantDir.length))) return fetch(request);
  const cache = await caches.open(CACHE);
  const whole = await cache.match(request.url).catch(() => undefined);
  if (whole) {
    const bytes = await whole.arrayBuffer();
    if (range[1] < bytes.byteLength) return partial(bytes.slice(range[0], range[1] + 1), range, bytes.byteLength);
  }
  const key = new URL(request.url);
  key.searchParams.set('sextant-range', `${range[0]}-${range[1]}`);
  const hit = await cache.match(key.href).catch(() => undefined);
  if (hit) return partial(await hit.arrayBuffer(), range, null);
  const response = await fetch(request);
  if (response.status === 206 && response.type === 'basic') {
    const copy = await response.clone().arrayBuffer();
    if (copy.byteLength === range[1] - range[0] + 1) event.waitUntil(cache.put(key.href, new Response(copy)).catch(() => {}));
  }
  return response;
}

self.addEventListener('fetch', (event) => {
  const { request } = event;
  // Not intercepted at all: other methods, other hosts (the LLM is never cached), byte ranges
  // other than the index's (media, resumed downloads: a cache keeps whole answers only), and
  // requests only a cache may answer from another context.
  if (request.method !== 'GET') return;
  if (new URL(request.url).origin !== scopeUrl.origin) return;
  if (request.headers.has('range')) {
    if (new URL(request.url).pathname.startsWith(sextantDir)) event.respondWith(packRange(event, request));
    return;
  }
  if (request.cache === 'only-if-cached' && request.mode !== 'same-origin') return;
  event.respondWith(handle(event));
});
