//! The index bundle: one file holding a manifest, the documents, the chunks, the BM25 index and
//! the vectors with their HNSW graph. Byte layout: `docs/FORMAT.md`.
//!
//! ```text
//! header   magic "SXTBNDL\0" · major u16 · minor u16 · section count u32 · file length u64
//! table    per section: id u32 · flags u32 · offset u64 · length u64 · SHA-256 [32]
//! digest   SHA-256 of header + table [32]
//! sections each starting at a multiple of 8, zero padding between
//! ```
//!
//! All integers little endian. Readers accept majors `OLDEST_READABLE_MAJOR..=FORMAT_MAJOR`
//! (any minor) and skip sections whose id they do not know. The reader works on `&[u8]`,
//! checks every length and digest, and never panics on any input.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[cfg(feature = "indexer")]
use crate::bm25::{Bm25Index, Bm25Params};
#[cfg(feature = "indexer")]
use crate::chunk::{Chunk, ChunkParams};
use crate::codec::{ByteReader, DecodeError};
use crate::digest::hex;
#[cfg(feature = "indexer")]
use crate::digest::sha256_hex;
use crate::embed::ModelSpec;
use crate::error_code::ErrorCode;
#[cfg(feature = "indexer")]
use crate::vector::{HnswParams, VectorIndex};

/// The 8 bytes every bundle starts with.
pub const MAGIC: [u8; 8] = *b"SXTBNDL\0";
/// The format major this code writes (the packed index of `crate::index`). A reader refuses
/// majors outside its range.
pub const FORMAT_MAJOR: u16 = 2;
/// The format minor this code writes (minors only add sections or manifest fields).
pub const FORMAT_MINOR: u16 = 1;
/// The oldest major this code still reads (format 1, only to convert it: `sextant upgrade`).
pub const OLDEST_READABLE_MAJOR: u16 = 1;
/// The major of the one-piece format-1 bundle ([`Bundle`], [`write_bundle`]).
pub const V1_MAJOR: u16 = 1;

const HEADER_LEN: usize = 8 + 2 + 2 + 4 + 8;
const ENTRY_LEN: usize = 4 + 4 + 8 + 8 + 32;
const MAX_SECTIONS: u32 = 1024;

/// The sections this version knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum SectionId {
    /// JSON [`Manifest`].
    Manifest = 1,
    /// JSON array of [`DocumentInfo`].
    Documents = 2,
    /// JSON array of [`Chunk`].
    Chunks = 3,
    /// Binary BM25 index ([`Bm25Index::to_bytes`]).
    Bm25 = 4,
    /// Binary vectors and HNSW graph ([`VectorIndex::to_bytes`]).
    Vectors = 5,
    /// Format 2: every file of the index (`crate::index::packed`).
    Files = 6,
}

impl SectionId {
    /// All known sections, in file order.
    pub const ALL: [SectionId; 6] = [
        SectionId::Manifest,
        SectionId::Documents,
        SectionId::Chunks,
        SectionId::Bm25,
        SectionId::Vectors,
        SectionId::Files,
    ];

    /// The section's name in messages and `sextant inspect`.
    pub fn name(self) -> &'static str {
        match self {
            SectionId::Manifest => "manifest",
            SectionId::Documents => "documents",
            SectionId::Chunks => "chunks",
            SectionId::Bm25 => "bm25",
            SectionId::Vectors => "vectors",
            SectionId::Files => "files",
        }
    }

    fn from_u32(id: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| *s as u32 == id)
    }
}

/// Name of a section id, known or not.
pub fn section_name(id: u32) -> String {
    SectionId::from_u32(id).map_or_else(|| format!("unknown section {id}"), |s| s.name().to_string())
}

