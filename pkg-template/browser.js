// Browser (and bundler) entry: the .wasm file is fetched next to this module.
import init, * as wasm from './sextant_wasm.js';
import { makeApi } from './core.js';

const api = makeApi(wasm, () => init({ module_or_path: new URL('./sextant_wasm_bg.wasm', import.meta.url) }));

export const { Sextant, Bases, SextantError, verifyCitations, highlights, defaults, ready, memoryBytes, checkBaseNames, selectBases, qualifyId, splitQualifiedId } = api;
export { readChatStream, retryAfterMs, backoffMs, redact } from './chat.js';
export { fetchBytes } from './fetching.js';
export { OtlpExporter, querySpans, collectionSpans } from './otlp.js';
