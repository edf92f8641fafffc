// sextant's drop-in search UI. A page adds
//   <div id="search"></div>
//   <script type="module" src="/sextant/sextant-ui.js"></script>
// and gets search as you type (the engine runs in a Web Worker), results grouped by page with
// heading sub-results, keyboard navigation, a download progress bar and, with
// <div id="search" data-ask>, an "Ask" panel answering from the docs with the user's own LLM.
// When the site's pages have filters (data-sextant-filter, or Pagefind's data-pagefind-filter), a
// panel of checkboxes with the matching pages' counts narrows the results (values of one filter
// are alternatives, filters add up); data-sort="date:desc" orders results by a sort key, and
// data-show-meta="author,date" shows those metadata of each page under its title.
// Document text is only ever inserted as text, never as HTML.

const here = new URL('.', import.meta.url); // …/sextant/
const siteRoot = new URL('..', here);
const SETTINGS_KEY = 'sextant-llm';
// Results asked for while typing: several pages (fused as pages), each with at most
// SUB_RESULTS matching sections, so one page cannot fill the list; each result needs its text
// fragment, so not many more (BENCHMARKS.md, issue 10).
const SEARCH_RESULTS = 15;
const SUB_RESULTS = 3;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('aria-') || key.startsWith('data-') || key === 'role' || key === 'for') node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

/** A same-origin link for a result URL from the bundle, or null for anything else. */
function safeHref(url) {
  try {
    const resolved = new URL(url, siteRoot);
    return resolved.origin === location.origin && (resolved.protocol === 'http:' || resolved.protocol === 'https:') ? resolved.href : null;
  } catch {
    return null;
  }
}

/**
 * About `length` characters of `text` around its first highlighted word, as text nodes with
 * <mark> around the highlights (`[start, end]` string offsets from the core's analyzer).
 */
function snippet(text, highlights, length = 220) {
  const at = highlights[0]?.[0] ?? 0;
  let start = Math.max(0, at - 60);
  if (start > 0) start = text.indexOf(' ', start) + 1 || start;
  let end = Math.min(text.length, start + length);
  if (end < text.length) end = Math.max(text.lastIndexOf(' ', end), at + 1);
  const out = document.createDocumentFragment();
  const flat = (s) => s.replace(/\s+/g, ' ');
  if (start > 0) out.append('… ');
  let cursor = start;
  for (const [from, to] of highlights) {
    if (to <= start || from >= end) continue;
    const a = Math.max(from, start);
    const b = Math.min(to, end);
    if (a > cursor) out.append(flat(text.slice(cursor, a)));
    out.append(el('mark', { text: text.slice(a, b) }));
    cursor = b;
  }
  if (cursor < end) out.append(flat(text.slice(cursor, end)));
  if (end < text.length) out.append(' …');
  return out;
}

/** `data-sort="key:desc"` as the core's sort option (`key` alone is ascending), or null. */
function parseSort(text) {
  const [key, order = 'asc'] = (text ?? '').split(':').map((s) => s.trim());
  return key ? { [key]: order } : null;
}

class SearchWorker {
  constructor(url) {
    this.worker = new Worker(url, { type: 'module' });
    this.next = 1;
    this.handlers = new Map();
    this.listeners = [];
    this.worker.onmessage = ({ data }) => {
      if (data.id === 0) for (const listener of this.listeners) listener(data);
      else this.handlers.get(data.id)?.(data);
    };
    this.worker.onerror = (e) => {
      for (const handler of this.handlers.values()) handler({ type: 'error', code: 'WORKER', message: e.message || 'the search worker failed to start' });
    };
  }

  /** Calls `listener` with the events that belong to no request (the engine upgraded, …). */
  listen(listener) {
    this.listeners.push(listener);
  }

  /** Sends a request; `onEvent` gets every message for it; resolves on the final one. */
  request(message, onEvent = () => {}, final = ['loaded', 'results', 'answer', 'context', 'error']) {
    const id = this.next++;
    return {
      id,
      done: new Promise((resolve, reject) => {
        this.handlers.set(id, (data) => {
          onEvent(data);
          if (!final.includes(data.type)) return;
          this.handlers.delete(id);
          if (data.type === 'error') reject(Object.assign(new Error(data.message), { code: data.code, detail: data.detail, partial_answer: data.partial_answer }));
          else resolve(data);
        });
        this.worker.postMessage({ ...message, id });
      }),
    };
  }
}

