//! The files of a format-2 index, each read from bytes with every length and value checked:
//! [`Norms`], keyword shards ([`TermTable`] behind a magic), [`Fragment`]s of chunk text,
//! [`VectorMeta`], [`CodeFile`]s of binary codes and [`BlockFile`]s of int8 vectors. Byte layouts:
//! `docs/FORMAT.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bm25::TermTable;
use crate::chunk::Chunk;
use crate::codec::{put_varint, ByteReader, DecodeError};
use crate::digest::sha256_hex;

/// A document's record (its text lives in the chunks): in a fragment beside its chunks.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
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
    /// Filter values by filter name ([`crate::chunk::Document::filters`]; a query reads them
    /// from the index's facets file, [`super::Facets`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub filters: BTreeMap<String, Vec<String>>,
    /// Sort values by sort key ([`crate::chunk::Document::sort`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sort: BTreeMap<String, String>,
}

/// First bytes of each binary file kind.
pub const NORMS_MAGIC: &[u8; 4] = b"SXnm";
/// Keyword shard.
pub const KEYWORD_MAGIC: &[u8; 4] = b"SXkw";
/// Vector calibration.
pub const META_MAGIC: &[u8; 4] = b"SXvm";
/// Binary codes (before 2.7).
pub const CODES_MAGIC: &[u8; 4] = b"SXvc";
/// Binary codes with a factor each (2.7).
pub const SCALED_CODES_MAGIC: &[u8; 4] = b"SXvq";
/// Int8 vectors.
pub const BLOCKS_MAGIC: &[u8; 4] = b"SXvb";

/// Hex digits of SHA-256 in a file name (64 bits: no two files of one index collide).
pub const NAME_HASH_LEN: usize = 16;

/// A content-addressed file name: `{kind}.{first 16 hex digits of SHA-256}.{extension}`.
pub fn file_name(kind: &str, extension: &str, bytes: &[u8]) -> String {
    let hash = sha256_hex(bytes);
    format!("{kind}.{}.{extension}", &hash[..NAME_HASH_LEN])
}

