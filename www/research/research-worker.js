// The research workspace's Web Worker: it holds the open collection (sextant-search/collection,
// kept in OPFS), so parsing, chunking and embedding never freeze the page. Requests are
// `{id, op, args}` and get `{id, ok, value}` or `{id, ok: false, error: {code, message}}`; while
// embedding it posts `{event: 'progress', done, total, pending}` and, when it stops,
// `{event: 'idle', pending, reason}`. Embedding starts by itself after files are added and stops
// on `pause` (what was embedded is kept; `resume` goes on).
//
// If the collection's WebAssembly traps (a `WebAssembly.RuntimeError`: `unreachable`, out of
// memory), the instance is left unusable; the request that met it fails with `dead: true`, every
// later one too, and `{event: 'dead', message}` is posted: the page then ends this worker and
// starts another, which reopens the collection from storage.
import { Collection, listCollections, deleteCollection, storageInfo, opfsStorage, defaults, ready } from './pkg/collection.js';
import { research, Conversation } from './pkg/research.js';

let collection = null;
let name = null;
let model = null;
let tokenizer = null;
let embedding = null; // {controller, promise} while the embed loop runs
let paused = false;
let hidden = false; // the page is hidden and asked to pause embedding meanwhile
const asking = new Map(); // ask id → AbortController
let graphing = null; // {controller, promise} while a graph is being built
let lastGraph = null; // what the last graph build of this session reported
const CONVERSATION = 'conversation.json';
let dead = null; // the trap that stopped the WebAssembly, once one has

/** Notes a trap: from now on every request fails, and the page is told to start a new worker. */
function died(e) {
  if (dead || !(e instanceof WebAssembly.RuntimeError)) return;
  dead = Object.assign(new Error(`the collection's engine stopped (${e.message}); the workspace restarts it`), { code: 'INTERNAL' });
  postMessage({ event: 'dead', message: dead.message });
}

async function modelFiles() {
  if (model) return;
  // The demo site's model files (content-hashed, listed in its entry manifest).
  const entry = await (await fetch('../sextant/sextant.json', { cache: 'no-store' })).json();
  const [m, t] = await Promise.all([entry.model, entry.tokenizer].map(async (f) => {
    const response = await fetch(`../sextant/${f}`);
    if (!response.ok) throw Object.assign(new Error(`could not fetch the model file ${f}: HTTP ${response.status}`), { code: 'FETCH_FAILED' });
    return new Uint8Array(await response.arrayBuffer());
  }));
  model = m;
  tokenizer = t;
}

function state() {
  return { name, files: collection?.files() ?? [], pending: collection?.pending ?? 0, paused, embedding: Boolean(embedding), skipped: collection?.skipped ?? [] };
}

function startEmbedding() {
  if (embedding || paused || !collection || collection.pending === 0) return;
  const controller = new AbortController();
  const target = collection;
  const promise = target
    .embed({
      batch: 2,
      signal: controller.signal,
      paused: () => hidden,
      on_progress: ({ done, total, chunks_per_s, seconds_left }) => postMessage({ event: 'progress', done, total, chunks_per_s, seconds_left, pending: target.pending, files: target.files() }),
    })
    .then(
      () => 'done',
      (e) => {
        died(e);
        return e?.code === 'ABORTED' ? 'paused' : `error: ${e?.message ?? e}`;
      },
    )
    .then((reason) => {
      if (embedding?.controller === controller) embedding = null;
      // Files added while it ran have chunks of their own: go on with them.
      if (reason === 'done' && target === collection && collection.pending > 0) return startEmbedding();
      postMessage({ event: 'idle', reason, ...state() });
    });
  embedding = { controller, promise };
}

async function stopEmbedding() {
  const running = embedding;
  if (!running) return;
  running.controller.abort();
  await running.promise;
}