class SearchBox {
  constructor(root) {
    this.root = root;
    this.ask = root.hasAttribute('data-ask');
    this.active = -1;
    this.latest = 0;
    this.engine = null;
    this.settings = this.loadSettings();
    this.build();
  }

  build() {
    const id = `sextant-${Math.random().toString(36).slice(2, 8)}`;
    this.input = el('input', {
      type: 'search',
      class: 'sextant-input',
      placeholder: this.root.dataset.placeholder ?? 'Search the docs',
      autocomplete: 'off',
      spellcheck: false,
      role: 'combobox',
      'aria-expanded': 'false',
      'aria-controls': `${id}-results`,
      'aria-label': 'Search',
    });
    this.progress = el('div', { class: 'sextant-progress', hidden: true }, el('div', { class: 'sextant-progress-fill' }), el('span', { class: 'sextant-progress-text' }));
    this.status = el('div', { class: 'sextant-status', 'aria-live': 'polite' });
    this.modeLine = el('div', { class: 'sextant-mode' });
    this.results = el('ol', { class: 'sextant-results', id: `${id}-results`, role: 'listbox' });
    this.filterPanel = el('div', { class: 'sextant-filters', hidden: true, role: 'group', 'aria-label': 'Filters' });
    this.chosen = new Map(); // filter name → the values ticked
    this.sort = parseSort(this.root.dataset.sort);
    this.showMeta = (this.root.dataset.showMeta ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const bar = el('div', { class: 'sextant-bar' }, this.input);
    if (this.ask) {
      this.askButton = el('button', { type: 'button', class: 'sextant-ask-button', text: 'Ask' });
      this.settingsButton = el('button', { type: 'button', class: 'sextant-settings-button', text: '⚙', title: 'LLM settings', 'aria-label': 'LLM settings' });
      bar.append(this.askButton, this.settingsButton);
      this.answer = el('div', { class: 'sextant-answer', 'aria-live': 'polite' });
      this.citations = el('ol', { class: 'sextant-citations' });
      this.note = el('p', { class: 'sextant-note' });
      this.askPanel = el('section', { class: 'sextant-ask', hidden: true, 'aria-label': 'Answer' }, el('h3', { text: 'Answer' }), this.answer, this.note, this.citations);
      this.dialog = this.buildDialog();
      this.askButton.onclick = () => this.askQuestion();
      this.settingsButton.onclick = () => this.openSettings();
    }
    this.root.replaceChildren(el('div', { class: 'sextant' }, bar, this.progress, this.filterPanel, this.status, this.modeLine, this.results, this.askPanel ?? null, this.dialog ?? null));
    let timer;
    this.input.addEventListener('focus', () => this.start(), { once: true });
    this.input.addEventListener('input', () => {
      this.start();
      clearTimeout(timer);
      timer = setTimeout(() => this.search(), 120);
    });
    this.input.addEventListener('keydown', (e) => this.key(e));
    document.addEventListener('click', (e) => {
      if (!this.root.contains(e.target)) this.results.replaceChildren();
    });
    if (this.root.hasAttribute('data-preload')) this.start();
  }

  buildDialog() {
    const field = (label, input) => el('label', { class: 'sextant-field' }, el('span', { text: label }), input);
    this.baseUrl = el('input', { type: 'url', name: 'baseUrl', placeholder: 'https://api.openai.com/v1', required: true });
    this.model = el('input', { type: 'text', name: 'model', placeholder: 'gpt-4o-mini', required: true });
    this.apiKey = el('input', { type: 'password', name: 'apiKey', autocomplete: 'off' });
    this.remember = el('input', { type: 'checkbox', name: 'remember' });
    const form = el(
      'form',
      { method: 'dialog' },
      el('h3', { text: 'Your LLM' }),
      el('p', { class: 'sextant-hint', text: 'Any OpenAI-compatible endpoint. The key is sent only to this URL and kept in memory unless you tick the box.' }),
      field('Base URL', this.baseUrl),
      field('Model', this.model),
      field('API key', this.apiKey),
      el('label', { class: 'sextant-check' }, this.remember, el('span', { text: 'Remember on this device' })),
      el('div', { class: 'sextant-dialog-buttons' }, el('button', { type: 'submit', value: 'save', text: 'Save' }), el('button', { type: 'submit', value: 'cancel', text: 'Cancel', formNoValidate: true })),
    );
    const dialog = el('dialog', { class: 'sextant-settings' }, form);
    dialog.addEventListener('close', () => {
      if (dialog.returnValue !== 'save') return;
      this.settings = { base_url: this.baseUrl.value.trim(), model: this.model.value.trim(), api_key: this.apiKey.value };
      if (this.remember.checked) localStorage.setItem(SETTINGS_KEY, JSON.stringify(this.settings));
      else localStorage.removeItem(SETTINGS_KEY);
      if (this.pendingAsk) this.askQuestion();
    });
    return dialog;
  }

  loadSettings() {
    try {
      return JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? 'null');
    } catch {
      return null;
    }
  }

