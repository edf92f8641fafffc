// The search engine in a Web Worker, so typing never waits for WebAssembly. Keyword first: the
// small keyword-only engine answers as soon as the index manifest and a query's shards arrive;
// the full engine and the model load in the background, and from then on queries are hybrid.
//
// Messages in: {id, type: 'load'|'search'|'ask'|'cancel', …}; out: {id, type: 'progress'|
// 'loaded'|'results'|'token'|'answer'|'error', …}, and {id: 0, type: 'upgraded'|'degraded'}
// when the full engine is ready or failed. Options are the core's (`defaults()`), passed through
// as they are. The LLM API key lives only in this worker's memory for the duration of one ask.
// With an embed URL (a Worker's /embed, data-embed-url), a query's vector comes from there and
// the keyword engine searches with it: keyword results at once, hybrid ones as soon as the vector
// is here, the model never downloaded; if the endpoint fails or answers for another model, the
// model loads as usual.
// Other sites merged into this box (data-merge-index, the build's merge list) make the engines
// `Bases`: this site is the base OWN, each other site a base of its name and weight.

// The keyword engine's modules are imports three deep, and its wasm would be fetched only once
// they are all here and the engine loads: on a phone link that is four round trips before the
// largest download of a first query even starts. The page fetches and compiles it as soon as it
// knows where it is, beside this worker's start, and sends the module (`keyword-wasm`, null if it
// could not: then it is fetched from here); the bindings instantiate it once. A load message
// without `keywordWasm: true` (a page that sends no module) has it fetched from here at once.
let takeWasm;
const keywordWasm = new Promise((resolve) => (takeWasm = resolve)).then((module) => module ?? fetch(new URL('../sextant_keyword_bg.wasm', import.meta.url)));
keywordWasm.catch(() => {});
const keywordApi = Promise.all([import('../keyword.js'), import('../sextant_keyword.js')]).then(([api, bindings]) => {
  bindings.default({ module_or_path: keywordWasm }).catch(() => {});
  return api;
});
keywordApi.catch(() => {}); // the load message reports it
// The keyword entry's functions, once it is here (before the first 'loaded' reply).
let highlights = null;
let defaults = null;

const OWN = 'site';
let merged = []; // [{name, index, weight}] of the other sites

/** The bases of a merged box: this site first, then the others. */
const basesOf = (index) => [{ name: OWN, index }, ...merged.map(({ name, index, weight }) => ({ name, index, weight }))];
/** The keyword analyzer of each base's index (a language's is its own), for highlights. */
let analyzers = new Map();
const analyzerOf = (result) => analyzers.get(result.base ?? OWN);

/** This site's own engine of `engine` (a Sextant, or the Bases of a merged box). */
const own = (engine) => (merged.length ? engine.base(OWN) : engine);

let keyword = null; // the keyword-only engine
let full = null; // the full engine, once the model is loaded
let fullLoading = null; // Promise of the full engine
let pendingFull = null; // what loads the full engine, until it starts
const running = new Map();
// How long after loading the full engine waits for a first query before it loads anyway.
const FULL_ENGINE_IDLE_MS = 1500;
// How long a query's vector may take to come from the embed URL before keyword results are shown.
const EMBED_TIMEOUT_MS = 5000;
let embedUrl = null; // the embed endpoint, while it works
// How long a meaning search may take (fetching a model body's rows for new words, vector blocks)
// before keyword results are shown first, and the page told to search again when it is done;
// also the longest a query's keyword search runs alone before its meaning search starts.
const KEYWORD_FIRST_MS = 120;
// Meaning searches that finished after keyword results were shown, by query and options: the
// page's search again takes the response as it is (no second search, no refine loop).
const refined = new Map();
const refinedKey = (query, options) => `${query}\n${JSON.stringify(options ?? {})}`;

