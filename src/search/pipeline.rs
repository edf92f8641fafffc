//! The query pipeline as small pure steps, each tested on its own:
//!
//! ```text
//! retrieve (keyword_candidates, fallback_terms, expand_query; binary_candidates → rescore)
//!   → fuse → filter → assemble
//! ```
//!
//! Every step takes plain data (or the index store's files) and returns plain data. The
//! [`stages`] put them together over a store, asking for the files each needs that are not
//! loaded yet; [`super::Engine`] runs the stages in order and times them.

pub mod stages;

use std::collections::HashMap;

use crate::analyzer::Analyzer;
use crate::bm25::{score_documents_weighted, score_weighted, Bm25Params};
use crate::fusion::{
    convex_combination, documents_scored, reciprocal_rank_fusion, FusedHit, Fusion, PageScore, ScoredList, RRF_K,
};
use crate::index::files::VectorMeta;
use crate::index::IndexStore;
use crate::options::Mode;

pub use super::types::VectorMethod;
use super::types::{RetrieverHit, SearchResult};

/// One retriever's candidates, best first: (chunk number, that retriever's score).
pub type Ranked = Vec<(u32, f32)>;

/// What BM25 scores: chunks, or whole documents (each then stands as its best chunk:
/// [`score_documents_weighted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bm25Level {
    /// Each chunk on its own.
    Chunks,
    /// Each document as the sum of its chunks.
    Documents,
}

/// The BM25 candidates for a query's analyzer terms: the top `depth` (the store holds the norms
/// and the shards of these terms).
pub fn keyword_candidates(
    store: &IndexStore,
    terms: &[String],
    params: Bm25Params,
    depth: usize,
    level: Bm25Level,
) -> Ranked {
    let weighted: Vec<(String, f32)> = terms.iter().map(|t| (t.clone(), 1.0)).collect();
    weighted_keyword_candidates(store, &weighted, params, depth, level)
}

/// Index terms searched for at most, for each word of a query the index does not hold.
pub const FALLBACK_TERMS: usize = 3;

/// The weight of each term searched for in place of a query word the index does not hold, where
/// a word found as written weighs 1. Measured on Cranfield and NPL with one typo in every query
/// (`scripts/typo-queries.py`, BENCHMARKS.md): weighing the guesses half lost 0.024 keyword
/// nDCG@10 on NPL and 0.007 on Cranfield against full weight (the misspelled word is usually a
/// query's rarest and most telling), so they count as the word would have.
pub const FALLBACK_WEIGHT: f32 = 1.0;

/// The index terms to search for in place of a query term the index does not hold (a typo, or a
/// word being typed), from `candidates` (the index's terms starting with the same character,
/// with their document frequencies): those fewest edits away (a letter added, dropped, changed,
/// or two swapped; one edit for terms of 4–7 characters, two from 8), the term completed (the
/// query term starts it, from 3 characters; as one edit), or else cut short (it starts the query
/// term and is at most 2 characters shorter, from 4: a stem, as `configur` for `configura`;
/// after every one-edit term). At most [`FALLBACK_TERMS`] of the nearest, the most frequent
/// first; nothing when none is near.
pub fn fallback_terms(term: &str, candidates: &[(String, u32)]) -> Vec<String> {
    let len = term.chars().count();
    let most_edits = match len {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    };
    let mut near: Vec<(usize, u32, &str)> = candidates
        .iter()
        .filter(|(t, _)| t != term)
        .filter_map(|(t, df)| {
            let t_len = t.chars().count();
            // In half edits, so that a cut-short term comes after the one-edit ones.
            let cost = if len >= 3 && t.starts_with(term) {
                2
            } else if let Some(d) = edit_distance(term, t, most_edits) {
                2 * d
            } else if t_len >= 4 && term.starts_with(t.as_str()) && len - t_len <= 2 {
                3
            } else {
                return None;
            };
            Some((cost, *df, t.as_str()))
        })
        .collect();
    let Some(best) = near.iter().map(|n| n.0).min() else {
        return Vec::new();
    };
    near.retain(|n| n.0 == best);
    near.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(b.2)));
    near.into_iter().take(FALLBACK_TERMS).map(|n| n.2.to_string()).collect()
}

