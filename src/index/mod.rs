//! Index format 2: the index as content-addressed files beside one manifest, so a browser or a
//! Worker fetches only what a query needs, and one packed file of the same data for the CLI and
//! Node.
//!
//! The files (`files`):
//! - `norms`: every chunk's length in analyzer terms and its document number (BM25 needs the
//!   lengths, per-document grouping the numbers);
//! - keyword shards: the BM25 term table cut by term range into files of about
//!   `layout.keyword_shard_bytes`; a query fetches the shards of its terms;
//! - fragments: chunk text, URLs, heading paths and their documents' titles, `layout.fragment_chunks`
//!   chunks a file, fetched for the results that are shown;
//! - vectors: a calibration (`meta`), binary codes of every chunk (one bit a dimension: the
//!   candidate stage, `layout.code_file_chunks` chunks a file) and int8 vectors in blocks of
//!   `layout.block_chunks` chunks for rescoring the best `layout.rescore` candidates with the float
//!   query. Codes and blocks list chunks in cluster order (`files::cluster_order`): a block holds
//!   similar vectors, so a query's best candidates share few blocks.
//!
//! [`IndexStore`] holds the manifest and whichever files have been added, each checked against
//! its name's hash and the manifest before it is used; the query pipeline asks it which files a
//! query still needs. The packed form (`packed`) is the container of format 1 with major 2: the
//! manifest and every file in one `.sxt`.

pub mod files;
pub mod packed;
#[cfg(all(test, feature = "indexer"))]
pub(crate) mod tests;
#[cfg(feature = "collection")]
pub mod writer;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::bm25::{Bm25Params, TermTable};
use crate::bundle::{BundleError, Counts, FormatVersion};
use crate::chunk::ChunkParams;
use crate::embed::ModelSpec;
use files::{content_matches, BlockFile, CodeFile, Fragment, Norms, VectorMeta};

/// The format major of split and packed indexes.
pub const INDEX_MAJOR: u16 = crate::bundle::FORMAT_MAJOR;
/// The format minor written.
pub const INDEX_MINOR: u16 = crate::bundle::FORMAT_MINOR;

/// How a chunk's fields count: its document's title and its heading path beside its text, in
/// BM25 and in what the embedding model reads (`[fields]` in `sextant.toml`; recorded in the
/// manifest, so build and query agree).
///
/// BM25 reads each field's terms `weight` times (BM25F with integer weights and one length
/// normalisation: a title word weighs as much as `title_weight` body words, and lengthens the
/// chunk as much). The text already holds the heading it starts with, as the page shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Fields {
    /// How many times the document's title counts, 0–10 (0: not at all).
    pub title_weight: u32,
    /// How many times the heading path counts, 0–10.
    pub heading_weight: u32,
    /// Whether the model embeds the title and heading path before the text (`Title › Heading ›
    /// Sub` on a line of its own), so a chunk's vector knows what page and section it is in.
    pub embed_context: bool,
}

impl Default for Fields {
    fn default() -> Self {
        Self {
            title_weight: 1,
            heading_weight: 1,
            embed_context: true,
        }
    }
}

impl Fields {
    /// How indexes built before fields were recorded count them: the heading path once, the
    /// title not at all, the text alone embedded.
    pub const UNRECORDED: Fields = Fields {
        title_weight: 0,
        heading_weight: 1,
        embed_context: false,
    };

    /// The most a field may weigh.
    pub const MAX_WEIGHT: u32 = 10;

    /// Checks the weights.
    pub fn validate(&self) -> Result<(), String> {
        for (name, weight) in [
            ("title_weight", self.title_weight),
            ("heading_weight", self.heading_weight),
        ] {
            if weight > Self::MAX_WEIGHT {
                return Err(format!(
                    "fields.{name} = {weight} is out of range; use a whole number from 0 to {}",
                    Self::MAX_WEIGHT
                ));
            }
        }
        Ok(())
    }

