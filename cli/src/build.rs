//! `sextant build`: documents → bundle.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sextant::bundle::RawBundle;
use sextant::chunk::Document;
use sextant::config::BuildConfig;
use sextant::embed::{Embedder, TextKind};
use sextant::indexer::{assemble, chunk_corpus};
use sextant::loader::load_file;

use crate::inputs::{collect, Skipped};
use crate::model;

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Files or directories to index (directories are walked recursively; hidden files skipped).
    #[arg(required_unless_present = "site", conflicts_with = "site")]
    inputs: Vec<PathBuf>,
    /// Where to write the bundle.
    #[arg(short, long, required_unless_present = "site", conflicts_with = "site")]
    output: Option<PathBuf>,
    /// Index a built static site (every HTML page; URLs from paths) and write its search files
    /// into <SITE>/sextant/ plus the offline service worker <SITE>/sextant-sw.js.
    #[arg(long, value_name = "SITE")]
    site: Option<PathBuf>,
    /// With --site: the built sextant-search package (default: $SEXTANT_PACKAGE_DIR, else the
    /// repository's pkg/ written by `make wasm`).
    #[arg(long, requires = "site")]
    package: Option<PathBuf>,
    /// A sextant.toml with [model], [chunking], [bm25], [hnsw] and [input] settings.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Folder with model.onnx and tokenizer.json (default: $SEXTANT_MODEL_DIR, else the cache
    /// filled by `make model`).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Only index files whose path (relative to its input) matches one of these globs.
    #[arg(long)]
    include: Vec<String>,
    /// Skip files whose path (relative to its input) matches one of these globs.
    #[arg(long)]
    exclude: Vec<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// `sextant.toml`: the core's build configuration plus input globs.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    model: sextant::embed::ModelOptions,
    #[serde(default)]
    chunking: sextant::chunk::ChunkParams,
    #[serde(default)]
    bm25: sextant::bm25::Bm25Params,
    #[serde(default)]
    hnsw: sextant::vector::HnswParams,
    #[serde(default)]
    input: InputConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputConfig {
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
}

/// Reads `sextant.toml` (or the defaults).
pub fn read_config(path: Option<&Path>) -> Result<(BuildConfig, Vec<String>, Vec<String>)> {
    let Some(path) = path else {
        return Ok((BuildConfig::default(), Vec::new(), Vec::new()));
    };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
    let file: FileConfig = toml::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "invalid config {}: {}; see the README's configuration section for the keys",
            path.display(),
            e.to_string().trim_end()
        )
    })?;
    Ok((
        BuildConfig {
            model: file.model,
            chunking: file.chunking,
            bm25: file.bm25,
            hnsw: file.hnsw,
        },
        file.input.include,
        file.input.exclude,
    ))
}

#[derive(Serialize)]
struct SectionSize {
    name: String,
    bytes: u64,
}

#[derive(Serialize)]
struct Summary {
    output: String,
    files: usize,
    documents: usize,
    chunks: usize,
    duplicates_dropped: usize,
    skipped: Vec<SkippedJson>,
    bytes: u64,
    sections: Vec<SectionSize>,
    seconds: f64,
    docs_per_second: f64,
    chunks_per_second: f64,
}

#[derive(Serialize)]
struct SkippedJson {
    path: String,
    reason: String,
}

