//! Queries over a loaded bundle: keyword (BM25), dense (vectors) or hybrid (both, fused with
//! reciprocal rank fusion).
//!
//! Hybrid search takes the top `depth` chunks of each retriever (`depth` defaults to `2·k`),
//! fuses them with RRF (k = 60), optionally drops results under `score_threshold`, optionally
//! keeps only the best chunk of each document, and returns the first `k`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::analyzer::Analyzer;
use crate::bm25::Bm25Params;
use crate::bundle::{check_model, Bundle, BundleError, Manifest};
use crate::embed::{EmbedError, Embedder, TextKind};
use crate::frame::{frame, FrameChunk, Framed};
use crate::fusion::{reciprocal_rank_fusion, RRF_K};
use crate::vector::{VectorHit, VectorMethod};

/// Which retrievers a query uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Dense and keyword, fused with RRF. The default.
    #[default]
    Hybrid,
    /// Vectors only; scores are cosine similarities.
    Dense,
    /// BM25 only; scores are BM25 scores.
    Keyword,
}

impl Mode {
    /// All modes, in the order `eval --all-modes` reports them.
    pub const ALL: [Mode; 3] = [Mode::Hybrid, Mode::Dense, Mode::Keyword];

    /// The mode's name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Hybrid => "hybrid",
            Mode::Dense => "dense",
            Mode::Keyword => "keyword",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = SearchError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| SearchError::BadArgument {
                name: "mode",
                reason: format!("{s:?} is not a mode; use hybrid, dense or keyword"),
            })
    }
}

/// How the dense retriever searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorSearch {
    /// Exact below the bundle's `hnsw.exact_below` vectors or when `depth` exceeds
    /// `hnsw.ef_search`; the graph otherwise. The default.
    #[default]
    Auto,
    /// Always scan every vector.
    Exact,
    /// Always walk the graph (at most `ef_search` candidates).
    Hnsw,
}

/// Query options. `Default` gives k = 10, hybrid, no threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchOptions {
    /// Results wanted, 1–1000. Default 10.
    pub k: usize,
    /// Retrievers to use. Default hybrid.
    pub mode: Mode,
    /// Candidates taken from each retriever before fusion, at least `k`. Default `2·k`.
    pub depth: Option<usize>,
    /// Drop results whose score (fused RRF score in hybrid, cosine in dense, BM25 in keyword)
    /// is below this. Default none.
    pub score_threshold: Option<f32>,
    /// Drop dense candidates whose cosine similarity is below this, before fusion (−1.0–1.0).
    /// With it, a query unrelated to every chunk can come back empty. Default none.
    pub min_similarity: Option<f32>,
    /// Keep only the best chunk of each document (a document's results may then number
    /// fewer than `k`). Default false.
    pub per_document: bool,
    /// Override the bundle's BM25 parameters for this query.
    pub bm25: Option<Bm25Params>,
    /// Dense search method. Default auto.
    pub vector_search: VectorSearch,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            k: 10,
            mode: Mode::Hybrid,
            depth: None,
            score_threshold: None,
            min_similarity: None,
            per_document: false,
            bm25: None,
            vector_search: VectorSearch::Auto,
        }
    }
}

/// Longest query accepted, in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;

/// Why a query failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// An argument is out of range.
    #[error("invalid {name}: {reason}")]
    BadArgument {
        /// The argument.
        name: &'static str,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// Dense or hybrid search without a model.
    #[error("{mode} search needs the embedding model; load the engine with model.onnx and tokenizer.json, or use mode keyword")]
    NoModel {
        /// The mode asked for.
        mode: &'static str,
    },
    /// Embedding the query failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl SearchError {
    /// A stable, machine-readable code: `BAD_ARGUMENT`, `NO_MODEL`, or the embedder's code.
    pub fn code(&self) -> &'static str {
        match self {
            SearchError::BadArgument { .. } => "BAD_ARGUMENT",
            SearchError::NoModel { .. } => "NO_MODEL",
            SearchError::Embed(e) => e.code(),
        }
    }
}

/// A chunk's place in one retriever's list.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RetrieverHit {
    /// 1-based rank in that retriever's candidates.
    pub rank: u32,
    /// That retriever's score (cosine or BM25).
    pub score: f32,
}

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// 1-based position in the results.
    pub rank: u32,
    /// Chunk id, `{document id}#{index}`.
    pub chunk_id: String,
    /// Document id.
    pub doc_id: String,
    /// Document title.
    pub title: String,
    /// Document source path.
    pub source: String,
    /// URL or source with the heading's `#anchor`.
    pub url: String,
    /// Breadcrumb of headings.
    pub heading_path: Vec<String>,
    /// Chunk text.
    pub text: String,
    /// The mode's score: fused RRF score (hybrid), cosine (dense) or BM25 (keyword).
    pub score: f32,
    /// Rank and cosine in the dense candidates, if the chunk was among them.
    pub dense: Option<RetrieverHit>,
    /// Rank and BM25 score in the keyword candidates, if the chunk was among them.
    pub keyword: Option<RetrieverHit>,
}

