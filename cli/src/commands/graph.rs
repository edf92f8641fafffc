//! `sextant graph build INDEX --llm-base-url URL --llm-model NAME`: the knowledge graph of a
//! split index, extracted chunk by chunk by the user's LLM with the core's rules
//! (`sextant::graph`), written beside the index as `graph.<hash>.json` with a new manifest that
//! names it (the old manifest and every other file stay as they were).
//!
//! Each chunk's extraction is kept in a cache by the digest of what was asked (the LLM model,
//! the prompts, gleaning and the chunk's text), appended as soon as the chunk is done: a build
//! that stops (Ctrl-C, the LLM down) resumes where it was, and a rebuilt index extracts only its
//! new or changed chunks. A chunk skipped after bad replies is kept as skipped; one whose calls
//! failed (timeouts, HTTP errors) is not kept, so the next run tries it again.

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sextant::digest::sha256_hex;
use sextant::embed::{TextKind, Weights};
use sextant::graph::build::merge;
use sextant::graph::extract::{ChunkExtraction, Extraction};
use sextant::index::files::file_name;
use sextant::index::GRAPH_MINOR;
use sextant::options::LlmSettings;
use sextant::prompt::{GRAPH_EXTRACT, GRAPH_GLEAN};
use sextant::search::Step;

use crate::engine::{open, read_index};
use crate::indexing::write_atomically;
use crate::llm::{Llm, LlmFlags};

#[derive(clap::Subcommand, Debug)]
pub enum GraphCommand {
    /// Extract a split index's knowledge graph with your LLM and write it beside the index, with
    /// a new manifest naming it.
    Build(BuildArgs),
}

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// The split index's manifest (`sextant build --site` writes `sextant/index/manifest.*.json`;
    /// a packed `.sxt` must be unpacked first with `sextant unpack`).
    index: PathBuf,
    #[command(flatten)]
    llm: LlmFlags,
    /// Rounds asking the LLM what it missed in a chunk (0–2).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=2))]
    gleaning: u32,
    /// LLM calls made at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64))]
    concurrency: u32,
    /// Milliseconds one LLM call may take, retries included.
    #[arg(long, default_value_t = 120_000, value_parser = clap::value_parser!(u64).range(1000..=600_000))]
    timeout_ms: u64,
    /// Folder with model.onnx and tokenizer.json (default: the cached model): it embeds the
    /// entities and relations, and must be the index's.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Where extractions are kept between runs (default: $SEXTANT_CACHE_DIR/graph, else
    /// ~/.cache/sextant/graph).
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    cache_dir: Option<PathBuf>,
    /// Keep no extraction between runs.
    #[arg(long)]
    no_cache: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(command: GraphCommand) -> Result<()> {
    match command {
        GraphCommand::Build(args) => build(&args),
    }
}

/// Consecutive chunks whose every call failed after which the build stops (the LLM is down).
const MAX_FAILED_CHUNKS: usize = 5;

/// One chunk's outcome, as the cache keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cached {
    key: String,
    skipped: bool,
    extraction: Extraction,
}

/// The summary printed.
#[derive(Debug, Serialize)]
struct Summary {
    graph: String,
    manifest: String,
    chunks: usize,
    cached: usize,
    skipped: usize,
    entities: usize,
    relations: usize,
    calls: usize,
    tokens: usize,
    seconds: f64,
    /// The site's entry manifest, when the index is a site's and it now points at the new one.
    site: Option<String>,
}

fn cache_file(args: &BuildArgs) -> Option<PathBuf> {
    if args.no_cache {
        return None;
    }
    let dir = args.cache_dir.clone().or_else(|| {
        crate::cache::default_dir().map(|d| match std::env::var_os("SEXTANT_CACHE_DIR") {
            Some(_) => d.join("graph"),
            None => d.parent().map_or_else(|| d.join("graph"), |p| p.join("graph")),
        })
    })?;
    Some(dir.join("extractions.jsonl"))
}

/// The cache's entries (a line that does not parse, such as one cut off, is skipped).
fn read_cache(path: &Path) -> HashMap<String, Cached> {
    let Ok(file) = std::fs::File::open(path) else {
        return HashMap::new();
    };
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str::<Cached>(&line).ok())
        .map(|c| (c.key.clone(), c))
        .collect()
}