/// Why a bundle could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BundleError {
    /// The file does not start with the magic bytes.
    #[error(
        "not a sextant bundle (the file starts with {found:02x?}, not \"SXTBNDL\\0\"); build one with `sextant build`"
    )]
    BadMagic {
        /// The first bytes found.
        found: Vec<u8>,
    },
    /// The format major is outside what this reader supports.
    #[error("bundle format {major}.{minor} is not supported: this sextant reads majors {oldest} to {newest}; rebuild the bundle with this version of sextant or upgrade sextant")]
    UnsupportedVersion {
        /// Major found.
        major: u16,
        /// Minor found.
        minor: u16,
        /// Oldest major supported.
        oldest: u16,
        /// Newest major supported.
        newest: u16,
    },
    /// The file is shorter than its header or table says.
    #[error("bundle is truncated: {what} needs {needed} bytes but the file has {available}; the download or copy was cut short, fetch the bundle again")]
    Truncated {
        /// What was being read.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// The header or table digest does not match.
    #[error("bundle header is corrupt (its SHA-256 does not match); fetch or build the bundle again")]
    HeaderChecksum,
    /// A section's digest does not match.
    #[error("bundle section {section} is corrupt: SHA-256 {actual} where the table says {expected}; fetch or build the bundle again")]
    ChecksumMismatch {
        /// Section name.
        section: String,
        /// Digest in the table.
        expected: String,
        /// Digest of the bytes.
        actual: String,
    },
    /// The header or table is inconsistent.
    #[error("bundle is corrupt: {reason}; fetch or build the bundle again")]
    Corrupt {
        /// What is wrong.
        reason: String,
    },
    /// A required section is absent.
    #[error("bundle has no {section} section; it was not written by sextant, build it again")]
    MissingSection {
        /// Section name.
        section: &'static str,
    },
    /// A section's content is malformed even though its digest matches.
    #[error("bundle section {section} is malformed: {reason}; build the bundle again")]
    BadSection {
        /// Section name.
        section: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A format-1 bundle, which this sextant converts but no longer queries.
    #[error("bundle format {major}.{minor} is no longer searched: convert it with `sextant upgrade OLD.sxt -o NEW.sxt` (no re-embedding), or build it again with this sextant")]
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
    /// The model given does not match the one the bundle was built with.
    #[error("{what} does not match the bundle: it has SHA-256 {actual} but the bundle was built with {expected}; use the same model files as `sextant build`, or rebuild the bundle with this model")]
    ModelMismatch {
        /// `model.onnx` or `tokenizer.json`.
        what: &'static str,
        /// Digest recorded in the manifest.
        expected: String,
        /// Digest of the file given.
        actual: String,
    },
}

impl BundleError {
    /// A stable, machine-readable code for the error (the `code` of JS errors):
    /// `UNSUPPORTED_VERSION`, `MODEL_MISMATCH` or `CORRUPT_BUNDLE`.
    pub fn code(&self) -> ErrorCode {
        match self {
            BundleError::UnsupportedVersion { .. } | BundleError::NeedsUpgrade { .. } => ErrorCode::UnsupportedVersion,
            BundleError::ModelMismatch { .. } => ErrorCode::ModelMismatch,
            BundleError::BadMagic { .. }
            | BundleError::Truncated { .. }
            | BundleError::HeaderChecksum
            | BundleError::ChecksumMismatch { .. }
            | BundleError::Corrupt { .. }
            | BundleError::MissingSection { .. }
            | BundleError::BadSection { .. }
            | BundleError::BadFile { .. }
            | BundleError::UnknownFile { .. } => ErrorCode::CorruptBundle,
        }
    }
}

/// The format version stored in the manifest (the header is authoritative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormatVersion {
    /// Major.
    pub major: u16,
    /// Minor.
    pub minor: u16,
}

/// Counts recorded at build time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Counts {
    /// Documents indexed.
    pub documents: usize,
    /// Chunks kept.
    pub chunks: usize,
    /// Chunks dropped as duplicates.
    pub duplicates_dropped: usize,
}

