// Starts the bundled Worker (www/worker/dist) in workerd on a free loopback port, for the Worker
// tests and benchmarks. Run scripts/worker-build.sh first.
import { spawn } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { root } from './harness.mjs';
import { writeConfig } from '../../www/worker/workerd-config.mjs';

export async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** Resident memory of a process in bytes (Linux). */
export function rss(pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS'));
  return Number(line.match(/(\d+)/)[1]) * 1024;
}

/** Whether something accepts connections on the loopback `port`. */
function listening(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => socket.end(() => resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** workerd serving `assetsDir` (`args`: more `workerd serve` flags); resolves once it accepts
 * connections (no request is sent: a test's first request is the Worker's first). `logs`
 * collects its log lines. */
export async function startWorkerd({ assetsDir, env = {}, name = 'run', args = [] }) {
  const port = await freePort();
  const config = writeConfig({ assetsDir, address: `127.0.0.1:${port}`, name });
  const child = spawn(path.join(root, 'www/worker/node_modules/.bin/workerd'), ['serve', config, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // A test or benchmark that dies must not leave workerd running (and holding its stdout).
  const kill = () => child.kill();
  process.once('exit', kill);
  // The Worker's log lines (one JSON object per request) are kept for the tests to read; other
  // output passes through.
  const logs = [];
  let partial = '';
  child.stdout.setEncoding('utf8').on('data', (text) => {
    const lines = (partial + text).split('\n');
    partial = lines.pop();
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line));
      } catch {
        if (line.trim()) process.stdout.write(`${line}\n`);
      }
    }
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await listening(port)) break;
    if (i > 150) {
      child.kill();
      throw new Error('workerd did not start');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    pid: child.pid,
    logs,
    stop: () => {
      process.off('exit', kill);
      child.kill();
    },
  };
}

/** The isolate's heap usage, from workerd's inspector (Chrome DevTools Protocol) on
 * `inspectorPort` (`workerd serve --inspector-addr`, or Miniflare's `inspectorPort`). */
export async function inspector(inspectorPort) {
  const [target] = await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json();
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let next = 1;
  const waiting = new Map();
  ws.onmessage = (m) => {
    const message = JSON.parse(String(m.data));
    waiting.get(message.id)?.(message.result);
    waiting.delete(message.id);
  };
  return {
    heap: () =>
      new Promise((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        ws.send(JSON.stringify({ id, method: 'Runtime.getHeapUsage' }));
      }),
    close: () => ws.close(),
  };
}

/** The bundled Worker in Miniflare (the workerd runtime with its local R2 emulation), an R2
 * bucket bound as SEXTANT_R2 and `bindings` as its settings; `options` are more of Miniflare's
 * (its `port`, `inspectorPort`). Returns the Miniflare instance (`getR2Bucket`, `dispose`). */
export async function miniflareWithR2(bindings, options = {}) {
  const workerDir = path.join(root, 'www/worker');
  const dist = path.join(workerDir, 'dist');
  const { Miniflare } = await import(path.join(workerDir, 'node_modules/miniflare/dist/src/index.js'));
  const wasm = readdirSync(dist).find((f) => f.endsWith('.wasm'));
  return new Miniflare({
    modulesRoot: dist,
    modules: [
      { type: 'ESModule', path: path.join(dist, 'index.js') },
      { type: 'CompiledWasm', path: path.join(dist, wasm) },
    ],
    compatibilityDate: '2026-04-01',
    compatibilityFlags: ['enable_request_signal'],
    r2Buckets: ['SEXTANT_R2'],
    bindings,
    ...options,
  });
}

/** Every file under `dir`, as paths relative to it (what a site uploads to its R2 bucket). */
export function filesUnder(dir, prefix = '') {
  return readdirSync(path.join(dir, prefix)).flatMap((name) => {
    const rel = prefix ? `${prefix}/${name}` : name;
    return statSync(path.join(dir, rel)).isDirectory() ? filesUnder(dir, rel) : [rel];
  });
}
