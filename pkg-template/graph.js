// Graph retrieval (`graph: true`): the calls. The rules are the core's (`sextant::graph`): the
// words that ask the LLM for a question's entities and answer types (`graphQuestionMessages`),
// how its reply is read (`graphQuestionTerms`), the graph's search, its block and the chunks it
// adds (`graphContext`, which fetches the graph file like any index file). The LLM call goes
// through chat.js (the same retries, caps and redaction as ask()). Without an LLM, the question's
// own vector stands for its entity names. When the index has no graph, or the graph cannot be
// read, the search's results stand alone and the report says why (`fallback`); a bad graph
// option, and the caller's own abort, are errors.
import { SextantError } from './errors.js';
import { abortError, chatCompletion, chatUrl } from './chat.js';

/** Milliseconds the LLM may take to name a question's entities, tries included. */
const TERMS_TIMEOUT_MS = 30_000;

/** Whether options ask for the graph. */
export const wantsGraph = (options) => Boolean(options?.graph);

/**
 * What a graph search takes besides the core's options: its own options (`graph: true` or
 * {hops, entity_threshold, relation_threshold, top_entities, top_relations, max_chunks,
 * token_budget}) and the LLM that names the question's entities, if any.
 */
export function splitGraphOptions({ graph, llm, signal, fetch: fetchImpl = globalThis.fetch, random = Math.random, ...options } = {}) {
  if (graph !== true && (typeof graph !== 'object' || graph === null || Array.isArray(graph))) {
    throw new SextantError('BAD_ARGUMENT', 'graph must be true or an object of graph options ({hops, entity_threshold, relation_threshold, top_entities, top_relations, max_chunks, token_budget})');
  }
  if (llm !== undefined) {
    if (!llm?.base_url || !llm?.model) throw new SextantError('BAD_ARGUMENT', 'llm must be { base_url, model, api_key? }');
    chatUrl(llm.base_url);
  }
  return { graphOptions: graph === true ? {} : graph, host: { llm, signal, fetchImpl, random }, options };
}

/**
 * Frames `question` with the graph's block first. `core`: {questionMessages, questionTerms,
 * hasGraph, withGraph(terms) → framed with `graph` ({lines, tokens}), plain() → framed without}.
 * Returns the framed context with `graph`: {used, terms, lines, tokens, calls, ms, fallback,
 * terms_error, trace}.
 */
export async function graphFramed(core, question, { llm, signal, fetchImpl, random }) {
  const started = performance.now();
  const report = { used: false, terms: null, lines: [], tokens: 0, calls: 0, ms: 0, fallback: null, terms_error: null, trace: [] };
  const finish = (framed) => {
    report.ms = performance.now() - started;
    return { ...framed, graph: report };
  };
  if (!core.hasGraph()) {
    report.fallback = { code: 'NOT_BUILT', message: 'this index has no knowledge graph (build one with `sextant graph build`): the search results stand alone' };
    return finish(await core.plain());
  }
  let terms = null;
  if (llm) {
    const ask = core.questionMessages(String(question));
    const settings = { timeout_ms: TERMS_TIMEOUT_MS, max_tries: 2, temperature: 0, max_answer_bytes: ask.max_reply_bytes + 1, max_sse_line_bytes: 1 << 20 };
    report.calls = 1;
    try {
      const reply = await chatCompletion({ llm, request: { messages: ask.messages }, settings, signal, fetch: fetchImpl, random, trace: report.trace });
      terms = core.questionTerms(reply.text);
      report.terms = terms;
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      report.terms_error = { code: e?.code ?? 'INTERNAL', message: `${String(e?.message ?? e)}: the question's own vector stands for its entities` };
    }
  }
  try {
    const { graph, ...framed } = await core.withGraph(terms);
    Object.assign(report, { used: true, lines: graph.lines, tokens: graph.tokens });
    return finish(framed);
  } catch (e) {
    if (signal?.aborted) throw abortError(signal);
    if (e?.code === 'BAD_ARGUMENT' || e?.code === 'ABORTED') throw e;
    report.fallback = { code: e?.code ?? 'INTERNAL', message: `${String(e?.message ?? e)}: the search results stand alone` };
    return finish(await core.plain());
  }
}

/** Milliseconds one extraction call may take, tries included. */
const EXTRACT_TIMEOUT_MS = 120_000;

