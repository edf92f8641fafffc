//! [`IndexStore`]: the manifest and the files of an index added so far, each checked against its
//! name's hash and decoded as the role the manifest gives it; which files a query step still
//! needs; and a memory bound that lets the least recently used files go.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::bm25::TermTable;

use super::directory::{page_from_bytes, Found, Location, ObjectRef, Run, RunTable};
use super::error::IndexError;
use super::facets::Facets;
use super::files::{self, content_matches, BlockFile, CodeFile, Fragment, Norms, VectorMeta};
use super::manifest::{FileRun, IndexManifest};

/// What a file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Norms,
    Keyword(usize),
    Fragment(usize),
    Meta,
    Codes(usize),
    Blocks(usize),
    /// Page `p` of a run's directory.
    Page(Run, usize),
    /// Pack `p`: every object it holds whose place is known.
    Pack(usize),
    /// The code files' centroids.
    Centroids,
    /// Filter and sort values (2.5).
    Facets,
}

/// The partitions of binary codes a dense query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Every one (no centroids, exact search, or no more partitions than the probe count).
    All,
    /// These, in order.
    These(Vec<usize>),
}

/// The tables of the four runs.
#[derive(Debug)]
struct Runs {
    keyword: RunTable,
    fragments: RunTable,
    codes: RunTable,
    blocks: RunTable,
}

impl Runs {
    fn of(&self, run: Run) -> &RunTable {
        match run {
            Run::Keyword => &self.keyword,
            Run::Fragments => &self.fragments,
            Run::Codes => &self.codes,
            Run::Blocks => &self.blocks,
        }
    }

    fn of_mut(&mut self, run: Run) -> &mut RunTable {
        match run {
            Run::Keyword => &mut self.keyword,
            Run::Fragments => &mut self.fragments,
            Run::Codes => &mut self.codes,
            Run::Blocks => &mut self.blocks,
        }
    }
}

/// A reference from a manifest read by `IndexManifest::from_json` (checked there); one built in
/// memory is taken as a name.
fn reference(text: &str, packs: usize) -> ObjectRef {
    ObjectRef::parse(text, packs).unwrap_or_else(|_| ObjectRef {
        name: text.to_string(),
        at: None,
    })
}

/// The tables of a manifest's runs: listed, or (2.4) paged.
fn run_tables(manifest: &IndexManifest) -> Runs {
    let f = &manifest.files;
    let packs = f.packs.len();
    let chunks = manifest.counts.chunks;
    let per_page = f.page_entries;
    let table = |run: Run, objects: usize, refs: Vec<(Option<String>, &String)>| {
        let refs = refs
            .into_iter()
            .map(|(first, r)| (first, reference(r, packs)))
            .collect();
        if per_page == 0 {
            RunTable::listed(run, refs)
        } else {
            RunTable::paged(run, objects, per_page, refs)
        }
    };
    let chunk_run = |run: Run, r: &FileRun| table(run, r.objects(chunks), r.files.iter().map(|n| (None, n)).collect());
    let shards = if per_page == 0 {
        f.keyword.len()
    } else {
        f.keyword_shards
    };
    Runs {
        keyword: table(
            Run::Keyword,
            shards,
            f.keyword.iter().map(|s| (Some(s.first.clone()), &s.file)).collect(),
        ),
        fragments: chunk_run(Run::Fragments, &f.fragments),
        codes: chunk_run(Run::Codes, &f.vectors.codes),
        blocks: chunk_run(Run::Blocks, &f.vectors.blocks),
    }
}

/// Checks vector block `b` holds the chunks the code files put in it.
fn check_block(block_of: &HashMap<u32, u32>, b: usize, block: &BlockFile) -> Result<(), String> {
    if block.chunks.iter().all(|c| block_of.get(c) == Some(&(b as u32))) {
        Ok(())
    } else {
        Err(format!(
            "vector block {b} holds chunks the code files put in other blocks"
        ))
    }
}

/// What a chunk's entry in [`IndexStore`]'s block map costs, counted with its code file: the
/// two numbers, the table's control byte and its share of the table's spare room (a table is
/// at most 7/8 full, and shrunk when trimming leaves it a quarter full).
const BLOCK_ENTRY_BYTES: usize = 16;

