//! A BERT encoder of our own, without tract: what the search box runs for meaning search.
//!
//! With int8 weights ([`Weights::Int8`], [`Weights::Int5`]) every step of a BERT sentence model's
//! forward pass is already sextant's arithmetic, not tract's: the products with weights are
//! `sextant_kernels::PackedInt8` (bias, GELU and residual in its epilogue), attention's products,
//! softmax and layer normalisation are `sextant_kernels::exact`, and what is left (adding the
//! embeddings, scaling queries and keys) is elementwise f32. tract only walks the graph. So an
//! *encoder file* (written by [`write_encoder`] from a model body, natively) holds those operands
//! in the order of a BERT layer, and [`BertEncoder`] runs them: the same operations in the same
//! order as the tract plan, so the same vectors bit for bit ([`check_encoder`] proves it on a
//! model before a site ships its encoder file), in a WebAssembly build that leaves tract out
//! (`--features encoder`: about a third of the full engine's bytes).
//!
//! The word table stays in the body's row files (`rows`): the encoder file names them, and a text
//! needs the files its tokens' rows are in ([`EmbedError::MissingRows`]), as a body does.
//!
//! ## The file
//!
//! [`MAGIC`], the header's length (u32, little-endian), the header (JSON, [`Header`]), then each
//! tensor's bytes in the header's order: f32 little-endian, int8, or int8 values packed at five
//! bits (`int5::pack`). Every length is checked against the header's shapes and the file before
//! anything is allocated.

use serde::{Deserialize, Serialize};
use sextant_kernels::{exact, Epilogue, PackedInt8, Rows};

use super::rowstore::RowStore;
use super::{EmbedError, Embedder, ModelOptions, ModelSpec, ModelTokenizer, Pooling, TextKind, Weights};
use crate::digest::sha256_hex;
use crate::vecmath::l2_normalize;

/// The first bytes of an encoder file.
pub const MAGIC: &[u8; 8] = b"SXTENC\0\x01";
/// The most bytes a header may take (all-MiniLM's: about 60 kB, most of it row file names).
const MAX_HEADER: usize = 1 << 22;
/// Bounds on a model's shape, far above BERT-large's, so a hostile header allocates nothing big.
const MAX_HIDDEN: usize = 8192;
const MAX_LAYERS: usize = 128;
const MAX_POSITIONS: usize = 1 << 16;

/// Whether `bytes` start as an encoder file.
pub fn is_encoder(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// How a tensor's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    F32,
    I8,
    /// int8 values packed at five bits (`int5::pack`), `[k, n]`.
    Int5,
}

/// One tensor of the file, in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorEntry {
    name: String,
    kind: Kind,
    shape: Vec<usize>,
}

impl TensorEntry {
    /// Bytes the tensor takes in the file, or `None` if its shape is out of bounds.
    fn bytes(&self) -> Option<usize> {
        let values = self.shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))?;
        match self.kind {
            Kind::F32 => values.checked_mul(4),
            Kind::I8 => Some(values),
            Kind::Int5 => match self.shape[..] {
                [k, n] => super::int5::packed_len(k, n),
                _ => None,
            },
        }
    }
}

/// Where the word table's rows are: the body's row files, each holding its rows' int8 values,
/// then their f32 scales (one a row).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WordRows {
    rows: usize,
    per_file: usize,
    files: Vec<String>,
}

/// The header of an encoder file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    /// The SHA-256 of the whole `model.onnx` (what indexes record).
    source_sha256: String,
    /// The weights the products hold: `int8`, or `int5` (the values a whole model rounds to).
    weights: Weights,
    hidden: usize,
    heads: usize,
    layers: usize,
    intermediate: usize,
    positions: usize,
    /// Layer normalisation's epsilon, as `f32::to_bits`.
    epsilon: u32,
    /// What queries and keys are multiplied by after their products, before attention's
    /// (`f32::to_bits`).
    query_factor: u32,
    key_factor: u32,
    word: WordRows,
    tensors: Vec<TensorEntry>,
}

/// A product with a weight: `act((x · q) ∘ scale + bias) (+ residual)`.
struct Linear {
    weights: PackedInt8,
    scale: Vec<f32>,
    bias: Vec<f32>,
    gelu: bool,
}

impl Linear {
    fn apply(&self, x: &[f32], rows: usize, residual: Option<&[f32]>) -> Vec<f32> {
        let epilogue = Epilogue {
            scale: &self.scale,
            bias: Some(&self.bias),
            gelu: self.gelu,
        };
        self.weights.product(x, rows, &epilogue, residual)
    }
}

/// Layer normalisation's scale and shift.
struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    output: Linear,
    attention_norm: Norm,
    up: Linear,
    down: Linear,
    output_norm: Norm,
}

