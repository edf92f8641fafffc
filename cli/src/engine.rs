//! Opening an index for queries: read the file, and attach the model when the query needs it.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use sextant::embed::Weights;
use sextant::search::{Clock, Engine};

use crate::model;

/// Wall-clock milliseconds since the clock was made.
pub struct InstantClock(pub Instant);

impl InstantClock {
    /// A clock starting now.
    pub fn start() -> Self {
        Self(Instant::now())
    }
}

impl Clock for InstantClock {
    fn now_ms(&self) -> f64 {
        self.0.elapsed().as_secs_f64() * 1000.0
    }
}

/// The bytes of an index file (a packed `.sxt` or a split index's manifest).
pub fn read_index(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading index {}", path.display()))
}

/// Attaches the cross-encoder of `config`'s `[rerank]` section, if it has one (its paths are
/// relative to the config file).
pub fn attach_reranker(engine: &mut Engine, config: Option<&Path>) -> Result<()> {
    let Some(path) = config else { return Ok(()) };
    let Some(rerank) = crate::config::read_config(Some(path))?.rerank else {
        return Ok(());
    };
    let options = sextant::options::RerankOptions {
        max_tokens: rerank.max_tokens,
    };
    options
        .validate()
        .map_err(|e| anyhow::anyhow!("[rerank] in {}: {e}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let read = |name: &str, what: &str| -> Result<Vec<u8>> {
        let file = dir.join(name);
        std::fs::read(&file).with_context(|| {
            format!(
                "reading the reranker's {what} {} ([rerank] in {})",
                file.display(),
                path.display()
            )
        })
    };
    let model = read(&rerank.model, "model")?;
    let tokenizer = read(&rerank.tokenizer, "tokenizer")?;
    engine
        .load_reranker(model, &tokenizer, options.max_tokens)
        .with_context(|| {
            format!(
                "loading the cross-encoder {} ([rerank] in {})",
                rerank.model,
                path.display()
            )
        })
}

/// Opens an index: a packed `.sxt`, or the manifest of a split index (`sextant build --site`
/// writes `sextant/index/manifest.*.json`), whose files are read from beside it. Attaches the
/// model (from `--model`, else the default folder), its weights held as `weights` says, unless
/// `weights` is `None` (only keyword search is needed).
pub fn open(path: &Path, model_arg: Option<&Path>, weights: Option<Weights>) -> Result<Engine> {
    let bytes = read_index(path)?;
    let mut engine = if bytes.first() == Some(&b'{') {
        let mut engine = Engine::from_manifest(&bytes).with_context(|| format!("opening {}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        engine
            .load_all(
                |name| std::fs::read(dir.join(name)),
                |name, e| sextant::index::IndexError::BadFile {
                    file: dir.join(name).display().to_string(),
                    reason: format!("it cannot be read ({e}); copy the whole index folder, or build it again"),
                },
            )
            .with_context(|| format!("reading the files of {}", path.display()))?;
        engine
    } else {
        Engine::from_bytes(&bytes).with_context(|| format!("opening {}", path.display()))?
    };
    if let Some(weights) = weights {
        attach_model(&mut engine, model_arg, weights, &path.display().to_string())?;
    }
    Ok(engine)
}

/// Attaches the model (from `--model`, else the default folder) to `engine`, its weights held as
/// `weights` says; `what` names the index in errors.
pub fn attach_model(engine: &mut Engine, model_arg: Option<&Path>, weights: Weights, what: &str) -> Result<()> {
    let dir = model::model_dir(model_arg)?;
    let (model_bytes, tokenizer_bytes) = model::read_model_files(&dir)?;
    engine
        .load_model(model_bytes, &tokenizer_bytes, weights)
        .with_context(|| format!("the model in {} cannot query {what}", dir.display()))
}
