//! JavaScript bindings. This file only converts: JS values in (through serde, so the option names
//! are the core's), core calls, JS values out, core errors into JS `Error`s with a stable `code`
//! (each error's own `code()`), and byte offsets into JS string offsets (UTF-16 code units). No
//! search logic, defaults or rules live here, and no I/O: the package fetches files and hands
//! their bytes over.
//!
//! Rust names are snake_case; their JS names are camelCase (`verifyCitations`, `tokenIds`). Data —
//! options, results, reports — keeps the one `snake_case` vocabulary of `crate::options`, the
//! same as the CLI's `--json` output and the Worker's HTTP API.

use std::ops::Range;

use js_sys::{Function, Reflect};
#[cfg(feature = "answers")]
use serde::Deserialize;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[cfg(feature = "answers")]
use crate::cite::verify_citations as verify;
use crate::defaults::defaults as core_defaults;
use crate::embed::TextKind;
use crate::error_code::ErrorCode;
#[cfg(feature = "answers")]
use crate::frame::FrameChunk;
#[cfg(feature = "encoder")]
use crate::options::LoadOptions;
#[cfg(feature = "answers")]
use crate::options::{parse_over, AskOptions, ContextOptions, FrameOptions};
use crate::options::{BadOption, Purpose, PurposeOptions};
#[cfg(feature = "answers")]
use crate::prompt::SYSTEM_PROMPT;
#[cfg(feature = "answers")]
use crate::research::ResearchOptions;
use crate::search::bases::Requested;
#[cfg(feature = "answers")]
use crate::search::ContextResponse;
use crate::search::{Clock, Step};

/// A JS `Error` with a stable `code` property.
fn js_error(code: ErrorCode, message: impl std::fmt::Display) -> JsValue {
    let error = js_sys::Error::new(&message.to_string());
    let _ = Reflect::set(&error, &JsValue::from_str("code"), &JsValue::from_str(code.as_str()));
    error.into()
}

fn bad_argument(message: impl std::fmt::Display) -> JsValue {
    js_error(ErrorCode::BadArgument, message)
}

fn bad_option(e: BadOption) -> JsValue {
    bad_argument(e)
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_error(ErrorCode::Internal, e))
}

/// A JS value as JSON (`undefined` as `None`), for the core to parse.
fn to_json(value: JsValue, what: &str) -> Result<Option<serde_json::Value>, JsValue> {
    if value.is_undefined() {
        return Ok(None);
    }
    serde_wasm_bindgen::from_value(value)
        .map(Some)
        .map_err(|e| bad_argument(format!("invalid {what}: {e}")))
}

/// Options from JS over the core's defaults; unknown keys and bad values are `BAD_ARGUMENT`.
#[cfg(feature = "answers")]
fn options<T: Serialize + serde::de::DeserializeOwned>(
    defaults: &T,
    value: JsValue,
    what: &'static str,
) -> Result<T, JsValue> {
    parse_over(defaults, to_json(value, what)?, what).map_err(bad_argument)
}

/// Byte ranges of `text` as JS string ranges (UTF-16 code units), `[start, end]` each.
fn utf16_ranges(text: &str, ranges: impl IntoIterator<Item = Range<usize>>) -> Vec<[usize; 2]> {
    let mut offsets: Vec<usize> = Vec::new();
    let mut pairs: Vec<Range<usize>> = ranges.into_iter().collect();
    for r in &pairs {
        offsets.extend([r.start, r.end]);
    }
    offsets.sort_unstable();
    offsets.dedup();
    let mut map = std::collections::HashMap::with_capacity(offsets.len());
    let mut units = 0;
    let mut next = offsets.iter().peekable();
    for (at, c) in text.char_indices().chain([(text.len(), '\0')]) {
        while next.peek().is_some_and(|&&o| o <= at) {
            if let Some(&o) = next.next() {
                map.insert(o, units);
            }
        }
        units += c.len_utf16();
    }
    pairs
        .drain(..)
        .map(|r| {
            [
                map.get(&r.start).copied().unwrap_or(0),
                map.get(&r.end).copied().unwrap_or(0),
            ]
        })
        .collect()
}

/// `performance.now()` of the host (browser, Node, workerd).
struct JsClock(Option<Function>, JsValue);

impl JsClock {
    fn new() -> Self {
        let performance =
            Reflect::get(&js_sys::global(), &JsValue::from_str("performance")).unwrap_or(JsValue::UNDEFINED);
        let now = Reflect::get(&performance, &JsValue::from_str("now"))
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok());
        Self(now, performance)
    }
}

impl Clock for JsClock {
    fn now_ms(&self) -> f64 {
        self.0
            .as_ref()
            .and_then(|now| now.call0(&self.1).ok())
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    }
}

/// A loaded index, and the model that queries it.
#[wasm_bindgen]
pub struct Engine {
    inner: crate::search::Engine,
}

impl Engine {
    /// The attached model, or a `NO_MODEL` error that says how to attach one.
    fn embedder(&self) -> Result<&std::sync::Arc<dyn crate::embed::Embedder>, JsValue> {
        self.inner.embedder().ok_or_else(|| {
            js_error(
                ErrorCode::NoModel,
                "this engine was loaded without a model; load it with model and tokenizer (Sextant.load, or loadModel)",
            )
        })
    }
}

/// What `prepareAsk` gives the package: the framed context and the resolved options.
#[cfg(feature = "answers")]
#[derive(Serialize)]
struct PreparedAsk {
    #[serde(flatten)]
    context: ContextResponse,
    options: AskOptions,
}

/// The options of `search`, `context` or `ask` (`purpose`), over that call's defaults and checked
/// whole (`crate::options::Purpose`).
fn purpose_options(value: JsValue, purpose: &str) -> Result<PurposeOptions, JsValue> {
    let purpose = Purpose::parse(purpose).map_err(bad_option)?;
    purpose.options(to_json(value, "options")?).map_err(bad_option)
}

