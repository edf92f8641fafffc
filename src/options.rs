//! The query vocabulary: every option, default and limit of searching, framing and asking,
//! defined once.
//!
//! One JSON shape serves everywhere: the field names below, in `snake_case`, are the keys of the
//! CLI's `--json` output, of the options and results of the JS package, and of the Worker's HTTP
//! API. Serde does every conversion; the wasm layer exports `crate::defaults::defaults()` so the package, the
//! drop-in UI and the Worker take defaults and limits from here, never from literals of their
//! own. The CLI's flags are the same names in kebab case (`per_document` → `--per-document`).
//!
//! Unknown keys are errors (`BAD_ARGUMENT`), so a misspelt option never silently falls back to a
//! default.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use std::collections::BTreeMap;

use crate::bm25::Bm25Override;
use crate::embed::Weights;
pub use crate::filters::{Filter, SortOrder};
pub use crate::fusion::{Fusion, PageScore};

/// Longest query accepted, in bytes (UTF-8).
pub const MAX_QUERY_BYTES: usize = 4096;
/// Most results one query may ask for.
pub const MAX_K: usize = 1000;
/// Most candidates taken from one retriever.
pub const MAX_DEPTH: usize = 10_000;
/// Most results a cross-encoder reranks in one query.
pub const MAX_RERANK_DEPTH: usize = 200;
/// Results a cross-encoder reranks unless asked otherwise (when one is loaded).
pub const DEFAULT_RERANK_DEPTH: usize = 20;
/// Results one LLM call rates in an LLM rerank unless asked otherwise.
pub const DEFAULT_RERANK_BATCH: usize = 10;
/// Milliseconds an LLM rerank's calls may take together unless asked otherwise.
pub const DEFAULT_RERANK_TIMEOUT_MS: u64 = 30_000;
/// The longest an LLM rerank may be given (10 minutes, as an answer).
pub const MAX_RERANK_TIMEOUT_MS: u64 = 600_000;
/// Largest token budget for framed context.
pub const MAX_TOKEN_BUDGET: usize = 100_000;
/// The dense list's weight in a convex fusion unless asked otherwise: chosen by `sextant eval
/// --sweep` across Cranfield, NPL and two documentation sites (the best mean, losing
/// significantly on none, and 5-fold cross-validated: BENCHMARKS.md, "Defaults chosen across
/// collections (issue 23)"). With cosine normalised over its theoretical floor of −1 its scores
/// spread less than BM25's, so 0.8 is still far from dense alone.
pub const DEFAULT_DENSE_WEIGHT: f64 = 0.8;
/// Candidates taken from each retriever per result asked for, unless asked otherwise (the default
/// depth is `DEPTH_PER_RESULT · k`, at least [`MIN_DEPTH`], at most [`MAX_DEPTH`]):
/// cross-validation on Cranfield chose depth 100 for 10 results; deeper lists let a convex
/// fusion score candidates that one retriever ranks low, and 100 results need deeper lists than
/// 10 do (Recall@100 0.7800 at depth 200, 0.8086 at 1,000).
pub const DEPTH_PER_RESULT: usize = 10;
/// Binary-code candidates rescored with int8 vectors per result asked for, at least the index's
/// `layout.rescore`: the rest of the dense list is scored from the codes (BENCHMARKS.md, "Fewer
/// int8 vectors a query"). 5 keeps nDCG@10 and Recall@100 where rescoring the whole list did on
/// Cranfield, NPL and the Python docs, and reads a third to a half of the int8 blocks.
pub const RESCORE_PER_RESULT: usize = 5;
/// Fewest candidates taken from each retriever unless asked otherwise.
pub const MIN_DEPTH: usize = 100;
/// Results of a search unless asked otherwise.
pub const DEFAULT_K: usize = 10;
/// Model tokens of framed context unless asked otherwise.
pub const DEFAULT_TOKEN_BUDGET: usize = 1500;
/// Chunks retrieved for an answer unless asked otherwise.
pub const ASK_K: usize = 6;
/// The cosine under which a dense candidate is no evidence for an answer, unless asked
/// otherwise.
pub const ASK_MIN_SIMILARITY: f64 = 0.3;
/// Largest request body a service accepts unless configured otherwise (the Worker's
/// `SEXTANT_MAX_REQUEST_BYTES`), in bytes.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// An option that is missing, misspelt, of the wrong type or out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid {name}: {reason}")]
pub struct BadOption {
    /// The option (or `"query"`, or `"options"` for an object that does not parse).
    pub name: &'static str,
    /// What is wrong and what is allowed.
    pub reason: String,
}

