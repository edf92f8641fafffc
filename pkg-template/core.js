// The sextant JS API, shared by the browser, Node and workerd entry points. Each entry point
// initialises the WebAssembly module its own way and passes the bindings in.
//
// What lives here is what only JS can do: fetching files (with progress), the LLM call, its
// retries and its event stream. Options, defaults, limits, error codes, the prompt and the
// citation rules are the core's (`defaults()`, `prepareAsk`, `verifyCitations`): this file
// restates none of them. Option and result names are the core's snake_case vocabulary.

/** The key of a Sextant's internals, for `Bases` (not part of the API). */
const INTERNAL = Symbol('sextant.internal');

/** An error with a stable `code` (one of `defaults().error_codes`). */
export class SextantError extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.name = 'SextantError';
    this.code = code;
    Object.assign(this, details);
  }
}

/** Turns whatever the wasm side threw into an Error with a code. */
function rethrow(error) {
  if (error instanceof Error) {
    if (!error.code) error.code = 'INTERNAL';
    return error;
  }
  return new SextantError('INTERNAL', String(error));
}

/** Runs a wasm call, turning what it throws into an Error with a code. */
export function call(fn) {
  try {
    return fn();
  } catch (e) {
    throw rethrow(e);
  }
}

function isUrlLike(value) {
  return typeof value === 'string' || value instanceof URL;
}

/**
 * Fetches `url`, reporting `on_progress({file, loaded, total})` as bytes arrive (`total` is null
 * without a Content-Length). Fails with code FETCH_FAILED.
 */
export async function fetchBytes(url, file, on_progress, fetchImpl = globalThis.fetch) {
  const failed = (reason) =>
    new SextantError('FETCH_FAILED', `fetching the ${file} from ${url} failed: ${reason}; check the URL and that the server serves that file`);
  let response;
  try {
    response = await fetchImpl(url);
  } catch (e) {
    throw failed(e?.message ?? String(e));
  }
  if (!response.ok) throw failed(`HTTP status ${response.status}`);
  const length = Number(response.headers.get('content-length'));
  const total = Number.isFinite(length) && length > 0 ? length : null;
  const report = (loaded) => on_progress?.({ file, loaded, total });
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    report(bytes.length);
    return bytes;
  }
  const reader = response.body.getReader();
  const parts = [];
  let loaded = 0;
  report(0);
  for (;;) {
    let step;
    try {
      step = await reader.read();
    } catch (e) {
      throw failed(e?.message ?? String(e));
    }
    if (step.done) break;
    parts.push(step.value);
    loaded += step.value.length;
    report(loaded);
  }
  if (parts.length === 1) return parts[0];
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return bytes;
}

async function toBytes(value, file, on_progress, fetchImpl) {
  if (value == null) return undefined;
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (isUrlLike(value)) return fetchBytes(String(value), file, on_progress, fetchImpl);
  throw new SextantError('BAD_ARGUMENT', `${file} must be a URL, an ArrayBuffer or a Uint8Array`);
}