/// `fuseBases([{base, results, weight?}], k)`: several bases' results fused by rank (each base's
/// scores times its weight, 1 by default), each naming its base (`crate::search::bases`).
#[wasm_bindgen(js_name = fuseBases)]
pub fn fuse_bases(lists: JsValue, k: u32) -> Result<JsValue, JsValue> {
    let lists: Vec<crate::search::bases::BaseResults> = serde_wasm_bindgen::from_value(lists)
        .map_err(|e| bad_argument(format!("lists must be [{{base, results, weight?}}]: {e}")))?;
    crate::search::bases::check_weights(&lists).map_err(bad_option)?;
    to_js(&crate::search::bases::fuse_bases(&lists, k as usize))
}

/// `llmRerankCandidates(options, purpose)` → `{k, depth, rerank}`: what the search whose results
/// an LLM rates changes in `options` (`crate::search::llm_rerank::candidate_options`).
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = llmRerankCandidates)]
pub fn llm_rerank_candidates(options: JsValue, purpose: &str) -> Result<JsValue, JsValue> {
    #[derive(Serialize)]
    struct Changed {
        k: usize,
        depth: Option<usize>,
        rerank: Option<crate::options::RerankStrategy>,
    }
    let o = crate::search::llm_rerank::candidate_options(&purpose_options(options, purpose)?.search);
    to_js(&Changed {
        k: o.k,
        depth: o.depth,
        rerank: o.rerank,
    })
}

/// `llmRerankPlan(query, results, options, purpose)` → `{depth, batches: [{positions,
/// messages}], settings}`: an LLM judge's calls for the candidates
/// (`crate::search::llm_rerank::plan`).
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = llmRerankPlan)]
pub fn llm_rerank_plan(query: &str, results: JsValue, options: JsValue, purpose: &str) -> Result<JsValue, JsValue> {
    let options = purpose_options(options, purpose)?.search;
    let results: Vec<crate::search::SearchResult> = serde_wasm_bindgen::from_value(results)
        .map_err(|e| bad_argument(format!("results must be search results: {e}")))?;
    to_js(&crate::search::llm_rerank::plan(query, &results, &options))
}

/// `llmRerankScores(reply, count)` → the ratings of a batch of `count` passages in a judge's
/// reply, or an `LLM_BAD_RESPONSE` error saying what it lacks.
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = llmRerankScores)]
pub fn llm_rerank_scores(reply: &str, count: u32) -> Result<Vec<f32>, JsValue> {
    crate::search::llm_rerank::parse_scores(reply, count as usize).map_err(|e| js_error(ErrorCode::LlmBadResponse, e))
}

/// `llmRerankOrder(results, ratings | null, options, purpose)` → the positions of the results in
/// the judge's order, cut to `k` (`crate::search::llm_rerank::order`); only each result's
/// `doc_id` is read.
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = llmRerankOrder)]
pub fn llm_rerank_order(
    results: JsValue,
    ratings: Option<Vec<f32>>,
    options: JsValue,
    purpose: &str,
) -> Result<Vec<u32>, JsValue> {
    #[derive(Deserialize)]
    struct Doc {
        doc_id: String,
    }
    let options = purpose_options(options, purpose)?.search;
    let docs: Vec<Doc> = serde_wasm_bindgen::from_value(results)
        .map_err(|e| bad_argument(format!("results must be search results: {e}")))?;
    let ids: Vec<&str> = docs.iter().map(|d| d.doc_id.as_str()).collect();
    let order = crate::search::llm_rerank::order(&ids, ratings.as_deref(), &options);
    Ok(order.into_iter().map(|i| i as u32).collect())
}

/// `graphQuestionMessages(question)` → the chat messages asking the LLM for a question's entity
/// names and answer types (`crate::graph::query::question_messages`), and the largest reply read.
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = graphQuestionMessages)]
pub fn graph_question_messages(question: &str) -> Result<JsValue, JsValue> {
    #[derive(Serialize)]
    struct Ask {
        messages: Vec<crate::prompt::ChatMessage>,
        max_reply_bytes: usize,
    }
    to_js(&Ask {
        messages: crate::graph::query::question_messages(question),
        max_reply_bytes: crate::graph::query::MAX_QUERY_REPLY_BYTES,
    })
}

/// `graphQuestionTerms(reply)` → `{entities, types}` read from the LLM's reply, or an
/// `LLM_BAD_RESPONSE` error saying what it lacks.
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = graphQuestionTerms)]
pub fn graph_question_terms(reply: &str) -> Result<JsValue, JsValue> {
    let terms = crate::graph::query::parse_question_reply(reply).map_err(|e| js_error(ErrorCode::LlmBadResponse, e))?;
    to_js(&terms)
}

/// `graphExtractStart(chunkId, text, gleaning)` → one chunk's extraction state
/// (`crate::graph::extract::ChunkExtraction`): `messages` to send next, `done`, `skipped`,
/// `extraction`, `calls`, `errors`.
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = graphExtractStart)]
pub fn graph_extract_start(chunk_id: &str, text: &str, gleaning: u32) -> Result<JsValue, JsValue> {
    to_js(&crate::graph::extract::ChunkExtraction::new(chunk_id, text, gleaning))
}

#[cfg(feature = "answers")]
fn extraction_state(state: JsValue) -> Result<crate::graph::extract::ChunkExtraction, JsValue> {
    serde_wasm_bindgen::from_value(state).map_err(|e| bad_argument(format!("not an extraction state: {e}")))
}

/// `graphExtractReply(state, reply)` → the state after the LLM's reply to its messages.
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = graphExtractReply)]
pub fn graph_extract_reply(state: JsValue, reply: &str) -> Result<JsValue, JsValue> {
    let mut x = extraction_state(state)?;
    x.reply(reply);
    to_js(&x)
}

