//! Sentence embeddings: the [`Embedder`] trait and what implements it: [`TractEmbedder`], which
//! runs a BERT-family ONNX model with `tract`, and [`BertEncoder`], sextant's own encoder of a
//! BERT model's layers (the same bits with integer weights, without tract); [`ModelEmbedder`]
//! loads a whole `model.onnx` into the one that runs it faster.
//!
//! One job per file: this module holds the public types and the trait; [`tokenizer`] the model
//! tokenizer ([`ModelTokenizer`], the Hugging Face `tokenizers` crate or its twin
//! [`wordpiece`]); [`runner`] the tract runner; [`bert`] the encoder; [`model`] the choice
//! between them; and `rewrite` the ONNX graph surgery done at load (int8 weights and embedding
//! tables).
//!
//! The CLI embeds documents with it and the wasm engine embeds queries with it: the same code on
//! both sides, so the vectors agree.
//!
//! Pipeline for one text: optional prefix (query or passage) → tokenise (no padding, truncation at
//! the model window) → run the model on one sequence (`input_ids`, `attention_mask` of ones,
//! `token_type_ids` of zeros) → pool (`mean` over the attention mask, or `cls`) → optional L2
//! normalisation. Texts are run one at a time, never padded into a batch, so a text's vector
//! never depends on what it was batched with (the CLI gets its parallelism from threads).

#[cfg(feature = "encoder")]
pub mod bert;
#[cfg(feature = "model")]
mod exact;
#[cfg(feature = "encoder")]
pub mod int5;
#[cfg(feature = "model")]
pub mod model;
#[cfg(feature = "model")]
mod onnx;
#[cfg(feature = "model")]
mod qmatmul;
#[cfg(feature = "model")]
pub mod rerank;
#[cfg(feature = "model")]
mod rewrite;
#[cfg(feature = "model")]
pub mod rows;
#[cfg(feature = "encoder")]
mod rowstore;
#[cfg(feature = "model")]
pub mod runner;
#[cfg(feature = "encoder")]
pub mod tokenizer;
#[cfg(feature = "encoder")]
pub mod wordpiece;

use serde::{Deserialize, Serialize};

use crate::error_code::ErrorCode;
#[cfg(feature = "encoder")]
pub use bert::BertEncoder;
#[cfg(feature = "model")]
pub use model::ModelEmbedder;
#[cfg(feature = "model")]
pub use runner::TractEmbedder;
#[cfg(feature = "encoder")]
pub use tokenizer::ModelTokenizer;

/// The token ids `text` is embedded from: the model's prefix for its kind, then the text.
#[cfg(feature = "encoder")]
fn prefixed_ids(
    tokenizer: &ModelTokenizer,
    spec: &ModelSpec,
    text: &str,
    kind: TextKind,
) -> Result<Vec<u32>, EmbedError> {
    let prefix = match kind {
        TextKind::Query => &spec.query_prefix,
        TextKind::Passage => &spec.passage_prefix,
    };
    if prefix.is_empty() {
        tokenizer.encode(text)
    } else {
        tokenizer.encode(&format!("{prefix}{text}"))
    }
}

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Mean of the last hidden state over the attention mask (sentence-transformers' default).
    Mean,
    /// The hidden state of the first token (`[CLS]`).
    Cls,
}

/// Whether a text is a search query or a document passage (models such as E5 want different
/// prefixes for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// A user's query.
    Query,
    /// A chunk of a document.
    Passage,
}

/// Everything about the embedding model that an index must agree on with the query side.
/// Recorded in the index's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Lower-case hex SHA-256 of `model.onnx`.
    pub sha256: String,
    /// Lower-case hex SHA-256 of `tokenizer.json`.
    pub tokenizer_sha256: String,
    /// Output dimensions (384 for all-MiniLM-L6-v2). Read from the model at load.
    pub dims: usize,
    /// The model window in tokens, special tokens included (256 for all-MiniLM-L6-v2).
    pub max_tokens: usize,
    /// Pooling of token vectors.
    pub pooling: Pooling,
    /// L2-normalise sentence vectors (then dot product = cosine similarity).
    pub normalize: bool,
    /// Prepended to queries before tokenising (e.g. `"query: "` for E5). Empty by default.
    pub query_prefix: String,
    /// Prepended to passages before tokenising (e.g. `"passage: "` for E5). Empty by default.
    pub passage_prefix: String,
    /// The arithmetic the passages' vectors were computed with: `int8` (integer products and
    /// fixed-order sums, the same bits on every machine and in WebAssembly) since 2026-12-02;
    /// absent (`f32`, the model's own arithmetic) in indexes built before.
    #[serde(default = "Weights::before_int8_passages", skip_serializing_if = "Weights::is_f32")]
    pub weights: Weights,
}

