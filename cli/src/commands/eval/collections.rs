//! The judged collections `eval` runs over: collection folders (BEIR's layout), each built in
//! memory with every build variant, or one index with its queries and judgements.
//!
//! A collection folder holds `queries.jsonl`, its judgements (`qrels.tsv`, or BEIR's
//! `qrels/test.tsv`) and its corpus: `corpus.jsonl` (BEIR), or `corpus/`, a built site (a folder,
//! or a link to one) read as `sextant build --site` reads it. An optional `sextant.toml` beside
//! them says which files of the corpus count (its `[input]`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use sextant::config::BuildConfig;
use sextant::embed::TextKind;
use sextant::eval::{has_relevant, parse_qrels, parse_queries, score_query, Qrels, Query, QueryMetrics};
use sextant::loader::load_jsonl;
use sextant::options::SearchOptions;
use sextant::search::query::Query as ParsedQuery;
use sextant::search::Engine;

use crate::engine::attach_model;
use crate::indexing::{bar, build_index};

/// A build configuration to evaluate under: a `--config` file (named by its stem), or the
/// defaults.
#[derive(Debug, Clone)]
pub struct Variant {
    /// Its name in reports.
    pub name: String,
    /// What it builds with.
    pub config: BuildConfig,
}

impl Variant {
    /// The variants of `--config` (the defaults when none is given).
    pub fn all(paths: &[PathBuf]) -> Result<Vec<Variant>> {
        if paths.is_empty() {
            return Ok(vec![Variant {
                name: "defaults".into(),
                config: BuildConfig::default(),
            }]);
        }
        let mut out: Vec<Variant> = Vec::new();
        for path in paths {
            let name = path
                .file_stem()
                .map_or_else(|| path.display().to_string(), |s| s.to_string_lossy().into_owned());
            if out.iter().any(|v| v.name == name) {
                bail!("two --config files are named {name:?}; give each variant a file name of its own");
            }
            out.push(Variant {
                name,
                config: crate::config::read_config(Some(path))?,
            });
        }
        Ok(out)
    }
}

/// One collection, indexed, with its judged queries embedded: what every mode and
/// configuration runs over.
pub struct Judged {
    /// The collection's name (its folder's, or the index file's).
    pub name: String,
    /// The engine over its index.
    pub engine: Engine,
    /// The queries that have a relevant judgement, in file order.
    pub queries: Vec<Query>,
    /// Each query's embedding (none when only keyword search runs).
    pub vectors: Vec<Option<Vec<f32>>>,
    /// The judgements.
    pub qrels: Qrels,
}

impl Judged {
    /// Each query's metrics under `options`, in query order.
    pub fn metrics(&self, options: &SearchOptions) -> Result<Vec<QueryMetrics>> {
        let clock = sextant::search::NoClock;
        let empty = Default::default();
        Ok(self
            .queries
            .par_iter()
            .zip(self.vectors.par_iter())
            .map(|(q, v)| {
                let response = self
                    .engine
                    .search_with_vector(&q.text, v.as_deref(), options, &clock)?
                    .done()?;
                let ranked: Vec<String> = response.results.into_iter().map(|r| r.doc_id).collect();
                Ok(score_query(&ranked, self.qrels.get(&q.id).unwrap_or(&empty)))
            })
            .collect::<Result<_, sextant::search::SearchError>>()?)
    }

    /// An engine with its judged queries (embedded if `needs_model`).
    pub fn new(name: String, engine: Engine, queries: &Path, qrels: &Path, needs_model: bool) -> Result<Self> {
        let (queries, qrels) = judged_queries(queries, qrels)?;
        let progress = bar(queries.len() as u64, "queries");
        let vectors: Vec<Option<Vec<f32>>> = queries
            .par_iter()
            .map(|q| {
                let v = match engine.embedder() {
                    // What `sextant search` embeds: the query without its excluded words.
                    Some(e) if needs_model => {
                        Some(e.embed(&ParsedQuery::parse(&q.text).text, TextKind::Query)).transpose()
                    }
                    _ => Ok(None),
                };
                progress.inc(1);
                v
            })
            .collect::<Result<_, _>>()?;
        progress.finish_and_clear();
        Ok(Self {
            name,
            engine,
            queries,
            vectors,
            qrels,
        })
    }
}

