//! Passage embedding throughput natively: a BEIR-layout corpus (`corpus.jsonl`) or a folder of
//! HTML pages (a site) chunked with the default build settings, what the model reads for the
//! first `limit` chunks (as `sextant build` embeds them: title and headings before the text)
//! embedded as passages on `threads` threads (each a text at a time, as the build does), chunks/s
//! and tokens/s printed as JSON. With `--dump FILE` those inputs are written as JSONL
//! (`{"text": …}`) for `scripts/bench-onnxruntime-passages.py`, so onnxruntime embeds exactly the
//! same texts. The model runs as `sextant build` runs it (`ModelEmbedder`: sextant's own encoder)
//! with `--weights` (default the build's, `int8a8`: activation rows rounded to bytes; `int8`: to
//! 15 bits, what builds embedded with from 2026-12-02 to 2026-12-07; `f32`: tract multiplying in
//! f32, what `[model] weights = "f32"` builds with); `--engine tract` runs tract's plan instead
//! of the encoder (the same vectors: what builds ran before 2026-12-07).
//!
//! cargo run --release --example embed_throughput -- <corpus.jsonl | site dir> <model dir> <threads> <limit> [--dump FILE] [--weights int8a8|int8|f32] [--engine encoder|tract]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use sextant::config::BuildConfig;
use sextant::embed::{Embedder, ModelEmbedder, ModelOptions, TextKind, TractEmbedder, Weights};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    const USAGE: &str = "usage: embed_throughput <corpus.jsonl> <model dir> <threads> <limit> [--dump FILE] [--weights int8a8|int8|f32] [--engine encoder|tract]";
    let [_, corpus, model_dir, threads, limit, rest @ ..] = args.as_slice() else {
        return Err(USAGE.into());
    };
    let (threads, limit): (usize, usize) = (threads.parse()?, limit.parse()?);
    let mut options = ModelOptions::default();
    let (mut dump, mut encoder) = (None, true);
    for option in rest.chunks(2) {
        match option {
            [flag, file] if flag == "--dump" => dump = Some(file),
            [flag, w] if flag == "--weights" => options.weights = w.parse::<Weights>()?,
            [flag, e] if flag == "--engine" && (e == "encoder" || e == "tract") => encoder = e == "encoder",
            _ => return Err(format!("unknown option {option:?}; {USAGE}").into()),
        }
    }
    // f32 weights run in tract only.
    encoder &= options.weights != Weights::F32;
    let weights = options.weights;
    let model = std::fs::read(format!("{model_dir}/model.onnx"))?;
    let tokenizer = std::fs::read(format!("{model_dir}/tokenizer.json"))?;
    let embedder: Box<dyn Embedder + Sync> = if encoder {
        let ours = ModelEmbedder::load(model, &tokenizer, &options)?;
        if ours.engine() != "encoder" {
            return Err(format!("the model ran with {}, not sextant's own encoder", ours.engine()).into());
        }
        Box::new(ours)
    } else {
        Box::new(TractEmbedder::from_vec_with(model, &tokenizer, &options, weights)?)
    };
    let config = BuildConfig::default();
    let documents = if std::path::Path::new(corpus).is_dir() {
        site_pages(std::path::Path::new(corpus), &config)?
    } else {
        sextant::loader::load_jsonl(corpus, &std::fs::read_to_string(corpus)?)?
    };
    let chunked = sextant::indexer::chunk_documents(
        &documents,
        &config,
        &sextant::embed::ModelTokenizer::from_bytes(&tokenizer, options.max_tokens)?,
        "",
        &sextant::indexer::OneThread,
        &|| (),
    )?;
    let texts: Vec<&str> = chunked.inputs.iter().take(limit).map(String::as_str).collect();
    if let Some(file) = dump {
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
            "engine": format!("sextant ({}, {weights} passages)", if encoder { "own encoder" } else { "tract" }),
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

/// Every HTML page under `dir` (sorted; a page the loader refuses is passed over).
fn site_pages(
    dir: &std::path::Path,
    config: &BuildConfig,
) -> Result<Vec<sextant::chunk::Document>, Box<dyn std::error::Error>> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut documents = Vec::new();
    for path in files {
        let rel = path.strip_prefix(dir)?.to_string_lossy().replace('\\', "/");
        if let Ok(docs) = sextant::loader::load_file(&rel, &std::fs::read(&path)?, &config.input) {
            documents.extend(docs);
        }
    }
    Ok(documents)
}