fn bad(name: &'static str, reason: impl Into<String>) -> BadOption {
    BadOption {
        name,
        reason: reason.into(),
    }
}

/// Which retrievers a query uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Dense and keyword, fused (`fusion`: a convex combination of normalised scores by
    /// default, or RRF). The default.
    #[default]
    Hybrid,
    /// Vectors only; scores are cosine similarities.
    Dense,
    /// BM25 only; scores are BM25 scores.
    Keyword,
}

named_enum!(Mode { Hybrid => "hybrid", Dense => "dense", Keyword => "keyword" });

impl Mode {
    /// All modes, in the order `eval --all-modes` reports them.
    pub const ALL: [Mode; 3] = [Mode::Hybrid, Mode::Dense, Mode::Keyword];

    /// Whether the mode embeds the query (and so needs the model).
    pub fn needs_model(self) -> bool {
        self != Mode::Keyword
    }
}

impl std::str::FromStr for Mode {
    type Err = BadOption;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| bad("mode", format!("{s:?} is not a mode; use {}", Self::NAMES.join(", "))))
    }
}

/// How the dense retriever searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorSearch {
    /// Binary codes of every chunk pick the best `layout.rescore` candidates (at least `depth`);
    /// the best `layout.rescore` of them (at least [`RESCORE_PER_RESULT`] per result) are ranked
    /// by their int8 vectors, the rest by their codes on the same scale. The default.
    #[default]
    Auto,
    /// Score the int8 vector of every chunk (over a split index: fetches every vector block).
    Exact,
}

named_enum!(VectorSearch { Auto => "auto", Exact => "exact" });

/// How a search's best results are reranked ([`SearchOptions::rerank`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RerankStrategy {
    /// In the fused order.
    None,
    /// By the attached cross-encoder (an error without one).
    CrossEncoder,
    /// By the user's LLM, rating each result (`crate::search::llm_rerank`): the host that holds
    /// the LLM runs it (the package, `sextant search`, the Worker); the core's own search refuses it.
    Llm,
}

named_enum!(RerankStrategy { None => "none", CrossEncoder => "cross_encoder", Llm => "llm" });

impl std::str::FromStr for RerankStrategy {
    type Err = BadOption;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| {
            bad(
                "rerank",
                format!("{s:?} is not a strategy; use {}", Self::NAMES.join(", ")),
            )
        })
    }
}

impl std::str::FromStr for VectorSearch {
    type Err = BadOption;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| bad("vector_search", format!("{s:?} is not auto or exact")))
    }
}

