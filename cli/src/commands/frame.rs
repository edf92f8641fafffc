//! `sextant frame`: search, then frame the results as LLM context, with the exact chat messages
//! `ask()` would send.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;
use sextant::graph::query::{parse_question_reply, question_messages, BlockLine, GraphOptions, QuestionTerms};
use sextant::options::{ContextOptions, FrameOptions, LlmSettings, DEFAULT_TOKEN_BUDGET};
use sextant::search::{ContextResponse, Engine};

use crate::engine::{attach_reranker, open, InstantClock};
use crate::flags::SearchFlags;
use crate::llm::{LlmError, LlmFlags};

#[derive(clap::Args, Debug)]
pub struct FrameArgs {
    /// The index: a packed `.sxt`, or the `manifest.*.json` of a split index (its files beside it).
    index: PathBuf,
    /// The query.
    query: String,
    /// Model tokens the framed context may take.
    #[arg(long, default_value_t = DEFAULT_TOKEN_BUDGET)]
    token_budget: usize,
    #[command(flatten)]
    flags: SearchFlags,
    /// Put the knowledge graph's block (`sextant graph build`) ahead of the results, with the
    /// chunks it cites; with --llm-base-url and --llm-model the LLM first names the question's
    /// entities and answer types. Without a usable graph, the results alone (with a warning).
    #[arg(long)]
    graph: bool,
    #[command(flatten)]
    llm: LlmFlags,
    /// Print JSON: results, context, included and omitted chunk ids, tokens, the system prompt
    /// and the chat messages to send.
    #[arg(long)]
    json: bool,
}

pub fn run(args: FrameArgs) -> Result<()> {
    // Framing counts tokens with the model's tokenizer, so the model is always loaded.
    let mut engine = open(&args.index, args.flags.model.as_deref(), Some(args.flags.weights))?;
    attach_reranker(&mut engine, args.flags.config.as_deref())?;
    let options = ContextOptions {
        search: args.flags.options(),
        frame: FrameOptions {
            token_budget: args.token_budget,
        },
    };
    let clock = InstantClock::start();
    let (framed, graph) = if args.graph {
        let (framed, report) = with_graph(&mut engine, &args, &options, &clock)?;
        if let Some(why) = &report.fallback {
            eprintln!("warning: {why}; the context holds the search's results alone");
        }
        (framed, Some(report))
    } else {
        (engine.context(&args.query, &options, &clock)?.done()?, None)
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        #[derive(Serialize)]
        struct Framed<'a> {
            #[serde(flatten)]
            framed: &'a ContextResponse,
            #[serde(skip_serializing_if = "Option::is_none")]
            graph: Option<&'a GraphReport>,
        }
        serde_json::to_writer(
            &mut out,
            &Framed {
                framed: &framed,
                graph: graph.as_ref(),
            },
        )?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", framed.context)?;
        eprintln!(
            "({} chunks, {} of {} tokens; {} left out{})",
            framed.included.len(),
            framed.tokens,
            framed.budget,
            framed.omitted.len(),
            graph
                .filter(|g| g.fallback.is_none())
                .map(|g| format!("; the graph block has {} lines", g.lines.len()))
                .unwrap_or_default()
        );
    }
    Ok(())
}

/// What the graph added, or why it did not.
#[derive(Debug, Default, Serialize)]
struct GraphReport {
    /// The question's entity names and answer types, as the LLM read them (none without one).
    terms: Option<QuestionTerms>,
    /// The block's entities and relations.
    lines: Vec<BlockLine>,
    /// Model tokens of the block.
    tokens: usize,
    /// Why the search's results stand alone.
    fallback: Option<String>,
    /// The LLM's failure naming the terms (the question's vector stood for them).
    terms_error: Option<LlmError>,
}

/// Adds the index's graph (`files.graph`), read from beside its manifest, to `engine`.
fn add_graph(engine: &mut Engine, index: &std::path::Path) -> Result<(), String> {
    let Some(name) = engine.manifest().files.graph.clone() else {
        return Err(format!(
            "{} has no knowledge graph; build one with `sextant graph build {} --llm-base-url URL --llm-model NAME`",
            index.display(),
            index.display()
        ));
    };
    let path = index.parent().unwrap_or(std::path::Path::new(".")).join(&name);
    let bytes = std::fs::read(&path).map_err(|e| format!("the graph {} cannot be read ({e})", path.display()))?;
    engine
        .add_file(&name, &bytes)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn with_graph(
    engine: &mut Engine,
    args: &FrameArgs,
    options: &ContextOptions,
    clock: &InstantClock,
) -> Result<(ContextResponse, GraphReport)> {
    if let Err(why) = add_graph(engine, &args.index) {
        let framed = engine.context(&args.query, options, clock)?.done()?;
        let report = GraphReport {
            fallback: Some(why),
            ..GraphReport::default()
        };
        return Ok((framed, report));
    }
    let mut report = GraphReport::default();
    if args.llm.llm_base_url.is_some() || args.llm.llm_model.is_some() {
        let llm = args.llm.client("--graph with an LLM")?;
        let settings = LlmSettings {
            max_answer_bytes: sextant::graph::query::MAX_QUERY_REPLY_BYTES + 1,
            ..LlmSettings::default()
        };
        let terms = llm.chat(&question_messages(&args.query), &settings).and_then(|reply| {
            parse_question_reply(&reply).map_err(|message| LlmError {
                code: "LLM_BAD_RESPONSE",
                message,
            })
        });
        match terms {
            Ok(terms) => report.terms = Some(terms),
            Err(e) => {
                eprintln!("warning: the LLM did not name the question's entities ({e}); the question's own vector stands for them");
                report.terms_error = Some(e);
            }
        }
    }
    let graph_options = GraphOptions::default();
    let (framed, block) = engine
        .graph_context(&args.query, options, report.terms.as_ref(), &graph_options, clock)?
        .done()?;
    report.lines = block.lines;
    report.tokens = block.tokens;
    Ok((framed, report))
}
