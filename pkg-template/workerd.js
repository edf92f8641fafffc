// Cloudflare Workers (workerd) entry: Workers may not compile WebAssembly at run time, so the
// module is imported (compiled at deploy) and instantiated on the first load(), not at start-up.
import wasmModule from './sextant_wasm_bg.wasm';
import { initSync } from './sextant_wasm.js';
import * as wasm from './sextant_wasm.js';
import { makeApi } from './core.js';

const api = makeApi(wasm, () => initSync({ module: wasmModule }));

export const { Sextant, Bases, SextantError, verifyCitations, highlights, defaults, ready, memoryBytes, checkBaseNames, selectBases, qualifyId, splitQualifiedId } = api;
export { readChatStream, retryAfterMs, backoffMs, redact } from './chat.js';
export { fetchBytes } from './fetching.js';
export { OtlpExporter, querySpans, collectionSpans } from './otlp.js';