  openSettings() {
    this.baseUrl.value = this.settings?.base_url ?? '';
    this.model.value = this.settings?.model ?? '';
    this.apiKey.value = this.settings?.api_key ?? '';
    this.remember.checked = localStorage.getItem(SETTINGS_KEY) !== null;
    this.dialog.showModal();
  }

  /** Loads the engine once: entry manifest (always fresh), then worker and files. */
  start() {
    this.engine ??= this.load().catch((e) => {
      this.progress.hidden = true;
      this.status.textContent = `Search is unavailable: ${e.message}`;
      this.engine = null;
      throw e;
    });
    return this.engine;
  }

  async load() {
    await registerServiceWorker();
    const manifest = await (await fetch(new URL('sextant.json', here), { cache: 'no-store' })).json();
    if (manifest.version !== 2 || !manifest.index) {
      throw new Error('this site\'s search files are from another version of sextant; rebuild them with `sextant build --site`');
    }
    const worker = new SearchWorker(new URL(manifest.worker, here));
    // The model loads in the background: progress in the bar, keyword results meanwhile.
    const total = manifest.bytes.model + manifest.bytes.tokenizer;
    const loaded = { model: 0, tokenizer: 0 };
    const fill = this.progress.querySelector('.sextant-progress-fill');
    const text = this.progress.querySelector('.sextant-progress-text');
    worker.listen((event) => {
      if (event.type === 'progress' && event.file in loaded) {
        loaded[event.file] = event.loaded;
        const sum = loaded.model + loaded.tokenizer;
        this.progress.hidden = sum >= total;
        fill.style.width = `${(Math.min(1, sum / total) * 100).toFixed(1)}%`;
        text.textContent = `Loading meaning search… ${(sum / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB (keyword results meanwhile)`;
      } else if (event.type === 'upgraded') {
        this.progress.hidden = true;
        // The same query again, now with meaning: only the result list changes, never the input.
        if (this.input.value.trim()) this.search();
      } else if (event.type === 'prefetched') {
        this.root.dataset.offline = 'ready'; // every index file is cached: search works offline
      } else if (event.type === 'degraded') {
        this.progress.hidden = true;
        this.modeNote = `Meaning search is unavailable (${event.message}); showing keyword results.`;
        this.showMode();
      }
    });
    const ready = await worker.request({
      type: 'load',
      index: new URL(manifest.index, here).href,
      model: new URL(manifest.model, here).href,
      tokenizer: new URL(manifest.tokenizer, here).href,
      offline: this.root.hasAttribute('data-offline'),
    }).done;
    this.hasFilters = ready.filters;
    this.worker = worker;
    if (this.input.value.trim()) this.search();
    return worker;
  }

  /** Says which results are shown: keyword only (meaning search still loading) or hybrid. */
  showMode() {
    this.results.dataset.mode = this.shownMode ?? '';
    this.modeLine.textContent = this.modeNote ?? (this.shownMode === 'keyword' ? 'Keyword results · meaning search is loading' : this.shownMode ? 'Keyword + meaning results' : '');
  }

