//! Index format 2: the index as content-addressed files beside one manifest, so a browser or a
//! Worker fetches only what a query needs, and one packed file of the same data for the CLI and
//! Node.
//!
//! The files (`files`):
//! - `norms`: every chunk's length in analyzer terms and its document number (BM25 needs the
//!   lengths, per-document grouping the numbers);
//! - keyword shards: the BM25 term table cut by term range into files of about
//!   `layout.keyword_shard_bytes`; a query fetches the shards of its terms;
//! - fragments: chunk text, URLs, heading paths and their documents' titles, `layout.fragment_chunks`
//!   chunks a file, fetched for the results that are shown;
//! - vectors: a calibration (`meta`), binary codes of every chunk (one bit a dimension: the
//!   candidate stage, `layout.code_file_chunks` chunks a file) and int8 vectors in blocks of
//!   `layout.block_chunks` chunks for rescoring the best `layout.rescore` candidates with the float
//!   query. Codes and blocks list chunks in partition order (`files::partition_order`: each code
//!   file a cluster of balanced k-means, in cluster order within, `files::cluster_order`): a
//!   query's best candidates fall in the few partitions its nearest centroids name, and share few
//!   blocks.
//!
//! [`IndexStore`] holds the manifest and whichever files have been added, each checked against
//! its name's hash and the manifest before it is used; the query pipeline asks it which files a
//! query still needs. The packed form (`packed`) is the manifest and every file in one `.sxt`, in
//! the container of `crate::container` with major 2.
//!
//! From 2.4 the objects are stored in packs (files of about `layout.pack_bytes`, read with HTTP
//! `Range` requests) and the runs are listed by pages of `layout.page_entries` objects, so a host
//! serves few files and the manifest names pages, not every object (`directory`).
//!
//! From 2.5 an index whose pages carry filters or sort values has a facets file (`facets`):
//! each filter's values with their documents and each sort key's values, fetched only by a query
//! that filters, sorts or asks for filter counts.
//!
//! Modules: `manifest` (the manifest and format 2's vocabulary), `store` ([`IndexStore`]), `files`
//! (each file kind from and to bytes), `facets`, `directory` (references, pages and packs), `packed`,
//! `error` ([`IndexError`]), and `writer` (feature `collection`).

pub mod directory;
mod error;
pub mod facets;
pub mod files;
mod manifest;
pub mod packed;
mod store;
#[cfg(all(test, feature = "indexer"))]
pub(crate) mod tests;
#[cfg(feature = "collection")]
pub mod writer;

pub use error::IndexError;
pub use facets::{Facets, ValuePartitions};
pub use files::DocumentInfo;
pub use manifest::{
    check_model, crate_versions, Counts, Fields, FileRun, FormatVersion, IndexFiles, IndexManifest, Layout, ShardRef,
    VectorFiles, BYTE_ROWS_MINOR, CODE_FACTORS_MINOR, FACETS_MINOR, FACET_PARTITIONS_MINOR, GRAPH_MINOR, INDEX_MAJOR,
    INDEX_MINOR, OLDEST_READABLE_MAJOR,
};
pub use store::{IndexStore, Probe};
