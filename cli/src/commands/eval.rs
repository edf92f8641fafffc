//! `sextant eval`: nDCG@10, MRR@10 and Recall@100 of each mode on BEIR-style queries and qrels;
//! with `--all-modes`, hybrid's difference from each single mode with its 95% confidence interval
//! (paired bootstrap); with `--sweep`, every fusion method, weight, level and depth, and the
//! choice among them made by k-fold cross-validation.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use rayon::prelude::*;
use sextant::embed::TextKind;
use sextant::eval::{
    folds, has_relevant, mean, paired_bootstrap, parse_qrels, parse_queries, score_query, Qrels, Query, QueryMetrics,
};
use sextant::options::{Fusion, Mode, PageScore, SearchOptions};
use sextant::search::query::Query as ParsedQuery;
use sextant::search::Engine;

use crate::engine::{attach_reranker, open};
use crate::flags::{fusion_parser, mode_parser, page_score_parser};

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// The index: a packed `.sxt`, or the `manifest.*.json` of a split index (its files beside it).
    index: PathBuf,
    /// BEIR queries JSONL ({"_id", "text"} a line).
    #[arg(long)]
    queries: PathBuf,
    /// Qrels TSV (query-id, corpus-id, gain).
    #[arg(long)]
    qrels: PathBuf,
    /// Mode to evaluate.
    #[arg(long, default_value_t = SearchOptions::default().mode, value_parser = mode_parser(), conflicts_with = "all_modes")]
    mode: Mode,
    /// Evaluate hybrid, dense and keyword, with hybrid's difference from each (95% CI).
    #[arg(long)]
    all_modes: bool,
    /// Candidates per retriever before fusion (default: as a search for 100 results, 1,000).
    #[arg(long)]
    depth: Option<usize>,
    /// Hybrid fusion: rrf or convex.
    #[arg(long, default_value_t = SearchOptions::default().fusion, value_parser = fusion_parser())]
    fusion: Fusion,
    /// The dense list's weight in a convex fusion (0–1).
    #[arg(long, default_value_t = SearchOptions::default().dense_weight)]
    dense_weight: f64,
    /// Fuse documents, not chunks: true or false.
    #[arg(long, default_value_t = SearchOptions::default().fuse_documents, action = clap::ArgAction::Set)]
    fuse_documents: bool,
    /// Expand keyword queries (RM3 pseudo-relevance feedback): true or false.
    #[arg(long, default_value_t = SearchOptions::default().query_expansion, action = clap::ArgAction::Set)]
    query_expansion: bool,
    /// With --fuse-documents true, how a page's chunks score it: max or sum3.
    #[arg(long, default_value_t = SearchOptions::default().page_score, value_parser = page_score_parser())]
    page_score: PageScore,
    /// Evaluate every hybrid fusion (rrf; convex at dense weights 0.3–0.9), level (chunks,
    /// documents), depth (20–1000) and query expansion (off, RM3) for the top 10, and choose among them by k-fold
    /// cross-validation on nDCG@10.
    #[arg(long, conflicts_with_all = ["all_modes", "mode"])]
    sweep: bool,
    /// Folds of the cross-validation.
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// Seed of the folds and of the bootstrap (printed with the results).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder with model.onnx and tokenizer.json (default: the cached model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// How the query's model multiplies: int8 (integer products, the default everywhere queries
    /// run) or f32 (the f32 arithmetic `build` embeds passages with).
    #[arg(long, default_value = "int8", value_parser = crate::flags::weights_parser())]
    weights: sextant::embed::Weights,
    /// A sextant.toml: with a [rerank] section, its cross-encoder reranks each mode's best
    /// results (the default rerank depth, 20).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Print JSON (one object per mode; one object for a sweep).
    #[arg(long)]
    json: bool,
    /// Also write each query's metrics to this file, one JSON object a line ({"mode", "query",
    /// "ndcg@10", "mrr@10", "recall@100"}): to compare indexes built differently query by query.
    #[arg(long, conflicts_with = "sweep")]
    per_query: Option<PathBuf>,
}

