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
