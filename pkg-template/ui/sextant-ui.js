// sextant's drop-in search UI. A page adds
//   <div id="search"></div>
//   <script type="module" src="/sextant/sextant-ui.js"></script>
// and gets search as you type (the engine runs in a Web Worker), results grouped by page with
// heading sub-results, keyboard navigation, a download progress bar and, with
// <div id="search" data-ask>, an "Ask" panel answering from the docs with the user's own LLM.
// When the site's pages have filters (data-sextant-filter, or Pagefind's data-pagefind-filter), a
// panel of checkboxes with the matching pages' counts narrows the results (values of one filter
// are alternatives, filters add up); data-sort="date:desc" orders results by a sort key,
// data-sort-options="date:desc=Newest,title:asc" offers a choice of orders beside relevance, and
// data-show-meta="author,date" shows those metadata of each page under its title.
// A site in several languages (<html lang> per page) has an index per language; the box searches
// its page's language's, with meaning only in data-meaning-languages (default "en", the model's;
// "*" for a multilingual model), keyword results elsewhere.
// data-merge-index='[{"url": "https://blog.example.com/sextant/", "weight": 0.5}]' searches other
// sites' indexes in the same box (their results link to them, scores times their weight).
// data-embed-url="https://docs.example.com/embed" (a sextant Worker's /embed) gives hybrid results
// from the first query, keyword ones shown while its vector comes, without downloading the model;
// if it fails, the model loads as usual.
// <div data-sextant-modal></div> is a button that opens the search in a dialog, as do Ctrl/⌘+K
// and "/" anywhere on the page (Esc closes it, focus stays inside while it is open).
// Every string the reader sees follows the page's language (<html lang>: English, French,
// German, Spanish, Japanese, Chinese) and any of them can be replaced with
// data-translations='{"placeholder": "…"}' (keys: STRINGS.en below).
// After each query the box dispatches a `search` event (bubbling) whose detail is {query, mode,
// pages, results, ms, filters}, for a site's own analytics (zero-result queries, say): nothing
// is sent anywhere by sextant.
// Document text is only ever inserted as text, never as HTML.

const here = new URL('.', import.meta.url); // …/sextant/
const siteRoot = new URL('..', here);
/**
 * The package folder (under `here`) that the site build which wrote this script wrote beside it,
 * e.g. "pkg.968e4b1af27132fb/": `sextant build --site` fills it in; null as the package ships.
 */
const BUILT_PACKAGE = null;
const SETTINGS_KEY = 'sextant-llm';
// Results asked for while typing: several pages (fused as pages), each with at most
// SUB_RESULTS matching sections, so one page cannot fill the list; each result needs its text
// fragment, so not many more (BENCHMARKS.md, issue 10).
const SEARCH_RESULTS = 15;
const SUB_RESULTS = 3;

/**
 * The UI's words, by language; `{name}` is filled in. A site replaces any of them with
 * data-translations (JSON) on the box.
 */
