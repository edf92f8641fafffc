//! A cross-encoder reranker run by tract: the query and a passage read together as one pair
//! (`[CLS] query [SEP] passage [SEP]`, token type 1 for the passage), one relevance logit out.
//! The same code natively and in wasm, as the embedder.
//!
//! The model is the user's (no cross-encoder weights ship with sextant): any BERT-family ONNX
//! export with inputs `input_ids`, `attention_mask` and optionally `token_type_ids`, and an
//! output of shape `[1, 1]` or `[1]` (the logit), or `[1, 2]` (two classes: the second is
//! "relevant", and the score is its logit minus the first's).

use super::rewrite::{model_of, node};
use super::runner::{decode_model, load_plan, LoadedPlan};
use super::{EmbedError, ModelTokenizer, Reranker, Weights};
use crate::digest::sha256_hex;

/// A cross-encoder ONNX model with its tokenizer.
pub struct CrossEncoder {
    loaded: LoadedPlan,
    tokenizer: ModelTokenizer,
    sha256: String,
}

impl std::fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoder").field("sha256", &self.sha256).finish()
    }
}

impl CrossEncoder {
    /// Loads a cross-encoder from the bytes of its ONNX model and `tokenizer.json`; a pair is cut
    /// to `max_tokens` (special tokens included). Checks the output's shape on a probe pair.
    pub fn from_vec(model: Vec<u8>, tokenizer: &[u8], max_tokens: usize) -> Result<Self, EmbedError> {
        let sha256 = sha256_hex(&model);
        let proto = decode_model(&model)?;
        drop(model);
        let loaded = load_plan(proto, Weights::F32)?;
        let tokenizer = ModelTokenizer::from_bytes(tokenizer, max_tokens)?;
        let encoder = Self {
            loaded,
            tokenizer,
            sha256,
        };
        encoder.score("probe", "probe")?;
        Ok(encoder)
    }

    /// The SHA-256 of the model's bytes.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The relevance of `passage` to `query` (a logit: higher is more relevant).
    pub fn score(&self, query: &str, passage: &str) -> Result<f32, EmbedError> {
        let (ids, types) = self.tokenizer.encode_pair(query, passage)?;
        let output = self.loaded.run(&ids, Some(&types))?;
        let logits = output.to_plain_array_view::<f32>().map_err(|e| EmbedError::Run {
            reason: format!("{e:#}"),
        })?;
        let values: Vec<f32> = logits.iter().copied().collect();
        let score = match (logits.shape(), values.as_slice()) {
            ([1] | [1, 1], [logit]) => *logit,
            ([1, 2], [no, yes]) => yes - no,
            (shape, _) => {
                return Err(EmbedError::BadModel {
                    reason: format!(
                        "a cross-encoder's output should be one logit ([1, 1]) or two classes ([1, 2]); this one is {shape:?}"
                    ),
                })
            }
        };
        // A score that is not a number ranks last rather than failing the search.
        Ok(if score.is_finite() { score } else { f32::MIN })
    }
}

impl Reranker for CrossEncoder {
    fn score(&self, query: &str, passage: &str) -> Result<f32, EmbedError> {
        CrossEncoder::score(self, query, passage)
    }
}

/// A tiny cross-encoder built by hand, for tests of the plumbing: its score is how many of the
/// passage's tokens are `token` (token type 1, so the query's never count). Inputs `input_ids`,
/// `attention_mask`, `token_type_ids`; output `logits` `[1, 1]`. Over a vocabulary of `vocab`.
pub fn tiny_cross_encoder(vocab: usize, token: u32) -> Vec<u8> {
    use prost::Message;
    use tract_onnx::pb;
    use tract_onnx::pb::tensor_proto::DataType;
    let tensor = |name: &str, data_type: DataType, dims: &[i64], raw_data: Vec<u8>| pb::TensorProto {
        name: name.into(),
        data_type: data_type as i32,
        dims: dims.to_vec(),
        raw_data,
        ..Default::default()
    };
    let input = |name: &str| pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: DataType::Int64 as i32,
                shape: None,
            })),
            ..Default::default()
        }),
        ..Default::default()
    };
    let table: Vec<u8> = (0..vocab)
        .flat_map(|i| f32::to_le_bytes(if i == token as usize { 1.0 } else { 0.0 }))
        .collect();
    let to_float = pb::AttributeProto {
        name: "to".into(),
        r#type: pb::attribute_proto::AttributeType::Int as i32,
        i: DataType::Float as i64,
        ..Default::default()
    };
    let graph = pb::GraphProto {
        name: "tiny-cross-encoder".into(),
        node: vec![
            node("Gather", &["table", "input_ids"], "per_token", vec![]),
            node("Cast", &["token_type_ids"], "is_passage", vec![to_float]),
            node("Mul", &["per_token", "is_passage"], "passage_only", vec![]),
            node("ReduceSum", &["passage_only", "axes"], "logits", vec![]),
        ],
        initializer: vec![
            tensor("table", DataType::Float, &[vocab as i64], table),
            tensor("axes", DataType::Int64, &[1], 1i64.to_le_bytes().to_vec()),
        ],
        input: vec![input("input_ids"), input("attention_mask"), input("token_type_ids")],
        output: vec![pb::ValueInfoProto {
            name: "logits".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    model_of(graph).encode_to_vec()
}
