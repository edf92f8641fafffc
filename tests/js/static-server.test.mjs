// The local static server behind `make demo` and the browser tests: hostile paths get a status,
// never a crash, and nothing outside its folder is served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { startStaticServer } from './static-server.mjs';

/** A raw GET, so the path reaches the server exactly as written (fetch would normalise it). */
function rawGet(base, rawPath) {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const req = http.request({ host: url.hostname, port: url.port, path: rawPath, method: 'GET' }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('bad percent-encoding is a 400 and the server keeps serving', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-static-'));
  writeFileSync(path.join(dir, 'index.html'), 'home');
  const server = await startStaticServer(dir);
  try {
    assert.equal((await rawGet(server.url, '/%')).status, 400);
    assert.equal((await rawGet(server.url, '/%E0%A4%A')).status, 400);
    const home = await rawGet(server.url, '/');
    assert.equal(home.status, 200);
    assert.equal(home.body, 'home');
  } finally {
    await server.close();
  }
});

test('a sibling folder sharing the root name prefix is never served', async () => {
  const parent = mkdtempSync(path.join(tmpdir(), 'sextant-static-'));
  const root = path.join(parent, 'site');
  mkdirSync(root);
  mkdirSync(path.join(parent, 'site-evil'));
  writeFileSync(path.join(root, 'index.html'), 'home');
  writeFileSync(path.join(parent, 'site-evil', 'secret.txt'), 'secret');
  writeFileSync(path.join(parent, 'secret.txt'), 'secret');
  const server = await startStaticServer(root);
  try {
    for (const hostile of ['/..%2fsite-evil/secret.txt', '/..%2f..%2fsecret.txt', '/%2e%2e/secret.txt', '/..%5csite-evil%5csecret.txt']) {
      const res = await rawGet(server.url, hostile);
      assert.notEqual(res.status, 200, hostile);
      assert.ok(!res.body.includes('secret'), hostile);
    }
  } finally {
    await server.close();
  }
});
