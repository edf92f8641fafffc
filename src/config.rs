//! Build configuration (`sextant.toml`): every knob that shapes an index, with defaults.
//!
//! ```toml
//! [model]      # how the embedding model is run (see embed::ModelOptions)
//! max_tokens = 256
//! pooling = "mean"        # or "cls"
//! normalize = true
//! query_prefix = ""
//! passage_prefix = ""
//!
//! [chunking]   # see chunk::ChunkParams
//! chunk_size = 200
//! chunk_overlap = 32
//!
//! [bm25]       # see bm25::Bm25Params
//! k1 = 1.5
//! b = 0.6
//!
//! [fields]     # see index::Fields: how the title and headings count
//! title_weight = 1        # BM25 reads the document's title this many times (0: not at all)
//! heading_weight = 1      # and the heading path this many times
//! embed_context = true    # the model reads "Title › Heading" before the text
//! code_weight = 1         # lines of code blocks count this many times (0: not searchable)
//!
//! [layout]     # see index::Layout: how the index is cut into files
//! keyword_shard_bytes = 8192
//! fragment_chunks = 4
//! code_file_chunks = 0   # chunks per partition of binary codes; 0: chosen from the chunk count
//! block_chunks = 2
//! rescore = 75
//!
//! [rerank]     # optional: a cross-encoder of yours reranks the best results (see RerankConfig)
//! model = "models/cross-encoder.onnx"     # paths relative to this file
//! tokenizer = "models/tokenizer.json"
//! max_tokens = 512
//!
//! [input]      # see InputConfig
//! include = []            # globs of paths to index (relative to each input); empty: all
//! exclude = []            # globs of paths to skip
//! max_file_bytes = 67108864   # larger files are skipped, with the reason
//! max_nesting_depth = 512     # HTML nested deeper is skipped, with the reason
//! max_front_matter_values = 10000    # front matter flattening to more is refused
//! max_front_matter_bytes = 1048576   # likewise, in bytes (key paths included)
//! ```
//!
//! Unknown keys are errors, so a typo never silently falls back to a default.

use serde::{Deserialize, Serialize};

use crate::bm25::Bm25Params;
use crate::chunk::ChunkParams;
use crate::embed::ModelOptions;
use crate::index::{Fields, Layout};

/// Everything that shapes an index.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BuildConfig {
    /// How the model is run.
    pub model: ModelOptions,
    /// How documents are cut into chunks.
    pub chunking: ChunkParams,
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// How the title and headings count.
    pub fields: Fields,
    /// How the index is cut into files, and the depth of int8 rescoring.
    pub layout: Layout,
    /// Which files are read.
    pub input: InputConfig,
    /// A cross-encoder that reranks search results (not part of the index: the CLI's search,
    /// frame and eval load it when given this file with `--config`).
    pub rerank: Option<RerankConfig>,
}

/// A cross-encoder ONNX model the user supplies (none ships with sextant), run by tract natively
/// and in wasm: it reads the query with each of a search's best `rerank_depth` results and puts
/// them in its order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RerankConfig {
    /// The model's ONNX file (relative paths are relative to the config file).
    pub model: String,
    /// Its `tokenizer.json`.
    pub tokenizer: String,
    /// Its window (see [`crate::options::RerankOptions`]).
    #[serde(default = "default_rerank_tokens")]
    pub max_tokens: usize,
}

fn default_rerank_tokens() -> usize {
    crate::options::RerankOptions::default().max_tokens
}

/// Which input files are read, and the limits on what one file may hold (the CLI walks the
/// files; the core only sees their bytes). A file over a limit is skipped with the reason, never
/// half-read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InputConfig {
    /// Only files whose path (relative to its input, `/`-separated) matches one of these globs
    /// are read; none means every file. The CLI's `--include` adds to them.
    pub include: Vec<String>,
    /// Files whose path matches one of these globs are skipped. The CLI's `--exclude` adds to
    /// them.
    pub exclude: Vec<String>,
    /// Largest file read, in bytes. Default 64 MiB.
    pub max_file_bytes: u64,
    /// Deepest element nesting an HTML page may have. Default 512 (where Chromium's parser stops
    /// nesting too).
    pub max_nesting_depth: usize,
    /// Most values a document's front matter may flatten to, YAML aliases followed (an alias
    /// counts as everything its anchor holds, so a few hundred bytes cannot ask for gigabytes).
    /// Default 10000.
    pub max_front_matter_values: usize,
    /// Most bytes a document's front matter may flatten to: every value with its whole key path
    /// (`a.b.c`), aliases followed. Default 1 MiB.
    pub max_front_matter_bytes: usize,
    /// Front matter fields that are filters: each value of such a field (a list's
    /// items) is a value of the filter of its name. Default none (HTML pages say theirs with
    /// `data-sextant-filter`).
    pub filters: Vec<String>,
    /// Front matter fields that are sort keys (`date`, `weight`). Default none.
    pub sort: Vec<String>,
    /// The documents' language (a BCP 47 tag: `fr`, `pt-BR`, `ja`), which chooses the keyword
    /// analyzer (stemmer, stop words, CJK bigrams). Default English. A site build indexes each
    /// language its pages give in `<html lang>` apart; this is the language of pages that say
    /// none.
    pub language: String,
}

impl Default for InputConfig {
    fn default() -> Self {
        Self {
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_bytes: 64 * 1024 * 1024,
            max_nesting_depth: 512,
            max_front_matter_values: 10_000,
            max_front_matter_bytes: 1024 * 1024,
            filters: Vec::new(),
            sort: Vec::new(),
            language: String::new(),
        }
    }
}
