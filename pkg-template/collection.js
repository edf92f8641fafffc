// Collections: indexes built where the documents are (a page, a Web Worker, Node), with the
// same core as `sextant build`: the same files give the same index, byte for byte (passages are
// embedded with integer products and fixed-order sums, the same bits in wasm as natively).
// Files are chunked when added; their chunks are embedded by embed(), a few at a time, so the
// caller can show progress, pause (stop and call embed() again later) and cancel (an
// AbortSignal); keyword search works from the moment a file is added, hybrid once every chunk
// has its vector. Vectors are kept by the digest of their text, so removing or re-adding a file
// never embeds unchanged text again; vectors() saves them and loadVectors() restores them.
import init, * as wasm from './sextant_collection.js';
import { OtlpExporter, collectionSpans } from './otlp.js';
import { SextantError, call } from './errors.js';
import { fetchBytes } from './fetching.js';
import { makeApi } from './core.js';
import { extractChunks, sha256Hex } from './graph.js';

const isNode = typeof process !== 'undefined' && Boolean(process.versions?.node) && typeof window === 'undefined';
const wasmUrl = new URL('./sextant_collection_bg.wasm', import.meta.url);
const api = makeApi(wasm, async () => {
  if (isNode) {
    const { readFile } = await import('node:fs/promises');
    return init({ module_or_path: await readFile(wasmUrl) });
  }
  return init({ module_or_path: wasmUrl });
});

export const { Sextant, verifyCitations, highlights, defaults, ready, memoryBytes, researchToolCall, researchQuery, researchJudged, researchRefusal } = api;
export { SextantError };

async function bytesOf(value, file, fetchImpl) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (typeof Blob !== 'undefined' && value instanceof Blob) return new Uint8Array(await value.arrayBuffer());
  return fetchBytes(value, file, undefined, fetchImpl);
}

const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** How often a paused embedding loop looks whether it may go on. */
const PAUSE_POLL_MS = 250;

/** The most threads an embedding runs on by default: each holds its own copy of the model. */
const DEFAULT_MAX_WORKERS = 8;

/** Threads an embedding runs on: `workers` if given, else the browser's cores (one in Node). */
function poolSize(workers) {
  if (workers != null) return Math.max(1, Math.min(64, workers | 0));
  return isNode ? 1 : Math.max(1, Math.min(DEFAULT_MAX_WORKERS, globalThis.navigator?.hardwareConcurrency ?? 1));
}

/**
 * Starts one pool worker (embed-worker.js) and resolves once its model is loaded:
 * `{embed(texts) → Promise of vectors, terminate(), failed}`. A worker that fails later rejects
 * what it was asked and is marked `failed`.
 */
function startHelper(source) {
  const worker = new Worker(new URL('./embed-worker.js', import.meta.url), { type: 'module' });
  const waiting = new Map();
  let next = 1;
  const helper = {
    failed: false,
    embed(texts) {
      const id = next++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        worker.postMessage({ type: 'embed', id, texts });
      });
    },
    terminate() {
      worker.terminate();
    },
  };
  return new Promise((resolve, reject) => {
    const fail = (error) => {
      helper.failed = true;
      for (const w of waiting.values()) w.reject(error);
      waiting.clear();
      worker.terminate();
      reject(error);
    };
    worker.onerror = (e) => {
      e.preventDefault?.();
      fail(new SextantError('INTERNAL', `an embedding worker stopped: ${e.message || 'its script failed to load'}`));
    };
    worker.onmessage = ({ data }) => {
      if (data.type === 'loaded') return resolve(helper);
      if (data.type === 'error' && !waiting.has(data.id)) return fail(new SextantError(data.code, data.message));
      const w = waiting.get(data.id);
      waiting.delete(data.id);
      if (data.type === 'vectors') w?.resolve(data.vectors);
      else w?.reject(new SextantError(data.code, data.message));
    };
    // The model's bytes are copied to it: the caller keeps its own.
    worker.postMessage({ type: 'load', model: source.model, tokenizer: source.tokenizer, config: source.config });
  });
}

/**
 * Where a named collection keeps its files and vectors: the browser's origin-private file system
 * (OPFS), under `sextant-collections/<name>/`. Any object with the same four methods works (Node:
 * a folder; tests: memory).
 */