/// Everything needed to use a bundle correctly: how it was built and with what.
#[cfg(feature = "indexer")]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version written.
    pub format: FormatVersion,
    /// `sextant <version>`.
    pub generator: String,
    /// Exact versions of the crates whose output is in the bundle.
    pub crates: BTreeMap<String, String>,
    /// The embedding model.
    pub model: ModelSpec,
    /// The keyword analyzer's name.
    pub analyzer: String,
    /// Chunking parameters.
    pub chunking: ChunkParams,
    /// BM25 parameters (defaults for queries).
    pub bm25: Bm25Params,
    /// HNSW parameters, seed included.
    pub hnsw: HnswParams,
    /// Counts.
    pub counts: Counts,
}

/// Versions of the crates that shape an index's bytes (pinned with `=` in Cargo.toml; a test
/// checks these against Cargo.lock): the tokenizer and the model runner make the vectors and the
/// chunk boundaries. (Format 1 also recorded instant-distance and bincode, its graph's encoders.)
pub fn crate_versions() -> BTreeMap<String, String> {
    [
        ("sextant", env!("CARGO_PKG_VERSION")),
        ("tokenizers", "0.23.2"),
        ("tract-onnx", "0.23.9"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A document's record in the bundle (its text lives in the chunks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentInfo {
    /// Stable id.
    pub id: String,
    /// Source path.
    pub source: String,
    /// URL, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Title.
    pub title: String,
    /// Metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// A section as listed in the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SectionEntry {
    /// Section id.
    pub id: u32,
    /// Section name.
    pub name: String,
    /// Offset from the start of the file.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// SHA-256, lower-case hex.
    pub sha256: String,
}

/// The sections of a bundle, located and verified, not yet decoded.
#[derive(Debug, Clone)]
pub struct RawBundle<'a> {
    /// Format major.
    pub major: u16,
    /// Format minor.
    pub minor: u16,
    /// The table.
    pub sections: Vec<SectionEntry>,
    bodies: BTreeMap<u32, &'a [u8]>,
}

impl<'a> RawBundle<'a> {
    /// Checks magic, version, table, lengths and every section's SHA-256.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BundleError> {
        let available = bytes.len() as u64;
        let truncated = |what: &str, needed: u64| BundleError::Truncated {
            what: what.to_string(),
            needed,
            available,
        };
        let magic = bytes.get(..MAGIC.len()).ok_or_else(|| {
            if MAGIC.starts_with(bytes) {
                truncated("the header", HEADER_LEN as u64)
            } else {
                BundleError::BadMagic { found: bytes.to_vec() }
            }
        })?;
        if magic != MAGIC {
            return Err(BundleError::BadMagic { found: magic.to_vec() });
        }
        let header = bytes
            .get(..HEADER_LEN)
            .ok_or_else(|| truncated("the header", HEADER_LEN as u64))?;
        let mut r = ByteReader::new(header);
        let _ = r.take(MAGIC.len());
        let major = r.u16().map_err(|_| truncated("the header", HEADER_LEN as u64))?;
        let minor = r.u16().map_err(|_| truncated("the header", HEADER_LEN as u64))?;
        if !(OLDEST_READABLE_MAJOR..=FORMAT_MAJOR).contains(&major) {
            return Err(BundleError::UnsupportedVersion {
                major,
                minor,
                oldest: OLDEST_READABLE_MAJOR,
                newest: FORMAT_MAJOR,
            });
        }
        let count = r.u32().map_err(|_| truncated("the header", HEADER_LEN as u64))?;
        let file_length = r.u64().map_err(|_| truncated("the header", HEADER_LEN as u64))?;
        if count > MAX_SECTIONS {
            return Err(BundleError::Corrupt {
                reason: format!("the header lists {count} sections (at most {MAX_SECTIONS})"),
            });
        }
        let table_end = HEADER_LEN + count as usize * ENTRY_LEN;
        let digest_end = table_end + 32;
        let head = bytes
            .get(..digest_end)
            .ok_or_else(|| truncated("the section table", digest_end as u64))?;
        let (table_bytes, stored_digest) = head.split_at(table_end);
        if Sha256::digest(table_bytes).as_slice() != stored_digest {
            return Err(BundleError::HeaderChecksum);
        }
        if available < file_length {
            return Err(truncated("the whole file", file_length));
        }
        if available != file_length {
            return Err(BundleError::Corrupt {
                reason: format!("the header says the file has {file_length} bytes but it has {available}"),
            });
        }
        let mut r = ByteReader::new(table_bytes.get(HEADER_LEN..).unwrap_or(&[]));
        let mut sections = Vec::with_capacity(count as usize);
        let mut bodies = BTreeMap::new();
        let mut previous_end = digest_end as u64;
        let table_error = |_: DecodeError| BundleError::Corrupt {
            reason: "the section table is short".into(),
        };
        for _ in 0..count {
            let id = r.u32().map_err(table_error)?;
            let _flags = r.u32().map_err(table_error)?;
            let offset = r.u64().map_err(table_error)?;
            let length = r.u64().map_err(table_error)?;
            let digest = r.take(32).map_err(table_error)?;
            let name = section_name(id);
            let end = offset.checked_add(length).ok_or_else(|| BundleError::Corrupt {
                reason: format!("section {name} has an impossible length"),
            })?;
            if offset < previous_end {
                return Err(BundleError::Corrupt {
                    reason: format!("section {name} overlaps the table or the section before it"),
                });
            }
            let aligned = align8(previous_end as usize) as u64;
            if offset != aligned {
                return Err(BundleError::Corrupt {
                    reason: format!(
                        "section {name} starts at byte {offset}, not at {aligned} (the next multiple of 8 after what precedes it)"
                    ),
                });
            }
            let padding = bytes.get(previous_end as usize..offset as usize).unwrap_or(&[]);
            if padding.iter().any(|&b| b != 0) {
                return Err(BundleError::Corrupt {
                    reason: format!("the padding before section {name} is not zero"),
                });
            }
            if end > available {
                return Err(truncated(&format!("section {name}"), end));
            }
            if bodies.contains_key(&id) {
                return Err(BundleError::Corrupt {
                    reason: format!("section {name} appears twice"),
                });
            }
            let body = bytes
                .get(offset as usize..end as usize)
                .ok_or_else(|| truncated(&format!("section {name}"), end))?;
            let actual = Sha256::digest(body);
            if actual.as_slice() != digest {
                return Err(BundleError::ChecksumMismatch {
                    section: name,
                    expected: hex(digest),
                    actual: hex(&actual),
                });
            }
            bodies.insert(id, body);
            sections.push(SectionEntry {
                id,
                name,
                offset,
                length,
                sha256: hex(digest),
            });
            previous_end = end;
        }
        if previous_end != file_length {
            return Err(BundleError::Corrupt {
                reason: format!(
                    "{} bytes follow the last section",
                    file_length.saturating_sub(previous_end)
                ),
            });
        }
        Ok(Self {
            major,
            minor,
            sections,
            bodies,
        })
    }

    /// The verified bytes of a section.
    pub fn section(&self, id: SectionId) -> Result<&'a [u8], BundleError> {
        self.bodies
            .get(&(id as u32))
            .copied()
            .ok_or(BundleError::MissingSection { section: id.name() })
    }

    #[cfg(feature = "indexer")]
    fn json<T: serde::de::DeserializeOwned>(&self, id: SectionId) -> Result<T, BundleError> {
        serde_json::from_slice(self.section(id)?).map_err(|e| BundleError::BadSection {
            section: id.name(),
            reason: e.to_string(),
        })
    }

    /// The decoded format-1 manifest.
    #[cfg(feature = "indexer")]
    pub fn manifest(&self) -> Result<Manifest, BundleError> {
        self.json(SectionId::Manifest)
    }
}