/// A file a query may touch (keyword shard, fragment, code file, vector block), with its size
/// and the query that last used it, so [`IndexStore::trim`] can let go of the least recently
/// used.
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
    /// Where each packed object and page whose place is known is.
    located: HashMap<String, Location>,
    norms_ref: ObjectRef,
    meta_ref: ObjectRef,
    runs: Runs,
    norms: Option<Norms>,
    keyword: HashMap<usize, Held<TermTable>>,
    fragments: HashMap<usize, Held<Fragment>>,
    meta: Option<VectorMeta>,
    codes: HashMap<usize, Held<CodeFile>>,
    /// The vector block of each chunk whose code file is held (a map: what it holds is bounded
    /// by the code files' bytes, not by the count the manifest claims; a code file let go takes
    /// its chunks' entries with it).
    block_of: HashMap<u32, u32>,
    /// The centroids of the code files (partitions), once added (indexes that have them).
    centroids: Option<BlockFile>,
    centroids_ref: Option<ObjectRef>,
    facets: Option<Facets>,
    facets_ref: Option<ObjectRef>,
    blocks: HashMap<usize, Held<BlockFile>>,
    /// Counts queries ([`IndexStore::begin_query`]): what a held file records when used.
    clock: AtomicU64,
}

impl IndexStore {
    /// A store with no files yet.
    pub fn new(manifest: IndexManifest) -> Self {
        let packs = manifest.files.packs.len();
        let mut store = Self {
            norms_ref: reference(&manifest.files.norms, packs),
            meta_ref: reference(&manifest.files.vectors.meta, packs),
            runs: run_tables(&manifest),
            manifest,
            roles: HashMap::new(),
            located: HashMap::new(),
            norms: None,
            keyword: HashMap::new(),
            fragments: HashMap::new(),
            meta: None,
            codes: HashMap::new(),
            block_of: HashMap::new(),
            centroids: None,
            centroids_ref: None,
            facets: None,
            facets_ref: None,
            blocks: HashMap::new(),
            clock: AtomicU64::new(0),
        };
        for (i, pack) in store.manifest.files.packs.clone().iter().enumerate() {
            store.roles.entry(pack.clone()).or_default().push(Role::Pack(i));
        }
        store.place(&store.norms_ref.clone(), Role::Norms);
        store.place(&store.meta_ref.clone(), Role::Meta);
        store.centroids_ref = store
            .manifest
            .files
            .vectors
            .centroids
            .as_deref()
            .map(|r| reference(r, packs));
        if let Some(centroids) = store.centroids_ref.clone() {
            store.place(&centroids, Role::Centroids);
        }
        store.facets_ref = store.manifest.files.facets.as_deref().map(|r| reference(r, packs));
        if let Some(facets) = store.facets_ref.clone() {
            store.place(&facets, Role::Facets);
        }
        let mut places: Vec<(ObjectRef, Role)> = Vec::new();
        for run in Run::ALL {
            let table = store.runs.of(run);
            places.extend(
                table
                    .pages()
                    .iter()
                    .enumerate()
                    .map(|(p, page)| (page.clone(), Role::Page(run, p))),
            );
            places.extend(table.known().map(|(i, object)| (object.clone(), role_in(run, i))));
        }
        for (object, role) in places {
            store.place(&object, role);
        }
        store
    }

    /// Records what `object` is for and where it is.
    fn place(&mut self, object: &ObjectRef, role: Role) {
        let roles = self.roles.entry(object.name.clone()).or_default();
        if !roles.contains(&role) {
            roles.push(role);
        }
        if let Some(at) = object.at {
            self.located.insert(object.name.clone(), at);
        }
    }