/// `graphExtractFailed(state, error)` → the state after a call that failed (`error`: what
/// happened).
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = graphExtractFailed)]
pub fn graph_extract_failed(state: JsValue, error: &str) -> Result<JsValue, JsValue> {
    let mut x = extraction_state(state)?;
    x.failed(error.to_string());
    to_js(&x)
}

/// `graphDraft([{chunk, extraction}], skipped)` → `{draft, entities, relations}`: the
/// extractions merged (`crate::graph::build::merge`), for an engine's `graphOf`.
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = graphDraft)]
pub fn graph_draft(extractions: JsValue, skipped: u32) -> Result<JsValue, JsValue> {
    #[derive(Deserialize)]
    struct Item {
        chunk: u32,
        extraction: crate::graph::extract::Extraction,
    }
    #[derive(Serialize)]
    struct Out {
        entities: usize,
        relations: usize,
        draft: crate::graph::build::Draft,
    }
    let items: Vec<Item> = serde_wasm_bindgen::from_value(extractions)
        .map_err(|e| bad_argument(format!("extractions must be [{{chunk, extraction}}]: {e}")))?;
    let list: Vec<(u32, crate::graph::extract::Extraction)> =
        items.into_iter().map(|i| (i.chunk, i.extraction)).collect();
    let draft = crate::graph::build::merge(&list, skipped as usize);
    to_js(&Out {
        entities: draft.entities.len(),
        relations: draft.relations.len(),
        draft,
    })
}

/// A query's step as JS sees it: the answer, or `{need: [file names]}`.
fn step_to_js<T: Serialize>(step: Step<T>) -> Result<JsValue, JsValue> {
    #[derive(Serialize)]
    struct Need {
        need: Vec<String>,
    }
    match step {
        Step::Done(value) => to_js(&value),
        Step::Need(need) => to_js(&Need { need }),
    }
}

#[wasm_bindgen]
impl Engine {
    /// `new Engine(index)`: a packed index (`.sxt` bytes, format 2), every file in it.
    #[wasm_bindgen(constructor)]
    pub fn new(index: &[u8]) -> Result<Engine, JsValue> {
        let inner = crate::search::Engine::from_bytes(index).map_err(|e| js_error(e.code(), e))?;
        Ok(Engine { inner })
    }

    /// `Engine.fromManifest(manifest)`: a split index from its manifest (JSON bytes); its files
    /// come with `addFile` as queries ask for them.
    #[wasm_bindgen(js_name = fromManifest)]
    pub fn from_manifest(manifest: &[u8]) -> Result<Engine, JsValue> {
        let inner = crate::search::Engine::from_manifest(manifest).map_err(|e| js_error(e.code(), e))?;
        Ok(Engine { inner })
    }

    /// `addFile(name, bytes)`: a file of a split index, checked against its name's hash and the
    /// manifest.
    #[wasm_bindgen(js_name = addFile)]
    pub fn add_file(&mut self, name: &str, bytes: &[u8]) -> Result<(), JsValue> {
        self.inner.add_file(name, bytes).map_err(|e| js_error(e.code(), e))
    }

    /// `trim(maxBytes, since?)`: lets go of the least recently used files of a split index until
    /// those held take at most `maxBytes` (the last query's stay, and with `since`, a `clock()`
    /// reading, what every query begun after it used); returns how many were dropped.
    pub fn trim(&mut self, max_bytes: f64, since: Option<f64>) -> u32 {
        let max = if max_bytes.is_finite() && max_bytes > 0.0 {
            max_bytes as usize
        } else {
            0
        };
        let since = since.filter(|s| s.is_finite() && *s >= 0.0).map(|s| s as u64);
        self.inner.trim(max, since) as u32
    }

    /// `clock()`: the split index's clock, read as a query begins so that `trim` keeps what it
    /// uses while it is in flight (a whole number below 2^53 for any session's queries).
    pub fn clock(&self) -> f64 {
        self.inner.clock() as f64
    }

    /// `heldBytes()`: bytes of the index files `trim` may let go that are held now (keyword
    /// shards, fragments, code files, vector blocks).
    #[wasm_bindgen(js_name = heldBytes)]
    pub fn held_bytes(&self) -> f64 {
        self.inner.held_bytes() as f64
    }

    /// `loadModel(model, tokenizer, {weights?})`: attaches the index's model (digests checked
    /// first). `weights: "f32"` multiplies in f32, as the CLI does, for more memory and time.
    #[cfg(feature = "encoder")]
    #[wasm_bindgen(js_name = loadModel)]
    pub fn load_model(&mut self, model: Vec<u8>, tokenizer: &[u8], load_options: JsValue) -> Result<(), JsValue> {
        let load: LoadOptions = options(&LoadOptions::default(), load_options, "load options")?;
        self.inner
            .load_model(model, tokenizer, load.weights)
            .map_err(|e| js_error(e.code(), e))
    }

    /// `loadReranker(model, tokenizer, {max_tokens?})`: attaches a cross-encoder that reranks the
    /// best `rerank_depth` results of every search.
    #[cfg(feature = "model")]
    #[wasm_bindgen(js_name = loadReranker)]
    pub fn load_reranker(&mut self, model: Vec<u8>, tokenizer: &[u8], rerank_options: JsValue) -> Result<(), JsValue> {
        let o: crate::options::RerankOptions = options(
            &crate::options::RerankOptions::default(),
            rerank_options,
            "reranker options",
        )?;
        o.validate().map_err(|e| js_error(ErrorCode::BadArgument, e))?;
        self.inner
            .load_reranker(model, tokenizer, o.max_tokens)
            .map_err(|e| js_error(e.code(), e))
    }

