//! Retrieval-quality metrics over BEIR-style queries and graded judgements.
//!
//! - nDCG@10 with gain `2^g − 1` and discount `log2(rank + 1)`, normalised by the ideal
//!   ordering of all judged documents of the query;
//! - MRR@10: `1 / rank` of the first document with gain > 0 in the top 10, else 0;
//! - Recall@100: the share of documents with gain > 0 found in the top 100.
//!
//! Rankings are of *documents* (a document ranks where its best chunk ranks). Means are over
//! the queries that have at least one judged relevant document.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

/// A query.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Query {
    /// Query id (string or number in the file).
    #[serde(rename = "_id", deserialize_with = "id_string")]
    pub id: String,
    /// Query text.
    pub text: String,
}

fn id_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!(
            "_id must be a string or number, not {other}"
        ))),
    }
}

/// Judgements: query id → document id → gain.
pub type Qrels = HashMap<String, HashMap<String, u32>>;

/// Why an evaluation input could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A queries line is malformed.
    #[error("queries line {line}: {reason}; each line must be {{\"_id\": \"1\", \"text\": \"…\"}}")]
    BadQuery {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A qrels line is malformed.
    #[error(
        "qrels line {line}: {reason}; each line must be query-id<TAB>corpus-id<TAB>gain (a header line is allowed)"
    )]
    BadQrel {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// Reads a queries JSONL file (blank lines skipped).
pub fn parse_queries(text: &str) -> Result<Vec<Query>, EvalError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let q: Query = serde_json::from_str(line).map_err(|e| EvalError::BadQuery {
            line: i + 1,
            reason: e.to_string(),
        })?;
        out.push(q);
    }
    Ok(out)
}

/// Reads a TREC/BEIR qrels TSV (`query-id corpus-id gain`; a first line that does not end in
/// a number is taken as a header).
pub fn parse_qrels(text: &str) -> Result<Qrels, EvalError> {
    let mut out: Qrels = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let bad = |reason: String| EvalError::BadQrel { line: i + 1, reason };
        let (query, doc, gain) = match fields.as_slice() {
            [q, d, g] => (*q, *d, *g),
            // TREC's four-column form: query, iteration, doc, gain.
            [q, _, d, g] => (*q, *d, *g),
            _ => return Err(bad(format!("{} tab-separated fields", fields.len()))),
        };
        let gain: i64 = match gain.parse() {
            Ok(g) => g,
            Err(_) if i == 0 => continue,
            Err(_) => return Err(bad(format!("gain {gain:?} is not an integer"))),
        };
        out.entry(query.to_string())
            .or_default()
            .insert(doc.to_string(), gain.max(0) as u32);
    }
    Ok(out)
}

/// One query's metrics.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct QueryMetrics {
    /// nDCG@10.
    pub ndcg10: f64,
    /// MRR@10.
    pub mrr10: f64,
    /// Recall@100.
    pub recall100: f64,
}

/// Metrics of one ranked list of document ids (best first; repeats after the first ignored).
pub fn score_query(ranked: &[String], judged: &HashMap<String, u32>) -> QueryMetrics {
    let mut seen = std::collections::HashSet::new();
    let ranked: Vec<&str> = ranked.iter().map(String::as_str).filter(|d| seen.insert(*d)).collect();
    let gain = |d: &str| judged.get(d).copied().unwrap_or(0);
    let dcg = |gains: &mut dyn Iterator<Item = u32>| -> f64 {
        gains
            .take(10)
            .enumerate()
            .map(|(i, g)| (2f64.powi(g as i32) - 1.0) / ((i + 2) as f64).log2())
            .sum()
    };
    let actual = dcg(&mut ranked.iter().map(|d| gain(d)));
    let mut ideal_gains: Vec<u32> = judged.values().copied().filter(|&g| g > 0).collect();
    ideal_gains.sort_unstable_by(|a, b| b.cmp(a));
    let ideal = dcg(&mut ideal_gains.into_iter());
    let ndcg10 = if ideal > 0.0 { actual / ideal } else { 0.0 };
    let mrr10 = ranked
        .iter()
        .take(10)
        .position(|d| gain(d) > 0)
        .map_or(0.0, |p| 1.0 / (p + 1) as f64);
    let relevant = judged.values().filter(|&&g| g > 0).count();
    let found = ranked.iter().take(100).filter(|d| gain(d) > 0).count();
    let recall100 = if relevant > 0 {
        found as f64 / relevant as f64
    } else {
        0.0
    };
    QueryMetrics {
        ndcg10,
        mrr10,
        recall100,
    }
}