/// Bootstrap resamples behind every confidence interval.
const RESAMPLES: usize = 10_000;

/// The judged queries with their embedded vectors, ready to run any options over.
struct Run<'a> {
    engine: &'a Engine,
    queries: Vec<&'a Query>,
    vectors: Vec<Option<Vec<f32>>>,
    qrels: &'a Qrels,
}

impl Run<'_> {
    /// Each query's metrics under `options`, in query order.
    fn metrics(&self, options: &SearchOptions) -> Result<Vec<QueryMetrics>> {
        let clock = sextant::search::NoClock;
        let empty = Default::default();
        Ok(self
            .queries
            .par_iter()
            .zip(self.vectors.par_iter())
            .map(|(q, v)| {
                let response = self
                    .engine
                    .search_with_vector(&q.text, v.as_deref(), options, &clock)?
                    .done()?;
                let ranked: Vec<String> = response.results.into_iter().map(|r| r.doc_id).collect();
                Ok(score_query(&ranked, self.qrels.get(&q.id).unwrap_or(&empty)))
            })
            .collect::<Result<_, sextant::search::SearchError>>()?)
    }
}

/// One metric of a query's metrics.
type Metric = fn(&QueryMetrics) -> f64;

fn mean_of(values: &[QueryMetrics], metric: Metric) -> f64 {
    values.iter().map(metric).sum::<f64>() / values.len().max(1) as f64
}

fn ndcg(m: &QueryMetrics) -> f64 {
    m.ndcg10
}

