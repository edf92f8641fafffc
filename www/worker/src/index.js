// sextant at the edge: one ES-module Worker answering search, context, ask and MCP requests from
// the index bundles the browser uses. The bundles, model and tokenizer are Workers Static Assets
// (read through the ASSETS binding on the first request, never at start-up), or objects of an R2
// bucket bound as SEXTANT_R2 for a site past the static assets' limits (20,000 files per version
// on the free plan, 25 MiB per file); the WebAssembly is imported as a module by the package's
// `workerd` entry (Workers may not compile wasm at run time).
//
//   GET  /search?q=&k=&mode=&bases=…  → JSON, the fields of `sextant search --json`, each result
//                                       naming its base
//   GET  /context?q=&token_budget=…   → the framed context, text/plain
//   GET  /embed?q=                     → JSON {model, weights, vector}: the query's vector, for a
//                                       page searching without the model (data-embed-url)
//   POST /ask {question, k, bases, …}  → server-sent events: `retry`…, `token`… then `done`
//                                       (verified citations) or `error`
//   POST /mcp                          → Model Context Protocol (Streamable HTTP, JSON answers):
//                                       tools search, fetch and describe (mcp.js)
//   GET  /healthz                      → each base's state, memory in use and the index files read
// Anything else is served from the static assets (the demo site), or 404.
//
// Knowledge bases: SEXTANT_BASES lists `name=folder` pairs, each folder (in the assets) holding
// the sextant.json a site build writes; one base, docs=sextant, by default. They share one model.
// A base that fails to load is reported and skipped: answers then say `partial: true`.
//
// Every request logs one JSON line (request id, route, bases, stage timings, result count,
// status; the query only with SEXTANT_LOG_QUERIES = "true"; never a secret or a header).
//
// Query parameters and body fields are the core's option names (`defaults().search`,
// `defaults().context`); the core validates them and its error codes map to HTTP statuses through
// `defaults().error_codes`; base names and the bases a request chose are the core's rules
// (`checkBaseNames`, `selectBases`). This file adds routing, auth, CORS, streaming and asset
// serving. Safe for a public deployment as shipped: "*" in CORS_ORIGINS opens only the read-only
// routes to other sites' pages (/ask spends the LLM key, /mcp drives the tools: they answer pages
// of named origins only, and the Worker's own pages only at a host it is known as: DNS rebinding),
// POST bodies must be declared JSON (so a browser asks first), and
// without SEXTANT_TOKEN an answer reads at most defaults().ask's k and token_budget
// (SEXTANT_ASK_MAX_K, SEXTANT_ASK_MAX_TOKEN_BUDGET raise them).
import { Bases, memoryBytes, defaults, ready, checkBaseNames, selectBases, OtlpExporter, querySpans } from 'sextant-search';
import { mcp } from './mcp.js';

const METHODS = { '/search': 'GET', '/context': 'GET', '/embed': 'GET', '/ask': 'POST', '/mcp': 'POST', '/healthz': 'GET' };
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

let engine = null; // Promise<{bases, unavailable}>, made on the first request that needs it
let loadedAt = null;
let loadMs = null;
const indexRead = { files: 0, bytes: 0 }; // index files read, as queries needed them

/** `bytes=a-b` (what the package's pack reader sends) as R2's range, or null for the whole object. */
export function r2Range(header) {
  const m = /^bytes=(\d+)-(\d+)$/.exec(header ?? '');
  if (!m) return null;
  const offset = Number(m[1]);
  const last = Number(m[2]);
  return last >= offset ? { offset, length: last - offset + 1 } : null;
}

/**
 * Reads a search file (`folder/name`: the site manifest, an index file or pack, the model, the
 * tokenizer) as a Response: from the R2 bucket bound as SEXTANT_R2 when there is one (its keys
 * are the paths under the assets folder, e.g. `sextant/sextant.json`: upload the folder `sextant
 * build --site` wrote as it is), else through the ASSETS binding. A Range header gets a 206 with
 * that range from either.
 */
async function searchFile(env, path, init = {}) {
  const bucket = env.SEXTANT_R2;
  if (!bucket) return env.ASSETS.fetch(new Request(`http://assets/${path}`, init));
  const range = r2Range(new Headers(init.headers).get('range'));
  const object = await bucket.get(path, range ? { range } : {});
  if (!object) return new Response(`${path} is not in the R2 bucket`, { status: 404 });
  const headers = { 'content-type': 'application/octet-stream', etag: object.httpEtag };
  if (!range) return new Response(object.body, { status: 200, headers });
  const end = Math.min(range.offset + range.length, object.size) - 1;
  return new Response(object.body, { status: 206, headers: { ...headers, 'content-range': `bytes ${range.offset}-${end}/${object.size}` } });
}

/** Where the search files come from, for messages. */
function filesFrom(env) {
  return env.SEXTANT_R2 ? 'the R2 bucket SEXTANT_R2' : 'the static assets';
}