/// Query options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchOptions {
    /// Results wanted, 1–[`MAX_K`]. Default [`DEFAULT_K`] (10).
    pub k: usize,
    /// Retrievers to use. Default hybrid.
    pub mode: Mode,
    /// Candidates taken from each retriever before fusion, `k`–[`MAX_DEPTH`] (a smaller value
    /// counts as `k`). Default `max(10·k, 100)`.
    pub depth: Option<usize>,
    /// Drop results whose score (the fused score in hybrid, cosine in dense, BM25 — weighted by
    /// the expansion — in keyword)
    /// is below this. Default none.
    pub score_threshold: Option<f64>,
    /// Drop dense candidates whose cosine similarity is below this, before fusion (−1.0–1.0).
    /// With it, a query unrelated to every chunk can come back empty. Default none.
    pub min_similarity: Option<f64>,
    /// Keep only the best chunk of each document (a document's results may then number
    /// fewer than `k`). Default false.
    pub per_document: bool,
    /// BM25 parameters for this query (`{k1, b}`, either may be left out); default the index's.
    pub bm25: Option<Bm25Override>,
    /// Dense search method. Default auto.
    pub vector_search: VectorSearch,
    /// How hybrid search fuses its two lists: `convex` (the default: a weighted sum of scores
    /// normalised by their theoretical minimum and the query's best score) or `rrf` (reciprocal
    /// rank fusion, ranks only).
    pub fusion: Fusion,
    /// The dense list's weight in a `convex` fusion, 0–1 (the keyword list gets the rest).
    /// Default 0.7.
    pub dense_weight: f64,
    /// Fuse documents, not chunks: each retriever's documents ranked by their best chunk are
    /// fused, and a document's chunks follow it in the order chunk fusion gives them (what a
    /// reader sees when results are grouped by page, as the drop-in UI does). Default false.
    pub fuse_documents: bool,
    /// Expand keyword queries with terms of their top chunks (RM3 pseudo-relevance feedback):
    /// more keyword recall on some collections, less precision on others, and one more step per
    /// query (a split index fetches those chunks' fragments and the new terms' shards). Default
    /// false: it lost on NPL (BENCHMARKS.md, issue 23).
    pub query_expansion: bool,
    /// With `fuse_documents`, how a page's chunks score it in each retriever's list: `max` (its
    /// best chunk, the default) or `sum3` (its best three added up).
    pub page_score: PageScore,
    /// With results by document (`per_document`, `fuse_documents` or `sub_results`), BM25 scores
    /// each document whole (term counts and lengths summed over its chunks, IDF over documents)
    /// instead of by its best chunk; each matching chunk carries its document's score. Default
    /// true (it ranked documents better on every collection measured: BENCHMARKS.md, issue 23).
    pub document_bm25: bool,
    /// At most this many chunks of each document, 1–[`MAX_K`] (a page's sub-results, when
    /// results are grouped by page with `fuse_documents`: `k` then counts chunks, so a page
    /// cannot fill the list alone). Default none: any number; `per_document` is 1.
    pub sub_results: Option<usize>,
    /// How the best results are reranked: `none`, `cross_encoder` (the one attached: `[rerank]` in
    /// `sextant.toml`, `loadReranker()`) or `llm` (the user's LLM rates them; run by the host
    /// that holds it, see [`RerankStrategy::Llm`]). Default none given: the cross-encoder when one
    /// is attached, else none.
    pub rerank: Option<RerankStrategy>,
    /// How many of the best results are reranked, 0–[`MAX_RERANK_DEPTH`] (0: none): a
    /// cross-encoder reads each again with the query, or the LLM rates each. Default
    /// [`DEFAULT_RERANK_DEPTH`] (20).
    pub rerank_depth: usize,
    /// With `rerank: llm`: the results one LLM call rates (the calls run together), 1–
    /// [`MAX_RERANK_DEPTH`]. Default [`DEFAULT_RERANK_BATCH`] (10).
    pub rerank_batch: usize,
    /// With `rerank: llm`: milliseconds the calls may take together, retries included, 1–
    /// [`MAX_RERANK_TIMEOUT_MS`]; past it the fused order stands. Default
    /// [`DEFAULT_RERANK_TIMEOUT_MS`] (30000).
    pub rerank_timeout_ms: u64,
    /// Only pages whose filter values pass, by filter name: a value, a list (all of them), or
    /// `{any, all, none}` lists (`crate::filters::Filter`); applied before results are cut, in
    /// every mode. Default none.
    pub filters: BTreeMap<String, Filter>,
    /// Order the best `depth` matches by one sort key's values (`{"date": "desc"}`; numbers when
    /// every value of the key is one, else text; pages without a value last) before cutting to
    /// `k`. Default none: by relevance.
    pub sort: BTreeMap<String, SortOrder>,
    /// Count, for every filter value, the matching pages that have it (`filter_counts` in the
    /// response): the pages holding a query word, or ranked by the dense retriever, that pass
    /// the exclusions, phrases and filters. Default false.
    pub filter_counts: bool,
    /// When the keyword stage corrects a word the index does not hold (`did_you_mean`), hybrid
    /// search embeds the corrected query and searches again with its vector: the model reads a
    /// misspelled word as other word pieces. One more embedding and search step for such a query
    /// only; dense mode (no keyword stage) and an engine without the model (a vector from a
    /// Worker's `/embed`) embed the query as typed. Default true (BENCHMARKS.md, issue 25: typos).
    pub embed_corrections: bool,
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            k: DEFAULT_K,
            mode: Mode::Hybrid,
            depth: None,
            score_threshold: None,
            min_similarity: None,
            per_document: false,
            bm25: None,
            vector_search: VectorSearch::Auto,
            fusion: Fusion::Convex,
            dense_weight: DEFAULT_DENSE_WEIGHT,
            fuse_documents: false,
            query_expansion: false,
            page_score: PageScore::Max,
            document_bm25: true,
            sub_results: None,
            rerank: None,
            rerank_depth: DEFAULT_RERANK_DEPTH,
            rerank_batch: DEFAULT_RERANK_BATCH,
            rerank_timeout_ms: DEFAULT_RERANK_TIMEOUT_MS,
            filters: BTreeMap::new(),
            sort: BTreeMap::new(),
            filter_counts: false,
            embed_corrections: true,
        }
    }
}

