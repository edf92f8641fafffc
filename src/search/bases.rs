//! Several knowledge bases searched together. Each base is searched alone, with the same query
//! and options; their lists are then fused by rank (reciprocal rank fusion, [`RRF_K`]), because
//! the scores of two indexes do not compare (BM25 depends on each index's statistics, and a
//! hybrid score is normalised within its own candidates). Each fused result names its base and
//! keeps its rank and score there.

use serde::{Deserialize, Serialize};

use super::SearchResult;
use crate::fusion::{reciprocal_rank_fusion, RRF_K};

/// One base's results, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseResults {
    /// The base's name.
    pub base: String,
    /// Its results.
    pub results: Vec<SearchResult>,
}

/// A result of several bases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseResult {
    /// The base it comes from.
    pub base: String,
    /// The result, its `rank` the fused rank and its `score` the fused (RRF) score.
    #[serde(flatten)]
    pub result: SearchResult,
    /// Its rank in its own base's results.
    pub base_rank: u32,
    /// Its score in its own base's results (the mode's score there).
    pub base_score: f32,
}

/// Fuses the bases' lists into the best `k`, ranks from 1. Ties (the same rank in two bases) go
/// to the base listed first, so the same inputs always give the same order. One list alone keeps
/// its scores (fusing it would only rename them).
pub fn fuse_bases(lists: &[BaseResults], k: usize) -> Vec<BaseResult> {
    if let [list] = lists {
        return list
            .results
            .iter()
            .take(k)
            .map(|r| BaseResult {
                base: list.base.clone(),
                base_rank: r.rank,
                base_score: r.score,
                result: r.clone(),
            })
            .collect();
    }
    // Every result gets its own number (its list's offset plus its position): a chunk id found in
    // two bases is two results, one from each.
    let mut offsets = Vec::with_capacity(lists.len());
    let mut numbers: Vec<Vec<u32>> = Vec::with_capacity(lists.len());
    let mut next = 0u32;
    for list in lists {
        offsets.push(next);
        let count = list.results.len() as u32;
        numbers.push((next..next + count).collect());
        next += count;
    }
    let slices: Vec<&[u32]> = numbers.iter().map(Vec::as_slice).collect();
    reciprocal_rank_fusion(&slices, RRF_K)
        .into_iter()
        .take(k)
        .enumerate()
        .filter_map(|(at, hit)| {
            let list_at = offsets.iter().rposition(|&o| o <= hit.chunk)?;
            let list = &lists[list_at];
            let original = list.results.get((hit.chunk - offsets[list_at]) as usize)?;
            let mut result = original.clone();
            result.rank = at as u32 + 1;
            result.score = hit.score;
            Some(BaseResult {
                base: list.base.clone(),
                base_rank: original.rank,
                base_score: original.score,
                result,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, rank: u32, score: f32) -> SearchResult {
        SearchResult {
            rank,
            chunk_id: id.into(),
            doc_id: id.split('#').next().unwrap_or(id).into(),
            title: String::new(),
            source: String::new(),
            url: String::new(),
            heading_path: Vec::new(),
            text: String::new(),
            score,
            dense: None,
            keyword: None,
            rerank: None,
        }
    }

    fn base(name: &str, ids: &[&str]) -> BaseResults {
        BaseResults {
            base: name.into(),
            results: ids
                .iter()
                .enumerate()
                .map(|(i, id)| result(id, i as u32 + 1, 10.0 - i as f32))
                .collect(),
        }
    }

    #[test]
    fn fused_by_rank_with_ties_to_the_first_base_and_same_ids_kept_apart() {
        let lists = [base("docs", &["a#0", "b#0", "c#0"]), base("blog", &["a#0", "x#1"])];
        let fused = fuse_bases(&lists, 10);
        let order: Vec<(&str, &str, u32)> = fused
            .iter()
            .map(|r| (r.base.as_str(), r.result.chunk_id.as_str(), r.base_rank))
            .collect();
        assert_eq!(
            order,
            [
                ("docs", "a#0", 1),
                ("blog", "a#0", 1),
                ("docs", "b#0", 2),
                ("blog", "x#1", 2),
                ("docs", "c#0", 3)
            ]
        );
        assert_eq!(fused.iter().map(|r| r.result.rank).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
        assert!((fused[0].result.score - 1.0 / 61.0).abs() < 1e-7);
        assert_eq!(fused[1].base_score, 10.0);
    }

    #[test]
    fn cut_to_k_and_empty_or_missing_lists_are_fine() {
        assert!(fuse_bases(&[], 5).is_empty());
        let lists = [base("empty", &[]), base("one", &["a#0", "b#0", "c#0"])];
        let fused = fuse_bases(&lists, 2);
        assert_eq!(fused.len(), 2);
        assert!(fused.iter().all(|r| r.base == "one"));
        assert_eq!(fused[1].result.chunk_id, "b#0");
        // One base alone: its own ranks and scores.
        let alone = fuse_bases(&lists[1..], 2);
        assert_eq!(alone[1].result.score, 9.0);
        assert_eq!(alone[1].result.rank, 2);
    }
}