/** Parses `Retry-After` (seconds or an HTTP date) into milliseconds, or null. */
export function retryAfterMs(header, now = Date.now()) {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Capped exponential backoff with full jitter: attempt 1 → up to 0.5 s, 2 → 1 s, … ≤ 8 s. */
export function backoffMs(attempt, random = Math.random) {
  return Math.min(8000, 500 * 2 ** (attempt - 1)) * random();
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

export function abortError(signal) {
  const reason = signal?.reason;
  if (reason?.name === 'TimeoutError') {
    return new SextantError('LLM_TIMEOUT', 'the LLM did not answer in time; raise timeout_ms or try again');
  }
  return new SextantError('ABORTED', 'the request was aborted');
}

export function chatUrl(baseUrl) {
  let url;
  try {
    url = new URL(String(baseUrl));
  } catch {
    throw new SextantError('LLM_BAD_URL', 'llm.base_url is not a URL; use e.g. https://api.openai.com/v1');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new SextantError('LLM_BAD_URL', `llm.base_url must be http(s), not ${url.protocol}`);
  }
  return url.href.replace(/\/+$/, '') + '/chat/completions';
}

/**
 * Upstream text made safe to show: the API key and any bearer token removed (a provider may echo
 * the Authorization header), control characters dropped, at most 300 characters.
 */
export function redact(text, secrets = []) {
  let out = String(text ?? '');
  for (const secret of secrets) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  out = out.replace(/(bearer\s+)[^\s"',;]+/gi, '$1[redacted]');
  out = out.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return out.length > 300 ? `${out.slice(0, 300)}…` : out;
}

/**
 * Reads an OpenAI-compatible SSE stream in time linear in its length. Calls on_delta(text) for
 * each content delta. Returns { usage, finish_reason, malformed, complete, overflow }:
 * `complete` when the stream said `[DONE]` or gave a finish reason, `overflow` when the answer
 * went over `max_answer_bytes` (reading stops there). Malformed events are counted and skipped;
 * a line longer than `max_line_bytes` fails with LLM_BAD_RESPONSE.
 */
export async function readChatStream(body, on_delta, { max_line_bytes = Infinity, max_answer_bytes = Infinity } = {}) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = []; // pieces of the line being received (joined once, when it ends)
  let lineBytes = 0; // bytes received since the last newline byte
  let usage = null;
  let finishReason = null;
  let malformed = 0;
  let sawDone = false;
  let answerBytes = 0;
  let overflow = false;
  const handle = (line) => {
    if (!line.startsWith('data:')) return; // comments, event:, id:, retry: lines
    const data = line.slice(5).trim();
    if (data === '[DONE]') {
      sawDone = true;
      return;
    }
    let event;
    try {
      event = JSON.parse(data);
    } catch {
      malformed += 1;
      return;
    }
    if (event?.usage) usage = event.usage;
    const choice = event?.choices?.[0];
    if (choice?.finish_reason) finishReason = choice.finish_reason;
    const delta = choice?.delta?.content;
    if (typeof delta === 'string' && delta.length > 0) {
      answerBytes += encoder.encode(delta).length;
      if (answerBytes > max_answer_bytes) {
        overflow = true;
        return;
      }
      on_delta(delta);
    }
  };
  const endLine = (last) => {
    pending.push(last);
    const line = pending.join('');
    pending = [];
    handle(line.endsWith('\r') ? line.slice(0, -1) : line);
  };
  while (!sawDone && !overflow) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    // Every line's length in bytes, including those that start and end in this chunk.
    let longest = 0;
    let from = 0;
    for (let nl = value.indexOf(10); nl >= 0; nl = value.indexOf(10, from)) {
      longest = Math.max(longest, lineBytes + nl - from);
      lineBytes = 0;
      from = nl + 1;
    }
    lineBytes += value.length - from;
    if (Math.max(longest, lineBytes) > max_line_bytes) {
      await reader.cancel().catch(() => {});
      throw new SextantError('LLM_BAD_RESPONSE', `the LLM sent an event line over ${max_line_bytes} bytes; raise max_sse_line_bytes if that is expected`);
    }
    // Only the new text is searched for newlines, so a long line costs linear time.
    const text = decoder.decode(value, { stream: true });
    let at = 0;
    let newline;
    while (!sawDone && !overflow && (newline = text.indexOf('\n', at)) >= 0) {
      endLine(text.slice(at, newline));
      at = newline + 1;
    }
    if (at < text.length) pending.push(text.slice(at));
  }
  if (!sawDone && !overflow && pending.length) endLine('');
  if (sawDone || overflow) await reader.cancel().catch(() => {});
  return { usage, finish_reason: finishReason, malformed, complete: sawDone || finishReason !== null, overflow };
}

/** A response body as text, at most `limit` bytes of it (the rest is not read). */
async function cappedText(response, limit) {
  if (!response.body) return { text: '', cut: false };
  const reader = response.body.getReader();
  const parts = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parts.push(value.subarray(0, Math.max(0, limit - size)));
    size += value.length;
    if (size >= limit) {
      await reader.cancel().catch(() => {});
      break;
    }
  }
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return { text: new TextDecoder().decode(bytes), cut: size > limit };
}

async function errorDetail(response, secrets) {
  try {
    const { text } = await cappedText(response, 4096);
    let message = text;
    try {
      message = JSON.parse(text)?.error?.message ?? text;
    } catch {}
    return redact(message, secrets);
  } catch {
    return '';
  }
}

/**
 * POSTs the chat request, retrying 429 and 5xx (at most `max_tries` tries, Retry-After honoured).
 * Each try is pushed onto `trace` as `{attempt, status, ms, outcome, retry_after_ms?, wait_ms?}`
 * (`status` null when no answer came; `outcome` "answered", "retry" or the error code).
 */
export async function postWithRetries(url, init, { max_tries, signal, fetchImpl, random, on_retry, secrets, trace = [] }) {
  for (let attempt = 1; ; attempt++) {
    let response;
    const started = performance.now();
    const record = (status, outcome, more = {}) => trace.push({ attempt, status, ms: Math.round(performance.now() - started), outcome, ...more });
    try {
      response = await fetchImpl(url, { ...init, signal });
    } catch (e) {
      const error = signal?.aborted
        ? abortError(signal)
        : new SextantError('LLM_UNREACHABLE', 'could not reach the LLM endpoint; check llm.base_url and the network', {
          detail: redact(`${new URL(url).origin}: ${e?.message ?? e}`, secrets),
        });
      record(null, error.code);
      throw error;
    }
    if (response.ok) {
      record(response.status, 'answered');
      return response;
    }
    const status = response.status;
    if (status === 401 || status === 403) {
      const detail = await errorDetail(response, secrets);
      record(status, 'LLM_AUTH');
      throw new SextantError('LLM_AUTH', `the LLM endpoint refused the request (${status}); check llm.api_key and that the key may use llm.model`, { status, detail });
    }
    const retryable = status === 429 || status >= 500;
    if (!retryable || attempt >= max_tries) {
      const detail = await errorDetail(response, secrets);
      const code = retryable ? 'LLM_UNAVAILABLE' : 'LLM_HTTP';
      const hint = retryable ? `after ${attempt} tries; try again later` : 'check llm.model and the request options';
      record(status, code);
      throw new SextantError(code, `the LLM endpoint answered ${status} ${hint}`, { status, detail });
    }
    await response.body?.cancel().catch(() => {});
    const retryAfter = retryAfterMs(response.headers.get('retry-after'));
    const wait = retryAfter ?? backoffMs(attempt, random);
    record(status, 'retry', { retry_after_ms: retryAfter, wait_ms: Math.round(Math.min(wait, 30000)) });
    on_retry?.({ attempt, status, wait_ms: Math.min(wait, 30000) });
    try {
      await sleep(Math.min(wait, 30000), signal);
    } catch {
      throw abortError(signal);
    }
  }
}

/** The answer of a response that is a whole (not streamed) chat completion. */
export async function readJsonCompletion(response, on_delta, max_answer_bytes) {
  // The JSON around the answer is small: an answer's limit plus 64 KB is enough.
  const { text, cut } = await cappedText(response, max_answer_bytes + 65536);
  if (cut) {
    throw new SextantError('LLM_INCOMPLETE', `the answer is over max_answer_bytes (${max_answer_bytes})`, { partial_answer: '' });
  }
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SextantError('LLM_BAD_RESPONSE', 'the LLM answered with JSON that does not parse; check that llm.base_url is an OpenAI-compatible API');
  }
  const choice = parsed?.choices?.[0];
  const content = choice?.message?.content;
  if (typeof content !== 'string') {
    throw new SextantError('LLM_BAD_RESPONSE', 'the LLM answered with JSON that is not a chat completion (no choices[0].message.content)');
  }
  if (new TextEncoder().encode(content).length > max_answer_bytes) {
    throw new SextantError('LLM_INCOMPLETE', `the answer is over max_answer_bytes (${max_answer_bytes})`, { partial_answer: '' });
  }
  if (content) on_delta(content);
  return { usage: parsed.usage ?? null, finish_reason: choice.finish_reason ?? 'stop', malformed: 0, complete: true, overflow: false, text: content };
}

