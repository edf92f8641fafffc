//! Sentence embeddings: the [`Embedder`] trait and its one implementation, [`TractEmbedder`],
//! which runs a BERT-family ONNX model with `tract` and tokenises with the Hugging Face
//! `tokenizers` crate.
//!
//! The CLI embeds documents with it and the wasm engine embeds queries with it: the same code on
//! both sides, so the vectors agree.
//!
//! Pipeline for one text: optional prefix (query or passage) → tokenise (no padding, truncation at
//! the model window) → run the model on one sequence (`input_ids`, `attention_mask` of ones,
//! `token_type_ids` of zeros) → pool (`mean` over the attention mask, or `cls`) → optional L2
//! normalisation. Texts are run one at a time, never padded into a batch, so a text's vector
//! never depends on what it was batched with (the CLI gets its parallelism from threads).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokenizers::{Tokenizer, TruncationDirection};
use tract_onnx::pb;
use tract_onnx::prelude::*;

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// Mean of the last hidden state over the attention mask (sentence-transformers' default).
    Mean,
    /// The hidden state of the first token (`[CLS]`).
    Cls,
}

/// Whether a text is a search query or a document passage (models such as E5 want different
/// prefixes for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// A user's query.
    Query,
    /// A chunk of a document.
    Passage,
}

/// Everything about the embedding model that a bundle must agree on with the query side.
/// Recorded in the bundle's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Lower-case hex SHA-256 of `model.onnx`.
    pub sha256: String,
    /// Lower-case hex SHA-256 of `tokenizer.json`.
    pub tokenizer_sha256: String,
    /// Output dimensions (384 for all-MiniLM-L6-v2). Read from the model at load.
    pub dims: usize,
    /// The model window in tokens, special tokens included (256 for all-MiniLM-L6-v2).
    pub max_tokens: usize,
    /// Pooling of token vectors.
    pub pooling: Pooling,
    /// L2-normalise sentence vectors (then dot product = cosine similarity).
    pub normalize: bool,
    /// Prepended to queries before tokenising (e.g. `"query: "` for E5). Empty by default.
    pub query_prefix: String,
    /// Prepended to passages before tokenising (e.g. `"passage: "` for E5). Empty by default.
    pub passage_prefix: String,
}

impl ModelSpec {
    /// The options that load this model the way the bundle was built with it.
    pub fn options(&self) -> ModelOptions {
        ModelOptions {
            max_tokens: self.max_tokens,
            pooling: self.pooling,
            normalize: self.normalize,
            query_prefix: self.query_prefix.clone(),
            passage_prefix: self.passage_prefix.clone(),
        }
    }
}

/// How a model is to be run: everything in [`ModelSpec`] except what is read from the files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelOptions {
    /// The model window in tokens, special tokens included. Default 256.
    pub max_tokens: usize,
    /// Pooling of token vectors. Default `mean`.
    pub pooling: Pooling,
    /// L2-normalise sentence vectors. Default `true`.
    pub normalize: bool,
    /// Prefix for queries. Default empty.
    pub query_prefix: String,
    /// Prefix for passages. Default empty.
    pub passage_prefix: String,
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self {
            max_tokens: 256,
            pooling: Pooling::Mean,
            normalize: true,
            query_prefix: String::new(),
            passage_prefix: String::new(),
        }
    }
}

/// How the model's int8 weights are held once loaded: a load-time choice between speed and
/// memory that does not change the vectors (beyond float rounding) or the bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Weights {
    /// Dequantised to f32 once, at load: the fastest queries, about 32 MB more memory for
    /// all-MiniLM-L6-v2. The default.
    #[default]
    F32,
    /// Kept int8 and dequantised inside every call: about 32 MB less memory, slower queries.
    /// For memory-tight hosts such as a Worker isolate (128 MB in all).
    Int8,
}

impl std::str::FromStr for Weights {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "f32" => Ok(Self::F32),
            "int8" => Ok(Self::Int8),
            other => Err(format!("unknown weights \"{other}\": expected f32 or int8")),
        }
    }
}

