//! The tract runner: [`TractEmbedder`] loads an ONNX sentence model once (parse → rewrite the
//! int8 weights, see `rewrite` → optimise → make runnable) and embeds many texts, from many
//! threads.
//!
//! Pipeline for one text: optional prefix (query or passage) → tokenise (no padding, truncation at
//! the model window) → run the model on one sequence (`input_ids`, `attention_mask` of ones,
//! `token_type_ids` of zeros) → pool (`mean` over the attention mask, or `cls`) → optional L2
//! normalisation. Texts are run one at a time, never padded into a batch, so a text's vector
//! never depends on what it was batched with (the CLI gets its parallelism from threads).

use std::sync::Arc;

use tract_onnx::pb;
use tract_onnx::prelude::*;

use super::rewrite::{inject_constants, prepare_graph};
use super::rows::{body_info, RowTables};
use super::{EmbedError, Embedder, ModelOptions, ModelSpec, ModelTokenizer, OpTime, Pooling, TextKind, Weights};
use crate::digest::sha256_hex;
use crate::vecmath::l2_normalize;

/// The tract implementation of [`Embedder`]. Load once, embed many times, from many threads.
pub struct TractEmbedder {
    /// The plan (with [`Weights::Int8`], the products' int8 weights are held packed by their
    /// `MatMulInt8` operators, and any other int8 weight is passed as an input on every call,
    /// shared, never copied, so the optimiser cannot fold it to f32).
    loaded: LoadedPlan,
    tokenizer: ModelTokenizer,
    spec: ModelSpec,
}

impl std::fmt::Debug for TractEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TractEmbedder")
            .field("spec", &self.spec)
            .field("int8_weights", &!self.loaded.weight_inputs.is_empty())
            .finish()
    }
}

impl TractEmbedder {
    /// Loads a model from the bytes of `model.onnx` and `tokenizer.json`: parse, keep embedding
    /// tables int8, optionally fold the other int8 weights, optimise, make runnable. Reads the
    /// output dimensions by running one probe.
    pub fn from_bytes(model: &[u8], tokenizer: &[u8], options: &ModelOptions) -> Result<Self, EmbedError> {
        let proto = decode_model(model)?;
        let sha = model_sha256(&proto, model)?;
        Self::from_proto(proto, sha, tokenizer, options, options.weights)
    }

    /// Like [`TractEmbedder::from_bytes`], but frees the model bytes as soon as they are parsed,
    /// which lowers the peak memory of a load (WebAssembly memory never shrinks).
    pub fn from_vec(model: Vec<u8>, tokenizer: &[u8], options: &ModelOptions) -> Result<Self, EmbedError> {
        Self::from_vec_with(model, tokenizer, options, options.weights)
    }

    /// Like [`TractEmbedder::from_vec`], holding the weights as `weights` says (whatever
    /// `options.weights` says).
    pub fn from_vec_with(
        model: Vec<u8>,
        tokenizer: &[u8],
        options: &ModelOptions,
        weights: Weights,
    ) -> Result<Self, EmbedError> {
        let proto = decode_model(&model)?;
        let sha = model_sha256(&proto, &model)?;
        drop(model);
        Self::from_proto(proto, sha, tokenizer, options, weights)
    }

