//! `sextant embed`: the model's token ids and vector for a text (for debugging and parity checks).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;
use sextant::embed::{Embedder, TextKind};

use crate::config::read_config;
use crate::model;

#[derive(clap::Args, Debug)]
pub struct EmbedArgs {
    /// The text.
    text: String,
    /// Embed as a document passage rather than a query (only differs with prefixes).
    #[arg(long)]
    passage: bool,
    /// A sextant.toml whose [model] section says how to run the model.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Folder with model.onnx and tokenizer.json (default: the cached model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Print JSON (token ids and vector).
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct EmbedJson<'a> {
    model_sha256: &'a str,
    dims: usize,
    token_ids: Vec<u32>,
    vector: Vec<f32>,
}

pub fn run(args: EmbedArgs) -> Result<()> {
    let config = read_config(args.config.as_deref())?;
    let dir = model::model_dir(args.model.as_deref())?;
    let embedder = model::load(&dir, &config.model)?;
    let kind = if args.passage {
        TextKind::Passage
    } else {
        TextKind::Query
    };
    let prefix = if args.passage {
        &config.model.passage_prefix
    } else {
        &config.model.query_prefix
    };
    let token_ids = embedder.tokenizer().encode(&format!("{prefix}{}", args.text))?;
    let vector = embedder.embed(&args.text, kind)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(
            &mut out,
            &EmbedJson {
                model_sha256: &embedder.spec().sha256,
                dims: vector.len(),
                token_ids,
                vector,
            },
        )?;
        writeln!(out)?;
    } else {
        writeln!(out, "{} tokens, {} dimensions", token_ids.len(), vector.len())?;
        let shown: Vec<String> = vector.iter().map(|v| format!("{v:.6}")).collect();
        writeln!(out, "[{}]", shown.join(", "))?;
    }
    Ok(())
}
