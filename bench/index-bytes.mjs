// The index bytes a visitor's session fetches from a site's split index, by file kind, as a host
// serves them (each whole file gzip-compressed; a byte range of a pack as stored, which hosts do
// not compress: the objects in packs are stored deflated where that pays), without a browser: the built package in Node reads the
// files from disk and every file it asks for is counted once. Each query runs as the drop-in UI
// runs it: keyword results first, then the same query hybrid (one engine, so the keyword shards
// are fetched once, as the UI's engines share them), k = 10 with the result text shown.
// node bench/index-bytes.mjs <built site dir> <queries.jsonl> [k]   → one JSON line
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const [site, queriesPath, kArg] = process.argv.slice(2);
if (!site || !queriesPath) {
  console.error('usage: node bench/index-bytes.mjs <built site dir> <queries.jsonl> [k]');
  process.exit(2);
}
const k = Number(kArg ?? 10);
const here = path.dirname(fileURLToPath(import.meta.url));
const { Sextant } = await import(path.join(here, '../pkg/node.js'));
const dir = path.join(site, 'sextant');
const entry = JSON.parse(readFileSync(path.join(dir, 'sextant.json'), 'utf8'));
const queries = readFileSync(queriesPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).text);

const kinds = {};
const count = (name, bytes) => {
  const kind = name.split('.')[0];
  kinds[kind] ??= { files: 0, gzip_bytes: 0 };
  kinds[kind].files += 1;
  kinds[kind].gzip_bytes += gzipSync(bytes).length;
};
const countRange = (name, length) => {
  const kind = `${name.split('.')[0]} range`;
  kinds[kind] ??= { files: 0, gzip_bytes: 0 };
  kinds[kind].files += 1;
  kinds[kind].gzip_bytes += length;
};
const fromDisk = async (url, init) => {
  const file = fileURLToPath(url);
  const bytes = readFileSync(file);
  const range = /^bytes=(\d+)-(\d+)$/.exec(init?.headers?.Range ?? '');
  if (range) {
    const part = bytes.subarray(Number(range[1]), Number(range[2]) + 1);
    countRange(path.basename(file), part.length);
    return new Response(part, { status: 206 });
  }
  count(path.basename(file), bytes);
  return new Response(bytes);
};
const sextant = await Sextant.load({
  index: pathToFileURL(path.join(dir, entry.index)).href,
  model: readFileSync(path.join(dir, entry.model)),
  tokenizer: readFileSync(path.join(dir, entry.tokenizer)),
  fetch: fromDisk,
});
const perQuery = [];
for (const q of queries) {
  const before = Object.values(kinds).reduce((n, x) => n + x.gzip_bytes, 0);
  await sextant.search(q, { k, mode: 'keyword' });
  await sextant.search(q, { k, mode: 'hybrid' });
  perQuery.push(Object.values(kinds).reduce((n, x) => n + x.gzip_bytes, 0) - before);
}
sextant.free();

const indexDir = path.dirname(path.join(dir, entry.index));
const names = readdirSync(indexDir);
const sorted = [...perQuery].sort((a, b) => a - b);
console.log(
  JSON.stringify({
    layout: JSON.parse(readFileSync(path.join(dir, entry.index), 'utf8')).layout,
    queries: queries.length,
    k,
    fetched: kinds,
    fetched_gzip_bytes: Object.values(kinds).reduce((n, x) => n + x.gzip_bytes, 0),
    query_median_gzip_bytes: sorted[Math.floor(sorted.length / 2)],
    index: { files: names.length, bytes: names.reduce((n, f) => n + statSync(path.join(indexDir, f)).size, 0) },
  }),
);
