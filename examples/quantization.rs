//! What format 2's quantized vectors cost against the float vectors they come from, on a BEIR
//! collection: the corpus is embedded once (all cores), written as a format-2 index in memory,
//! and every query is run both ways.
//!
//! - **f32 anchor**: exact dense search over the float vectors, fused with the same BM25 list
//!   by the same pipeline steps.
//! - **format 2**: the engine as shipped (binary codes pick `max(rescore, depth)` candidates,
//!   int8 vectors rank them).
//!
//! Prints nDCG@10, MRR@10 and Recall@100 of dense and hybrid for both (keyword is the same list
//! in both), as `sextant eval` runs queries (k = 100) and as the search box does (k = 10, where
//! `layout.rescore` candidates are all the int8 stage ranks), and the recall of the quantized stages against exact f32 search: the share of the
//! f32 top 10 among the binary stage's R candidates (R = 20, 50, 100, 200) and in the final top 10.
//!
//! `cargo run --release --example quantization -- <corpus.jsonl> <queries.jsonl> <qrels.tsv> <model dir> [sextant.toml]`
//! (`make bench` runs it on Cranfield). Prints JSON on the last line.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rayon::prelude::*;
use sextant::config::BuildConfig;
use sextant::embed::{Embedder, ModelOptions, TextKind, TractEmbedder};
use sextant::eval::{has_relevant, mean, parse_qrels, parse_queries, score_query, QueryMetrics, RunMetrics};
use sextant::indexer::chunk_corpus;
use sextant::options::{Mode, SearchOptions};
use sextant::search::pipeline::{binary_candidates, filter, fuse, keyword_candidates, Bm25Level, FuseOptions};
use sextant::search::{Engine, NoClock};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if !(5..=6).contains(&args.len()) {
        eprintln!("usage: quantization <corpus.jsonl> <queries.jsonl> <qrels.tsv> <model dir> [sextant.toml]");
        std::process::exit(2);
    }
    let documents = sextant::loader::load_jsonl(&args[1], &std::fs::read_to_string(&args[1])?)?;
    let queries = parse_queries(&std::fs::read_to_string(&args[2])?)?;
    let qrels = parse_qrels(&std::fs::read_to_string(&args[3])?)?;
    let model = std::fs::read(format!("{}/model.onnx", args[4]))?;
    let tokenizer = std::fs::read(format!("{}/tokenizer.json", args[4]))?;
    let embedder = Arc::new(TractEmbedder::from_bytes(&model, &tokenizer, &ModelOptions::default())?);

    let config: BuildConfig = match args.get(5) {
        Some(path) => toml::from_str(&std::fs::read_to_string(path)?)?,
        None => BuildConfig::default(),
    };
    let corpus = chunk_corpus(&documents, &config, embedder.tokenizer())?;
    eprintln!("embedding {} chunks…", corpus.chunks.len());
    let vectors: Vec<Vec<f32>> = corpus
        .chunks
        .par_iter()
        .map(|c| embedder.embed(&c.text, TextKind::Passage))
        .collect::<Result<_, _>>()?;
    let built = sextant::indexer::assemble(&documents, &corpus, &vectors, embedder.spec(), &config)?;
    let packed = sextant::index::packed::pack(&built.manifest, &built.files)?;
    let mut engine = Engine::from_bytes(&packed)?;
    engine.attach_model(embedder.clone())?;
    let store = engine.store();
    let doc_id = |chunk: u32| -> String {
        let fragment = store.fragment(chunk).expect("a packed index holds every fragment");
        let c = fragment.chunk(chunk).expect("the fragment holds its chunks");
        fragment.document(c.doc).expect("and their documents").id.clone()
    };

    let judged: Vec<_> = queries.iter().filter(|q| has_relevant(qrels.get(&q.id))).collect();
    let query_vectors: Vec<Vec<f32>> = judged
        .par_iter()
        .map(|q| embedder.embed(&q.text, TextKind::Query))
        .collect::<Result<_, _>>()?;
    let analyzer = sextant::analyzer::Analyzer::english();
    let dot = |a: &[f32], b: &[f32]| -> f32 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
    // As `sextant eval` runs them (100 results, one per document, depth 2·k), and as the search
    // box asks (10 results: depth 20, so the binary stage's `rescore` candidates are all it ranks).
    // Without query expansion, so both paths take the same keyword list: what differs is the
    // vectors only.
    let options = |mode, k| SearchOptions {
        k,
        mode,
        per_document: true,
        query_expansion: false,
        ..Default::default()
    };
    let sizes = [20usize, 50, 100, 200];
    let mut found = vec![0usize; sizes.len()];
    let (mut found_final, mut wanted) = (0usize, 0usize);
    let mut runs: BTreeMap<String, BTreeMap<String, QueryMetrics>> = BTreeMap::new();
    let empty = HashMap::new();
    for (q, v) in judged.iter().zip(&query_vectors) {
        let judgements = qrels.get(&q.id).unwrap_or(&empty);
        let mut exact: Vec<(u32, f32)> = vectors.iter().enumerate().map(|(i, e)| (i as u32, dot(e, v))).collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let top10: Vec<u32> = exact.iter().take(10).map(|(c, _)| *c).collect();
        wanted += top10.len();
        for (n, &r) in found.iter_mut().zip(&sizes) {
            let candidates = binary_candidates(store.meta().expect("packed"), store.codes(), v, r);
            *n += top10.iter().filter(|c| candidates.binary_search(c).is_ok()).count();
        }
        // The final top 10 chunks of the quantized pipeline, before one-per-document.
        let rescored = engine
            .search_with_vector(
                &q.text,
                Some(v),
                &SearchOptions {
                    k: 10,
                    mode: Mode::Dense,
                    ..Default::default()
                },
                &NoClock,
            )?
            .done()?;
        let final_ids: Vec<&str> = rescored.results.iter().map(|r| r.chunk_id.as_str()).collect();
        found_final += top10
            .iter()
            .filter(|&&c| {
                let id = &store.fragment(c).and_then(|f| f.chunk(c)).expect("packed").id;
                final_ids.contains(&id.as_str())
            })
            .count();
        for k in [100usize, 10] {
            let depth = options(Mode::Hybrid, k).depth();
            for mode in [Mode::Dense, Mode::Hybrid] {
                let response = engine
                    .search_with_vector(&q.text, Some(v), &options(mode, k), &NoClock)?
                    .done()?;
                let ranked: Vec<String> = response.results.into_iter().map(|r| r.doc_id).collect();
                let name = format!("{} k={k} format 2", mode.name());
                runs.entry(name)
                    .or_default()
                    .insert(q.id.clone(), score_query(&ranked, judgements));
            }
            // The f32 anchor through the same steps.
            let level = if options(Mode::Hybrid, k).scores_documents() {
                Bm25Level::Documents
            } else {
                Bm25Level::Chunks
            };
            let keyword = keyword_candidates(store, &analyzer.terms(&q.text), built.manifest.bm25, depth, level);
            let dense: Vec<(u32, f32)> = exact.iter().take(depth).copied().collect();
            let norms = store.norms().expect("packed");
            let document_of = |c: u32| norms.documents.get(c as usize).copied();
            let o = options(Mode::Hybrid, k);
            let fusion = FuseOptions {
                fusion: o.fusion,
                dense_weight: o.dense_weight as f32,
                documents: o.fuse_documents,
                page_score: o.page_score,
            };
            for mode in [Mode::Dense, Mode::Hybrid, Mode::Keyword] {
                let kept = filter(
                    fuse(mode, &dense, &keyword, &fusion, &document_of),
                    k,
                    None,
                    Some(1),
                    document_of,
                );
                let ranked: Vec<String> = kept.iter().map(|c| doc_id(c.chunk)).collect();
                let name = format!("{} k={k} f32", mode.name());
                runs.entry(name)
                    .or_default()
                    .insert(q.id.clone(), score_query(&ranked, judgements));
            }
        }
    }
    let rescore = built.manifest.layout.rescore;
    let metrics: Vec<RunMetrics> = runs.iter().map(|(name, per_query)| mean(name, per_query)).collect();
    for m in &metrics {
        println!(
            "{:<24} nDCG@10 {:.4}  MRR@10 {:.4}  Recall@100 {:.4}",
            m.mode, m.ndcg10, m.mrr10, m.recall100
        );
    }
    let recall: BTreeMap<String, f64> = sizes
        .iter()
        .zip(&found)
        .map(|(r, n)| (format!("binary_top_{r}"), *n as f64 / wanted as f64))
        .chain([("final_top_10".to_string(), found_final as f64 / wanted as f64)])
        .collect();
    println!(
        "recall of the exact f32 top 10: {}  (layout.rescore {rescore}; k=100 rescores 200)",
        recall
            .iter()
            .map(|(k, v)| format!("{k} {v:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "{}",
        serde_json::json!({ "queries": judged.len(), "chunks": vectors.len(), "runs": metrics, "recall_of_f32_top10": recall })
    );
    Ok(())
}
