// Types of the sextant package (the same for the browser, Node and workerd entries).
//
// Option and result names are the core's one snake_case vocabulary (the CLI's --json output and
// the Worker's HTTP API use the same). `make test` checks this file against the JS with
// `tsc --noEmit` and against the core's defaults() and error codes.

/** Every code a SextantError can carry; `defaults().error_codes` gives each its HTTP status. */
export type ErrorCode =
  | 'BAD_ARGUMENT'
  | 'NO_MODEL'
  | 'BAD_MODEL'
  | 'EMBED_FAILED'
  | 'CORRUPT_BUNDLE'
  | 'UNSUPPORTED_VERSION'
  | 'MODEL_MISMATCH'
  | 'NOT_READY'
  | 'FETCH_FAILED'
  | 'ABORTED'
  | 'LLM_BAD_URL'
  | 'LLM_UNREACHABLE'
  | 'LLM_AUTH'
  | 'LLM_HTTP'
  | 'LLM_UNAVAILABLE'
  | 'LLM_TIMEOUT'
  | 'LLM_BAD_RESPONSE'
  | 'LLM_INCOMPLETE'
  | 'LLM_NOT_CONFIGURED'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'NOT_BUILT'
  | 'BAD_CONFIG'
  | 'INTERNAL';

export class SextantError extends Error {
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>);
  code: ErrorCode;
  /** The HTTP status of the LLM's answer (LLM_AUTH, LLM_HTTP, LLM_UNAVAILABLE). */
  status?: number;
  /** The LLM endpoint's own words, with keys and bearer tokens removed. */
  detail?: string;
  /** LLM_INCOMPLETE: the text that arrived before the stream ended. */
  partial_answer?: string;
  /** ask(): each LLM call made before the error. */
  trace?: LlmCall[];
  /** ask(): the stages' times until the error. */
  timings?: AnswerTimings;
  /** Bases: the bases that failed (when none answered). */
  failed?: BaseFailure[];
}

export type Bytes = ArrayBuffer | Uint8Array;
export type Source = string | URL | Bytes;
export type Mode = 'hybrid' | 'dense' | 'keyword';
export type Weights = 'f32' | 'int8' | 'int5' | 'int8a8';

export interface Progress {
  file: 'index' | 'index file' | 'model' | 'tokenizer';
  /** Bytes received so far. */
  loaded: number;
  /** Content-Length, or null when the server did not send one. */
  total: number | null;
}

export interface LoadOptions {
  /** A split index's manifest URL (`sextant/index/manifest.*.json`, its files fetched from
   *  beside it as queries need them), or a packed index (`.sxt`, URL or bytes). */
  index: Source;
  /** model.onnx; omit with tokenizer for keyword-only search. */
  model?: Source;
  tokenizer?: Source;
  on_progress?: (progress: Progress) => void;
  /** How the model's int8 weights are held: 'int8' (default: multiplied in integers, the
   *  fastest queries and the least memory) or 'f32' (dequantised at load and multiplied in f32,
   *  as the CLI does: about 31 MB more memory, about twice the query time) or 'int5' (int8
   *  rounded to five bits in groups: what a site's packed model body computes) or 'int8a8'
   *  (activation rows rounded to bytes: what `sextant build` embeds passages with). */
  weights?: Weights;
  /** The fetch used for URLs (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /** Over a split index: the most bytes of keyword shards, fragments and vector blocks kept
   *  between queries; the least recently used go first and are fetched again when needed
   *  (default: no limit). */
  max_index_bytes?: number;
  /** Send each search's, context's and answer's spans to an OpenTelemetry collector (OTLP/JSON
   *  over HTTP), batched, never blocking a query; a batch the collector does not take is dropped
   *  and counted (`sextant.otlp.stats()`). */
  otlp?: OtlpOptions | OtlpExporter;
}

