//! Dense retrieval: an HNSW graph (`instant-distance`, pinned to one exact version) and an exact
//! flat scan over the same vectors.
//!
//! Similarity is the dot product (cosine when the model normalises, which the default does);
//! HNSW works on the distance `1 − dot`. Vectors live once, inside the graph; the flat scan walks
//! them in graph order and maps back to chunk numbers.
//!
//! `instant-distance` serialises with serde and has no header or version of its own, and a
//! malformed graph makes its search index out of bounds. So the section wraps the graph in our
//! own header, and [`VectorIndex::from_bytes`] walks the serialised layout and checks every
//! neighbour id before handing the bytes to serde. Section layout: `docs/FORMAT.md` ("vectors").

use instant_distance::{Builder, HnswMap, Point, Search};
use serde::{Deserialize, Serialize};

use crate::codec::{ByteReader, DecodeError};
use crate::vecmath::dot;

/// The graph degree `M` of `instant-distance` 0.6.1 (layer 0 keeps `2·M` neighbours).
const M: usize = 32;
const INVALID: u32 = u32::MAX;

/// HNSW construction and search parameters (names from Malkov & Yashunin's paper).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HnswParams {
    /// Candidates kept while inserting a point. Larger builds a better graph, more slowly.
    /// Default 100, range 10–2000.
    pub ef_construction: usize,
    /// Candidates kept while searching; also the most results one HNSW search returns (a
    /// larger `k · 2` uses the exact scan instead). Larger finds more true neighbours, more
    /// slowly. Default 100, range 10–2000.
    pub ef_search: usize,
    /// Seed of the level generator. Fixed so the same inputs give the same graph. Default 42.
    pub seed: u64,
    /// Below this many vectors a query scans all of them exactly instead of walking the graph
    /// (exact is both faster and perfect there). Default 5000; 0 always uses the graph.
    pub exact_below: usize,
}

impl Default for HnswParams {
    fn default() -> Self {
        Self {
            ef_construction: 100,
            ef_search: 100,
            seed: 42,
            exact_below: 5000,
        }
    }
}

/// Errors for HNSW parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HnswParamError {
    /// A parameter is outside its range.
    #[error("hnsw.{name} = {value} is out of range; use a value from 10 to 2000 (default 100)")]
    OutOfRange {
        /// `ef_construction` or `ef_search`.
        name: &'static str,
        /// The value given.
        value: usize,
    },
}

impl HnswParams {
    /// Checks the documented ranges.
    pub fn validate(&self) -> Result<(), HnswParamError> {
        for (name, value) in [("ef_construction", self.ef_construction), ("ef_search", self.ef_search)] {
            if !(10..=2000).contains(&value) {
                return Err(HnswParamError::OutOfRange { name, value });
            }
        }
        Ok(())
    }
}

/// A vector as a point of the HNSW graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vector(pub Vec<f32>);

impl Point for Vector {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dot(&self.0, &other.0)
    }
}

/// One scored chunk from dense retrieval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorHit {
    /// Chunk number.
    pub chunk: u32,
    /// Dot-product similarity (cosine for normalised vectors).
    pub score: f32,
}

/// Which search ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorMethod {
    /// The HNSW graph.
    Hnsw,
    /// An exact scan of every vector.
    Exact,
}

/// Chunk vectors and their HNSW graph.
pub struct VectorIndex {
    map: HnswMap<Vector, u32>,
    dims: usize,
    len: usize,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("dims", &self.dims)
            .field("len", &self.len)
            .finish()
    }
}

/// Errors building a vector index.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VectorBuildError {
    /// Vectors of different lengths.
    #[error("vector {index} has {got} dimensions but the model gives {expected}")]
    DimensionMismatch {
        /// Chunk number of the odd vector.
        index: usize,
        /// Expected dimensions.
        expected: usize,
        /// Dimensions found.
        got: usize,
    },
    /// A vector contains NaN or infinity.
    #[error("vector {index} contains NaN or infinity")]
    NotFinite {
        /// Chunk number of the vector.
        index: usize,
    },
}

