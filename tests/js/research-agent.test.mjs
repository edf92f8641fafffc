// Research answers (`sextant-search/research`) over a real collection, against a local scripted
// OpenAI-compatible server: tool calls, parallel calls, malformed calls, the call limit, 429s,
// a model without tool calling, a timeout, a stream cut mid-answer, unknown and missing
// citations. Each is handled as the workspace promises: retried, answered by the pipeline, or
// ended with a clear error, never an unverified citation shown as verified.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { fixtures, modelDir, consumerProject, expectCode } from './harness.mjs';
import { startLlmServer, sseAnswer } from './llm-server.mjs';

const tiny = path.join(fixtures, 'tiny');
let collection;
let research;

before(async () => {
  const project = consumerProject();
  writeFileSync(path.join(project, 'research.mjs'), "export * from 'sextant-search/research';\nexport { Collection } from 'sextant-search/collection';\n");
  const api = await import(pathToFileURL(path.join(project, 'research.mjs')).href);
  research = api.research;
  collection = await api.Collection.create({ model: readFileSync(path.join(modelDir, 'model.onnx')), tokenizer: readFileSync(path.join(modelDir, 'tokenizer.json')) });
  for (const f of ['notes.txt', 'pages/security.html', 'guide/search.mdx', 'faq.jsonl', 'guide/install.md']) await collection.addFile(f, readFileSync(path.join(tiny, f)));
  await collection.embed();
});
after(() => collection?.free());