/// Mean metrics of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunMetrics {
    /// The mode evaluated.
    pub mode: String,
    /// Mean nDCG@10.
    #[serde(rename = "ndcg@10")]
    pub ndcg10: f64,
    /// Mean MRR@10.
    #[serde(rename = "mrr@10")]
    pub mrr10: f64,
    /// Mean Recall@100.
    #[serde(rename = "recall@100")]
    pub recall100: f64,
    /// Queries averaged over.
    pub queries: usize,
}

/// Averages per-query metrics (queries with no relevant judgement are skipped by the caller).
pub fn mean(mode: &str, per_query: &BTreeMap<String, QueryMetrics>) -> RunMetrics {
    let n = per_query.len().max(1) as f64;
    let sum = per_query.values().fold(QueryMetrics::default(), |a, m| QueryMetrics {
        ndcg10: a.ndcg10 + m.ndcg10,
        mrr10: a.mrr10 + m.mrr10,
        recall100: a.recall100 + m.recall100,
    });
    RunMetrics {
        mode: mode.to_string(),
        ndcg10: sum.ndcg10 / n,
        mrr10: sum.mrr10 / n,
        recall100: sum.recall100 / n,
        queries: per_query.len(),
    }
}

/// Whether a query has at least one relevant (gain > 0) judgement.
pub fn has_relevant(judged: Option<&HashMap<String, u32>>) -> bool {
    judged.is_some_and(|j| j.values().any(|&g| g > 0))
}

/// A deterministic pseudo-random stream (SplitMix64): the same seed, the same draws everywhere.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A draw in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// The fold (0..`k`) of each of `n` queries: a seeded shuffle dealt round, so folds differ in
/// size by at most one.
pub fn folds(n: usize, k: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix::new(seed);
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut fold = vec![0; n];
    for (position, &query) in order.iter().enumerate() {
        fold[query] = position % k.max(1);
    }
    fold
}

/// A mean difference with its 95% confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Mean of `a − b` over the queries.
    pub mean: f64,
    /// 2.5th percentile of the bootstrap means.
    pub low: f64,
    /// 97.5th percentile of the bootstrap means.
    pub high: f64,
}

/// The paired bootstrap of `mean(a − b)` over queries (`a[i]`, `b[i]`: one query's metric under
/// two systems): `samples` resamples of the queries with replacement, seeded.
pub fn paired_bootstrap(a: &[f64], b: &[f64], samples: usize, seed: u64) -> Interval {
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let n = diffs.len();
    if n == 0 {
        return Interval {
            mean: 0.0,
            low: 0.0,
            high: 0.0,
        };
    }
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let mut rng = SplitMix::new(seed);
    let mut means: Vec<f64> = (0..samples.max(1))
        .map(|_| (0..n).map(|_| diffs[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * (means.len() - 1) as f64).round() as usize).min(means.len() - 1)];
    Interval {
        mean,
        low: at(0.025),
        high: at(0.975),
    }
}

/// A configuration passed over because it loses significantly on one collection.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Refusal {
    /// The configuration (its position in the scores).
    pub config: usize,
    /// The collection it loses on.
    pub collection: usize,
    /// Its difference from the baseline there, with the 95% interval (wholly below zero).
    pub loss: Interval,
}

/// What [`choose_across`] chose.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// The configuration chosen.
    pub config: usize,
    /// Its mean over collections of each collection's mean.
    pub mean: f64,
    /// The better configurations passed over, best first, each with where it lost.
    pub refused: Vec<Refusal>,
}

