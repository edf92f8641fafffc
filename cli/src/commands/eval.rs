//! `sextant eval`: nDCG@10, MRR@10 and Recall@100 of each mode on BEIR-style queries and qrels.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use rayon::prelude::*;
use sextant::embed::TextKind;
use sextant::eval::{has_relevant, mean, parse_qrels, parse_queries, score_query, RunMetrics};
use sextant::options::{Mode, SearchOptions};

use crate::engine::open;
use crate::flags::mode_parser;

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// The index: a packed `.sxt`, or the `manifest.*.json` of a split index (its files beside it).
    bundle: PathBuf,
    /// BEIR queries JSONL ({"_id", "text"} a line).
    #[arg(long)]
    queries: PathBuf,
    /// Qrels TSV (query-id, corpus-id, gain).
    #[arg(long)]
    qrels: PathBuf,
    /// Mode to evaluate.
    #[arg(long, default_value_t = SearchOptions::default().mode, value_parser = mode_parser(), conflicts_with = "all_modes")]
    mode: Mode,
    /// Evaluate hybrid, dense and keyword.
    #[arg(long)]
    all_modes: bool,
    /// Folder with model.onnx and tokenizer.json (default: the cached model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Print one JSON object per mode.
    #[arg(long)]
    json: bool,
}

pub fn run(args: EvalArgs) -> Result<()> {
    let modes: Vec<Mode> = if args.all_modes {
        Mode::ALL.to_vec()
    } else {
        vec![args.mode]
    };
    let needs_model = modes.iter().any(|m| m.needs_model());
    let engine = open(&args.bundle, args.model.as_deref(), needs_model)?;
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
    // Embed every query once; every mode reuses the vectors.
    let progress = ProgressBar::new(judged.len() as u64);
    progress.set_message("embedding queries");
    let vectors: Vec<Option<Vec<f32>>> = judged
        .par_iter()
        .map(|q| {
            let v = match engine.embedder() {
                Some(e) if needs_model => Some(e.embed(&q.text, TextKind::Query)).transpose(),
                _ => Ok(None),
            };
            progress.inc(1);
            v
        })
        .collect::<Result<_, _>>()?;
    progress.finish_and_clear();
    let clock = sextant::search::NoClock;
    let mut runs: Vec<RunMetrics> = Vec::new();
    for mode in modes {
        let options = SearchOptions {
            k: 100,
            mode,
            per_document: true,
            ..Default::default()
        };
        let per_query: BTreeMap<String, sextant::eval::QueryMetrics> = judged
            .par_iter()
            .zip(vectors.par_iter())
            .map(|(q, v)| {
                let response = engine
                    .search_with_vector(&q.text, v.as_deref(), &options, &clock)?
                    .done()?;
                let ranked: Vec<String> = response.results.into_iter().map(|r| r.doc_id).collect();
                let empty = Default::default();
                Ok((q.id.clone(), score_query(&ranked, qrels.get(&q.id).unwrap_or(&empty))))
            })
            .collect::<Result<_, sextant::search::SearchError>>()?;
        runs.push(mean(mode.name(), &per_query));
    }
    let mut out = std::io::stdout().lock();
    for run in &runs {
        if args.json {
            serde_json::to_writer(&mut out, run)?;
            writeln!(out)?;
        } else {
            writeln!(
                out,
                "{:<8} nDCG@10 {:.4}  MRR@10 {:.4}  Recall@100 {:.4}  ({} queries)",
                run.mode, run.ndcg10, run.mrr10, run.recall100, run.queries
            )?;
        }
    }
    Ok(())
}
