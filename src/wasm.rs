//! JavaScript bindings. This file only converts: JS values in, core calls, JS values out, core
//! errors into JS `Error`s with a stable `code`. No search logic lives here.
//!
//! Rust names are snake_case; their JS names are camelCase (`verifyCitations`, `fetchBytes`).
//! Result objects keep the field names of the CLI's `--json` output (`chunk_id`, `doc_id`, …)
//! so one JSON shape serves the CLI, the package and the Worker.

use std::sync::Arc;

use js_sys::{Function, Object, Promise, Reflect, Uint8Array};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::bundle::Bundle;
use crate::cite::verify_citations as verify;
use crate::embed::{sha256_hex, TextKind, TractEmbedder, Weights};
use crate::frame::{FrameChunk, SYSTEM_PROMPT};
use crate::search::{Clock, Mode, SearchOptions, VectorSearch};

/// A JS `Error` with a stable `code` property.
fn js_error(code: &str, message: impl std::fmt::Display) -> JsValue {
    let error = js_sys::Error::new(&message.to_string());
    let _ = Reflect::set(&error, &JsValue::from_str("code"), &JsValue::from_str(code));
    error.into()
}

fn bad_argument(message: impl std::fmt::Display) -> JsValue {
    js_error("BAD_ARGUMENT", message)
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_error("INTERNAL", e))
}