export function opfsStorage(name) {
  const dir = async (create) => {
    if (!globalThis.navigator?.storage?.getDirectory) {
      throw new SextantError('BAD_ARGUMENT', 'this browser has no origin-private file system (navigator.storage.getDirectory); pass a storage object to Collection.open');
    }
    const root = await navigator.storage.getDirectory();
    const all = await root.getDirectoryHandle('sextant-collections', { create });
    return all.getDirectoryHandle(name, { create });
  };
  return {
    async list() {
      const out = [];
      for await (const [entry] of (await dir(true)).entries()) out.push(entry);
      return out.sort();
    },
    async read(file) {
      try {
        const handle = await (await dir(true)).getFileHandle(file);
        return new Uint8Array(await (await handle.getFile()).arrayBuffer());
      } catch (e) {
        if (e?.name === 'NotFoundError') return null;
        throw e;
      }
    },
    // createWritable() writes to a swap file that replaces the old one on close: never half-written.
    async write(file, bytes) {
      const handle = await (await dir(true)).getFileHandle(file, { create: true });
      const writable = await handle.createWritable();
      await writable.write(bytes);
      await writable.close();
    },
    async remove(file) {
      try {
        await (await dir(true)).removeEntry(file);
      } catch (e) {
        if (e?.name !== 'NotFoundError') throw e;
      }
    },
  };
}

/**
 * A folder as a collection's storage, for Node: each stored file one file in `dir` (created when
 * first written), written to a temporary name and renamed, so never half-written.
 */
export function folderStorage(dir) {
  const fs = () => import('node:fs/promises');
  const at = (file) => `${String(dir).replace(/\/+$/, '')}/${file}`;
  const absent = (e) => e?.code === 'ENOENT';
  return {
    async list() {
      try {
        return (await (await fs()).readdir(String(dir))).filter((f) => !f.endsWith('.tmp')).sort();
      } catch (e) {
        if (absent(e)) return [];
        throw e;
      }
    },
    async read(file) {
      try {
        return new Uint8Array(await (await fs()).readFile(at(file)));
      } catch (e) {
        if (absent(e)) return null;
        throw e;
      }
    },
    async write(file, bytes) {
      const f = await fs();
      await f.mkdir(String(dir), { recursive: true });
      await f.writeFile(at(`${file}.tmp`), bytes);
      await f.rename(at(`${file}.tmp`), at(file));
    },
    async remove(file) {
      try {
        await (await fs()).unlink(at(file));
      } catch (e) {
        if (!absent(e)) throw e;
      }
    },
  };
}

const COLLECTION_NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,63}$/u;
const META = 'collection.json';
const VECTORS = 'vectors.bin';
/** The knowledge graph (buildGraph), and each chunk's extraction by its digest (so a build resumes). */
const GRAPH = 'graph.json';
const GRAPH_EXTRACTIONS = 'graph-extractions.json';
// A stored file's name: its path, escaped (no '/'), after a prefix saying how it was added.
const fileEntry = (path) => `file.${encodeURIComponent(path)}`;
const documentsEntry = (path) => `docs.${encodeURIComponent(path)}.json`;
const htmlEntry = (path) => `html.${encodeURIComponent(path)}.html`;
// The original bytes of a file read outside the core (a PDF, a DOCX), to open it at a citation.
const originalEntry = (path) => `orig.${encodeURIComponent(path)}`;
// An index `sextant build` wrote, imported as it is.
const indexEntry = (path) => `index.${encodeURIComponent(path)}.sxt`;
const entriesOf = (path) => [fileEntry(path), documentsEntry(path), htmlEntry(path), originalEntry(path), indexEntry(path)];

/** The names of the collections kept in this browser's storage (OPFS). */
export async function listCollections() {
  if (!globalThis.navigator?.storage?.getDirectory) return [];
  const root = await navigator.storage.getDirectory();
  const all = await root.getDirectoryHandle('sextant-collections', { create: true });
  const names = [];
  for await (const [name, handle] of all.entries()) if (handle.kind === 'directory') names.push(name);
  return names.sort();
}