const STRINGS = {
  en: {
    placeholder: 'Search the docs',
    search: 'Search',
    open: 'Search the docs',
    close: 'Close',
    filters: 'Filters',
    sort: 'Order',
    relevance: 'Most relevant',
    pages: '{n} pages',
    one_page: '1 page',
    no_results: 'No results for “{query}”',
    near_matches: 'Not every word of “{query}” is in these pages: showing near matches',
    did_you_mean: 'Did you mean {suggestion}?',
    keyword_mode: 'Keyword results · meaning search is loading',
    hybrid_mode: 'Keyword + meaning results',
    keyword_language: 'Keyword results · meaning search is not available in this language',
    degraded: 'Meaning search is unavailable ({message}); showing keyword results.',
    loading: 'Loading meaning search… {loaded} of {total} MB (keyword results meanwhile)',
    unavailable: 'Search is unavailable: {message}',
    old_files: 'this site\'s search files are from another version of sextant; rebuild them with `sextant build --site`',
    ask: 'Ask',
    settings: 'LLM settings',
    answer: 'Answer',
    your_llm: 'Your LLM',
    llm_hint: 'Any OpenAI-compatible endpoint. The key is sent only to this URL and kept in memory unless you tick the box.',
    base_url: 'Base URL',
    model: 'Model',
    api_key: 'API key',
    remember: 'Remember on this device',
    save: 'Save',
    cancel: 'Cancel',
    incomplete: 'This answer is incomplete: {message}',
    llm_failed: 'The LLM request failed: {message}',
    refused: 'Nothing in these docs matches the question, so it was not sent to the model.',
    cites_unknown: 'Cites “{id}”, which was not among the retrieved passages',
    unknown_citations: '{n} citation(s) point at passages that were not retrieved (marked [?]).',
    ungrounded: 'This answer cites none of the retrieved passages: it is not grounded in the docs.',
    truncated: 'The model stopped early (length limit or filter): the answer may be cut off.',
  },
  fr: {
    placeholder: 'Rechercher dans la documentation',
    search: 'Rechercher',
    open: 'Rechercher dans la documentation',
    close: 'Fermer',
    filters: 'Filtres',
    sort: 'Ordre',
    relevance: 'Les plus pertinents',
    pages: '{n} pages',
    one_page: '1 page',
    no_results: 'Aucun résultat pour « {query} »',
    near_matches: 'Tous les mots de « {query} » ne sont pas dans ces pages : résultats approchants',
    did_you_mean: 'Vouliez-vous dire {suggestion} ?',
    keyword_mode: 'Résultats par mots-clés · la recherche par le sens se charge',
    hybrid_mode: 'Résultats par mots-clés et par le sens',
    keyword_language: 'Résultats par mots-clés · la recherche par le sens n\'est pas disponible dans cette langue',
    degraded: 'La recherche par le sens est indisponible ({message}) ; résultats par mots-clés.',
    loading: 'Chargement de la recherche par le sens… {loaded} sur {total} Mo (résultats par mots-clés en attendant)',
    unavailable: 'La recherche est indisponible : {message}',
    ask: 'Demander',
    settings: 'Réglages du LLM',
    answer: 'Réponse',
    your_llm: 'Votre LLM',
    llm_hint: 'Tout point d\'accès compatible OpenAI. La clé n\'est envoyée qu\'à cette URL et reste en mémoire sauf si vous cochez la case.',
    base_url: 'URL de base',
    model: 'Modèle',
    api_key: 'Clé d\'API',
    remember: 'Mémoriser sur cet appareil',
    save: 'Enregistrer',
    cancel: 'Annuler',
    incomplete: 'Cette réponse est incomplète : {message}',
    llm_failed: 'La requête au LLM a échoué : {message}',
    refused: 'Rien dans cette documentation ne correspond à la question : elle n\'a pas été envoyée au modèle.',
    cites_unknown: 'Cite « {id} », qui ne fait pas partie des passages trouvés',
    unknown_citations: '{n} citation(s) renvoient à des passages qui n\'ont pas été trouvés (marqués [?]).',
    ungrounded: 'Cette réponse ne cite aucun des passages trouvés : elle ne s\'appuie pas sur la documentation.',
    truncated: 'Le modèle s\'est arrêté tôt (limite de longueur ou filtre) : la réponse est peut-être coupée.',
  },
  de: {
    placeholder: 'Dokumentation durchsuchen',
    search: 'Suchen',
    open: 'Dokumentation durchsuchen',
    close: 'Schließen',
    filters: 'Filter',
    sort: 'Reihenfolge',
    relevance: 'Relevanteste',
    pages: '{n} Seiten',
    one_page: '1 Seite',
    no_results: 'Keine Ergebnisse für „{query}“',
    near_matches: 'Nicht jedes Wort von „{query}“ steht in diesen Seiten: ähnliche Treffer',
    did_you_mean: 'Meinten Sie {suggestion}?',
    keyword_mode: 'Stichwort-Ergebnisse · die Bedeutungssuche lädt',
    hybrid_mode: 'Stichwort- und Bedeutungs-Ergebnisse',
    keyword_language: 'Stichwort-Ergebnisse · die Bedeutungssuche gibt es in dieser Sprache nicht',
    unavailable: 'Die Suche ist nicht verfügbar: {message}',
    ask: 'Fragen',
    answer: 'Antwort',
    save: 'Speichern',
    cancel: 'Abbrechen',
  },
  es: {
    placeholder: 'Buscar en la documentación',
    search: 'Buscar',
    open: 'Buscar en la documentación',
    close: 'Cerrar',
    filters: 'Filtros',
    sort: 'Orden',
    relevance: 'Más relevantes',
    pages: '{n} páginas',
    one_page: '1 página',
    no_results: 'No hay resultados para «{query}»',
    near_matches: 'No todas las palabras de «{query}» están en estas páginas: resultados aproximados',
    did_you_mean: '¿Quiso decir {suggestion}?',
    keyword_mode: 'Resultados por palabras clave · la búsqueda por significado se está cargando',
    hybrid_mode: 'Resultados por palabras clave y significado',
    keyword_language: 'Resultados por palabras clave · la búsqueda por significado no está disponible en este idioma',
    unavailable: 'La búsqueda no está disponible: {message}',
    ask: 'Preguntar',
    answer: 'Respuesta',
    save: 'Guardar',
    cancel: 'Cancelar',
  },
  ja: {
    placeholder: 'ドキュメントを検索',
    search: '検索',
    open: 'ドキュメントを検索',
    close: '閉じる',
    filters: 'フィルター',
    sort: '並び順',
    relevance: '関連度順',
    pages: '{n} ページ',
    one_page: '1 ページ',
    no_results: '「{query}」に一致する結果はありません',
    near_matches: '「{query}」の一部の語はこれらのページにありません：近い結果を表示しています',
    did_you_mean: 'もしかして：{suggestion}',
    keyword_mode: 'キーワード検索の結果 · 意味検索を読み込み中',
    hybrid_mode: 'キーワード検索と意味検索の結果',
    keyword_language: 'キーワード検索の結果 · この言語では意味検索は利用できません',
    unavailable: '検索を利用できません：{message}',
    ask: '質問',
    answer: '回答',
    save: '保存',
    cancel: 'キャンセル',
  },
  zh: {
    placeholder: '搜索文档',
    search: '搜索',
    open: '搜索文档',
    close: '关闭',
    filters: '筛选',
    sort: '排序',
    relevance: '最相关',
    pages: '{n} 个页面',
    one_page: '1 个页面',
    no_results: '没有与“{query}”匹配的结果',
    near_matches: '“{query}”中的部分词语不在这些页面中：显示相近结果',
    did_you_mean: '您是不是要找：{suggestion}',
    keyword_mode: '关键词结果 · 语义搜索加载中',
    hybrid_mode: '关键词与语义结果',
    keyword_language: '关键词结果 · 此语言不支持语义搜索',
    unavailable: '搜索不可用：{message}',
    ask: '提问',
    answer: '回答',
    save: '保存',
    cancel: '取消',
  },
};