/** A whole (not streamed) chat completion. */
const completion = (message) => ({ body: JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }], usage: { prompt_tokens: 50, completion_tokens: 5, total_tokens: 55 } }) });
const toolCall = (id, args, name = 'search') => ({ id, type: 'function', function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) } });
/** The chunk ids in the final request's system message (what the answer may cite). */
const shown = (body) => [...(body.messages[0].content.matchAll(/chunk_id="([^"]+)"/g))].map((m) => m[1]);
const isAnswer = (request) => request.body.stream === true;

test('the tool loop: one call a round, parallel and malformed calls get error observations, then one tool-free answer', async () => {
  const llm = await startLlmServer((request, i) => {
    if (isAnswer(request)) return { events: sseAnswer(`Install it with the CLI [${shown(request.body)[0]}].`) };
    return [
      completion({ tool_calls: [toolCall('a', { query: 'install' })] }),
      completion({ tool_calls: [toolCall('b', { query: 'security model', k: 3 }), toolCall('c', { query: 'second' })] }),
      completion({ tool_calls: [toolCall('d', '{"query": ')] }),
      completion({ tool_calls: [toolCall('e', { query: 'x' }, 'delete_everything')] }),
      completion({ content: 'I have enough.' }),
    ][i];
  });
  try {
    const events = [];
    const tokens = [];
    const out = await research('how do I install sextant?', { collection, llm: { base_url: llm.baseUrl, model: 'm' }, on_event: (e) => events.push(e), on_token: (t) => tokens.push(t) });
    assert.equal(out.path, 'tools');
    assert.equal(out.refused, false, out.refusal);
    assert.equal(out.citations.length, 1);
    assert.ok(out.evidence.some((r) => r.chunk_id === out.citations[0].chunk_id));
    assert.equal(tokens.join(''), out.answer);
    assert.equal(llm.requests.length, 6);
    // The tool rounds offered the tool; the answer call did not.
    assert.ok(llm.requests.slice(0, 5).every((r) => r.body.tools?.[0]?.function?.name === 'search' && r.body.stream === false));
    assert.equal(llm.requests[5].body.tools, undefined);
    // Observations the model saw: results, then a structured error for each bad call.
    const toolMessages = llm.requests[4].body.messages.filter((m) => m.role === 'tool');
    const seen = toolMessages.map((m) => JSON.parse(m.content));
    assert.equal(seen.length, 5);
    assert.ok(seen[0].results > 0 && seen[0].passages.includes('<retrieved_context'));
    assert.ok(seen[1].results > 0);
    assert.deepEqual([seen[2].error_type, seen[2].retryable], ['one_call_per_round', true]);
    assert.deepEqual([seen[3].error_type, seen[3].retryable], ['bad_arguments', true]);
    assert.deepEqual([seen[4].error_type, seen[4].retryable], ['unknown_tool', false]);
    assert.deepEqual(toolMessages.map((m) => m.tool_call_id), ['a', 'b', 'c', 'd', 'e']);
    // The trace has every model and tool call, timed.
    assert.equal(events.filter((e) => e.kind === 'model').length, 6);
    assert.equal(events.filter((e) => e.kind === 'tool').length, 5);
    assert.ok(out.trace.every((e) => e.kind === 'path' || typeof e.ms === 'number' || e.error));
    assert.equal(out.usage.total_tokens, 5 * 55 + 120);
  } finally {
    await llm.close();
  }
});

test('at most max_tool_calls searches, then the tool-free answer; 429s are retried', async () => {
  let rounds = 0;
  const llm = await startLlmServer((request, i) => {
    if (i === 0) return { status: 429, headers: { 'retry-after': '0' } };
    if (isAnswer(request)) return { events: sseAnswer(`Found [${shown(request.body)[0]}].`) };
    rounds++;
    return completion({ tool_calls: [toolCall(`t${i}`, { query: `search ${i}` })] });
  });
  try {
    const out = await research('what does search rank by?', { collection, llm: { base_url: llm.baseUrl, model: 'm' } });
    assert.equal(out.trace.filter((e) => e.kind === 'tool').length, 5);
    assert.equal(rounds, 5);
    assert.equal(out.trace[0].retries.length, 1);
    assert.equal(out.refused, false);
  } finally {
    await llm.close();
  }
});

test('a model without tool calling, and a timed-out loop, are answered by the pipeline; the trace says why', async () => {
  const llm = await startLlmServer((request) => {
    const system = request.body.messages[0].content;
    if (request.body.tools) return { status: 400, body: JSON.stringify({ error: { message: 'tools are not supported by this model' } }) };
    if (isAnswer(request)) return { events: sseAnswer(`Yes [${shown(request.body)[0]}].`) };
    if (system.startsWith('Rewrite')) return completion({ content: 'security model prompt injection' });
    return completion({ content: 'NO\nuntrusted context defenses' });
  });
  try {
    const out = await research('is it safe against prompt injection?', { collection, llm: { base_url: llm.baseUrl, model: 'm' } });
    assert.equal(out.path, 'pipeline');
    assert.match(out.path_reason, /LLM_HTTP/);
    const searches = out.trace.filter((e) => e.kind === 'tool');
    assert.deepEqual(searches.map((s) => s.args.query), ['security model prompt injection', 'untrusted context defenses']);
    assert.equal(out.refused, false);
  } finally {
    await llm.close();
  }
  const slow = await startLlmServer((request) => {
    if (request.body.tools) return { hang: true };
    if (isAnswer(request)) return { events: sseAnswer(`Done [${shown(request.body)[0]}].`) };
    return completion({ content: 'YES' });
  });
  try {
    const out = await research('how do I install it?', { collection, llm: { base_url: slow.baseUrl, model: 'm' }, timeout_ms: 300 });
    assert.equal(out.path, 'pipeline');
    assert.match(out.path_reason, /LLM_TIMEOUT/);
    assert.equal(out.refused, false);
  } finally {
    await slow.close();
  }
});

test('unknown or missing citations are refused; a stream cut mid-answer is LLM_INCOMPLETE with what came', async () => {
  const plans = {
    unknown: () => ({ events: sseAnswer('It is documented [made-up#9].') }),
    none: () => ({ events: sseAnswer('It probably works.') }),
    cut: () => ({ events: sseAnswer('Half an answer that').slice(0, 3) }),
  };
  for (const [name, answer] of Object.entries(plans)) {
    const llm = await startLlmServer((request) => (isAnswer(request) ? answer(request) : completion({ content: 'done' })));
    try {
      const run = research('how do I install it?', { collection, llm: { base_url: llm.baseUrl, model: 'm' }, tools: false });
      if (name === 'cut') {
        const error = await expectCode(run, 'LLM_INCOMPLETE');
        assert.ok(error.partial_answer.startsWith('Half'), error.partial_answer);
      } else {
        const out = await run;
        assert.equal(out.refused, true, name);
        assert.equal(out.path_reason, 'tool calling is off (tools: false)');
        if (name === 'unknown') assert.deepEqual(out.unknown_citations, ['made-up#9']);
      }
    } finally {
      await llm.close();
    }
  }
  await expectCode(research('', { collection, llm: { base_url: 'http://127.0.0.1:9/v1', model: 'm' } }), 'BAD_ARGUMENT');
});

test('a long session compresses its earliest rounds in batches; a failed batch loses nothing; the summary is never evidence', async () => {
  const { Conversation } = await import(pathToFileURL(path.join(consumerProject(), 'research.mjs')).href);
  const rounds = Array.from({ length: 10 }, (_, i) => ({ question: `Question ${i}: what about topic ${i}?`, answer: `Answer ${i}. ${'Lighthouses and tides. '.repeat(90)}` }));
  const conversation = new Conversation({ rounds: structuredClone(rounds) }, { count_tokens: (text) => collection.countTokens(text) });
  const before = conversation.contextTokens();
  assert.ok(before > 4000, `${before}`);
  let fail = true;
  const llm = await startLlmServer((request, i) => {
    if (fail && i === 1) return { status: 500 };
    return completion({ content: `Summary after call ${i}: topics 0 to 7 were about lighthouses [made-up#1].` });
  });
  try {
    const options = { llm: { base_url: llm.baseUrl, model: 'm' }, threshold: 3000, target: 2000, batch: 3, keep: 2, max_tries: 1 };
    const failed = await conversation.compress(options);
    assert.equal(failed.compressed, 0);
    assert.equal(failed.error.code, 'LLM_UNAVAILABLE');
    assert.deepEqual(conversation.toJSON(), { rounds, summary: null, compressed: 0 }, 'a failed compression changed the conversation');

    fail = false;
    const done = await conversation.compress(options);
    assert.ok(done.compressed >= 3 && done.compressed <= 8, JSON.stringify(done));
    assert.ok(done.trace.length >= 1 && done.trace.every((e) => !e.error));
    assert.equal(conversation.compressed, done.compressed);
    assert.match(conversation.summary, /^Summary after call \d+/);
    assert.deepEqual(conversation.rounds, rounds, 'every round is kept whole');
    assert.ok(conversation.contextTokens() < before);
    const history = conversation.history();
    assert.equal(history[0].role, 'system');
    assert.match(history[0].content, /not evidence/);
    assert.equal(history.length, 1 + 2 * (10 - done.compressed));
    // Under the threshold, nothing happens.
    assert.equal((await conversation.compress({ ...options, threshold: 1e9 })).compressed, 0);
  } finally {
    await llm.close();
  }
  // A citation found only in the summary is not evidence: refused.
  const answerer = await startLlmServer((request) => (request.body.stream ? { events: sseAnswer('As summarised [made-up#1].') } : completion({ content: 'enough' })));
  try {
    const out = await research('what did we find?', { collection, llm: { base_url: answerer.baseUrl, model: 'm' }, history: conversation.history() });
    assert.equal(out.refused, true);
    assert.deepEqual(out.unknown_citations, ['made-up#1']);
    assert.ok(answerer.requests.every((r) => r.body.messages.some((m) => m.content?.includes('Summary after call'))));
  } finally {
    await answerer.close();
  }
});

test('research works while chunks are still being embedded (keyword evidence)', async () => {
  const { Collection } = await import(pathToFileURL(path.join(consumerProject(), 'research.mjs')).href);
  const fresh = await Collection.create({ model: readFileSync(path.join(modelDir, 'model.onnx')), tokenizer: readFileSync(path.join(modelDir, 'tokenizer.json')) });
  const llm = await startLlmServer((request) => (request.body.stream ? { events: sseAnswer(`From the notes [${shown(request.body)[0]}].`) } : completion({ content: 'install' })));
  try {
    await fresh.addFile('guide/install.md', readFileSync(path.join(tiny, 'guide/install.md')));
    assert.ok(fresh.pending > 0);
    const out = await research('how do I install it?', { collection: fresh, llm: { base_url: llm.baseUrl, model: 'm' }, tools: false });
    assert.equal(out.refused, false, out.refusal);
    assert.ok(out.trace.some((e) => e.kind === 'tool' && e.mode === 'keyword'));
  } finally {
    fresh.free();
    await llm.close();
  }
});

// A hostile endpoint's endless answers (made as they are read, never held): research() reads at
// most max_answer_bytes (and 64 KB of JSON around it) of a whole completion, and at most
// max_sse_line_bytes of an event line, as ask() does, and says so with the right code.
const HUGE = 64 << 20;
const endless = { generate: { head: '{"choices":[{"index":0,"message":{"role":"assistant","content":"', fill: 'x', bytes: HUGE, tail: '"}}]}' } };
const endlessLine = { generate: { head: 'data: {"choices":[{"index":0,"delta":{"content":"', fill: 'x', bytes: HUGE, tail: '"}}]}\n\n', contentType: 'text/event-stream' } };
const read = (llm) => llm.requests.map((r) => r.sent ?? 0);

test('research() caps a hostile endpoint: an endless JSON completion or event line is cut early, with the right error', async () => {
  // The caps (256 KB of answer, 1 MB of event line by default) and the sockets' buffers: far
  // under what the endpoint offers.
  const cap = 16 << 20;
  // Every call answers with an endless completion: the tool loop and the pipeline's calls fail,
  // and the answer too.
  const json = await startLlmServer(() => endless);
  try {
    const e = await expectCode(research('how do I install sextant?', { collection, llm: { base_url: json.baseUrl, model: 'm' } }), 'LLM_INCOMPLETE');
    assert.match(e.message, /max_answer_bytes/);
    assert.ok(read(json).every((n) => n < cap), `bytes sent per call: ${read(json).join(', ')}`);
  } finally {
    await json.close();
  }
  // The answer's stream holds one endless line.
  const sse = await startLlmServer((request) => (request.body.stream ? endlessLine : completion({ content: 'install' })));
  try {
    const e = await expectCode(research('how do I install sextant?', { collection, llm: { base_url: sse.baseUrl, model: 'm' }, tools: false }), 'LLM_BAD_RESPONSE');
    assert.match(e.message, /max_sse_line_bytes/);
    assert.ok(read(sse).every((n) => n < cap), `bytes sent per call: ${read(sse).join(', ')}`);
  } finally {
    await sse.close();
  }
  // A conversation's summary call too.
  const { Conversation } = await import(pathToFileURL(path.join(consumerProject(), 'research.mjs')).href);
  const summary = await startLlmServer(() => endless);
  try {
    const rounds = Array.from({ length: 6 }, (_, i) => ({ question: `Question ${i}?`, answer: 'Lighthouses and tides. '.repeat(200) }));
    const conversation = new Conversation({ rounds }, { count_tokens: (text) => collection.countTokens(text) });
    const out = await conversation.compress({ llm: { base_url: summary.baseUrl, model: 'm' }, threshold: 1000, target: 500 });
    assert.equal(out.compressed, 0);
    assert.equal(out.error?.code, 'LLM_INCOMPLETE', JSON.stringify(out.error));
    assert.ok(read(summary).every((n) => n < cap), `bytes sent per call: ${read(summary).join(', ')}`);
  } finally {
    await summary.close();
  }
});