  async search() {
    const query = this.input.value.trim();
    const ticket = ++this.latest;
    if (!query) {
      this.shownMode = null;
      this.render([], '');
      this.renderFilters(null);
      this.showMode();
      return;
    }
    const worker = await this.start();
    let response;
    try {
      // Results are shown grouped by page, so pages are what hybrid search fuses, each with its
      // best few sections.
      const options = { k: SEARCH_RESULTS, fuse_documents: true, sub_results: SUB_RESULTS, ...this.filterOptions() };
      response = await worker.request({ type: 'search', query, options }).done;
    } catch (e) {
      if (ticket === this.latest) this.status.textContent = e.message;
      return;
    }
    if (ticket !== this.latest) return; // a newer query is on its way
    this.shownMode = response.mode;
    this.render(response.results, query, response.fallback, response.did_you_mean);
    this.renderFilters(response.filter_counts);
    this.showMode();
  }

  /** The filters ticked (any of a filter's values, every filter), the sort, and counts asked for. */
  filterOptions() {
    const options = {};
    if (this.sort) options.sort = this.sort;
    if (!this.hasFilters) return options;
    options.filter_counts = true;
    const filters = {};
    for (const [name, values] of this.chosen) if (values.size) filters[name] = { any: [...values] };
    if (Object.keys(filters).length) options.filters = filters;
    return options;
  }

  /** One group of checkboxes a filter, each value with the matching pages that have it. */
  renderFilters(counts) {
    if (!counts || !Object.keys(counts).length) {
      this.filterPanel.hidden = true;
      return;
    }
    const groups = Object.entries(counts).map(([name, values]) => {
      const ticked = this.chosen.get(name) ?? new Set();
      const boxes = Object.entries(values).map(([value, n]) => {
        const box = el('input', { type: 'checkbox', checked: ticked.has(value), 'data-filter': name, 'data-value': value });
        box.addEventListener('change', () => {
          if (!this.chosen.has(name)) this.chosen.set(name, new Set());
          this.chosen.get(name)[box.checked ? 'add' : 'delete'](value);
          this.search();
        });
        return el('label', { class: 'sextant-filter-value' }, box, el('span', { text: value }), el('span', { class: 'sextant-count', text: String(n) }));
      });
      return el('fieldset', { class: 'sextant-filter' }, el('legend', { text: name }), ...boxes);
    });
    this.filterPanel.replaceChildren(...groups);
    this.filterPanel.hidden = false;
  }

  render(results, query, fallback = [], didYouMean = null) {
    this.active = -1;
    this.links = [];
    this.results.dataset.query = query; // which query these results answer
    this.input.setAttribute('aria-expanded', String(results.length > 0));
    if (!query) {
      this.status.textContent = '';
      this.results.replaceChildren();
      return;
    }
    // Words of the query the index does not hold were searched for as their nearest words; the
    // core spells the query as the results do ("did you mean"), a click searches for that.
    if (results.length && didYouMean) {
      const suggestion = el('button', { type: 'button', class: 'sextant-suggestion', text: didYouMean });
      suggestion.addEventListener('click', () => {
        this.input.value = didYouMean;
        this.input.focus();
        this.search();
      });
      this.status.replaceChildren('Did you mean ', suggestion, '?');
    } else {
      this.status.textContent = !results.length ? `No results for “${query}”` : fallback?.length ? `Not every word of “${query}” is in these pages: showing near matches` : '';
    }
    const pages = new Map();
    for (const r of results) {
      if (!pages.has(r.doc_id)) pages.set(r.doc_id, []);
      pages.get(r.doc_id).push(r);
    }
    const items = [];
    for (const hits of pages.values()) {
      const first = hits[0];
      const pageHref = safeHref(first.url.split('#')[0]);
      const title = el('a', { class: 'sextant-page-title', text: first.title || first.doc_id, role: 'option' });
      if (pageHref) title.href = pageHref;
      this.links.push(title);
      const shown = this.showMeta.filter((key) => first.metadata?.[key]).map((key) => `${key}: ${first.metadata[key]}`);
      const meta = shown.length ? el('div', { class: 'sextant-meta', text: shown.join(' · ') }) : null;
      const subs = el('ul', { class: 'sextant-subresults' });
      for (const hit of hits.slice(0, SUB_RESULTS)) {
        const crumbs = hit.heading_path.filter((h, i) => !(i === 0 && h === hit.title));
        // A section's text starts with its own heading, already shown as the breadcrumb.
        const heading = hit.heading_path.at(-1);
        const skip = heading && hit.text.startsWith(heading) ? heading.length : 0;
        const marks = (hit.highlights ?? []).filter(([from]) => from >= skip).map(([from, to]) => [from - skip, to - skip]);
        const link = el('a', { class: 'sextant-subresult', role: 'option' }, crumbs.length ? el('span', { class: 'sextant-heading', text: crumbs.join(' › ') }) : null, el('span', { class: 'sextant-snippet' }, snippet(hit.text.slice(skip), marks)));
        const href = safeHref(hit.url);
        if (href) link.href = href;
        this.links.push(link);
        subs.append(el('li', {}, link));
      }
      items.push(el('li', { class: 'sextant-page' }, title, meta, subs));
    }
    this.results.replaceChildren(...items);
  }

