//! The manifest of a format-2 index: the format version, how the index was built (model,
//! analyzer, chunking, BM25, fields, layout) and the names of its files, checked as it is read;
//! and the vocabulary format 2 shares with its writer (`Counts`, `crate_versions`, `check_model`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bm25::Bm25Params;
use crate::chunk::ChunkParams;
use crate::embed::ModelSpec;

use super::directory::ObjectRef;
use super::error::IndexError;
use super::files::valid_file_name;

/// The format major of split and packed indexes.
pub const INDEX_MAJOR: u16 = 2;
/// The newest format minor written (minors only add files or manifest fields, or tighten what
/// the writer guarantees: 2.2 counts only documents that have chunks; 2.3 records
/// `model.weights`; 2.4 stores objects in packs and lists runs in pages, `super::directory`; 2.5
/// adds the facets file, and is written only by an index that has one; 2.6 adds the knowledge
/// graph, written only by `sextant graph build`; 2.7 gives each binary code a factor,
/// `files.vectors.code_factors`; 2.8 lists each filter value's partitions in the facets file,
/// `files.facet_partitions`, and is written only by an index that has one; 2.9 records passages
/// embedded on rows rounded to bytes, `model.weights = "int8a8"`, and is written only by such an
/// index).
pub const INDEX_MINOR: u16 = 9;
/// The minor whose model record may say `"weights": "int8a8"` (passages embedded on rows of
/// activations rounded to bytes, `Weights::Int8A8`): every index so embedded; a reader before
/// it refuses the index as too new instead of failing on the value.
pub const BYTE_ROWS_MINOR: u16 = 9;
/// The minor whose facets file lists the partitions holding chunks of each filter value's pages
/// (`files.facet_partitions`, facets files `SXfp`): every index with a facets file since; an
/// index without one is written as 2.7.
pub const FACET_PARTITIONS_MINOR: u16 = 8;
/// The minor whose binary codes carry a factor each (`files.vectors.code_factors`, code files
/// `SXvq`): every index written since.
pub const CODE_FACTORS_MINOR: u16 = 7;
/// The minor that added the knowledge graph (`files.graph`).
pub const GRAPH_MINOR: u16 = 6;
/// The minor that added the facets file (`files.facets`). Before 2.7 an index without one was
/// written as 2.4, which readers of 2.4 still read.
pub const FACETS_MINOR: u16 = 5;
/// The first minor whose every document has a chunk (so the norms name every document number).
pub const EVERY_DOCUMENT_HAS_CHUNKS: u16 = 2;
/// The oldest major a packed file may have: format 1, read only to convert it
/// (`sextant upgrade`); the format-2 reader refuses it with [`IndexError::NeedsUpgrade`].
pub const OLDEST_READABLE_MAJOR: u16 = 1;

/// The format version stored in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatVersion {
    /// Major.
    pub major: u16,
    /// Minor.
    pub minor: u16,
}

/// Counts recorded at build time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Counts {
    /// Documents indexed.
    pub documents: usize,
    /// Chunks kept.
    pub chunks: usize,
    /// Chunks dropped because an earlier chunk of the same document has the same text (in
    /// indexes built before shared chunks were kept, an earlier chunk of any document).
    pub duplicates_dropped: usize,
    /// Chunks whose text an earlier document's chunk also has: kept, so each document stays
    /// findable (0 in indexes built before they were kept).
    #[serde(default)]
    pub shared_chunks: usize,
}

