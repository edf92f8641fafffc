//! `eval --sweep`: the top 10 (what nDCG@10 and MRR@10 see, what a reader sees) under every
//! hybrid configuration and every build variant, on every collection; the choice among them by
//! the mean over collections, refusing any configuration that loses significantly to today's
//! defaults on one collection ([`choose_across`]); that choice cross-validated (each fold's
//! configuration chosen the same way on the other folds of every collection); and the same for
//! BM25's k1 and b with and without query expansion, in keyword mode.

use std::io::Write;

use anyhow::{bail, Result};
use serde::Serialize;
use sextant::bm25::Bm25Override;
use sextant::eval::{choose_across, folds, mean_over, paired_bootstrap, Choice, Interval, QueryMetrics};
use sextant::options::{Fusion, Mode, PageScore, SearchOptions};

use super::collections::{Judged, Variant};
use super::{column, mean_of, EvalArgs, Metric, METRICS, RESAMPLES};

/// Results per query a sweep ranks (nDCG@10 and MRR@10 see no further).
const K: usize = 10;

/// Resamples of each refusal test (a sweep makes many).
const REFUSAL_RESAMPLES: usize = 2_000;

/// One configuration of the sweep: a build variant and the query options run over it.
#[derive(Debug, Clone, Serialize)]
struct Config {
    variant: String,
    #[serde(skip)]
    at: usize,
    mode: Mode,
    fusion: Fusion,
    dense_weight: f64,
    /// `None`: chunks are fused; else documents, scored by their chunks so.
    pages: Option<PageScore>,
    depth: usize,
    query_expansion: bool,
    /// BM25 scores whole documents (the sweep's results are by document).
    document_bm25: bool,
    k1: Option<f32>,
    b: Option<f32>,
}

impl Config {
    fn options(&self) -> SearchOptions {
        SearchOptions {
            k: K,
            per_document: true,
            mode: self.mode,
            fusion: self.fusion,
            dense_weight: self.dense_weight,
            fuse_documents: self.pages.is_some(),
            page_score: self.pages.unwrap_or_default(),
            depth: Some(self.depth),
            query_expansion: self.query_expansion,
            document_bm25: self.document_bm25,
            bm25: (self.k1.is_some() || self.b.is_some()).then_some(Bm25Override { k1: self.k1, b: self.b }),
            ..Default::default()
        }
    }

    /// Today's defaults in `mode`, under the first variant.
    fn defaults(mode: Mode, variant: &str) -> Self {
        let d = SearchOptions {
            k: K,
            mode,
            ..Default::default()
        };
        Config {
            variant: variant.to_string(),
            at: 0,
            mode,
            fusion: d.fusion,
            dense_weight: d.dense_weight,
            pages: d.fuse_documents.then_some(d.page_score),
            depth: d.depth(),
            query_expansion: d.query_expansion,
            document_bm25: d.document_bm25,
            k1: None,
            b: None,
        }
    }

    fn same(&self, other: &Config) -> bool {
        self.at == other.at
            && self.mode == other.mode
            && self.query_expansion == other.query_expansion
            && self.document_bm25 == other.document_bm25
            && self.k1 == other.k1
            && self.b == other.b
            && (self.mode != Mode::Hybrid
                || (self.fusion == other.fusion
                    && (self.fusion == Fusion::Rrf || self.dense_weight == other.dense_weight)
                    && self.pages == other.pages
                    && self.depth == other.depth))
    }
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let expansion = match (self.query_expansion, self.document_bm25) {
            (false, false) => "",
            (true, false) => " +rm3",
            (false, true) => " +docbm25",
            (true, true) => " +rm3 +docbm25",
        };
        let variant = if self.at > 0 || self.variant != "defaults" {
            format!(" [{}]", self.variant)
        } else {
            String::new()
        };
        match self.mode {
            Mode::Hybrid => {
                let fusion = match self.fusion {
                    Fusion::Rrf => "rrf".to_string(),
                    Fusion::Convex => format!("convex w={:.1}", self.dense_weight),
                };
                let level = match self.pages {
                    None => "chunks",
                    Some(PageScore::Max) => "pages/max",
                    Some(PageScore::Sum3) => "pages/sum3",
                };
                write!(
                    f,
                    "{fusion:<12} {level:<10} depth {:<4}{expansion}{variant}",
                    self.depth
                )
            }
            Mode::Keyword => {
                let k1 = self.k1.map_or("index".to_string(), |v| format!("{v:.1}"));
                let b = self.b.map_or("index".to_string(), |v| format!("{v:.2}"));
                write!(f, "keyword k1 {k1:<5} b {b:<5}{expansion}{variant}")
            }
            Mode::Dense => write!(f, "dense{variant}"),
        }
    }
}