const ops = {
  async open({ name: wanted }) {
    graphing?.controller.abort();
    lastGraph = null;
    await stopEmbedding();
    collection?.free();
    collection = null;
    await modelFiles();
    collection = await Collection.open(wanted, { model, tokenizer });
    name = wanted;
    paused = false;
    startEmbedding();
    return state();
  },
  async list() {
    return { names: await listCollections(), storage: await storageInfo({ persist: true }) };
  },
  async remove_collection({ name: doomed }) {
    if (doomed === name) {
      await stopEmbedding();
      collection?.free();
      collection = null;
      name = null;
    }
    await deleteCollection(doomed);
    return state();
  },
  async add_file({ path, bytes }) {
    const summary = await collection.addFile(path, bytes);
    startEmbedding();
    return { summary, ...state() };
  },
  async add_documents({ path, documents, original }) {
    const summary = await collection.addDocuments(path, documents, { original });
    startEmbedding();
    return { summary, ...state() };
  },
  async add_html({ path, html, original }) {
    const summary = await collection.addHtml(path, html, { original });
    startEmbedding();
    return { summary, ...state() };
  },
  async import_index({ path, bytes }) {
    const summary = await collection.importIndex(path, bytes);
    startEmbedding();
    return { summary, ...state() };
  },
  async original({ path }) {
    return collection.original(path);
  },
  async remove_file({ path }) {
    // The embed loop holds no file: removing one while it runs is safe; restart it so its
    // total counts what is left.
    await stopEmbedding();
    const removed = await collection.removeFile(path);
    await collection.pruneVectors();
    startEmbedding();
    return { removed, ...state() };
  },
  async pause() {
    paused = true;
    await stopEmbedding();
    return state();
  },
  async resume() {
    paused = false;
    startEmbedding();
    return state();
  },
  /** `{hidden}`: whether embedding waits (between batches) because the page is hidden. */
  async visibility({ hidden: now }) {
    hidden = Boolean(now);
    return state();
  },
  // The knowledge graph: built with the LLM once embedding is done, posting
  // {event: 'graph', done, total, calls, tokens, seconds_left} as chunks are read; `graph_pause`
  // stops it with every chunk read so far kept (building again goes on from there, after a
  // reload too), and a grown collection asks only about its new chunks.
  async graph_build({ llm, gleaning }) {
    if (graphing) throw Object.assign(new Error('the graph is already being built'), { code: 'BAD_ARGUMENT' });
    const controller = new AbortController();
    const target = collection;
    const promise = target.buildGraph({ llm, gleaning, signal: controller.signal, on_progress: (p) => postMessage({ event: 'graph', ...p }) });
    graphing = { controller, promise };
    try {
      lastGraph = await promise;
      return { ...lastGraph, ...target.graphState() };
    } finally {
      graphing = null;
    }
  },
  async graph_pause() {
    graphing?.controller.abort();
    return true;
  },
  async graph_state() {
    return { ...collection.graphState(), building: Boolean(graphing), last: lastGraph };
  },
  async chunk({ id }) {
    return collection.get(id);
  },
  async search({ query, k }) {
    const response = await collection.search(query, k === undefined ? {} : { k });
    return { ...response, pending: collection.pending };
  },
  async export() {
    return collection.export();
  },
  // One question of the research chat: tokens and trace entries are posted as they come
  // ({event: 'token', ask, delta}, {event: 'trace', ask, entry}); `cancel` stops it.
  // `conversation` is the stored one ({rounds, summary, compressed}); its working context is
  // compressed first when it has grown past the threshold (a failure there loses nothing and
  // the question goes on with the uncompressed context).
  async ask({ ask, question, llm, tools, rerank, graph, timeout_ms, conversation }) {
    const controller = new AbortController();
    asking.set(ask, controller);
    const on_event = (entry) => postMessage({ event: 'trace', ask, entry });
    try {
      const memory = new Conversation(conversation, { count_tokens: (text) => collection.countTokens(text) });
      const compression = await memory.compress({ llm, timeout_ms, signal: controller.signal, on_event });
      const result = await research(question, {
        collection,
        llm,
        tools,
        rerank,
        graph,
        timeout_ms,
        history: memory.history(),
        signal: controller.signal,
        on_token: (delta) => postMessage({ event: 'token', ask, delta }),
        on_event,
      });
      return { result, summary: memory.summary, compressed: memory.compressed, compression: compression.compressed };
    } finally {
      asking.delete(ask);
    }
  },
  // The open collection's conversation, kept whole beside it in OPFS (conversation.json,
  // replaced in one step on every save), or null before its first question.
  async conversation_load({ name: of = name }) {
    const bytes = await opfsStorage(of).read(CONVERSATION);
    return bytes ? JSON.parse(new TextDecoder().decode(bytes)) : null;
  },
  async conversation_save({ name: of = name, conversation }) {
    await opfsStorage(of).write(CONVERSATION, new TextEncoder().encode(JSON.stringify(conversation)));
    return true;
  },
  async cancel_ask({ ask }) {
    asking.get(ask)?.abort();
    return true;
  },
  async state() {
    return state();
  },
  // What a document may cost (`defaults().input`: max_file_bytes and the rest), for the page's
  // checks before it reads a file.
  async limits() {
    await ready();
    return defaults().input;
  },
};

onmessage = async ({ data: { id, op, args } }) => {
  try {
    if (dead) throw dead;
    if (!ops[op]) throw Object.assign(new Error(`unknown operation ${op}`), { code: 'BAD_ARGUMENT' });
    if (op !== 'open' && op !== 'list' && op !== 'remove_collection' && op !== 'limits' && !collection) {
      throw Object.assign(new Error('open a collection first'), { code: 'NOT_READY' });
    }
    const value = await ops[op](args ?? {});
    postMessage({ id, ok: true, value });
  } catch (e) {
    died(e);
    const error = dead ?? e;
    postMessage({ id, ok: false, error: { code: error?.code ?? 'INTERNAL', message: String(error?.message ?? error), ...(dead ? { dead: true } : {}) } });
  }
};
