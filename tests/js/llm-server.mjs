// A small OpenAI-compatible chat-completions server on loopback, standing in for the LLM
// endpoint (the one third-party service a test may double). Each request is answered by a
// plan the test gives: a status, headers, SSE events (streamed with a delay), or a hang.
import http from 'node:http';

/** SSE lines of a streamed answer: one `data:` event per piece, then usage and [DONE]. */
export function sseAnswer(text, { pieces, usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } } = {}) {
  const parts = pieces ?? text.match(/\S+\s*/g) ?? [];
  const events = parts.map((content, i) => ({
    id: 'chatcmpl-test',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: i === 0 ? { role: 'assistant', content } : { content }, finish_reason: null }],
  }));
  events.push({ id: 'chatcmpl-test', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  events.push({ id: 'chatcmpl-test', object: 'chat.completion.chunk', choices: [], usage });
  return [...events.map((e) => `data: ${JSON.stringify(e)}`), 'data: [DONE]'];
}

/** The chunk ids the request's system prompt carries (what the LLM was shown). */
export function chunkIdsIn(body) {
  const system = body?.messages?.find((m) => m.role === 'system')?.content ?? '';
  return [...system.matchAll(/chunk_id="([^"]+)"/g)].map((m) => m[1]);
}

/**
 * Starts the server. `plan(request, index)` returns
 * { status = 200, headers = {}, contentType, events: [sse lines], delayMs = 5, bodyDelayMs = 0, hang = false, body,
 * disconnect = false, generate } (`body` answers at once with that text; `disconnect` drops the
 * connection after the events instead of ending the response; `generate`: {head, fill, bytes,
 * tail, contentType} answers with `head`, `bytes` bytes of `fill`, then `tail`, made as the
 * client reads them, never held: a hostile endpoint's endless answer). `request.sent` counts the
 * bytes written to the client.
 * By default it answers citing the first chunk it was shown.
 */
export async function startLlmServer(plan) {
  const requests = [];
  const sockets = new Set();
  const cors = {
    'access-control-allow-origin': '*',
    'access-control-allow-headers': 'authorization, content-type, accept',
    'access-control-allow-methods': 'POST, OPTIONS',
  };
  const server = http.createServer(async (req, res) => {
    // Browsers call the LLM cross-origin, as they would call a real provider.
    for (const [k, v] of Object.entries(cors)) res.setHeader(k, v);
    if (req.method === 'OPTIONS') {
      res.writeHead(204).end();
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let body = null;
    try {
      body = JSON.parse(raw);
    } catch {}
    // `aborted` turns true when the caller hangs up before the answer is complete.
    const request = { method: req.method, url: req.url, headers: req.headers, body, aborted: false, finished: false };
    res.on('close', () => {
      if (!request.finished) request.aborted = true;
    });
    requests.push(request);
    const p = (plan ? plan(request, requests.length - 1) : undefined) ?? defaultPlan(request);
    if (p.hang) return; // never answers: for timeouts and aborts
    if (p.generate) {
      await generate(res, request, p.generate);
      return;
    }
    const status = p.status ?? 200;
    // `bodyDelayMs`: a whole answer that takes its time (a slow model).
    if (p.bodyDelayMs) await new Promise((r) => setTimeout(r, p.bodyDelayMs));
    if (status !== 200 || p.body !== undefined) {
      res.writeHead(status, { 'content-type': p.contentType ?? 'application/json', ...(p.headers ?? {}) });
      request.finished = true;
      res.end(p.body ?? JSON.stringify({ error: { message: `status ${status}` } }));
      return;
    }
    res.writeHead(200, { 'content-type': p.contentType ?? 'text/event-stream', 'cache-control': 'no-cache', ...(p.headers ?? {}) });
    for (const line of p.events ?? []) {
      if (request.aborted) return;
      res.write(`${line}\n\n`);
      await new Promise((r) => setTimeout(r, p.delayMs ?? 5));
    }
    if (p.disconnect) {
      res.socket?.destroy();
      return;
    }
    request.finished = true;
    res.end();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(resolve);
      }),
  };
}

/** Writes a generated answer as the client takes it (waiting for 'drain'), until done or gone. */
async function generate(res, request, { head = '', fill = 'x', bytes, tail = '', contentType = 'application/json' }) {
  res.writeHead(200, { 'content-type': contentType });
  request.sent = 0;
  const write = async (chunk) => {
    request.sent += chunk.length;
    if (!res.write(chunk)) {
      await new Promise((resolve) => {
        res.once('drain', resolve);
        res.once('close', resolve);
      });
    }
  };
  await write(Buffer.from(head));
  const piece = Buffer.alloc(64 * 1024, fill);
  for (let n = 0; n < bytes && !request.aborted && !res.destroyed; n += piece.length) await write(piece);
  if (request.aborted || res.destroyed) return;
  await write(Buffer.from(tail));
  request.finished = true;
  res.end();
}

export function defaultPlan(request) {
  const [first] = chunkIdsIn(request.body);
  return { events: sseAnswer(`The documents say so [${first}].`) };
}