    /// Whether a model is attached (dense and hybrid search work).
    #[wasm_bindgen(js_name = hasModel)]
    pub fn has_model(&self) -> bool {
        self.inner.embedder().is_some()
    }

    /// `search(query, options)` → `{results, timings, vector_method}`, or `{need: [files]}`
    /// over a split index; options and result fields as in `crate::options::SearchOptions` and
    /// `sextant search --json`.
    pub fn search(&self, query: &str, search_options: JsValue) -> Result<JsValue, JsValue> {
        self.search_for(query, search_options, "search")
    }

    /// `frame(results, {token_budget})` → `{context, included, omitted, tokens, budget,
    /// system_prompt}`.
    #[cfg(feature = "answers")]
    pub fn frame(&self, results: JsValue, frame_options: JsValue) -> Result<JsValue, JsValue> {
        /// The fields of a search result that framing reads.
        #[derive(Deserialize)]
        struct Framable {
            chunk_id: String,
            url: String,
            text: String,
        }
        #[derive(Serialize)]
        struct FrameOutput {
            #[serde(flatten)]
            framed: crate::frame::Framed,
            system_prompt: &'static str,
        }
        let results: Vec<Framable> = serde_wasm_bindgen::from_value(results)
            .map_err(|e| bad_argument(format!("results must be search results (chunk_id, url, text): {e}")))?;
        let chunks: Vec<FrameChunk> = results
            .into_iter()
            .map(|r| FrameChunk {
                chunk_id: r.chunk_id,
                source: r.url,
                text: r.text,
            })
            .collect();
        let o: FrameOptions = options(&FrameOptions::default(), frame_options, "frame options")?;
        let framed = self
            .inner
            .frame_chunks(&chunks, &o)
            .map_err(|e| js_error(e.code(), e))?;
        to_js(&FrameOutput {
            framed,
            system_prompt: SYSTEM_PROMPT,
        })
    }

    /// `context(question, options)` → the results framed, with the chat messages to send (the
    /// fields of `sextant frame --json`).
    #[cfg(feature = "answers")]
    pub fn context(&self, question: &str, context_options: JsValue) -> Result<JsValue, JsValue> {
        let o: ContextOptions = options(&ContextOptions::default(), context_options, "context options")?;
        let step = self
            .inner
            .context(question, &o, &JsClock::new())
            .map_err(|e| js_error(e.code(), e))?;
        step_to_js(step)
    }

    /// `prepareAsk(question, options)` → `context()`'s fields plus `options`, the ask options
    /// resolved over the core's defaults and validated (or `{need: [files]}`).
    #[cfg(feature = "answers")]
    #[wasm_bindgen(js_name = prepareAsk)]
    pub fn prepare_ask(&self, question: &str, ask_options: JsValue) -> Result<JsValue, JsValue> {
        let o: AskOptions = options(&AskOptions::default(), ask_options, "ask options")?;
        let step = self
            .inner
            .ask_context(question, &o, &JsClock::new())
            .map_err(|e| js_error(e.code(), e))?;
        step_to_js(match step {
            Step::Done(context) => Step::Done(PreparedAsk { context, options: o }),
            Step::Need(need) => Step::Need(need),
        })
    }

    /// `shareModel(other)`: attaches `other`'s model (another knowledge base built with the same
    /// model): one copy of the weights, and a query over both bases embedded once.
    #[wasm_bindgen(js_name = shareModel)]
    pub fn share_model(&mut self, other: &Engine) -> Result<(), JsValue> {
        match self.inner.share_model(&other.inner) {
            Ok(true) => Ok(()),
            Ok(false) => Err(js_error(
                ErrorCode::NoModel,
                "the engine to share a model with has none loaded",
            )),
            Err(e) => Err(js_error(e.code(), e)),
        }
    }

    /// `searchFor(query, options, purpose)`: the search of `search`, `context` or `ask` (its
    /// defaults: an answer retrieves fewer, closer chunks), every option checked, only the search
    /// run (or `{need: [files]}`). With `contextOf`, how several bases answer as one.
    #[wasm_bindgen(js_name = searchFor)]
    pub fn search_for(&self, query: &str, options: JsValue, purpose: &str) -> Result<JsValue, JsValue> {
        let options = purpose_options(options, purpose)?;
        let step = self
            .inner
            .search(query, &options.search, &JsClock::new())
            .map_err(|e| js_error(e.code(), e))?;
        step_to_js(step)
    }

    /// `queryVector(query, options)` → Float32Array: the vector a search of `query` embeds (in
    /// `options.mode`, or hybrid when that is keyword), or `{need: [row files]}` for a model
    /// body (`addFile` them, then ask again). What a Worker's `/embed` answers, for
    /// `searchWithVector` of an engine with the same model and no model loaded.
    #[wasm_bindgen(js_name = queryVector)]
    pub fn query_vector(&self, query: &str, options: JsValue) -> Result<JsValue, JsValue> {
        let options = purpose_options(options, "search")?;
        let mode = match options.search.mode {
            crate::options::Mode::Keyword => crate::options::Mode::Hybrid,
            mode => mode,
        };
        match self
            .inner
            .query_vector(query, mode)
            .map_err(|e| js_error(e.code(), e))?
        {
            Step::Done(vector) => Ok(js_sys::Float32Array::from(vector.as_slice()).into()),
            need => step_to_js(need),
        }
    }

    /// `modelFileNames()` → every row file of a model body (empty for a whole model): what
    /// `prefetch` also fetches, from beside the model, for hybrid search offline.
    #[wasm_bindgen(js_name = modelFileNames)]
    pub fn model_file_names(&self) -> Vec<String> {
        self.inner.model_file_names()
    }

