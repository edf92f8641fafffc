//! `sextant search | frame | embed | eval | inspect`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use rayon::prelude::*;
use serde::Serialize;
use sextant::bundle::{Bundle, RawBundle};
use sextant::embed::{Embedder, TextKind};
use sextant::eval::{has_relevant, mean, parse_qrels, parse_queries, score_query, RunMetrics};
use sextant::frame::SYSTEM_PROMPT;
use sextant::search::{Clock, Engine, Mode, SearchOptions, SearchResponse};

use crate::{model, ModeArg};

/// Wall-clock milliseconds since the engine was set up.
pub struct InstantClock(pub Instant);

impl Clock for InstantClock {
    fn now_ms(&self) -> f64 {
        self.0.elapsed().as_secs_f64() * 1000.0
    }
}

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// The bundle file.
    bundle: PathBuf,
    /// The query (or use --queries).
    #[arg(required_unless_present = "queries", conflicts_with = "queries")]
    query: Option<String>,
    /// Run every query of a BEIR queries JSONL file ({"_id", "text"} a line); with --json,
    /// prints one line per query: {"query_id", "query", "mode", "results", "timings", …}.
    #[arg(long)]
    queries: Option<PathBuf>,
    /// Number of results (1–1000).
    #[arg(short, default_value_t = 10)]
    k: usize,
    /// Retrievers to use.
    #[arg(long, value_enum, default_value = "hybrid")]
    mode: ModeArg,
    /// Drop results scoring below this (RRF score in hybrid, cosine in dense, BM25 in keyword).
    #[arg(long)]
    threshold: Option<f32>,
    /// Keep only the best chunk of each document.
    #[arg(long)]
    per_document: bool,
    /// Folder with model.onnx and tokenizer.json (default: the cached model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct FrameArgs {
    /// The bundle file.
    bundle: PathBuf,
    /// The query.
    query: String,
    /// Token budget for the context (model tokens).
    #[arg(long, default_value_t = 1500)]
    budget: usize,
    /// Number of results to consider.
    #[arg(short, default_value_t = 10)]
    k: usize,
    /// Retrievers to use.
    #[arg(long, value_enum, default_value = "hybrid")]
    mode: ModeArg,
    /// Folder with model.onnx and tokenizer.json (default: the cached model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Print JSON (system prompt, context, included and omitted chunk ids, tokens).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct EmbedArgs {
    /// The text.
    text: String,
    /// Embed as a document passage rather than a query (only differs with prefixes).
    #[arg(long)]
    passage: bool,
    /// A sextant.toml whose [model] section says how to run the model.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Folder with model.onnx and tokenizer.json (default: the cached model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Print JSON (token ids and vector).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// The bundle file.
    bundle: PathBuf,
    /// BEIR queries JSONL ({"_id", "text"} a line).
    #[arg(long)]
    queries: PathBuf,
    /// Qrels TSV (query-id, corpus-id, gain).
    #[arg(long)]
    qrels: PathBuf,
    /// Mode to evaluate.
    #[arg(long, value_enum, default_value = "hybrid", conflicts_with = "all_modes")]
    mode: ModeArg,
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

fn read_bundle(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading bundle {}", path.display()))
}

/// Opens a bundle; attaches the model unless only keyword search is needed.
fn open(path: &Path, model_arg: Option<&Path>, need_model: bool) -> Result<Engine> {
    let bytes = read_bundle(path)?;
    let mut engine = Engine::from_bytes(&bytes).with_context(|| format!("opening {}", path.display()))?;
    if need_model {
        let dir = model::model_dir(model_arg)?;
        let (model_bytes, tokenizer_bytes) = model::read_model_files(&dir)?;
        // Check the digests before the (slow) model load.
        engine
            .bundle()
            .check_model(
                &sextant::embed::sha256_hex(&model_bytes),
                &sextant::embed::sha256_hex(&tokenizer_bytes),
            )
            .with_context(|| format!("the model in {} cannot query {}", dir.display(), path.display()))?;
        let options = engine.manifest().model.options();
        let embedder = sextant::embed::TractEmbedder::from_bytes(&model_bytes, &tokenizer_bytes, &options)
            .with_context(|| format!("loading the model in {}", dir.display()))?;
        engine.attach_model(Arc::new(embedder))?;
    }
    Ok(engine)
}

