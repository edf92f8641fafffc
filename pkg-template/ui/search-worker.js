// The search engine in a Web Worker, so typing never waits for WebAssembly. Messages in:
// {id, type: 'load'|'search'|'ask'|'cancel', …}; out: {id, type: 'progress'|'loaded'|'results'|
// 'token'|'answer'|'error', …}. Options are the core's (`defaults()`), passed through as they are.
// The LLM API key lives only in this worker's memory for the duration of one ask.
import { Sextant, highlights, defaults } from '../browser.js';

let sextant = null;
const running = new Map();

function reply(message) {
  self.postMessage(message);
}

async function handle(data) {
  const { id, type } = data;
  if (type === 'load') {
    sextant = await Sextant.load({
      bundle: data.bundle,
      model: data.model,
      tokenizer: data.tokenizer,
      on_progress: (p) => reply({ id, type: 'progress', ...p }),
    });
    const m = sextant.manifest();
    reply({ id, type: 'loaded', chunks: m.counts.chunks, documents: m.counts.documents, defaults: defaults() });
  } else if (type === 'search') {
    const response = sextant.search(data.query, data.options);
    // The words BM25 matched, from the core's own analyzer (stems included), for highlighting.
    for (const result of response.results) result.highlights = highlights(result.text, data.query);
    reply({ id, type: 'results', query: data.query, ...response });
  } else if (type === 'context') {
    reply({ id, type: 'context', ...sextant.context(data.query, data.options) });
  } else if (type === 'ask') {
    const controller = new AbortController();
    running.set(id, controller);
    try {
      const answer = await sextant.ask(data.question, {
        ...data.options,
        llm: data.llm,
        signal: controller.signal,
        on_token: (text) => reply({ id, type: 'token', text }),
      });
      reply({ id, type: 'answer', ...answer });
    } finally {
      running.delete(id);
    }
  } else if (type === 'cancel') {
    running.get(data.target)?.abort();
  }
}

self.onmessage = ({ data }) => {
  handle(data).catch((e) =>
    reply({
      id: data.id,
      type: 'error',
      code: e?.code ?? 'INTERNAL',
      message: String(e?.message ?? e),
      detail: e?.detail,
      partial_answer: e?.partial_answer,
    }),
  );
};