/// Versions of the crates that shape an index's bytes (pinned with `=` in Cargo.toml; a test
/// checks these against Cargo.lock): the tokenizer and the model runner make the vectors and the
/// chunk boundaries, and miniz_oxide deflates the objects stored in packs.
pub fn crate_versions() -> BTreeMap<String, String> {
    [
        ("miniz_oxide", "0.8.9"),
        ("sextant", env!("CARGO_PKG_VERSION")),
        ("tokenizers", "0.23.2"),
        ("tract-onnx", "0.23.9"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Fails unless the model and tokenizer digests are those `model` records.
pub fn check_model(model: &ModelSpec, model_sha256: &str, tokenizer_sha256: &str) -> Result<(), IndexError> {
    if model.sha256 != model_sha256 {
        return Err(IndexError::ModelMismatch {
            what: "model.onnx",
            expected: model.sha256.clone(),
            actual: model_sha256.to_string(),
        });
    }
    if model.tokenizer_sha256 != tokenizer_sha256 {
        return Err(IndexError::ModelMismatch {
            what: "tokenizer.json",
            expected: model.tokenizer_sha256.clone(),
            actual: tokenizer_sha256.to_string(),
        });
    }
    Ok(())
}

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
    /// How many times the lines of code blocks (`<pre>`, Markdown code) count, 0–10 (0: code is
    /// not keyword-searchable, and does not lengthen its chunk). Recorded only when not 1, so
    /// an index built with the default reads in earlier releases.
    #[serde(skip_serializing_if = "is_one")]
    pub code_weight: u32,
}

fn is_one(weight: &u32) -> bool {
    *weight == 1
}

impl Default for Fields {
    fn default() -> Self {
        Self {
            title_weight: 1,
            heading_weight: 1,
            embed_context: true,
            code_weight: 1,
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
        code_weight: 1,
    };

    /// The most a field may weigh.
    pub const MAX_WEIGHT: u32 = 10;

    /// Checks the weights.
    pub fn validate(&self) -> Result<(), String> {
        for (name, weight) in [
            ("title_weight", self.title_weight),
            ("heading_weight", self.heading_weight),
            ("code_weight", self.code_weight),
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
    /// repeated its weight's times; in the text, the byte ranges `code` (its lines of code,
    /// [`crate::chunk::Chunk::code`]) count `code_weight` times and the ranges `weighted` (elements
    /// with a weight of their own, [`crate::chunk::Chunk::weighted`]) their weight's times, where
    /// the two overlap the element's; the rest of the text once.
    pub fn terms(
        &self,
        analyzer: &crate::analyzer::Analyzer,
        title: &str,
        heading_path: &[String],
        text: &str,
        code: &[(u32, u32)],
        weighted: &[(u32, u32, u32)],
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
        let code = code.iter().filter(|_| self.code_weight != 1);
        if code.clone().next().is_none() && weighted.is_empty() {
            terms.extend(analyzer.terms(text));
            return terms;
        }
        // Elements first, so where a code line and an element overlap the element's weight holds.
        let mut spans: Vec<(u32, u32, u32)> = weighted.to_vec();
        for &(from, to) in code {
            if !weighted.iter().any(|&(f, t, _)| from < t && f < to) {
                spans.push((from, to, self.code_weight));
            }
        }
        spans.sort_unstable();
        let mut at = 0usize;
        for (from, to, weight) in spans {
            let (from, to) = (from as usize, to as usize);
            let (Some(before), Some(span)) = (text.get(at..from), text.get(from..to)) else {
                continue;
            };
            terms.extend(analyzer.terms(before));
            let span_terms = analyzer.terms(span);
            for _ in 0..weight {
                terms.extend(span_terms.iter().cloned());
            }
            at = to;
        }
        terms.extend(analyzer.terms(text.get(at..).unwrap_or("")));
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
    /// Chunks per text fragment. Default 4 (BENCHMARKS.md, "Smaller fragments and vector blocks").
    pub fragment_chunks: usize,
    /// Chunks per file of binary codes, a partition of the chunks in cluster order with its
    /// centroid: a dense query reads the `probe` partitions nearest it. A multiple of
    /// `block_chunks`, or 0 (the default): chosen from the chunk count when the index is built
    /// ([`Layout::for_chunks`]), and the number chosen recorded in the manifest.
    pub code_file_chunks: usize,
    /// Chunks per block of int8 vectors. Default 2: blocks smaller than 4 are cut from the cluster
    /// order's leaves of 4 ([`super::files::CLUSTER_LEAF_CHUNKS`]), so they change only the bytes a
    /// rescored candidate fetches, not the results.
    pub block_chunks: usize,
    /// Candidates of the binary stage rescored with int8 vectors, at least
    /// [`crate::options::RESCORE_PER_RESULT`] per result asked for; the rest of the query's depth
    /// is scored from the binary codes. Default 75.
    pub rescore: usize,
    /// Bytes of a pack: objects are stored in packs of about this size (an object larger than
    /// that alone gets its own), read with HTTP `Range` requests; 0 writes each object as a file
    /// of its own, for hosts that do not answer `Range`. Default 4 MiB (at most 24 MiB: hosts
    /// cap a file at 25 MiB).
    pub pack_bytes: usize,
    /// Objects listed by one page of a run's directory. Default 256: with fragments of 4 and blocks
    /// of 2, a fragment or block page covers the chunks one of 128 did with fragments of 8 and
    /// blocks of 4, so a query waits for as few pages and the manifest names about as many (BENCHMARKS.md, "Smaller
    /// fragments and vector blocks").
    pub page_entries: usize,
    /// Partitions (code files) a dense query for 10 results reads: those whose centroids are
    /// nearest the query (a query for `k` reads `probe · k / 10`, at least `probe`). An index of
    /// at most that many reads every code. Default 32: recall of the exact int8 top 10 about
    /// 0.96–0.98 with 150 to 640 partitions of the Python docs, whatever their size
    /// (BENCHMARKS.md, "Partitions sized by the index").
    pub probe: usize,
}

impl Default for Layout {
    fn default() -> Self {
        Self {
            keyword_shard_bytes: 8192,
            fragment_chunks: 4,
            code_file_chunks: 0,
            block_chunks: 2,
            rescore: 75,
            pack_bytes: 4 << 20,
            page_entries: 256,
            probe: 32,
        }
    }
}

impl Layout {
    /// The most bytes a pack may be set to: hosts cap a file at 25 MiB (Cloudflare), and the
    /// last object may take a pack past its size.
    pub const MAX_PACK_BYTES: usize = 24 << 20;
    /// The fewest chunks of a partition `code_file_chunks` 0 chooses (a code file of 3 kB).
    pub const MIN_PARTITION_CHUNKS: usize = 64;
    /// The most chunks of a partition `code_file_chunks` 0 chooses (a code file of 192 kB).
    pub const MAX_PARTITION_CHUNKS: usize = 4096;

    /// The layout an index of `chunks` chunks is written with: `code_file_chunks` 0 becomes the
    /// power of two nearest `√(8 · chunks / probe)` (64 to 4,096, a multiple of `block_chunks`).
    /// A dense query's first code bytes are the centroids (one per partition, about 8 times a
    /// chunk's code) and the `probe` partitions it reads; their sum is least at the size where
    /// the two are equal, which grows as the root of the chunk count: 64 for the Python docs'
    /// 19,000 chunks at probe 32, 256 for 230,000 (BENCHMARKS.md, "Partitions sized by the
    /// index"). An index whose partitions of 64 a query would read half of or more (at most
    /// `2 · 64 · probe` chunks) saves little by them and keeps its codes in files of 4,096.
    pub fn for_chunks(self, chunks: usize) -> Self {
        if self.code_file_chunks != 0 {
            return self;
        }
        let probe = self.probe.max(1);
        let size = if chunks <= 2 * Self::MIN_PARTITION_CHUNKS * probe {
            Self::MAX_PARTITION_CHUNKS
        } else {
            let root = (8.0 * chunks as f64 / probe as f64).sqrt();
            let mut size = Self::MIN_PARTITION_CHUNKS;
            // The next power of two while it is nearer (in ratio) than this one.
            while size < Self::MAX_PARTITION_CHUNKS && (size as f64) * std::f64::consts::SQRT_2 < root {
                size *= 2;
            }
            size
        };
        Self {
            code_file_chunks: size.next_multiple_of(self.block_chunks.max(1)),
            ..self
        }
    }

    /// Checks every value is at least 1 (shards at least 256 bytes; packs 0 or 4 KiB to
    /// [`Layout::MAX_PACK_BYTES`]; `code_file_chunks` 0 or a multiple of `block_chunks`).
    pub fn validate(&self) -> Result<(), String> {
        for (name, value, min) in [
            ("keyword_shard_bytes", self.keyword_shard_bytes, 256),
            ("fragment_chunks", self.fragment_chunks, 1),
            ("block_chunks", self.block_chunks, 1),
            ("rescore", self.rescore, 1),
            ("page_entries", self.page_entries, 1),
            ("probe", self.probe, 1),
        ] {
            if value < min {
                return Err(format!("layout.{name} = {value} is too small; use at least {min}"));
            }
        }
        if self.code_file_chunks != 0 && !self.code_file_chunks.is_multiple_of(self.block_chunks) {
            return Err(format!(
                "layout.code_file_chunks = {} is not a multiple of layout.block_chunks = {}; make it one, so each vector block lies in one partition",
                self.code_file_chunks, self.block_chunks
            ));
        }
        if self.pack_bytes != 0 && !(4096..=Self::MAX_PACK_BYTES).contains(&self.pack_bytes) {
            return Err(format!(
                "layout.pack_bytes = {} is out of range; use 0 (a file per object) or 4096 to {}",
                self.pack_bytes,
                Self::MAX_PACK_BYTES
            ));
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

/// Objects each holding a run of `chunks_per_file` consecutive chunks (the last may hold fewer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileRun {
    /// Chunks per object.
    pub chunks_per_file: usize,
    /// The objects in chunk order (before 2.4), or the pages listing them (2.4: references,
    /// `files.page_entries` objects a page).
    pub files: Vec<String>,
}

impl FileRun {
    /// The object number holding `chunk`, with its first chunk and chunk count (of `total`).
    pub(crate) fn of(&self, chunk: u32, total: usize) -> Option<(usize, u32, usize)> {
        let per = self.chunks_per_file.max(1);
        let i = chunk as usize / per;
        let first = i * per;
        (first < total).then(|| (i, first as u32, per.min(total - first)))
    }

    /// Entries in object `i` of a run over `total` chunks.
    pub(crate) fn count(&self, i: usize, total: usize) -> usize {
        let per = self.chunks_per_file.max(1);
        per.min(total.saturating_sub(i * per))
    }

    /// How many objects the run has over `total` chunks.
    pub fn objects(&self, total: usize) -> usize {
        total.div_ceil(self.chunks_per_file.max(1))
    }

    /// Checks the run lists its objects (`page_entries` 0) or their pages.
    pub(crate) fn check(&self, total: usize, page_entries: usize, what: &'static str) -> Result<(), IndexError> {
        let listed = match page_entries {
            0 => self.objects(total),
            per_page => self.objects(total).div_ceil(per_page),
        };
        if self.chunks_per_file == 0 || self.files.len() != listed {
            return Err(IndexError::BadSection {
                section: "manifest",
                reason: format!(
                    "{} {what} {} of {} chunks cannot hold {total} chunks",
                    self.files.len(),
                    if page_entries == 0 { "files" } else { "pages" },
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
    /// (2.4) The centroid of each code file, a partition of the chunks: a dense query reads the
    /// code files of the `layout.probe` partitions nearest it. Absent: every code file is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub centroids: Option<String>,
    /// Binary codes.
    pub codes: FileRun,
    /// (2.7) Each binary code carries the factor its score is multiplied by (code files `SXvq`).
    /// A reader before 2.7 refuses the field, rather than failing at the first dense query.
    #[serde(default, skip_serializing_if = "is_false")]
    pub code_factors: bool,
    /// Int8 vectors.
    pub blocks: FileRun,
}

fn is_false(b: &bool) -> bool {
    !b
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Every file of the index. From 2.4 every name is a reference (`super::directory::ObjectRef`:
/// an object, and its range of a pack), and the runs name pages of `page_entries` objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexFiles {
    /// The packs objects are stored in (2.4; none: each object is a file of its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packs: Vec<String>,
    /// Objects a page lists (2.4; 0: the runs list their objects, as before 2.4).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub page_entries: usize,
    /// How many keyword shards there are (2.4, where `keyword` names their pages).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub keyword_shards: usize,
    /// Chunk lengths and document numbers.
    pub norms: String,
    /// (2.5) Filter and sort values by document ([`super::Facets`]); absent when no document
    /// has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facets: Option<String>,
    /// (2.8) The facets file lists the partitions holding chunks of each filter value's pages
    /// (`SXfp`). A reader before 2.8 refuses the field, rather than the file.
    #[serde(default, skip_serializing_if = "is_false")]
    pub facet_partitions: bool,
    /// (2.6) The knowledge graph (`crate::graph`), `graph.<hash>.json`, fetched only by a search
    /// that asks for it; absent until `sextant graph build` adds one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<String>,
    /// Keyword shards in term order, or (2.4) their pages, each with its first shard's term.
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
    pub fn from_json(bytes: &[u8]) -> Result<Self, IndexError> {
        let manifest: IndexManifest = serde_json::from_slice(bytes).map_err(|e| IndexError::BadSection {
            section: "manifest",
            reason: e.to_string(),
        })?;
        if manifest.format.major != INDEX_MAJOR {
            return Err(IndexError::UnsupportedVersion {
                major: manifest.format.major,
                minor: manifest.format.minor,
                supported: INDEX_MAJOR,
            });
        }
        if crate::analyzer::Analyzer::named(&manifest.analyzer).is_none() {
            return Err(IndexError::BadSection {
                section: "manifest",
                reason: format!(
                    "keyword analyzer {:?} is not one this sextant has ({}); rebuild the index, or search it with a newer sextant",
                    manifest.analyzer,
                    crate::analyzer::Analyzer::names().collect::<Vec<_>>().join(", ")
                ),
            });
        }
        manifest.check_files()?;
        if manifest.files.vectors.code_factors && manifest.format.minor < CODE_FACTORS_MINOR {
            return Err(IndexError::BadSection {
                section: "manifest",
                reason: format!(
                    "format 2.{} has no code factors (they came in 2.{CODE_FACTORS_MINOR}); build the index again",
                    manifest.format.minor
                ),
            });
        }
        if manifest.model.weights == crate::embed::Weights::Int8A8 && manifest.format.minor < BYTE_ROWS_MINOR {
            return Err(IndexError::BadSection {
                section: "manifest",
                reason: format!(
                    "format 2.{} has no passages on byte rows (int8a8 came in 2.{BYTE_ROWS_MINOR}); build the index again",
                    manifest.format.minor
                ),
            });
        }
        if manifest.files.facet_partitions && manifest.format.minor < FACET_PARTITIONS_MINOR {
            return Err(IndexError::BadSection {
                section: "manifest",
                reason: format!(
                    "format 2.{} has no partition lists in its facets (they came in 2.{FACET_PARTITIONS_MINOR}); build the index again",
                    manifest.format.minor
                ),
            });
        }
        if manifest.files.facet_partitions && manifest.files.facets.is_none() {
            return Err(IndexError::BadSection {
                section: "manifest",
                reason: "it says its facets list partitions but names no facets file; build the index again".into(),
            });
        }
        if manifest.model.dims == 0 {
            return Err(IndexError::BadSection {
                section: "manifest",
                reason: "the model has no dimensions".into(),
            });
        }
        Ok(manifest)
    }

    /// Checks the files section: every name and reference of the form sextant writes (no paths,
    /// no URLs), packs only with pages, and runs that cover the counted chunks.
    fn check_files(&self) -> Result<(), IndexError> {
        let bad = |reason: String| IndexError::BadSection {
            section: "manifest",
            reason,
        };
        let f = &self.files;
        let per_page = f.page_entries;
        if per_page == 0 && (!f.packs.is_empty() || f.keyword_shards > 0) {
            return Err(bad("it has packs or counts keyword shards but no pages".into()));
        }
        if let Some(pack) = f.packs.iter().find(|p| !p.starts_with("pack.") || !valid_file_name(p)) {
            return Err(bad(format!(
                "it names the pack {pack:?}, which is not of the form pack.<16 hex digits>.bin that sextant writes"
            )));
        }
        for reference in self.references() {
            ObjectRef::parse(reference, f.packs.len()).map_err(bad)?;
        }
        // Chunk and document numbers are u32 in every file: a count or run past them is no index.
        let runs = [
            f.fragments.chunks_per_file,
            f.vectors.codes.chunks_per_file,
            f.vectors.blocks.chunks_per_file,
        ];
        let limit = u32::MAX as usize;
        if self.counts.chunks > limit
            || self.counts.documents > limit
            || f.keyword_shards > limit
            || runs.iter().any(|&r| r > limit)
        {
            return Err(bad(format!(
                "a count or a run of chunks is over {limit}, the most chunk numbers can name"
            )));
        }
        if let Some(graph) = f.graph.as_deref() {
            if !graph.starts_with("graph.") || !graph.ends_with(".json") || !valid_file_name(graph) {
                return Err(bad(format!(
                    "it names the graph {graph:?}, which is not of the form graph.<16 hex digits>.json that sextant writes"
                )));
            }
        }
        let chunks = self.counts.chunks;
        f.fragments.check(chunks, per_page, "fragment")?;
        f.vectors.codes.check(chunks, per_page, "code")?;
        f.vectors.blocks.check(chunks, per_page, "vector block")?;
        if per_page > 0 && f.keyword.len() != f.keyword_shards.div_ceil(per_page) {
            return Err(bad(format!(
                "{} pages of {per_page} cannot list {} keyword shards",
                f.keyword.len(),
                f.keyword_shards
            )));
        }
        if f.keyword.windows(2).any(|w| w[0].first >= w[1].first) {
            return Err(bad("keyword shards are not in term order".into()));
        }
        Ok(())
    }

    /// How many keyword shards the index has.
    pub fn keyword_shards(&self) -> usize {
        match self.files.page_entries {
            0 => self.files.keyword.len(),
            _ => self.files.keyword_shards,
        }
    }

    /// Every reference the manifest holds (objects, or from 2.4 pages), in no particular order.
    fn references(&self) -> impl Iterator<Item = &str> {
        let f = &self.files;
        [f.norms.as_str(), f.vectors.meta.as_str()]
            .into_iter()
            .chain(f.vectors.centroids.as_deref())
            .chain(f.facets.as_deref())
            .chain(f.keyword.iter().map(|s| s.file.as_str()))
            .chain(
                [&f.fragments, &f.vectors.codes, &f.vectors.blocks]
                    .into_iter()
                    .flat_map(|run| run.files.iter().map(String::as_str)),
            )
    }

    /// Every file the manifest itself names, each once: its packs and the references stored in
    /// files of their own (before 2.4 every object; from 2.4, unpacked, the norms, calibration
    /// and pages, whose pages name the rest: `IndexStore::missing`).
    pub fn file_names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.files.packs.iter().map(String::as_str).collect();
        out.extend(self.references().filter(|r| !r.contains('@')));
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_grow_as_the_root_of_the_chunk_count_unless_set() {
        let size = |chunks, layout: Layout| layout.for_chunks(chunks).code_file_chunks;
        let auto = Layout::default();
        // NPL, the Python docs' site, their eval corpus, rust-doc's projection.
        for (chunks, want) in [(11_442, 64), (19_271, 64), (40_884, 128), (230_000, 256)] {
            assert_eq!(size(chunks, auto), want, "{chunks} chunks");
        }
        // Cranfield, and any index a query would read half of: one file of codes.
        for chunks in [0, 2_729, 4_096] {
            assert_eq!(size(chunks, auto), Layout::MAX_PARTITION_CHUNKS, "{chunks} chunks");
        }
        assert_eq!(size(4_097, auto), 64);
        assert_eq!(size(usize::MAX / 2, auto), Layout::MAX_PARTITION_CHUNKS);
        // Fewer partitions probed: larger ones, so the centroids stay as few.
        assert_eq!(size(19_271, Layout { probe: 8, ..auto }), 128);
        assert_eq!(size(5_000, Layout { probe: 8, ..auto }), 64);
        // Set: kept; and always a multiple of the block.
        assert_eq!(
            size(
                19_271,
                Layout {
                    code_file_chunks: 1024,
                    ..auto
                }
            ),
            1024
        );
        assert_eq!(
            size(
                19_271,
                Layout {
                    block_chunks: 48,
                    ..auto
                }
            ),
            96
        );
        for chunks in [1, 1_000, 100_000, 10_000_000] {
            let layout = auto.for_chunks(chunks);
            assert!(layout.validate().is_ok() && layout.code_file_chunks.is_multiple_of(layout.block_chunks));
        }
        // Not a multiple of the default block (2).
        assert!(Layout {
            code_file_chunks: 31,
            ..auto
        }
        .validate()
        .is_err());
    }

    #[test]
    fn crate_versions_match_the_lock_file() {
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).unwrap();
        for (name, version) in crate_versions() {
            if name == "sextant" {
                continue;
            }
            let entry = format!("name = \"{name}\"\nversion = \"{version}\"");
            assert!(lock.contains(&entry), "Cargo.lock does not pin {name} {version}");
        }
    }
}