/// The tract-free encoder (module docs). Load once, embed many times, from many threads.
pub struct BertEncoder {
    header: Header,
    words: RowStore,
    /// Token type 0's row.
    token_type: Vec<f32>,
    /// The position table, int8, and its scales (one a row, or one for all).
    positions: Vec<i8>,
    position_scale: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    tokenizer: ModelTokenizer,
    spec: ModelSpec,
}

impl std::fmt::Debug for BertEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertEncoder")
            .field("spec", &self.spec)
            .field("layers", &self.layers.len())
            .field("words", &self.words)
            .finish()
    }
}

fn bad(reason: impl Into<String>) -> EmbedError {
    EmbedError::BadModel {
        reason: format!(
            "the encoder file is damaged or not one this version reads ({}); build the site again with this version",
            reason.into()
        ),
    }
}

/// The file's tensors by name, read as their header says.
struct Tensors<'a> {
    entries: Vec<(&'a TensorEntry, &'a [u8])>,
}

impl<'a> Tensors<'a> {
    fn split(header: &'a Header, mut data: &'a [u8]) -> Result<Self, EmbedError> {
        let mut entries = Vec::with_capacity(header.tensors.len().min(data.len()));
        for entry in &header.tensors {
            let len = entry.bytes().filter(|&n| n <= data.len()).ok_or_else(|| {
                bad(format!(
                    "the tensor {} of shape {:?} is not in the file",
                    entry.name, entry.shape
                ))
            })?;
            let (bytes, rest) = data.split_at(len);
            entries.push((entry, bytes));
            data = rest;
        }
        if !data.is_empty() {
            return Err(bad(format!("{} bytes after the last tensor", data.len())));
        }
        Ok(Self { entries })
    }

    fn get(&self, name: &str, shape: &[usize]) -> Result<(Kind, &'a [u8]), EmbedError> {
        let (entry, bytes) = self
            .entries
            .iter()
            .find(|(e, _)| e.name == name)
            .ok_or_else(|| bad(format!("no tensor {name}")))?;
        if entry.shape != shape {
            return Err(bad(format!("{name} has the shape {:?}, not {shape:?}", entry.shape)));
        }
        Ok((entry.kind, bytes))
    }

    fn f32s(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        match self.get(name, shape)? {
            (Kind::F32, bytes) => Ok(bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()),
            _ => Err(bad(format!("{name} is not f32"))),
        }
    }

    /// An int8 matrix `[k, n]`, stored as int8 or packed at five bits.
    fn int8s(&self, name: &str, shape: &[usize]) -> Result<Vec<i8>, EmbedError> {
        match self.get(name, shape)? {
            (Kind::I8, bytes) => Ok(bytes.iter().map(|&b| b as i8).collect()),
            (Kind::Int5, bytes) => {
                let unpacked =
                    super::int5::unpack(bytes, shape[0], shape[1]).map_err(|e| bad(format!("{name}: {e}")))?;
                Ok(unpacked.into_iter().map(|b| b as i8).collect())
            }
            (Kind::F32, _) => Err(bad(format!("{name} is not int8"))),
        }
    }

    fn linear(&self, name: &str, k: usize, n: usize, gelu: bool, rows: Rows) -> Result<Linear, EmbedError> {
        let q = self.int8s(&format!("{name}.weight"), &[k, n])?;
        let weights =
            PackedInt8::new(&q, k, n, rows).ok_or_else(|| bad(format!("{name}'s weight cannot be packed")))?;
        let scale = self.f32s(&format!("{name}.scale"), &[n])?;
        let bias = self.f32s(&format!("{name}.bias"), &[n])?;
        Ok(Linear {
            weights,
            scale,
            bias,
            gelu,
        })
    }

    fn norm(&self, name: &str, hidden: usize) -> Result<Norm, EmbedError> {
        Ok(Norm {
            gamma: self.f32s(&format!("{name}.gamma"), &[hidden])?,
            beta: self.f32s(&format!("{name}.beta"), &[hidden])?,
        })
    }
}