/// Whether `name` is of the form the writer gives files: `{kind}.{16 hex digits}.{extension}`,
/// kind and extension lower-case ASCII letters. Only such names, relative to the manifest, are
/// ever fetched: never a path (`../x`), an absolute URL or another host.
pub fn valid_file_name(name: &str) -> bool {
    let mut parts = name.split('.');
    let (Some(kind), Some(hash), Some(extension), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let letters = |s: &str| !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_lowercase());
    letters(kind)
        && letters(extension)
        && hash.len() == NAME_HASH_LEN
        && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether `bytes` are the content `name` promises (its hash part is their SHA-256's prefix).
pub fn content_matches(name: &str, bytes: &[u8]) -> bool {
    let mut parts = name.rsplit('.');
    let (_, Some(hash)) = (parts.next(), parts.next()) else {
        return false;
    };
    hash.len() == NAME_HASH_LEN && sha256_hex(bytes).starts_with(hash)
}

/// Fails unless exactly `len` bytes remain (what a file's counts say it holds): checked before a
/// reader allocates anything by those counts, so what it allocates is proportional to the bytes
/// behind it (a small constant factor: an entry decoded takes a few times its encoded bytes).
fn backed(r: &ByteReader, len: usize, what: &'static str, offset: usize) -> Result<(), DecodeError> {
    if r.remaining() == len {
        Ok(())
    } else if r.remaining() < len {
        Err(DecodeError::Truncated {
            offset,
            needed: len,
            available: r.remaining(),
        })
    } else {
        Err(DecodeError::Invalid { what, offset })
    }
}

fn magic(r: &mut ByteReader, expected: &[u8; 4], what: &'static str) -> Result<(), DecodeError> {
    let offset = r.offset();
    if r.take(4)? != expected {
        return Err(DecodeError::Invalid { what, offset });
    }
    Ok(())
}

/// Per chunk: its length in analyzer terms (for BM25) and its document number; and their mean.
#[derive(Debug, Clone, PartialEq)]
pub struct Norms {
    /// Analyzer terms per chunk.
    pub lengths: Vec<u32>,
    /// Document number per chunk (non-decreasing).
    pub documents: Vec<u32>,
    /// The mean of `lengths`.
    pub avgdl: f32,
    /// The documents' lengths, for BM25 over whole documents (computed from the two above).
    pub by_document: crate::bm25::DocumentLengths,
}

impl Norms {
    /// The norms of chunks of these lengths in these documents (numbers non-decreasing), with
    /// their means computed.
    pub fn new(lengths: Vec<u32>, documents: Vec<u32>) -> Self {
        let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
        let avgdl = if lengths.is_empty() {
            0.0
        } else {
            (total as f64 / lengths.len() as f64) as f32
        };
        let by_document = crate::bm25::DocumentLengths::new(&lengths, &documents);
        Self {
            lengths,
            documents,
            avgdl,
            by_document,
        }
    }

    /// `SXnm`, chunk count, lengths, document-number deltas (varints).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = NORMS_MAGIC.to_vec();
        put_varint(&mut out, self.lengths.len() as u64);
        for &l in &self.lengths {
            put_varint(&mut out, u64::from(l));
        }
        let mut previous = 0;
        for &d in &self.documents {
            put_varint(&mut out, u64::from(d - previous));
            previous = d;
        }
        out
    }

    /// Reads norms of exactly `chunks` chunks over `documents` documents.
    pub fn from_bytes(bytes: &[u8], chunks: usize, documents: usize) -> Result<Self, DecodeError> {
        let mut r = ByteReader::new(bytes);
        magic(&mut r, NORMS_MAGIC, "norms magic")?;
        let offset = r.offset();
        let n = r.count("norms chunk count", 2)?;
        if n != chunks {
            return Err(DecodeError::Invalid {
                what: "norms chunk count",
                offset,
            });
        }
        let mut lengths = Vec::with_capacity(n);
        for _ in 0..n {
            lengths.push(r.varint_u32("chunk length")?);
        }
        let mut docs = Vec::with_capacity(n);
        let mut doc = 0u32;
        for _ in 0..n {
            let offset = r.offset();
            doc = doc
                .checked_add(r.varint_u32("document delta")?)
                .filter(|&d| (d as usize) < documents)
                .ok_or(DecodeError::Invalid {
                    what: "document number",
                    offset,
                })?;
            docs.push(doc);
        }
        r.finish("norms trailing bytes")?;
        Ok(Self::new(lengths, docs))
    }
}

impl Norms {
    /// Whether the chunks name every document from 0 to `documents − 1`, in order (each
    /// chunk's document the same as the one before it or the next): what an index of format 2.2
    /// or later holds, every document with a chunk.
    pub fn names_every_document(&self, documents: usize) -> bool {
        let mut next = 0usize;
        for &d in &self.documents {
            match (d as usize).cmp(&next) {
                std::cmp::Ordering::Equal => next += 1,
                std::cmp::Ordering::Less if d as usize + 1 == next => {}
                _ => return false,
            }
        }
        next == documents
    }
}

/// A keyword shard: `SXkw` then a [`TermTable`].
pub fn keyword_to_bytes(table: &TermTable) -> Vec<u8> {
    let mut out = KEYWORD_MAGIC.to_vec();
    table.write(&mut out);
    out
}

/// Reads a keyword shard over `chunks` chunks.
pub fn keyword_from_bytes(bytes: &[u8], chunks: usize) -> Result<TermTable, DecodeError> {
    let mut r = ByteReader::new(bytes);
    magic(&mut r, KEYWORD_MAGIC, "keyword shard magic")?;
    let table = TermTable::read(&mut r, chunks)?;
    r.finish("keyword shard trailing bytes")?;
    Ok(table)
}

/// Chunks `first..first + chunks.len()` with the documents they belong to: what a result shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fragment {
    /// Number of the first chunk.
    pub first: u32,
    /// The documents of these chunks, with their numbers.
    pub documents: Vec<(u32, DocumentInfo)>,
    /// The chunks, in order.
    pub chunks: Vec<Chunk>,
}