/// The query with each word whose term the index does not hold (a `corrections` key) written as
/// the results write the term searched in its place: the first word of the results' titles,
/// headings and texts that the analyzer reads as that term alone. Words in quotes and excluded
/// words stay as written. `None` without a correction, or when no result spells one.
pub fn did_you_mean(
    query: &str,
    corrections: &[(String, String)],
    results: &[SearchResult],
    analyzer: &Analyzer,
) -> Option<String> {
    if corrections.is_empty() {
        return None;
    }
    let words = |text: &str| -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
            match (c.is_alphanumeric(), start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    spans.push((s, i));
                    start = None;
                }
                _ => {}
            }
        }
        spans
    };
    let spelling = |term: &str| -> Option<String> {
        results.iter().take(SPELLING_RESULTS).find_map(|r| {
            let fields = std::iter::once(r.title.as_str())
                .chain(r.heading_path.iter().map(String::as_str))
                .chain(std::iter::once(r.text.as_str()));
            fields
                .flat_map(|f| words(f).into_iter().map(move |(a, b)| &f[a..b]))
                .find_map(|w| {
                    let terms = analyzer.terms(w);
                    (terms.len() == 1 && terms[0] == term).then(|| w.to_lowercase())
                })
        })
    };
    let mut out = String::with_capacity(query.len());
    let mut last = 0;
    let mut changed = false;
    for (a, b) in words(query) {
        let before = &query[..a];
        let quoted = before.matches('"').count() % 2 == 1;
        let excluded = before.ends_with('-') && before[..a - 1].chars().last().is_none_or(char::is_whitespace);
        if quoted || excluded {
            continue;
        }
        let terms = analyzer.terms(&query[a..b]);
        let [term] = terms.as_slice() else { continue };
        let Some((_, near)) = corrections.iter().find(|(t, _)| t == term) else {
            continue;
        };
        let Some(word) = spelling(near) else { continue };
        out.push_str(&query[last..a]);
        out.push_str(&word);
        last = b;
        changed = true;
    }
    out.push_str(&query[last..]);
    changed.then_some(out)
}

/// Results read for the spelling of a correction ([`did_you_mean`]).
pub const SPELLING_RESULTS: usize = 10;

/// The optimal-string-alignment distance between `a` and `b` (insertions, deletions,
/// substitutions and swaps of neighbours, in characters), if it is at most `most`.
fn edit_distance(a: &str, b: &str, most: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > most {
        return None;
    }
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    rows[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let change = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + change);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    let d = rows[a.len()][b.len()];
    (d <= most).then_some(d)
}

/// Chunks the keyword query is expanded from ([`expand_query`]).
pub const FEEDBACK_CHUNKS: usize = 10;
/// Terms an expansion adds at most.
pub const FEEDBACK_TERMS: usize = 10;
/// The original query's share of an expanded query's weight.
pub const ORIGINAL_QUERY_WEIGHT: f32 = 0.5;

