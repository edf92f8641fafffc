//! sextant: hybrid (meaning + keyword) retrieval that runs where the reader is.
pub mod analyzer;
pub mod bm25;
pub mod codec;
pub mod embed;
pub mod vector;
