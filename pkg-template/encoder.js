// Encoder entry for browsers: the full engine's API over a WebAssembly build that runs
// sextant's own BERT encoder instead of tract (about a third of the full engine's bytes). Its
// model is the encoder file `sextant build --site` writes (sextant.json `model_encoder`, with the
// body's row files beside it); for model.onnx, use the full engine (`browser.js`).
import init, * as wasm from './sextant_encoder.js';
import { makeApi } from './core.js';

const api = makeApi(wasm, () => init({ module_or_path: new URL('./sextant_encoder_bg.wasm', import.meta.url) }));

export const { Sextant, Bases, SextantError, verifyCitations, highlights, defaults, ready, memoryBytes, checkBaseNames, selectBases, qualifyId, splitQualifiedId } = api;
export { readChatStream, retryAfterMs, backoffMs, redact } from './chat.js';
export { fetchBytes } from './fetching.js';
export { OtlpExporter, querySpans, collectionSpans } from './otlp.js';
