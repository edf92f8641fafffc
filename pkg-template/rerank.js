// Reranking by an LLM judge (`rerank: 'llm'`): the calls. The rules are the core's
// (`search::llm_rerank`): which results are rated in which batch and the words that ask
// (`llmRerankPlan`), how a reply is read (`llmRerankScores`) and the order that follows
// (`llmRerankApply`). The batches go to the caller's LLM together, through chat.js (the same
// retries, caps and redaction as ask()), within one deadline (`rerank_timeout_ms`); on any
// failure — a timeout, an HTTP error, a reply that does not rate every passage — the fused order
// stands and the report says why (`fallback`). Only the caller's own abort is an error.
import { SextantError } from './errors.js';
import { abortError, chatCompletion, chatUrl } from './chat.js';

/** Whether options ask for an LLM rerank. */
export const wantsLlmRerank = (options) => options?.rerank === 'llm';

/** What an LLM rerank takes besides the core's options: the LLM and how to call it. */
export function splitLlmOptions({ llm, signal, fetch: fetchImpl = globalThis.fetch, random = Math.random, ...options } = {}) {
  if (!llm?.base_url || !llm?.model) {
    throw new SextantError('BAD_ARGUMENT', "rerank: 'llm' needs llm: { base_url, model, api_key? } (the LLM that rates the results)");
  }
  chatUrl(llm.base_url); // a bad base_url fails here, before any search
  return { host: { llm, signal, fetchImpl, random }, options };
}

/**
 * Rates `results` (the candidates, best first) with the LLM and returns {results, report}:
 * `results` in the judge's order cut to `k` (each rated one with its rating, 0–10, in `rerank`),
 * or in the fused order when the calls failed; `report` is {strategy: 'llm', depth, calls, ms,
 * fallback: null | {code, message}, usage (the tokens the replies report), trace} (`trace`: one entry per try of each call, with its
 * batch). `core` is the core's rules: {plan, scores, apply}.
 */
export async function rerankWithLlm(core, query, results, options, purpose, { llm, signal, fetchImpl, random }) {
  const started = performance.now();
  const plan = core.plan(query, results, options, purpose);
  const report = { strategy: 'llm', depth: plan.depth, calls: plan.batches.length, ms: 0, fallback: null, usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, trace: [] };
  let ratings = null;
  if (plan.batches.length) {
    // One deadline for every call; the first failure stops the others.
    const stop = new AbortController();
    const deadline = plan.settings.timeout_ms ? AbortSignal.timeout(plan.settings.timeout_ms) : null;
    const signals = [signal, stop.signal, deadline].filter(Boolean);
    const combined = AbortSignal.any(signals);
    const settings = { ...plan.settings, timeout_ms: 0 };
    try {
      const rated = await Promise.all(plan.batches.map(async (batch, i) => {
        const trace = [];
        try {
          const reply = await chatCompletion({ llm, request: { messages: batch.messages }, settings, signal: combined, fetch: fetchImpl, random, trace });
          for (const key of Object.keys(report.usage)) report.usage[key] += reply.usage?.[key] ?? 0;
          return core.scores(reply.text, batch.positions.length);
        } catch (e) {
          stop.abort();
          throw e;
        } finally {
          report.trace.push(...trace.map((entry) => ({ batch: i, ...entry })));
        }
      }));
      ratings = new Array(plan.depth);
      rated.forEach((scores, i) => plan.batches[i].positions.forEach((position, j) => (ratings[position] = scores[j])));
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      report.fallback = deadline?.aborted
        ? { code: 'LLM_TIMEOUT', message: `the LLM did not rate the results within rerank_timeout_ms (${plan.settings.timeout_ms} ms): the fused order stands` }
        : { code: e?.code ?? 'INTERNAL', message: `${String(e?.message ?? e)}: the fused order stands` };
      ratings = null;
    }
  }
  const out = core.apply(results, ratings, options, purpose);
  report.ms = performance.now() - started;
  return { results: out, report };
}
