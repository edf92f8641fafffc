//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// The folder holding `model.onnx` and `tokenizer.json`: `$SEXTANT_MODEL_DIR`, else the cache
/// that `scripts/fetch-model.sh` fills.
pub fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SEXTANT_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").expect("HOME is not set");
    Path::new(&home).join(".cache/sextant/models/minilm-l6-v2-int8")
}

/// Reads a file of the model folder, with a message saying how to get it.
pub fn model_file(name: &str) -> Vec<u8> {
    let path = model_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `make model` (scripts/fetch-model.sh) first",
            path.display()
        )
    })
}

/// A path under `tests/fixtures`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// Cosine similarity of two vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

/// The default model, loaded from the model folder.
pub fn embedder() -> sextant::embed::TractEmbedder {
    sextant::embed::TractEmbedder::from_bytes(
        &model_file("model.onnx"),
        &model_file("tokenizer.json"),
        &sextant::embed::ModelOptions::default(),
    )
    .expect("load the model")
}
