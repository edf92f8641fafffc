//! Fusion of ranked lists of chunk (or document) numbers into one ranking.
//!
//! - Reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009):
//!   `score(c) = Σ over lists containing c of 1 / (k + rank)`, rank starting at 1, `k` = 60. It
//!   sees ranks only.
//! - A convex combination of normalised scores (Bruch, Gai & Ingber, "An Analysis of Fusion
//!   Functions for Hybrid Retrieval", 2023): `score(c) = Σ wᵢ · (sᵢ(c) − mᵢ) / (Mᵢ − mᵢ)` with
//!   `Σ wᵢ = 1`, where `Mᵢ` is the best score of list `i` for this query and `mᵢ` its score
//!   function's theoretical minimum (their "TMM": 0 for BM25, −1 for cosine); a list that does
//!   not hold `c` adds 0. It uses how far apart scores are, not only their order.

/// The RRF constant. 60 is the value from the original paper and what most systems ship.
pub const RRF_K: f32 = 60.0;

/// A fused item.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedHit {
    /// The chunk number.
    pub chunk: u32,
    /// The fused score: RRF's sum of `1 / (k + rank)`, or the convex combination's weighted sum.
    pub score: f32,
    /// The chunk's 1-based rank in each input list (`None` where absent), in input order.
    pub ranks: Vec<Option<u32>>,
}

/// Fuses ranked lists (best first). A chunk repeated within one list counts at its first
/// position only. Output is sorted by fused score, then by the best rank the chunk reached in
/// any list, then by chunk number, so ties are deterministic.
pub fn reciprocal_rank_fusion(lists: &[&[u32]], k: f32) -> Vec<FusedHit> {
    let mut order: Vec<u32> = Vec::new();
    let mut by_chunk: std::collections::HashMap<u32, FusedHit> = std::collections::HashMap::new();
    for (list_at, list) in lists.iter().enumerate() {
        for (position, &chunk) in list.iter().enumerate() {
            let rank = position as u32 + 1;
            let hit = by_chunk.entry(chunk).or_insert_with(|| {
                order.push(chunk);
                FusedHit {
                    chunk,
                    score: 0.0,
                    ranks: vec![None; lists.len()],
                }
            });
            if let Some(slot) = hit.ranks.get_mut(list_at) {
                if slot.is_none() {
                    *slot = Some(rank);
                }
            }
        }
    }
    let mut hits: Vec<FusedHit> = order
        .into_iter()
        .filter_map(|chunk| by_chunk.remove(&chunk))
        .map(|mut hit| {
            // Sum in list order so the float result is the same everywhere.
            hit.score = hit.ranks.iter().flatten().map(|&r| 1.0 / (k + r as f32)).sum();
            hit
        })
        .collect();
    sort_fused(&mut hits);
    hits
}

/// How the lists of two retrievers become one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Reciprocal rank fusion (ranks only).
    Rrf,
    /// A convex combination of scores normalised by their theoretical minimum and the query's
    /// best score. The default.
    #[default]
    Convex,
}

named_enum!(Fusion { Rrf => "rrf", Convex => "convex" });

impl std::str::FromStr for Fusion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| format!("{s:?} is not rrf or convex"))
    }
}

/// How a page's chunks score the page when pages are fused (`fuse_documents`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageScore {
    /// Its best chunk (MaxP, Dai & Callan 2019). The default.
    #[default]
    Max,
    /// Its best three chunks added up (over the score's floor): a page that matches in several
    /// places comes before one that matches once.
    Sum3,
}

named_enum!(PageScore { Max => "max", Sum3 => "sum3" });

impl std::str::FromStr for PageScore {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| format!("{s:?} is not max or sum3"))
    }
}

/// One list for [`convex_combination`]: items best first with their scores, the score
/// function's theoretical minimum, and the list's weight.
#[derive(Debug, Clone, Copy)]
pub struct ScoredList<'a> {
    /// (item, score), best first.
    pub items: &'a [(u32, f32)],
    /// The lowest score the function can give (0 for BM25, −1 for cosine).
    pub floor: f32,
    /// Its weight (the weights of all lists sum to 1).
    pub weight: f32,
}

