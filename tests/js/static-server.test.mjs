// The local static server behind `make demo` and the browser tests: hostile paths get a status,
// never a crash, and nothing outside its folder is served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import http from 'node:http';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import { startStaticServer } from './static-server.mjs';
import { root } from './harness.mjs';

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

/** A raw GET with request headers, resolving to the status, headers and undecoded body bytes. */
function rawGetBytes(base, rawPath, headers = {}) {
  return new Promise((resolve, reject) => {
    const url = new URL(base);
    const req = http.request({ host: url.hostname, port: url.port, path: rawPath, method: 'GET', headers }, (res) => {
      const chunks = [];
      res.on('data', (d) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

// The last log entry without its timestamp (checked apart: a number of milliseconds).
function entry(server) {
  const { at, ...rest } = server.log.at(-1);
  assert.ok(Number.isFinite(at) && at >= 0, `log entry time ${at}`);
  return rest;
}

test('with gzip: compressible files are gzipped for clients that accept it, and the log has wire and raw bytes', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-static-'));
  const text = 'search as you type '.repeat(500);
  writeFileSync(path.join(dir, 'app.js'), text);
  writeFileSync(path.join(dir, 'shard.pf_index'), text); // unknown type: application/octet-stream
  writeFileSync(path.join(dir, 'logo.png'), text); // not compressible
  const server = await startStaticServer(dir, { gzip: true });
  try {
    const gz = await rawGetBytes(server.url, '/app.js', { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(gz.status, 200);
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.match(gz.headers.vary, /accept-encoding/i);
    assert.equal(Number(gz.headers['content-length']), gz.body.length);
    assert.equal(gunzipSync(gz.body).toString(), text);
    assert.ok(gz.body.length < text.length / 10);
    assert.deepEqual(entry(server), { path: '/app.js', bytes: gz.body.length, raw: text.length, encoding: 'gzip' });

    const again = await rawGetBytes(server.url, '/app.js', { 'accept-encoding': 'gzip' }); // from the cache
    assert.deepEqual(again.body, gz.body);

    const shard = await rawGetBytes(server.url, '/shard.pf_index', { 'accept-encoding': 'gzip' });
    assert.equal(shard.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(shard.body).toString(), text);

    const png = await rawGetBytes(server.url, '/logo.png', { 'accept-encoding': 'gzip' });
    assert.equal(png.headers['content-encoding'], undefined);
    assert.deepEqual(entry(server), { path: '/logo.png', bytes: text.length, raw: text.length });

    for (const accept of [undefined, 'identity', 'gzip;q=0']) {
      const plain = await rawGetBytes(server.url, '/app.js', accept ? { 'accept-encoding': accept } : {});
      assert.equal(plain.headers['content-encoding'], undefined, String(accept));
      assert.equal(plain.body.toString(), text);
      assert.deepEqual(entry(server), { path: '/app.js', bytes: text.length, raw: text.length });
    }
  } finally {
    await server.close();
  }
  const plainServer = await startStaticServer(dir); // the default: never compressed
  try {
    const res = await rawGetBytes(plainServer.url, '/app.js', { 'accept-encoding': 'gzip' });
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers.vary, undefined);
    assert.deepEqual(entry(plainServer), { path: '/app.js', bytes: text.length, raw: text.length });
  } finally {
    await plainServer.close();
  }
});

/** Sends `raw` bytes on a new connection and resolves to what came back (until it closes or 2 s). */
function rawRequest(port, raw) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(raw));
    let text = '';
    const done = () => resolve(text);
    socket.setEncoding('latin1').on('data', (d) => (text += d));
    socket.on('close', done).on('error', done);
    setTimeout(() => socket.destroy(), 2000);
  });
}

test('the demo server (make demo: www/serve.mjs) answers a request target that is no URL with 400 and keeps serving', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sextant-static-'));
  writeFileSync(path.join(dir, 'index.html'), 'home');
  const probe = net.createServer();
  await new Promise((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address();
  await new Promise((r) => probe.close(r));
  const demo = spawn(process.execPath, [path.join(root, 'www/serve.mjs'), dir], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let exited = null;
  demo.on('exit', (code, signal) => (exited = { code, signal }));
  try {
    await new Promise((resolve, reject) => {
      demo.stdout.once('data', resolve);
      demo.once('exit', () => reject(new Error('the demo server did not start')));
    });
    for (const target of ['http://[', 'http://[::1', '//[', 'http://a b/']) {
      const answer = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 400 /, `${target}: ${answer.slice(0, 80)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(exited, null, 'the demo server died');
    const home = await rawGet(`http://127.0.0.1:${port}`, '/');
    assert.equal(home.status, 200);
    assert.equal(home.body, 'home');
  } finally {
    demo.kill();
  }
});