fn print_results(response: &SearchResponse) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if response.results.is_empty() {
        writeln!(out, "no results")?;
    }
    for r in &response.results {
        // The breadcrumb, without a first heading that only repeats the title.
        let path: Vec<&str> = r
            .heading_path
            .iter()
            .map(String::as_str)
            .skip_while(|h| *h == r.title)
            .collect();
        let crumbs = if path.is_empty() {
            String::new()
        } else {
            format!(" › {}", path.join(" › "))
        };
        writeln!(
            out,
            "{:>3}. {:.4}  {}{}  [{}]",
            r.rank, r.score, r.title, crumbs, r.chunk_id
        )?;
        writeln!(out, "     {}", r.url)?;
        let snippet: String = r.text.split_whitespace().collect::<Vec<_>>().join(" ");
        let snippet: String = snippet.chars().take(160).collect();
        writeln!(out, "     {snippet}")?;
    }
    let t = response.timings;
    writeln!(
        out,
        "({:.1} ms: embed {:.1}, keyword {:.2}, vector {:.2}, fusion {:.2})",
        t.total_ms, t.embed_ms, t.keyword_ms, t.vector_ms, t.fusion_ms
    )?;
    Ok(())
}

pub fn search(args: SearchArgs) -> Result<()> {
    let mode: Mode = args.mode.into();
    let engine = open(&args.bundle, args.model.as_deref(), mode != Mode::Keyword)?;
    let options = SearchOptions {
        k: args.k,
        mode,
        score_threshold: args.threshold,
        per_document: args.per_document,
        ..Default::default()
    };
    let clock = InstantClock(Instant::now());
    if let Some(path) = &args.queries {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let queries = parse_queries(&text).with_context(|| format!("in {}", path.display()))?;
        for q in queries {
            let response = engine.search(&q.text, &options, &clock)?;
            if args.json {
                #[derive(Serialize)]
                struct Line<'a> {
                    query_id: &'a str,
                    query: &'a str,
                    mode: &'a str,
                    #[serde(flatten)]
                    response: &'a SearchResponse,
                }
                let mut out = std::io::stdout().lock();
                let line = Line {
                    query_id: &q.id,
                    query: &q.text,
                    mode: mode.name(),
                    response: &response,
                };
                serde_json::to_writer(&mut out, &line)?;
                writeln!(out)?;
            } else {
                println!("# {} {}", q.id, q.text);
                print_results(&response)?;
            }
        }
        return Ok(());
    }
    let query = args.query.as_deref().unwrap_or_default();
    let response = engine.search(query, &options, &clock)?;
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &response)?;
        writeln!(out)?;
        return Ok(());
    }
    print_results(&response)
}

#[derive(Serialize)]
struct FrameJson<'a> {
    system_prompt: &'a str,
    context: &'a str,
    included: &'a [String],
    omitted: &'a [String],
    tokens: usize,
    budget: usize,
}

pub fn frame(args: FrameArgs) -> Result<()> {
    let engine = open(&args.bundle, args.model.as_deref(), true)?;
    let options = SearchOptions {
        k: args.k,
        mode: args.mode.into(),
        ..Default::default()
    };
    let response = engine.search(&args.query, &options, &InstantClock(Instant::now()))?;
    let framed = engine.frame(&response.results, args.budget)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(
            &mut out,
            &FrameJson {
                system_prompt: SYSTEM_PROMPT,
                context: &framed.context,
                included: &framed.included,
                omitted: &framed.omitted,
                tokens: framed.tokens,
                budget: framed.budget,
            },
        )?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", framed.context)?;
        eprintln!(
            "({} chunks, {} of {} tokens; {} left out)",
            framed.included.len(),
            framed.tokens,
            framed.budget,
            framed.omitted.len()
        );
    }
    Ok(())
}

#[derive(Serialize)]
struct EmbedJson<'a> {
    model_sha256: &'a str,
    dims: usize,
    token_ids: Vec<u32>,
    vector: Vec<f32>,
}

