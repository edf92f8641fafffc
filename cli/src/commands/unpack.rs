//! `sextant unpack`: a packed index (`.sxt`) as the files of a split index — the form a static
//! host or a Worker serves, which `sextant build --site` writes for a site.

use std::path::PathBuf;

use anyhow::{Context, Result};
use sextant::index::files::NAME_HASH_LEN;
use sextant::index::packed::{unpack, Packed};

use crate::engine::read_index;
use crate::indexing::write_atomically;

#[derive(clap::Args, Debug)]
pub struct UnpackArgs {
    /// The packed index.
    index: PathBuf,
    /// The folder to write the manifest and files into (created if missing).
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run(args: UnpackArgs) -> Result<()> {
    let bytes = read_index(&args.index)?;
    // Checks every file first: nothing is written from a damaged index.
    let store = unpack(&bytes).with_context(|| format!("reading {}", args.index.display()))?;
    std::fs::create_dir_all(&args.output).with_context(|| format!("creating {}", args.output.display()))?;
    let packed = Packed::parse(&bytes)?;
    let manifest = packed.manifest;
    for (name, body) in &packed.files {
        write_atomically(&args.output.join(name), body)?;
    }
    let hash = &sextant::digest::sha256_hex(manifest)[..NAME_HASH_LEN];
    let manifest_name = format!("manifest.{hash}.json");
    write_atomically(&args.output.join(&manifest_name), manifest)?;
    println!(
        "wrote {} files and {} to {} ({} chunks)",
        store.manifest().file_names().len(),
        manifest_name,
        args.output.display(),
        store.manifest().counts.chunks
    );
    Ok(())
}
