//! `sextant eval`: nDCG@10, MRR@10 and Recall@100 of each mode on judged queries, over one
//! collection or several (see [`collections`]); with `--all-modes`, hybrid's difference from each
//! single mode with its 95% confidence interval (paired bootstrap) and the queries where the two
//! retrievers disagree; with `--sweep`, every fusion, level, depth and expansion (under every
//! build variant) and the choice among them, made across collections (see [`sweep`]).

mod collections;
mod sweep;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Result};
use sextant::eval::{paired_bootstrap, QueryMetrics};
use sextant::options::{Fusion, Mode, PageScore, SearchOptions};

use crate::engine::{attach_reranker, open};
use crate::flags::{fusion_parser, mode_parser, page_score_parser};
use collections::{CollectionDir, Judged, Variant};

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Collection folders, each indexed in memory (queries.jsonl; qrels.tsv or qrels/test.tsv;
    /// corpus.jsonl, or corpus/: a built site, read as `build --site` reads it); or one index
    /// (a packed `.sxt`, or a split index's `manifest.*.json`) with --queries and --qrels.
    #[arg(required = true, value_name = "COLLECTION")]
    collections: Vec<PathBuf>,
    /// With an index: BEIR queries JSONL ({"_id", "text"} a line).
    #[arg(long)]
    queries: Option<PathBuf>,
    /// With an index: qrels TSV (query-id, corpus-id, gain).
    #[arg(long)]
    qrels: Option<PathBuf>,
    /// Mode to evaluate.
    #[arg(long, default_value_t = SearchOptions::default().mode, value_parser = mode_parser(), conflicts_with = "all_modes")]
    mode: Mode,
    /// Evaluate hybrid, dense and keyword, with hybrid's difference from each (95% CI) and the
    /// queries on which keyword and dense disagree.
    #[arg(long)]
    all_modes: bool,
    /// Results a query asks for, as a search for that many (1–100; default 100). Recall@100
    /// counts only the results there are: with fewer, it is a recall at that count.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=100), conflicts_with = "sweep")]
    k: u16,
    /// Candidates per retriever before fusion (default: as a search for k results, 10 k).
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
    /// Embed the query with its misspelled words corrected: true or false.
    #[arg(long, default_value_t = SearchOptions::default().embed_corrections, action = clap::ArgAction::Set)]
    embed_corrections: bool,
    /// With --fuse-documents true, how a page's chunks score it: max or sum3.
    #[arg(long, default_value_t = SearchOptions::default().page_score, value_parser = page_score_parser())]
    page_score: PageScore,
    /// BM25 scores each document whole rather than by its best chunk: true or false (the
    /// metrics count documents).
    #[arg(long, default_value_t = SearchOptions::default().document_bm25, action = clap::ArgAction::Set)]
    document_bm25: bool,
    /// BM25's k1 for the queries (default: the index's).
    #[arg(long)]
    k1: Option<f32>,
    /// BM25's b for the queries (default: the index's).
    #[arg(long)]
    b: Option<f32>,
    /// Evaluate every hybrid fusion (rrf; convex at dense weights 0.3–0.9), level (chunks;
    /// documents by their best chunk or best three), depth (50, 100, 200), query expansion and BM25 by
    /// chunk or by document, under every build variant, and BM25's k1 and b likewise; choose the best mean
    /// over collections that loses significantly on none, and cross-validate that choice.
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
    /// How the query's model multiplies: int8 (integer products on 15-bit activations, the
    /// default everywhere queries run), int8a8 (on activations rounded to bytes, as `build`
    /// embeds passages by default), int5 or f32 (the model's own arithmetic). Passages: the
    /// --config's [model] weights.
    #[arg(long, default_value = "int8", value_parser = crate::flags::weights_parser())]
    weights: sextant::embed::Weights,
    /// A sextant.toml: collections are built with it, and its [rerank] cross-encoder reranks
    /// each mode's best results (the default rerank depth, 20). Give several to compare build
    /// variants (each named by its file name): every one is reported, and --sweep chooses among
    /// them too.
    #[arg(long)]
    config: Vec<PathBuf>,
    #[command(flatten)]
    cache: crate::cache::CacheArgs,
    /// Print JSON (one object per mode and collection; one object for a sweep).
    #[arg(long)]
    json: bool,
    /// Also write each query's metrics to this file, one JSON object a line ({"collection",
    /// "variant", "mode", "query", "ndcg@10", "mrr@10", "recall@100"}): to compare indexes built
    /// differently query by query.
    #[arg(long, conflicts_with = "sweep")]
    per_query: Option<PathBuf>,
}

