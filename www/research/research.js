// The research workspace page: collections in OPFS (through research-worker.js, which holds the
// open one), files added by drag and drop or the picker, PDFs read here page by page (pdf.js, in
// its own worker) so each page is a section a citation can point at, embedding progress with
// pause and resume, search while embedding (keyword until every chunk has its vector), export.
// Every text from a document is put in the page as text, never as HTML, and every name it did
// not choose (files, titles, headings, collections) with its bidirectional controls shown and
// isolated (names.js).
import { visible, nameText, nameNode } from './names.js';
import { checkZipExpansion, textBudget } from './archive.js';

const $ = (id) => document.getElementById(id);

// Offline: the site's service worker (written by `sextant build --site` at the site root) keeps
// every file this page, its worker and the model fetch. It is waited for (at most 3 s) before the
// worker starts, so that on a first visit the worker's fetches are cached too.
async function offlineReady() {
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return;
  try {
    const root = new URL('../', import.meta.url);
    const firstVisit = !navigator.serviceWorker.controller;
    await navigator.serviceWorker.register(new URL('sextant-sw.js', root), { scope: root.pathname });
    if (firstVisit) {
      // What loaded before the service worker was there (this page, its styles and scripts) is
      // kept too, so the page reloads offline (the worker's `keep` message).
      const loaded = [location.href, ...performance.getEntriesByType('resource').map((e) => e.name)];
      (await navigator.serviceWorker.ready).active?.postMessage({ sextant: 'keep', urls: loaded.filter((url) => new URL(url).origin === location.origin) });
    }
    if (!navigator.serviceWorker.controller) {
      await Promise.race([new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true })), new Promise((resolve) => setTimeout(resolve, 3000))]);
    }
  } catch {
    // Without it the workspace works, only not offline.
  }
}
let worker = null; // the Web Worker holding the open collection
const waiting = new Map();
let nextId = 1;
let current = null; // the open collection's state

/** Starts the Web Worker that holds the open collection. */
function startWorker() {
  worker = new Worker(new URL('./research-worker.js', import.meta.url), { type: 'module' });
  // A worker that cannot start (a missing file, no module workers) fails every request, visibly.
  worker.onerror = (e) => {
    e.preventDefault?.();
    say(`The workspace could not start its worker (${e.message || 'a script failed to load'}); reload the page.`, true);
    for (const w of waiting.values()) w.reject(Object.assign(new Error('the workspace worker stopped'), { code: 'INTERNAL' }));
    waiting.clear();
  };
  worker.onmessage = onWorkerMessage;
  return worker;
}

// Nothing here awaits before every listener of the page is attached (below): a file chosen or
// dropped in the first moments of a visit is queued, never lost. The worker starts once the
// service worker is ready.
let workerStarted = offlineReady().then(startWorker);

async function request(op, args) {
  const target = await workerStarted;
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    target.postMessage({ id, op, args });
  });
}

// A trap in the collection's WebAssembly leaves its instance unusable (every later call fails):
// the worker says so (`dead`), and a new worker, with a new instance, reopens the collection from
// storage. The operation that met the trap shows its own error.
let restarts = 0;
function restartWorker(message) {
  if (restarts >= 3) {
    say(`The workspace's engine keeps stopping (${message}); reload the page.`, true);
    return;
  }
  restarts++;
  worker?.terminate();
  for (const w of waiting.values()) w.reject(Object.assign(new Error(message), { code: 'INTERNAL' }));
  waiting.clear();
  const name = current?.name;
  current = null;
  workerStarted = Promise.resolve(startWorker());
  sendVisibility(); // a new worker starts unpaused: tell it whether the tab is hidden
  if (!name) return;
  open(name, { restarted: true })
    .then(() => say(['The engine stopped and was restarted; ', nameNode(name), ' was reopened from storage.'], true))
    .catch((e) => say(`The engine stopped and could not reopen the collection: ${e.message}; reload the page.`, true));
}