impl ModelSpec {
    /// The spec of a model with these digests and dimensions, run with `options`.
    pub fn new(sha256: String, tokenizer_sha256: String, dims: usize, options: &ModelOptions) -> Self {
        Self {
            sha256,
            tokenizer_sha256,
            dims,
            max_tokens: options.max_tokens,
            pooling: options.pooling,
            normalize: options.normalize,
            query_prefix: options.query_prefix.clone(),
            passage_prefix: options.passage_prefix.clone(),
            weights: options.weights,
        }
    }

    /// The options that load this model the way the index was built with it.
    pub fn options(&self) -> ModelOptions {
        ModelOptions {
            max_tokens: self.max_tokens,
            pooling: self.pooling,
            normalize: self.normalize,
            query_prefix: self.query_prefix.clone(),
            passage_prefix: self.passage_prefix.clone(),
            weights: self.weights,
        }
    }
}

/// How a model is to be run: everything in [`ModelSpec`] except what is read from the files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelOptions {
    /// The model window in tokens, special tokens included. Default 256.
    pub max_tokens: usize,
    /// Pooling of token vectors. Default `mean`.
    pub pooling: Pooling,
    /// L2-normalise sentence vectors. Default `true`.
    pub normalize: bool,
    /// Prefix for queries. Default empty.
    pub query_prefix: String,
    /// Prefix for passages. Default empty.
    pub passage_prefix: String,
    /// How the weights are held and multiplied: `int8a8` (default for passages since
    /// 2026-12-07: integer products on rows rounded to bytes, the same vectors, bit for bit,
    /// natively on every CPU and in WebAssembly, and natively the fastest), `int8` (rows rounded
    /// to 15 bits, as passages were embedded from 2026-12-02) or `f32` (the model's own
    /// arithmetic, as `sextant build` embedded passages before).
    pub weights: Weights,
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self {
            max_tokens: 256,
            pooling: Pooling::Mean,
            normalize: true,
            query_prefix: String::new(),
            passage_prefix: String::new(),
            weights: Weights::Int8A8,
        }
    }
}

/// How the model's int8 weights are held and multiplied once loaded: a load-time choice that
/// does not change the index, and the vectors only within cosine 0.99999.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Weights {
    /// Dequantised to f32 once, at load, and multiplied in f32 by tract: the model's own
    /// arithmetic, about 31 MB more memory for all-MiniLM-L6-v2, and in WebAssembly about twice
    /// the query time of [`Weights::Int8`]. Its last bits differ between machines (fused
    /// multiply-adds, SIMD sums). `[model] weights = "f32"` builds with it, `--weights f32`
    /// queries with it.
    F32,
    /// Kept int8, packed once at load, and multiplied in integers, each row of activations
    /// rounded to 15 bits of its largest value (fewer only for weights with huge columns)
    /// (`embed::qmatmul`); attention's products, softmax and layer normalisation in one fixed
    /// order of f32 operations (`embed::exact`): the same bits natively on every CPU and in
    /// WebAssembly, the fastest queries (WebAssembly: about half [`Weights::F32`]'s time), the
    /// least memory, vectors within cosine 0.99999 of f32's. The default for queries; what
    /// passages were embedded with from 2026-12-02 to 2026-12-07.
    #[default]
    Int8,
    /// [`Weights::Int8`] with the products' weights rounded to five bits in groups of 32 rows
    /// (a level times a per-group multiplier, still int8 values: `embed::int5`): what a model
    /// body packed at five bits (`sextant build --site`, 64% of the bytes) computes, bit for
    /// bit. Vectors about cosine 0.99 of [`Weights::Int8`]'s; for queries (BENCHMARKS.md, "Layer
    /// weights at five bits").
    Int5,
    /// [`Weights::Int8`] with each row of activations rounded to bytes instead (`0..=255` from
    /// its least to its largest value, with a zero point: `sextant_kernels::Rows::Bytes`), which
    /// CPUs with AMX multiply as tile products and CPUs with AVX-512 VNNI or AVX-VNNI four values
    /// a lane an instruction: natively 1.37× the passages a second of [`Weights::Int8`] with
    /// AVX-512 VNNI, 1.65× with AMX (BENCHMARKS.md); in WebAssembly the same speed, through the
    /// same 16-bit kernel, and the same bits. Every mode's nDCG@10 on Cranfield and NPL within
    /// 0.003 of [`Weights::Int8`]'s (BENCHMARKS.md). The default for passages (`sextant build`,
    /// collections).
    Int8A8,
}

impl Weights {
    /// How rows of activations are rounded for the integer products with these weights.
    #[cfg(feature = "encoder")]
    pub fn rows(&self) -> sextant_kernels::Rows {
        match self {
            Weights::Int8A8 => sextant_kernels::Rows::Bytes,
            Weights::F32 | Weights::Int8 | Weights::Int5 => sextant_kernels::Rows::Wide,
        }
    }

    /// What an index built before int8 passages (no `weights` in its model record) used.
    pub fn before_int8_passages() -> Self {
        Weights::F32
    }