    /// The BM25 terms of a chunk: the title's, the heading path's and the text's, each field's
    /// repeated its weight's times.
    pub fn terms(
        &self,
        analyzer: &crate::analyzer::Analyzer,
        title: &str,
        heading_path: &[String],
        text: &str,
    ) -> Vec<String> {
        let mut terms = Vec::new();
        for (weight, field) in [
            (self.title_weight, title.to_string()),
            (self.heading_weight, heading_path.join(" ")),
        ] {
            if weight > 0 {
                let field_terms = analyzer.terms(&field);
                for _ in 0..weight {
                    terms.extend(field_terms.iter().cloned());
                }
            }
        }
        terms.extend(analyzer.terms(text));
        terms
    }

    /// What the model embeds for a chunk (before the passage prefix): its text, after its title
    /// and heading path when `embed_context` (a heading equal to the title is not repeated).
    pub fn embed_input(&self, title: &str, heading_path: &[String], text: &str) -> String {
        if !self.embed_context {
            return text.to_string();
        }
        let title = title.trim();
        let mut context: Vec<&str> = Vec::new();
        if !title.is_empty() {
            context.push(title);
        }
        for h in heading_path {
            let h = h.trim();
            if !h.is_empty() && context.last() != Some(&h) {
                context.push(h);
            }
        }
        if context.is_empty() {
            text.to_string()
        } else {
            format!("{}\n{text}", context.join(" › "))
        }
    }
}

fn unrecorded_fields() -> Fields {
    Fields::UNRECORDED
}

/// How an index is cut into files, and how deep the int8 rescoring goes. Chosen by measurement
/// (BENCHMARKS.md, "Index format 2"); recorded in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Layout {
    /// Target bytes of one keyword shard (a term whose postings alone are larger gets its own).
    /// Default 8192.
    pub keyword_shard_bytes: usize,
    /// Chunks per text fragment. Default 8.
    pub fragment_chunks: usize,
    /// Chunks per file of binary codes. Default 8192 (48 bytes a chunk for 384 dimensions).
    pub code_file_chunks: usize,
    /// Chunks per block of int8 vectors. Default 4.
    pub block_chunks: usize,
    /// Candidates of the binary stage rescored with int8 vectors (at least the query's depth).
    /// Default 50.
    pub rescore: usize,
}

impl Default for Layout {
    fn default() -> Self {
        Self {
            keyword_shard_bytes: 8192,
            fragment_chunks: 8,
            code_file_chunks: 8192,
            block_chunks: 4,
            rescore: 50,
        }
    }
}

impl Layout {
    /// Checks every value is at least 1 (and shards at least 256 bytes).
    pub fn validate(&self) -> Result<(), String> {
        for (name, value, min) in [
            ("keyword_shard_bytes", self.keyword_shard_bytes, 256),
            ("fragment_chunks", self.fragment_chunks, 1),
            ("code_file_chunks", self.code_file_chunks, 1),
            ("block_chunks", self.block_chunks, 1),
            ("rescore", self.rescore, 1),
        ] {
            if value < min {
                return Err(format!("layout.{name} = {value} is too small; use at least {min}"));
            }
        }
        Ok(())
    }
}

/// A keyword shard: the terms from `first` up to the next shard's first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardRef {
    /// Its first term.
    pub first: String,
    /// Its file.
    pub file: String,
}

/// Files each holding a run of `chunks_per_file` consecutive chunks (the last may hold fewer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRun {
    /// Chunks per file.
    pub chunks_per_file: usize,
    /// The files, in chunk order.
    pub files: Vec<String>,
}

impl FileRun {
    /// The file holding `chunk`, with its number, first chunk and chunk count (of `total`).
    fn of(&self, chunk: u32, total: usize) -> Option<(usize, &str, u32, usize)> {
        let per = self.chunks_per_file.max(1);
        let i = chunk as usize / per;
        let name = self.files.get(i)?;
        let first = i * per;
        Some((i, name, first as u32, per.min(total.saturating_sub(first))))
    }

    /// Entries in file `i` of a run over `total` chunks.
    fn count(&self, i: usize, total: usize) -> usize {
        let per = self.chunks_per_file.max(1);
        per.min(total.saturating_sub(i * per))
    }