pub fn embed(args: EmbedArgs) -> Result<()> {
    let (config, _, _) = crate::build::read_config(args.config.as_deref())?;
    let dir = model::model_dir(args.model.as_deref())?;
    let embedder = model::load(&dir, &config.model)?;
    let kind = if args.passage {
        TextKind::Passage
    } else {
        TextKind::Query
    };
    let prefix = if args.passage {
        &config.model.passage_prefix
    } else {
        &config.model.query_prefix
    };
    let token_ids = embedder.tokenizer().encode(&format!("{prefix}{}", args.text))?;
    let vector = embedder.embed(&args.text, kind)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(
            &mut out,
            &EmbedJson {
                model_sha256: &embedder.spec().sha256,
                dims: vector.len(),
                token_ids,
                vector,
            },
        )?;
        writeln!(out)?;
    } else {
        writeln!(out, "{} tokens, {} dimensions", token_ids.len(), vector.len())?;
        let shown: Vec<String> = vector.iter().map(|v| format!("{v:.6}")).collect();
        writeln!(out, "[{}]", shown.join(", "))?;
    }
    Ok(())
}

pub fn eval(args: EvalArgs) -> Result<()> {
    let modes: Vec<Mode> = if args.all_modes {
        Mode::ALL.to_vec()
    } else {
        vec![args.mode.into()]
    };
    let needs_model = modes.iter().any(|m| *m != Mode::Keyword);
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
                let response = engine.search_with_vector(&q.text, v.as_deref(), &options, &clock)?;
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

#[derive(Serialize)]
struct InspectJson<'a> {
    format: String,
    bytes: usize,
    manifest: &'a sextant::bundle::Manifest,
    sections: &'a [sextant::bundle::SectionEntry],
    documents: usize,
    chunks: usize,
}

pub fn inspect(path: &Path, json: bool) -> Result<()> {
    let bytes = read_bundle(path)?;
    let raw = RawBundle::parse(&bytes).with_context(|| format!("checking {}", path.display()))?;
    // A full decode validates every section, not only the digests.
    let bundle = Bundle::from_bytes(&bytes).with_context(|| format!("decoding {}", path.display()))?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(
            &mut out,
            &InspectJson {
                format: format!("{}.{}", raw.major, raw.minor),
                bytes: bytes.len(),
                manifest: &bundle.manifest,
                sections: &raw.sections,
                documents: bundle.documents.len(),
                chunks: bundle.chunks.len(),
            },
        )?;
        writeln!(out)?;
        return Ok(());
    }
    let m = &bundle.manifest;
    writeln!(
        out,
        "{}: sextant bundle format {}.{}, {} bytes, all digests verified",
        path.display(),
        raw.major,
        raw.minor,
        bytes.len()
    )?;
    writeln!(out, "  generator   {}", m.generator)?;
    writeln!(out, "  documents   {}", bundle.documents.len())?;
    writeln!(
        out,
        "  chunks      {} ({} duplicates dropped)",
        bundle.chunks.len(),
        m.counts.duplicates_dropped
    )?;
    writeln!(
        out,
        "  model       sha256 {} ({} dims, {:?} pooling, normalize {}, window {})",
        m.model.sha256, m.model.dims, m.model.pooling, m.model.normalize, m.model.max_tokens
    )?;
    writeln!(out, "  tokenizer   sha256 {}", m.model.tokenizer_sha256)?;
    writeln!(
        out,
        "  chunking    size {} overlap {}",
        m.chunking.chunk_size, m.chunking.chunk_overlap
    )?;
    writeln!(out, "  bm25        k1 {} b {}", m.bm25.k1, m.bm25.b)?;
    writeln!(
        out,
        "  hnsw        ef_construction {} ef_search {} seed {} exact_below {}",
        m.hnsw.ef_construction, m.hnsw.ef_search, m.hnsw.seed, m.hnsw.exact_below
    )?;
    writeln!(
        out,
        "  crates      {}",
        m.crates
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    writeln!(out, "  sections:")?;
    for s in &raw.sections {
        writeln!(
            out,
            "    {:<10} {:>12} bytes at {:>10}  sha256 {}",
            s.name, s.length, s.offset, s.sha256
        )?;
    }
    Ok(())
}
