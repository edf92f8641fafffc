//! ONNX graph surgery done at load, before tract parses the model, so an int8-quantised model
//! (all-MiniLM-L6-v2 int8 dequantises its weights inside the graph: `Mul(Cast(int8 q), scale)`)
//! costs as little memory as it can:
//!
//! - embedding tables stay int8: the rows a text uses are gathered, then dequantised
//!   ([`dequantize_gathered_rows`]);
//! - with [`Weights::F32`] every other dequantisation is folded once into an f32 tensor and taken
//!   out of the protobuf ([`extract_folded_weights`], then [`inject_constants`] after parsing);
//! - with [`Weights::Int8`] each matrix product of an int8 weight with per-column scales becomes
//!   one `SextantMatMulInt8` node holding the weight ([`int8_matmuls`]; tract parses it into
//!   `qmatmul::MatMulInt8`, integer products), taking in the bias and GELU that follow it
//!   ([`absorb_bias_and_gelu`]); any other int8 tensor becomes an extra graph input, so nothing
//!   folds it ([`int8_weights_as_inputs`]), with a per-column scale moved after its product
//!   ([`scale_after_matmul`]): it multiplies the small `[tokens, N]` product instead of the whole
//!   `[K, N]` weight on every run.
//!
//! All of it is tested here on tiny hand-built graphs, run by tract against the unrewritten graph.

use std::collections::{HashMap, HashSet};

use tract_onnx::pb;
use tract_onnx::prelude::*;

use super::onnx::proto_tensor;
use super::Weights;

/// What [`prepare_graph`] took out of the graph.
#[derive(Debug, Default)]
pub(super) struct Prepared {
    /// [`Weights::F32`]: folded f32 weights, by the name of the graph input that replaced them.
    pub folded: Vec<(String, Tensor)>,
    /// [`Weights::Int8`]: the int8 weights, appended as graph inputs in this order.
    pub runtime_weights: Vec<(String, Tensor)>,
    /// The tables gathered by the token ids, graph inputs after the model's own and before
    /// `runtime_weights` (`rows::RowTables`).
    pub row_tables: Option<super::rows::RowTables>,
}

/// Rewrites a parsed `model.onnx` for `weights`: embedding tables gathered as int8, the other
/// int8 weights folded ([`Weights::F32`]) or turned into inputs ([`Weights::Int8`]), and the
/// initializers no node reads any more dropped. The tables gathered by the token ids become inputs
/// given the rows of each run (`rows::RowTables`), from the graph or, for a model body (`body`),
/// from its row files.
pub(super) fn prepare_graph(
    graph: &mut pb::GraphProto,
    weights: Weights,
    body: Option<&super::rows::BodyInfo>,
) -> TractResult<Prepared> {
    const RESERVED: [&str; 4] = [
        super::onnx::INT8_MATMUL_OP,
        super::exact::LAYER_NORM_OP,
        super::exact::SOFTMAX_OP,
        super::exact::MATMUL_OP,
    ];
    if let Some(node) = graph.node.iter().find(|n| RESERVED.contains(&n.op_type.as_str())) {
        return Err(TractError::msg(format!(
            "node {:?} uses the op type {}, which sextant reserves for its own operators; rename it",
            node.name, node.op_type
        )));
    }
    dequantize_gathered_rows(graph);
    let mut prepared = Prepared {
        row_tables: super::rows::RowTables::take(graph, body)?,
        ..Default::default()
    };
    match weights {
        Weights::F32 => prepared.folded = extract_folded_weights(graph)?,
        // `Weights::Int5` is `Weights::Int8` once its weights are rounded (`int5`);
        // `Weights::Int8A8` is the same products on rows rounded to bytes.
        Weights::Int8 | Weights::Int5 | Weights::Int8A8 => {
            int8_matmuls(graph)?;
            if weights == Weights::Int8A8 {
                for node in graph
                    .node
                    .iter_mut()
                    .filter(|n| n.op_type == super::onnx::INT8_MATMUL_OP)
                {
                    node.attribute.push(pb::AttributeProto {
                        name: "rows".into(),
                        r#type: pb::attribute_proto::AttributeType::String as i32,
                        s: b"bytes".to_vec(),
                        ..Default::default()
                    });
                }
            }
            exact_ops(graph);
            scale_after_matmul(graph);
            prepared.runtime_weights = int8_weights_as_inputs(graph)?;
        }
    }
    drop_unread_initializers(graph);
    Ok(prepared)
}

