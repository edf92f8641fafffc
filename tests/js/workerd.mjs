// Starts the bundled Worker (www/worker/dist) in workerd on a free loopback port, for the Worker
// tests and benchmarks. Run scripts/worker-build.sh first.
import { spawn } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { readFileSync } from 'node:fs';
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