    fn check(&self, total: usize, what: &'static str) -> Result<(), BundleError> {
        if self.chunks_per_file == 0 || self.files.len() != total.div_ceil(self.chunks_per_file) {
            return Err(BundleError::BadSection {
                section: "manifest",
                reason: format!(
                    "{} {what} files of {} chunks cannot hold {total} chunks",
                    self.files.len(),
                    self.chunks_per_file
                ),
            });
        }
        Ok(())
    }
}

/// The vector files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorFiles {
    /// The calibration.
    pub meta: String,
    /// Binary codes.
    pub codes: FileRun,
    /// Int8 vectors.
    pub blocks: FileRun,
}

/// Every file of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexFiles {
    /// Chunk lengths and document numbers.
    pub norms: String,
    /// Keyword shards, in term order.
    pub keyword: Vec<ShardRef>,
    /// Text fragments.
    pub fragments: FileRun,
    /// Vectors.
    pub vectors: VectorFiles,
}

/// Everything needed to use an index correctly, and where its pieces are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexManifest {
    /// Format version written (2.x).
    pub format: FormatVersion,
    /// `sextant <version>`.
    pub generator: String,
    /// Exact versions of the crates whose output is in the index.
    pub crates: BTreeMap<String, String>,
    /// The embedding model.
    pub model: ModelSpec,
    /// The keyword analyzer's name.
    pub analyzer: String,
    /// Chunking parameters.
    pub chunking: ChunkParams,
    /// BM25 parameters (defaults for queries).
    pub bm25: Bm25Params,
    /// How the title and headings count (indexes without it: [`Fields::UNRECORDED`]).
    #[serde(default = "unrecorded_fields")]
    pub fields: Fields,
    /// How the index is cut into files.
    pub layout: Layout,
    /// Counts.
    pub counts: Counts,
    /// The files.
    pub files: IndexFiles,
}

impl IndexManifest {
    /// Reads a manifest from JSON and checks it: version, analyzer, and file runs that cover the
    /// counted chunks.
    pub fn from_json(bytes: &[u8]) -> Result<Self, BundleError> {
        let manifest: IndexManifest = serde_json::from_slice(bytes).map_err(|e| BundleError::BadSection {
            section: "manifest",
            reason: e.to_string(),
        })?;
        if manifest.format.major != INDEX_MAJOR {
            return Err(BundleError::UnsupportedVersion {
                major: manifest.format.major,
                minor: manifest.format.minor,
                oldest: INDEX_MAJOR,
                newest: INDEX_MAJOR,
            });
        }
        if crate::analyzer::Analyzer::named(&manifest.analyzer).is_none() {
            return Err(BundleError::BadSection {
                section: "manifest",
                reason: format!(
                    "keyword analyzer {:?} is not one this sextant has ({:?} or {:?}); rebuild the index",
                    manifest.analyzer,
                    crate::analyzer::Analyzer::NAME,
                    crate::analyzer::Analyzer::WHOLE_WORDS
                ),
            });
        }
        let chunks = manifest.counts.chunks;
        manifest.files.fragments.check(chunks, "fragment")?;
        manifest.files.vectors.codes.check(chunks, "code")?;
        manifest.files.vectors.blocks.check(chunks, "vector block")?;
        if manifest.files.keyword.windows(2).any(|w| w[0].first >= w[1].first) {
            return Err(BundleError::BadSection {
                section: "manifest",
                reason: "keyword shards are not in term order".into(),
            });
        }
        if manifest.model.dims == 0 {
            return Err(BundleError::BadSection {
                section: "manifest",
                reason: "the model has no dimensions".into(),
            });
        }
        Ok(manifest)
    }

