//! The steps `sextant build` and `sextant build --site` share: loading documents with progress,
//! chunking and embedding them on all cores, assembling the index, and writing files atomically.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use sextant::chunk::{ChunkedCorpus, Document};
use sextant::config::{BuildConfig, InputConfig};
use sextant::embed::{Embedder, TextKind, TractEmbedder};
use sextant::index::writer::BuiltIndex;
use sextant::indexer::{assemble, collect, split, validate};
use sextant::loader::{load_file, LoadError};

use crate::cache::{text_key, EmbeddingCache};
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

/// Documents chunked, with what the model reads for each chunk and that text's cache key.
pub struct Chunked {
    /// The chunks, numbered.
    pub corpus: ChunkedCorpus,
    /// What the model reads for each chunk: its text, after its title and headings if
    /// `fields.embed_context`.
    pub inputs: Vec<String>,
    /// The embedding cache key of each input (passage prefix included).
    pub keys: Vec<[u8; 32]>,
}

/// Checks the configuration and chunks the documents on all cores.
pub fn chunk_documents(documents: &[Document], config: &BuildConfig, embedder: &TractEmbedder) -> Result<Chunked> {
    validate(documents, config, embedder.tokenizer())?;
    let progress = bar(documents.len() as u64, "chunking");
    let splits = documents
        .par_iter()
        .map(|document| {
            let texts = split(document, config, embedder.tokenizer());
            progress.inc(1);
            texts
        })
        .collect::<Result<Vec<_>, _>>()?;
    progress.finish_and_clear();
    let corpus = collect(documents, splits)?;
    let prefix = &embedder.spec().passage_prefix;
    let inputs: Vec<String> = corpus
        .chunks
        .iter()
        .map(|c| {
            let title = documents.get(c.doc as usize).map_or("", |d| d.title.as_str());
            config.fields.embed_input(title, &c.heading_path, &c.text)
        })
        .collect();
    let keys: Vec<[u8; 32]> = inputs.iter().map(|t| text_key(&format!("{prefix}{t}"))).collect();
    Ok(Chunked { corpus, inputs, keys })
}

/// The vectors of the chunks `wanted` says (by chunk number), from the embedding cache in
/// `cache_dir` when given, else embedded now on all cores (each distinct input once) and added
/// to the cache; `None` for the chunks not wanted.
pub fn embed_chunks(
    chunked: &Chunked,
    embedder: &TractEmbedder,
    cache_dir: Option<&Path>,
    wanted: &(dyn Fn(usize) -> bool + Sync),
) -> Result<(Vec<Option<Vec<f32>>>, BuildStats)> {
    let Chunked { inputs, keys, .. } = chunked;
    let mut cache = match cache_dir {
        Some(dir) => Some(EmbeddingCache::open(dir, embedder.spec())?),
        None => None,
    };
    let mut vectors: Vec<Option<Vec<f32>>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            if !wanted(i) {
                return None;
            }
            cache.as_ref().and_then(|c| c.get(k)).cloned()
        })
        .collect();
    // Each input the cache lacks is embedded once, however many chunks (of documents sharing
    // text) read it.
    let mut first_of: std::collections::HashMap<[u8; 32], usize> = std::collections::HashMap::new();
    let todo: Vec<usize> = (0..vectors.len())
        .filter(|&i| wanted(i) && vectors[i].is_none() && *first_of.entry(keys[i]).or_insert(i) == i)
        .collect();
    let chunks = (0..vectors.len()).filter(|&i| wanted(i)).count();
    let mut stats = BuildStats {
        chunks,
        reused: chunks - todo.len(),
        embedded: todo.len(),
        ..BuildStats::default()
    };
    let progress = bar(todo.len() as u64, "embedding");
    let started = std::time::Instant::now();
    let fresh: Vec<(usize, Vec<f32>, usize)> = todo
        .par_iter()
        .map(|&i| {
            let text = &inputs[i];
            let v = embedder.embed(text, TextKind::Passage)?;
            let tokens = embedder.tokenizer().count(text)?;
            progress.inc(1);
            Ok((i, v, tokens))
        })
        .collect::<Result<_, sextant::embed::EmbedError>>()
        .context("embedding chunks")?;
    progress.finish_and_clear();
    stats.embed_seconds = started.elapsed().as_secs_f64();
    let mut embedded: std::collections::HashMap<[u8; 32], Vec<f32>> = std::collections::HashMap::new();
    for (i, v, tokens) in fresh {
        stats.tokens += tokens;
        if let Some(c) = cache.as_mut() {
            c.put(keys[i], v.clone());
        }
        embedded.insert(keys[i], v);
    }
    for (i, (v, key)) in vectors.iter_mut().zip(keys).enumerate() {
        if v.is_none() && wanted(i) {
            *v = embedded.get(key).cloned();
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
    Ok((vectors, stats))
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
    let vectors: Vec<Vec<f32>> = vectors.into_iter().map(Option::unwrap_or_default).collect();
    let built = assemble(documents, &chunked.corpus, &vectors, embedder.spec(), config)?;
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