impl Fragment {
    /// JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a fragment that must hold chunks `first..first + count`, and checks each chunk's
    /// document is listed and its content hash is its text's.
    pub fn from_bytes(bytes: &[u8], first: u32, count: usize) -> Result<Self, String> {
        let fragment: Fragment = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if fragment.first != first || fragment.chunks.len() != count {
            return Err(format!(
                "it holds {} chunks from {}, not {count} from {first}",
                fragment.chunks.len(),
                fragment.first
            ));
        }
        for c in &fragment.chunks {
            if !fragment.documents.iter().any(|(n, _)| *n == c.doc) {
                return Err(format!(
                    "chunk {} names document {}, which it does not hold",
                    c.id, c.doc
                ));
            }
            if sha256_hex(c.text.as_bytes()) != c.content_hash {
                return Err(format!("chunk {}'s content_hash is not the SHA-256 of its text", c.id));
            }
        }
        Ok(fragment)
    }

    /// Chunk `number`, if this fragment holds it.
    pub fn chunk(&self, number: u32) -> Option<&Chunk> {
        self.chunks.get(number.checked_sub(self.first)? as usize)
    }

    /// Document `number`, if this fragment holds it.
    pub fn document(&self, number: u32) -> Option<&DocumentInfo> {
        self.documents.iter().find(|(n, _)| *n == number).map(|(_, d)| d)
    }
}

/// How vectors were quantized, calibrated on the corpus: per dimension the mean (the binary
/// codes are the signs around it) and the mean absolute deviation (each code bit's weight).
#[derive(Debug, Clone, PartialEq)]
pub struct VectorMeta {
    /// Mean per dimension.
    pub mean: Vec<f32>,
    /// Mean absolute deviation per dimension.
    pub spread: Vec<f32>,
}

impl VectorMeta {
    /// Calibrates on the corpus's vectors (all `dims` long).
    pub fn calibrate(vectors: &[Vec<f32>], dims: usize) -> Self {
        let n = vectors.len().max(1) as f64;
        let mut mean = vec![0f64; dims];
        for v in vectors {
            for (m, x) in mean.iter_mut().zip(v) {
                *m += f64::from(*x) / n;
            }
        }
        let mut spread = vec![0f64; dims];
        for v in vectors {
            for ((s, m), x) in spread.iter_mut().zip(&mean).zip(v) {
                *s += (f64::from(*x) - m).abs() / n;
            }
        }
        Self {
            mean: mean.into_iter().map(|x| x as f32).collect(),
            spread: spread.into_iter().map(|x| x as f32).collect(),
        }
    }

    /// `SXvm`, dims (u32), means, spreads (f32).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = META_MAGIC.to_vec();
        out.extend_from_slice(&(self.mean.len() as u32).to_le_bytes());
        for x in self.mean.iter().chain(&self.spread) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }

    /// Reads calibration for `dims` dimensions (all values finite).
    pub fn from_bytes(bytes: &[u8], dims: usize) -> Result<Self, DecodeError> {
        let mut r = ByteReader::new(bytes);
        magic(&mut r, META_MAGIC, "vector meta magic")?;
        let offset = r.offset();
        if r.u32()? as usize != dims {
            return Err(DecodeError::Invalid {
                what: "vector dimensions",
                offset,
            });
        }
        // Two f32 a dimension, nothing else: a count the bytes do not hold fails before anything
        // is allocated for it.
        let values_len = dims.checked_mul(8).ok_or(DecodeError::Invalid {
            what: "vector dimensions",
            offset,
        })?;
        backed(&r, values_len, "vector meta length", offset)?;
        let mut values = Vec::with_capacity(2 * dims);
        for _ in 0..2 * dims {
            let offset = r.offset();
            let x = r.f32()?;
            if !x.is_finite() {
                return Err(DecodeError::Invalid {
                    what: "vector calibration",
                    offset,
                });
            }
            values.push(x);
        }
        r.finish("vector meta trailing bytes")?;
        let spread = values.split_off(dims);
        Ok(Self { mean: values, spread })
    }

    /// The factor a code's score is multiplied by (2.7): `|r|² / (r · u)`, where `r` is `v`
    /// less the mean and `u` the vector the code stands for less the mean (`spread · (±1)`), so
    /// that `factor · (q · u)` estimates `q · r` without the bias of how well the code fits `v`
    /// (the estimator of RaBitQ, Gao and Long, SIGMOD 2024). Computed in f64 in one order. 0 for
    /// a vector at the mean.
    pub fn factor(&self, v: &[f32]) -> f32 {
        let (mut rr, mut ru) = (0f64, 0f64);
        for ((x, m), s) in v.iter().zip(&self.mean).zip(&self.spread) {
            let r = f64::from(*x) - f64::from(*m);
            rr += r * r;
            // The code's sign: + above the mean, − otherwise, so `r · u` adds |r| · spread.
            ru += if x > m { r } else { -r } * f64::from(*s);
        }
        if ru > 0.0 {
            (rr / ru) as f32
        } else {
            0.0
        }
    }

    /// Binary code of a vector: bit `i` (byte `i / 8`, bit `i % 8`) set when `v[i]` is above
    /// the mean.
    pub fn code(&self, v: &[f32]) -> Vec<u8> {
        let mut out = vec![0u8; self.mean.len().div_ceil(8)];
        for (i, (x, m)) in v.iter().zip(&self.mean).enumerate() {
            if x > m {
                if let Some(byte) = out.get_mut(i / 8) {
                    *byte |= 1 << (i % 8);
                }
            }
        }
        out
    }

    /// For a query, per code byte, the score of each of its 256 values: code scores are then
    /// `dims / 8` table lookups. Scores rank codes by the query's dot product with the vector the
    /// code stands for (`mean + spread · (±1)`), less a constant.
    pub fn lookup_table(&self, query: &[f32]) -> Vec<[f32; 256]> {
        let weights: Vec<f32> = query.iter().zip(&self.spread).map(|(q, s)| q * s).collect();
        weights
            .chunks(8)
            .map(|w| {
                let mut table = [0f32; 256];
                for (value, slot) in table.iter_mut().enumerate() {
                    *slot = w
                        .iter()
                        .enumerate()
                        .map(|(bit, wi)| if value & (1 << bit) != 0 { *wi } else { -*wi })
                        .sum();
                }
                table
            })
            .collect()
    }
}

