//! The query pipeline as small pure steps, each tested on its own:
//!
//! ```text
//! retrieve (keyword_candidates, dense_candidates) → fuse → filter → assemble
//! ```
//!
//! Every step takes plain data and returns plain data; [`super::Engine`] only strings them
//! together and times them.

use crate::bm25::{Bm25Index, Bm25Params};
use crate::bundle::Bundle;
use crate::fusion::{reciprocal_rank_fusion, RRF_K};
use crate::options::{Mode, VectorSearch};
use crate::vector::{HnswParams, VectorIndex, VectorMethod};

use super::{RetrieverHit, SearchResult};

/// One retriever's candidates, best first: (chunk number, that retriever's score).
pub type Ranked = Vec<(u32, f32)>;

/// The BM25 candidates for a query's analyzer terms: the top `depth`.
pub fn keyword_candidates(index: &Bm25Index, terms: &[String], params: Bm25Params, depth: usize) -> Ranked {
    index
        .search(terms, params, depth)
        .into_iter()
        .map(|h| (h.doc, h.score))
        .collect()
}

/// How the dense retriever runs: as asked, or with `auto`, exactly when there are fewer than
/// `hnsw.exact_below` vectors or more candidates are wanted than the graph search keeps.
pub fn vector_method(choice: VectorSearch, vectors: usize, depth: usize, hnsw: &HnswParams) -> VectorMethod {
    match choice {
        VectorSearch::Exact => VectorMethod::Exact,
        VectorSearch::Hnsw => VectorMethod::Hnsw,
        VectorSearch::Auto if vectors < hnsw.exact_below || depth > hnsw.ef_search => VectorMethod::Exact,
        VectorSearch::Auto => VectorMethod::Hnsw,
    }
}