/// Each configuration's per-query metrics on each collection.
struct Table {
    configs: Vec<Config>,
    /// `per[config][collection][query]`.
    per: Vec<Vec<Vec<QueryMetrics>>>,
}

impl Table {
    fn run(configs: Vec<Config>, judged: &[Vec<Judged>], progress: &indicatif::ProgressBar) -> Result<Self> {
        let mut per = Vec::with_capacity(configs.len());
        for c in &configs {
            let options = c.options();
            options.validate()?;
            per.push(
                judged[c.at]
                    .iter()
                    .map(|j| j.metrics(&options))
                    .collect::<Result<Vec<_>>>()?,
            );
            progress.inc(1);
        }
        Ok(Self { configs, per })
    }

    fn position(&self, wanted: &Config) -> Option<usize> {
        self.configs.iter().position(|c| c.same(wanted))
    }

    /// `scores[config][collection][query]` of one metric, the queries `keep` says.
    fn scores(&self, metric: Metric, keep: &dyn Fn(usize, usize) -> bool) -> Vec<Vec<Vec<f64>>> {
        self.per
            .iter()
            .map(|collections| {
                collections
                    .iter()
                    .enumerate()
                    .map(|(c, per)| {
                        per.iter()
                            .enumerate()
                            .filter(|(q, _)| keep(c, *q))
                            .map(|(_, m)| metric(m))
                            .collect()
                    })
                    .collect()
            })
            .collect()
    }

    /// The mean of `metric` on each collection, then over them.
    fn means(&self, config: usize, metric: Metric) -> (Vec<f64>, f64) {
        let per: Vec<f64> = self.per[config].iter().map(|p| mean_of(p, metric)).collect();
        let mean = per.iter().sum::<f64>() / per.len().max(1) as f64;
        (per, mean)
    }
}

/// A configuration's difference from another on each collection (nDCG@10, 95% CI).
fn differences(table: &Table, a: usize, b: usize, seed: u64) -> Vec<Interval> {
    let ndcg = METRICS[0].1;
    table.per[a]
        .iter()
        .zip(&table.per[b])
        .map(|(x, y)| paired_bootstrap(&column(x, ndcg), &column(y, ndcg), RESAMPLES, seed))
        .collect()
}

/// What one part of the sweep (hybrid, or keyword) chose, and how it cross-validates.
#[derive(Serialize)]
struct Decision {
    chosen: Config,
    chosen_ndcg: Vec<f64>,
    chosen_mrr: Vec<f64>,
    defaults: Config,
    defaults_ndcg: Vec<f64>,
    defaults_mrr: Vec<f64>,
    /// The chosen minus the defaults, per collection (nDCG@10).
    chosen_minus_defaults: Vec<Interval>,
    refused: Vec<(String, String, Interval)>,
    folds: Vec<FoldChoice>,
    /// The held-out nDCG@10 of each fold's choice, per collection, and their mean.
    cv_ndcg: Vec<f64>,
    cv_mean: f64,
    /// The held-out choices minus the defaults, per collection.
    cv_minus_defaults: Vec<Interval>,
}

#[derive(Serialize)]
struct FoldChoice {
    fold: usize,
    chosen: String,
    train: f64,
    held_out: Vec<f64>,
}