    fn from_proto(
        proto: pb::ModelProto,
        model_sha256: String,
        tokenizer: &[u8],
        options: &ModelOptions,
        weights: Weights,
    ) -> Result<Self, EmbedError> {
        // A body packed at five bits computes what `Weights::Int5` does with integer products.
        let weights = if matches!(weights, Weights::Int8 | Weights::Int8A8) && super::int5::is_packed(&proto) {
            Weights::Int5
        } else {
            weights
        };
        let loaded = load_plan(proto, weights)?;
        // After the protobuf is freed, so the tokenizer reuses that memory.
        let tokenizer_impl = ModelTokenizer::from_bytes(tokenizer, options.max_tokens)?;
        let mut embedder = Self {
            loaded,
            tokenizer: tokenizer_impl,
            spec: ModelSpec::new(
                model_sha256,
                sha256_hex(tokenizer),
                0,
                &ModelOptions {
                    weights,
                    ..options.clone()
                },
            ),
        };
        // A body's rows come later: its dimensions are read from the plan's output instead.
        let dims = if embedder.loaded.rows_in_files() {
            embedder.loaded.output_dims()?
        } else {
            embedder.embed("probe", TextKind::Query)?.len()
        };
        if dims == 0 {
            return Err(EmbedError::BadModel {
                reason: "the model's output has no hidden dimensions".into(),
            });
        }
        embedder.spec.dims = dims;
        Ok(embedder)
    }

    /// Adds a row file of a model body (see `rows`): `Ok(false)` if `name` is not one of its row
    /// files (or the model is whole).
    pub fn add_row_file(&self, name: &str, bytes: &[u8]) -> Result<bool, EmbedError> {
        match &self.loaded.row_tables {
            Some(rows) => rows.add_file(name, bytes),
            None => Ok(false),
        }
    }

    /// The row files of a model body, every one (empty for a whole model).
    pub fn row_file_names(&self) -> Vec<String> {
        self.loaded
            .row_tables
            .as_ref()
            .map(RowTables::file_names)
            .unwrap_or_default()
    }

    /// The model's tokenizer.
    pub fn tokenizer(&self) -> &ModelTokenizer {
        &self.tokenizer
    }

    /// Runs the model on token ids and pools, without prefixing or tokenising.
    pub fn embed_ids(&self, ids: &[u32]) -> Result<Vec<f32>, EmbedError> {
        let len = ids.len();
        if len == 0 {
            return Err(EmbedError::Run {
                reason: "no tokens to embed".into(),
            });
        }
        let output = self.loaded.run(ids, None)?;
        let hidden = output.to_plain_array_view::<f32>().map_err(run_error)?;
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
        let mut vector = pool(hidden, self.spec.pooling);
        if self.spec.normalize {
            l2_normalize(&mut vector);
        }
        Ok(vector)
    }
}

/// Pools token vectors (`[tokens, dims]`, at least one token) into one sentence vector.
fn pool(hidden: tract_ndarray::ArrayView2<f32>, pooling: Pooling) -> Vec<f32> {
    match pooling {
        Pooling::Cls => hidden.row(0).to_vec(),
        Pooling::Mean => {
            let mut sum = vec![0f32; hidden.ncols()];
            for row in hidden.rows() {
                for (s, v) in sum.iter_mut().zip(row.iter()) {
                    *s += *v;
                }
            }
            let n = hidden.nrows().max(1) as f32;
            sum.iter_mut().for_each(|s| *s /= n);
            sum
        }
    }
}

impl Embedder for TractEmbedder {
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
        self.add_row_file(name, bytes)
    }

    fn file_names(&self) -> Vec<String> {
        self.row_file_names()
    }

    fn profile(&self, ids: &[u32], rounds: usize, now: &dyn Fn() -> f64) -> Option<Result<Vec<OpTime>, EmbedError>> {
        Some(TractEmbedder::profile(self, ids, rounds, now))
    }
}

