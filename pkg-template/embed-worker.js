// One worker of a collection's embedding pool (collection.js, `embed({workers})`): its own
// WebAssembly instance and model, embedding the texts it is sent as passages. The same wasm, model
// and config give the same bits as the collection's own instance, so a vector computed here is the
// one `embed()` computes in the collection's thread.
//
// Messages in: {type: 'load', model, tokenizer, config} once, then {type: 'embed', id, texts};
// out: {type: 'loaded'} | {type: 'vectors', id, vectors: [Float32Array]} |
// {type: 'error', id, code, message}.
import init, * as wasm from './sextant_collection.js';

let embedder = null;

self.onmessage = async ({ data }) => {
  try {
    if (data.type === 'load') {
      await init({ module_or_path: new URL('./sextant_collection_bg.wasm', import.meta.url) });
      embedder = new wasm.Collection(data.model, data.tokenizer, data.config);
      self.postMessage({ type: 'loaded' });
    } else if (data.type === 'embed') {
      const vectors = data.texts.map((text) => embedder.embedPassage(text));
      self.postMessage({ type: 'vectors', id: data.id, vectors }, vectors.map((v) => v.buffer));
    }
  } catch (e) {
    self.postMessage({ type: 'error', id: data.id, code: e?.code ?? 'INTERNAL', message: String(e?.message ?? e) });
  }
};