// Both engines read the same index files (those beside the index manifest): each is fetched
// once, here, and handed to both; a pack's byte ranges each once, by range, and a range inside one
// already fetched is cut from it. They are immutable (named by their content), so keeping their
// bytes for the page's life is safe.
let indexDir = null; // the index manifest's folder, once loading starts
const indexBodies = new Map();
const heldRanges = new Map(); // a pack's URL → [{start, end, entry}] of the ranges fetched
const byteRange = (header) => {
  const m = /^bytes=(\d+)-(\d+)$/.exec(header ?? '');
  return m && Number(m[1]) <= Number(m[2]) ? { start: Number(m[1]), end: Number(m[2]) } : null;
};
function sharedFetch(input, init) {
  const url = new URL(String(input instanceof Request ? input.url : input), self.location.href).href;
  if (!indexDir || !url.startsWith(indexDir)) return fetch(input, init);
  const range = new Headers(init?.headers).get('range');
  const key = range ? `${url}\n${range}` : url;
  const wanted = !indexBodies.has(key) && byteRange(range);
  const held = wanted && heldRanges.get(url)?.find((r) => r.start <= wanted.start && wanted.end <= r.end);
  if (held) {
    // Cut from the held range when it came as asked (206, every byte); otherwise fetched as asked.
    return held.entry.then(({ bytes, status }) =>
      status === 206 && bytes.byteLength === held.end - held.start + 1
        ? new Response(bytes.slice(wanted.start - held.start, wanted.end - held.start + 1), { status: 206 })
        : fetchOnce(input, init, key, url, null),
    );
  }
  return fetchOnce(input, init, key, url, byteRange(range));
}
function fetchOnce(input, init, key, url, range) {
  let entry = indexBodies.get(key);
  if (!entry) {
    entry = fetch(input, init).then(async (response) => {
      if (!response.ok) {
        indexBodies.delete(key); // a later query asks again
        return { response };
      }
      return { bytes: await response.arrayBuffer(), status: response.status };
    });
    entry.catch(() => indexBodies.delete(key));
    indexBodies.set(key, entry);
    if (range) {
      if (!heldRanges.has(url)) heldRanges.set(url, []);
      heldRanges.get(url).push({ ...range, entry });
    }
  }
  return entry.then(({ response, bytes, status }) => (response ? response.clone() : new Response(bytes, { status })));
}

// What a first keyword query reads whatever its words: the norms (every keyword query's) and, when
// they are few, the keyword pages (each query reads one or two of the pages that list the shards).
// Requested as soon as the manifest is here, beside the keyword wasm instead of after it: a round
// trip less before the first results, and bytes the session reads anyway.
const FIRST_READS_PAGE_BYTES = 32 * 1024;
function prefetchFirstReads(manifestUrl, manifest) {
  const files = manifest?.files;
  if (!files?.norms) return;
  const dir = new URL('.', new URL(manifestUrl, self.location.href));
  // A reference `name@P:O:L[:I]` is bytes O … O+L−1 of pack P; a plain name is a file of its own.
  const place = (ref) => {
    const [name, at] = String(ref).split('@');
    if (at === undefined) return { url: new URL(name, dir).href, start: null, end: null };
    const [p, offset, length] = at.split(':').map(Number);
    const pack = files.packs?.[p];
    return typeof pack === 'string' && Number.isSafeInteger(offset) && Number.isSafeInteger(length) && length > 0
      ? { url: new URL(pack, dir).href, start: offset, end: offset + length - 1 }
      : null;
  };
  const reads = [place(files.norms)];
  const pages = (Array.isArray(files.keyword) ? files.keyword : []).map((page) => place(page?.file));
  const pageBytes = pages.reduce((sum, p) => sum + (p?.start == null ? Infinity : p.end - p.start + 1), 0);
  if (pageBytes <= FIRST_READS_PAGE_BYTES) reads.push(...pages);
  // One request per run of adjacent ranges of a pack, as the engine's own reads join them.
  const sorted = reads.filter(Boolean).sort((a, b) => (a.url === b.url ? (a.start ?? 0) - (b.start ?? 0) : a.url < b.url ? -1 : 1));
  const runs = [];
  for (const r of sorted) {
    const last = runs[runs.length - 1];
    if (last && r.start != null && last.url === r.url && last.end + 1 === r.start) last.end = r.end;
    else runs.push({ ...r });
  }
  for (const { url, start, end } of runs) {
    const init = start == null ? undefined : { headers: { Range: `bytes=${start}-${end}` }, cache: 'no-store' };
    sharedFetch(url, init).catch(() => {});
  }
}

/**
 * The query's vector from the embed endpoint: little-endian f32, base64, from the index's own
 * model (digests and dimensions checked), else an error.
 */
async function remoteVector(query) {
  const url = new URL(embedUrl);
  url.searchParams.set('q', query);
  const response = await fetch(url, { signal: AbortSignal.timeout(EMBED_TIMEOUT_MS) });
  if (!response.ok) throw new Error(`${url.origin}${url.pathname} answered ${response.status}`);
  const body = await response.json();
  const mine = own(keyword).manifest().model;
  const theirs = body?.model ?? {};
  if (theirs.sha256 !== mine.sha256 || theirs.tokenizer_sha256 !== mine.tokenizer_sha256 || theirs.dims !== mine.dims) {
    throw new Error(`${url.origin}${url.pathname} embeds with another model than this index's`);
  }
  const bytes = Uint8Array.from(atob(String(body.vector ?? '')), (c) => c.charCodeAt(0));
  if (bytes.length !== mine.dims * 4) throw new Error(`${url.origin}${url.pathname} sent ${bytes.length} bytes, not a vector of ${mine.dims}`);
  return new Float32Array(bytes.buffer);
}

