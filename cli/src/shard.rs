//! Sharded site builds, for sites that outgrow one machine.
//!
//! `sextant build --site DIR --shard I/N --partial FILE` reads and chunks every page (cheap), but
//! embeds only the chunks of its share of the pages — a page belongs to shard
//! `SHA-256(page) mod N`, so shards stay balanced and a page keeps its shard when others change —
//! and writes their vectors to a partial file. `sextant merge --site DIR PARTIAL…` reads the N
//! partials and builds the site's search as `sextant build --site` would, byte for byte: chunk
//! numbering, document frequencies and lengths are computed over the whole site at the merge,
//! and the vectors are the same bits on every machine (int8 passages). The shards share the
//! embedding cache by content like any build, so any job runner works (a GitHub Actions matrix,
//! a Kubernetes Indexed Job, N local processes).
//!
//! A partial file: the magic `SXSHARD1`, the header's JSON length (u32 little endian) and JSON
//! ([`ShardHeader`]), then `count` records of the input's SHA-256 (32 bytes) and `dims` f32
//! little endian, sorted by key.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sextant::chunk::Document;
use sextant::config::BuildConfig;
use sextant::digest::sha256_hex;
use sextant::embed::{Embedder, ModelEmbedder, ModelSpec};
use sextant::index::writer::BuiltIndex;
use sextant::indexer::{assemble_owned, VectorStore};

use crate::indexing::{chunk_documents, embed_chunks, write_atomically, BuildStats};

const MAGIC: &[u8; 8] = b"SXSHARD1";
/// The largest header a partial may have (a header is a few kilobytes).
const MAX_HEADER_BYTES: usize = 1 << 20;

/// `--shard I/N`: this build's share, `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which share, from 0.
    pub index: u32,
    /// How many shares.
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{s:?} is not a shard; write I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Self { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Which shard a page belongs to among `count`: its content's SHA-256, modulo `count`.
pub fn share_of(document: &Document, count: u32) -> u32 {
    let digest = sha256_hex(&serde_json::to_vec(document).unwrap_or_default());
    let value = u64::from_str_radix(&digest[..16], 16).unwrap_or(0);
    (value % u64::from(count)) as u32
}

/// What a partial says about how it was made; a merge takes only partials that agree with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardHeader {
    /// The share.
    pub shard: u32,
    /// Of how many.
    pub of: u32,
    /// The model the vectors come from.
    pub model: ModelSpec,
    /// What shapes chunks and vectors: the configuration's `model`, `chunking`, `fields` and
    /// `input` sections.
    pub config: serde_json::Value,
    /// SHA-256 over every page of the site as read (so a partial of another version of the site
    /// is refused).
    pub pages: String,
    /// Vector dimensions.
    pub dims: u32,
    /// Records that follow.
    pub count: u32,
}

/// The parts of `config` that shape chunks and vectors.
fn shaping(config: &BuildConfig) -> Result<serde_json::Value> {
    Ok(serde_json::json!({
        "model": serde_json::to_value(&config.model)?,
        "chunking": serde_json::to_value(config.chunking)?,
        "fields": serde_json::to_value(config.fields)?,
        "input": serde_json::to_value(&config.input)?,
    }))
}

/// SHA-256 over every page's content, in order.
fn pages_digest(documents: &[Document]) -> String {
    let mut all = Vec::new();
    for d in documents {
        all.extend_from_slice(sha256_hex(&serde_json::to_vec(d).unwrap_or_default()).as_bytes());
    }
    sha256_hex(&all)
}

/// What a shard did, for its summary.
#[derive(Debug, Serialize)]
pub struct ShardSummary {
    /// `I/N`.
    pub shard: String,
    /// The partial file written.
    pub partial: String,
    /// Pages of the site.
    pub pages: usize,
    /// Pages in this share.
    pub pages_in_share: usize,
    /// Vectors written.
    pub vectors: usize,
    /// Seconds the whole shard took.
    pub seconds: f64,
    /// Embedding.
    pub embedding: BuildStats,
}