/// Binary codes of a run of chunks in cluster order: each entry a chunk number, its code
/// (`dims / 8` bytes) and (2.7) its factor ([`VectorMeta::factor`]) in 8 bits between the file's
/// least and greatest. The entry at position `p` of all code files together is in vector block
/// `p / block_chunks`.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeFile {
    /// Bytes of one code.
    pub code_len: usize,
    /// The chunk of each entry.
    pub chunks: Vec<u32>,
    /// The codes, concatenated.
    pub codes: Vec<u8>,
    /// The factors: the least and greatest, and each entry's level between them (0 to 255).
    /// No levels: a file before 2.7, every factor 1.
    pub factors: (f32, f32),
    /// Each entry's factor level.
    pub levels: Vec<u8>,
}

impl CodeFile {
    /// The code file of `chunks` with their `codes` and `factors` (finite, at least 0), each
    /// factor kept to one of 256 levels between the least and the greatest.
    pub fn new(code_len: usize, chunks: Vec<u32>, codes: Vec<u8>, factors: &[f32]) -> Self {
        let lo = factors.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = factors.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (1.0, 1.0) };
        let levels = factors
            .iter()
            .map(|&f| {
                if hi > lo {
                    ((f - lo) / (hi - lo) * 255.0).round().clamp(0.0, 255.0) as u8
                } else {
                    0
                }
            })
            .collect();
        Self {
            code_len,
            chunks,
            codes,
            factors: (lo, hi),
            levels,
        }
    }

    /// `SXvq`, count (u32), least and greatest factor (f32), then per entry its chunk (u32), code
    /// and factor level (u8); a file of entries read from before 2.7 is written back as it was
    /// (`SXvc`, count, entries of chunk and code).
    pub fn to_bytes(&self) -> Vec<u8> {
        let scaled = !self.levels.is_empty() || self.chunks.is_empty();
        let mut out = if scaled { SCALED_CODES_MAGIC } else { CODES_MAGIC }.to_vec();
        out.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        if scaled {
            out.extend_from_slice(&self.factors.0.to_le_bytes());
            out.extend_from_slice(&self.factors.1.to_le_bytes());
        }
        let codes = self.codes.chunks_exact(self.code_len.max(1));
        for (i, (chunk, code)) in self.chunks.iter().zip(codes).enumerate() {
            out.extend_from_slice(&chunk.to_le_bytes());
            out.extend_from_slice(code);
            if scaled {
                out.push(self.levels.get(i).copied().unwrap_or(0));
            }
        }
        out
    }

    /// Reads `count` entries for `dims` dimensions, each naming a chunk below `total`: a 2.7
    /// file (`SXvq`) or one from before (`SXvc`, every factor 1).
    pub fn from_bytes(bytes: &[u8], count: usize, dims: usize, total: usize) -> Result<Self, DecodeError> {
        let mut r = ByteReader::new(bytes);
        let scaled = match r.take(4)? {
            m if m == SCALED_CODES_MAGIC => true,
            m if m == CODES_MAGIC => false,
            _ => {
                return Err(DecodeError::Invalid {
                    what: "codes magic",
                    offset: 0,
                })
            }
        };
        let offset = r.offset();
        if r.u32()? as usize != count {
            return Err(DecodeError::Invalid {
                what: "code count",
                offset,
            });
        }
        let factors = if scaled {
            let offset = r.offset();
            let (lo, hi) = (r.f32()?, r.f32()?);
            if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi) {
                return Err(DecodeError::Invalid {
                    what: "code factors",
                    offset,
                });
            }
            (lo, hi)
        } else {
            (1.0, 1.0)
        };
        let code_len = dims.div_ceil(8);
        let entry = code_len + 4 + usize::from(scaled);
        backed(&r, entry.saturating_mul(count), "code file length", offset)?;
        let mut chunks = Vec::with_capacity(count);
        let mut codes = Vec::with_capacity(count.saturating_mul(code_len));
        let mut levels = Vec::with_capacity(if scaled { count } else { 0 });
        for _ in 0..count {
            let offset = r.offset();
            let chunk = r.u32()?;
            if chunk as usize >= total {
                return Err(DecodeError::Invalid {
                    what: "code chunk number",
                    offset,
                });
            }
            chunks.push(chunk);
            codes.extend_from_slice(r.take(code_len)?);
            if scaled {
                levels.push(r.take(1)?[0]);
            }
        }
        r.finish("codes trailing bytes")?;
        Ok(Self {
            code_len,
            chunks,
            codes,
            factors,
            levels,
        })
    }

    /// Entry `i`'s factor: 1 in a file before 2.7.
    pub fn factor(&self, i: usize) -> f32 {
        let (lo, hi) = self.factors;
        match self.levels.get(i) {
            Some(&level) => lo + (hi - lo) * (f32::from(level) / 255.0),
            None => 1.0,
        }
    }

    /// Each entry: its chunk number, code and factor.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &[u8], f32)> {
        self.chunks
            .iter()
            .copied()
            .zip(self.codes.chunks_exact(self.code_len.max(1)))
            .enumerate()
            .map(|(i, (chunk, code))| (chunk, code, self.factor(i)))
    }
}

