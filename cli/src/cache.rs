//! The embedding cache: chunk vectors kept between builds, outside the site, so rebuilding after
//! an edit embeds only the chunks whose text changed.
//!
//! One file per model setup (the model's and tokenizer's SHA-256 and the options that shape a
//! passage vector): `<cache dir>/<key>.vectors`, `$SEXTANT_CACHE_DIR` or
//! `~/.cache/sextant/embeddings` by default. It is an append-only log of records (SHA-256 of the
//! passage text, then `dims` f32 little endian) after a magic line; a record that does not parse
//! ends the read, so a cut-off write loses only itself. A build reads the file record by record
//! and holds only the vectors of its own chunks (one cache serves every site and edit, and grows
//! with them), holds each new vector once, and appends the new ones once embedding is done.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
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
    /// Keys of the vectors put since the last save (each vector is held once, in `vectors`).
    fresh: Vec<[u8; 32]>,
}

impl EmbeddingCache {
    /// Opens (or starts) the cache of `spec` in `dir`, holding only the vectors of `wanted` keys
    /// (a cache shared by many sites and edits may be far larger than one build needs). An
    /// unreadable cache is started afresh.
    pub fn open(dir: &Path, spec: &ModelSpec, wanted: &HashSet<[u8; 32]>) -> Result<Self> {
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
        // Read record by record: the file is never held whole.
        if let Ok(file) = std::fs::File::open(&path) {
            let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
            let mut magic = [0u8; 8];
            let mut record = vec![0u8; 32 + dims * 4];
            if reader.read_exact(&mut magic).is_ok() && &magic == MAGIC {
                // A cut-off last record ends the read.
                while reader.read_exact(&mut record).is_ok() {
                    let mut id = [0u8; 32];
                    id.copy_from_slice(&record[..32]);
                    if !wanted.contains(&id) {
                        continue;
                    }
                    let v: Vec<f32> = record[32..]
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        .collect();
                    if v.iter().all(|x| x.is_finite()) {
                        vectors.insert(id, v);
                    }
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
            self.vectors.insert(key, vector);
            self.fresh.push(key);
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
        for key in self.fresh.drain(..) {
            out.extend_from_slice(&key);
            for x in &self.vectors[&key] {
                out.extend_from_slice(&x.to_le_bytes());
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use sextant::embed::{ModelOptions, Weights};

    #[test]
    fn a_cache_holds_only_the_vectors_a_build_wants_and_survives_a_cut_off_write() {
        let dir = std::env::temp_dir().join(format!("sextant-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let spec = ModelSpec::new("m".into(), "t".into(), 3, &ModelOptions::default());
        let key = |i: u8| [i; 32];
        let all: HashSet<[u8; 32]> = (0..4).map(key).collect();
        let mut cache = EmbeddingCache::open(&dir, &spec, &all).unwrap();
        for i in 0..4u8 {
            cache.put(key(i), vec![f32::from(i); 3]);
        }
        cache.put(key(9), vec![1.0; 2]); // the wrong length: not kept
        cache.save().unwrap();
        let again = EmbeddingCache::open(&dir, &spec, &all).unwrap();
        assert_eq!(again.vector(&key(2)), Some(&[2.0, 2.0, 2.0][..]));
        assert_eq!(again.vectors.len(), 4);
        // Another build's keys: only those are held.
        let some: HashSet<[u8; 32]> = [key(1), key(3), key(7)].into();
        let part = EmbeddingCache::open(&dir, &spec, &some).unwrap();
        let mut held: Vec<_> = part.vectors.keys().copied().collect();
        held.sort();
        assert_eq!(held, vec![key(1), key(3)]);
        // A write cut off in its last record loses that record only.
        let file = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() - 5]).unwrap();
        let cut = EmbeddingCache::open(&dir, &spec, &all).unwrap();
        assert_eq!(cut.vectors.len(), 3);
        assert!(cut.vector(&key(3)).is_none());
        // Another setup (f32 weights) has a file of its own.
        let f32_spec = ModelSpec {
            weights: Weights::F32,
            ..spec.clone()
        };
        assert!(EmbeddingCache::open(&dir, &f32_spec, &all).unwrap().vectors.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
