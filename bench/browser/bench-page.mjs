// Runs in headless Chromium (driven by bench/wasm-browser.mjs): sextant's full hybrid query and
// Transformers.js's embedding of the same queries, with the same model.onnx, in one page.
const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
};
const summarise = (v) => ({ p50: pct(v, 50), p95: pct(v, 95) });

async function benchSextant({ queries, rounds }, weights) {
  const t0 = performance.now();
  const { Sextant, ready, memoryBytes } = await import('/pkg/browser.js');
  await ready();
  const t1 = performance.now();
  const sextant = await Sextant.load({ bundle: '/data/cranfield.sxt', model: '/model/model.onnx', tokenizer: '/model/tokenizer.json', weights });
  const t2 = performance.now();
  const stages = { embed_ms: [], keyword_ms: [], vector_ms: [], fusion_ms: [], total_ms: [] };
  const wall = [];
  for (let r = 0; r < rounds; r++) {
    for (const q of queries) {
      const s = performance.now();
      const { timings } = sextant.search(q, { k: 10 });
      wall.push(performance.now() - s);
      for (const key of Object.keys(stages)) stages[key].push(timings[key]);
    }
  }
  const out = { instantiate_ms: t1 - t0, load_ms: t2 - t1, wall_ms: summarise(wall), wasm_memory_mb: Math.round(memoryBytes() / 1e6) };
  for (const [key, v] of Object.entries(stages)) out[key] = summarise(v);
  out.heap_mb = performance.memory ? Math.round(performance.memory.usedJSHeapSize / 1e6) : null;
  sextant.free();
  return out;
}

async function benchTransformers({ queries, rounds }) {
  const t0 = performance.now();
  const { env, pipeline } = await import('/tfjs/transformers.js');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = '/hf/';
  env.useBrowserCache = false;
  env.backends.onnx.wasm.wasmPaths = '/ort/';
  env.backends.onnx.wasm.numThreads = 1; // tract runs one query on one thread
  const extractor = await pipeline('feature-extraction', 'minilm', { device: 'wasm', dtype: 'fp32' });
  const t1 = performance.now();
  const times = [];
  let dims = 0;
  for (let r = 0; r < rounds; r++) {
    for (const q of queries) {
      const s = performance.now();
      const output = await extractor(q, { pooling: 'mean', normalize: true });
      times.push(performance.now() - s);
      dims = output.dims.at(-1);
    }
  }
  return { load_ms: t1 - t0, embed_ms: summarise(times), dims };
}

window.runBench = async (config) => {
  const sextant = await benchSextant(config, 'f32');
  // The same wasm instance: its memory already holds the f32 peak, so only the timings count.
  const { wasm_memory_mb, heap_mb, ...sextantInt8 } = await benchSextant(config, 'int8');
  const transformers = await benchTransformers(config);
  return { sextant, sextant_int8_weights: sextantInt8, transformers };
};
window.benchReady = true;