impl VectorIndex {
    /// Builds the graph over `vectors` (vector `i` belongs to chunk `i`).
    ///
    /// `instant-distance` inserts points from rayon's thread pool; run this inside a one-thread
    /// pool to get a byte-identical graph on every build (the CLI does).
    pub fn build(vectors: Vec<Vec<f32>>, dims: usize, params: &HnswParams) -> Result<Self, VectorBuildError> {
        for (index, v) in vectors.iter().enumerate() {
            if v.len() != dims {
                return Err(VectorBuildError::DimensionMismatch {
                    index,
                    expected: dims,
                    got: v.len(),
                });
            }
            if v.iter().any(|x| !x.is_finite()) {
                return Err(VectorBuildError::NotFinite { index });
            }
        }
        let len = vectors.len();
        let values: Vec<u32> = (0..len as u32).collect();
        let points: Vec<Vector> = vectors.into_iter().map(Vector).collect();
        let map = Builder::default()
            .ef_construction(params.ef_construction)
            .ef_search(params.ef_search)
            .seed(params.seed)
            .build(points, values);
        Ok(Self { map, dims, len })
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Dimensions of every vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The vector of a chunk, by scanning (for tests and tools, not the hot path).
    pub fn vector_of(&self, chunk: u32) -> Option<&[f32]> {
        self.map
            .iter()
            .find(|(pid, _)| self.map.values.get(pid.into_inner() as usize) == Some(&chunk))
            .map(|(_, p)| p.0.as_slice())
    }

    /// The `k` nearest chunks by walking the graph, best first (at most `ef_search`).
    pub fn search_hnsw(&self, query: &[f32], k: usize, scratch: &mut Search) -> Vec<VectorHit> {
        let point = Vector(query.to_vec());
        let mut hits: Vec<VectorHit> = self
            .map
            .search(&point, scratch)
            .map(|item| VectorHit {
                chunk: *item.value,
                score: dot(query, &item.point.0),
            })
            .collect();
        sort_hits(&mut hits);
        hits.truncate(k);
        hits
    }

    /// The `k` nearest chunks by scanning every vector, best first; ties broken by lower chunk.
    pub fn search_exact(&self, query: &[f32], k: usize) -> Vec<VectorHit> {
        let mut hits: Vec<VectorHit> = self
            .map
            .iter()
            .filter_map(|(pid, p)| {
                let chunk = *self.map.values.get(pid.into_inner() as usize)?;
                Some(VectorHit {
                    chunk,
                    score: dot(query, &p.0),
                })
            })
            .collect();
        sort_hits(&mut hits);
        hits.truncate(k);
        hits
    }

    /// Serialises the vectors and graph (section "vectors" of a bundle).
    pub fn to_bytes(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.dims as u32).to_le_bytes());
        out.extend_from_slice(&(self.len as u32).to_le_bytes());
        let graph = bincode::serialize(&self.map).map_err(|e| e.to_string())?;
        out.extend_from_slice(&graph);
        Ok(out)
    }

    /// Reads a section written by [`VectorIndex::to_bytes`], validating the whole graph first.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = ByteReader::new(bytes);
        let dims = r.u32()? as usize;
        let len = r.u32()? as usize;
        let graph_offset = r.offset();
        let graph = r.take(r.remaining())?;
        validate_graph(graph, dims, len).map_err(|e| shift(e, graph_offset))?;
        let map: HnswMap<Vector, u32> = bincode::deserialize(graph).map_err(|_| DecodeError::Invalid {
            what: "hnsw graph",
            offset: graph_offset,
        })?;
        Ok(Self { map, dims, len })
    }
}

