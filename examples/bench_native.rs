//! Native query benchmark: per-stage latency over a query set, the recall of the binary + int8
//! stage against scoring every int8 vector,
//! and model load time.
//!
//! `cargo run --release --example bench_native -- <bundle> <queries.jsonl> <model dir> [rounds]`
//! (scripts/bench-native.sh runs it on Cranfield). Prints JSON on the last line.

use std::sync::Arc;
use std::time::Instant;

use sextant::embed::{ModelOptions, TextKind, TractEmbedder};
use sextant::eval::parse_queries;
use sextant::options::{Mode, SearchOptions, VectorSearch};
use sextant::search::{Clock, Engine};

struct InstantClock(Instant);
impl Clock for InstantClock {
    fn now_ms(&self) -> f64 {
        self.0.elapsed().as_secs_f64() * 1000.0
    }
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[rank.min(v.len() - 1)]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: bench_native <bundle> <queries.jsonl> <model dir> [rounds]");
        std::process::exit(2);
    }
    let rounds: usize = args.get(4).and_then(|r| r.parse().ok()).unwrap_or(3);
    let bundle_bytes = std::fs::read(&args[1])?;
    let queries = parse_queries(&std::fs::read_to_string(&args[2])?)?;
    let model = std::fs::read(format!("{}/model.onnx", args[3]))?;
    let tokenizer = std::fs::read(format!("{}/tokenizer.json", args[3]))?;

    let t = Instant::now();
    let mut engine = Engine::from_bytes(&bundle_bytes)?;
    let bundle_ms = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let folded = TractEmbedder::from_bytes(&model, &tokenizer, &ModelOptions::default())?;
    let model_ms = t.elapsed().as_secs_f64() * 1000.0;
    engine.attach_model(Arc::new(folded))?;

    let clock = InstantClock(Instant::now());
    let (mut embed, mut keyword, mut exact, mut hnsw, mut fusion, mut total) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut tokenize = Vec::new();
    let (mut found, mut wanted) = (0usize, 0usize);
    let embedder = engine.embedder().cloned().ok_or("no model")?;
    for round in 0..rounds {
        for q in &queries {
            let t = Instant::now();
            let _ = embedder.token_ids(&q.text)?;
            tokenize.push(t.elapsed().as_secs_f64() * 1000.0);
            let options = SearchOptions {
                k: 10,
                mode: Mode::Hybrid,
                vector_search: VectorSearch::Exact,
                ..Default::default()
            };
            let r = engine.search(&q.text, &options, &clock)?.done()?;
            embed.push(r.timings.embed_ms);
            keyword.push(r.timings.keyword_ms);
            exact.push(r.timings.vector_ms);
            fusion.push(r.timings.fusion_ms);
            total.push(r.timings.total_ms);
            let vector = embedder.embed(&q.text, TextKind::Query)?;
            let h = engine
                .search_with_vector(
                    &q.text,
                    Some(&vector),
                    &SearchOptions {
                        vector_search: VectorSearch::Auto,
                        mode: Mode::Dense,
                        ..Default::default()
                    },
                    &clock,
                )?
                .done()?;
            hnsw.push(h.timings.vector_ms);
            if round == 0 {
                let e = engine
                    .search_with_vector(
                        &q.text,
                        Some(&vector),
                        &SearchOptions {
                            vector_search: VectorSearch::Exact,
                            mode: Mode::Dense,
                            ..Default::default()
                        },
                        &clock,
                    )?
                    .done()?;
                let truth: Vec<&str> = e.results.iter().map(|r| r.chunk_id.as_str()).collect();
                found += h
                    .results
                    .iter()
                    .filter(|r| truth.contains(&r.chunk_id.as_str()))
                    .count();
                wanted += truth.len();
            }
        }
    }
    // The fusion defaults against the ones before them (issue 12), query by query in turn, on
    // the same query vectors: everything of a hybrid query but the embedding.
    let before = SearchOptions {
        fusion: sextant::options::Fusion::Rrf,
        depth: Some(20),
        query_expansion: false,
        ..Default::default()
    };
    let now = SearchOptions::default();
    let vectors: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| embedder.embed(&q.text, TextKind::Query))
        .collect::<Result<_, _>>()?;
    let mut stages: [[Vec<f64>; 4]; 2] = Default::default();
    for _ in 0..rounds {
        for (q, v) in queries.iter().zip(&vectors) {
            for (at, options) in [&before, &now].into_iter().enumerate() {
                let r = engine.search_with_vector(&q.text, Some(v), options, &clock)?.done()?;
                let t = &r.timings;
                for (i, x) in [t.keyword_ms, t.vector_ms, t.fusion_ms, t.total_ms - t.embed_ms]
                    .into_iter()
                    .enumerate()
                {
                    stages[at][i].push(x);
                }
            }
        }
    }
    println!("| stage (hybrid, k = 10, query embedded) | before: rrf, depth 20 p50 / p95 ms | now: convex, depth 100, RM3 p50 / p95 ms |\n|---|---|---|");
    for (i, name) in ["keyword", "vector", "fusion + results", "all but embedding"]
        .into_iter()
        .enumerate()
    {
        println!(
            "| {name} | {:.3} / {:.3} | {:.3} / {:.3} |",
            percentile(&stages[0][i], 50.0),
            percentile(&stages[0][i], 95.0),
            percentile(&stages[1][i], 50.0),
            percentile(&stages[1][i], 95.0)
        );
    }

    let recall = found as f64 / wanted.max(1) as f64;
    let row = |name: &str, v: &[f64]| {
        println!("| {name} | {:.3} | {:.3} |", percentile(v, 50.0), percentile(v, 95.0));
    };
    println!(
        "{} queries x {rounds} rounds; bundle parse {bundle_ms:.1} ms; model load {model_ms:.0} ms",
        queries.len()
    );
    println!("| stage | p50 ms | p95 ms |\n|---|---|---|");
    row("tokenise", &tokenize);
    row("tokenise + embed", &embed);
    row("keyword (BM25)", &keyword);
    row("vector, int8 of every chunk", &exact);
    row("vector, binary codes + int8 rescoring", &hnsw);
    row("fusion + results", &fusion);
    row("hybrid total (int8 of every chunk)", &total);
    println!("binary + int8 recall@10 against int8 of every chunk: {recall:.4} ({found}/{wanted})");
    println!(
        "{}",
        serde_json::json!({
            "queries": queries.len(), "rounds": rounds, "bundle_parse_ms": bundle_ms, "model_load_ms": model_ms,
            "embed_p50_ms": percentile(&embed, 50.0), "embed_p95_ms": percentile(&embed, 95.0),
            "keyword_p50_ms": percentile(&keyword, 50.0), "exact_p50_ms": percentile(&exact, 50.0),
            "rescored_p50_ms": percentile(&hnsw, 50.0), "fusion_p50_ms": percentile(&fusion, 50.0),
            "total_p50_ms": percentile(&total, 50.0), "total_p95_ms": percentile(&total, 95.0),
            "rescored_recall_at_10": recall,
        })
    );
    Ok(())
}