/** Deletes a named collection from this browser's storage. */
export async function deleteCollection(name) {
  const root = await navigator.storage.getDirectory();
  const all = await root.getDirectoryHandle('sextant-collections', { create: true });
  await all.removeEntry(String(name), { recursive: true }).catch((e) => {
    if (e?.name !== 'NotFoundError') throw e;
  });
}

/**
 * The storage this origin uses and may use, and whether the browser keeps it under storage
 * pressure; `persist: true` asks for that (a browser may ask the user or decide by itself).
 */
export async function storageInfo({ persist = false } = {}) {
  const storage = globalThis.navigator?.storage;
  if (!storage) return { usage: null, quota: null, persisted: false };
  const persisted = persist && storage.persist ? await storage.persist() : await (storage.persisted?.() ?? false);
  const { usage = null, quota = null } = (await storage.estimate?.()) ?? {};
  return { usage, quota, persisted };
}

export class Collection {
  #inner;
  #engine = null; // the Sextant over the current index, rebuilt after a change
  #engineIsPartial = false;
  #storage = null; // where changes are written through (Collection.open)
  #saving = Promise.resolve();
  #source = null; // {model, tokenizer, config}: what a pool worker loads
  #pool = null; // Promise of the embedding pool's workers, once started
  #otlp = null; // where `rag.ingest` and `rag.embed` spans go (`otlp`), or null
  #graph = null; // the stored knowledge graph's bytes (buildGraph), attached to each searcher it fits
  #graphFits = false; // whether the current searcher took it (a changed collection needs a new one)

  constructor(inner, storage = null) {
    this.#inner = inner;
    this.#storage = storage;
  }

  /**
   * Opens (or creates) the collection `name` kept in `storage` (default: this browser's OPFS):
   * its files are read again and its vectors restored, so nothing is embedded twice. Every
   * later change is written through. A stored file that no longer reads is skipped and reported
   * in `skipped`; damaged vectors are dropped (those chunks are embedded again).
   */
  static async open(name, { model, tokenizer, config, storage, otlp, fetch: fetchImpl = globalThis.fetch } = {}) {
    if (!COLLECTION_NAME.test(String(name))) {
      throw new SextantError('BAD_ARGUMENT', `${JSON.stringify(name)} is not a collection name: 1 to 64 letters, digits, spaces, '.', '_' or '-', starting with a letter or digit`);
    }
    const store = storage ?? opfsStorage(String(name));
    const meta = await store.read(META);
    const saved = meta ? JSON.parse(new TextDecoder().decode(meta)) : null;
    if (saved && config && JSON.stringify(saved.config ?? null) !== JSON.stringify(config)) {
      throw new SextantError('BAD_ARGUMENT', `the collection ${JSON.stringify(name)} was made with another config; open it without one, or create a new collection`);
    }
    const effective = saved ? saved.config ?? undefined : config;
    const collection = await Collection.create({ model, tokenizer, config: effective, otlp, fetch: fetchImpl });
    collection.skipped = [];
    for (const entry of await store.list()) {
      const bytes = await store.read(entry);
      try {
        if (entry.startsWith('file.')) {
          collection.#inner.addFile(decodeURIComponent(entry.slice(5)), bytes);
        } else if (entry.startsWith('docs.') && entry.endsWith('.json')) {
          collection.#inner.addDocuments(decodeURIComponent(entry.slice(5, -5)), JSON.parse(new TextDecoder().decode(bytes)));
        } else if (entry.startsWith('html.') && entry.endsWith('.html')) {
          collection.#inner.addHtml(decodeURIComponent(entry.slice(5, -5)), new TextDecoder().decode(bytes));
        } else if (entry.startsWith('index.') && entry.endsWith('.sxt')) {
          collection.#inner.importIndex(decodeURIComponent(entry.slice(6, -4)), bytes);
        }
      } catch (e) {
        collection.skipped.push({ entry, code: e?.code ?? 'INTERNAL', message: String(e?.message ?? e) });
      }
    }
    collection.#graph = await store.read(GRAPH);
    const vectors = await store.read(VECTORS);
    if (vectors) {
      try {
        collection.#inner.loadVectors(vectors);
      } catch (e) {
        collection.skipped.push({ entry: VECTORS, code: e?.code ?? 'INTERNAL', message: String(e?.message ?? e) });
      }
    }
    if (!saved) await store.write(META, new TextEncoder().encode(JSON.stringify({ version: 1, config: config ?? null })));
    collection.#storage = store;
    return collection;
  }

