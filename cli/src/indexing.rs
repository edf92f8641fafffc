//! The steps `sextant build` and `sextant build --site` share: loading documents with progress,
//! chunking and embedding them on all cores, assembling the index, and writing files atomically.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use sextant::chunk::Document;
use sextant::config::{BuildConfig, InputConfig};
use sextant::embed::{Embedder, ModelEmbedder};
use sextant::index::writer::BuiltIndex;
use sextant::indexer::{self, Chunked, Executor, VectorStore};
use sextant::loader::{load_file, LoadError};

use crate::cache::EmbeddingCache;
use crate::inputs::{InputFile, Skipped};
use crate::model;

/// A progress bar on stderr with a label, a count and the rate.
pub fn bar(len: u64, message: &'static str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

/// A spinner on stderr for a step with no count to show (assembling the index: about a minute
/// at rust-doc's 254,005 chunks), with the time it has taken; `finish_and_clear` when done.
pub fn busy(message: &'static str) -> ProgressBar {
    let spinner = ProgressBar::new_spinner();
    spinner.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    spinner.set_message(message);
    spinner.enable_steady_tick(std::time::Duration::from_millis(200));
    spinner
}

/// A file over `input.max_file_bytes`, as a skip with its reason (checked before reading it).
pub fn oversized(path: &Path, input: &InputConfig) -> Result<Option<String>> {
    let bytes = std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .len();
    Ok((bytes > input.max_file_bytes).then(|| {
        format!(
            "{bytes} bytes, over input.max_file_bytes ({}); raise it in sextant.toml [input] to index it",
            input.max_file_bytes
        )
    }))
}

/// Loads every input file into documents. Files over a limit of `input` are skipped with the
/// reason; any other failure stops the build, naming the file.
pub fn load_documents(files: &[InputFile], input: &InputConfig) -> Result<(Vec<Document>, Vec<Skipped>)> {
    let progress = bar(files.len() as u64, "loading");
    let mut documents = Vec::new();
    let mut skipped = Vec::new();
    for file in files {
        progress.inc(1);
        let skip = |reason: String| Skipped {
            path: file.path.display().to_string(),
            reason,
        };
        if let Some(reason) = oversized(&file.path, input)? {
            skipped.push(skip(reason));
            continue;
        }
        let bytes = std::fs::read(&file.path).with_context(|| format!("reading {}", file.path.display()))?;
        match load_file(&file.rel, &bytes, input) {
            Ok(docs) => documents.extend(docs),
            Err(
                e @ (LoadError::TooLarge { .. }
                | LoadError::TooDeep { .. }
                | LoadError::FrontMatterTooLarge { .. }
                | LoadError::ExpandsTooLarge { .. }),
            ) => skipped.push(skip(e.to_string())),
            Err(e) => return Err(e).with_context(|| format!("loading {}", file.path.display())),
        }
    }
    progress.finish_and_clear();
    Ok((documents, skipped))
}

/// What building an index did, for the summary.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct BuildStats {
    /// Chunks in the index.
    pub chunks: usize,
    /// Chunk vectors taken from the embedding cache, or from another chunk the model reads alike.
    pub reused: usize,
    /// Chunks embedded now.
    pub embedded: usize,
    /// Model tokens of the chunks embedded now.
    pub tokens: usize,
    /// Seconds spent embedding.
    pub embed_seconds: f64,
    /// Chunks embedded per second of embedding.
    pub chunks_per_second: f64,
    /// Model tokens embedded per second of embedding.
    pub tokens_per_second: f64,
}

impl BuildStats {
    /// Adds another build's counts to these (rates recomputed over both).
    pub fn add(&mut self, other: &BuildStats) {
        self.chunks += other.chunks;
        self.reused += other.reused;
        self.embedded += other.embedded;
        self.tokens += other.tokens;
        self.embed_seconds += other.embed_seconds;
        let per_second = |n: usize| {
            if self.embed_seconds > 0.0 {
                n as f64 / self.embed_seconds
            } else {
                0.0
            }
        };
        self.chunks_per_second = per_second(self.embedded);
        self.tokens_per_second = per_second(self.tokens);
    }

    /// A line of the summary: reused, embedded, and how fast.
    pub fn print(&self, out: &mut impl Write) -> Result<()> {
        writeln!(
            out,
            "  embeddings: {} of {} chunks reused from the cache, {} embedded in {:.1} s ({:.1} chunks/s, {:.0} tokens/s)",
            self.reused, self.chunks, self.embedded, self.embed_seconds, self.chunks_per_second, self.tokens_per_second
        )?;
        Ok(())
    }
}