/// RM3 pseudo-relevance feedback (Lavrenko & Croft's relevance model, interpolated with the
/// query as in Abdul-Jaleel et al. 2004; the constants are Anserini's defaults): the query's
/// terms, each weighted by its share of the query, mixed half and half with the
/// [`FEEDBACK_TERMS`] most likely terms of the top chunks, `P(w|R) = Σ_d P(w|d) · P(d|q)`, where
/// `P(w|d)` is the term's share of chunk `d` and `P(d|q)` the chunk's share of the feedback
/// chunks' BM25 scores. `feedback`: each top chunk's analyzer terms and BM25 score. Sorted by
/// term, so the same input gives the same query.
pub fn expand_query(terms: &[String], feedback: &[(Vec<String>, f32)]) -> Vec<(String, f32)> {
    let mut weights: std::collections::BTreeMap<String, f32> = std::collections::BTreeMap::new();
    for t in terms {
        *weights.entry(t.clone()).or_default() += ORIGINAL_QUERY_WEIGHT / terms.len().max(1) as f32;
    }
    let total: f32 = feedback.iter().map(|(_, s)| s.max(0.0)).sum();
    if total > 0.0 {
        let mut model: std::collections::BTreeMap<&str, f32> = std::collections::BTreeMap::new();
        for (chunk_terms, score) in feedback {
            if chunk_terms.is_empty() {
                continue;
            }
            let share = score.max(0.0) / total / chunk_terms.len() as f32;
            for t in chunk_terms {
                *model.entry(t.as_str()).or_default() += share;
            }
        }
        let mut best: Vec<(&str, f32)> = model.into_iter().collect();
        best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        best.truncate(FEEDBACK_TERMS);
        let mass: f32 = best.iter().map(|(_, p)| p).sum();
        for (t, p) in best {
            *weights.entry(t.to_string()).or_default() += (1.0 - ORIGINAL_QUERY_WEIGHT) * p / mass;
        }
    } else {
        for w in weights.values_mut() {
            *w /= ORIGINAL_QUERY_WEIGHT;
        }
    }
    weights.into_iter().collect()
}

/// The BM25 candidates of a weighted query (an expanded one), the top `depth`.
pub fn weighted_keyword_candidates(
    store: &IndexStore,
    query: &[(String, f32)],
    params: Bm25Params,
    depth: usize,
    level: Bm25Level,
) -> Ranked {
    let Some(norms) = store.norms() else {
        return Vec::new();
    };
    let weighted: Vec<(&str, f32)> = query.iter().map(|(t, w)| (t.as_str(), *w)).collect();
    let lookup = |t: &str| store.postings(t);
    match level {
        Bm25Level::Chunks => score_weighted(&weighted, &lookup, &norms.lengths, norms.avgdl, params, depth),
        Bm25Level::Documents => score_documents_weighted(
            &weighted,
            &lookup,
            (&norms.lengths, norms.avgdl),
            (&norms.documents, &norms.by_document),
            params,
            depth,
        ),
    }
    .into_iter()
    .map(|h| (h.doc, h.score))
    .collect()
}

/// The `count` chunks whose binary codes score best for `query` (ties to the lower chunk), or
/// every chunk when `count` reaches their number.
pub fn binary_candidates<'a>(
    meta: &VectorMeta,
    codes: impl Iterator<Item = (u32, &'a [u8], f32)>,
    query: &[f32],
    count: usize,
) -> Vec<u32> {
    let mut chunks: Vec<u32> = binary_scored(meta, codes, query, count)
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    chunks.sort_unstable();
    chunks
}

/// The `count` chunks whose binary codes score best for `query` with their code scores, best
/// first (ties to the lower chunk).
pub fn binary_scored<'a>(
    meta: &VectorMeta,
    codes: impl Iterator<Item = (u32, &'a [u8], f32)>,
    query: &[f32],
    count: usize,
) -> Vec<(u32, f32)> {
    let tables = meta.lookup_table(query);
    let mut scored: Vec<(u32, f32)> = codes
        .map(|(chunk, code, factor)| {
            let s: f32 = code
                .iter()
                .zip(&tables)
                .map(|(byte, table)| table[*byte as usize])
                .sum();
            (chunk, factor * s)
        })
        .collect();
    let best = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if count < scored.len() {
        scored.select_nth_unstable_by(count, best);
        scored.truncate(count);
    }
    scored.sort_unstable_by(best);
    scored
}