/// Int8 vectors of a block of chunks in cluster order: per entry its chunk, a scale and `dims`
/// values, the vector being `scale · values`.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockFile {
    /// Dimensions.
    pub dims: usize,
    /// The chunk of each entry.
    pub chunks: Vec<u32>,
    /// Per entry.
    pub scales: Vec<f32>,
    /// Per entry, `dims` each.
    pub values: Vec<i8>,
}

impl BlockFile {
    /// Quantizes the vectors of `chunks` (each `dims` long): per vector its largest magnitude maps
    /// to 127.
    pub fn quantize(chunks: &[u32], vectors: &[&[f32]], dims: usize) -> Self {
        let mut scales = Vec::with_capacity(vectors.len());
        let mut values = Vec::with_capacity(vectors.len() * dims);
        for v in vectors {
            let largest = v.iter().fold(0f32, |m, x| m.max(x.abs()));
            let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
            scales.push(scale);
            values.extend(v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8));
        }
        Self {
            dims,
            chunks: chunks.to_vec(),
            scales,
            values,
        }
    }

    /// `SXvb`, count (u32), per entry its chunk (u32) and scale (f32), then the values (i8).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = BLOCKS_MAGIC.to_vec();
        out.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        for (chunk, scale) in self.chunks.iter().zip(&self.scales) {
            out.extend_from_slice(&chunk.to_le_bytes());
            out.extend_from_slice(&scale.to_le_bytes());
        }
        out.extend(self.values.iter().map(|&v| v as u8));
        out
    }

    /// Reads a block of `count` entries for `dims` dimensions, each naming a chunk below `total`.
    pub fn from_bytes(bytes: &[u8], count: usize, dims: usize, total: usize) -> Result<Self, DecodeError> {
        let mut r = ByteReader::new(bytes);
        magic(&mut r, BLOCKS_MAGIC, "vector block magic")?;
        let offset = r.offset();
        if r.u32()? as usize != count {
            return Err(DecodeError::Invalid {
                what: "vector block count",
                offset,
            });
        }
        let entry = dims.checked_add(8).and_then(|e| e.checked_mul(count));
        backed(&r, entry.unwrap_or(usize::MAX), "vector block length", offset)?;
        let mut chunks = Vec::with_capacity(count);
        let mut scales = Vec::with_capacity(count);
        for _ in 0..count {
            let offset = r.offset();
            let chunk = r.u32()?;
            let s = r.f32()?;
            if chunk as usize >= total || !(s.is_finite() && s > 0.0) {
                return Err(DecodeError::Invalid {
                    what: "vector block entry",
                    offset,
                });
            }
            chunks.push(chunk);
            scales.push(s);
        }
        let len = count.checked_mul(dims).ok_or(DecodeError::Invalid {
            what: "vector block length",
            offset,
        })?;
        let values = r.take(len)?.iter().map(|&b| b as i8).collect();
        r.finish("vector block trailing bytes")?;
        Ok(Self {
            dims,
            chunks,
            scales,
            values,
        })
    }

    /// Chunk `number`'s vector as stored: `scale · values`.
    pub fn vector(&self, number: u32) -> Option<Vec<f32>> {
        let i = self.chunks.iter().position(|&c| c == number)?;
        let scale = *self.scales.get(i)?;
        let values = self.values.get(i * self.dims..(i + 1) * self.dims)?;
        Some(values.iter().map(|&v| scale * f32::from(v)).collect())
    }

    /// The dot product of `query` with chunk `number`'s vector, if this block holds it.
    pub fn dot(&self, number: u32, query: &[f32]) -> Option<f32> {
        let i = self.chunks.iter().position(|&c| c == number)?;
        let scale = *self.scales.get(i)?;
        let values = self.values.get(i * self.dims..(i + 1) * self.dims)?;
        // Four accumulators in a fixed order, so native and wasm agree bit for bit.
        let mut acc = [0f32; 4];
        for (k, (v, q)) in values.iter().zip(query).enumerate() {
            acc[k % 4] += f32::from(*v) * q;
        }
        Some(scale * ((acc[0] + acc[1]) + (acc[2] + acc[3])))
    }
}