/// The core's executor on rayon's pool: every core `--threads` gives.
pub struct Rayon;

impl Executor for Rayon {
    fn map<T: Send>(&self, n: usize, job: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
        (0..n).into_par_iter().map(job).collect()
    }
}

/// Checks the configuration and chunks the documents on all cores, with a progress bar.
pub fn chunk_documents(documents: &[Document], config: &BuildConfig, embedder: &ModelEmbedder) -> Result<Chunked> {
    let progress = bar(documents.len() as u64, "chunking");
    let chunked = indexer::chunk_documents(
        documents,
        config,
        embedder.tokenizer(),
        &embedder.spec().passage_prefix,
        &Rayon,
        &|| progress.inc(1),
    )?;
    progress.finish_and_clear();
    Ok(chunked)
}

/// The vectors of the chunks `wanted` says (by chunk number): from the embedding cache in
/// `cache_dir` when given, else embedded now on all cores (each distinct input once) and added
/// to the cache. Returns what was embedded now, with the cache, to look vectors up in both.
pub fn embed_chunks(
    chunked: &Chunked,
    embedder: &ModelEmbedder,
    cache_dir: Option<&Path>,
    wanted: &dyn Fn(usize) -> bool,
) -> Result<(Embeddings, BuildStats)> {
    let mut cache = match cache_dir {
        Some(dir) => {
            let wanted = (0..chunked.keys.len())
                .filter(|&i| wanted(i))
                .map(|i| chunked.keys[i])
                .collect();
            Some(EmbeddingCache::open(dir, embedder.spec(), &wanted)?)
        }
        None => None,
    };
    let todo = chunked.pending(&cache, wanted);
    let chunks = (0..chunked.keys.len()).filter(|&i| wanted(i)).count();
    let mut stats = BuildStats {
        chunks,
        reused: chunks - todo.len(),
        embedded: todo.len(),
        ..BuildStats::default()
    };
    let progress = bar(todo.len() as u64, "embedding");
    let started = std::time::Instant::now();
    let fresh = chunked
        .embed(&todo, embedder, &Rayon, &|| progress.inc(1))
        .context("embedding chunks")?;
    progress.finish_and_clear();
    stats.embed_seconds = started.elapsed().as_secs_f64();
    // Each vector is held once: in the cache when there is one, else in `now`.
    let mut now = HashMap::new();
    for e in fresh {
        stats.tokens += e.tokens;
        let key = chunked.keys[e.chunk];
        match cache.as_mut() {
            Some(c) => c.put(key, e.vector),
            None => {
                now.insert(key, e.vector);
            }
        }
    }
    if stats.embed_seconds > 0.0 {
        stats.chunks_per_second = stats.embedded as f64 / stats.embed_seconds;
        stats.tokens_per_second = stats.tokens as f64 / stats.embed_seconds;
    }
    if let Some(c) = cache.as_mut() {
        if let Err(e) = c.save() {
            eprintln!("warning: the embedding cache was not updated: {e:#}");
        }
    }
    Ok((Embeddings { cache, now }, stats))
}

/// Vectors for a build: the embedding cache's, then those embedded now.
pub struct Embeddings {
    cache: Option<EmbeddingCache>,
    now: HashMap<[u8; 32], Vec<f32>>,
}

impl VectorStore for Embeddings {
    fn vector(&self, key: &[u8; 32]) -> Option<&[f32]> {
        self.cache.vector(key).or_else(|| self.now.vector(key))
    }
}

/// Chunks and embeds (on all cores, reusing the embedding cache in `cache_dir` when given) and
/// builds the index files in memory.
pub fn build_index(
    documents: &[Document],
    config: &BuildConfig,
    model_arg: Option<&Path>,
    cache_dir: Option<&Path>,
) -> Result<(BuiltIndex, BuildStats)> {
    let dir = model::model_dir(model_arg)?;
    let embedder = model::load(&dir, &config.model)?;
    let chunked = chunk_documents(documents, config, &embedder)?;
    let (vectors, stats) = embed_chunks(&chunked, &embedder, cache_dir, &|_| true)?;
    let assembling = busy("assembling the index");
    let built = indexer::assemble_owned(documents, chunked, vectors, embedder.spec(), config, &Rayon)?;
    assembling.finish_and_clear();
    Ok((built, stats))
}

/// Writes to a temporary file beside `path` and renames it over `path`, so a failed or
/// interrupted build never leaves a half-written file.
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
        std::fs::rename(&tmp, path).with_context(|| format!("moving the file to {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