impl SearchOptions {
    /// Candidates per retriever: `depth`, at least `k`; `max(10·k, MIN_DEPTH)` (at most
    /// [`MAX_DEPTH`]) by default.
    pub fn depth(&self) -> usize {
        self.depth
            .unwrap_or(self.k.saturating_mul(DEPTH_PER_RESULT).clamp(MIN_DEPTH, MAX_DEPTH))
            .max(self.k)
    }

    /// The most chunks of one document the results hold: 1 with `per_document`, else
    /// `sub_results`.
    pub fn chunks_per_document(&self) -> Option<usize> {
        if self.per_document {
            Some(1)
        } else {
            self.sub_results
        }
    }

    /// Whether BM25 scores whole documents ([`SearchOptions::document_bm25`], with results by
    /// document).
    pub fn scores_documents(&self) -> bool {
        self.document_bm25 && (self.per_document || self.fuse_documents || self.sub_results.is_some())
    }

    /// Whether the query reads the index's facets file (it filters, sorts or counts).
    pub fn uses_facets(&self) -> bool {
        !self.filters.is_empty() || !self.sort.is_empty() || self.filter_counts
    }

    /// Checks every option against its documented range.
    pub fn validate(&self) -> Result<(), BadOption> {
        crate::filters::validate(&self.filters, &self.sort).map_err(|(name, reason)| bad(name, reason))?;
        if !(1..=MAX_K).contains(&self.k) {
            return Err(bad("k", format!("{} is out of range; use 1 to {MAX_K}", self.k)));
        }
        if self.depth.is_some_and(|d| d > MAX_DEPTH) {
            return Err(bad(
                "depth",
                format!("use at most {MAX_DEPTH} candidates per retriever"),
            ));
        }
        if self.sub_results.is_some_and(|n| !(1..=MAX_K).contains(&n)) {
            return Err(bad("sub_results", format!("use 1 to {MAX_K} chunks of each document")));
        }
        if let Some(p) = &self.bm25 {
            p.validate().map_err(|e| bad("bm25", e.to_string()))?;
        }
        if self.rerank_depth > MAX_RERANK_DEPTH {
            return Err(bad(
                "rerank_depth",
                format!(
                    "{} is out of range; use 0 (no reranking) to {MAX_RERANK_DEPTH}",
                    self.rerank_depth
                ),
            ));
        }
        if !(1..=MAX_RERANK_DEPTH).contains(&self.rerank_batch) {
            return Err(bad(
                "rerank_batch",
                format!(
                    "{} is out of range; use 1 to {MAX_RERANK_DEPTH} results a call",
                    self.rerank_batch
                ),
            ));
        }
        if !(1..=MAX_RERANK_TIMEOUT_MS).contains(&self.rerank_timeout_ms) {
            return Err(bad(
                "rerank_timeout_ms",
                format!(
                    "{} is out of range; use 1 to {MAX_RERANK_TIMEOUT_MS} milliseconds",
                    self.rerank_timeout_ms
                ),
            ));
        }
        if !(0.0..=1.0).contains(&self.dense_weight) {
            return Err(bad(
                "dense_weight",
                format!("{} is out of range; use 0 to 1", self.dense_weight),
            ));
        }
        for (name, value) in [
            ("score_threshold", self.score_threshold),
            ("min_similarity", self.min_similarity),
        ] {
            if value.is_some_and(|v| !v.is_finite()) {
                return Err(bad(name, "it must be a finite number"));
            }
        }
        Ok(())
    }
}

