// sextant at the edge: one ES-module Worker answering search, context and ask requests from the
// same index bundle the browser uses. The bundle, model and tokenizer are Workers Static Assets
// (read through the ASSETS binding on the first request, never at start-up); the WebAssembly is
// imported as a module by the package's `workerd` entry (Workers may not compile wasm at run time).
//
//   GET  /search?q=&k=&mode=   → JSON, the fields of `sextant search --json`
//   GET  /context?q=&budget=   → the framed context, text/plain
//   POST /ask {question, k}    → server-sent events: `token`… then `done` (verified citations)
//   GET  /healthz              → the bundle's manifest summary and memory in use
// Anything else is served from the static assets (the demo site), or 404.
import { Sextant, memoryBytes } from 'sextant-search';

const MAX_QUERY = 512;
const API = new Set(['/search', '/context', '/ask', '/healthz']);
const METHODS = { '/search': 'GET', '/context': 'GET', '/ask': 'POST', '/healthz': 'GET' };

let engine = null; // Promise<Sextant>, made on the first request that needs it
let loadedAt = null;
let loadMs = null;

class HttpError extends Error {
  constructor(status, code, message, headers = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

function json(body, status = 200, headers = {}) {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } });
}

function errorResponse(e) {
  if (e instanceof HttpError) return json({ error: { code: e.code, message: e.message } }, e.status, e.headers);
  const code = e?.code ?? 'INTERNAL';
  const status = code === 'BAD_ARGUMENT' ? 400 : code.startsWith('LLM_') ? 502 : 500;
  return json({ error: { code, message: String(e?.message ?? e) } }, status);
}

/** The entry manifest the site build wrote: hashed names of the bundle, model and tokenizer. */
async function siteManifest(env) {
  const response = await env.ASSETS.fetch(new Request('http://assets/sextant/sextant.json'));
  if (!response.ok) throw new HttpError(503, 'NOT_BUILT', 'the search assets are missing: run `make worker` (sextant build --site) before deploying');
  return response.json();
}

async function asset(env, name) {
  const response = await env.ASSETS.fetch(new Request(`http://assets/sextant/${name}`));
  if (!response.ok) throw new HttpError(503, 'NOT_BUILT', `asset sextant/${name} is missing (${response.status}); rebuild with \`make worker\``);
  return new Uint8Array(await response.arrayBuffer());
}

/** How the model's weights are held: SEXTANT_WEIGHTS, "int8" (default) or "f32". */
function weightsOf(env) {
  const weights = env.SEXTANT_WEIGHTS || 'int8';
  if (weights !== 'int8' && weights !== 'f32') {
    // The Worker's configuration is wrong, not the request: a 500 that says what to fix.
    throw new HttpError(500, 'BAD_CONFIG', `SEXTANT_WEIGHTS is ${JSON.stringify(weights)}; set it to "int8" or "f32" in wrangler.toml [vars]`);
  }
  return weights;
}

/** Loads the engine once; concurrent first requests share the same load. */
function getEngine(env) {
  engine ??= (async () => {
    const started = Date.now();
    const manifest = await siteManifest(env);
    const [bundle, model, tokenizer] = await Promise.all([asset(env, manifest.bundle), asset(env, manifest.model), asset(env, manifest.tokenizer)]);
    // int8 by default: about 40 MB less memory than f32 weights in a 128 MB isolate, for
    // slower queries (BENCHMARKS.md). SEXTANT_WEIGHTS = "f32" trades the other way.
    const sextant = await Sextant.load({ bundle, model, tokenizer, weights: weightsOf(env) });
    loadMs = Date.now() - started;
    loadedAt = new Date().toISOString();
    return sextant;
  })().catch((e) => {
    engine = null; // let a later request try again
    throw e;
  });
  return engine;
}

function query(url) {
  const q = url.searchParams.get('q');
  if (q === null || q.trim() === '') throw new HttpError(400, 'MISSING_QUERY', 'the query parameter q is missing or empty');
  if (q.length > MAX_QUERY) throw new HttpError(400, 'QUERY_TOO_LONG', `q is ${q.length} characters; the limit is ${MAX_QUERY}`);
  return q;
}

function integer(value, name, min, max, fallback) {
  if (value === null || value === undefined) return fallback;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new HttpError(400, `BAD_${name.toUpperCase()}`, `${name} must be an integer from ${min} to ${max}`);
  }
  return n;
}

function mode(value) {
  const m = value ?? 'hybrid';
  if (!['hybrid', 'dense', 'keyword'].includes(m)) throw new HttpError(400, 'BAD_MODE', `mode ${JSON.stringify(m)} is not hybrid, dense or keyword`);
  return m;
}