#[cfg(feature = "collection")]
/// Rounds of balanced k-means in [`partition_order`] at most (it stops when no chunk moves).
const PARTITION_ROUNDS: usize = 8;
#[cfg(feature = "collection")]
/// The nearest partitions each chunk asks for in a round of [`partition_order`], best first; a
/// chunk all of whose are full goes to the nearest with room.
const PARTITION_CHOICES: usize = 4;
#[cfg(feature = "collection")]
/// The partitions a chunk is compared with in a round of [`partition_order`]: those whose
/// centroids are nearest its own partition's (itself included), so a round costs chunks × this
/// many dot products however many partitions there are (every one when there are no more).
const PARTITION_NEIGHBOURS: usize = 32;

/// Chunks in partition order: the code files (`code_file_chunks` each, the last the rest) as
/// clusters of their own, so that the partitions a query's nearest centroids name hold more of
/// its nearest chunks. Starting from [`cluster_order`] cut into runs of `part`, each round of a
/// balanced k-means gives every partition its members' mean direction, and then chunks in order of
/// how near they are to a centroid (best pairs first) go to the nearest partitions with room (of
/// the [`PARTITION_NEIGHBOURS`] nearest their own), each partition keeping its size; at most
/// [`PARTITION_ROUNDS`] rounds. Within a partition chunks keep
/// their cluster order, so a vector block (a multiple of which a partition is) still holds similar
/// vectors. Deterministic: sums in one order, ties broken by partition and chunk number. With one
/// partition, the cluster order itself. One thread ([`partition_order_on`] takes a pool).
#[cfg(feature = "collection")]
pub fn partition_order(vectors: &[Vec<f32>], dims: usize, part: usize, leaf: usize) -> Vec<u32> {
    partition_order_on(vectors, dims, part, leaf, &crate::indexer::OneThread)
}

