// Types of `sextant-search/collection`: indexes built where the documents are (see collection.js).
import type { Mode, OtlpExporter, OtlpOptions, ResearchDefaults, SearchOptions, SearchResponse, SearchResult } from './index.js';
export { Sextant, SextantError, verifyCitations, highlights, defaults, ready, memoryBytes } from './index.js';

/** Model files: URLs, bytes or Blobs. */
export type Source = string | URL | Uint8Array | ArrayBuffer | Blob;

/** One file of a collection. */
export interface FileSummary {
  /** Its path, `/`-separated (the id of its document). */
  path: string;
  /** Documents it holds (JSONL: one a line). */
  documents: number;
  /** Chunks cut from it. */
  chunks: number;
  /** Of those, chunks not embedded yet. */
  pending: number;
}

/** A document read outside the core (a PDF's pages as sections). */
export interface DocumentInput {
  id: string;
  source: string;
  url?: string | null;
  title: string;
  metadata?: Record<string, string>;
  sections: { heading_path: string[]; anchor?: string | null; text: string }[];
}

export interface CreateOptions {
  model: Source;
  tokenizer: Source;
  /** sextant.toml's content as an object. */
  config?: Record<string, unknown>;
  /** Send `rag.ingest` (each file added) and `rag.embed` (each embedding run) spans to an
   *  OpenTelemetry collector (OTLP/JSON), as `Sextant.load`'s `otlp`. */
  otlp?: OtlpOptions | OtlpExporter;
  fetch?: typeof fetch;
}

export interface EmbedOptions {
  /** Chunks per step between yields (default 4). */
  batch?: number;
  /**
   * Threads to embed on, this one included: in a browser the rest are Web Workers with their own
   * wasm instance and model, started on the first call and ended by `free()` (default
   * `navigator.hardwareConcurrency`, at most 8; 1 in Node). The vectors are the same whatever
   * the count.
   */
  workers?: number;
  /** After each step: chunks done of `total`, the rate so far, the time left at that rate and the threads embedding by then. */
  on_progress?: (progress: { done: number; total: number; chunks_per_s: number; seconds_left: number | null; workers: number }) => void;
  /** Stops between steps with ABORTED; what was embedded stays. */
  signal?: AbortSignal;
  /** While it returns true no new step starts (e.g. while the tab is hidden). */
  paused?: () => boolean;
  /** With storage: vectors are saved at least this often while embedding (default 5000). */
  save_every_ms?: number;
}

export interface CollectionSearchResponse extends SearchResponse {
  /** The mode that ran: keyword while chunks are pending. */
  mode: Mode;
}

/** Where an opened collection keeps its files and vectors. */
export interface CollectionStorage {
  list(): Promise<string[]>;
  read(name: string): Promise<Uint8Array | null>;
  write(name: string, bytes: Uint8Array): Promise<void>;
  remove(name: string): Promise<void>;
}

/** An OpenAI-style tool call of the research loop (`{id, type, function: {name, arguments}}`). */
export interface ToolCall {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string | Record<string, unknown> };
}

/** What a research tool call becomes (the core's rules): a search, or an error the model reads. */
export type ToolStep =
  | { search: { query: string; k: number }; error?: undefined }
  | { error: { error_type: 'one_call_per_round' | 'unknown_tool' | 'bad_arguments'; message: string; retryable: boolean }; search?: undefined };

/** The research loop's rules, from the core (research.js runs them); `options` are `defaults().research`'s names. */
export function researchToolCall(call: ToolCall, position: number, options?: Partial<ResearchDefaults>): ToolStep;
/** The search query in the model's answer to the rewrite prompt, or undefined. */
export function researchQuery(answer: string, options?: Partial<ResearchDefaults>): string | undefined;
/** The better query the judge asks for, or null when the evidence is enough. */
export function researchJudged(answer: string, options?: Partial<ResearchDefaults>): string | undefined;
/** Why a research answer is not shown as verified, or undefined when it is. */
export function researchRefusal(unknown: string[], cited: number, sent: number): string | undefined;

