// The split index's file loop: an engine over a split index answers a step, or the files it needs
// (`{need: [names]}`); they are fetched from beside the manifest, added, and the step asked again.
import { SextantError, call } from './errors.js';
import { fetchBytes, fetchResponse } from './fetching.js';

/** The most bytes one request reads when it joins adjacent objects of a pack. */
const MAX_JOINED_BYTES = 1 << 20;

/**
 * Whether a fetch in flight may be awaited by another caller. Not in the Workers runtime: there a
 * request that waits on I/O another request started is cancelled as hung once that request ends,
 * so each request fetches what it needs itself (the engine still holds each object once).
 */
const IN_WORKERS = globalThis.navigator?.userAgent === 'Cloudflare-Workers';
const SHARE_IN_FLIGHT = !IN_WORKERS;

/**
 * The request options of a pack's byte range. Past the HTTP cache in a browser: Chromium's cache
 * lets one request at a time read or write an entry, so ranges of one pack wait for each other
 * (measured: a first query's 17 ranges over a 40 ms link took one round trip each, 700 ms, instead
 * of four rounds). The packs are immutable and the UI's service worker keeps each range it
 * fetched; the Workers runtime has no such cache, and its `fetch` may not take the option.
 */
const rangeInit = (start, end) => ({ headers: { Range: `bytes=${start}-${end - 1}` }, ...(IN_WORKERS ? {} : { cache: 'no-store' }) });

/**
 * The files of a split index, fetched from beside its manifest as the engine asks for them: in
 * parallel, each once (a file being fetched is awaited, not fetched again). An object stored in a
 * pack (format 2.4) is read with an HTTP Range request, adjacent objects of one pack in one
 * request; a host that answers a Range with the whole pack (200) still works: each pack is then
 * kept whole and read once, and the engine takes every object it needs from it (build with
 * `[layout] pack_bytes = 0` for such a host: a file per object).
 */
export class IndexFiles {
  #base;
  #fetch;
  #pending = new Map();
  /** Whether the host answers Range requests: null until its first answer to one. */
  #ranges = null;
  /** Whole packs, once a host answered a Range with the whole file: pack → Promise of bytes. */
  #wholePacks = new Map();

  constructor(base, fetchImpl) {
    this.#base = base;
    this.#fetch = fetchImpl;
  }