/// Fuses scored lists by a convex combination of their normalised scores (see the module
/// documentation). Ties are broken as in [`reciprocal_rank_fusion`]: best rank, then number.
pub fn convex_combination(lists: &[ScoredList<'_>]) -> Vec<FusedHit> {
    let mut order: Vec<u32> = Vec::new();
    let mut by_item: std::collections::HashMap<u32, (FusedHit, Vec<f32>)> = std::collections::HashMap::new();
    for (at, list) in lists.iter().enumerate() {
        let best = list.items.iter().map(|&(_, s)| s).fold(f32::NEG_INFINITY, f32::max);
        let span = best - list.floor;
        for (position, &(item, score)) in list.items.iter().enumerate() {
            let (hit, parts) = by_item.entry(item).or_insert_with(|| {
                order.push(item);
                (
                    FusedHit {
                        chunk: item,
                        score: 0.0,
                        ranks: vec![None; lists.len()],
                    },
                    vec![0.0; lists.len()],
                )
            });
            if hit.ranks[at].is_none() {
                hit.ranks[at] = Some(position as u32 + 1);
                let normalised = if span > 0.0 {
                    ((score - list.floor) / span).clamp(0.0, 1.0)
                } else {
                    1.0
                };
                parts[at] = list.weight * normalised;
            }
        }
    }
    let mut hits: Vec<FusedHit> = order
        .into_iter()
        .filter_map(|item| by_item.remove(&item))
        .map(|(mut hit, parts)| {
            // Summed in list order so the float result is the same everywhere.
            hit.score = parts.iter().sum();
            hit
        })
        .collect();
    sort_fused(&mut hits);
    hits
}

/// Sorts by fused score, then the best rank reached in any list, then number.
pub(crate) fn sort_fused(hits: &mut [FusedHit]) {
    let best = |h: &FusedHit| h.ranks.iter().flatten().copied().min().unwrap_or(u32::MAX);
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(best(a).cmp(&best(b)))
            .then(a.chunk.cmp(&b.chunk))
    });
}

/// A chunk list collapsed to its documents: each document once, where its best chunk ranks,
/// with that chunk's score (`document_of` maps a chunk to its document; unknown chunks drop).
pub fn documents_of(list: &[(u32, f32)], document_of: &dyn Fn(u32) -> Option<u32>) -> Vec<(u32, f32)> {
    documents_scored(list, document_of, PageScore::Max, 0.0)
}