    /// Whether this is [`Weights::F32`] (left out of an index's model record, as before).
    pub fn is_f32(&self) -> bool {
        *self == Weights::F32
    }
}

named_enum!(Weights { F32 => "f32", Int8 => "int8", Int5 => "int5", Int8A8 => "int8a8" });

impl std::str::FromStr for Weights {
    type Err = EmbedError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| EmbedError::BadOption {
            option: "weights",
            reason: format!("{s:?} is not a weights mode; use {}", Self::NAMES.join(" or ")),
        })
    }
}

impl TryFrom<String> for Weights {
    type Error = EmbedError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// Errors from loading or running an embedding model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// `tokenizer.json` could not be parsed.
    #[error("tokenizer.json could not be read ({reason}); pass the tokenizer.json that belongs to the model")]
    BadTokenizer {
        /// What the tokenizers crate said.
        reason: String,
    },
    /// The ONNX model could not be loaded or optimised.
    #[error("the ONNX model could not be loaded ({reason}); pass a BERT-family sentence model exported to ONNX with inputs input_ids, attention_mask (and optionally token_type_ids)")]
    BadModel {
        /// What tract said.
        reason: String,
    },
    /// Tokenising a text failed.
    #[error("tokenising failed: {reason}")]
    Tokenize {
        /// What the tokenizers crate said.
        reason: String,
    },
    /// Running the model failed.
    #[error("running the model failed: {reason}")]
    Run {
        /// What tract said.
        reason: String,
    },
    /// A model body (`rows`) has not been given the row files a text's tokens are in: fetch them
    /// from beside the body and add them, then embed again.
    #[error("the model needs its row files {} (fetch them from beside the model and add them)", files.join(", "))]
    MissingRows {
        /// The row files' names.
        files: Vec<String>,
    },
    /// An option is out of range.
    #[error("invalid model option {option}: {reason}")]
    BadOption {
        /// The option's name.
        option: &'static str,
        /// Why it is invalid.
        reason: String,
    },
}

impl EmbedError {
    /// A stable, machine-readable code: `BAD_MODEL` for files that cannot be loaded,
    /// `BAD_ARGUMENT` for options, `EMBED_FAILED` for a failure while embedding.
    pub fn code(&self) -> ErrorCode {
        match self {
            EmbedError::BadTokenizer { .. } | EmbedError::BadModel { .. } => ErrorCode::BadModel,
            EmbedError::BadOption { .. } => ErrorCode::BadArgument,
            EmbedError::Tokenize { .. } | EmbedError::Run { .. } => ErrorCode::EmbedFailed,
            EmbedError::MissingRows { .. } => ErrorCode::NotReady,
        }
    }
}

/// Scores how relevant a passage is to a query, reading both together (a cross-encoder): what
/// reranks the best results of a search. Implemented by `rerank::CrossEncoder` (feature `model`).
pub trait Reranker: Send + Sync {
    /// The passage's relevance to the query: higher is more relevant.
    fn score(&self, query: &str, passage: &str) -> Result<f32, EmbedError>;
}

/// Turns texts into fixed-size vectors. `Sync` so the CLI can embed from many threads at once.
pub trait Embedder: Send + Sync {
    /// The model's description as recorded in an index's manifest.
    fn spec(&self) -> &ModelSpec;
    /// Embeds one text. The result has `spec().dims` values.
    fn embed(&self, text: &str, kind: TextKind) -> Result<Vec<f32>, EmbedError>;
    /// Model tokens in `text`, special tokens excluded, nothing truncated: what chunking and
    /// framing budgets count.
    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError>;
    /// The token ids the model sees for `text` (special tokens added, truncated at the window).
    fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError>;
    /// Milliseconds per run of each operator kind over `rounds` runs on `ids` (a profile, for
    /// BENCHMARKS.md; `now` a clock in milliseconds), or `None` when this embedder cannot tell.
    fn profile(&self, _ids: &[u32], _rounds: usize, _now: &dyn Fn() -> f64) -> Option<Result<Vec<OpTime>, EmbedError>> {
        None
    }
    /// Adds a file the model fetches as texts need it (a model body's row files, `rows`):
    /// `Ok(false)` when `name` is none of its files.
    fn add_file(&self, _name: &str, _bytes: &[u8]) -> Result<bool, EmbedError> {
        Ok(false)
    }
    /// Every file the model may ask for ([`EmbedError::MissingRows`]): what reading it offline
    /// needs. Empty for a whole model.
    fn file_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// One operator kind's share of a run ([`TractEmbedder::profile`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpTime {
    /// The operator (tract's name for it: `EinSum`, `Softmax`, …), or `(outside operators)` for
    /// the plan's own work: setting inputs, resolving the sequence length, collecting outputs.
    pub op: String,
    /// Nodes of this kind evaluated per run.
    pub nodes: usize,
    /// Milliseconds per run, on average.
    pub ms: f64,
}
