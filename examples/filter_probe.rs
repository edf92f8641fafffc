//! What a dense query with filters reads of the binary codes, and what it finds: for each query,
//! the exact int8 top 10 among the pages that pass (`vector_search: exact`) against the dense
//! top 10 of the partitioned index, read as a browser reads a split index (only the files the
//! engine asks for), with the index's own probe and with every partition read; the
//! rounds of files a query waits for; and how many partitions may hold chunks of the pages that
//! pass (the facets list each value's from format 2.8: a filtered query reads no other).
//!
//! `cargo run --release --example filter_probe -- <site>/sextant/index/manifest.*.json <queries.jsonl> <model dir> '<filters JSON>'`
//! e.g. `'{"group": "g3"}'` or `'{"group": {"none": ["g3"]}}'`. Prints one JSON line per probe.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use sextant::embed::{Embedder, ModelOptions, TextKind, TractEmbedder};
use sextant::eval::parse_queries;
use sextant::filters::Filter;
use sextant::index::{IndexManifest, IndexStore};
use sextant::options::SearchOptions;
use sextant::search::{Engine, NoClock, Step};

mod common;
use common::{object, split_index, Error};

/// The top results' chunk ids, and how many code files (partitions) the query read, from an
/// engine that starts with the manifest alone.
fn search(
    manifest: &IndexManifest,
    files: &HashMap<String, Vec<u8>>,
    text: &str,
    vector: &[f32],
    options: &SearchOptions,
) -> Result<(Vec<String>, usize, usize), Error> {
    let mut engine = Engine::new(IndexStore::new(manifest.clone()));
    let mut codes = 0;
    let mut rounds = 0;
    for _ in 0..32 {
        match engine.search_with_vector(text, Some(vector), options, &NoClock)? {
            Step::Done(response) => {
                return Ok((
                    response.results.into_iter().map(|r| r.chunk_id).collect(),
                    codes,
                    rounds,
                ))
            }
            Step::Need(names) => {
                rounds += 1;
                for name in names {
                    codes += usize::from(name.starts_with("codes."));
                    let bytes = object(&engine, files, &name)?;
                    engine.add_file(&name, &bytes)?;
                }
            }
        }
    }
    Err(format!("{text}: the engine kept asking for files").into())
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: filter_probe <manifest.json> <queries.jsonl> <model dir> '<filters JSON>'");
        std::process::exit(2);
    }
    let queries = parse_queries(&std::fs::read_to_string(&args[2])?)?;
    let model = std::fs::read(format!("{}/model.onnx", args[3]))?;
    let tokenizer = std::fs::read(format!("{}/tokenizer.json", args[3]))?;
    let filters: serde_json::Value = serde_json::from_str(&args[4])?;
    let (manifest, files) = split_index(std::path::Path::new(&args[1]))?;
    let partitions = manifest.files.vectors.codes.objects(manifest.counts.chunks);
    let mut store = IndexStore::new(manifest.clone());
    store.load_files(files.iter().map(|(n, b)| (n.as_str(), b.as_slice())))?;
    let by_name: BTreeMap<String, Filter> = serde_json::from_value(filters.clone())?;
    let holding = store.facets().and_then(|f| Some(f.passing_partitions(&by_name)?.len()));
    let holding = holding.map_or("null".to_string(), |n| n.to_string());
    let embedder = Arc::new(TractEmbedder::from_bytes(&model, &tokenizer, &ModelOptions::default())?);
    let options = |exact: bool| -> Result<SearchOptions, Error> {
        let search = if exact { "exact" } else { "auto" };
        Ok(serde_json::from_value(serde_json::json!({
            "mode": "dense", "k": 10, "filters": filters, "vector_search": search
        }))?)
    };
    let vectors: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| embedder.embed(&q.text, TextKind::Query))
        .collect::<Result<_, _>>()?;
    let mut truth = Vec::new();
    for (q, v) in queries.iter().zip(&vectors) {
        truth.push(search(&manifest, &files, &q.text, v, &options(true)?)?.0);
    }
    for probe in [manifest.layout.probe, partitions] {
        let mut m = manifest.clone();
        m.layout.probe = probe;
        let (mut found, mut wanted, mut read, mut rounds) = (0usize, 0usize, Vec::new(), 0usize);
        for ((q, v), exact) in queries.iter().zip(&vectors).zip(&truth) {
            let (got, codes, r) = search(&m, &files, &q.text, v, &options(false)?)?;
            found += got.iter().filter(|c| exact.contains(c)).count();
            wanted += exact.len();
            rounds += r;
            read.push(codes as f64 / partitions.max(1) as f64);
        }
        read.sort_by(f64::total_cmp);
        println!(
            "{{\"probe\": {probe}, \"partitions\": {partitions}, \"partitions_passing\": {holding}, \"filters\": {filters}, \"codes_read_median\": {:.3}, \"codes_read_mean\": {:.3}, \"recall_at_10\": {:.4}, \"rounds_mean\": {:.2}, \"results\": {wanted}, \"queries\": {}}}",
            read[read.len() / 2],
            read.iter().sum::<f64>() / read.len().max(1) as f64,
            found as f64 / wanted.max(1) as f64,
            rounds as f64 / queries.len().max(1) as f64,
            queries.len()
        );
    }
    Ok(())
}
