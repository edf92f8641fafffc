//! `sextant frame`: search, then frame the results as LLM context, with the exact chat messages
//! `ask()` would send.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use sextant::options::{ContextOptions, FrameOptions, DEFAULT_TOKEN_BUDGET};

use crate::engine::{attach_reranker, open, InstantClock};
use crate::flags::SearchFlags;

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
    let framed = engine.context(&args.query, &options, &InstantClock::start())?.done()?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &framed)?;
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