/// [`Weights::Int8`]: renames the nodes `exact::Exact` computes with one fixed order of
/// operations (the same bits on every machine): layer normalisation and softmax over the last
/// axis (`axis` -1) with only their first output read, and products whose two inputs are
/// computed (attention's; the products with weights are `SextantMatMulInt8` by now).
fn exact_ops(graph: &mut pb::GraphProto) {
    let initializers: HashSet<String> = graph.initializer.iter().map(|t| t.name.clone()).collect();
    let last_axis = |node: &pb::NodeProto| node.attribute.iter().any(|a| a.name == "axis" && a.i == -1);
    for node in &mut graph.node {
        let one_output = node.output.iter().skip(1).all(String::is_empty);
        let renamed = match node.op_type.as_str() {
            "LayerNormalization" if last_axis(node) && one_output && node.input.len() == 3 => {
                super::exact::LAYER_NORM_OP
            }
            "Softmax" if last_axis(node) => super::exact::SOFTMAX_OP,
            "MatMul" if node.input.iter().all(|i| !initializers.contains(i)) => super::exact::MATMUL_OP,
            _ => continue,
        };
        node.op_type = renamed.to_string();
        node.output.truncate(1);
        node.attribute.retain(|a| a.name == "epsilon");
    }
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
    let initializers: HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let mut consumers: HashMap<&str, usize> = HashMap::new();
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

fn remove_nodes(graph: &mut pb::GraphProto, drop: &HashSet<usize>) {
    let mut index = 0;
    graph.node.retain(|_| {
        let keep = !drop.contains(&index);
        index += 1;
        keep
    });
}

/// A node named after its one output.
pub(super) fn node(op: &str, inputs: &[&str], output: &str, attribute: Vec<pb::AttributeProto>) -> pb::NodeProto {
    pb::NodeProto {
        op_type: op.to_string(),
        name: output.to_string(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.to_string()],
        attribute,
        ..Default::default()
    }
}

/// A model of one graph, at the ONNX opset the hand-built test models use (13).
pub(super) fn model_of(graph: pb::GraphProto) -> pb::ModelProto {
    pb::ModelProto {
        ir_version: 7,
        opset_import: vec![pb::OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
        graph: Some(graph),
        ..Default::default()
    }
}

/// Embedding tables (`Gather(Mul(Cast(q), per-row scale), ids)`) stay int8: the rows a text
/// uses are gathered first and dequantised after (`Mul(Cast(Gather(q, ids)), Gather(scale,
/// ids))`), the same values. all-MiniLM's word table is 30522 × 384: 11.7 MB as int8, 47 MB as f32.
pub(super) fn dequantize_gathered_rows(graph: &mut pb::GraphProto) {
    let mut drop_nodes = HashSet::new();
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
    let mut drop_nodes = HashSet::new();
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

/// Declares a graph input of the given ONNX element type and a shape of rows (`R`, as many as
/// a run gives) of `row_shape` (a table gathered by the token ids, `rows::RowTables`).
pub(super) fn tensor_input_rows(name: &str, elem_type: i32, row_shape: &[usize]) -> pb::ValueInfoProto {
    let mut input = tensor_input(name, elem_type, row_shape);
    if let Some(pb::type_proto::Value::TensorType(t)) = input.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        if let Some(shape) = t.shape.as_mut() {
            shape.dim.insert(
                0,
                pb::tensor_shape_proto::Dimension {
                    value: Some(pb::tensor_shape_proto::dimension::Value::DimParam("R".into())),
                    ..Default::default()
                },
            );
        }
    }
    input
}

/// The tract type of an ONNX element type that tables may have (int8, uint8, f32).
pub(super) fn datum_of(elem_type: i32) -> Option<DatumType> {
    use pb::tensor_proto::DataType;
    match elem_type {
        t if t == DataType::Int8 as i32 => Some(DatumType::I8),
        t if t == DataType::Uint8 as i32 => Some(DatumType::U8),
        t if t == DataType::Float as i32 => Some(DatumType::F32),
        _ => None,
    }
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
    // The weights cast to f32 inside the graph: scaled after the cast, or after their product.
    let cast: Vec<String> = graph
        .node
        .iter()
        .filter(|n| n.op_type == "Cast" && n.input.len() == 1)
        .map(|n| n.input[0].clone())
        .collect();
    for q in cast {
        if out.iter().any(|(name, _)| *name == q) {
            continue;
        }
        let Some(at) = graph.initializer.iter().position(|t| t.name == q) else {
            continue;
        };
        let Some(tensor) = proto_tensor(&graph.initializer[at])? else {
            continue;
        };
        if !matches!(tensor.datum_type(), DatumType::I8 | DatumType::U8) {
            continue;
        }
        let proto = graph.initializer.swap_remove(at);
        // Old IR versions also list initializers as inputs: keep the weights after the real ones.
        graph.input.retain(|i| i.name != q);
        graph.input.push(tensor_input(&q, proto.data_type, tensor.shape()));
        out.push((q, tensor));
    }
    Ok(out)
}

/// `MatMul(x, Mul(Cast(q), s))`, with `q` a 2-D int8 initializer and `s` one scale per column
/// (`[N]`, `[1, N]` or one value), becomes one `SextantMatMulInt8(x)` node holding `q` and `s` as
/// tensor attributes, which tract parses into [`MatMulInt8`](super::qmatmul::MatMulInt8): the
/// weights stay int8, packed once at load, and the product runs in integers. `q` moves out of the
/// initializers (copied only if another node reads it too).
fn int8_matmuls(graph: &mut pb::GraphProto) -> TractResult<()> {
    use pb::tensor_proto::DataType;
    let mut replaced: Vec<(usize, usize, usize, pb::NodeProto)> = Vec::new();
    for d in dequant_pairs(graph) {
        let Some(matmul) = scaled_product(graph, &d) else {
            continue;
        };
        let product = &graph.node[matmul];
        let (x, output) = (product.input[0].clone(), product.output[0].clone());
        let (Some(q_at), Some(scale)) = (
            graph.initializer.iter().position(|t| t.name == d.q),
            graph.initializer.iter().find(|t| t.name == d.scale),
        ) else {
            continue;
        };
        let q = &graph.initializer[q_at];
        let columns = q.dims.get(1).copied().unwrap_or(0);
        // Fewer columns than a panel would pack mostly padding: such a weight stays an input.
        if q.data_type != DataType::Int8 as i32
            || columns < sextant_kernels::PANEL as i64
            || scale.data_type != DataType::Float as i32
        {
            continue;
        }
        let mut scale = scale.clone();
        let read_elsewhere = graph
            .node
            .iter()
            .enumerate()
            .any(|(i, n)| i != d.cast_at && n.input.contains(&d.q));
        let mut q = if read_elsewhere {
            q.clone()
        } else {
            // Old IR versions also list initializers as inputs.
            graph.input.retain(|i| i.name != d.q);
            graph.initializer.swap_remove(q_at)
        };
        q.name = "q".into();
        scale.name = "scale".into();
        let tensor_attribute = |name: &str, t: pb::TensorProto| pb::AttributeProto {
            name: name.into(),
            r#type: pb::attribute_proto::AttributeType::Tensor as i32,
            t: Some(t),
            ..Default::default()
        };
        let fused = node(
            super::onnx::INT8_MATMUL_OP,
            &[&x],
            &output,
            vec![tensor_attribute("q", q), tensor_attribute("scale", scale)],
        );
        replaced.push((d.cast_at, d.mul_at, matmul, fused));
    }
    let mut drop = HashSet::new();
    for (cast_at, mul_at, matmul, fused) in replaced {
        drop.extend([cast_at, mul_at]);
        graph.node[matmul] = fused;
    }
    remove_nodes(graph, &drop);
    absorb_bias_and_gelu(graph);
    Ok(())
}

/// The nodes reading `name`.
fn readers(graph: &pb::GraphProto, name: &str) -> Vec<usize> {
    (0..graph.node.len())
        .filter(|&i| graph.node[i].input.iter().any(|n| n == name))
        .collect()
}

/// The f32 values of an initializer, if `name` is one.
fn initializer_values(graph: &pb::GraphProto, name: &str) -> Option<(Vec<i64>, Vec<f32>)> {
    let t = graph.initializer.iter().find(|t| t.name == name)?;
    let tensor = proto_tensor(t).ok()??;
    let values = tensor
        .cast_to::<f32>()
        .ok()?
        .to_plain_array_view::<f32>()
        .ok()?
        .iter()
        .copied()
        .collect();
    Some((t.dims.clone(), values))
}

/// Takes into each `SextantMatMulInt8` node the bias added right after it (`Add(y, b)`, `b` an
/// initializer of `N` values) and then a GELU written out as BERT exports do
/// (`y · (erf(y / √2) + 1) · 0.5`, as `Div(y, √2)` or `Mul(y, 1/√2)`, `Erf`, `Add(·, 1)`, then
/// `Mul(·, 0.5)` and `Mul(y, ·)` in either order), so they run in the product's epilogue.
fn absorb_bias_and_gelu(graph: &mut pb::GraphProto) {
    // Shapes first, so no large initializer is decoded just to be turned down.
    let is_scalar = |graph: &pb::GraphProto, name: &str, want: f32| {
        let one = |t: &&pb::TensorProto| t.name == name && t.dims.iter().all(|&d| d == 1);
        graph.initializer.iter().find(one).is_some()
            && initializer_values(graph, name)
                .is_some_and(|(_, v)| v.len() == 1 && (v[0] - want).abs() <= 1e-6 * want.abs().max(1.0))
    };
    // The other input of a two-input node, given one.
    let other = |node: &pb::NodeProto, one: &str| -> Option<String> {
        match node.input.as_slice() {
            [a, b] if a == one => Some(b.clone()),
            [a, b] if b == one => Some(a.clone()),
            _ => None,
        }
    };
    // A node's one output (None for any other count: a malformed graph is left as it is).
    let out = |graph: &pb::GraphProto, i: usize| -> Option<String> {
        match graph.node[i].output.as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        }
    };
    let products: Vec<usize> = (0..graph.node.len())
        .filter(|&i| graph.node[i].op_type == super::onnx::INT8_MATMUL_OP)
        .collect();
    let mut drop = HashSet::new();
    for at in products {
        let columns = graph.node[at]
            .attribute
            .iter()
            .find(|a| a.name == "q")
            .and_then(|a| a.t.as_ref())
            .and_then(|t| t.dims.get(1).copied())
            .unwrap_or(0);
        // The bias.
        let Some(y) = out(graph, at) else { continue };
        let [add] = readers(graph, &y)[..] else { continue };
        if graph.node[add].op_type != "Add" {
            continue;
        }
        let Some(bias) = other(&graph.node[add], &y) else {
            continue;
        };
        // `[N]` only: a bias of higher rank would broadcast the product to its rank.
        if !graph.initializer.iter().any(|t| t.name == bias && t.dims == [columns]) {
            continue;
        }
        let Some((_, values)) = initializer_values(graph, &bias) else {
            continue;
        };
        let Some(h) = out(graph, add) else { continue };
        let mut absorbed = vec![add];
        let mut output = h.clone();
        // GELU on h: find the chain, all of it read only inside the chain.
        let gelu = (|| {
            let uses = readers(graph, &h);
            let [first, second] = uses[..] else { return None };
            let (div, last) = match (graph.node[first].op_type.as_str(), graph.node[second].op_type.as_str()) {
                ("Div", "Mul") => (first, second),
                ("Mul", "Div") => (second, first),
                ("Mul", "Mul") => {
                    let by_root = |i: usize| {
                        is_scalar(
                            graph,
                            &other(&graph.node[i], &h).unwrap_or_default(),
                            std::f32::consts::FRAC_1_SQRT_2,
                        )
                    };
                    if by_root(first) {
                        (first, second)
                    } else {
                        (second, first)
                    }
                }
                _ => return None,
            };
            let scaled = match graph.node[div].op_type.as_str() {
                "Div"
                    if graph.node[div].input.first() == Some(&h)
                        && is_scalar(graph, graph.node[div].input.get(1)?, std::f32::consts::SQRT_2) =>
                {
                    out(graph, div)?
                }
                "Mul" if is_scalar(graph, &other(&graph.node[div], &h)?, std::f32::consts::FRAC_1_SQRT_2) => {
                    out(graph, div)?
                }
                _ => return None,
            };
            let [erf] = readers(graph, &scaled)[..] else {
                return None;
            };
            (graph.node[erf].op_type == "Erf").then_some(())?;
            let erf_out = out(graph, erf)?;
            let [plus] = readers(graph, &erf_out)[..] else {
                return None;
            };
            (graph.node[plus].op_type == "Add" && is_scalar(graph, &other(&graph.node[plus], &erf_out)?, 1.0))
                .then_some(())?;
            let plus_out = out(graph, plus)?;
            let [next] = readers(graph, &plus_out)[..] else {
                return None;
            };
            (graph.node[next].op_type == "Mul").then_some(())?;
            let next_out = out(graph, next)?;
            // Either Mul(0.5, ·) then Mul(h, ·), or Mul(h, ·) then Mul(·, 0.5).
            if next == last {
                // Mul(h, erf + 1), then a Mul by 0.5.
                let [half] = readers(graph, &next_out)[..] else {
                    return None;
                };
                (graph.node[half].op_type == "Mul" && is_scalar(graph, &other(&graph.node[half], &next_out)?, 0.5))
                    .then_some(())?;
                Some((vec![div, erf, plus, next, half], out(graph, half)?))
            } else {
                is_scalar(graph, &other(&graph.node[next], &plus_out)?, 0.5).then_some(())?;
                let [product] = readers(graph, &next_out)[..] else {
                    return None;
                };
                (product == last && other(&graph.node[last], &next_out)? == h).then_some(())?;
                Some((vec![div, erf, plus, next, last], out(graph, last)?))
            }
        })();
        let node = &mut graph.node[at];
        if let Some((chain, out)) = gelu {
            absorbed.extend(chain);
            output = out;
            node.attribute.push(pb::AttributeProto {
                name: "activation".into(),
                r#type: pb::attribute_proto::AttributeType::String as i32,
                s: b"gelu".to_vec(),
                ..Default::default()
            });
        }
        node.attribute.push(pb::AttributeProto {
            name: "bias".into(),
            r#type: pb::attribute_proto::AttributeType::Tensor as i32,
            t: Some(float_tensor("bias", &[columns], &values)),
            ..Default::default()
        });
        node.output[0] = output;
        drop.extend(absorbed);
    }
    remove_nodes(graph, &drop);
}

/// An f32 initializer.
fn float_tensor(name: &str, dims: &[i64], values: &[f32]) -> pb::TensorProto {
    pb::TensorProto {
        name: name.into(),
        data_type: pb::tensor_proto::DataType::Float as i32,
        dims: dims.to_vec(),
        raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..Default::default()
    }
}

/// The int8 weights of products with one scale per column (`MatMul(x, Mul(Cast(q), s))`, what
/// [`int8_matmuls`] takes): the weights `int5` rounds and packs.
pub(super) fn product_weights(graph: &pb::GraphProto) -> Vec<String> {
    let int8: HashSet<&str> = graph
        .initializer
        .iter()
        .filter(|t| t.data_type == pb::tensor_proto::DataType::Int8 as i32 && t.dims.len() == 2)
        .map(|t| t.name.as_str())
        .collect();
    dequant_pairs(graph)
        .into_iter()
        .filter(|d| int8.contains(d.q.as_str()) && scaled_product(graph, d).is_some())
        .map(|d| d.q)
        .collect()
}

/// The `MatMul(x, w)` that is the only reader of the dequantised weight `w = Mul(Cast(q), s)`,
/// when `q` is 2-D and `s` one scale per column of it (`[N]`, `[1, N]` or one value), so the scale
/// can be applied to the product instead: what [`int8_matmuls`] and [`scale_after_matmul`] take.
fn scaled_product(graph: &pb::GraphProto, d: &Dequant) -> Option<usize> {
    let dims = |name: &str| {
        graph
            .initializer
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.dims.as_slice())
    };
    let (q, scale) = (dims(&d.q)?, dims(&d.scale)?);
    let per_column = match (q, scale) {
        ([_, _], [] | [1] | [1, 1]) => true,
        ([_, columns], [n] | [1, n]) => n == columns,
        _ => false,
    };
    let [matmul] = readers(graph, &d.output)[..] else {
        return None;
    };
    let node = &graph.node[matmul];
    let fits = per_column
        && node.op_type == "MatMul"
        && node.input.len() == 2
        && node.output.len() == 1
        && node.input[1] == d.output
        && node.input[0] != d.output;
    fits.then_some(matmul)
}

