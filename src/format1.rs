//! Format 1, read only to convert it (`sextant upgrade`, [`crate::indexer::upgrade`]): one
//! bundle in the container of `crate::container` with major 1 and five sections — the manifest,
//! the documents and the chunks (JSON), a BM25 index in one piece and the chunks' f32 vectors
//! inside an HNSW graph (`instant-distance` 0.6.1 serialised by bincode 1.3.3). Nothing is
//! written in this format any more and nothing live imports this module; it decodes, checks
//! everything against everything, and hands the documents, chunks and vectors over.
//!
//! The graph is not rebuilt or searched: its bincode layout is walked here (fixed-width little
//! endian integers, `u64` lengths) and every part of it checked, so the old crates are no longer
//! dependencies. Layout: `docs/FORMAT.md` ("Format 1").

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::bm25::{Bm25Params, TermTable};
use crate::chunk::{Chunk, ChunkParams};
use crate::codec::{ByteReader, DecodeError};
use crate::container::{Container, SectionEntry, SectionId};
use crate::digest::sha256_hex;
use crate::embed::ModelSpec;
use crate::index::{Counts, DocumentInfo, FormatVersion, IndexError};

/// The major of the one-piece format-1 bundle.
pub const V1_MAJOR: u16 = 1;

/// The graph degree `M` of `instant-distance` 0.6.1 (layer 0 keeps `2·M` neighbours).
const M: usize = 32;
/// A missing neighbour in the graph.
const NO_NEIGHBOUR: u32 = u32::MAX;

/// Format 1's HNSW parameters, as its manifest records them (read, not used).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HnswParams {
    /// Candidates kept while inserting a point.
    pub ef_construction: usize,
    /// Candidates kept while searching.
    pub ef_search: usize,
    /// Seed of the level generator.
    pub seed: u64,
    /// Below this many vectors queries scanned them all.
    pub exact_below: usize,
}

/// Format 1's manifest.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// HNSW parameters, seed included.
    pub hnsw: HnswParams,
    /// Counts.
    pub counts: Counts,
}

/// A format-1 bundle, decoded and cross-checked.
#[derive(Debug)]
pub struct Bundle {
    /// The manifest.
    pub manifest: Manifest,
    /// The documents.
    pub documents: Vec<DocumentInfo>,
    /// The chunks, numbered by position.
    pub chunks: Vec<Chunk>,
    /// Each chunk's vector, by chunk number.
    pub vectors: Vec<Vec<f32>>,
    /// The section table.
    pub sections: Vec<SectionEntry>,
}

fn json<T: serde::de::DeserializeOwned>(raw: &Container<'_>, id: SectionId) -> Result<T, IndexError> {
    serde_json::from_slice(raw.section(id)?).map_err(|e| IndexError::BadSection {
        section: id.name(),
        reason: e.to_string(),
    })
}

