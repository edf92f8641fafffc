//! The embedding cache: chunk vectors kept between builds, outside the site, so rebuilding after
//! an edit embeds only the chunks whose text changed.
//!
//! One file per model setup (the model's and tokenizer's SHA-256 and the options that shape a
//! passage vector): `<cache dir>/<key>.vectors`, `$SEXTANT_CACHE_DIR` or
//! `~/.cache/sextant/embeddings` by default. It is an append-only log of records (SHA-256 of the
//! passage text, then `dims` f32 little endian) after a magic line; a record that does not parse
//! ends the read, so a cut-off write loses only itself. The build writes new vectors back once
//! embedding is done.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sextant::digest::sha256_hex;
use sextant::embed::ModelSpec;
use sextant::indexer::VectorStore;

const MAGIC: &[u8; 8] = b"SXEMBC1\n";

/// The folder: `$SEXTANT_CACHE_DIR`, else `~/.cache/sextant/embeddings`.
pub fn default_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SEXTANT_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/sextant/embeddings"))
}

/// The flags that say where the cache is: `--cache-dir DIR` or `--no-cache` (shared by every
/// command that embeds a corpus).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CacheArgs {
    /// Where embeddings are kept between builds (default: $SEXTANT_CACHE_DIR, else
    /// ~/.cache/sextant/embeddings), so unchanged chunks are never embedded again.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    cache_dir: Option<PathBuf>,
    /// Embed every chunk, reading and writing no embedding cache.
    #[arg(long)]
    no_cache: bool,
}

impl CacheArgs {
    /// The cache folder, unless `--no-cache`.
    pub fn dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            return None;
        }
        self.cache_dir.clone().or_else(default_dir)
    }
}

/// Vectors by the SHA-256 of the text they embed, for one model setup.
pub struct EmbeddingCache {
    path: PathBuf,
    dims: usize,
    vectors: HashMap<[u8; 32], Vec<f32>>,
    fresh: Vec<([u8; 32], Vec<f32>)>,
}

impl EmbeddingCache {
    /// Opens (or starts) the cache of `spec` in `dir`. An unreadable cache is started afresh.
    pub fn open(dir: &Path, spec: &ModelSpec) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating the embedding cache {}", dir.display()))?;
        let mut setup = format!(
            "{} {} {} {:?} {} {:?}",
            spec.sha256, spec.tokenizer_sha256, spec.max_tokens, spec.pooling, spec.normalize, spec.passage_prefix
        );
        // f32 vectors keep the file they had before int8 passages.
        if !spec.weights.is_f32() {
            setup.push_str(&format!(" {}", spec.weights.name()));
        }
        let key = &sha256_hex(setup.as_bytes())[..24];
        let path = dir.join(format!("{key}.vectors"));
        let dims = spec.dims;
        let mut vectors = HashMap::new();
        if let Ok(bytes) = std::fs::read(&path) {
            if let Some(mut rest) = bytes.strip_prefix(MAGIC.as_slice()) {
                let record = 32 + dims * 4;
                while rest.len() >= record {
                    let (head, tail) = rest.split_at(record);
                    let mut id = [0u8; 32];
                    id.copy_from_slice(&head[..32]);
                    let v: Vec<f32> = head[32..]
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect();
                    if v.iter().all(|x| x.is_finite()) {
                        vectors.insert(id, v);
                    }
                    rest = tail;
                }
            }
        }
        Ok(Self {
            path,
            dims,
            vectors,
            fresh: Vec::new(),
        })
    }

    /// Remembers a new vector (written by [`EmbeddingCache::save`]).
    pub fn put(&mut self, key: [u8; 32], vector: Vec<f32>) {
        if vector.len() == self.dims && !self.vectors.contains_key(&key) {
            self.fresh.push((key, vector));
        }
    }

    /// Appends the new vectors to the cache file.
    pub fn save(&mut self) -> Result<()> {
        if self.fresh.is_empty() {
            return Ok(());
        }
        let new = !self.path.exists();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .with_context(|| format!("writing the embedding cache {}", self.path.display()))?;
        let mut out = Vec::with_capacity(self.fresh.len() * (32 + self.dims * 4) + MAGIC.len());
        if new {
            out.extend_from_slice(MAGIC);
        }
        for (key, vector) in self.fresh.drain(..) {
            out.extend_from_slice(&key);
            for x in &vector {
                out.extend_from_slice(&x.to_le_bytes());
            }
            self.vectors.insert(key, vector);
        }
        file.write_all(&out)?;
        Ok(())
    }
}

/// Vectors by the key of the text embedded ([`sextant::indexer::text_key`], as a browser
/// collection keys them).
impl VectorStore for EmbeddingCache {
    fn vector(&self, key: &[u8; 32]) -> Option<&[f32]> {
        self.vectors.get(key).map(Vec::as_slice)
    }
}