/// A chunk list (best first) as its documents, each scored from its chunks as `page` says
/// (`floor`: the score function's lowest value, which [`PageScore::Sum3`] adds over), best
/// first; ties keep the order of the documents' best chunks.
pub fn documents_scored(
    list: &[(u32, f32)],
    document_of: &dyn Fn(u32) -> Option<u32>,
    page: PageScore,
    floor: f32,
) -> Vec<(u32, f32)> {
    let mut order: Vec<u32> = Vec::new();
    let mut scores: std::collections::HashMap<u32, (f32, usize)> = std::collections::HashMap::new();
    for &(chunk, score) in list {
        let Some(doc) = document_of(chunk) else { continue };
        let entry = scores.entry(doc).or_insert_with(|| {
            order.push(doc);
            (floor, 0)
        });
        let counted = match page {
            PageScore::Max => 1,
            PageScore::Sum3 => 3,
        };
        if entry.1 < counted {
            entry.0 += score - floor;
            entry.1 += 1;
        }
    }
    let mut out: Vec<(u32, f32)> = order.into_iter().map(|d| (d, scores[&d].0)).collect();
    // Stable: equal scores keep the order of first appearance.
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_scores_by_its_best_chunk_or_its_best_three() {
        // Chunks 0–2 are page 0, 3 is page 1, 4–7 page 2; the list is best first.
        let doc = |c: u32| {
            Some(match c {
                0..=2 => 0,
                3 => 1,
                _ => 2,
            })
        };
        let list = [
            (3, 0.9),
            (0, 0.8),
            (4, 0.5),
            (1, 0.4),
            (5, 0.4),
            (6, 0.3),
            (7, 0.3),
            (2, 0.1),
        ];
        assert_eq!(documents_of(&list, &doc), [(1, 0.9), (0, 0.8), (2, 0.5)]);
        let sum = documents_scored(&list, &doc, PageScore::Sum3, 0.0);
        let ids: Vec<u32> = sum.iter().map(|d| d.0).collect();
        assert_eq!(
            ids,
            [0, 2, 1],
            "0.8+0.4+0.1, 0.5+0.4+0.3 (the fourth chunk not counted), 0.9"
        );
        assert!((sum[0].1 - 1.3).abs() < 1e-6 && (sum[1].1 - 1.2).abs() < 1e-6);
        // Over a floor of −1 (cosine): each chunk adds its distance above the floor.
        let cos = documents_scored(&[(3, -0.5), (0, 0.0)], &doc, PageScore::Sum3, -1.0);
        assert_eq!(cos, [(0, 0.0), (1, -0.5)]);
        assert_eq!("sum3".parse::<PageScore>(), Ok(PageScore::Sum3));
        assert!("mean".parse::<PageScore>().is_err());
    }

    #[test]
    fn agreement_beats_a_single_top_rank() {
        // 7 is 2nd in both lists; 1 is 1st in one list only.
        let hits = reciprocal_rank_fusion(&[&[1, 7, 3], &[9, 7, 4]], RRF_K);
        assert_eq!(hits[0].chunk, 7);
        assert!((hits[0].score - 2.0 / 62.0).abs() < 1e-7);
        assert_eq!(hits[0].ranks, vec![Some(2), Some(2)]);
        assert_eq!(hits.len(), 5);
    }

    #[test]
    fn ties_break_by_best_rank_then_chunk_number() {
        // 5 and 8 both score 1/61: chunk number decides. 2 and 6 both 1/62.
        let hits = reciprocal_rank_fusion(&[&[8, 2], &[5, 6]], RRF_K);
        let order: Vec<u32> = hits.iter().map(|h| h.chunk).collect();
        assert_eq!(order, vec![5, 8, 2, 6]);
        // Mirrored lists give equal sums and equal best ranks: chunk number decides.
        let mirrored = reciprocal_rank_fusion(&[&[3, 4], &[4, 3]], RRF_K);
        assert_eq!(mirrored[0].score, mirrored[1].score);
        assert_eq!(mirrored.iter().map(|h| h.chunk).collect::<Vec<_>>(), vec![3, 4]);
    }

    #[test]
    fn duplicates_within_a_list_count_once() {
        let hits = reciprocal_rank_fusion(&[&[4, 4, 2]], RRF_K);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].ranks, vec![Some(1)]);
        assert!((hits[0].score - 1.0 / 61.0).abs() < 1e-7);
        assert_eq!(hits[1].ranks, vec![Some(3)]);
    }

    #[test]
    fn a_convex_combination_weighs_normalised_scores() {
        // Dense: cosines over a floor of -1, best 0.8; keyword: BM25 over 0, best 10.
        let dense = [(1, 0.8), (2, 0.6), (3, 0.4)];
        let keyword = [(3, 10.0), (4, 5.0)];
        let fused = convex_combination(&[
            ScoredList {
                items: &dense,
                floor: -1.0,
                weight: 0.5,
            },
            ScoredList {
                items: &keyword,
                floor: 0.0,
                weight: 0.5,
            },
        ]);
        let score = |c: u32| fused.iter().find(|h| h.chunk == c).unwrap().score;
        assert!((score(1) - 0.5).abs() < 1e-6);
        assert!((score(3) - (0.5 * 1.4 / 1.8 + 0.5)).abs() < 1e-6);
        assert!((score(4) - 0.25).abs() < 1e-6);
        assert_eq!(fused[0].chunk, 3, "in both lists");
        assert_eq!(fused[0].ranks, vec![Some(3), Some(1)]);
        // All weight on one list: its own order.
        let dense_only = convex_combination(&[
            ScoredList {
                items: &dense,
                floor: -1.0,
                weight: 1.0,
            },
            ScoredList {
                items: &keyword,
                floor: 0.0,
                weight: 0.0,
            },
        ]);
        assert_eq!(
            dense_only.iter().take(3).map(|h| h.chunk).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        // Equal scores and empty lists stay finite.
        let flat = convex_combination(&[
            ScoredList {
                items: &[(7, 0.0), (8, 0.0)],
                floor: 0.0,
                weight: 1.0,
            },
            ScoredList {
                items: &[],
                floor: 0.0,
                weight: 0.0,
            },
        ]);
        assert!(flat.iter().all(|h| h.score.is_finite()));
        assert_eq!(flat.iter().map(|h| h.chunk).collect::<Vec<_>>(), vec![7, 8]);
    }

    #[test]
    fn documents_keep_their_best_chunk() {
        let doc = |c: u32| (c < 100).then_some(c / 10);
        let docs = documents_of(
            &[(11, 0.9), (12, 0.8), (31, 0.7), (500, 0.6), (13, 0.5), (21, 0.4)],
            &doc,
        );
        assert_eq!(docs, vec![(1, 0.9), (3, 0.7), (2, 0.4)]);
    }

    #[test]
    fn empty_lists_give_nothing() {
        assert!(reciprocal_rank_fusion(&[&[], &[]], RRF_K).is_empty());
        let one = reciprocal_rank_fusion(&[&[], &[2]], RRF_K);
        assert_eq!(one[0].ranks, vec![None, Some(1)]);
    }
}
