// Transformers.js (the anchor) as the benchmark pages load it: local files only (the site
// anchorSite() lays out), onnxruntime-web's wasm backend on one thread (tract runs one text on
// one thread), the same model.onnx as sextant.
export async function localExtractor() {
  const { env, pipeline } = await import('/tfjs/transformers.js');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = '/hf/';
  env.useBrowserCache = false;
  env.backends.onnx.wasm.wasmPaths = '/ort/';
  env.backends.onnx.wasm.numThreads = 1;
  return pipeline('feature-extraction', 'minilm', { device: 'wasm', dtype: 'fp32' });
}