impl BertEncoder {
    /// Loads an encoder file and the model's `tokenizer.json`, run as `options` say (pooling,
    /// window, prefixes; its weights are the file's).
    pub fn from_bytes(bytes: &[u8], tokenizer: &[u8], options: &ModelOptions) -> Result<Self, EmbedError> {
        if options.weights == Weights::F32 {
            return Err(EmbedError::BadOption {
                option: "weights",
                reason: "an encoder file multiplies int8 weights only; load model.onnx for f32".into(),
            });
        }
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| bad("it does not start as one"))?;
        let (len, rest) = rest.split_first_chunk::<4>().ok_or_else(|| bad("no header"))?;
        let len = u32::from_le_bytes(*len) as usize;
        if len > MAX_HEADER || len > rest.len() {
            return Err(bad(format!("a header of {len} bytes")));
        }
        let (header, data) = rest.split_at(len);
        let header: Header = serde_json::from_slice(header).map_err(|e| bad(format!("its header: {e}")))?;
        let (h, layers) = (header.hidden, header.layers);
        let shape_ok = (1..=MAX_HIDDEN).contains(&h)
            && header.heads > 0
            && h % header.heads == 0
            && (1..=MAX_LAYERS).contains(&layers)
            && (1..=MAX_HIDDEN * 8).contains(&header.intermediate)
            && (1..=MAX_POSITIONS).contains(&header.positions)
            && header.weights != Weights::F32;
        if !shape_ok {
            return Err(bad(format!(
                "a model of {h} dims, {} heads, {layers} layers, {} intermediate, {} positions, {} weights",
                header.heads, header.intermediate, header.positions, header.weights
            )));
        }
        let tensors = Tensors::split(&header, data)?;
        let word = &header.word;
        let words = RowStore::files(vec![h, 4], word.rows, word.per_file, word.files.clone())
            .map_err(|e| bad(format!("its word rows: {e}")))?;
        let token_type = tensors.f32s("embeddings.token_type", &[h])?;
        let positions = tensors.int8s("embeddings.position", &[header.positions, h])?;
        let position_scale = match tensors.f32s("embeddings.position.scale", &[header.positions]) {
            Ok(s) => s,
            Err(_) => tensors.f32s("embeddings.position.scale", &[1])?,
        };
        let embedding_norm = tensors.norm("embeddings.norm", h)?;
        let ff = header.intermediate;
        // Rows rounded to bytes where asked, for a whole model's int8 weights (a five-bit body
        // is for queries, which keep 15-bit rows).
        let weights = match (options.weights, header.weights) {
            (Weights::Int8A8, Weights::Int8) => Weights::Int8A8,
            (_, file) => file,
        };
        let rows = weights.rows();
        let layers = (0..layers)
            .map(|l| {
                let name = |part: &str| format!("layer{l}.{part}");
                Ok(Layer {
                    query: tensors.linear(&name("query"), h, h, false, rows)?,
                    key: tensors.linear(&name("key"), h, h, false, rows)?,
                    value: tensors.linear(&name("value"), h, h, false, rows)?,
                    output: tensors.linear(&name("output"), h, h, false, rows)?,
                    attention_norm: tensors.norm(&name("attention_norm"), h)?,
                    up: tensors.linear(&name("up"), h, ff, true, rows)?,
                    down: tensors.linear(&name("down"), ff, h, false, rows)?,
                    output_norm: tensors.norm(&name("output_norm"), h)?,
                })
            })
            .collect::<Result<Vec<_>, EmbedError>>()?;
        let tokenizer_impl = ModelTokenizer::from_bytes(tokenizer, options.max_tokens)?;
        if options.max_tokens > header.positions {
            return Err(EmbedError::BadOption {
                option: "max_tokens",
                reason: format!(
                    "a window of {} tokens is longer than the model's {} positions",
                    options.max_tokens, header.positions
                ),
            });
        }
        let spec = ModelSpec::new(
            header.source_sha256.clone(),
            sha256_hex(tokenizer),
            h,
            &ModelOptions {
                weights,
                ..options.clone()
            },
        );
        Ok(Self {
            header,
            words,
            token_type,
            positions,
            position_scale,
            embedding_norm,
            layers,
            tokenizer: tokenizer_impl,
            spec,
        })
    }

    /// The model's tokenizer.
    pub fn tokenizer(&self) -> &ModelTokenizer {
        &self.tokenizer
    }

    /// The last hidden state of `ids` (`ids.len()` rows of the model's dims).
    fn hidden(&self, ids: &[u32]) -> Result<Vec<f32>, EmbedError> {
        let (h, t) = (self.header.hidden, ids.len());
        if t > self.header.positions {
            return Err(EmbedError::Run {
                reason: format!("{t} tokens, more than the model's {} positions", self.header.positions),
            });
        }
        let (renumbered, rows) = self.words.gather(ids)?;
        let (q, scales) = (&rows[0], &rows[1]);
        let mut x = vec![0f32; t * h];
        for (pos, (&r, out)) in renumbered.iter().zip(x.chunks_exact_mut(h)).enumerate() {
            let r = r as usize;
            let s = &scales[r * 4..r * 4 + 4];
            let scale = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
            let ps = self.position_scale[if self.position_scale.len() == 1 { 0 } else { pos }];
            let word = &q[r * h..(r + 1) * h];
            let position = &self.positions[pos * h..(pos + 1) * h];
            // (word + token type) + position, as the graph adds them.
            for j in 0..h {
                out[j] = (word[j] as i8 as f32 * scale + self.token_type[j]) + position[j] as f32 * ps;
            }
        }
        let epsilon = f32::from_bits(self.header.epsilon);
        let norm = |x: &mut [f32], n: &Norm| exact::layer_norm(x, h, &n.gamma, &n.beta, epsilon);
        norm(&mut x, &self.embedding_norm);
        let heads = self.header.heads;
        let d = h / heads;
        let (query_factor, key_factor) = (
            f32::from_bits(self.header.query_factor),
            f32::from_bits(self.header.key_factor),
        );
        // Attention's buffers, one of each for every layer and head.
        let mut context = vec![0f32; t * h];
        let (mut qh, mut kt, mut vh) = (vec![0f32; t * d], vec![0f32; d * t], vec![0f32; t * d]);
        let (mut scores, mut out) = (vec![0f32; t * t], vec![0f32; t * d]);
        for layer in &self.layers {
            // Queries and keys are multiplied by their factors after their products (the tract
            // plan keeps the multiplication apart: reshapes stand between them).
            let mut q = layer.query.apply(&x, t, None);
            q.iter_mut().for_each(|v| *v *= query_factor);
            let mut k = layer.key.apply(&x, t, None);
            k.iter_mut().for_each(|v| *v *= key_factor);
            let v = layer.value.apply(&x, t, None);
            for head in 0..heads {
                for i in 0..t {
                    let row = i * h + head * d;
                    qh[i * d..(i + 1) * d].copy_from_slice(&q[row..row + d]);
                    vh[i * d..(i + 1) * d].copy_from_slice(&v[row..row + d]);
                    for c in 0..d {
                        kt[c * t + i] = k[row + c];
                    }
                }
                exact::matmul_to(&qh, &kt, &mut scores, t, d, t);
                // The mask of a sequence without padding adds zero (which turns -0 into +0).
                scores.iter_mut().for_each(|s| *s += 0.0);
                exact::softmax(&mut scores, t);
                scores.iter_mut().filter(|s| s.is_nan()).for_each(|s| *s = 0.0);
                exact::matmul_to(&scores, &vh, &mut out, t, t, d);
                for i in 0..t {
                    context[i * h + head * d..][..d].copy_from_slice(&out[i * d..(i + 1) * d]);
                }
            }
            let mut a = layer.output.apply(&context, t, Some(&x));
            norm(&mut a, &layer.attention_norm);
            let up = layer.up.apply(&a, t, None);
            x = layer.down.apply(&up, t, Some(&a));
            norm(&mut x, &layer.output_norm);
        }
        Ok(x)
    }

    /// Runs the model on token ids and pools, without prefixing or tokenising.
    pub fn embed_ids(&self, ids: &[u32]) -> Result<Vec<f32>, EmbedError> {
        if ids.is_empty() {
            return Err(EmbedError::Run {
                reason: "no tokens to embed".into(),
            });
        }
        let h = self.header.hidden;
        let hidden = self.hidden(ids)?;
        let mut vector = match self.spec.pooling {
            Pooling::Cls => hidden[..h].to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0f32; h];
                for row in hidden.chunks_exact(h) {
                    for (s, v) in sum.iter_mut().zip(row) {
                        *s += *v;
                    }
                }
                let n = ids.len() as f32;
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

impl Embedder for BertEncoder {
    fn spec(&self) -> &ModelSpec {
        &self.spec
    }

    fn embed(&self, text: &str, kind: TextKind) -> Result<Vec<f32>, EmbedError> {
        let ids = super::prefixed_ids(&self.tokenizer, &self.spec, text, kind)?;
        self.embed_ids(&ids)
    }

    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        self.tokenizer.count(text)
    }

    fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        self.tokenizer.encode(text)
    }

    fn add_file(&self, name: &str, bytes: &[u8]) -> Result<bool, EmbedError> {
        self.words.add_file(name, bytes)
    }

    fn file_names(&self) -> Vec<String> {
        self.words.file_names()
    }
}