fn bar(len: u64, message: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

/// Loads every input file into documents.
pub fn load_documents(files: &[crate::inputs::InputFile]) -> Result<Vec<Document>> {
    let progress = bar(files.len() as u64, "loading");
    let mut documents = Vec::new();
    for file in files {
        let bytes = std::fs::read(&file.path).with_context(|| format!("reading {}", file.path.display()))?;
        let docs = load_file(&file.rel, &bytes).with_context(|| format!("loading {}", file.path.display()))?;
        documents.extend(docs);
        progress.inc(1);
    }
    progress.finish_and_clear();
    Ok(documents)
}

pub fn run(args: BuildArgs) -> Result<()> {
    let started = Instant::now();
    let (config, mut include, mut exclude) = read_config(args.config.as_deref())?;
    include.extend(args.include.iter().cloned());
    exclude.extend(args.exclude.iter().cloned());
    if let Some(site) = &args.site {
        return crate::site::run(
            site,
            &config,
            &include,
            &exclude,
            args.model.as_deref(),
            args.package.as_deref(),
            args.json,
        );
    }
    let output = args.output.clone().context("--output is required")?;
    let (files, skipped) = collect(&args.inputs, &include, &exclude)?;
    for s in &skipped {
        eprintln!("warning: skipped {}: {}", s.path, s.reason);
    }
    if files.is_empty() {
        bail!(
            "no documents to index in {}: no .md, .mdx, .html, .txt or .jsonl files{}",
            args.inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if include.is_empty() && exclude.is_empty() {
                ""
            } else {
                " matched the include/exclude globs"
            }
        );
    }
    let documents = load_documents(&files)?;
    let bytes = build_bundle(&documents, &config, args.model.as_deref())?;
    write_atomically(&output, &bytes)?;
    let seconds = started.elapsed().as_secs_f64();
    let raw = RawBundle::parse(&bytes).context("re-reading the bundle just written")?;
    let manifest = raw.manifest()?;
    let summary = Summary {
        output: output.display().to_string(),
        files: files.len(),
        documents: manifest.counts.documents,
        chunks: manifest.counts.chunks,
        duplicates_dropped: manifest.counts.duplicates_dropped,
        skipped: skipped
            .iter()
            .map(|Skipped { path, reason }| SkippedJson {
                path: path.clone(),
                reason: reason.clone(),
            })
            .collect(),
        bytes: bytes.len() as u64,
        sections: raw
            .sections
            .iter()
            .map(|s| SectionSize {
                name: s.name.clone(),
                bytes: s.length,
            })
            .collect(),
        seconds,
        docs_per_second: manifest.counts.documents as f64 / seconds,
        chunks_per_second: manifest.counts.chunks as f64 / seconds,
    };
    print_summary(&summary, args.json)
}

fn print_summary(s: &Summary, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, s)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "wrote {} ({} bytes) in {:.1} s", s.output, s.bytes, s.seconds)?;
    writeln!(
        out,
        "  {} files, {} documents, {} chunks, {} duplicate chunks dropped, {} files skipped",
        s.files,
        s.documents,
        s.chunks,
        s.duplicates_dropped,
        s.skipped.len()
    )?;
    writeln!(
        out,
        "  {:.1} documents/s, {:.1} chunks/s",
        s.docs_per_second, s.chunks_per_second
    )?;
    for section in &s.sections {
        writeln!(out, "  {:<10} {:>12} bytes", section.name, section.bytes)?;
    }
    Ok(())
}

/// Chunks, embeds (on all cores) and assembles a bundle in memory.
pub fn build_bundle(documents: &[Document], config: &BuildConfig, model_arg: Option<&Path>) -> Result<Vec<u8>> {
    let dir = model::model_dir(model_arg)?;
    let embedder = model::load(&dir, &config.model)?;
    let corpus = chunk_corpus(documents, config, embedder.tokenizer())?;
    let progress = bar(corpus.chunks.len() as u64, "embedding");
    let vectors: Vec<Vec<f32>> = corpus
        .chunks
        .par_iter()
        .map(|chunk| {
            let v = embedder.embed(&chunk.text, TextKind::Passage);
            progress.inc(1);
            v
        })
        .collect::<Result<_, _>>()
        .context("embedding chunks")?;
    progress.finish_and_clear();
    let spinner = ProgressBar::new_spinner();
    spinner.set_message("building the BM25 index and HNSW graph");
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    // instant-distance inserts from rayon's pool: one thread makes the graph reproducible.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let bytes = pool.install(|| assemble(documents, &corpus, vectors, embedder.spec(), config))?;
    spinner.finish_and_clear();
    Ok(bytes)
}

/// Writes to a temporary file beside `path` and renames it over `path`, so a failed or
/// interrupted build never leaves a half-written bundle.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        bail!("output directory {} does not exist; create it first", dir.display());
    }
    let name = path.file_name().context("the output path has no file name")?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let result = (|| -> Result<()> {
        let mut f = std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path).with_context(|| format!("moving the bundle to {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
