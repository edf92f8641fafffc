//! Where a visitor's session spends its index bytes: the queries run one after the other on one
//! engine, as the drop-in box runs them (keyword results, then the same query hybrid, k = 10),
//! reading only the objects the engine asks for, and the bytes each object takes in its pack
//! (as stored: what a Range request transfers) added up by kind (the object's name up to its
//! first dot: `codes`, `block`, `frag`, `kw`, `page`, …), per query and over the session.
//!
//! `cargo run --release --example session_bytes -- <site>/sextant/index/manifest.*.json <queries.jsonl> <model dir> [probe]`
//! (`probe` overrides the index's, to see what fewer partitions would save). Prints one JSON
//! line per query and one for the session.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use sextant::embed::{Embedder, ModelOptions, TextKind, TractEmbedder};
use sextant::eval::parse_queries;
use sextant::index::IndexStore;
use sextant::options::SearchOptions;
use sextant::search::{Engine, NoClock, Step};

mod common;
use common::{object, split_index, Error};

/// Runs one search to the end on `engine`, adding the stored bytes of each object it asks for to
/// `kinds`.
fn run(
    engine: &mut Engine,
    text: &str,
    vector: Option<&[f32]>,
    options: &SearchOptions,
    files: &HashMap<String, Vec<u8>>,
    kinds: &mut BTreeMap<String, u64>,
) -> Result<(), Error> {
    for _ in 0..32 {
        match engine.search_with_vector(text, vector, options, &NoClock)? {
            Step::Done(_) => return Ok(()),
            Step::Need(names) => {
                for name in names {
                    let bytes = object(engine, files, &name)?;
                    let kind = name.split('.').next().unwrap_or("?").to_string();
                    *kinds.entry(kind).or_default() += bytes.len() as u64;
                    engine.add_file(&name, &bytes)?;
                }
            }
        }
    }
    Err(format!("{text}: the engine kept asking for files").into())
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: session_bytes <manifest.json> <queries.jsonl> <model dir> [probe]");
        std::process::exit(2);
    }
    let queries = parse_queries(&std::fs::read_to_string(&args[2])?)?;
    let model = std::fs::read(format!("{}/model.onnx", args[3]))?;
    let tokenizer = std::fs::read(format!("{}/tokenizer.json", args[3]))?;
    let (mut manifest, files) = split_index(std::path::Path::new(&args[1]))?;
    if let Some(probe) = args.get(4) {
        manifest.layout.probe = probe.parse()?;
    }
    let embedder = Arc::new(TractEmbedder::from_bytes(&model, &tokenizer, &ModelOptions::default())?);
    let keyword: SearchOptions = serde_json::from_value(serde_json::json!({ "mode": "keyword", "k": 10 }))?;
    let hybrid: SearchOptions = serde_json::from_value(serde_json::json!({ "mode": "hybrid", "k": 10 }))?;
    let mut engine = Engine::new(IndexStore::new(manifest.clone()));
    let mut session: BTreeMap<String, u64> = BTreeMap::new();
    for q in &queries {
        let vector = embedder.embed(&q.text, TextKind::Query)?;
        let mut kinds = BTreeMap::new();
        run(&mut engine, &q.text, None, &keyword, &files, &mut kinds)?;
        run(&mut engine, &q.text, Some(&vector), &hybrid, &files, &mut kinds)?;
        println!("{}", serde_json::json!({ "query": q.text, "bytes": kinds }));
        for (kind, bytes) in kinds {
            *session.entry(kind).or_default() += bytes;
        }
    }
    let total: u64 = session.values().sum();
    println!(
        "{}",
        serde_json::json!({ "session": session, "total": total, "probe": manifest.layout.probe, "queries": queries.len() })
    );
    Ok(())
}
