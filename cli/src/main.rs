//! `sextant`: build, search, frame, embed, evaluate and inspect indexes.
//!
//! One file per command in `commands/`; what they share lives beside this file: `config`
//! (reading `sextant.toml`), `engine` (opening an index with its model), `flags` (the search
//! options as flags), `indexing` (loading, embedding, writing), `inputs` (walking input folders),
//! `cache` (the embedding cache), `owned` (what `build --site` may change) and `model` (finding
//! the model files).

mod cache;
mod commands;
mod config;
mod engine;
mod flags;
mod indexing;
mod inputs;
mod llm;
mod model;
mod otlp;
mod owned;
mod rerank;
mod shard;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Hybrid (meaning + keyword) search indexes for the browser, the edge and offline.
#[derive(Parser, Debug)]
#[command(name = "sextant", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Index documents (Markdown/MDX, HTML, text, BEIR JSONL; files or directories), or a built static site.
    Build(commands::build::BuildArgs),
    /// Build a site's search from the partials of a sharded build (`build --site --shard I/N`),
    /// byte for byte what one machine's build gives.
    Merge(commands::build::MergeArgs),
    /// Search an index.
    Search(commands::search::SearchArgs),
    /// Search an index and print the results framed as LLM context.
    Frame(commands::frame::FrameArgs),
    /// Print the embedding of a text (for debugging and parity checks).
    Embed(commands::embed::EmbedArgs),
    /// Measure retrieval quality (nDCG@10, MRR@10, Recall@100) on BEIR-style queries and qrels.
    Eval(commands::eval::EvalArgs),
    /// Write a packed index (.sxt) as the manifest and files of a split index.
    Unpack(commands::unpack::UnpackArgs),
    /// Convert a format-1 bundle into a format-2 index (no re-embedding).
    Upgrade(commands::upgrade::UpgradeArgs),
    /// Knowledge graphs extracted by your LLM (`graph build`).
    #[command(subcommand)]
    Graph(commands::graph::GraphCommand),
    /// Show an index's manifest and files, verifying every digest.
    Inspect {
        /// The index: a packed `.sxt`, or the `manifest.*.json` of a split index (its files beside it).
        index: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => commands::build::run(args),
        Command::Merge(args) => commands::build::merge(args),
        Command::Search(args) => commands::search::run(args),
        Command::Frame(args) => commands::frame::run(args),
        Command::Embed(args) => commands::embed::run(args),
        Command::Eval(args) => commands::eval::run(args),
        Command::Upgrade(args) => commands::upgrade::run(args),
        Command::Unpack(args) => commands::unpack::run(args),
        Command::Graph(command) => commands::graph::run(command),
        Command::Inspect { index, json } => commands::inspect::run(&index, json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