impl TractEmbedder {
    /// Times every operator of the plan over `rounds` runs on `ids` (a profile, for BENCHMARKS.md;
    /// `now` is a clock in milliseconds): each kind's nodes and average milliseconds per run,
    /// slowest first, and the time spent outside operators.
    #[doc(hidden)]
    pub fn profile(&self, ids: &[u32], rounds: usize, now: &dyn Fn() -> f64) -> Result<Vec<OpTime>, EmbedError> {
        let mut by_op: std::collections::BTreeMap<String, (usize, f64)> = std::collections::BTreeMap::new();
        let mut outside = 0.0;
        let mut state = self.loaded.plan.spawn().map_err(run_error)?;
        let rounds = rounds.max(1);
        for round in 0..rounds {
            let inputs = self.loaded.inputs(ids, None)?;
            let mut in_ops = 0.0;
            let started = now();
            state
                .run_plan_with_eval(inputs, |ctx, op_state, node, input| {
                    let t = now();
                    let out = tract_onnx::tract_core::plan::eval(ctx, op_state, node, input);
                    let ms = now() - t;
                    in_ops += ms;
                    let entry = by_op.entry(node.op().name().to_string()).or_insert((0, 0.0));
                    if round == 0 {
                        entry.0 += 1;
                    }
                    entry.1 += ms;
                    out
                })
                .map_err(run_error)?;
            outside += now() - started - in_ops;
        }
        let per_run = rounds as f64;
        let mut times: Vec<OpTime> = by_op
            .into_iter()
            .map(|(op, (nodes, ms))| OpTime {
                op,
                nodes,
                ms: ms / per_run,
            })
            .collect();
        times.push(OpTime {
            op: "(outside operators)".into(),
            nodes: 0,
            ms: outside / per_run,
        });
        times.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        Ok(times)
    }
}

/// The plan whose weights are inputs (int8 weights, and f32 weights in WebAssembly). Left to
/// itself, tract would dequantise (or pack) every weight before
/// the first layer runs (nothing orders a weight's `Cast → Mul` after the activations it
/// multiplies), so all the f32 copies would be alive at once: as much memory as folding. This
/// adds, for each weight, a dependency of its first node on the other inputs of the node that
/// consumes the dequantised weight, so each is dequantised just before use and freed after.
#[inline(never)]
fn weights_as_inputs_plan(model: TypedModel, weight_inputs: usize) -> TractResult<Arc<TypedRunnableModel>> {
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
    // tract 0.23.9 offers ordering dependencies only through this deprecated constructor (no
    // replacement yet); it stays confined to this one function.
    #[allow(deprecated)]
    let plan = TypedRunnableModel::build_with_outputs_and_deps(model, &outputs, &deps, &options)?;
    Ok(Arc::new(plan))
}

/// Parses `model.onnx` straight from the bytes (no intermediate copy).
/// A BERT-family ONNX graph made runnable on one sequence of any length.
pub(super) struct LoadedPlan {
    pub(super) plan: Arc<TypedRunnableModel>,
    /// Whether the model takes `token_type_ids` (its third input).
    pub(super) takes_token_type_ids: bool,
    /// The weights passed as inputs on every call (int8 weights; f32 weights in WebAssembly),
    /// shared, never copied.
    pub(super) weight_inputs: Vec<TValue>,
    /// The tables gathered by the token ids, given each run only the rows of its ids (`rows`).
    pub(super) row_tables: Option<RowTables>,
}

fn run_error(e: TractError) -> EmbedError {
    EmbedError::Run {
        reason: format!("{e:#}"),
    }
}

impl LoadedPlan {
    /// Runs the plan on one sequence: `input_ids`, an `attention_mask` of ones and, if the model
    /// takes them, `token_type_ids` (`types`, or zeros); its first output.
    pub(super) fn run(&self, ids: &[u32], types: Option<&[u32]>) -> Result<TValue, EmbedError> {
        let mut outputs = self.plan.run(self.inputs(ids, types)?).map_err(run_error)?;
        if outputs.is_empty() {
            return Err(EmbedError::Run {
                reason: "the model produced no output".into(),
            });
        }
        Ok(outputs.swap_remove(0))
    }

    /// Whether the token tables' rows come from row files (a model body).
    pub(super) fn rows_in_files(&self) -> bool {
        self.row_tables.as_ref().is_some_and(RowTables::in_files)
    }

