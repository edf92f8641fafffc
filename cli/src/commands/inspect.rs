//! `sextant inspect`: an index's manifest, sections and files, every digest and file verified.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use sextant::container::{Container, SectionEntry};
use sextant::index::packed::unpack;
use sextant::index::{IndexManifest, INDEX_MAJOR, OLDEST_READABLE_MAJOR};

use crate::engine::read_index;

#[derive(Serialize)]
struct InspectJson<'a> {
    format: String,
    bytes: usize,
    manifest: &'a IndexManifest,
    sections: &'a [SectionEntry],
    files: usize,
    /// Every object and page (the files of a split index, or what its packs hold), by name.
    objects: Vec<String>,
    documents: usize,
    chunks: usize,
}

pub fn run(path: &Path, json: bool) -> Result<()> {
    let bytes = read_index(path)?;
    if bytes.first() == Some(&b'{') {
        return split(path, bytes.len(), json);
    }
    let raw = Container::parse(&bytes, OLDEST_READABLE_MAJOR..=INDEX_MAJOR)
        .with_context(|| format!("checking {}", path.display()))?;
    if raw.major < INDEX_MAJOR {
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
        return print_json(
            &mut out,
            format!("{}.{}", raw.major, raw.minor),
            bytes.len(),
            m,
            &raw.sections,
            store.object_names(),
        );
    }
    writeln!(
        out,
        "{}: sextant index format {}.{}, {} bytes, {files} files, all digests verified",
        path.display(),
        raw.major,
        raw.minor,
        bytes.len()
    )?;
    describe(&mut out, m)?;
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

/// A split index, from its manifest: every file beside it read and checked against its name.
fn split(path: &Path, manifest_bytes: usize, json: bool) -> Result<()> {
    let engine = crate::engine::open(path, None, None)?;
    let m = engine.manifest();
    let dir = path.parent().unwrap_or(Path::new("."));
    let names = m.file_names();
    let mut bytes = manifest_bytes;
    for name in &names {
        bytes += std::fs::metadata(dir.join(name))
            .with_context(|| format!("reading {}, a file of the index", dir.join(name).display()))?
            .len() as usize;
    }
    let mut out = std::io::stdout().lock();
    if json {
        return print_json(
            &mut out,
            format!("{}.{}", m.format.major, m.format.minor),
            bytes,
            m,
            &[],
            engine.object_names(),
        );
    }
    writeln!(
        out,
        "{}: sextant split index format {}.{}, {bytes} bytes with the manifest, {} files beside it, each verified against its name",
        path.display(),
        m.format.major,
        m.format.minor,
        names.len()
    )?;
    describe(&mut out, m)
}

/// `--json`: one object (`format`: the container's version for a packed index, the manifest's
/// for a split one).
fn print_json(
    out: &mut impl Write,
    format: String,
    bytes: usize,
    m: &IndexManifest,
    sections: &[SectionEntry],
    objects: Vec<String>,
) -> Result<()> {
    serde_json::to_writer(
        &mut *out,
        &InspectJson {
            format,
            bytes,
            manifest: m,
            sections,
            files: m.file_names().len(),
            objects,
            documents: m.counts.documents,
            chunks: m.counts.chunks,
        },
    )?;
    writeln!(out)?;
    Ok(())
}

/// What the manifest says, a line each.
fn describe(out: &mut impl Write, m: &IndexManifest) -> Result<()> {
    writeln!(out, "  generator   {}", m.generator)?;
    writeln!(out, "  documents   {}", m.counts.documents)?;
    writeln!(
        out,
        "  chunks      {} ({} shared with another document, {} repeats within a document dropped)",
        m.counts.chunks, m.counts.shared_chunks, m.counts.duplicates_dropped
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
    let (f, chunks) = (&m.files, m.counts.chunks);
    writeln!(
        out,
        "  layout      {} keyword shards (~{} bytes), {} fragments of {} chunks, codes in {} files, {} vector blocks of {} chunks, rescore {}",
        m.keyword_shards(),
        l.keyword_shard_bytes,
        f.fragments.objects(chunks),
        l.fragment_chunks,
        f.vectors.codes.objects(chunks),
        f.vectors.blocks.objects(chunks),
        l.block_chunks,
        l.rescore
    )?;
    if f.page_entries > 0 {
        writeln!(
            out,
            "  storage     {} packs (~{} bytes each; 0 packs: a file per object), pages of {} objects",
            f.packs.len(),
            l.pack_bytes,
            f.page_entries
        )?;
    }
    Ok(())
}
