//! The core compiled to WebAssembly gives the native results: the golden embeddings (token ids
//! exact, cosine >= 0.999) and, on a Cranfield bundle built by the native CLI, the same top-10
//! chunks in the same order with scores within 1e-4 of `sextant search --json`, in every mode.
//!
//! Runs under wasm-bindgen-test in Node and in headless Chromium (scripts/test-wasm.sh builds
//! the bundle and the expected results first and points SEXTANT_PARITY_DIR at them).
#![cfg(target_arch = "wasm32")]

use std::sync::Arc;

use sextant::embed::{BertEncoder, Embedder, ModelOptions, TextKind, TractEmbedder, Weights};
use sextant::options::{Mode, SearchOptions};
use sextant::search::{Engine, NoClock};
use wasm_bindgen_test::wasm_bindgen_test;

static MODEL: &[u8] = include_bytes!(concat!(env!("SEXTANT_MODEL_DIR"), "/model.onnx"));
static TOKENIZER: &[u8] = include_bytes!(concat!(env!("SEXTANT_MODEL_DIR"), "/tokenizer.json"));
static GOLDEN: &str = include_str!("fixtures/golden/minilm-int8-embeddings.jsonl");
static BUNDLE: &[u8] = include_bytes!(concat!(env!("SEXTANT_PARITY_DIR"), "/cranfield.sxt"));
static EXPECTED: &str = include_str!(concat!(env!("SEXTANT_PARITY_DIR"), "/expected.jsonl"));
static EXPECTED_F32: &str = include_str!(concat!(env!("SEXTANT_PARITY_DIR"), "/expected-f32.jsonl"));
static EXPECTED_INT5: &str = include_str!(concat!(env!("SEXTANT_PARITY_DIR"), "/expected-int5.jsonl"));
static EXPECTED_PAGES: &str = include_str!(concat!(env!("SEXTANT_PARITY_DIR"), "/expected-pages.jsonl"));