#[cfg(feature = "model")]
pub use writer::{check_against, check_encoder, write_encoder, CHECK_TEXTS};

/// Writing an encoder file from a model body (natively, with tract's ONNX types).
#[cfg(feature = "model")]
mod writer {
    use tract_onnx::pb;
    use tract_onnx::prelude::*;

    use super::super::onnx::{proto_tensor, INT8_MATMUL_OP};
    use super::super::rows::body_info;
    use super::super::runner::decode_model;
    use super::super::{EmbedError, Embedder, ModelOptions, TextKind, TractEmbedder, Weights};
    use super::{BertEncoder, Header, Kind, TensorEntry, WordRows, MAGIC};

    /// Texts an encoder must embed as the model's plan does, bit for bit, before it stands in
    /// for it: words, code, Unicode, a window-long text (every position), one token, none.
    pub const CHECK_TEXTS: [&str; 6] = [
        "How do I install the package?",
        "fn main() { println!(\"{}\", x.map(|v| v * 2)); }",
        "Ärger über naïve Café-Preise, 東京の天気, ÇA VA?",
        "a",
        "",
        "Long text covering every position of the model window, repeated so that the truncation at the window is reached. Long text covering every position of the model window, repeated so that the truncation at the window is reached. Long text covering every position of the model window, repeated so that the truncation at the window is reached. Long text covering every position of the model window, repeated so that the truncation at the window is reached. Long text covering every position of the model window, repeated so that the truncation at the window is reached. Long text covering every position of the model window, repeated so that the truncation at the window is reached. Long text covering every position of the model window, repeated so that the truncation at the window is reached. Long text covering every position of the model window, repeated so that the truncation at the window is reached. Long text covering every position of the model window, repeated so that the truncation at the window is reached.",
    ];