    /// `searchWithVector(query, vector, options)`: `search` with the query's vector computed
    /// elsewhere (`queryVector` of an engine with the same model: a Worker's `/embed`), so hybrid
    /// and dense results need no model here; `{need: [files]}` over a split index.
    #[wasm_bindgen(js_name = searchWithVector)]
    pub fn search_with_vector(&self, query: &str, vector: Vec<f32>, options: JsValue) -> Result<JsValue, JsValue> {
        let options = purpose_options(options, "search")?;
        let step = self
            .inner
            .search_with_vector(query, Some(&vector), &options.search, &JsClock::new())
            .map_err(|e| js_error(e.code(), e))?;
        step_to_js(step)
    }

    /// `contextOf(question, results, options, purpose, timings)`: results found elsewhere (the
    /// bases' results, fused) framed for the question; `context()`'s fields, plus `options` when
    /// `purpose` is `ask` (as `prepareAsk` gives).
    #[cfg(feature = "answers")]
    #[wasm_bindgen(js_name = contextOf)]
    pub fn context_of(
        &self,
        question: &str,
        results: JsValue,
        options: JsValue,
        purpose: &str,
        timings: JsValue,
    ) -> Result<JsValue, JsValue> {
        let PurposeOptions { frame, ask, .. } = purpose_options(options, purpose)?;
        let results: Vec<crate::search::SearchResult> = serde_wasm_bindgen::from_value(results)
            .map_err(|e| bad_argument(format!("results must be search results: {e}")))?;
        let timings: crate::search::StageTimings = if timings.is_undefined() {
            Default::default()
        } else {
            serde_wasm_bindgen::from_value(timings).map_err(|e| bad_argument(format!("invalid timings: {e}")))?
        };
        let context = self
            .inner
            .context_of(question, results, &frame, timings)
            .map_err(|e| js_error(e.code(), e))?;
        match ask {
            Some(options) => to_js(&PreparedAsk { context, options }),
            None => to_js(&context),
        }
    }

    /// `graphContext(question, options, purpose, terms | null, graphOptions)`: `context()` (or
    /// for `ask`, `prepareAsk()`) with the knowledge graph's block first
    /// (`crate::search::Engine::graph_context`), plus `graph: {lines, tokens}`; or `{need:
    /// [files]}` (the graph file among them, the first time). An index without a graph is a
    /// `BAD_ARGUMENT` naming `sextant graph build`.
    #[cfg(feature = "answers")]
    #[wasm_bindgen(js_name = graphContext)]
    pub fn graph_context(
        &self,
        question: &str,
        context_options: JsValue,
        purpose: &str,
        terms: JsValue,
        graph_options: JsValue,
    ) -> Result<JsValue, JsValue> {
        #[derive(Serialize)]
        struct WithGraph {
            #[serde(flatten)]
            context: ContextResponse,
            #[serde(skip_serializing_if = "Option::is_none")]
            options: Option<AskOptions>,
            graph: crate::graph::query::GraphBlock,
        }
        let PurposeOptions { search, frame, ask } = purpose_options(context_options, purpose)?;
        let terms: Option<crate::graph::query::QuestionTerms> = if terms.is_null() || terms.is_undefined() {
            None
        } else {
            Some(
                serde_wasm_bindgen::from_value(terms)
                    .map_err(|e| bad_argument(format!("terms must be {{entities, types}}: {e}")))?,
            )
        };
        let graph_options: crate::graph::query::GraphOptions =
            options(&Default::default(), graph_options, "graph options")?;
        let step = self
            .inner
            .graph_context(
                question,
                &ContextOptions { search, frame },
                terms.as_ref(),
                &graph_options,
                &JsClock::new(),
            )
            .map_err(|e| js_error(e.code(), e))?;
        step_to_js(match step {
            Step::Done((context, graph)) => Step::Done(WithGraph {
                context,
                options: ask,
                graph,
            }),
            Step::Need(need) => Step::Need(need),
        })
    }

    /// `graphOf(draft)` → the graph file's bytes for this index (a collection's: every chunk
    /// held): `graphDraft`'s draft, its entities and relations embedded with this model.
    #[cfg(feature = "answers")]
    #[wasm_bindgen(js_name = graphOf)]
    pub fn graph_of(&self, draft: JsValue) -> Result<Vec<u8>, JsValue> {
        let draft: crate::graph::build::Draft =
            serde_wasm_bindgen::from_value(draft).map_err(|e| bad_argument(format!("not a graph draft: {e}")))?;
        let graph = self.inner.graph_of(draft).map_err(|e| js_error(e.code(), e))?;
        Ok(graph.to_json())
    }

    /// `chunksNumbered(numbers)` → `[{number, found}]`: the chunks with these numbers (as a
    /// graph cites them; `found` as `lookup` gives a chunk), or `{need: [files]}`.
    #[cfg(feature = "answers")]
    #[wasm_bindgen(js_name = chunksNumbered)]
    pub fn chunks_numbered(&self, numbers: Vec<u32>) -> Result<JsValue, JsValue> {
        #[derive(Serialize)]
        struct Numbered {
            number: u32,
            found: crate::search::lookup::Found,
        }
        step_to_js(match self.inner.chunks_numbered(&numbers) {
            Step::Done(found) => Step::Done(
                found
                    .into_iter()
                    .map(|(number, found)| Numbered { number, found })
                    .collect::<Vec<_>>(),
            ),
            Step::Need(need) => Step::Need(need),
        })
    }

    /// `attachGraph(bytes)`: a knowledge graph built for this index outside its manifest (a
    /// collection's), checked against the index's model and chunks.
    #[cfg(feature = "answers")]
    #[wasm_bindgen(js_name = attachGraph)]
    pub fn attach_graph(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        self.inner.attach_graph(bytes).map_err(|e| js_error(e.code(), e))
    }

    /// `lookup(id)` → the chunk or whole document with this id (`null` when there is none), or
    /// `{need: [files]}`: the text fragments to look in next.
    pub fn lookup(&self, id: &str) -> Result<JsValue, JsValue> {
        step_to_js(self.inner.lookup(id))
    }

