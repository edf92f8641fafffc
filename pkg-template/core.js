// The sextant JS API, shared by the browser, Node and workerd entry points. Each entry point
// initialises the WebAssembly module its own way and passes the bindings in.

/** An error with a stable `code` (e.g. CORRUPT_BUNDLE, MODEL_MISMATCH, LLM_AUTH). */
export class SextantError extends Error {
  constructor(code, message, details = {}) {
    super(message);
    this.name = 'SextantError';
    this.code = code;
    Object.assign(this, details);
  }
}

const REFUSAL = 'I could not find anything in the documents that answers this question.';

/** Turns whatever the wasm side threw into an Error with a code. */
function rethrow(error) {
  if (error instanceof Error) {
    if (!error.code) error.code = 'INTERNAL';
    return error;
  }
  return new SextantError('INTERNAL', String(error));
}

function isUrlLike(value) {
  return typeof value === 'string' || value instanceof URL;
}

async function toBytes(wasm, value, file, onProgress) {
  if (value == null) return undefined;
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (isUrlLike(value)) {
    try {
      return await wasm.fetchBytes(String(value), file, onProgress);
    } catch (e) {
      throw rethrow(e);
    }
  }
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

function abortError(signal) {
  const reason = signal?.reason;
  if (reason?.name === 'TimeoutError') {
    return new SextantError('LLM_TIMEOUT', 'the LLM did not answer in time; raise timeoutMs or try again');
  }
  return new SextantError('ABORTED', 'the request was aborted');
}

function chatUrl(baseUrl) {
  let url;
  try {
    url = new URL(String(baseUrl));
  } catch {
    throw new SextantError('LLM_BAD_URL', `llm.baseUrl ${JSON.stringify(String(baseUrl))} is not a URL; use e.g. https://api.openai.com/v1`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new SextantError('LLM_BAD_URL', `llm.baseUrl must be http(s), not ${url.protocol}`);
  }
  return url.href.replace(/\/+$/, '') + '/chat/completions';
}

/**
 * Reads an OpenAI-compatible SSE stream. Calls onDelta(text) for each content delta; returns
 * { usage, finishReason, malformed }. Malformed lines are counted and skipped, never thrown.
 */
export async function readChatStream(body, onDelta) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let usage = null;
  let finishReason = null;
  let malformed = 0;
  let done = false;
  const handle = (line) => {
    if (!line.startsWith('data:')) return; // comments, event:, id:, retry: lines
    const data = line.slice(5).trim();
    if (data === '[DONE]') {
      done = true;
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
    if (typeof delta === 'string' && delta.length > 0) onDelta(delta);
  };
  while (!done) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    buffer += decoder.decode(value, { stream: true });
    let newline;
    while ((newline = buffer.search(/\r?\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(buffer[newline] === '\r' ? newline + 2 : newline + 1);
      handle(line);
      if (done) break;
    }
  }
  if (!done && buffer.trim()) handle(buffer.trim());
  if (done) await reader.cancel().catch(() => {});
  return { usage, finishReason, malformed };
}

async function errorText(response) {
  try {
    const text = await response.text();
    const parsed = JSON.parse(text);
    return parsed?.error?.message ?? text.slice(0, 300);
  } catch {
    return '';
  }
}

/** POSTs the chat request, retrying 429 and 5xx (at most `maxTries` tries, Retry-After honoured). */
async function postWithRetries(url, init, { maxTries, signal, fetchImpl, random, onRetry }) {
  for (let attempt = 1; ; attempt++) {
    let response;
    try {
      response = await fetchImpl(url, { ...init, signal });
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      throw new SextantError('LLM_UNREACHABLE', `could not reach the LLM at ${new URL(url).origin} (${e?.message ?? e}); check llm.baseUrl and the network`);
    }
    if (response.ok) return response;
    const status = response.status;
    if (status === 401 || status === 403) {
      const detail = await errorText(response);
      throw new SextantError('LLM_AUTH', `the LLM endpoint refused the request (${status}${detail ? `: ${detail}` : ''}); check llm.apiKey and that the key may use llm.model`, { status });
    }
    const retryable = status === 429 || status >= 500;
    if (!retryable || attempt >= maxTries) {
      const detail = await errorText(response);
      const code = retryable ? 'LLM_UNAVAILABLE' : 'LLM_HTTP';
      const hint = retryable ? `after ${attempt} tries; try again later` : 'check llm.model and the request options';
      throw new SextantError(code, `the LLM endpoint answered ${status}${detail ? ` (${detail})` : ''} ${hint}`, { status });
    }
    await response.body?.cancel().catch(() => {});
    const wait = retryAfterMs(response.headers.get('retry-after')) ?? backoffMs(attempt, random);
    onRetry?.({ attempt, status, waitMs: Math.min(wait, 30000) });
    try {
      await sleep(Math.min(wait, 30000), signal);
    } catch {
      throw abortError(signal);
    }
  }
}

/**
 * Builds the package API around the wasm bindings. `initialise()` instantiates the
 * WebAssembly module (sync or async); it runs once, on the first `load()` or `ready()`.
 */
export function makeApi(wasm, initialise) {
  let pending = null;
  let initialised = false;
  let exports = null; // the instance's exports, for memoryBytes()
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
  const verifyCitations = (answer, sent) => {
    requireReady();
    try {
      return wasm.verifyCitations(String(answer), sent);
    } catch (e) {
      throw rethrow(e);
    }
  };

  class Sextant {
    #engine;

    constructor(engine) {
      this.#engine = engine;
    }

    /**
     * Loads a bundle and (optionally) the model that queries it. Each of bundle, model and
     * tokenizer is a URL or bytes. onProgress({file, loaded, total}) reports downloads.
     * weights: 'f32' (default, fastest) or 'int8' (less memory, slower queries).
     */
    static async load({ bundle, model, tokenizer, onProgress, weights } = {}) {
      if (bundle == null) throw new SextantError('BAD_ARGUMENT', 'load() needs a bundle (URL or bytes)');
      await ready();
      if ((model == null) !== (tokenizer == null)) {
        throw new SextantError('BAD_ARGUMENT', 'pass both model and tokenizer, or neither (keyword search only)');
      }
      const [bundleBytes, tokenizerBytes, modelBytes] = [
        await toBytes(wasm, bundle, 'bundle', onProgress),
        await toBytes(wasm, tokenizer, 'tokenizer', onProgress),
        await toBytes(wasm, model, 'model', onProgress),
      ];
      try {
        return new Sextant(new wasm.Engine(bundleBytes, modelBytes, tokenizerBytes, weights === undefined ? undefined : { weights }));
      } catch (e) {
        throw rethrow(e);
      }
    }

    /** search(query, {k, mode, threshold, minSimilarity, perDocument}) → {results, timings, vector_method}. */
    search(query, options) {
      try {
        return this.#engine.search(String(query), options);
      } catch (e) {
        throw rethrow(e);
      }
    }

    /** frame(results, {tokenBudget}) → {context, included, omitted, tokens, budget, systemPrompt}. */
    frame(results, options) {
      try {
        return this.#engine.frame(results, options);
      } catch (e) {
        throw rethrow(e);
      }
    }

    /** context(query, {tokenBudget, k, mode, threshold, minSimilarity}) → framed context plus the results. */
    context(query, { tokenBudget = 1500, ...searchOptions } = {}) {
      const { results } = this.search(query, searchOptions);
      return { ...this.frame(results, { tokenBudget }), results };
    }

    manifest() {
      return this.#engine.manifest();
    }

    embed(text) {
      try {
        return this.#engine.embed(String(text));
      } catch (e) {
        throw rethrow(e);
      }
    }

    tokenIds(text) {
      try {
        return this.#engine.tokenIds(String(text));
      } catch (e) {
        throw rethrow(e);
      }
    }

    /**
     * Answers a question from the documents with the LLM the caller configures.
     * Returns { answer, citations, unknownCitations, grounded, refused, chunks, usage }.
     */
    async ask(question, {
      llm,
      k = 6,
      tokenBudget = 1500,
      mode = 'hybrid',
      threshold,
      minSimilarity = 0.3,
      signal,
      timeoutMs = 60000,
      onToken,
      onRetry,
      maxTries = 3,
      temperature = 0,
      fetch: fetchImpl = globalThis.fetch,
      random = Math.random,
    } = {}) {
      if (!llm || !llm.baseUrl || !llm.model) {
        throw new SextantError('BAD_ARGUMENT', 'ask() needs llm: { baseUrl, model, apiKey? }');
      }
      const url = chatUrl(llm.baseUrl);
      const framed = this.context(question, { tokenBudget, k, mode, threshold, minSimilarity });
      const sent = framed.results.filter((r) => framed.included.includes(r.chunk_id));
      if (sent.length === 0) {
        return { answer: REFUSAL, citations: [], unknownCitations: [], grounded: false, refused: true, chunks: [], usage: null };
      }
      const headers = { 'content-type': 'application/json', accept: 'text/event-stream', ...(llm.headers ?? {}) };
      if (llm.apiKey) headers.authorization = `Bearer ${llm.apiKey}`;
      const body = JSON.stringify({
        model: llm.model,
        stream: true,
        stream_options: { include_usage: true },
        temperature,
        messages: [
          {
            role: 'system',
            content: `You answer questions using only the retrieved documents below. ${framed.systemPrompt} If the documents do not contain the answer, say so.\n\n${framed.context}`,
          },
          { role: 'user', content: String(question) },
        ],
      });
      const signals = [signal, timeoutMs ? AbortSignal.timeout(timeoutMs) : null].filter(Boolean);
      const combined = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
      const response = await postWithRetries(url, { method: 'POST', headers, body }, {
        maxTries, signal: combined, fetchImpl, random, onRetry,
      });
      if (!response.body) throw new SextantError('LLM_BAD_RESPONSE', 'the LLM answered without a body');
      let answer = '';
      let stream;
      try {
        stream = await readChatStream(response.body, (delta) => {
          answer += delta;
          onToken?.(delta);
        });
      } catch (e) {
        if (combined?.aborted) throw abortError(combined);
        throw new SextantError('LLM_BAD_RESPONSE', `the LLM stream broke off: ${e?.message ?? e}`);
      }
      const report = verifyCitations(answer, sent.map((r) => r.chunk_id));
      const byId = new Map(sent.map((r) => [r.chunk_id, r]));
      const citations = report.citations.map((c) => ({
        ...c,
        url: byId.get(c.chunk_id)?.url ?? null,
        title: byId.get(c.chunk_id)?.title ?? null,
      }));
      return {
        answer,
        citations,
        unknownCitations: report.unknown,
        grounded: report.grounded,
        refused: false,
        chunks: sent,
        usage: stream.usage,
        malformedEvents: stream.malformed,
        finishReason: stream.finishReason,
      };
    }

    /** Releases the WebAssembly memory of this engine. */
    free() {
      this.#engine?.free();
      this.#engine = undefined;
    }
  }

  const systemPrompt = () => {
    requireReady();
    return wasm.systemPrompt();
  };

  return { Sextant, SextantError, verifyCitations, systemPrompt, ready, memoryBytes };
}