export function opfsStorage(name: string): CollectionStorage;
/** A folder as a collection's storage, for Node (each stored file a file in `dir`). */
export function folderStorage(dir: string): CollectionStorage;
export function listCollections(): Promise<string[]>;
export function deleteCollection(name: string): Promise<void>;
export function storageInfo(options?: { persist?: boolean }): Promise<{ usage: number | null; quota: number | null; persisted: boolean }>;

export class Collection {
  static create(options: CreateOptions): Promise<Collection>;
  /** Opens (or creates) a named collection kept in `storage` (default: OPFS), writing changes through. */
  static open(name: string, options: CreateOptions & { storage?: CollectionStorage }): Promise<Collection>;
  addFile(path: string, content: string | Uint8Array | ArrayBuffer | Blob): Promise<FileSummary>;
  addDocuments(path: string, documents: DocumentInput[], options?: { original?: Uint8Array | ArrayBuffer | Blob }): Promise<FileSummary>;
  /** HTML made from another format (a DOCX), read by the core's HTML loader. */
  addHtml(path: string, html: string, options?: { original?: Uint8Array | ArrayBuffer | Blob }): Promise<FileSummary>;
  /**
   * Imports an index `sextant build` wrote (a packed `.sxt`) as the file `path`: its chunks as
   * they are, and its vectors when built with this model (`vectors` says how many came).
   */
  importIndex(path: string, content: Uint8Array | ArrayBuffer | Blob | string | URL): Promise<FileSummary & { vectors: number }>;
  /** The original bytes kept for a file added with `original`, or null. */
  original(path: string): Promise<Uint8Array | null>;
  removeFile(path: string): Promise<boolean>;
  files(): FileSummary[];
  readonly pending: number;
  /** Where this collection's spans go (`otlp`), or null. */
  readonly otlp: OtlpExporter | null;
  /** What the model is still to read (chunk texts; after their title and headings with `fields.embed_context`), each once, in build order. */
  pendingTexts(): string[];
  embed(options?: EmbedOptions): Promise<number>;
  search(query: string, options?: SearchOptions): Promise<CollectionSearchResponse>;
  /** The model tokens of `text`, counted by the collection's tokenizer (as chunking and framing count). */
  countTokens(text: string): number;
  /** The chunk or whole document with this id (as `Sextant.get`), or null. */
  get(id: string): Promise<import('./index.js').Found | null>;
  /** Whether a knowledge graph was built (buildGraph), and whether it is the collection's as it is now. */
  graphState(): { built: boolean; current: boolean };
  /** Builds the collection's knowledge graph with your LLM (every chunk embedded first); each chunk's extraction is kept, so a stopped build resumes and a grown collection asks only about new chunks. `search(q, {graph: true})` and `research(q, {graph: true})` then read it. */
  buildGraph(options: { llm: { base_url: string; model: string; api_key?: string; headers?: Record<string, string> }; gleaning?: 0 | 1 | 2; concurrency?: number; signal?: AbortSignal; on_progress?: (p: { done: number; total: number; calls: number; tokens: number; seconds_left: number | null }) => void; fetch?: typeof fetch }): Promise<{ entities: number; relations: number; chunks: number; skipped: number; cached: number; calls: number; tokens: number; failed: number; last_error?: { code: string; message: string } }>;
  /** The results as injection-safe `<retrieved_context>` blocks, as `Sextant.frame` does. */
  frame(results: SearchResult[], options?: { token_budget?: number }): { context: string; included: string[]; omitted: string[]; tokens: number; budget: number; system_prompt: string };
  /** The packed index (.sxt) that `sextant search`, Node and the Worker load. */
  export(): Uint8Array;
  vectors(): Uint8Array;
  loadVectors(bytes: Uint8Array): number;
  pruneVectors(): Promise<void>;
  /** Resolves when every change so far is in storage. */
  flush(): Promise<void>;
  /** After open(): stored entries that no longer read, with why. */
  skipped?: { entry: string; code: string; message: string }[];
  free(): void;
}
