// Node entry: the .wasm file is read from the package folder.
import { readFile } from 'node:fs/promises';
import init, * as wasm from './sextant_wasm.js';
import { makeApi } from './core.js';

const api = makeApi(wasm, async () => {
  const bytes = await readFile(new URL('./sextant_wasm_bg.wasm', import.meta.url));
  return init({ module_or_path: bytes });
});

export const { Sextant, Bases, SextantError, verifyCitations, highlights, defaults, ready, memoryBytes, checkBaseNames, selectBases, qualifyId, splitQualifiedId } = api;
export { readChatStream, retryAfterMs, backoffMs, redact } from './chat.js';
export { fetchBytes } from './fetching.js';
export { OtlpExporter, querySpans, collectionSpans } from './otlp.js';