export interface OtlpOptions {
  /** The collector's traces endpoint, e.g. `http://localhost:4318/v1/traces`. */
  url: string;
  /** Headers sent with each batch (an API key of the collector's). */
  headers?: Record<string, string>;
  /** `service.name` of the spans (default `sextant-search`). */
  service?: string;
  /** Milliseconds from the first waiting span to a send (default 1000; 0: only on `flush()`). */
  flush_ms?: number;
  fetch?: typeof fetch;
}

/** A span before it is sent: what `querySpans` and `collectionSpans` return. */
export interface SpanRecord {
  name: string;
  trace_id: string;
  span_id: string;
  parent_id?: string;
  start_ms: number;
  end_ms: number;
  attributes?: Record<string, string | number | boolean | null | undefined>;
  kind?: number;
  error?: unknown;
}

/** Sends spans to an OTLP/HTTP collector as JSON, in batches; never throws. */
export class OtlpExporter {
  constructor(options: OtlpOptions);
  record(spans: SpanRecord[]): void;
  /** Sends what waits; resolves when it is sent or dropped. */
  flush(): Promise<void>;
  stats(): { sent: number; dropped: number; queued: number };
}
/** The spans of one search, context or answer, from its response's timings (and its LLM calls). */
export function querySpans(query: { route?: 'search' | 'context' | 'ask'; start_ms: number; end_ms: number; query?: string; options?: Record<string, unknown>; response?: unknown; error?: unknown }): SpanRecord[];
/** The span of a collection's work (`rag.ingest`, `rag.embed`). */
export function collectionSpans(work: { name: string; start_ms: number; end_ms: number; attributes?: Record<string, string | number | boolean> }): SpanRecord[];

export interface Bm25Params {
  /** Term-frequency saturation, 0–10 (default 1.5). */
  k1: number;
  /** Length normalisation, 0–1 (default 0.6). */
  b: number;
}

export interface SearchOptions {
  /** Results wanted, 1–1000 (default 10). */
  k?: number;
  mode?: Mode;
  /** Candidates per retriever before fusion, up to 10000 (default max(10·k, 100)). */
  depth?: number | null;
  /** Drop results scoring below this (the fused score in hybrid, cosine in dense, BM25 in keyword). */
  score_threshold?: number | null;
  /** Drop dense candidates with cosine below this, before fusion. */
  min_similarity?: number | null;
  /** Keep only the best chunk of each document. */
  per_document?: boolean;
  /** BM25 parameters for this query (default: the index's). */
  bm25?: Partial<Bm25Params> | null;
  vector_search?: 'auto' | 'exact';
  /** How hybrid search fuses: 'convex' (default: normalised scores, weighted) or 'rrf' (ranks only). */
  fusion?: 'rrf' | 'convex';
  /** The dense list's weight in a convex fusion, 0–1 (default 0.8; keyword gets the rest). */
  dense_weight?: number;
  /** Fuse documents (each ranked by its best chunk), not chunks (default false). */
  fuse_documents?: boolean;
  /** Expand keyword queries with terms of their top chunks, RM3 (default false). */
  query_expansion?: boolean;
  /** With `fuse_documents`, how a page's chunks score it: 'max' (its best chunk, default) or 'sum3' (its best three added up). */
  page_score?: 'max' | 'sum3';
  /** With results by document (`per_document` or `fuse_documents`), BM25 scores each document whole (term counts and lengths summed over its chunks) rather than by its best chunk (default true). */
  document_bm25?: boolean;
  /** At most this many chunks of each document, 1–100: a page's sub-results when results are grouped by page (default: any number; `per_document` is 1). */
  sub_results?: number;
  /** How the best results are reranked: 'none', 'cross_encoder' (the one `loadReranker()` attached; an error without one) or 'llm' (the LLM in `llm` rates them: see `LlmRerankOptions`). Default: the cross-encoder when one is attached, else none. */
  rerank?: 'none' | 'cross_encoder' | 'llm' | null;
  /** How many of the best results are reranked, 0–200 (0: none). Default 20. */
  rerank_depth?: number;
  /** With `rerank: 'llm'`: results rated by one LLM call, 1–200 (the calls run together). Default 10. */
  rerank_batch?: number;
  /** With `rerank: 'llm'`: milliseconds all the calls may take, retries included, 1–600000; past it the fused order stands. Default 30000. */
  rerank_timeout_ms?: number;
  /** Only pages whose filter values pass, by filter name (before results are cut, in every mode). */
  filters?: Record<string, Filter>;
  /** Order the best `depth` matches by one sort key, e.g. `{ date: 'desc' }` (default: by relevance). */
  sort?: Record<string, 'asc' | 'desc'>;
  /** Count, for every filter value, the matching pages that have it (`filter_counts` in the response). */
  filter_counts?: boolean;
  /** When a misspelled word is corrected (`did_you_mean`), hybrid search embeds the corrected query (with the model here; not with a `query_vector`). Default true. */
  embed_corrections?: boolean;
}