/// `MatMul(x, Mul(Cast(q), s))`, with `s` one scale per column of `q` (`[1, N]`, `[N]` or one
/// value), becomes `Mul(MatMul(x, Cast(q)), s)`: the same product (`x·(q∘s) = (x·q)∘s` column by
/// column), but the scale multiplies the `[tokens, N]` result instead of the `[K, N]` weight,
/// which [`Weights::Int8`] dequantises on every run.
fn scale_after_matmul(graph: &mut pb::GraphProto) {
    // One at a time: each move shifts the nodes after it.
    loop {
        let found = dequant_pairs(graph)
            .into_iter()
            .find_map(|d| scaled_product(graph, &d).map(|matmul| (d, matmul)));
        let Some((d, matmul)) = found else { break };
        let cast_out = graph.node[d.cast_at].output[0].clone();
        let out = graph.node[matmul].output[0].clone();
        let product = format!("{out}__unscaled");
        graph.node[matmul].input[1] = cast_out;
        graph.node[matmul].output[0] = product.clone();
        let mut mul = graph.node.remove(d.mul_at);
        mul.input = vec![product, d.scale];
        mul.output = vec![out];
        let after = if d.mul_at < matmul { matmul } else { matmul + 1 };
        graph.node.insert(after, mul);
    }
}