  key(event) {
    const n = this.links?.length ?? 0;
    if (event.key === 'ArrowDown' && n) {
      event.preventDefault();
      this.select((this.active + 1) % n);
    } else if (event.key === 'ArrowUp' && n) {
      event.preventDefault();
      this.select(this.active <= 0 ? n - 1 : this.active - 1);
    } else if (event.key === 'Enter') {
      const link = this.links?.[this.active];
      if (link?.href) {
        event.preventDefault();
        location.assign(link.href);
      } else if (this.ask && event.ctrlKey) {
        this.askQuestion();
      }
    } else if (event.key === 'Escape') {
      this.input.value = '';
      this.render([], '');
    }
  }

  select(index) {
    this.links[this.active]?.classList.remove('sextant-active');
    this.links[this.active]?.removeAttribute('aria-selected');
    this.active = index;
    const link = this.links[index];
    link.classList.add('sextant-active');
    link.setAttribute('aria-selected', 'true');
    link.scrollIntoView({ block: 'nearest' });
  }

  async askQuestion() {
    const question = this.input.value.trim();
    if (!question) {
      this.input.focus();
      return;
    }
    if (!this.settings?.base_url || !this.settings?.model) {
      this.pendingAsk = true;
      this.openSettings();
      return;
    }
    this.pendingAsk = false;
    this.results.replaceChildren(); // the answer replaces the result list
    const worker = await this.start();
    if (this.running) worker.worker.postMessage({ type: 'cancel', target: this.running });
    this.askPanel.hidden = false;
    this.answer.textContent = '';
    this.answer.classList.add('sextant-streaming');
    this.citations.replaceChildren();
    this.note.textContent = '';
    this.note.className = 'sextant-note';
    // The core's answer defaults (results, budget, similarity floor) apply: no options here.
    const request = worker.request({ type: 'ask', question, llm: this.settings, options: {} }, (event) => {
      if (event.type === 'token') this.answer.append(event.text);
    });
    this.running = request.id;
    let result;
    try {
      result = await request.done;
    } catch (e) {
      if (e.code === 'LLM_INCOMPLETE') {
        // Keep what arrived, and say plainly that it is not the whole answer.
        this.answer.textContent = e.partial_answer ?? this.answer.textContent;
        this.note.textContent = `This answer is incomplete: ${e.message}`;
        this.note.classList.add('sextant-warning');
      } else {
        this.note.textContent = `The LLM request failed: ${e.message}${e.detail ? ` (${e.detail})` : ''}`;
        this.note.classList.add('sextant-error');
      }
      return;
    } finally {
      this.answer.classList.remove('sextant-streaming');
      if (this.running === request.id) this.running = null;
    }
    this.showAnswer(result);
  }

