// sextant at the edge: one ES-module Worker answering search, context and ask requests from the
// same index bundle the browser uses. The bundle, model and tokenizer are Workers Static Assets
// (read through the ASSETS binding on the first request, never at start-up); the WebAssembly is
// imported as a module by the package's `workerd` entry (Workers may not compile wasm at run time).
//
//   GET  /search?q=&k=&mode=…        → JSON, the fields of `sextant search --json`
//   GET  /context?q=&token_budget=…  → the framed context, text/plain
//   POST /ask {question, k, …}        → server-sent events: `token`… then `done` (verified
//                                       citations) or `error`
//   GET  /healthz                     → the index's manifest summary, memory in use and the index files read
// Anything else is served from the static assets (the demo site), or 404.
//
// Query parameters and body fields are the core's option names (`defaults().search`,
// `defaults().context`); the core validates them and its error codes map to HTTP statuses through
// `defaults().error_codes`. This file adds routing, auth, CORS, streaming and asset serving.
import { Sextant, memoryBytes, defaults, ready } from 'sextant-search';

const API = new Set(['/search', '/context', '/ask', '/healthz']);
const METHODS = { '/search': 'GET', '/context': 'GET', '/ask': 'POST', '/healthz': 'GET' };
/** Content types of the static assets, where the asset service does not set one. */
const TYPES = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  json: 'application/json',
  wasm: 'application/wasm',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  ico: 'image/x-icon',
  txt: 'text/plain; charset=utf-8',
  woff2: 'font/woff2',
  xml: 'application/xml',
};

let engine = null; // Promise<Sextant>, made on the first request that needs it
let loadedAt = null;
let loadMs = null;
const indexRead = { files: 0, bytes: 0 }; // index files read through ASSETS, as queries needed them

class HttpError extends Error {
  constructor(code, message, headers = {}) {
    super(message);
    this.code = code;
    this.headers = headers;
  }
}

function json(body, status = 200, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });
}

/** The HTTP status of an error code, from the core's table. */
async function statusOf(code) {
  await ready();
  return defaults().error_codes.find((c) => c.code === code)?.http_status ?? 500;
}

async function errorResponse(e) {
  const code = e?.code ?? 'INTERNAL';
  const body = { error: { code, message: String(e?.message ?? e) } };
  return json(body, await statusOf(code), e?.headers ?? {});
}

/** The entry manifest the site build wrote: hashed names of the bundle, model and tokenizer. */
async function siteManifest(env) {
  const response = await env.ASSETS.fetch(new Request('http://assets/sextant/sextant.json'));
  if (!response.ok) throw new HttpError('NOT_BUILT', 'the search assets are missing: run `make worker` (sextant build --site) before deploying');
  return response.json();
}

async function asset(env, name) {
  const response = await env.ASSETS.fetch(new Request(`http://assets/sextant/${name}`));
  if (!response.ok) throw new HttpError('NOT_BUILT', `asset sextant/${name} is missing (${response.status}); rebuild with \`make worker\``);
  return new Uint8Array(await response.arrayBuffer());
}

/** How the model's weights are held: SEXTANT_WEIGHTS, int8 by default (a 128 MB isolate). */
function weightsOf(env) {
  return env.SEXTANT_WEIGHTS || 'int8';
}