/// Milliseconds spent in each stage of a query (all zero without a clock).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct StageTimings {
    /// Tokenising and embedding the query.
    pub embed_ms: f64,
    /// BM25.
    pub keyword_ms: f64,
    /// Vector search.
    pub vector_ms: f64,
    /// Fusion, filtering and assembling results.
    pub fusion_ms: f64,
    /// Everything.
    pub total_ms: f64,
}

/// Results and how they were found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    /// Results, best first.
    pub results: Vec<SearchResult>,
    /// Time per stage.
    pub timings: StageTimings,
    /// Dense method used, if the dense retriever ran.
    pub vector_method: Option<VectorMethod>,
}

/// A monotonic clock in milliseconds. The core reads no clock itself: the CLI passes
/// `Instant`-based time, wasm passes `performance.now()`.
pub trait Clock {
    /// Milliseconds since an arbitrary origin.
    fn now_ms(&self) -> f64;
}

/// A clock that always says 0 (timings come out zero).
pub struct NoClock;

impl Clock for NoClock {
    fn now_ms(&self) -> f64 {
        0.0
    }
}

/// A loaded bundle, ready to search; with a model attached it also does dense and hybrid search.
pub struct Engine {
    bundle: Bundle,
    analyzer: Analyzer,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("chunks", &self.bundle.chunks.len())
            .field("model", &self.embedder.is_some())
            .finish()
    }
}

impl Engine {
    /// An engine over a bundle, without a model (keyword search only until one is attached).
    pub fn new(bundle: Bundle) -> Self {
        Self {
            bundle,
            analyzer: Analyzer::english(),
            embedder: None,
        }
    }