/** A value, a list of values a page must all have, or lists of values: at least one of `any`, all of `all`, none of `none` (`not` is `none`). */
export type Filter = string | number | boolean | Array<string | number | boolean> | { any?: FilterValues; all?: FilterValues; none?: FilterValues; not?: FilterValues };
type FilterValues = string | number | boolean | Array<string | number | boolean>;

export interface FrameOptions {
  /** Model tokens the framed blocks may take, 1–100000 (default 1500). */
  token_budget?: number;
}

export type ContextOptions = SearchOptions & FrameOptions;

/** What `search`/`context` take besides the core's options when `rerank` is 'llm' (ask() has its own `llm`). */
export interface LlmRerankOptions {
  llm?: LlmConfig;
  signal?: AbortSignal;
  fetch?: typeof fetch;
  random?: () => number;
}

/** What an LLM rerank did (`rerank: 'llm'`). */
export interface RerankReport {
  strategy: 'llm';
  /** Results rated. */
  depth: number;
  /** LLM calls made (together). */
  calls: number;
  ms: number;
  /** Why the fused order stood (a timeout, an HTTP error, a reply that did not rate every passage), or null. */
  fallback: { code: ErrorCode | string; message: string } | null;
  /** The tokens the judge's replies report, summed. */
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  /** Each try of each call (`batch`: which call); in ask()'s own `trace` instead, with `purpose: 'rerank'`. */
  trace?: (LlmCall & { batch: number })[];
}

/** Graph retrieval's options (`graph: true` takes every default). */
export interface GraphOptions {
  /** Steps paths expand from the recalled entities, 0–3. Default 2. */
  hops?: number;
  /** Least similarity of an entity to a name of the question, 0–1. Default 0.5. */
  entity_threshold?: number;
  /** Least similarity of a relation to the question, 0–1. Default 0.3. */
  relation_threshold?: number;
  /** Entities each recall keeps, 1–100. Default 10. */
  top_entities?: number;
  /** Relations the relation recall keeps, 1–100. Default 10. */
  top_relations?: number;
  /** Chunks the graph adds (those its best lines cite), 0–20. Default 4. */
  max_chunks?: number;
  /** Model tokens the graph block may take, 50–4000, out of the context's budget. Default 400. */
  token_budget?: number;
}

/** What `search`/`context`/`ask` take to search the knowledge graph too (`sextant graph build`). */
export interface GraphSearchOptions {
  /** true, or graph options. With `llm`, the LLM names the question's entities and answer types first. */
  graph?: boolean | GraphOptions;
}

/** One entity or relation of the graph block. */
export interface GraphLine {
  kind: 'entity' | 'relation';
  /** The entity's name, or the relation's two names joined by ' — '. */
  name: string;
  /** The entity's type ('' for a relation). */
  type: string;
  description: string;
  /** The chunks it cites, each framed in the same context. */
  chunk_ids: string[];
  score: number;
}

