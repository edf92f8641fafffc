//! `sextant inspect`: an index's manifest, sections and files, every digest and file verified.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use sextant::bundle::{RawBundle, SectionEntry, V1_MAJOR};
use sextant::index::packed::unpack;
use sextant::index::IndexManifest;

use crate::engine::read_bundle;

#[derive(Serialize)]
struct InspectJson<'a> {
    format: String,
    bytes: usize,
    manifest: &'a IndexManifest,
    sections: &'a [SectionEntry],
    files: usize,
    documents: usize,
    chunks: usize,
}

pub fn run(path: &Path, json: bool) -> Result<()> {
    let bytes = read_bundle(path)?;
    let raw = RawBundle::parse(&bytes).with_context(|| format!("checking {}", path.display()))?;
    if raw.major == V1_MAJOR {
        anyhow::bail!(
            "{} is a format {}.{} bundle, which this sextant no longer searches; convert it with `sextant upgrade {} -o NEW.sxt`",
            path.display(),
            raw.major,
            raw.minor,
            path.display()
        );
    }
    // Unpacking checks every file against its hash and the manifest, not only the digests.
    let store = unpack(&bytes).with_context(|| format!("decoding {}", path.display()))?;
    let m = store.manifest();
    let files = m.file_names().len();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(
            &mut out,
            &InspectJson {
                format: format!("{}.{}", raw.major, raw.minor),
                bytes: bytes.len(),
                manifest: m,
                sections: &raw.sections,
                files,
                documents: m.counts.documents,
                chunks: m.counts.chunks,
            },
        )?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "{}: sextant index format {}.{}, {} bytes, {files} files, all digests verified",
        path.display(),
        raw.major,
        raw.minor,
        bytes.len()
    )?;
    writeln!(out, "  generator   {}", m.generator)?;
    writeln!(out, "  documents   {}", m.counts.documents)?;
    writeln!(
        out,
        "  chunks      {} ({} duplicates dropped)",
        m.counts.chunks, m.counts.duplicates_dropped
    )?;
    writeln!(
        out,
        "  model       sha256 {} ({} dims, {:?} pooling, normalize {}, window {})",
        m.model.sha256, m.model.dims, m.model.pooling, m.model.normalize, m.model.max_tokens
    )?;
    writeln!(out, "  tokenizer   sha256 {}", m.model.tokenizer_sha256)?;
    writeln!(
        out,
        "  chunking    size {} overlap {}",
        m.chunking.chunk_size, m.chunking.chunk_overlap
    )?;
    writeln!(out, "  bm25        k1 {} b {}", m.bm25.k1, m.bm25.b)?;
    let l = &m.layout;
    writeln!(
        out,
        "  layout      {} keyword shards (~{} bytes), {} fragments of {} chunks, codes in {} files, {} vector blocks of {} chunks, rescore {}",
        m.files.keyword.len(),
        l.keyword_shard_bytes,
        m.files.fragments.files.len(),
        l.fragment_chunks,
        m.files.vectors.codes.files.len(),
        m.files.vectors.blocks.files.len(),
        l.block_chunks,
        l.rescore
    )?;
    writeln!(out, "  sections:")?;
    for s in &raw.sections {
        writeln!(
            out,
            "    {:<10} {:>12} bytes at {:>10}  sha256 {}",
            s.name, s.length, s.offset, s.sha256
        )?;
    }
    Ok(())
}