    /// `profileEmbedding(ids, rounds)`: milliseconds per run of each operator kind of the model
    /// over `rounds` runs on these token ids (`bench/wasm-profile.mjs`).
    #[wasm_bindgen(js_name = profileEmbedding)]
    pub fn profile_embedding(&self, ids: Vec<u32>, rounds: u32) -> Result<JsValue, JsValue> {
        let embedder = self.embedder()?;
        let clock = JsClock::new();
        let now = || clock.now_ms();
        match embedder.profile(&ids, rounds as usize, &now) {
            Some(Ok(ops)) => to_js(&ops),
            Some(Err(e)) => Err(js_error(e.code(), e)),
            None => Err(bad_argument("this model cannot be profiled")),
        }
    }

    /// The index's manifest.
    pub fn manifest(&self) -> Result<JsValue, JsValue> {
        to_js(self.inner.manifest())
    }

    /// `locate(name)` → where an object or page of a split index is stored, `{file, start, end}`
    /// (a byte range of a pack, `end` exclusive, to fetch with `Range`), or null (a file of its
    /// own name).
    pub fn locate(&self, name: &str) -> JsValue {
        match self.inner.locate(name) {
            None => JsValue::NULL,
            Some((file, at)) => {
                let place = serde_json::json!({"file": file, "start": at.offset, "end": at.offset + at.len});
                to_js(&place).unwrap_or(JsValue::NULL)
            }
        }
    }

    /// `missing()` → every object and page of a split index not added yet whose name is known;
    /// adding them and asking again until none is left reads the whole index (`prefetch`).
    pub fn missing(&self) -> Vec<String> {
        self.inner.missing()
    }

    /// `fileNames()` → every file the manifest itself names, each once: its packs, or the
    /// norms, calibration and pages (what `prefetch` fetches first).
    #[wasm_bindgen(js_name = fileNames)]
    pub fn file_names(&self) -> Vec<String> {
        self.inner
            .manifest()
            .file_names()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// `countTokens(text)` → the model's tokens of `text` (special tokens included), as framing
    /// counts them.
    #[wasm_bindgen(js_name = countTokens)]
    pub fn count_tokens(&self, text: &str) -> Result<u32, JsValue> {
        let embedder = self.embedder()?;
        let n = embedder.count_tokens(text).map_err(|e| js_error(e.code(), e))?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The query embedding of `text` (for parity checks).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, JsValue> {
        let embedder = self.embedder()?;
        embedder.embed(text, TextKind::Query).map_err(|e| js_error(e.code(), e))
    }

    /// The model's token ids for `text` (special tokens added, truncated at the window).
    #[wasm_bindgen(js_name = tokenIds)]
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, JsValue> {
        let embedder = self.embedder()?;
        embedder.token_ids(text).map_err(|e| js_error(e.code(), e))
    }
}

/// `highlights(text, query, analyzer?)` → `[[start, end], …]`: the words of `text` keyword search
/// matched for `query` (the analyzer's own terms and stems), as JS string ranges. `analyzer` is
/// the index's (`manifest().analyzer`); English when absent.
#[wasm_bindgen]
pub fn highlights(text: &str, query: &str, analyzer: Option<String>) -> Result<JsValue, JsValue> {
    // What the query searches for: not its `-exclusions` or quotes.
    let wanted = crate::search::query::Query::parse(query).text;
    let analyzer = match analyzer.as_deref() {
        None => crate::analyzer::Analyzer::english(),
        Some(name) => crate::analyzer::Analyzer::named(name)
            .ok_or_else(|| bad_argument(format!("analyzer {name:?} is not one this sextant has")))?,
    };
    to_js(&utf16_ranges(text, analyzer.highlights(text, &wanted)))
}

/// `verifyCitations(answer, sent)` → `{citations, valid, unknown, grounded, spans}`: which
/// `[chunk_id]` citations point at chunks that were sent (`sent`: chunk ids, or search results),
/// and where each citation group is in the answer (`spans[].start`/`end` as JS string offsets).
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = verifyCitations)]
pub fn verify_citations(answer: &str, sent: JsValue) -> Result<JsValue, JsValue> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Sent {
        Ids(Vec<String>),
        Results(Vec<IdOnly>),
    }
    #[derive(Deserialize)]
    struct IdOnly {
        chunk_id: String,
    }
    let sent: Sent = serde_wasm_bindgen::from_value(sent)
        .map_err(|e| bad_argument(format!("expected chunk ids or search results: {e}")))?;
    let ids: Vec<String> = match sent {
        Sent::Ids(ids) => ids,
        Sent::Results(results) => results.into_iter().map(|r| r.chunk_id).collect(),
    };
    let mut report = verify(answer, &ids);
    let ranges = utf16_ranges(answer, report.spans.iter().map(|s| s.start..s.end));
    for (span, [start, end]) in report.spans.iter_mut().zip(ranges) {
        span.start = start;
        span.end = end;
    }
    to_js(&report)
}

/// `defaults()` → every default option, limit, error code and prompt text of the core
/// (`crate::options::Defaults`).
#[wasm_bindgen]
pub fn defaults() -> Result<JsValue, JsValue> {
    to_js(&core_defaults())
}

/// `checkBaseNames(names)`: throws `BAD_ARGUMENT` unless every name is a base's (letters, digits,
/// `.`, `_`, `-`; `crate::search::bases`) and none is given twice.
#[wasm_bindgen(js_name = checkBaseNames)]
pub fn check_base_names(names: Vec<String>) -> Result<(), JsValue> {
    crate::search::bases::check_base_names(&names).map_err(bad_option)
}

