//! Queries over an index: keyword (BM25), dense (vectors) or hybrid (both, fused), and framing
//! their results as LLM context.
//!
//! A query is parsed ([`query::Query`]) and runs the steps of [`pipeline`]: words written
//! `-word` exclude their chunks and `"quoted phrases"` keep only the chunks holding them; BM25
//! takes its top `depth` chunks (`depth` defaults to `max(10·k, 100)`), or, when the index holds
//! none of the query's words, those of their nearest terms ([`pipeline::fallback_terms`]),
//! expanded by RM3 from its top chunks unless `query_expansion` is off; the dense retriever
//! scores every chunk's binary code, rescoring the best `layout.rescore` (at least `depth`) with
//! their int8 vectors; hybrid fuses the two lists (a convex combination of normalised scores, or
//! RRF), chunk by chunk or page by page; an attached cross-encoder reranks the best
//! `rerank_depth`; then results under `score_threshold` are dropped, with `per_document` only the
//! best chunk of each document is kept, and the first `k` are assembled from the text fragments.
//! The options are [`crate::options::SearchOptions`].
//!
//! The engine reads no files: over a split index a query answers [`Step::Need`] with the files it
//! needs and has not been given yet; the caller fetches them, adds them with
//! [`Engine::add_file`] and asks again. A packed index holds every file, so it always answers
//! [`Step::Done`].

pub mod bases;
pub mod lookup;
pub mod pipeline;
pub mod query;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::analyzer::Analyzer;
use crate::bundle::{check_model, BundleError};
#[cfg(feature = "model")]
use crate::digest::sha256_hex;
use crate::embed::{EmbedError, Embedder, Reranker, TextKind};
#[cfg(feature = "model")]
use crate::embed::{TractEmbedder, Weights};
use crate::error_code::ErrorCode;
use crate::frame::{frame, FrameChunk, Framed};
use crate::index::{packed, IndexManifest, IndexStore};
use crate::options::{
    validate_query, AskOptions, BadOption, ContextOptions, FrameOptions, Mode, SearchOptions, VectorSearch,
};
use crate::prompt::{chat_messages, ChatMessage, REFUSAL, SYSTEM_PROMPT};
pub use pipeline::VectorMethod;
use pipeline::{
    assemble, binary_candidates, expand_query, fallback_terms, filter, fuse, keyword_candidates, rescore,
    weighted_keyword_candidates, Candidate, FuseOptions, Ranked, FEEDBACK_CHUNKS,
};
use query::Query;

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
    #[error(
        "{mode} needs the embedding model; load the engine with model.onnx and tokenizer.json, or use mode keyword"
    )]
    NoModel {
        /// What was asked for (`hybrid search`, `dense search`, `framing`).
        mode: &'static str,
    },
    /// Embedding the query failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// A complete index lacked a file (a bug).
    #[error("the index lacks files it lists ({}); build it again", files.join(", "))]
    Incomplete {
        /// The files.
        files: Vec<String>,
    },
}

impl From<BadOption> for SearchError {
    fn from(e: BadOption) -> Self {
        SearchError::BadArgument {
            name: e.name,
            reason: e.reason,
        }
    }
}

impl SearchError {
    /// A stable, machine-readable code: `BAD_ARGUMENT`, `NO_MODEL`, or the embedder's code.
    pub fn code(&self) -> ErrorCode {
        match self {
            SearchError::BadArgument { .. } => ErrorCode::BadArgument,
            SearchError::NoModel { .. } => ErrorCode::NoModel,
            SearchError::Embed(e) => e.code(),
            SearchError::Incomplete { .. } => ErrorCode::Internal,
        }
    }
}

/// A query's answer, or the files it still needs.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<T> {
    /// The answer.
    Done(T),
    /// Files to add (by name) before asking again.
    Need(Vec<String>),
}

impl<T> Step<T> {
    /// The answer of an index that holds every file (a packed one): a missing file is a bug.
    pub fn done(self) -> Result<T, SearchError> {
        match self {
            Step::Done(t) => Ok(t),
            Step::Need(files) => Err(SearchError::Incomplete { files }),
        }
    }
}

