//! The container of a packed index: magic bytes, a format version, a table of sections with
//! their SHA-256 digests, and the sections. Both index formats use it: format 2's packed `.sxt`
//! (`crate::index::packed`) and format 1's one-piece bundle (`crate::format1`, read only to
//! upgrade it). Byte layout: `docs/FORMAT.md`.
//!
//! ```text
//! header   magic "SXTBNDL\0" · major u16 · minor u16 · section count u32 · file length u64
//! table    per section: id u32 · flags u32 · offset u64 · length u64 · SHA-256 [32]
//! digest   SHA-256 of header + table [32]
//! sections each starting at a multiple of 8, zero padding between
//! ```
//!
//! All integers little endian. A reader names the majors it accepts (any minor) and skips
//! sections whose id it does not know. [`Container::parse`] works on `&[u8]`, checks every length
//! and digest, and never panics on any input.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::codec::{ByteReader, DecodeError};
use crate::digest::hex;
use crate::error_code::ErrorCode;

/// The 8 bytes every packed index starts with.
pub const MAGIC: [u8; 8] = *b"SXTBNDL\0";

const HEADER_LEN: usize = 8 + 2 + 2 + 4 + 8;
const ENTRY_LEN: usize = 4 + 4 + 8 + 8 + 32;
const MAX_SECTIONS: u32 = 1024;

/// The sections either format has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum SectionId {
    /// The manifest, JSON (both formats).
    Manifest = 1,
    /// Format 1: the documents, JSON.
    Documents = 2,
    /// Format 1: the chunks, JSON.
    Chunks = 3,
    /// Format 1: the BM25 index.
    Bm25 = 4,
    /// Format 1: the vectors and their HNSW graph.
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

/// Why a container could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContainerError {
    /// The file does not start with the magic bytes.
    #[error(
        "not a sextant index (the file starts with {found:02x?}, not \"SXTBNDL\\0\"); build one with `sextant build`"
    )]
    BadMagic {
        /// The first bytes found.
        found: Vec<u8>,
    },
    /// The format major is outside what this reader supports.
    #[error("index format {major}.{minor} is not supported: this sextant reads majors {oldest} to {newest}; rebuild the index with this version of sextant or upgrade sextant")]
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
    #[error("index is truncated: {what} needs {needed} bytes but the file has {available}; the download or copy was cut short, fetch the index again")]
    Truncated {
        /// What was being read.
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes available.
        available: u64,
    },
    /// The header or table digest does not match.
    #[error("index header is corrupt (its SHA-256 does not match); fetch or build the index again")]
    HeaderChecksum,
    /// A section's digest does not match.
    #[error("index section {section} is corrupt: SHA-256 {actual} where the table says {expected}; fetch or build the index again")]
    ChecksumMismatch {
        /// Section name.
        section: String,
        /// Digest in the table.
        expected: String,
        /// Digest of the bytes.
        actual: String,
    },
    /// The header or table is inconsistent.
    #[error("index is corrupt: {reason}; fetch or build the index again")]
    Corrupt {
        /// What is wrong.
        reason: String,
    },
    /// A required section is absent.
    #[error("index has no {section} section; it was not written by sextant, build it again")]
    MissingSection {
        /// Section name.
        section: &'static str,
    },
}

impl ContainerError {
    /// `UNSUPPORTED_VERSION` for a major outside the reader's range, else `CORRUPT_BUNDLE`.
    pub fn code(&self) -> ErrorCode {
        match self {
            ContainerError::UnsupportedVersion { .. } => ErrorCode::UnsupportedVersion,
            _ => ErrorCode::CorruptBundle,
        }
    }
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

/// The sections of a container, located and verified, not yet decoded.
#[derive(Debug, Clone)]
pub struct Container<'a> {
    /// Format major.
    pub major: u16,
    /// Format minor.
    pub minor: u16,
    /// The table.
    pub sections: Vec<SectionEntry>,
    bodies: BTreeMap<u32, &'a [u8]>,
}