    /// Every object and page of the index whose name is known (all of them once the pages are
    /// added), sorted.
    pub fn object_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .roles
            .iter()
            .filter(|(_, roles)| !roles.iter().any(|r| matches!(r, Role::Pack(_))))
            .map(|(n, _)| n.clone())
            .collect();
        names.sort_unstable();
        names
    }

    /// Whether `name` is a file, pack, object or page of this index as far as it knows.
    pub fn knows(&self, name: &str) -> bool {
        self.roles.contains_key(name)
    }

    /// Where an object or page is stored: the pack's name and its byte range (`None`: a file of
    /// its own name, or not known yet).
    pub fn location(&self, name: &str) -> Option<(&str, Location)> {
        let at = *self.located.get(name)?;
        Some((self.manifest.files.packs.get(at.pack as usize)?.as_str(), at))
    }

    /// Starts a query (or a query's next attempt once files arrived): files it uses from now on
    /// are the most recently used.
    pub fn begin_query(&self) {
        self.clock.fetch_add(1, Ordering::Relaxed);
    }

    fn now(&self) -> u64 {
        self.clock.load(Ordering::Relaxed)
    }

    /// The clock's reading: every file a query that begins after it uses is stamped later. A host
    /// running queries side by side reads it as each begins, and keeps what those still in flight
    /// used ([`IndexStore::trim_keeping`]).
    pub fn clock(&self) -> u64 {
        self.now()
    }

    /// Bytes of the keyword shards, fragments, code files (with their chunks' entries in the
    /// block map) and vector blocks held.
    pub fn held_bytes(&self) -> usize {
        self.keyword.values().map(|h| h.bytes).sum::<usize>()
            + self.fragments.values().map(|h| h.bytes).sum::<usize>()
            + self.codes.values().map(|h| h.bytes).sum::<usize>()
            + self.blocks.values().map(|h| h.bytes).sum::<usize>()
    }

    /// Lets go of the least recently used keyword shards, fragments, code files and vector blocks
    /// until those held take at most `max_bytes`, keeping the ones the latest query used (a later
    /// query that needs a dropped file asks for it again). The norms, calibration, centroids,
    /// facets and directory pages stay. Returns how many files were dropped. Only for split
    /// indexes, whose files can be fetched again.
    pub fn trim(&mut self, max_bytes: usize) -> usize {
        self.trim_keeping(max_bytes, None)
    }

    /// [`IndexStore::trim`], also keeping every file used after the clock read `since` (the
    /// [`IndexStore::clock`] when the oldest query still in flight began): a query waiting for
    /// its files while another ends keeps what its earlier attempts used, instead of asking for
    /// it again.
    pub fn trim_keeping(&mut self, max_bytes: usize, since: Option<u64>) -> usize {
        let mut held = self.held_bytes();
        if held <= max_bytes {
            return 0;
        }
        let now = since.map_or(self.now(), |s| self.now().min(s.saturating_add(1)));
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
        self.codes.iter().for_each(|(i, h)| collect(3, &h.used, *i, h.bytes));
        candidates.sort_unstable();
        let mut dropped = 0;
        for (_, kind, i, bytes) in candidates {
            if held <= max_bytes {
                break;
            }
            match kind {
                0 => self.keyword.remove(&i).map(|_| ()),
                1 => self.fragments.remove(&i).map(|_| ()),
                2 => self.blocks.remove(&i).map(|_| ()),
                _ => self.codes.remove(&i).map(|file| {
                    // Its chunks' blocks are known again when it is added again.
                    for chunk in &file.value.chunks {
                        self.block_of.remove(chunk);
                    }
                }),
            };
            held -= bytes;
            dropped += 1;
        }
        // A map emptied by trimming keeps its table: give the room back.
        if self.block_of.len() <= self.block_of.capacity() / 4 {
            self.block_of.shrink_to_fit();
        }
        dropped
    }

    /// The manifest.
    pub fn manifest(&self) -> &IndexManifest {
        &self.manifest
    }

    /// Adds a file: an object or page, whose bytes must hash to its name and decode as what the
    /// manifest (or its page) says it is, or a whole pack, whose every object and page whose
    /// place is known is added so.
    pub fn add(&mut self, name: &str, bytes: &[u8]) -> Result<(), IndexError> {
        let roles = self
            .roles
            .get(name)
            .cloned()
            .ok_or_else(|| IndexError::UnknownFile { file: name.to_string() })?;
        if let [Role::Pack(p)] = roles[..] {
            return self.add_pack(p, name, bytes);
        }
        let within = self
            .location(name)
            .map(|(pack, at)| format!(" (read from bytes {}–{} of {pack})", at.offset, at.offset + at.len - 1))
            .unwrap_or_default();
        let bad = |reason: String| IndexError::BadFile {
            file: name.to_string(),
            reason: format!("{reason}{within}"),
        };
        // An object stored deflated in a pack arrives as stored.
        let object = match self.located.get(name) {
            Some(at) => at.object(bytes).map_err(bad)?,
            None => std::borrow::Cow::Borrowed(bytes),
        };
        let bytes: &[u8] = &object;
        if !content_matches(name, bytes) {
            return Err(bad("its SHA-256 does not match its name".into()));
        }
        let m = &self.manifest;
        let (chunks, documents, dims, minor) = (m.counts.chunks, m.counts.documents, m.model.dims, m.format.minor);
        for role in roles {
            match role {
                Role::Norms => {
                    let norms = Norms::from_bytes(bytes, chunks, documents).map_err(|e| bad(e.to_string()))?;
                    if minor >= super::manifest::EVERY_DOCUMENT_HAS_CHUNKS && !norms.names_every_document(documents) {
                        return Err(bad(format!(
                            "its chunks do not name every one of the {documents} documents the manifest counts"
                        )));
                    }
                    self.norms = Some(norms);
                }
                Role::Meta => {
                    self.meta = Some(VectorMeta::from_bytes(bytes, dims).map_err(|e| bad(e.to_string()))?);
                }
                Role::Pack(_) => return Err(bad("it is both a pack and an object".into())),
                Role::Page(run, p) => {
                    let table = self.runs.of(run);
                    let span = table.page_span(p);
                    let entries = page_from_bytes(bytes, run, span.start, span.len(), self.manifest.files.packs.len())
                        .map_err(|e| bad(e.to_string()))?;
                    let table = self.runs.of_mut(run);
                    table.fill(p, entries).map_err(bad)?;
                    let objects: Vec<(usize, ObjectRef)> = span
                        .filter_map(|i| match table.get(i) {
                            Found::Object(o) => Some((i, o.clone())),
                            _ => None,
                        })
                        .collect();
                    for (i, object) in objects {
                        self.place(&object, role_in(run, i));
                    }
                }
                Role::Keyword(i) => {
                    let table = files::keyword_from_bytes(bytes, chunks).map_err(|e| bad(e.to_string()))?;
                    let (first, next) = self.runs.keyword.term_bounds(i);
                    if table.first_term() != first || next.is_some_and(|n| table.last_term().is_some_and(|l| l >= n)) {
                        return Err(bad("its terms are not the range the manifest gives it".into()));
                    }
                    self.keyword
                        .insert(i, Held::new(table, bytes.len(), self.clock.load(Ordering::Relaxed)));
                }
                Role::Fragment(i) => {
                    let run = &self.manifest.files.fragments;
                    let (_, first, count) = run
                        .of((i * run.chunks_per_file) as u32, chunks)
                        .ok_or_else(|| bad("no such fragment".into()))?;
                    let fragment = Fragment::from_bytes(bytes, first, count).map_err(bad)?;
                    if fragment.chunks.iter().any(|c| c.doc as usize >= documents) {
                        return Err(bad("a chunk names a document past the count".into()));
                    }
                    self.fragments
                        .insert(i, Held::new(fragment, bytes.len(), self.clock.load(Ordering::Relaxed)));
                }
                Role::Facets => {
                    let partitions = self.runs.codes.len();
                    let facets = Facets::from_bytes(bytes, documents, partitions).map_err(|e| bad(e.to_string()))?;
                    // A reader trusts the lists to skip partitions: the file is of the kind the
                    // manifest says.
                    let listed = self.manifest.files.facet_partitions;
                    if facets.partitions.is_some() != listed {
                        return Err(bad(format!(
                            "its facets {} partition lists, but the manifest says they {}; build the index again",
                            if listed { "have no" } else { "have" },
                            if listed { "do" } else { "do not" }
                        )));
                    }
                    self.facets = Some(facets);
                }
                Role::Centroids => {
                    let partitions = self.runs.codes.len();
                    let file =
                        BlockFile::from_bytes(bytes, partitions, dims, partitions).map_err(|e| bad(e.to_string()))?;
                    if file.chunks.iter().enumerate().any(|(i, &p)| p as usize != i) {
                        return Err(bad("its centroids are not of the code files in order".into()));
                    }
                    self.centroids = Some(file);
                }
                Role::Codes(i) => {
                    if self.codes.contains_key(&i) {
                        continue;
                    }
                    let run = &self.manifest.files.vectors.codes;
                    let count = run.count(i, chunks);
                    let per_file = run.chunks_per_file.max(1);
                    let file = CodeFile::from_bytes(bytes, count, dims, chunks).map_err(|e| bad(e.to_string()))?;
                    // Codes with factors and without would score on two scales: every file is
                    // of the kind the manifest says.
                    let factors = self.manifest.files.vectors.code_factors;
                    if count > 0 && file.levels.is_empty() == factors {
                        return Err(bad(format!(
                            "its codes {} factors, but the manifest says they {}; build the index again",
                            if factors { "have no" } else { "have" },
                            if factors { "do" } else { "do not" }
                        )));
                    }
                    self.map_blocks(i, &file).map_err(bad)?;
                    // Held with its chunks' entries in the block map, which go with it.
                    let held = bytes.len() + file.chunks.len() * BLOCK_ENTRY_BYTES;
                    self.codes
                        .insert(i, Held::new(file, held, self.clock.load(Ordering::Relaxed)));
                    // Only blocks holding positions of this file can have become checkable (a
                    // file let go and read again is checked against the blocks held again).
                    let per_block = self.manifest.files.vectors.blocks.chunks_per_file.max(1);
                    let first = i.saturating_mul(per_file);
                    let end = first.saturating_add(count).min(chunks);
                    for b in first / per_block..end.div_ceil(per_block) {
                        if let Some(block) = self.blocks.get(&b) {
                            if self.block_checkable(b) {
                                check_block(&self.block_of, b, &block.value).map_err(bad)?;
                            }
                        }
                    }
                }
                Role::Blocks(i) => {
                    let run = &self.manifest.files.vectors.blocks;
                    let count = run.count(i, chunks);
                    let file = BlockFile::from_bytes(bytes, count, dims, chunks).map_err(|e| bad(e.to_string()))?;
                    if self.block_checkable(i) {
                        check_block(&self.block_of, i, &file).map_err(bad)?;
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

    /// The filter and sort values, once added (`None` too for an index that has none:
    /// [`IndexStore::has_facets`]).
    pub fn facets(&self) -> Option<&Facets> {
        self.facets.as_ref()
    }

    /// Whether the index has a facets file (some document has a filter or sort value).
    pub fn has_facets(&self) -> bool {
        self.facets_ref.is_some()
    }

    /// The facets file, when the index has one and it is not added yet.
    pub fn facets_needs(&self) -> Vec<String> {
        match (&self.facets_ref, &self.facets) {
            (Some(r), None) => vec![r.name.clone()],
            _ => Vec::new(),
        }
    }

    /// The name to fetch for `found`: the object, or the page that lists it.
    fn want(found: Found<'_>, out: &mut Vec<String>) {
        match found {
            Found::Object(o) | Found::Page(o) => out.push(o.name.clone()),
            Found::Missing => {}
        }
    }

    fn norms_needs(&self, out: &mut Vec<String>) {
        if self.norms.is_none() {
            out.push(self.norms_ref.name.clone());
        }
    }

    /// The files needed to score `terms` that are not added yet (norms included): each term's
    /// shard, or first the page that says which it is.
    pub fn keyword_needs(&self, terms: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        self.norms_needs(&mut out);
        for term in terms {
            match self.runs.keyword.shard_of(term) {
                Err(page) => out.push(page.name.clone()),
                Ok(Some(i)) if !self.keyword.contains_key(&i) => Self::want(self.runs.keyword.get(i), &mut out),
                Ok(_) => {}
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The shards that may hold terms from `from` (inclusive) to `to` (exclusive), or the pages
    /// to add to know them.
    fn shards_between(&self, from: &str, to: &str) -> Result<std::ops::Range<usize>, Vec<String>> {
        let table = &self.runs.keyword;
        match (table.shard_of(from), table.starting_before(to)) {
            (Ok(first), Ok(end)) => {
                let first = first.unwrap_or(0);
                Ok(first..end.max(first))
            }
            (first, end) => Err([first.err(), end.err()]
                .into_iter()
                .flatten()
                .map(|p| p.name.clone())
                .collect()),
        }
    }

    /// How many keyword shards may hold terms from `from` (inclusive) to `to` (exclusive), or
    /// the pages to add first.
    pub fn shard_count_between(&self, from: &str, to: &str) -> Result<usize, Vec<String>> {
        self.shards_between(from, to).map(|r| r.len())
    }

    /// The keyword shards of the terms from `from` to `to` not added yet (norms included), or
    /// the pages that say which they are.
    pub fn term_range_needs(&self, from: &str, to: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.norms_needs(&mut out);
        match self.shards_between(from, to) {
            Err(pages) => out.extend(pages),
            Ok(range) => {
                for i in range {
                    if !self.keyword.contains_key(&i) {
                        Self::want(self.runs.keyword.get(i), &mut out);
                    }
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
            .unwrap_or_default()
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
        let shard = self.runs.keyword.shard_of(term).ok()??;
        self.keyword.get(&shard)?.get(self.now()).lookup(term)
    }

    /// The files the binary candidate stage needs for `query` that are not added yet (norms
    /// included): the calibration, the centroids (indexes that have them) and the code files
    /// of the `probe` partitions nearest the query (every one without centroids, or without a
    /// query).
    pub fn code_needs(&self, query: Option<&[f32]>, probe: usize) -> Vec<String> {
        let mut out = Vec::new();
        self.calibration_needs(&mut out);
        let partitions = match query {
            Some(query) => self.probed(query, probe),
            None => Some(Probe::All),
        };
        match partitions {
            None => out.extend(self.centroids_ref.iter().map(|c| c.name.clone())),
            Some(Probe::All) => {
                let table = &self.runs.codes;
                out.extend(table.pages_missing().map(|p| p.name.clone()));
                let missing = table.known().filter(|(i, _)| !self.codes.contains_key(i));
                out.extend(missing.map(|(_, o)| o.name.clone()));
            }
            Some(Probe::These(these)) => out.extend(self.partition_needs(&these)),
        }
        out.sort();
        out.dedup();
        out
    }

    /// The norms and the calibration, if not added yet.
    fn calibration_needs(&self, out: &mut Vec<String>) {
        self.norms_needs(out);
        if self.meta.is_none() {
            out.push(self.meta_ref.name.clone());
        }
    }

    /// What the binary candidate stage needs before it can choose partitions, not added yet: the
    /// norms, the calibration, the centroids and the pages listing the code files (no code file).
    pub fn code_pages_needs(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.calibration_needs(&mut out);
        if self.centroids.is_none() {
            out.extend(self.centroids_ref.iter().map(|c| c.name.clone()));
        }
        out.extend(self.runs.codes.pages_missing().map(|p| p.name.clone()));
        out.sort();
        out.dedup();
        out
    }

    /// Every chunk's binary code, in chunk order (once every code file is added).
    pub fn codes(&self) -> impl Iterator<Item = (u32, &[u8], f32)> {
        let now = self.now();
        (0..self.runs.codes.len())
            .filter_map(move |i| self.codes.get(&i))
            .flat_map(move |h| h.get(now).iter())
    }

    /// Records the vector block of each chunk of code file `i` (its entries are at positions
    /// `i · chunks_per_file …` of the cluster order, and block `b` holds positions
    /// `b · block_chunks …`): each chunk has one code, and once every code file is in, every
    /// chunk has one.
    fn map_blocks(&mut self, i: usize, file: &CodeFile) -> Result<(), String> {
        let per_file = self.manifest.files.vectors.codes.chunks_per_file.max(1);
        let per_block = self.manifest.files.vectors.blocks.chunks_per_file.max(1);
        let chunks = self.manifest.counts.chunks;
        let mut mapped: HashMap<u32, u32> = HashMap::new();
        for (j, &chunk) in file.chunks.iter().enumerate() {
            if chunk as usize >= chunks {
                return Err("a code names a chunk past the count".to_string());
            }
            let block = ((i * per_file + j) / per_block) as u32;
            if self.block_of.contains_key(&chunk) || mapped.insert(chunk, block).is_some() {
                return Err(format!("chunk {chunk} has two codes"));
            }
        }
        // Only a file that checks out is recorded.
        self.block_of.extend(mapped);
        if self.codes.len() + 1 == self.runs.codes.len() && self.block_of.len() != chunks {
            return Err("some chunks have no code".into());
        }
        Ok(())
    }

    /// Whether every code file holding positions of block `b` is added, so the block can be
    /// checked against them.
    fn block_checkable(&self, b: usize) -> bool {
        let per_file = self.manifest.files.vectors.codes.chunks_per_file.max(1);
        let per_block = self.manifest.files.vectors.blocks.chunks_per_file.max(1);
        let first = b * per_block;
        let last = (first + per_block).min(self.manifest.counts.chunks).saturating_sub(1);
        (first / per_file..=last / per_file).all(|i| self.codes.contains_key(&i))
    }

    /// The code files (partitions) a dense query probes: the `probe` whose centroids have the
    /// largest dot product with `query` (ties to the lower number), in order; every one when
    /// the index has no centroids or `probe` covers them. `None` until the centroids are added.
    pub fn probed(&self, query: &[f32], probe: usize) -> Option<Probe> {
        if self.centroids_ref.is_none() || probe >= self.runs.codes.len() {
            return Some(Probe::All);
        }
        let mut chosen = self.nearest_partitions(query)?;
        chosen.truncate(probe);
        chosen.sort_unstable();
        Some(Probe::These(chosen))
    }

    /// Every partition, those whose centroids have the largest dot product with `query` first
    /// (ties to the lower number). `None` until the centroids are added, or in an index without
    /// them.
    pub fn nearest_partitions(&self, query: &[f32]) -> Option<Vec<usize>> {
        // Once added, the centroids back the partitions' count with their bytes.
        let centroids = self.centroids.as_ref()?;
        let mut scored: Vec<(usize, f32)> = (0..self.runs.codes.len())
            .map(|p| (p, centroids.dot(p as u32, query).unwrap_or(f32::NEG_INFINITY)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Some(scored.into_iter().map(|(p, _)| p).collect())
    }

    /// The code files of `partitions` not added yet (or the pages listing them).
    pub fn partition_needs(&self, partitions: &[usize]) -> Vec<String> {
        let mut out = Vec::new();
        for &i in partitions.iter().filter(|i| !self.codes.contains_key(i)) {
            Self::want(self.runs.codes.get(i), &mut out);
        }
        out.sort();
        out.dedup();
        out
    }

    /// The binary codes of the partitions `probed`, in order (those added).
    pub fn codes_in<'a>(&'a self, probed: &'a Probe) -> impl Iterator<Item = (u32, &'a [u8], f32)> {
        let partitions: Vec<usize> = match probed {
            Probe::All => {
                let mut all: Vec<usize> = self.codes.keys().copied().collect();
                all.sort_unstable();
                all
            }
            Probe::These(these) => these.clone(),
        };
        let now = self.now();
        partitions
            .into_iter()
            .filter_map(|i| self.codes.get(&i))
            .flat_map(move |h| h.get(now).iter())
    }

    /// The vector blocks holding `chunks` that are not added yet (of the chunks whose code file
    /// is added).
    pub fn block_needs(&self, chunks: impl IntoIterator<Item = u32>) -> Vec<String> {
        let mut out = Vec::new();
        let known = chunks.into_iter().filter_map(|c| self.block_of.get(&c).copied());
        for b in known {
            if !self.blocks.contains_key(&(b as usize)) {
                Self::want(self.runs.blocks.get(b as usize), &mut out);
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The int8 dot product of `query` with chunk `chunk`'s vector, if its block is added.
    pub fn dot(&self, chunk: u32, query: &[f32]) -> Option<f32> {
        let block = *self.block_of.get(&chunk)?;
        self.blocks.get(&(block as usize))?.get(self.now()).dot(chunk, query)
    }

    /// Chunk `chunk`'s int8 vector scaled back to floats, if its block is added.
    pub fn vector(&self, chunk: u32) -> Option<Vec<f32>> {
        let block = *self.block_of.get(&chunk)?;
        self.blocks.get(&(block as usize))?.get(self.now()).vector(chunk)
    }

    /// The fragments holding `chunks` that are not added yet (or the pages listing them).
    pub fn fragment_needs(&self, chunks: impl IntoIterator<Item = u32>) -> Vec<String> {
        let run = &self.manifest.files.fragments;
        let total = self.manifest.counts.chunks;
        let mut out = Vec::new();
        for (i, ..) in chunks.into_iter().filter_map(|c| run.of(c, total)) {
            if !self.fragments.contains_key(&i) {
                Self::want(self.runs.fragments.get(i), &mut out);
            }
        }
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

    /// Every object and page not added yet whose name is known: the norms, calibration and
    /// pages, and the objects of the pages added. Adding them and asking again until none is
    /// left reads the whole index ([`IndexStore::load_all`]).
    pub fn missing(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.norms_needs(&mut out);
        if self.meta.is_none() {
            out.push(self.meta_ref.name.clone());
        }
        if let (Some(centroids), None) = (&self.centroids_ref, &self.centroids) {
            out.push(centroids.name.clone());
        }
        out.extend(self.facets_needs());
        for run in Run::ALL {
            let table = self.runs.of(run);
            out.extend(table.pages_missing().map(|p| p.name.clone()));
            let held = |i: &usize| match run {
                Run::Keyword => self.keyword.contains_key(i),
                Run::Fragments => self.fragments.contains_key(i),
                Run::Codes => self.codes.contains_key(i),
                Run::Blocks => self.blocks.contains_key(i),
            };
            out.extend(table.known().filter(|(i, _)| !held(i)).map(|(_, o)| o.name.clone()));
        }
        out.sort();
        out.dedup();
        out
    }

    /// Adds every object of the index, reading each file (pack, or object of its own) by name
    /// with `read`, each once: the CLI over a split index on disk, `unpack` over a packed one.
    pub fn load_all<E>(
        &mut self,
        mut read: impl FnMut(&str) -> Result<Vec<u8>, E>,
        mut failed: impl FnMut(&str, E) -> IndexError,
    ) -> Result<(), IndexError> {
        let mut packs: HashMap<String, Vec<u8>> = HashMap::new();
        loop {
            let missing = self.missing();
            if missing.is_empty() {
                return Ok(());
            }
            for name in missing {
                let (file, range) = match self.location(&name) {
                    Some((pack, at)) => (pack.to_string(), Some(at)),
                    None => (name.clone(), None),
                };
                if !packs.contains_key(&file) {
                    let bytes = read(&file).map_err(|e| failed(&file, e))?;
                    packs.insert(file.clone(), bytes);
                }
                let bytes = &packs[&file];
                let body = match range {
                    None => bytes.as_slice(),
                    Some(at) => slice(bytes, &file, at)?,
                };
                self.add(&name, body)?;
                if range.is_none() {
                    packs.remove(&file);
                }
            }
        }
    }

    /// Adds every object of the index from its files held in memory, by name (a packed index's,
    /// or one just built); a file the manifest names that is not among them is an error.
    pub fn load_files<'a>(&mut self, files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Result<(), IndexError> {
        let by_name: HashMap<&str, &[u8]> = files.into_iter().collect();
        self.load_all(
            |name| by_name.get(name).map(|b| b.to_vec()).ok_or(()),
            |name, ()| IndexError::BadSection {
                section: "files",
                reason: format!(
                    "{name}, which the manifest names, is missing; copy the whole index, or build it again"
                ),
            },
        )
    }

    /// Adds the objects and pages of pack `p` whose places are known, pages first, until the
    /// pages it holds name no more of its objects.
    fn add_pack(&mut self, p: usize, name: &str, bytes: &[u8]) -> Result<(), IndexError> {
        let mut done: std::collections::HashSet<String> = std::collections::HashSet::new();
        loop {
            let mut todo: Vec<(String, Location)> = self
                .located
                .iter()
                .filter(|(n, at)| at.pack as usize == p && !done.contains(*n))
                .map(|(n, at)| (n.clone(), *at))
                .collect();
            if todo.is_empty() {
                return Ok(());
            }
            todo.sort_by_key(|(_, at)| at.offset);
            for (object, at) in todo {
                self.add(&object, slice(bytes, name, at)?)?;
                done.insert(object);
            }
        }
    }

    /// Whether every file of the index is added (a packed index).
    pub fn is_complete(&self) -> bool {
        self.norms.is_some()
            && self.meta.is_some()
            && (self.centroids_ref.is_none() || self.centroids.is_some())
            && self.keyword.len() == self.runs.keyword.len()
            && self.fragments.len() == self.runs.fragments.len()
            && self.codes.len() == self.runs.codes.len()
            && self.blocks.len() == self.runs.blocks.len()
    }
}

/// The role of object `i` of `run`.
fn role_in(run: Run, i: usize) -> Role {
    match run {
        Run::Keyword => Role::Keyword(i),
        Run::Fragments => Role::Fragment(i),
        Run::Codes => Role::Codes(i),
        Run::Blocks => Role::Blocks(i),
    }
}

/// The bytes `at` of pack `name`, or an error saying it is shorter: damaged or cut off.
fn slice<'a>(bytes: &'a [u8], name: &str, at: Location) -> Result<&'a [u8], IndexError> {
    let end = at.end().and_then(|e| usize::try_from(e).ok());
    let start = usize::try_from(at.offset).ok();
    match (start, end) {
        (Some(start), Some(end)) if end <= bytes.len() => Ok(&bytes[start..end]),
        _ => Err(IndexError::BadFile {
            file: name.to_string(),
            reason: format!(
                "it is {} bytes long, but the index stores bytes {}–{} in it (truncated?)",
                bytes.len(),
                at.offset,
                at.offset.saturating_add(at.len).saturating_sub(1)
            ),
        }),
    }
}