function onWorkerMessage({ data }) {
  if (data.event === 'dead') {
    // Its pending requests fail first (with `dead`), then it is replaced.
    queueMicrotask(() => restartWorker(data.message));
    return;
  }
  if (data.event === 'progress') {
    if (current) Object.assign(current, { files: data.files, pending: data.pending });
    showProgress(data.pending, data.chunks_per_s, data.seconds_left);
    showFiles(data.files);
    return;
  }
  if (data.event === 'graph') {
    showGraphProgress(data);
    return;
  }
  if (data.event === 'token' || data.event === 'trace') {
    asks.get(data.ask)?.[data.event](data.delta ?? data.entry);
    return;
  }
  if (data.event === 'idle') {
    current = data;
    showState();
    showGraph();
    if (data.reason.startsWith('error')) say(`Embedding stopped: ${data.reason.slice(7)}`, true);
    return;
  }
  const w = waiting.get(data.id);
  waiting.delete(data.id);
  if (data.ok) w?.resolve(data.value);
  else w?.reject(Object.assign(new Error(data.error.message), { code: data.error.code }));
}

/** Shows a message: strings (any name in them with its bidirectional controls shown) and nodes. */
function say(text, error = false) {
  $('status').replaceChildren(...[text].flat().map((part) => (typeof part === 'string' ? visible(part) : part)));
  $('status').className = error ? 'error' : '';
}

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children.filter((c) => c != null));
  return node;
}

const fileStatus = new Map(); // path → text shown while a file is read ("reading", an error)

function showFiles(files) {
  const rows = files.map((f) =>
    el(
      'li',
      {},
      el('span', { className: 'path' }, nameNode(f.path)),
      el('span', { className: 'muted', textContent: `${f.chunks} chunks${f.pending ? ` · ${f.chunks - f.pending} embedded` : ' · ready'}` }),
      // Cancelling a file still embedding removes it: nothing of it stays.
      el('button', { type: 'button', textContent: f.pending ? 'Cancel' : 'Remove', onclick: () => removeFile(f.path) }),
    ),
  );
  for (const [path, text] of fileStatus) {
    if (files.some((f) => f.path === path)) continue;
    const failed = text.startsWith('Could not');
    const cancel = failed
      ? null
      : el('button', {
          type: 'button',
          textContent: 'Cancel',
          onclick: () => {
            cancelled.add(path);
            fileStatus.set(path, 'cancelling…');
            showFiles(current?.files ?? []);
          },
        });
    rows.push(el('li', {}, el('span', { className: 'path' }, nameNode(path)), el('span', { className: failed ? 'error' : 'muted', textContent: visible(text) }), cancel));
  }
  $('files').replaceChildren(...rows);
}

function showProgress(pending, rate, secondsLeft) {
  const chunks = current?.files?.reduce((n, f) => n + f.chunks, 0) ?? 0;
  $('progress').max = Math.max(1, chunks);
  $('progress').value = Math.max(0, chunks - pending);
  const speed = rate > 0 ? ` · ${rate.toFixed(1)} chunks/s · about ${duration(secondsLeft)} left` : '';
  $('progress-text').textContent = pending ? `embedding: ${pending} chunks to go${speed}` : chunks ? 'every chunk embedded' : '';
}

