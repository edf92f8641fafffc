// Runs in headless Chromium (driven by bench/wasm-browser.mjs): sextant's full hybrid query and
// Transformers.js's embedding of the same queries, with the same model.onnx, in one page. The
// engines are loaded first, then run round by round in turn (sextant f32, sextant int8,
// Transformers.js), so a burst of machine noise hits all of them alike.
import { localExtractor } from './transformers.mjs';

const pct = (v, p) => {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
};
const summarise = (v) => ({ p50: pct(v, 50), p95: pct(v, 95) });

async function loadSextant(weights) {
  const t0 = performance.now();
  const { Sextant, ready, memoryBytes } = await import('/pkg/browser.js');
  await ready();
  const t1 = performance.now();
  const sextant = await Sextant.load({ index: '/data/cranfield.sxt', model: '/model/model.onnx', tokenizer: '/model/tokenizer.json', weights });
  const t2 = performance.now();
  const stages = { embed_ms: [], keyword_ms: [], vector_ms: [], fusion_ms: [], total_ms: [] };
  const wall = [];
  return {
    // Wasm memory never shrinks: only the first engine's figure is its own.
    loaded: { instantiate_ms: t1 - t0, load_ms: t2 - t1, wasm_memory_mb: Math.round(memoryBytes() / 1e6) },
    async round(queries) {
      const times = [];
      for (const q of queries) {
        const s = performance.now();
        const { timings } = await sextant.search(q, { k: 10 });
        wall.push(performance.now() - s);
        times.push(timings.total_ms);
        for (const key of Object.keys(stages)) stages[key].push(timings[key]);
      }
      return times;
    },
    summary() {
      const out = { wall_ms: summarise(wall) };
      for (const [key, v] of Object.entries(stages)) out[key] = summarise(v);
      sextant.free();
      return out;
    },
  };
}

async function loadTransformers() {
  const t0 = performance.now();
  const extractor = await localExtractor();
  const t1 = performance.now();
  const all = [];
  let dims = 0;
  return {
    loaded: { load_ms: t1 - t0 },
    async round(queries) {
      const times = [];
      for (const q of queries) {
        const s = performance.now();
        const output = await extractor(q, { pooling: 'mean', normalize: true });
        times.push(performance.now() - s);
        dims = output.dims.at(-1);
      }
      all.push(...times);
      return times;
    },
    summary: () => ({ embed_ms: summarise(all), dims }),
  };
}

window.runBench = async ({ queries, rounds }) => {
  const engines = { sextant: await loadSextant('f32'), sextant_int8_weights: await loadSextant('int8'), transformers: await loadTransformers() };
  const roundRatios = { f32: [], int8: [] };
  for (let r = 0; r < rounds; r++) {
    const p50 = {};
    for (const [name, engine] of Object.entries(engines)) p50[name] = pct(await engine.round(queries), 50);
    roundRatios.f32.push(p50.sextant / p50.transformers);
    roundRatios.int8.push(p50.sextant_int8_weights / p50.transformers);
  }
  const out = {};
  for (const [name, engine] of Object.entries(engines)) out[name] = { ...engine.loaded, ...engine.summary() };
  delete out.sextant_int8_weights.wasm_memory_mb;
  out.round_ratios_p50 = roundRatios;
  return out;
};
window.benchReady = true;
