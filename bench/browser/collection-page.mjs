// Runs in headless Chromium (driven by bench/collection-browser.mjs): a collection indexed in the
// page the way the research workspace does it (kept in OPFS, one JSONL file added, parsed and
// chunked, then every chunk embedded and the index written), and Transformers.js embedding the
// very same chunk texts with the same model.onnx (the collection on `workers` threads, its
// default when not given: the pool of Web Workers; Transformers.js on one, without
// cross-origin isolation). Rounds alternate between the
// two so that machine noise hits both alike.
import { localExtractor } from './transformers.mjs';

const bytesOf = async (url) => new Uint8Array(await (await fetch(url)).arrayBuffer());

/** Bytes of every file in the collection's OPFS folder. */
async function opfsBytes(name) {
  const root = await navigator.storage.getDirectory();
  const dir = await (await root.getDirectoryHandle('sextant-collections')).getDirectoryHandle(name);
  const files = {};
  for await (const [entry, handle] of dir.entries()) if (handle.kind === 'file') files[entry] = (await handle.getFile()).size;
  return files;
}

window.runCollectionBench = async ({ jsonl, rounds, batch, workers }) => {
  const { Collection, deleteCollection } = await import('/pkg/collection.js');
  const [model, tokenizer] = await Promise.all([bytesOf('/model/model.onnx'), bytesOf('/model/tokenizer.json')]);
  const file = new TextEncoder().encode(jsonl);
  const documents = jsonl.split('\n').filter((l) => l.trim()).length;
  const extractor = await localExtractor();
  const out = { documents, rounds: [] };
  for (let r = 0; r < rounds; r++) {
    await deleteCollection('bench');
    const t0 = performance.now();
    const c = await Collection.open('bench', { model, tokenizer });
    const t1 = performance.now();
    const summary = await c.addFile('cranfield.jsonl', file);
    const t2 = performance.now();
    const texts = c.pendingTexts();
    const t3 = performance.now();
    let threads = 1;
    await c.embed({ batch, workers, on_progress: (p) => (threads = Math.max(threads, p.workers)) });
    const t4 = performance.now();
    const index = c.export();
    await c.flush();
    const t5 = performance.now();
    const stored = await opfsBytes('bench');
    c.free();

    const s0 = performance.now();
    for (const t of texts) await extractor(t, { pooling: 'mean', normalize: true });
    const s1 = performance.now();
    for (let i = 0; i < texts.length; i += batch) await extractor(texts.slice(i, i + batch), { pooling: 'mean', normalize: true });
    const s2 = performance.now();

    const chunks = texts.length;
    out.rounds.push({
      chunks,
      chunk_pieces: summary.chunks,
      sextant: {
        open_ms: t1 - t0,
        add_ms: t2 - t1,
        embed_ms: t4 - t3,
        write_ms: t5 - t4,
        total_ms: t2 - t1 + (t5 - t3),
        docs_per_s: documents / ((t2 - t1 + (t5 - t3)) / 1000),
        chunks_per_s: chunks / ((t2 - t1 + (t5 - t3)) / 1000),
        embed_chunks_per_s: chunks / ((t4 - t3) / 1000),
        embedding_threads: threads,
      },
      transformers: {
        one_at_a_time_chunks_per_s: chunks / ((s1 - s0) / 1000),
        batched_chunks_per_s: chunks / ((s2 - s1) / 1000),
      },
      stored_bytes: stored,
      export_bytes: index.length,
    });
  }
  await deleteCollection('bench');
  return out;
};
window.benchReady = true;