/** The SHA-256 of `text`, hex (Web Crypto: browsers, Node, workerd). */
export async function sha256Hex(text) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Extracts the chunks not in `cache` (key → {skipped, extraction}) with the LLM, `concurrency`
 * at a time, each chunk's state advanced by the core (`core`: {start, reply, failed} over
 * `graphExtractStart/Reply/Failed`). Each finished chunk goes into `cache` and `save()` is called
 * at most every two seconds and at the end, so a reload resumes where it was; a chunk whose calls
 * all failed (the LLM down) is left out of the cache, to be tried again. Stops on `signal`
 * (pause) with what was done kept. `chunks`: [{id, text, key}]. Returns {calls, tokens, failed,
 * last_error, unkept}: `unkept` (key → {skipped, extraction}) holds the chunks read this time but
 * not kept, some call of theirs having failed in transport.
 */
export async function extractChunks({ core, llm, chunks, cache, gleaning, concurrency = 2, signal, fetchImpl = globalThis.fetch, random = Math.random, on_progress, save }) {
  const todo = chunks.filter((c) => !cache.has(c.key));
  const stats = { calls: 0, tokens: 0, failed: 0, last_error: null, done: chunks.length - todo.length, total: chunks.length };
  const started = performance.now();
  let next = 0;
  let lastSave = performance.now();
  let saving = Promise.resolve();
  // The first error that is not the caller's pause stops the other workers too.
  const stop = new AbortController();
  const combined = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  const settings = { timeout_ms: EXTRACT_TIMEOUT_MS, max_tries: 3, temperature: 0, max_answer_bytes: 64 * 1024 + 1, max_sse_line_bytes: 1 << 20 };
  const progress = () => {
    const fresh = stats.done - (chunks.length - todo.length);
    const seconds = (performance.now() - started) / 1000;
    on_progress?.({ done: stats.done, total: stats.total, calls: stats.calls, tokens: stats.tokens, seconds_left: fresh > 0 ? ((stats.total - stats.done) * seconds) / fresh : null });
  };
  const one = async (chunk) => {
    let state = core.start(chunk.id, chunk.text, gleaning);
    let replies = 0;
    let transport = 0;
    while (!state.done) {
      if (combined.aborted) throw abortError(signal?.aborted ? signal : combined);
      stats.calls++;
      try {
        const reply = await chatCompletion({ llm, request: { messages: state.messages }, settings, signal: combined, fetch: fetchImpl, random });
        replies++;
        stats.tokens += reply.usage?.total_tokens ?? Math.ceil(JSON.stringify(state.messages).length / 4 + reply.text.length / 4);
        state = core.reply(state, reply.text);
      } catch (e) {
        if (combined.aborted) throw abortError(signal?.aborted ? signal : combined);
        // A reply too long or not a chat completion is a bad reply; anything else (a timeout,
        // an HTTP error) is the LLM's trouble, not the chunk's.
        if (e?.code === 'LLM_INCOMPLETE' || e?.code === 'LLM_BAD_RESPONSE') replies++;
        else transport++;
        stats.last_error = { code: e?.code ?? 'INTERNAL', message: String(e?.message ?? e) };
        state = core.failed(state, `${stats.last_error.code}: ${stats.last_error.message}`);
      }
    }
    // Kept only when no call failed in transport (else the next build asks again); with no
    // reply at all, not used either.
    if (replies === 0) stats.failed++;
    else if (transport === 0) cache.set(chunk.key, { skipped: state.skipped, extraction: state.extraction });
    else stats.unkept.set(chunk.key, { skipped: state.skipped, extraction: state.extraction });
    stats.done++;
    progress();
    if (performance.now() - lastSave > 2000) {
      lastSave = performance.now();
      saving = saving.then(save, save);
    }
  };
  stats.unkept = new Map();
  const worker = async () => {
    try {
      while (next < todo.length && !combined.aborted) await one(todo[next++]);
    } catch (e) {
      stop.abort();
      throw e;
    }
  };
  progress();
  const settled = await Promise.allSettled(Array.from({ length: Math.max(1, Math.min(concurrency, todo.length)) }, worker));
  await saving;
  await save();
  const failure = settled.find((r) => r.status === 'rejected');
  if (failure) throw signal?.aborted ? abortError(signal) : failure.reason;
  return stats;
}
