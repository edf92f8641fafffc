// Collections: indexes built where the documents are (a page, a Web Worker, Node), with the
// same core as `sextant build`: the same files give the same chunks, keyword index and results
// (the int8 vectors may differ in the last bits: wasm's float arithmetic is not the CPU's).
// Files are chunked when added; their chunks are embedded by embed(), a few at a time, so the
// caller can show progress, pause (stop and call embed() again later) and cancel (an
// AbortSignal); keyword search works from the moment a file is added, hybrid once every chunk
// has its vector. Vectors are kept by the digest of their text, so removing or re-adding a file
// never embeds unchanged text again; vectors() saves them and loadVectors() restores them.
import init, * as wasm from './sextant_collection.js';
import { call, makeApi, SextantError, fetchBytes } from './core.js';

const isNode = typeof process !== 'undefined' && Boolean(process.versions?.node) && typeof window === 'undefined';
const wasmUrl = new URL('./sextant_collection_bg.wasm', import.meta.url);
const api = makeApi(wasm, async () => {
  if (isNode) {
    const { readFile } = await import('node:fs/promises');
    return init({ module_or_path: await readFile(wasmUrl) });
  }
  return init({ module_or_path: wasmUrl });
});

export const { Sextant, verifyCitations, highlights, defaults, ready, memoryBytes } = api;
export { SextantError };

async function bytesOf(value, file, fetchImpl) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof Blob !== 'undefined' && value instanceof Blob) return new Uint8Array(await value.arrayBuffer());
  return fetchBytes(value, file, undefined, fetchImpl);
}

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

export class Collection {
  #inner;
  #engine = null; // the Sextant over the current index, rebuilt after a change
  #engineIsPartial = false;

  constructor(inner) {
    this.#inner = inner;
  }

  /**
   * An empty collection embedding with `model` and `tokenizer` (URLs, bytes or Blobs: the
   * model.onnx and tokenizer.json that `sextant build` uses, so its indexes and this one agree).
   * `config` is sextant.toml's content as an object (e.g. `{ chunking: { max_tokens: 200 } }`).
   */
  static async create({ model, tokenizer, config, fetch: fetchImpl = globalThis.fetch } = {}) {
    if (model == null || tokenizer == null) throw new SextantError('BAD_ARGUMENT', 'Collection.create() needs model and tokenizer (URLs, bytes or Blobs)');
    const [modelBytes, tokenizerBytes] = await Promise.all([bytesOf(model, 'model', fetchImpl), bytesOf(tokenizer, 'tokenizer', fetchImpl), ready()]);
    return new Collection(call(() => new wasm.Collection(modelBytes, tokenizerBytes, config)));
  }

  #changed() {
    this.#engine?.free();
    this.#engine = null;
  }

  /**
   * Adds (or replaces) the file at `path` (`/`-separated, relative, e.g. `notes/a.md`):
   * Markdown/MDX, HTML, text or BEIR-style JSONL, chosen by extension. Returns
   * `{path, documents, chunks, pending}`. A file that cannot be read is BAD_ARGUMENT with the
   * reason, and changes nothing.
   */
  async addFile(path, content) {
    const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : await bytesOf(content, path);
    const summary = call(() => this.#inner.addFile(String(path), bytes));
    this.#changed();
    return summary;
  }

  /**
   * Adds documents read elsewhere under the file `path` (a PDF's pages, a DOCX's text), each
   * `{id, source, url, title, metadata, sections: [{heading_path, anchor, text}]}`.
   */
  addDocuments(path, documents) {
    const summary = call(() => this.#inner.addDocuments(String(path), documents));
    this.#changed();
    return summary;
  }

  /** Removes the file at `path` and its documents; false if there was none. */
  removeFile(path) {
    const removed = this.#inner.removeFile(String(path));
    if (removed) this.#changed();
    return removed;
  }

  /** Every file: `{path, documents, chunks, pending}`, in the order `sextant build` reads them. */
  files() {
    return call(() => this.#inner.files());
  }

  /** Chunk texts still to embed. */
  get pending() {
    return this.#inner.pendingCount();
  }

  /**
   * Embeds the pending chunks, `batch` at a time, yielding to the event loop between batches.
   * on_progress({done, total}) after each batch; `signal` stops it between batches with
   * ABORTED (what was embedded stays). Resolves with the number embedded.
   */
  async embed({ batch = 4, on_progress, signal } = {}) {
    const total = this.pending;
    let done = 0;
    while (done < total) {
      if (signal?.aborted) throw new SextantError('ABORTED', `embedding stopped after ${done} of ${total} chunks; call embed() again to go on`);
      const n = call(() => this.#inner.embedPending(Math.max(1, batch | 0)));
      if (n === 0) break;
      done += n;
      this.#changed();
      on_progress?.({ done, total });
      await nextTask();
    }
    return done;
  }

  #searcher() {
    const partial = this.pending > 0;
    if (!this.#engine || this.#engineIsPartial !== partial) {
      this.#engine?.free();
      this.#engine = api.wrapEngine(call(() => this.#inner.engine(true)));
      this.#engineIsPartial = partial;
    }
    return this.#engine;
  }

  /**
   * Searches the collection: `{results, timings, vector_method, mode}`. While chunks are pending
   * the search is by keyword whatever the mode asked (`mode` says which ran); once every chunk is
   * embedded, as asked (hybrid by default).
   */
  async search(query, options = {}) {
    const searcher = this.#searcher();
    const mode = this.#engineIsPartial ? 'keyword' : (options.mode ?? 'hybrid');
    const response = await searcher.search(query, { ...options, mode });
    return { ...response, mode };
  }

  /** The collection's index as one packed file (`.sxt`) that `sextant search`, Node and the
   * Worker load; NOT_READY while chunks are pending. */
  export() {
    if (this.pending > 0) throw new SextantError('NOT_READY', `${this.pending} chunks are not embedded yet; await embed() before exporting`);
    return call(() => this.#inner.build(false));
  }

  /** The vectors computed so far (bytes to save beside the files). */
  vectors() {
    return this.#inner.vectors();
  }

  /** Restores saved vectors; damaged bytes are CORRUPT_BUNDLE and change nothing. */
  loadVectors(bytes) {
    const n = call(() => this.#inner.loadVectors(bytes));
    this.#changed();
    return n;
  }

  /** Forgets vectors that no file needs any more (after removals). */
  pruneVectors() {
    this.#inner.pruneVectors();
  }

  /** Releases the WebAssembly memory. */
  free() {
    this.#engine?.free();
    this.#engine = null;
    this.#inner?.free();
    this.#inner = undefined;
  }
}