/// Embeds `shard`'s share of the site's chunks and writes their vectors to `partial`.
pub fn build_shard(
    documents: &[Document],
    config: &BuildConfig,
    embedder: &ModelEmbedder,
    cache_dir: Option<&Path>,
    shard: Shard,
    partial: &Path,
) -> Result<ShardSummary> {
    let started = std::time::Instant::now();
    let chunked = chunk_documents(documents, config, embedder)?;
    let in_share: Vec<bool> = documents
        .iter()
        .map(|d| share_of(d, shard.count) == shard.index)
        .collect();
    let wanted = |i: usize| {
        let doc = chunked.corpus.chunks[i].doc as usize;
        in_share.get(doc).copied().unwrap_or(false)
    };
    let (vectors, stats) = embed_chunks(&chunked, embedder, cache_dir, &wanted)?;
    let mut records: Vec<([u8; 32], Vec<f32>)> = chunked
        .keys
        .iter()
        .enumerate()
        .filter(|&(i, _)| wanted(i))
        .filter_map(|(_, k)| vectors.vector(k).map(|v| (*k, v.to_vec())))
        .collect();
    records.sort_by_key(|r| r.0);
    records.dedup_by(|a, b| a.0 == b.0);
    let spec = embedder.spec();
    let header = ShardHeader {
        shard: shard.index,
        of: shard.count,
        model: spec.clone(),
        config: shaping(config)?,
        pages: pages_digest(documents),
        dims: spec.dims as u32,
        count: records.len() as u32,
    };
    let json = serde_json::to_vec(&header)?;
    let mut out = Vec::with_capacity(16 + json.len() + records.len() * (32 + 4 * spec.dims));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    for (key, vector) in &records {
        out.extend_from_slice(key);
        for x in vector {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    write_atomically(partial, &out)?;
    Ok(ShardSummary {
        shard: shard.to_string(),
        partial: partial.display().to_string(),
        pages: documents.len(),
        pages_in_share: in_share.iter().filter(|&&b| b).count(),
        vectors: records.len(),
        seconds: started.elapsed().as_secs_f64(),
        embedding: stats,
    })
}

/// One partial file, read.
struct Partial {
    path: PathBuf,
    header: ShardHeader,
    vectors: Vec<([u8; 32], Vec<f32>)>,
}

/// Reads a partial file, every length checked against the bytes.
fn read_partial(path: &Path) -> Result<Partial> {
    let bytes = std::fs::read(path).with_context(|| format!("reading the partial {}", path.display()))?;
    let bad = |what: &str| {
        anyhow::anyhow!(
            "{} is not a sextant shard partial ({what}); pass the file `sextant build --site … --shard I/N --partial FILE` wrote",
            path.display()
        )
    };
    let rest = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| bad("no SXSHARD1 magic"))?;
    let (len, rest) = rest.split_at_checked(4).ok_or_else(|| bad("cut off in its header"))?;
    let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
    if len > MAX_HEADER_BYTES {
        return Err(bad("a header over 1 MiB"));
    }
    let (json, mut rest) = rest.split_at_checked(len).ok_or_else(|| bad("cut off in its header"))?;
    let header: ShardHeader = serde_json::from_slice(json).map_err(|e| bad(&format!("its header: {e}")))?;
    let record = 32 + 4 * header.dims as usize;
    if rest.len() != record.saturating_mul(header.count as usize) {
        return Err(bad(&format!(
            "{} bytes of vectors where its header says {} of {} dimensions: the file is truncated or damaged",
            rest.len(),
            header.count,
            header.dims
        )));
    }
    let mut vectors = Vec::with_capacity(header.count as usize);
    while !rest.is_empty() {
        let (head, tail) = rest.split_at(record);
        let mut key = [0u8; 32];
        key.copy_from_slice(&head[..32]);
        let v: Vec<f32> = head[32..]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if v.iter().any(|x| !x.is_finite()) {
            return Err(bad("a vector value is not finite"));
        }
        vectors.push((key, v));
        rest = tail;
    }
    Ok(Partial {
        path: path.to_path_buf(),
        header,
        vectors,
    })
}

/// Names the fields in which two JSON objects differ (`model.max_tokens: 256 vs 128`).
fn differences(prefix: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    match (a, b) {
        (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let null = serde_json::Value::Null;
                let name = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                differences(&name, x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null), out);
            }
        }
        _ if a != b => out.push(format!("{prefix}: {a} here, {b} in the shard")),
        _ => {}
    }
}

