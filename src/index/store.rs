//! [`IndexStore`]: the manifest and the files of an index added so far, each checked against its
//! name's hash and decoded as the role the manifest gives it; which files a query step still
//! needs; and a memory bound that lets the least recently used files go.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::bm25::TermTable;

use super::error::IndexError;
use super::files::{self, content_matches, BlockFile, CodeFile, Fragment, Norms, VectorMeta};
use super::manifest::IndexManifest;

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
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> Result<(), IndexError> {
        let roles = self
            .roles
            .get(name)
            .cloned()
            .ok_or_else(|| IndexError::UnknownFile { file: name.to_string() })?;
        let bad = |reason: String| IndexError::BadFile {
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
                    let norms = Norms::from_bytes(bytes, chunks, documents).map_err(|e| bad(e.to_string()))?;
                    if m.format.minor >= super::manifest::EVERY_DOCUMENT_HAS_CHUNKS
                        && !norms.names_every_document(documents)
                    {
                        return Err(bad(format!(
                            "its chunks do not name every one of the {documents} documents the manifest counts"
                        )));
                    }
                    self.norms = Some(norms);
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