    /// Every file name, each once.
    pub fn file_names(&self) -> Vec<&str> {
        let f = &self.files;
        let mut out = vec![f.norms.as_str(), f.vectors.meta.as_str()];
        out.extend(f.keyword.iter().map(|s| s.file.as_str()));
        out.extend(f.fragments.files.iter().map(String::as_str));
        out.extend(f.vectors.codes.files.iter().map(String::as_str));
        out.extend(f.vectors.blocks.files.iter().map(String::as_str));
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// What a file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Norms,
    Keyword(usize),
    Fragment(usize),
    Meta,
    Codes(usize),
    Blocks(usize),
}

/// Checks vector block `b` holds the chunks the code files put in it.
fn check_block(block_of: &[u32], b: usize, block: &BlockFile) -> Result<(), String> {
    if block
        .chunks
        .iter()
        .all(|&c| block_of.get(c as usize) == Some(&(b as u32)))
    {
        Ok(())
    } else {
        Err(format!(
            "vector block {b} holds chunks the code files put in other blocks"
        ))
    }
}

/// A file a query may touch (keyword shard, fragment, vector block), with its size and the
/// query that last used it, so [`IndexStore::trim`] can let go of the least recently used.
#[derive(Debug)]
struct Held<T> {
    value: T,
    bytes: usize,
    used: AtomicU64,
}

impl<T> Held<T> {
    fn new(value: T, bytes: usize, now: u64) -> Self {
        Self {
            value,
            bytes,
            used: AtomicU64::new(now),
        }
    }

    /// The value, marked as used by query `now`.
    fn get(&self, now: u64) -> &T {
        self.used.store(now, Ordering::Relaxed);
        &self.value
    }

    /// The value, not marked as used (looked through, not kept for).
    fn peek(&self) -> &T {
        &self.value
    }
}

/// The manifest and the files added so far, each checked and decoded.
#[derive(Debug)]
pub struct IndexStore {
    manifest: IndexManifest,
    roles: HashMap<String, Vec<Role>>,
    norms: Option<Norms>,
    keyword: HashMap<usize, Held<TermTable>>,
    fragments: HashMap<usize, Held<Fragment>>,
    meta: Option<VectorMeta>,
    codes: HashMap<usize, CodeFile>,
    /// Once every code file is added: the vector block of each chunk.
    block_of: Option<Vec<u32>>,
    blocks: HashMap<usize, Held<BlockFile>>,
    /// Counts queries ([`IndexStore::begin_query`]): what a held file records when used.
    clock: AtomicU64,
}

impl IndexStore {
    /// A store with no files yet.
    pub fn new(manifest: IndexManifest) -> Self {
        let mut roles: HashMap<String, Vec<Role>> = HashMap::new();
        let f = &manifest.files;
        let mut put = |name: &str, role| roles.entry(name.to_string()).or_default().push(role);
        put(&f.norms, Role::Norms);
        put(&f.vectors.meta, Role::Meta);
        for (i, s) in f.keyword.iter().enumerate() {
            put(&s.file, Role::Keyword(i));
        }
        for (i, name) in f.fragments.files.iter().enumerate() {
            put(name, Role::Fragment(i));
        }
        for (i, name) in f.vectors.codes.files.iter().enumerate() {
            put(name, Role::Codes(i));
        }
        for (i, name) in f.vectors.blocks.files.iter().enumerate() {
            put(name, Role::Blocks(i));
        }
        Self {
            manifest,
            roles,
            norms: None,
            keyword: HashMap::new(),
            fragments: HashMap::new(),
            meta: None,
            codes: HashMap::new(),
            block_of: None,
            blocks: HashMap::new(),
            clock: AtomicU64::new(0),
        }
    }

    /// Starts a query (or a query's next attempt once files arrived): files it uses from now on
    /// are the most recently used.
    pub fn begin_query(&self) {
        self.clock.fetch_add(1, Ordering::Relaxed);
    }

    fn now(&self) -> u64 {
        self.clock.load(Ordering::Relaxed)
    }

    /// Bytes of the keyword shards, fragments and vector blocks held.
    pub fn held_bytes(&self) -> usize {
        self.keyword.values().map(|h| h.bytes).sum::<usize>()
            + self.fragments.values().map(|h| h.bytes).sum::<usize>()
            + self.blocks.values().map(|h| h.bytes).sum::<usize>()
    }

