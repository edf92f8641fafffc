//! Per-operator profile of the embedding model in tract, natively: for 8, 16 and 32 tokens (the
//! first Cranfield queries that long, cut there with [SEP] last — the inputs
//! `scripts/profile-onnxruntime.py` gives onnxruntime), f32 and int8 weights, the time per
//! operator kind per run, slowest first, as JSON.
//!
//! cargo run --release --example profile_embed -- <queries.jsonl> <model dir> [rounds] [lengths, default 8,16,32]

use std::time::Instant;

use sextant::embed::{Embedder, ModelOptions, TractEmbedder, Weights};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (queries, model_dir) = match args.as_slice() {
        [_, q, m, ..] => (q, m),
        _ => return Err("usage: profile_embed <queries.jsonl> <model dir> [rounds] [lengths, e.g. 8,16,32]".into()),
    };
    let rounds: usize = args.get(3).map_or(Ok(20), |r| r.parse())?;
    let lengths: Vec<usize> = args
        .get(4)
        .map_or("8,16,32", String::as_str)
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    let texts: Vec<String> = std::fs::read_to_string(queries)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).map(|v| v["text"].as_str().unwrap_or("").to_string()))
        .collect::<Result<_, _>>()?;
    let model = std::fs::read(format!("{model_dir}/model.onnx"))?;
    let tokenizer = std::fs::read(format!("{model_dir}/tokenizer.json"))?;
    let clock = Instant::now();
    let now = || clock.elapsed().as_secs_f64() * 1000.0;
    let mut report = serde_json::Map::new();
    for weights in [Weights::F32, Weights::Int8] {
        let embedder = TractEmbedder::from_vec_with(model.clone(), &tokenizer, &ModelOptions::default(), weights)?;
        let mut by_length = serde_json::Map::new();
        for &length in &lengths {
            let sequences: Vec<Vec<u32>> = texts
                .iter()
                .filter_map(|t| embedder.token_ids(t).ok())
                .filter(|ids| ids.len() >= length)
                .map(|ids| {
                    let mut cut = ids[..length - 1].to_vec();
                    cut.push(*ids.last().unwrap_or(&0));
                    cut
                })
                .take(20)
                .collect();
            // Whole runs, as a query runs them, for the p50 beside the profile.
            let mut runs = Vec::new();
            for _ in 0..rounds {
                for ids in &sequences {
                    let t = now();
                    embedder.embed_ids(ids)?;
                    runs.push(now() - t);
                }
            }
            runs.sort_by(f64::total_cmp);
            let mut ops: Vec<sextant::embed::OpTime> = Vec::new();
            for ids in &sequences {
                for op in embedder.profile(ids, rounds, &now)? {
                    match ops.iter_mut().find(|o| o.op == op.op) {
                        Some(o) => o.ms += op.ms / sequences.len() as f64,
                        None => ops.push(sextant::embed::OpTime {
                            ms: op.ms / sequences.len() as f64,
                            ..op
                        }),
                    }
                }
            }
            ops.sort_by(|a, b| b.ms.total_cmp(&a.ms));
            by_length.insert(
                length.to_string(),
                serde_json::json!({ "run_ms_p50": runs[runs.len() / 2], "ops": ops }),
            );
        }
        report.insert(
            format!("{weights:?}").to_lowercase(),
            serde_json::Value::Object(by_length),
        );
    }
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