    /// The last dimension of the plan's first output (`[1, S, dims]`).
    pub(super) fn output_dims(&self) -> Result<usize, EmbedError> {
        let model = self.plan.model();
        let fact = model
            .outlet_fact(model.output_outlets().map_err(run_error)?[0])
            .map_err(run_error)?;
        fact.shape
            .dims()
            .last()
            .and_then(|d| d.as_i64())
            .and_then(|d| usize::try_from(d).ok())
            .ok_or_else(|| EmbedError::BadModel {
                reason: format!(
                    "the model's output has the shape {:?}, not [1, tokens, dims]",
                    fact.shape
                ),
            })
    }

    /// The plan's inputs for one sequence: the ids (renumbered into the rows given, when the
    /// token tables are inputs), the mask, the types, the rows, and the weights given each run.
    fn inputs(&self, ids: &[u32], types: Option<&[u32]>) -> Result<TVec<TValue>, EmbedError> {
        let (renumbered, rows) = match &self.row_tables {
            Some(tables) => tables.gather(ids)?,
            None => (ids.to_vec(), Vec::new()),
        };
        let ids = renumbered.as_slice();
        let len = ids.len();
        let column = |values: &[u32], j: usize| values.get(j).copied().map_or(0, i64::from);
        let input_ids: Tensor = tract_ndarray::Array2::from_shape_fn((1, len), |(_, j)| column(ids, j)).into();
        let mask: Tensor = tract_ndarray::Array2::<i64>::ones((1, len)).into();
        let mut inputs: TVec<TValue> = tvec!(input_ids.into(), mask.into());
        if self.takes_token_type_ids {
            let types: Tensor =
                tract_ndarray::Array2::from_shape_fn((1, len), |(_, j)| types.map_or(0, |t| column(t, j))).into();
            inputs.push(types.into());
        }
        inputs.extend(rows.into_iter().map(TValue::from));
        inputs.extend(self.weight_inputs.iter().cloned());
        Ok(inputs)
    }
}

/// Parses, rewrites (int8 weights and embedding tables, see `rewrite`), optimises and makes
/// runnable a graph whose inputs are `input_ids`, `attention_mask` and optionally
/// `token_type_ids`, each `[1, S]` of i64. Frees the protobuf as soon as it is parsed.
pub(super) fn load_plan(mut proto: pb::ModelProto, weights: Weights) -> Result<LoadedPlan, EmbedError> {
    let bad = |e: TractError| EmbedError::BadModel {
        reason: format!("{e:#}"),
    };
    let onnx = onnx_parser()
        .with_ignore_value_info(true)
        .with_ignore_output_shapes(true);
    let body = body_info(&proto)?;
    // A body packed at five bits holds the values `Weights::Int5` rounds a whole model to.
    super::int5::unpack_graph(&mut proto)?;
    let weights = match weights {
        Weights::Int5 => {
            if let Some(graph) = proto.graph.as_mut() {
                super::int5::round_products(graph);
            }
            Weights::Int8
        }
        other => other,
    };
    let mut prepared = match proto.graph.as_mut() {
        Some(graph) => prepare_graph(graph, weights, body.as_ref()).map_err(bad)?,
        None => Default::default(),
    };
    let row_tables = prepared.row_tables.take();
    let table_count = row_tables.as_ref().map_or(0, |t| t.tables.len());
    // In WebAssembly, f32 weights packed for the kernel on every run, each just before its
    // product, multiply faster than weights packed once at load: a query's products are bound by
    // reading the weights, and freshly packed ones are still in cache (BENCHMARKS.md, the wasm
    // profile). There the folded weights stay inputs, ordered as the int8 ones are. Natively the
    // packing costs more than it saves.
    let repack_per_run = cfg!(target_arch = "wasm32") && weights == Weights::F32;
    let (folded, runtime_weights) = if repack_per_run {
        (Vec::new(), prepared.folded)
    } else {
        (prepared.folded, prepared.runtime_weights)
    };
    let mut inference = onnx.model_for_proto_model(&proto).map_err(bad)?;
    drop(proto);
    inject_constants(&mut inference, folded).map_err(bad)?;
    // The model's own inputs come first, then the token tables, then the int8 weights.
    let input_count = inference
        .inputs
        .len()
        .saturating_sub(runtime_weights.len() + table_count);
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
    if let Some(tables) = &row_tables {
        let rows = inference.sym("R");
        for (i, table) in tables.tables.iter().enumerate() {
            let mut shape: TVec<TDim> = tvec!(rows.to_dim());
            shape.extend(table.row_shape.iter().map(|&d| d.to_dim()));
            inference = inference
                .with_input_fact(input_count + i, InferenceFact::dt_shape(table.datum, shape))
                .map_err(bad)?;
        }
    }
    for (i, (_, tensor)) in runtime_weights.iter().enumerate() {
        inference = inference
            .with_input_fact(
                input_count + table_count + i,
                InferenceFact::dt_shape(tensor.datum_type(), tensor.shape()),
            )
            .map_err(bad)?;
    }
    let typed = inference.into_optimized().map_err(bad)?;
    let plan = if runtime_weights.is_empty() {
        typed.into_runnable().map_err(bad)?
    } else {
        weights_as_inputs_plan(typed, runtime_weights.len()).map_err(bad)?
    };
    Ok(LoadedPlan {
        plan,
        takes_token_type_ids: input_count == 3,
        weight_inputs: runtime_weights
            .into_iter()
            .map(|(_, t)| TValue::from_const(t.into_arc_tensor()))
            .collect(),
        row_tables,
    })
}