/// A fully decoded and cross-checked bundle.
#[cfg(feature = "indexer")]
#[derive(Debug)]
pub struct Bundle {
    /// The manifest.
    pub manifest: Manifest,
    /// The documents.
    pub documents: Vec<DocumentInfo>,
    /// The chunks, numbered by position.
    pub chunks: Vec<Chunk>,
    /// The keyword index over the chunks.
    pub bm25: Bm25Index,
    /// The vectors of the chunks.
    pub vectors: VectorIndex,
    /// The section table.
    pub sections: Vec<SectionEntry>,
}

#[cfg(feature = "indexer")]
impl Bundle {
    /// Reads and validates a bundle: container checks, then each section decoded, then the
    /// sections checked against each other (counts, dimensions, document numbers).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, BundleError> {
        let raw = RawBundle::parse(bytes)?;
        if raw.major != V1_MAJOR {
            return Err(BundleError::UnsupportedVersion {
                major: raw.major,
                minor: raw.minor,
                oldest: V1_MAJOR,
                newest: V1_MAJOR,
            });
        }
        let manifest = raw.manifest()?;
        // Format 1 was only ever written with the analyzer that keeps identifiers whole.
        if manifest.analyzer != crate::analyzer::Analyzer::WHOLE_WORDS {
            return Err(BundleError::BadSection {
                section: "manifest",
                reason: format!(
                    "keyword analyzer {:?} is not one this sextant has ({:?}); rebuild the bundle",
                    manifest.analyzer,
                    crate::analyzer::Analyzer::WHOLE_WORDS
                ),
            });
        }
        let documents: Vec<DocumentInfo> = raw.json(SectionId::Documents)?;
        let chunks: Vec<Chunk> = raw.json(SectionId::Chunks)?;
        let bad = |section: &'static str| {
            move |e: DecodeError| BundleError::BadSection {
                section,
                reason: e.to_string(),
            }
        };
        let bm25 = Bm25Index::from_bytes(raw.section(SectionId::Bm25)?).map_err(bad("bm25"))?;
        let vectors = VectorIndex::from_bytes(raw.section(SectionId::Vectors)?).map_err(bad("vectors"))?;
        let inconsistent = |reason: String| BundleError::BadSection {
            section: "chunks",
            reason,
        };
        if bm25.doc_count() != chunks.len() || vectors.len() != chunks.len() {
            return Err(inconsistent(format!(
                "{} chunks but the BM25 index has {} and the vector index {}",
                chunks.len(),
                bm25.doc_count(),
                vectors.len()
            )));
        }
        if vectors.dims() != manifest.model.dims {
            return Err(BundleError::BadSection {
                section: "vectors",
                reason: format!(
                    "vectors have {} dimensions but the manifest's model has {}",
                    vectors.dims(),
                    manifest.model.dims
                ),
            });
        }
        if let Some(c) = chunks.iter().find(|c| c.doc as usize >= documents.len()) {
            return Err(inconsistent(format!(
                "chunk {} points at document {} of {}",
                c.id,
                c.doc,
                documents.len()
            )));
        }
        if manifest.counts.documents != documents.len() || manifest.counts.chunks != chunks.len() {
            return Err(BundleError::BadSection {
                section: "manifest",
                reason: format!(
                    "it counts {} documents and {} chunks but the bundle holds {} and {}",
                    manifest.counts.documents,
                    manifest.counts.chunks,
                    documents.len(),
                    chunks.len()
                ),
            });
        }
        if let Some(c) = chunks.iter().find(|c| sha256_hex(c.text.as_bytes()) != c.content_hash) {
            return Err(inconsistent(format!(
                "chunk {}'s content_hash is not the SHA-256 of its text",
                c.id
            )));
        }
        Ok(Self {
            manifest,
            documents,
            chunks,
            bm25,
            vectors,
            sections: raw.sections,
        })
    }

    /// Fails unless the model and tokenizer digests are those in the manifest.
    pub fn check_model(&self, model_sha256: &str, tokenizer_sha256: &str) -> Result<(), BundleError> {
        check_model(&self.manifest.model, model_sha256, tokenizer_sha256)
    }
}