/**
 * The words for `root`: its language's (the nearest lang attribute, <html lang>; a language's
 * missing words in English), then the site's own from data-translations.
 */
function stringsFor(root) {
  const lang = (root.closest('[lang]')?.getAttribute('lang') ?? '').toLowerCase();
  const own = STRINGS[lang] ?? STRINGS[lang.split('-')[0]] ?? {};
  let site = {};
  try {
    site = JSON.parse(root.dataset.translations ?? '{}');
  } catch {
    console.warn('sextant: data-translations is not JSON; using the built-in strings');
  }
  const words = { ...STRINGS.en, ...own, ...site };
  return (key, values = {}) => String(words[key] ?? key).replace(/\{(\w+)\}/g, (m, name) => (name in values ? String(values[name]) : m));
}

/** `data-sort-options="date:desc=Newest,title:asc"`: [{value, sort, label}] (label: the spec). */
function parseSortOptions(text) {
  return (text ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const [spec, label] = part.split('=').map((s) => s.trim());
      return { value: spec, sort: parseSort(spec), label: label || spec };
    })
    .filter((o) => o.sort);
}

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

/**
 * A link for a result URL from the index: on this site (same origin), or on the merged site the
 * result comes from (`root`, that site's root: its origin only); null for anything else.
 */
function safeHref(url, root = siteRoot) {
  try {
    const resolved = new URL(url, root);
    return resolved.origin === new URL(root).origin && (resolved.protocol === 'http:' || resolved.protocol === 'https:') ? resolved.href : null;
  } catch {
    return null;
  }
}

/**
 * The other sites searched in this box: data-merge-index (JSON, [{url, weight?, name?}], `url`
 * the folder holding a site's sextant.json) and the build's `merge` list in sextant.json. Each is
 * read from its sextant.json; one that cannot be read is left out with a warning.
 */