    /// Lets go of the least recently used keyword shards, fragments and vector blocks until those
    /// held take at most `max_bytes`, keeping the ones the latest query used (a later query that
    /// needs a dropped file asks for it again). The norms, calibration and codes stay. Returns how
    /// many files were dropped. Only for split indexes, whose files can be fetched again.
    pub fn trim(&mut self, max_bytes: usize) -> usize {
        let mut held = self.held_bytes();
        if held <= max_bytes {
            return 0;
        }
        let now = self.now();
        let mut candidates: Vec<(u64, u8, usize, usize)> = Vec::new();
        let mut collect = |kind: u8, used: &AtomicU64, i: usize, bytes: usize| {
            let used = used.load(Ordering::Relaxed);
            if used < now {
                candidates.push((used, kind, i, bytes));
            }
        };
        self.keyword.iter().for_each(|(i, h)| collect(0, &h.used, *i, h.bytes));
        self.fragments
            .iter()
            .for_each(|(i, h)| collect(1, &h.used, *i, h.bytes));
        self.blocks.iter().for_each(|(i, h)| collect(2, &h.used, *i, h.bytes));
        candidates.sort_unstable();
        let mut dropped = 0;
        for (_, kind, i, bytes) in candidates {
            if held <= max_bytes {
                break;
            }
            match kind {
                0 => self.keyword.remove(&i).map(|_| ()),
                1 => self.fragments.remove(&i).map(|_| ()),
                _ => self.blocks.remove(&i).map(|_| ()),
            };
            held -= bytes;
            dropped += 1;
        }
        dropped
    }

    /// The manifest.
    pub fn manifest(&self) -> &IndexManifest {
        &self.manifest
    }

    /// Adds a file: its bytes must hash to its name and decode as what the manifest says it is.
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> Result<(), BundleError> {
        let roles = self
            .roles
            .get(name)
            .cloned()
            .ok_or_else(|| BundleError::UnknownFile { file: name.to_string() })?;
        let bad = |reason: String| BundleError::BadFile {
            file: name.to_string(),
            reason,
        };
        if !content_matches(name, bytes) {
            return Err(bad("its SHA-256 does not match its name".into()));
        }
        let m = &self.manifest;
        let (chunks, documents, dims) = (m.counts.chunks, m.counts.documents, m.model.dims);
        for role in roles {
            match role {
                Role::Norms => {
                    self.norms = Some(Norms::from_bytes(bytes, chunks, documents).map_err(|e| bad(e.to_string()))?);
                }
                Role::Meta => {
                    self.meta = Some(VectorMeta::from_bytes(bytes, dims).map_err(|e| bad(e.to_string()))?);
                }
                Role::Keyword(i) => {
                    let table = files::keyword_from_bytes(bytes, chunks).map_err(|e| bad(e.to_string()))?;
                    let shards = &self.manifest.files.keyword;
                    let first = shards.get(i).map(|s| s.first.as_str());
                    let next = shards.get(i + 1).map(|s| s.first.as_str());
                    if table.first_term() != first || next.is_some_and(|n| table.last_term().is_some_and(|l| l >= n)) {
                        return Err(bad("its terms are not the range the manifest gives it".into()));
                    }
                    self.keyword
                        .insert(i, Held::new(table, bytes.len(), self.clock.load(Ordering::Relaxed)));
                }
                Role::Fragment(i) => {
                    let run = &self.manifest.files.fragments;
                    let (_, _, first, count) = run
                        .of((i * run.chunks_per_file) as u32, chunks)
                        .ok_or_else(|| bad("no such fragment".into()))?;
                    let fragment = Fragment::from_bytes(bytes, first, count).map_err(bad)?;
                    if fragment.chunks.iter().any(|c| c.doc as usize >= documents) {
                        return Err(bad("a chunk names a document past the count".into()));
                    }
                    self.fragments
                        .insert(i, Held::new(fragment, bytes.len(), self.clock.load(Ordering::Relaxed)));
                }
                Role::Codes(i) => {
                    let run = &self.manifest.files.vectors.codes;
                    let count = run.count(i, chunks);
                    let file = CodeFile::from_bytes(bytes, count, dims, chunks).map_err(|e| bad(e.to_string()))?;
                    self.codes.insert(i, file);
                    if self.codes.len() == run.files.len() {
                        let block_of = self.map_blocks().map_err(bad)?;
                        for (b, block) in &self.blocks {
                            check_block(&block_of, *b, &block.value).map_err(bad)?;
                        }
                        self.block_of = Some(block_of);
                    }
                }
                Role::Blocks(i) => {
                    let run = &self.manifest.files.vectors.blocks;
                    let count = run.count(i, chunks);
                    let file = BlockFile::from_bytes(bytes, count, dims, chunks).map_err(|e| bad(e.to_string()))?;
                    if let Some(block_of) = &self.block_of {
                        check_block(block_of, i, &file).map_err(bad)?;
                    }
                    self.blocks
                        .insert(i, Held::new(file, bytes.len(), self.clock.load(Ordering::Relaxed)));
                }
            }
        }
        Ok(())
    }