/// tract's ONNX parser, knowing the nodes `rewrite` writes (`SextantMatMulInt8`).
pub(super) fn onnx_parser() -> tract_onnx::Onnx {
    let mut onnx = tract_onnx::onnx();
    onnx.op_register
        .insert(super::onnx::INT8_MATMUL_OP, super::qmatmul::parse);
    onnx.op_register
        .insert(super::exact::LAYER_NORM_OP, super::exact::parse_layer_norm);
    onnx.op_register
        .insert(super::exact::SOFTMAX_OP, super::exact::parse_softmax);
    onnx.op_register
        .insert(super::exact::MATMUL_OP, super::exact::parse_matmul);
    onnx
}

/// The digest indexes record for a model: of its bytes, or for a body (`rows`), of the whole
/// model it was cut from.
fn model_sha256(proto: &pb::ModelProto, bytes: &[u8]) -> Result<String, EmbedError> {
    Ok(match body_info(proto)? {
        Some(body) => body.source_sha256,
        None => sha256_hex(bytes),
    })
}

pub(super) fn decode_model(model: &[u8]) -> Result<pb::ModelProto, EmbedError> {
    use prost::Message;
    pb::ModelProto::decode(model).map_err(|e| EmbedError::BadModel {
        reason: format!("not an ONNX model ({e})"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::rewrite::tests::{tiny_int8_model, value_info};
    use crate::vecmath::dot;

    /// A word-level tokenizer over the tiny model's five ids: `[CLS]` 0, `[SEP]` 1, `[UNK]` 2,
    /// `lamp` 3, `fog` 4; lower case, split on whitespace, `[CLS] … [SEP]` around every text.
    const TOKENIZER: &str = r#"{
      "version": "1.0", "truncation": null, "padding": null,
      "added_tokens": [
        {"id": 0, "content": "[CLS]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
        {"id": 1, "content": "[SEP]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
        {"id": 2, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
      ],
      "normalizer": {"type": "Lowercase"},
      "pre_tokenizer": {"type": "Whitespace"},
      "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [0], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [1], "tokens": ["[SEP]"]}}},
      "decoder": null,
      "model": {"type": "WordLevel", "vocab": {"[CLS]": 0, "[SEP]": 1, "[UNK]": 2, "lamp": 3, "fog": 4}, "unk_token": "[UNK]"}
    }"#;

    /// The tiny model with the `attention_mask` input every sentence model takes.
    fn model_bytes() -> Vec<u8> {
        use prost::Message;
        let mut proto = tiny_int8_model();
        if let Some(graph) = proto.graph.as_mut() {
            graph.input.push(value_info(
                "attention_mask",
                pb::tensor_proto::DataType::Int64,
                &[Some(1), None],
            ));
        }
        proto.encode_to_vec()
    }

    /// Row `id` of the tiny model's output, by hand: `emb_q[id] · emb_s[id]` times `w_q · w_s`.
    fn row(id: usize) -> [f32; 3] {
        let emb_q = [[1.0, 2.0], [-3.0, 4.0], [5.0, -6.0], [7.0, 8.0], [127.0, -128.0]];
        let emb_s = [0.5, 0.25, 2.0, 1.0, 0.125];
        let w = [[0.1, -0.2, 0.6], [0.3, 0.0, -0.6]];
        let h = [emb_q[id][0] * emb_s[id], emb_q[id][1] * emb_s[id]];
        [0, 1, 2].map(|j| h[0] * w[0][j] + h[1] * w[1][j])
    }

    fn options(pooling: Pooling, normalize: bool) -> ModelOptions {
        ModelOptions {
            max_tokens: 4,
            pooling,
            normalize,
            ..Default::default()
        }
    }

    #[test]
    fn embeds_a_tiny_model_with_mean_pooling_and_normalisation() {
        let embedder =
            TractEmbedder::from_bytes(&model_bytes(), TOKENIZER.as_bytes(), &options(Pooling::Mean, true)).unwrap();
        assert_eq!(embedder.spec().dims, 3);
        assert_eq!(embedder.tokenizer().encode("Fog lamp").unwrap(), [0, 4, 3, 1]);
        let mut want = [0f32; 3];
        for id in [0, 4, 3, 1] {
            for (w, r) in want.iter_mut().zip(row(id)) {
                *w += r / 4.0;
            }
        }
        l2_normalize(&mut want);
        let got = embedder.embed("Fog lamp", TextKind::Query).unwrap();
        assert!(dot(&got, &want) > 0.99999, "{got:?} vs {want:?}");
        // The window is 4 tokens: a longer text is cut to [CLS] fog lamp [SEP].
        assert_eq!(embedder.embed("fog lamp lamp fog", TextKind::Query).unwrap(), got);
    }

    #[test]
    fn cls_pooling_without_normalisation_is_the_first_row() {
        let embedder =
            TractEmbedder::from_bytes(&model_bytes(), TOKENIZER.as_bytes(), &options(Pooling::Cls, false)).unwrap();
        let got = embedder.embed("lamp", TextKind::Passage).unwrap();
        let want = row(0);
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
        }
    }

    #[test]
    fn int8_weights_give_the_f32_vectors() {
        let f32s =
            TractEmbedder::from_bytes(&model_bytes(), TOKENIZER.as_bytes(), &options(Pooling::Mean, true)).unwrap();
        let int8 = TractEmbedder::from_vec_with(
            model_bytes(),
            TOKENIZER.as_bytes(),
            &options(Pooling::Mean, true),
            Weights::Int8,
        )
        .unwrap();
        for text in ["fog", "lamp fog", "unknown words"] {
            let (a, b) = (
                f32s.embed(text, TextKind::Query).unwrap(),
                int8.embed(text, TextKind::Query).unwrap(),
            );
            assert!(dot(&a, &b) > 0.99999, "{text}: {a:?} vs {b:?}");
        }
    }

    #[test]
    fn bad_files_are_typed_errors() {
        let not_onnx =
            TractEmbedder::from_bytes(b"\xff\xff not a model", TOKENIZER.as_bytes(), &ModelOptions::default());
        assert!(matches!(not_onnx, Err(EmbedError::BadModel { .. })), "{not_onnx:?}");
        let bad_tokenizer = TractEmbedder::from_bytes(&model_bytes(), b"{}", &ModelOptions::default());
        assert!(matches!(bad_tokenizer, Err(EmbedError::BadTokenizer { .. })));
        let one_input = {
            use prost::Message;
            tiny_int8_model().encode_to_vec()
        };
        let err = TractEmbedder::from_bytes(&one_input, TOKENIZER.as_bytes(), &ModelOptions::default()).unwrap_err();
        assert!(err.to_string().contains("1 inputs"), "{err}");
        assert_eq!(err.code(), crate::error_code::ErrorCode::BadModel);
    }

    #[test]
    fn a_model_body_embeds_as_the_whole_model_once_its_row_files_are_added() {
        use crate::embed::rows::{split_model_with, ROW_FILE_KIND};
        let whole_bytes = model_bytes();
        // Two rows a file: the tiny model's five ids in three files (ids 0–1, 2–3, 4).
        let parts = split_model_with(&whole_bytes, 2).unwrap();
        assert_eq!(parts.rows, 5);
        let names: Vec<String> = parts.row_files.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names.len(), 3);
        assert!(names
            .iter()
            .all(|n| n.starts_with(&format!("{ROW_FILE_KIND}.")) && crate::embed::rows::is_row_file(n)));
        // Each row: two int8 values and a per-row f32 scale.
        assert_eq!(
            parts.row_files.iter().map(|(_, b)| b.len()).collect::<Vec<_>>(),
            [12, 12, 6]
        );
        assert!(crate::embed::rows::may_be_body(&parts.body) && !crate::embed::rows::may_be_body(&whole_bytes));
        for weights in [Weights::Int8, Weights::F32] {
            let opts = options(Pooling::Mean, true);
            let whole =
                TractEmbedder::from_vec_with(whole_bytes.clone(), TOKENIZER.as_bytes(), &opts, weights).unwrap();
            let body = TractEmbedder::from_vec_with(parts.body.clone(), TOKENIZER.as_bytes(), &opts, weights).unwrap();
            assert_eq!(
                body.spec(),
                whole.spec(),
                "the body is the whole model's spec, digest included"
            );
            assert_eq!(body.row_file_names(), names);
            assert!(whole.row_file_names().is_empty());
            // "fog lamp" is [CLS] fog lamp [SEP]: ids 0, 4, 3, 1, in all three files.
            match body.embed("fog lamp", TextKind::Query) {
                Err(EmbedError::MissingRows { files }) => assert_eq!(files, names),
                other => panic!("{other:?}"),
            }
            // A damaged file is refused by name; a file the model does not know is not its.
            let (first, bytes) = &parts.row_files[0];
            let mut damaged = bytes.clone();
            damaged[0] ^= 1;
            let e = body.add_file(first, &damaged).unwrap_err();
            assert!(
                matches!(e, EmbedError::BadModel { .. }) && e.to_string().contains(first.as_str()),
                "{e}"
            );
            assert!(body.add_file(first, &bytes[..6]).is_err(), "a truncated file");
            assert!(!body.add_file("rows.0123456789abcdef.bin", bytes).unwrap());
            assert!(
                !whole.add_file(first, bytes).unwrap(),
                "a whole model takes no row files"
            );
            // With the first file, "fog" ([CLS] fog [SEP]) still needs the last.
            assert!(body.add_file(first, bytes).unwrap());
            match body.embed("fog", TextKind::Query) {
                Err(EmbedError::MissingRows { files }) => assert_eq!(files, [names[2].clone()]),
                other => panic!("{other:?}"),
            }
            for (name, bytes) in &parts.row_files[1..] {
                assert!(body.add_file(name, bytes).unwrap());
            }
            for text in ["fog lamp", "fog", "lamp lamp fog", "unknown words"] {
                let (a, b) = (
                    whole.embed(text, TextKind::Query).unwrap(),
                    body.embed(text, TextKind::Query).unwrap(),
                );
                assert_eq!(
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "{weights:?} {text}"
                );
            }
        }
    }

    #[test]
    fn a_crafted_body_is_a_typed_error_at_load_never_a_panic_or_a_huge_allocation() {
        use prost::Message;
        let body = crate::embed::rows::split_model_with(&model_bytes(), 2).unwrap().body;
        let opts = options(Pooling::Mean, true);
        let crafted = |edit: &dyn Fn(&mut pb::ModelProto)| {
            let mut proto = pb::ModelProto::decode(body.as_slice()).unwrap();
            edit(&mut proto);
            TractEmbedder::from_vec_with(proto.encode_to_vec(), TOKENIZER.as_bytes(), &opts, Weights::Int8)
        };
        let meta = |key: &'static str, value: &'static str| {
            move |p: &mut pb::ModelProto| {
                for m in &mut p.metadata_props {
                    if m.key == key {
                        m.value = value.to_string();
                    }
                }
            }
        };
        for (what, edit) in [
            (
                "per_file",
                Box::new(meta("sextant.rows.per_file", "99999999999999")) as Box<dyn Fn(&mut pb::ModelProto)>,
            ),
            ("per_file 0", Box::new(meta("sextant.rows.per_file", "0"))),
            (
                "files",
                Box::new(meta("sextant.rows.files", "rows.0123456789abcdef.bin")),
            ),
            (
                "a path",
                Box::new(meta(
                    "sextant.rows.files",
                    "../x.bin,rows.0123456789abcdef.bin,rows.0123456789abcdee.bin",
                )),
            ),
            ("source", Box::new(meta("sextant.rows.source_sha256", "xyz"))),
            (
                "dims",
                Box::new(|p: &mut pb::ModelProto| {
                    for t in &mut p.graph.as_mut().unwrap().initializer {
                        if t.name == "emb_q" {
                            t.dims = vec![5, 1 << 40];
                        }
                    }
                }),
            ),
        ] {
            let e = crafted(&*edit).expect_err(what);
            assert_eq!(e.code(), crate::error_code::ErrorCode::BadModel, "{what}: {e}");
        }
    }

    #[test]
    fn what_cannot_be_split_says_why() {
        use crate::embed::rows::split_model;
        let body = split_model(&model_bytes()).unwrap().body;
        let e = split_model(&body).unwrap_err().to_string();
        assert!(e.contains("already a body"), "{e}");
        // A model whose ids are also read by another node cannot renumber them.
        let mut proto = tiny_int8_model();
        let graph = proto.graph.as_mut().unwrap();
        graph.node.push(crate::embed::rewrite::node(
            "Identity",
            &["input_ids"],
            "ids_again",
            vec![],
        ));
        let bytes = {
            use prost::Message;
            proto.encode_to_vec()
        };
        let e = split_model(&bytes).unwrap_err().to_string();
        assert!(e.contains("no table is gathered"), "{e}");
        // …and still embeds as before, its tables held whole.
        let whole_bytes = {
            use prost::Message;
            let mut p = proto.clone();
            p.graph.as_mut().unwrap().input.push(value_info(
                "attention_mask",
                pb::tensor_proto::DataType::Int64,
                &[Some(1), None],
            ));
            p.encode_to_vec()
        };
        let embedder =
            TractEmbedder::from_bytes(&whole_bytes, TOKENIZER.as_bytes(), &options(Pooling::Mean, true)).unwrap();
        assert_eq!(embedder.embed("fog", TextKind::Query).unwrap().len(), 3);
        assert!(split_model(b"not a model").is_err());
    }

    #[test]
    fn pooling_by_hand() {
        let hidden = tract_ndarray::arr2(&[[1.0f32, 2.0], [3.0, 6.0]]);
        assert_eq!(pool(hidden.view(), Pooling::Mean), [2.0, 4.0]);
        assert_eq!(pool(hidden.view(), Pooling::Cls), [1.0, 2.0]);
    }
}
