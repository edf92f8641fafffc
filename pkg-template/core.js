// The sextant JS API, shared by the browser, Node and workerd entry points: `makeApi` builds
// `Sextant` (one index) and `Bases` (several) around the wasm bindings each entry point
// initialises its own way.
//
// Options, defaults, limits, error codes, the prompt, the citation rules and the rules of base
// names and ids are the core's (`defaults()`, `prepareAsk`, `verifyCitations`, `selectBases`,
// …): this file restates none of them. What only JS can do sits in its own modules, imported one
// way: errors.js (errors with codes), fetching.js (files with progress), index-files.js (a split
// index's files, fetched as queries need them), chat.js (the LLM call), rerank.js (an LLM
// judge's reranking, `rerank: 'llm'`) and graph.js (graph retrieval, `graph: true`). Option and
// result names
// are the core's snake_case vocabulary.
import { SextantError, call } from './errors.js';
import { isUrlLike, toBytes } from './fetching.js';
import { IndexFiles, NO_FILES, WithModelFiles, untilDone } from './index-files.js';
import { OtlpExporter, querySpans } from './otlp.js';
import { chatCompletion, chatUrl } from './chat.js';
import { rerankWithLlm, splitLlmOptions, wantsLlmRerank } from './rerank.js';
import { graphFramed, splitGraphOptions, wantsGraph } from './graph.js';

