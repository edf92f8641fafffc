// OpenTelemetry traces as OTLP/JSON over HTTP: the pipeline's stages of each query as spans
// (`rag.search`, `rag.embed`, `rag.search.bm25`, `rag.search.dense`, `rag.rrf_fusion`,
// `rag.rerank`, `rag.assemble`, `rag.llm`; `rag.ingest` and `rag.embed` for collections), queued
// and sent in batches to a collector the user names. Sending never blocks a query and never
// throws: a batch the collector does not take (down, refusing, slow) is dropped and counted.
import { SextantError } from './errors.js';

/** Spans kept waiting at most; beyond, new ones are dropped (and counted). */
const MAX_QUEUE = 2048;
/** Spans one request sends at most. */
const MAX_BATCH = 512;
/** How long a send may take before its batch counts as dropped. */
const SEND_TIMEOUT_MS = 5000;

const hex = (bytes) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
const nanos = (ms) => `${BigInt(Math.round(ms * 1000)) * 1000n}`;

/** An OTLP attribute value: strings, booleans, integers (as strings) and doubles. */
function value(v) {
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  return { stringValue: String(v) };
}

const attributes = (o) =>
  Object.entries(o)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([key, v]) => ({ key, value: value(v) }));

/**
 * Sends spans to an OTLP/HTTP collector as JSON: `new OtlpExporter({url, headers})`, `url` the
 * traces endpoint (`http://collector:4318/v1/traces`). Spans are sent `flush_ms` after the first
 * one waits (0: only when `flush()` is called, as a Worker does with `waitUntil`).
 */
export class OtlpExporter {
  #url;
  #headers;
  #fetch;
  #resource;
  #flushMs;
  #queue = [];
  #timer = null;
  #sent = 0;
  #dropped = 0;

