//! `sextant build`: documents → a packed index (and, with `--site`, a built static site → its search
//! files: see `site`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use sextant::index::packed::{pack, Packed};
use sextant::index::writer::BuiltIndex;

use crate::config::read_config;
use crate::indexing::{build_index, load_documents, write_atomically, BuildStats};
use crate::inputs::{check_output, collect, Skipped};

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Files or directories to index (directories are walked recursively; hidden files skipped).
    #[arg(required_unless_present = "site", conflicts_with = "site")]
    inputs: Vec<PathBuf>,
    /// Where to write the index (packed, one `.sxt` file).
    #[arg(short, long, required_unless_present = "site", conflicts_with = "site")]
    output: Option<PathBuf>,
    /// Index a built static site (every HTML page; URLs from paths) and write its search files
    /// into <SITE>/sextant/ plus the offline service worker <SITE>/sextant-sw.js.
    #[arg(long, value_name = "SITE")]
    site: Option<PathBuf>,
    /// With --site: the built sextant-search package (default: $SEXTANT_PACKAGE_DIR, else the
    /// repository's pkg/ written by `make wasm`).
    #[arg(long, requires = "site")]
    package: Option<PathBuf>,
    /// A sextant.toml with [model], [chunking], [bm25], [layout] and [input] settings.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Folder with model.onnx and tokenizer.json (default: $SEXTANT_MODEL_DIR, else the cache
    /// filled by `make model`).
    #[arg(long)]
    model: Option<PathBuf>,
    /// Only index files whose path (relative to its input) matches one of these globs.
    #[arg(long)]
    include: Vec<String>,
    /// Skip files whose path (relative to its input) matches one of these globs.
    #[arg(long)]
    exclude: Vec<String>,
    #[command(flatten)]
    cache: crate::cache::CacheArgs,
    /// Threads that load, chunk and embed (default: one per core). The index is the same
    /// whatever the count.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// With --site: embed only this share of the pages (`I/N`, 0 <= I < N; a page's share is its
    /// content's hash), writing their vectors to --partial; then `sextant merge` the N partials.
    #[arg(long, value_name = "I/N", requires_all = ["site", "partial"])]
    shard: Option<crate::shard::Shard>,
    /// With --shard: the partial file to write (outside the site).
    #[arg(long, value_name = "FILE", requires = "shard")]
    partial: Option<PathBuf>,
    /// With --site: another site whose search the box searches too (repeatable): the folder
    /// holding its sextant.json, and a weight for its results after a comma (default 1), e.g.
    /// https://blog.example.com/sextant/,0.5. Its host must allow this site's origin (CORS).
    #[arg(long = "merge-index", value_name = "URL[,WEIGHT]", requires = "site", value_parser = super::site::parse_merged_site)]
    merge_index: Vec<super::site::MergedSite>,
    /// With --site: how the search box's model body holds its layer weights: int5 (five bits in
    /// groups, 64% of int8's bytes, hybrid nDCG@10 within 0.005 of int8's: BENCHMARKS.md) or
    /// int8 (the whole model's). Queries in the Worker of the site use the same (`/embed`).
    #[arg(long, value_name = "WEIGHTS", default_value = "int5", requires = "site", value_parser = crate::flags::body_weights_parser())]
    body_weights: sextant::embed::Weights,
    /// Send the build's OpenTelemetry spans (rag.ingest, rag.embed) as OTLP/JSON to this
    /// collector's traces endpoint (http://host:4318/v1/traces) once it is done.
    #[arg(long, value_name = "URL", conflicts_with = "site")]
    otlp: Option<String>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// `sextant merge`: the site's search from the partials of a sharded build.