/// Why a model could not be attached to an engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The model is not the bundle's, or the bundle is unreadable.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The model files cannot be loaded.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl EngineError {
    /// The code of the underlying error.
    pub fn code(&self) -> ErrorCode {
        match self {
            EngineError::Bundle(e) => e.code(),
            EngineError::Embed(e) => e.code(),
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
    /// The mode's score: the fused score (hybrid: 0–1 convex, or RRF), cosine (dense) or BM25
    /// (keyword; of the expanded query, its terms weighted, when `query_expansion` is on).
    pub score: f32,
    /// Rank and cosine in the dense candidates, if the chunk was among them.
    pub dense: Option<RetrieverHit>,
    /// Rank and BM25 score in the keyword candidates, if the chunk was among them.
    pub keyword: Option<RetrieverHit>,
    /// The cross-encoder's score, when it reranked this result (`rerank_depth`).
    pub rerank: Option<f32>,
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
    /// The cross-encoder reading the best results again (0 without one).
    pub rerank_ms: f64,
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
    /// The index terms keyword search looked for instead, when the index holds none of the
    /// query's words (a typo, or a word still being typed): the nearest terms to each word
    /// ([`pipeline::fallback_terms`]). Empty when the query's own words were searched for.
    pub fallback: Vec<String>,
}

/// Framed context for a question: the results, the blocks that fit the budget, and the exact chat
/// messages to send to an LLM. What `sextant frame --json` prints and `context()` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextResponse {
    /// The search results, best first (some may not fit the budget: see `omitted`).
    pub results: Vec<SearchResult>,
    /// The `<retrieved_context>` blocks, joined by newlines.
    pub context: String,
    /// Chunk ids framed, in order.
    pub included: Vec<String>,
    /// Chunk ids left out because they did not fit the budget.
    pub omitted: Vec<String>,
    /// Model tokens used.
    pub tokens: usize,
    /// The budget.
    pub budget: usize,
    /// The system prompt (the first message starts with it).
    pub system_prompt: String,
    /// The chat messages to send: the system prompt with the context, then the question.
    pub messages: Vec<ChatMessage>,
    /// Nothing was framed, so there is no evidence: an answer should be `refusal`, without
    /// calling the LLM.
    pub refused: bool,
    /// The answer to give when `refused`.
    pub refusal: String,
    /// Time per stage of the search.
    pub timings: StageTimings,
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

/// A query's text and its embedding.
type LastQuery = (String, Vec<f32>);

/// An index, ready to search; with a model attached it also does dense and hybrid search.
pub struct Engine {
    store: IndexStore,
    analyzer: Analyzer,
    embedder: Option<Arc<dyn Embedder>>,
    /// A cross-encoder that reranks the best results, if attached.
    reranker: Option<Arc<dyn Reranker>>,
    /// The last query embedded and its vector: a query over a split index is asked again after
    /// each batch of files arrives, and embedding is nearly all of its cost.
    /// Shared with the engines of other knowledge bases that share this model
    /// ([`Engine::share_model`]): a query searched over several bases is embedded once.
    last_query: Arc<std::sync::Mutex<Option<LastQuery>>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("chunks", &self.store.manifest().counts.chunks)
            .field("model", &self.embedder.is_some())
            .finish()
    }
}

impl Engine {
    /// An engine over a store (keyword search only until a model is attached).
    pub fn new(store: IndexStore) -> Self {
        // The manifest's analyzer is one this sextant has (checked when it was read).
        let analyzer = Analyzer::named(&store.manifest().analyzer).unwrap_or_default();
        Self {
            store,
            analyzer,
            embedder: None,
            reranker: None,
            last_query: Arc::new(std::sync::Mutex::new(None)),
        }
    }