/// The most chunks of a leaf of the cluster order when vector blocks are smaller: the writer cuts
/// blocks of 1 or 2 chunks from leaves of 4, so the order, the partitions and every result are
/// those of blocks of 4, and the block size only decides how many bytes a rescored candidate
/// fetches (BENCHMARKS.md, "Smaller fragments and vector blocks").
pub const CLUSTER_LEAF_CHUNKS: usize = 4;

/// Chunks a job of [`partition_order_on`] scores against their partitions' neighbours.
#[cfg(feature = "collection")]
const PARTITION_JOB_CHUNKS: usize = 1024;

/// [`partition_order`] with its independent work on `executor`: the cluster order's nodes of a
/// level, each partition's nearest partitions, and the chunks' scores against them. Every job
/// sums in the order one thread does, so the order is the same on any executor.
#[cfg(feature = "collection")]
pub fn partition_order_on(
    vectors: &[Vec<f32>],
    dims: usize,
    part: usize,
    leaf: usize,
    executor: &impl crate::indexer::Executor,
) -> Vec<u32> {
    let order = cluster_order_on(vectors, dims, leaf, executor);
    let n = order.len();
    let part = part.max(1);
    let count = n.div_ceil(part);
    if count <= 1 {
        return order;
    }
    let capacity: Vec<usize> = (0..count).map(|p| part.min(n - p * part)).collect();
    let mut assigned = vec![0usize; n];
    for (i, &c) in order.iter().enumerate() {
        assigned[c as usize] = i / part;
    }
    let dot = |a: &[f32], b: &[f32]| -> f32 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
    for _ in 0..PARTITION_ROUNDS {
        let mut sums = vec![vec![0f64; dims]; count];
        for (c, &p) in assigned.iter().enumerate() {
            for (s, x) in sums[p].iter_mut().zip(&vectors[c]) {
                *s += f64::from(*x);
            }
        }
        let centroids: Vec<Vec<f32>> = sums
            .iter()
            .map(|s| {
                let norm = s.iter().map(|x| x * x).sum::<f64>().sqrt();
                s.iter()
                    .map(|x| if norm > 0.0 { (x / norm) as f32 } else { 0.0 })
                    .collect()
            })
            .collect();
        let choices = PARTITION_CHOICES.min(count);
        // Each partition's nearest partitions by centroid, best first (itself among them).
        let neighbours: Vec<Vec<u32>> = executor.map(count, &|m| {
            let mut near: Vec<(f32, u32)> = centroids
                .iter()
                .enumerate()
                .map(|(p, o)| (dot(&centroids[m], o), p as u32))
                .collect();
            near.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            near.truncate(PARTITION_NEIGHBOURS);
            near.into_iter().map(|(_, p)| p).collect()
        });
        // (score, chunk, partition): each chunk's nearest partitions, a job a run of chunks.
        let jobs = n.div_ceil(PARTITION_JOB_CHUNKS);
        let scored_runs: Vec<Vec<(f32, u32, u32)>> = executor.map(jobs, &|j| {
            let chunks = j * PARTITION_JOB_CHUNKS..((j + 1) * PARTITION_JOB_CHUNKS).min(n);
            let mut pairs = Vec::with_capacity(chunks.len() * choices);
            let mut scored: Vec<(f32, u32)> = Vec::with_capacity(count.min(PARTITION_NEIGHBOURS));
            for c in chunks {
                scored.clear();
                let near = &neighbours[assigned[c]];
                scored.extend(near.iter().map(|&p| (dot(&vectors[c], &centroids[p as usize]), p)));
                scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                pairs.extend(scored.iter().take(choices).map(|&(score, p)| (score, c as u32, p)));
            }
            pairs
        });
        let mut pairs: Vec<(f32, u32, u32)> = scored_runs.concat();
        pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut next = vec![usize::MAX; n];
        let mut room = capacity.clone();
        for (_, c, p) in pairs {
            let (c, p) = (c as usize, p as usize);
            if next[c] == usize::MAX && room[p] > 0 {
                next[c] = p;
                room[p] -= 1;
            }
        }
        for (c, v) in vectors.iter().enumerate() {
            if next[c] != usize::MAX {
                continue;
            }
            // Some partition has room: the capacities add up to the chunks.
            let p = (0..count)
                .filter(|&p| room[p] > 0)
                .fold(None, |best: Option<(usize, f32)>, p| {
                    let score = dot(v, &centroids[p]);
                    match best {
                        Some((_, b)) if b >= score => best,
                        _ => Some((p, score)),
                    }
                })
                .map_or(0, |(p, _)| p);
            next[c] = p;
            room[p] -= 1;
        }
        if next == assigned {
            break;
        }
        assigned = next;
    }
    let mut members: Vec<Vec<u32>> = capacity.iter().map(|&c| Vec::with_capacity(c)).collect();
    for &c in &order {
        members[assigned[c as usize]].push(c);
    }
    members.concat()
}