/// `selectBases(names, requested)` → the bases a request chose (`requested`: a list of names,
/// `"a,b"`, or nothing for all), each once; unknown names are `BAD_ARGUMENT`.
#[wasm_bindgen(js_name = selectBases)]
pub fn select_bases(names: Vec<String>, requested: JsValue) -> Result<Vec<String>, JsValue> {
    let requested: Option<Requested> = if requested.is_null() || requested.is_undefined() {
        None
    } else {
        Some(
            serde_wasm_bindgen::from_value(requested)
                .map_err(|e| bad_argument(format!("bases must be a list of base names or \"a,b\": {e}")))?,
        )
    };
    crate::search::bases::select_bases(&names, requested.as_ref()).map_err(bad_option)
}

/// `qualifyId(base, id, several)` → `base:id` when there are several bases, else `id`.
#[wasm_bindgen(js_name = qualifyId)]
pub fn qualify_id(base: &str, id: &str, several: bool) -> String {
    crate::search::bases::qualify(base, id, several)
}

/// `splitQualifiedId(id, base, names)` → `[base, id]`: the base holding an id from results and
/// its id there.
#[wasm_bindgen(js_name = splitQualifiedId)]
pub fn split_qualified_id(id: &str, base: Option<String>, names: Vec<String>) -> Result<Vec<String>, JsValue> {
    let (base, local) = crate::search::bases::split_qualified(id, base.as_deref(), &names).map_err(bad_option)?;
    Ok(vec![base, local])
}

/// Research options over the core's (`defaults().research`).
#[cfg(feature = "answers")]
fn research_options(value: JsValue) -> Result<ResearchOptions, JsValue> {
    options(&ResearchOptions::default(), value, "research options")
}

/// `researchToolCall(call, position, options)` → `{search: {query, k}}` or `{error: {error_type,
/// message, retryable}}`: what the tool call at `position` of a round becomes
/// (`crate::research::tool_call`).
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = researchToolCall)]
pub fn research_tool_call(call: JsValue, position: u32, research: JsValue) -> Result<JsValue, JsValue> {
    let call: serde_json::Value = to_json(call, "tool call")?.unwrap_or_default();
    let o = research_options(research)?;
    to_js(&crate::research::tool_call(&call, position as usize, &o))
}

/// `researchQuery(answer, options)` → the search query in the model's rewrite (or `null`).
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = researchQuery)]
pub fn research_query(answer: &str, research: JsValue) -> Result<Option<String>, JsValue> {
    Ok(crate::research::rewritten_query(answer, &research_options(research)?))
}

/// `researchJudged(answer, options)` → the better query a judge asks for (or `null`: enough).
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = researchJudged)]
pub fn research_judged(answer: &str, research: JsValue) -> Result<Option<String>, JsValue> {
    Ok(crate::research::judged(answer, &research_options(research)?))
}

/// `researchRefusal(unknown, cited, sent)` → why a research answer is not shown as verified, or
/// `null` (`crate::prompt::research_refusal`).
#[cfg(feature = "answers")]
#[wasm_bindgen(js_name = researchRefusal)]
pub fn research_refusal(unknown: Vec<String>, cited: u32, sent: u32) -> Option<String> {
    crate::prompt::research_refusal(&unknown, cited as usize, sent as usize)
}

/// `new Collection(model, tokenizer, config?)`: a collection built in the page or a Web Worker
/// (see `crate::collection`); `config` is `sextant.toml` as JSON (`{chunking: {...}, ...}`).
#[cfg(feature = "collection")]
#[wasm_bindgen]
pub struct Collection {
    inner: crate::collection::Collection,
    embedder: std::sync::Arc<crate::embed::ModelEmbedder>,
}

#[cfg(feature = "collection")]
fn collection_error(e: crate::collection::CollectionError) -> JsValue {
    js_error(e.code(), e)
}

#[cfg(feature = "collection")]
#[wasm_bindgen]
impl Collection {
    /// `new Collection(model, tokenizer, config?)`: an empty collection embedding with this
    /// model (`model.onnx` and `tokenizer.json` bytes), built as `config` says.
    #[wasm_bindgen(constructor)]
    pub fn new(model: Vec<u8>, tokenizer: &[u8], config: JsValue) -> Result<Collection, JsValue> {
        use crate::embed::Embedder;
        let config: crate::config::BuildConfig =
            options(&crate::config::BuildConfig::default(), config, "collection config")?;
        let embedder = crate::embed::ModelEmbedder::load(model, tokenizer, &config.model)
            .map_err(|e| js_error(ErrorCode::BadModel, e))?;
        let inner = crate::collection::Collection::new(config, embedder.spec());
        Ok(Collection {
            inner,
            embedder: std::sync::Arc::new(embedder),
        })
    }

    /// `addFile(path, bytes)` → `{path, documents, chunks, pending}`: a Markdown, HTML, text or
    /// JSONL file (by extension), replacing the file at `path`.
    #[wasm_bindgen(js_name = addFile)]
    pub fn add_file(&mut self, path: &str, bytes: &[u8]) -> Result<JsValue, JsValue> {
        let summary = self
            .inner
            .add_file(path, bytes, self.embedder.tokenizer())
            .map_err(collection_error)?;
        to_js(&summary)
    }

    /// `addDocuments(path, documents)`: documents read in JS (a PDF's pages as sections), in
    /// the core's `Document` shape, under the file `path`.
    #[wasm_bindgen(js_name = addDocuments)]
    pub fn add_documents(&mut self, path: &str, documents: JsValue) -> Result<JsValue, JsValue> {
        let documents: Vec<crate::chunk::Document> =
            serde_wasm_bindgen::from_value(documents).map_err(|e| bad_argument(format!("invalid documents: {e}")))?;
        let summary = self
            .inner
            .add_documents(path, documents, self.embedder.tokenizer())
            .map_err(collection_error)?;
        to_js(&summary)
    }

