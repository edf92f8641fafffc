//! `sextant inspect`: a bundle's manifest and sections, every digest verified.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use sextant::bundle::{Bundle, RawBundle};

use crate::engine::read_bundle;

#[derive(Serialize)]
struct InspectJson<'a> {
    format: String,
    bytes: usize,
    manifest: &'a sextant::bundle::Manifest,
    sections: &'a [sextant::bundle::SectionEntry],
    documents: usize,
    chunks: usize,
}

pub fn run(path: &Path, json: bool) -> Result<()> {
    let bytes = read_bundle(path)?;
    let raw = RawBundle::parse(&bytes).with_context(|| format!("checking {}", path.display()))?;
    // A full decode validates every section, not only the digests.
    let bundle = Bundle::from_bytes(&bytes).with_context(|| format!("decoding {}", path.display()))?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(
            &mut out,
            &InspectJson {
                format: format!("{}.{}", raw.major, raw.minor),
                bytes: bytes.len(),
                manifest: &bundle.manifest,
                sections: &raw.sections,
                documents: bundle.documents.len(),
                chunks: bundle.chunks.len(),
            },
        )?;
        writeln!(out)?;
        return Ok(());
    }
    let m = &bundle.manifest;
    writeln!(
        out,
        "{}: sextant bundle format {}.{}, {} bytes, all digests verified",
        path.display(),
        raw.major,
        raw.minor,
        bytes.len()
    )?;
    writeln!(out, "  generator   {}", m.generator)?;
    writeln!(out, "  documents   {}", bundle.documents.len())?;
    writeln!(
        out,
        "  chunks      {} ({} duplicates dropped)",
        bundle.chunks.len(),
        m.counts.duplicates_dropped
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
    writeln!(
        out,
        "  hnsw        ef_construction {} ef_search {} seed {} exact_below {}",
        m.hnsw.ef_construction, m.hnsw.ef_search, m.hnsw.seed, m.hnsw.exact_below
    )?;
    writeln!(
        out,
        "  crates      {}",
        m.crates
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
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