    /// The norms, once added.
    pub fn norms(&self) -> Option<&Norms> {
        self.norms.as_ref()
    }

    /// The calibration, once added.
    pub fn meta(&self) -> Option<&VectorMeta> {
        self.meta.as_ref()
    }

    /// The shard that holds `term`, if any shard could.
    fn shard_of(&self, term: &str) -> Option<usize> {
        let shards = &self.manifest.files.keyword;
        shards.partition_point(|s| s.first.as_str() <= term).checked_sub(1)
    }

    /// The files needed to score `terms` that are not added yet (norms included).
    pub fn keyword_needs(&self, terms: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        if self.norms.is_none() {
            out.push(self.manifest.files.norms.clone());
        }
        for term in terms {
            if let Some(i) = self.shard_of(term) {
                if !self.keyword.contains_key(&i) {
                    if let Some(s) = self.manifest.files.keyword.get(i) {
                        out.push(s.file.clone());
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The shards that may hold terms from `from` (inclusive) to `to` (exclusive).
    fn shards_between(&self, from: &str, to: &str) -> std::ops::Range<usize> {
        let shards = &self.manifest.files.keyword;
        let first = self.shard_of(from).unwrap_or(0);
        let end = shards.partition_point(|s| s.first.as_str() < to);
        first..end.max(first)
    }

    /// How many keyword shards may hold terms from `from` (inclusive) to `to` (exclusive).
    pub fn shard_count_between(&self, from: &str, to: &str) -> usize {
        self.shards_between(from, to).len()
    }

    /// The keyword shards of the terms from `from` to `to` not added yet (norms included).
    pub fn term_range_needs(&self, from: &str, to: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.norms.is_none() {
            out.push(self.manifest.files.norms.clone());
        }
        for i in self.shards_between(from, to) {
            if !self.keyword.contains_key(&i) {
                if let Some(s) = self.manifest.files.keyword.get(i) {
                    out.push(s.file.clone());
                }
            }
        }
        out
    }

    /// The index's terms from `from` (inclusive) to `to` (exclusive) with their document
    /// frequencies, from the shards added.
    pub fn terms_between(&self, from: &str, to: &str) -> Vec<(String, u32)> {
        let now = self.now();
        self.shards_between(from, to)
            .filter_map(|i| self.keyword.get(&i))
            .flat_map(|shard| {
                shard
                    .get(now)
                    .terms_between(from, to)
                    .map(|(t, df)| (t.to_string(), df))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The postings of `term`, if its shard is added and holds it.
    pub fn postings(&self, term: &str) -> Option<crate::bm25::Postings<'_>> {
        self.keyword.get(&self.shard_of(term)?)?.get(self.now()).lookup(term)
    }

    /// The files the binary candidate stage needs that are not added yet (norms included).
    pub fn code_needs(&self) -> Vec<String> {
        let v = &self.manifest.files.vectors;
        let mut out = Vec::new();
        if self.norms.is_none() {
            out.push(self.manifest.files.norms.clone());
        }
        if self.meta.is_none() {
            out.push(v.meta.clone());
        }
        for (i, name) in v.codes.files.iter().enumerate() {
            if !self.codes.contains_key(&i) {
                out.push(name.clone());
            }
        }
        out
    }

    /// Every chunk's binary code, in chunk order (once every code file is added).
    pub fn codes(&self) -> impl Iterator<Item = (u32, &[u8])> {
        let count = self.manifest.files.vectors.codes.files.len();
        (0..count).filter_map(|i| self.codes.get(&i)).flat_map(CodeFile::iter)
    }

    /// The block of each chunk, from the code files' order (every chunk exactly once).
    fn map_blocks(&self) -> Result<Vec<u32>, String> {
        let per_block = self.manifest.files.vectors.blocks.chunks_per_file.max(1);
        let mut block_of = vec![u32::MAX; self.manifest.counts.chunks];
        for (position, (chunk, _)) in self.codes().enumerate() {
            let slot = block_of
                .get_mut(chunk as usize)
                .ok_or_else(|| "a code names a chunk past the count".to_string())?;
            if *slot != u32::MAX {
                return Err(format!("chunk {chunk} has two codes"));
            }
            *slot = (position / per_block) as u32;
        }
        if block_of.contains(&u32::MAX) {
            return Err("some chunks have no code".into());
        }
        Ok(block_of)
    }

    /// The vector blocks holding `chunks` that are not added yet (once every code file is).
    pub fn block_needs(&self, chunks: impl IntoIterator<Item = u32>) -> Vec<String> {
        let Some(block_of) = &self.block_of else {
            return Vec::new();
        };
        let files = &self.manifest.files.vectors.blocks.files;
        let mut out: Vec<String> = chunks
            .into_iter()
            .filter_map(|c| block_of.get(c as usize).copied())
            .filter(|b| !self.blocks.contains_key(&(*b as usize)))
            .filter_map(|b| files.get(b as usize).cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The int8 dot product of `query` with chunk `chunk`'s vector, if its block is added.
    pub fn dot(&self, chunk: u32, query: &[f32]) -> Option<f32> {
        let block = *self.block_of.as_ref()?.get(chunk as usize)?;
        self.blocks.get(&(block as usize))?.get(self.now()).dot(chunk, query)
    }

    /// Chunk `chunk`'s int8 vector scaled back to floats, if its block is added.
    pub fn vector(&self, chunk: u32) -> Option<Vec<f32>> {
        let block = *self.block_of.as_ref()?.get(chunk as usize)?;
        self.blocks.get(&(block as usize))?.get(self.now()).vector(chunk)
    }

    /// The fragments holding `chunks` that are not added yet.
    pub fn fragment_needs(&self, chunks: impl IntoIterator<Item = u32>) -> Vec<String> {
        let run = &self.manifest.files.fragments;
        let total = self.manifest.counts.chunks;
        let mut out: Vec<String> = chunks
            .into_iter()
            .filter_map(|c| run.of(c, total))
            .filter(|(i, ..)| !self.fragments.contains_key(i))
            .map(|(_, name, ..)| name.to_string())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The fragment holding `chunk`, if added.
    pub fn fragment(&self, chunk: u32) -> Option<&Fragment> {
        let run = &self.manifest.files.fragments;
        let (i, ..) = run.of(chunk, self.manifest.counts.chunks)?;
        self.fragments.get(&i).map(|h| h.get(self.now()))
    }

    /// [`IndexStore::fragment`] without marking it used: a lookup reads through fragments it does
    /// not need to keep, and [`IndexStore::trim`] may let them go.
    pub fn peek_fragment(&self, chunk: u32) -> Option<&Fragment> {
        let run = &self.manifest.files.fragments;
        let (i, ..) = run.of(chunk, self.manifest.counts.chunks)?;
        self.fragments.get(&i).map(Held::peek)
    }

    /// Whether every file of the index is added (a packed index).
    pub fn is_complete(&self) -> bool {
        self.norms.is_some()
            && self.meta.is_some()
            && self.keyword.len() == self.manifest.files.keyword.len()
            && self.fragments.len() == self.manifest.files.fragments.files.len()
            && self.codes.len() == self.manifest.files.vectors.codes.files.len()
            && self.blocks.len() == self.manifest.files.vectors.blocks.files.len()
    }
}
