// Keyword-only entry for browsers: the same API over a small WebAssembly build without the
// embedding model (BM25 over the index's shards). A page shows keyword results from it at once,
// while the full engine (`browser.js`) and the model load in the background.
import init, * as wasm from './sextant_keyword.js';
import { makeApi } from './core.js';

const api = makeApi(wasm, () => init({ module_or_path: new URL('./sextant_keyword_bg.wasm', import.meta.url) }));

export const { Sextant, Bases, SextantError, verifyCitations, highlights, defaults, ready, memoryBytes, checkBaseNames, selectBases, qualifyId, splitQualifiedId } = api;
export { readChatStream, retryAfterMs, backoffMs, redact } from './chat.js';
export { fetchBytes } from './fetching.js';
export { OtlpExporter, querySpans, collectionSpans } from './otlp.js';
