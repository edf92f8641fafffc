// Builds the demo documentation site: www/content/*.md (and docs/MIGRATING-FROM-PAGEFIND.md) →
// <out>/<page>/index.html, each page
// with the site's navigation and the drop-in search UI; each page's front matter `section` is its
// search filter (data-sextant-filter) and shown with its results (data-sextant-meta), its `order`
// a sort key (data-sextant-sort) the box offers beside relevance; the home page opens the search
// as a modal (data-sextant-modal: a button, Ctrl/⌘+K or "/"). Then `sextant build --site <out>`
// adds the search files. A page's front matter `lang` is its <html lang>: the demo has a French and
// a Japanese page, which the build indexes apart, each with its language's analyzer. Usage: node www/build-site.mjs [out dir]   (default www/dist/site)
import { readdir, readFile, writeFile, mkdir, rm, copyFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Marked } from 'marked';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(process.argv[2] ?? path.join(here, 'dist/site'));
const content = path.join(here, 'content');

const escape = (s) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const slugify = (s) => s.toLowerCase().trim().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');

function frontMatter(text) {
  const m = text.match(/^---\n([\s\S]*?)\n---\n/);
  if (!m) return [{}, text];
  const meta = Object.fromEntries(m[1].split('\n').map((l) => l.split(/:\s*/, 2)).filter((p) => p.length === 2));
  return [meta, text.slice(m[0].length)];
}

// Pages of the repository's docs/ that are the site's too (one text for both).
const fromDocs = { 'MIGRATING-FROM-PAGEFIND.md': 'migrating-from-pagefind' };
const sources = [
  ...(await readdir(content)).filter((f) => f.endsWith('.md')).sort().map((file) => [path.join(content, file), file.replace(/\.md$/, '')]),
  ...Object.entries(fromDocs).map(([file, slug]) => [path.join(here, '../docs', file), slug]),
];
const pages = [];
for (const [file, slug] of sources) {
  const [meta, body] = frontMatter(await readFile(file, 'utf8'));
  pages.push({ slug, title: meta.title ?? slug, order: Number(meta.order ?? 99), section: meta.section ?? 'Guide', lang: meta.lang ?? 'en', body });
}
pages.sort((a, b) => a.order - b.order || a.slug.localeCompare(b.slug));

function render(markdown) {
  const seen = new Map();
  const marked = new Marked({
    renderer: {
      heading({ tokens, depth }) {
        const text = this.parser.parseInline(tokens);
        let id = slugify(tokens.map((t) => t.raw ?? t.text ?? '').join('').replace(/`/g, ''));
        const n = seen.get(id) ?? 0;
        seen.set(id, n + 1);
        if (n) id = `${id}-${n}`;
        return `<h${depth} id="${id}">${text}</h${depth}>\n`;
      },
    },
  });
  return marked.parse(markdown);
}

function layout(page, html) {
  const nav = pages
    .map((p) => `<li><a href="/${p.slug}/"${p.slug === page.slug ? ' aria-current="page"' : ''}>${escape(p.title)}</a></li>`)
    .join('\n        ');
  return `<!doctype html>
<html lang="${page.lang}">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escape(page.title)} · sextant</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/site.css">
</head>
<body>
  <header class="site-header">
    <a class="brand" href="/">sextant</a>
    ${page.slug ? '<div id="search"' : '<div data-sextant-modal'} data-ask data-offline data-show-meta="section" data-sort-options="order:asc=Reading order" data-placeholder="Search or ask the sextant docs"></div>
  </header>
  <div class="site-body">
    <nav class="site-nav" aria-label="Docs">
      <ul>
        ${nav}
      </ul>
      <p><a href="/research/">Research workspace</a>: search your own documents in the browser</p>
    </nav>
    <main data-sextant-filter="section:${escape(page.section)}" data-sextant-meta="section:${escape(page.section)}" data-sextant-sort="order:${page.order}">
${html}
    </main>
  </div>
  <footer class="site-footer">sextant — search that runs where the reader is.</footer>
  <script type="module" src="/sextant/sextant-ui.js"></script>
</body>
</html>
`;
}

await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
for (const page of pages) {
  await mkdir(path.join(out, page.slug), { recursive: true });
  await writeFile(path.join(out, page.slug, 'index.html'), layout(page, render(page.body)));
}
// The home page is the first page's content.
await writeFile(path.join(out, 'index.html'), layout({ ...pages[0], slug: '' }, render(pages[0].body)).replace('<title>', '<meta name="robots" content="noindex">\n  <title>'));
await copyFile(path.join(here, 'site.css'), path.join(out, 'site.css'));

// The research workspace (/research/): its page, the collection build of the package
// ($SEXTANT_PACKAGE_DIR, as `sextant build --site` reads it, else pkg/ from `make wasm`), pdf.js
// and mammoth (DOCX). It takes the model files from the site's sextant/ folder at run time.
const research = path.join(out, 'research');
await mkdir(path.join(research, 'pkg'), { recursive: true });
await mkdir(path.join(research, 'vendor'), { recursive: true });
for (const f of ['index.html', 'research.js', 'names.js', 'archive.js', 'research.css', 'research-worker.js']) await copyFile(path.join(here, 'research', f), path.join(research, f));
const pkg = process.env.SEXTANT_PACKAGE_DIR || path.join(here, '../pkg');
for (const f of ['errors.js', 'fetching.js', 'chat.js', 'rerank.js', 'graph.js', 'index-files.js', 'otlp.js', 'core.js', 'collection.js', 'embed-worker.js', 'research.js', 'sextant_collection.js', 'sextant_collection_bg.wasm']) {
  await copyFile(path.join(pkg, f), path.join(research, 'pkg', f)).catch((e) => {
    throw new Error(`${path.join(pkg, f)} is missing (${e.code}); run \`make wasm\` first`);
  });
}
const pdfjs = path.join(here, 'node_modules/pdfjs-dist/build');
for (const f of ['pdf.min.mjs', 'pdf.worker.min.mjs']) await copyFile(path.join(pdfjs, f), path.join(research, 'vendor', f));
await copyFile(path.join(here, 'node_modules/mammoth/mammoth.browser.min.js'), path.join(research, 'vendor/mammoth.browser.min.js'));
console.log(`site: ${pages.length} pages in ${out}, the research workspace in ${research}`);
