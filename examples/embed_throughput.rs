//! Passage embedding throughput natively: a BEIR-layout corpus (`corpus.jsonl`) chunked with the
//! default build settings, the first `limit` chunks embedded as passages with int8 weights on
//! `threads` threads (each a text at a time, as `sextant build` does), chunks/s and tokens/s
//! printed as JSON. With `--dump FILE` the chunk texts are written as JSONL (`{"text": …}`) for
//! `scripts/bench-onnxruntime-passages.py`, so onnxruntime embeds exactly the same texts.
//!
//! cargo run --release --example embed_throughput -- <corpus.jsonl> <model dir> <threads> <limit> [--dump FILE]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use sextant::config::BuildConfig;
use sextant::embed::{Embedder, ModelOptions, TextKind, TractEmbedder, Weights};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, corpus, model_dir, threads, limit, rest @ ..] = args.as_slice() else {
        return Err("usage: embed_throughput <corpus.jsonl> <model dir> <threads> <limit> [--dump FILE]".into());
    };
    let (threads, limit): (usize, usize) = (threads.parse()?, limit.parse()?);
    let model = std::fs::read(format!("{model_dir}/model.onnx"))?;
    let tokenizer = std::fs::read(format!("{model_dir}/tokenizer.json"))?;
    let embedder = TractEmbedder::from_vec_with(model, &tokenizer, &ModelOptions::default(), Weights::Int8)?;
    let documents = sextant::loader::load_jsonl(corpus, &std::fs::read_to_string(corpus)?)?;
    let chunked = sextant::indexer::chunk_corpus(&documents, &BuildConfig::default(), embedder.tokenizer())?;
    let texts: Vec<&str> = chunked.chunks.iter().take(limit).map(|c| c.text.as_str()).collect();
    if let [flag, file] = rest {
        if flag != "--dump" {
            return Err(format!("unknown option {flag}").into());
        }
        let lines: Vec<String> = texts
            .iter()
            .map(|t| serde_json::json!({ "text": t }).to_string())
            .collect();
        std::fs::write(file, lines.join("\n") + "\n")?;
    }
    let tokens: usize = texts.iter().map(|t| embedder.count_tokens(t).unwrap_or(0)).sum();
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(text) = texts.get(i) else { break };
                embedder.embed(text, TextKind::Passage).expect("embedding");
            });
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "engine": "sextant (tract, int8 passages)",
            "threads": threads,
            "chunks": texts.len(),
            "tokens": tokens,
            "seconds": seconds,
            "chunks_per_s": texts.len() as f64 / seconds,
            "tokens_per_s": tokens as f64 / seconds,
        })
    );
    Ok(())
}