/// Fails unless the model and tokenizer digests are those `model` records.
pub fn check_model(model: &ModelSpec, model_sha256: &str, tokenizer_sha256: &str) -> Result<(), BundleError> {
    if model.sha256 != model_sha256 {
        return Err(BundleError::ModelMismatch {
            what: "model.onnx",
            expected: model.sha256.clone(),
            actual: model_sha256.to_string(),
        });
    }
    if model.tokenizer_sha256 != tokenizer_sha256 {
        return Err(BundleError::ModelMismatch {
            what: "tokenizer.json",
            expected: model.tokenizer_sha256.clone(),
            actual: tokenizer_sha256.to_string(),
        });
    }
    Ok(())
}

/// Writes the container around already-encoded sections (id, bytes), in the order given, with
/// the format version of this code.
pub fn write_container(sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
    write_container_version(FORMAT_MAJOR, FORMAT_MINOR, sections)
}

/// Writes the container with a given format version.
pub fn write_container_version(major: u16, minor: u16, sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let table_end = HEADER_LEN + sections.len() * ENTRY_LEN;
    let mut offset = align8(table_end + 32);
    let mut entries = Vec::with_capacity(sections.len());
    for (id, body) in sections {
        entries.push((*id, offset, body.len(), Sha256::digest(body)));
        offset = align8(offset + body.len());
    }
    let file_length = entries.last().map_or(table_end + 32, |(_, o, l, _)| o + l);
    let mut out = Vec::with_capacity(file_length);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&major.to_le_bytes());
    out.extend_from_slice(&minor.to_le_bytes());
    out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    out.extend_from_slice(&(file_length as u64).to_le_bytes());
    for (id, offset, length, digest) in &entries {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&(*offset as u64).to_le_bytes());
        out.extend_from_slice(&(*length as u64).to_le_bytes());
        out.extend_from_slice(digest);
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    for ((_, offset, _, _), (_, body)) in entries.iter().zip(sections) {
        out.resize(*offset, 0);
        out.extend_from_slice(body);
    }
    out
}

fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// Encodes a whole bundle.
#[cfg(feature = "indexer")]
pub fn write_bundle(
    manifest: &Manifest,
    documents: &[DocumentInfo],
    chunks: &[Chunk],
    bm25: &Bm25Index,
    vectors: &VectorIndex,
) -> Result<Vec<u8>, BundleError> {
    let json = |section: &'static str, v: &dyn erased::Json| {
        v.to_json()
            .map_err(|reason| BundleError::BadSection { section, reason })
    };
    let vector_bytes = vectors.to_bytes().map_err(|reason| BundleError::BadSection {
        section: "vectors",
        reason,
    })?;
    Ok(write_container_version(
        V1_MAJOR,
        0,
        &[
            (SectionId::Manifest as u32, json("manifest", manifest)?),
            (SectionId::Documents as u32, json("documents", &documents)?),
            (SectionId::Chunks as u32, json("chunks", &chunks)?),
            (SectionId::Bm25 as u32, bm25.to_bytes()),
            (SectionId::Vectors as u32, vector_bytes),
        ],
    ))
}

#[cfg(feature = "indexer")]
mod erased {
    /// Object-safe JSON encoding, so one closure serves several section types.
    pub trait Json {
        fn to_json(&self) -> Result<Vec<u8>, String>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> Result<Vec<u8>, String> {
            serde_json::to_vec(self).map_err(|e| e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_round_trips_and_skips_unknown_sections() {
        let bytes = write_container(&[(1, b"{}".to_vec()), (99, vec![1, 2, 3]), (4, vec![])]);
        assert_eq!(&bytes[..8], &MAGIC);
        let raw = RawBundle::parse(&bytes).unwrap();
        assert_eq!(raw.sections.len(), 3);
        assert_eq!(raw.section(SectionId::Manifest).unwrap(), b"{}");
        assert_eq!(raw.section(SectionId::Bm25).unwrap(), b"");
        assert!(matches!(
            raw.section(SectionId::Chunks),
            Err(BundleError::MissingSection { section: "chunks" })
        ));
        assert!(raw.sections.iter().all(|s| s.offset % 8 == 0));
    }

    #[test]
    fn typed_errors_for_each_kind_of_damage() {
        let good = write_container(&[(1, b"{\"a\":1}".to_vec()), (2, b"[]".to_vec())]);
        assert!(matches!(
            RawBundle::parse(b"PK\x03\x04zipzipzip"),
            Err(BundleError::BadMagic { .. })
        ));
        assert!(matches!(
            RawBundle::parse(&good[..5]),
            Err(BundleError::Truncated { .. })
        ));
        assert!(matches!(
            RawBundle::parse(&good[..good.len() - 1]),
            Err(BundleError::Truncated { .. })
        ));

        let mut newer = good.clone();
        newer[8..10].copy_from_slice(&(FORMAT_MAJOR + 1).to_le_bytes());
        match RawBundle::parse(&newer) {
            Err(BundleError::UnsupportedVersion {
                major, oldest, newest, ..
            }) => {
                assert_eq!(
                    (major, oldest, newest),
                    (FORMAT_MAJOR + 1, OLDEST_READABLE_MAJOR, FORMAT_MAJOR)
                );
            }
            other => panic!("{other:?}"),
        }
        let message = RawBundle::parse(&newer).unwrap_err().to_string();
        assert!(message.contains("reads majors 1 to 2"), "{message}");

        let mut body = good.clone();
        let last = body.len() - 1;
        body[last] ^= 1;
        assert!(matches!(
            RawBundle::parse(&body),
            Err(BundleError::ChecksumMismatch { .. })
        ));

        let mut table = good.clone();
        table[HEADER_LEN + 9] ^= 1;
        assert_eq!(RawBundle::parse(&table).unwrap_err(), BundleError::HeaderChecksum);

        let mut longer = good.clone();
        longer.push(0);
        assert!(matches!(RawBundle::parse(&longer), Err(BundleError::Corrupt { .. })));
    }

    /// Rewrites the table of a container (offsets and file length) and reseals its digest.
    fn reseal(bytes: &mut [u8]) {
        let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let table_end = HEADER_LEN + count * ENTRY_LEN;
        let digest = Sha256::digest(&bytes[..table_end]);
        bytes[table_end..table_end + 32].copy_from_slice(&digest);
    }

    #[test]
    fn padding_placement_and_trailing_bytes_are_checked() {
        let good = write_container(&[(1, b"{\"a\":1}".to_vec()), (2, b"[]".to_vec())]);
        let first = RawBundle::parse(&good).unwrap().sections[0].clone();
        // Garbage in the zero padding after the first section (7 bytes long, padded to 8).
        let mut dirty = good.clone();
        dirty[(first.offset + first.length) as usize] = 0xAA;
        let e = RawBundle::parse(&dirty).unwrap_err();
        assert!(
            e.to_string().contains("padding before section documents is not zero"),
            "{e}"
        );
        // A section moved 8 bytes later (the file and table grown to match, resealed).
        let mut moved = good.clone();
        let second_offset = HEADER_LEN + ENTRY_LEN + 8;
        let old = u64::from_le_bytes(moved[second_offset..second_offset + 8].try_into().unwrap());
        moved[second_offset..second_offset + 8].copy_from_slice(&(old + 8).to_le_bytes());
        let body = moved.split_off(old as usize);
        moved.extend_from_slice(&[0; 8]);
        moved.extend_from_slice(&body);
        let len = moved.len() as u64;
        moved[16..24].copy_from_slice(&len.to_le_bytes());
        reseal(&mut moved);
        let e = RawBundle::parse(&moved).unwrap_err();
        assert!(e.to_string().contains("not at"), "{e}");
        // Bytes after the last section, counted in the header's length.
        let mut trailing = good.clone();
        trailing.extend_from_slice(&[0; 8]);
        let len = trailing.len() as u64;
        trailing[16..24].copy_from_slice(&len.to_le_bytes());
        reseal(&mut trailing);
        let e = RawBundle::parse(&trailing).unwrap_err();
        assert!(e.to_string().contains("8 bytes follow the last section"), "{e}");
    }

    #[test]
    fn crate_versions_match_the_lock_file() {
        let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).unwrap();
        for (name, version) in crate_versions() {
            if name == "sextant" {
                continue;
            }
            let entry = format!("name = \"{name}\"\nversion = \"{version}\"");
            assert!(lock.contains(&entry), "Cargo.lock does not pin {name} {version}");
        }
    }
}