/** What graph retrieval did (`graph`). */
export interface GraphReport {
  /** Whether the graph's block is in the context (false: see `fallback`). */
  used: boolean;
  /** The question's entity names and answer types as the LLM read them (null without an LLM, or when its call failed). */
  terms: { entities: string[]; types: string[] } | null;
  /** The block's entities and relations, best first. */
  lines: GraphLine[];
  /** Model tokens of the block. */
  tokens: number;
  /** LLM calls made (0 or 1). */
  calls: number;
  ms: number;
  /** Why the search's results stand alone (the index has no graph: 'NOT_BUILT'; it could not be read), or null. */
  fallback: { code: ErrorCode | string; message: string } | null;
  /** Why the LLM did not name the question's entities (its vector stood for them), or null. */
  terms_error: { code: ErrorCode | string; message: string } | null;
  /** Each try of the call; in ask()'s own `trace` instead, with `purpose: 'graph'`. */
  trace?: LlmCall[];
}

export interface RetrieverHit {
  rank: number;
  score: number;
}

/** The fields of `sextant search --json`. */
export interface SearchResult {
  rank: number;
  chunk_id: string;
  doc_id: string;
  title: string;
  source: string;
  url: string;
  heading_path: string[];
  text: string;
  score: number;
  dense: RetrieverHit | null;
  keyword: RetrieverHit | null;
  /** The reranker's score, when it reranked this result: the cross-encoder's, or the LLM's rating (0–10). */
  rerank: number | null;
  /** The page's metadata (front matter, `data-sextant-meta`); empty when it has none. */
  metadata: Record<string, string>;
}

export interface StageTimings {
  embed_ms: number;
  keyword_ms: number;
  vector_ms: number;
  fusion_ms: number;
  rerank_ms: number;
  total_ms: number;
  /** Waiting for index files a split index fetched for this query (not in total_ms). */
  fetch_ms?: number;
  /** Index files fetched for this query. */
  files_fetched?: number;
}

export interface SearchResponse {
  results: SearchResult[];
  /** Milliseconds per stage. */
  timings: StageTimings;
  /** 'rescored': binary codes picked candidates, int8 vectors ranked the best of them (`layout.rescore`, at least 5 per result); 'exact': every int8 vector scored. */
  vector_method: 'rescored' | 'exact' | null;
  /** The index terms keyword search looked for in place of the query's words the index does not
   * hold (a typo, or a word being typed): empty when every word was searched for as written. */
  fallback: string[];
  /** The query with each such word spelled as the results spell the term searched in its
   * place, to offer as "did you mean"; null when there is none. */
  did_you_mean: string | null;
  /** With `filter_counts: true`: filter name → value → matching pages that have it; else null. */
  filter_counts: Record<string, Record<string, number>> | null;
  /** With `rerank: 'llm'`: what the LLM rerank did. */
  rerank?: RerankReport;
  /** With `graph`: what graph retrieval did (the chunks it cites follow the results). */
  graph?: GraphReport;
}

export interface Framed {
  context: string;
  included: string[];
  omitted: string[];
  tokens: number;
  budget: number;
  system_prompt: string;
}

export interface ChatMessage {
  role: 'system' | 'user';
  content: string;
}

/** The fields of `sextant frame --json`. */
export interface ContextResponse extends Framed {
  results: SearchResult[];
  /** The chat messages to send: the system prompt with the context, then the question. */
  messages: ChatMessage[];
  /** Nothing fit or nothing was found: there is no evidence to answer from. */
  refused: boolean;
  /** The answer to give when refused. */
  refusal: string;
  timings: StageTimings;
  /** With `rerank: 'llm'`: what the LLM rerank did. */
  rerank?: RerankReport;
  /** With `graph`: what graph retrieval did (its block opens `context`; the chunks it cites are in `results`). */
  graph?: GraphReport;
}

export interface Citation {
  chunk_id: string;
  valid: boolean;
  count: number;
}

/** Where a bracketed citation group is in the answer (JS string offsets). */
export interface CitationSpan {
  start: number;
  end: number;
  chunk_ids: string[];
}

