//! Build configuration (`sextant.toml`): every knob that shapes a bundle, with defaults.
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
//! b = 0.75
//!
//! [hnsw]       # see vector::HnswParams
//! ef_construction = 100
//! ef_search = 100
//! seed = 42
//! exact_below = 5000
//! ```
//!
//! Unknown keys are errors, so a typo never silently falls back to a default.

use serde::{Deserialize, Serialize};

use crate::bm25::Bm25Params;
use crate::chunk::ChunkParams;
use crate::embed::ModelOptions;
use crate::vector::HnswParams;

/// Everything that shapes a bundle.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BuildConfig {
    /// How the model is run.
    pub model: ModelOptions,
    /// How documents are cut into chunks.
    pub chunking: ChunkParams,
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// HNSW parameters.
    pub hnsw: HnswParams,
}