/// Turns the graph inputs [`extract_folded_weights`] declared into constants holding the
/// folded tensors (moved, not copied); the model's real inputs stay inputs.
pub(super) fn inject_constants(model: &mut InferenceModel, constants: Vec<(String, Tensor)>) -> TractResult<()> {
    if constants.is_empty() {
        return Ok(());
    }
    let mut constants: HashMap<String, Tensor> = constants.into_iter().collect();
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
    let read: HashSet<String> = graph.node.iter().flat_map(|n| n.input.iter().cloned()).collect();
    let outputs: HashSet<String> = graph.output.iter().map(|o| o.name.clone()).collect();
    graph
        .initializer
        .retain(|t| read.contains(&t.name) || outputs.contains(&t.name));
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use pb::tensor_proto::DataType;

    fn tensor(name: &str, data_type: DataType, dims: &[i64], raw_data: Vec<u8>) -> pb::TensorProto {
        pb::TensorProto {
            name: name.into(),
            data_type: data_type as i32,
            dims: dims.to_vec(),
            raw_data,
            ..Default::default()
        }
    }

    fn int8(name: &str, dims: &[i64], values: &[i8]) -> pb::TensorProto {
        tensor(name, DataType::Int8, dims, values.iter().map(|&v| v as u8).collect())
    }

    fn float(name: &str, dims: &[i64], values: &[f32]) -> pb::TensorProto {
        tensor(
            name,
            DataType::Float,
            dims,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    fn cast_to_float(input: &str, output: &str) -> pb::NodeProto {
        node(
            "Cast",
            &[input],
            output,
            vec![pb::AttributeProto {
                name: "to".into(),
                r#type: pb::attribute_proto::AttributeType::Int as i32,
                i: DataType::Float as i64,
                ..Default::default()
            }],
        )
    }

    pub(in crate::embed) fn value_info(name: &str, elem_type: DataType, dims: &[Option<i64>]) -> pb::ValueInfoProto {
        let dim = dims
            .iter()
            .map(|d| pb::tensor_shape_proto::Dimension {
                value: Some(match d {
                    Some(n) => pb::tensor_shape_proto::dimension::Value::DimValue(*n),
                    None => pb::tensor_shape_proto::dimension::Value::DimParam("S".into()),
                }),
                ..Default::default()
            })
            .collect();
        pb::ValueInfoProto {
            name: name.into(),
            r#type: Some(pb::TypeProto {
                value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                    elem_type: elem_type as i32,
                    shape: Some(pb::TensorShapeProto { dim }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// A two-layer model in the shape of an int8 BERT export: an int8 embedding table with
    /// per-row scales, gathered by `input_ids`, then an int8 matrix with per-column scales.
    /// Input `input_ids` `[1, S]`; output `last_hidden_state` `[1, S, 3]`.
    pub(in crate::embed) fn tiny_int8_model() -> pb::ModelProto {
        let graph = pb::GraphProto {
            name: "tiny".into(),
            node: vec![
                cast_to_float("emb_q", "emb_f"),
                node("Mul", &["emb_f", "emb_s"], "emb", vec![]),
                node("Gather", &["emb", "input_ids"], "hidden", vec![]),
                cast_to_float("w_q", "w_f"),
                node("Mul", &["w_f", "w_s"], "w", vec![]),
                node("MatMul", &["hidden", "w"], "last_hidden_state", vec![]),
            ],
            initializer: vec![
                int8("emb_q", &[5, 2], &[1, 2, -3, 4, 5, -6, 7, 8, 127, -128]),
                float("emb_s", &[5, 1], &[0.5, 0.25, 2.0, 1.0, 0.125]),
                int8("w_q", &[2, 3], &[1, -1, 2, 3, 0, -2]),
                float("w_s", &[1, 3], &[0.1, 0.2, 0.3]),
            ],
            input: vec![value_info("input_ids", DataType::Int64, &[Some(1), None])],
            output: vec![value_info(
                "last_hidden_state",
                DataType::Float,
                &[Some(1), None, Some(3)],
            )],
            ..Default::default()
        };
        model_of(graph)
    }

    /// Runs a graph on `ids` the way the runner does, with extra inputs appended.
    fn run(proto: &pb::ModelProto, folded: Vec<(String, Tensor)>, extra: &[(String, Tensor)], ids: &[i64]) -> Vec<f32> {
        run_with_rows(proto, None, folded, extra, ids)
    }

    /// [`run`] on a prepared graph: its row tables given the rows of `ids`, renumbered.
    fn run_prepared(proto: &pb::ModelProto, prepared: Prepared, ids: &[i64]) -> Vec<f32> {
        run_with_rows(
            proto,
            prepared.row_tables.as_ref(),
            prepared.folded,
            &prepared.runtime_weights,
            ids,
        )
    }

    fn run_with_rows(
        proto: &pb::ModelProto,
        rows: Option<&super::super::rows::RowTables>,
        folded: Vec<(String, Tensor)>,
        extra: &[(String, Tensor)],
        ids: &[i64],
    ) -> Vec<f32> {
        let mut model = super::super::runner::onnx_parser()
            .model_for_proto_model(proto)
            .unwrap();
        inject_constants(&mut model, folded).unwrap();
        let s = model.sym("S");
        let r = model.sym("R");
        model = model
            .with_input_fact(
                0,
                InferenceFact::dt_shape(i64::datum_type(), tvec!(1.to_dim(), s.to_dim())),
            )
            .unwrap();
        let (ids, tables): (Vec<i64>, Vec<Tensor>) = match rows {
            None => (ids.to_vec(), Vec::new()),
            Some(rows) => {
                let plain: Vec<u32> = ids.iter().map(|&i| i as u32).collect();
                let (renumbered, tables) = rows.gather(&plain).unwrap();
                (renumbered.into_iter().map(i64::from).collect(), tables)
            }
        };
        for (i, t) in tables.iter().enumerate() {
            let mut shape: TVec<TDim> = tvec!(r.to_dim());
            shape.extend(t.shape()[1..].iter().map(|&d| d.to_dim()));
            model = model
                .with_input_fact(1 + i, InferenceFact::dt_shape(t.datum_type(), shape))
                .unwrap();
        }
        for (i, (_, t)) in extra.iter().enumerate() {
            model = model
                .with_input_fact(1 + tables.len() + i, InferenceFact::dt_shape(t.datum_type(), t.shape()))
                .unwrap();
        }
        let plan = model.into_optimized().unwrap().into_runnable().unwrap();
        let input: Tensor = tract_ndarray::Array2::from_shape_vec((1, ids.len()), ids.to_vec())
            .unwrap()
            .into();
        let mut inputs: TVec<TValue> = tvec!(input.into());
        inputs.extend(tables.into_iter().map(TValue::from));
        inputs.extend(extra.iter().map(|(_, t)| t.clone().into()));
        let out = plan.run(inputs).unwrap();
        out[0].to_plain_array_view::<f32>().unwrap().iter().copied().collect()
    }

    fn names(graph: &pb::GraphProto) -> Vec<String> {
        graph
            .node
            .iter()
            .map(|n| format!("{}:{}", n.op_type, n.input.join(",")))
            .collect()
    }

    const IDS: [i64; 4] = [4, 0, 2, 4];

    #[test]
    fn finds_each_in_graph_dequantisation() {
        let proto = tiny_int8_model();
        let pairs = dequant_pairs(proto.graph.as_ref().unwrap());
        let found: Vec<(&str, &str, &str)> = pairs
            .iter()
            .map(|d| (d.q.as_str(), d.scale.as_str(), d.output.as_str()))
            .collect();
        assert_eq!(found, [("emb_q", "emb_s", "emb"), ("w_q", "w_s", "w")]);
    }

    #[test]
    fn embedding_rows_are_gathered_as_int8_then_dequantised() {
        let mut proto = tiny_int8_model();
        let graph = proto.graph.as_mut().unwrap();
        dequantize_gathered_rows(graph);
        assert_eq!(
            names(graph),
            [
                "Gather:emb_q,input_ids",
                "Cast:hidden__rows_q",
                "Gather:emb_s,input_ids",
                "Mul:hidden__rows_f,hidden__rows_scale",
                "Cast:w_q",
                "Mul:w_f,w_s",
                "MatMul:hidden,w",
            ]
        );
        assert_eq!(graph.node[3].output, ["hidden"]);
        let reference = run(&tiny_int8_model(), vec![], &[], &IDS);
        assert_eq!(run(&proto, vec![], &[], &IDS), reference);
    }

    #[test]
    fn f32_weights_are_folded_out_of_the_graph_with_the_same_results() {
        let reference = run(&tiny_int8_model(), vec![], &[], &IDS);
        let mut proto = tiny_int8_model();
        let prepared = prepare_graph(proto.graph.as_mut().unwrap(), Weights::F32, None).unwrap();
        let graph = proto.graph.as_ref().unwrap();
        assert!(prepared.runtime_weights.is_empty());
        assert_eq!(
            prepared.folded.len(),
            1,
            "only the matrix is folded; the table stays int8"
        );
        let (name, w) = &prepared.folded[0];
        assert_eq!(name, "w");
        let values: Vec<f32> = w.to_plain_array_view::<f32>().unwrap().iter().copied().collect();
        assert_eq!(values, [0.1, -0.2, 0.6, 0.3, 0.0, -0.6].map(|v: f32| v));
        assert!(
            graph.input.iter().any(|i| i.name == "w"),
            "the folded weight is a graph input until injected"
        );
        let initializers: Vec<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
        assert!(
            initializers.is_empty(),
            "unread initializers are dropped: {initializers:?}"
        );
        let tables: Vec<&str> = prepared
            .row_tables
            .as_ref()
            .unwrap()
            .tables
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(tables, ["emb_q", "emb_s"], "the table stays int8, given row by row");
        assert!(!names(graph).iter().any(|n| n.starts_with("Cast:w_q")));
        let got = run_prepared(&proto, prepared, &IDS);
        for (g, r) in got.iter().zip(&reference) {
            assert!((g - r).abs() <= 1e-6, "{got:?} vs {reference:?}");
        }
    }

    /// How [`linear_model`] writes its GELU, if it has one.
    #[derive(Clone, Copy, Debug)]
    enum Gelu {
        /// `Mul(h, Mul(0.5, Add(Erf(Div(h, √2)), 1)))`, as all-MiniLM-L6-v2's export does.
        Div,
        /// `Mul(Mul(h, Add(1, Erf(Mul(h, 1/√2)))), 0.5)`.
        Mul,
        /// Like `Div`, but `+ 2` after the erf: not a GELU.
        NotQuite,
    }

    /// input_ids → an f32 embedding table (5 × 4) → one int8 linear layer of 8 columns
    /// (`MatMul(x, Mul(Cast(q), s))`, then `Add(·, b)` with `b` of shape `bias_dims`) → `gelu`.
    /// Output `y`, `[1, S, 8]`.
    fn linear_model(bias_dims: &[i64], gelu: Option<Gelu>) -> pb::ModelProto {
        let emb: Vec<f32> = (0..20).map(|i| ((i * 7) % 11) as f32 * 0.25 - 1.2).collect();
        let q: Vec<i8> = (0..32).map(|i| ((i * 37) % 255 - 127) as i8).collect();
        let s: Vec<f32> = (0..8).map(|i| 0.01 + i as f32 * 0.002).collect();
        let b: Vec<f32> = (0..8).map(|i| i as f32 * 0.1 - 0.4).collect();
        let mut nodes = vec![
            node("Gather", &["emb", "input_ids"], "x", vec![]),
            cast_to_float("w_q", "w_f"),
            node("Mul", &["w_f", "w_s"], "w", vec![]),
            node("MatMul", &["x", "w"], "xw", vec![]),
            node("Add", &["xw", "b"], "h", vec![]),
        ];
        let last = match gelu {
            None => "h",
            Some(form @ (Gelu::Div | Gelu::NotQuite)) => {
                let plus = if matches!(form, Gelu::Div) { "one" } else { "two" };
                nodes.extend([
                    node("Div", &["h", "root2"], "scaled", vec![]),
                    node("Erf", &["scaled"], "erf", vec![]),
                    node("Add", &["erf", plus], "plus", vec![]),
                    node("Mul", &["half", "plus"], "halved", vec![]),
                    node("Mul", &["h", "halved"], "gelu", vec![]),
                ]);
                "gelu"
            }
            Some(Gelu::Mul) => {
                nodes.extend([
                    node("Mul", &["h", "inv_root2"], "scaled", vec![]),
                    node("Erf", &["scaled"], "erf", vec![]),
                    node("Add", &["one", "erf"], "plus", vec![]),
                    node("Mul", &["h", "plus"], "whole", vec![]),
                    node("Mul", &["whole", "half"], "gelu", vec![]),
                ]);
                "gelu"
            }
        };
        nodes.push(node("Identity", &[last], "y", vec![]));
        let graph = pb::GraphProto {
            name: "linear".into(),
            node: nodes,
            initializer: vec![
                float("emb", &[5, 4], &emb),
                int8("w_q", &[4, 8], &q),
                float("w_s", &[8], &s),
                float("b", bias_dims, &b),
                float("root2", &[], &[std::f32::consts::SQRT_2]),
                float("inv_root2", &[], &[std::f32::consts::FRAC_1_SQRT_2]),
                float("one", &[], &[1.0]),
                float("two", &[], &[2.0]),
                float("half", &[], &[0.5]),
            ],
            input: vec![value_info("input_ids", DataType::Int64, &[Some(1), None])],
            output: vec![value_info("y", DataType::Float, &[Some(1), None, Some(8)])],
            ..Default::default()
        };
        model_of(graph)
    }

    /// The rewritten graph's nodes by op type, and its results against the unrewritten one's.
    fn rewrite_and_compare(proto: pb::ModelProto) -> (Vec<String>, Vec<(String, Vec<String>)>) {
        let reference = run(&proto, vec![], &[], &IDS);
        let mut proto = proto;
        let prepared = prepare_graph(proto.graph.as_mut().unwrap(), Weights::Int8, None).unwrap();
        let got = run_prepared(&proto, prepared, &IDS);
        // Integer products: x is rounded to 15 bits of its row's largest value.
        for (g, r) in got.iter().zip(&reference) {
            assert!((g - r).abs() <= 1e-4 * r.abs().max(1.0), "{got:?} vs {reference:?}");
        }
        let graph = proto.graph.unwrap();
        let ops = graph.node.iter().map(|n| n.op_type.clone()).collect();
        let fused = graph
            .node
            .iter()
            .filter(|n| n.op_type == super::super::onnx::INT8_MATMUL_OP)
            .map(|n| {
                (
                    n.output[0].clone(),
                    n.attribute.iter().map(|a| a.name.clone()).collect(),
                )
            })
            .collect();
        (ops, fused)
    }

    #[test]
    fn int8_products_take_in_their_bias_and_gelu_with_the_same_results() {
        let op = super::super::onnx::INT8_MATMUL_OP;
        for gelu in [Gelu::Div, Gelu::Mul] {
            let (ops, fused) = rewrite_and_compare(linear_model(&[8], Some(gelu)));
            assert_eq!(ops, ["Gather", op, "Identity"], "{gelu:?}");
            assert_eq!(
                fused,
                [(
                    "gelu".to_string(),
                    vec!["q".into(), "scale".into(), "activation".into(), "bias".into()]
                )]
            );
        }
        let (ops, fused) = rewrite_and_compare(linear_model(&[8], None));
        assert_eq!(ops, ["Gather", op, "Identity"]);
        assert_eq!(
            fused,
            [("h".to_string(), vec!["q".into(), "scale".into(), "bias".into()])]
        );
        // `+ 2` is not a GELU: the bias is taken, the rest stays as it was.
        let (ops, fused) = rewrite_and_compare(linear_model(&[8], Some(Gelu::NotQuite)));
        assert_eq!(ops, ["Gather", op, "Div", "Erf", "Add", "Mul", "Mul", "Identity"]);
        assert_eq!(fused[0].1, ["q", "scale", "bias"]);
        // A bias of rank 2 would broadcast a rank-2 product: left to tract.
        let (ops, fused) = rewrite_and_compare(linear_model(&[1, 8], None));
        assert_eq!(ops, ["Gather", op, "Add", "Identity"]);
        assert_eq!(fused[0].1, ["q", "scale"]);
    }

    #[test]
    fn the_reserved_op_type_and_malformed_nodes_are_errors_or_left_alone_never_panics() {
        let mut proto = linear_model(&[8], Some(Gelu::Div));
        let graph = proto.graph.as_mut().unwrap();
        graph
            .node
            .push(node(super::super::onnx::INT8_MATMUL_OP, &["x"], "z", vec![]));
        let e = prepare_graph(graph, Weights::Int8, None).unwrap_err().to_string();
        assert!(e.contains("reserves") && e.contains("SextantMatMulInt8"), "{e}");
        // Nodes without outputs, or a Div of one input, anywhere a pattern looks.
        for (at, strip_outputs) in [
            (3, true),
            (4, true),
            (5, false),
            (6, true),
            (7, true),
            (8, true),
            (9, true),
        ] {
            let mut proto = linear_model(&[8], Some(Gelu::Div));
            let graph = proto.graph.as_mut().unwrap();
            if strip_outputs {
                graph.node[at].output.clear();
            } else {
                graph.node[at].input.truncate(1);
            }
            prepare_graph(graph, Weights::Int8, None).unwrap();
        }
    }

    #[test]
    fn int8_weights_a_product_cannot_take_become_inputs_with_the_same_results() {
        // A per-row scale ([K, 1]) does not commute with the product: that weight stays a
        // `Cast → Mul` on an int8 graph input.
        let mut proto = tiny_int8_model();
        let w_s = proto
            .graph
            .as_mut()
            .unwrap()
            .initializer
            .iter_mut()
            .find(|t| t.name == "w_s")
            .unwrap();
        *w_s = float("w_s", &[2, 1], &[0.1, 0.2]);
        let reference = run(&proto, vec![], &[], &IDS);
        let prepared = prepare_graph(proto.graph.as_mut().unwrap(), Weights::Int8, None).unwrap();
        let graph = proto.graph.as_ref().unwrap();
        let inputs: Vec<&str> = prepared.runtime_weights.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(inputs, ["w_q"]);
        assert_eq!(prepared.runtime_weights[0].1.datum_type(), DatumType::I8);
        let declared = graph.input.iter().find(|i| i.name == "w_q").unwrap();
        match &declared.r#type.as_ref().unwrap().value {
            Some(pb::type_proto::Value::TensorType(t)) => assert_eq!(t.elem_type, DataType::Int8 as i32),
            other => panic!("{other:?}"),
        }
        // Its product is computed in the fixed order (`exact`): the weight is computed too.
        assert!(
            names(graph).contains(&"SextantMatMul:hidden,w".to_string()),
            "{:?}",
            names(graph)
        );
        let got = run_prepared(&proto, prepared, &IDS);
        for (g, r) in got.iter().zip(&reference) {
            assert!((g - r).abs() <= 1e-5 * r.abs().max(1.0), "{got:?} vs {reference:?}");
        }
    }

    #[test]
    fn a_scale_moves_after_its_product_only_when_it_is_per_column() {
        for (scale_dims, moves) in [
            (vec![1, 3], true),
            (vec![3], true),
            (vec![1], true),
            (vec![2, 1], false),
        ] {
            let mut proto = tiny_int8_model();
            let graph = proto.graph.as_mut().unwrap();
            let w_s = graph.initializer.iter_mut().find(|t| t.name == "w_s").unwrap();
            let values: Vec<f32> = (0..scale_dims.iter().product::<i64>())
                .map(|i| 0.1 + i as f32 * 0.1)
                .collect();
            *w_s = float("w_s", &scale_dims, &values);
            scale_after_matmul(graph);
            let moved = names(graph).iter().any(|n| n == "MatMul:hidden,w_f");
            assert_eq!(moved, moves, "scale {scale_dims:?}: {:?}", names(graph));
        }
    }

    #[test]
    fn initializers_decode_from_raw_or_typed_fields() {
        let raw = int8("q", &[3], &[1, -2, 3]);
        let t = proto_tensor(&raw).unwrap().unwrap();
        assert_eq!(t.to_plain_array_view::<i8>().unwrap().as_slice().unwrap(), &[1, -2, 3]);
        let typed = pb::TensorProto {
            name: "q".into(),
            data_type: DataType::Int8 as i32,
            dims: vec![2],
            int32_data: vec![-5, 7],
            ..Default::default()
        };
        let t = proto_tensor(&typed).unwrap().unwrap();
        assert_eq!(t.to_plain_array_view::<i8>().unwrap().as_slice().unwrap(), &[-5, 7]);
        let ragged = tensor("f", DataType::Float, &[1], vec![0, 0, 128]);
        assert!(proto_tensor(&ragged).unwrap().is_none(), "3 bytes are not an f32");
        let wrong_count = int8("q", &[4], &[1, 2]);
        assert!(proto_tensor(&wrong_count).is_err(), "2 values cannot fill 4 elements");
        let other = tensor("d", DataType::Double, &[1], vec![0; 8]);
        assert!(proto_tensor(&other).unwrap().is_none());
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
