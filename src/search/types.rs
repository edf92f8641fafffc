//! The types of a query: its errors, its answer (`Step`: done, or the files it needs), results,
//! stage timings, framed context, and the clock the core is given.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::embed::EmbedError;
use crate::error_code::ErrorCode;
use crate::index::IndexError;
use crate::options::{BadOption, Mode};
use crate::prompt::ChatMessage;

/// How the dense retriever ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorMethod {
    /// Binary codes of every chunk picked the candidates; their int8 vectors ranked them.
    Rescored,
    /// The int8 vector of every chunk was scored.
    Exact,
}

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
    /// The model is not the index's, or the index is unreadable.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The model files cannot be loaded.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl EngineError {
    /// The code of the underlying error.
    pub fn code(&self) -> ErrorCode {
        match self {
            EngineError::Index(e) => e.code(),
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// The document's metadata (front matter, HTML's `data-sextant-meta`), to show with it
    /// (empty when it has none).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
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
    /// The index terms keyword search looked for in place of the query's words the index does
    /// not hold (a typo, or a word still being typed): the nearest terms to each such word
    /// ([`pipeline::fallback_terms`]). Empty when every word was searched for as written.
    pub fallback: Vec<String>,
    /// The query with each word the index does not hold spelled as the results spell its
    /// nearest term ([`pipeline::did_you_mean`]), to offer as "did you mean"; `None` when every
    /// word was found as written or no result spells a correction.
    #[serde(default)]
    pub did_you_mean: Option<String>,
    /// With `filter_counts`: for every filter of the index and each of its values, how many
    /// matching pages have it (`SearchOptions::filter_counts` says which pages match); `None`
    /// when not asked.
    #[serde(default)]
    pub filter_counts: Option<FilterCounts>,
}

/// Filter name → value → pages.
pub type FilterCounts = BTreeMap<String, BTreeMap<String, usize>>;

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

/// What a mode needs the model for, in messages.
pub(crate) fn needs_model_for(mode: Mode) -> &'static str {
    match mode {
        Mode::Hybrid => "hybrid search",
        Mode::Dense => "dense search",
        Mode::Keyword => "keyword search",
    }
}
