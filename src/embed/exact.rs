//! The tract operator for the parts of an int8 model's forward pass that are not products with
//! weights: [`Exact`] runs attention's two products, softmax and layer normalisation with
//! `sextant_kernels::exact`, whose sums have one fixed order, so that with
//! [`Weights::Int8`](super::Weights::Int8) a text's vector has the same bits on every CPU, every
//! SIMD kernel and in WebAssembly (tract's own kernels for these differ by machine: fused
//! multiply-adds, SIMD reductions, approximations of `exp`). `rewrite::exact_ops` renames the
//! nodes it can take (layer normalisation and softmax over the last axis, products of two
//! computed tensors) to the op types below.

use sextant_kernels::exact;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb;
use tract_onnx::tract_hir::internal::*;

/// The op type of layer normalisation over the last axis (attribute `epsilon`, inputs X, gamma,
/// beta).
pub(super) const LAYER_NORM_OP: &str = "SextantLayerNorm";
/// The op type of softmax over the last axis.
pub(super) const SOFTMAX_OP: &str = "SextantSoftmax";
/// The op type of a product of two computed tensors (`[.., M, K] · [.., K, N]`).
pub(super) const MATMUL_OP: &str = "SextantMatMul";

/// What an [`Exact`] node computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExactKind {
    /// Layer normalisation over the last axis; `epsilon`'s bits.
    LayerNorm {
        /// `epsilon` as `f32::to_bits`.
        epsilon: u32,
    },
    /// Softmax over the last axis.
    Softmax,
    /// `a · b` over the last two axes, the leading axes of `b` equal to `a`'s or all 1.
    MatMul,
}

/// One operator of the fixed-order arithmetic (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Exact {
    kind: ExactKind,
}

impl ExactKind {
    fn inputs(self) -> usize {
        match self {
            ExactKind::LayerNorm { .. } => 3,
            ExactKind::Softmax => 1,
            ExactKind::MatMul => 2,
        }
    }
}

/// A tensor's values as f32, row-major.
fn values(t: &TValue) -> TractResult<Vec<f32>> {
    let t = t.cast_to::<f32>()?;
    Ok(t.try_as_plain_ram()?.as_slice::<f32>()?.to_vec())
}

impl Op for Exact {
    fn name(&self) -> StaticName {
        match self.kind {
            ExactKind::LayerNorm { .. } => "ExactLayerNorm",
            ExactKind::Softmax => "ExactSoftmax",
            ExactKind::MatMul => "ExactMatMul",
        }
        .into()
    }

    fn as_typed(&self) -> Option<&dyn TypedOp> {
        Some(self)
    }
}

impl EvalOp for Exact {
    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        self.eval_inputs(inputs)
    }

    fn eval_out_of_plan(&self, inputs: TVec<TValue>) -> TractResult<Option<TVec<TValue>>> {
        Ok(Some(self.eval_inputs(inputs)?))
    }
}

impl Exact {
    fn eval_inputs(&self, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let name = self.name();
        ensure!(
            inputs.len() == self.kind.inputs(),
            "{name} takes {} inputs, got {}",
            self.kind.inputs(),
            inputs.len()
        );
        let shape: TVec<usize> = inputs[0].shape().into();
        let last = shape.last().copied().unwrap_or(1);
        let (out_shape, y) = match self.kind {
            ExactKind::LayerNorm { epsilon } => {
                let mut x = values(&inputs[0])?;
                let (gamma, beta) = (values(&inputs[1])?, values(&inputs[2])?);
                ensure!(
                    gamma.len() == last && beta.len() == last,
                    "{name}: gamma and beta of {} and {} values for rows of {last}",
                    gamma.len(),
                    beta.len()
                );
                exact::layer_norm(&mut x, last, &gamma, &beta, f32::from_bits(epsilon));
                (shape, x)
            }
            ExactKind::Softmax => {
                let mut x = values(&inputs[0])?;
                exact::softmax(&mut x, last);
                (shape, x)
            }
            ExactKind::MatMul => {
                let b_shape: TVec<usize> = inputs[1].shape().into();
                let out_shape = matmul_shape(&shape, &b_shape)?;
                let rank = shape.len();
                let (m, k, n) = (shape[rank - 2], shape[rank - 1], b_shape[b_shape.len() - 1]);
                let (a, b) = (values(&inputs[0])?, values(&inputs[1])?);
                let batches = a.len() / (m * k).max(1);
                let shared = b.len() == k * n;
                let mut y = Vec::with_capacity(batches * m * n);
                for batch in 0..batches {
                    let a = &a[batch * m * k..][..m * k];
                    let b = if shared { &b[..] } else { &b[batch * k * n..][..k * n] };
                    y.extend(exact::matmul(a, b, m, k, n));
                }
                (out_shape, y)
            }
        };
        Ok(tvec!(
            tract_ndarray::ArrayD::from_shape_vec(&*out_shape, y)?.into_tvalue()
        ))
    }
}