/// Scores for candidates that were not rescored, from their code scores: the least-squares line
/// from code score to int8 score over the rescored candidates (`pairs`: code score, int8 score),
/// its slope at least 0, each estimate at most the lowest int8 score, so rescored candidates
/// keep their order ahead of the estimated ones. Computed in f64 in a fixed order
/// (deterministic everywhere).
pub fn estimate_from_codes(pairs: &[(f32, f32)], codes: &[f32]) -> Vec<f32> {
    let Some(floor) = pairs.iter().map(|p| p.1).min_by(|a, b| a.total_cmp(b)) else {
        return Vec::new();
    };
    let n = pairs.len() as f64;
    let (mx, my) = pairs
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + f64::from(p.0), y + f64::from(p.1)));
    let (mx, my) = (mx / n, my / n);
    let (sxy, sxx) = pairs.iter().fold((0.0, 0.0), |(xy, xx), p| {
        let dx = f64::from(p.0) - mx;
        (xy + dx * (f64::from(p.1) - my), xx + dx * dx)
    });
    let slope = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    codes
        .iter()
        .map(|&c| ((my + slope * (f64::from(c) - mx)) as f32).min(floor))
        .collect()
}

/// The candidates ranked by `dot` (the int8 dot product with the float query), the top `depth`
/// of those at or above `min_similarity`; `estimated` (chunk, score) are ranked with them, scored
/// from their codes ([`estimate_from_codes`]).
pub fn rescore(
    candidates: &[u32],
    dot: &dyn Fn(u32) -> Option<f32>,
    estimated: &[(u32, f32)],
    depth: usize,
    min_similarity: Option<f64>,
) -> Ranked {
    let mut ranked: Ranked = candidates
        .iter()
        .filter_map(|&c| Some((c, dot(c)?)))
        .chain(estimated.iter().copied())
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
    /// The fused score (hybrid), cosine (dense) or BM25 score (keyword).
    pub score: f32,
    /// Rank among the dense candidates.
    pub dense_rank: Option<u32>,
    /// Rank among the keyword candidates.
    pub keyword_rank: Option<u32>,
}

/// How hybrid search fuses (from [`crate::options::SearchOptions`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FuseOptions {
    /// RRF or a convex combination.
    pub fusion: Fusion,
    /// The dense list's weight in a convex combination.
    pub dense_weight: f32,
    /// Fuse documents (each scored from its chunks as `page_score` says), not chunks.
    pub documents: bool,
    /// How a document's chunks score it when documents are fused.
    pub page_score: PageScore,
}

/// Two lists fused as `options` say (dense first, then keyword).
fn fuse_lists(options: &FuseOptions, dense: &[(u32, f32)], keyword: &[(u32, f32)]) -> Vec<FusedHit> {
    match options.fusion {
        Fusion::Rrf => {
            let d: Vec<u32> = dense.iter().map(|(c, _)| *c).collect();
            let kw: Vec<u32> = keyword.iter().map(|(c, _)| *c).collect();
            reciprocal_rank_fusion(&[&d, &kw], RRF_K)
        }
        Fusion::Convex => convex_combination(&[
            ScoredList {
                items: dense,
                floor: -1.0,
                weight: options.dense_weight,
            },
            ScoredList {
                items: keyword,
                floor: 0.0,
                weight: 1.0 - options.dense_weight,
            },
        ]),
    }
}