pub fn run(args: EvalArgs) -> Result<()> {
    let modes: Vec<Mode> = if args.all_modes || args.sweep {
        Mode::ALL.to_vec()
    } else {
        vec![args.mode]
    };
    let needs_model = modes.iter().any(|m| m.needs_model());
    let mut engine = open(&args.index, args.model.as_deref(), needs_model.then_some(args.weights))?;
    attach_reranker(&mut engine, args.config.as_deref())?;
    let queries_text =
        std::fs::read_to_string(&args.queries).with_context(|| format!("reading {}", args.queries.display()))?;
    let qrels_text =
        std::fs::read_to_string(&args.qrels).with_context(|| format!("reading {}", args.qrels.display()))?;
    let queries = parse_queries(&queries_text).with_context(|| format!("in {}", args.queries.display()))?;
    let qrels = parse_qrels(&qrels_text).with_context(|| format!("in {}", args.qrels.display()))?;
    let judged: Vec<_> = queries.iter().filter(|q| has_relevant(qrels.get(&q.id))).collect();
    if judged.is_empty() {
        anyhow::bail!(
            "none of the {} queries has a relevant judgement in {}; check that the query ids match",
            queries.len(),
            args.qrels.display()
        );
    }
    // Embed every query once; every mode and configuration reuses the vectors.
    let progress = ProgressBar::new(judged.len() as u64);
    progress.set_message("embedding queries");
    let vectors: Vec<Option<Vec<f32>>> = judged
        .par_iter()
        .map(|q| {
            let v = match engine.embedder() {
                // What `sextant search` embeds: the query without its excluded words.
                Some(e) if needs_model => Some(e.embed(&ParsedQuery::parse(&q.text).text, TextKind::Query)).transpose(),
                _ => Ok(None),
            };
            progress.inc(1);
            v
        })
        .collect::<Result<_, _>>()?;
    progress.finish_and_clear();
    let run = Run {
        engine: &engine,
        queries: judged,
        vectors,
        qrels: &qrels,
    };
    if args.sweep {
        if !(2..=run.queries.len()).contains(&args.folds) {
            anyhow::bail!(
                "--folds {} cannot split {} judged queries; use 2 to {}",
                args.folds,
                run.queries.len(),
                run.queries.len()
            );
        }
        return sweep(&run, &args);
    }
    let mut results: Vec<(Mode, Vec<QueryMetrics>)> = Vec::new();
    for mode in modes {
        let options = SearchOptions {
            k: 100,
            mode,
            per_document: true,
            depth: args.depth,
            fusion: args.fusion,
            dense_weight: args.dense_weight,
            fuse_documents: args.fuse_documents,
            query_expansion: args.query_expansion,
            page_score: args.page_score,
            ..Default::default()
        };
        options.validate()?;
        results.push((mode, run.metrics(&options)?));
    }
    if let Some(path) = &args.per_query {
        let mut lines = String::new();
        for (mode, per) in &results {
            for (q, m) in run.queries.iter().zip(per) {
                let line = serde_json::json!({"mode": mode.name(), "query": q.id, "ndcg@10": m.ndcg10, "mrr@10": m.mrr10, "recall@100": m.recall100});
                lines.push_str(&line.to_string());
                lines.push('\n');
            }
        }
        std::fs::write(path, lines).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    for (mode, per) in &results {
        let by_id: BTreeMap<String, QueryMetrics> = run
            .queries
            .iter()
            .map(|q| q.id.clone())
            .zip(per.iter().copied())
            .collect();
        let m = mean(mode.name(), &by_id);
        if args.json {
            serde_json::to_writer(&mut out, &m)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{:<8} nDCG@10 {:.4}  MRR@10 {:.4}  Recall@100 {:.4}  ({} queries)",
                m.mode, m.ndcg10, m.mrr10, m.recall100, m.queries
            )?;
        }
    }
    // Hybrid against each single mode, per metric: the mean difference and its 95% interval.
    if let Some((_, hybrid)) = results.iter().find(|(m, _)| *m == Mode::Hybrid) {
        for (mode, single) in results.iter().filter(|(m, _)| *m != Mode::Hybrid) {
            let metrics: [(&str, Metric); 3] = [
                ("nDCG@10", ndcg),
                ("MRR@10", |m| m.mrr10),
                ("Recall@100", |m| m.recall100),
            ];
            let mut line = format!("hybrid - {:<7}", mode.name());
            let mut json = serde_json::Map::new();
            for (name, metric) in metrics {
                let a: Vec<f64> = hybrid.iter().map(metric).collect();
                let b: Vec<f64> = single.iter().map(metric).collect();
                let ci = paired_bootstrap(&a, &b, RESAMPLES, args.seed);
                line.push_str(&format!("  {name} {:+.4} [{:+.4}, {:+.4}]", ci.mean, ci.low, ci.high));
                json.insert(name.to_string(), serde_json::to_value(ci)?);
            }
            if args.json {
                serde_json::to_writer(
                    &mut out,
                    &serde_json::json!({"hybrid_minus": mode.name(), "ci95": json, "seed": args.seed}),
                )?;
                writeln!(out)?;
            } else {
                writeln!(out, "{line}  (95% CI, paired bootstrap, seed {})", args.seed)?;
            }
        }
    }
    Ok(())
}

/// One hybrid configuration of the sweep.
#[derive(Debug, Clone, Copy, serde::Serialize)]
struct Config {
    fusion: Fusion,
    dense_weight: f64,
    fuse_documents: bool,
    depth: usize,
    query_expansion: bool,
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fusion = match self.fusion {
            Fusion::Rrf => "rrf".to_string(),
            Fusion::Convex => format!("convex w={:.1}", self.dense_weight),
        };
        let level = if self.fuse_documents { "documents" } else { "chunks" };
        let expansion = if self.query_expansion { " +rm3" } else { "" };
        write!(f, "{fusion:<12} {level:<9} depth {:<4}{expansion}", self.depth)
    }
}