/** Seconds as a reader says them: "40 s", "3 min", "1 h 5 min". */
function duration(seconds) {
  const s = Math.max(0, Math.round(seconds ?? 0));
  if (s < 90) return `${s} s`;
  const minutes = Math.round(s / 60);
  return minutes < 90 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

// "Pause while this tab is hidden" (kept per browser): embedding waits between batches while the
// tab is hidden, and goes on when it is shown again.
const PAUSE_HIDDEN_KEY = 'sextant-research-pause-hidden';
$('pause-hidden').checked = localStorage.getItem(PAUSE_HIDDEN_KEY) === '1';
function sendVisibility() {
  request('visibility', { hidden: $('pause-hidden').checked && document.visibilityState === 'hidden' }).catch(() => {});
}
$('pause-hidden').addEventListener('change', () => {
  localStorage.setItem(PAUSE_HIDDEN_KEY, $('pause-hidden').checked ? '1' : '0');
  sendVisibility();
});
document.addEventListener('visibilitychange', sendVisibility);

function showState() {
  if (!current) return;
  showFiles(current?.files ?? []);
  showProgress(current.pending);
  $('pause').hidden = current.paused;
  $('resume').hidden = !current.paused;
}

async function refreshCollections(select) {
  const { names, storage } = await request('list');
  $('collection').replaceChildren(...names.map((n) => el('option', { value: n, textContent: nameText(n), selected: n === select })));
  const mb = (b) => (b / 1e6).toFixed(1);
  $('storage').textContent = storage.usage != null ? `${mb(storage.usage)} MB used of ${mb(storage.quota)} MB${storage.persisted ? ' · kept by the browser' : ''}` : '';
  return names;
}

// The collection open last comes back on the next visit.
const LAST_KEY = 'sextant-research-last';
async function open(name, { restarted = false } = {}) {
  localStorage.setItem(LAST_KEY, name);
  say(['Opening ', nameNode(name), '…']);
  // Another collection's file messages go; after a restart, the failure that caused it stays.
  if (!restarted) fileStatus.clear();
  current = await request('open', { name });
  showState();
  await showGraph();
  await showConversation();
  say(current.skipped.length ? ['Opened ', nameNode(name), `; some stored entries no longer read: ${current.skipped.map((s) => s.entry).join(', ')}`] : ['Opened ', nameNode(name), '.'], current.skipped.length > 0);
  // Files chosen or dropped while it opened go in now.
  if (early.length) addFiles(early.splice(0));
  await refreshCollections(name);
  runSearch();
}

// PDF: one document, one section per page (anchor page=N), read with pdf.js.
async function pdfDocuments(file) {
  const pdfjs = await import('./vendor/pdf.min.mjs');
  pdfjs.GlobalWorkerOptions.workerSrc = new URL('./vendor/pdf.worker.min.mjs', import.meta.url).href;
  const task = pdfjs.getDocument({ data: new Uint8Array(await file.arrayBuffer()), isEvalSupported: false });
  const pdf = await task.promise;
  const sections = [];
  // A small compressed PDF may hold far more text than a file may: bounded as it is read.
  const take = textBudget('the PDF', (await limits()).max_file_bytes);
  for (let n = 1; n <= pdf.numPages; n++) {
    const page = await pdf.getPage(n);
    const content = await page.getTextContent();
    const text = take(content.items.map((i) => (i.str ?? '') + (i.hasEOL ? '\n' : ' ')).join('').replace(/[ \t]+\n/g, '\n').trim());
    if (text) sections.push({ heading_path: [`Page ${n}`], anchor: `page=${n}`, text });
  }
  const meta = await pdf.getMetadata().catch(() => null);
  await task.destroy();
  const title = meta?.info?.Title?.trim() || file.name.replace(/\.pdf$/i, '');
  return [{ id: file.name, source: file.name, url: null, title, metadata: { pages: String(pdf.numPages) }, sections }];
}

// What a document may cost, the core's (`defaults().input`), asked of the worker once.
let limitsAsked = null;
const limits = () =>
  (limitsAsked ??= request('limits').catch((e) => {
    limitsAsked = null;
    throw e;
  }));

// DOCX: checked for what it expands to (archive.js: a small DOCX may inflate to gigabytes in
// mammoth), converted to HTML by mammoth (loaded on first use; images left out, only their alt
// text is read), then read by the core's HTML loader.
let mammothLoaded = null;
async function docxHtml(file, bytes) {
  await checkZipExpansion(bytes, { max_bytes: (await limits()).max_file_bytes });
  mammothLoaded ??= new Promise((resolve, reject) => {
    const script = el('script', { src: new URL('./vendor/mammoth.browser.min.js', import.meta.url).href, onload: resolve, onerror: () => reject(new Error('could not load the DOCX reader')) });
    document.head.append(script);
  });
  await mammothLoaded;
  const { value } = await window.mammoth.convertToHtml({ arrayBuffer: bytes.buffer }, { convertImage: window.mammoth.images.imgElement(() => ({ src: '' })) });
  const title = file.name.replace(/\.docx$/i, '');
  return `<!doctype html><title>${title.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)}</title><body>${value}</body>`;
}

// Files dropped wait their turn; one that is cancelled before it is read is skipped. Files that
// arrive before a collection is open wait in `early` until it is.
const cancelled = new Set();
const early = [];
async function addFiles(files) {
  if (!files.length) return;
  if (!current) {
    early.push(...files);
    say(`${early.length === 1 ? '1 file' : `${early.length} files`} will be added once the collection is open…`);
    return;
  }
  for (const file of files) fileStatus.set(file.name, 'waiting…');
  showFiles(current?.files ?? []);
  for (const file of files) {
    // The engine was restarted meanwhile: the rest go in once the collection is open again.
    if (!current) {
      fileStatus.delete(file.name);
      early.push(file);
      continue;
    }
    if (cancelled.delete(file.name)) {
      fileStatus.delete(file.name);
      showFiles(current?.files ?? []);
      continue;
    }
    fileStatus.set(file.name, 'reading…');
    showFiles(current?.files ?? []);
    try {
      const { max_file_bytes } = await limits();
      if (file.size > max_file_bytes) throw new Error(`it is ${Math.round(file.size / 2 ** 20)} MB, over the ${max_file_bytes / 2 ** 20} MB a file may hold`);
      const bytes = new Uint8Array(await file.arrayBuffer());
      const state = /\.pdf$/i.test(file.name)
        ? await request('add_documents', { path: file.name, documents: await pdfDocuments(file), original: bytes })
        : /\.docx$/i.test(file.name)
          ? await request('add_html', { path: file.name, html: await docxHtml(file, bytes), original: bytes })
          : /\.sxt$/i.test(file.name)
            ? await request('import_index', { path: file.name, bytes })
            : await request('add_file', { path: file.name, bytes });
      fileStatus.delete(file.name);
      // Cancelled while it was read: it goes again (a file it replaced is gone with it: the
      // reader asked for this one to be added, then not).
      if (cancelled.delete(file.name)) {
        current = await request('remove_file', { path: file.name });
        showState();
        continue;
      }
      current = state;
      showState();
      runSearch();
    } catch (e) {
      cancelled.delete(file.name);
      fileStatus.set(file.name, `Could not add it: ${e.message}`);
      showFiles(current?.files ?? []);
    }
  }
}

async function removeFile(path) {
  current = await request('remove_file', { path });
  showState();
  runSearch();
}

/** Where a passage is: its file and headings, each a name, joined by › . */
function where(r) {
  return [r.source, ...(r.heading_path ?? [])].filter((p) => p != null).flatMap((p, i) => (i ? [' › ', nameNode(p)] : [nameNode(p)]));
}

let searchSeq = 0;
async function runSearch() {
  const query = $('query').value.trim();
  const seq = ++searchSeq;
  if (!query || !current) {
    $('results').replaceChildren();
    $('mode').textContent = '';
    return;
  }
  try {
    const response = await request('search', { query }); // k: the core's default
    if (seq !== searchSeq) return;
    $('mode').textContent = response.mode === 'keyword' && response.pending ? `Keyword results · meaning search after embedding (${response.pending} chunks to go)` : response.mode === 'keyword' ? 'Keyword results' : 'Keyword + meaning results';
    $('results').dataset.mode = response.mode;
    $('results').dataset.query = query;
    $('results').replaceChildren(
      ...response.results.map((r) =>
        el('li', {}, el('strong', {}, nameNode(r.title)), el('div', { className: 'where' }, ...where(r)), el('div', { className: 'text', textContent: r.text.length > 400 ? `${r.text.slice(0, 400)}…` : r.text })),
      ),
    );
  } catch (e) {
    if (seq === searchSeq) say(`Search failed: ${e.message}`, true);
  }
}

let debounce;
$('query').addEventListener('input', () => {
  clearTimeout(debounce);
  debounce = setTimeout(runSearch, 120);
});
$('pick').addEventListener('change', (e) => addFiles([...e.target.files]).finally(() => (e.target.value = '')));
const drop = $('drop');
drop.addEventListener('dragover', (e) => {
  e.preventDefault();
  drop.classList.add('over');
});
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  addFiles([...e.dataTransfer.files]);
});
$('pause').addEventListener('click', async () => {
  current = await request('pause');
  showState();
});
$('resume').addEventListener('click', async () => {
  current = await request('resume');
  showState();
});
$('collection').addEventListener('change', (e) => open(e.target.value));
$('new-collection').addEventListener('submit', async (e) => {
  e.preventDefault();
  const name = $('new-name').value.trim();
  if (!name) return;
  try {
    await open(name);
    $('new-name').value = '';
  } catch (err) {
    say(err.message, true);
  }
});
$('delete-collection').addEventListener('click', async () => {
  if (!current?.name || !confirm(`Delete the collection ${nameText(current.name)} and everything in it?`)) return;
  await request('remove_collection', { name: current.name });
  current = null;
  const names = await refreshCollections();
  if (names.length) await open(names[0]);
  else {
    showFiles([]);
    say('Collection deleted.');
  }
});
$('export').addEventListener('click', async () => {
  try {
    const bytes = await request('export');
    const a = el('a', { href: URL.createObjectURL(new Blob([bytes])), download: `${current.name}.sxt` });
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  } catch (e) {
    say(e.code === 'NOT_READY' ? 'Wait until every chunk is embedded, then export.' : `Export failed: ${e.message}`, true);
  }
});

