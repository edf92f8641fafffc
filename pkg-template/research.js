// Research answers over a collection with the OpenAI-compatible LLM the user sets: a bounded
// tool-calling loop (the model may call `search`, one call executed a round, at most
// `max_tool_calls` a question, then one tool-free call that answers, asks to clarify or
// refuses), and a fixed pipeline for models without tool calling or when the loop fails
// (rewrite the question as a query, retrieve, judge the evidence, at most one more retrieval,
// answer). Citations are checked in code against the chunks retrieved for this question: an
// answer citing an unknown chunk, or none, is refused. Every model and tool call is in `trace`.
//
// The rules are the core's (`crate::research`, `crate::prompt`, `crate::tools`): the defaults
// (`defaults().research`, `defaults().compress`), every prompt (`defaults().prompts`), the search
// tool's schema (`defaults().tools.research_search`), what a tool call becomes
// (`researchToolCall`), the rewritten and judged queries (`researchQuery`, `researchJudged`), the
// refusals (`researchRefusal`) and token counts (the collection's tokenizer). This file runs the
// loop and the LLM calls, through chat.js as `ask()` does (the same retries and size caps).
import { SextantError } from './errors.js';
import { chatCompletion, chatUrl } from './chat.js';
import { verifyCitations, defaults, ready, researchToolCall, researchQuery, researchJudged, researchRefusal } from './collection.js';

/** What research() takes besides the core's research options (`defaults().research`). */
const HOST_OPTIONS = new Set(['collection', 'llm', 'history', 'tools', 'signal', 'on_token', 'on_event', 'fetch', 'random', 'graph']);

/**
 * The research options over the core's defaults, checked by the core (an unknown name or a bad
 * value is BAD_ARGUMENT); `undefined` values keep the default.
 */
function researchOptions(given) {
  const chosen = Object.fromEntries(Object.entries(given).filter(([key, value]) => !HOST_OPTIONS.has(key) && value !== undefined));
  const options = { ...defaults().research, ...chosen };
  researchQuery('', options); // parses the options as the loop's rules will: fails here if they are bad
  return options;
}

/** The token budget of one search's passages: half the answer's, at least `min_search_budget`
 * (`ResearchOptions::search_budget`). */
const searchBudget = (o) => Math.max(o.min_search_budget, Math.floor(o.token_budget / 2));

/**
 * One model call of a question, through chat.js: `request` (messages, tools) to `llm` with the
 * core's LLM settings; with `stream`, the answer is read as it streams (on_token). A trace entry
 * goes to `record`, error or not: {kind: 'model', step, ms, usage, retries, error?}.
 */
async function modelCall(step, request, { llm, settings, stream = false, signal, fetchImpl, random, on_token, record }) {
  const started = performance.now();
  const retries = [];
  try {
    const result = await chatCompletion({ llm, request, settings, stream, signal, fetch: fetchImpl, random, on_retry: (r) => retries.push(r), on_delta: stream ? on_token : undefined });
    record({ kind: 'model', step, ms: performance.now() - started, usage: result.usage, retries });
    return result;
  } catch (e) {
    record({ kind: 'model', step, ms: performance.now() - started, retries, error: { code: e?.code ?? 'INTERNAL', message: String(e?.message ?? e) } });
    throw e;
  }
}

/**
 * research(question, { collection, llm, history, tools, signal, on_token, on_event, fetch,
 * random, ...research options }) → { answer, refused, refusal, citations, unknown_citations,
 * spans, path, path_reason, evidence, trace, usage } (`spans`: where each citation is in the
 * answer, as the core located it). The research options are the core's
 * (`defaults().research`: k, max_k, max_tool_calls, token_budget, timeout_ms, max_tries, …).
 * `history` is earlier turns as chat messages (never evidence). `tools: false` goes straight to
 * the pipeline. on_event({kind, ...}) gets every trace entry as it happens.
 */
