//! `sextant upgrade`: converts a format-1 bundle into a format-2 index without embedding again.

use std::path::PathBuf;

use anyhow::{Context, Result};
use sextant::index::packed::pack;
use sextant::indexer::upgrade;

use crate::config::read_config;
use crate::engine::read_index;
use crate::indexing::write_atomically;
use crate::inputs::check_output;

#[derive(clap::Args, Debug)]
pub struct UpgradeArgs {
    /// The format-1 bundle.
    bundle: PathBuf,
    /// Where to write the format-2 index (packed, one file).
    #[arg(short, long)]
    output: PathBuf,
    /// A sextant.toml whose [layout] section says how to cut the index.
    #[arg(long)]
    config: Option<PathBuf>,
}

pub fn run(args: UpgradeArgs) -> Result<()> {
    check_output(&args.output, std::slice::from_ref(&args.bundle))?;
    let config = read_config(args.config.as_deref())?;
    let old = read_index(&args.bundle)?;
    let built = upgrade(&old, config.layout).with_context(|| format!("converting {}", args.bundle.display()))?;
    let bytes = pack(&built.manifest, &built.files)?;
    write_atomically(&args.output, &bytes)?;
    println!(
        "wrote {} ({} bytes): {} documents, {} chunks, format 2",
        args.output.display(),
        bytes.len(),
        built.manifest.counts.documents,
        built.manifest.counts.chunks
    );
    Ok(())
}
