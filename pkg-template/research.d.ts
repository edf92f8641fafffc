// Types of `sextant-search/research`: cited research answers over a collection (see research.js).
import type { Collection, CollectionSearchResponse } from './collection.js';
import type { SearchResult } from './index.js';

export interface ResearchOptions {
  collection: Pick<Collection, 'search' | 'frame'>;
  llm: { base_url: string; model: string; api_key?: string };
  /** Earlier turns as chat messages: context for the model, never evidence. */
  history?: { role: 'user' | 'assistant' | 'system'; content: string }[];
  k?: number;
  /** Search calls the model may make for one question (default 5). */
  max_tool_calls?: number;
  /** false: the fixed pipeline, for models without tool calling. */
  tools?: boolean;
  token_budget?: number;
  timeout_ms?: number;
  max_tries?: number;
  max_answer_bytes?: number;
  signal?: AbortSignal;
  on_token?: (delta: string) => void;
  on_event?: (entry: TraceEntry) => void;
  fetch?: typeof fetch;
  random?: () => number;
}

export type TraceEntry =
  | { kind: 'model'; step: string; ms: number; usage?: Record<string, number> | null; retries: { attempt: number; status: number; wait_ms: number }[]; error?: { code: string; message: string } }
  | { kind: 'tool'; name: string | null; via?: 'tool' | 'pipeline'; args?: unknown; ms?: number; results?: number; mode?: CollectionSearchResponse['mode']; error?: { error_type: string; message: string; retryable: boolean } }
  | { kind: 'path'; path: 'tools' | 'pipeline'; reason: string };

export interface ResearchAnswer {
  answer: string;
  /** True when the answer cites a passage not retrieved for this question, or none. */
  refused: boolean;
  refusal: string | null;
  citations: { chunk_id: string; title: string | null; source: string | null; heading_path: string[] }[];
  unknown_citations: string[];
  path: 'tools' | 'pipeline';
  path_reason: string;
  evidence: SearchResult[];
  trace: TraceEntry[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

export function research(question: string, options: ResearchOptions): Promise<ResearchAnswer>;

/** Tokens of a text, estimated (about four characters a token). */
export function estimateTokens(text: string): number;

export interface Round {
  question: string;
  /** The verified answer, or null (a refusal): what the model sees of the round. */
  answer?: string | null;
  [key: string]: unknown;
}

/** A research conversation: every round kept whole, a summary of the earliest as context. */
export class Conversation {
  constructor(saved?: { rounds?: Round[]; summary?: string | null; compressed?: number });
  rounds: Round[];
  summary: string | null;
  /** How many of the earliest rounds the summary covers. */
  compressed: number;
  toJSON(): { rounds: Round[]; summary: string | null; compressed: number };
  add(round: Round): void;
  /** The messages the model gets before a new question: the summary (not evidence), then the recent rounds. */
  history(): { role: 'user' | 'assistant' | 'system'; content: string }[];
  contextTokens(): number;
  compress(options: Pick<ResearchOptions, 'llm' | 'timeout_ms' | 'max_tries' | 'signal' | 'fetch' | 'random' | 'on_event'> & { threshold?: number; target?: number; batch?: number; keep?: number }): Promise<{ compressed: number; trace: TraceEntry[]; error?: { code: string; message: string } }>;
}