  /** Runs storage writes one after another; resolves when this one is done. */
  #save(write) {
    if (!this.#storage) return Promise.resolve();
    this.#saving = this.#saving.then(write, write);
    return this.#saving;
  }

  /** Resolves when every change so far is in storage. */
  async flush() {
    await this.#saving;
  }

  /**
   * An empty collection embedding with `model` and `tokenizer` (URLs, bytes or Blobs: the
   * model.onnx and tokenizer.json that `sextant build` uses, so its indexes and this one agree).
   * `config` is sextant.toml's content as an object (e.g. `{ chunking: { max_tokens: 200 } }`).
   */
  static async create({ model, tokenizer, config, otlp, fetch: fetchImpl = globalThis.fetch } = {}) {
    if (model == null || tokenizer == null) throw new SextantError('BAD_ARGUMENT', 'Collection.create() needs model and tokenizer (URLs, bytes or Blobs)');
    const [modelBytes, tokenizerBytes] = await Promise.all([bytesOf(model, 'model', fetchImpl), bytesOf(tokenizer, 'tokenizer', fetchImpl), ready()]);
    const collection = new Collection(call(() => new wasm.Collection(modelBytes, tokenizerBytes, config)));
    collection.#source = { model: modelBytes, tokenizer: tokenizerBytes, config };
    if (otlp != null) collection.#otlp = otlp instanceof OtlpExporter ? otlp : new OtlpExporter(otlp);
    return collection;
  }

