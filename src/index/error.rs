//! [`IndexError`]: why an index (split or packed) or one of its files could not be read, or why
//! a model does not fit it.

use crate::container::ContainerError;
use crate::error_code::ErrorCode;

/// Why an index could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IndexError {
    /// The packed file's container is damaged or of an unsupported version.
    #[error(transparent)]
    Container(#[from] ContainerError),
    /// A split index's manifest has a format major this sextant does not read.
    #[error("index format {major}.{minor} is not supported: this sextant reads format {supported}; rebuild the index with this version of sextant or upgrade sextant")]
    UnsupportedVersion {
        /// Major found.
        major: u16,
        /// Minor found.
        minor: u16,
        /// The major this sextant reads.
        supported: u16,
    },
    /// A section's content is malformed even though its digest matches.
    #[error("index section {section} is malformed: {reason}; build the index again")]
    BadSection {
        /// Section name (`manifest`, `files`, …).
        section: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A format-1 bundle, which this sextant converts but no longer queries.
    #[error("index format {major}.{minor} is no longer searched: convert it with `sextant upgrade OLD.sxt -o NEW.sxt` (no re-embedding), or build it again with this sextant")]
    NeedsUpgrade {
        /// Major found.
        major: u16,
        /// Minor found.
        minor: u16,
    },
    /// A file of a split index is not what its name or the manifest says.
    #[error("index file {file} is corrupt: {reason}; fetch or build the index again")]
    BadFile {
        /// The file's name.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// A file the manifest does not list (a manifest from another deploy?).
    #[error("{file} is not a file of this index; the manifest and the files come from different builds, so reload the page or deploy both together")]
    UnknownFile {
        /// The file's name.
        file: String,
    },
    /// The model given does not match the one the index was built with.
    #[error("{what} does not match the index: it has SHA-256 {actual} but the index was built with {expected}; use the same model files as `sextant build`, or rebuild the index with this model")]
    ModelMismatch {
        /// `model.onnx`, `tokenizer.json` or `model options`.
        what: &'static str,
        /// Digest recorded in the manifest.
        expected: String,
        /// Digest of the file given.
        actual: String,
    },
}

impl IndexError {
    /// A stable, machine-readable code for the error (the `code` of JS errors):
    /// `UNSUPPORTED_VERSION`, `MODEL_MISMATCH` or `CORRUPT_BUNDLE`.
    pub fn code(&self) -> ErrorCode {
        match self {
            IndexError::Container(e) => e.code(),
            IndexError::NeedsUpgrade { .. } | IndexError::UnsupportedVersion { .. } => ErrorCode::UnsupportedVersion,
            IndexError::ModelMismatch { .. } => ErrorCode::ModelMismatch,
            IndexError::BadSection { .. } | IndexError::BadFile { .. } | IndexError::UnknownFile { .. } => {
                ErrorCode::CorruptBundle
            }
        }
    }
}