export class HttpError extends Error {
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

/** The error as the API answers it: its code and message (and `failed`, the bases that did). */
function errorBody(e) {
  const code = e?.code ?? 'INTERNAL';
  return { error: { code, message: String(e?.message ?? e), ...(Array.isArray(e?.failed) ? { failed: e.failed } : {}) } };
}

async function errorResponse(e) {
  const body = errorBody(e);
  return json(body, await statusOf(body.error.code), e?.headers ?? {});
}

/** The bases SEXTANT_BASES names (`name=folder, …`; `docs=sextant` by default): each name a
 * base's (the core's rule, `checkBaseNames`), each folder inside the assets. */
function basesOf(env) {
  const spec = (env.SEXTANT_BASES ?? '').trim() || 'docs=sextant';
  const bad = (detail) => new HttpError('BAD_CONFIG', `SEXTANT_BASES is ${JSON.stringify(spec)}: ${detail}; write name=folder pairs separated by commas, each folder inside the assets (e.g. "docs=sextant, blog=blog/sextant")`);
  const bases = spec.split(',').map((pair) => pair.trim()).filter(Boolean).map((pair) => {
    const [name, folder, more] = pair.split('=').map((p) => p.trim());
    if (!name || !folder || more !== undefined || folder.split('/').some((part) => part === '..' || part === '')) throw bad(`${JSON.stringify(pair)} is not name=folder`);
    return { name, folder };
  });
  try {
    checkBaseNames(bases.map((b) => b.name));
  } catch (e) {
    throw bad(e.message);
  }
  return bases;
}

/** The entry manifest a site build wrote into `folder`: hashed names of the bundle, model and tokenizer. */
async function siteManifest(env, folder) {
  const response = await searchFile(env, `${folder}/sextant.json`);
  if (!response.ok) throw new HttpError('NOT_BUILT', `the search files are missing from ${folder}/ in ${filesFrom(env)}: run \`make worker\` (sextant build --site) before deploying${env.SEXTANT_R2 ? `, then upload that folder to the bucket under ${folder}/` : ''}`);
  const manifest = await response.json();
  if (!manifest.index) throw new HttpError('NOT_BUILT', `the search assets in ${folder}/ are from another version of sextant: rebuild them with \`make worker\` (sextant build --site)`);
  return manifest;
}

async function asset(env, name) {
  const response = await searchFile(env, name);
  if (!response.ok) throw new HttpError('NOT_BUILT', `${name} is missing from ${filesFrom(env)} (${response.status}); rebuild with \`make worker\``);
  return new Uint8Array(await response.arrayBuffer());
}

/**
 * How the model's weights are held: SEXTANT_WEIGHTS, else as the first base's search box holds
 * them (its sextant.json's `model_body_weights`, "int5" when `build --site` packed the body), so
 * /embed gives the page's own vectors; else int8. All integer products (a 128 MB isolate).
 */
function weightsOf(env, manifest) {
  return env.SEXTANT_WEIGHTS || manifest?.model_body_weights || 'int8';
}

let loadedWeights = null; // what the loaded engine uses

/**
 * Loads the bases once; concurrent first requests share the same load. A base whose assets are
 * missing or damaged is `unavailable`; the load fails only when none loads.
 */
function getEngine(env) {
  engine ??= (async () => {
    const started = Date.now();
    const configured = basesOf(env);
    const unavailable = [];
    const found = [];
    await Promise.all(configured.map(async ({ name, folder }) => {
      try {
        found.push({ name, folder, manifest: await siteManifest(env, folder) });
      } catch (e) {
        unavailable.push({ base: name, code: e.code ?? 'INTERNAL', message: e.message });
      }
    }));
    const order = (x) => configured.findIndex((c) => c.name === x);
    found.sort((a, b) => order(a.name) - order(b.name));
    unavailable.sort((a, b) => order(a.base) - order(b.base));
    if (found.length === 0) throw new HttpError(unavailable[0].code, unavailable.map((u) => `${u.base}: ${u.message}`).join('; '));
    // The model and tokenizer of the first base: every base must be built with the same one.
    const first = found[0];
    const weights = weightsOf(env, first.manifest);
    const [model, tokenizer] = await Promise.all([asset(env, `${first.folder}/${first.manifest.model}`), asset(env, `${first.folder}/${first.manifest.tokenizer}`)]);
    let bases;
    try {
      // Each index is read lazily: its manifest now, each shard or fragment when a query needs
      // it, through the ASSETS binding or from R2. Integer weights by default (weightsOf): integer
      // products, the fastest queries and about 31 MB less memory than f32 in a 128 MB isolate
      // (BENCHMARKS.md); SEXTANT_WEIGHTS = "f32" multiplies in f32, the model's own arithmetic.
      bases = await Bases.load({
        bases: found.map(({ name, folder, manifest }) => ({ name, index: `http://assets/${folder}/${manifest.index}` })),
        model,
        tokenizer,
        weights,
        // One budget for all the bases' index files.
        max_index_bytes: Math.floor(maxIndexBytes(env) / found.length),
        // Objects in packs are read with Range requests, which the ASSETS binding and R2 answer
        // (206).
        fetch: async (url, init) => {
          const response = await searchFile(env, new URL(url).pathname.slice(1), init);
          if (!response.ok) return response;
          const bytes = await response.arrayBuffer();
          indexRead.files += 1;
          indexRead.bytes += bytes.byteLength;
          return new Response(bytes, { status: response.status, headers: response.headers });
        },
      });
    } catch (e) {
      // A bad value here is the Worker's configuration, not the request: say what to set.
      if (e.code === 'BAD_ARGUMENT' && /weights/.test(e.message)) throw new HttpError('BAD_CONFIG', env.SEXTANT_WEIGHTS
        ? `SEXTANT_WEIGHTS is ${JSON.stringify(weights)}: ${e.message}; fix it in wrangler.toml [vars]`
        : `${first.name}'s sextant.json holds its model body's weights as ${JSON.stringify(weights)}: ${e.message}; build the site again with this version, or set SEXTANT_WEIGHTS in wrangler.toml [vars]`);
      if (e.failed) e.failed = [...unavailable, ...e.failed];
      throw e;
    }
    loadMs = Date.now() - started;
    loadedWeights = weights;
    loadedAt = new Date().toISOString();
    // Bases not loaded are reported in the order SEXTANT_BASES lists them.
    const names = configured.map((c) => c.name);
    return { bases, names, unavailable };
  })().catch((e) => {
    engine = null; // let a later request try again
    throw e;
  });
  return engine;
}

/** The bases a request chose (`bases`: names, or "a,b"; the core's `selectBases`), those not in
 * the assets left out and reported. */
export function chooseBases(loaded, requested) {
  const { bases, names, unavailable } = loaded;
  // An empty query parameter (`bases=`) chooses every base, as leaving it out does.
  const chosen = selectBases(names, requested === '' ? null : requested);
  const missing = unavailable.filter((u) => chosen.includes(u.base));
  const live = chosen.filter((b) => !missing.some((m) => m.base === b));
  if (live.length === 0) throw new HttpError(missing[0].code, missing.map((m) => `${m.base}: ${m.message}`).join('; '));
  return { bases, live, missing };
}

/** A multi-base answer with the bases missing from the assets added to its `failed`. */
function withMissing(answer, missing) {
  if (missing.length === 0) return answer;
  return { ...answer, partial: true, failed: [...missing, ...answer.failed] };
}

/** A query-string value as JSON: numbers and booleans typed, the rest strings. */
function typed(value) {
  if (value === 'true' || value === 'false') return value === 'true';
  if (value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return value;
}

/** How a filter's values combine in a query parameter: `filters.tags.any=a&filters.tags.any=b`. */
const FILTER_WAYS = ['any', 'all', 'none', 'not'];
const UNSAFE_KEYS = ['__proto__', 'constructor', 'prototype'];

/**
 * Query parameters other than `q` as options (`bm25.k1=1.2` and `filters.tags=python` nest; a
 * nested one repeated is a list: `filters.tags=a&filters.tags=b` needs both; a filter also takes
 * alternatives and exclusions, `filters.tags.any=a&filters.tags.none=draft`); the core validates
 * them. Objects without a prototype and own-key checks, so no parameter can reach
 * Object.prototype.
 */
function optionsOf(url) {
  const options = Object.create(null);
  const bad = (key) =>
    new HttpError('BAD_ARGUMENT', `invalid query parameter ${JSON.stringify(key)}: give each option once, as name=value or group.name=value (bm25.k1=1.2, filters.tags=python), and a filter's alternatives or exclusions as filters.NAME.any, .all, .none or .not`);
  // Adds a value under `key`, a value already there and this one becoming a list.
  const add = (into, key, value) => {
    into[key] = Object.hasOwn(into, key) ? [into[key], value].flat() : value;
  };
  for (const [key, value] of url.searchParams) {
    if (key === 'q') continue;
    const parts = key.split('.');
    const [head, sub, way] = parts;
    if (parts.length > 3 || parts.some((p) => UNSAFE_KEYS.includes(p))) throw bad(key);
    if (way !== undefined && !(head === 'filters' && FILTER_WAYS.includes(way))) throw bad(key);
    if (sub === undefined) {
      if (Object.hasOwn(options, head)) throw bad(key);
      options[head] = typed(value);
      continue;
    }
    // `graph=true&graph.hops=1`: a switch turned on and given options.
    if (options[head] === true) options[head] = Object.create(null);
    options[head] ??= Object.create(null);
    if (typeof options[head] !== 'object') throw bad(key);
    const inner = options[head];
    // A filter's values stay text: `filters.version=3.10` is not the number 3.1.
    const v = head === 'filters' ? value : typed(value);
    if (way === undefined) {
      // `filters.tags=a` beside `filters.tags.any=b`: the plain values are the filter's `all`.
      if (inner[sub] !== null && typeof inner[sub] === 'object' && !Array.isArray(inner[sub])) add(inner[sub], 'all', v);
      else add(inner, sub, v);
      continue;
    }
    if (Object.hasOwn(inner, sub) && (typeof inner[sub] !== 'object' || Array.isArray(inner[sub]))) {
      inner[sub] = Object.assign(Object.create(null), { all: inner[sub] });
    }
    inner[sub] ??= Object.create(null);
    add(inner[sub], way, v);
  }
  return options;
}

function allowedOrigins(env) {
  return (env.CORS_ORIGINS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

/** The routes that only read the bases: "*" in CORS_ORIGINS opens these to every origin. */
const READ_ONLY = new Set(['/search', '/context', '/embed', '/healthz']);

/** Host names a page is served from that a DNS-rebinding page cannot take: loopback names. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Whether a request's host is one the Worker is known to be served as, so that a page of the
 * request's own origin is the Worker's own page. On Cloudflare a request reaches the Worker only
 * by a host it is routed for (`*.workers.dev` or a custom domain, which SEXTANT_HOSTS names); a
 * locally run Worker (workerd, `wrangler dev`) answers any Host header, so under DNS rebinding
 * another site's page, its name now pointing at 127.0.0.1, would be "same-origin".
 */
function ownHost(url, env) {
  const host = url.hostname.toLowerCase();
  if (LOOPBACK.has(host) || host.endsWith('.workers.dev')) return true;
  return (env.SEXTANT_HOSTS ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean).includes(host);
}

/**
 * Whether the page a request comes from may call `route`. A request without an Origin is no
 * browser page's (a server, a CLI, an agent): SEXTANT_TOKEN guards those. The Worker's own
 * origin may call every route (on /ask and /mcp only at a host it is known as, see `ownHost`);
 * an origin CORS_ORIGINS names, too; "*" stands for any origin on the read-only routes only, so
 * no other site's page can spend the LLM key (/ask) or drive the tools (/mcp) because the
 * Worker's searches are public.
 */
function originAllowed(request, env, route) {
  const origin = request.headers.get('origin');
  if (!origin) return true;
  const url = new URL(request.url);
  if (origin === url.origin && (READ_ONLY.has(route) || ownHost(url, env))) return true;
  const allowed = allowedOrigins(env);
  return allowed.includes(origin) || (READ_ONLY.has(route) && allowed.includes('*'));
}

function cors(request, env, route) {
  const origin = request.headers.get('origin');
  if (!origin || !originAllowed(request, env, route)) return {};
  const any = READ_ONLY.has(route) && allowedOrigins(env).includes('*');
  return {
    'access-control-allow-origin': any ? '*' : origin,
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version, mcp-session-id',
    'access-control-expose-headers': 'x-sextant-chunks, x-sextant-tokens, x-sextant-cold-start, x-request-id',
    'access-control-max-age': '86400',
    vary: 'origin',
  };
}

/** The shortest SEXTANT_TOKEN accepted: a shorter one is a configuration error, not a guard. */
const MIN_TOKEN_LENGTH = 16;

/** Requires `Authorization: Bearer <SEXTANT_TOKEN>` on `route` when a token is configured. */
export function checkToken(request, env, route) {
  if (!env.SEXTANT_TOKEN) return;
  if (env.SEXTANT_TOKEN.length < MIN_TOKEN_LENGTH) {
    throw new HttpError('BAD_CONFIG', `SEXTANT_TOKEN is shorter than ${MIN_TOKEN_LENGTH} characters; use a longer one (e.g. \`openssl rand -hex 24 | wrangler secret put SEXTANT_TOKEN\`)`);
  }
  const header = request.headers.get('authorization') ?? '';
  const given = header.startsWith('Bearer ') ? header.slice(7) : '';
  // Compare in constant time for equal lengths.
  const a = new TextEncoder().encode(given);
  const b = new TextEncoder().encode(env.SEXTANT_TOKEN);
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  if (diff !== 0) throw new HttpError('UNAUTHORIZED', `${route} needs Authorization: Bearer <SEXTANT_TOKEN>`, { 'www-authenticate': 'Bearer' });
}

/**
 * A POST route's body must be declared JSON: a page of another origin may send text/plain or a
 * form without asking first, but `application/json` makes its browser ask (a CORS preflight),
 * which only the origins CORS_ORIGINS names pass.
 */
function requireJson(request, route) {
  const type = (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new HttpError('BAD_ARGUMENT', `POST ${route} takes a JSON body sent with content-type: application/json, not ${type ? JSON.stringify(type) : 'none'}`);
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

/** LLM_TIMEOUT_MS: how long one answer may take, retries included (the core's default if empty). */
function llmTimeout(env) {
  if (!env.LLM_TIMEOUT_MS) return undefined;
  const ms = Number(env.LLM_TIMEOUT_MS);
  if (!Number.isInteger(ms) || ms < 0 || ms > 600000) throw new HttpError('BAD_CONFIG', `LLM_TIMEOUT_MS is ${JSON.stringify(env.LLM_TIMEOUT_MS)}; use milliseconds from 0 (no limit) to 600000`);
  return ms;
}

/**
 * What an answer may read when the Worker has no SEXTANT_TOKEN (anyone may ask, on the
 * operator's LLM key): at most SEXTANT_ASK_MAX_K passages and SEXTANT_ASK_MAX_TOKEN_BUDGET
 * tokens of them, by default the core's own defaults for an answer (`defaults().ask`: 6 and
 * 1500), within the core's limits. With a token, every caller is the operator's.
 */
function anonymousAskCaps(env) {
  const { ask: d, limits } = defaults();
  const knob = (name, fallback, most) => {
    if (!env[name]) return fallback;
    const value = Number(env[name]);
    if (!Number.isInteger(value) || value < 1 || value > most) throw new HttpError('BAD_CONFIG', `${name} is ${JSON.stringify(env[name])}; use a whole number from 1 to ${most}, or leave it empty for ${fallback}`);
    return value;
  };
  return [
    ['k', knob('SEXTANT_ASK_MAX_K', d.k, limits.max_k), 'SEXTANT_ASK_MAX_K'],
    ['token_budget', knob('SEXTANT_ASK_MAX_TOKEN_BUDGET', d.token_budget, limits.max_token_budget), 'SEXTANT_ASK_MAX_TOKEN_BUDGET'],
  ];
}

function maxRequestBytes(env) {
  const configured = Number(env.SEXTANT_MAX_REQUEST_BYTES);
  return Number.isInteger(configured) && configured > 0 ? configured : defaults().limits.max_request_bytes;
}

/** Query parameters as options, with `bases` taken out (it is the Worker's, not the core's). */
function requestOptions(url) {
  const options = optionsOf(url);
  delete options.bases;
  // Base names as written: `bases=007` is a name, not a number.
  return { bases: url.searchParams.get('bases'), options };
}

/** What a search adds to the request's log line. */
function traced(trace, answer, chosen) {
  trace.bases = chosen.live;
  trace.stages = answer.timings;
  trace.results = answer.results.length;
  if (answer.partial) trace.failed = answer.failed.map((f) => f.base);
}

/** This Worker's LLM (LLM_BASE_URL, LLM_MODEL, the secret LLM_API_KEY), or LLM_NOT_CONFIGURED. */
function llmOf(env) {
  if (!env.LLM_BASE_URL || !env.LLM_MODEL) throw new HttpError('LLM_NOT_CONFIGURED', 'set LLM_BASE_URL and LLM_MODEL (and the secret LLM_API_KEY) for this Worker');
  return { base_url: env.LLM_BASE_URL, model: env.LLM_MODEL, api_key: env.LLM_API_KEY };
}

/**
 * `rerank=llm` on /search and /context: the operator's LLM rates the results, so the request is
 * held to /ask's rules (SEXTANT_TOKEN, an origin CORS_ORIGINS names — "*" is not enough — and
 * without a token at most the default rerank_depth). Other requests are left as they are.
 */
function withLlmRerank(request, env, route, options) {
  if (options.rerank !== 'llm') return options;
  const what = `rerank=llm on ${route}`;
  checkToken(request, env, what);
  if (!originAllowed(request, env, '/ask')) throw new HttpError('FORBIDDEN', `a page of ${request.headers.get('origin')} may not ask for ${what} (it spends this Worker's LLM key); name its origin in CORS_ORIGINS`);
  anonymousRerankDepth(env, options);
  return { ...options, llm: llmOf(env), signal: request.signal };
}

/** Without SEXTANT_TOKEN, an LLM rerank rates at most the default rerank_depth results. */
function anonymousRerankDepth(env, options) {
  const most = defaults().search.rerank_depth;
  if (!env.SEXTANT_TOKEN && options.rerank === 'llm' && typeof options.rerank_depth === 'number' && options.rerank_depth > most) {
    throw new HttpError('BAD_ARGUMENT', `rerank_depth may be at most ${most} with rerank=llm on this Worker without a token (SEXTANT_TOKEN)`);
  }
}

async function search(url, env, trace, request) {
  const wasCold = engine === null;
  const { bases, options: asked } = requestOptions(url);
  const options = withLlmRerank(request, env, '/search', asked);
  const chosen = chooseBases(await getEngine(env), bases);
  const answer = withMissing(await chosen.bases.search(url.searchParams.get('q') ?? '', { ...options, bases: chosen.live }), chosen.missing);
  traced(trace, answer, chosen);
  return json(answer, 200, { 'x-sextant-cold-start': String(wasCold) });
}

/**
 * GET /embed?q=…[&mode=]: the vector a search of the query embeds, computed as a browser's full
 * engine computes it (the same model and weights give the same bits), with the model it comes
 * from, so a page searches the site's index with meaning without downloading the model (the
 * drop-in UI's data-embed-url: `search(q, {query_vector})`). The vector is little-endian f32,
 * base64. Cacheable: a query's vector never changes for a model.
 */
async function embed(url, env, trace) {
  const { bases } = await getEngine(env);
  const name = bases.names.find((n) => bases.base(n)?.hasModel);
  if (!name) throw new HttpError('NO_MODEL', 'no knowledge base of this Worker loaded with the model');
  const sextant = bases.base(name);
  const mode = url.searchParams.get('mode');
  const vector = await sextant.queryVector(url.searchParams.get('q') ?? '', mode ? { mode } : {});
  const bytes = new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  const model = sextant.manifest().model;
  trace.bases = [name];
  const body = { model: { sha256: model.sha256, tokenizer_sha256: model.tokenizer_sha256, dims: model.dims }, weights: loadedWeights, vector: btoa(binary) };
  return json(body, 200, { 'cache-control': 'public, max-age=86400' });
}

async function context(url, env, trace, request) {
  const { bases, options: asked } = requestOptions(url);
  const options = withLlmRerank(request, env, '/context', asked);
  const chosen = chooseBases(await getEngine(env), bases);
  const framed = withMissing(await chosen.bases.context(url.searchParams.get('q') ?? '', { ...options, bases: chosen.live }), chosen.missing);
  traced(trace, framed, chosen);
  const headers = {
    'content-type': 'text/plain; charset=utf-8',
    // Chunk ids come from file names and may hold any character: percent-encoded, space-separated.
    'x-sextant-chunks': framed.included.map(encodeURIComponent).join(' '),
    'x-sextant-tokens': String(framed.tokens),
  };
  // graph=true: whether the knowledge graph's block opens the context, or why not.
  if (framed.graph) {
    headers['x-sextant-graph'] = framed.graph.used ? `used; lines=${framed.graph.lines.length}` : `fallback; code=${framed.graph.fallback?.code ?? 'INTERNAL'}`;
    trace.graph = framed.graph.used ? 'used' : framed.graph.fallback?.code;
  }
  if (framed.partial) headers['x-sextant-partial'] = framed.failed.map((f) => f.base).join(' ');
  return new Response(framed.context, { headers });
}

async function ask(request, env, ctx, trace, log) {
  requireJson(request, '/ask');
  checkToken(request, env, 'POST /ask');
  const caps = env.SEXTANT_TOKEN ? [] : anonymousAskCaps(env);
  const text = await readBody(request, maxRequestBytes(env));
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HttpError('BAD_ARGUMENT', 'the body must be JSON like {"question": "…", "k": 6}');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new HttpError('BAD_ARGUMENT', 'the body must be a JSON object like {"question": "…"}');
  const { question, bases: requested, ...options } = body;
  if (typeof question !== 'string') throw new HttpError('BAD_ARGUMENT', 'question must be a string');
  // A client may set what the core's context() takes (and `graph`), not the LLM settings of this
  // service.
  const allowed = { ...defaults().context, graph: false };
  const unknown = Object.keys(options).find((key) => !Object.hasOwn(allowed, key));
  if (unknown !== undefined) throw new HttpError('BAD_ARGUMENT', `unknown field ${JSON.stringify(unknown)}; /ask takes question, bases and ${Object.keys(allowed).join(', ')}`);
  anonymousRerankDepth(env, options);
  for (const [key, most, knob] of caps) {
    const value = options[key] ?? defaults().ask[key];
    if (typeof value === 'number' && value > most) throw new HttpError('BAD_ARGUMENT', `${key} may be at most ${most} on this Worker without a token (its operator sets ${knob})`);
  }
  const llm = llmOf(env);
  const timeout = llmTimeout(env);
  const chosen = chooseBases(await getEngine(env), requested);
  if (logQueries(env)) trace.query = question;
  trace.query_length = question.length;
  if (Number.isInteger(options.k)) trace.options = { ...trace.options, k: options.k };
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
  const answering = chosen.bases.ask(question, {
    ...options,
    bases: chosen.live,
    ...(timeout === undefined ? {} : { timeout_ms: timeout }),
    llm,
    signal: upstream.signal,
    on_context: () => framed(),
    on_token: (token) => send('token', { text: token }),
    // A 429 or 5xx is tried again: the client hears why it waits.
    on_retry: ({ attempt, status, wait_ms }) => send('retry', { attempt, status, wait_ms: Math.round(wait_ms) }),
  });
  await Promise.race([prepared, answering]);
  // A comment line every second while the answer runs: a client that has gone shows up as a
  // failed write even before the first token (workerd reports a disconnect only on a write).
  const heartbeat = setInterval(() => {
    if (upstream.signal.aborted) return;
    writer.write(encoder.encode(': keep-alive\n\n')).catch(() => upstream.abort());
  }, 1000);
  trace.bases = chosen.live;
  trace.status = 200;
  const run = (async () => {
    try {
      const answer = withMissing(await answering, chosen.missing);
      Object.assign(trace, { stages: answer.timings, results: answer.chunks.length, llm: answer.trace, usage: answer.usage, outcome: 'done' });
      if (answer.partial) trace.failed = answer.failed.map((f) => f.base);
      await send('done', {
        answer: answer.answer,
        refused: answer.refused,
        grounded: answer.grounded,
        truncated: answer.truncated,
        citations: answer.citations,
        unknown_citations: answer.unknown_citations,
        spans: answer.spans,
        chunks: answer.chunks.map(({ chunk_id, doc_id, title, url, heading_path, base }) => ({ chunk_id, doc_id, title, url, heading_path, base })),
        usage: answer.usage,
        timings: answer.timings,
        partial: answer.partial,
        failed: answer.failed,
        ...(answer.graph ? { graph: { used: answer.graph.used, lines: answer.graph.lines, fallback: answer.graph.fallback, terms_error: answer.graph.terms_error } } : {}),
      });
    } catch (e) {
      // Only the code and message: upstream details (hosts, provider text) stay in this Worker.
      // What did arrive stays marked unverified: its citations were never checked.
      const code = e?.code ?? 'INTERNAL';
      const retryable = defaults().error_codes.find((c) => c.code === code)?.retryable ?? false;
      Object.assign(trace, { stages: e?.timings, llm: e?.trace, outcome: code });
      await send('error', { code, message: String(e?.message ?? e), retryable, ...(e?.partial_answer ? { partial_answer: e.partial_answer, verified: false } : {}) });
    } finally {
      clearInterval(heartbeat);
      await writer.close().catch(() => {});
      log();
    }
  })();
  ctx.waitUntil(run);
  return new Response(readable, { headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' } });
}

async function healthz(env) {
  const configured = basesOf(env);
  const loaded = engine ? await engine.catch(() => null) : null;
  const described = loaded ? loaded.bases.describe() : [];
  return json({
    status: 'ok',
    engine: loaded ? 'loaded' : 'not loaded',
    loaded_at: loadedAt,
    load_ms: loadMs,
    weights: loaded ? loadedWeights : weightsOf(env),
    files: env.SEXTANT_R2 ? 'r2' : 'assets',
    bases: configured.map(({ name, folder }) => {
      const missing = loaded?.unavailable.find((u) => u.base === name);
      if (missing) return { base: name, folder, loaded: false, code: missing.code, message: missing.message };
      return { folder, ...(described.find((d) => d.base === name) ?? { base: name, loaded: false }) };
    }),
    partial: loaded ? described.some((d) => !d.loaded) || loaded.unavailable.length > 0 : null,
    wasm_memory_bytes: loaded ? memoryBytes() : null,
    max_index_bytes: maxIndexBytes(env),
    index_files_read: indexRead.files,
    index_bytes_read: indexRead.bytes,
  });
}

/** Whether log lines carry the query text (SEXTANT_LOG_QUERIES = "true"); off by default. */
function logQueries(env) {
  return env.SEXTANT_LOG_QUERIES === 'true';
}

/** The request's id: the platform's (cf-ray) when there is one, a new one otherwise. */
function requestId(request) {
  return request.headers.get('cf-ray') ?? crypto.randomUUID();
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
  const response = await fetchAsset(pathname);
  // A folder is never served: workerd's disk service (`make worker`) answers one with a JSON list
  // of its files, which a web host never shows. Only a folder answers its path with a slash added.
  if (response.ok && (response.headers.get('content-type') ?? '').startsWith('application/json')) {
    const folder = await env.ASSETS.fetch(new Request(`${url.origin}${pathname}/`, { redirect: 'manual' }));
    await folder.body?.cancel();
    if (folder.ok) {
      await response.body?.cancel();
      return typed200(new Response(null, { status: 404 }), '');
    }
  }
  return typed200(response, last.split('.').pop().toLowerCase());
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

/** The isolate's OTLP exporter (OTEL_EXPORTER_OTLP_ENDPOINT), made once; null without one. */
let exporter;
function otlpExporter(env) {
  if (exporter !== undefined) return exporter;
  const endpoint = String(env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').trim();
  if (!endpoint) return (exporter = null);
  try {
    // OTEL_EXPORTER_OTLP_HEADERS: `key=value,key2=value2`, values percent-encoded (the OTLP spec).
    const headers = {};
    for (const pair of String(env.OTEL_EXPORTER_OTLP_HEADERS ?? '').split(',')) {
      const at = pair.indexOf('=');
      if (at > 0) headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    }
    exporter = new OtlpExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces`, headers, service: env.OTEL_SERVICE_NAME || 'sextant-worker', flush_ms: 0 });
  } catch (e) {
    console.log(JSON.stringify({ time: new Date().toISOString(), error: 'BAD_CONFIG', message: `OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_HEADERS: ${e.message}; no traces are sent` }));
    exporter = null;
  }
  return exporter;
}

/** A request's spans, from what its log line holds (never the query: only its length). */
function sendSpans(env, ctx, trace, started) {
  try {
    recordSpans(env, ctx, trace, started);
  } catch {
    // Traces never cost an answer.
  }
}

function recordSpans(env, ctx, trace, started) {
  const otlp = otlpExporter(env);
  const route = { '/search': 'search', '/context': 'context', '/ask': 'ask' }[trace.route];
  if (!otlp || !route) return;
  const response = { timings: trace.stages ?? {}, results: new Array(trace.results ?? 0), trace: trace.llm ?? [], usage: trace.usage };
  otlp.record(querySpans({ route, start_ms: started, end_ms: Date.now(), query: 'x'.repeat(trace.query_length ?? 0), options: trace.options ?? {}, response, error: trace.error }));
  ctx.waitUntil(otlp.flush());
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const headers = cors(request, env, url.pathname);
    if (!Object.hasOwn(METHODS, url.pathname)) {
      if (!env.ASSETS) return new Response('not found', { status: 404 });
      return staticAsset(request, env);
    }
    if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers });
    const started = Date.now();
    const trace = { request_id: requestId(request), route: url.pathname, method: request.method };
    if (logQueries(env) && url.searchParams.has('q')) trace.query = url.searchParams.get('q');
    // For spans only (never logged): the query's length and the options it set.
    if (url.searchParams.has('q')) trace.query_length = url.searchParams.get('q').length;
    const k = Number(url.searchParams.get('k'));
    trace.options = { ...(Number.isInteger(k) && k > 0 ? { k } : {}), ...(url.searchParams.get('mode') ? { mode: url.searchParams.get('mode') } : {}) };
    // One line per request, when its answer is complete (for /ask, when the stream ends).
    let logged = false;
    const log = () => {
      if (logged) return;
      logged = true;
      const { query_length, options, usage, ...line } = trace;
      console.log(JSON.stringify({ time: new Date(started).toISOString(), ...line, ms: Date.now() - started }));
      sendSpans(env, ctx, trace, started);
    };
    let response;
    let streaming = false;
    try {
      // Every route reads the core's defaults or rules: the WebAssembly is instantiated by the
      // isolate's first request, whichever route it is for (instantiation is cheap; the bases
      // and the model load only for the routes that search).
      await ready();
      if (!originAllowed(request, env, url.pathname)) {
        const origin = request.headers.get('origin');
        const own = origin === url.origin ? `; if this is the Worker's own page, name its host ${url.hostname} in SEXTANT_HOSTS (a page of an unnamed host may be another site's, by DNS rebinding)` : '';
        throw new HttpError('FORBIDDEN', `a page of ${origin} may not call ${url.pathname}; name its origin in CORS_ORIGINS ("*" opens only ${[...READ_ONLY].join(', ')})${own}`);
      }
      const allowed = METHODS[url.pathname];
      if (request.method !== allowed && !(url.pathname === '/mcp' && request.method === 'GET')) {
        throw new HttpError('METHOD_NOT_ALLOWED', `${url.pathname} takes ${allowed}, not ${request.method}`, { allow: `${allowed}, OPTIONS` });
      }
      if (url.pathname === '/search') response = await search(url, env, trace, request);
      else if (url.pathname === '/context') response = await context(url, env, trace, request);
      else if (url.pathname === '/embed') response = await embed(url, env, trace);
      else if (url.pathname === '/ask') {
        response = await ask(request, env, ctx, trace, () => log());
        streaming = true;
      } else if (url.pathname === '/mcp') {
        response = await mcp(request, env, trace, {
          // The page's origin was checked above (DNS rebinding); a body must be JSON.
          check: () => {
            if (request.method === 'POST') requireJson(request, '/mcp');
            checkToken(request, env, 'POST /mcp');
          },
          engine: () => getEngine(env),
          choose: chooseBases,
          withMissing,
          readBody: () => readBody(request, maxRequestBytes(env)),
          errorBody,
        });
      } else response = await healthz(env);
    } catch (e) {
      response = await errorResponse(e);
      trace.error = e?.code ?? 'INTERNAL';
    }
    trace.status = response.status;
    if (!streaming || response.status !== 200) log();
    response.headers.set('x-request-id', trace.request_id);
    for (const [k, v] of Object.entries(headers)) response.headers.set(k, v);
    return response;
  },
};
