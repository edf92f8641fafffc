//! The query flags `search` and `frame` share: the core's [`SearchOptions`], each field a flag of
//! the same name in kebab case (`per_document` → `--per-document`; `filters` is `--filter`,
//! repeated, with `--filters` its alias). Defaults come from the core; `options()` names every
//! field, so an option without its flag does not compile.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use sextant::bm25::Bm25Override;
use sextant::embed::Weights;
use sextant::options::{Filter, Fusion, Mode, PageScore, RerankStrategy, SearchOptions, SortOrder, VectorSearch};

/// `--mode`, parsed by the core's own names.
pub fn mode_parser() -> impl TypedValueParser<Value = Mode> {
    PossibleValuesParser::new(Mode::NAMES).try_map(|s| s.parse::<Mode>())
}

/// `--fusion`, parsed by the core's own names.
pub fn fusion_parser() -> impl TypedValueParser<Value = Fusion> {
    PossibleValuesParser::new(Fusion::NAMES).try_map(|s| s.parse::<Fusion>())
}

/// Parses `--weights`.
pub fn weights_parser() -> impl TypedValueParser<Value = Weights> {
    PossibleValuesParser::new(Weights::NAMES).try_map(|s| s.parse::<Weights>())
}

/// Parses `--body-weights`: the weights a model body can be packed with.
pub fn body_weights_parser() -> impl TypedValueParser<Value = Weights> {
    PossibleValuesParser::new(["int5", "int8"]).try_map(|s| s.parse::<Weights>())
}

/// Parses `--page-score`.
pub fn page_score_parser() -> impl TypedValueParser<Value = PageScore> {
    PossibleValuesParser::new(PageScore::NAMES).try_map(|s| s.parse::<PageScore>())
}

fn rerank_parser() -> impl TypedValueParser<Value = RerankStrategy> {
    PossibleValuesParser::new(RerankStrategy::NAMES).try_map(|s| s.parse::<RerankStrategy>())
}

fn vector_search_parser() -> impl TypedValueParser<Value = VectorSearch> {
    PossibleValuesParser::new(VectorSearch::NAMES).try_map(|s| s.parse::<VectorSearch>())
}

/// The search options as flags.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchFlags {
    /// Results wanted (1–1000).
    #[arg(short, default_value_t = SearchOptions::default().k)]
    pub k: usize,
    /// Retrievers to use: dense and keyword fused (see --fusion), vectors only, or BM25 only
    /// (which needs no model).
    #[arg(long, default_value_t = SearchOptions::default().mode, value_parser = mode_parser())]
    pub mode: Mode,
    /// Candidates taken from each retriever before fusion (default max(10·k, 100)).
    #[arg(long)]
    pub depth: Option<usize>,
    /// Drop results scoring below this (the fused score in hybrid, cosine in dense, BM25 in keyword).
    #[arg(long)]
    pub score_threshold: Option<f64>,
    /// Drop dense candidates whose cosine similarity is below this, before fusion.
    #[arg(long)]
    pub min_similarity: Option<f64>,
    /// Keep only the best chunk of each document.
    #[arg(long)]
    pub per_document: bool,
    /// BM25 k1 for this query (default: the index's).
    #[arg(long)]
    pub bm25_k1: Option<f32>,
    /// BM25 b for this query (default: the index's).
    #[arg(long)]
    pub bm25_b: Option<f32>,
    /// How hybrid search fuses: rrf (reciprocal rank fusion, ranks only) or convex (a weighted
    /// sum of normalised scores, see --dense-weight).
    #[arg(long, default_value_t = SearchOptions::default().fusion, value_parser = fusion_parser())]
    pub fusion: Fusion,
    /// The dense list's weight in a convex fusion (0–1; keyword gets the rest).
    #[arg(long, default_value_t = SearchOptions::default().dense_weight)]
    pub dense_weight: f64,
    /// Fuse documents (each ranked by its best chunk), not chunks: true or false.
    #[arg(long, default_value_t = SearchOptions::default().fuse_documents, action = clap::ArgAction::Set)]
    pub fuse_documents: bool,
    /// Expand keyword queries with terms of their top chunks (RM3 pseudo-relevance feedback):
    /// true or false.
    #[arg(long, default_value_t = SearchOptions::default().query_expansion, action = clap::ArgAction::Set)]
    pub query_expansion: bool,
    /// Embed the query with its misspelled words corrected (did you mean) for hybrid search:
    /// true or false.
    #[arg(long, default_value_t = SearchOptions::default().embed_corrections, action = clap::ArgAction::Set)]
    pub embed_corrections: bool,
    /// With --fuse-documents true, how a page's chunks score it: max (its best chunk) or sum3
    /// (its best three added up).
    #[arg(long, default_value_t = SearchOptions::default().page_score, value_parser = page_score_parser())]
    pub page_score: PageScore,
    /// With results by document (--per-document or --fuse-documents true), BM25 scores each
    /// document whole rather than by its best chunk: true or false.
    #[arg(long, default_value_t = SearchOptions::default().document_bm25, action = clap::ArgAction::Set)]
    pub document_bm25: bool,
    /// At most this many chunks of each document (a page's sub-results; default any number).
    #[arg(long)]
    pub sub_results: Option<usize>,
    /// How the best results are reranked: none, cross_encoder (the --config's [rerank]) or llm
    /// (`search` only: your LLM rates them, see --llm-base-url). Default: the cross-encoder when
    /// the --config has one, else none.
    #[arg(long, value_parser = rerank_parser())]
    pub rerank: Option<RerankStrategy>,
    /// How many of the best results are reranked (0: none).
    #[arg(long, default_value_t = SearchOptions::default().rerank_depth)]
    pub rerank_depth: usize,
    /// With --rerank llm: the results one LLM call rates (the calls run together).
    #[arg(long, default_value_t = SearchOptions::default().rerank_batch)]
    pub rerank_batch: usize,
    /// With --rerank llm: milliseconds the calls may take together; then the fused order stands.
    #[arg(long, default_value_t = SearchOptions::default().rerank_timeout_ms)]
    pub rerank_timeout_ms: u64,
    /// How the dense retriever searches.
    #[arg(long, default_value_t = SearchOptions::default().vector_search, value_parser = vector_search_parser())]
    pub vector_search: VectorSearch,
    /// Folder with model.onnx and tokenizer.json (default: $SEXTANT_MODEL_DIR, else the cache
    /// filled by `make model`).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// How the query's model multiplies: int8 (integer products on 15-bit activations, as the
    /// package and the Worker embed queries: the same results as theirs), int8a8 (on activations
    /// rounded to bytes, as `build` embeds passages by default), int5 or f32 (the model's own
    /// arithmetic).
    #[arg(long, default_value = "int8", value_parser = weights_parser())]
    pub weights: Weights,
    /// A sextant.toml: with a [rerank] section, its cross-encoder reranks the best results.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Only pages with this filter value: NAME=VALUE (repeat for more; the same name twice
    /// needs both), or NAME!=VALUE for pages without it.
    #[arg(long = "filter", alias = "filters", value_name = "NAME=VALUE", value_parser = filter_parser)]
    pub filters: Vec<(String, bool, String)>,
    /// Order the best matches by a sort key's values: KEY, KEY:asc or KEY:desc.
    #[arg(long, value_name = "KEY[:asc|desc]", value_parser = sort_parser)]
    pub sort: Option<(String, SortOrder)>,
    /// Count, for every filter value, the matching pages that have it.
    #[arg(long)]
    pub filter_counts: bool,
}