/** The key of a Sextant's internals, for `Bases` (not part of the API). */
const INTERNAL = Symbol('sextant.internal');

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
  // The keyword-only build (`sextant-search/keyword`, what a page loads first) has what search
  // needs and no more: what frames passages for an LLM or reads its replies (frame, context, ask,
  // graphs, research, an LLM judge, citations) counts tokens with the model's tokenizer, which it
  // lacks, and is left out of it (a fifth of its bytes). Each of those says so, with the code
  // framing without a model has, instead of failing as a missing function.
  const answering = typeof wasm.verifyCitations === 'function';
  const needAnswers = (what) => {
    if (!answering) {
      throw new SextantError('NO_MODEL', `${what} frames passages for an LLM (with the model's tokenizer), which sextant-search/keyword, the keyword-only build, leaves out: import it from sextant-search or sextant-search/encoder`);
    }
  };
  const verifyCitations = (answer, sent) => {
    requireReady();
    needAnswers('verifyCitations()');
    return call(() => wasm.verifyCitations(String(answer), sent));
  };
  /** The words of `text` keyword search matched for `query`, by the index's `analyzer` (its manifest's; English by default). */
  const highlights = (text, query, analyzer) => {
    requireReady();
    return call(() => wasm.highlights(String(text), String(query), analyzer == null ? undefined : String(analyzer)));
  };
  /** A core helper, after ready(): its errors are Errors with a code. */
  const helper = (name) => (...args) => {
    requireReady();
    if (typeof wasm[name] !== 'function') needAnswers(`${name}()`);
    return call(() => wasm[name](...args));
  };
  // The rules of knowledge bases (`search::bases`): names, which bases a request chose, and the
  // `base:id` an LLM or an agent reads once there are several.
  /** checkBaseNames(names): BAD_ARGUMENT unless each is a base's name and none is given twice. */
  const checkBaseNames = helper('checkBaseNames');
  /** selectBases(names, requested) → the bases chosen (`requested`: names, "a,b", or null for all). */
  const selectBases = (names, requested) => helper('selectBases')(names, requested ?? null);
  /** qualifyId(base, id, several) → `base:id` when there are several bases, else `id`. */
  const qualifyId = (base, id, several) => helper('qualifyId')(String(base), String(id), Boolean(several));
  /** splitQualifiedId(id, base, names) → [base, id]: which base holds an id from results. */
  const splitQualifiedId = (id, base, names) => helper('splitQualifiedId')(String(id), base ?? undefined, names);
  // The research loop's rules (`crate::research`), for research.js: what a tool call becomes,
  // the query in a rewrite, the judge's better query, and why an answer is not verified.
  const researchToolCall = helper('researchToolCall');
  const researchQuery = helper('researchQuery');
  const researchJudged = helper('researchJudged');
  const researchRefusal = helper('researchRefusal');
  // An LLM judge's rules (`search::llm_rerank`): the candidates' search, the calls, the replies
  // and the order that follows (extra fields of a result, such as a base's, kept).
  const llmRerankCore = {
    plan: helper('llmRerankPlan'),
    scores: helper('llmRerankScores'),
    apply: (results, ratings, options, purpose) =>
      Array.from(helper('llmRerankOrder')(results, ratings, options, purpose), (i, n) => ({
        ...results[i],
        rank: n + 1,
        ...(ratings && i < ratings.length ? { rerank: ratings[i] } : {}),
      })),
  };
  // The graph's rules (`sextant::graph`): the words that ask the LLM for a question's entities
  // and how its reply is read.
  const graphRules = { questionMessages: helper('graphQuestionMessages'), questionTerms: helper('graphQuestionTerms') };
  /** `options` without a `graph` that asks for nothing (`graph: false`: the core has no such option). */
  const withoutNoGraph = (options) => {
    if (!options || !Object.hasOwn(options, 'graph') || options.graph) return options;
    if (options.graph !== false && options.graph !== undefined) {
      throw new SextantError('BAD_ARGUMENT', `graph must be true, false or an object of graph options, not ${JSON.stringify(options.graph)}`);
    }
    const { graph: _graph, ...rest } = options;
    return rest;
  };
  /** The options of the search whose results an LLM rates (`llm_rerank::candidate_options`). */
  const llmCandidates = (options, purpose) => ({ ...options, ...helper('llmRerankCandidates')(options, purpose) });
  /** `found` with its results reranked by the LLM: `rerank` (the report) and timings.rerank_ms. */
  async function llmReranked(found, query, options, purpose, host) {
    const { results, report } = await rerankWithLlm(llmRerankCore, String(query), found.results, options, purpose, host);
    return { ...found, results, rerank: report, timings: { ...found.timings, rerank_ms: report.ms } };
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
    chatUrl(llm.base_url); // a bad base_url fails here, before any search
    const prepared = await prepare(options, { llm, signal, fetchImpl, random });
    const timings = { ...prepared.timings, retrieve_ms: performance.now() - started, llm_first_token_ms: null, llm_ms: 0, total_ms: 0 };
    // An LLM rerank's calls (`rerank: 'llm'`) come first in the trace.
    // So do the graph's (`graph: true`: the call naming the question's entities).
    const trace = [
      ...(prepared.rerank?.trace ?? []).map((entry) => ({ purpose: 'rerank', ...entry })),
      ...(prepared.graph?.trace ?? []).map((entry) => ({ purpose: 'graph', ...entry })),
    ];
    const rerank = prepared.rerank ? { ...prepared.rerank, trace: undefined } : null;
    const graph = prepared.graph ? { ...prepared.graph, trace: undefined } : null;
    const finish = () => {
      timings.total_ms = performance.now() - started;
      return { timings, trace };
    };
    on_context?.(prepared);
    const sent = prepared.results.filter((r) => prepared.included.includes(r.chunk_id));
    if (prepared.refused) {
      return { answer: prepared.refusal, citations: [], unknown_citations: [], grounded: false, refused: true, chunks: [], usage: null, malformed_events: 0, finish_reason: null, truncated: false, spans: [], rerank, graph, ...finish() };
    }
    const llmStarted = performance.now();
    let answer = '';
    const onDelta = (delta) => {
      timings.llm_first_token_ms ??= performance.now() - llmStarted;
      answer += delta;
      on_token?.(delta);
    };
    let stream;
    try {
      stream = await chatCompletion({ llm, request: { messages: prepared.messages }, settings: prepared.options, stream: true, signal, fetch: fetchImpl, random, on_retry, on_delta: onDelta, trace });
    } catch (e) {
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
      rerank,
      graph,
      ...finish(),
    };
  }

  /** Row files `prefetch` has in flight at once. */
  const PREFETCH_ROW_FILES = 4;

  /** The key of a model body's metadata (`sextant::embed::rows`). */
  const BODY_KEY = 'sextant.rows.source_sha256';

  /** Whether `bytes` are an encoder file (`sextant build --site`'s `model_encoder`). */
  function isEncoderFile(bytes) {
    const magic = 'SXTENC';
    return bytes.length > magic.length && [...magic].every((c, i) => bytes[i] === c.charCodeAt(0));
  }

  /** Whether `bytes` hold the ASCII string `text` (a quick look, before the engine parses). */
  function holdsAscii(bytes, text) {
    const first = text.charCodeAt(0);
    outer: for (let i = bytes.indexOf(first); i >= 0 && i <= bytes.length - text.length; i = bytes.indexOf(first, i + 1)) {
      for (let j = 1; j < text.length; j++) if (bytes[i + j] !== text.charCodeAt(j)) continue outer;
      return true;
    }
    return false;
  }

  /**
   * A model body named by its content (`body.{16 hex}.onnx`, as `sextant build --site` names it)
   * must be those bytes: a body records the whole model's digest, not its own, so a damaged one
   * would otherwise load.
   */
  async function checkBodyName(url, bytes) {
    const name = /\/(?:body\.([0-9a-f]{16})\.onnx|encoder\.([0-9a-f]{16})\.bin)$/.exec(new URL(String(url), globalThis.location?.href ?? 'file:///').pathname);
    if (!name || !globalThis.crypto?.subtle) return;
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    const hex = Array.from(digest.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join('');
    if (hex !== (name[1] ?? name[2])) {
      throw new SextantError('CORRUPT_BUNDLE', `the model body ${name[0].slice(1)} is not the file its name promises (a damaged or truncated download); deploy the site's sextant/ folder again`);
    }
  }

  /** An exporter from `otlp` (`{url, headers, service, flush_ms}` or an OtlpExporter), or null. */
  function exporterOf(otlp) {
    if (otlp == null) return null;
    return otlp instanceof OtlpExporter ? otlp : new OtlpExporter(otlp);
  }

  /** Runs a query; with an exporter, records its spans (after it ends: never in its way). */
  async function traced(exporter, route, query, options, run) {
    if (!exporter) return run();
    const start_ms = Date.now();
    try {
      const response = await run();
      exporter.record(querySpans({ route, start_ms, end_ms: Date.now(), query, options: options ?? {}, response }));
      return response;
    } catch (e) {
      exporter.record(querySpans({ route, start_ms, end_ms: Date.now(), query, options: options ?? {}, response: { timings: e?.timings, trace: e?.trace }, error: e }));
      throw e;
    }
  }

  class Sextant {
    #engine;
    #files;
    #maxIndexBytes;
    /** A model body's row files (`{files, rows}`: fetched from beside it, by name), or null. */
    #modelFiles = null;
    /** Whether a graph was attached with attachGraph(). */
    #graphAttached = false;
    /** Where each query's spans go (`otlp`), or null. */
    #otlp = null;

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
     * weights: 'int8' (default: fastest, least memory), 'int5' (int8 rounded to five bits in
     * groups, as a site's packed model body computes: the search box's own vectors) or 'f32' (the
     * CLI's f32 products: about 31 MB more memory, twice the query time) or 'int8a8' (rows of
     * activations rounded to bytes: passages' arithmetic, bit for bit). fetch: the fetch
     * used for every URL (a Worker passes its ASSETS binding's). max_index_bytes: over a split
     * index, the most bytes of keyword shards, fragments and vector blocks kept between queries
     * (the least recently used go first, fetched again if needed; default: no limit).
     */
    static async load({ index, model, tokenizer, on_progress, fetch: fetchImpl = globalThis.fetch, max_index_bytes, otlp, ...load_options } = {}) {
      const exporter = exporterOf(otlp);
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
      sextant.#otlp = exporter;
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
      if (method === 'loadModel' && !isUrlLike(model) && (holdsAscii(modelBytes, BODY_KEY) || isEncoderFile(modelBytes))) {
        throw new SextantError('BAD_ARGUMENT', 'this model is a body or encoder file without its word table: pass its URL (its row files are fetched from beside it), or the whole model.onnx');
      }
      if (method === 'loadModel' && isUrlLike(model)) await checkBodyName(model, modelBytes);
      // An option given as undefined is an option not given (its default).
      const given = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
      call(() => this.#engine[method](modelBytes, tokenizerBytes, given));
      // A model body (sextant build --site's `model_body`) fetches its word table's rows from
      // beside it as queries need them.
      if (method === 'loadModel' && call(() => this.#engine.modelFileNames()).length) {
        this.#modelFiles = { files: new IndexFiles(new URL('.', new URL(String(model), globalThis.location?.href)), fetchImpl), rows: new Set(call(() => this.#engine.modelFileNames())) };
      }
    }

    /** The files a step may ask for: the index's, and a model body's row files. */
    #loop() {
      return this.#modelFiles ? new WithModelFiles(this.#files, this.#modelFiles.files, this.#modelFiles.rows) : this.#files;
    }

    /** Bytes of the index files held that `max_index_bytes` bounds (keyword shards, fragments,
     * binary codes, vector blocks, as decoded); the manifest, norms, centroids, facets and the
     * directory pages read are held besides. */
    get heldBytes() {
      return this.#engine.heldBytes();
    }

    /** Whether a model is attached. */
    get hasModel() {
      return this.#engine.hasModel();
    }

    /**
     * await search(query, options) → {results, timings, vector_method, fallback, did_you_mean,
     * filter_counts}. Options include `filters` ({name: value | [values] | {any, all, none}}),
     * `sort` ({key: 'asc' | 'desc'}) and `filter_counts`. With `query_vector` (the query's
     * vector from `queryVector` of an engine with the same model, e.g. a Worker's `/embed`),
     * hybrid and dense search need no model here. With `rerank: 'llm'` and `llm` ({base_url,
     * model, api_key?}; `signal`, `fetch` and `random` as in ask()), the LLM rates the best
     * `rerank_depth` results and they come back in its order, with `rerank` ({strategy, depth,
     * calls, ms, fallback, usage, trace}): on any failure of the LLM the fused order stands and
     * `fallback` says why. With `graph` (true, or {hops, entity_threshold, relation_threshold,
     * top_entities, top_relations, max_chunks, token_budget}) the index's knowledge graph
     * (`sextant graph build`) is searched too: the chunks its best entities and relations cite
     * follow the results, and `graph` reports {used, terms, lines, tokens, calls, ms, fallback,
     * terms_error, trace} (with `llm`, the LLM names the question's entities and answer types
     * first; without a graph the results stand alone and `fallback` says why).
     */
    async search(query, asked) {
      const options = withoutNoGraph(asked);
      return traced(this.#otlp, 'search', query, options, async () => {
        if (wantsGraph(options)) {
          const found = await this.#find(query, splitGraphOptions(options).options, 'search');
          const framed = await this.#graphed('search', query, options, () => found);
          const extra = framed.results.filter((r) => !found.results.some((f) => f.chunk_id === r.chunk_id));
          return { ...found, results: [...found.results, ...extra], graph: framed.graph };
        }
        if (!wantsLlmRerank(options)) return this.#find(query, options, 'search');
        const { host, options: rest } = splitLlmOptions(options);
        return llmReranked(await this.#find(query, llmCandidates(rest, 'search'), 'search'), query, rest, 'search', host);
      });
    }

    /** A search as `purpose` (search, context or ask) runs it, with `query_vector` if given. */
    #find(query, options, purpose) {
      const { query_vector: vector, ...rest } = options ?? {};
      if (vector !== undefined) {
        if (purpose !== 'search') throw new SextantError('BAD_ARGUMENT', `query_vector is an option of search(), not of ${purpose}()`);
        const floats = vector instanceof Float32Array ? vector : Float32Array.from(vector);
        return untilDone(this.#engine, this.#loop(), () => this.#engine.searchWithVector(String(query), floats, rest), this.#maxIndexBytes);
      }
      return untilDone(this.#engine, this.#loop(), () => this.#engine.searchFor(String(query), options, purpose), this.#maxIndexBytes);
    }

    /**
     * A question's results reranked by the LLM (`rerank: 'llm'`), framed as `purpose` (context
     * or ask) frames: `contextOf`'s fields and `rerank`.
     */
    async #framedLlmReranked(purpose, question, options, host) {
      const found = await llmReranked(await this.#find(question, llmCandidates(options, purpose), purpose), question, options, purpose, host);
      const framed = call(() => this.#engine.contextOf(String(question), found.results, options, purpose, found.timings));
      return { ...framed, rerank: found.rerank };
    }

    /**
     * `question` framed as `purpose` (search, context or ask) frames it, with the knowledge
     * graph's block and the chunks it cites first (`graph: true`; see graph.js), and `graph`, the
     * report. `plain` gives the framing without the graph, for the fallback.
     */
    async #graphed(purpose, question, options, plain) {
      needAnswers('graph: true');
      const { graphOptions, host, options: rest } = splitGraphOptions(options);
      if (wantsLlmRerank(rest)) throw new SextantError('BAD_ARGUMENT', "graph and rerank: 'llm' cannot be asked for together; drop one of them");
      const run = (step) => untilDone(this.#engine, this.#loop(), step, this.#maxIndexBytes);
      const q = String(question);
      return graphFramed({
        ...graphRules,
        hasGraph: () => Boolean(this.manifest().files.graph) || this.#graphAttached,
        withGraph: (terms) => run(() => this.#engine.graphContext(q, rest, purpose, terms, graphOptions)),
        plain: plain ?? (() => run(() => (purpose === 'ask' ? this.#engine.prepareAsk(q, rest) : this.#engine.context(q, rest)))),
      }, q, host);
    }

    /**
     * graphFile(draft) → the bytes of this index's knowledge graph from a merged draft
     * (`graphDraft`): its entities and relations embedded with this model, recorded against
     * this index's chunks (every chunk held: a collection's index).
     */
    graphFile(draft) {
      needAnswers('graphFile()');
      return call(() => this.#engine.graphOf(draft));
    }

    /**
     * await chunksNumbered(numbers) → [{number, found}] for each chunk number the index has (in
     * order; `found` as get() gives a chunk): what a graph's extraction reads.
     */
    async chunksNumbered(numbers) {
      needAnswers('chunksNumbered()');
      const list = Uint32Array.from(numbers);
      return untilDone(this.#engine, this.#loop(), () => this.#engine.chunksNumbered(list), this.#maxIndexBytes, Math.ceil(list.length / 8) + 4);
    }

    /**
     * attachGraph(bytes): a knowledge graph built for this index outside its manifest (the
     * research workspace's, for a collection), used by `graph: true`.
     */
    attachGraph(bytes) {
      needAnswers('attachGraph()');
      call(() => this.#engine.attachGraph(bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)));
      this.#graphAttached = true;
    }

    /**
     * queryVector(query, options) → Float32Array: the vector a hybrid (or dense) search of
     * `query` embeds, which `search(query, {query_vector})` of an engine without the model takes.
     * Needs the model (a model body fetches the rows of the query's tokens first).
     */
    async queryVector(query, options) {
      return untilDone(this.#engine, this.#loop(), () => this.#engine.queryVector(String(query), options), this.#maxIndexBytes);
    }

    /** frame(results, {token_budget}) → {context, included, omitted, tokens, budget, system_prompt}. */
    frame(results, options) {
      needAnswers('frame()');
      return call(() => this.#engine.frame(results, options));
    }

    /**
     * await context(question, options) → the results framed, with the chat messages to send
     * (with `rerank: 'llm'` and `llm`, reranked first; with `graph`, the knowledge graph's block
     * and the chunks it cites first: see search()).
     */
    async context(question, asked) {
      needAnswers('context()');
      const options = withoutNoGraph(asked);
      return traced(this.#otlp, 'context', question, options, () => {
        if (wantsGraph(options)) return this.#graphed('context', question, options);
        if (!wantsLlmRerank(options)) return untilDone(this.#engine, this.#loop(), () => this.#engine.context(String(question), options), this.#maxIndexBytes);
        const { host, options: rest } = splitLlmOptions(options);
        return this.#framedLlmReranked('context', question, rest, host);
      });
    }

    manifest() {
      return call(() => this.#engine.manifest());
    }

    /**
     * Fetches every file of a split index not fetched yet (for offline use): the files the
     * manifest names (its packs, whole), then whatever their pages name that is still missing.
     */
    async prefetch() {
      if (this.#files !== NO_FILES) {
        await this.#files.add(this.#engine, call(() => this.#engine.fileNames()));
        for (let round = 0; round < 4; round++) {
          const missing = call(() => this.#engine.missing());
          if (!missing.length) break;
          await this.#files.add(this.#engine, missing);
        }
      }
      // Then a model body's rows, so hybrid search works offline for any query: a few files at
      // a time, so a query's own rows never wait behind hundreds of requests.
      if (!this.#modelFiles) return;
      const rows = [...this.#modelFiles.rows];
      for (let i = 0; i < rows.length; i += PREFETCH_ROW_FILES) await this.#modelFiles.files.add(this.#engine, rows.slice(i, i + PREFETCH_ROW_FILES));
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
      // Each round reads at least one fragment (or page) not held yet: as many rounds as
      // fragments and pages always end.
      const { files, counts } = this.manifest();
      const fragments = Math.ceil(counts.chunks / files.fragments.chunks_per_file) + files.fragments.files.length;
      return untilDone(this.#engine, this.#loop(), () => this.#engine.lookup(id), this.#maxIndexBytes, fragments + 3);
    }

    /**
     * Uses `other`'s model for this index too (an index built with the same model, checked):
     * one copy of the weights in memory, and a query searched over both embedded once.
     */
    shareModel(other) {
      if (!(other instanceof Sextant)) throw new SextantError('BAD_ARGUMENT', 'shareModel() takes another Sextant');
      call(() => this.#engine.shareModel(other.#engine));
      this.#modelFiles = other.#modelFiles;
    }

    /** What `Bases` runs on each base: the engine, its files and its memory bound. */
    [INTERNAL]() {
      return { engine: this.#engine, files: this.#loop(), maxIndexBytes: this.#maxIndexBytes, graphed: (purpose, q, o) => this.#graphed(purpose, q, o) };
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
      needAnswers('ask()');
      return traced(this.#otlp, 'ask', question, options, () => answer(question, withoutNoGraph(options), (ask, host) => {
        if (wantsGraph(ask)) return this.#graphed('ask', question, { ...ask, llm: host.llm, signal: host.signal, fetch: host.fetchImpl, random: host.random });
        if (wantsLlmRerank(ask)) return this.#framedLlmReranked('ask', question, ask, host);
        return untilDone(this.#engine, this.#loop(), () => this.#engine.prepareAsk(question, ask), this.#maxIndexBytes);
      }));
    }

    /** The OTLP exporter this engine sends its spans to (`otlp`), or null: `stats()`, `flush()`. */
    get otlp() {
      return this.#otlp;
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
    #weights; // name → weight of its results in the fusion (1 unless given)

    constructor(bases, names, failed, weights) {
      this.#bases = bases;
      this.#names = names;
      this.#failed = failed;
      this.#weights = weights;
    }

    /**
     * Loads every base: `bases` is [{name, index, weight?, fetch?, max_index_bytes?}] (`index` as
     * in `Sextant.load`; `weight`, over 0 and at most 100, multiplies the base's fused scores, 1
     * by default, as a merged site's weight); `model` and `tokenizer` load once and every base shares them; the other
     * options are `Sextant.load`'s. Fails only when no base loads.
     */
    static async load({ bases, model, tokenizer, on_progress, fetch: fetchImpl = globalThis.fetch, max_index_bytes, ...load_options } = {}) {
      const names = Array.isArray(bases) ? bases.map((base) => base?.name) : null;
      if (!names || names.some((name) => typeof name !== 'string')) {
        throw new SextantError('BAD_ARGUMENT', 'Bases.load() needs bases: [{name, index}, …], each name a string');
      }
      await ready();
      checkBaseNames(names);
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
      const weights = new Map(bases.map((b) => [b.name, b.weight ?? 1]));
      return new Bases(loaded, names, failed, weights);
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

    /** Each base: {base, loaded, documents, chunks, has_model, index_bytes_held, model, format} or {base, loaded: false, code, message}. */
    describe() {
      return this.#names.map((base) => {
        const sextant = this.#bases.get(base);
        if (!sextant) {
          const { code, message } = this.#failed.find((f) => f.base === base);
          return { base, loaded: false, code, message };
        }
        const m = sextant.manifest();
        return { base, loaded: true, documents: m.counts.documents, chunks: m.counts.chunks, has_model: sextant.hasModel, index_bytes_held: sextant.heldBytes, model: { sha256: m.model.sha256, dims: m.model.dims }, format: m.format };
      });
    }

    /** The ids an LLM reads: `base:chunk_id` once there is more than one base. */
    #qualified(base, id) {
      return qualifyId(base, id, this.#names.length > 1);
    }

    /** Which bases a call searches: `bases` (names, or "a,b"; all when absent). */
    #select(bases) {
      return selectBases(this.#names, bases);
    }

    /** Searches the chosen bases as `purpose` (search, context or ask) does, and fuses them. */
    async #searchAll(purpose, query, bases, allOptions) {
      const started = performance.now();
      // A query vector from elsewhere (a Worker's /embed): every base searches with it.
      const { query_vector: vector, ...options } = allOptions ?? {};
      const floats = vector === undefined ? null : vector instanceof Float32Array ? vector : Float32Array.from(vector);
      const names = this.#select(bases);
      const failed = this.#failed.filter((f) => names.includes(f.base));
      const live = names.filter((name) => this.#bases.has(name));
      const settled = await Promise.allSettled(
        live.map((name) => {
          const { engine, files, maxIndexBytes } = this.#bases.get(name)[INTERNAL]();
          const step = floats ? () => engine.searchWithVector(String(query), floats, options) : () => engine.searchFor(String(query), options, purpose);
          return untilDone(engine, files, step, maxIndexBytes);
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
        lists.push({ base: live[i], results: r.value.results, weight: this.#weights.get(live[i]) ?? 1 });
        perBase.push({ base: live[i], count: r.value.results.length, fallback: r.value.fallback, did_you_mean: r.value.did_you_mean, vector_method: r.value.vector_method, timings: r.value.timings });
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
      // The spelling of the base that found the most.
      const didYouMean = perBase.filter((b) => b.did_you_mean).sort((a, b) => b.count - a.count)[0]?.did_you_mean ?? null;
      // Filter counts add up over the bases (each counts its own pages).
      let filterCounts = null;
      for (const r of settled) {
        if (r.status !== 'fulfilled' || !r.value.filter_counts) continue;
        filterCounts ??= {};
        for (const [name, values] of Object.entries(r.value.filter_counts)) {
          const into = (filterCounts[name] ??= {});
          for (const [value, n] of Object.entries(values)) into[value] = (into[value] ?? 0) + n;
        }
      }
      return { results, timings, fallback, did_you_mean: didYouMean, filter_counts: filterCounts, bases: perBase, partial: failed.length > 0, failed };
    }

    /**
     * await search(query, {bases, ...options}) → {results (each with base, base_rank and
     * base_score; rank and score fused), timings, fallback, did_you_mean, filter_counts (summed
     * over the bases, with `filter_counts: true`), bases: [{base, count, timings, …}], partial,
     * failed}. `bases` chooses the bases (names, or "a,b"); all by default. With `sort`, each
     * base's results are sorted and the lists fused by rank. With `rerank: 'llm'` and `llm`, the
     * LLM rates the fused results (`Sextant.search`).
     */
    async search(query, { bases, ...options } = {}) {
      if (wantsGraph(options)) throw new SextantError('BAD_ARGUMENT', 'graph is an option of context() and ask() over bases (and of one Sextant\'s search())');
      return this.#searchReranked('search', query, bases, withoutNoGraph(options));
    }

    /** `#searchAll`, and with `rerank: 'llm'` the fused results rated by the LLM. */
    async #searchReranked(purpose, query, bases, options, host) {
      if (!wantsLlmRerank(options)) return this.#searchAll(purpose, query, bases, options);
      let rest = options;
      if (!host) ({ host, options: rest } = splitLlmOptions(options));
      return llmReranked(await this.#searchAll(purpose, query, bases, llmCandidates(rest, purpose)), query, rest, purpose, host);
    }

    /**
     * `graph: true` over the bases: one base's graph, framed as that Sextant frames it (its
     * results marked with the base). With several bases, graph retrieval is not offered yet.
     */
    async #graphFramed(purpose, question, bases, options) {
      if (this.#names.length !== 1) {
        throw new SextantError('BAD_ARGUMENT', `graph searches one knowledge base's graph; these are ${this.#names.length} bases: search one of them without Bases, or leave graph out`);
      }
      const [name] = this.#select(bases);
      const sextant = this.#bases.get(name);
      if (!sextant) {
        const { code, message } = this.#failed.find((f) => f.base === name);
        throw new SextantError(code, `base ${name} did not load: ${message}`);
      }
      const framed = await sextant[INTERNAL]().graphed(purpose, question, options);
      return { ...framed, results: framed.results.map((r) => ({ ...r, base: name, base_rank: r.rank, base_score: r.score })), bases: [{ base: name, count: framed.results.length, timings: framed.timings }], partial: false, failed: [] };
    }

    /** Searches, fuses and frames, as `context`/`prepareAsk` do for one index. */
    async #frame(purpose, question, bases, asked, host) {
      const allOptions = withoutNoGraph(asked);
      if (wantsGraph(allOptions)) return this.#graphFramed(purpose, question, bases, host ? { ...allOptions, llm: host.llm, signal: host.signal, fetch: host.fetchImpl, random: host.random } : allOptions);
      let options = allOptions;
      if (wantsLlmRerank(options) && !host) ({ host, options } = splitLlmOptions(options));
      const found = await this.#searchReranked(purpose, question, bases, options, host);
      const framer = [...this.#bases.values()].find((s) => s.hasModel);
      if (!framer) throw new SextantError('NO_MODEL', 'framing needs the embedding model: load the bases with model and tokenizer');
      const results = found.results.map((r) => ({ ...r, chunk_id: this.#qualified(r.base, r.chunk_id) }));
      const { engine } = framer[INTERNAL]();
      const framed = call(() => engine.contextOf(String(question), results, options, purpose, found.timings));
      return { ...framed, results, bases: found.bases, partial: found.partial, failed: found.failed, ...(found.rerank ? { rerank: found.rerank } : {}) };
    }

    /** await context(question, {bases, ...options}) → `Sextant.context`'s fields over the bases. */
    async context(question, { bases, ...options } = {}) {
      return this.#frame('context', question, bases, options);
    }

    /** await ask(question, {bases, llm, ...}) → `Sextant.ask`'s answer over the bases. */
    async ask(question, { bases, ...options } = {}) {
      let found;
      const answered = await answer(question, options, async (ask, host) => (found = await this.#frame('ask', question, bases, ask, host)));
      return { ...answered, bases: found.bases, partial: found.partial, failed: found.failed };
    }

    /**
     * await get(id, {base}) → `Sextant.get` in one base: `base`, or the base named before the
     * first ':' of a qualified id (`docs:guide/install.md#3`); null when not found.
     */
    async get(id, { base } = {}) {
      if (typeof id !== 'string') throw new SextantError('BAD_ARGUMENT', 'get() takes an id (a string) from search results');
      const [name, local] = splitQualifiedId(id, base, this.#names);
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

  return { Sextant, Bases, SextantError, verifyCitations, highlights, defaults, ready, memoryBytes, checkBaseNames, selectBases, qualifyId, splitQualifiedId, researchToolCall, researchQuery, researchJudged, researchRefusal, wrapEngine };
}
