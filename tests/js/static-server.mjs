// A static file server on loopback for browser tests: correct MIME types (application/wasm),
// optional delays per path (`{ delays: [[/model/, 3000]] }`), headers per path
// (`{ pathHeaders: [[/^\/private\//, {'cache-control': 'no-store'}]] }`), single byte ranges (206),
// Content-Length, and a log of the requests it served: a file's entry has its `path`, `bytes`
// (the body sent on the wire) and `raw` (its uncompressed size). With `{ gzip: true }` it
// compresses compressible responses for clients that accept gzip, as a real host would, for
// benchmarks of the bytes a visitor downloads. With `{ ranges: false }` it answers a Range
// request with the whole file (200), as some hosts do. With `{ together: {pattern, count, ms} }`
// it holds requests matching `pattern` until `count` of them are waiting, then answers them all;
// one still waiting after `ms` is answered alone: each log entry says how many were answered with
// it (`together`), which shows whether a client sends such requests in parallel.
import http from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import path from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.onnx': 'application/octet-stream',
  '.sxt': 'application/octet-stream',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.txt': 'text/plain; charset=utf-8',
};
const FALLBACK_TYPE = 'application/octet-stream';
// Content types a host compresses. Binary index files (any application/octet-stream) are often
// compressible too; images such as PNG are not.
const COMPRESSIBLE = /^(text\/(html|javascript|css|plain)|application\/(json|wasm|octet-stream)|image\/svg\+xml)(;|$)/;

/** Whether the request's Accept-Encoding allows gzip (not `gzip;q=0`). */
function acceptsGzip(req) {
  const header = String(req.headers['accept-encoding'] ?? '');
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding.trim() !== 'gzip' && coding.trim() !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return !q || Number(q.slice(2)) > 0;
  });
}

export async function startStaticServer(folder, { port = 0, headers = {}, pathHeaders = [], gzip = false, delays = [], ranges = true, together = null } = {}) {
  const dir = path.resolve(folder);
  const log = [];
  let waiting = []; // `together`: the held requests' release functions
  const hold = () =>
    new Promise((resolve) => {
      const entry = { resolve, timer: null };
      waiting.push(entry);
      if (waiting.length >= together.count) {
        const released = waiting;
        waiting = [];
        for (const w of released) {
          clearTimeout(w.timer);
          w.resolve(released.length);
        }
      } else {
        entry.timer = setTimeout(() => {
          waiting = waiting.filter((w) => w !== entry);
          resolve(1);
        }, together.ms);
      }
    });
  const compressed = new Map(); // `${file}\0${mtimeMs}\0${size}` → gzipped bytes
  const server = http.createServer(async (req, res) => {
    const bad = (reason, logged = req.url) => {
      log.push({ path: logged, status: 400 });
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`bad request: ${reason}`);
    };
    // Whatever the request target holds, the answer is a status, never a crash of the server.
    let url;
    try {
      url = new URL(req.url, 'http://localhost');
    } catch {
      bad('the request target is not a URL');
      return;
    }
    // `delays`: [pattern, ms] pairs that hold back matching paths, as a slow link would.
    const delay = delays.find(([pattern]) => pattern.test(url.pathname))?.[1];
    if (delay) await new Promise((r) => setTimeout(r, delay));
    const held = together?.pattern.test(url.pathname) ? await hold() : null;
    let pathname;
    try {
      pathname = decodeURIComponent(url.pathname);
    } catch {
      bad('the path is not valid percent-encoding', url.pathname);
      return;
    }
    let file = path.join(dir, pathname);
    // Inside the root, never a sibling that shares its name's prefix (`/srv/site-evil`).
    const inside = path.relative(dir, file);
    if (inside.startsWith('..') || path.isAbsolute(inside) || pathname.includes('\0')) {
      log.push({ path: url.pathname, status: 403 });
      res.writeHead(403, { 'content-type': 'text/plain' }).end('forbidden');
      return;
    }
    try {
      let info = await stat(file);
      if (info.isDirectory()) {
        file = path.join(file, 'index.html');
        info = await stat(file);
      }
      const type = TYPES[path.extname(file)] ?? FALLBACK_TYPE;
      const compressible = gzip && COMPRESSIBLE.test(type);
      let body;
      let encoding = {};
      if (compressible && acceptsGzip(req)) {
        const key = `${file}\0${info.mtimeMs}\0${info.size}`;
        body = compressed.get(key);
        if (!body) {
          body = gzipSync(await readFile(file), { level: 6 });
          compressed.set(key, body);
        }
        encoding = { 'content-encoding': 'gzip' };
      } else {
        body = await readFile(file);
      }
      const gzipped = 'content-encoding' in encoding;
      // `pathHeaders`: [pattern, headers] pairs added to matching paths' answers.
      const extra = Object.assign({}, ...pathHeaders.filter(([pattern]) => pattern.test(url.pathname)).map(([, h]) => h));
      // One byte range (`Range: bytes=a-b`, `a-`, `-n`) of an uncompressed body, as hosts serve media.
      const range = ranges && !gzipped && /^bytes=(\d*)-(\d*)$/.exec(String(req.headers.range ?? ''));
      let status = 200;
      let partial = {};
      if (range && (range[1] || range[2])) {
        const size = body.length;
        const start = range[1] ? Number(range[1]) : Math.max(0, size - Number(range[2]));
        const end = range[1] && range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
        if (start >= size || start > end) {
          log.push({ path: url.pathname, status: 416 });
          res.writeHead(416, { 'content-range': `bytes */${size}` }).end();
          return;
        }
        body = body.subarray(start, end + 1);
        status = 206;
        partial = { 'content-range': `bytes ${start}-${end}/${size}` };
      }
      log.push({ path: url.pathname, at: performance.now(), ...(partial['content-range'] ? { range: partial['content-range'] } : {}), bytes: body.length, raw: gzipped ? info.size : body.length, ...(gzipped ? { encoding: 'gzip' } : {}), ...(status === 206 ? { status } : {}), ...(held ? { together: held } : {}) });
      res.writeHead(status, {
        'content-type': type,
        'content-length': body.length,
        ...(gzipped || !ranges ? {} : { 'accept-ranges': 'bytes' }),
        ...partial,
        ...encoding,
        ...(compressible ? { vary: 'accept-encoding' } : {}),
        ...headers,
        ...extra,
      });
      res.end(body);
    } catch {
      log.push({ path: url.pathname, status: 404 });
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, log, close: () => new Promise((r) => server.close(r)) };
}