fn decide(table: &Table, baseline: usize, names: &[String], args: &EvalArgs) -> Decision {
    let ndcg = METRICS[0].1;
    let mrr = METRICS[1].1;
    let all = table.scores(ndcg, &|_, _| true);
    let choice: Choice = choose_across(&all, baseline, REFUSAL_RESAMPLES, args.seed);
    let fold_of: Vec<Vec<usize>> = table.per[baseline]
        .iter()
        .map(|per| folds(per.len(), args.folds, args.seed))
        .collect();
    let mut held_out: Vec<Vec<Option<f64>>> = table.per[baseline].iter().map(|p| vec![None; p.len()]).collect();
    let mut fold_choices = Vec::new();
    for fold in 0..args.folds {
        let train = table.scores(ndcg, &|c, q| fold_of[c][q] != fold);
        let pick = choose_across(&train, baseline, REFUSAL_RESAMPLES, args.seed);
        let mut test_means = Vec::new();
        for (c, per) in table.per[pick.config].iter().enumerate() {
            let mut test = Vec::new();
            for (q, m) in per.iter().enumerate() {
                if fold_of[c][q] == fold {
                    held_out[c][q] = Some(m.ndcg10);
                    test.push(m.ndcg10);
                }
            }
            test_means.push(test.iter().sum::<f64>() / test.len().max(1) as f64);
        }
        fold_choices.push(FoldChoice {
            fold,
            chosen: table.configs[pick.config].to_string(),
            train: pick.mean,
            held_out: test_means,
        });
    }
    let held_out: Vec<Vec<f64>> = held_out
        .into_iter()
        .map(|v| v.into_iter().map(|x| x.unwrap_or(0.0)).collect())
        .collect();
    let cv_minus_defaults = held_out
        .iter()
        .zip(&table.per[baseline])
        .map(|(h, d)| paired_bootstrap(h, &column(d, ndcg), RESAMPLES, args.seed))
        .collect();
    Decision {
        chosen: table.configs[choice.config].clone(),
        chosen_ndcg: table.means(choice.config, ndcg).0,
        chosen_mrr: table.means(choice.config, mrr).0,
        defaults: table.configs[baseline].clone(),
        defaults_ndcg: table.means(baseline, ndcg).0,
        defaults_mrr: table.means(baseline, mrr).0,
        chosen_minus_defaults: differences(table, choice.config, baseline, args.seed),
        refused: choice
            .refused
            .iter()
            .map(|r| (table.configs[r.config].to_string(), names[r.collection].clone(), r.loss))
            .collect(),
        folds: fold_choices,
        cv_ndcg: held_out
            .iter()
            .map(|h| h.iter().sum::<f64>() / h.len().max(1) as f64)
            .collect(),
        cv_mean: mean_over(&held_out),
        cv_minus_defaults,
    }
}

/// Every hybrid configuration under every variant: with and without expansion, BM25 by chunk
/// and by document.
fn hybrid_grid(variants: &[Variant]) -> Vec<Config> {
    let mut configs = Vec::new();
    for (at, variant) in variants.iter().enumerate() {
        for (query_expansion, document_bm25) in [(false, false), (true, false), (false, true), (true, true)] {
            for depth in [50, 100, 200] {
                for pages in [None, Some(PageScore::Max), Some(PageScore::Sum3)] {
                    let rrf = Config {
                        variant: variant.name.clone(),
                        at,
                        mode: Mode::Hybrid,
                        fusion: Fusion::Rrf,
                        dense_weight: 0.5,
                        pages,
                        depth,
                        query_expansion,
                        document_bm25,
                        k1: None,
                        b: None,
                    };
                    configs.push(rrf.clone());
                    for dense_weight in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9] {
                        configs.push(Config {
                            fusion: Fusion::Convex,
                            dense_weight,
                            ..rrf.clone()
                        });
                    }
                }
            }
        }
    }
    configs
}

/// Keyword search under every variant, with and without expansion, by chunk and by document, at
/// BM25 parameters around the textbook ones (and the index's own).
fn keyword_grid(variants: &[Variant]) -> Vec<Config> {
    let mut configs = Vec::new();
    for (at, variant) in variants.iter().enumerate() {
        for (query_expansion, document_bm25) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut params: Vec<(Option<f32>, Option<f32>)> = vec![(None, None)];
            for k1 in [0.9, 1.2, 1.5, 2.0] {
                for b in [0.4, 0.6, 0.75, 0.9] {
                    params.push((Some(k1), Some(b)));
                }
            }
            for (k1, b) in params {
                configs.push(Config {
                    k1,
                    b,
                    query_expansion,
                    document_bm25,
                    mode: Mode::Keyword,
                    ..Config::defaults(Mode::Keyword, &variant.name).at(at)
                });
            }
        }
    }
    configs
}

