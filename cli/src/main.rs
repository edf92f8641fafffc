//! `sextant`: build, search, frame, embed, evaluate and inspect index bundles.

mod build;
mod inputs;
mod model;
mod query;
mod site;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Hybrid (meaning + keyword) search bundles for the browser, the edge and offline.
#[derive(Parser, Debug)]
#[command(name = "sextant", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Which retrievers a query uses.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// Dense and keyword, fused with reciprocal rank fusion.
    Hybrid,
    /// Vectors only.
    Dense,
    /// BM25 only.
    Keyword,
}

impl From<ModeArg> for sextant::search::Mode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Hybrid => Self::Hybrid,
            ModeArg::Dense => Self::Dense,
            ModeArg::Keyword => Self::Keyword,
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Index documents (Markdown/MDX, HTML, text, BEIR JSONL; files or directories) into a bundle.
    Build(build::BuildArgs),
    /// Search a bundle.
    Search(query::SearchArgs),
    /// Search a bundle and print the results framed as LLM context.
    Frame(query::FrameArgs),
    /// Print the embedding of a text (for debugging and parity checks).
    Embed(query::EmbedArgs),
    /// Measure retrieval quality (nDCG@10, MRR@10, Recall@100) on BEIR-style queries and qrels.
    Eval(query::EvalArgs),
    /// Show a bundle's manifest and sections, verifying every digest.
    Inspect {
        /// The bundle file.
        bundle: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build::run(args),
        Command::Search(args) => query::search(args),
        Command::Frame(args) => query::frame(args),
        Command::Embed(args) => query::embed(args),
        Command::Eval(args) => query::eval(args),
        Command::Inspect { bundle, json } => query::inspect(&bundle, json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