// Each query's vector from the embed endpoint: {promise, value once it came}. Few queries a visit.
const vectors = new Map();
const MAX_VECTORS = 256;

/**
 * The vector of `query` from the embed endpoint, fetched once: when it comes the page is told to
 * search again (`refine`); if the endpoint fails, meaning comes from the model from then on.
 */
function vectorFor(query) {
  let entry = vectors.get(query);
  if (entry) return entry;
  if (vectors.size >= MAX_VECTORS) vectors.delete(vectors.keys().next().value);
  entry = { value: null, shown: false };
  entry.promise = remoteVector(query).then(
    (value) => {
      entry.value = value;
      // Only once the keyword results are out: a search started before would drop them.
      if (entry.shown) reply({ id: 0, type: 'refine', query });
    },
    (e) => {
      vectors.delete(query);
      if (!embedUrl) return;
      embedUrl = null;
      reply({ id: 0, type: 'embed-failed', message: String(e?.message ?? e) });
      startFull();
    },
  );
  vectors.set(query, entry);
  return entry;
}

/** Starts loading the full engine, if it is waiting to. */
function startFull() {
  const start = pendingFull;
  pendingFull = null;
  start?.();
}

function reply(message) {
  self.postMessage(message);
}

/** The full engine with the model, loaded once in the background. */
function loadFull(data) {
  fullLoading ??= (async () => {
    // An encoder file (the site's `model_encoder`) runs in the engine without tract, a third of
    // the full engine's bytes; any other model in the full engine.
    const { Sextant, Bases } = await import(data.encoder ? '../encoder.js' : '../browser.js');
    const options = {
      model: data.model,
      tokenizer: data.tokenizer,
      fetch: sharedFetch,
      on_progress: (p) => reply({ id: 0, type: 'progress', ...p }),
    };
    const engine = merged.length ? await Bases.load({ bases: basesOf(data.index), ...options }) : await Sextant.load({ index: data.index, ...options });
    full = engine;
    reply({ id: 0, type: 'upgraded', mode: defaults().search.mode });
    // For offline use (`data-offline`): the rest of the index, once the page is usable.
    if (data.offline) {
      own(engine)
        .prefetch()
        .then(() => reply({ id: 0, type: 'prefetched' }))
        .catch(() => {});
    }
    return engine;
  })().catch((e) => {
    reply({ id: 0, type: 'degraded', code: e?.code ?? 'INTERNAL', message: String(e?.message ?? e) });
    throw e;
  });
  fullLoading.catch(() => {});
  return fullLoading;
}