/**
 * Reads the LLM's answer (an event stream, or a whole JSON completion) and checks it ended well:
 * cut off, over `max_answer_bytes`, without [DONE] or empty are errors that keep what arrived
 * (`partial_answer`, from `sofar()`).
 */
async function readAnswer(response, onDelta, settings, signal, secrets, sofar) {
  const type = (response.headers.get('content-type') ?? '').toLowerCase();
  let stream;
  try {
    if (type.includes('application/json')) {
      stream = await readJsonCompletion(response, onDelta, settings.max_answer_bytes);
    } else if (type && !type.includes('text/event-stream')) {
      await response.body?.cancel().catch(() => {});
      throw new SextantError('LLM_BAD_RESPONSE', `the LLM answered with ${type.split(';')[0]}, not an event stream; check that llm.base_url is an OpenAI-compatible API`);
    } else if (!response.body) {
      throw new SextantError('LLM_BAD_RESPONSE', 'the LLM answered without a body');
    } else {
      stream = await readChatStream(response.body, onDelta, { max_line_bytes: settings.max_sse_line_bytes, max_answer_bytes: settings.max_answer_bytes });
    }
  } catch (e) {
    if (signal?.aborted) throw abortError(signal);
    if (e instanceof SextantError) throw e;
    throw new SextantError('LLM_INCOMPLETE', `the LLM stream broke off: ${redact(e?.message ?? e, secrets)}`, { partial_answer: sofar() });
  }
  if (stream.overflow) {
    throw new SextantError('LLM_INCOMPLETE', `the answer went over max_answer_bytes (${settings.max_answer_bytes}) and was cut`, { partial_answer: sofar() });
  }
  if (!stream.complete) {
    throw new SextantError('LLM_INCOMPLETE', 'the LLM stream ended before the answer was complete (no [DONE] and no finish reason); try again', { partial_answer: sofar() });
  }
  if (!sofar().trim()) {
    throw new SextantError('LLM_BAD_RESPONSE', 'the LLM returned an empty answer');
  }
  return stream;
}

/**
 * The files of a split index, fetched from beside its manifest as the engine asks for them: in
 * parallel, each once (a file being fetched is awaited, not fetched again).
 */
class IndexFiles {
  #base;
  #fetch;
  #pending = new Map();

  constructor(base, fetchImpl) {
    this.#base = base;
    this.#fetch = fetchImpl;
  }

