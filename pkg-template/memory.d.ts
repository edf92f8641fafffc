// Types of `sextant-search/memory`: an agent's memory over a Collection (see memory.js).
import type { CollectionStorage, Source } from './collection.js';
export { folderStorage } from './collection.js';
import type { Mode } from './index.js';

/** The longest key, in UTF-16 units. */
export const MAX_KEY_LENGTH: number;
/** The most bytes of one value's JSON. */
export const MAX_VALUE_BYTES: number;

export interface MemoryOptions {
  /** A whole model.onnx (URL, bytes or Blob): every value is embedded. */
  model: Source;
  tokenizer: Source;
  /** Where it is kept: this browser's OPFS by default; in Node, `folderStorage(dir)`. */
  storage?: CollectionStorage;
  fetch?: typeof fetch;
}

/** A value found by `search`. */
export interface Recalled {
  key: string;
  value: unknown;
  /** Its score in the search (hybrid: the fused score). */
  score: number;
  /** The text that was searched (the value, or its JSON). */
  text: string;
}

export class Memory {
  /** Opens (or creates) the memory `name`, with what was set before. */
  static open(name: string, options: MemoryOptions): Promise<Memory>;
  /** A memory kept only in this page or process. */
  static create(options: Omit<MemoryOptions, 'storage'>): Promise<Memory>;
  /** Keeps `value` (JSON) under `key`, replacing what was there; searchable at once. */
  set(key: string, value: unknown): Promise<void>;
  /** The value under `key`, or undefined. */
  get(key: string): Promise<unknown>;
  /** Removes `key`; false if it was not there. */
  delete(key: string): Promise<boolean>;
  /** Every key, sorted. */
  keys(): string[];
  /** The values closest to `text` by meaning and keyword, best first. */
  search(text: string, options?: { k?: number; mode?: Mode }): Promise<Recalled[]>;
  /** Resolves when every change is in storage. */
  flush(): Promise<void>;
  free(): void;
}
