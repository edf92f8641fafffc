// The OpenAI-compatible chat client that `ask()` and `research()` share: one request POSTed with
// retries (429 and 5xx, Retry-After honoured, capped backoff with jitter), its answer read with
// the same caps whoever asked (an event stream line by line, each line at most
// `max_sse_line_bytes`, the answer at most `max_answer_bytes`; a whole JSON completion read only
// that far), upstream error text redacted, and one trace entry per try. The settings are the
// core's (`defaults().ask`, `defaults().research`); the words sent are the caller's (the core's
// prompts).
import { SextantError } from './errors.js';
import { concat } from './fetching.js';

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

/** The error of an aborted call: LLM_TIMEOUT when its time ran out, ABORTED otherwise. */
export function abortError(signal) {
  const reason = signal?.reason;
  if (reason?.name === 'TimeoutError') {
    return new SextantError('LLM_TIMEOUT', 'the LLM did not answer in time; raise timeout_ms or try again');
  }
  return new SextantError('ABORTED', 'the request was aborted');
}

/** The chat completions URL of an OpenAI-compatible base URL; LLM_BAD_URL for anything else. */
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
  return { text: new TextDecoder().decode(concat(parts)), cut: size > limit };
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

const overLimit = (max_answer_bytes) => new SextantError('LLM_INCOMPLETE', `the answer is over max_answer_bytes (${max_answer_bytes})`, { partial_answer: '' });

/**
 * A whole (not streamed) chat completion: its `choices[0]` and `usage`, read up to
 * `max_answer_bytes` plus 64 KB for the JSON around the answer (the rest is never read).
 */
async function readCompletion(response, max_answer_bytes) {
  const { text, cut } = await cappedText(response, max_answer_bytes + 65536);
  if (cut) throw overLimit(max_answer_bytes);
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SextantError('LLM_BAD_RESPONSE', 'the LLM answered with JSON that does not parse; check that llm.base_url is an OpenAI-compatible API');
  }
  const choice = parsed?.choices?.[0];
  const message = choice?.message;
  if (!message || typeof message !== 'object') {
    throw new SextantError('LLM_BAD_RESPONSE', 'the LLM answered with JSON that is not a chat completion (no choices[0].message)');
  }
  if (typeof message.content === 'string' && new TextEncoder().encode(message.content).length > max_answer_bytes) throw overLimit(max_answer_bytes);
  return { message, usage: parsed.usage ?? null, finish_reason: choice.finish_reason ?? 'stop' };
}

/**
 * A streamed answer as it arrives (through on_delta): an event stream, or a whole JSON
 * completion from a server that does not stream. Returns readChatStream's fields.
 */
async function readStreamed(response, on_delta, settings) {
  const type = (response.headers.get('content-type') ?? '').toLowerCase();
  if (type.includes('application/json')) {
    const { message, usage, finish_reason } = await readCompletion(response, settings.max_answer_bytes);
    if (typeof message.content !== 'string') {
      throw new SextantError('LLM_BAD_RESPONSE', 'the LLM answered with JSON that is not a chat completion (no choices[0].message.content)');
    }
    if (message.content) on_delta(message.content);
    return { usage, finish_reason, malformed: 0, complete: true, overflow: false };
  }
  if (type && !type.includes('text/event-stream')) {
    await response.body?.cancel().catch(() => {});
    throw new SextantError('LLM_BAD_RESPONSE', `the LLM answered with ${type.split(';')[0]}, not an event stream; check that llm.base_url is an OpenAI-compatible API`);
  }
  if (!response.body) throw new SextantError('LLM_BAD_RESPONSE', 'the LLM answered without a body');
  return readChatStream(response.body, on_delta, { max_line_bytes: settings.max_sse_line_bytes, max_answer_bytes: settings.max_answer_bytes });
}

/**
 * One chat completion with the LLM the caller configures (`llm`: {base_url, model, api_key?,
 * headers?}); `request` holds the messages and any other request fields (tools, tool_choice).
 * `settings` are the core's LLM settings: timeout_ms (for the whole call, retries included; 0 for
 * none), max_tries, temperature, max_answer_bytes, max_sse_line_bytes.
 *
 * With `stream`, the answer is asked for as an event stream and read as it arrives (on_delta for
 * each piece; a server answering with one JSON completion is read too); an answer cut off, over
 * `max_answer_bytes`, without [DONE] or a finish reason, or empty is an error that keeps what
 * arrived (`partial_answer`). Without, the whole completion is read (at most
 * `max_answer_bytes` and its JSON) and its `message` returned (it may hold tool calls).
 *
 * `trace` gets one entry per try (see `postWithRetries`); with `stream`, the try that answered
 * gains how its stream went: `outcome` ("ok" or the error code), stream_ms, answer_bytes and
 * finish_reason. Resolves with {text, message, usage, finish_reason, malformed}.
 */
export async function chatCompletion({ llm, request, settings, stream = false, signal, fetch: fetchImpl = globalThis.fetch, random = Math.random, on_retry, on_delta, trace = [] }) {
  const url = chatUrl(llm?.base_url);
  const secrets = [llm.api_key, ...Object.values(llm.headers ?? {})].filter((v) => typeof v === 'string' && v);
  const headers = { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json', ...(llm.headers ?? {}) };
  if (llm.api_key) headers.authorization = `Bearer ${llm.api_key}`;
  const body = JSON.stringify({
    model: llm.model,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
    temperature: settings.temperature,
    ...request,
  });
  const signals = [signal, settings.timeout_ms ? AbortSignal.timeout(settings.timeout_ms) : null].filter(Boolean);
  const combined = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
  const response = await postWithRetries(url, { method: 'POST', headers, body }, { max_tries: settings.max_tries, signal: combined, fetchImpl, random, on_retry, secrets, trace });
  const readStarted = performance.now();
  let text = '';
  let read;
  // The try that answered gains how its answer went.
  const ended = (outcome) => {
    const last = trace.at(-1);
    if (last) Object.assign(last, { outcome, stream_ms: Math.round(performance.now() - readStarted), answer_bytes: new TextEncoder().encode(text).length, finish_reason: read?.finish_reason ?? null });
  };
  try {
    if (stream) {
      read = await readStreamed(response, (delta) => {
        text += delta;
        on_delta?.(delta);
      }, settings);
      if (read.overflow) {
        throw new SextantError('LLM_INCOMPLETE', `the answer went over max_answer_bytes (${settings.max_answer_bytes}) and was cut`, { partial_answer: text });
      }
      if (!read.complete) {
        throw new SextantError('LLM_INCOMPLETE', 'the LLM stream ended before the answer was complete (no [DONE] and no finish reason); try again', { partial_answer: text });
      }
      if (!text.trim()) throw new SextantError('LLM_BAD_RESPONSE', 'the LLM returned an empty answer');
    } else {
      read = await readCompletion(response, settings.max_answer_bytes);
      text = typeof read.message.content === 'string' ? read.message.content : '';
    }
  } catch (e) {
    let error = e;
    if (combined?.aborted) error = abortError(combined);
    else if (!(e instanceof SextantError)) {
      error = new SextantError('LLM_INCOMPLETE', `the LLM answer broke off: ${redact(e?.message ?? e, secrets)}`, { partial_answer: text });
    }
    if (stream) ended(error.code);
    throw error;
  }
  if (stream) ended('ok');
  return { text, message: read.message ?? { role: 'assistant', content: text }, usage: read.usage ?? null, finish_reason: read.finish_reason ?? null, malformed: read.malformed ?? 0 };
}