/// Options from JS, `undefined`/`null` meaning all defaults. Unknown keys are errors.
fn from_js<T: for<'de> Deserialize<'de> + Default>(value: JsValue, what: &str) -> Result<T, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    // Through serde_json so that `deny_unknown_fields` sees every key (serde-wasm-bindgen only
    // reads the keys a struct names): a misspelt option is an error, not a silent default.
    let json: serde_json::Value =
        serde_wasm_bindgen::from_value(value).map_err(|e| bad_argument(format!("invalid {what}: {e}")))?;
    serde_json::from_value(json).map_err(|e| bad_argument(format!("invalid {what}: {e}")))
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

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EngineOptions {
    /// `"f32"` (default) or `"int8"`: see [`Weights`].
    weights: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JsSearchOptions {
    k: Option<usize>,
    mode: Option<String>,
    threshold: Option<f32>,
    min_similarity: Option<f32>,
    per_document: Option<bool>,
    depth: Option<usize>,
    vector_search: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FrameOptions {
    token_budget: Option<usize>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FrameOutput {
    context: String,
    included: Vec<String>,
    omitted: Vec<String>,
    tokens: usize,
    budget: usize,
    system_prompt: &'static str,
}

/// A loaded bundle, and the model that queries it.
#[wasm_bindgen]
pub struct Engine {
    inner: crate::search::Engine,
}

fn build_engine(
    bundle: &[u8],
    model: Option<Vec<u8>>,
    tokenizer: Option<&[u8]>,
    options: JsValue,
) -> Result<Engine, JsValue> {
    let options: EngineOptions = from_js(options, "engine options")?;
    let weights = match options.weights.as_deref() {
        None => Weights::default(),
        Some(w) => w.parse::<Weights>().map_err(bad_argument)?,
    };
    let bundle = Bundle::from_bytes(bundle).map_err(|e| js_error(e.code(), e))?;
    let mut inner = crate::search::Engine::new(bundle);
    match (model, tokenizer) {
        (Some(model), Some(tokenizer)) => {
            // Digests first: a wrong model fails fast, before the slow load.
            inner
                .bundle()
                .check_model(&sha256_hex(&model), &sha256_hex(tokenizer))
                .map_err(|e| js_error(e.code(), e))?;
            let model_options = inner.manifest().model.options();
            // Owned bytes: freed right after parsing, for a lower peak.
            let embedder = TractEmbedder::from_vec_with(model, tokenizer, &model_options, weights)
                .map_err(|e| js_error(e.code(), e))?;
            inner
                .attach_model(Arc::new(embedder))
                .map_err(|e| js_error(e.code(), e))?;
        }
        (None, None) => {}
        _ => {
            return Err(bad_argument(
                "pass both model and tokenizer, or neither (keyword search only)",
            ))
        }
    }
    Ok(Engine { inner })
}

/// Fetches a URL with the host's `fetch`, reporting `{file, loaded, total}` as bytes arrive.
async fn fetch_bytes(url: &str, file: &str, on_progress: Option<&Function>) -> Result<Vec<u8>, JsValue> {
    let failed = |reason: String| {
        js_error(
            "FETCH_FAILED",
            format!(
                "fetching the {file} from {url} failed: {reason}; check the URL and that the server serves that file"
            ),
        )
    };
    let global = js_sys::global();
    let fetch: Function = Reflect::get(&global, &JsValue::from_str("fetch"))?
        .dyn_into()
        .map_err(|_| failed("this host has no fetch()".into()))?;
    let promise: Promise = fetch.call1(&global, &JsValue::from_str(url))?.dyn_into()?;
    let response = JsFuture::from(promise).await.map_err(|e| failed(format!("{e:?}")))?;
    let ok = Reflect::get(&response, &JsValue::from_str("ok"))?
        .as_bool()
        .unwrap_or(false);
    if !ok {
        let status = Reflect::get(&response, &JsValue::from_str("status"))?
            .as_f64()
            .unwrap_or(0.0);
        return Err(failed(format!("HTTP status {status}")));
    }
    let headers = Reflect::get(&response, &JsValue::from_str("headers"))?;
    let get: Function = Reflect::get(&headers, &JsValue::from_str("get"))?.dyn_into()?;
    let total = get
        .call1(&headers, &JsValue::from_str("content-length"))?
        .as_string()
        .and_then(|s| s.parse::<f64>().ok());
    let report = |loaded: usize| {
        if let Some(callback) = on_progress {
            let event = Object::new();
            let _ = Reflect::set(&event, &"file".into(), &JsValue::from_str(file));
            let _ = Reflect::set(&event, &"loaded".into(), &JsValue::from_f64(loaded as f64));
            let _ = Reflect::set(&event, &"total".into(), &total.map_or(JsValue::NULL, JsValue::from_f64));
            let _ = callback.call1(&JsValue::NULL, &event);
        }
    };
    let body = Reflect::get(&response, &JsValue::from_str("body"))?;
    let mut bytes: Vec<u8> = Vec::with_capacity(total.unwrap_or(0.0) as usize);
    if body.is_null() || body.is_undefined() {
        let buffer = JsFuture::from(
            Reflect::get(&response, &"arrayBuffer".into())?
                .dyn_into::<Function>()?
                .call0(&response)?
                .dyn_into::<Promise>()?,
        )
        .await?;
        bytes = Uint8Array::new(&buffer).to_vec();
        report(bytes.len());
        return Ok(bytes);
    }
    let reader = Reflect::get(&body, &"getReader".into())?
        .dyn_into::<Function>()?
        .call0(&body)?;
    let read: Function = Reflect::get(&reader, &"read".into())?.dyn_into()?;
    report(0);
    loop {
        let step = JsFuture::from(read.call0(&reader)?.dyn_into::<Promise>()?)
            .await
            .map_err(|e| failed(format!("{e:?}")))?;
        if Reflect::get(&step, &"done".into())?.as_bool().unwrap_or(true) {
            break;
        }
        let chunk: Uint8Array = Reflect::get(&step, &"value".into())?.dyn_into()?;
        let start = bytes.len();
        bytes.resize(start + chunk.length() as usize, 0);
        chunk.copy_to(&mut bytes[start..]);
        report(bytes.len());
    }
    Ok(bytes)
}

#[wasm_bindgen]
impl Engine {
    /// `new Engine(bundle, model?, tokenizer?, {weights?})` from bytes. Without a model only
    /// keyword search works. `weights: "int8"` trades query speed for memory. (`Sextant.load`
    /// in the package fetches URLs with `fetchBytes`, then calls this.)
    #[wasm_bindgen(constructor)]
    pub fn new(
        bundle: &[u8],
        model: Option<Vec<u8>>,
        tokenizer: Option<Vec<u8>>,
        options: JsValue,
    ) -> Result<Engine, JsValue> {
        build_engine(bundle, model, tokenizer.as_deref(), options)
    }

    /// `search(query, {k, mode, threshold, minSimilarity, perDocument, depth, vectorSearch})` →
    /// `{results, timings, vector_method}`; each result has the fields of `sextant search --json`.
    pub fn search(&self, query: &str, options: JsValue) -> Result<JsValue, JsValue> {
        let o: JsSearchOptions = from_js(options, "search options")?;
        let mut options = SearchOptions::default();
        if let Some(k) = o.k {
            options.k = k;
        }
        if let Some(mode) = o.mode {
            options.mode = mode.parse::<Mode>().map_err(|e| js_error(e.code(), e))?;
        }
        options.score_threshold = o.threshold;
        options.min_similarity = o.min_similarity;
        options.per_document = o.per_document.unwrap_or(false);
        options.depth = o.depth;
        options.vector_search = match o.vector_search.as_deref() {
            None | Some("auto") => VectorSearch::Auto,
            Some("exact") => VectorSearch::Exact,
            Some("hnsw") => VectorSearch::Hnsw,
            Some(other) => {
                return Err(bad_argument(format!(
                    "vectorSearch {other:?} is not auto, exact or hnsw"
                )))
            }
        };
        let response = self
            .inner
            .search(query, &options, &JsClock::new())
            .map_err(|e| js_error(e.code(), e))?;
        to_js(&response)
    }

    /// `frame(results, {tokenBudget})` → `{context, included, omitted, tokens, budget, systemPrompt}`.
    pub fn frame(&self, results: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
        /// The fields of a search result that framing reads.
        #[derive(Deserialize)]
        struct Framable {
            chunk_id: String,
            url: String,
            text: String,
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
        let o: FrameOptions = from_js(options, "frame options")?;
        let framed = self
            .inner
            .frame_chunks(&chunks, o.token_budget.unwrap_or(1500))
            .map_err(|e| js_error(e.code(), e))?;
        to_js(&FrameOutput {
            context: framed.context,
            included: framed.included,
            omitted: framed.omitted,
            tokens: framed.tokens,
            budget: framed.budget,
            system_prompt: SYSTEM_PROMPT,
        })
    }

    /// The bundle's manifest.
    pub fn manifest(&self) -> Result<JsValue, JsValue> {
        to_js(self.inner.manifest())
    }

    /// The query embedding of `text` (for parity checks).
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, JsValue> {
        let embedder = self
            .inner
            .embedder()
            .ok_or_else(|| js_error("NO_MODEL", "this engine was loaded without a model"))?;
        embedder.embed(text, TextKind::Query).map_err(|e| js_error(e.code(), e))
    }

    /// The model's token ids for `text` (special tokens added, truncated at the window).
    #[wasm_bindgen(js_name = tokenIds)]
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, JsValue> {
        let embedder = self
            .inner
            .embedder()
            .ok_or_else(|| js_error("NO_MODEL", "this engine was loaded without a model"))?;
        embedder.tokenizer().encode(text).map_err(|e| js_error(e.code(), e))
    }
}

/// `await fetchBytes(url, file, onProgress?)`: the bytes at `url`, reporting
/// `onProgress({file, loaded, total})` as they arrive (`total` is null without a
/// Content-Length). Fails with code `FETCH_FAILED`.
#[wasm_bindgen(js_name = fetchBytes)]
pub async fn fetch_bytes_export(
    url: String,
    file: String,
    on_progress: Option<Function>,
) -> Result<Uint8Array, JsValue> {
    let bytes = fetch_bytes(&url, &file, on_progress.as_ref()).await?;
    Ok(Uint8Array::from(bytes.as_slice()))
}

/// `verifyCitations(answer, chunkIds)` → `{citations, valid, unknown, grounded}`: which
/// `[chunk_id]` citations point at chunks that were sent (`chunkIds`: ids, or search results).
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
    to_js(&verify(answer, &ids))
}

/// The sentence to put in the system prompt next to framed context.
#[wasm_bindgen(js_name = systemPrompt)]
pub fn system_prompt() -> String {
    SYSTEM_PROMPT.to_string()
}