#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The partial files, one per shard (`sextant build --site DIR --shard I/N --partial FILE`).
    #[arg(required = true)]
    partials: Vec<PathBuf>,
    /// The built static site the shards read (the same pages).
    #[arg(long, value_name = "SITE")]
    site: PathBuf,
    /// The built sextant-search package (as for `build --site`).
    #[arg(long)]
    package: Option<PathBuf>,
    /// The sextant.toml the shards were built with.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Folder with model.onnx and tokenizer.json (the shards' model).
    #[arg(long)]
    model: Option<PathBuf>,
    /// The --include globs the shards were given.
    #[arg(long)]
    include: Vec<String>,
    /// The --exclude globs the shards were given.
    #[arg(long)]
    exclude: Vec<String>,
    /// Other sites' search merged into the box, as with --site.
    #[arg(long = "merge-index", value_name = "URL[,WEIGHT]", value_parser = super::site::parse_merged_site)]
    merge_index: Vec<super::site::MergedSite>,
    /// How the search box's model body holds its layer weights, as with --site.
    #[arg(long, value_name = "WEIGHTS", default_value = "int5", value_parser = crate::flags::body_weights_parser())]
    body_weights: sextant::embed::Weights,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `sextant merge`.
pub fn merge(args: MergeArgs) -> Result<()> {
    let mut config = read_config(args.config.as_deref())?;
    config.input.include.extend(args.include.iter().cloned());
    config.input.exclude.extend(args.exclude.iter().cloned());
    super::site::run(super::site::SiteBuild {
        site: args.site,
        config,
        model: args.model,
        package: args.package,
        cache: None,
        json: args.json,
        plan: super::site::SitePlan::Merge(args.partials),
        merge: args.merge_index,
        body_weights: args.body_weights,
    })
}

#[derive(Serialize)]
struct SectionSize {
    name: String,
    bytes: u64,
}

#[derive(Serialize)]
struct Summary {
    output: String,
    files: usize,
    documents: usize,
    chunks: usize,
    duplicates_dropped: usize,
    shared_chunks: usize,
    skipped: Vec<SkippedJson>,
    bytes: u64,
    sections: Vec<SectionSize>,
    seconds: f64,
    docs_per_second: f64,
    chunks_per_second: f64,
    embedding: BuildStats,
    index_files: IndexFileSizes,
}

/// Objects and bytes of each kind of index object, and the files (packs) they are stored in.
#[derive(Serialize, Default)]
pub struct IndexFileSizes {
    /// Per kind (`norms`, `kw`, `frag`, `vmeta`, `codes`, `vec`, `page`): objects and bytes.
    pub kinds: std::collections::BTreeMap<String, (usize, u64)>,
    /// Files written (packs, or every object with `layout.pack_bytes` 0) and their largest.
    pub files: usize,
    /// Bytes of the largest file.
    pub largest_file: u64,
}

impl IndexFileSizes {
    /// Counts the built objects by the kind their names start with.
    pub fn of(built: &BuiltIndex) -> Self {
        let mut kinds: std::collections::BTreeMap<String, (usize, u64)> = Default::default();
        for (name, bytes) in built.objects() {
            let kind = name.split('.').next().unwrap_or("").to_string();
            let entry = kinds.entry(kind).or_default();
            entry.0 += 1;
            entry.1 += bytes.len() as u64;
        }
        Self {
            kinds,
            files: built.files.len(),
            largest_file: built.files.iter().map(|(_, b)| b.len() as u64).max().unwrap_or(0),
        }
    }
}

#[derive(Serialize)]
struct SkippedJson {
    path: String,
    reason: String,
}

pub fn run(args: BuildArgs) -> Result<()> {
    match args.threads {
        None => build(args),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(usize::from(n))
            .build()
            .context("starting the build's threads")?
            .install(|| build(args)),
    }
}