impl Config {
    fn at(mut self, at: usize) -> Self {
        self.at = at;
        self
    }
}

pub fn run(judged: &[Vec<Judged>], variants: &[Variant], args: &EvalArgs) -> Result<()> {
    let smallest = judged[0].iter().map(|j| j.queries.len()).min().unwrap_or(0);
    if smallest < 2 {
        bail!("a sweep cross-validates, so every collection needs at least 2 judged queries (the smallest has {smallest})");
    }
    if !(2..=smallest).contains(&args.folds) {
        bail!(
            "--folds {} cannot split the {smallest} judged queries of the smallest collection; use 2 to {smallest}",
            args.folds
        );
    }
    let names: Vec<String> = judged[0].iter().map(|j| j.name.clone()).collect();
    let first = &variants[0].name;
    let mut hybrid = hybrid_grid(variants);
    let hybrid_defaults = Config::defaults(Mode::Hybrid, first);
    if !hybrid.iter().any(|c| c.same(&hybrid_defaults)) {
        hybrid.push(hybrid_defaults.clone());
    }
    let keyword = keyword_grid(variants);
    let dense: Vec<Config> = (0..variants.len())
        .map(|at| Config::defaults(Mode::Dense, &variants[at].name).at(at))
        .collect();
    let progress = crate::indexing::bar((hybrid.len() + keyword.len() + dense.len()) as u64, "configs");
    let dense = Table::run(dense, judged, &progress)?;
    let keyword = Table::run(keyword, judged, &progress)?;
    let hybrid = Table::run(hybrid, judged, &progress)?;
    progress.finish_and_clear();
    let keyword_base = keyword
        .position(&Config::defaults(Mode::Keyword, first))
        .expect("the keyword defaults are in the grid");
    let hybrid_base = hybrid.position(&hybrid_defaults).expect("the defaults are in the grid");
    let keyword_decision = decide(&keyword, keyword_base, &names, args);
    let hybrid_decision = decide(&hybrid, hybrid_base, &names, args);
    // The chosen hybrid against each single mode under its variant (the keyword as chosen).
    let chosen_at = hybrid_decision.chosen.at;
    let single_dense = chosen_at;
    let chosen_keyword = keyword
        .position(&Config {
            at: chosen_at,
            ..keyword_decision.chosen.clone()
        })
        .unwrap_or(keyword_base);
    let hybrid_chosen = hybrid
        .position(&hybrid_decision.chosen)
        .expect("the choice is in the grid");
    let versus = |single: &Table, at: usize| -> Vec<[Interval; 2]> {
        hybrid.per[hybrid_chosen]
            .iter()
            .zip(&single.per[at])
            .map(|(h, s)| {
                [0, 1]
                    .map(|m| paired_bootstrap(&column(h, METRICS[m].1), &column(s, METRICS[m].1), RESAMPLES, args.seed))
            })
            .collect()
    };
    let minus_dense = versus(&dense, single_dense);
    let minus_keyword = versus(&keyword, chosen_keyword);

    let mut out = std::io::stdout().lock();
    if args.json {
        let rows = |t: &Table| -> Vec<serde_json::Value> {
            (0..t.configs.len())
                .map(|i| {
                    serde_json::json!({"config": t.configs[i], "ndcg@10": t.means(i, METRICS[0].1).0, "mrr@10": t.means(i, METRICS[1].1).0})
                })
                .collect()
        };
        let v = serde_json::json!({
            "k": K, "seed": args.seed, "folds": args.folds,
            "collections": judged[0].iter().map(|j| serde_json::json!({"name": j.name, "queries": j.queries.len()})).collect::<Vec<_>>(),
            "dense": rows(&dense), "keyword": rows(&keyword), "hybrid": rows(&hybrid),
            "keyword_decision": keyword_decision, "hybrid_decision": hybrid_decision,
            "chosen_minus_dense": minus_dense, "chosen_minus_keyword": minus_keyword,
        });
        serde_json::to_writer(&mut out, &v)?;
        writeln!(out)?;
        return Ok(());
    }
    let heading = names
        .iter()
        .zip(&judged[0])
        .map(|(n, j)| format!("{n} ({} queries)", j.queries.len()))
        .collect::<Vec<_>>()
        .join(", ");
    writeln!(out, "top {K}, per document; {heading}; seed {}", args.seed)?;
    let header: String = names.iter().map(|n| format!(" {:>17}", shorten(n))).collect();
    writeln!(
        out,
        "{:<44}{header}  mean nDCG@10",
        "configuration  (nDCG@10 / MRR@10 each)"
    )?;
    for table in [&dense, &keyword, &hybrid] {
        for (i, c) in table.configs.iter().enumerate() {
            let (n, mean) = table.means(i, METRICS[0].1);
            let (m, _) = table.means(i, METRICS[1].1);
            let cells: String = n.iter().zip(&m).map(|(n, m)| format!("   {n:.4} / {m:.4}")).collect();
            writeln!(out, "{:<44}{cells}  {mean:.4}", c.to_string())?;
        }
    }
    for (what, d) in [("keyword", &keyword_decision), ("hybrid", &hybrid_decision)] {
        write_decision(&mut out, what, d, &names, args)?;
    }
    writeln!(
        out,
        "\nthe chosen hybrid minus each single mode (95% CI, paired bootstrap):"
    )?;
    for (c, name) in names.iter().enumerate() {
        for (what, v) in [("dense", &minus_dense), ("keyword", &minus_keyword)] {
            let [n, m] = v[c];
            writeln!(
                out,
                "  {name}: minus {what:<7} nDCG@10 {:+.4} [{:+.4}, {:+.4}]  MRR@10 {:+.4} [{:+.4}, {:+.4}]",
                n.mean, n.low, n.high, m.mean, m.low, m.high
            )?;
        }
    }
    Ok(())
}