// ---- Research chat: the LLM the user sets, answers streamed, citations checked and linked.
const asks = new Map(); // ask id → {token(delta), trace(entry)}
let askSeq = 0;
const LLM_KEY = 'sextant-research-llm';
const llmSettings = () => {
  try {
    return JSON.parse(localStorage.getItem(LLM_KEY) ?? 'null');
  } catch {
    return null;
  }
};
// The whole conversation is kept ({rounds, summary, compressed}) in OPFS beside its collection
// (by the worker); the model sees a summary of the earliest rounds plus the recent ones
// (research.js's Conversation), never as evidence. One kept in localStorage by an earlier
// version of this page moves to OPFS on first load.
const legacyKey = () => `sextant-research-conversation:${current?.name ?? ''}`;
const EMPTY = () => ({ rounds: [], summary: null, compressed: 0 });
async function loadConversation() {
  const stored = await request('conversation_load', { name: current?.name }).catch((e) => (say(`The conversation could not be read: ${e.message}`, true), null));
  if (stored) return stored;
  const legacy = localStorage.getItem(legacyKey());
  if (!legacy) return EMPTY();
  try {
    const parsed = JSON.parse(legacy);
    const conversation = Array.isArray(parsed) ? { ...EMPTY(), rounds: parsed } : parsed;
    await saveConversation(conversation);
    localStorage.removeItem(legacyKey());
    return conversation;
  } catch {
    return EMPTY();
  }
}
// Saved under the collection it belongs to, even if another one was opened meanwhile.
const saveConversation = (conversation, name = current?.name) => request('conversation_save', { name, conversation });