impl Bundle {
    /// Reads and validates a bundle: container checks, then each section decoded, then the
    /// sections checked against each other (counts, dimensions, document numbers, digests).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, IndexError> {
        let raw = Container::parse(bytes, V1_MAJOR..=V1_MAJOR)?;
        let manifest: Manifest = json(&raw, SectionId::Manifest)?;
        // Format 1 was only ever written with the analyzer that keeps identifiers whole.
        if manifest.analyzer != crate::analyzer::Analyzer::WHOLE_WORDS {
            return Err(IndexError::BadSection {
                section: "manifest",
                reason: format!(
                    "keyword analyzer {:?} is not one this sextant has ({:?}); rebuild the bundle",
                    manifest.analyzer,
                    crate::analyzer::Analyzer::WHOLE_WORDS
                ),
            });
        }
        let documents: Vec<DocumentInfo> = json(&raw, SectionId::Documents)?;
        let chunks: Vec<Chunk> = json(&raw, SectionId::Chunks)?;
        let bad = |section: &'static str| {
            move |e: DecodeError| IndexError::BadSection {
                section,
                reason: e.to_string(),
            }
        };
        let bm25_chunks = read_bm25(raw.section(SectionId::Bm25)?).map_err(bad("bm25"))?;
        let (dims, vectors) = read_vectors(raw.section(SectionId::Vectors)?).map_err(bad("vectors"))?;
        let inconsistent = |reason: String| IndexError::BadSection {
            section: "chunks",
            reason,
        };
        if bm25_chunks != chunks.len() || vectors.len() != chunks.len() {
            return Err(inconsistent(format!(
                "{} chunks but the BM25 index has {} and the vector index {}",
                chunks.len(),
                bm25_chunks,
                vectors.len()
            )));
        }
        if dims != manifest.model.dims {
            return Err(IndexError::BadSection {
                section: "vectors",
                reason: format!(
                    "vectors have {dims} dimensions but the manifest's model has {}",
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
            return Err(IndexError::BadSection {
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
            vectors,
            sections: raw.sections,
        })
    }
}

/// The "bm25" section: the chunk lengths (varints) and the term table, validated whole; returns
/// the chunk count.
fn read_bm25(bytes: &[u8]) -> Result<usize, DecodeError> {
    let mut r = ByteReader::new(bytes);
    let chunks = r.count("bm25 chunk count", 1)?;
    for _ in 0..chunks {
        r.varint_u32("bm25 chunk length")?;
    }
    TermTable::read(&mut r, chunks)?;
    r.finish("bm25 trailing bytes")?;
    Ok(chunks)
}

/// The "vectors" section: dimensions (u32), point count (u32), then bincode's encoding of
/// `HnswMap<Vector, u32>` — `ef_search`, the points (each `dims` finite f32), layer 0 (`2·M`
/// neighbour ids a point, absent or below the count), the upper layers (shrinking going up,
/// linking only within themselves), and the values: the chunk of each point, a permutation of
/// `0..count`. Nothing may be left over. Returns the dimensions and each chunk's vector.
fn read_vectors(bytes: &[u8]) -> Result<(usize, Vec<Vec<f32>>), DecodeError> {
    let mut r = ByteReader::new(bytes);
    let dims = r.u32()? as usize;
    let len = r.u32()? as usize;
    let invalid = |what, offset| DecodeError::Invalid { what, offset };
    let offset = r.offset();
    let ef_search = r.u64()?;
    if ef_search == 0 || ef_search > 100_000 {
        return Err(invalid("hnsw ef_search", offset));
    }
    let expect_len = |r: &mut ByteReader, what: &'static str, expected: usize| -> Result<(), DecodeError> {
        let offset = r.offset();
        if r.u64()? != expected as u64 {
            return Err(DecodeError::Invalid { what, offset });
        }
        Ok(())
    };
    expect_len(&mut r, "hnsw point count", len)?;
    // Every point takes 8 + 4·dims bytes: a count the section cannot back fails before any
    // allocation.
    let point_bytes = dims.checked_mul(4).and_then(|d| d.checked_add(8));
    if point_bytes
        .and_then(|p| p.checked_mul(len))
        .is_none_or(|n| n > r.remaining())
    {
        return Err(invalid("hnsw point count", offset));
    }
    let mut points: Vec<Vec<f32>> = Vec::with_capacity(len);
    for _ in 0..len {
        expect_len(&mut r, "hnsw vector dimensions", dims)?;
        let mut point = Vec::with_capacity(dims);
        for _ in 0..dims {
            let offset = r.offset();
            let value = r.f32()?;
            if !value.is_finite() {
                return Err(invalid("hnsw vector value", offset));
            }
            point.push(value);
        }
        points.push(point);
    }
    let check_links = |r: &mut ByteReader, links: usize, below: usize| -> Result<(), DecodeError> {
        for _ in 0..links {
            let offset = r.offset();
            let id = r.u32()?;
            if id != NO_NEIGHBOUR && id as usize >= below {
                return Err(DecodeError::Invalid {
                    what: "hnsw neighbour id",
                    offset,
                });
            }
        }
        Ok(())
    };
    expect_len(&mut r, "hnsw layer-0 size", len)?;
    for _ in 0..len {
        check_links(&mut r, 2 * M, len)?;
    }
    let offset = r.offset();
    let layers = r.u64()?;
    if layers > 64 || (len == 0 && layers > 0) {
        return Err(invalid("hnsw layer count", offset));
    }
    let mut below = len;
    for _ in 0..layers {
        let offset = r.offset();
        let size = usize::try_from(r.u64()?).map_err(|_| invalid("hnsw layer size", offset))?;
        if size == 0 || size > below {
            return Err(invalid("hnsw layer size", offset));
        }
        for _ in 0..size {
            check_links(&mut r, M, size)?;
        }
        below = size;
    }
    expect_len(&mut r, "hnsw value count", len)?;
    let mut by_chunk: Vec<Option<Vec<f32>>> = vec![None; len];
    for point in points {
        let offset = r.offset();
        let chunk = r.u32()? as usize;
        match by_chunk.get_mut(chunk) {
            Some(slot @ None) => *slot = Some(point),
            _ => return Err(invalid("hnsw chunk number", offset)),
        }
    }
    r.finish("hnsw trailing bytes")?;
    Ok((dims, by_chunk.into_iter().flatten().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn golden() -> Vec<u8> {
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden-v1.sxt")).unwrap()
    }

    #[test]
    fn the_golden_bundle_decodes_whole() {
        let bundle = Bundle::from_bytes(&golden()).unwrap();
        assert_eq!((bundle.documents.len(), bundle.chunks.len()), (7, 12));
        assert_eq!(bundle.vectors.len(), 12);
        for v in &bundle.vectors {
            assert_eq!(v.len(), 384);
            // The model normalises: every vector has length 1.
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-3, "{norm}");
        }
        assert_eq!(bundle.manifest.hnsw.seed, 42);
    }

    #[test]
    fn a_format_2_index_is_not_a_bundle() {
        let v2 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden-v2.sxt")).unwrap();
        assert!(matches!(
            Bundle::from_bytes(&v2),
            Err(IndexError::Container(
                crate::container::ContainerError::UnsupportedVersion { major: 2, .. }
            ))
        ));
    }

    #[test]
    fn a_vector_count_the_section_cannot_hold_is_refused_before_allocating() {
        // 384 dimensions, u32::MAX points, ef_search 100, the same count again: 24 bytes.
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&384u32.to_le_bytes());
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(&100u64.to_le_bytes());
        bytes.extend_from_slice(&u64::from(u32::MAX).to_le_bytes());
        assert!(matches!(
            read_vectors(&bytes),
            Err(DecodeError::Invalid {
                what: "hnsw point count",
                ..
            })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn damaged_bundles_are_errors_never_panics(
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cut in any::<usize>(),
        ) {
            let good = golden();
            let mut bytes = good.clone();
            for (at, byte) in flips {
                let i = at % bytes.len();
                bytes[i] ^= byte | 1;
            }
            bytes.truncate(cut % (good.len() + 1));
            prop_assert!(Bundle::from_bytes(&bytes).is_err());
        }

        #[test]
        fn damaged_sections_decode_to_errors_never_panics(
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
            cut in any::<usize>(),
        ) {
            // Past the digests: the section decoders themselves on damaged bytes.
            let good = golden();
            let raw = Container::parse(&good, V1_MAJOR..=V1_MAJOR).unwrap();
            for id in [SectionId::Vectors, SectionId::Bm25] {
                let mut bytes = raw.section(id).unwrap().to_vec();
                for &(at, byte) in &flips {
                    let i = at % bytes.len();
                    bytes[i] ^= byte;
                }
                bytes.truncate(cut % (bytes.len() + 1));
                let _ = read_vectors(&bytes);
                let _ = read_bm25(&bytes);
            }
        }
    }
}
