// Compiled with `tsc --noEmit --strict` against the built package's index.d.ts (types.test.mjs):
// every public call, typed the way a TypeScript user writes it. Never run.
import {
  Sextant,
  SextantError,
  defaults,
  highlights,
  verifyCitations,
  ready,
  memoryBytes,
  readChatStream,
  retryAfterMs,
  backoffMs,
  fetchBytes,
  redact,
  checkBaseNames,
  selectBases,
  qualifyId,
  splitQualifiedId,
  type Answer,
  type ContextResponse,
  type Defaults,
  type ErrorCode,
  type SearchResponse,
} from 'sextant-search';
import { research, Conversation, type ResearchAnswer, type TraceEntry } from 'sextant-search/research';
import { Collection, opfsStorage, listCollections, deleteCollection, storageInfo, researchToolCall, researchQuery, researchJudged, researchRefusal, type FileSummary, type CollectionSearchResponse, type ToolStep } from 'sextant-search/collection';

export async function usage(bytes: Uint8Array): Promise<void> {
  await ready();
  const d: Defaults = defaults();
  const k: number = d.search.k;
  const budget: number = d.context.token_budget;
  const status: number = d.error_codes[0].http_status;
  const engine = await Sextant.load({
    index: bytes,
    model: 'https://example.com/model.onnx',
    tokenizer: new URL('https://example.com/tokenizer.json'),
    weights: 'int8',
    on_progress: ({ file, loaded, total }) => console.log(file, loaded, total ?? 0),
  });
  const found: SearchResponse = await engine.search('lamp', { k, mode: 'hybrid', per_document: true, score_threshold: null, min_similarity: 0.2, depth: 40, bm25: { k1: 1.2 }, vector_search: 'exact' });
  await engine.loadModel({ model: bytes, tokenizer: bytes, weights: 'f32' });
  await engine.prefetch();
  const modelReady: boolean = engine.hasModel;
  const first = found.results[0];
  const spans: [number, number][] = highlights(first.text, 'lamp');
  const framed = engine.frame(found.results, { token_budget: budget });
  const context: ContextResponse = await engine.context('lamp', { k: 3, token_budget: 500 });
  const system: string = context.messages[0].content + framed.system_prompt;
  const answer: Answer = await engine.ask('how?', {
    llm: { base_url: 'http://127.0.0.1:11434/v1', model: 'llama3', api_key: 'k' },
    k: 4,
    timeout_ms: 1000,
    max_tries: 2,
    on_context: (c) => console.log(c.included.length),
    on_token: (t) => console.log(t),
    on_retry: ({ attempt, wait_ms }) => console.log(attempt, wait_ms),
  });
  const cited: string[] = answer.spans.flatMap((s) => s.chunk_ids);
  const report = verifyCitations(answer.answer, answer.chunks);
  const grounded: boolean = report.grounded && answer.truncated === false;
  try {
    await engine.search('');
  } catch (e) {
    if (e instanceof SextantError) {
      const code: ErrorCode = e.code;
      console.log(code, e.detail, e.partial_answer);
    }
  }
  const body = new ReadableStream<Uint8Array>();
  const read = await readChatStream(body, (delta) => console.log(delta), { max_line_bytes: 1 << 20 });
  const fetched: Uint8Array = await fetchBytes('https://example.com/x', 'bundle', (p) => console.log(p.loaded));
  console.log(spans, system, cited, grounded, modelReady, read.complete, fetched.length, status, memoryBytes(), retryAfterMs('1'), backoffMs(1), redact('x', ['y']));
  checkBaseNames(['docs', 'blog']);
  const chosen: string[] = selectBases(['docs', 'blog'], 'blog');
  const [base, local]: [string, string] = splitQualifiedId(qualifyId('docs', 'a.md#1', chosen.length > 1), undefined, ['docs', 'blog']);
  const tool = d.tools.mcp[0].inputSchema.properties?.k?.maximum ?? d.tools.mcp_max_k;
  console.log(base, local, tool, d.prompts.mcp_instructions, d.research.max_k, d.compress.threshold, d.names.mode[0], d.max_base_name);
  engine.free();
}

async function collection(model: Uint8Array, tokenizer: Uint8Array): Promise<void> {
  const c = await Collection.create({ model, tokenizer, config: { chunking: { max_tokens: 200 } } });
  const added: FileSummary = await c.addFile('notes/a.md', '# A\n\ntext');
  await c.addDocuments('paper.pdf', [{ id: 'paper.pdf', source: 'paper.pdf', title: 'Paper', sections: [{ heading_path: ['Page 1'], anchor: 'page=1', text: 'text' }] }]);
  const stop = new AbortController();
  const embedded: number = await c.embed({ batch: 4, signal: stop.signal, on_progress: ({ done, total }) => console.log(done / total) });
  const found: CollectionSearchResponse = await c.search('text', { k: 5 });
  const packed: Uint8Array = c.export();
  const restored: number = c.loadVectors(c.vectors());
  console.log(added.pending, embedded, found.mode, found.results.length, packed.length, restored, c.pending, c.files().length, await c.removeFile('notes/a.md'));
  await c.pruneVectors();
  await c.flush();
  const kept = await Collection.open('notes', { model, tokenizer, storage: opfsStorage('notes') });
  console.log(kept.skipped, await listCollections(), (await storageInfo({ persist: true })).usage);
  await deleteCollection('notes');
  const trace: TraceEntry[] = [];
  const answer: ResearchAnswer = await research('why?', { collection: c, llm: { base_url: 'http://127.0.0.1:11434/v1', model: 'llama3' }, on_event: (e) => trace.push(e), on_token: (t) => console.log(t), tools: true });
  console.log(answer.refused, answer.path, answer.citations[0]?.chunk_id, answer.usage.total_tokens, trace.length);
  const step: ToolStep = researchToolCall({ id: 'c1', type: 'function', function: { name: 'search', arguments: '{"query": "why"}' } }, 0, { k: 3 });
  console.log(step.search?.query ?? step.error?.message, researchQuery('why', {}), researchJudged('NO\nwhy not', {}), researchRefusal([], 0, 0), c.countTokens('why?'));
  const session = new Conversation({ rounds: [{ question: 'why?', answer: answer.refused ? null : answer.answer }] }, { count_tokens: (text) => c.countTokens(text) });
  const folded = await session.compress({ llm: { base_url: 'http://127.0.0.1:11434/v1', model: 'llama3' }, threshold: 12000, target: 8000, max_tries: 2 });
  console.log(folded.compressed, session.history().length, session.contextTokens(), JSON.stringify(session.toJSON()));
  c.free();
}
console.log(collection);
