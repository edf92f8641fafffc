//! The query pipeline as small pure steps, each tested on its own:
//!
//! ```text
//! retrieve (keyword_candidates; binary_candidates → rescore) → fuse → filter → assemble
//! ```
//!
//! Every step takes plain data (or the index store's files) and returns plain data;
//! [`super::Engine`] only strings them together, times them, and asks for the files a step
//! needs that are not loaded yet.

use serde::{Deserialize, Serialize};

use crate::bm25::{score, Bm25Params};
use crate::fusion::{reciprocal_rank_fusion, RRF_K};
use crate::index::files::VectorMeta;
use crate::index::IndexStore;
use crate::options::Mode;

use super::{RetrieverHit, SearchResult};

/// One retriever's candidates, best first: (chunk number, that retriever's score).
pub type Ranked = Vec<(u32, f32)>;

/// How the dense retriever ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorMethod {
    /// Binary codes of every chunk picked the candidates; their int8 vectors ranked them.
    Rescored,
    /// The int8 vector of every chunk was scored.
    Exact,
}

/// The BM25 candidates for a query's analyzer terms: the top `depth` (the store holds the norms
/// and the shards of these terms).
pub fn keyword_candidates(store: &IndexStore, terms: &[String], params: Bm25Params, depth: usize) -> Ranked {
    let Some(norms) = store.norms() else {
        return Vec::new();
    };
    score(
        terms,
        &|t: &str| store.postings(t),
        &norms.lengths,
        norms.avgdl,
        params,
        depth,
    )
    .into_iter()
    .map(|h| (h.doc, h.score))
    .collect()
}

/// The `count` chunks whose binary codes score best for `query` (ties to the lower chunk), or
/// every chunk when `count` reaches their number.
pub fn binary_candidates<'a>(
    meta: &VectorMeta,
    codes: impl Iterator<Item = (u32, &'a [u8])>,
    query: &[f32],
    count: usize,
) -> Vec<u32> {
    let tables = meta.lookup_table(query);
    let mut scored: Vec<(u32, f32)> = codes
        .map(|(chunk, code)| {
            let s: f32 = code
                .iter()
                .zip(&tables)
                .map(|(byte, table)| table[*byte as usize])
                .sum();
            (chunk, s)
        })
        .collect();
    if count < scored.len() {
        scored.select_nth_unstable_by(count, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(count);
    }
    let mut chunks: Vec<u32> = scored.into_iter().map(|(c, _)| c).collect();
    chunks.sort_unstable();
    chunks
}

/// The candidates ranked by `dot` (the int8 dot product with the float query), the top `depth`
/// of those at or above `min_similarity`.
pub fn rescore(
    candidates: &[u32],
    dot: &dyn Fn(u32) -> Option<f32>,
    depth: usize,
    min_similarity: Option<f64>,
) -> Ranked {
    let mut ranked: Ranked = candidates
        .iter()
        .filter_map(|&c| Some((c, dot(c)?)))
        .filter(|(_, s)| min_similarity.is_none_or(|m| f64::from(*s) >= m))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(depth);
    ranked
}

/// A chunk on its way to the results: the mode's score and its 1-based rank in each list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Chunk number.
    pub chunk: u32,
    /// Fused RRF score (hybrid), cosine (dense) or BM25 score (keyword).
    pub score: f32,
    /// Rank among the dense candidates.
    pub dense_rank: Option<u32>,
    /// Rank among the keyword candidates.
    pub keyword_rank: Option<u32>,
}

/// One ranking for the mode: a single retriever's list as it is, or both fused with RRF.
pub fn fuse(mode: Mode, dense: &[(u32, f32)], keyword: &[(u32, f32)]) -> Vec<Candidate> {
    let ranked = |list: &[(u32, f32)], is_dense: bool| -> Vec<Candidate> {
        list.iter()
            .zip(1u32..)
            .map(|(&(chunk, score), rank)| Candidate {
                chunk,
                score,
                dense_rank: is_dense.then_some(rank),
                keyword_rank: (!is_dense).then_some(rank),
            })
            .collect()
    };
    match mode {
        Mode::Dense => ranked(dense, true),
        Mode::Keyword => ranked(keyword, false),
        Mode::Hybrid => {
            let d: Vec<u32> = dense.iter().map(|(c, _)| *c).collect();
            let kw: Vec<u32> = keyword.iter().map(|(c, _)| *c).collect();
            reciprocal_rank_fusion(&[&d, &kw], RRF_K)
                .into_iter()
                .map(|h| Candidate {
                    chunk: h.chunk,
                    score: h.score,
                    dense_rank: h.ranks.first().copied().flatten(),
                    keyword_rank: h.ranks.get(1).copied().flatten(),
                })
                .collect()
        }
    }
}

/// The first `k` candidates scoring at least `score_threshold`, with `per_document` only the
/// first of each document (`document_of` maps a chunk to its document; chunks it does not know
/// are dropped).
pub fn filter(
    candidates: Vec<Candidate>,
    k: usize,
    score_threshold: Option<f64>,
    per_document: bool,
    document_of: impl Fn(u32) -> Option<u32>,
) -> Vec<Candidate> {
    let mut seen_documents = std::collections::HashSet::new();
    let mut kept = Vec::with_capacity(k.min(candidates.len()));
    for candidate in candidates {
        if kept.len() >= k {
            break;
        }
        if score_threshold.is_some_and(|t| f64::from(candidate.score) < t) {
            continue;
        }
        let Some(document) = document_of(candidate.chunk) else {
            continue;
        };
        if per_document && !seen_documents.insert(document) {
            continue;
        }
        kept.push(candidate);
    }
    kept
}

/// The results shown for the kept candidates: chunk and document fields from the fragments the
/// store holds, and each retriever's rank and score.
pub fn assemble(
    store: &IndexStore,
    kept: &[Candidate],
    dense: &[(u32, f32)],
    keyword: &[(u32, f32)],
) -> Vec<SearchResult> {
    let hit = |list: &[(u32, f32)], rank: Option<u32>| -> Option<RetrieverHit> {
        let rank = rank?;
        let &(_, score) = list.get(usize::try_from(rank).ok()?.checked_sub(1)?)?;
        Some(RetrieverHit { rank, score })
    };
    let mut results = Vec::with_capacity(kept.len());
    for candidate in kept {
        let Some(fragment) = store.fragment(candidate.chunk) else {
            continue;
        };
        let Some(chunk) = fragment.chunk(candidate.chunk) else {
            continue;
        };
        let Some(doc) = fragment.document(chunk.doc) else {
            continue;
        };
        results.push(SearchResult {
            rank: results.len() as u32 + 1,
            chunk_id: chunk.id.clone(),
            doc_id: doc.id.clone(),
            title: doc.title.clone(),
            source: doc.source.clone(),
            url: chunk.url.clone(),
            heading_path: chunk.heading_path.clone(),
            text: chunk.text.clone(),
            score: candidate.score,
            dense: hit(dense, candidate.dense_rank),
            keyword: hit(keyword, candidate.keyword_rank),
        });
    }
    results
}