fn build(args: &BuildArgs) -> Result<()> {
    let started = Instant::now();
    let bytes = read_index(&args.index)?;
    if bytes.first() != Some(&b'{') {
        bail!(
            "{} is a packed index; a graph is written beside a split index: `sextant unpack {} -o DIR`, then `sextant graph build DIR/manifest.*.json`",
            args.index.display(),
            args.index.display()
        );
    }
    let llm = args.llm.client("graph build")?;
    let engine = open(&args.index, args.model.as_deref(), Some(Weights::Int8))?;
    let manifest = engine.manifest().clone();
    let total = manifest.counts.chunks as u32;
    let numbers: Vec<u32> = (0..total).collect();
    let Step::Done(chunks) = engine.chunks_numbered(&numbers) else {
        bail!("the index's text fragments were not all read");
    };
    let embedder = engine.embedder().context("the model is not loaded")?.clone();

    let llm_model = args.llm.llm_model.clone().unwrap_or_default();
    let key_of = |text: &str| {
        sha256_hex(format!("{llm_model}\n{}\n{GRAPH_EXTRACT}\n{GRAPH_GLEAN}\n{text}", args.gleaning).as_bytes())
    };
    let cache_path = cache_file(args);
    if let Some(dir) = cache_path.as_deref().and_then(Path::parent) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating the extraction cache {}", dir.display()))?;
    }
    let cache = cache_path.as_deref().map(read_cache).unwrap_or_default();
    let appender = match &cache_path {
        Some(p) => Some(Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .with_context(|| format!("opening the extraction cache {}", p.display()))?,
        )),
        None => None,
    };

    let settings = LlmSettings {
        timeout_ms: args.timeout_ms,
        max_answer_bytes: sextant::graph::extract::MAX_REPLY_BYTES + 1,
        ..LlmSettings::default()
    };
    let results: Vec<Mutex<Option<Cached>>> = chunks.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let calls = AtomicUsize::new(0);
    let tokens = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let from_cache = AtomicUsize::new(0);
    let failed_in_a_row = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let last_error: Mutex<Option<String>> = Mutex::new(None);
    let progress = Mutex::new(Instant::now());
    let count = |s: &str| embedder.count_tokens(s).unwrap_or(s.len() / 4);
    std::thread::scope(|scope| {
        for _ in 0..args.concurrency.min(total.max(1)) {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((_, found)) = chunks.get(i) else {
                        break;
                    };
                    let key = key_of(&found.text);
                    let (outcome, keep) = if let Some(hit) = cache.get(&key) {
                        from_cache.fetch_add(1, Ordering::Relaxed);
                        (Some(hit.clone()), false)
                    } else {
                        match extract_one(
                            &llm,
                            &found.id,
                            &found.text,
                            args.gleaning,
                            &settings,
                            &calls,
                            &tokens,
                            &count,
                        ) {
                            Ok((skipped, extraction, cacheable)) => (
                                Some(Cached {
                                    key,
                                    skipped,
                                    extraction,
                                }),
                                cacheable,
                            ),
                            Err(e) => {
                                *last_error.lock().unwrap() = Some(e);
                                (None, false)
                            }
                        }
                    };
                    match &outcome {
                        Some(c) => {
                            failed_in_a_row.store(0, Ordering::Relaxed);
                            if let Some(f) = appender.as_ref().filter(|_| keep) {
                                let line = serde_json::to_string(c).expect("an extraction serialises");
                                let _ = writeln!(f.lock().unwrap(), "{line}");
                            }
                        }
                        None => {
                            if failed_in_a_row.fetch_add(1, Ordering::Relaxed) + 1 >= MAX_FAILED_CHUNKS {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                    *results[i].lock().unwrap() = outcome;
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    let mut last = progress.lock().unwrap();
                    if last.elapsed().as_secs_f64() >= 2.0 || n as u32 == total {
                        *last = Instant::now();
                        let secs = started.elapsed().as_secs_f64();
                        let fresh = n.saturating_sub(from_cache.load(Ordering::Relaxed));
                        let left = (total as usize - n) as f64 * secs / fresh.max(1) as f64;
                        eprintln!(
                            "graph: {n}/{total} chunks ({} from the cache), {} LLM calls, {} tokens, {secs:.0} s{}",
                            from_cache.load(Ordering::Relaxed),
                            calls.load(Ordering::Relaxed),
                            tokens.load(Ordering::Relaxed),
                            if fresh > 0 && n < total as usize {
                                format!(", about {left:.0} s left")
                            } else {
                                String::new()
                            }
                        );
                    }
                }
            });
        }
    });
    if stop.load(Ordering::Relaxed) {
        bail!(
            "the LLM failed on {MAX_FAILED_CHUNKS} chunks in a row ({}); nothing was written. Run the same command again to resume: {} chunks done are kept in the cache",
            last_error.lock().unwrap().clone().unwrap_or_default(),
            done.load(Ordering::Relaxed).saturating_sub(MAX_FAILED_CHUNKS)
        );
    }
    let mut extractions: Vec<(u32, Extraction)> = Vec::new();
    let mut skipped = 0;
    let mut failed = 0;
    for ((number, _), slot) in chunks.iter().zip(&results) {
        match slot.lock().unwrap().take() {
            Some(c) if c.skipped => skipped += 1,
            Some(c) => extractions.push((*number, c.extraction)),
            None => failed += 1,
        }
    }
    if failed > 0 {
        eprintln!(
            "warning: {failed} chunks could not be extracted ({}); they are left out, and the next run tries them again",
            last_error.lock().unwrap().clone().unwrap_or_default()
        );
    }
    let draft = merge(&extractions, skipped + failed);
    eprintln!(
        "graph: embedding {} entities and {} relations",
        draft.entities.len(),
        draft.relations.len()
    );
    let embed_all = |texts: Vec<String>| -> Result<Vec<Vec<f32>>> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let per = texts.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let parts: Vec<_> = texts
                .chunks(per)
                .map(|part| {
                    scope.spawn(|| {
                        part.iter()
                            .map(|t| embedder.embed(t, TextKind::Passage))
                            .collect::<Result<Vec<_>, _>>()
                    })
                })
                .collect();
            let mut out = Vec::with_capacity(texts.len());
            for p in parts {
                out.extend(p.join().expect("an embedding thread panicked")?);
            }
            Ok(out)
        })
    };
    let entity_vectors = embed_all(draft.entity_texts())?;
    let relation_vectors = embed_all(draft.relation_texts())?;
    let (entities, relations) = (draft.entities.len(), draft.relations.len());
    let digest = engine
        .chunks_digest()
        .context("the index's text fragments were not all read")?;
    let graph = draft
        .finish(
            &entity_vectors,
            &relation_vectors,
            manifest.model.dims,
            &manifest.model.sha256,
            manifest.counts.chunks,
            &digest,
        )
        .map_err(anyhow::Error::msg)?;
    let graph_bytes = graph.to_json();
    let dir = args.index.parent().unwrap_or(Path::new("."));
    let graph_name = file_name("graph", "json", &graph_bytes);
    write_atomically(&dir.join(&graph_name), &graph_bytes)?;
    let mut new_manifest = manifest;
    new_manifest.files.graph = Some(graph_name.clone());
    new_manifest.format.minor = new_manifest.format.minor.max(GRAPH_MINOR);
    let manifest_bytes = serde_json::to_vec(&new_manifest)?;
    let manifest_name = file_name("manifest", "json", &manifest_bytes);
    write_atomically(&dir.join(&manifest_name), &manifest_bytes)?;
    let site_entry = point_site_at(dir, &args.index, &graph_name, &manifest_name)?;
    let summary = Summary {
        graph: dir.join(&graph_name).display().to_string(),
        manifest: dir.join(&manifest_name).display().to_string(),
        chunks: total as usize,
        cached: from_cache.load(Ordering::Relaxed),
        skipped: skipped + failed,
        entities,
        relations,
        calls: calls.load(Ordering::Relaxed),
        tokens: tokens.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
        site: site_entry.as_ref().map(|p| p.display().to_string()),
    };
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        println!(
            "wrote {} ({} entities, {} relations from {} chunks; {} from the cache, {} skipped; {} LLM calls, about {} tokens, {:.1} s) and {}: {}",
            summary.graph,
            entities,
            relations,
            summary.chunks,
            summary.cached,
            summary.skipped,
            summary.calls,
            summary.tokens,
            summary.seconds,
            summary.manifest,
            match &summary.site {
                Some(site) => format!("{site} now points at it (build --site again drops the graph: run graph build after it; unchanged chunks come from the cache)"),
                None => "search it with this manifest (the old one is unchanged)".into(),
            }
        );
    }
    Ok(())
}