export interface CitationReport {
  citations: Citation[];
  valid: string[];
  unknown: string[];
  grounded: boolean;
  spans: CitationSpan[];
}

export interface LlmConfig {
  /** An OpenAI-compatible API root, e.g. https://api.openai.com/v1 (POST {base_url}/chat/completions). */
  base_url: string;
  /** Sent only to base_url as a bearer token; never logged, stored or shown in errors. */
  api_key?: string;
  model: string;
  headers?: Record<string, string>;
}

export interface AskOptions extends ContextOptions, GraphSearchOptions {
  llm: LlmConfig;
  signal?: AbortSignal;
  /** Called with the framed context once the options are validated, before the LLM call. */
  on_context?: (context: ContextResponse & { options: Record<string, unknown> }) => void;
  /** Whole-request timeout in ms, retries included (default 60000; 0 for none). */
  timeout_ms?: number;
  /** Tries for 429 and 5xx answers, 1–10 (default 3). */
  max_tries?: number;
  temperature?: number;
  /** Longest answer accepted in bytes (default 262144); longer ends with LLM_INCOMPLETE. */
  max_answer_bytes?: number;
  /** Longest event-stream line in bytes (default 1048576); longer ends with LLM_BAD_RESPONSE. */
  max_sse_line_bytes?: number;
  on_token?: (text: string) => void;
  on_retry?: (info: { attempt: number; status: number; wait_ms: number }) => void;
  fetch?: typeof fetch;
  random?: () => number;
}

export interface Answer {
  answer: string;
  citations: (Citation & { url: string | null; title: string | null; base?: string })[];
  unknown_citations: string[];
  /** At least one citation points at a chunk that was sent. */
  grounded: boolean;
  /** Nothing relevant was retrieved, so the LLM was not called. */
  refused: boolean;
  /** The chunks sent to the LLM. */
  chunks: SearchResult[];
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  malformed_events: number;
  finish_reason: string | null;
  /** The model stopped at its length limit or a content filter: the answer may be cut. */
  truncated: boolean;
  /** Where each citation group is in `answer`. */
  spans: CitationSpan[];
  /** The search's stages, then retrieval, first token, the LLM and the whole ask in ms. */
  timings: AnswerTimings;
  /** Each LLM call, retries included (an LLM rerank's and the graph's first, with `purpose: 'rerank'` or `'graph'`). */
  trace: (LlmCall & { purpose?: 'rerank' | 'graph'; batch?: number })[];
  /** With `rerank: 'llm'`: what the LLM rerank did (its calls are in `trace`). */
  rerank: Omit<RerankReport, 'trace'> | null;
  /** With `graph`: what graph retrieval did (its call is in `trace`). */
  graph: Omit<GraphReport, 'trace'> | null;
}

/** One call to the LLM, in ask()'s trace. */
export interface LlmCall {
  attempt: number;
  /** The HTTP status, or null when no answer came (unreachable, timed out, aborted). */
  status: number | null;
  /** Milliseconds until the answer's headers (or the failure). */
  ms: number;
  /** 'ok' (answer read), 'retry' (429 or 5xx, tried again), 'answered' (headers only) or an error code. */
  outcome: 'ok' | 'retry' | 'answered' | ErrorCode;
  /** Retry-After, in ms, when the LLM sent one. */
  retry_after_ms?: number | null;
  /** How long ask() waited before the next try. */
  wait_ms?: number;
  /** Reading the stream, for the call that answered. */
  stream_ms?: number;
  answer_bytes?: number;
  finish_reason?: string | null;
}

export interface AnswerTimings extends StageTimings {
  /** Searching and framing, with index fetches. */
  retrieve_ms: number;
  /** From the first LLM request to the first token (null if none came). */
  llm_first_token_ms: number | null;
  /** The LLM calls, retries and waits included. */
  llm_ms: number;
}

export interface ErrorCodeInfo {
  code: ErrorCode;
  http_status: number;
  retryable: boolean;
}

