// Types of the sextant package (the same for the browser, Node and workerd entries).

/** Error codes: CORRUPT_BUNDLE, UNSUPPORTED_VERSION, MODEL_MISMATCH, BAD_MODEL, BAD_ARGUMENT,
 *  NO_MODEL, NOT_READY, FETCH_FAILED, EMBED_FAILED, ABORTED, LLM_BAD_URL, LLM_UNREACHABLE,
 *  LLM_AUTH, LLM_HTTP, LLM_UNAVAILABLE, LLM_TIMEOUT, LLM_BAD_RESPONSE, INTERNAL. */
export class SextantError extends Error {
  code: string;
  status?: number;
}

export type Bytes = ArrayBuffer | Uint8Array;
export type Source = string | URL | Bytes;
export type Mode = 'hybrid' | 'dense' | 'keyword';

export interface Progress {
  file: 'bundle' | 'model' | 'tokenizer';
  /** Bytes received so far. */
  loaded: number;
  /** Content-Length, or null when the server did not send one. */
  total: number | null;
}

export interface LoadOptions {
  bundle: Source;
  /** model.onnx; omit with tokenizer for keyword-only search. */
  model?: Source;
  tokenizer?: Source;
  onProgress?: (progress: Progress) => void;
  /** How the model's int8 weights are held: 'f32' (default: dequantised once at load, fastest
   *  queries) or 'int8' (dequantised on every query: less memory, slower queries). */
  weights?: 'f32' | 'int8';
}

export interface SearchOptions {
  /** Results wanted, 1–1000 (default 10). */
  k?: number;
  mode?: Mode;
  /** Drop results scoring below this (RRF score in hybrid, cosine in dense, BM25 in keyword). */
  threshold?: number;
  /** Drop dense candidates with cosine below this, before fusion. */
  minSimilarity?: number;
  /** Keep only the best chunk of each document. */
  perDocument?: boolean;
  /** Candidates per retriever before fusion (default 2·k). */
  depth?: number;
  vectorSearch?: 'auto' | 'exact' | 'hnsw';
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
}

export interface SearchResponse {
  results: SearchResult[];
  /** Milliseconds per stage. */
  timings: { embed_ms: number; keyword_ms: number; vector_ms: number; fusion_ms: number; total_ms: number };
  vector_method: 'exact' | 'hnsw' | null;
}

export interface Framed {
  context: string;
  included: string[];
  omitted: string[];
  tokens: number;
  budget: number;
  systemPrompt: string;
}

export interface Citation {
  chunk_id: string;
  valid: boolean;
  count: number;
}

export interface CitationReport {
  citations: Citation[];
  valid: string[];
  unknown: string[];
  grounded: boolean;
}

export interface LlmConfig {
  /** An OpenAI-compatible API root, e.g. https://api.openai.com/v1 (POST {baseUrl}/chat/completions). */
  baseUrl: string;
  /** Sent only to baseUrl as a bearer token; never logged or stored. */
  apiKey?: string;
  model: string;
  headers?: Record<string, string>;
}

export interface AskOptions {
  llm: LlmConfig;
  k?: number;
  tokenBudget?: number;
  mode?: Mode;
  threshold?: number;
  /** Dense candidates below this cosine are not evidence (default 0.3). */
  minSimilarity?: number;
  signal?: AbortSignal;
  /** Whole-request timeout in ms (default 60000; 0 for none). */
  timeoutMs?: number;
  onToken?: (text: string) => void;
  onRetry?: (info: { attempt: number; status: number; waitMs: number }) => void;
  /** Tries for 429 and 5xx answers (default 3). */
  maxTries?: number;
  temperature?: number;
  fetch?: typeof fetch;
}

export interface Answer {
  answer: string;
  citations: (Citation & { url: string | null; title: string | null })[];
  unknownCitations: string[];
  /** At least one citation points at a chunk that was sent. */
  grounded: boolean;
  /** Nothing relevant was retrieved, so the LLM was not called. */
  refused: boolean;
  /** The chunks sent to the LLM. */
  chunks: SearchResult[];
  usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null;
  malformedEvents?: number;
  finishReason?: string | null;
}

export class Sextant {
  static load(options: LoadOptions): Promise<Sextant>;
  search(query: string, options?: SearchOptions): SearchResponse;
  frame(results: SearchResult[], options?: { tokenBudget?: number }): Framed;
  context(query: string, options?: SearchOptions & { tokenBudget?: number }): Framed & { results: SearchResult[] };
  ask(question: string, options: AskOptions): Promise<Answer>;
  manifest(): Record<string, unknown>;
  embed(text: string): Float32Array;
  tokenIds(text: string): Uint32Array;
  free(): void;
}

export function ready(): Promise<void>;
/** Bytes of WebAssembly linear memory in use (it only grows), or null before ready(). */
export function memoryBytes(): number | null;
export function verifyCitations(answer: string, sent: string[] | SearchResult[]): CitationReport;
export function systemPrompt(): string;
export function readChatStream(
  body: ReadableStream<Uint8Array>,
  onDelta: (text: string) => void,
): Promise<{ usage: Answer['usage']; finishReason: string | null; malformed: number }>;
export function retryAfterMs(header: string | null, now?: number): number | null;
export function backoffMs(attempt: number, random?: () => number): number;
