//! Finding and loading the embedding model.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use sextant::embed::{ModelEmbedder, ModelOptions};

/// `--model DIR`, else `$SEXTANT_MODEL_DIR`, else the cache `scripts/fetch-model.sh` fills.
pub fn model_dir(arg: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = arg {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = std::env::var_os("SEXTANT_MODEL_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").context("HOME is not set; pass --model DIR")?;
    Ok(Path::new(&home).join(".cache/sextant/models/minilm-l6-v2-int8"))
}

/// The bytes of `model.onnx` and `tokenizer.json` in `dir`.
pub fn read_model_files(dir: &Path) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for name in ["model.onnx", "tokenizer.json"] {
        let path = dir.join(name);
        if !path.is_file() {
            bail!(
                "{} not found; run `make model` (scripts/fetch-model.sh) to fetch the default model, or pass --model DIR with a folder holding model.onnx and tokenizer.json",
                path.display()
            );
        }
        out.push(std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?);
    }
    let tokenizer = out.pop().unwrap_or_default();
    let model = out.pop().unwrap_or_default();
    Ok((model, tokenizer))
}

/// Loads the model in `dir` (sextant's own encoder where it runs it: `ModelEmbedder`).
pub fn load(dir: &Path, options: &ModelOptions) -> Result<Arc<ModelEmbedder>> {
    let (model, tokenizer) = read_model_files(dir)?;
    let embedder = ModelEmbedder::load(model, &tokenizer, options)
        .with_context(|| format!("loading the model in {}", dir.display()))?;
    Ok(Arc::new(embedder))
}