/** The core's defaults, limits, error codes and prompt texts. */
export interface Defaults {
  load: { weights: Weights };
  search: Required<SearchOptions>;
  frame: Required<FrameOptions>;
  context: Required<ContextOptions>;
  ask: Required<Omit<AskOptions, 'llm' | 'signal' | 'on_context' | 'on_token' | 'on_retry' | 'fetch' | 'random'>>;
  limits: {
    max_query_bytes: number;
    max_k: number;
    max_depth: number;
    max_token_budget: number;
    max_rerank_depth: number;
    max_request_bytes: number;
  };
  /** The names each enumerated option accepts, and the purposes a search runs for. */
  names: {
    mode: Mode[];
    fusion: string[];
    vector_search: string[];
    page_score: string[];
    weights: Weights[];
    purpose: ('search' | 'context' | 'ask')[];
  };
  /** What a document may cost (`sextant.toml` `[input]`): globs, file size, HTML nesting, front
   *  matter. The research workspace checks files against it before it reads them. */
  input: {
    include: string[];
    exclude: string[];
    max_file_bytes: number;
    max_nesting_depth: number;
    max_front_matter_values: number;
    max_front_matter_bytes: number;
    /** Front matter fields that are filters, and sort keys. */
    filters: string[];
    sort: string[];
    /** The documents' language (BCP 47), which picks the keyword analyzer; '' is English. */
    language: string;
  };
  /** research()'s defaults (`sextant-search/research`): the loop's and its LLM calls'. */
  research: ResearchDefaults;
  /** When and how a research conversation folds its earliest rounds into a summary. */
  compress: { threshold: number; target: number; batch: number; keep: number };
  /** Longest name of a knowledge base, in bytes. */
  max_base_name: number;
  /** Every text the package sends to an LLM or an agent as it is. `prompts`, `tools`,
   *  `system_prompt` and `refusal` are not in `sextant-search/keyword`'s defaults (its build
   *  frames nothing for an LLM). */
  prompts: {
    system: string;
    refusal: string;
    research_loop: string;
    research_answer_rules: string;
    research_rewrite: string;
    research_judge: string;
    conversation_summary: string;
    summary_header: string;
    tool_one_call_per_round: string;
    tool_arguments_not_json: string;
    mcp_instructions: string;
  };
  /** The tools offered to a model or an agent, their schemas generated from the options. */
  tools: {
    /** research()'s search tool, in the OpenAI `tools` format. */
    research_search: { type: 'function'; function: { name: string; description: string; parameters: JsonSchema } };
    /** The MCP server's tools (`tools/list`). */
    mcp: { name: string; title: string; description: string; inputSchema: JsonSchema; annotations: Record<string, boolean> }[];
    /** Passages an MCP search returns by default, and at most. */
    mcp_k: number;
    mcp_max_k: number;
  };
  error_codes: ErrorCodeInfo[];
  system_prompt: string;
  refusal: string;
}

/** A JSON Schema, as the core generates it for a tool's arguments. */
export interface JsonSchema {
  type: string;
  properties?: Record<string, JsonSchema & { description?: string; default?: unknown; enum?: unknown[]; minimum?: number; maximum?: number; items?: JsonSchema }>;
  required?: string[];
  additionalProperties?: boolean;
  [key: string]: unknown;
}

/** research()'s defaults: `defaults().research`. */
export interface ResearchDefaults {
  /** Passages a search returns unless the model asks for another number. */
  k: number;
  /** Most passages the model may ask one search for. */
  max_k: number;
  /** Searches the tool loop may run for one question. */
  max_tool_calls: number;
  /** Model tokens of the passages the answer reads. */
  token_budget: number;
  /** Fewest tokens one search's passages get (half of token_budget, at least this). */
  min_search_budget: number;
  /** Longest search query taken from the model, in characters. */
  max_query_chars: number;
  /** 'llm': the same LLM reranks each search's results (`rerank: 'llm'`); 'none' (default). */
  rerank: 'none' | 'llm';
  timeout_ms: number;
  max_tries: number;
  temperature: number;
  max_answer_bytes: number;
  max_sse_line_bytes: number;
}