/// Errors from loading or running an embedding model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// `tokenizer.json` could not be parsed.
    #[error("tokenizer.json could not be read ({reason}); pass the tokenizer.json that belongs to the model")]
    BadTokenizer {
        /// What the tokenizers crate said.
        reason: String,
    },
    /// The ONNX model could not be loaded or optimised.
    #[error("the ONNX model could not be loaded ({reason}); pass a BERT-family sentence model exported to ONNX with inputs input_ids, attention_mask (and optionally token_type_ids)")]
    BadModel {
        /// What tract said.
        reason: String,
    },
    /// Tokenising a text failed.
    #[error("tokenising failed: {reason}")]
    Tokenize {
        /// What the tokenizers crate said.
        reason: String,
    },
    /// Running the model failed.
    #[error("running the model failed: {reason}")]
    Run {
        /// What tract said.
        reason: String,
    },
    /// An option is out of range.
    #[error("invalid model option {option}: {reason}")]
    BadOption {
        /// The option's name.
        option: &'static str,
        /// Why it is invalid.
        reason: String,
    },
}

impl EmbedError {
    /// A stable, machine-readable code: `BAD_MODEL` for files that cannot be loaded,
    /// `BAD_ARGUMENT` for options, `EMBED_FAILED` for a failure while embedding.
    pub fn code(&self) -> &'static str {
        match self {
            EmbedError::BadTokenizer { .. } | EmbedError::BadModel { .. } => "BAD_MODEL",
            EmbedError::BadOption { .. } => "BAD_ARGUMENT",
            EmbedError::Tokenize { .. } | EmbedError::Run { .. } => "EMBED_FAILED",
        }
    }
}

/// Turns texts into fixed-size vectors. `Sync` so the CLI can embed from many threads at once.
pub trait Embedder: Send + Sync {
    /// The model's description as recorded in a bundle manifest.
    fn spec(&self) -> &ModelSpec;
    /// Embeds one text. The result has `spec().dims` values.
    fn embed(&self, text: &str, kind: TextKind) -> Result<Vec<f32>, EmbedError>;
    /// The tokenizer used by the model, for counting tokens.
    fn tokenizer(&self) -> &ModelTokenizer;
}

/// Lower-case hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 15) as usize] as char);
    }
    out
}

/// A model tokenizer configured the way the embedder uses it: no padding, truncation at the
/// model window. Also counts tokens for chunking and for framing budgets.
#[derive(Clone)]
pub struct ModelTokenizer {
    /// No padding, no truncation (see `encode`).
    inner: Tokenizer,
    max_tokens: usize,
    special_tokens: usize,
}

impl std::fmt::Debug for ModelTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelTokenizer")
            .field("max_tokens", &self.max_tokens)
            .field("special_tokens", &self.special_tokens)
            .finish()
    }
}

impl ModelTokenizer {
    /// Parses `tokenizer.json` bytes. `max_tokens` is the model window, special tokens included.
    pub fn from_bytes(bytes: &[u8], max_tokens: usize) -> Result<Self, EmbedError> {
        if max_tokens < 3 {
            return Err(EmbedError::BadOption {
                option: "max_tokens",
                reason: format!("{max_tokens} is too small; the window must hold special tokens and text"),
            });
        }
        let mut inner = Tokenizer::from_bytes(bytes).map_err(|e| EmbedError::BadTokenizer { reason: e.to_string() })?;
        inner.with_padding(None);
        // No truncation inside the tokenizer: `encode` truncates itself (exactly as HF does for
        // one sequence), so the same instance also counts long texts in full.
        inner
            .with_truncation(None)
            .map_err(|e| EmbedError::BadTokenizer { reason: e.to_string() })?;
        let special_tokens = inner
            .get_post_processor()
            .map(|p| tokenizers::PostProcessor::added_tokens(p, false))
            .unwrap_or(0);
        Ok(Self {
            inner,
            max_tokens,
            special_tokens,
        })
    }

    /// The model window in tokens, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// How many special tokens (`[CLS]`, `[SEP]`) the model adds to every sequence.
    pub fn special_tokens(&self) -> usize {
        self.special_tokens
    }