/// Checks a query: not blank, at most [`MAX_QUERY_BYTES`] bytes.
pub fn validate_query(query: &str) -> Result<(), BadOption> {
    if query.trim().is_empty() {
        return Err(bad("query", "it is empty; type some words to search for"));
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(bad(
            "query",
            format!("it is {} bytes long; the limit is {MAX_QUERY_BYTES}", query.len()),
        ));
    }
    Ok(())
}

/// Options of loading an engine with its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoadOptions {
    /// How the model's int8 weights are held: `int8` (default: kept int8 and multiplied in
    /// integers, the fastest queries and the least memory) or `f32` (dequantised once at load
    /// and multiplied in f32, the model's own arithmetic: about 31 MB more memory for
    /// all-MiniLM-L6-v2, and in WebAssembly about twice the query time).
    pub weights: Weights,
}

/// Options of loading a cross-encoder reranker (`[rerank]` in `sextant.toml`, `loadReranker()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RerankOptions {
    /// The cross-encoder's window: a query and a passage are cut to this many tokens together,
    /// special tokens included (the passage first). Default 512, 8–8192.
    pub max_tokens: usize,
}

impl Default for RerankOptions {
    fn default() -> Self {
        Self { max_tokens: 512 }
    }
}

impl RerankOptions {
    /// Checks the window.
    pub fn validate(&self) -> Result<(), BadOption> {
        if !(8..=8192).contains(&self.max_tokens) {
            return Err(bad(
                "max_tokens",
                format!(
                    "{} is out of range for a cross-encoder's window; use 8 to 8192 (512 for BERT)",
                    self.max_tokens
                ),
            ));
        }
        Ok(())
    }
}

/// Options of framing search results as LLM context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FrameOptions {
    /// Model tokens the framed blocks may take, 1–[`MAX_TOKEN_BUDGET`]. Default
    /// [`DEFAULT_TOKEN_BUDGET`] (1500).
    pub token_budget: usize,
}

impl Default for FrameOptions {
    fn default() -> Self {
        Self {
            token_budget: DEFAULT_TOKEN_BUDGET,
        }
    }
}

impl FrameOptions {
    /// Checks the budget's range.
    pub fn validate(&self) -> Result<(), BadOption> {
        if !(1..=MAX_TOKEN_BUDGET).contains(&self.token_budget) {
            return Err(bad(
                "token_budget",
                format!("{} is out of range; use 1 to {MAX_TOKEN_BUDGET}", self.token_budget),
            ));
        }
        Ok(())
    }
}

/// Search, then frame: the search options and the token budget in one flat object.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ContextOptions {
    /// How to search.
    #[serde(flatten)]
    pub search: SearchOptions,
    /// How to frame.
    #[serde(flatten)]
    pub frame: FrameOptions,
}

impl ContextOptions {
    /// Checks every option.
    pub fn validate(&self) -> Result<(), BadOption> {
        self.search.validate()?;
        self.frame.validate()
    }
}

/// Answering a question: retrieve and frame (with an answer's defaults: [`ASK_K`] results,
/// dense candidates under [`ASK_MIN_SIMILARITY`] dropped), then the LLM call's own settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AskOptions {
    /// Retrieval and framing.
    #[serde(flatten)]
    pub context: ContextOptions,
    /// The LLM call.
    #[serde(flatten)]
    pub llm: LlmSettings,
}

/// How the LLM is called (by the JS package: the core only holds the defaults and ranges).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSettings {
    /// Milliseconds the whole LLM request may take, retries included; 0 for no limit, at most
    /// 600000. Default 60000.
    pub timeout_ms: u64,
    /// Tries for answers 429 and 5xx, 1–10. Default 3.
    pub max_tries: u32,
    /// Sampling temperature sent to the LLM, 0–2. Default 0.
    pub temperature: f64,
    /// Longest answer accepted, in bytes of UTF-8; a longer one ends with `LLM_INCOMPLETE`.
    /// Default 262144 (256 KiB), at least 1.
    pub max_answer_bytes: usize,
    /// Longest line of the LLM's event stream, in bytes; a longer one ends with
    /// `LLM_BAD_RESPONSE`. Default 1048576 (1 MiB), at least 1024.
    pub max_sse_line_bytes: usize,
}