/// When the index is a site's (`sextant build --site` wrote `sextant/index/manifest.*.json` and
/// `sextant/sextant.json` names it), points the site's entry manifest at the new manifest and
/// records the two new files as the build's, so the search box, the Worker and the next build
/// know them. Returns the entry manifest's path, or `None` when the index is no site's.
fn point_site_at(dir: &Path, index: &Path, graph_name: &str, manifest_name: &str) -> Result<Option<PathBuf>> {
    let Some(site) = dir.parent() else {
        return Ok(None);
    };
    let entry = site.join(crate::owned::ENTRY_MANIFEST);
    let Ok(text) = std::fs::read_to_string(&entry) else {
        return Ok(None);
    };
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(None);
    };
    let folder = dir
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let old = format!(
        "{folder}/{}",
        index.file_name().map(|f| f.to_string_lossy()).unwrap_or_default()
    );
    let new = format!("{folder}/{manifest_name}");
    let mut pointed = false;
    if value.get("index").and_then(|v| v.as_str()) == Some(old.as_str()) {
        value["index"] = new.clone().into();
        pointed = true;
    }
    if let Some(languages) = value.get_mut("languages").and_then(|v| v.as_object_mut()) {
        for v in languages.values_mut() {
            if v.as_str() == Some(old.as_str()) {
                *v = new.clone().into();
                pointed = true;
            }
        }
    }
    if !pointed {
        return Ok(None);
    }
    if let Some(files) = value.get_mut("files").and_then(|v| v.as_array_mut()) {
        let mut names: Vec<String> = files.iter().filter_map(|f| f.as_str().map(String::from)).collect();
        names.extend([format!("{folder}/{graph_name}"), new]);
        names.sort();
        names.dedup();
        *files = names.into_iter().map(serde_json::Value::from).collect();
    }
    let mut bytes = serde_json::to_vec_pretty(&value)?;
    bytes.push(b'\n');
    write_atomically(&entry, &bytes)?;
    Ok(Some(entry))
}

