//! `sextant search`: one query, or every query of a BEIR queries file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;
use sextant::eval::parse_queries;
use sextant::options::SearchOptions;
use sextant::search::llm_rerank;
use sextant::search::{Engine, SearchResponse};

use crate::engine::{attach_reranker, open, InstantClock};
use crate::flags::SearchFlags;
use crate::llm::{Llm, LlmFlags};
use crate::rerank::RerankReport;

#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// The index: a packed `.sxt`, or the `manifest.*.json` of a split index (its files beside it).
    index: PathBuf,
    /// The query (or use --queries).
    #[arg(required_unless_present = "queries", conflicts_with = "queries")]
    query: Option<String>,
    /// Run every query of a BEIR queries JSONL file ({"_id", "text"} a line); with --json,
    /// prints one line per query: {"query_id", "query", "mode", "results", "timings", …}.
    #[arg(long)]
    queries: Option<PathBuf>,
    #[command(flatten)]
    flags: SearchFlags,
    #[command(flatten)]
    llm: LlmFlags,
    /// Send each query's OpenTelemetry spans (rag.search and its stages) as OTLP/JSON to this
    /// collector's traces endpoint (http://host:4318/v1/traces) once the results are printed.
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// A search's response, and with `--rerank llm` what the LLM rerank did.
#[derive(Serialize)]
struct Found {
    #[serde(flatten)]
    response: SearchResponse,
    #[serde(skip_serializing_if = "Option::is_none")]
    rerank: Option<RerankReport>,
}

/// One query searched: with an LLM (`--rerank llm`), the candidates' search and the LLM's order
/// (a failure of the LLM is a warning: the fused order stands).
fn search_one(
    engine: &Engine,
    llm: Option<&Llm>,
    query: &str,
    options: &SearchOptions,
    clock: &InstantClock,
) -> Result<Found> {
    let Some(llm) = llm else {
        let response = engine.search(query, options, clock)?.done()?;
        return Ok(Found { response, rerank: None });
    };
    let mut response = engine
        .search(query, &llm_rerank::candidate_options(options), clock)?
        .done()?;
    let (results, report) = crate::rerank::rerank(llm, query, std::mem::take(&mut response.results), options);
    if let Some(fallback) = &report.fallback {
        eprintln!("warning: the LLM rerank failed: {fallback}");
    }
    response.results = results;
    response.timings.rerank_ms = report.ms;
    response.timings.total_ms += report.ms;
    Ok(Found {
        response,
        rerank: Some(report),
    })
}

/// Results as a reader wants them: rank, score, title › headings [chunk id], URL, snippet.
fn print_results(found: &Found) -> Result<()> {
    let response = &found.response;
    let mut out = std::io::stdout().lock();
    if response.results.is_empty() {
        writeln!(out, "no results")?;
    }
    if let Some(spelling) = &response.did_you_mean {
        writeln!(out, "did you mean: {spelling}")?;
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
    if let Some(counts) = &response.filter_counts {
        for (name, values) in counts {
            let values: Vec<String> = values.iter().map(|(v, n)| format!("{v} ({n})")).collect();
            writeln!(out, "filter {name}: {}", values.join(", "))?;
        }
    }
    if let Some(r) = &found.rerank {
        match &r.fallback {
            None => writeln!(
                out,
                "(reranked by the LLM: {} results in {} calls, {:.0} ms)",
                r.depth, r.calls, r.ms
            )?,
            Some(_) => writeln!(out, "(the LLM rerank failed: results in the fused order)")?,
        }
    }
    let t = response.timings;
    writeln!(
        out,
        "({:.1} ms: embed {:.1}, keyword {:.2}, vector {:.2}, fusion {:.2})",
        t.total_ms, t.embed_ms, t.keyword_ms, t.vector_ms, t.fusion_ms
    )?;
    Ok(())
}

pub fn run(args: SearchArgs) -> Result<()> {
    let mut otlp = args.otlp.as_deref().map(crate::otlp::Otlp::new).transpose()?;
    let result = search(&args, otlp.as_mut());
    if let Some(otlp) = otlp {
        otlp.send();
    }
    result
}

fn search(args: &SearchArgs, mut otlp: Option<&mut crate::otlp::Otlp>) -> Result<()> {
    let weights = args.flags.mode.needs_model().then_some(args.flags.weights);
    let mut engine = open(&args.index, args.flags.model.as_deref(), weights)?;
    attach_reranker(&mut engine, args.flags.config.as_deref())?;
    let options = args.flags.options();
    let llm = llm_rerank::wanted(&options)
        .then(|| args.llm.client("--rerank llm"))
        .transpose()?;
    let clock = InstantClock::start();
    if let Some(path) = &args.queries {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let queries = parse_queries(&text).with_context(|| format!("in {}", path.display()))?;
        for q in queries {
            let start = crate::otlp::wall_ms();
            let found = search_one(&engine, llm.as_ref(), &q.text, &options, &clock)?;
            if let Some(otlp) = otlp.as_deref_mut() {
                otlp.search(start, &q.text, &options, &found.response);
            }
            if args.json {
                #[derive(Serialize)]
                struct Line<'a> {
                    query_id: &'a str,
                    query: &'a str,
                    mode: &'a str,
                    #[serde(flatten)]
                    response: &'a Found,
                }
                let mut out = std::io::stdout().lock();
                let line = Line {
                    query_id: &q.id,
                    query: &q.text,
                    mode: options.mode.name(),
                    response: &found,
                };
                serde_json::to_writer(&mut out, &line)?;
                writeln!(out)?;
            } else {
                println!("# {} {}", q.id, q.text);
                print_results(&found)?;
            }
        }
        return Ok(());
    }
    let query = args.query.as_deref().unwrap_or_default();
    let start = crate::otlp::wall_ms();
    let found = search_one(&engine, llm.as_ref(), query, &options, &clock)?;
    if let Some(otlp) = otlp {
        otlp.search(start, query, &options, &found.response);
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &found)?;
        writeln!(out)?;
        return Ok(());
    }
    print_results(&found)
}