async function mergedSites(root, manifest) {
  let listed = [];
  try {
    listed = [...(manifest.merge ?? []), ...JSON.parse(root.dataset.mergeIndex ?? '[]')];
  } catch {
    console.warn('sextant: data-merge-index is not JSON like [{"url": "https://other.example/sextant/", "weight": 0.5}]; searching this site only');
  }
  const sites = await Promise.all(
    listed.map(async (site, i) => {
      try {
        const folder = new URL(String(site.url).replace(/\/?$/, '/'), location.href);
        const entry = await (await fetch(new URL('sextant.json', folder), { cache: 'no-store' })).json();
        if (entry.version !== 2 || !entry.index) throw new Error('its search files are from another version of sextant');
        return { name: site.name ?? `site${i + 1}`, index: new URL(entry.index, folder).href, weight: site.weight ?? 1, root: new URL('..', folder).href };
      } catch (e) {
        console.warn(`sextant: the merged site ${site.url} is left out: ${e.message}`);
        return null;
      }
    }),
  );
  return sites.filter(Boolean);
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
    this.modal = root.hasAttribute('data-sextant-modal');
    this.t = stringsFor(root);
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
      placeholder: this.root.dataset.placeholder ?? this.t('placeholder'),
      autocomplete: 'off',
      spellcheck: false,
      role: 'combobox',
      'aria-expanded': 'false',
      'aria-controls': `${id}-results`,
      'aria-autocomplete': 'list',
      'aria-label': this.t('search'),
    });
    this.id = id;
    // The browser's own `search` event of a search field stays inside: the box's bubbles.
    this.input.addEventListener('search', (e) => e.stopPropagation());
    this.progress = el('div', { class: 'sextant-progress', hidden: true }, el('div', { class: 'sextant-progress-fill' }), el('span', { class: 'sextant-progress-text' }));
    this.status = el('div', { class: 'sextant-status', 'aria-live': 'polite' });
    this.modeLine = el('div', { class: 'sextant-mode' });
    // How many pages the query found, seen and read out by screen readers.
    this.summary = el('div', { class: 'sextant-summary', role: 'status', 'aria-live': 'polite' });
    this.results = el('ol', { class: 'sextant-results', id: `${id}-results`, role: 'listbox' });
    this.filterPanel = el('div', { class: 'sextant-filters', hidden: true, role: 'group', 'aria-label': this.t('filters') });
    this.chosen = new Map(); // filter name → the values ticked
    this.sort = parseSort(this.root.dataset.sort);
    const orders = parseSortOptions(this.root.dataset.sortOptions);
    if (orders.length) {
      // Relevance (or data-sort) first, then the site's orders.
      this.sortSelect = el('select', { class: 'sextant-sort', 'aria-label': this.t('sort') }, el('option', { value: '', text: this.t('relevance') }), ...orders.map((o) => el('option', { value: o.value, text: o.label })));
      const initial = this.sort;
      this.sortSelect.addEventListener('change', () => {
        this.sort = orders.find((o) => o.value === this.sortSelect.value)?.sort ?? initial;
        this.search();
      });
    }
    this.showMeta = (this.root.dataset.showMeta ?? '').split(',').map((s) => s.trim()).filter(Boolean);
    const bar = el('div', { class: 'sextant-bar' }, this.input, this.sortSelect ?? null);
    if (this.ask) {
      this.askButton = el('button', { type: 'button', class: 'sextant-ask-button', text: this.t('ask') });
      this.settingsButton = el('button', { type: 'button', class: 'sextant-settings-button', text: '⚙', title: this.t('settings'), 'aria-label': this.t('settings') });
      bar.append(this.askButton, this.settingsButton);
      this.answer = el('div', { class: 'sextant-answer', 'aria-live': 'polite' });
      this.citations = el('ol', { class: 'sextant-citations' });
      this.note = el('p', { class: 'sextant-note' });
      this.askPanel = el('section', { class: 'sextant-ask', hidden: true, 'aria-label': this.t('answer') }, el('h3', { text: this.t('answer') }), this.answer, this.note, this.citations);
      this.dialog = this.buildDialog();
      this.askButton.onclick = () => this.askQuestion();
      this.settingsButton.onclick = () => this.openSettings();
    }
    const box = el('div', { class: 'sextant' }, bar, this.progress, this.filterPanel, this.status, this.summary, this.modeLine, this.results, this.askPanel ?? null, this.dialog ?? null);
    if (this.modal) this.buildModal(box);
    else this.root.replaceChildren(box);
    let timer;
    this.input.addEventListener('focus', () => this.start(), { once: true });
    this.input.addEventListener('input', () => {
      this.start();
      clearTimeout(timer);
      timer = setTimeout(() => this.search(), 120);
    });
    this.input.addEventListener('keydown', (e) => this.key(e));
    document.addEventListener('click', (e) => {
      if (!this.modal && !this.root.contains(e.target)) this.results.replaceChildren();
    });
    if (this.root.hasAttribute('data-preload')) this.start();
  }

  /**
   * The modal: a button on the page, the box in a <dialog> opened by it, Ctrl/⌘+K or "/". A modal
   * dialog keeps focus inside (the page behind is inert) and closes on Esc; focus then returns
   * to where it was.
   */
  buildModal(box) {
    const mac = /Mac|iPhone|iPad/.test(navigator.platform ?? '');
    this.trigger = el('button', { type: 'button', class: 'sextant-trigger', 'aria-haspopup': 'dialog', 'aria-keyshortcuts': 'Control+K Meta+K /' }, el('span', { text: this.t('open') }), el('kbd', { text: mac ? '⌘K' : 'Ctrl K' }));
    const close = el('button', { type: 'button', class: 'sextant-close', text: '×', 'aria-label': this.t('close') });
    this.modalDialog = el('dialog', { class: 'sextant-modal', 'aria-label': this.t('search') }, close, box);
    this.root.replaceChildren(this.trigger, this.modalDialog);
    this.trigger.addEventListener('click', () => this.open());
    close.addEventListener('click', () => this.modalDialog.close());
    // A click on the backdrop (the dialog itself, outside its box) closes it.
    this.modalDialog.addEventListener('click', (e) => {
      if (e.target === this.modalDialog) this.modalDialog.close();
    });
    this.modalDialog.addEventListener('close', () => this.returnFocus?.focus());
    // Tab and Shift+Tab go round the dialog's own controls, never out of it.
    this.modalDialog.addEventListener('keydown', (e) => {
      if (e.key !== 'Tab') return;
      const focusable = [...this.modalDialog.querySelectorAll('a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])')].filter((n) => !n.disabled && n.getClientRects().length && !n.closest('[hidden], dialog:not([open])'));
      if (!focusable.length) return;
      const first = focusable[0];
      const last = focusable.at(-1);
      if (!e.shiftKey && (document.activeElement === last || !this.modalDialog.contains(document.activeElement))) {
        e.preventDefault();
        first.focus();
      } else if (e.shiftKey && document.activeElement === first) {
        e.preventDefault();
        last.focus();
      }
    });
    document.addEventListener('keydown', (e) => {
      if (this.modalDialog.open || e.defaultPrevented) return;
      const typing = e.target.closest?.('input, textarea, select, [contenteditable]:not([contenteditable="false"])');
      if ((e.key === 'k' || e.key === 'K') && (e.ctrlKey || e.metaKey) && !e.altKey) {
        e.preventDefault();
        this.open();
      } else if (e.key === '/' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        this.open();
      }
    });
  }

  open() {
    if (this.modalDialog.open) return;
    this.returnFocus = document.activeElement;
    this.modalDialog.showModal();
    this.input.focus();
    this.input.select();
    this.start().catch(() => {}); // the status line says why
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
      el('h3', { text: this.t('your_llm') }),
      el('p', { class: 'sextant-hint', text: this.t('llm_hint') }),
      field(this.t('base_url'), this.baseUrl),
      field(this.t('model'), this.model),
      field(this.t('api_key'), this.apiKey),
      el('label', { class: 'sextant-check' }, this.remember, el('span', { text: this.t('remember') })),
      el('div', { class: 'sextant-dialog-buttons' }, el('button', { type: 'submit', value: 'save', text: this.t('save') }), el('button', { type: 'submit', value: 'cancel', text: this.t('cancel'), formNoValidate: true })),
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
      this.status.textContent = this.t('unavailable', { message: e.message });
      this.engine = null;
      throw e;
    });
    return this.engine;
  }

  async load() {
    await registerServiceWorker();
    // The keyword engine's wasm, the largest file of a first query, is fetched beside the entry
    // manifest from the package folder the site build named in this script, and used if the
    // manifest names the same folder; else that fetch is stopped (a browser may hold this script
    // from an earlier build) and the manifest's is made. Without a name (the script as the
    // package ships it) the wasm comes after the manifest. Compiled here, the module is sent to
    // the worker.
    const compiled = (url, signal) => WebAssembly.compileStreaming(fetch(url, { signal })).catch(() => null);
    const guessed = BUILT_PACKAGE && new URL(`${BUILT_PACKAGE}sextant_keyword_bg.wasm`, here).href;
    const guess = new AbortController();
    const early = guessed && compiled(guessed, guess.signal);
    const manifest = await (await fetch(new URL('sextant.json', here), { cache: 'no-store' })).json();
    if (manifest.version !== 2 || !manifest.index) {
      throw new Error(this.t('old_files'));
    }
    const workerUrl = new URL(manifest.worker, here);
    const wasmUrl = new URL('../sextant_keyword_bg.wasm', workerUrl).href;
    let keywordWasm = early;
    if (wasmUrl !== guessed) {
      guess.abort();
      keywordWasm = compiled(wasmUrl);
    }
    const worker = new SearchWorker(workerUrl);
    keywordWasm.then((module) => worker.worker.postMessage({ type: 'keyword-wasm', module }));
    this.merged = await mergedSites(this.root, manifest);
    // The model loads in the background: progress in the bar, keyword results meanwhile.
    const total = (manifest.bytes.model_encoder || manifest.bytes.model_body || manifest.bytes.model) + manifest.bytes.tokenizer;
    const loaded = { model: 0, tokenizer: 0 };
    const fill = this.progress.querySelector('.sextant-progress-fill');
    const text = this.progress.querySelector('.sextant-progress-text');
    worker.listen((event) => {
      if (event.type === 'progress' && event.file in loaded) {
        loaded[event.file] = event.loaded;
        const sum = loaded.model + loaded.tokenizer;
        this.progress.hidden = sum >= total;
        fill.style.width = `${(Math.min(1, sum / total) * 100).toFixed(1)}%`;
        text.textContent = this.t('loading', { loaded: (sum / 1e6).toFixed(1), total: (total / 1e6).toFixed(1) });
      } else if (event.type === 'upgraded') {
        this.progress.hidden = true;
        // The same query again, now with meaning: only the result list changes, never the input.
        if (this.input.value.trim()) this.search({ again: true });
      } else if (event.type === 'refine') {
        // The query's meaning search is ready (its vector came from data-embed-url, or the files
        // it fetched are here): the same query again, now with meaning.
        if (this.input.value.trim() === event.query) this.search({ again: true });
      } else if (event.type === 'embed-failed') {
        console.warn(`sextant: data-embed-url failed (${event.message}); loading the model instead`);
      } else if (event.type === 'prefetched') {
        this.root.dataset.offline = 'ready'; // every index file is cached: search works offline
      } else if (event.type === 'degraded') {
        this.progress.hidden = true;
        this.modeNote = this.t('degraded', { message: event.message });
        this.showMode();
      }
    });
    // A site in several languages has an index for each: the page's language's, else the main one.
    const lang = (this.root.closest('[lang]')?.getAttribute('lang') ?? '').split(/[-_]/)[0].toLowerCase();
    const language = manifest.languages?.[lang] ? lang : manifest.language || 'en';
    // The model reads the languages data-meaning-languages names (English by default; "*" for a
    // multilingual model): elsewhere results stay keyword and the model is not fetched.
    const meaning = (this.root.dataset.meaningLanguages ?? 'en').split(',').map((s) => s.trim().toLowerCase());
    const withMeaning = meaning.includes('*') || meaning.includes(language);
    if (!withMeaning) {
      this.modeNote = this.t('keyword_language');
      this.showMode();
    }
    const ready = await worker.request({
      type: 'load',
      keywordWasm: true, // its module comes in a message of its own (above)
      index: new URL(manifest.languages?.[language] ?? manifest.index, here).href,
      // The model without its word table where the build cut one (a query fetches its tokens'
      // rows), as an encoder file where the build wrote one (run without tract: a smaller wasm).
      model: withMeaning ? new URL(manifest.model_encoder ?? manifest.model_body ?? manifest.model, here).href : undefined,
      encoder: withMeaning && Boolean(manifest.model_encoder),
      tokenizer: withMeaning ? new URL(manifest.tokenizer, here).href : undefined,
      offline: this.root.hasAttribute('data-offline'),
      embed: withMeaning && this.root.dataset.embedUrl ? new URL(this.root.dataset.embedUrl, location.href).href : undefined,
      merge: this.merged.map(({ name, index, weight }) => ({ name, index, weight })),
    }).done;
    for (const failure of ready.failed ?? []) console.warn(`sextant: the merged site ${failure.base} is left out: ${failure.message}`);
    this.hasFilters = ready.filters;
    this.worker = worker;
    // A query already in the field (the browser restored it) is searched now, unless a search is
    // waiting for this engine: a second search of the same query would replace its keyword
    // results, and with data-embed-url the first query then showed nothing until its hybrid ones.
    if (this.input.value.trim() && !this.awaitingEngine) this.search();
    return worker;
  }

  /** Says which results are shown: keyword only (meaning search still loading) or hybrid. */
  showMode() {
    this.results.dataset.mode = this.shownMode ?? '';
    this.modeLine.textContent = this.modeNote ?? (this.shownMode === 'keyword' ? this.t('keyword_mode') : this.shownMode ? this.t('hybrid_mode') : '');
  }

  /**
   * Searches for the input's query and shows the results. `again`: the same query run again now
   * that meaning search is ready; the query's `search` event was (or will be) sent by the run the
   * reader started, so it is not counted twice.
   */
  async search({ again = false } = {}) {
    const query = this.input.value.trim();
    const ticket = ++this.latest;
    if (!again) this.unreported = true;
    if (!query) {
      this.shownMode = null;
      this.render([], '');
      this.renderFilters(null);
      this.showMode();
      return;
    }
    this.awaitingEngine = (this.awaitingEngine ?? 0) + 1;
    let worker;
    try {
      worker = await this.start();
    } finally {
      this.awaitingEngine -= 1;
    }
    let response;
    let options;
    const started = performance.now();
    try {
      // Results are shown grouped by page, so pages are what hybrid search fuses, each with its
      // best few sections.
      options = { k: SEARCH_RESULTS, fuse_documents: true, sub_results: SUB_RESULTS, ...this.filterOptions() };
      response = await worker.request({ type: 'search', query, options }).done;
    } catch (e) {
      if (ticket === this.latest) this.status.textContent = e.message;
      return;
    }
    if (ticket !== this.latest) return; // a newer query is on its way
    this.shownMode = response.mode;
    const pages = this.render(response.results, query, response.fallback, response.did_you_mean);
    this.renderFilters(response.filter_counts);
    this.showMode();
    // For the site's own analytics, if it listens (nothing leaves the page): one event per query
    // the reader asked, with the first results shown.
    if (!this.unreported) return;
    this.unreported = false;
    const detail = { query, mode: response.mode, pages, results: response.results.length, ms: Math.round(performance.now() - started), filters: options.filters ?? null };
    this.root.dispatchEvent(new CustomEvent('search', { bubbles: true, detail }));
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
    this.input.removeAttribute('aria-activedescendant');
    if (!query) {
      this.status.textContent = '';
      this.summary.textContent = '';
      this.results.replaceChildren();
      return 0;
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
      const [before, after = ''] = this.t('did_you_mean').split('{suggestion}');
      this.status.replaceChildren(before, suggestion, after);
    } else {
      this.status.textContent = !results.length ? this.t('no_results', { query }) : fallback?.length ? this.t('near_matches', { query }) : '';
    }
    const pages = new Map();
    for (const r of results) {
      const key = `${r.base ?? ''}\n${r.doc_id}`; // the same path on two sites is two pages
      if (!pages.has(key)) pages.set(key, []);
      pages.get(key).push(r);
    }
    const items = [];
    for (const hits of pages.values()) {
      const first = hits[0];
      // A merged site's results link to that site.
      const root = this.merged?.find((m) => m.name === first.base)?.root ?? siteRoot;
      const pageHref = safeHref(first.url.split('#')[0], root);
      const title = el('a', { class: 'sextant-page-title', text: first.title || first.doc_id, role: 'option' });
      if (pageHref) title.href = pageHref;
      this.links.push(title);
      const shown = this.showMeta.filter((key) => first.metadata?.[key]).map((key) => `${key}: ${first.metadata[key]}`);
      const meta = shown.length ? el('div', { class: 'sextant-meta', text: shown.join(' · ') }) : null;
      // A listbox holds options and groups of them: each page is a group named by its title, its
      // list only the layout of its options.
      const subs = el('ul', { class: 'sextant-subresults', role: 'presentation' });
      for (const hit of hits.slice(0, SUB_RESULTS)) {
        const crumbs = hit.heading_path.filter((h, i) => !(i === 0 && h === hit.title));
        // A section's text starts with its own heading, already shown as the breadcrumb.
        const heading = hit.heading_path.at(-1);
        const skip = heading && hit.text.startsWith(heading) ? heading.length : 0;
        const marks = (hit.highlights ?? []).filter(([from]) => from >= skip).map(([from, to]) => [from - skip, to - skip]);
        const link = el('a', { class: 'sextant-subresult', role: 'option' }, crumbs.length ? el('span', { class: 'sextant-heading', text: crumbs.join(' › ') }) : null, el('span', { class: 'sextant-snippet' }, snippet(hit.text.slice(skip), marks)));
        const href = safeHref(hit.url, root);
        if (href) link.href = href;
        this.links.push(link);
        subs.append(el('li', { role: 'presentation' }, link));
      }
      const site = root === siteRoot ? null : el('div', { class: 'sextant-site', text: new URL(root).host });
      items.push(el('li', { class: 'sextant-page', role: 'group', 'aria-label': title.textContent, 'data-base': first.base ?? '' }, title, site, meta, subs));
    }
    this.results.replaceChildren(...items);
    this.links.forEach((link, i) => {
      link.id = `${this.id}-option-${i}`;
    });
    this.summary.textContent = pages.size ? (pages.size === 1 ? this.t('one_page') : this.t('pages', { n: pages.size })) : '';
    return pages.size;
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
    } else if (event.key === 'Escape' && this.modal) {
      event.preventDefault(); // a search field would only clear itself
      this.modalDialog.close();
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
    this.input.setAttribute('aria-activedescendant', link.id);
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
        this.note.textContent = this.t('incomplete', { message: e.message });
        this.note.classList.add('sextant-warning');
      } else {
        this.note.textContent = this.t('llm_failed', { message: `${e.message}${e.detail ? ` (${e.detail})` : ''}` });
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
      this.note.textContent = this.t('refused');
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
          fragment.append(el('span', { class: 'sextant-cite sextant-cite-unknown', text: '[?]', title: this.t('cites_unknown', { id }), 'data-chunk-id': id }));
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
      notes.push(this.t('unknown_citations', { n: result.unknown_citations.length }));
    }
    if (!result.grounded) notes.push(this.t('ungrounded'));
    if (result.truncated) notes.push(this.t('truncated'));
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
    .then((registered) => {
      if (navigator.serviceWorker.controller) return null;
      // A worker already active that does not control this page will not take it (a hard reload
      // bypasses it): nothing to wait for. A new one takes the page when it activates.
      const settled = registered.active?.state === 'activated' && !registered.installing && !registered.waiting;
      if (settled) return null;
      return Promise.race([
        new Promise((resolve) => navigator.serviceWorker.addEventListener('controllerchange', resolve, { once: true })),
        new Promise((resolve) => setTimeout(resolve, 3000)),
      ]);
    })
    .catch(() => {}); // search works without it, only not offline
  return registration;
}

function mount() {
  if (!document.querySelector(`link[href="${new URL('sextant-ui.css', here).href}"]`)) {
    document.head.append(el('link', { rel: 'stylesheet', href: new URL('sextant-ui.css', here).href }));
  }
  for (const root of document.querySelectorAll('div#search, [data-sextant-search], [data-sextant-modal]')) {
    if (!root.sextant) root.sextant = new SearchBox(root);
  }
  registerServiceWorker();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', mount, { once: true });
else mount();