    fn unsupported(reason: impl std::fmt::Display) -> EmbedError {
        EmbedError::BadModel {
            reason: format!("the model is not a BERT encoder sextant's own encoder runs ({reason}); the search box will load the full engine instead"),
        }
    }

    /// An initializer's values as f32 (or int8 widened), and its shape.
    fn tensor(graph: &pb::GraphProto, name: &str) -> Result<Tensor, EmbedError> {
        let t = graph
            .initializer
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| unsupported(format!("{name} is not a constant")))?;
        proto_tensor(t)
            .map_err(|e| unsupported(format!("{name}: {e}")))?
            .ok_or_else(|| unsupported(format!("{name} is neither int8 nor f32")))
    }

    fn f32s(t: &Tensor) -> Result<Vec<f32>, EmbedError> {
        t.cast_to::<f32>()
            .and_then(|c| Ok(c.try_as_plain_ram()?.as_slice::<f32>()?.to_vec()))
            .map_err(|e| unsupported(format!("{e}")))
    }

    fn i8s(t: &Tensor) -> Result<Vec<i8>, EmbedError> {
        t.try_as_plain_ram()
            .and_then(|r| Ok(r.as_slice::<i8>()?.to_vec()))
            .map_err(|e| unsupported(format!("{e}")))
    }

    /// An int64 initializer's values.
    fn int64s(graph: &pb::GraphProto, name: &str) -> Option<Vec<i64>> {
        let t = graph.initializer.iter().find(|t| t.name == name)?;
        if t.data_type != pb::tensor_proto::DataType::Int64 as i32 {
            return None;
        }
        Some(if t.raw_data.is_empty() {
            t.int64_data.clone()
        } else {
            t.raw_data
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect()
        })
    }

    /// The dequantised table `Mul(Cast(q), scale)` whose output is `name`: `(q, scale)`.
    fn dequantised<'g>(graph: &'g pb::GraphProto, name: &str) -> Option<(&'g str, &'g str)> {
        let producer = |out: &str| graph.node.iter().find(|n| n.output.iter().any(|o| o == out));
        let mul = producer(name).filter(|n| n.op_type == "Mul" && n.input.len() == 2)?;
        let cast = producer(&mul.input[0]).filter(|n| n.op_type == "Cast")?;
        Some((cast.input[0].as_str(), mul.input[1].as_str()))
    }

    /// Follows `name` back through reshapes and transposes to a multiplication by one constant:
    /// the constant (1 when there is none).
    fn factor<'g>(graph: &'g pb::GraphProto, mut name: &'g str) -> Result<f32, EmbedError> {
        loop {
            let Some(node) = graph.node.iter().find(|n| n.output.iter().any(|o| o == name)) else {
                return Ok(1.0);
            };
            match node.op_type.as_str() {
                "Reshape" | "Transpose" | "Squeeze" | "Unsqueeze" => name = &node.input[0],
                "Mul" => {
                    for input in &node.input {
                        if let Ok(t) = tensor(graph, input) {
                            if let [f] = f32s(&t)?[..] {
                                return Ok(f);
                            }
                        }
                    }
                    return Err(unsupported("attention multiplies queries or keys by a computed tensor"));
                }
                _ => return Ok(1.0),
            }
        }
    }

    /// The head size: the last value of the shape the first `Reshape` before `name` takes.
    fn head_size<'g>(graph: &'g pb::GraphProto, mut name: &'g str) -> Result<usize, EmbedError> {
        let producer =
            |out: &str| -> Option<&'g pb::NodeProto> { graph.node.iter().find(|n| n.output.iter().any(|o| o == out)) };
        loop {
            let node = producer(name).ok_or_else(|| unsupported("no reshape into heads before attention"))?;
            if node.op_type == "Reshape" {
                let mut shape = node.input.get(1).map(String::as_str).unwrap_or_default();
                loop {
                    if let Some(values) = int64s(graph, shape) {
                        return values
                            .last()
                            .and_then(|&v| usize::try_from(v).ok())
                            .filter(|&v| v > 0)
                            .ok_or_else(|| unsupported("the heads' shape is not constant"));
                    }
                    let concat = producer(shape)
                        .filter(|n| n.op_type == "Concat")
                        .ok_or_else(|| unsupported("the heads' shape is not constant"))?;
                    shape = concat.input.last().map(String::as_str).unwrap_or_default();
                }
            }
            name = node.input.first().map(String::as_str).unwrap_or_default();
        }
    }

    /// Writes the encoder file of a model body (`rows::split_model`, packed at five bits or not):
    /// its layers' operands in a BERT layer's order, the word table left in the body's row
    /// files. An error names what the model has that this encoder does not run.
    ///
    /// Only the positions a window of `max_tokens` reads are kept (the index's window: the
    /// encoder refuses a longer one).
    pub fn write_encoder(body: &[u8], max_tokens: usize) -> Result<Vec<u8>, EmbedError> {
        let mut proto = decode_model(body)?;
        let info =
            body_info(&proto)?.ok_or_else(|| unsupported("not a model body; cut it with sextant build --site"))?;
        let int5 = super::super::int5::unpack_graph(&mut proto)? > 0;
        let original = proto.graph.take().ok_or_else(|| unsupported("no graph"))?;
        let mut rewritten = original.clone();
        drop(proto);
        super::super::rewrite::prepare_graph(&mut rewritten, Weights::Int8, Some(&info))
            .map_err(|e| unsupported(format!("{e:#}")))?;
        let mut tensors: Vec<(TensorEntry, Vec<u8>)> = Vec::new();
        let push_f32 = |tensors: &mut Vec<(TensorEntry, Vec<u8>)>, name: String, shape: Vec<usize>, v: &[f32]| {
            let bytes = v.iter().flat_map(|f| f.to_le_bytes()).collect();
            tensors.push((
                TensorEntry {
                    name,
                    kind: Kind::F32,
                    shape,
                },
                bytes,
            ));
        };

        // The embeddings, from the graph as exported: three gathers and their tables.
        let inputs: Vec<&str> = original.input.iter().map(|i| i.name.as_str()).collect();
        let gathers: Vec<&pb::NodeProto> = original.node.iter().filter(|n| n.op_type == "Gather").collect();
        let by_index = |index: &str| gathers.iter().find(|n| n.input.get(1).is_some_and(|i| i == index));
        let (ids, types) = match inputs[..] {
            [ids, _, types, ..] => (ids, types),
            _ => {
                return Err(unsupported(
                    "inputs other than input_ids, attention_mask, token_type_ids",
                ))
            }
        };
        let word = by_index(ids).ok_or_else(|| unsupported("no word table gathered by the ids"))?;
        let word_tables =
            dequantised(&original, &word.input[0]).ok_or_else(|| unsupported("the word table is not int8"))?;
        if info.tables() != [word_tables.0.to_string(), word_tables.1.to_string()] {
            return Err(unsupported(format!(
                "the row files hold the tables {:?}",
                info.tables()
            )));
        }
        let word_rows = original
            .initializer
            .iter()
            .find(|t| t.name == word_tables.0)
            .and_then(|t| usize::try_from(*t.dims.first()?).ok())
            .ok_or_else(|| unsupported("the word table has no rows"))?;
        let token_type = by_index(types).ok_or_else(|| unsupported("no token type table"))?;
        let hidden_of = |t: &Tensor| t.shape().last().copied().unwrap_or(0);
        let type_table = match dequantised(&original, &token_type.input[0]) {
            Some(_) => return Err(unsupported("an int8 token type table")),
            None => tensor(&original, &token_type.input[0])?,
        };
        let h = hidden_of(&type_table);
        let type_row = f32s(&type_table)?;
        push_f32(
            &mut tensors,
            "embeddings.token_type".into(),
            vec![h],
            &type_row[..h.min(type_row.len())],
        );
        let position = gathers
            .iter()
            .find(|n| n.input.get(1).is_some_and(|i| i != ids && i != types))
            .ok_or_else(|| unsupported("no position table"))?;
        // The positions gathered are 0, 1, … (a slice of a constant 0..P).
        let slice = original
            .node
            .iter()
            .find(|n| n.output.contains(&position.input[1]) && n.op_type == "Slice")
            .ok_or_else(|| unsupported("positions that are not a slice of 0, 1, …"))?;
        let arange =
            int64s(&original, &slice.input[0]).is_some_and(|v| v.iter().enumerate().all(|(i, &p)| p == i as i64));
        if !arange {
            return Err(unsupported("position ids that are not 0, 1, …"));
        }
        let (pq, ps) =
            dequantised(&original, &position.input[0]).ok_or_else(|| unsupported("the position table is not int8"))?;
        let (pq, ps) = (tensor(&original, pq)?, tensor(&original, ps)?);
        let positions = pq.shape().first().copied().unwrap_or(0);
        if pq.shape() != [positions, h] || !(ps.len() == 1 || ps.len() == positions) {
            return Err(unsupported(format!(
                "a position table of {:?} and scales of {:?}",
                pq.shape(),
                ps.shape()
            )));
        }
        let kept = positions.min(max_tokens);
        if kept == 0 {
            return Err(unsupported("a window of no tokens"));
        }
        let position_scales = f32s(&ps)?;
        let position_scales = if position_scales.len() == 1 {
            position_scales
        } else {
            position_scales[..kept].to_vec()
        };
        tensors.push((
            TensorEntry {
                name: "embeddings.position".into(),
                kind: Kind::I8,
                shape: vec![kept, h],
            },
            i8s(&pq)?[..kept * h].iter().map(|&v| v as u8).collect(),
        ));
        push_f32(
            &mut tensors,
            "embeddings.position.scale".into(),
            vec![position_scales.len()],
            &position_scales,
        );
        let positions = kept;

        // The layers, from the graph as the load rewrites it.
        let nodes = &rewritten.node;
        let of_type = |op: &'static str| nodes.iter().filter(move |n| n.op_type == op);
        let norms: Vec<&pb::NodeProto> = of_type(super::super::exact::LAYER_NORM_OP).collect();
        let products: Vec<&pb::NodeProto> = of_type(INT8_MATMUL_OP).collect();
        let attention: Vec<&pb::NodeProto> = of_type(super::super::exact::MATMUL_OP).collect();
        let layers = products.len() / 6;
        if layers == 0
            || products.len() != 6 * layers
            || norms.len() != 2 * layers + 1
            || attention.len() != 2 * layers
            || of_type(super::super::exact::SOFTMAX_OP).count() != layers
        {
            return Err(unsupported(format!(
                "{} products with weights, {} layer norms and {} attention products: not the layers of a BERT encoder",
                products.len(),
                norms.len(),
                attention.len()
            )));
        }
        let attribute = |n: &pb::NodeProto, name: &str| n.attribute.iter().find(|a| a.name == name).cloned();
        let mut epsilon = None;
        let mut norm =
            |tensors: &mut Vec<(TensorEntry, Vec<u8>)>, node: &pb::NodeProto, name: &str| -> Result<(), EmbedError> {
                let e = attribute(node, "epsilon").map_or(1e-5, |a| a.f).to_bits();
                if *epsilon.get_or_insert(e) != e {
                    return Err(unsupported("layer norms of different epsilons"));
                }
                for (part, input) in [("gamma", 1), ("beta", 2)] {
                    let v = f32s(&tensor(&rewritten, &node.input[input])?)?;
                    if v.len() != h {
                        return Err(unsupported(format!("a layer norm of {} values", v.len())));
                    }
                    push_f32(tensors, format!("{name}.{part}"), vec![h], &v);
                }
                Ok(())
            };
        norm(&mut tensors, norms[0], "embeddings.norm")?;
        let mut intermediate = 0;
        for l in 0..layers {
            for (i, part) in ["query", "key", "value", "output", "up", "down"]
                .into_iter()
                .enumerate()
            {
                let node = products[6 * l + i];
                let t = |name: &str| -> Result<Tensor, EmbedError> {
                    let a = attribute(node, name)
                        .and_then(|a| a.t)
                        .ok_or_else(|| unsupported(format!("a product without {name}")))?;
                    proto_tensor(&a)
                        .map_err(|e| unsupported(format!("{e}")))?
                        .ok_or_else(|| unsupported(format!("a product's {name} of another type")))
                };
                let gelu = attribute(node, "activation").is_some_and(|a| a.s == b"gelu");
                if gelu != (part == "up") {
                    return Err(unsupported(format!(
                        "layer {l}'s {part} product {} GELU",
                        if gelu { "has" } else { "lacks" }
                    )));
                }
                let q = t("q")?;
                let [k, n] = q.shape()[..] else {
                    return Err(unsupported("a weight that is not a matrix"));
                };
                if part == "up" {
                    intermediate = n;
                }
                let scale = f32s(&t("scale")?)?;
                let scale = if scale.len() == 1 { vec![scale[0]; n] } else { scale };
                let bias = f32s(&t("bias")?)?;
                let q = i8s(&q)?;
                let name = format!("layer{l}.{part}");
                let packed = super::super::int5::pack(&q, k, n);
                let exact_int5 = int5
                    && super::super::int5::unpack(&packed, k, n)
                        .is_ok_and(|u| u.iter().zip(&q).all(|(&a, &b)| a as i8 == b));
                let (kind, bytes) = if exact_int5 {
                    (Kind::Int5, packed)
                } else {
                    (Kind::I8, q.iter().map(|&v| v as u8).collect())
                };
                tensors.push((
                    TensorEntry {
                        name: format!("{name}.weight"),
                        kind,
                        shape: vec![k, n],
                    },
                    bytes,
                ));
                push_f32(&mut tensors, format!("{name}.scale"), vec![n], &scale);
                push_f32(&mut tensors, format!("{name}.bias"), vec![n], &bias);
            }
            norm(&mut tensors, norms[1 + 2 * l], &format!("layer{l}.attention_norm"))?;
            norm(&mut tensors, norms[2 + 2 * l], &format!("layer{l}.output_norm"))?;
        }
        let scores = attention[0];
        let query_factor = factor(&rewritten, &scores.input[0])?;
        let key_factor = factor(&rewritten, &scores.input[1])?;
        for other in attention.iter().step_by(2).skip(1) {
            if factor(&rewritten, &other.input[0])?.to_bits() != query_factor.to_bits()
                || factor(&rewritten, &other.input[1])?.to_bits() != key_factor.to_bits()
            {
                return Err(unsupported("layers that scale attention differently"));
            }
        }
        let head = head_size(&rewritten, &scores.input[0])?;
        if h % head != 0 {
            return Err(unsupported(format!("heads of {head} in {h} dims")));
        }
        let header = Header {
            source_sha256: info.source_sha256.clone(),
            weights: if int5 { Weights::Int5 } else { Weights::Int8 },
            hidden: h,
            heads: h / head,
            layers,
            intermediate,
            positions,
            epsilon: epsilon.unwrap_or(1e-5f32.to_bits()),
            query_factor: query_factor.to_bits(),
            key_factor: key_factor.to_bits(),
            word: WordRows {
                rows: word_rows,
                per_file: info.per_file(),
                files: info.files().to_vec(),
            },
            tensors: tensors.iter().map(|(e, _)| e.clone()).collect(),
        };
        let header = serde_json::to_vec(&header).map_err(|e| unsupported(e.to_string()))?;
        let mut out = MAGIC.to_vec();
        out.extend((header.len() as u32).to_le_bytes());
        out.extend(header);
        for (_, bytes) in tensors {
            out.extend(bytes);
        }
        Ok(out)
    }

    /// Checks that `encoder` (from [`write_encoder`]) gives `body`'s vectors bit for bit on
    /// `texts`, both given the row files `rows`: an error says where they part.
    pub fn check_encoder(
        encoder: &[u8],
        body: &[u8],
        rows: &[(String, Vec<u8>)],
        tokenizer: &[u8],
        options: &ModelOptions,
        texts: &[&str],
    ) -> Result<(), EmbedError> {
        let ours = BertEncoder::from_bytes(encoder, tokenizer, options)?;
        let theirs = TractEmbedder::from_bytes(body, tokenizer, options)?;
        for (name, bytes) in rows {
            ours.add_file(name, bytes)?;
            theirs.add_file(name, bytes)?;
        }
        check_against(&ours, &theirs, texts)
    }

    /// Checks that `ours` gives `theirs`'s vectors bit for bit on `texts`, as queries and as
    /// passages: an error says where they part.
    pub fn check_against(ours: &BertEncoder, theirs: &dyn Embedder, texts: &[&str]) -> Result<(), EmbedError> {
        for (i, text) in texts.iter().enumerate() {
            for kind in [TextKind::Query, TextKind::Passage] {
                let (a, b) = (ours.embed(text, kind)?, theirs.embed(text, kind)?);
                let same = a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits());
                if !same {
                    let cos: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
                    return Err(unsupported(format!(
                        "text {i} gives another vector than the model's (cosine {cos:.7})"
                    )));
                }
            }
        }
        Ok(())
    }
}