fn build(args: BuildArgs) -> Result<()> {
    let started = Instant::now();
    let mut config = read_config(args.config.as_deref())?;
    config.input.include.extend(args.include.iter().cloned());
    config.input.exclude.extend(args.exclude.iter().cloned());
    let cache = args.cache.dir();
    if let Some(site) = args.site {
        return super::site::run(super::site::SiteBuild {
            site,
            config,
            model: args.model,
            package: args.package,
            cache,
            json: args.json,
            plan: match (args.shard, args.partial) {
                (Some(shard), Some(partial)) => super::site::SitePlan::Shard { shard, partial },
                _ => super::site::SitePlan::Whole,
            },
            merge: args.merge_index,
            body_weights: args.body_weights,
        });
    }
    let otlp = args.otlp.as_deref().map(crate::otlp::Otlp::new).transpose()?;
    let wall_start = crate::otlp::wall_ms();
    let (include, exclude) = (&config.input.include, &config.input.exclude);
    let output = args.output.clone().context("--output is required")?;
    check_output(&output, &args.inputs)?;
    let (files, mut skipped) = collect(&args.inputs, include, exclude)?;
    for s in &skipped {
        eprintln!("warning: skipped {}: {}", s.path, s.reason);
    }
    if files.is_empty() {
        bail!(
            "no documents to index in {}: no .md, .mdx, .html, .txt or .jsonl files{}",
            args.inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if include.is_empty() && exclude.is_empty() {
                ""
            } else {
                " matched the include/exclude globs"
            }
        );
    }
    let (documents, over_limits) = load_documents(&files, &config.input)?;
    for s in &over_limits {
        eprintln!("warning: skipped {}: {}", s.path, s.reason);
    }
    skipped.extend(over_limits);
    if documents.is_empty() {
        bail!("no documents to index: every file was skipped (see the warnings above)");
    }
    let (built, stats) = build_index(&documents, &config, args.model.as_deref(), cache.as_deref())?;
    let bytes = pack(&built.manifest, &built.files)?;
    write_atomically(&output, &bytes)?;
    let seconds = started.elapsed().as_secs_f64();
    let raw = Packed::parse(&bytes).context("re-reading the index just written")?;
    let manifest = &built.manifest;
    let summary = Summary {
        output: output.display().to_string(),
        files: files.len(),
        documents: manifest.counts.documents,
        chunks: manifest.counts.chunks,
        duplicates_dropped: manifest.counts.duplicates_dropped,
        shared_chunks: manifest.counts.shared_chunks,
        skipped: skipped
            .iter()
            .map(|Skipped { path, reason }| SkippedJson {
                path: path.clone(),
                reason: reason.clone(),
            })
            .collect(),
        bytes: bytes.len() as u64,
        sections: raw
            .sections
            .iter()
            .map(|s| SectionSize {
                name: s.name.clone(),
                bytes: s.length,
            })
            .collect(),
        seconds,
        docs_per_second: manifest.counts.documents as f64 / seconds,
        chunks_per_second: manifest.counts.chunks as f64 / seconds,
        embedding: stats,
        index_files: IndexFileSizes::of(&built),
    };
    print_summary(&summary, args.json)?;
    if let Some(mut otlp) = otlp {
        let source = args
            .inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(",");
        otlp.build(
            wall_start,
            &crate::otlp::BuildWork {
                source: &source,
                documents: summary.documents,
                chunks: summary.chunks,
                embedded: summary.embedding.embedded,
                embed_ms: summary.embedding.embed_seconds * 1000.0,
                threads: rayon::current_num_threads(),
            },
        );
        otlp.send();
    }
    Ok(())
}

fn print_summary(s: &Summary, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, s)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "wrote {} ({} bytes) in {:.1} s", s.output, s.bytes, s.seconds)?;
    writeln!(
        out,
        "  {} files, {} documents, {} chunks ({} shared with another document, {} repeats within a document dropped), {} files skipped",
        s.files,
        s.documents,
        s.chunks,
        s.shared_chunks,
        s.duplicates_dropped,
        s.skipped.len()
    )?;
    writeln!(
        out,
        "  {:.1} documents/s, {:.1} chunks/s overall",
        s.docs_per_second, s.chunks_per_second
    )?;
    s.embedding.print(&mut out)?;
    for (kind, (objects, bytes)) in &s.index_files.kinds {
        writeln!(out, "  {kind:<10} {objects:>6} objects {bytes:>12} bytes")?;
    }
    writeln!(
        out,
        "  stored in {} files, the largest {} bytes",
        s.index_files.files, s.index_files.largest_file
    )?;
    for section in &s.sections {
        writeln!(out, "  {:<10} {:>12} bytes", section.name, section.bytes)?;
    }
    Ok(())
}