/// Chunks in cluster order: a balanced binary tree cut along each node's principal direction,
/// down to leaves of at most `leaf` chunks aligned on multiples of `leaf`, so that a vector block
/// holds similar vectors and a query's candidates fall in few blocks. Deterministic (fixed
/// starting direction, ties broken by chunk number). One thread.
#[cfg(feature = "collection")]
pub fn cluster_order(vectors: &[Vec<f32>], dims: usize, leaf: usize) -> Vec<u32> {
    cluster_order_on(vectors, dims, leaf, &crate::indexer::OneThread)
}

/// [`cluster_order`] a level of the tree at a time, the level's nodes (disjoint runs of chunks,
/// each cut as one thread cuts it) on `executor`: the same order on any executor.
#[cfg(feature = "collection")]
pub fn cluster_order_on(
    vectors: &[Vec<f32>],
    dims: usize,
    leaf: usize,
    executor: &impl crate::indexer::Executor,
) -> Vec<u32> {
    let mut order: Vec<u32> = (0..vectors.len() as u32).collect();
    let leaf = leaf.max(1);
    let mut level = vec![(0usize, order.len())];
    while !level.is_empty() {
        let cut: Vec<Option<(Vec<u32>, usize)>> = executor.map(level.len(), &|i| {
            let (start, end) = level[i];
            if end - start <= leaf {
                return None;
            }
            let mut items = order[start..end].to_vec();
            let mid = start + cut_node(vectors, dims, leaf, &mut items);
            Some((items, mid))
        });
        let mut next = Vec::new();
        for (&(start, end), cut) in level.iter().zip(cut) {
            if let Some((items, mid)) = cut {
                order[start..end].copy_from_slice(&items);
                next.push((start, mid));
                next.push((mid, end));
            }
        }
        level = next;
    }
    order
}

/// Sorts the chunks of a node along their principal direction (power iteration from a fixed
/// start, sums in the items' order) and returns where the node is cut: a multiple of `leaf`
/// from its start, the first half the larger.
#[cfg(feature = "collection")]
fn cut_node(vectors: &[Vec<f32>], dims: usize, leaf: usize, items: &mut [u32]) -> usize {
    let n = items.len();
    let mut mean = vec![0f64; dims];
    for &c in items.iter() {
        for (m, x) in mean.iter_mut().zip(&vectors[c as usize]) {
            *m += f64::from(*x);
        }
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let mut direction: Vec<f64> = (0..dims).map(|i| 1.0 + (i % 7) as f64 / 7.0).collect();
    for _ in 0..8 {
        let mut next = vec![0f64; dims];
        for &c in items.iter() {
            let v = &vectors[c as usize];
            let along: f64 = v
                .iter()
                .zip(&mean)
                .zip(&direction)
                .map(|((x, m), d)| (f64::from(*x) - m) * d)
                .sum();
            for ((acc, x), m) in next.iter_mut().zip(v).zip(&mean) {
                *acc += along * (f64::from(*x) - m);
            }
        }
        let norm = next.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            break;
        }
        direction = next.into_iter().map(|x| x / norm).collect();
    }
    let projection = |c: u32| -> f64 {
        vectors[c as usize]
            .iter()
            .zip(&mean)
            .zip(&direction)
            .map(|((x, m), d)| (f64::from(*x) - m) * d)
            .sum()
    };
    let mut keyed: Vec<(f64, u32)> = items.iter().map(|&c| (projection(c), c)).collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (slot, (_, c)) in items.iter_mut().zip(keyed) {
        *slot = c;
    }
    (leaf * n.div_ceil(2 * leaf)).min(n)
}