    /// Token ids as the model sees them: special tokens added, truncated at the window.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let failed = |e: tokenizers::Error| EmbedError::Tokenize { reason: e.to_string() };
        let mut encoding = self.inner.encode_fast(text, false).map_err(failed)?;
        // What HF's truncation does for one sequence: cut the text to the window minus the
        // special tokens, then add them.
        let limit = self.max_tokens.saturating_sub(self.special_tokens);
        if encoding.len() > limit {
            encoding.truncate(limit, 0, TruncationDirection::Right);
        }
        let encoding = self.inner.post_process(encoding, None, true).map_err(failed)?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Number of tokens in `text` without special tokens and without truncation.
    pub fn count(&self, text: &str) -> Result<usize, EmbedError> {
        let encoding = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| EmbedError::Tokenize { reason: e.to_string() })?;
        Ok(encoding.len())
    }
}

/// The tract implementation of [`Embedder`]. Load once, embed many times, from many threads.
pub struct TractEmbedder {
    plan: Arc<TypedRunnableModel>,
    tokenizer: ModelTokenizer,
    spec: ModelSpec,
    takes_token_type_ids: bool,
    /// With [`Weights::Int8`]: the int8 weights, passed to the plan as inputs on every call
    /// (shared, never copied), so the optimiser cannot fold them to f32.
    weight_inputs: Vec<TValue>,
}

impl TractEmbedder {
    /// Loads a model from the bytes of `model.onnx` and `tokenizer.json`: parse, keep embedding
    /// tables int8, optionally fold the other int8 weights, optimise, make runnable. Reads the
    /// output dimensions by running one probe.
    pub fn from_bytes(model: &[u8], tokenizer: &[u8], options: &ModelOptions) -> Result<Self, EmbedError> {
        let sha = sha256_hex(model);
        let proto = decode_model(model)?;
        Self::from_proto(proto, sha, tokenizer, options, Weights::F32)
    }

    /// Like [`TractEmbedder::from_bytes`], but frees the model bytes as soon as they are parsed,
    /// which lowers the peak memory of a load (WebAssembly memory never shrinks).
    pub fn from_vec(model: Vec<u8>, tokenizer: &[u8], options: &ModelOptions) -> Result<Self, EmbedError> {
        Self::from_vec_with(model, tokenizer, options, Weights::F32)
    }

    /// Like [`TractEmbedder::from_vec`], holding the weights as `weights` says.
    pub fn from_vec_with(
        model: Vec<u8>,
        tokenizer: &[u8],
        options: &ModelOptions,
        weights: Weights,
    ) -> Result<Self, EmbedError> {
        let sha = sha256_hex(&model);
        let proto = decode_model(&model)?;
        drop(model);
        Self::from_proto(proto, sha, tokenizer, options, weights)
    }

    fn from_proto(
        mut proto: pb::ModelProto,
        model_sha256: String,
        tokenizer: &[u8],
        options: &ModelOptions,
        weights: Weights,
    ) -> Result<Self, EmbedError> {
        let bad = |e: TractError| EmbedError::BadModel {
            reason: format!("{e:#}"),
        };
        let onnx = tract_onnx::onnx()
            .with_ignore_value_info(true)
            .with_ignore_output_shapes(true);
        let mut folded = Vec::new();
        let mut runtime_weights = Vec::new();
        if let Some(graph) = proto.graph.as_mut() {
            dequantize_gathered_rows(graph);
            match weights {
                Weights::F32 => folded = extract_folded_weights(graph).map_err(bad)?,
                Weights::Int8 => runtime_weights = int8_weights_as_inputs(graph).map_err(bad)?,
            }
            drop_unread_initializers(graph);
        }
        let mut inference = onnx.model_for_proto_model(&proto).map_err(bad)?;
        drop(proto);
        inject_constants(&mut inference, folded).map_err(bad)?;
        // After the protobuf is freed, so the tokenizer reuses that memory.
        let tokenizer_impl = ModelTokenizer::from_bytes(tokenizer, options.max_tokens)?;
        // The model's own inputs come first; the int8 weights were appended after them.
        let input_count = inference.inputs.len().saturating_sub(runtime_weights.len());
        if !(2..=3).contains(&input_count) {
            return Err(EmbedError::BadModel {
                reason: format!(
                    "the model has {input_count} inputs; expected input_ids, attention_mask and optionally token_type_ids"
                ),
            });
        }
        let sequence = inference.sym("S");
        for i in 0..input_count {
            inference = inference
                .with_input_fact(
                    i,
                    InferenceFact::dt_shape(i64::datum_type(), tvec!(1.to_dim(), sequence.to_dim())),
                )
                .map_err(bad)?;
        }
        for (i, (_, tensor)) in runtime_weights.iter().enumerate() {
            inference = inference
                .with_input_fact(
                    input_count + i,
                    InferenceFact::dt_shape(tensor.datum_type(), tensor.shape()),
                )
                .map_err(bad)?;
        }
        let typed = inference.into_optimized().map_err(bad)?;
        let plan = match weights {
            Weights::F32 => typed.into_runnable().map_err(bad)?,
            Weights::Int8 => int8_plan(typed, runtime_weights.len()).map_err(bad)?,
        };
        let mut embedder = Self {
            plan,
            tokenizer: tokenizer_impl,
            spec: ModelSpec {
                sha256: model_sha256,
                tokenizer_sha256: sha256_hex(tokenizer),
                dims: 0,
                max_tokens: options.max_tokens,
                pooling: options.pooling,
                normalize: options.normalize,
                query_prefix: options.query_prefix.clone(),
                passage_prefix: options.passage_prefix.clone(),
            },
            takes_token_type_ids: input_count == 3,
            weight_inputs: runtime_weights
                .into_iter()
                .map(|(_, t)| TValue::from_const(t.into_arc_tensor()))
                .collect(),
        };
        let probe = embedder.embed("probe", TextKind::Query)?;
        if probe.is_empty() {
            return Err(EmbedError::BadModel {
                reason: "the model's output has no hidden dimensions".into(),
            });
        }
        embedder.spec.dims = probe.len();
        Ok(embedder)
    }

