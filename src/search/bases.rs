//! Several knowledge bases searched together. Each base is searched alone, with the same query
//! and options; their lists are then fused by rank (reciprocal rank fusion, [`RRF_K`]), because
//! the scores of two indexes do not compare (BM25 depends on each index's statistics, and a
//! hybrid score is normalised within its own candidates). Each fused result names its base and
//! keeps its rank and score there.
//!
//! The rules every front end shares are here too: what a base may be named
//! ([`check_base_names`]), which bases a request chooses ([`select_bases`]), and how an id an LLM
//! or an agent reads says its base once there are several (`base:chunk_id`: [`qualify`],
//! [`split_qualified`]).

use serde::{Deserialize, Serialize};

use super::types::SearchResult;
use crate::fusion::{reciprocal_rank_fusion, sort_fused, RRF_K};
use crate::options::BadOption;

/// Longest name of a knowledge base, in bytes.
pub const MAX_BASE_NAME: usize = 64;

/// Whether `name` is a base's name: 1–[`MAX_BASE_NAME`] ASCII letters, digits, `.`, `_` or `-`,
/// starting with a letter or digit (it is a folder's and an id prefix's part, so no `:` or `/`).
pub fn valid_base_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
        && name.len() <= MAX_BASE_NAME
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn bad(reason: String) -> BadOption {
    BadOption { name: "bases", reason }
}

/// Checks the names of the bases a caller configures: each valid ([`valid_base_name`]), none
/// twice, at least one.
pub fn check_base_names(names: &[String]) -> Result<(), BadOption> {
    if names.is_empty() {
        return Err(bad("give at least one base: [{name, index}, …]".into()));
    }
    for (i, name) in names.iter().enumerate() {
        if !valid_base_name(name) {
            return Err(bad(format!(
                "a base's name must be 1–{MAX_BASE_NAME} letters, digits, '.', '_' or '-' (starting with a letter or digit), not {name:?}"
            )));
        }
        if names[..i].contains(name) {
            return Err(bad(format!("two bases are named {name:?}; give each its own name")));
        }
    }
    Ok(())
}

/// Which bases a request chose, as it wrote them: every base when absent, a list of names, or
/// names separated by commas (a query parameter).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Requested {
    /// Names, one an item.
    List(Vec<String>),
    /// `"a,b"`.
    Text(String),
}

/// The bases a request chooses among `names` (in the order it names them, each once); all of
/// them when it names none (`None`). Naming no base, or one that is not among `names`, is an
/// error that lists them.
pub fn select_bases(names: &[String], requested: Option<&Requested>) -> Result<Vec<String>, BadOption> {
    let list: Vec<&str> = match requested {
        None => return Ok(names.to_vec()),
        Some(Requested::List(list)) => list.iter().map(String::as_str).collect(),
        Some(Requested::Text(text)) => text.split(',').map(str::trim).filter(|b| !b.is_empty()).collect(),
    };
    let all = names.join(", ");
    if list.is_empty() {
        return Err(bad(format!(
            "it names no base; leave it out for all, or name some of {all}"
        )));
    }
    let mut chosen: Vec<String> = Vec::with_capacity(list.len());
    for base in list {
        if !names.iter().any(|n| n == base) {
            return Err(bad(format!("there is no base {base:?}; the bases are {all}")));
        }
        if !chosen.iter().any(|c| c == base) {
            chosen.push(base.to_string());
        }
    }
    Ok(chosen)
}

/// The id an LLM or an agent reads: `base:id` when there are several bases, else `id`.
pub fn qualify(base: &str, id: &str, several: bool) -> String {
    if several {
        format!("{base}:{id}")
    } else {
        id.to_string()
    }
}

/// The base and the base's own id of an id from results: `base` when given (a qualified id may
/// still carry it), the only base when there is one, else the base named before the first `:`.
pub fn split_qualified(id: &str, base: Option<&str>, names: &[String]) -> Result<(String, String), BadOption> {
    let several = names.len() > 1;
    let (name, local) = match base {
        Some(base) => {
            let local = id
                .strip_prefix(base)
                .and_then(|rest| rest.strip_prefix(':'))
                .filter(|_| several)
                .unwrap_or(id);
            (base, local)
        }
        None if !several && !names.is_empty() => (names[0].as_str(), id),
        None => match id.split_once(':') {
            Some((base, local)) if !base.is_empty() && names.iter().any(|n| n == base) => (base, local),
            _ => {
                return Err(bad(format!(
                    "say which base holds {id:?}: an id like \"base:chunk_id\", or {{base}}; the bases are {}",
                    names.join(", ")
                )))
            }
        },
    };
    if !names.iter().any(|n| n == name) {
        return Err(bad(format!(
            "there is no base {name:?}; the bases are {}",
            names.join(", ")
        )));
    }
    Ok((name.to_string(), local.to_string()))
}

/// One base's results, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseResults {
    /// The base's name.
    pub base: String,
    /// Its results.
    pub results: Vec<SearchResult>,
    /// How much its results count against the others' (1 by default; a merged site's
    /// `weight`): each result's fused score is multiplied by it.
    #[serde(default = "one")]
    pub weight: f32,
}

fn one() -> f32 {
    1.0
}

/// The most a base's weight may be (and more than 0): a weight is a preference between sites.
pub const MAX_BASE_WEIGHT: f32 = 100.0;