/// The shape of `a · b` over the last two axes: `a` of rank at least 2, `b` a matrix (one for
/// every leading index of `a`) or of `a`'s rank with leading axes equal to `a`'s or all 1.
fn matmul_shape<D: DimLike>(a: &[D], b: &[D]) -> TractResult<TVec<D>> {
    let rank = a.len();
    let shared = b.len() == 2 || (b.len() == rank && b[..rank.saturating_sub(2)].iter().all(|d| d.is_one()));
    ensure!(
        rank >= 2 && (shared || (b.len() == rank && a[..rank - 2] == b[..rank - 2])),
        "a product of shapes {a:?} and {b:?} broadcasts in a way sextant's exact product does not; load this model with weights \"f32\" ([model] weights in sextant.toml, --weights f32)"
    );
    let mut out: TVec<D> = a.iter().cloned().collect();
    out[rank - 1] = b[b.len() - 1].clone();
    Ok(out)
}

impl TypedOp for Exact {
    fn as_op(&self) -> &dyn Op {
        self
    }

    fn as_op_mut(&mut self) -> &mut dyn Op {
        self
    }

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let a = inputs
            .first()
            .with_context(|| format!("{} takes inputs", self.name()))?;
        let shape: TVec<TDim> = match self.kind {
            ExactKind::MatMul => {
                let b = inputs.get(1).context("ExactMatMul takes two inputs")?;
                let (a, b): (Vec<TDim>, Vec<TDim>) =
                    (a.shape.iter().cloned().collect(), b.shape.iter().cloned().collect());
                matmul_shape(&a, &b)?
            }
            _ => a.shape.iter().cloned().collect(),
        };
        Ok(tvec!(f32::fact(shape)))
    }
}

impl InferenceRulesOp for Exact {
    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, self.kind.inputs())?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, f32::datum_type())?;
        s.equals(&inputs[0].rank, &outputs[0].rank)?;
        if self.kind != ExactKind::MatMul {
            return s.equals(&inputs[0].shape, &outputs[0].shape);
        }
        s.given_2(&inputs[0].rank, &inputs[1].rank, move |s, a_rank, b_rank| {
            let (a_rank, b_rank) = (a_rank as usize, b_rank as usize);
            if a_rank < 2 || b_rank < 2 {
                return Ok(());
            }
            for axis in 0..a_rank - 2 {
                s.equals(&inputs[0].shape[axis], &outputs[0].shape[axis])?;
            }
            s.equals(&inputs[0].shape[a_rank - 2], &outputs[0].shape[a_rank - 2])?;
            s.equals(&inputs[0].shape[a_rank - 1], &inputs[1].shape[b_rank - 2])?;
            s.equals(&inputs[1].shape[b_rank - 1], &outputs[0].shape[a_rank - 1])
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

/// Parses a `SextantLayerNorm` node (attribute `epsilon`, default 1e-5).
pub(super) fn parse_layer_norm(
    _ctx: &ParsingContext,
    node: &pb::NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let epsilon = node
        .attribute
        .iter()
        .find(|a| a.name == "epsilon")
        .map_or(1e-5, |a| a.f);
    let kind = ExactKind::LayerNorm {
        epsilon: epsilon.to_bits(),
    };
    parse_as(kind)
}

/// The parser of a node whose op type alone says what it computes (`SextantSoftmax`,
/// `SextantMatMul`).
fn parse_as(kind: ExactKind) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    Ok((Box::new(Exact { kind }), vec![]))
}

/// Parses a `SextantSoftmax` node.
pub(super) fn parse_softmax(
    _ctx: &ParsingContext,
    _node: &pb::NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    parse_as(ExactKind::Softmax)
}

/// Parses a `SextantMatMul` node.
pub(super) fn parse_matmul(
    _ctx: &ParsingContext,
    _node: &pb::NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    parse_as(ExactKind::MatMul)
}