/// The model as queries run it (int8 weights on 15-bit rows, the CLI's `--weights` default).
fn embedder() -> TractEmbedder {
    let options = ModelOptions {
        weights: Weights::Int8,
        ..ModelOptions::default()
    };
    TractEmbedder::from_bytes(MODEL, TOKENIZER, &options).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[derive(serde::Deserialize)]
struct Golden {
    text: String,
    token_ids: Vec<u32>,
    embedding: Vec<f32>,
}

/// The int8 product's WebAssembly SIMD kernel against an f64 reference, on shapes with odd
/// rows and columns that do not fill a panel (the native tests check every kernel against the
/// portable one; this is the wasm kernel, which only runs here).
#[wasm_bindgen_test]
fn the_int8_product_matches_f64_in_wasm() {
    let seed: u64 = 0x5eed_0014;
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (rows, k, n) in [(1, 1, 1), (3, 5, 7), (5, 384, 9), (9, 17, 24), (6, 511, 33)] {
        let x: Vec<f32> = (0..rows * k)
            .map(|_| (next() % 20_001) as f32 / 2_500.0 - 4.0)
            .collect();
        let q: Vec<i8> = (0..k * n).map(|_| (next() % 256) as u8 as i8).collect();
        let scale: Vec<f32> = (0..n).map(|i| 0.001 + i as f32 * 0.0005).collect();
        let packed = sextant_kernels::PackedInt8::new(&q, k, n, sextant_kernels::Rows::Wide).unwrap();
        let epilogue = sextant_kernels::Epilogue {
            scale: &scale,
            bias: None,
            gelu: false,
        };
        let got = packed.product(&x, rows, &epilogue, None);
        for r in 0..rows {
            let row = &x[r * k..(r + 1) * k];
            let largest = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            for c in 0..n {
                let want: f64 =
                    (0..k).map(|i| f64::from(row[i]) * f64::from(q[i * n + c])).sum::<f64>() * f64::from(scale[c]);
                // Each x rounded by at most half a level (32,767 levels for these K) of its row's largest.
                let bound = k as f64 * 0.5 * f64::from(largest) / 32_767.0 * 128.0 * f64::from(scale[c]) + 1e-5;
                let g = f64::from(got[r * n + c]);
                assert!(
                    (g - want).abs() <= bound,
                    "seed {seed:#x}, {rows}×{k}×{n} [{r},{c}]: {g} vs {want}"
                );
            }
        }
    }
}

#[wasm_bindgen_test]
fn golden_embeddings_in_wasm() {
    let embedder = embedder();
    let f32 = TractEmbedder::from_vec_with(MODEL.to_vec(), TOKENIZER, &ModelOptions::default(), Weights::F32).unwrap();
    let mut n = 0;
    for line in GOLDEN.lines() {
        let g: Golden = serde_json::from_str(line).unwrap();
        assert_eq!(
            embedder.tokenizer().encode(&g.text).unwrap(),
            g.token_ids,
            "{:?}",
            g.text
        );
        let v = embedder.embed(&g.text, TextKind::Query).unwrap();
        let cos = cosine(&v, &g.embedding);
        assert!(cos >= 0.999, "cosine {cos} for {:?}", g.text);
        // The integer products (the WebAssembly SIMD kernel) give the f32 vectors' within the
        // rounding of the activations.
        let w = f32.embed(&g.text, TextKind::Query).unwrap();
        let same = cosine(&v, &w);
        assert!(same >= 0.99999, "int8 weights: cosine {same} to f32's for {:?}", g.text);
        n += 1;
    }
    assert!(n >= 10);
}

#[derive(serde::Deserialize)]
struct ExpectedHit {
    chunk_id: String,
    score: f32,
}

#[derive(serde::Deserialize)]
struct ExpectedLine {
    query_id: String,
    query: String,
    mode: String,
    results: Vec<ExpectedHit>,
}

/// Scores within this of each other are a near-tie, which the last bit of a float can order
/// either way (with int8 weights, a level of one activation).
const TIE: f32 = 1e-4;

/// The same results in the same order, but for near-ties: at each rank the score is the
/// expected one within [`TIE`], and the chunk is the expected one, or one expected at a score
/// within [`TIE`] of this rank's (two near-tied chunks swapped, or one tied with the last kept).
fn assert_same_ranking(got: &[(&str, f32)], want: &[(&str, f32)], context: &str) {
    assert_eq!(got.len(), want.len(), "{context}");
    let last = want.last().map_or(0.0, |w| w.1);
    for (i, ((id, score), (want_id, want_score))) in got.iter().zip(want).enumerate() {
        assert!((score - want_score).abs() <= TIE, "rank {i}: {context}");
        let tied = match want.iter().find(|w| w.0 == *id) {
            Some(w) => (w.1 - want_score).abs() <= TIE,
            None => (score - last).abs() <= TIE,
        };
        assert!(id == want_id || tied, "rank {i}: {context}");
    }
}

#[wasm_bindgen_test]
fn cranfield_results_match_the_native_cli() {
    // int8 weights (integer products, the default), f32 weights and five-bit layers (what a
    // site's packed model body computes), each against the CLI's results with the same weights.
    for (weights, expected) in [
        (Weights::Int8, EXPECTED),
        (Weights::F32, EXPECTED_F32),
        (Weights::Int5, EXPECTED_INT5),
    ] {
        let embedder =
            TractEmbedder::from_vec_with(MODEL.to_vec(), TOKENIZER, &ModelOptions::default(), weights).unwrap();
        results_match(Arc::new(embedder), expected, weights);
    }
}

/// sextant's own encoder (`embed::bert`, what the search box runs without tract), written here
/// from the site's five-bit model body and fed its row files, gives the CLI's five-bit results.
#[wasm_bindgen_test]
fn the_encoder_gives_the_native_five_bit_results() {
    let parts = sextant::embed::rows::split_model(MODEL).unwrap();
    let (body, _) = sextant::embed::int5::pack_body(&parts.body).unwrap();
    let options = ModelOptions::default();
    let file = sextant::embed::bert::write_encoder(&body, options.max_tokens).unwrap();
    let encoder = BertEncoder::from_bytes(&file, TOKENIZER, &options).unwrap();
    for (name, bytes) in &parts.row_files {
        assert!(encoder.add_file(name, bytes).unwrap(), "{name}");
    }
    results_match(Arc::new(encoder), EXPECTED_INT5, Weights::Int5);
}

/// Results by page (BM25 of whole documents, its IDF's logarithm computed at query time): keyword
/// one per document, hybrid pages fused with three sections each, as the native CLI gives them.
#[wasm_bindgen_test]
fn cranfield_page_results_match_the_native_cli() {
    let by_page = |mode: Mode| SearchOptions {
        k: 10,
        mode,
        per_document: mode == Mode::Keyword,
        fuse_documents: mode == Mode::Hybrid,
        sub_results: (mode == Mode::Hybrid).then_some(3),
        ..Default::default()
    };
    assert!(by_page(Mode::Keyword).scores_documents() && by_page(Mode::Hybrid).scores_documents());
    let checked = lines_match(Arc::new(embedder()), EXPECTED_PAGES, &by_page, "by page");
    assert_eq!(
        checked.values().sum::<usize>(),
        50,
        "25 queries in keyword and hybrid mode: {checked:?}"
    );
}

fn results_match(embedder: Arc<dyn Embedder>, expected_lines: &str, weights: Weights) {
    let defaults = |mode: Mode| SearchOptions {
        k: 10,
        mode,
        ..Default::default()
    };
    let checked = lines_match(embedder, expected_lines, &defaults, &format!("{weights:?} weights"));
    for mode in ["hybrid", "dense", "keyword"] {
        assert!(
            checked.get(mode).copied().unwrap_or(0) >= 25,
            "fewer than 25 {mode} queries checked: {checked:?}"
        );
    }
}

/// Runs each expected line's query with `options` for its mode and checks the wasm ranking is the
/// native one; returns how many lines of each mode were checked.
fn lines_match(
    embedder: Arc<dyn Embedder>,
    expected_lines: &str,
    options: &dyn Fn(Mode) -> SearchOptions,
    how: &str,
) -> std::collections::BTreeMap<String, usize> {
    let mut engine = Engine::from_bytes(BUNDLE).unwrap();
    engine.attach_model(embedder).unwrap();
    let mut checked = std::collections::BTreeMap::<String, usize>::new();
    for line in expected_lines.lines() {
        let expected: ExpectedLine = serde_json::from_str(line).unwrap();
        let mode: Mode = expected.mode.parse().unwrap();
        let got = engine
            .search(&expected.query, &options(mode), &NoClock)
            .unwrap()
            .done()
            .unwrap()
            .results;
        let got: Vec<(&str, f32)> = got.iter().map(|r| (r.chunk_id.as_str(), r.score)).collect();
        let want: Vec<(&str, f32)> = expected
            .results
            .iter()
            .map(|r| (r.chunk_id.as_str(), r.score))
            .collect();
        let context = format!(
            "query {} ({}) in {} mode, {how}: {got:?} in wasm, {want:?} native",
            expected.query_id, expected.query, expected.mode
        );
        assert_same_ranking(&got, &want, &context);
        *checked.entry(expected.mode).or_default() += 1;
    }
    checked
}

/// Passages embedded here as the default builds them (int8 weights on byte rows, `int8a8`: here
/// the 16-bit kernel, natively the byte kernels) give the vectors the native CLI wrote into the
/// Cranfield bundle, bit for bit: every chunk of the first fragments, embedded as the
/// index says (title and headings before the text), quantized as the writer quantizes, equals
/// the stored int8 vector and scale.
#[wasm_bindgen_test]
fn passages_embed_to_the_native_index_bits() {
    let store = sextant::index::packed::unpack(BUNDLE).unwrap();
    let manifest = store.manifest();
    assert_eq!(
        manifest.model.weights,
        Weights::Int8A8,
        "the bundle was built with the default passages (int8a8)"
    );
    let embedder = TractEmbedder::from_vec(MODEL.to_vec(), TOKENIZER, &manifest.model.options()).unwrap();
    let mut checked = 0;
    for chunk in 0..60u32 {
        let fragment = store.fragment(chunk).unwrap();
        let c = &fragment.chunks[(chunk - fragment.first) as usize];
        let title = fragment
            .documents
            .iter()
            .find(|(n, _)| *n == c.doc)
            .map_or("", |(_, d)| d.title.as_str());
        let input = manifest.fields.embed_input(title, &c.heading_path, &c.text);
        let vector = embedder.embed(&input, TextKind::Passage).unwrap();
        let block = sextant::index::files::BlockFile::quantize(&[chunk], &[&vector], vector.len());
        let here: Vec<u32> = block.vector(chunk).unwrap().iter().map(|x| x.to_bits()).collect();
        let native: Vec<u32> = store.vector(chunk).unwrap().iter().map(|x| x.to_bits()).collect();
        assert_eq!(here, native, "chunk {chunk} ({}): {input:?}", c.id);
        checked += 1;
    }
    assert_eq!(checked, 60);
}