    /// Reads a packed index (`.sxt`, format 2). A format-1 bundle fails with a message naming
    /// `sextant upgrade`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BundleError> {
        Ok(Self::new(packed::unpack(bytes)?))
    }

    /// An engine over a split index from its manifest (JSON); files come with [`Engine::add_file`].
    pub fn from_manifest(json: &[u8]) -> Result<Self, BundleError> {
        Ok(Self::new(IndexStore::new(IndexManifest::from_json(json)?)))
    }

    /// Adds a file of a split index (checked against its name's hash and the manifest).
    pub fn add_file(&mut self, name: &str, bytes: &[u8]) -> Result<(), BundleError> {
        self.store.add(name, bytes)
    }

    /// Bounds the memory of a split index: lets go of the least recently used keyword shards,
    /// fragments and vector blocks until those held take at most `max_bytes`, keeping what the
    /// last query used (see [`IndexStore::trim`]). Returns how many files were dropped; a later
    /// query that needs one answers `Need` for it again.
    pub fn trim(&mut self, max_bytes: usize) -> usize {
        self.store.trim(max_bytes)
    }

    /// Loads the index's model from the bytes of `model.onnx` and `tokenizer.json` and attaches
    /// it: the digests are checked first (a wrong model fails fast, before the slow load), then
    /// the model is run the way the index says (pooling, window, prefixes), its weights held as
    /// `weights` says. The model bytes are freed as soon as they are parsed.
    #[cfg(feature = "model")]
    pub fn load_model(&mut self, model: Vec<u8>, tokenizer: &[u8], weights: Weights) -> Result<(), EngineError> {
        let manifest = self.store.manifest();
        check_model(&manifest.model, &sha256_hex(&model), &sha256_hex(tokenizer))?;
        let options = manifest.model.options();
        let embedder = TractEmbedder::from_vec_with(model, tokenizer, &options, weights)?;
        self.attach_model(Arc::new(embedder))?;
        Ok(())
    }

    /// Attaches an embedding model after checking it is the one the index was built with (file
    /// digests, and the same pooling, normalisation, window and prefixes).
    pub fn attach_model(&mut self, embedder: Arc<dyn Embedder>) -> Result<(), BundleError> {
        let spec = embedder.spec();
        let built = &self.store.manifest().model;
        check_model(built, &spec.sha256, &spec.tokenizer_sha256)?;
        let mut expected = built.clone();
        expected.sha256.clone_from(&spec.sha256);
        expected.tokenizer_sha256.clone_from(&spec.tokenizer_sha256);
        if &expected != spec {
            return Err(BundleError::ModelMismatch {
                what: "model options",
                expected: format!("{built:?}"),
                actual: format!("{spec:?}"),
            });
        }
        self.embedder = Some(embedder);
        Ok(())
    }

    /// Attaches `other`'s model to this engine (another knowledge base built with the same model,
    /// checked as [`Engine::attach_model`] checks): one copy of the weights in memory, and a query
    /// searched over both embedded once.
    /// Returns whether `other` had a model to share.
    pub fn share_model(&mut self, other: &Engine) -> Result<bool, BundleError> {
        let Some(embedder) = other.embedder.clone() else {
            return Ok(false);
        };
        self.attach_model(embedder)?;
        self.last_query = other.last_query.clone();
        Ok(true)
    }

    /// Loads a cross-encoder from the bytes of its ONNX model and `tokenizer.json` (a query and
    /// a passage cut to `max_tokens` together) and attaches it: searches then rerank their best
    /// `rerank_depth` results with it.
    #[cfg(feature = "model")]
    pub fn load_reranker(&mut self, model: Vec<u8>, tokenizer: &[u8], max_tokens: usize) -> Result<(), EngineError> {
        let encoder = crate::embed::rerank::CrossEncoder::from_vec(model, tokenizer, max_tokens)?;
        self.attach_reranker(Arc::new(encoder));
        Ok(())
    }

    /// Attaches a reranker (see [`Engine::load_reranker`]).
    pub fn attach_reranker(&mut self, reranker: Arc<dyn Reranker>) {
        self.reranker = Some(reranker);
    }

    /// Whether a reranker is attached.
    pub fn has_reranker(&self) -> bool {
        self.reranker.is_some()
    }

    /// The embedder, if attached.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The index's files, as added so far.
    pub fn store(&self) -> &IndexStore {
        &self.store
    }

    /// The manifest.
    pub fn manifest(&self) -> &IndexManifest {
        self.store.manifest()
    }

    fn embedder_for(&self, what: &'static str) -> Result<&Arc<dyn Embedder>, SearchError> {
        self.embedder.as_ref().ok_or(SearchError::NoModel { mode: what })
    }

    /// The query's embedding, reusing the last one for the same text.
    fn embed_query(&self, query: &str, mode: Mode) -> Result<Vec<f32>, SearchError> {
        if let Ok(last) = self.last_query.lock() {
            if let Some((text, vector)) = last.as_ref() {
                if text == query {
                    return Ok(vector.clone());
                }
            }
        }
        let vector = self
            .embedder_for(needs_model_for(mode))?
            .embed(query, TextKind::Query)?;
        if let Ok(mut last) = self.last_query.lock() {
            *last = Some((query.to_string(), vector.clone()));
        }
        Ok(vector)
    }

    /// Searches with the embedder attached. See the module docs for the pipeline.
    pub fn search(
        &self,
        query: &str,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<Step<SearchResponse>, SearchError> {
        let start = clock.now_ms();
        validate_query(query)?;
        options.validate()?;
        // Excluded words (`-word`) are not embedded: the vector is of what the reader wants.
        let wanted = Query::parse(query).text;
        if wanted.trim().is_empty() {
            return Err(nothing_wanted());
        }
        let query_vector = if options.mode.needs_model() {
            Some(self.embed_query(&wanted, options.mode)?)
        } else {
            None
        };
        let embedded = clock.now_ms();
        let step = self.run(query, query_vector.as_deref(), options, clock)?;
        Ok(match step {
            Step::Done(mut response) => {
                response.timings.embed_ms = embedded - start;
                response.timings.total_ms = clock.now_ms() - start;
                Step::Done(response)
            }
            need => need,
        })
    }

    /// Searches with a query vector computed elsewhere (`None` is allowed in keyword mode).
    pub fn search_with_vector(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<Step<SearchResponse>, SearchError> {
        validate_query(query)?;
        options.validate()?;
        self.run(query, query_vector, options, clock)
    }

    /// The pipeline on validated input.
    fn run(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<Step<SearchResponse>, SearchError> {
        let start = clock.now_ms();
        self.store.begin_query();
        let depth = options.depth();
        let manifest = self.store.manifest();
        let mut timings = StageTimings::default();
        let vector = match (options.mode, query_vector) {
            (Mode::Keyword, _) => None,
            (mode, None) => {
                return Err(SearchError::NoModel {
                    mode: needs_model_for(mode),
                })
            }
            (_, Some(v)) if v.len() != manifest.model.dims => {
                return Err(SearchError::BadArgument {
                    name: "query vector",
                    reason: format!(
                        "it has {} dimensions but the index's vectors have {}",
                        v.len(),
                        manifest.model.dims
                    ),
                })
            }
            (_, Some(v)) => Some(v),
        };
        let parsed = Query::parse(query);
        if parsed.text.trim().is_empty() {
            return Err(nothing_wanted());
        }
        let mut terms = if options.mode == Mode::Dense {
            Vec::new()
        } else {
            self.analyzer.terms(&parsed.text)
        };
        let mut fallback: Vec<String> = Vec::new();
        // Each excluded word's terms (a word the analyzer drops, like a stop word, excludes
        // nothing); a chunk is excluded when it holds every term of one excluded word.
        let excluded_words: Vec<Vec<String>> = parsed
            .excluded
            .iter()
            .map(|w| self.analyzer.terms(w))
            .filter(|t| !t.is_empty())
            .collect();
        let excluded_terms: Vec<String> = excluded_words.iter().flatten().cloned().collect();
        // Each phrase's terms at their positions; a chunk can hold them only if it has them all.
        let phrases: Vec<Vec<(u32, String)>> = parsed
            .phrases
            .iter()
            .map(|p| self.analyzer.positions(p))
            .filter(|p| !p.is_empty())
            .collect();
        let phrase_terms: Vec<String> = phrases.iter().flatten().map(|(_, t)| t.clone()).collect();

        // Stage 1: the norms, the shards of the query's terms (and of excluded and phrase ones),
        // and the binary codes.
        let mut need = self.store.keyword_needs(&terms);
        need.extend(self.store.keyword_needs(&excluded_terms));
        need.extend(self.store.keyword_needs(&phrase_terms));
        if vector.is_some() {
            need.extend(self.store.code_needs());
        }
        if !need.is_empty() {
            need.sort();
            need.dedup();
            return Ok(Step::Need(need));
        }
        let banned = self.excluded_chunks(&excluded_words);
        // With phrases, only the chunks holding all of their terms can be results; when they are
        // few, their fragments are read now and only those holding the phrases stay, so the
        // retrievers' lists are cut after them (more are checked as results, below).
        let mut required = (!phrase_terms.is_empty()).then(|| self.chunks_holding(&phrase_terms));
        if let Some(r) = required.as_mut().filter(|r| r.len() <= PHRASE_CHECK_LIMIT) {
            let need = self.store.fragment_needs(r.iter().copied());
            if !need.is_empty() {
                return Ok(Step::Need(need));
            }
            r.retain(|&c| self.holds_phrases(c, &phrases) == Some(true));
        }
        let may_be_result = |c: &u32| !banned.contains(c) && required.as_ref().is_none_or(|r| r.contains(c));
        // Each list is cut to `depth` after the chunks that cannot be results leave it.
        let allowed =
            |list: Ranked| -> Ranked { list.into_iter().filter(|(c, _)| may_be_result(c)).take(depth).collect() };
        let wide = match &required {
            Some(_) => manifest.counts.chunks,
            None => depth.saturating_add(banned.len()),
        };

        // The binary stage's candidates and the vector blocks they need, asked for together with
        // the expansion's files below, so that a split index fetches them in the same step.
        let t = clock.now_ms();
        let binary = match (vector, self.store.meta()) {
            (Some(vector), Some(meta)) => {
                let (method, count) = match options.vector_search {
                    VectorSearch::Exact => (VectorMethod::Exact, manifest.counts.chunks),
                    VectorSearch::Auto => (VectorMethod::Rescored, manifest.layout.rescore.max(depth)),
                };
                let candidates = match &required {
                    // The chunks that can hold the phrases, best binary codes first.
                    Some(_) => {
                        let mut all = binary_candidates(meta, self.store.codes(), vector, manifest.counts.chunks);
                        all.retain(may_be_result);
                        all.truncate(count);
                        all
                    }
                    None => {
                        let mut c =
                            binary_candidates(meta, self.store.codes(), vector, count.saturating_add(banned.len()));
                        c.retain(may_be_result);
                        c
                    }
                };
                Some((method, candidates))
            }
            _ => None,
        };
        let binary_ms = clock.now_ms() - t;
        let block_need = binary
            .as_ref()
            .map(|(_, c)| self.store.block_needs(c.iter().copied()))
            .unwrap_or_default();
        let with_blocks = |mut need: Vec<String>| {
            need.extend(block_need.iter().cloned());
            need.sort();
            need.dedup();
            Step::Need(need)
        };
        let keyword: Ranked = if options.mode == Mode::Dense {
            Vec::new()
        } else {
            let t = clock.now_ms();
            let bundle_params = manifest.bm25;
            let params = options.bm25.map_or(bundle_params, |o| o.over(bundle_params));
            let mut hits = allowed(keyword_candidates(&self.store, &terms, params, wide));
            if hits.is_empty()
                && phrases.is_empty()
                && !terms.is_empty()
                && terms.iter().all(|t| self.store.postings(t).is_none())
            {
                // No word of the query is in the index: its nearest terms are searched for (the
                // shards of the terms starting as each word does). A quoted phrase is taken as
                // written.
                let ranges: Vec<(String, String)> = terms.iter().filter_map(|t| self.fallback_range(t)).collect();
                let mut need: Vec<String> = ranges
                    .iter()
                    .flat_map(|(from, to)| self.store.term_range_needs(from, to))
                    .collect();
                if !need.is_empty() {
                    need.sort();
                    need.dedup();
                    return Ok(with_blocks(need));
                }
                fallback = terms
                    .iter()
                    .flat_map(|t| {
                        let candidates = self
                            .fallback_range(t)
                            .map(|(from, to)| self.store.terms_between(&from, &to))
                            .unwrap_or_default();
                        fallback_terms(t, &candidates)
                    })
                    .collect();
                let mut seen = std::collections::HashSet::new();
                fallback.retain(|t| seen.insert(t.clone()));
                terms = fallback.clone();
                hits = allowed(keyword_candidates(&self.store, &terms, params, wide));
            }
            if options.query_expansion && !hits.is_empty() {
                // The top chunks' texts, then the shards of the terms they add.
                let top: Vec<(u32, f32)> = hits.iter().take(FEEDBACK_CHUNKS).copied().collect();
                let need = self.store.fragment_needs(top.iter().map(|(c, _)| *c));
                if !need.is_empty() {
                    return Ok(with_blocks(need));
                }
                let feedback: Vec<(Vec<String>, f32)> = top
                    .iter()
                    .filter_map(|&(c, s)| {
                        // What the index scored: the title, heading path and text, weighted.
                        let fragment = self.store.fragment(c)?;
                        let chunk = fragment.chunk(c)?;
                        let title = fragment.document(chunk.doc).map_or("", |d| d.title.as_str());
                        let t = manifest
                            .fields
                            .terms(&self.analyzer, title, &chunk.heading_path, &chunk.text);
                        Some((t, s))
                    })
                    .collect();
                let expanded = expand_query(&terms, &feedback);
                let added: Vec<String> = expanded.iter().map(|(t, _)| t.clone()).collect();
                let need = self.store.keyword_needs(&added);
                if !need.is_empty() {
                    return Ok(with_blocks(need));
                }
                hits = allowed(weighted_keyword_candidates(&self.store, &expanded, params, wide));
            }
            timings.keyword_ms = clock.now_ms() - t;
            hits
        };

        // Stage 2: the int8 vectors of the binary stage's best candidates.
        let mut method_used = None;
        let dense: Ranked = match (vector, binary) {
            (Some(vector), Some((method, candidates))) => {
                let t = clock.now_ms();
                if !block_need.is_empty() {
                    return Ok(Step::Need(block_need));
                }
                let hits = rescore(
                    &candidates,
                    &|c| self.store.dot(c, vector),
                    depth,
                    options.min_similarity,
                );
                method_used = Some(method);
                timings.vector_ms = binary_ms + (clock.now_ms() - t);
                hits
            }
            _ => Vec::new(),
        };

        // Stage 3: fuse, filter, and the fragments of what is kept.
        let t = clock.now_ms();
        let documents = self.store.norms().map(|n| n.documents.as_slice()).unwrap_or(&[]);
        let document_of = |chunk: u32| documents.get(chunk as usize).copied();
        let fuse_options = FuseOptions {
            fusion: options.fusion,
            dense_weight: options.dense_weight as f32,
            documents: options.fuse_documents,
            page_score: options.page_score,
        };
        let mut fused = fuse(options.mode, &dense, &keyword, &fuse_options, &document_of);
        if !phrases.is_empty() {
            // Whether a chunk holds the phrases is known once its fragment is here: those that do
            // not are dropped, and those not known yet are asked for below, as results are.
            fused.retain(|c| self.holds_phrases(c.chunk, &phrases) != Some(false));
        }
        // A cross-encoder reads the best candidates again with the query, and puts them in its
        // order (their fragments, and those of the first `k`, asked for together).
        let mut reranked: std::collections::HashMap<u32, f32> = std::collections::HashMap::new();
        if let Some(reranker) = self.reranker.as_ref().filter(|_| options.rerank_depth > 0) {
            let head = options.rerank_depth.min(fused.len());
            let need = self
                .store
                .fragment_needs(fused.iter().take(head.max(options.k)).map(|c| c.chunk));
            if !need.is_empty() {
                return Ok(Step::Need(need));
            }
            let r = clock.now_ms();
            let mut scored: Vec<(f32, Candidate)> = Vec::with_capacity(head);
            for candidate in fused.drain(..head) {
                let score = match self.store.fragment(candidate.chunk).and_then(|f| {
                    let chunk = f.chunk(candidate.chunk)?;
                    let title = f.document(chunk.doc).map_or("", |d| d.title.as_str());
                    Some(manifest.fields.embed_input(title, &chunk.heading_path, &chunk.text))
                }) {
                    Some(passage) => reranker.score(&parsed.text, &passage)?,
                    None => f32::NEG_INFINITY,
                };
                reranked.insert(candidate.chunk, score);
                scored.push((score, candidate));
            }
            // Stable: equal scores keep the fused order.
            scored.sort_by(|a, b| b.0.total_cmp(&a.0));
            fused.splice(0..0, scored.into_iter().map(|(_, c)| c));
            timings.rerank_ms = clock.now_ms() - r;
        }
        let kept = filter(
            fused,
            options.k,
            options.score_threshold,
            options.per_document,
            document_of,
        );
        let need = self.store.fragment_needs(kept.iter().map(|c| c.chunk));
        if !need.is_empty() {
            return Ok(Step::Need(need));
        }
        let results = assemble(&self.store, &kept, &dense, &keyword, &reranked);
        timings.fusion_ms = clock.now_ms() - t - timings.rerank_ms;
        timings.total_ms = clock.now_ms() - start;
        Ok(Step::Done(SearchResponse {
            results,
            timings,
            vector_method: method_used,
            fallback,
        }))
    }

    /// The chunks that hold every term of one of `words` (each an excluded word's terms; the
    /// store holds their shards).
    fn excluded_chunks(&self, words: &[Vec<String>]) -> std::collections::HashSet<u32> {
        words.iter().flat_map(|terms| self.chunks_holding(terms)).collect()
    }

    /// The chunks that hold every one of `terms` (the store holds their shards).
    fn chunks_holding(&self, terms: &[String]) -> std::collections::HashSet<u32> {
        let mut holding: Option<std::collections::HashSet<u32>> = None;
        for t in terms {
            let chunks: std::collections::HashSet<u32> = self
                .store
                .postings(t)
                .map(|p| p.chunks().into_iter().collect())
                .unwrap_or_default();
            holding = Some(match holding {
                None => chunks,
                Some(h) => h.intersection(&chunks).copied().collect(),
            });
        }
        holding.unwrap_or_default()
    }

    /// Whether a chunk holds every phrase (in its text, a heading, or its document's title when
    /// BM25 reads titles), or `None` while its fragment is not here.
    fn holds_phrases(&self, chunk: u32, phrases: &[Vec<(u32, String)>]) -> Option<bool> {
        let fragment = self.store.fragment(chunk)?;
        let c = fragment.chunk(chunk)?;
        let title = fragment
            .document(c.doc)
            .filter(|_| self.store.manifest().fields.title_weight > 0)
            .map(|d| d.title.as_str());
        Some(phrases.iter().all(|p| {
            self.analyzer.holds_phrase(&c.text, p)
                || c.heading_path.iter().any(|h| self.analyzer.holds_phrase(h, p))
                || title.is_some_and(|t| self.analyzer.holds_phrase(t, p))
        }))
    }

    /// The range of index terms a fallback for `term` looks among: those starting with its first
    /// character, or with its first two when that range spans more than
    /// [`FALLBACK_MAX_SHARDS`] keyword shards (a large index: fewer bytes fetched).
    fn fallback_range(&self, term: &str) -> Option<(String, String)> {
        let first = prefix_range(term, 1)?;
        if self.store.shard_count_between(&first.0, &first.1) <= FALLBACK_MAX_SHARDS {
            return Some(first);
        }
        prefix_range(term, 2).or(Some(first))
    }

    /// Frames results as LLM context (needs the model's tokenizer to count tokens).
    pub fn frame(&self, results: &[SearchResult], options: &FrameOptions) -> Result<Framed, SearchError> {
        let chunks: Vec<FrameChunk> = results
            .iter()
            .map(|r| FrameChunk {
                chunk_id: r.chunk_id.clone(),
                source: r.url.clone(),
                text: r.text.clone(),
            })
            .collect();
        self.frame_chunks(&chunks, options)
    }

    /// Frames chunks as LLM context within the options' token budget.
    pub fn frame_chunks(&self, chunks: &[FrameChunk], options: &FrameOptions) -> Result<Framed, SearchError> {
        options.validate()?;
        let embedder = self.embedder_for("framing")?;
        Ok(frame(chunks, options.token_budget, &|s: &str| {
            embedder.count_tokens(s)
        })?)
    }

    /// Searches for a question and frames the results: what an LLM needs to answer it.
    pub fn context(
        &self,
        question: &str,
        options: &ContextOptions,
        clock: &dyn Clock,
    ) -> Result<Step<ContextResponse>, SearchError> {
        options.frame.validate()?;
        let response = match self.search(question, &options.search, clock)? {
            Step::Done(response) => response,
            Step::Need(files) => return Ok(Step::Need(files)),
        };
        self.context_of(question, response.results, &options.frame, response.timings)
            .map(Step::Done)
    }

    /// Frames results found elsewhere (several knowledge bases' results, fused) for a question:
    /// [`Engine::context`] without the search.
    pub fn context_of(
        &self,
        question: &str,
        results: Vec<SearchResult>,
        options: &FrameOptions,
        timings: StageTimings,
    ) -> Result<ContextResponse, SearchError> {
        let framed = self.frame(&results, options)?;
        Ok(ContextResponse {
            messages: chat_messages(question, &framed.context),
            refused: framed.included.is_empty(),
            refusal: REFUSAL.to_string(),
            system_prompt: SYSTEM_PROMPT.to_string(),
            results,
            context: framed.context,
            included: framed.included,
            omitted: framed.omitted,
            tokens: framed.tokens,
            budget: framed.budget,
            timings,
        })
    }

    /// [`Engine::context`] with an answer's options (validated whole, LLM settings included).
    pub fn ask_context(
        &self,
        question: &str,
        options: &AskOptions,
        clock: &dyn Clock,
    ) -> Result<Step<ContextResponse>, SearchError> {
        options.validate()?;
        self.context(question, &options.context, clock)
    }
}

/// Keyword shards a fallback reads at most for one word before it narrows its range.
const FALLBACK_MAX_SHARDS: usize = 4;

/// Chunks holding a phrase's words checked for the phrase before the retrievers cut their lists
/// (more are checked as results).
const PHRASE_CHECK_LIMIT: usize = 500;

/// The range of terms that start with `term`'s first `n` characters (`None` when it is shorter):
/// from that prefix to the prefix with its last character incremented.
fn prefix_range(term: &str, n: usize) -> Option<(String, String)> {
    let prefix: Vec<char> = term.chars().take(n).collect();
    if prefix.len() < n {
        return None;
    }
    let (last, head) = prefix.split_last()?;
    let next = (u32::from(*last) + 1..=u32::from(char::MAX)).find_map(char::from_u32)?;
    let from: String = prefix.iter().collect();
    let to: String = head.iter().chain(std::iter::once(&next)).collect();
    Some((from, to))
}

fn nothing_wanted() -> SearchError {
    SearchError::BadArgument {
        name: "query",
        reason: "it has nothing to search for (every word is excluded with -word, or an empty phrase); add a word to search for".into(),
    }
}

fn needs_model_for(mode: Mode) -> &'static str {
    match mode {
        Mode::Hybrid => "hybrid search",
        Mode::Dense => "dense search",
        Mode::Keyword => "keyword search",
    }
}