  /** Fetches `names` and adds each to `engine` (which checks it against its hash). */
  async add(engine, names) {
    const ranges = new Map(); // pack → [{name, start, end}]
    const own = new Map();
    for (const name of names) {
      if (SHARE_IN_FLIGHT && this.#pending.has(name)) continue;
      const place = typeof engine.locate === 'function' ? call(() => engine.locate(name)) : null;
      if (!place) {
        this.#track([name], this.#whole(engine, name), own);
        continue;
      }
      if (!ranges.has(place.file)) ranges.set(place.file, []);
      ranges.get(place.file).push({ name, start: place.start, end: place.end });
    }
    for (const [pack, objects] of ranges) {
      for (const run of joined(objects)) this.#track(run.map((o) => o.name), this.#range(engine, pack, run), own);
    }
    await Promise.all(names.map((name) => own.get(name) ?? this.#pending.get(name)));
  }

  /** Marks `names` as in flight until `added` settles (and as this call's own, in `own`). */
  #track(names, added, own) {
    names.forEach((name) => own?.set(name, added));
    // Only while in flight: once added (or failed), a later query that needs the file again (the
    // engine let go of it, or the fetch failed) fetches it again.
    const settle = () => names.forEach((name) => this.#pending.get(name) === added && this.#pending.delete(name));
    added.then(settle, settle);
    names.forEach((name) => this.#pending.set(name, added));
  }

  async #whole(engine, name) {
    const bytes = await fetchBytes(new URL(name, this.#base).href, 'index file', null, this.#fetch);
    call(() => engine.addFile(name, bytes));
  }

  /** Reads the objects `run` (adjacent, in order) of `pack` with one Range request. */
  async #range(engine, pack, run) {
    const url = new URL(pack, this.#base).href;
    if (this.#ranges === false) {
      if (!this.#wholePacks.has(pack)) this.#wholePacks.set(pack, fetchBytes(url, 'index pack', null, this.#fetch));
      const bytes = await this.#wholePacks.get(pack);
      call(() => engine.addFile(pack, bytes));
      return;
    }
    const [start, end] = [run[0].start, run[run.length - 1].end];
    const { bytes, status } = await fetchResponse(url, 'index pack', null, this.#fetch, rangeInit(start, end));
    if (status !== 206) {
      // The host ignored the Range: the whole pack came, and gives every object it holds.
      this.#ranges = false;
      if (!this.#wholePacks.has(pack)) this.#wholePacks.set(pack, Promise.resolve(bytes));
      call(() => engine.addFile(pack, bytes));
      return;
    }
    this.#ranges = true;
    if (bytes.length !== end - start) {
      throw new SextantError('CORRUPT_BUNDLE', `${pack} answered bytes ${start}–${end - 1} with ${bytes.length} bytes instead of ${end - start}; the host may be serving a truncated file: deploy the index again`);
    }
    for (const o of run) call(() => engine.addFile(o.name, bytes.subarray(o.start - start, o.end - start)));
  }
}

/** Objects of one pack sorted and joined where each starts where the one before ends. */
function joined(objects) {
  const sorted = [...objects].sort((a, b) => a.start - b.start);
  const runs = [];
  for (const o of sorted) {
    const run = runs[runs.length - 1];
    if (run && run[run.length - 1].end === o.start && o.end - run[0].start <= MAX_JOINED_BYTES) run.push(o);
    else runs.push([o]);
  }
  return runs;
}

/**
 * An index's files and a model body's row files behind one `add`: a model body (what
 * `sextant build --site` serves the search box: the model without its word table) asks for the
 * rows of a query's tokens, fetched from beside the model (`rows`: the names the engine's
 * `modelFileNames()` gave); everything else comes from beside the index.
 */
export class WithModelFiles {
  constructor(index, model, rows) {
    this.index = index;
    this.model = model;
    this.rows = rows;
  }

  async add(engine, names) {
    const rows = names.filter((n) => this.rows.has(n));
    const rest = names.filter((n) => !this.rows.has(n));
    await Promise.all([rows.length ? this.model.add(engine, rows) : null, rest.length ? this.index.add(engine, rest) : null]);
  }
}

/** A packed index holds every file: the engine never asks for one. */
export const NO_FILES = {
  async add(_engine, names) {
    throw new SextantError('INTERNAL', `a packed index asked for files (${names.join(', ')}); build it again`);
  },
};

/** Per engine, the queries in flight under a bound, each with the clock it began at. */
const inFlight = new WeakMap();

/**
 * Runs a step of the engine until it needs no more files, fetching what it asks for; then, with
 * `maxIndexBytes`, lets the engine drop the least recently used files beyond it, but none that a
 * query still in flight on the same engine used.
 */
export async function untilDone(engine, files, step, maxIndexBytes, rounds = 16) {
  // Under a bound, this query's clock reading while it is in flight: a query that ends before it
  // trims only what neither of them used (a Worker answers requests side by side on one engine).
  const mine = maxIndexBytes != null ? { since: engine.clock() } : null;
  if (mine) {
    if (!inFlight.has(engine)) inFlight.set(engine, new Set());
    inFlight.get(engine).add(mine);
  }
  try {
    return await stepUntilDone(engine, files, step, maxIndexBytes, rounds, mine);
  } finally {
    inFlight.get(engine)?.delete(mine);
  }
}

/** [`untilDone`]'s rounds; `mine`: this query among those in flight, under a bound. */
async function stepUntilDone(engine, files, step, maxIndexBytes, rounds, mine) {
  let fetchMs = 0;
  let fetched = 0;
  for (let round = 0; round < rounds; round++) {
    const result = call(step);
    if (!result || !Array.isArray(result.need)) {
      if (mine) {
        const others = [...inFlight.get(engine)].filter((q) => q !== mine).map((q) => q.since);
        engine.trim(maxIndexBytes, others.length ? Math.min(...others) : undefined);
      }
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