/// One ranking for the mode: a single retriever's list as it is, or both fused as `options`
/// say. Fusing documents, a document's chunks come together, in chunk-fusion order, each with
/// its document's fused score (`document_of` maps a chunk to its document).
pub fn fuse(
    mode: Mode,
    dense: &[(u32, f32)],
    keyword: &[(u32, f32)],
    options: &FuseOptions,
    document_of: &dyn Fn(u32) -> Option<u32>,
) -> Vec<Candidate> {
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
    let candidate = |h: &FusedHit, score: f32| Candidate {
        chunk: h.chunk,
        score,
        dense_rank: h.ranks.first().copied().flatten(),
        keyword_rank: h.ranks.get(1).copied().flatten(),
    };
    match mode {
        Mode::Dense => ranked(dense, true),
        Mode::Keyword => ranked(keyword, false),
        Mode::Hybrid if !options.documents => fuse_lists(options, dense, keyword)
            .iter()
            .map(|h| candidate(h, h.score))
            .collect(),
        Mode::Hybrid => {
            let chunks = fuse_lists(options, dense, keyword);
            let mut by_document: std::collections::HashMap<u32, Vec<&FusedHit>> = std::collections::HashMap::new();
            for h in &chunks {
                if let Some(d) = document_of(h.chunk) {
                    by_document.entry(d).or_default().push(h);
                }
            }
            let documents = fuse_lists(
                options,
                &documents_scored(dense, document_of, options.page_score, -1.0),
                &documents_scored(keyword, document_of, options.page_score, 0.0),
            );
            documents
                .iter()
                .flat_map(|d| {
                    by_document
                        .remove(&d.chunk)
                        .unwrap_or_default()
                        .into_iter()
                        .map(move |h| candidate(h, d.score))
                })
                .collect()
        }
    }
}

/// The first `k` candidates scoring at least `score_threshold`, at most `per_document` of each
/// document (`None`: any number; `document_of` maps a chunk to its document; chunks it does not
/// know are dropped).
pub fn filter(
    candidates: Vec<Candidate>,
    k: usize,
    score_threshold: Option<f64>,
    per_document: Option<usize>,
    document_of: impl Fn(u32) -> Option<u32>,
) -> Vec<Candidate> {
    let mut seen: HashMap<u32, usize> = HashMap::new();
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
        let shown = seen.entry(document).or_default();
        if per_document.is_some_and(|most| *shown >= most) {
            continue;
        }
        *shown += 1;
        kept.push(candidate);
    }
    kept
}

/// The results shown for the kept candidates: chunk and document fields from the fragments the
/// store holds, each retriever's rank and score, and the cross-encoder's score (`reranked`, by
/// chunk).
pub fn assemble(
    store: &IndexStore,
    kept: &[Candidate],
    dense: &[(u32, f32)],
    keyword: &[(u32, f32)],
    reranked: &std::collections::HashMap<u32, f32>,
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
            rerank: reranked.get(&candidate.chunk).copied(),
            metadata: doc.metadata.clone(),
        });
    }
    results
}

#[cfg(all(test, feature = "indexer"))]
mod tests {
    use super::*;
    use crate::index::tests::{build, full_store, tiny, Lcg};
    use crate::index::Layout;

    fn c(chunk: u32, score: f32, dense_rank: Option<u32>, keyword_rank: Option<u32>) -> Candidate {
        Candidate {
            chunk,
            score,
            dense_rank,
            keyword_rank,
        }
    }

    const RRF: FuseOptions = FuseOptions {
        fusion: Fusion::Rrf,
        dense_weight: 0.5,
        documents: false,
        page_score: PageScore::Max,
    };

    fn no_documents(_: u32) -> Option<u32> {
        None
    }

    #[test]
    fn single_modes_keep_their_list_and_ranks() {
        let dense = [(4, 0.9), (1, 0.5)];
        let keyword = [(1, 7.0), (3, 2.0)];
        assert_eq!(
            fuse(Mode::Dense, &dense, &keyword, &RRF, &no_documents),
            [c(4, 0.9, Some(1), None), c(1, 0.5, Some(2), None)]
        );
        assert_eq!(
            fuse(Mode::Keyword, &dense, &keyword, &RRF, &no_documents),
            [c(1, 7.0, None, Some(1)), c(3, 2.0, None, Some(2))]
        );
    }