function cors(request, env) {
  const origin = request.headers.get('origin');
  const allowed = (env.CORS_ORIGINS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (!origin || !(allowed.includes('*') || allowed.includes(origin))) return {};
  return {
    'access-control-allow-origin': allowed.includes('*') ? '*' : origin,
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': 'authorization, content-type',
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
  if (diff !== 0) throw new HttpError(401, 'UNAUTHORIZED', 'POST /ask needs Authorization: Bearer <SEXTANT_TOKEN>', { 'www-authenticate': 'Bearer' });
}

async function search(url, env) {
  const q = query(url);
  const k = integer(url.searchParams.get('k'), 'k', 1, 50, 10);
  const m = mode(url.searchParams.get('mode'));
  const wasCold = engine === null;
  const sextant = await getEngine(env);
  return json(sextant.search(q, { k, mode: m }), 200, { 'x-sextant-cold-start': String(wasCold) });
}

async function context(url, env) {
  const q = query(url);
  const budget = integer(url.searchParams.get('budget'), 'budget', 50, 8000, 1500);
  const sextant = await getEngine(env);
  const framed = sextant.context(q, { tokenBudget: budget });
  return new Response(framed.context, {
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-sextant-chunks': framed.included.join(' '), 'x-sextant-tokens': String(framed.tokens) },
  });
}

async function ask(request, env, ctx) {
  checkToken(request, env);
  let body;
  try {
    body = await request.json();
  } catch {
    throw new HttpError(400, 'BAD_JSON', 'the body must be JSON like {"question": "…", "k": 6}');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'BAD_JSON', 'the body must be a JSON object');
  const question = body.question;
  if (typeof question !== 'string' || question.trim() === '') throw new HttpError(400, 'MISSING_QUESTION', 'question must be a non-empty string');
  if (question.length > MAX_QUERY) throw new HttpError(400, 'QUERY_TOO_LONG', `question is ${question.length} characters; the limit is ${MAX_QUERY}`);
  const k = integer(body.k, 'k', 1, 50, 6);
  if (!env.LLM_BASE_URL || !env.LLM_MODEL) throw new HttpError(503, 'LLM_NOT_CONFIGURED', 'set LLM_BASE_URL and LLM_MODEL (and the secret LLM_API_KEY) for this Worker');
  const sextant = await getEngine(env);
  const { readable, writable } = new TransformStream();
  const writer = writable.getWriter();
  const encoder = new TextEncoder();
  const send = (event, data) => writer.write(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
  const run = (async () => {
    try {
      const answer = await sextant.ask(question, {
        llm: { baseUrl: env.LLM_BASE_URL, model: env.LLM_MODEL, apiKey: env.LLM_API_KEY },
        k,
        signal: request.signal,
        onToken: (text) => send('token', { text }),
      });
      await send('done', {
        answer: answer.answer,
        refused: answer.refused,
        grounded: answer.grounded,
        citations: answer.citations,
        unknownCitations: answer.unknownCitations,
        chunks: answer.chunks.map(({ chunk_id, doc_id, title, url, heading_path }) => ({ chunk_id, doc_id, title, url, heading_path })),
        usage: answer.usage,
      });
    } catch (e) {
      await send('error', { code: e?.code ?? 'INTERNAL', message: String(e?.message ?? e) });
    } finally {
      await writer.close();
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
    bundle: manifest.bundle,
    pages: manifest.pages,
    chunks: manifest.chunks,
    generator: manifest.generator,
    model: m ? { sha256: m.model.sha256, dims: m.model.dims, pooling: m.model.pooling } : null,
    format: m ? m.format : null,
    wasm_memory_bytes: sextant ? memoryBytes() : null,
  });
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const headers = cors(request, env);
    if (!API.has(url.pathname)) {
      if (!env.ASSETS) return new Response('not found', { status: 404 });
      const response = await env.ASSETS.fetch(request);
      // Cloudflare's asset handling maps /dir/ to /dir/index.html; a plain disk service does not.
      if (response.status === 404 && url.pathname.endsWith('/')) return env.ASSETS.fetch(new Request(new URL('index.html', url), request));
      return response;
    }
    if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers });
    let response;
    try {
      const allowed = METHODS[url.pathname];
      if (request.method !== allowed) {
        throw new HttpError(405, 'METHOD_NOT_ALLOWED', `${url.pathname} takes ${allowed}, not ${request.method}`, { allow: `${allowed}, OPTIONS` });
      }
      if (url.pathname === '/search') response = await search(url, env);
      else if (url.pathname === '/context') response = await context(url, env);
      else if (url.pathname === '/ask') response = await ask(request, env, ctx);
      else response = await healthz(env);
    } catch (e) {
      response = errorResponse(e);
    }
    for (const [k, v] of Object.entries(headers)) response.headers.set(k, v);
    return response;
  },
};