/// Walks bincode's encoding of `HnswMap<Vector, u32>` (fixed-width little-endian integers,
/// `u64` lengths) and checks everything the search relies on: `len` points of `dims` finite
/// values; a layer-0 node per point whose neighbours are absent (`u32::MAX`) or below `len`;
/// upper layers that shrink going up, start with the entry point, and link only within
/// themselves; and values that are a permutation of `0..len`. Nothing may be left over.
fn validate_graph(bytes: &[u8], dims: usize, len: usize) -> Result<(), DecodeError> {
    let mut r = ByteReader::new(bytes);
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
    for _ in 0..len {
        expect_len(&mut r, "hnsw vector dimensions", dims)?;
        for _ in 0..dims {
            let offset = r.offset();
            if !r.f32()?.is_finite() {
                return Err(invalid("hnsw vector value", offset));
            }
        }
    }
    let check_links = |r: &mut ByteReader, links: usize, below: usize| -> Result<(), DecodeError> {
        for _ in 0..links {
            let offset = r.offset();
            let id = r.u32()?;
            if id != INVALID && id as usize >= below {
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
    let mut seen = vec![false; len];
    for _ in 0..len {
        let offset = r.offset();
        let chunk = r.u32()? as usize;
        match seen.get_mut(chunk) {
            Some(s) if !*s => *s = true,
            _ => return Err(invalid("hnsw chunk number", offset)),
        }
    }
    r.finish("hnsw trailing bytes")
}

fn shift(e: DecodeError, by: usize) -> DecodeError {
    match e {
        DecodeError::Truncated {
            offset,
            needed,
            available,
        } => DecodeError::Truncated {
            offset: offset + by,
            needed,
            available,
        },
        DecodeError::BadVarint { offset } => DecodeError::BadVarint { offset: offset + by },
        DecodeError::Invalid { what, offset } => DecodeError::Invalid {
            what,
            offset: offset + by,
        },
    }
}

fn sort_hits(hits: &mut [VectorHit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Deterministic pseudo-random unit vectors (xorshift; the seed is printed by callers).
    pub(crate) fn random_unit_vectors(seed: u64, n: usize, dims: usize) -> Vec<Vec<f32>> {
        let mut state = seed.max(1);
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = (0..dims).map(|_| next()).collect();
                crate::vecmath::l2_normalize(&mut v);
                v
            })
            .collect()
    }

    fn one_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(f)
    }

    #[test]
    fn dot_matches_naive_sum() {
        let a: Vec<f32> = (0..11).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..11).map(|i| 1.0 - i as f32 * 0.1).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-5);
    }

    #[test]
    fn hnsw_recall_floor_against_exact() {
        let seed = 0x5eed_u64;
        println!("seed = {seed}");
        let vectors = random_unit_vectors(seed, 2000, 32);
        let queries = random_unit_vectors(seed ^ 0xabcdef, 50, 32);
        let index = one_thread(|| VectorIndex::build(vectors, 32, &HnswParams::default()).unwrap());
        let mut scratch = Search::default();
        let (mut found, mut total) = (0usize, 0usize);
        for q in &queries {
            let exact: Vec<u32> = index.search_exact(q, 10).iter().map(|h| h.chunk).collect();
            let approx: Vec<u32> = index.search_hnsw(q, 10, &mut scratch).iter().map(|h| h.chunk).collect();
            found += exact.iter().filter(|c| approx.contains(c)).count();
            total += exact.len();
        }
        let recall = found as f64 / total as f64;
        println!("recall@10 = {recall:.3}");
        assert!(recall >= 0.9, "HNSW recall@10 {recall} below 0.9 (seed {seed})");
    }

    #[test]
    fn exact_search_is_sorted_and_finds_itself() {
        let vectors = random_unit_vectors(7, 100, 16);
        let index = one_thread(|| VectorIndex::build(vectors.clone(), 16, &HnswParams::default()).unwrap());
        let hits = index.search_exact(&vectors[37], 5);
        assert_eq!(hits[0].chunk, 37);
        assert!((hits[0].score - 1.0).abs() < 1e-5);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        assert_eq!(index.vector_of(37).unwrap(), vectors[37].as_slice());
    }

    #[test]
    fn same_seed_same_bytes() {
        let vectors = random_unit_vectors(11, 300, 8);
        let a = one_thread(|| VectorIndex::build(vectors.clone(), 8, &HnswParams::default()).unwrap());
        let b = one_thread(|| VectorIndex::build(vectors, 8, &HnswParams::default()).unwrap());
        assert_eq!(a.to_bytes().unwrap(), b.to_bytes().unwrap());
    }

    #[test]
    fn round_trip_and_corruption() {
        let vectors = random_unit_vectors(3, 120, 8);
        let index = one_thread(|| VectorIndex::build(vectors.clone(), 8, &HnswParams::default()).unwrap());
        let bytes = index.to_bytes().unwrap();
        let back = VectorIndex::from_bytes(&bytes).unwrap();
        assert_eq!(back.to_bytes().unwrap(), bytes);
        assert_eq!(back.search_exact(&vectors[5], 3), index.search_exact(&vectors[5], 3));
        for cut in [0, 4, 8, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(VectorIndex::from_bytes(&bytes[..cut]).is_err());
        }
        // Point a layer-0 neighbour past the end: refused, not a panic at search time.
        let layer0 = 8 + 8 + 8 + 120 * (8 + 8 * 4) + 8;
        let mut bad = bytes.clone();
        bad[layer0..layer0 + 4].copy_from_slice(&500u32.to_le_bytes());
        assert!(matches!(
            VectorIndex::from_bytes(&bad),
            Err(DecodeError::Invalid {
                what: "hnsw neighbour id",
                ..
            })
        ));
    }

    #[test]
    fn empty_index_works() {
        let index = VectorIndex::build(Vec::new(), 4, &HnswParams::default()).unwrap();
        let back = VectorIndex::from_bytes(&index.to_bytes().unwrap()).unwrap();
        assert!(back.search_exact(&[1.0, 0.0, 0.0, 0.0], 3).is_empty());
        assert!(back
            .search_hnsw(&[1.0, 0.0, 0.0, 0.0], 3, &mut Search::default())
            .is_empty());
    }

    #[test]
    fn bad_vectors_are_refused() {
        assert!(matches!(
            VectorIndex::build(vec![vec![1.0, 0.0], vec![1.0]], 2, &HnswParams::default()),
            Err(VectorBuildError::DimensionMismatch { index: 1, .. })
        ));
        assert!(matches!(
            VectorIndex::build(vec![vec![f32::NAN, 0.0]], 2, &HnswParams::default()),
            Err(VectorBuildError::NotFinite { index: 0 })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn flipped_bytes_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
            let vectors = random_unit_vectors(5, 40, 4);
            let index = one_thread(|| VectorIndex::build(vectors.clone(), 4, &HnswParams::default()).unwrap());
            let mut bytes = index.to_bytes().unwrap();
            for (at, x) in flips {
                let n = bytes.len();
                bytes[at % n] ^= x;
            }
            if let Ok(back) = VectorIndex::from_bytes(&bytes) {
                let _ = back.search_hnsw(&vectors[0], 5, &mut Search::default());
                let _ = back.search_exact(&vectors[0], 5);
            }
        }
    }
}