function fillSettings() {
  const s = llmSettings();
  const form = $('llm-form');
  form.base_url.value = s?.base_url ?? '';
  form.model.value = s?.model ?? '';
  form.api_key.value = s?.api_key ?? '';
  form.tools.checked = s?.tools ?? true;
  form.rerank.checked = s?.rerank ?? false;
  form.graph.checked = s?.graph ?? false;
  form.timeout.value = s?.timeout ?? 60;
  $('llm-settings').open = !s;
}
$('llm-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const f = e.target;
  localStorage.setItem(LLM_KEY, JSON.stringify({ base_url: f.base_url.value.trim(), model: f.model.value.trim(), api_key: f.api_key.value, tools: f.tools.checked, rerank: f.rerank.checked, graph: f.graph.checked, timeout: Math.min(600, Math.max(1, Number(f.timeout.value) || 60)) }));
  $('llm-settings').open = false;
  say('LLM settings saved.');
});

let sourceUrl = null;
async function showSource(c) {
  $('source').hidden = false;
  $('source-title').replaceChildren(nameNode(c.title ?? c.chunk_id));
  $('source-where').replaceChildren(...where(c));
  $('source-text').textContent = c.text ?? '';
  $('source-open').replaceChildren();
  if (sourceUrl) URL.revokeObjectURL(sourceUrl);
  sourceUrl = null;
  // A PDF or DOCX kept in storage opens as a file; a PDF at the cited page.
  const original = c.source ? await request('original', { path: c.source }).catch(() => null) : null;
  if (!original) return;
  const pdf = /\.pdf$/i.test(c.source);
  sourceUrl = URL.createObjectURL(new Blob([original], { type: pdf ? 'application/pdf' : 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' }));
  const page = pdf ? (c.heading_path ?? []).map((h) => /^Page (\d+)$/.exec(h)?.[1]).find(Boolean) : null;
  $('source-open').append(el('a', { href: page ? `${sourceUrl}#page=${page}` : sourceUrl, target: '_blank', rel: 'noopener', download: pdf ? '' : c.source }, 'Open ', nameNode(c.source), page ? ` at page ${page}` : ''));
}

/** An answer's text with each citation replaced by a numbered link to its passage: where the
 * core located them (`spans`: string offsets and the chunk ids each cites), or, for rounds kept
 * by an earlier version without spans, each `[chunk_id]` written plainly. */
function answerNodes(answer, citations, evidence, spans) {
  const byId = new Map(evidence.map((r) => [r.chunk_id, r]));
  const numbers = new Map(citations.map((c, i) => [c.chunk_id, i + 1]));
  const located = spans ?? [...answer.matchAll(/\[([^\]\s]+)\]/g)].map((m) => ({ start: m.index, end: m.index + m[0].length, chunk_ids: [m[1]] }));
  const link = (id) => {
    const r = byId.get(id);
    return el('a', { href: '#', className: 'cite', textContent: `[${numbers.get(id)}]`, title: r ? [r.source, ...r.heading_path].map(nameText).join(' › ') : nameText(id), onclick: (e) => (e.preventDefault(), showSource({ ...r, chunk_id: id })) });
  };
  const nodes = [];
  let last = 0;
  for (const span of located) {
    const cited = span.chunk_ids.filter((id) => numbers.has(id));
    if (!cited.length) continue;
    nodes.push(document.createTextNode(answer.slice(last, span.start)), ...cited.map(link));
    last = span.end;
  }
  nodes.push(document.createTextNode(answer.slice(last)));
  return nodes;
}

function roundNode(round) {
  const answer = el('div', { className: 'answer' });
  const note = el('div', { className: 'note' });
  if (round.result) {
    const r = round.result;
    answer.replaceChildren(...(r.refused ? [document.createTextNode(r.answer)] : answerNodes(r.answer, r.citations, r.evidence, r.spans)));
    note.className = r.refused ? 'note refused' : 'note';
    note.textContent = r.refused ? `Not verified: ${r.refusal}` : `${r.citations.length} cited passage${r.citations.length === 1 ? '' : 's'} · ${r.path === 'tools' ? 'tool loop' : `pipeline (${r.path_reason})`}`;
  } else if (round.error) {
    // Nothing is lost: what arrived stays, and the question can be asked again in one click.
    answer.textContent = round.partial ?? '';
    note.className = 'note refused';
    note.textContent = round.error;
    note.append(
      ' ',
      el('button', {
        type: 'button',
        className: 'again',
        textContent: 'Ask again',
        onclick: () => {
          $('question').value = round.question;
          $('question').focus();
        },
      }),
    );
  }
  return el('li', {}, el('div', { className: 'question', textContent: round.question }), answer, note);
}

async function showConversation() {
  const { rounds } = await loadConversation();
  $('conversation').replaceChildren(...rounds.map(roundNode));
}

/** What an LLM rerank of a search did: its calls and time, or why the search's order stood. */
function rerankNote(r) {
  if (r.fallback) return `LLM rerank failed (${r.fallback.code}): search order kept`;
  return `${r.depth} reranked by the LLM in ${r.calls} calls, ${Math.round(r.ms)} ms`;
}

/** The graph's part of a search: its entities and relations, each with links to the passages it
 * cites (opened in the source panel), or why the search ran without it. */
function graphNode(g) {
  if (!g.used) return el('div', { className: 'muted', textContent: `graph not used (${g.fallback?.code ?? '?'}): ${g.fallback?.message ?? ''}` });
  const lines = g.lines.map((l) =>
    el(
      'li',
      {},
      el('strong', {}, nameNode(l.name)),
      l.type ? ` (${l.type})` : '',
      l.description ? `: ${l.description} ` : ' ',
      ...l.chunk_ids.map((id) => el('a', { href: '#', className: 'cite', textContent: `[${nameText(id)}]`, onclick: (e) => (e.preventDefault(), openChunk(id)) })),
    ),
  );
  return el('details', { className: 'graph-lines' }, el('summary', { textContent: `graph: ${g.lines.length} entities and relations (${g.calls} call${g.calls === 1 ? '' : 's'}, ${Math.round(g.ms)} ms)` }), el('ul', {}, ...lines));
}

/** Opens a passage by its id in the source panel. */
async function openChunk(id) {
  const found = await request('chunk', { id }).catch((e) => (say(`Could not open ${id}: ${e.message}`, true), null));
  if (found) showSource({ ...found, chunk_id: id });
}

/** One trace entry as a line of the trace panel. */
function traceItem(e) {
  const what = e.kind === 'model' ? `model · ${e.step}` : e.kind === 'tool' ? `tool · ${e.name}${e.args ? ` ${JSON.stringify(e.args)}` : ''}` : `path · ${e.path}: ${e.reason}`;
  const detail = [e.ms != null ? `${Math.round(e.ms)} ms` : null, e.usage ? `${e.usage.total_tokens ?? '?'} tokens` : null, e.results != null ? `${e.results} results` : null, e.retries?.length ? `${e.retries.length} retries` : null, e.rerank ? rerankNote(e.rerank) : null, e.error ? `error ${e.error.code ?? e.error.error_type}: ${e.error.message}` : null].filter(Boolean).join(' · ');
  const item = el('li', { textContent: `${what}${detail ? ` — ${detail}` : ''}` });
  if (e.graph) item.append(graphNode(e.graph));
  return item;
}

// The knowledge graph: "Build graph" has the LLM read every chunk (pause keeps what was read;
// building again, after a reload too, goes on from there; a grown collection asks only about its
// new chunks), and its state shows beside it.
function showGraphProgress(p) {
  $('graph-progress').hidden = false;
  $('graph-progress').max = Math.max(1, p.total);
  $('graph-progress').value = p.done;
  const left = p.seconds_left != null ? `, about ${Math.ceil(p.seconds_left)} s left` : '';
  $('graph-text').textContent = `Reading chunks for the graph: ${p.done} of ${p.total} · ${p.calls} LLM calls, ${p.tokens} tokens${left}`;
}

// While a build this page started runs, "Pause graph" stays: a state asked for before it began
// (when embedding went idle, or for a build refused as NOT_READY) can answer after it did, and is
// dropped.
let graphBuilds = 0;
let graphBuilding = false;
async function showGraph() {
  const asked = graphBuilds;
  const g = await request('graph_state').catch(() => null);
  if (!g || asked !== graphBuilds) return;
  const building = g.building || graphBuilding;
  $('build-graph').hidden = building;
  $('pause-graph').hidden = !building;
  if (building) return;
  $('graph-progress').hidden = true;
  const last = g.last ? ` · ${g.last.entities} entities, ${g.last.relations} relations from ${g.last.chunks} chunks (${g.last.cached} already read, ${g.last.skipped} skipped; ${g.last.calls} LLM calls, ${g.last.tokens} tokens)` : '';
  $('graph-text').textContent = !g.built ? 'No graph yet: build one to follow names across documents.' : g.current ? `Graph built${last}.` : 'The graph is out of date: build it again (only new chunks are read).';
  $('build-graph').textContent = g.built && g.current ? 'Rebuild graph' : 'Build graph';
}

$('build-graph').addEventListener('click', async () => {
  const llm = llmSettings();
  if (!llm?.base_url || !llm?.model) {
    $('llm-settings').open = true;
    return say('Set the LLM endpoint first (base URL and model): it reads the chunks.', true);
  }
  // The worker knows whether every chunk is embedded (NOT_READY says so otherwise).
  graphBuilds++;
  graphBuilding = true;
  $('build-graph').hidden = true;
  $('pause-graph').hidden = false;
  try {
    const out = await request('graph_build', { llm: { base_url: llm.base_url, model: llm.model, api_key: llm.api_key || undefined }, gleaning: 1 });
    say(`Graph built: ${out.entities} entities and ${out.relations} relations${out.failed ? `; ${out.failed} chunks could not be read (${out.last_error?.message ?? ''}): build again to retry them` : ''}.`, out.failed > 0);
  } catch (e) {
    say(e.code === 'ABORTED' ? 'Graph paused: what was read is kept; build again to go on.' : `The graph could not be built: ${e.code}: ${e.message}`, e.code !== 'ABORTED');
  }
  graphBuilds++;
  graphBuilding = false;
  await showGraph();
});
$('pause-graph').addEventListener('click', () => request('graph_pause'));

$('ask-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const question = $('question').value.trim();
  const llm = llmSettings();
  if (!question) return;
  if (!llm?.base_url || !llm?.model) {
    $('llm-settings').open = true;
    return say('Set the LLM endpoint first (base URL and model).', true);
  }
  if (!current) return say('Open a collection first.', true);
  const conversation = await loadConversation();
  const collectionName = current.name;
  const round = { question };
  const node = roundNode(round);
  $('conversation').append(node);
  const answer = node.querySelector('.answer');
  const note = node.querySelector('.note');
  note.textContent = 'Researching…';
  const entries = [];
  const ask = ++askSeq;
  let partial = '';
  // The trace and the answer grow by one item or one piece per event: a round of thousands of
  // tool calls, or a long answer, costs work in proportion to its size.
  $('trace').replaceChildren();
  asks.set(ask, {
    token: (delta) => {
      partial += delta;
      answer.append(delta);
    },
    trace: (entry) => {
      entries.push(entry);
      $('trace').append(traceItem(entry));
      if (entry.kind === 'tool' && entry.args?.query) note.textContent = `Searching: ${entry.args.query}`;
    },
  });
  $('question').value = '';
  $('ask').disabled = true;
  $('stop').hidden = false;
  $('stop').onclick = () => request('cancel_ask', { ask });
  try {
    // The model's context keeps question and verified answer of each round (refusals: the question).
    const memory = { rounds: conversation.rounds.map((r) => ({ question: r.question, answer: r.result && !r.result.refused ? r.result.answer : null })), summary: conversation.summary, compressed: conversation.compressed };
    const out = await request('ask', { ask, question, llm: { base_url: llm.base_url, model: llm.model, api_key: llm.api_key || undefined }, tools: llm.tools, rerank: llm.rerank ? 'llm' : 'none', graph: Boolean(llm.graph), timeout_ms: 1000 * (llm.timeout || 60), conversation: memory });
    round.result = out.result;
    conversation.summary = out.summary;
    conversation.compressed = out.compressed;
  } catch (err) {
    round.error = err.code === 'ABORTED' ? 'Stopped.' : `${err.code}: ${err.message}`;
    round.partial = partial;
  } finally {
    asks.delete(ask);
    $('ask').disabled = false;
    $('stop').hidden = true;
  }
  round.trace = entries;
  conversation.rounds.push(round);
  // The round shows as done only once it is kept: a reader who closes the tab on seeing the
  // answer must find it there next time.
  note.textContent = 'Saving…';
  await saveConversation(conversation, collectionName).catch((e) => say(`The conversation could not be saved: ${e.message}`, true));
  node.replaceWith(roundNode(round));
});

fillSettings();
// Files chosen before this script ran (a quick reader on a slow link) are added too.
addFiles([...$('pick').files]).finally(() => ($('pick').value = ''));

// pdf.js and mammoth load only when a PDF or DOCX is added: fetch them once now, through the
// service worker once it is there, so they are cached for offline use.
workerStarted.then(() => {
  for (const f of ['vendor/pdf.min.mjs', 'vendor/pdf.worker.min.mjs', 'vendor/mammoth.browser.min.js']) fetch(new URL(f, import.meta.url)).catch(() => {});
});

const names = await refreshCollections().catch((e) => (say(`Storage is unavailable: ${e.message}`, true), []));
const last = localStorage.getItem(LAST_KEY);
await open(names.includes(last) ? last : (names[0] ?? 'My research')).catch((e) => say(`Could not open the collection: ${e.message}`, true));