impl<'a> Container<'a> {
    /// Checks magic, version (a major in `readable`), table, lengths and every section's SHA-256.
    pub fn parse(bytes: &'a [u8], readable: RangeInclusive<u16>) -> Result<Self, ContainerError> {
        let available = bytes.len() as u64;
        let truncated = |what: &str, needed: u64| ContainerError::Truncated {
            what: what.to_string(),
            needed,
            available,
        };
        let magic = bytes.get(..MAGIC.len()).ok_or_else(|| {
            if MAGIC.starts_with(bytes) {
                truncated("the header", HEADER_LEN as u64)
            } else {
                ContainerError::BadMagic { found: bytes.to_vec() }
            }
        })?;
        if magic != MAGIC {
            return Err(ContainerError::BadMagic { found: magic.to_vec() });
        }
        let header = bytes
            .get(..HEADER_LEN)
            .ok_or_else(|| truncated("the header", HEADER_LEN as u64))?;
        let mut r = ByteReader::new(header);
        let _ = r.take(MAGIC.len());
        let major = r.u16().map_err(|_| truncated("the header", HEADER_LEN as u64))?;
        let minor = r.u16().map_err(|_| truncated("the header", HEADER_LEN as u64))?;
        if !readable.contains(&major) {
            return Err(ContainerError::UnsupportedVersion {
                major,
                minor,
                oldest: *readable.start(),
                newest: *readable.end(),
            });
        }
        let count = r.u32().map_err(|_| truncated("the header", HEADER_LEN as u64))?;
        let file_length = r.u64().map_err(|_| truncated("the header", HEADER_LEN as u64))?;
        if count > MAX_SECTIONS {
            return Err(ContainerError::Corrupt {
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
            return Err(ContainerError::HeaderChecksum);
        }
        if available < file_length {
            return Err(truncated("the whole file", file_length));
        }
        if available != file_length {
            return Err(ContainerError::Corrupt {
                reason: format!("the header says the file has {file_length} bytes but it has {available}"),
            });
        }
        let mut r = ByteReader::new(table_bytes.get(HEADER_LEN..).unwrap_or(&[]));
        let mut sections = Vec::with_capacity(count as usize);
        let mut bodies = BTreeMap::new();
        let mut previous_end = digest_end as u64;
        let table_error = |_: DecodeError| ContainerError::Corrupt {
            reason: "the section table is short".into(),
        };
        for _ in 0..count {
            let id = r.u32().map_err(table_error)?;
            let _flags = r.u32().map_err(table_error)?;
            let offset = r.u64().map_err(table_error)?;
            let length = r.u64().map_err(table_error)?;
            let digest = r.take(32).map_err(table_error)?;
            let name = section_name(id);
            let end = offset.checked_add(length).ok_or_else(|| ContainerError::Corrupt {
                reason: format!("section {name} has an impossible length"),
            })?;
            if offset < previous_end {
                return Err(ContainerError::Corrupt {
                    reason: format!("section {name} overlaps the table or the section before it"),
                });
            }
            let aligned = align8(previous_end as usize) as u64;
            if offset != aligned {
                return Err(ContainerError::Corrupt {
                    reason: format!(
                        "section {name} starts at byte {offset}, not at {aligned} (the next multiple of 8 after what precedes it)"
                    ),
                });
            }
            let padding = bytes.get(previous_end as usize..offset as usize).unwrap_or(&[]);
            if padding.iter().any(|&b| b != 0) {
                return Err(ContainerError::Corrupt {
                    reason: format!("the padding before section {name} is not zero"),
                });
            }
            if end > available {
                return Err(truncated(&format!("section {name}"), end));
            }
            if bodies.contains_key(&id) {
                return Err(ContainerError::Corrupt {
                    reason: format!("section {name} appears twice"),
                });
            }
            let body = bytes
                .get(offset as usize..end as usize)
                .ok_or_else(|| truncated(&format!("section {name}"), end))?;
            let actual = Sha256::digest(body);
            if actual.as_slice() != digest {
                return Err(ContainerError::ChecksumMismatch {
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
            return Err(ContainerError::Corrupt {
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
    pub fn section(&self, id: SectionId) -> Result<&'a [u8], ContainerError> {
        self.bodies
            .get(&(id as u32))
            .copied()
            .ok_or(ContainerError::MissingSection { section: id.name() })
    }
}

/// Writes a container around already-encoded sections (id, bytes), in the order given.
pub fn write(major: u16, minor: u16, sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;

    const READABLE: RangeInclusive<u16> = 1..=2;

    fn write2(sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
        write(2, 1, sections)
    }

    fn parse(bytes: &[u8]) -> Result<Container<'_>, ContainerError> {
        Container::parse(bytes, READABLE)
    }

    #[test]
    fn container_round_trips_and_skips_unknown_sections() {
        let bytes = write2(&[(1, b"{}".to_vec()), (99, vec![1, 2, 3]), (4, vec![])]);
        assert_eq!(&bytes[..8], &MAGIC);
        let raw = parse(&bytes).unwrap();
        assert_eq!(raw.sections.len(), 3);
        assert_eq!(raw.section(SectionId::Manifest).unwrap(), b"{}");
        assert_eq!(raw.section(SectionId::Bm25).unwrap(), b"");
        assert!(matches!(
            raw.section(SectionId::Chunks),
            Err(ContainerError::MissingSection { section: "chunks" })
        ));
        assert!(raw.sections.iter().all(|s| s.offset % 8 == 0));
    }

    #[test]
    fn typed_errors_for_each_kind_of_damage() {
        let good = write2(&[(1, b"{\"a\":1}".to_vec()), (2, b"[]".to_vec())]);
        assert!(matches!(
            parse(b"PK\x03\x04zipzipzip"),
            Err(ContainerError::BadMagic { .. })
        ));
        assert!(matches!(parse(&good[..5]), Err(ContainerError::Truncated { .. })));
        assert!(matches!(
            parse(&good[..good.len() - 1]),
            Err(ContainerError::Truncated { .. })
        ));

        let mut newer = good.clone();
        newer[8..10].copy_from_slice(&3u16.to_le_bytes());
        match parse(&newer) {
            Err(ContainerError::UnsupportedVersion {
                major, oldest, newest, ..
            }) => {
                assert_eq!((major, oldest, newest), (3, 1, 2));
            }
            other => panic!("{other:?}"),
        }
        let message = parse(&newer).unwrap_err().to_string();
        assert!(message.contains("reads majors 1 to 2"), "{message}");

        let mut body = good.clone();
        let last = body.len() - 1;
        body[last] ^= 1;
        assert!(matches!(parse(&body), Err(ContainerError::ChecksumMismatch { .. })));

        let mut table = good.clone();
        table[HEADER_LEN + 9] ^= 1;
        assert_eq!(parse(&table).unwrap_err(), ContainerError::HeaderChecksum);

        let mut longer = good.clone();
        longer.push(0);
        assert!(matches!(parse(&longer), Err(ContainerError::Corrupt { .. })));
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
        let good = write2(&[(1, b"{\"a\":1}".to_vec()), (2, b"[]".to_vec())]);
        let first = parse(&good).unwrap().sections[0].clone();
        // Garbage in the zero padding after the first section (7 bytes long, padded to 8).
        let mut dirty = good.clone();
        dirty[(first.offset + first.length) as usize] = 0xAA;
        let e = parse(&dirty).unwrap_err();
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
        let e = parse(&moved).unwrap_err();
        assert!(e.to_string().contains("not at"), "{e}");
        // Bytes after the last section, counted in the header's length.
        let mut trailing = good.clone();
        trailing.extend_from_slice(&[0; 8]);
        let len = trailing.len() as u64;
        trailing[16..24].copy_from_slice(&len.to_le_bytes());
        reseal(&mut trailing);
        let e = parse(&trailing).unwrap_err();
        assert!(e.to_string().contains("8 bytes follow the last section"), "{e}");
    }
}