impl EvalArgs {
    /// The options of a run in `mode` (`k` results, one per document, as the metrics count).
    fn options(&self, mode: Mode) -> SearchOptions {
        let bm25 =
            (self.k1.is_some() || self.b.is_some()).then_some(sextant::bm25::Bm25Override { k1: self.k1, b: self.b });
        SearchOptions {
            k: usize::from(self.k),
            mode,
            per_document: true,
            depth: self.depth,
            fusion: self.fusion,
            dense_weight: self.dense_weight,
            fuse_documents: self.fuse_documents,
            query_expansion: self.query_expansion,
            embed_corrections: self.embed_corrections,
            page_score: self.page_score,
            document_bm25: self.document_bm25,
            bm25,
            ..Default::default()
        }
    }
}

/// Bootstrap resamples behind every confidence interval.
const RESAMPLES: usize = 10_000;

/// One metric of a query's metrics.
type Metric = fn(&QueryMetrics) -> f64;

/// The three metrics, named as reports name them.
const METRICS: [(&str, Metric); 3] = [
    ("nDCG@10", |m| m.ndcg10),
    ("MRR@10", |m| m.mrr10),
    ("Recall@100", |m| m.recall100),
];

fn mean_of(values: &[QueryMetrics], metric: Metric) -> f64 {
    values.iter().map(metric).sum::<f64>() / values.len().max(1) as f64
}

fn column(values: &[QueryMetrics], metric: Metric) -> Vec<f64> {
    values.iter().map(metric).collect()
}

/// Keyword and dense "disagree strongly" on a query when their nDCG@10 differ by this much.
const DISAGREEMENT: f64 = 0.3;

pub fn run(args: EvalArgs) -> Result<()> {
    let modes: Vec<Mode> = if args.all_modes || args.sweep {
        Mode::ALL.to_vec()
    } else {
        vec![args.mode]
    };
    let needs_model = modes.iter().any(|m| m.needs_model());
    let variants = Variant::all(&args.config)?;
    // judged[variant][collection]
    let mut judged: Vec<Vec<Judged>> = Vec::new();
    let index_inputs: Vec<&PathBuf> = args.collections.iter().filter(|p| !p.is_dir()).collect();
    if let Some(index) = index_inputs.first() {
        let (Some(queries), Some(qrels)) = (&args.queries, &args.qrels) else {
            bail!(
                "{} is an index, so --queries and --qrels must say what to evaluate it on (or pass a collection folder)",
                index.display()
            );
        };
        if args.collections.len() > 1 {
            bail!(
                "an index is evaluated alone (with --queries and --qrels); pass collection folders to evaluate several"
            );
        }
        if variants.len() > 1 {
            bail!(
                "{} is built already: build variants (several --config) need collection folders",
                index.display()
            );
        }
        let mut engine = open(index, args.model.as_deref(), needs_model.then_some(args.weights))?;
        attach_reranker(&mut engine, args.config.first().map(PathBuf::as_path))?;
        let name = index
            .file_name()
            .map_or_else(|| index.display().to_string(), |n| n.to_string_lossy().into_owned());
        judged.push(vec![Judged::new(name, engine, queries, qrels, needs_model)?]);
    } else {
        if args.queries.is_some() || args.qrels.is_some() {
            bail!("--queries and --qrels go with an index file; a collection folder has its own");
        }
        let dirs: Vec<CollectionDir> = args
            .collections
            .iter()
            .map(|d| CollectionDir::find(d))
            .collect::<Result<_>>()?;
        for (variant, path) in variants
            .iter()
            .zip(args.config.iter().map(Some).chain(std::iter::repeat(None)))
        {
            let mut row = Vec::new();
            for dir in &dirs {
                let mut j = dir.open(variant, &args, needs_model)?;
                attach_reranker(&mut j.engine, path.map(PathBuf::as_path))?;
                row.push(j);
            }
            judged.push(row);
        }
    }
    if args.sweep {
        return sweep::run(&judged, &variants, &args);
    }
    report(&judged, &variants, &modes, &args)
}