export class Sextant {
  private constructor();
  static load(options: LoadOptions): Promise<Sextant>;
  /** Attaches the index's model later (keyword search works before). */
  loadModel(options: Omit<LoadOptions, 'index'> & { model: Source; tokenizer: Source }): Promise<void>;
  /** Attaches a cross-encoder of yours: every search reranks its best `rerank_depth` results with it. */
  loadReranker(options: { model: Source; tokenizer: Source; max_tokens?: number; on_progress?: (p: Progress) => void; fetch?: typeof fetch }): Promise<void>;
  /** Whether a model is attached (dense and hybrid search, framing, ask). */
  readonly hasModel: boolean;
  /** Bytes of index files held that `max_index_bytes` bounds (keyword shards, fragments, codes, vector blocks). */
  readonly heldBytes: number;
  /** Where this engine's spans go (`otlp` at load), or null. */
  readonly otlp: OtlpExporter | null;
  /** Fetches every file of a split index not fetched yet (for offline use). */
  prefetch(): Promise<void>;
  /** With `query_vector` (from `queryVector` of an engine with the same model, e.g. a Worker's `/embed`), hybrid and dense search need no model here. */
  search(query: string, options?: SearchOptions & LlmRerankOptions & GraphSearchOptions & { query_vector?: Float32Array | number[] }): Promise<SearchResponse>;
  /** The vector a hybrid (or dense) search of `query` embeds; needs the model. */
  queryVector(query: string, options?: SearchOptions): Promise<Float32Array>;
  frame(results: Pick<SearchResult, 'chunk_id' | 'url' | 'text'>[], options?: FrameOptions): Framed;
  context(question: string, options?: ContextOptions & LlmRerankOptions & GraphSearchOptions): Promise<ContextResponse>;
  ask(question: string, options: AskOptions): Promise<Answer>;
  /** A knowledge graph built for this index outside its manifest (the research workspace's, for a collection), for `graph`. */
  attachGraph(bytes: Uint8Array | ArrayBuffer): void;
  /** The bytes of this index's knowledge graph from a merged draft (`graphDraft`), embedded with this model (every chunk held: a collection's index). */
  graphFile(draft: unknown): Uint8Array;
  /** The chunks with these numbers (as a graph cites them), each `{number, found}` with `found` as get() gives a chunk. */
  chunksNumbered(numbers: number[]): Promise<{ number: number; found: Found }[]>;
  manifest(): Record<string, unknown>;
  embed(text: string): Float32Array;
  tokenIds(text: string): Uint32Array;
  /** The chunk or whole document with this id, or null. */
  get(id: string): Promise<Found | null>;
  /** Uses another Sextant's model (an index built with the same model): one copy in memory. */
  shareModel(other: Sextant): void;
  free(): void;
}

/** A chunk or a whole document, found by id. */
export interface Found {
  id: string;
  kind: 'chunk' | 'document';
  doc_id: string;
  title: string;
  source: string;
  url: string;
  heading_path: string[];
  /** The chunk's text, or the document's chunks' texts separated by blank lines. */
  text: string;
  chunk_ids: string[];
}

/** A base that did not load, or did not answer a query. */
export interface BaseFailure {
  base: string;
  code: ErrorCode;
  message: string;
}

export interface BaseResult extends SearchResult {
  base: string;
  /** Its rank and score in its own base (rank and score are the fused ones when more than one
   * base answered: reciprocal rank fusion, as the bases' scores do not compare). */
  base_rank: number;
  base_score: number;
}

export interface BaseSummary {
  base: string;
  count: number;
  fallback: string[];
  did_you_mean: string | null;
  vector_method: SearchResponse['vector_method'];
  timings: StageTimings;
}

