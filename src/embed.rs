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
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};
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

/// How the model's weights are held in memory once loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightMode {
    /// Dequantise int8 weights to f32 once at load (fast: ~5x quicker per query for the default
    /// model, but ~90 MB of weights in memory). The default.
    #[default]
    Folded,
    /// Keep the weights as stored (int8 stays int8: ~23 MB) and let the graph dequantise them on
    /// every call. For memory-tight hosts such as a 128 MB Worker isolate.
    AsStored,
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
    /// Truncates at the window: what the model sees.
    inner: Tokenizer,
    /// Never truncates: for counting.
    counter: Tokenizer,
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
        let mut counter = inner.clone();
        counter
            .with_truncation(None)
            .map_err(|e| EmbedError::BadTokenizer { reason: e.to_string() })?;
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(|e| EmbedError::BadTokenizer { reason: e.to_string() })?;
        let special_tokens = inner
            .get_post_processor()
            .map(|p| tokenizers::PostProcessor::added_tokens(p, false))
            .unwrap_or(0);
        Ok(Self {
            inner,
            counter,
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
        let encoding = self
            .inner
            .encode(text, true)
            .map_err(|e| EmbedError::Tokenize { reason: e.to_string() })?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Number of tokens in `text` without special tokens and without truncation.
    pub fn count(&self, text: &str) -> Result<usize, EmbedError> {
        let encoding = self
            .counter
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
}

impl TractEmbedder {
    /// Loads a model from the bytes of `model.onnx` and `tokenizer.json`: parse, optionally fold
    /// int8 weights, optimise, make runnable. Reads the output dimensions by running one probe.
    pub fn from_bytes(
        model: &[u8],
        tokenizer: &[u8],
        options: &ModelOptions,
        weights: WeightMode,
    ) -> Result<Self, EmbedError> {
        let tokenizer_impl = ModelTokenizer::from_bytes(tokenizer, options.max_tokens)?;
        let bad = |e: TractError| EmbedError::BadModel {
            reason: format!("{e:#}"),
        };
        let onnx = tract_onnx::onnx()
            .with_ignore_value_info(true)
            .with_ignore_output_shapes(true);
        let mut proto = onnx.proto_model_for_read(&mut &model[..]).map_err(bad)?;
        if weights == WeightMode::Folded {
            fold_dequantized_weights(&mut proto);
        }
        let mut inference = onnx.model_for_proto_model(&proto).map_err(bad)?;
        drop(proto);
        let input_count = inference.inputs.len();
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
        let typed = inference.into_optimized().map_err(bad)?;
        let plan = typed.into_runnable().map_err(bad)?;
        let mut embedder = Self {
            plan,
            tokenizer: tokenizer_impl,
            spec: ModelSpec {
                sha256: sha256_hex(model),
                tokenizer_sha256: sha256_hex(tokenizer),
                dims: 0,
                max_tokens: options.max_tokens,
                pooling: options.pooling,
                normalize: options.normalize,
                query_prefix: options.query_prefix.clone(),
                passage_prefix: options.passage_prefix.clone(),
            },
            takes_token_type_ids: input_count == 3,
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

/// Rewrites `Cast(int8 initializer) → Mul(·, f32 initializer)` pairs into one f32 initializer,
/// so the dequantisation runs once at load instead of on every call. Pairs of any other shape are
/// left alone; the graph computes the same values either way.
fn fold_dequantized_weights(proto: &mut pb::ModelProto) {
    let Some(graph) = proto.graph.as_mut() else {
        return;
    };
    let initializer_index: std::collections::HashMap<String, usize> = graph
        .initializer
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), i))
        .collect();
    let mut consumers: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for node in &graph.node {
        for input in &node.input {
            *consumers.entry(input.as_str()).or_default() += 1;
        }
    }
    // (cast node, mul node, quantized init, scale init, output name)
    let mut folds = Vec::new();
    for (cast_at, cast) in graph.node.iter().enumerate() {
        if cast.op_type != "Cast" || cast.input.len() != 1 || cast.output.len() != 1 {
            continue;
        }
        let Some(&q_at) = initializer_index.get(&cast.input[0]) else {
            continue;
        };
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
        let scale_name = if &mul.input[0] == cast_out {
            &mul.input[1]
        } else {
            &mul.input[0]
        };
        let Some(&scale_at) = initializer_index.get(scale_name) else {
            continue;
        };
        folds.push((cast_at, mul_at, q_at, scale_at, mul.output[0].clone()));
    }
    let mut drop_nodes = std::collections::HashSet::new();
    let mut new_initializers = Vec::new();
    for (cast_at, mul_at, q_at, scale_at, output) in folds {
        let Some(weights) = dequantize(&graph.initializer[q_at], &graph.initializer[scale_at]) else {
            continue;
        };
        let mut folded = pb::TensorProto {
            dims: graph.initializer[q_at].dims.clone(),
            data_type: pb::tensor_proto::DataType::Float as i32,
            name: output,
            ..Default::default()
        };
        folded.raw_data = weights.iter().flat_map(|v| v.to_le_bytes()).collect();
        new_initializers.push(folded);
        drop_nodes.insert(cast_at);
        drop_nodes.insert(mul_at);
    }
    let mut index = 0;
    graph.node.retain(|_| {
        let keep = !drop_nodes.contains(&index);
        index += 1;
        keep
    });
    graph.initializer.extend(new_initializers);
    // Quantized tensors and scales that nothing reads any more are dropped to save memory.
    let still_read: std::collections::HashSet<String> =
        graph.node.iter().flat_map(|n| n.input.iter().cloned()).collect();
    let outputs: std::collections::HashSet<String> = graph.output.iter().map(|o| o.name.clone()).collect();
    graph
        .initializer
        .retain(|t| still_read.contains(&t.name) || outputs.contains(&t.name));
}

/// `q * scale` with numpy broadcasting of `scale` to `q`'s shape, or `None` if the tensors are
/// not an int8 tensor and an f32 tensor of compatible shapes.
fn dequantize(q: &pb::TensorProto, scale: &pb::TensorProto) -> Option<Vec<f32>> {
    use pb::tensor_proto::DataType;
    let q_dims: Vec<usize> = q.dims.iter().map(|&d| usize::try_from(d).ok()).collect::<Option<_>>()?;
    let s_dims: Vec<usize> = scale
        .dims
        .iter()
        .map(|&d| usize::try_from(d).ok())
        .collect::<Option<_>>()?;
    let q_values: Vec<f32> = if q.data_type == DataType::Int8 as i32 {
        if !q.raw_data.is_empty() {
            q.raw_data.iter().map(|&b| b as i8 as f32).collect()
        } else {
            q.int32_data.iter().map(|&v| v as f32).collect()
        }
    } else if q.data_type == DataType::Uint8 as i32 {
        if !q.raw_data.is_empty() {
            q.raw_data.iter().map(|&b| b as f32).collect()
        } else {
            q.int32_data.iter().map(|&v| v as f32).collect()
        }
    } else {
        return None;
    };
    if scale.data_type != DataType::Float as i32 {
        return None;
    }
    let s_values: Vec<f32> = if !scale.raw_data.is_empty() {
        if !scale.raw_data.len().is_multiple_of(4) {
            return None;
        }
        scale
            .raw_data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    } else {
        scale.float_data.clone()
    };
    let q_array = tract_ndarray::ArrayD::from_shape_vec(tract_ndarray::IxDyn(&q_dims), q_values).ok()?;
    let s_array = tract_ndarray::ArrayD::from_shape_vec(tract_ndarray::IxDyn(&s_dims), s_values).ok()?;
    let s_view = s_array.broadcast(q_array.shape())?;
    let product = &q_array * &s_view;
    Some(product.iter().copied().collect())
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
        use pb::tensor_proto::DataType;
        let q = pb::TensorProto {
            dims: vec![2, 3],
            data_type: DataType::Int8 as i32,
            raw_data: [1i8, -2, 3, 4, 5, -6].iter().map(|&v| v as u8).collect(),
            ..Default::default()
        };
        let per_row = pb::TensorProto {
            dims: vec![2, 1],
            data_type: DataType::Float as i32,
            float_data: vec![0.5, 2.0],
            ..Default::default()
        };
        assert_eq!(
            dequantize(&q, &per_row).unwrap(),
            vec![0.5, -1.0, 1.5, 8.0, 10.0, -12.0]
        );
        let per_col = pb::TensorProto {
            dims: vec![1, 3],
            data_type: DataType::Float as i32,
            float_data: vec![1.0, 0.5, 2.0],
            ..Default::default()
        };
        assert_eq!(dequantize(&q, &per_col).unwrap(), vec![1.0, -1.0, 6.0, 4.0, 2.5, -12.0]);
        let wrong = pb::TensorProto {
            dims: vec![3],
            data_type: DataType::Float as i32,
            float_data: vec![1.0, 2.0, 3.0, 4.0],
            ..Default::default()
        };
        assert!(dequantize(&q, &wrong).is_none());
    }
}
