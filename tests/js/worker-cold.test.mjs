// Every route of the Worker as the first request of a fresh workerd, as after Cloudflare starts a
// new isolate: each must load what it needs (the WebAssembly, the bases) itself, never answer
// NOT_READY because another route has not run yet. Needs scripts/worker-build.sh and the parity
// fixtures (scripts/test-js.sh prepares both).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startLlmServer, sseAnswer, chunkIdsIn } from './llm-server.mjs';
import { startWorkerd } from './workerd.mjs';
import { cranfieldAssets } from './assets.mjs';

const parityDir = process.env.SEXTANT_PARITY_DIR;
const ORIGIN = 'https://docs.example';
let assetsDir;
let llm;

before(async () => {
  assert.ok(parityDir, 'SEXTANT_PARITY_DIR is not set: run scripts/test-js.sh');
  assetsDir = cranfieldAssets(parityDir);
  llm = await startLlmServer((req) => ({ events: sseAnswer(`Heated models need similar thermal stresses [${chunkIdsIn(req.body)[0]}].`) }));
});
after(() => llm?.close());

/** A fresh workerd; `first(base)` is the first request it ever gets. */
async function firstRequest(name, first) {
  const workerd = await startWorkerd({ assetsDir, name: `cold-${name}`, env: { LLM_BASE_URL: llm.baseUrl, LLM_MODEL: 'cold-model', CORS_ORIGINS: ORIGIN } });
  try {
    await first(workerd.base);
  } finally {
    workerd.stop();
  }
}

async function okJson(response) {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text);
}

test('GET /search first', () => firstRequest('search', async (base) => {
  const found = await okJson(await fetch(`${base}/search?q=heat+transfer&k=3`));
  assert.equal(found.results.length, 3);
}));

test('GET /context first', () => firstRequest('context', async (base) => {
  const response = await fetch(`${base}/context?q=heat+transfer`);
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(text, /<retrieved_context/);
}));

test('POST /ask first', () => firstRequest('ask', async (base) => {
  const response = await fetch(`${base}/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 'what do heated models need?' }) });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(text, /event: done/, text);
}));

test('POST /mcp first: the MCP SDK client initializes, lists and searches', () => firstRequest('mcp', async (base) => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const client = new Client({ name: 'sextant-cold', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
  try {
    assert.equal(client.getServerVersion().name, 'sextant');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['describe', 'fetch', 'graph', 'search']);
    const found = await client.callTool({ name: 'search', arguments: { query: 'heat transfer', k: 2 } });
    assert.equal(found.isError, undefined, JSON.stringify(found));
    assert.equal(found.structuredContent.results.length, 2);
  } finally {
    await client.close();
  }
}));

test('GET /healthz first', () => firstRequest('healthz', async (base) => {
  const health = await okJson(await fetch(`${base}/healthz`));
  assert.equal(health.status, 'ok');
  assert.equal(health.engine, 'not loaded', 'a health check loads no base');
}));