/// Reads the N partials of a sharded build, checks they are all there and were made from this
/// site with this configuration and model, and builds the index from their vectors (nothing is
/// embedded): the bytes a single-machine build gives.
pub fn merge_index(
    documents: &[Document],
    config: &BuildConfig,
    embedder: &ModelEmbedder,
    partials: &[PathBuf],
) -> Result<(BuiltIndex, BuildStats)> {
    if partials.is_empty() {
        bail!("no partials to merge; pass the files of every `sextant build --site … --shard I/N --partial FILE`");
    }
    let read: Vec<Partial> = partials.iter().map(|p| read_partial(p)).collect::<Result<_>>()?;
    let count = read[0].header.of;
    let expected = serde_json::json!({
        "model": serde_json::to_value(embedder.spec())?,
        "config": shaping(config)?,
        "pages": pages_digest(documents),
    });
    let mut seen: HashMap<u32, &Path> = HashMap::new();
    for p in &read {
        let h = &p.header;
        if h.of != count {
            bail!(
                "{} is shard {}/{} but {} is of {count} shards; merge the partials of one sharded build",
                p.path.display(),
                h.shard,
                h.of,
                read[0].path.display()
            );
        }
        if let Some(first) = seen.insert(h.shard, &p.path) {
            bail!(
                "shard {}/{count} is given twice ({} and {}); pass each shard's partial once",
                h.shard,
                first.display(),
                p.path.display()
            );
        }
        let actual = serde_json::json!({
            "model": serde_json::to_value(&h.model)?,
            "config": h.config,
            "pages": h.pages,
        });
        let mut diff = Vec::new();
        differences("", &expected, &actual, &mut diff);
        if !diff.is_empty() {
            bail!(
                "{} (shard {}/{count}) was built differently from this merge: {}; build every shard and the merge from the same site, configuration and model",
                p.path.display(),
                h.shard,
                diff.join("; ").replace("pages: ", "the site's pages (digest): ")
            );
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !seen.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "shard {} missing: build each with `sextant build --site DIR --shard I/N --partial FILE` and pass every partial",
            if missing.len() == 1 {
                format!("{} is", missing[0])
            } else {
                format!("s {} are", missing.join(", "))
            }
        );
    }
    let mut vectors: HashMap<[u8; 32], Vec<f32>> = HashMap::new();
    for p in read {
        vectors.extend(p.vectors);
    }
    let chunked = chunk_documents(documents, config, embedder)?;
    // A chunk without a vector is named with the shard that should have embedded it.
    if let Some(first) = chunked.keys.iter().position(|k| !vectors.contains_key(k)) {
        let chunk = &chunked.corpus.chunks[first];
        let doc = documents.get(chunk.doc as usize);
        bail!(
            "chunk {} of {} has no vector in the partials (its page is in shard {}/{count}); rebuild that shard from this site",
            chunk.id,
            doc.map_or("?", |d| d.source.as_str()),
            doc.map_or(0, |d| share_of(d, count))
        );
    }
    let chunks = chunked.keys.len();
    let assembling = crate::indexing::busy("assembling the index");
    let built = assemble_owned(
        documents,
        chunked,
        vectors,
        embedder.spec(),
        config,
        &crate::indexing::Rayon,
    )?;
    assembling.finish_and_clear();
    let stats = BuildStats {
        chunks,
        reused: chunks,
        ..BuildStats::default()
    };
    Ok((built, stats))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_bad_ones_say_how_to_write_them() {
        assert_eq!("1/4".parse::<Shard>(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "3", "-1/2"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("I/N"), "{e}");
        }
    }

    #[test]
    fn a_page_keeps_its_share_and_shares_are_balanced() {
        let page = |i: usize| Document {
            id: format!("p{i}.html"),
            title: format!("Page {i}"),
            ..Default::default()
        };
        let mut counts = [0usize; 4];
        for i in 0..400 {
            counts[share_of(&page(i), 4) as usize] += 1;
            assert_eq!(share_of(&page(i), 4), share_of(&page(i), 4));
        }
        assert!(counts.iter().all(|&c| (70..=130).contains(&c)), "{counts:?}");
    }

    #[test]
    fn damaged_partials_are_named_errors() {
        let dir = std::env::temp_dir().join(format!("sextant-shard-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.sxs");
        for bytes in [&b"nope"[..], b"SXSHARD1\x05\x00", b"SXSHARD1\xff\xff\xff\xff"] {
            std::fs::write(&path, bytes).unwrap();
            let e = read_partial(&path).err().unwrap().to_string();
            assert!(e.contains("p.sxs") && e.contains("not a sextant shard partial"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