    /// Reads a bundle from bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BundleError> {
        Ok(Self::new(Bundle::from_bytes(bytes)?))
    }

    /// Attaches the embedding model after checking it is the one the bundle was built with
    /// (file digests, and the same pooling, normalisation, window and prefixes).
    pub fn attach_model(&mut self, embedder: Arc<dyn Embedder>) -> Result<(), BundleError> {
        let spec = embedder.spec();
        let manifest = &self.bundle.manifest;
        check_model(manifest, &spec.sha256, &spec.tokenizer_sha256)?;
        let mut expected = manifest.model.clone();
        expected.sha256.clone_from(&spec.sha256);
        expected.tokenizer_sha256.clone_from(&spec.tokenizer_sha256);
        if &expected != spec {
            return Err(BundleError::ModelMismatch {
                what: "model options",
                expected: format!("{:?}", manifest.model),
                actual: format!("{spec:?}"),
            });
        }
        self.embedder = Some(embedder);
        Ok(())
    }

    /// The embedder, if attached.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The bundle.
    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.bundle.manifest
    }

    /// Searches with the embedder attached. See the module docs for the pipeline.
    pub fn search(
        &self,
        query: &str,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<SearchResponse, SearchError> {
        let start = clock.now_ms();
        validate(query, options)?;
        let query_vector = if options.mode == Mode::Keyword {
            None
        } else {
            let embedder = self.embedder.as_ref().ok_or(SearchError::NoModel {
                mode: options.mode.name(),
            })?;
            Some(embedder.embed(query, TextKind::Query)?)
        };
        let embedded = clock.now_ms();
        let mut response = self.search_with_vector(query, query_vector.as_deref(), options, clock)?;
        response.timings.embed_ms = embedded - start;
        response.timings.total_ms = clock.now_ms() - start;
        Ok(response)
    }

    /// Searches with a query vector computed elsewhere (`None` is allowed in keyword mode).
    pub fn search_with_vector(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<SearchResponse, SearchError> {
        let start = clock.now_ms();
        validate(query, options)?;
        let k = options.k;
        let depth = options.depth.unwrap_or(k.saturating_mul(2)).max(k);
        let mut timings = StageTimings::default();

        let keyword: Vec<(u32, f32)> = if options.mode == Mode::Dense {
            Vec::new()
        } else {
            let t = clock.now_ms();
            let terms = self.analyzer.terms(query);
            let params = options.bm25.unwrap_or(self.bundle.manifest.bm25);
            let hits = self.bundle.bm25.search(&terms, params, depth);
            timings.keyword_ms = clock.now_ms() - t;
            hits.into_iter().map(|h| (h.doc, h.score)).collect()
        };

        let mut vector_method = None;
        let dense: Vec<(u32, f32)> = if options.mode == Mode::Keyword {
            Vec::new()
        } else {
            let vector = query_vector.ok_or(SearchError::NoModel {
                mode: options.mode.name(),
            })?;
            if vector.len() != self.bundle.vectors.dims() {
                return Err(SearchError::BadArgument {
                    name: "query vector",
                    reason: format!(
                        "it has {} dimensions but the bundle's vectors have {}",
                        vector.len(),
                        self.bundle.vectors.dims()
                    ),
                });
            }
            let t = clock.now_ms();
            let hnsw = &self.bundle.manifest.hnsw;
            let method = match options.vector_search {
                VectorSearch::Exact => VectorMethod::Exact,
                VectorSearch::Hnsw => VectorMethod::Hnsw,
                VectorSearch::Auto if self.bundle.vectors.len() < hnsw.exact_below || depth > hnsw.ef_search => {
                    VectorMethod::Exact
                }
                VectorSearch::Auto => VectorMethod::Hnsw,
            };
            let hits: Vec<VectorHit> = match method {
                VectorMethod::Exact => self.bundle.vectors.search_exact(vector, depth),
                VectorMethod::Hnsw => {
                    self.bundle
                        .vectors
                        .search_hnsw(vector, depth, &mut instant_distance::Search::default())
                }
            };
            vector_method = Some(method);
            timings.vector_ms = clock.now_ms() - t;
            hits.into_iter()
                .filter(|h| options.min_similarity.is_none_or(|m| h.score >= m))
                .map(|h| (h.chunk, h.score))
                .collect()
        };

        let t = clock.now_ms();
        let rank_of = |list: &[(u32, f32)], chunk: u32| {
            list.iter().position(|(c, _)| *c == chunk).and_then(|p| {
                let (_, score) = list.get(p)?;
                Some(RetrieverHit {
                    rank: p as u32 + 1,
                    score: *score,
                })
            })
        };
        let scored: Vec<(u32, f32)> = match options.mode {
            Mode::Keyword => keyword.clone(),
            Mode::Dense => dense.clone(),
            Mode::Hybrid => {
                let d: Vec<u32> = dense.iter().map(|(c, _)| *c).collect();
                let kw: Vec<u32> = keyword.iter().map(|(c, _)| *c).collect();
                reciprocal_rank_fusion(&[&d, &kw], RRF_K)
                    .into_iter()
                    .map(|h| (h.chunk, h.score))
                    .collect()
            }
        };
        let mut seen_docs = std::collections::HashSet::new();
        let mut results = Vec::with_capacity(k);
        for (chunk_number, score) in scored {
            if results.len() >= k {
                break;
            }
            if options.score_threshold.is_some_and(|t| score < t) {
                continue;
            }
            let Some(chunk) = self.bundle.chunks.get(chunk_number as usize) else {
                continue;
            };
            if options.per_document && !seen_docs.insert(chunk.doc) {
                continue;
            }
            let Some(doc) = self.bundle.documents.get(chunk.doc as usize) else {
                continue;
            };
            results.push(SearchResult {
                rank: results.len() as u32 + 1,
                chunk_id: chunk.id.clone(),
                doc_id: doc.id.clone(),
                title: doc.title.clone(),
                source: doc.source.clone(),
                url: chunk.url.clone(),
                heading_path: chunk.heading_path.clone(),
                text: chunk.text.clone(),
                score,
                dense: rank_of(&dense, chunk_number),
                keyword: rank_of(&keyword, chunk_number),
            });
        }
        timings.fusion_ms = clock.now_ms() - t;
        timings.total_ms = clock.now_ms() - start;
        Ok(SearchResponse {
            results,
            timings,
            vector_method,
        })
    }

    /// Frames results as LLM context within `budget` model tokens (needs the model's tokenizer).
    pub fn frame(&self, results: &[SearchResult], budget: usize) -> Result<Framed, SearchError> {
        let chunks: Vec<FrameChunk> = results
            .iter()
            .map(|r| FrameChunk {
                chunk_id: r.chunk_id.clone(),
                source: r.url.clone(),
                text: r.text.clone(),
            })
            .collect();
        self.frame_chunks(&chunks, budget)
    }

    /// Frames chunks as LLM context within `budget` model tokens.
    pub fn frame_chunks(&self, chunks: &[FrameChunk], budget: usize) -> Result<Framed, SearchError> {
        let embedder = self.embedder.as_ref().ok_or(SearchError::NoModel { mode: "frame" })?;
        let tokenizer = embedder.tokenizer();
        Ok(frame(chunks, budget, &|s: &str| tokenizer.count(s))?)
    }
}

fn validate(query: &str, options: &SearchOptions) -> Result<(), SearchError> {
    if query.trim().is_empty() {
        return Err(SearchError::BadArgument {
            name: "query",
            reason: "it is empty; type some words to search for".into(),
        });
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(SearchError::BadArgument {
            name: "query",
            reason: format!("it is {} bytes long; the limit is {MAX_QUERY_BYTES}", query.len()),
        });
    }
    if !(1..=1000).contains(&options.k) {
        return Err(SearchError::BadArgument {
            name: "k",
            reason: format!("{} is out of range; use 1 to 1000", options.k),
        });
    }
    if options.depth.is_some_and(|d| d > 10_000) {
        return Err(SearchError::BadArgument {
            name: "depth",
            reason: "use at most 10000 candidates per retriever".into(),
        });
    }
    if let Some(p) = &options.bm25 {
        p.validate().map_err(|e| SearchError::BadArgument {
            name: "bm25",
            reason: e.to_string(),
        })?;
    }
    for (name, value) in [
        ("score_threshold", options.score_threshold),
        ("min_similarity", options.min_similarity),
    ] {
        if value.is_some_and(|v| !v.is_finite()) {
            return Err(SearchError::BadArgument {
                name,
                reason: "it must be a finite number".into(),
            });
        }
    }
    Ok(())
}