    /// Runs the model on token ids and pools, without prefixing or tokenising.
    pub fn embed_ids(&self, ids: &[u32]) -> Result<Vec<f32>, EmbedError> {
        let run = |e: TractError| EmbedError::Run {
            reason: format!("{e:#}"),
        };
        let len = ids.len();
        if len == 0 {
            return Err(EmbedError::Run {
                reason: "no tokens to embed".into(),
            });
        }
        let input_ids: Tensor = tract_ndarray::Array2::from_shape_fn((1, len), |(_, j)| ids[j] as i64).into();
        let mask: Tensor = tract_ndarray::Array2::<i64>::ones((1, len)).into();
        let mut inputs: TVec<TValue> = tvec!(input_ids.into(), mask.into());
        if self.takes_token_type_ids {
            let types: Tensor = tract_ndarray::Array2::<i64>::zeros((1, len)).into();
            inputs.push(types.into());
        }
        if !self.weight_inputs.is_empty() {
            inputs.extend(self.weight_inputs.iter().cloned());
        }
        let outputs = self.plan.run(inputs).map_err(run)?;
        let hidden = outputs
            .first()
            .ok_or_else(|| EmbedError::Run {
                reason: "the model produced no output".into(),
            })?
            .to_plain_array_view::<f32>()
            .map_err(run)?;
        let shape = hidden.shape().to_vec();
        if shape.len() != 3 || shape[0] != 1 || shape[1] != len {
            return Err(EmbedError::BadModel {
                reason: format!("expected last_hidden_state of shape [1, {len}, dims], got {shape:?}"),
            });
        }
        let dims = shape[2];
        let hidden = hidden
            .into_shape_with_order((len, dims))
            .map_err(|e| EmbedError::Run { reason: e.to_string() })?;
        let mut vector: Vec<f32> = match self.spec.pooling {
            Pooling::Cls => hidden.row(0).to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0f32; dims];
                for row in hidden.rows() {
                    for (s, v) in sum.iter_mut().zip(row.iter()) {
                        *s += *v;
                    }
                }
                let n = len as f32;
                sum.iter_mut().for_each(|s| *s /= n);
                sum
            }
        };
        if self.spec.normalize {
            l2_normalize(&mut vector);
        }
        Ok(vector)
    }
}

impl Embedder for TractEmbedder {
    fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn embed(&self, text: &str, kind: TextKind) -> Result<Vec<f32>, EmbedError> {
        let prefix = match kind {
            TextKind::Query => &self.spec.query_prefix,
            TextKind::Passage => &self.spec.passage_prefix,
        };
        let ids = if prefix.is_empty() {
            self.tokenizer.encode(text)?
        } else {
            self.tokenizer.encode(&format!("{prefix}{text}"))?
        };
        self.embed_ids(&ids)
    }