/// The mean over collections of each collection's mean (every collection weighs the same,
/// however many queries it has; a collection with no queries counts as 0).
pub fn mean_over(collections: &[Vec<f64>]) -> f64 {
    let per: Vec<f64> = collections
        .iter()
        .map(|v| v.iter().sum::<f64>() / v.len().max(1) as f64)
        .collect();
    per.iter().sum::<f64>() / per.len().max(1) as f64
}

/// Chooses among configurations by the mean over collections ([`mean_over`]) of their per-query
/// scores, `scores[config][collection][query]` (the same queries, in the same order, for every
/// configuration), refusing one that loses significantly to `baseline` on any collection: its
/// paired-bootstrap 95% interval of the difference lies wholly below zero. The best that is not
/// refused is chosen (the baseline never is refused, so there always is one); ties go to the
/// earlier configuration. `samples` resamples, seeded.
pub fn choose_across(scores: &[Vec<Vec<f64>>], baseline: usize, samples: usize, seed: u64) -> Choice {
    let mut order: Vec<(usize, f64)> = scores.iter().map(|c| mean_over(c)).enumerate().collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut refused = Vec::new();
    for (config, mean) in order {
        let loss = (config != baseline)
            .then(|| {
                scores[config]
                    .iter()
                    .zip(&scores[baseline])
                    .enumerate()
                    .find_map(|(collection, (a, b))| {
                        let ci = paired_bootstrap(a, b, samples, seed);
                        (ci.high < 0.0).then_some(Refusal {
                            config,
                            collection,
                            loss: ci,
                        })
                    })
            })
            .flatten();
        match loss {
            Some(r) => refused.push(r),
            None => return Choice { config, mean, refused },
        }
    }
    Choice {
        config: baseline,
        mean: scores.get(baseline).map_or(0.0, |c| mean_over(c)),
        refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn metrics_by_hand() {
        let judged: HashMap<String, u32> = [("a".to_string(), 2), ("b".to_string(), 1), ("z".to_string(), 0)].into();
        // Ranking: x, b, a. DCG = 0 + (2^1-1)/log2(3) + (2^2-1)/log2(4) = 0.6309298 + 1.5
        // IDCG = 3/log2(2) + 1/log2(3) = 3 + 0.6309298
        let m = score_query(&ids(&["x", "b", "a"]), &judged);
        assert!((m.ndcg10 - (0.630_929_8 + 1.5) / (3.0 + 0.630_929_8)).abs() < 1e-6);
        assert!((m.mrr10 - 0.5).abs() < 1e-12);
        assert!((m.recall100 - 1.0).abs() < 1e-12);
        let perfect = score_query(&ids(&["a", "b"]), &judged);
        assert!((perfect.ndcg10 - 1.0).abs() < 1e-12);
        let none = score_query(&ids(&["q", "r"]), &judged);
        assert_eq!(none, QueryMetrics::default());
        // A relevant document past rank 10 counts for recall only.
        let mut deep: Vec<String> = (0..10).map(|i| format!("n{i}")).collect();
        deep.push("a".into());
        let m = score_query(&deep, &judged);
        assert_eq!((m.ndcg10, m.mrr10), (0.0, 0.0));
        assert!((m.recall100 - 0.5).abs() < 1e-12);
    }

    #[test]
    fn folds_are_balanced_and_seeded() {
        let f = folds(23, 5, 7);
        let mut sizes = [0; 5];
        for &x in &f {
            sizes[x] += 1;
        }
        assert!(sizes.iter().all(|&s| s == 4 || s == 5), "{sizes:?}");
        assert_eq!(f, folds(23, 5, 7));
        assert_ne!(f, folds(23, 5, 8));
    }

    #[test]
    fn the_bootstrap_brackets_the_mean_difference() {
        let seed = 11;
        println!("seed {seed}");
        let mut rng = SplitMix::new(seed);
        let b: Vec<f64> = (0..200).map(|_| (rng.next_u64() % 1000) as f64 / 1000.0).collect();
        let a: Vec<f64> = b
            .iter()
            .enumerate()
            .map(|(i, x)| x + if i % 2 == 0 { 0.1 } else { 0.0 })
            .collect();
        let ci = paired_bootstrap(&a, &b, 2000, seed);
        assert!((ci.mean - 0.05).abs() < 1e-9);
        assert!(ci.low < 0.05 && 0.05 < ci.high && ci.low > 0.0, "{ci:?}");
        // No difference: an interval around zero.
        let same = paired_bootstrap(&b, &b, 100, seed);
        assert_eq!((same.mean, same.low, same.high), (0.0, 0.0, 0.0));
    }

    #[test]
    fn parses_beir_files() {
        let q = parse_queries("{\"_id\": \"1\", \"text\": \"wings\"}\n\n{\"_id\": 2, \"text\": \"flow\"}\n").unwrap();
        assert_eq!(q.len(), 2);
        assert_eq!(q[1].id, "2");
        assert!(matches!(
            parse_queries("{\"_id\": \"1\"}"),
            Err(EvalError::BadQuery { line: 1, .. })
        ));
        let r = parse_qrels("query-id\tcorpus-id\tscore\n1\t184\t4\n1\t29\t2\n2\t12\t1\n").unwrap();
        assert_eq!(r["1"]["184"], 4);
        assert_eq!(r["2"].len(), 1);
        assert!(matches!(
            parse_qrels("q\td\tg\n1\t2\tx\n"),
            Err(EvalError::BadQrel { line: 2, .. })
        ));
    }

    #[test]
    fn means_over_queries() {
        let mut per: BTreeMap<String, QueryMetrics> = BTreeMap::new();
        per.insert(
            "1".into(),
            QueryMetrics {
                ndcg10: 1.0,
                mrr10: 1.0,
                recall100: 1.0,
            },
        );
        per.insert(
            "2".into(),
            QueryMetrics {
                ndcg10: 0.0,
                mrr10: 0.5,
                recall100: 0.5,
            },
        );
        let m = mean("hybrid", &per);
        assert_eq!((m.ndcg10, m.mrr10, m.recall100, m.queries), (0.5, 0.75, 0.75, 2));
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json,
            "{\"mode\":\"hybrid\",\"ndcg@10\":0.5,\"mrr@10\":0.75,\"recall@100\":0.75,\"queries\":2}"
        );
    }

    #[test]
    fn the_choice_is_the_best_mean_that_loses_nowhere() {
        let seed = 3;
        println!("seed {seed}");
        let mut rng = SplitMix::new(seed);
        let noise = |rng: &mut SplitMix| (rng.next_u64() % 1000) as f64 / 1000.0;
        let a: Vec<f64> = (0..120).map(|_| noise(&mut rng)).collect();
        let b: Vec<f64> = (0..80).map(|_| noise(&mut rng)).collect();
        let shift = |v: &[f64], by: f64| v.iter().map(|x| x + by).collect::<Vec<f64>>();
        // 0: the baseline. 1: far better on the first collection, clearly worse on the second
        // (the best mean, refused). 2: a little better on both.
        let scores = vec![
            vec![a.clone(), b.clone()],
            vec![shift(&a, 0.5), shift(&b, -0.2)],
            vec![shift(&a, 0.05), shift(&b, 0.05)],
        ];
        assert!(mean_over(&scores[1]) > mean_over(&scores[2]));
        let choice = choose_across(&scores, 0, 1000, seed);
        assert_eq!(choice.config, 2);
        assert_eq!(choice.refused.len(), 1);
        assert_eq!((choice.refused[0].config, choice.refused[0].collection), (1, 1));
        assert!(choice.refused[0].loss.high < 0.0);
        // Collections weigh the same whatever their size.
        assert!((mean_over(&[vec![1.0; 10], vec![0.0; 1000]]) - 0.5).abs() < 1e-12);
        // Only the baseline: it is chosen.
        assert_eq!(choose_across(&scores[..1], 0, 100, seed).config, 0);
    }
}