impl Default for LlmSettings {
    fn default() -> Self {
        Self {
            timeout_ms: 60_000,
            max_tries: 3,
            temperature: 0.0,
            max_answer_bytes: 256 * 1024,
            max_sse_line_bytes: 1024 * 1024,
        }
    }
}

impl LlmSettings {
    /// Checks every setting.
    pub fn validate(&self) -> Result<(), BadOption> {
        if self.timeout_ms > 600_000 {
            return Err(bad("timeout_ms", "use at most 600000 (10 minutes), or 0 for no limit"));
        }
        if !(1..=10).contains(&self.max_tries) {
            return Err(bad(
                "max_tries",
                format!("{} is out of range; use 1 to 10", self.max_tries),
            ));
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return Err(bad(
                "temperature",
                format!("{} is out of range; use 0 to 2", self.temperature),
            ));
        }
        if self.max_answer_bytes == 0 {
            return Err(bad("max_answer_bytes", "use at least 1"));
        }
        if self.max_sse_line_bytes < 1024 {
            return Err(bad("max_sse_line_bytes", "use at least 1024"));
        }
        Ok(())
    }
}

impl Default for AskOptions {
    fn default() -> Self {
        Self {
            context: ContextOptions {
                search: SearchOptions {
                    k: ASK_K,
                    min_similarity: Some(ASK_MIN_SIMILARITY),
                    ..SearchOptions::default()
                },
                frame: FrameOptions::default(),
            },
            llm: LlmSettings::default(),
        }
    }
}

impl AskOptions {
    /// Checks every option.
    pub fn validate(&self) -> Result<(), BadOption> {
        self.context.validate()?;
        self.llm.validate()
    }
}

/// What a search is for: its defaults (an answer retrieves fewer, closer chunks) and which
/// options it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Purpose {
    /// `search()`: [`SearchOptions`].
    Search,
    /// `context()`: [`ContextOptions`].
    Context,
    /// `ask()`: [`AskOptions`].
    Ask,
}

named_enum!(Purpose { Search => "search", Context => "context", Ask => "ask" });

/// Options of one purpose, over its defaults and checked whole: the search part, the framing
/// part ([`Purpose::Search`]: the default framing), and for [`Purpose::Ask`] all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct PurposeOptions {
    /// How to search.
    pub search: SearchOptions,
    /// How to frame.
    pub frame: FrameOptions,
    /// Every option of an answer, for [`Purpose::Ask`].
    pub ask: Option<AskOptions>,
}

impl Purpose {
    /// The purpose named `name` (`search`, `context` or `ask`).
    pub fn parse(name: &str) -> Result<Self, BadOption> {
        Self::from_name(name).ok_or_else(|| {
            bad(
                "purpose",
                format!("{name:?} is not a purpose; use {}", Self::NAMES.join(", ")),
            )
        })
    }

    /// `given` (a JSON object, or nothing) over this purpose's defaults, unknown keys refused,
    /// every value checked.
    pub fn options(self, given: Option<serde_json::Value>) -> Result<PurposeOptions, BadOption> {
        match self {
            Purpose::Search => {
                let search: SearchOptions = parse_over(&SearchOptions::default(), given, "search options")?;
                search.validate()?;
                Ok(PurposeOptions {
                    search,
                    frame: FrameOptions::default(),
                    ask: None,
                })
            }
            Purpose::Context => {
                let o: ContextOptions = parse_over(&ContextOptions::default(), given, "context options")?;
                o.validate()?;
                Ok(PurposeOptions {
                    search: o.search,
                    frame: o.frame,
                    ask: None,
                })
            }
            Purpose::Ask => {
                let o: AskOptions = parse_over(&AskOptions::default(), given, "ask options")?;
                o.validate()?;
                Ok(PurposeOptions {
                    search: o.context.search.clone(),
                    frame: o.context.frame,
                    ask: Some(o),
                })
            }
        }
    }
}