    fn tokenizer(&self) -> &ModelTokenizer {
        &self.tokenizer
    }
}

/// Scales a vector to unit length (a zero vector stays zero).
pub fn l2_normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|v| *v /= norm);
    }
}

/// Parses `model.onnx` straight from the bytes (no intermediate copy).
fn decode_model(model: &[u8]) -> Result<pb::ModelProto, EmbedError> {
    use prost::Message;
    pb::ModelProto::decode(model).map_err(|e| EmbedError::BadModel {
        reason: format!("not an ONNX model ({e})"),
    })
}

/// A weight dequantised inside the graph: `output = Mul(Cast(q), scale)` with `q` and `scale`
/// initializers.
struct Dequant {
    cast_at: usize,
    mul_at: usize,
    q: String,
    scale: String,
    output: String,
}

fn dequant_pairs(graph: &pb::GraphProto) -> Vec<Dequant> {
    let initializers: std::collections::HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let mut consumers: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for node in &graph.node {
        for input in &node.input {
            *consumers.entry(input.as_str()).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for (cast_at, cast) in graph.node.iter().enumerate() {
        if cast.op_type != "Cast" || cast.input.len() != 1 || cast.output.len() != 1 {
            continue;
        }
        if !initializers.contains(cast.input[0].as_str()) {
            continue;
        }
        let cast_out = &cast.output[0];
        if consumers.get(cast_out.as_str()) != Some(&1) {
            continue;
        }
        let Some((mul_at, mul)) = graph
            .node
            .iter()
            .enumerate()
            .find(|(_, n)| n.op_type == "Mul" && n.input.iter().any(|i| i == cast_out))
        else {
            continue;
        };
        if mul.input.len() != 2 || mul.output.len() != 1 {
            continue;
        }
        let scale = if &mul.input[0] == cast_out {
            &mul.input[1]
        } else {
            &mul.input[0]
        };
        if !initializers.contains(scale.as_str()) {
            continue;
        }
        out.push(Dequant {
            cast_at,
            mul_at,
            q: cast.input[0].clone(),
            scale: scale.clone(),
            output: mul.output[0].clone(),
        });
    }
    out
}

fn remove_nodes(graph: &mut pb::GraphProto, drop: &std::collections::HashSet<usize>) {
    let mut index = 0;
    graph.node.retain(|_| {
        let keep = !drop.contains(&index);
        index += 1;
        keep
    });
}

fn node(op: &str, inputs: &[&str], output: &str, attribute: Vec<pb::AttributeProto>) -> pb::NodeProto {
    pb::NodeProto {
        op_type: op.to_string(),
        name: output.to_string(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.to_string()],
        attribute,
        ..Default::default()
    }
}

/// Embedding tables (`Gather(Mul(Cast(q), per-row scale), ids)`) stay int8: the rows a text
/// uses are gathered first and dequantised after (`Mul(Cast(Gather(q, ids)), Gather(scale,
/// ids))`), the same values. all-MiniLM's word table is 30522 × 384: 11.7 MB as int8, 47 MB as f32.
fn dequantize_gathered_rows(graph: &mut pb::GraphProto) {
    let mut drop_nodes = std::collections::HashSet::new();
    let mut replacements: Vec<(usize, Vec<pb::NodeProto>)> = Vec::new();
    for d in dequant_pairs(graph) {
        let users: Vec<(usize, &pb::NodeProto)> = graph
            .node
            .iter()
            .enumerate()
            .filter(|(_, n)| n.input.contains(&d.output))
            .collect();
        let [(gather_at, gather)] = users.as_slice() else {
            continue;
        };
        if gather.op_type != "Gather"
            || gather.input.len() != 2
            || gather.input[0] != d.output
            || gather.output.len() != 1
        {
            continue;
        }
        let axis = gather.attribute.iter().find(|a| a.name == "axis").map_or(0, |a| a.i);
        let Some(scale) = graph.initializer.iter().find(|t| t.name == d.scale) else {
            continue;
        };
        let Some(q) = graph.initializer.iter().find(|t| t.name == d.q) else {
            continue;
        };
        // Per-row scales ([rows, 1]) are gathered with the rows; a single scale is used as is.
        let scale_elements: i64 = scale.dims.iter().product();
        let per_row =
            axis == 0 && q.dims.len() == 2 && scale.dims.len() == 2 && scale.dims[0] == q.dims[0] && scale.dims[1] == 1;
        if !(per_row || scale_elements == 1) {
            continue;
        }
        let ids = gather.input[1].as_str();
        let out = gather.output[0].as_str();
        let rows_q = format!("{out}__rows_q");
        let rows_f = format!("{out}__rows_f");
        let rows_s = format!("{out}__rows_scale");
        let mut nodes = vec![
            node("Gather", &[&d.q, ids], &rows_q, gather.attribute.clone()),
            node(
                "Cast",
                &[&rows_q],
                &rows_f,
                vec![pb::AttributeProto {
                    name: "to".into(),
                    r#type: pb::attribute_proto::AttributeType::Int as i32,
                    i: pb::tensor_proto::DataType::Float as i64,
                    ..Default::default()
                }],
            ),
        ];
        if per_row {
            nodes.push(node("Gather", &[&d.scale, ids], &rows_s, gather.attribute.clone()));
            nodes.push(node("Mul", &[&rows_f, &rows_s], out, vec![]));
        } else {
            nodes.push(node("Mul", &[&rows_f, &d.scale], out, vec![]));
        }
        drop_nodes.extend([d.cast_at, d.mul_at, *gather_at]);
        replacements.push((*gather_at, nodes));
    }
    if replacements.is_empty() {
        return;
    }
    // Insert each replacement where its Gather was (the ids are computed before it), then drop
    // the old nodes.
    let mut rebuilt = Vec::with_capacity(graph.node.len() + replacements.len() * 3);
    for (at, n) in std::mem::take(&mut graph.node).into_iter().enumerate() {
        if let Some((_, nodes)) = replacements.iter().find(|(g, _)| *g == at) {
            rebuilt.extend(nodes.iter().cloned());
        }
        if !drop_nodes.contains(&at) {
            rebuilt.push(n);
        }
    }
    graph.node = rebuilt;
}

/// Folds every in-graph dequantisation `Mul(Cast(int8 q), f32 scale)` into one f32 tensor at
/// load, so it does not run on every call, and takes it out of the protobuf: the `Mul`'s output
/// becomes a graph input, which [`inject_constants`] turns into a constant after parsing. So the
/// f32 weights exist once (never in the protobuf *and* in tract, and never as analysis values
/// next to the int8 originals), and each int8 tensor is freed as soon as it is folded: the peak
/// memory of a load stays close to its end state, which matters because WebAssembly memory
/// never shrinks.
fn extract_folded_weights(graph: &mut pb::GraphProto) -> TractResult<Vec<(String, Tensor)>> {
    use pb::tensor_proto::DataType;
    let mut out = Vec::new();
    let mut drop_nodes = std::collections::HashSet::new();
    for d in dequant_pairs(graph) {
        let (Some(q), Some(scale)) = (
            graph.initializer.iter().find(|t| t.name == d.q),
            graph.initializer.iter().find(|t| t.name == d.scale),
        ) else {
            continue;
        };
        let (Some(q), Some(scale)) = (proto_tensor(q)?, proto_tensor(scale)?) else {
            continue;
        };
        let Some(weights) = dequantize(&q, &scale)? else {
            continue;
        };
        drop(q);
        graph
            .input
            .push(tensor_input(&d.output, DataType::Float as i32, weights.shape()));
        if let Some(q) = graph.initializer.iter_mut().find(|t| t.name == d.q) {
            q.raw_data = Vec::new();
            q.int32_data = Vec::new();
        }
        drop_nodes.insert(d.cast_at);
        drop_nodes.insert(d.mul_at);
        out.push((d.output, weights));
    }
    remove_nodes(graph, &drop_nodes);
    Ok(out)
}

/// The plan for [`Weights::Int8`]. Left to itself, tract would dequantise every weight before
/// the first layer runs (nothing orders a weight's `Cast → Mul` after the activations it
/// multiplies), so all the f32 copies would be alive at once: as much memory as folding. This
/// adds, for each weight, a dependency of its first node on the other inputs of the node that
/// consumes the dequantised weight, so each is dequantised just before use and freed after.
#[inline(never)]
fn int8_plan(model: TypedModel, weight_inputs: usize) -> TractResult<Arc<TypedRunnableModel>> {
    use tract_onnx::tract_core::ops::konst::Const;
    let inputs = model.input_outlets()?.to_vec();
    let live_inputs = |node: usize| -> Vec<usize> {
        model
            .node(node)
            .inputs
            .iter()
            .map(|i| i.node)
            .filter(|&n| !model.node(n).op_is::<Const>())
            .collect()
    };
    let mut deps = Vec::new();
    for source in &inputs[inputs.len().saturating_sub(weight_inputs)..] {
        let mut chain = vec![source.node];
        loop {
            let last = *chain.last().unwrap_or(&source.node);
            let successors = &model
                .node(last)
                .outputs
                .first()
                .map(|o| o.successors.clone())
                .unwrap_or_default();
            let [next] = successors.as_slice() else { break };
            let others: Vec<usize> = live_inputs(next.node).into_iter().filter(|&n| n != last).collect();
            if others.is_empty() {
                chain.push(next.node);
                continue;
            }
            if let Some(&first) = chain.get(1) {
                deps.extend(others.into_iter().map(|other| (first, other)));
            }
            break;
        }
    }
    let outputs = model.outputs.clone();
    let options = tract_onnx::tract_core::runtime::RunOptions {
        skip_order_opt_ram: true,
        ..Default::default()
    };
    #[allow(deprecated)]
    let plan = TypedRunnableModel::build_with_outputs_and_deps(model, &outputs, &deps, &options)?;
    Ok(Arc::new(plan))
}

/// Declares a graph input of the given ONNX element type and fixed shape.
fn tensor_input(name: &str, elem_type: i32, shape: &[usize]) -> pb::ValueInfoProto {
    let dim = shape
        .iter()
        .map(|&n| pb::tensor_shape_proto::Dimension {
            value: Some(pb::tensor_shape_proto::dimension::Value::DimValue(n as i64)),
            ..Default::default()
        })
        .collect();
    pb::ValueInfoProto {
        name: name.to_string(),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type,
                shape: Some(pb::TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// [`Weights::Int8`]: turns the int8 initializer of every in-graph dequantisation into a graph
/// input (appended after the model's own inputs, in the returned order), so the optimiser sees no
/// constant to fold and the `Cast → Mul` runs on every call, on the int8 tensor.
fn int8_weights_as_inputs(graph: &mut pb::GraphProto) -> TractResult<Vec<(String, Tensor)>> {
    let mut out: Vec<(String, Tensor)> = Vec::new();
    for d in dequant_pairs(graph) {
        if out.iter().any(|(name, _)| *name == d.q) {
            continue;
        }
        let Some(at) = graph.initializer.iter().position(|t| t.name == d.q) else {
            continue;
        };
        let Some(q) = proto_tensor(&graph.initializer[at])? else {
            continue;
        };
        if !matches!(q.datum_type(), DatumType::I8 | DatumType::U8) {
            continue;
        }
        let proto = graph.initializer.swap_remove(at);
        // Old IR versions also list initializers as inputs: keep the weights after the real ones.
        graph.input.retain(|i| i.name != d.q);
        graph.input.push(tensor_input(&d.q, proto.data_type, q.shape()));
        out.push((d.q, q));
    }
    Ok(out)
}

/// Turns the graph inputs [`extract_folded_weights`] declared into constants holding the
/// folded tensors (moved, not copied); the model's real inputs stay inputs.
fn inject_constants(model: &mut InferenceModel, constants: Vec<(String, Tensor)>) -> TractResult<()> {
    if constants.is_empty() {
        return Ok(());
    }
    let mut constants: std::collections::HashMap<String, Tensor> = constants.into_iter().collect();
    let mut inputs = Vec::new();
    for outlet in model.input_outlets()?.to_vec() {
        let name = model.node(outlet.node).name.clone();
        match constants.remove(&name) {
            Some(tensor) => {
                model.node_mut(outlet.node).op =
                    Box::new(tract_onnx::tract_hir::ops::konst::Const::new(tensor.into_arc_tensor())?);
                model.set_outlet_fact(outlet, InferenceFact::default())?;
            }
            None => inputs.push(outlet),
        }
    }
    model.set_input_outlets(&inputs)
}

/// An int8, uint8 or f32 initializer as a tract tensor (`None` for other types).
fn proto_tensor(t: &pb::TensorProto) -> TractResult<Option<Tensor>> {
    use pb::tensor_proto::DataType;
    let shape: Vec<usize> = t.dims.iter().map(|&d| usize::try_from(d)).collect::<Result<_, _>>()?;
    let tensor = if t.data_type == DataType::Int8 as i32 {
        let v: Vec<i8> = if t.raw_data.is_empty() {
            t.int32_data.iter().map(|&x| x as i8).collect()
        } else {
            t.raw_data.iter().map(|&b| b as i8).collect()
        };
        tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor()
    } else if t.data_type == DataType::Uint8 as i32 {
        let v: Vec<u8> = if t.raw_data.is_empty() {
            t.int32_data.iter().map(|&x| x as u8).collect()
        } else {
            t.raw_data.clone()
        };
        tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor()
    } else if t.data_type == DataType::Float as i32 {
        let v: Vec<f32> = if t.raw_data.is_empty() {
            t.float_data.clone()
        } else {
            if !t.raw_data.len().is_multiple_of(4) {
                return Ok(None);
            }
            t.raw_data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor()
    } else {
        return Ok(None);
    };
    Ok(Some(tensor))
}

/// `q * scale` (numpy broadcasting of `scale` to `q`'s shape) as f32, or `None` unless `q` is
/// int8/uint8, `scale` is f32 and the shapes broadcast to `q`'s.
fn dequantize(q: &Tensor, scale: &Tensor) -> TractResult<Option<Tensor>> {
    if !matches!(q.datum_type(), DatumType::I8 | DatumType::U8) || scale.datum_type() != DatumType::F32 {
        return Ok(None);
    }
    let q = q.cast_to::<f32>()?;
    let q = q.to_plain_array_view::<f32>()?;
    let scale = scale.to_plain_array_view::<f32>()?;
    let Some(scale) = scale.broadcast(q.shape()) else {
        return Ok(None);
    };
    Ok(Some((&q * &scale).into_tensor()))
}

/// Drops initializers that no node reads any more (quantised tensors and scales folded away).
fn drop_unread_initializers(graph: &mut pb::GraphProto) {
    let read: std::collections::HashSet<String> = graph.node.iter().flat_map(|n| n.input.iter().cloned()).collect();
    let outputs: std::collections::HashSet<String> = graph.output.iter().map(|o| o.name.clone()).collect();
    graph
        .initializer
        .retain(|t| read.contains(&t.name) || outputs.contains(&t.name));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lower_case() {
        assert_eq!(hex(&[0x00, 0xab, 0x7f]), "00ab7f");
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn normalize_gives_unit_length_and_keeps_zero() {
        let mut v = vec![3.0, 4.0];
        l2_normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut z = vec![0.0, 0.0];
        l2_normalize(&mut z);
        assert_eq!(z, vec![0.0, 0.0]);
    }

    #[test]
    fn dequantize_broadcasts_per_row_and_per_column() {
        let q = Tensor::from(tract_ndarray::arr2(&[[1i8, -2, 3], [4, 5, -6]]));
        let per_row = Tensor::from(tract_ndarray::arr2(&[[0.5f32], [2.0]]));
        let flat = |scale: &Tensor| -> Vec<f32> {
            let out = dequantize(&q, scale).unwrap().unwrap();
            out.to_plain_array_view::<f32>().unwrap().iter().copied().collect()
        };
        assert_eq!(flat(&per_row), vec![0.5, -1.0, 1.5, 8.0, 10.0, -12.0]);
        let per_col = Tensor::from(tract_ndarray::arr2(&[[1.0f32, 0.5, 2.0]]));
        assert_eq!(flat(&per_col), vec![1.0, -1.0, 6.0, 4.0, 2.5, -12.0]);
        let wrong = Tensor::from(tract_ndarray::arr1(&[1.0f32, 2.0, 3.0, 4.0]));
        assert!(dequantize(&q, &wrong).unwrap().is_none());
        let not_int8 = Tensor::from(tract_ndarray::arr1(&[1.0f32]));
        assert!(dequantize(&not_int8, &per_col).unwrap().is_none());
    }
}