/// The dense candidates for a query vector: the top `depth` by cosine, without those under
/// `min_similarity`.
pub fn dense_candidates(
    index: &VectorIndex,
    query: &[f32],
    depth: usize,
    method: VectorMethod,
    min_similarity: Option<f64>,
) -> Ranked {
    let hits = match method {
        VectorMethod::Exact => index.search_exact(query, depth),
        VectorMethod::Hnsw => index.search_hnsw(query, depth, &mut instant_distance::Search::default()),
    };
    hits.into_iter()
        .filter(|h| min_similarity.is_none_or(|m| f64::from(h.score) >= m))
        .map(|h| (h.chunk, h.score))
        .collect()
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

/// The results shown for the kept candidates: chunk and document fields from the bundle, and
/// each retriever's rank and score.
pub fn assemble(
    bundle: &Bundle,
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
        let Some(chunk) = bundle.chunks.get(candidate.chunk as usize) else {
            continue;
        };
        let Some(doc) = bundle.documents.get(chunk.doc as usize) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{Counts, DocumentInfo, FormatVersion, Manifest};
    use crate::chunk::{Chunk, ChunkParams};
    use crate::embed::{ModelSpec, Pooling};

    fn c(chunk: u32, score: f32, dense_rank: Option<u32>, keyword_rank: Option<u32>) -> Candidate {
        Candidate {
            chunk,
            score,
            dense_rank,
            keyword_rank,
        }
    }

    #[test]
    fn single_modes_keep_their_list_and_ranks() {
        let dense = [(4, 0.9), (1, 0.5)];
        let keyword = [(1, 7.0), (3, 2.0)];
        assert_eq!(
            fuse(Mode::Dense, &dense, &keyword),
            [c(4, 0.9, Some(1), None), c(1, 0.5, Some(2), None)]
        );
        assert_eq!(
            fuse(Mode::Keyword, &dense, &keyword),
            [c(1, 7.0, None, Some(1)), c(3, 2.0, None, Some(2))]
        );
    }

    #[test]
    fn hybrid_fuses_with_rrf_and_keeps_both_ranks() {
        let dense = [(4, 0.9), (1, 0.5)];
        let keyword = [(1, 7.0), (3, 2.0)];
        let fused = fuse(Mode::Hybrid, &dense, &keyword);
        let order: Vec<u32> = fused.iter().map(|h| h.chunk).collect();
        assert_eq!(order, [1, 4, 3], "1 is in both lists");
        assert_eq!((fused[0].dense_rank, fused[0].keyword_rank), (Some(2), Some(1)));
        assert!((fused[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert_eq!((fused[1].dense_rank, fused[1].keyword_rank), (Some(1), None));
        assert_eq!((fused[2].dense_rank, fused[2].keyword_rank), (None, Some(2)));
    }

    #[test]
    fn filter_applies_threshold_per_document_and_k() {
        let doc_of = |chunk: u32| (chunk < 10).then_some(chunk / 2);
        let candidates = vec![
            c(0, 0.9, None, None),
            c(1, 0.8, None, None),  // same document as 0
            c(2, 0.3, None, None),  // under the threshold
            c(99, 0.7, None, None), // unknown chunk
            c(4, 0.6, None, None),
            c(6, 0.5, None, None),
        ];
        let kept: Vec<u32> = filter(candidates.clone(), 10, Some(0.4), true, doc_of)
            .iter()
            .map(|h| h.chunk)
            .collect();
        assert_eq!(kept, [0, 4, 6]);
        let first_two: Vec<u32> = filter(candidates.clone(), 2, None, false, doc_of)
            .iter()
            .map(|h| h.chunk)
            .collect();
        assert_eq!(first_two, [0, 1]);
        let all: Vec<u32> = filter(candidates, 10, None, false, doc_of)
            .iter()
            .map(|h| h.chunk)
            .collect();
        assert_eq!(all, [0, 1, 2, 4, 6]);
    }

    #[test]
    fn auto_vector_method_is_exact_for_small_indexes_and_deep_lists() {
        let hnsw = HnswParams {
            exact_below: 100,
            ef_search: 50,
            ..HnswParams::default()
        };
        assert_eq!(vector_method(VectorSearch::Auto, 99, 10, &hnsw), VectorMethod::Exact);
        assert_eq!(vector_method(VectorSearch::Auto, 100, 10, &hnsw), VectorMethod::Hnsw);
        assert_eq!(vector_method(VectorSearch::Auto, 100, 51, &hnsw), VectorMethod::Exact);
        assert_eq!(vector_method(VectorSearch::Hnsw, 5, 500, &hnsw), VectorMethod::Hnsw);
        assert_eq!(
            vector_method(VectorSearch::Exact, 1_000_000, 1, &hnsw),
            VectorMethod::Exact
        );
    }

    /// Three chunks in two documents, vectors along the axes.
    fn tiny_bundle() -> Bundle {
        let chunk = |id: &str, doc: u32, text: &str| Chunk {
            id: id.into(),
            doc,
            index: 0,
            url: format!("/{id}"),
            heading_path: vec!["H".into()],
            text: text.into(),
            content_hash: crate::digest::sha256_hex(text.as_bytes()),
        };
        let chunks = vec![
            chunk("a#0", 0, "lamp oil"),
            chunk("a#1", 0, "fog horn"),
            chunk("b#0", 1, "lamp lens"),
        ];
        let analyzer = crate::analyzer::Analyzer::english();
        let terms: Vec<Vec<String>> = chunks.iter().map(|c| analyzer.terms(&c.text)).collect();
        let vectors = vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]];
        let doc = |id: &str| DocumentInfo {
            id: id.into(),
            source: id.into(),
            url: None,
            title: id.to_uppercase(),
            metadata: Default::default(),
        };
        Bundle {
            manifest: Manifest {
                format: FormatVersion { major: 1, minor: 0 },
                generator: "test".into(),
                crates: Default::default(),
                model: ModelSpec {
                    sha256: String::new(),
                    tokenizer_sha256: String::new(),
                    dims: 3,
                    max_tokens: 8,
                    pooling: Pooling::Mean,
                    normalize: true,
                    query_prefix: String::new(),
                    passage_prefix: String::new(),
                },
                analyzer: crate::analyzer::Analyzer::NAME.into(),
                chunking: ChunkParams::default(),
                bm25: Bm25Params::default(),
                hnsw: HnswParams::default(),
                counts: Counts {
                    documents: 2,
                    chunks: 3,
                    duplicates_dropped: 0,
                },
            },
            documents: vec![doc("a"), doc("b")],
            bm25: Bm25Index::build(&terms),
            vectors: VectorIndex::build(vectors, 3, &HnswParams::default()).unwrap(),
            chunks,
            sections: Vec::new(),
        }
    }

    #[test]
    fn retrieval_steps_rank_by_their_own_scores() {
        let bundle = tiny_bundle();
        let analyzer = crate::analyzer::Analyzer::english();
        let keyword = keyword_candidates(&bundle.bm25, &analyzer.terms("lamp lens"), Bm25Params::default(), 10);
        let order: Vec<u32> = keyword.iter().map(|(c, _)| *c).collect();
        assert_eq!(order, [2, 0], "both words beat one; the fog chunk has neither");
        let dense = dense_candidates(&bundle.vectors, &[0.0, 0.6, 0.8], 10, VectorMethod::Exact, None);
        assert_eq!(dense.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [2, 1, 0]);
        assert!((dense[0].1 - 0.8).abs() < 1e-6);
        let close = dense_candidates(&bundle.vectors, &[0.0, 0.6, 0.8], 10, VectorMethod::Exact, Some(0.5));
        assert_eq!(close.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [2, 1]);
    }

    #[test]
    fn assemble_fills_fields_and_each_retrievers_rank_and_score() {
        let bundle = tiny_bundle();
        let dense = [(2, 0.8), (1, 0.6)];
        let keyword = [(2, 3.5)];
        let kept = [c(2, 0.0325, Some(1), Some(1)), c(1, 0.0161, Some(2), None)];
        let results = assemble(&bundle, &kept, &dense, &keyword);
        assert_eq!(results.len(), 2);
        let top = &results[0];
        assert_eq!(
            (
                top.rank,
                top.chunk_id.as_str(),
                top.doc_id.as_str(),
                top.title.as_str(),
                top.url.as_str()
            ),
            (1, "b#0", "b", "B", "/b#0")
        );
        assert_eq!(top.text, "lamp lens");
        assert_eq!(top.dense, Some(RetrieverHit { rank: 1, score: 0.8 }));
        assert_eq!(top.keyword, Some(RetrieverHit { rank: 1, score: 3.5 }));
        assert_eq!(results[1].rank, 2);
        assert_eq!(results[1].dense, Some(RetrieverHit { rank: 2, score: 0.6 }));
        assert_eq!(results[1].keyword, None);
        // A rank past the end of its list gives no hit rather than a wrong score.
        let odd = assemble(&bundle, &[c(0, 1.0, Some(9), None)], &dense, &keyword);
        assert_eq!(odd[0].dense, None);
    }
}