/** What a search over several bases adds: each base's part, and whether one failed. */
export interface OverBases {
  bases: BaseSummary[];
  /** A base failed to load or to answer: the others answered. */
  partial: boolean;
  failed: BaseFailure[];
}

export interface BasesSearchResponse extends OverBases {
  results: BaseResult[];
  timings: StageTimings;
  fallback: string[];
  /** The "did you mean" spelling of the base that found the most, or null when none has one. */
  did_you_mean: string | null;
}

export interface BaseChoice {
  /** The bases to search (names, or "a,b"); all by default. */
  bases?: string[] | string;
}

export type BaseInfo =
  | { base: string; loaded: true; documents: number; chunks: number; has_model: boolean; index_bytes_held: number; model: { sha256: string; dims: number }; format: { major: number; minor: number } }
  | { base: string; loaded: false; code: ErrorCode; message: string };

/** Several knowledge bases built with the same model, searched alone or together. */
export class Bases {
  private constructor();
  /** `weight` (over 0, at most 100; default 1) multiplies a base's fused scores, as a merged site's weight. */
  static load(options: Omit<LoadOptions, 'index'> & { bases: { name: string; index: Source; weight?: number; fetch?: typeof fetch; max_index_bytes?: number }[] }): Promise<Bases>;
  readonly names: string[];
  readonly failed: BaseFailure[];
  base(name: string): Sextant | undefined;
  describe(): BaseInfo[];
  /** With `query_vector` (a Worker's `/embed`), every base searches with it and needs no model. */
  search(query: string, options?: SearchOptions & LlmRerankOptions & BaseChoice & { query_vector?: Float32Array | number[] }): Promise<BasesSearchResponse>;
  context(question: string, options?: ContextOptions & LlmRerankOptions & BaseChoice): Promise<ContextResponse & OverBases & { results: BaseResult[] }>;
  ask(question: string, options: AskOptions & BaseChoice): Promise<Answer & OverBases>;
  /** `base:chunk_id` (or {base}) → the chunk or document, or null. */
  get(id: string, options?: { base?: string }): Promise<(Found & { base: string }) | null>;
}

/** Throws BAD_ARGUMENT unless each name is a knowledge base's (letters, digits, '.', '_', '-') and none is given twice. */
export function checkBaseNames(names: string[]): void;
/** The bases a request chose among `names` (`requested`: names, "a,b", or null/undefined for all), each once. */
export function selectBases(names: string[], requested?: string[] | string | null): string[];
/** `base:id` when there are several bases (`several`), else `id`: the id an LLM or an agent reads. */
export function qualifyId(base: string, id: string, several: boolean): string;
/** [base, id]: the base holding an id from results (`base` when given, else the `base:` prefix) and its id there. */
export function splitQualifiedId(id: string, base: string | undefined, names: string[]): [string, string];
export function ready(): Promise<void>;
/** Bytes of WebAssembly linear memory in use (it only grows), or null before ready(). */
export function memoryBytes(): number | null;
export function defaults(): Defaults;
export function verifyCitations(answer: string, sent: string[] | Pick<SearchResult, 'chunk_id'>[]): CitationReport;
/** The words of `text` keyword search matched for `query`, as [start, end] string offsets. */
/** `analyzer`: the index's (`manifest().analyzer`, each language's own); English by default. */
export function highlights(text: string, query: string, analyzer?: string): [number, number][];
export function fetchBytes(
  url: string,
  file: string,
  on_progress?: (progress: Progress) => void,
  fetchImpl?: typeof fetch,
): Promise<Uint8Array>;
export function redact(text: string, secrets?: string[]): string;
export function readChatStream(
  body: ReadableStream<Uint8Array>,
  on_delta: (text: string) => void,
  limits?: { max_line_bytes?: number; max_answer_bytes?: number },
): Promise<{ usage: Answer['usage']; finish_reason: string | null; malformed: number; complete: boolean; overflow: boolean }>;
export function retryAfterMs(header: string | null, now?: number): number | null;
export function backoffMs(attempt: number, random?: () => number): number;
