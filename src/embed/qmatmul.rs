//! The tract operator for the product of f32 activations with int8 weights done in integers:
//! [`MatMulInt8`], which [`Weights::Int8`](super::Weights::Int8) puts in place of every
//! `MatMul(x, Mul(Cast(q), s))` of an int8 model (see `rewrite::int8_matmuls`), with the bias
//! and GELU that follow it. The arithmetic (packing, the kernels, the error bound) is in the
//! `sextant-kernels` crate, compiled at full speed even where the engine is compiled for size.

use std::sync::Arc;

use sextant_kernels::{PackedInt8, Rows};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb;
use tract_onnx::tract_hir::internal::*;

use super::onnx::{proto_tensor, INT8_MATMUL_OP as OP_TYPE};

/// `y = act((x · q) ∘ scale + bias) + residual`: `x` f32 of shape `[.., K]`, `q` int8 `[K, N]`
/// packed once, `scale` one f32 per column, `bias` optional (`[N]`), `act` GELU or nothing,
/// `residual` an optional second input of `y`'s shape; `y` f32 `[.., N]`. The bias and GELU come
/// from the graph (`rewrite::int8_matmuls`); a following multiplication by one number and a
/// residual addition are taken in by [`TypedOp::fuse`] once tract has placed them next to it.
#[derive(Debug, Clone)]
pub struct MatMulInt8 {
    weights: Arc<PackedInt8>,
    epilogue: Epilogue,
}

/// What is done to each integer sum after the product, in this order.
#[derive(Debug, Clone)]
struct Epilogue {
    /// One scale per column.
    scale: Arc<[f32]>,
    /// One bias per column, added after the scale.
    bias: Option<Arc<[f32]>>,
    /// GELU (`h · (erf(h / √2) + 1) / 2`) after the bias.
    gelu: bool,
    /// A second input added last.
    residual: bool,
}

impl PartialEq for MatMulInt8 {
    fn eq(&self, other: &Self) -> bool {
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<u32>>();
        let (a, b) = (&self.epilogue, &other.epilogue);
        Arc::ptr_eq(&self.weights, &other.weights)
            && bits(&a.scale) == bits(&b.scale)
            && a.bias.as_deref().map(bits) == b.bias.as_deref().map(bits)
            && a.gelu == b.gelu
            && a.residual == b.residual
    }
}

impl Eq for MatMulInt8 {}

impl MatMulInt8 {
    /// Packs `q` (`k × n`, row-major) with its column scales (`n` values, or one for all) and an
    /// optional bias (`n` values), for rows of `x` rounded as `rows` says.
    pub fn new(
        q: &[i8],
        k: usize,
        n: usize,
        scale: &[f32],
        bias: Option<&[f32]>,
        gelu: bool,
        rows: Rows,
    ) -> TractResult<Self> {
        let weights = PackedInt8::new(q, k, n, rows)
            .with_context(|| format!("an int8 weight of {k} × {n} cannot hold {} values", q.len()))?;
        let scale: Arc<[f32]> = match scale.len() {
            1 => vec![scale[0]; n].into(),
            len if len == n => scale.into(),
            len => bail!("an int8 weight of {n} columns has {len} scales"),
        };
        if let Some(bias) = bias {
            ensure!(
                bias.len() == n,
                "an int8 weight of {n} columns has {} biases",
                bias.len()
            );
        }
        Ok(Self {
            weights: Arc::new(weights),
            epilogue: Epilogue {
                scale,
                bias: bias.map(Arc::from),
                gelu,
                residual: false,
            },
        })
    }

    /// The product for `rows` rows of `x` (`rows × k`, row-major) and, with a residual, the
    /// `rows × n` values to add: `rows × n` values.
    pub fn apply(&self, x: &[f32], rows: usize, residual: Option<&[f32]>) -> Vec<f32> {
        let e = &self.epilogue;
        let epilogue = sextant_kernels::Epilogue {
            scale: &e.scale,
            bias: e.bias.as_deref(),
            gelu: e.gelu,
        };
        self.weights.product(x, rows, &epilogue, residual)
    }

    /// This product followed by a multiplication by `factor`.
    fn times(&self, factor: f32) -> Self {
        let e = &self.epilogue;
        let scale: Vec<f32> = e.scale.iter().map(|s| s * factor).collect();
        let bias = e
            .bias
            .as_ref()
            .map(|b| b.iter().map(|b| b * factor).collect::<Vec<f32>>().into());
        Self {
            weights: self.weights.clone(),
            epilogue: Epilogue {
                scale: scale.into(),
                bias,
                ..e.clone()
            },
        }
    }
}

