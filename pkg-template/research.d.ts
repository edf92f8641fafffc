// Types of `sextant-search/research`: cited research answers over a collection (see research.js).
import type { Collection, CollectionSearchResponse } from './collection.js';
import type { CitationSpan, Defaults, GraphLine, ResearchDefaults, SearchResult } from './index.js';

/** research()'s options: the core's research options (`defaults().research`), each optional, and the host's. */
export interface ResearchOptions extends Partial<ResearchDefaults> {
  collection: Pick<Collection, 'search' | 'frame'>;
  llm: { base_url: string; model: string; api_key?: string; headers?: Record<string, string> };
  /** Earlier turns as chat messages: context for the model, never evidence. */
  history?: { role: 'user' | 'assistant' | 'system'; content: string }[];
  /** false: the fixed pipeline, for models without tool calling. */
  tools?: boolean;
  /** true: each search reads the collection's knowledge graph too, once one is built and current (`collection.buildGraph`). */
  graph?: boolean;
  signal?: AbortSignal;
  on_token?: (delta: string) => void;
  on_event?: (entry: TraceEntry) => void;
  fetch?: typeof fetch;
  random?: () => number;
}

export type TraceEntry =
  | { kind: 'model'; step: string; ms: number; usage?: Record<string, number> | null; retries: { attempt: number; status: number; wait_ms: number }[]; error?: { code: string; message: string } }
  | { kind: 'tool'; name: string | null; via?: 'tool' | 'pipeline'; args?: unknown; ms?: number; results?: number; mode?: CollectionSearchResponse['mode']; rerank?: { depth: number; calls: number; ms: number; fallback: { code: string; message: string } | null }; graph?: { used: boolean; lines: GraphLine[]; calls: number; ms: number; fallback: { code: string; message: string } | null }; error?: { error_type: string; message: string; retryable: boolean } }
  | { kind: 'path'; path: 'tools' | 'pipeline'; reason: string };

export interface ResearchAnswer {
  answer: string;
  /** True when the answer cites a passage not retrieved for this question, or none. */
  refused: boolean;
  refusal: string | null;
  citations: { chunk_id: string; title: string | null; source: string | null; heading_path: string[] }[];
  unknown_citations: string[];
  /** Where each citation is in the answer (string offsets), as the core located it. */
  spans: CitationSpan[];
  path: 'tools' | 'pipeline';
  path_reason: string;
  evidence: SearchResult[];
  trace: TraceEntry[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

export function research(question: string, options: ResearchOptions): Promise<ResearchAnswer>;

export interface Round {
  question: string;
  /** The verified answer, or null (a refusal): what the model sees of the round. */
  answer?: string | null;
  [key: string]: unknown;
}

/** A research conversation: every round kept whole, a summary of the earliest as context. */
export class Conversation {
  /** `count_tokens`: the model's tokenizer, e.g. `(text) => collection.countTokens(text)` (needed to measure the context). */
  constructor(saved?: { rounds?: Round[]; summary?: string | null; compressed?: number }, options?: { count_tokens?: (text: string) => number });
  rounds: Round[];
  summary: string | null;
  /** How many of the earliest rounds the summary covers. */
  compressed: number;
  toJSON(): { rounds: Round[]; summary: string | null; compressed: number };
  add(round: Round): void;
  /** The messages the model gets before a new question: the summary (not evidence), then the recent rounds. */
  history(): { role: 'user' | 'assistant' | 'system'; content: string }[];
  contextTokens(): number;
  /** Folds the earliest rounds into the summary when the context is over `threshold` (`defaults().compress`). */
  compress(options: Pick<ResearchOptions, 'llm' | 'timeout_ms' | 'max_tries' | 'temperature' | 'max_answer_bytes' | 'max_sse_line_bytes' | 'signal' | 'fetch' | 'random' | 'on_event'> & Partial<Defaults['compress']>): Promise<{ compressed: number; trace: TraceEntry[]; error?: { code: string; message: string } }>;
}
