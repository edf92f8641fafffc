//! Indexing cost on hostile input, each beside prose of the same size (the anchor): loading and
//! chunking with the real tokenizer, no embedding. Linear-time code keeps every ratio near 1.
//!
//! `cargo run --release --example bench_adversarial -- <model dir> <corpus.jsonl>`
//! (`make bench-adversarial` passes the default model and the Cranfield corpus.)

use std::time::Instant;

use sextant::chunk::{split_document, ChunkParams};
use sextant::config::InputConfig;
use sextant::embed::ModelTokenizer;
use sextant::loader::load_file;

/// Prose of at least `bytes` bytes, one paragraph a record, from the corpus.
fn prose(corpus: &str, bytes: usize, separator: &str) -> String {
    let texts: Vec<String> = corpus
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = String::with_capacity(bytes + 4096);
    let mut i = 0;
    while out.len() < bytes {
        out.push_str(&texts[i % texts.len()]);
        out.push_str(separator);
        i += 1;
    }
    out
}

/// Seconds to load `bytes` as `path` and chunk it, and the number of chunks.
fn index(path: &str, bytes: &[u8], tokenizer: &ModelTokenizer, input: &InputConfig) -> (f64, usize, String) {
    let started = Instant::now();
    let docs = match load_file(path, bytes, input) {
        Ok(docs) => docs,
        Err(e) => return (started.elapsed().as_secs_f64(), 0, format!("skipped: {e}")),
    };
    let count = |s: &str| tokenizer.count(s);
    let mut chunks = 0;
    let mut largest = 0;
    for doc in &docs {
        for section in split_document(doc, ChunkParams::default(), &count).expect("tokenize") {
            chunks += section.len();
            largest = largest.max(section.iter().map(String::len).max().unwrap_or(0));
        }
    }
    (
        started.elapsed().as_secs_f64(),
        chunks,
        format!("largest chunk {largest} bytes"),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(model), Some(corpus)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: bench_adversarial <model dir> <corpus.jsonl>");
        std::process::exit(2);
    };
    let tokenizer_bytes = std::fs::read(format!("{model}/tokenizer.json")).expect("read tokenizer.json");
    let tokenizer = ModelTokenizer::from_bytes(&tokenizer_bytes, 256).expect("tokenizer");
    let corpus = std::fs::read_to_string(corpus).expect("read corpus");
    let input = InputConfig::default();
    let base64: String = {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        (0..200_000u64)
            .map(|i| alphabet[(i.wrapping_mul(2654435761) >> 7) as usize % 64] as char)
            .collect()
    };
    let deep = format!(
        "<html><body>{}text{}</body></html>",
        "<div>".repeat(40_000),
        "</div>".repeat(40_000)
    );
    let cases: Vec<(&str, String, String, String)> = vec![
        (
            "100 KB of dots",
            "dots.txt".into(),
            ".".repeat(100_000),
            prose(&corpus, 100_000, "\n\n"),
        ),
        (
            "200 KB base64 block in Markdown",
            "b64.md".into(),
            format!("# Data\n\n{base64}\n"),
            format!("# Data\n\n{}", prose(&corpus, 200_000, "\n\n")),
        ),
        (
            "one 1 MB word",
            "word.txt".into(),
            "x".repeat(1 << 20),
            prose(&corpus, 1 << 20, "\n\n"),
        ),
        (
            "50 MB of words on one line",
            "line.txt".into(),
            prose(&corpus, 50 << 20, " "),
            prose(&corpus, 50 << 20, "\n\n"),
        ),
        (
            "40,000 nested <div>s",
            "deep.html".into(),
            deep.clone(),
            format!("<html><body>{}</body></html>", "<p>text</p>".repeat(deep.len() / 11)),
        ),
    ];
    println!("| input | bytes | hostile: seconds, chunks | prose of the same size: seconds, chunks | ratio |");
    println!("|---|---|---|---|---|");
    for (name, path, hostile, anchor) in cases {
        let (t, n, note) = index(&path, hostile.as_bytes(), &tokenizer, &input);
        let anchor_path = path.replace("deep.html", "flat.html");
        let (ta, na, _) = index(&anchor_path, anchor.as_bytes(), &tokenizer, &input);
        println!(
            "| {name} | {} | {t:.2} s, {n} ({note}) | {ta:.2} s, {na} | {:.2} |",
            hostile.len(),
            t / ta.max(1e-9)
        );
    }
}