/// Parses `--filter NAME=VALUE` (true: the page must have it) or `NAME!=VALUE` (false).
fn filter_parser(s: &str) -> Result<(String, bool, String), String> {
    let (name, has, value) = match s.split_once("!=") {
        Some((name, value)) => (name, false, value),
        None => match s.split_once('=') {
            Some((name, value)) => (name, true, value),
            None => {
                return Err(format!(
                    "{s:?} is not NAME=VALUE or NAME!=VALUE (e.g. --filter tags=python)"
                ))
            }
        },
    };
    if name.trim().is_empty() || value.trim().is_empty() {
        return Err(format!("{s:?} needs a name and a value (e.g. --filter tags=python)"));
    }
    Ok((name.trim().to_string(), has, value.trim().to_string()))
}

/// Parses `--sort KEY[:asc|desc]`.
fn sort_parser(s: &str) -> Result<(String, SortOrder), String> {
    let (key, order) = match s.rsplit_once(':') {
        Some((key, order)) => match SortOrder::from_name(order) {
            Some(order) => (key, order),
            None => return Err(format!("{order:?} is not asc or desc (e.g. --sort date:desc)")),
        },
        None => (s, SortOrder::Asc),
    };
    if key.trim().is_empty() {
        return Err("give the sort key (e.g. --sort date:desc)".into());
    }
    Ok((key.trim().to_string(), order))
}

impl SearchFlags {
    /// The `--filter`s by name: the values a page must have, and those it must not.
    fn filters(&self) -> BTreeMap<String, Filter> {
        let mut filters: BTreeMap<String, Filter> = BTreeMap::new();
        for (name, has, value) in &self.filters {
            let filter = filters.entry(name.clone()).or_default();
            match has {
                true => filter.all.push(value.clone()),
                false => filter.none.push(value.clone()),
            }
        }
        filters
    }

    /// The options (a BM25 parameter not given is the index's).
    pub fn options(&self) -> SearchOptions {
        let bm25 = (self.bm25_k1.is_some() || self.bm25_b.is_some()).then_some(Bm25Override {
            k1: self.bm25_k1,
            b: self.bm25_b,
        });
        SearchOptions {
            k: self.k,
            mode: self.mode,
            depth: self.depth,
            score_threshold: self.score_threshold,
            min_similarity: self.min_similarity,
            per_document: self.per_document,
            bm25,
            vector_search: self.vector_search,
            fusion: self.fusion,
            dense_weight: self.dense_weight,
            fuse_documents: self.fuse_documents,
            query_expansion: self.query_expansion,
            embed_corrections: self.embed_corrections,
            rerank: self.rerank,
            rerank_depth: self.rerank_depth,
            rerank_batch: self.rerank_batch,
            rerank_timeout_ms: self.rerank_timeout_ms,
            page_score: self.page_score,
            document_bm25: self.document_bm25,
            sub_results: self.sub_results,
            filters: self.filters(),
            sort: self.sort.iter().cloned().collect(),
            filter_counts: self.filter_counts,
        }
    }
}
