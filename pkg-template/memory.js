// An agent's memory: JSON values under unique keys, kept in a Collection (the same storage: this
// browser's OPFS, or a folder in Node with `folderStorage`) and found again by meaning and by
// keyword with the same engine as documents.
//
//   const memory = await Memory.open('agent', { model, tokenizer });
//   await memory.set('user.timezone', { tz: 'Europe/Paris', said: 'I work from Paris' });
//   await memory.get('user.timezone');            // → { tz: 'Europe/Paris', … }
//   await memory.search('where does the user live', { k: 3 }); // → [{ key, value, score, text }]
//   await memory.delete('user.timezone');
import { Collection, SextantError, folderStorage, opfsStorage } from './collection.js';

export { folderStorage };

/** The folder of the collection every key's file is in. */
const FOLDER = 'memory';
/** The longest key (UTF-16 units); escaped twice it must also fit a file name in storage. */
export const MAX_KEY_LENGTH = 120;
const MAX_ESCAPED_KEY = 180;
/** The most bytes of one value's JSON. */
export const MAX_VALUE_BYTES = 1 << 20;

// A key's file name: escaped, and with every capital letter written `^` and the letter in lower
// case (`^` itself is escaped), so two keys never name the same file on a file system that does
// not tell case apart (macOS, Windows).
const pathOf = (key) => `${FOLDER}/${encodeURIComponent(key).replace(/[A-Z]/g, (c) => `^${c.toLowerCase()}`)}.json`;
const keyOf = (path) =>
  path.startsWith(`${FOLDER}/`) && path.endsWith('.json') ? decodeURIComponent(path.slice(FOLDER.length + 1, -5).replace(/\^([a-z])/g, (_, c) => c.toUpperCase())) : null;

function checkKey(key) {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new SextantError('BAD_ARGUMENT', `a memory key is a string of 1 to ${MAX_KEY_LENGTH} characters, not ${JSON.stringify(key)?.slice(0, 80)}`);
  }
  if (encodeURIComponent(pathOf(key)).length > MAX_ESCAPED_KEY + FOLDER.length + 8) {
    throw new SextantError('BAD_ARGUMENT', `the memory key ${JSON.stringify(key.slice(0, 40))}… is too long for a file name once escaped; use a shorter key (ASCII letters and digits count least)`);
  }
}

/** What is searched for a value: a string as it is, anything else as its JSON. */
function textOf(key, value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.trim() ? text : key;
}

export class Memory {
  #collection;
  /** key → value, for the keys set or read in this session (storage holds them all). */
  #values = new Map();

  constructor(collection) {
    this.#collection = collection;
  }

  /**
   * Opens (or creates) the memory `name` in `storage` (default: this browser's OPFS; in Node,
   * `folderStorage(dir)`), with the model and tokenizer its values are embedded with (URLs, bytes
   * or Blobs: a whole `model.onnx`, since every value is embedded). What was set before is there.
   */
  static async open(name, { model, tokenizer, storage, fetch } = {}) {
    if (!storage && !globalThis.navigator?.storage?.getDirectory) {
      throw new SextantError('BAD_ARGUMENT', 'there is no origin-private file system here (Node?): pass storage, e.g. folderStorage(dir), or use Memory.create() for a memory that ends with the process');
    }
    const collection = await Collection.open(String(name), { model, tokenizer, storage: storage ?? opfsStorage(String(name)), fetch });
    const memory = new Memory(collection);
    // Values written before the last embedding was saved: embedded now, so search finds them.
    if (collection.pending) await collection.embed();
    return memory;
  }

  /** A memory kept only in this page or process (gone when it ends). */
  static async create({ model, tokenizer, fetch } = {}) {
    return new Memory(await Collection.create({ model, tokenizer, fetch }));
  }

  /**
   * Keeps `value` (anything JSON can hold, at most MAX_VALUE_BYTES as JSON) under `key`,
   * replacing what was there, embedded at once so `search` finds it.
   */
  async set(key, value) {
    checkKey(key);
    const json = JSON.stringify(value);
    if (json === undefined) throw new SextantError('BAD_ARGUMENT', `the value of ${JSON.stringify(key)} is not JSON (undefined, a function or a symbol)`);
    const bytes = new TextEncoder().encode(json);
    if (bytes.length > MAX_VALUE_BYTES) {
      throw new SextantError('BAD_ARGUMENT', `the value of ${JSON.stringify(key)} is ${bytes.length} bytes of JSON; keep at most ${MAX_VALUE_BYTES} (store a summary and a reference)`);
    }
    const path = pathOf(key);
    await this.#collection.addDocuments(path, [{ id: path, source: path, url: null, title: key, metadata: {}, sections: [{ heading_path: [], anchor: '', text: textOf(key, value) }] }], { original: bytes });
    this.#values.set(key, JSON.parse(json));
    await this.#collection.embed();
  }

  /** The value under `key`, or undefined. */
  async get(key) {
    checkKey(key);
    if (this.#values.has(key)) return this.#values.get(key);
    if (!this.#collection.files().some((f) => f.path === pathOf(key))) return undefined;
    const bytes = await this.#collection.original(pathOf(key));
    if (!bytes) return undefined;
    const value = JSON.parse(new TextDecoder().decode(bytes));
    this.#values.set(key, value);
    return value;
  }

  /** Removes `key`; false if it was not there. */
  async delete(key) {
    checkKey(key);
    this.#values.delete(key);
    return this.#collection.removeFile(pathOf(key));
  }

  /** Every key, sorted. */
  keys() {
    return this.#collection
      .files()
      .map((f) => keyOf(f.path))
      .filter((k) => k != null)
      .sort();
  }

  /**
   * The values closest to `text`, by meaning and keyword (hybrid search, or `mode`): `[{key,
   * value, score, text}]`, best first, at most `k` (default 5).
   */
  async search(text, { k = 5, mode } = {}) {
    if (!this.keys().length) return [];
    const response = await this.#collection.search(String(text), { k, mode, per_document: true });
    const found = [];
    for (const r of response.results) {
      const key = keyOf(r.doc_id);
      if (key == null) continue;
      found.push({ key, value: await this.get(key), score: r.score, text: r.text });
    }
    return found;
  }

  /** Resolves when every change is in storage. */
  async flush() {
    await this.#collection.flush();
  }

  /** Releases the WebAssembly memory. */
  free() {
    this.#collection.free();
  }
}