/// Parses options given as a JSON object over `defaults` (keys not given keep the default), with
/// unknown keys refused, then validates them. `null` or an absent object means all defaults.
pub fn parse_over<T: Serialize + DeserializeOwned>(
    defaults: &T,
    given: Option<serde_json::Value>,
    what: &'static str,
) -> Result<T, BadOption> {
    let given = match given {
        None | Some(serde_json::Value::Null) => return to_round_trip(defaults, what),
        Some(serde_json::Value::Object(map)) => map,
        Some(other) => return Err(bad(what, format!("expected an object of options, got {other}"))),
    };
    let mut merged = match serde_json::to_value(defaults) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => return Err(bad(what, "the defaults are not an object")),
    };
    // Unknown keys: the merged object holds every known key, so anything else is a typo.
    if let Some(unknown) = given.keys().find(|k| !merged.contains_key(*k)) {
        let mut known: Vec<&String> = merged.keys().collect();
        known.sort();
        let known: Vec<&str> = known.into_iter().map(String::as_str).collect();
        return Err(bad(
            what,
            format!("unknown option {unknown:?}; the options are {}", known.join(", ")),
        ));
    }
    merged.extend(given);
    serde_json::from_value(serde_json::Value::Object(merged)).map_err(|e| bad(what, e.to_string()))
}

fn to_round_trip<T: Serialize + DeserializeOwned>(value: &T, what: &'static str) -> Result<T, BadOption> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|e| bad(what, e.to_string()))
}

/// Deserialises `A` and `B` from one flat object: the keys `B` has (those of its serialised
/// default) go to `B`, the rest to `A`, which refuses unknown ones. (`#[serde(flatten)]` cannot
/// refuse unknown keys, so the flat option objects are split here, each half by its own type.)
fn split_flat<'de, D, A, B>(deserializer: D) -> Result<(A, B), D::Error>
where
    D: Deserializer<'de>,
    A: DeserializeOwned,
    B: DeserializeOwned + Serialize + Default,
{
    use serde::de::Error;
    let mut rest = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
    let mut own = serde_json::Map::new();
    if let Ok(serde_json::Value::Object(known)) = serde_json::to_value(B::default()) {
        for key in known.keys() {
            if let Some(value) = rest.remove(key) {
                own.insert(key.clone(), value);
            }
        }
    }
    let a = A::deserialize(serde_json::Value::Object(rest)).map_err(D::Error::custom)?;
    let b = B::deserialize(serde_json::Value::Object(own)).map_err(D::Error::custom)?;
    Ok((a, b))
}

impl<'de> Deserialize<'de> for ContextOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (search, frame) = split_flat(deserializer)?;
        Ok(Self { search, frame })
    }
}

impl<'de> Deserialize<'de> for AskOptions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (context, llm) = split_flat(deserializer)?;
        Ok(Self { context, llm })
    }
}