fn shorten(name: &str) -> String {
    name.chars().take(17).collect()
}

fn write_decision(out: &mut impl Write, what: &str, d: &Decision, names: &[String], args: &EvalArgs) -> Result<()> {
    let cells = |v: &[f64]| v.iter().map(|x| format!("{x:.4}")).collect::<Vec<_>>().join(" / ");
    writeln!(
        out,
        "\n{what}: chosen {}  nDCG@10 {}  MRR@10 {}  (collections: {})",
        d.chosen,
        cells(&d.chosen_ndcg),
        cells(&d.chosen_mrr),
        names.join(" / ")
    )?;
    writeln!(
        out,
        "  defaults {}  nDCG@10 {}  MRR@10 {}",
        d.defaults,
        cells(&d.defaults_ndcg),
        cells(&d.defaults_mrr)
    )?;
    differences_by_collection(out, "chosen minus defaults", &d.chosen_minus_defaults, names)?;
    for (config, collection, loss) in d.refused.iter().take(5) {
        writeln!(
            out,
            "  refused {config}: loses on {collection} {:+.4} [{:+.4}, {:+.4}]",
            loss.mean, loss.low, loss.high
        )?;
    }
    if d.refused.len() > 5 {
        writeln!(out, "  ({} more refused)", d.refused.len() - 5)?;
    }
    writeln!(out, "  {}-fold cross-validation (seed {}):", args.folds, args.seed)?;
    for f in &d.folds {
        writeln!(
            out,
            "    fold {}: {}  train {:.4}  held out {}",
            f.fold,
            f.chosen,
            f.train,
            cells(&f.held_out)
        )?;
    }
    writeln!(
        out,
        "  cross-validated nDCG@10 {} (mean {:.4})",
        cells(&d.cv_ndcg),
        d.cv_mean
    )?;
    differences_by_collection(out, "cross-validated minus defaults", &d.cv_minus_defaults, names)
}

/// One line per collection: `what` on it, the mean difference and its 95% interval.
fn differences_by_collection(out: &mut impl Write, what: &str, cis: &[Interval], names: &[String]) -> Result<()> {
    for (ci, name) in cis.iter().zip(names) {
        writeln!(
            out,
            "  {what} on {name}: {:+.4} [{:+.4}, {:+.4}]",
            ci.mean, ci.low, ci.high
        )?;
    }
    Ok(())
}