  constructor({ url, headers = {}, service = 'sextant-search', flush_ms = 1000, fetch: fetchImpl = globalThis.fetch } = {}) {
    let parsed;
    try {
      parsed = new URL(String(url));
    } catch {
      parsed = null;
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol)) {
      throw new SextantError('BAD_ARGUMENT', `otlp.url must be an http(s) URL of a collector's traces endpoint (e.g. http://localhost:4318/v1/traces), not ${JSON.stringify(url)}`);
    }
    this.#url = parsed.href;
    this.#headers = { ...headers, 'content-type': 'application/json' };
    this.#fetch = fetchImpl;
    this.#flushMs = Number(flush_ms) || 0;
    this.#resource = { attributes: attributes({ 'service.name': service, 'telemetry.sdk.name': 'sextant-search', 'telemetry.sdk.language': 'webjs' }) };
  }

  /** Queues spans (`{name, start_ms, end_ms, attributes, kind?, error?}`, from `*Spans`). */
  record(spans) {
    for (const s of spans) {
      // A span without finite times cannot be encoded: dropped here, never in a send.
      if (this.#queue.length >= MAX_QUEUE || !Number.isFinite(s?.start_ms) || !Number.isFinite(s?.end_ms)) {
        this.#dropped += 1;
        continue;
      }
      this.#queue.push(s);
    }
    if (this.#flushMs > 0 && !this.#timer && this.#queue.length) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.flush();
      }, this.#flushMs);
      this.#timer.unref?.(); // Node: waiting spans do not keep the process alive
    }
  }

  /**
   * Sends what waits, in batches; resolves when they are sent or dropped (never rejects). Each
   * call sends its own batches at once, chained to no earlier send (in the Workers runtime one
   * request's I/O may not wait on another's).
   */
  flush() {
    const spans = this.#queue.splice(0);
    const sends = [];
    for (let i = 0; i < spans.length; i += MAX_BATCH) sends.push(this.#send(spans.slice(i, i + MAX_BATCH)));
    return Promise.all(sends).then(() => {});
  }

  async #send(batch) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), SEND_TIMEOUT_MS);
    timer.unref?.();
    try {
      const body = JSON.stringify({
        resourceSpans: [{ resource: this.#resource, scopeSpans: [{ scope: { name: 'sextant-search' }, spans: batch.map(toOtlp) }] }],
      });
      // Called unbound: the Workers runtime refuses its fetch called as another object's method.
      const send = this.#fetch;
      const response = await send(this.#url, { method: 'POST', headers: this.#headers, body, signal: abort.signal });
      await response.arrayBuffer().catch(() => null);
      if (response.ok) this.#sent += batch.length;
      else this.#dropped += batch.length;
    } catch {
      this.#dropped += batch.length;
    } finally {
      clearTimeout(timer);
    }
  }

  /** `{sent, dropped, queued}` spans so far. */
  stats() {
    return { sent: this.#sent, dropped: this.#dropped, queued: this.#queue.length };
  }
}

/** One span in OTLP/JSON. */
function toOtlp(s) {
  return {
    traceId: s.trace_id,
    spanId: s.span_id,
    ...(s.parent_id ? { parentSpanId: s.parent_id } : {}),
    name: s.name,
    kind: s.kind ?? 1,
    startTimeUnixNano: nanos(s.start_ms),
    endTimeUnixNano: nanos(Math.max(s.end_ms, s.start_ms)),
    attributes: attributes(s.attributes ?? {}),
    status: s.error ? { code: 2, message: String(s.error) } : { code: 0 },
  };
}

/** Spans of one trace: a root and its children laid end to end from the root's start. */
function tree(root, children) {
  const trace_id = hex(16);
  const rootId = hex(8);
  const spans = [{ ...root, trace_id, span_id: rootId }];
  let at = root.start_ms;
  for (const c of children) {
    if (c.ms == null) continue;
    const start = c.start_ms ?? at;
    spans.push({ name: c.name, kind: c.kind, attributes: c.attributes, error: c.error, trace_id, span_id: hex(8), parent_id: rootId, start_ms: start, end_ms: start + c.ms });
    if (c.start_ms == null) at = start + c.ms;
  }
  return spans;
}

/**
 * The spans of a search (`rag.search` and its stages, from the response's `timings`), a context
 * (`rag.context`, with `rag.assemble`) or an answer (`rag.ask`, with each LLM call of its
 * `trace`): `{route, start_ms, end_ms, query, options, response, error}`.
 */
export function querySpans({ route = 'search', start_ms, end_ms, query = '', options = {}, response = {}, error } = {}) {
  const t = response?.timings ?? {};
  const mode = options.mode ?? response?.mode ?? 'hybrid';
  const k = options.k ?? null;
  const results = response?.results ?? response?.chunks ?? response?.included ?? [];
  const query_length = String(query).length;
  const children = [
    { name: 'rag.embed', ms: mode === 'keyword' ? null : t.embed_ms, attributes: { provider: 'sextant', batch_size: 1, text_count: 1 } },
    { name: 'rag.search.bm25', ms: mode === 'dense' ? null : t.keyword_ms, attributes: { query_length, top_k: k } },
    { name: 'rag.search.dense', ms: mode === 'keyword' ? null : t.vector_ms, attributes: { query_length, top_k: k } },
    { name: 'rag.rrf_fusion', ms: t.fusion_ms, attributes: { input_lists: mode === 'hybrid' ? 2 : 1, output_count: results.length, method: options.fusion ?? undefined } },
    { name: 'rag.rerank', ms: t.rerank_ms > 0 ? t.rerank_ms : null, attributes: { strategy: response?.rerank?.strategy ?? 'cross_encoder', input_count: response?.rerank?.depth ?? options.rerank_depth, top_k: k, fallback: response?.rerank?.fallback?.code ?? undefined } },
  ];
  if (route !== 'search') {
    children.push({ name: 'rag.assemble', ms: 0, attributes: { token_budget: response?.budget ?? options.token_budget, chunks_assembled: response?.included?.length ?? results.length } });
  }
  // Each try of an LLM call (`trace`: {attempt, status, ms, outcome}); the one that answered
  // (`ok` once its stream was read whole)
  // carries the answer's token usage.
  for (const call of [...(response?.rerank?.trace ?? []), ...(response?.trace ?? [])]) {
    if (call?.ms == null) continue;
    const answered = call.outcome === 'answered' || call.outcome === 'ok';
    children.push({
      name: 'rag.llm',
      kind: 3,
      ms: call.ms,
      // An LLM rerank's calls (`batch`) say so; the answer's usage is the answer's call's.
      attributes: { attempt: call.attempt, 'http.status_code': call.status, outcome: call.outcome, purpose: call.batch === undefined ? 'answer' : 'rerank', prompt_tokens: answered && call.batch === undefined ? response.usage?.prompt_tokens : undefined, completion_tokens: answered && call.batch === undefined ? response.usage?.completion_tokens : undefined },
      error: answered || call.outcome === 'retry' ? undefined : call.outcome,
    });
  }
  const root = {
    name: `rag.${route}`,
    start_ms,
    end_ms,
    error: error?.code ?? error,
    attributes: { mode, top_k: k, query_length, result_count: results.length, fetch_ms: t.fetch_ms, files_fetched: t.files_fetched },
  };
  return tree(root, children);
}

/** The spans of a collection's work: `rag.ingest` (a file added) or `rag.embed` (chunks embedded). */
export function collectionSpans({ name, start_ms, end_ms, attributes: a = {} }) {
  return tree({ name, start_ms, end_ms, attributes: a }, []);
}