/// Each mode's means on each collection under each variant; hybrid against each single mode;
/// with several collections, the means over them.
fn report(judged: &[Vec<Judged>], variants: &[Variant], modes: &[Mode], args: &EvalArgs) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let mut per_query_lines = String::new();
    let named = |variant: &Variant, j: &Judged| -> String {
        if variants.len() > 1 {
            format!("{} ({})", j.name, variant.name)
        } else {
            j.name.clone()
        }
    };
    let several = judged.iter().map(Vec::len).sum::<usize>() > 1;
    for (variant, row) in variants.iter().zip(judged) {
        let mut means: Vec<Vec<(Mode, [f64; 3])>> = Vec::new();
        for j in row {
            options_valid(args, modes)?;
            let results: Vec<(Mode, Vec<QueryMetrics>)> = modes
                .iter()
                .map(|&mode| Ok((mode, j.metrics(&args.options(mode))?)))
                .collect::<Result<_>>()?;
            for (mode, per) in &results {
                for (q, m) in j.queries.iter().zip(per) {
                    let line = serde_json::json!({"collection": j.name, "variant": variant.name, "mode": mode.name(), "query": q.id, "ndcg@10": m.ndcg10, "mrr@10": m.mrr10, "recall@100": m.recall100});
                    per_query_lines.push_str(&line.to_string());
                    per_query_lines.push('\n');
                }
            }
            if several && !args.json {
                writeln!(out, "## {}", named(variant, j))?;
            }
            let mut collection_means = Vec::new();
            for (mode, per) in &results {
                let m = [0, 1, 2].map(|i| mean_of(per, METRICS[i].1));
                collection_means.push((*mode, m));
                let over = ("queries", per.len());
                print_means(&mut out, args.json, (&j.name, &variant.name), *mode, m, over)?;
            }
            means.push(collection_means);
            compare_modes(&mut out, j, variant, &results, args)?;
        }
        if row.len() > 1 {
            if !args.json {
                writeln!(out, "## mean over {} collections ({})", row.len(), variant.name)?;
            }
            for (at, mode) in modes.iter().enumerate() {
                let m = [0, 1, 2].map(|i| means.iter().map(|c| c[at].1[i]).sum::<f64>() / means.len() as f64);
                print_means(
                    &mut out,
                    args.json,
                    ("mean", &variant.name),
                    *mode,
                    m,
                    ("collections", row.len()),
                )?;
            }
        }
    }
    if let Some(path) = &args.per_query {
        std::fs::write(path, per_query_lines).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// One mode's three means on a collection (or over collections): a JSON object or a line of
/// text; `over` is what they are the mean of (`queries` or `collections`) and how many.
fn print_means(
    out: &mut impl Write,
    json: bool,
    (collection, variant): (&str, &str),
    mode: Mode,
    m: [f64; 3],
    over: (&str, usize),
) -> Result<()> {
    if json {
        let mut line = serde_json::json!({"collection": collection, "variant": variant, "mode": mode.name(), "ndcg@10": m[0], "mrr@10": m[1], "recall@100": m[2]});
        line[over.0] = over.1.into();
        writeln!(out, "{line}")?;
    } else {
        let count = if over.0 == "queries" {
            format!("  ({} queries)", over.1)
        } else {
            String::new()
        };
        writeln!(
            out,
            "{:<8} nDCG@10 {:.4}  MRR@10 {:.4}  Recall@100 {:.4}{count}",
            mode.name(),
            m[0],
            m[1],
            m[2]
        )?;
    }
    Ok(())
}

fn options_valid(args: &EvalArgs, modes: &[Mode]) -> Result<()> {
    for &mode in modes {
        args.options(mode).validate()?;
    }
    Ok(())
}

/// Hybrid against each single mode, per metric: the mean difference and its 95% interval; and
/// the queries on which keyword and dense disagree strongly, where fusion must not fall under
/// the better of the two.
fn compare_modes(
    out: &mut impl Write,
    j: &Judged,
    variant: &Variant,
    results: &[(Mode, Vec<QueryMetrics>)],
    args: &EvalArgs,
) -> Result<()> {
    let find = |mode: Mode| results.iter().find(|(m, _)| *m == mode).map(|(_, per)| per);
    let Some(hybrid) = find(Mode::Hybrid) else {
        return Ok(());
    };
    for (mode, single) in results.iter().filter(|(m, _)| *m != Mode::Hybrid) {
        let mut line = format!("hybrid - {:<7}", mode.name());
        let mut json = serde_json::Map::new();
        for (name, metric) in METRICS {
            let ci = paired_bootstrap(&column(hybrid, metric), &column(single, metric), RESAMPLES, args.seed);
            line.push_str(&format!("  {name} {:+.4} [{:+.4}, {:+.4}]", ci.mean, ci.low, ci.high));
            json.insert(name.to_string(), serde_json::to_value(ci)?);
        }
        if args.json {
            let line = serde_json::json!({"collection": j.name, "variant": variant.name, "hybrid_minus": mode.name(), "ci95": json, "seed": args.seed});
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "{line}  (95% CI, paired bootstrap, seed {})", args.seed)?;
        }
    }
    let (Some(dense), Some(keyword)) = (find(Mode::Dense), find(Mode::Keyword)) else {
        return Ok(());
    };
    let split: Vec<usize> = (0..hybrid.len())
        .filter(|&i| (dense[i].ndcg10 - keyword[i].ndcg10).abs() >= DISAGREEMENT)
        .collect();
    let on = |per: &[QueryMetrics], metric: Metric| -> f64 {
        split.iter().map(|&i| metric(&per[i])).sum::<f64>() / split.len().max(1) as f64
    };
    let below_better = (0..hybrid.len())
        .filter(|&i| hybrid[i].ndcg10 + 0.1 <= dense[i].ndcg10.max(keyword[i].ndcg10))
        .count();
    let ndcg = METRICS[0].1;
    let (h, d, k) = (on(hybrid, ndcg), on(dense, ndcg), on(keyword, ndcg));
    if args.json {
        let line = serde_json::json!({"collection": j.name, "variant": variant.name, "disagreement": {"threshold": DISAGREEMENT, "queries": split.len(), "hybrid": h, "dense": d, "keyword": k}, "hybrid_below_better_by_0.1": below_better});
        writeln!(out, "{line}")?;
    } else {
        writeln!(
            out,
            "disagreeing queries (keyword and dense nDCG@10 {DISAGREEMENT} apart): {} of {}; nDCG@10 on them: hybrid {h:.4}, dense {d:.4}, keyword {k:.4}",
            split.len(),
            hybrid.len()
        )?;
        writeln!(
            out,
            "queries where hybrid's nDCG@10 is 0.1 or more under the better single mode's: {below_better} of {}",
            hybrid.len()
        )?;
    }
    Ok(())
}