  /** The final answer: citations become numbered links to the cited chunks; unknown ones are flagged. */
  showAnswer(result) {
    if (result.refused) {
      this.answer.textContent = result.answer;
      this.note.textContent = 'Nothing in these docs matches the question, so it was not sent to the model.';
      this.note.classList.add('sextant-refused');
      return;
    }
    const numbers = new Map();
    result.citations.filter((c) => c.valid).forEach((c, i) => numbers.set(c.chunk_id, i + 1));
    // The core located every citation group (spans, in string offsets): link them in place.
    const fragment = document.createDocumentFragment();
    let last = 0;
    for (const span of result.spans) {
      fragment.append(result.answer.slice(last, span.start));
      for (const id of span.chunk_ids) {
        const n = numbers.get(id);
        if (n) {
          const chunk = result.chunks.find((c) => c.chunk_id === id);
          const link = el('a', { class: 'sextant-cite', text: `[${n}]`, title: chunk?.title ?? id, 'data-chunk-id': id });
          const href = chunk && safeHref(chunk.url);
          if (href) link.href = href;
          fragment.append(link);
        } else {
          fragment.append(el('span', { class: 'sextant-cite sextant-cite-unknown', text: '[?]', title: `Cites “${id}”, which was not among the retrieved passages`, 'data-chunk-id': id }));
        }
      }
      last = span.end;
    }
    fragment.append(result.answer.slice(last));
    this.answer.replaceChildren(fragment);
    for (const [id, n] of numbers) {
      const chunk = result.chunks.find((c) => c.chunk_id === id);
      const link = el('a', { text: `${chunk?.title ?? id}${chunk?.heading_path?.length ? ' › ' + chunk.heading_path.at(-1) : ''}`, 'data-chunk-id': id });
      const href = chunk && safeHref(chunk.url);
      if (href) link.href = href;
      this.citations.append(el('li', { value: n }, link));
    }
    const notes = [];
    if (result.unknown_citations.length) {
      notes.push(`${result.unknown_citations.length} citation${result.unknown_citations.length > 1 ? 's point' : ' points'} at passages that were not retrieved (marked [?]).`);
    }
    if (!result.grounded) notes.push('This answer cites none of the retrieved passages: it is not grounded in the docs.');
    if (result.truncated) notes.push('The model stopped early (length limit or filter): the answer may be cut off.');
    if (notes.length) {
      this.note.textContent = notes.join(' ');
      this.note.classList.add(result.grounded ? 'sextant-warning' : 'sextant-ungrounded');
    }
  }
}

let registration;
/** Whether the service worker served this page (a visit after the first). */
const controlledAtLoad = Boolean(globalThis.navigator?.serviceWorker?.controller);
/**
 * Registers the offline service worker (once) and waits briefly for it to take control. On a first
 * visit it asks the worker to keep what the page loaded before the worker was there (the page, its
 * styles and scripts), so the page reloads offline.
 */
function registerServiceWorker() {
  if (!('serviceWorker' in navigator) || !window.isSecureContext) return Promise.resolve();
  if (!controlledAtLoad && !registration) {
    navigator.serviceWorker.ready
      .then((ready) => {
        const loaded = [location.href, ...performance.getEntriesByType('resource').map((e) => e.name)];
        ready.active?.postMessage({ sextant: 'keep', urls: loaded.filter((url) => new URL(url).origin === location.origin) });
      })
      .catch(() => {});
  }
  registration ??= navigator.serviceWorker
    .register(new URL('sextant-sw.js', siteRoot), { scope: siteRoot.pathname })
    .then(() => (navigator.serviceWorker.controller ? null : Promise.race([
      new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true })),
      new Promise((resolve) => setTimeout(resolve, 3000)),
    ])))
    .catch(() => {}); // search works without it, only not offline
  return registration;
}

function mount() {
  if (!document.querySelector(`link[href="${new URL('sextant-ui.css', here).href}"]`)) {
    document.head.append(el('link', { rel: 'stylesheet', href: new URL('sextant-ui.css', here).href }));
  }
  for (const root of document.querySelectorAll('div#search, [data-sextant-search]')) {
    if (!root.sextant) root.sextant = new SearchBox(root);
  }
  registerServiceWorker();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', mount, { once: true });
else mount();