    /// `addHtml(path, html)`: HTML made from another format (a DOCX), read by the HTML loader as
    /// the document `path`.
    #[wasm_bindgen(js_name = addHtml)]
    pub fn add_html(&mut self, path: &str, html: &str) -> Result<JsValue, JsValue> {
        let summary = self
            .inner
            .add_html(path, html, self.embedder.tokenizer())
            .map_err(collection_error)?;
        to_js(&summary)
    }

    /// `importIndex(path, bytes)` → `{path, documents, chunks, pending, vectors}`: a packed
    /// index (`.sxt`) that `sextant build` wrote, as the file `path` (its chunks kept as they
    /// are; its vectors too when it was built with this model).
    #[wasm_bindgen(js_name = importIndex)]
    pub fn import_index(&mut self, path: &str, bytes: &[u8]) -> Result<JsValue, JsValue> {
        let store = crate::index::packed::unpack(bytes).map_err(|e| js_error(e.code(), e))?;
        let summary = self
            .inner
            .import_index(path, &store, self.embedder.tokenizer())
            .map_err(collection_error)?;
        to_js(&summary)
    }

    /// `removeFile(path)` → whether there was one.
    #[wasm_bindgen(js_name = removeFile)]
    pub fn remove_file(&mut self, path: &str) -> bool {
        self.inner.remove_file(path)
    }

    /// `files()` → every file's `{path, documents, chunks, pending}`, in build order.
    pub fn files(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.files())
    }

    /// `pendingCount()` → chunk texts still to embed.
    #[wasm_bindgen(js_name = pendingCount)]
    pub fn pending_count(&self) -> u32 {
        self.inner.pending().len() as u32
    }

    /// `pendingTexts()` → what the model is still to read (chunk texts, after their title and
    /// headings with `fields.embed_context`), each once, in build order (without the model's
    /// passage prefix).
    #[wasm_bindgen(js_name = pendingTexts)]
    pub fn pending_texts(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.pending())
    }

    /// `embedPending(max)` → how many chunk texts it embedded (at most `max`): call it in a
    /// loop, reporting progress and checking for pause or cancel between calls.
    #[wasm_bindgen(js_name = embedPending)]
    pub fn embed_pending(&mut self, max: u32) -> Result<u32, JsValue> {
        let embedded = self
            .inner
            .embed_pending(self.embedder.as_ref(), max as usize)
            .map_err(collection_error)?;
        Ok(embedded as u32)
    }

    /// `embedPassage(text)` → the vector of a pending text, as `embedPending` embeds it: what a
    /// pool worker holding a collection with the same model and config computes for another
    /// collection's `setVector` (the same wasm and weights give the same bits).
    #[wasm_bindgen(js_name = embedPassage)]
    pub fn embed_passage(&self, text: &str) -> Result<Vec<f32>, JsValue> {
        use crate::embed::{Embedder, TextKind};
        self.embedder
            .embed(text, TextKind::Passage)
            .map_err(|e| js_error(e.code(), e))
    }

    /// `setVector(text, vector)`: keeps the vector of a pending text (from `embedPassage`).
    #[wasm_bindgen(js_name = setVector)]
    pub fn set_vector(&mut self, text: &str, vector: Vec<f32>) -> Result<(), JsValue> {
        self.inner.set_vector(text, vector).map_err(collection_error)
    }

    /// `countTokens(text)` → the model's tokens of `text`, as framing counts them.
    #[wasm_bindgen(js_name = countTokens)]
    pub fn count_tokens(&self, text: &str) -> Result<u32, JsValue> {
        use crate::embed::Embedder;
        let n = self.embedder.count_tokens(text).map_err(|e| js_error(e.code(), e))?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// `build(partial)` → the packed index (`.sxt` bytes) of the collection, as `sextant build`
    /// writes it for the same files. With chunks pending: an error, or with `partial` an index
    /// to search by keyword only.
    pub fn build(&self, partial: bool) -> Result<Vec<u8>, JsValue> {
        use crate::embed::Embedder;
        let built = self
            .inner
            .build(self.embedder.spec(), partial)
            .map_err(collection_error)?;
        crate::index::packed::pack(&built.manifest, &built.files).map_err(|e| js_error(ErrorCode::Internal, e))
    }

    /// `engine(partial)` → an `Engine` over the collection's index sharing this model (no
    /// second copy), for search and framing. Over a partial index (chunks still pending, their
    /// vectors zero) only keyword search is meaningful: the package's `Collection.search` asks
    /// for nothing else until every chunk is embedded.
    pub fn engine(&self, partial: bool) -> Result<Engine, JsValue> {
        use crate::embed::Embedder;
        let built = self
            .inner
            .build(self.embedder.spec(), partial)
            .map_err(collection_error)?;
        let mut inner =
            crate::search::Engine::from_files(built.manifest, &built.files).map_err(|e| js_error(e.code(), e))?;
        inner
            .attach_model(self.embedder.clone())
            .map_err(|e| js_error(ErrorCode::Internal, e))?;
        Ok(Engine { inner })
    }

    /// `vectors()` → the vectors computed so far, to save; `loadVectors(bytes)` restores them.
    pub fn vectors(&self) -> Vec<u8> {
        self.inner.vectors_to_bytes()
    }

    /// `loadVectors(bytes)` → how many vectors were restored (damaged bytes: `CORRUPT_BUNDLE`,
    /// nothing changed).
    #[wasm_bindgen(js_name = loadVectors)]
    pub fn load_vectors(&mut self, bytes: &[u8]) -> Result<u32, JsValue> {
        self.inner
            .load_vectors(bytes)
            .map(|n| n as u32)
            .map_err(collection_error)
    }

    /// `pruneVectors()`: forgets vectors no file needs any more.
    #[wasm_bindgen(js_name = pruneVectors)]
    pub fn prune_vectors(&mut self) {
        self.inner.prune_vectors();
    }
}