async function handle(data) {
  const { id, type } = data;
  if (type === 'load') {
    if (!data.keywordWasm) takeWasm(null); // no module is coming: fetched from here
    indexDir = new URL('.', new URL(data.index, self.location.href)).href;
    merged = data.merge ?? [];
    // The index manifest comes while the engine's modules and wasm do (the engine reads it from
    // here), and with it what the first query reads.
    sharedFetch(data.index)
      .then((response) => (response.ok ? response.json() : null))
      .then((manifest) => prefetchFirstReads(data.index, manifest))
      .catch(() => {});
    const { Sextant: KeywordSextant, Bases: KeywordBases, ...api } = await keywordApi;
    ({ highlights, defaults } = api);
    keyword = merged.length ? await KeywordBases.load({ bases: basesOf(data.index), fetch: sharedFetch }) : await KeywordSextant.load({ index: data.index, fetch: sharedFetch });
    if (!own(keyword)) {
      const failure = keyword.failed.find((f) => f.base === OWN);
      throw Object.assign(new Error(failure.message), { code: failure.code });
    }
    const m = own(keyword).manifest();
    analyzers = new Map([[OWN, m.analyzer], ...merged.filter((b) => keyword.base(b.name)).map((b) => [b.name, keyword.base(b.name).manifest().analyzer])]);
    const failed = merged.length ? keyword.failed : [];
    reply({ id, type: 'loaded', mode: 'keyword', chunks: m.counts.chunks, documents: m.counts.documents, filters: Boolean(m.files.facets), failed, defaults: defaults() });
    embedUrl = data.embed ?? null;
    if (embedUrl && data.model && data.tokenizer) {
      // Meaning comes from the endpoint: the model loads only if it fails (or for an answer).
      pendingFull = () => loadFull(data);
    } else if (data.model && data.tokenizer) {
      // The wasm and the model (megabytes) start once the first keyword results are out, so they
      // never share the connection with the files that first query needs; or after a moment, if
      // no query comes.
      pendingFull = () => loadFull(data);
      setTimeout(startFull, FULL_ENGINE_IDLE_MS);
    }
  } else if (type === 'search') {
    let vector = null;
    if (!full && embedUrl) {
      // A query whose vector has come searches with meaning; otherwise keyword results go out at
      // once, and the page is told to search again when the vector is here (never waiting on it).
      vector = vectorFor(data.query);
      if (vector.value) {
        const response = await keyword.search(data.query, { ...data.options, query_vector: vector.value });
        const marked = response.fallback?.length ? `${data.query} ${response.fallback.join(' ')}` : data.query;
        for (const result of response.results) result.highlights = highlights(result.text, marked, analyzerOf(result));
        reply({ id, type: 'results', query: data.query, mode: data.options.mode ?? defaults().search.mode, embedded: 'remote', ...response });
        return;
      }
    }
    const engine = full ?? keyword;
    // The keyword engine answers first, fast: without query expansion (one step less, no
    // shards of added terms); the full engine searches as asked.
    const keywordOptions = { ...data.options, mode: 'keyword', query_expansion: false };
    const options = full ? data.options : keywordOptions;
    try {
      let response;
      let mode = full ? options.mode ?? defaults().search.mode : 'keyword';
      const key = refinedKey(data.query, options);
      const ready = refined.get(key);
      refined.delete(key);
      if (full && mode !== 'keyword' && ready) {
        response = ready;
      } else if (full && mode !== 'keyword') {
        // A meaning search that must first fetch files (a new word's rows, vector blocks) would
        // keep the page waiting: past a moment, keyword results go out, and the page searches
        // again once the meaning search is done. The keyword search goes first, and the meaning
        // search starts once it is done or the moment has passed, whichever is sooner: started
        // together, the keyword search's few requests queued behind the meaning search's vector
        // blocks (tens of ranges; a browser opens six connections to a host over HTTP/1.1) and
        // its work behind the meaning search's on this one thread. The two share the query's
        // shards (`sharedFetch`).
        const quick = keyword.search(data.query, keywordOptions);
        quick.catch(() => {}); // unused when the meaning search wins
        const headStart = new Promise((resolve) => setTimeout(resolve, KEYWORD_FIRST_MS));
        const pending = Promise.race([quick.catch(() => {}), headStart]).then(() => full.search(data.query, options));
        const hybrid = (r) => ({ response: r, mode });
        const moment = new Promise((resolve) => setTimeout(() => resolve(null), KEYWORD_FIRST_MS));
        let shown = await Promise.race([pending.then(hybrid), moment]);
        // Past the moment, whichever comes first: keyword results, or the meaning search's.
        shown ??= await Promise.race([pending.then(hybrid), quick.then((r) => ({ response: r, mode: 'keyword' }))]);
        ({ response, mode } = shown);
        if (mode === 'keyword') {
          pending.then(
            (done) => {
              if (refined.size > 64) refined.clear();
              refined.set(key, done);
              reply({ id: 0, type: 'refine', query: data.query });
            },
            () => {}, // searched again, the error shows then
          );
        }
      } else {
        response = await engine.search(data.query, options);
      }
      // The words BM25 matched, from the core's own analyzer (stems included), for highlighting.
      // Words the index does not hold (a typo) were searched for as their nearest words: those
      // are marked too.
      const marked = response.fallback?.length ? `${data.query} ${response.fallback.join(' ')}` : data.query;
      for (const result of response.results) result.highlights = highlights(result.text, marked, analyzerOf(result));
      reply({ id, type: 'results', query: data.query, mode, ...response });
      if (vector && !vector.shown) {
        vector.shown = true;
        if (vector.value) reply({ id: 0, type: 'refine', query: data.query });
      }
    } finally {
      // With an embed endpoint, the model loads only if it fails (or for an answer).
      if (!embedUrl) startFull();
    }
  } else if (type === 'ask') {
    const controller = new AbortController();
    running.set(id, controller);
    try {
      startFull();
      const engine = full ?? (await fullLoading);
      if (!engine) throw Object.assign(new Error('the model is not loaded, so there is nothing to answer with'), { code: 'NO_MODEL' });
      const answer = await engine.ask(data.question, {
        ...data.options,
        llm: data.llm,
        signal: controller.signal,
        on_token: (text) => reply({ id, type: 'token', text }),
      });
      reply({ id, type: 'answer', ...answer });
    } finally {
      running.delete(id);
    }
  } else if (type === 'cancel') {
    running.get(data.target)?.abort();
  }
}

self.onmessage = ({ data }) => {
  if (data?.type === 'keyword-wasm') {
    takeWasm(data.module instanceof WebAssembly.Module ? data.module : null);
    return;
  }
  handle(data).catch((e) =>
    reply({
      id: data.id,
      type: 'error',
      code: e?.code ?? 'INTERNAL',
      message: String(e?.message ?? e),
      detail: e?.detail,
      partial_answer: e?.partial_answer,
    }),
  );
};