/// The queries of `queries` that have a relevant judgement in `qrels`, and the judgements.
fn judged_queries(queries: &Path, qrels: &Path) -> Result<(Vec<Query>, Qrels)> {
    let queries_text = std::fs::read_to_string(queries).with_context(|| format!("reading {}", queries.display()))?;
    let qrels_text = std::fs::read_to_string(qrels).with_context(|| format!("reading {}", qrels.display()))?;
    let all = parse_queries(&queries_text).with_context(|| format!("in {}", queries.display()))?;
    let judgements = parse_qrels(&qrels_text).with_context(|| format!("in {}", qrels.display()))?;
    let judged: Vec<Query> = all
        .iter()
        .filter(|q| has_relevant(judgements.get(&q.id)))
        .cloned()
        .collect();
    if judged.is_empty() {
        bail!(
            "none of the {} queries in {} has a relevant judgement in {}; check that the query ids match",
            all.len(),
            queries.display(),
            qrels.display()
        );
    }
    Ok((judged, judgements))
}

/// Where a collection folder keeps its parts.
#[derive(Debug)]
pub struct CollectionDir {
    /// The collection's name: its folder's.
    pub name: String,
    corpus: Corpus,
    queries: PathBuf,
    qrels: PathBuf,
    input: Option<sextant::config::InputConfig>,
}

#[derive(Debug)]
enum Corpus {
    Jsonl(PathBuf),
    Site(PathBuf),
}

impl CollectionDir {
    /// Finds the parts of the collection in `dir`, saying what is missing.
    pub fn find(dir: &Path) -> Result<Self> {
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.display().to_string());
        let queries = dir.join("queries.jsonl");
        let qrels = [dir.join("qrels.tsv"), dir.join("qrels").join("test.tsv")]
            .into_iter()
            .find(|p| p.is_file());
        let corpus = if dir.join("corpus.jsonl").is_file() {
            Some(Corpus::Jsonl(dir.join("corpus.jsonl")))
        } else if dir.join("corpus").is_dir() {
            Some(Corpus::Site(dir.join("corpus")))
        } else {
            None
        };
        let link = dir.join("corpus");
        if corpus.is_none() {
            if let Ok(target) = std::fs::read_link(&link) {
                bail!(
                    "{}'s corpus is a link to {}, which is not a folder here; put the site there (or link to where it is)",
                    dir.display(),
                    target.display()
                );
            }
        }
        let (Some(corpus), Some(qrels), true) = (corpus, qrels, queries.is_file()) else {
            bail!(
                "{} is not a collection folder: it needs queries.jsonl, qrels.tsv (or qrels/test.tsv) and a corpus \
                 (corpus.jsonl, or corpus/: a built site); to evaluate an index file, pass it with --queries and --qrels",
                dir.display()
            );
        };
        let config = dir.join("sextant.toml");
        let input = if config.is_file() {
            Some(crate::config::read_config(Some(&config))?.input)
        } else {
            None
        };
        Ok(Self {
            name,
            corpus,
            queries,
            qrels,
            input,
        })
    }

    /// Builds the collection's index in memory as `variant` says (embeddings from the cache in
    /// `cache_dir` when given) and embeds its queries.
    pub fn open(&self, variant: &Variant, args: &super::EvalArgs, needs_model: bool) -> Result<Judged> {
        let mut config = variant.config.clone();
        if let Some(input) = &self.input {
            config.input = input.clone();
        }
        let started = std::time::Instant::now();
        let documents = match &self.corpus {
            Corpus::Jsonl(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                load_jsonl(&path.display().to_string(), &text).with_context(|| format!("loading {}", path.display()))?
            }
            Corpus::Site(dir) => super::super::site::site_documents(dir, &config.input)?.0,
        };
        let (built, stats) = build_index(&documents, &config, args.model.as_deref(), args.cache.dir().as_deref())
            .with_context(|| format!("indexing collection {}", self.name))?;
        eprintln!(
            "{} ({}): {} documents, {} chunks ({} shared with another document), {} embedded now, in {:.1} s",
            self.name,
            variant.name,
            built.manifest.counts.documents,
            built.manifest.counts.chunks,
            built.manifest.counts.shared_chunks,
            stats.embedded,
            started.elapsed().as_secs_f64()
        );
        let mut engine = Engine::from_files(built.manifest, &built.files)
            .with_context(|| format!("opening the index of {}", self.name))?;
        if needs_model {
            attach_model(&mut engine, args.model.as_deref(), args.weights, &self.name)?;
        }
        Judged::new(self.name.clone(), engine, &self.queries, &self.qrels, needs_model)
    }
}
