//! Reciprocal rank fusion (Cormack, Clarke & Büttcher, 2009) of ranked lists of chunk numbers.
//!
//! `score(c) = Σ over lists containing c of 1 / (k + rank)`, rank starting at 1, `k` = 60.
//! Fusion only sees ranks: it knows nothing of BM25 or HNSW scores, which are not comparable.

/// The RRF constant. 60 is the value from the original paper and what most systems ship.
pub const RRF_K: f32 = 60.0;

/// A fused item.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedHit {
    /// The chunk number.
    pub chunk: u32,
    /// Sum of `1 / (k + rank)` over the lists the chunk appears in.
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
    let best = |h: &FusedHit| h.ranks.iter().flatten().copied().min().unwrap_or(u32::MAX);
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(best(a).cmp(&best(b)))
            .then(a.chunk.cmp(&b.chunk))
    });
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn empty_lists_give_nothing() {
        assert!(reciprocal_rank_fusion(&[&[], &[]], RRF_K).is_empty());
        let one = reciprocal_rank_fusion(&[&[], &[2]], RRF_K);
        assert_eq!(one[0].ranks, vec![None, Some(1)]);
    }
}