export async function research(question, options = {}) {
  const { collection, llm, history = [], tools = true, graph = false, signal, on_token, on_event, fetch: fetchImpl = globalThis.fetch, random = Math.random } = options;
  if (typeof question !== 'string' || !question.trim()) throw new SextantError('BAD_ARGUMENT', 'the question must be a non-empty string');
  if (!collection?.search) throw new SextantError('BAD_ARGUMENT', 'research() needs a collection to search');
  if (!llm?.base_url || !llm?.model) throw new SextantError('BAD_ARGUMENT', 'research() needs llm: { base_url, model, api_key? }');
  chatUrl(llm.base_url); // a bad base_url fails here, before any search
  await ready();
  const o = researchOptions(options);
  if (graph && o.rerank === 'llm') throw new SextantError('BAD_ARGUMENT', "graph and rerank: 'llm' cannot be asked for together; drop one of them");
  if (graph !== false && graph !== true) throw new SextantError('BAD_ARGUMENT', 'graph must be true or false');
  const { prompts, tools: toolSchemas } = defaults();
  const trace = [];
  const usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  const evidence = new Map(); // chunk_id → result, for this question only
  const record = (entry) => {
    trace.push(entry);
    on_event?.(entry);
  };

  /** A chat call of this question, counted in `usage`. */
  async function chat(step, request, { stream = false } = {}) {
    const result = await modelCall(step, request, { llm, settings: o, stream, signal, fetchImpl, random, on_token, record });
    for (const key of Object.keys(usage)) usage[key] += result.usage?.[key] ?? 0;
    return result;
  }

  /** Runs the search tool; returns the observation for the model. */
  async function runSearch(query, k, via) {
    const started = performance.now();
    try {
      // With `rerank: 'llm'`, the same LLM rates each search's passages (a failure keeps the
      // search's order: the entry's `rerank.fallback` says why).
      const reranking = o.rerank === 'llm' ? { rerank: 'llm', llm, signal, fetch: fetchImpl, random } : {};
      // With `graph: true` and a graph built (collection.buildGraph), each search reads it too:
      // the chunks its entities and relations cite join the passages (the LLM names the query's
      // entities), and the entry's `graph` holds its lines, each with the chunks it cites.
      const current = graph ? collection.graphState?.().current : false;
      const graphing = current ? { graph: true, llm, signal, fetch: fetchImpl, random } : {};
      const response = await collection.search(query, { k, ...reranking, ...graphing });
      for (const r of response.results) evidence.set(r.chunk_id, r);
      const framed = collection.frame(response.results, { token_budget: searchBudget(o) });
      const rerank = response.rerank ? { depth: response.rerank.depth, calls: response.rerank.calls, ms: response.rerank.ms, fallback: response.rerank.fallback } : undefined;
      // The judge's tokens count in the question's usage too.
      for (const key of Object.keys(usage)) usage[key] += response.rerank?.usage?.[key] ?? 0;
      // Asked for but not current (never built, or the collection changed since): said so.
      const graphed = response.graph
        ? { used: response.graph.used, lines: response.graph.lines, calls: response.graph.calls, ms: response.graph.ms, fallback: response.graph.fallback }
        : graph
          ? { used: false, lines: [], calls: 0, ms: 0, fallback: { code: 'NOT_BUILT', message: 'the collection has no current knowledge graph: build it (collection.buildGraph, "Build graph")' } }
          : undefined;
      record({ kind: 'tool', name: 'search', via, args: { query, k }, ms: performance.now() - started, results: response.results.length, mode: response.mode, ...(rerank ? { rerank } : {}), ...(graphed ? { graph: graphed } : {}) });
      return { results: response.results.length, passages: framed.context };
    } catch (e) {
      const error = { error_type: e?.code ?? 'search_failed', message: String(e?.message ?? e), retryable: false };
      record({ kind: 'tool', name: 'search', via, args: { query, k }, ms: performance.now() - started, error });
      return error;
    }
  }

  /** The tool loop; throws when it cannot go on (the pipeline takes over). */
  async function toolLoop() {
    const messages = [{ role: 'system', content: prompts.research_loop }, ...history, { role: 'user', content: question }];
    let calls = 0;
    for (let round = 1; calls < o.max_tool_calls; round++) {
      const { message } = await chat(`tool round ${round}`, { messages, tools: [toolSchemas.research_search], tool_choice: 'auto' });
      const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
      if (!toolCalls.length) return; // the model has what it needs
      messages.push({ role: 'assistant', content: message.content ?? null, tool_calls: toolCalls });
      for (const [i, call] of toolCalls.entries()) {
        // The core decides what the call becomes: a search, or an error the model reads.
        const step = researchToolCall(call, i, o);
        let result;
        if (step.search) {
          result = await runSearch(step.search.query, step.search.k, 'tool');
        } else {
          result = step.error;
          record({ kind: 'tool', name: call?.function?.name ?? null, via: 'tool', args: call?.function?.arguments ?? null, error: result });
        }
        // Each round's first call counts against max_tool_calls (if it asked for the search tool).
        if (i === 0 && step.error?.error_type !== 'unknown_tool') calls++;
        messages.push({ role: 'tool', tool_call_id: String(call?.id ?? `call_${round}_${i}`), content: JSON.stringify(result) });
      }
    }
  }

  /** The fixed pipeline: rewrite, retrieve, judge, at most one more retrieval. */
  async function pipeline() {
    let query = question;
    try {
      const { text } = await chat('rewrite', { messages: [{ role: 'system', content: prompts.research_rewrite }, { role: 'user', content: question }] });
      query = researchQuery(text, o) ?? question;
    } catch (e) {
      if (e?.code === 'ABORTED') throw e;
    }
    await runSearch(query, o.k, 'pipeline');
    try {
      const framed = collection.frame([...evidence.values()], { token_budget: o.token_budget });
      const { text } = await chat('judge', { messages: [{ role: 'system', content: `${prompts.research_judge}\n\n${framed.context}` }, { role: 'user', content: question }] });
      const better = researchJudged(text, o);
      if (better) await runSearch(better, o.k, 'pipeline');
    } catch (e) {
      if (e?.code === 'ABORTED') throw e;
    }
  }

  let path = 'tools';
  let path_reason = 'the model called tools';
  if (!tools) {
    path = 'pipeline';
    path_reason = 'tool calling is off (tools: false)';
  } else {
    try {
      await toolLoop();
      if (!evidence.size) path_reason = 'the model answered without searching';
    } catch (e) {
      if (e?.code === 'ABORTED') throw e;
      path = 'pipeline';
      path_reason = `the tool loop failed (${e?.code ?? 'INTERNAL'}: ${e?.message ?? e})`;
    }
  }
  if (path === 'pipeline') await pipeline();
  record({ kind: 'path', path, reason: path_reason });

  // The one tool-free call: answer, clarify or refuse, from this question's evidence only.
  const framed = collection.frame([...evidence.values()], { token_budget: o.token_budget });
  const sent = framed.included;
  const messages = [
    { role: 'system', content: `${framed.system_prompt} ${prompts.research_answer_rules}\n\n${framed.context}` },
    ...history,
    { role: 'user', content: question },
  ];
  const { text: answer } = await chat('answer', { messages }, { stream: true });
  const report = verifyCitations(answer, sent);
  const refusal = researchRefusal(report.unknown, report.citations.length, sent.length) ?? null;
  const cited = (id) => evidence.get(id);
  return {
    answer,
    refused: refusal !== null,
    refusal,
    citations: report.citations.map((c) => ({ ...c, title: cited(c.chunk_id)?.title ?? null, source: cited(c.chunk_id)?.source ?? null, heading_path: cited(c.chunk_id)?.heading_path ?? [] })),
    unknown_citations: report.unknown,
    spans: report.spans,
    path,
    path_reason,
    evidence: [...evidence.values()],
    trace,
    usage,
  };
}