/** Loads the engine once; concurrent first requests share the same load. */
function getEngine(env) {
  engine ??= (async () => {
    const started = Date.now();
    const manifest = await siteManifest(env);
    if (!manifest.index) throw new HttpError('NOT_BUILT', 'the search assets are from another version of sextant: rebuild them with `make worker` (sextant build --site)');
    const [model, tokenizer] = await Promise.all([asset(env, manifest.model), asset(env, manifest.tokenizer)]);
    let sextant;
    try {
      // The index is read lazily: the manifest now, each shard or fragment when a query needs
      // it, through the ASSETS binding. int8 weights by default: about 40 MB less memory than f32
      // in a 128 MB isolate, for slower queries (BENCHMARKS.md); SEXTANT_WEIGHTS = "f32" trades
      // the other way.
      sextant = await Sextant.load({
        index: `http://assets/sextant/${manifest.index}`,
        model,
        tokenizer,
        weights: weightsOf(env),
        max_index_bytes: maxIndexBytes(env),
        fetch: async (url) => {
          const response = await env.ASSETS.fetch(new Request(url));
          if (!response.ok) return response;
          const bytes = await response.arrayBuffer();
          indexRead.files += 1;
          indexRead.bytes += bytes.byteLength;
          return new Response(bytes, { status: response.status, headers: response.headers });
        },
      });
    } catch (e) {
      // A bad value here is the Worker's configuration, not the request: say what to set.
      if (e.code === 'BAD_ARGUMENT') throw new HttpError('BAD_CONFIG', `SEXTANT_WEIGHTS is ${JSON.stringify(weightsOf(env))}: ${e.message}; fix it in wrangler.toml [vars]`);
      throw e;
    }
    loadMs = Date.now() - started;
    loadedAt = new Date().toISOString();
    return sextant;
  })().catch((e) => {
    engine = null; // let a later request try again
    throw e;
  });
  return engine;
}