/// The top 10 (what nDCG@10 and MRR@10 see, what a reader sees) under every configuration, the
/// single modes beside them, and a k-fold cross-validated choice with its confidence intervals.
fn sweep(run: &Run<'_>, args: &EvalArgs) -> Result<()> {
    const K: usize = 10;
    let mut configs = Vec::new();
    for query_expansion in [false, true] {
        for depth in [20, 50, 100, 200, 1000] {
            for fuse_documents in [false, true] {
                let rrf = Config {
                    fusion: Fusion::Rrf,
                    dense_weight: 0.5,
                    fuse_documents,
                    depth,
                    query_expansion,
                };
                configs.push(rrf);
                for dense_weight in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9] {
                    configs.push(Config {
                        fusion: Fusion::Convex,
                        dense_weight,
                        ..rrf
                    });
                }
            }
        }
    }
    let base = SearchOptions {
        k: K,
        per_document: true,
        query_expansion: false,
        ..Default::default()
    };
    let progress = ProgressBar::new(configs.len() as u64 + 2);
    progress.set_message("configurations");
    let single = |mode: Mode| -> Result<Vec<QueryMetrics>> {
        let m = run.metrics(&SearchOptions { mode, ..base.clone() });
        progress.inc(1);
        m
    };
    let dense = single(Mode::Dense)?;
    let keyword = single(Mode::Keyword)?;
    let keyword_expanded = run.metrics(&SearchOptions {
        mode: Mode::Keyword,
        query_expansion: true,
        ..base.clone()
    })?;
    let mut table: Vec<(Config, Vec<QueryMetrics>)> = Vec::new();
    for c in &configs {
        let options = SearchOptions {
            mode: Mode::Hybrid,
            fusion: c.fusion,
            dense_weight: c.dense_weight,
            fuse_documents: c.fuse_documents,
            depth: Some(c.depth),
            query_expansion: c.query_expansion,
            ..base.clone()
        };
        table.push((*c, run.metrics(&options)?));
        progress.inc(1);
    }
    progress.finish_and_clear();

    // k-fold cross-validation: each fold's configuration is the best on the other folds.
    let n = run.queries.len();
    let fold_of = folds(n, args.folds, args.seed);
    let mut held_out = vec![QueryMetrics::default(); n];
    let mut chosen = Vec::new();
    for fold in 0..args.folds {
        let train = |per: &[QueryMetrics]| -> f64 {
            let v: Vec<f64> = per
                .iter()
                .zip(&fold_of)
                .filter(|(_, f)| **f != fold)
                .map(|(m, _)| m.ndcg10)
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        let (best, per) = table
            .iter()
            .max_by(|a, b| train(&a.1).total_cmp(&train(&b.1)))
            .expect("configurations");
        let mut test = Vec::new();
        for (i, f) in fold_of.iter().enumerate() {
            if *f == fold {
                held_out[i] = per[i];
                test.push(per[i]);
            }
        }
        chosen.push((fold, *best, train(per), mean_of(&test, ndcg), test.len()));
    }
    let today = table
        .iter()
        .find(|(c, _)| c.fusion == Fusion::Rrf && !c.fuse_documents && !c.query_expansion && c.depth == 2 * K)
        .map(|(_, per)| per.clone())
        .expect("today's hybrid is in the grid");
    let best_single = if mean_of(&dense, ndcg) >= mean_of(&keyword, ndcg) {
        ("dense", &dense)
    } else {
        ("keyword", &keyword)
    };
    let column = |per: &[QueryMetrics], metric: Metric| per.iter().map(metric).collect::<Vec<f64>>();
    let cv_vs_today = paired_bootstrap(&column(&held_out, ndcg), &column(&today, ndcg), RESAMPLES, args.seed);
    let cv_vs_single = paired_bootstrap(
        &column(&held_out, ndcg),
        &column(best_single.1, ndcg),
        RESAMPLES,
        args.seed,
    );

    // The best configuration overall, against the same one fusing at the other level.
    let (best, best_per) = table
        .iter()
        .max_by(|a, b| mean_of(&a.1, ndcg).total_cmp(&mean_of(&b.1, ndcg)))
        .expect("configurations");
    let other_level = table
        .iter()
        .find(|(c, _)| {
            c.fusion == best.fusion
                && c.dense_weight == best.dense_weight
                && c.depth == best.depth
                && c.query_expansion == best.query_expansion
                && c.fuse_documents != best.fuse_documents
        })
        .expect("both levels are in the grid");
    let level_ci = paired_bootstrap(
        &column(best_per, ndcg),
        &column(&other_level.1, ndcg),
        RESAMPLES,
        args.seed,
    );

    let mut out = std::io::stdout().lock();
    if args.json {
        let rows: Vec<_> = table
            .iter()
            .map(|(c, per)| serde_json::json!({"config": c, "ndcg@10": mean_of(per, ndcg), "mrr@10": mean_of(per, |m| m.mrr10)}))
            .collect();
        let folds: Vec<_> = chosen
            .iter()
            .map(|(f, c, train, test, size)| serde_json::json!({"fold": f, "chosen": c, "train_ndcg@10": train, "test_ndcg@10": test, "queries": size}))
            .collect();
        serde_json::to_writer(
            &mut out,
            &serde_json::json!({
                "k": K, "queries": n, "seed": args.seed, "folds": folds, "table": rows,
                "dense": {"ndcg@10": mean_of(&dense, ndcg), "mrr@10": mean_of(&dense, |m| m.mrr10)},
                "keyword": {"ndcg@10": mean_of(&keyword, ndcg), "mrr@10": mean_of(&keyword, |m| m.mrr10)},
                "cv_ndcg@10": mean_of(&held_out, ndcg),
                "cv_minus_today_ci95": cv_vs_today,
                "cv_minus_best_single_ci95": cv_vs_single, "best_single": best_single.0,
                "best": best, "best_minus_other_level_ci95": level_ci,
            }),
        )?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "top {K}, {n} queries, per document; seed {}", args.seed)?;
    writeln!(out, "{:<36} nDCG@10  MRR@10", "configuration")?;
    for (name, per) in [
        ("dense", &dense),
        ("keyword", &keyword),
        ("keyword +rm3", &keyword_expanded),
    ] {
        writeln!(
            out,
            "{name:<36} {:.4}   {:.4}",
            mean_of(per, ndcg),
            mean_of(per, |m| m.mrr10)
        )?;
    }
    for (c, per) in &table {
        writeln!(
            out,
            "{:<36} {:.4}   {:.4}",
            c.to_string(),
            mean_of(per, ndcg),
            mean_of(per, |m| m.mrr10)
        )?;
    }
    writeln!(out, "\n{}-fold cross-validation on nDCG@10:", args.folds)?;
    for (fold, c, train, test, size) in &chosen {
        writeln!(
            out,
            "fold {fold}: {c}  train {train:.4}  held out {test:.4} ({size} queries)"
        )?;
    }
    writeln!(out, "cross-validated nDCG@10 {:.4}", mean_of(&held_out, ndcg))?;
    writeln!(
        out,
        "  minus today's hybrid (rrf, chunks, depth {}): {:+.4} [{:+.4}, {:+.4}]",
        2 * K,
        cv_vs_today.mean,
        cv_vs_today.low,
        cv_vs_today.high
    )?;
    writeln!(
        out,
        "  minus {} alone: {:+.4} [{:+.4}, {:+.4}]  (95% CI, paired bootstrap)",
        best_single.0, cv_vs_single.mean, cv_vs_single.low, cv_vs_single.high
    )?;
    writeln!(
        out,
        "best overall: {best}; minus the same fusing {}: {:+.4} [{:+.4}, {:+.4}]",
        if best.fuse_documents { "chunks" } else { "documents" },
        level_ci.mean,
        level_ci.low,
        level_ci.high
    )?;
    Ok(())
}