impl Op for MatMulInt8 {
    fn name(&self) -> StaticName {
        "MatMulInt8".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("int8 weight {} × {}", self.weights.k(), self.weights.n())])
    }

    fn as_typed(&self) -> Option<&dyn TypedOp> {
        Some(self)
    }
}

impl EvalOp for MatMulInt8 {
    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        self.eval_inputs(inputs)
    }

    fn eval_out_of_plan(&self, inputs: TVec<TValue>) -> TractResult<Option<TVec<TValue>>> {
        Ok(Some(self.eval_inputs(inputs)?))
    }
}

impl MatMulInt8 {
    fn eval_inputs(&self, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let expected = 1 + self.epilogue.residual as usize;
        ensure!(
            inputs.len() == expected,
            "MatMulInt8 takes {expected} inputs, got {}",
            inputs.len()
        );
        let x = &inputs[0];
        let shape = x.shape();
        let k = shape.last().copied().unwrap_or(0);
        ensure!(
            k == self.weights.k(),
            "MatMulInt8: input of shape {shape:?} against a weight of {} rows",
            self.weights.k()
        );
        let rows = x.len() / k;
        let mut out_shape: TVec<usize> = shape.into();
        if let Some(last) = out_shape.last_mut() {
            *last = self.weights.n();
        }
        let x = x.cast_to::<f32>()?;
        let view = x.try_as_plain_ram()?;
        let residual = match inputs.get(1) {
            Some(r) => {
                ensure!(
                    r.shape() == &*out_shape,
                    "MatMulInt8: residual of shape {:?}, not {out_shape:?}",
                    r.shape()
                );
                Some(r.try_as_plain_ram()?)
            }
            None => None,
        };
        let residual = residual.as_ref().map(|r| r.as_slice::<f32>()).transpose()?;
        let y = self.apply(view.as_slice::<f32>()?, rows, residual);
        Ok(tvec!(
            tract_ndarray::ArrayD::from_shape_vec(&*out_shape, y)?.into_tvalue()
        ))
    }
}

impl TypedOp for MatMulInt8 {
    fn as_op(&self) -> &dyn Op {
        self
    }

    fn as_op_mut(&mut self) -> &mut dyn Op {
        self
    }

    fn fuse(&self, model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
        let Some(next) = model.single_succ(node.id)? else {
            return Ok(None);
        };
        let [a, b] = next.inputs.as_slice() else {
            return Ok(None);
        };
        let other = if a.node == node.id { *b } else { *a };
        if other.node == node.id {
            return Ok(None);
        }
        let other_fact = model.outlet_fact(other)?;
        let own_fact = model.outlet_fact(OutletId::new(node.id, 0))?;
        let e = &self.epilogue;
        let (op, residual) = match &*next.op().name() {
            // A multiplication by one number goes into the scale and bias.
            "Mul" if !e.gelu && !e.residual => {
                let Some(factor) = other_fact.konst.as_ref().filter(|k| k.len() == 1) else {
                    return Ok(None);
                };
                if other_fact.rank() > own_fact.rank() {
                    return Ok(None);
                }
                (self.times(factor.cast_to_scalar::<f32>()?), None)
            }
            // A residual: a computed tensor of the same shape.
            "Add" if !e.residual => {
                if other_fact.konst.is_some()
                    || other_fact.shape != own_fact.shape
                    || other_fact.datum_type != f32::datum_type()
                {
                    return Ok(None);
                }
                let mut op = self.clone();
                op.epilogue.residual = true;
                (op, Some(other))
            }
            _ => return Ok(None),
        };
        let mut patch = TypedModelPatch::default();
        let mut inputs = patch.taps(model, &node.inputs)?;
        if let Some(residual) = residual {
            inputs.push(patch.tap_model(model, residual)?);
        }
        let out = patch.wire_node(&node.name, op, &inputs)?;
        patch.shunt_outside(model, next.id.into(), out[0])?;
        Ok(Some(patch))
    }

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs.first().context("MatMulInt8 takes one input")?;
        ensure!(x.rank() >= 1, "MatMulInt8's input is a scalar");
        let mut shape: TVec<TDim> = x.shape.iter().cloned().collect();
        if let Some(last) = shape.last_mut() {
            *last = self.weights.n().to_dim();
        }
        Ok(tvec!(f32::fact(shape)))
    }
}