/// Checks each list's weight: finite, over 0 and at most [`MAX_BASE_WEIGHT`].
pub fn check_weights(lists: &[BaseResults]) -> Result<(), BadOption> {
    match lists.iter().find(|l| !(l.weight > 0.0 && l.weight <= MAX_BASE_WEIGHT)) {
        Some(l) => Err(bad(format!(
            "base {:?} has weight {}; a weight is a number over 0 and at most {MAX_BASE_WEIGHT}",
            l.base, l.weight
        ))),
        None => Ok(()),
    }
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
    let mut hits = reciprocal_rank_fusion(&slices, RRF_K);
    if lists.iter().any(|l| l.weight != 1.0) {
        for hit in &mut hits {
            if let Some(at) = offsets.iter().rposition(|&o| o <= hit.chunk) {
                hit.score *= lists[at].weight;
            }
        }
        sort_fused(&mut hits);
    }
    hits.into_iter()
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
            score,
            ..SearchResult::default()
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
            weight: 1.0,
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

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn base_names_are_checked_once_for_every_front_end() {
        for good in ["docs", "a", "v1.2_x-y", &"a".repeat(64)] {
            assert!(valid_base_name(good), "{good}");
        }
        for bad in ["", "-docs", ".x", "a:b", "a/b", "dé", &"a".repeat(65)] {
            assert!(!valid_base_name(bad), "{bad}");
        }
        assert!(check_base_names(&names(&["docs", "blog"])).is_ok());
        let e = check_base_names(&names(&["docs", "docs"])).unwrap_err();
        assert!(e.reason.contains("two bases are named \"docs\""), "{e}");
        assert!(check_base_names(&[]).is_err());
        assert!(check_base_names(&names(&["a:b"]))
            .unwrap_err()
            .reason
            .contains("letters, digits"));
    }

    #[test]
    fn a_request_chooses_bases_by_list_or_by_commas() {
        let all = names(&["docs", "blog", "api"]);
        assert_eq!(select_bases(&all, None).unwrap(), all);
        let list = Requested::List(names(&["api", "docs", "api"]));
        assert_eq!(select_bases(&all, Some(&list)).unwrap(), ["api", "docs"]);
        let text = Requested::Text(" blog , docs,".into());
        assert_eq!(select_bases(&all, Some(&text)).unwrap(), ["blog", "docs"]);
        let e = select_bases(&all, Some(&Requested::Text(" , ".into()))).unwrap_err();
        assert!(e.reason.contains("names no base"), "{e}");
        let e = select_bases(&all, Some(&Requested::List(names(&["wiki"])))).unwrap_err();
        assert_eq!(e.reason, "there is no base \"wiki\"; the bases are docs, blog, api");
    }

    #[test]
    fn ids_name_their_base_once_there_are_several() {
        assert_eq!(qualify("docs", "a.md#0", true), "docs:a.md#0");
        assert_eq!(qualify("docs", "a.md#0", false), "a.md#0");
        let two = names(&["docs", "blog"]);
        let split = |id, base| split_qualified(id, base, &two).map_err(|e| e.reason);
        assert_eq!(split("blog:x.md#1", None).unwrap(), ("blog".into(), "x.md#1".into()));
        assert_eq!(
            split("blog:x.md#1", Some("blog")).unwrap(),
            ("blog".into(), "x.md#1".into())
        );
        assert_eq!(split("x.md#1", Some("docs")).unwrap(), ("docs".into(), "x.md#1".into()));
        assert!(split("x.md#1", None).unwrap_err().contains("say which base"));
        assert!(split("wiki:x", None).unwrap_err().contains("say which base"));
        assert!(split("x", Some("wiki")).unwrap_err().contains("there is no base"));
        // One base: ids are its own, a colon included.
        let one = names(&["docs"]);
        assert_eq!(
            split_qualified("c:d#0", None, &one).unwrap(),
            ("docs".into(), "c:d#0".into())
        );
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

    #[test]
    fn a_base_weight_scales_its_fused_scores() {
        let lists = vec![
            base("docs", &["a#0", "b#0", "c#0", "d#0"]),
            base("blog", &["w#0", "x#0", "y#0", "z#0"]),
        ];
        // A base's weight scales its results' fused scores: a light base's first result falls
        // under the other's first few, and equal weights interleave as before.
        let weighted = |w: f32| {
            let mut l = lists.clone();
            l[1].weight = w;
            fuse_bases(&l, 6).iter().map(|r| r.base.clone()).collect::<Vec<_>>()
        };
        let even = weighted(1.0);
        assert_eq!(
            even,
            fuse_bases(&lists, 6).iter().map(|r| r.base.clone()).collect::<Vec<_>>()
        );
        let light = weighted(0.9);
        let first_light = light.iter().position(|b| *b == lists[1].base).unwrap();
        assert!(
            first_light > even.iter().position(|b| *b == lists[1].base).unwrap(),
            "{light:?} vs {even:?}"
        );
        let mut bad_weight = lists.clone();
        for w in [0.0, -1.0, f32::NAN, f32::INFINITY, 101.0] {
            bad_weight[0].weight = w;
            assert!(check_weights(&bad_weight).is_err(), "{w}");
        }
        bad_weight[0].weight = 2.5;
        assert!(check_weights(&bad_weight).is_ok());
    }
}