/** Tokens the chat format adds around each message (its role and delimiters). */
const MESSAGE_TOKENS = 4;

/**
 * A research conversation: every round kept whole (for storage and display), and the working
 * context the model sees: a summary of the earliest rounds plus the recent rounds uncompressed.
 * When the context passes `threshold` tokens, compress() folds the earliest rounds into the
 * summary in batches, until it is under `target`; the summary is replaced only when every batch
 * succeeded, so a failed compression loses nothing. The summary is context, never evidence:
 * research() checks citations against the passages it retrieved, and the summary is none.
 *
 * Tokens are counted by `count_tokens(text)`, the model's own tokenizer: pass
 * `(text) => collection.countTokens(text)`.
 */
export class Conversation {
  #count;
  #counted = new Map(); // text → tokens, so compress() counts each message once

  constructor({ rounds = [], summary = null, compressed = 0 } = {}, { count_tokens } = {}) {
    this.rounds = rounds;
    this.summary = summary;
    this.compressed = Math.min(compressed, rounds.length);
    this.#count = count_tokens;
  }

  toJSON() {
    return { rounds: this.rounds, summary: this.summary, compressed: this.compressed };
  }

  /** Adds a round: `{question, answer, refused, ...}` (anything else is kept for display). */
  add(round) {
    this.rounds.push(round);
  }