/** A query-string value as JSON: numbers and booleans typed, the rest strings. */
function typed(value) {
  if (value === 'true' || value === 'false') return value === 'true';
  if (value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return value;
}

/**
 * Query parameters other than `q` as options (`bm25.k1=1.2` nests); the core validates them.
 * Objects without a prototype and own-key checks, so no parameter can reach Object.prototype.
 */
function optionsOf(url) {
  const options = Object.create(null);
  const bad = (key) => new HttpError('BAD_ARGUMENT', `invalid query parameter ${JSON.stringify(key)}`);
  for (const [key, value] of url.searchParams) {
    if (key === 'q') continue;
    const [head, sub, more] = key.split('.');
    if (more !== undefined || ['__proto__', 'constructor', 'prototype'].includes(head) || ['__proto__', 'constructor', 'prototype'].includes(sub)) throw bad(key);
    if (sub === undefined) {
      if (Object.hasOwn(options, head)) throw bad(key);
      options[head] = typed(value);
      continue;
    }
    options[head] ??= Object.create(null);
    if (typeof options[head] !== 'object') throw bad(key);
    options[head][sub] = typed(value);
  }
  return options;
}

function cors(request, env) {
  const origin = request.headers.get('origin');
  const allowed = (env.CORS_ORIGINS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (!origin || !(allowed.includes('*') || allowed.includes(origin))) return {};
  return {
    'access-control-allow-origin': allowed.includes('*') ? '*' : origin,
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': 'authorization, content-type',
    'access-control-expose-headers': 'x-sextant-chunks, x-sextant-tokens, x-sextant-cold-start',
    'access-control-max-age': '86400',
    vary: 'origin',
  };
}

function checkToken(request, env) {
  if (!env.SEXTANT_TOKEN) return;
  const header = request.headers.get('authorization') ?? '';
  const given = header.startsWith('Bearer ') ? header.slice(7) : '';
  // Compare in constant time for equal lengths.
  const a = new TextEncoder().encode(given);
  const b = new TextEncoder().encode(env.SEXTANT_TOKEN);
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  if (diff !== 0) throw new HttpError('UNAUTHORIZED', 'POST /ask needs Authorization: Bearer <SEXTANT_TOKEN>', { 'www-authenticate': 'Bearer' });
}

/** The request body as text, refused past `limit` bytes without reading the rest. */
async function readBody(request, limit) {
  const declared = Number(request.headers.get('content-length'));
  const tooLarge = () => new HttpError('PAYLOAD_TOO_LARGE', `the body is over ${limit} bytes (SEXTANT_MAX_REQUEST_BYTES)`);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  if (!request.body) return '';
  const reader = request.body.getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return new TextDecoder().decode(bytes);
}

/** Index bytes kept between requests: SEXTANT_MAX_INDEX_BYTES, 24 MB by default. */
const DEFAULT_MAX_INDEX_BYTES = 24e6;
function maxIndexBytes(env) {
  const configured = Number(env.SEXTANT_MAX_INDEX_BYTES);
  return env.SEXTANT_MAX_INDEX_BYTES && Number.isInteger(configured) && configured >= 0 ? configured : DEFAULT_MAX_INDEX_BYTES;
}

function maxRequestBytes(env) {
  const configured = Number(env.SEXTANT_MAX_REQUEST_BYTES);
  return Number.isInteger(configured) && configured > 0 ? configured : defaults().limits.max_request_bytes;
}

async function search(url, env) {
  const wasCold = engine === null;
  const sextant = await getEngine(env);
  const response = await sextant.search(url.searchParams.get('q') ?? '', optionsOf(url));
  return json(response, 200, { 'x-sextant-cold-start': String(wasCold) });
}

async function context(url, env) {
  const sextant = await getEngine(env);
  const framed = await sextant.context(url.searchParams.get('q') ?? '', optionsOf(url));
  return new Response(framed.context, {
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      // Chunk ids come from file names and may hold any character: percent-encoded, space-separated.
      'x-sextant-chunks': framed.included.map(encodeURIComponent).join(' '),
      'x-sextant-tokens': String(framed.tokens),
    },
  });
}

async function ask(request, env, ctx) {
  checkToken(request, env);
  await ready();
  const text = await readBody(request, maxRequestBytes(env));
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HttpError('BAD_ARGUMENT', 'the body must be JSON like {"question": "…", "k": 6}');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new HttpError('BAD_ARGUMENT', 'the body must be a JSON object like {"question": "…"}');
  const { question, ...options } = body;
  if (typeof question !== 'string') throw new HttpError('BAD_ARGUMENT', 'question must be a string');
  // A client may set what the core's context() takes, not the LLM settings of this service.
  const allowed = defaults().context;
  const unknown = Object.keys(options).find((key) => !Object.hasOwn(allowed, key));
  if (unknown !== undefined) throw new HttpError('BAD_ARGUMENT', `unknown field ${JSON.stringify(unknown)}; /ask takes question and ${Object.keys(allowed).join(', ')}`);
  if (!env.LLM_BASE_URL || !env.LLM_MODEL) throw new HttpError('LLM_NOT_CONFIGURED', 'set LLM_BASE_URL and LLM_MODEL (and the secret LLM_API_KEY) for this Worker');
  const sextant = await getEngine(env);
  // Stops the LLM call when the client goes away: its signal aborts, or a write fails.
  const upstream = new AbortController();
  request.signal?.addEventListener('abort', () => upstream.abort(), { once: true });
  const { readable, writable } = new TransformStream();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  const send = async (event, data) => {
    if (upstream.signal.aborted) return;
    try {
      await writer.write(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
    } catch {
      upstream.abort();
    }
  };
  // The answer starts once the core has validated the options and framed the context
  // (on_context); a bad option or question fails before that, as an HTTP error.
  let framed;
  const prepared = new Promise((resolve) => (framed = resolve));
  const answering = sextant.ask(question, {
    ...options,
    llm: { base_url: env.LLM_BASE_URL, model: env.LLM_MODEL, api_key: env.LLM_API_KEY },
    signal: upstream.signal,
    on_context: () => framed(),
    on_token: (token) => send('token', { text: token }),
  });
  await Promise.race([prepared, answering]);
  // A comment line every second while the answer runs: a client that has gone shows up as a
  // failed write even before the first token (workerd reports a disconnect only on a write).
  const heartbeat = setInterval(() => {
    if (upstream.signal.aborted) return;
    writer.write(encoder.encode(': keep-alive\n\n')).catch(() => upstream.abort());
  }, 1000);
  const run = (async () => {
    try {
      const answer = await answering;
      await send('done', {
        answer: answer.answer,
        refused: answer.refused,
        grounded: answer.grounded,
        truncated: answer.truncated,
        citations: answer.citations,
        unknown_citations: answer.unknown_citations,
        spans: answer.spans,
        chunks: answer.chunks.map(({ chunk_id, doc_id, title, url, heading_path }) => ({ chunk_id, doc_id, title, url, heading_path })),
        usage: answer.usage,
      });
    } catch (e) {
      // Only the code and message: upstream details (hosts, provider text) stay in this Worker.
      const code = e?.code ?? 'INTERNAL';
      const retryable = defaults().error_codes.find((c) => c.code === code)?.retryable ?? false;
      await send('error', { code, message: String(e?.message ?? e), retryable });
    } finally {
      clearInterval(heartbeat);
      await writer.close().catch(() => {});
    }
  })();
  ctx.waitUntil(run);
  return new Response(readable, { headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' } });
}

async function healthz(env) {
  const manifest = await siteManifest(env);
  const sextant = engine ? await engine : null;
  const m = sextant?.manifest();
  return json({
    status: 'ok',
    engine: sextant ? 'loaded' : 'not loaded',
    loaded_at: loadedAt,
    load_ms: loadMs,
    weights: weightsOf(env),
    index: manifest.index,
    pages: manifest.pages,
    chunks: manifest.chunks,
    generator: manifest.generator,
    model: m ? { sha256: m.model.sha256, dims: m.model.dims, pooling: m.model.pooling } : null,
    format: m ? m.format : null,
    wasm_memory_bytes: sextant ? memoryBytes() : null,
    max_index_bytes: maxIndexBytes(env),
    index_files_read: indexRead.files,
    index_bytes_read: indexRead.bytes,
  });
}

/** A static file, as a web host serves it: `/dir/` is `/dir/index.html`, `/dir` redirects to
 *  `/dir/`, and every file has its content type. Paths stay on this origin. */
async function staticAsset(request, env) {
  const url = new URL(request.url);
  // One leading slash, no backslashes: `//evil.example/x` must not become another host.
  const pathname = `/${url.pathname.replace(/\\/g, '/').replace(/^\/+/, '')}`;
  const fetchAsset = (path) => env.ASSETS.fetch(new Request(url.origin + path, request));
  const last = pathname.split('/').pop();
  if (pathname.endsWith('/')) return typed200(await fetchAsset(`${pathname}index.html`), 'html');
  if (!last.includes('.')) {
    const index = await fetchAsset(`${pathname}/index.html`);
    if (index.ok) {
      await index.body?.cancel();
      return new Response(null, { status: 308, headers: { location: `${pathname}/${url.search}` } });
    }
  }
  return typed200(await fetchAsset(pathname), last.split('.').pop().toLowerCase());
}

function typed200(response, extension) {
  if (!response.ok) return new Response('not found', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  const headers = new Headers(response.headers);
  const type = TYPES[extension];
  const given = headers.get('content-type');
  if (type && (!given || given.startsWith('application/octet-stream'))) headers.set('content-type', type);
  headers.set('x-content-type-options', 'nosniff');
  return new Response(response.body, { status: response.status, headers });
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const headers = cors(request, env);
    if (!API.has(url.pathname)) {
      if (!env.ASSETS) return new Response('not found', { status: 404 });
      return staticAsset(request, env);
    }
    if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers });
    let response;
    try {
      const allowed = METHODS[url.pathname];
      if (request.method !== allowed) {
        throw new HttpError('METHOD_NOT_ALLOWED', `${url.pathname} takes ${allowed}, not ${request.method}`, { allow: `${allowed}, OPTIONS` });
      }
      if (url.pathname === '/search') response = await search(url, env);
      else if (url.pathname === '/context') response = await context(url, env);
      else if (url.pathname === '/ask') response = await ask(request, env, ctx);
      else response = await healthz(env);
    } catch (e) {
      response = await errorResponse(e);
    }
    for (const [k, v] of Object.entries(headers)) response.headers.set(k, v);
    return response;
  },
};