    #[test]
    fn hybrid_fuses_with_rrf_and_keeps_both_ranks() {
        let dense = [(4, 0.9), (1, 0.5)];
        let keyword = [(1, 7.0), (3, 2.0)];
        let fused = fuse(Mode::Hybrid, &dense, &keyword, &RRF, &no_documents);
        let order: Vec<u32> = fused.iter().map(|h| h.chunk).collect();
        assert_eq!(order, [1, 4, 3], "1 is in both lists");
        assert_eq!((fused[0].dense_rank, fused[0].keyword_rank), (Some(2), Some(1)));
        assert!((fused[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert_eq!((fused[1].dense_rank, fused[1].keyword_rank), (Some(1), None));
        assert_eq!((fused[2].dense_rank, fused[2].keyword_rank), (None, Some(2)));
    }

    #[test]
    fn an_expanded_query_mixes_the_query_with_its_feedback() {
        let words = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        let feedback = [(words("wing flutter wing"), 3.0), (words("flutter speed"), 1.0)];
        let expanded = expand_query(&words("flutter"), &feedback);
        let weight = |t: &str| expanded.iter().find(|(w, _)| w == t).map(|(_, w)| *w).unwrap();
        // P(w|R): wing 0.75·2/3, flutter 0.75/3 + 0.25/2, speed 0.25/2; half of the weight.
        assert!((weight("wing") - 0.5 * 0.5).abs() < 1e-6);
        assert!((weight("flutter") - (0.5 + 0.5 * 0.375)).abs() < 1e-6);
        assert!((weight("speed") - 0.5 * 0.125).abs() < 1e-6);
        assert!((expanded.iter().map(|(_, w)| w).sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(expanded.windows(2).all(|p| p[0].0 < p[1].0), "sorted by term");
        // No feedback: the query alone, whole.
        assert_eq!(expand_query(&words("flutter"), &[]), vec![("flutter".to_string(), 1.0)]);
    }

    #[test]
    fn fusing_documents_ranks_pages_by_their_best_chunks() {
        // Chunks 10-12 are document 1, 20-21 document 2, 30 document 3.
        let doc_of = |chunk: u32| Some(chunk / 10);
        let dense = [(21, 0.9), (11, 0.8), (30, 0.7), (12, 0.6)];
        let keyword = [(12, 9.0), (20, 8.0), (10, 1.0)];
        let options = FuseOptions { documents: true, ..RRF };
        let fused = fuse(Mode::Hybrid, &dense, &keyword, &options, &doc_of);
        // Documents: dense [2, 1, 3], keyword [1, 2]; 1 and 2 tie on RRF, 1's best rank
        // ties too, so the lower number wins; each document's chunks follow in chunk order.
        let order: Vec<u32> = fused.iter().map(|c| c.chunk).collect();
        assert_eq!(order, [12, 11, 10, 21, 20, 30]);
        assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
        assert_eq!(
            (fused[0].dense_rank, fused[0].keyword_rank),
            (Some(4), Some(1)),
            "the chunk's own ranks"
        );
        // A convex fusion of documents orders by normalised scores instead.
        let convex = FuseOptions {
            fusion: Fusion::Convex,
            dense_weight: 0.9,
            documents: true,
            page_score: PageScore::Max,
        };
        let fused = fuse(Mode::Hybrid, &dense, &keyword, &convex, &doc_of);
        assert_eq!(
            fused[0].chunk, 21,
            "dense weighs most: document 2 first, by its best chunk"
        );
    }

    #[test]
    fn a_missing_term_falls_back_to_near_ones() {
        let index: Vec<(String, u32)> = [
            ("search", 9),
            ("seam", 2),
            ("sector", 4),
            ("configur", 5),
            ("configfile", 1),
            ("sextant", 7),
            ("sextantui", 1),
        ]
        .iter()
        .map(|(t, df)| (t.to_string(), *df))
        .collect();
        assert_eq!(fallback_terms("serach", &index), ["search"], "two letters swapped");
        assert_eq!(fallback_terms("sextnt", &index), ["sextant"], "a letter dropped");
        assert_eq!(
            fallback_terms("sext", &index),
            ["sextant", "sextantui"],
            "completed, frequent first"
        );
        assert_eq!(fallback_terms("configura", &index), ["configur"], "a stem cut short");
        assert!(fallback_terms("se", &index).is_empty(), "too short to guess");
        assert!(fallback_terms("zzzzzz", &index).is_empty());
        assert_eq!(edit_distance("kitten", "sitting", 3), Some(3));
        assert_eq!(edit_distance("kitten", "sitting", 2), None);
        assert_eq!(edit_distance("abcd", "abdc", 1), Some(1));
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
        let kept = |k, threshold, per_document| -> Vec<u32> {
            filter(candidates.clone(), k, threshold, per_document, doc_of)
                .iter()
                .map(|h| h.chunk)
                .collect()
        };
        assert_eq!(kept(10, Some(0.4), Some(1)), [0, 4, 6]);
        assert_eq!(kept(2, None, None), [0, 1]);
        assert_eq!(kept(10, None, None), [0, 1, 2, 4, 6]);
        // Two of each document: 1 follows 0, and k still counts chunks.
        assert_eq!(kept(10, None, Some(2)), [0, 1, 2, 4, 6]);
        assert_eq!(kept(3, None, Some(2)), [0, 1, 2]);
    }

    #[test]
    fn did_you_mean_spells_each_correction_as_the_results_do() {
        let analyzer = crate::analyzer::Analyzer::english();
        let result = |title: &str, text: &str| SearchResult {
            title: title.into(),
            text: text.into(),
            ..Default::default()
        };
        let results = [
            result("Fog signals", "The horn sounds in fog."),
            result(
                "Lamps",
                "Keepers trimmed the Lamps' wicks; configuring a lens takes a day.",
            ),
        ];
        let term = |w: &str| analyzer.terms(w)[0].clone();
        let fixes = [
            (term("lmaps"), term("lamps")),
            (term("configurin"), term("configuring")),
        ];
        // Each misspelled word takes the first spelling of its correction in the results (the
        // title first); the rest of the query stays as written.
        assert_eq!(
            did_you_mean("Lmaps oil, configurin?", &fixes, &results, &analyzer).as_deref(),
            Some("lamps oil, configuring?")
        );
        // Quoted and excluded words are taken as written.
        assert_eq!(did_you_mean("\"lmaps\" -lmaps fog", &fixes, &results, &analyzer), None);
        // No correction, or none the results spell: nothing to offer.
        assert_eq!(did_you_mean("lmaps", &[], &results, &analyzer), None);
        assert_eq!(did_you_mean("lmaps", &fixes[..1], &results[..1], &analyzer), None);
    }

    #[test]
    fn retrieval_steps_rank_by_their_own_scores() {
        let store = full_store(&tiny());
        let analyzer = crate::analyzer::Analyzer::english();
        let keyword = keyword_candidates(
            &store,
            &analyzer.terms("lamp lens"),
            Bm25Params::default(),
            10,
            Bm25Level::Chunks,
        );
        let order: Vec<u32> = keyword.iter().map(|(c, _)| *c).collect();
        assert_eq!(order, [2, 0], "both words beat one; the fog chunk has neither");
        let query = [0.0, 0.6, 0.8];
        let all = binary_candidates(store.meta().unwrap(), store.codes(), &query, 10);
        assert_eq!(all, [0, 1, 2], "every chunk when the count reaches their number");
        let dot = |c: u32| store.dot(c, &query);
        let dense = rescore(&all, &dot, &[], 10, None);
        assert_eq!(dense.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [2, 1, 0]);
        assert!((dense[0].1 - 0.8).abs() < 0.01);
        let close = rescore(&all, &dot, &[], 10, Some(0.5));
        assert_eq!(close.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [2, 1]);
        assert_eq!(rescore(&all, &dot, &[], 1, None).len(), 1, "depth");
    }

    #[test]
    fn a_codes_factor_scales_its_score() {
        let meta = VectorMeta {
            mean: vec![0.0; 8],
            spread: vec![1.0; 8],
        };
        let query = [1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0];
        // The same code three times, bits 0–5 set: +4 from dimensions 0–3, −2 from 4–5 (set, the
        // query negative), +2 from 6–7 (unset); only the factors differ, and the score follows.
        let code = [0b0011_1111u8];
        let codes = [(0u32, &code[..], 1.0f32), (1, &code[..], 2.5), (2, &code[..], 0.5)];
        let scored = binary_scored(&meta, codes.iter().copied(), &query, 3);
        let plain: f32 = 4.0 - 2.0 + 2.0;
        assert_eq!(
            scored,
            [(1, 2.5 * plain), (0, plain), (2, 0.5 * plain)],
            "best first, each its code score times its factor"
        );
    }

    #[test]
    fn code_scores_are_mapped_onto_the_int8_scale_below_every_rescored_score() {
        // Rescored on the line y = 2x + 1: the others follow it, capped at the lowest (3.0).
        let pairs = [(3.0, 7.0), (2.0, 5.0), (1.0, 3.0)];
        assert_eq!(estimate_from_codes(&pairs, &[0.5, -1.0, 1.5]), [2.0, -1.0, 3.0]);
        // A falling line is taken as flat: the mean, capped likewise.
        let falling = [(1.0, 3.0), (2.0, 1.0)];
        assert_eq!(estimate_from_codes(&falling, &[0.0, 5.0]), [1.0, 1.0]);
        // One rescored candidate, or none.
        assert_eq!(estimate_from_codes(&[(1.0, 0.5)], &[0.0]), [0.5]);
        assert!(estimate_from_codes(&[], &[1.0]).is_empty());
    }

    #[test]
    fn binary_candidates_hold_most_of_the_exact_top_ten() {
        let seed = 17;
        println!("seed {seed}");
        let mut rng = Lcg(seed);
        // 2000 chunks around 40 topics in 64 dimensions; queries near a topic.
        let dims = 64;
        let topics: Vec<Vec<f32>> = (0..40).map(|_| (0..dims).map(|_| rng.next_f32()).collect()).collect();
        let vectors: Vec<Vec<f32>> = (0..2000).map(|i| rng.near(&topics[i % 40], 0.6)).collect();
        let texts: Vec<String> = (0..2000).map(|i| format!("chunk {i}")).collect();
        let store = full_store(&build(&texts, &vectors, 10, Layout::default()));
        let (mut found, mut wanted) = (0, 0);
        for q in 0..20 {
            let query = rng.near(&topics[q * 2], 0.6);
            let mut exact: Vec<(u32, f32)> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| (i as u32, v.iter().zip(&query).map(|(a, b)| a * b).sum()))
                .collect();
            exact.sort_by(|a, b| b.1.total_cmp(&a.1));
            let candidates = binary_candidates(store.meta().unwrap(), store.codes(), &query, 100);
            assert_eq!(candidates.len(), 100);
            wanted += 10;
            found += exact[..10]
                .iter()
                .filter(|(c, _)| candidates.binary_search(c).is_ok())
                .count();
        }
        let recall = found as f64 / wanted as f64;
        println!("recall@10 of 100 binary candidates: {recall:.3}");
        assert!(recall >= 0.9, "recall {recall}");
    }

    #[test]
    fn assemble_fills_fields_and_each_retrievers_rank_and_score() {
        let store = full_store(&tiny());
        let dense = [(2, 0.8), (1, 0.6)];
        let keyword = [(2, 3.5)];
        let kept = [c(2, 0.0325, Some(1), Some(1)), c(1, 0.0161, Some(2), None)];
        let results = assemble(&store, &kept, &dense, &keyword, &Default::default());
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
        let odd = assemble(
            &store,
            &[c(0, 1.0, Some(9), None)],
            &dense,
            &keyword,
            &Default::default(),
        );
        assert_eq!(odd[0].dense, None);
    }
}