  #changed() {
    this.#engine?.free();
    this.#engine = null;
  }

  /** Reads a file into the collection; with `otlp`, a `rag.ingest` span (source, chunk_count). */
  #ingested(path, add) {
    const start_ms = Date.now();
    const summary = call(add);
    this.#otlp?.record(collectionSpans({ name: 'rag.ingest', start_ms, end_ms: Date.now(), attributes: { source: String(path), chunk_count: summary.chunks, document_count: summary.documents } }));
    return summary;
  }

  /** Where this collection's spans go (`otlp`), or null. */
  get otlp() {
    return this.#otlp;
  }

  /**
   * Adds (or replaces) the file at `path` (`/`-separated, relative, e.g. `notes/a.md`):
   * Markdown/MDX, HTML, text or BEIR-style JSONL, chosen by extension. Returns
   * `{path, documents, chunks, pending}`. A file that cannot be read is BAD_ARGUMENT with the
   * reason, and changes nothing.
   */
  async addFile(path, content) {
    const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : await bytesOf(content, path);
    const summary = this.#ingested(path, () => this.#inner.addFile(String(path), bytes));
    this.#changed();
    await this.#replaceEntries(String(path), [[fileEntry(String(path)), bytes]]);
    return summary;
  }

  /**
   * Adds documents read elsewhere under the file `path` (a PDF's pages, a DOCX's text), each
   * `{id, source, url, title, metadata, sections: [{heading_path, anchor, text}]}`.
   */
  async addDocuments(path, documents, { original } = {}) {
    const summary = this.#ingested(path, () => this.#inner.addDocuments(String(path), documents));
    this.#changed();
    const entries = [[documentsEntry(String(path)), new TextEncoder().encode(JSON.stringify(documents))]];
    if (original) entries.push([originalEntry(String(path)), await bytesOf(original, path)]);
    await this.#replaceEntries(String(path), entries);
    return summary;
  }

  /**
   * Adds HTML made from another format (a DOCX converted with mammoth) as the document `path`,
   * read by the core's HTML loader (headings become sections). `original`: the file's bytes,
   * kept to open it later (`original(path)`).
   */
  async addHtml(path, html, { original } = {}) {
    const summary = this.#ingested(path, () => this.#inner.addHtml(String(path), String(html)));
    this.#changed();
    const entries = [[htmlEntry(String(path)), new TextEncoder().encode(String(html))]];
    if (original) entries.push([originalEntry(String(path)), await bytesOf(original, path)]);
    await this.#replaceEntries(String(path), entries);
    return summary;
  }

  /**
   * Imports an index `sextant build` wrote (a packed `.sxt`: bytes, a Blob or a URL) as the file
   * `path`: its documents and chunks as they are (the same chunk ids, titles, URLs), and its
   * vectors when it was built with this collection's model, so nothing is embedded; otherwise
   * its chunks are pending. Returns `{path, documents, chunks, pending, vectors}`. A file that
   * is not a complete format-2 index is CORRUPT_BUNDLE (UNSUPPORTED_VERSION for a format-1
   * bundle: `sextant upgrade` converts it) and changes nothing.
   */
  async importIndex(path, content) {
    const bytes = await bytesOf(content, path);
    const summary = call(() => this.#inner.importIndex(String(path), bytes));
    this.#changed();
    await this.#replaceEntries(String(path), [[indexEntry(String(path)), bytes]]);
    if (summary.vectors > 0) await this.#save(() => this.#storage.write(VECTORS, this.#inner.vectors()));
    return summary;
  }

  /** The original bytes kept for `path` (a PDF or DOCX added with `original`), or null. */
  async original(path) {
    return this.#storage ? this.#storage.read(originalEntry(String(path))) : null;
  }

  /** Writes a file's entries, removing whatever else was stored for its path. */
  #replaceEntries(path, entries) {
    return this.#save(async () => {
      const keep = new Set(entries.map(([name]) => name));
      for (const name of entriesOf(path)) if (!keep.has(name)) await this.#storage.remove(name);
      for (const [name, bytes] of entries) await this.#storage.write(name, bytes);
    });
  }

  /** Removes the file at `path` and its documents; false if there was none. */
  async removeFile(path) {
    const removed = this.#inner.removeFile(String(path));
    if (removed) {
      this.#changed();
      await this.#save(async () => {
        for (const name of entriesOf(String(path))) await this.#storage.remove(name);
      });
    }
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

  /** What the model is still to read (chunk texts, after their title and headings when the
   * collection's `fields.embed_context` is on), each once, in build order (e.g. to embed elsewhere). */
  pendingTexts() {
    return call(() => this.#inner.pendingTexts());
  }

  /**
   * Embeds the pending chunks, `batch` at a time, yielding to the event loop between batches.
   * In a browser it embeds on `workers` threads (default `navigator.hardwareConcurrency`): this
   * one and `workers - 1` Web Workers, each with its own WebAssembly instance and model (started
   * on the first call, kept until `free()`; no SharedArrayBuffer needed), giving the same vectors
   * as one thread. on_progress({done, total, chunks_per_s, seconds_left, workers}) after each
   * batch (`workers`: the threads embedding by then);
   * `signal` stops it between batches with ABORTED (what was embedded stays); while `paused()`
   * says true (e.g. the tab is hidden) no new batch starts. Resolves with the number embedded.
   */
  async embed({ batch = 4, workers, on_progress, signal, paused, save_every_ms = 5000 } = {}) {
    const texts = call(() => this.#inner.pendingTexts());
    const total = texts.length;
    const spanStart = Date.now();
    const size = Math.max(1, batch | 0);
    let done = 0;
    let taken = 0;
    let threads = 1; // this one and the pool workers embedding so far
    let savedAt = Date.now();
    const started = performance.now();
    const saveVectors = () => this.#save(() => this.#storage.write(VECTORS, this.#inner.vectors()));
    const stopped = () => new SextantError('ABORTED', `embedding stopped after ${done} of ${total} chunks; call embed() again to go on`);
    /** The next batch of texts, once not paused; null when none is left or when stopped. */
    const take = async () => {
      while (paused?.() && !signal?.aborted) await new Promise((resolve) => setTimeout(resolve, PAUSE_POLL_MS));
      if (signal?.aborted || taken >= total) return null;
      const slice = texts.slice(taken, taken + size);
      taken += slice.length;
      return slice;
    };
    const keep = async (slice, vectors) => {
      slice.forEach((text, i) => call(() => this.#inner.setVector(text, vectors[i])));
      done += slice.length;
      const seconds = (performance.now() - started) / 1000;
      const rate = seconds > 0 ? done / seconds : 0;
      on_progress?.({ done, total, chunks_per_s: rate, seconds_left: rate > 0 ? (total - done) / rate : null, workers: threads });
      // With storage, vectors are saved every few seconds: a closed tab loses little work.
      if (this.#storage && Date.now() - savedAt >= save_every_ms) {
        savedAt = Date.now();
        await saveVectors();
      }
    };
    const embedHere = (slice) => slice.map((text) => call(() => this.#inner.embedPassage(text)));
    const here = async () => {
      for (let slice; (slice = await take()); ) {
        await keep(slice, embedHere(slice));
        await nextTask();
      }
    };
    // A pool worker that fails hands its batch back to this thread and takes no more.
    const helper = async (worker) => {
      threads++;
      for (let slice; (slice = await take()); ) {
        const vectors = await worker.embed(slice).catch(() => null);
        await keep(slice, vectors ?? embedHere(slice));
        if (!vectors) return;
      }
    };
    try {
      // This thread starts at once; each pool worker joins once its model is loaded.
      const helpers = total > size ? this.#helpers(poolSize(workers) - 1) : Promise.resolve([]);
      await Promise.all([here(), helpers.then((pool) => Promise.all(pool.map(helper)))]);
      if (signal?.aborted && done < total) throw stopped();
    } finally {
      // The keyword index does not change while chunks are embedded: the engine is made again
      // once, after the loop (hybrid if every chunk has its vector now).
      if (done > 0) {
        this.#changed();
        await saveVectors();
        this.#otlp?.record(collectionSpans({ name: 'rag.embed', start_ms: spanStart, end_ms: Date.now(), attributes: { provider: 'sextant', batch_size: size, text_count: done, workers: threads } }));
      }
    }
    return done;
  }

  /**
   * The pool's `count` Web Workers, started once (each loads the wasm and the model); fewer
   * where they cannot start (no module workers, or outside a browser): this thread then embeds
   * alone or with those that did.
   */
  async #helpers(count) {
    if (count <= 0 || isNode || typeof Worker === 'undefined' || !this.#source) return [];
    this.#pool ??= Promise.all(Array.from({ length: count }, () => startHelper(this.#source).catch(() => null)));
    const pool = await this.#pool;
    return pool.filter((worker) => worker && !worker.failed);
  }

  #searcher() {
    const partial = this.pending > 0;
    if (!this.#engine || this.#engineIsPartial !== partial) {
      this.#engine?.free();
      this.#engine = api.wrapEngine(call(() => this.#inner.engine(true)));
      this.#engineIsPartial = partial;
      this.#graphFits = false;
      if (this.#graph && !partial) {
        try {
          this.#engine.attachGraph(this.#graph);
          this.#graphFits = true;
        } catch {
          // Built for the collection as it was: buildGraph() again asks only about new chunks.
        }
      }
    }
    return this.#engine;
  }

  /**
   * Searches the collection: `{results, timings, vector_method, mode}`. While chunks are pending
   * the search is by keyword whatever the mode asked (`mode` says which ran); once every chunk is
   * embedded, as asked (the core's default mode, `defaults().search.mode`, unless `mode` says).
   */
  async search(query, options = {}) {
    const searcher = this.#searcher();
    const mode = this.#engineIsPartial ? 'keyword' : (options.mode ?? defaults().search.mode);
    const response = await searcher.search(query, { ...options, mode });
    return { ...response, mode };
  }

  /**
   * The knowledge graph: {built, current} — whether one was built, and whether it is the
   * collection's as it is now (after adding or removing files, build it again: only new chunks
   * are asked about).
   */
  graphState() {
    if (this.pending === 0) this.#searcher();
    return { built: this.#graph !== null, current: this.#graphFits };
  }

  /**
   * Builds the collection's knowledge graph with the LLM (`llm`: {base_url, model, api_key?}):
   * every chunk's entities and relations (`gleaning` rounds asking for what was missed, 0–2),
   * `concurrency` calls at a time, then merged, embedded and kept beside the collection; `graph:
   * true` in search() and research() then reads it. Each chunk's extraction is kept as soon as
   * it is done (by its text's digest): a build stopped by `signal` or a reload resumes without
   * asking again, and after adding a document only its chunks are asked about. `on_progress`
   * gets {done, total, calls, tokens, seconds_left}. Needs every chunk embedded (NOT_READY).
   * Returns {entities, relations, chunks, skipped, cached, calls, tokens, failed}.
   */
  async buildGraph({ llm, gleaning = 1, concurrency = 2, signal, on_progress, fetch: fetchImpl = globalThis.fetch } = {}) {
    if (!llm?.base_url || !llm?.model) throw new SextantError('BAD_ARGUMENT', 'buildGraph() needs llm: { base_url, model, api_key? }');
    if (!Number.isInteger(gleaning) || gleaning < 0 || gleaning > 2) throw new SextantError('BAD_ARGUMENT', 'gleaning must be 0, 1 or 2');
    if (this.pending > 0) throw new SextantError('NOT_READY', `${this.pending} chunks are not embedded yet; a graph is built over the whole collection once embedding is done`);
    const searcher = this.#searcher();
    const total = searcher.manifest().counts.chunks;
    const found = await searcher.chunksNumbered(Array.from({ length: total }, (_, i) => i));
    const prompts = defaults().prompts;
    const keyed = await Promise.all(found.map(async ({ number, found: f }) => ({ number, id: f.id, text: f.text, key: await sha256Hex(`${llm.model}\n${gleaning}\n${prompts.graph_extract}\n${prompts.graph_glean}\n${f.text}`) })));
    const stored = await this.#storage?.read(GRAPH_EXTRACTIONS);
    const cache = new Map(stored ? Object.entries(JSON.parse(new TextDecoder().decode(stored))) : []);
    const cached = keyed.filter((c) => cache.has(c.key)).length;
    const save = () => this.#save(() => this.#storage.write(GRAPH_EXTRACTIONS, new TextEncoder().encode(JSON.stringify(Object.fromEntries(cache)))));
    const core = {
      start: (id, text, rounds) => call(() => wasm.graphExtractStart(id, text, rounds)),
      reply: (state, reply) => call(() => wasm.graphExtractReply(state, reply)),
      failed: (state, error) => call(() => wasm.graphExtractFailed(state, error)),
    };
    const stats = await extractChunks({ core, llm, chunks: keyed, cache, gleaning, concurrency, signal, fetchImpl, on_progress, save: this.#storage ? save : async () => {} });
    const extractions = [];
    let skipped = 0;
    for (const c of keyed) {
      const hit = cache.get(c.key) ?? stats.unkept.get(c.key);
      if (!hit || hit.skipped) skipped++;
      else extractions.push({ chunk: c.number, extraction: hit.extraction });
    }
    const draft = call(() => wasm.graphDraft(extractions, skipped));
    const bytes = searcher.graphFile(draft.draft);
    searcher.attachGraph(bytes);
    this.#graph = bytes;
    this.#graphFits = true;
    await this.#save(() => this.#storage.write(GRAPH, bytes));
    return { entities: draft.entities, relations: draft.relations, chunks: total, skipped, cached, calls: stats.calls, tokens: stats.tokens, failed: stats.failed, ...(stats.last_error ? { last_error: stats.last_error } : {}) };
  }

  /** await get(id) → the chunk or whole document with this id (as `Sextant.get`), or null. */
  async get(id) {
    return this.#searcher().get(id);
  }

  /** The model tokens of `text`, counted by the collection's own tokenizer (what chunking and
   * framing count). */
  countTokens(text) {
    return call(() => this.#inner.countTokens(String(text)));
  }

  /** frame(results, {token_budget}) → the results as injection-safe `<retrieved_context>` blocks
   * (what an LLM is shown), as `Sextant.frame` does. */
  frame(results, options) {
    return this.#searcher().frame(results, options);
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
    this.#save(() => this.#storage.write(VECTORS, this.#inner.vectors()));
    return n;
  }

  /** Forgets vectors that no file needs any more (after removals). */
  async pruneVectors() {
    this.#inner.pruneVectors();
    await this.#save(() => this.#storage.write(VECTORS, this.#inner.vectors()));
  }

  /** Releases the WebAssembly memory, and ends the embedding pool's workers. */
  free() {
    this.#pool?.then((pool) => pool.forEach((worker) => worker?.terminate()));
    this.#pool = null;
    this.#engine?.free();
    this.#engine = null;
    this.#inner?.free();
    this.#inner = undefined;
  }
}
