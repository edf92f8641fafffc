// A static file server on loopback for browser tests: correct MIME types (application/wasm),
// Content-Length, and a log of the requests it served.
import http from 'node:http';
import { readFile, stat } from 'node:fs/promises';
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

export async function startStaticServer(folder, { port = 0, headers = {} } = {}) {
  const dir = path.resolve(folder);
  const log = [];
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let pathname;
    try {
      pathname = decodeURIComponent(url.pathname);
    } catch {
      log.push({ path: url.pathname, status: 400 });
      res.writeHead(400, { 'content-type': 'text/plain' }).end('bad request: the path is not valid percent-encoding');
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
      if ((await stat(file)).isDirectory()) file = path.join(file, 'index.html');
      const body = await readFile(file);
      log.push({ path: url.pathname, bytes: body.length });
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'content-length': body.length,
        ...headers,
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