  /** Fetches `names` and adds each to `engine` (which checks it against its hash). */
  async add(engine, names) {
    await Promise.all(
      names.map((name) => {
        if (!this.#pending.has(name)) {
          const url = new URL(name, this.#base).href;
          const added = fetchBytes(url, 'index file', null, this.#fetch).then((bytes) => call(() => engine.addFile(name, bytes)));
          // Only while in flight: once added (or failed), a later query that needs the file
          // again (the engine let go of it, or the fetch failed) fetches it again.
          const settle = () => this.#pending.delete(name);
          added.then(settle, settle);
          this.#pending.set(name, added);
        }
        return this.#pending.get(name);
      }),
    );
  }
}

/** A packed index holds every file: the engine never asks for one. */
const NO_FILES = {
  async add(_engine, names) {
    throw new SextantError('INTERNAL', `a packed index asked for files (${names.join(', ')}); build it again`);
  },
};

/**
 * Builds the package API around the wasm bindings. `initialise()` instantiates the
 * WebAssembly module (sync or async); it runs once, on the first `load()` or `ready()`.
 */
export function makeApi(wasm, initialise) {
  let pending = null;
  let initialised = false;
  let exports = null; // the instance's exports, for memoryBytes()
  let cachedDefaults = null;
  const ready = () => {
    pending ??= Promise.resolve()
      .then(initialise)
      .then((instanceExports) => {
        exports = instanceExports ?? null;
        initialised = true;
      });
    return pending;
  };
  /** Bytes of WebAssembly linear memory in use (it only grows), or null before ready(). */
  const memoryBytes = () => exports?.memory?.buffer?.byteLength ?? null;
  const requireReady = () => {
    if (!initialised) {
      throw new SextantError('NOT_READY', 'the WebAssembly module is not loaded yet; await ready() or Sextant.load() first');
    }
  };
  /** The core's defaults, limits, error codes and prompt texts (after ready()). */
  const defaults = () => {
    requireReady();
    cachedDefaults ??= call(() => wasm.defaults());
    return structuredClone(cachedDefaults);
  };
  const verifyCitations = (answer, sent) => {
    requireReady();
    return call(() => wasm.verifyCitations(String(answer), sent));
  };
  const highlights = (text, query) => {
    requireReady();
    return call(() => wasm.highlights(String(text), String(query)));
  };

  /**
   * Runs a step of the engine until it needs no more files, fetching what it asks for; then, with
   * `maxIndexBytes`, lets the engine drop the least recently used files beyond it.
   */
  async function untilDone(engine, files, step, maxIndexBytes, rounds = 8) {
    let fetchMs = 0;
    let fetched = 0;
    for (let round = 0; round < rounds; round++) {
      const result = call(step);
      if (!result || !Array.isArray(result.need)) {
        if (maxIndexBytes != null) engine.trim(maxIndexBytes);
        // Waiting for index files is the host's time, not the core's: beside its stages.
        if (result?.timings) Object.assign(result.timings, { fetch_ms: fetchMs, files_fetched: fetched });
        return result;
      }
      const started = performance.now();
      await files.add(engine, result.need);
      fetchMs += performance.now() - started;
      fetched += result.need.length;
    }
    throw new SextantError('INTERNAL', 'the index kept asking for files; reload the page, or build the index again');
  }

  /**
   * Answers `question` from the context `prepare(options)` frames (one index's, or several
   * bases' fused) with the LLM the caller configures: see `Sextant.ask`.
   */
  async function answer(question, { llm, signal, on_context, on_token, on_retry, fetch: fetchImpl = globalThis.fetch, random = Math.random, ...options } = {}, prepare) {
    const started = performance.now();
    if (typeof question !== 'string') throw new SextantError('BAD_ARGUMENT', 'the question must be a string');
    if (!llm || !llm.base_url || !llm.model) {
      throw new SextantError('BAD_ARGUMENT', 'ask() needs llm: { base_url, model, api_key? }');
    }
    const url = chatUrl(llm.base_url);
    const prepared = await prepare(options);
    const timings = { ...prepared.timings, retrieve_ms: performance.now() - started, llm_first_token_ms: null, llm_ms: 0, total_ms: 0 };
    const trace = [];
    const finish = () => {
      timings.total_ms = performance.now() - started;
      return { timings, trace };
    };
    on_context?.(prepared);
    const sent = prepared.results.filter((r) => prepared.included.includes(r.chunk_id));
    if (prepared.refused) {
      return { answer: prepared.refusal, citations: [], unknown_citations: [], grounded: false, refused: true, chunks: [], usage: null, malformed_events: 0, finish_reason: null, truncated: false, spans: [], ...finish() };
    }
    const settings = prepared.options;
    const secrets = [llm.api_key, ...Object.values(llm.headers ?? {})].filter((v) => typeof v === 'string' && v);
    const headers = { 'content-type': 'application/json', accept: 'text/event-stream', ...(llm.headers ?? {}) };
    if (llm.api_key) headers.authorization = `Bearer ${llm.api_key}`;
    const body = JSON.stringify({
      model: llm.model,
      stream: true,
      stream_options: { include_usage: true },
      temperature: settings.temperature,
      messages: prepared.messages,
    });
    const signals = [signal, settings.timeout_ms ? AbortSignal.timeout(settings.timeout_ms) : null].filter(Boolean);
    const combined = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    const llmStarted = performance.now();
    let answer = '';
    const onDelta = (delta) => {
      timings.llm_first_token_ms ??= performance.now() - llmStarted;
      answer += delta;
      on_token?.(delta);
    };
    let stream;
    let streamStarted = null;
    // The try that answered gains how its stream went: its length, and "ok" or the error.
    const streamEnded = (outcome) => {
      const last = trace.at(-1);
      if (streamStarted === null || !last) return;
      Object.assign(last, { outcome, stream_ms: Math.round(performance.now() - streamStarted), answer_bytes: new TextEncoder().encode(answer).length, finish_reason: stream?.finish_reason ?? null });
    };
    try {
      const response = await postWithRetries(url, { method: 'POST', headers, body }, {
        max_tries: settings.max_tries, signal: combined, fetchImpl, random, on_retry, secrets, trace,
      });
      streamStarted = performance.now();
      stream = await readAnswer(response, onDelta, settings, combined, secrets, () => answer);
      streamEnded('ok');
    } catch (e) {
      streamEnded(e?.code ?? 'INTERNAL');
      timings.llm_ms = performance.now() - llmStarted;
      // The error says what happened to each try, and how long each stage took.
      Object.assign(e, finish());
      throw e;
    }
    timings.llm_ms = performance.now() - llmStarted;
    const report = verifyCitations(answer, sent.map((r) => r.chunk_id));
    const byId = new Map(sent.map((r) => [r.chunk_id, r]));
    const citations = report.citations.map((c) => ({
      ...c,
      url: byId.get(c.chunk_id)?.url ?? null,
      title: byId.get(c.chunk_id)?.title ?? null,
      ...(byId.get(c.chunk_id)?.base !== undefined ? { base: byId.get(c.chunk_id).base } : {}),
    }));
    return {
      answer,
      citations,
      unknown_citations: report.unknown,
      grounded: report.grounded,
      refused: false,
      chunks: sent,
      usage: stream.usage,
      malformed_events: stream.malformed,
      finish_reason: stream.finish_reason,
      truncated: stream.finish_reason === 'length' || stream.finish_reason === 'content_filter',
      spans: report.spans,
      ...finish(),
    };
  }

  class Sextant {
    #engine;
    #files;
    #maxIndexBytes;

    constructor(engine, files, maxIndexBytes) {
      this.#engine = engine;
      this.#files = files;
      this.#maxIndexBytes = maxIndexBytes;
    }

    /**
     * Loads an index and (optionally) the model that queries it. `index` is the URL of a split
     * index's manifest (`sextant build --site` writes `sextant/index/manifest.*.json`; its files
     * are fetched from beside it as queries need them) or a packed index (`.sxt`, URL or bytes).
     * model and tokenizer are URLs or bytes. on_progress({file, loaded, total}) reports downloads.
     * weights: 'int8' (default: fastest, least memory) or 'f32' (the CLI's f32 products: about
     * 31 MB more memory, twice the query time). fetch: the fetch
     * used for every URL (a Worker passes its ASSETS binding's). max_index_bytes: over a split
     * index, the most bytes of keyword shards, fragments and vector blocks kept between queries
     * (the least recently used go first, fetched again if needed; default: no limit).
     */
    static async load({ index, model, tokenizer, on_progress, fetch: fetchImpl = globalThis.fetch, max_index_bytes, ...load_options } = {}) {
      if (index == null) throw new SextantError('BAD_ARGUMENT', 'load() needs an index: the URL of its manifest, or a packed .sxt (URL or bytes)');
      if (max_index_bytes != null && !(Number.isFinite(max_index_bytes) && max_index_bytes >= 0)) {
        throw new SextantError('BAD_ARGUMENT', `max_index_bytes must be a number of bytes (0 or more), not ${JSON.stringify(max_index_bytes)}`);
      }
      if ((model == null) !== (tokenizer == null)) {
        throw new SextantError('BAD_ARGUMENT', 'pass both model and tokenizer, or neither (keyword search only)');
      }
      // The index (or its manifest) downloads while the WebAssembly compiles.
      const [indexBytes] = await Promise.all([toBytes(index, 'index', on_progress, fetchImpl), ready()]);
      let engine;
      let files = null;
      if (indexBytes[0] === 0x7b /* '{' */) {
        if (!isUrlLike(index)) throw new SextantError('BAD_ARGUMENT', "a split index's manifest must be given by URL, so its files can be fetched from beside it");
        engine = call(() => wasm.Engine.fromManifest(indexBytes));
        files = new IndexFiles(new URL('.', new URL(String(index), globalThis.location?.href)), fetchImpl);
      } else {
        engine = call(() => new wasm.Engine(indexBytes));
      }
      // A packed index holds every file from the start and cannot fetch one again: never trimmed.
      const sextant = new Sextant(engine, files ?? NO_FILES, files ? max_index_bytes : undefined);
      if (model != null) await sextant.loadModel({ model, tokenizer, on_progress, fetch: fetchImpl, ...load_options });
      return sextant;
    }

    /** Attaches the index's model (URLs or bytes): dense and hybrid search, framing and ask(). */
    async loadModel(options = {}) {
      return this.#attach('loadModel', 'model', 'use the model', options);
    }

    /**
     * Attaches a cross-encoder (an ONNX model of yours and its tokenizer.json; none ships with
     * sextant): every search then reranks its best `rerank_depth` results with it.
     */
    async loadReranker(options = {}) {
      return this.#attach('loadReranker', 'reranker', 'rerank', options);
    }

    /** Fetches a model and its tokenizer (URLs or bytes) and hands them to the engine's `method`. */
    async #attach(method, file, purpose, { model, tokenizer, on_progress, fetch: fetchImpl = globalThis.fetch, ...rest } = {}) {
      if (model == null || tokenizer == null) throw new SextantError('BAD_ARGUMENT', `${method}() needs model and tokenizer (URLs or bytes)`);
      if (typeof this.#engine[method] !== 'function') {
        throw new SextantError('NO_MODEL', `this build of sextant searches by keyword only; load the full package to ${purpose}`);
      }
      const tokenizerBytes = await toBytes(tokenizer, 'tokenizer', on_progress, fetchImpl);
      const modelBytes = await toBytes(model, file, on_progress, fetchImpl);
      call(() => this.#engine[method](modelBytes, tokenizerBytes, rest));
    }

    /** Whether a model is attached. */
    get hasModel() {
      return this.#engine.hasModel();
    }

    /** await search(query, options) → {results, timings, vector_method, fallback}. */
    async search(query, options) {
      return untilDone(this.#engine, this.#files, () => this.#engine.search(String(query), options), this.#maxIndexBytes);
    }

    /** frame(results, {token_budget}) → {context, included, omitted, tokens, budget, system_prompt}. */
    frame(results, options) {
      return call(() => this.#engine.frame(results, options));
    }

    /** await context(question, options) → the results framed, with the chat messages to send. */
    async context(question, options) {
      return untilDone(this.#engine, this.#files, () => this.#engine.context(String(question), options), this.#maxIndexBytes);
    }

    manifest() {
      return call(() => this.#engine.manifest());
    }

    /** Fetches every file of a split index not fetched yet (for offline use); resolves when done. */
    async prefetch() {
      const f = this.manifest().files;
      const names = [f.norms, f.vectors.meta, ...f.keyword.map((s) => s.file), ...f.fragments.files, ...f.vectors.codes.files, ...f.vectors.blocks.files];
      if (this.#files !== NO_FILES) await this.#files.add(this.#engine, names);
    }

    embed(text) {
      return call(() => this.#engine.embed(String(text)));
    }

    /**
     * await get(id) → the chunk (`doc/page.md#3`) or whole document (`doc/page.md`) with this id:
     * { id, kind: 'chunk' | 'document', doc_id, title, source, url, heading_path, text,
     * chunk_ids }, or null. Over a split index it reads text fragments until it finds the id.
     */
    async get(id) {
      if (typeof id !== 'string') throw new SextantError('BAD_ARGUMENT', 'get() takes an id (a string): a chunk_id or a doc_id from search results');
      // Each round reads at least one fragment not held yet: as many rounds as fragments always end.
      const fragments = this.manifest().files.fragments.files.length;
      return untilDone(this.#engine, this.#files, () => this.#engine.lookup(id), this.#maxIndexBytes, fragments + 3);
    }

    /**
     * Uses `other`'s model for this index too (an index built with the same model, checked):
     * one copy of the weights in memory, and a query searched over both embedded once.
     */
    shareModel(other) {
      if (!(other instanceof Sextant)) throw new SextantError('BAD_ARGUMENT', 'shareModel() takes another Sextant');
      call(() => this.#engine.shareModel(other.#engine));
    }

    /** What `Bases` runs on each base: the engine, its files and its memory bound. */
    [INTERNAL]() {
      return { engine: this.#engine, files: this.#files, maxIndexBytes: this.#maxIndexBytes };
    }

    tokenIds(text) {
      return call(() => this.#engine.tokenIds(String(text)));
    }

    /**
     * Answers a question from the documents with the LLM the caller configures. `llm`, `signal`,
     * `on_context` (called with the framed context, before the LLM call), `on_token`, `on_retry`,
     * `fetch` and `random` are this function's; every other option is the core's
     * (`defaults().ask`). Returns { answer, citations, unknown_citations, grounded, refused,
     * chunks, usage, malformed_events, finish_reason, truncated, spans, timings, trace }:
     * `timings` the search's stages plus retrieve_ms, llm_first_token_ms, llm_ms and total_ms;
     * `trace` one entry per LLM call (see `postWithRetries`). An error carries both too.
     */
    async ask(question, options) {
      return answer(question, options, (ask) => untilDone(this.#engine, this.#files, () => this.#engine.prepareAsk(question, ask), this.#maxIndexBytes));
    }

    /** Releases the WebAssembly memory of this engine. */
    free() {
      this.#engine?.free();
      this.#engine = undefined;
    }
  }

  /**
   * Several knowledge bases (indexes built with the same model), searched alone or together. Each
   * base is searched alone and the lists are fused by rank (`fuseBases`: their scores do not
   * compare); every result names its `base`. A base that fails to load, or to answer a query, is
   * reported in `failed` and skipped: the others answer and the response says `partial: true`.
   * With more than one base, the ids an LLM reads and cites are `base:chunk_id`.
   */
  class Bases {
    #bases; // name → Sextant, in the order given
    #names; // every base given, loaded or not
    #failed; // bases that did not load: [{base, code, message}]

    constructor(bases, names, failed) {
      this.#bases = bases;
      this.#names = names;
      this.#failed = failed;
    }

    /**
     * Loads every base: `bases` is [{name, index, fetch?, max_index_bytes?}] (`index` as in
     * `Sextant.load`); `model` and `tokenizer` load once and every base shares them; the other
     * options are `Sextant.load`'s. Fails only when no base loads.
     */
    static async load({ bases, model, tokenizer, on_progress, fetch: fetchImpl = globalThis.fetch, max_index_bytes, ...load_options } = {}) {
      if (!Array.isArray(bases) || bases.length === 0) {
        throw new SextantError('BAD_ARGUMENT', 'Bases.load() needs bases: [{name, index}, …], at least one');
      }
      const names = [];
      for (const base of bases) {
        const name = base?.name;
        if (typeof name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(name)) {
          throw new SextantError('BAD_ARGUMENT', `a base's name must be 1–64 letters, digits, '.', '_' or '-' (starting with a letter or digit), not ${JSON.stringify(name)}`);
        }
        if (names.includes(name)) throw new SextantError('BAD_ARGUMENT', `two bases are named ${JSON.stringify(name)}; give each its own name`);
        names.push(name);
      }
      const failed = [];
      const fail = (base, e) => failed.push({ base, code: e?.code ?? 'INTERNAL', message: String(e?.message ?? e) });
      const settled = await Promise.allSettled(
        bases.map((b) => Sextant.load({ index: b.index, on_progress, fetch: b.fetch ?? fetchImpl, max_index_bytes: b.max_index_bytes ?? max_index_bytes })),
      );
      const loaded = new Map();
      settled.forEach((r, i) => (r.status === 'fulfilled' ? loaded.set(names[i], r.value) : fail(names[i], r.reason)));
      if (model != null || tokenizer != null) {
        // The model loads once, into the first base built with it; the others share it.
        let owner = null;
        for (const [name, sextant] of [...loaded]) {
          try {
            if (owner) sextant.shareModel(owner);
            else {
              await sextant.loadModel({ model, tokenizer, on_progress, fetch: fetchImpl, ...load_options });
              owner = sextant;
            }
          } catch (e) {
            if (e?.code !== 'MODEL_MISMATCH') {
              for (const other of loaded.values()) other.free();
              throw e;
            }
            fail(name, e);
            sextant.free();
            loaded.delete(name);
          }
        }
      }
      failed.sort((a, b) => names.indexOf(a.base) - names.indexOf(b.base));
      if (loaded.size === 0) {
        throw new SextantError(failed[0].code, `no knowledge base loaded: ${failed.map((f) => `${f.base}: ${f.message}`).join('; ')}`, { failed });
      }
      return new Bases(loaded, names, failed);
    }

    /** Every base's name, loaded or not, in the order given. */
    get names() {
      return [...this.#names];
    }

    /** The bases that did not load: [{base, code, message}]. */
    get failed() {
      return structuredClone(this.#failed);
    }

    /** A loaded base's Sextant (undefined for a base that did not load). */
    base(name) {
      return this.#bases.get(name);
    }

    /** Each base: {base, loaded, documents, chunks, model, format} or {base, loaded: false, code, message}. */
    describe() {
      return this.#names.map((base) => {
        const sextant = this.#bases.get(base);
        if (!sextant) {
          const { code, message } = this.#failed.find((f) => f.base === base);
          return { base, loaded: false, code, message };
        }
        const m = sextant.manifest();
        return { base, loaded: true, documents: m.counts.documents, chunks: m.counts.chunks, has_model: sextant.hasModel, model: { sha256: m.model.sha256, dims: m.model.dims }, format: m.format };
      });
    }

    /** The ids an LLM reads: `base:chunk_id` once there is more than one base. */
    #qualified(base, id) {
      return this.#names.length > 1 ? `${base}:${id}` : id;
    }

    /** Which bases a call searches: `bases` (names; all when absent). */
    #select(bases) {
      if (bases == null) return this.#names;
      const list = typeof bases === 'string' ? bases.split(',').map((b) => b.trim()).filter(Boolean) : bases;
      if (!Array.isArray(list) || list.length === 0) throw new SextantError('BAD_ARGUMENT', `bases must be a list of base names (${this.#names.join(', ')})`);
      const unknown = list.find((b) => !this.#names.includes(b));
      if (unknown !== undefined) throw new SextantError('BAD_ARGUMENT', `there is no base ${JSON.stringify(unknown)}; the bases are ${this.#names.join(', ')}`);
      return [...new Set(list)];
    }

    /** Searches the chosen bases as `purpose` (search, context or ask) does, and fuses them. */
    async #searchAll(purpose, query, bases, options) {
      const started = performance.now();
      const names = this.#select(bases);
      const failed = this.#failed.filter((f) => names.includes(f.base));
      const live = names.filter((name) => this.#bases.has(name));
      const settled = await Promise.allSettled(
        live.map((name) => {
          const { engine, files, maxIndexBytes } = this.#bases.get(name)[INTERNAL]();
          return untilDone(engine, files, () => engine.searchFor(String(query), options, purpose), maxIndexBytes);
        }),
      );
      const lists = [];
      const perBase = [];
      for (const [i, r] of settled.entries()) {
        if (r.status === 'rejected') {
          // Options are checked the same way by every base: a bad one is the caller's error.
          if (r.reason?.code === 'BAD_ARGUMENT' || r.reason?.code === 'NO_MODEL') throw r.reason;
          failed.push({ base: live[i], code: r.reason?.code ?? 'INTERNAL', message: String(r.reason?.message ?? r.reason) });
          continue;
        }
        lists.push({ base: live[i], results: r.value.results });
        perBase.push({ base: live[i], count: r.value.results.length, fallback: r.value.fallback, vector_method: r.value.vector_method, timings: r.value.timings });
      }
      if (lists.length === 0) {
        throw new SextantError(failed[0]?.code ?? 'INTERNAL', `no knowledge base answered: ${failed.map((f) => `${f.base}: ${f.message}`).join('; ')}`, { failed });
      }
      const k = options?.k ?? defaults()[purpose].k;
      const results = call(() => wasm.fuseBases(lists, k));
      // Stages add up over the bases (the query is embedded once: the others reuse it).
      const timings = {};
      for (const { timings: t } of perBase) for (const [key, ms] of Object.entries(t)) timings[key] = (timings[key] ?? 0) + ms;
      timings.total_ms = performance.now() - started;
      const fallback = [...new Set(perBase.flatMap((b) => b.fallback ?? []))];
      return { results, timings, fallback, bases: perBase, partial: failed.length > 0, failed };
    }

    /**
     * await search(query, {bases, ...options}) → {results (each with base, base_rank and
     * base_score; rank and score fused), timings, fallback, bases: [{base, count, timings, …}],
     * partial, failed}. `bases` chooses the bases (names, or "a,b"); all by default.
     */
    async search(query, { bases, ...options } = {}) {
      return this.#searchAll('search', query, bases, options);
    }

    /** Searches, fuses and frames, as `context`/`prepareAsk` do for one index. */
    async #frame(purpose, question, bases, options) {
      const found = await this.#searchAll(purpose, question, bases, options);
      const framer = [...this.#bases.values()].find((s) => s.hasModel);
      if (!framer) throw new SextantError('NO_MODEL', 'framing needs the embedding model: load the bases with model and tokenizer');
      const results = found.results.map((r) => ({ ...r, chunk_id: this.#qualified(r.base, r.chunk_id) }));
      const { engine } = framer[INTERNAL]();
      const framed = call(() => engine.contextOf(String(question), results, options, purpose, found.timings));
      return { ...framed, results, bases: found.bases, partial: found.partial, failed: found.failed };
    }

    /** await context(question, {bases, ...options}) → `Sextant.context`'s fields over the bases. */
    async context(question, { bases, ...options } = {}) {
      return this.#frame('context', question, bases, options);
    }

    /** await ask(question, {bases, llm, ...}) → `Sextant.ask`'s answer over the bases. */
    async ask(question, { bases, ...options } = {}) {
      let found;
      const answered = await answer(question, options, async (ask) => (found = await this.#frame('ask', question, bases, ask)));
      return { ...answered, bases: found.bases, partial: found.partial, failed: found.failed };
    }

    /**
     * await get(id, {base}) → `Sextant.get` in one base: `base`, or the base named before the
     * first ':' of a qualified id (`docs:guide/install.md#3`); null when not found.
     */
    async get(id, { base } = {}) {
      if (typeof id !== 'string') throw new SextantError('BAD_ARGUMENT', 'get() takes an id (a string) from search results');
      let name = base;
      let local = id;
      // An id from search results may carry its base even when `base` is given too.
      if (name != null && this.#names.length > 1 && id.startsWith(`${name}:`)) local = id.slice(name.length + 1);
      if (name == null) {
        const at = id.indexOf(':');
        if (this.#names.length === 1) name = this.#names[0];
        else if (at > 0 && this.#names.includes(id.slice(0, at))) [name, local] = [id.slice(0, at), id.slice(at + 1)];
        else throw new SextantError('BAD_ARGUMENT', `say which base holds ${JSON.stringify(id)}: an id like "base:chunk_id", or {base}; the bases are ${this.#names.join(', ')}`);
      }
      this.#select([name]);
      const sextant = this.#bases.get(name);
      if (!sextant) {
        const { code, message } = this.#failed.find((f) => f.base === name);
        throw new SextantError(code, `base ${name} did not load: ${message}`);
      }
      const found = await sextant.get(local);
      if (!found) return null;
      const qualify = (x) => this.#qualified(name, x);
      return { ...found, base: name, id: qualify(found.id), doc_id: qualify(found.doc_id), chunk_ids: found.chunk_ids.map(qualify) };
    }
  }

  /** A Sextant over an engine made in wasm (a collection's), holding every file. */
  const wrapEngine = (engine) => new Sextant(engine, NO_FILES);

  return { Sextant, Bases, SextantError, verifyCitations, highlights, defaults, ready, memoryBytes, wrapEngine };
}
