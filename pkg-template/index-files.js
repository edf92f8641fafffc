// The split index's file loop: an engine over a split index answers a step, or the files it needs
// (`{need: [names]}`); they are fetched from beside the manifest, added, and the step asked again.
import { SextantError, call } from './errors.js';
import { fetchBytes } from './fetching.js';

/**
 * The files of a split index, fetched from beside its manifest as the engine asks for them: in
 * parallel, each once (a file being fetched is awaited, not fetched again).
 */
export class IndexFiles {
  #base;
  #fetch;
  #pending = new Map();

  constructor(base, fetchImpl) {
    this.#base = base;
    this.#fetch = fetchImpl;
  }

  /** Fetches `names` and adds each to `engine` (which checks it against its hash). */
  async add(engine, names) {
    await Promise.all(
      names.map((name) => {
        if (!this.#pending.has(name)) {
          const url = new URL(name, this.#base).href;
          const added = fetchBytes(url, 'index file', null, this.#fetch).then((bytes) => call(() => engine.addFile(name, bytes)));
          // Only while in flight: once added (or failed), a later query that needs the file
          // again (the engine let go of it, or the fetch failed) fetches it again.
          const settle = () => this.#pending.delete(name);
          added.then(settle, settle);
          this.#pending.set(name, added);
        }
        return this.#pending.get(name);
      }),
    );
  }
}

/** A packed index holds every file: the engine never asks for one. */
export const NO_FILES = {
  async add(_engine, names) {
    throw new SextantError('INTERNAL', `a packed index asked for files (${names.join(', ')}); build it again`);
  },
};

/**
 * Runs a step of the engine until it needs no more files, fetching what it asks for; then, with
 * `maxIndexBytes`, lets the engine drop the least recently used files beyond it.
 */
export async function untilDone(engine, files, step, maxIndexBytes, rounds = 8) {
  let fetchMs = 0;
  let fetched = 0;
  for (let round = 0; round < rounds; round++) {
    const result = call(step);
    if (!result || !Array.isArray(result.need)) {
      if (maxIndexBytes != null) engine.trim(maxIndexBytes);
      // Waiting for index files is the host's time, not the core's: beside its stages.
      if (result?.timings) Object.assign(result.timings, { fetch_ms: fetchMs, files_fetched: fetched });
      return result;
    }
    const started = performance.now();
    await files.add(engine, result.need);
    fetchMs += performance.now() - started;
    fetched += result.need.length;
  }
  throw new SextantError('INTERNAL', 'the index kept asking for files; reload the page, or build the index again');
}
