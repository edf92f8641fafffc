// sextant's service worker: after a first visit, search works offline for what was fetched.
// Content-hashed files under sextant/ (index files, model, tokenizer, package, wasm) are served
// cache-first — they never change; the entry manifest, the UI files and pages are network-first
// with the cache as the fallback. Installed at the site root so it may serve every page.
const CACHE = 'sextant-v1';
const scopeUrl = new URL(self.registration.scope);
const sextantDir = new URL('sextant/', scopeUrl).pathname;

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

function isImmutable(url) {
  if (!url.pathname.startsWith(sextantDir)) return false;
  const rest = url.pathname.slice(sextantDir.length);
  return /^pkg\.[0-9a-f]{16}\//.test(rest) || /^(model|tokenizer)\.[0-9a-f]{16}\./.test(rest) || /^index\/[a-z]+\.[0-9a-f]{16}\.[a-z]+$/.test(rest);
}

async function cacheFirst(request) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(request);
  if (hit) return hit;
  const response = await fetch(request);
  if (response.ok) await cache.put(request, response.clone());
  return response;
}

async function networkFirst(request) {
  const cache = await caches.open(CACHE);
  try {
    const response = await fetch(request, { cache: 'no-store' });
    if (response.ok) await cache.put(request, response.clone());
    return response;
  } catch (error) {
    const hit = await cache.match(request, { ignoreSearch: true });
    if (hit) return hit;
    throw error;
  }
}

/** The names of every file of an index manifest, as paths. */
function indexFiles(entry, index) {
  const dir = sextantDir + entry.index.replace(/[^/]*$/, '');
  const f = index.files;
  const names = [f.norms, f.vectors.meta, ...f.keyword.map((s) => s.file), ...f.fragments.files, ...f.vectors.codes.files, ...f.vectors.blocks.files];
  return [sextantDir + entry.index, ...names.map((n) => dir + n)];
}

/** Drops cached hashed files that the current entry manifest no longer names. */
async function prune(manifestResponse) {
  try {
    const entry = await manifestResponse.json();
    const index = await (await cacheFirst(new Request(new URL(entry.index, new URL(sextantDir, scopeUrl))))).json();
    const keep = new Set([entry.model, entry.tokenizer].map((f) => sextantDir + f).concat(indexFiles(entry, index)));
    const cache = await caches.open(CACHE);
    for (const request of await cache.keys()) {
      const url = new URL(request.url);
      if (!isImmutable(url)) continue;
      const inPackage = url.pathname.startsWith(sextantDir + entry.package);
      if (!inPackage && !keep.has(url.pathname)) await cache.delete(request);
    }
  } catch {}
}

self.addEventListener('fetch', (event) => {
  const { request } = event;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== scopeUrl.origin) return; // the LLM and other hosts are never cached
  if (isImmutable(url)) {
    event.respondWith(cacheFirst(request));
    return;
  }
  if (url.pathname === sextantDir + 'sextant.json') {
    event.respondWith(
      networkFirst(request).then((response) => {
        event.waitUntil(prune(response.clone()));
        return response;
      }),
    );
    return;
  }
  event.respondWith(networkFirst(request));
});
