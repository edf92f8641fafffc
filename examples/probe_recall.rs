//! How many partitions of binary codes a dense query must read: for each probe count, the recall
//! of the exact int8 top 10 (every chunk's int8 vector scored, `vector_search: exact`) in the
//! dense top 10 the partitioned index returns, and the share of the binary codes read.
//!
//! `cargo run --release --example probe_recall -- <index.sxt | split index manifest.json> <queries.jsonl> <model dir>`
//! (scripts/bench-probe.sh runs it). Prints one JSON line per probe count.

use std::sync::Arc;

use sextant::embed::{Embedder, ModelOptions, TextKind, TractEmbedder};
use sextant::eval::parse_queries;
use sextant::index::packed::Packed;
use sextant::index::IndexManifest;
use sextant::options::{Mode, SearchOptions, VectorSearch};
use sextant::search::{Engine, NoClock};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: probe_recall <index.sxt> <queries.jsonl> <model dir>");
        std::process::exit(2);
    }
    let queries = parse_queries(&std::fs::read_to_string(&args[2])?)?;
    let model = std::fs::read(format!("{}/model.onnx", args[3]))?;
    let tokenizer = std::fs::read(format!("{}/tokenizer.json", args[3]))?;
    let (manifest, files) = if args[1].ends_with(".json") {
        // A split index (`build --site`'s sextant/index/manifest.*.json): its files beside it.
        let path = std::path::Path::new(&args[1]);
        let mut files = Vec::new();
        for entry in std::fs::read_dir(path.parent().ok_or("the manifest has no folder")?)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_file() && !name.starts_with("manifest.") {
                files.push((name, std::fs::read(entry.path())?));
            }
        }
        (IndexManifest::from_json(&std::fs::read(path)?)?, files)
    } else {
        let bytes = std::fs::read(&args[1])?;
        let packed = Packed::parse(&bytes)?;
        let files: Vec<(String, Vec<u8>)> = packed.files.iter().map(|(n, b)| (n.to_string(), b.to_vec())).collect();
        (IndexManifest::from_json(packed.manifest)?, files)
    };
    let partitions = manifest.files.vectors.codes.objects(manifest.counts.chunks);
    let embedder = Arc::new(TractEmbedder::from_bytes(&model, &tokenizer, &ModelOptions::default())?);
    let vectors: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| embedder.embed(&q.text, TextKind::Query))
        .collect::<Result<_, _>>()?;
    let dense = |engine: &Engine,
                 text: &str,
                 vector: &[f32],
                 vector_search|
     -> Result<Vec<String>, Box<dyn std::error::Error>> {
        let options = SearchOptions {
            k: 10,
            mode: Mode::Dense,
            vector_search,
            ..Default::default()
        };
        let response = engine
            .search_with_vector(text, Some(vector), &options, &NoClock)?
            .done()?;
        Ok(response.results.into_iter().map(|r| r.chunk_id).collect())
    };
    let mut exact_engine = Engine::from_files(manifest.clone(), &files)?;
    exact_engine.attach_model(embedder.clone())?;
    let truth: Vec<Vec<String>> = queries
        .iter()
        .zip(&vectors)
        .map(|(q, v)| dense(&exact_engine, &q.text, v, VectorSearch::Exact))
        .collect::<Result<_, _>>()?;
    let mut probes: Vec<usize> = [1, 2, 4, 8, 16, 32].into_iter().filter(|&p| p < partitions).collect();
    probes.push(partitions);
    for probe in probes {
        let mut m = manifest.clone();
        m.layout.probe = probe;
        let mut engine = Engine::from_files(m, &files)?;
        engine.attach_model(embedder.clone())?;
        let (mut found, mut wanted) = (0usize, 0usize);
        for ((q, v), exact) in queries.iter().zip(&vectors).zip(&truth) {
            let got = dense(&engine, &q.text, v, VectorSearch::Auto)?;
            found += got.iter().filter(|c| exact.contains(c)).count();
            wanted += exact.len();
        }
        println!(
            "{{\"probe\": {probe}, \"partitions\": {partitions}, \"codes_read\": {:.3}, \"recall_at_10\": {:.4}, \"queries\": {}}}",
            probe as f64 / partitions.max(1) as f64,
            found as f64 / wanted.max(1) as f64,
            queries.len()
        );
    }
    Ok(())
}