/// One chunk's extraction: `(skipped, extraction, cacheable)`, or the error when no call got a
/// reply (the LLM down: the chunk is tried again next run). A reply that was too long or not a
/// chat completion counts as a bad reply; a chunk any of whose calls failed in transport (a
/// timeout, an HTTP error) is used but not kept, so the next run asks again.
#[allow(clippy::too_many_arguments)]
fn extract_one(
    llm: &Llm,
    id: &str,
    text: &str,
    gleaning: u32,
    settings: &LlmSettings,
    calls: &AtomicUsize,
    tokens: &AtomicUsize,
    count: &dyn Fn(&str) -> usize,
) -> Result<(bool, Extraction, bool), String> {
    let mut x = ChunkExtraction::new(id, text, gleaning);
    let mut transport_errors = 0;
    let mut replies = 0;
    while !x.done {
        calls.fetch_add(1, Ordering::Relaxed);
        let sent: usize = x.messages.iter().map(|m| count(&m.content)).sum();
        match llm.chat(&x.messages, settings) {
            Ok(reply) => {
                replies += 1;
                tokens.fetch_add(sent + count(&reply), Ordering::Relaxed);
                x.reply(&reply);
            }
            Err(e) if matches!(e.code, "LLM_INCOMPLETE" | "LLM_BAD_RESPONSE") => {
                replies += 1;
                tokens.fetch_add(sent, Ordering::Relaxed);
                x.failed(e.to_string());
            }
            Err(e) => {
                transport_errors += 1;
                tokens.fetch_add(sent, Ordering::Relaxed);
                x.failed(e.to_string());
            }
        }
    }
    if replies == 0 {
        return Err(x.errors.last().cloned().unwrap_or_default());
    }
    Ok((x.skipped, x.extraction, transport_errors == 0))
}