impl InferenceRulesOp for MatMulInt8 {
    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 1)?;
        check_output_arity(outputs, 1)?;
        s.equals(&inputs[0].datum_type, f32::datum_type())?;
        s.equals(&outputs[0].datum_type, f32::datum_type())?;
        s.equals(&inputs[0].rank, &outputs[0].rank)?;
        let (k, n) = (self.weights.k(), self.weights.n());
        s.given(&inputs[0].rank, move |s, rank| {
            let last = (rank as usize).saturating_sub(1);
            for axis in 0..last {
                s.equals(&inputs[0].shape[axis], &outputs[0].shape[axis])?;
            }
            s.equals(&inputs[0].shape[last], k.to_dim())?;
            s.equals(&outputs[0].shape[last], n.to_dim())
        })
    }

    fn as_op(&self) -> &dyn Op {
        self
    }

    fn as_op_mut(&mut self) -> &mut dyn Op {
        self
    }

    fn to_typed(
        &self,
        _source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let inputs: TVec<OutletId> = node.inputs.iter().map(|i| mapping[i]).collect();
        target.wire_node(&*node.name, self.clone(), &inputs)
    }
}

/// Builds a [`MatMulInt8`] from a `SextantMatMulInt8` node: its tensor attributes `q` (int8,
/// `[K, N]`), `scale` (f32, `[N]`, `[1, N]` or one value) and optionally `bias` (f32, `N`
/// values), and its string attributes `activation` (`gelu`, or absent) and `rows` (`bytes`: rows
/// rounded to bytes, `Weights::Int8A8`; absent: to 15 bits).
pub(super) fn parse(_ctx: &ParsingContext, node: &pb::NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let attribute = |name: &str| node.attribute.iter().find(|a| a.name == name);
    let tensor = |name: &str| -> TractResult<Option<Tensor>> {
        match attribute(name).and_then(|a| a.t.as_ref()) {
            Some(t) => proto_tensor(t)?
                .map(Some)
                .with_context(|| format!("{OP_TYPE} node {}: {name} is not an int8 or f32 tensor", node.name)),
            None => Ok(None),
        }
    };
    let q = tensor("q")?.with_context(|| format!("{OP_TYPE} node {} has no weight", node.name))?;
    let scale = tensor("scale")?.with_context(|| format!("{OP_TYPE} node {} has no scale", node.name))?;
    let bias = tensor("bias")?;
    ensure!(
        q.datum_type() == DatumType::I8 && q.rank() == 2,
        "q must be a 2-D int8 tensor"
    );
    ensure!(scale.datum_type() == DatumType::F32, "scale must be f32");
    ensure!(
        bias.as_ref().is_none_or(|b| b.datum_type() == DatumType::F32),
        "bias must be f32"
    );
    let gelu = match attribute("activation").map(|a| a.s.as_slice()) {
        None => false,
        Some(b"gelu") => true,
        Some(other) => bail!("{OP_TYPE}: unknown activation {:?}", String::from_utf8_lossy(other)),
    };
    let rows = match attribute("rows").map(|a| a.s.as_slice()) {
        None => Rows::Wide,
        Some(b"bytes") => Rows::Bytes,
        Some(other) => bail!("{OP_TYPE}: unknown rows {:?}", String::from_utf8_lossy(other)),
    };
    let (k, n) = (q.shape()[0], q.shape()[1]);
    let (q, scale) = (q.try_as_plain_ram()?, scale.try_as_plain_ram()?);
    let bias = bias.as_ref().map(|b| b.try_as_plain_ram()).transpose()?;
    let bias = bias.as_ref().map(|b| b.as_slice::<f32>()).transpose()?;
    let op = MatMulInt8::new(q.as_slice::<i8>()?, k, n, scale.as_slice::<f32>()?, bias, gelu, rows)?;
    Ok((Box::new(op), vec![]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_factor_scales_the_product_and_its_bias_and_bad_weights_are_refused() {
        // x = [1, 0] picks q's first row: [2, -4] · 0.5 + [0.5, 1] = [1.5, -1].
        let op = MatMulInt8::new(&[2, -4, 3, 1], 2, 2, &[0.5], Some(&[0.5, 1.0]), false, Rows::Wide).unwrap();
        assert_eq!(op.apply(&[1.0, 0.0], 1, None), [1.5, -1.0]);
        assert_eq!(op.times(2.0).apply(&[1.0, 0.0], 1, None), [3.0, -2.0]);
        assert!(MatMulInt8::new(&[1, 2, 3], 2, 2, &[1.0], None, false, Rows::Wide).is_err());
        assert!(MatMulInt8::new(&[1, 2, 3, 4], 2, 2, &[1.0, 2.0, 3.0], None, false, Rows::Wide).is_err());
        assert!(MatMulInt8::new(&[1, 2, 3, 4], 2, 2, &[1.0], Some(&[1.0]), false, Rows::Wide).is_err());
    }
}