  #messages(from) {
    return this.rounds.slice(from).flatMap((r) => (r.answer ? [{ role: 'user', content: r.question }, { role: 'assistant', content: r.answer }] : [{ role: 'user', content: r.question }]));
  }

  #history(from, summary) {
    const header = summary ? [{ role: 'system', content: `${defaults().prompts.summary_header}\n${summary}` }] : [];
    return [...header, ...this.#messages(from)];
  }

  /** The chat messages the model gets before the new question. */
  history() {
    return this.#history(this.compressed, this.summary);
  }

  #tokens(messages) {
    if (typeof this.#count !== 'function') {
      throw new SextantError('BAD_ARGUMENT', 'a Conversation counts tokens with the model\'s tokenizer: new Conversation(saved, { count_tokens: (text) => collection.countTokens(text) })');
    }
    let total = 0;
    for (const { content } of messages) {
      const text = String(content ?? '');
      let n = this.#counted.get(text);
      if (n === undefined) this.#counted.set(text, (n = this.#count(text)));
      total += n + MESSAGE_TOKENS;
    }
    return total;
  }

  /** The working context's tokens. */
  contextTokens() {
    return this.#tokens(this.history());
  }

  /**
   * Compresses when the context is over `threshold` until it is under `target`, `batch` rounds
   * per LLM call; the most recent `keep` rounds stay whole (`defaults().compress`). The other
   * options are research()'s LLM settings (`defaults().research`) and llm, signal, fetch, random,
   * on_event. Resolves with `{ compressed, trace }` (`compressed`: rounds folded in, 0 if none or
   * on failure, `error` then says why).
   */
  async compress({ llm, signal, fetch: fetchImpl = globalThis.fetch, random = Math.random, on_event, ...given } = {}) {
    await ready();
    const known = defaults();
    const pick = (base) => ({ ...base, ...Object.fromEntries(Object.entries(given).filter(([key, value]) => Object.hasOwn(base, key) && value !== undefined)) });
    const { threshold, target, batch, keep } = pick(known.compress);
    const settings = pick(known.research);
    const trace = [];
    if (this.contextTokens() <= threshold) return { compressed: 0, trace };
    let summary = this.summary;
    let upTo = this.compressed;
    const last = Math.max(this.compressed, this.rounds.length - keep);
    const record = (entry) => {
      trace.push(entry);
      on_event?.(entry);
    };
    try {
      while (upTo < last && this.#tokens(this.#history(upTo, summary)) > target) {
        const end = Math.min(last, upTo + batch);
        // The rounds as the model saw them (the summary so far, then the questions and answers),
        // after the core's instruction: no words of this file's own.
        const rounds = new Conversation({ rounds: this.rounds.slice(0, end), summary, compressed: upTo }).history();
        const request = { messages: [{ role: 'system', content: known.prompts.conversation_summary }, ...rounds] };
        const { text } = await modelCall(`compress rounds ${upTo + 1}-${end}`, request, { llm, settings, signal, fetchImpl, random, record });
        if (!text.trim()) throw new SextantError('LLM_BAD_RESPONSE', 'the summary call returned no text');
        summary = text.trim();
        upTo = end;
      }
    } catch (e) {
      return { compressed: 0, trace, error: { code: e.code ?? 'INTERNAL', message: e.message } };
    }
    // Every batch succeeded: the new summary replaces the old one in one step.
    const compressed = upTo - this.compressed;
    this.summary = summary;
    this.compressed = upTo;
    return { compressed, trace };
  }
}