/// The limits of the query vocabulary, for callers that check early (the UI, the Worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// [`MAX_QUERY_BYTES`].
    pub max_query_bytes: usize,
    /// [`MAX_K`].
    pub max_k: usize,
    /// [`MAX_DEPTH`].
    pub max_depth: usize,
    /// [`MAX_TOKEN_BUDGET`].
    pub max_token_budget: usize,
    /// [`MAX_RERANK_DEPTH`].
    pub max_rerank_depth: usize,
    /// [`MAX_REQUEST_BYTES`].
    pub max_request_bytes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mode_names_are_the_serde_names() {
        for (mode, name) in Mode::ALL.into_iter().zip(Mode::NAMES) {
            assert_eq!(serde_json::to_value(mode).unwrap(), json!(name));
            assert_eq!(name.parse::<Mode>().unwrap(), mode);
        }
        assert_eq!("fuzzy".parse::<Mode>().unwrap_err().name, "mode");
        for name in VectorSearch::NAMES {
            let parsed: VectorSearch = name.parse().unwrap();
            assert_eq!(serde_json::to_value(parsed).unwrap(), json!(name));
        }
    }

    #[test]
    fn options_parse_over_defaults_and_refuse_unknown_keys() {
        let o: SearchOptions = parse_over(
            &SearchOptions::default(),
            Some(json!({"k": 3, "per_document": true})),
            "search options",
        )
        .unwrap();
        assert_eq!((o.k, o.per_document, o.mode), (3, true, Mode::Hybrid));
        let e = parse_over(&SearchOptions::default(), Some(json!({"kk": 3})), "search options").unwrap_err();
        assert!(
            e.reason.contains("unknown option \"kk\"") && e.reason.contains("per_document"),
            "{e}"
        );
        let e = parse_over(&SearchOptions::default(), Some(json!({"k": "ten"})), "search options").unwrap_err();
        assert!(e.reason.contains("invalid type"), "{e}");
        let e = parse_over(&SearchOptions::default(), Some(json!([1])), "search options").unwrap_err();
        assert!(e.reason.contains("expected an object"), "{e}");
        let none: SearchOptions = parse_over(&SearchOptions::default(), None, "search options").unwrap();
        assert_eq!(none, SearchOptions::default());
    }

    #[test]
    fn context_and_ask_options_are_flat_with_their_own_defaults() {
        let c: ContextOptions = parse_over(
            &ContextOptions::default(),
            Some(json!({"token_budget": 400, "k": 4})),
            "context options",
        )
        .unwrap();
        assert_eq!((c.frame.token_budget, c.search.k), (400, 4));
        let e = parse_over(
            &ContextOptions::default(),
            Some(json!({"timeout_ms": 5})),
            "context options",
        )
        .unwrap_err();
        assert!(e.reason.contains("unknown option"), "{e}");
        let a: AskOptions = parse_over(
            &AskOptions::default(),
            Some(json!({"timeout_ms": 5, "mode": "keyword"})),
            "ask options",
        )
        .unwrap();
        assert_eq!(a.llm.timeout_ms, 5);
        assert_eq!(
            a.context.search.k, ASK_K,
            "ask keeps its own defaults for what is not given"
        );
        assert_eq!(a.context.search.min_similarity, Some(ASK_MIN_SIMILARITY));
        assert_eq!(a.context.search.mode, Mode::Keyword);
        let flat = serde_json::to_value(AskOptions::default()).unwrap();
        for key in ["k", "token_budget", "timeout_ms", "max_answer_bytes"] {
            assert!(flat.get(key).is_some(), "{key} missing from {flat}");
        }
    }

    #[test]
    fn ranges_are_checked() {
        let o = |v: serde_json::Value| {
            parse_over(&SearchOptions::default(), Some(v), "search options")
                .unwrap()
                .validate()
        };
        assert_eq!(o(json!({"k": 0})).unwrap_err().name, "k");
        assert_eq!(o(json!({"k": 1001})).unwrap_err().name, "k");
        assert_eq!(o(json!({"depth": 10001})).unwrap_err().name, "depth");
        assert_eq!(o(json!({"bm25": {"k1": 11.0, "b": 0.5}})).unwrap_err().name, "bm25");
        assert!(o(json!({"k": 1000, "depth": 10000})).is_ok());
        assert_eq!(
            FrameOptions { token_budget: 0 }.validate().unwrap_err().name,
            "token_budget"
        );
        let mut ask = AskOptions::default();
        ask.llm.max_tries = 0;
        assert_eq!(ask.validate().unwrap_err().name, "max_tries");
        assert!(validate_query("  ").is_err());
        assert!(validate_query(&"a".repeat(MAX_QUERY_BYTES)).is_ok());
        assert!(validate_query(&"a".repeat(MAX_QUERY_BYTES + 1)).is_err());
    }

    #[test]
    fn depth_defaults_to_ten_times_k_at_least_min_depth_and_never_below_k() {
        let mut o = SearchOptions {
            k: 7,
            ..SearchOptions::default()
        };
        assert_eq!(o.depth(), MIN_DEPTH);
        o.k = 80;
        assert_eq!(o.depth(), 800);
        o.k = MAX_K;
        assert_eq!(o.depth(), MAX_DEPTH);
        o.k = 7;
        o.depth = Some(3);
        assert_eq!(o.depth(), 7);
        o.depth = Some(50);
        assert_eq!(o.depth(), 50);
    }
}
