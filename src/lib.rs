//! sextant: hybrid (meaning + keyword) retrieval that runs where the reader is.
pub mod embed;
