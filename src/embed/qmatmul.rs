//! The product of f32 activations with int8 weights, done in integers: [`MatMulInt8`], the
//! tract operator that [`Weights::Int8`](super::Weights::Int8) puts in place of every
//! `Mul(MatMul(x, Cast(q)), s)` of an int8 model (see `rewrite::int8_matmuls`).
//!
//! A query's products have as few rows as it has tokens, so they are bound by reading the
//! weights and by multiply-adds per instruction, not by the size of the arithmetic. Here the
//! weights stay int8, packed once at load (a quarter of the f32 bytes), and each row of `x` is
//! quantised on the fly to 16-bit integers with its own scale, so the product runs on the
//! integer multiply-add of every SIMD set (`pmaddwd`, WebAssembly's `i32x4.dot_i16x8_s`): eight
//! multiply-adds per instruction where f32 does four in two. The sums are exact integers, so
//! every kernel (WebAssembly SIMD, AVX2, plain Rust) gives the same bits.
//!
//! Error: the only rounding is `x`'s, to at least 13 bits of its row's largest value (each row
//! gets as many levels as keep a whole row's sum of products inside an `i32`), about a tenth of
//! what the int8 weights themselves already carry. The golden vectors hold to cosine 0.9999
//! (`tests/golden.rs`).
//!
//! Layout of the packed weights: columns in panels of [`PANEL`], rows in pairs; panel `j`, pair
//! `p` holds 16 bytes, `q[2p][8j + c]` and `q[2p + 1][8j + c]` for `c` in `0..8` (zero past the
//! edges), which is exactly what one 16-bit multiply-add pair instruction wants.

use std::sync::Arc;

use tract_onnx::model::ParsingContext;
use tract_onnx::pb;
use tract_onnx::tract_hir::internal::*;

/// Columns per panel of packed weights.
pub(super) const PANEL: usize = 8;

/// Rows of `x` per kernel call.
const TILE: usize = 4;

/// Panels per kernel call: two where a register holds a pair of them (AVX2), else one.
const GROUP: usize = if cfg!(target_arch = "x86_64") { 2 } else { 1 };

/// Columns per kernel call.
const BLOCK: usize = GROUP * PANEL;

/// The ONNX op type `rewrite::int8_matmuls` writes and [`parse`] reads.
pub(super) const OP_TYPE: &str = "SextantMatMulInt8";

/// `y = act((x · q) ∘ scale + bias) + residual`: `x` f32 of shape `[.., K]`, `q` int8 `[K, N]`
/// packed once, `scale` one f32 per column, `bias` optional (`[N]`), `act` GELU or nothing,
/// `residual` an optional second input of `y`'s shape; `y` f32 `[.., N]`. The bias and GELU come
/// from the graph (`rewrite::int8_matmuls`); a following multiplication by one number and a
/// residual addition are taken in by [`TypedOp::fuse`] once tract has placed them next to it.
#[derive(Debug, Clone)]
pub struct MatMulInt8 {
    weights: Arc<Packed>,
    epilogue: Epilogue,
}

#[derive(Debug)]
struct Packed {
    k: usize,
    n: usize,
    /// `ceil(k / 2)`.
    pairs: usize,
    /// `panels × pairs × 16` bytes (module docs).
    data: Vec<i8>,
    /// The largest magnitude a row of `x` is quantised to: as many levels as keep
    /// `k × level × 128` inside an `i32`, at most `i16::MAX`.
    levels: f32,
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
    /// optional bias (`n` values).
    pub fn new(q: &[i8], k: usize, n: usize, scale: &[f32], bias: Option<&[f32]>, gelu: bool) -> TractResult<Self> {
        ensure!(
            k > 0 && n > 0,
            "an int8 product needs a non-empty weight, got {k} × {n}"
        );
        ensure!(q.len() == k * n, "an int8 weight of {k} × {n} holds {} values", q.len());
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
        let pairs = k.div_ceil(2);
        let panels = n.div_ceil(PANEL);
        let mut data = vec![0i8; panels * pairs * PANEL * 2];
        for (row, values) in q.chunks_exact(n).enumerate() {
            let (pair, half) = (row / 2, row % 2);
            for (col, &v) in values.iter().enumerate() {
                let (panel, c) = (col / PANEL, col % PANEL);
                data[((panel * pairs + pair) * PANEL + c) * 2 + half] = v;
            }
        }
        // |x| ≤ levels and |q| ≤ 128 keep every sum of `k` products within an i32.
        let levels = (i32::MAX as f64 / (pairs as f64 * 2.0 * 128.0))
            .floor()
            .min(i16::MAX as f64) as f32;
        Ok(Self {
            weights: Arc::new(Packed {
                k,
                n,
                pairs,
                data,
                levels,
            }),
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
        let w = &*self.weights;
        let e = &self.epilogue;
        let width = w.pairs * 2;
        // Each row quantised with its own scale: x ≈ xq · row_scale.
        let mut xq = vec![0i16; rows * width];
        let mut row_scale = vec![0f32; rows];
        for ((values, quantised), scale) in x.chunks_exact(w.k).zip(xq.chunks_exact_mut(width)).zip(&mut row_scale) {
            let largest = values.iter().fold(0f32, |m, v| m.max(v.abs()));
            if largest > 0.0 && largest.is_finite() {
                *scale = largest / w.levels;
                let inverse = w.levels / largest;
                for (q, v) in quantised.iter_mut().zip(values) {
                    *q = (v * inverse).round().clamp(-w.levels, w.levels) as i16;
                }
            } else if !largest.is_finite() {
                *scale = f32::NAN;
            }
        }
        let mut y = vec![0f32; rows * w.n];
        for (block, weights) in w.data.chunks(w.pairs * PANEL * 2 * GROUP).enumerate() {
            let first = block * BLOCK;
            let columns = BLOCK.min(w.n - first);
            let scale = &e.scale[first..first + columns];
            let mut row = 0;
            while row < rows {
                let tile = TILE.min(rows - row);
                let sums = kernel(&xq[row * width..(row + tile) * width], width, weights, tile);
                for (r, sums) in sums.iter().take(tile).enumerate() {
                    let out = &mut y[(row + r) * w.n + first..][..columns];
                    let x_scale = row_scale[row + r];
                    for ((y, &sum), &scale) in out.iter_mut().zip(sums).zip(scale) {
                        *y = sum as f32 * x_scale * scale;
                    }
                    if let Some(bias) = &e.bias {
                        for (y, b) in out.iter_mut().zip(&bias[first..first + columns]) {
                            *y += b;
                        }
                    }
                }
                row += tile;
            }
        }
        if e.gelu {
            y.iter_mut()
                .for_each(|h| *h *= 0.5 * (erf(*h * std::f32::consts::FRAC_1_SQRT_2) + 1.0));
        }
        if let Some(residual) = residual {
            y.iter_mut().zip(residual).for_each(|(y, r)| *y += r);
        }
        y
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

/// The error function, by Abramowitz and Stegun's 7.1.28 (absolute error under 3e-7, what an f32
/// holds near 1), in a form the compiler vectorises: no branch, no `exp`.
#[allow(clippy::excessive_precision)]
fn erf(x: f32) -> f32 {
    const A: [f32; 6] = [
        0.0705230784,
        0.0422820123,
        0.0092705272,
        0.0001520143,
        0.0002765672,
        0.0000430638,
    ];
    let t = x.abs();
    let p = 1.0 + t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * (A[4] + t * A[5])))));
    let p2 = p * p;
    let p4 = p2 * p2;
    let p8 = p4 * p4;
    (1.0 - 1.0 / (p8 * p8)).copysign(x)
}

/// Integer sums for up to [`TILE`] rows of quantised `x` (`tile` rows of `width` values) against
/// up to [`GROUP`] consecutive panels: `[row][column]`.
fn kernel(xq: &[i16], width: usize, panels: &[i8], tile: usize) -> [[i32; BLOCK]; TILE] {
    debug_assert!(xq.len() == tile * width && tile <= TILE);
    debug_assert!(panels.len().is_multiple_of(width * PANEL) && panels.len() <= width * BLOCK);
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        match tile {
            4 => simd128::kernel::<4>(xq, width, panels),
            3 => simd128::kernel::<3>(xq, width, panels),
            2 => simd128::kernel::<2>(xq, width, panels),
            _ => simd128::kernel::<1>(xq, width, panels),
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        if panels.len() == width * BLOCK && std::arch::is_x86_feature_detected!("avx2") {
            return avx2::kernel(xq, width, panels, tile);
        }
        portable(xq, width, panels, tile)
    }
    #[cfg(not(any(all(target_arch = "wasm32", target_feature = "simd128"), target_arch = "x86_64")))]
    {
        portable(xq, width, panels, tile)
    }
}

/// The kernel in plain Rust: the reference every SIMD kernel must equal.
#[cfg_attr(all(target_arch = "wasm32", target_feature = "simd128"), allow(dead_code))]
fn portable(xq: &[i16], width: usize, panels: &[i8], tile: usize) -> [[i32; BLOCK]; TILE] {
    let mut sums = [[0i32; BLOCK]; TILE];
    for (panel, weights) in panels.chunks_exact(width * PANEL).enumerate() {
        for (row, x) in xq.chunks_exact(width).take(tile).enumerate() {
            let sums = &mut sums[row][panel * PANEL..(panel + 1) * PANEL];
            for (pair, w) in x.chunks_exact(2).zip(weights.chunks_exact(PANEL * 2)) {
                for (sum, w) in sums.iter_mut().zip(w.chunks_exact(2)) {
                    *sum += i32::from(pair[0]) * i32::from(w[0]) + i32::from(pair[1]) * i32::from(w[1]);
                }
            }
        }
    }
    sums
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128 {
    use core::arch::wasm32::*;

    use super::{BLOCK, PANEL, TILE};

    /// `R` rows against one panel: per pair of `x` values, the panel's 16 weights widened to two
    /// `i16x8` (columns 0–3 and 4–7), each multiplied-and-added with the pair splatted.
    pub(super) fn kernel<const R: usize>(xq: &[i16], width: usize, panel: &[i8]) -> [[i32; BLOCK]; TILE] {
        assert!(R <= TILE && xq.len() >= R * width && panel.len() >= width * PANEL && width.is_multiple_of(2));
        let mut low = [i32x4_splat(0); R];
        let mut high = [i32x4_splat(0); R];
        for pair in 0..width / 2 {
            // SAFETY: `pair * 16 + 16 <= width * PANEL` and, below, `r * width + 2 * pair + 2
            // <= R * width`, both asserted above; wasm loads need no alignment.
            let w = unsafe { v128_load(panel.as_ptr().add(pair * 16) as *const v128) };
            let (w_low, w_high) = (i16x8_extend_low_i8x16(w), i16x8_extend_high_i8x16(w));
            for r in 0..R {
                let x = unsafe { v128_load32_splat(xq.as_ptr().add(r * width + pair * 2) as *const u32) };
                low[r] = i32x4_add(low[r], i32x4_dot_i16x8(x, w_low));
                high[r] = i32x4_add(high[r], i32x4_dot_i16x8(x, w_high));
            }
        }
        let mut sums = [[0i32; BLOCK]; TILE];
        for r in 0..R {
            for lane in 0..4 {
                sums[r][lane] = lane_of(low[r], lane);
                sums[r][lane + 4] = lane_of(high[r], lane);
            }
        }
        sums
    }

    fn lane_of(v: v128, lane: usize) -> i32 {
        match lane {
            0 => i32x4_extract_lane::<0>(v),
            1 => i32x4_extract_lane::<1>(v),
            2 => i32x4_extract_lane::<2>(v),
            _ => i32x4_extract_lane::<3>(v),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{BLOCK, PANEL, TILE};

    /// Up to [`TILE`] rows against two panels: per pair of `x` values, each panel's 16 weights
    /// widened to one 16-lane vector, multiplied-and-added with the pair broadcast (in one
    /// instruction, `vpdpwssd`, where the CPU has AVX-VNNI).
    pub(super) fn kernel(xq: &[i16], width: usize, panels: &[i8], tile: usize) -> [[i32; BLOCK]; TILE] {
        assert!(tile <= TILE && xq.len() >= tile * width && panels.len() >= width * BLOCK && width.is_multiple_of(2));
        let vnni = std::arch::is_x86_feature_detected!("avxvnni");
        // SAFETY: the caller checked that the CPU has AVX2, and AVX-VNNI is checked here; the
        // bounds are asserted above.
        unsafe {
            match (tile, vnni) {
                (4, true) => rows_vnni::<4>(xq, width, panels),
                (3, true) => rows_vnni::<3>(xq, width, panels),
                (2, true) => rows_vnni::<2>(xq, width, panels),
                (_, true) => rows_vnni::<1>(xq, width, panels),
                (4, false) => rows::<4>(xq, width, panels),
                (3, false) => rows::<3>(xq, width, panels),
                (2, false) => rows::<2>(xq, width, panels),
                (_, false) => rows::<1>(xq, width, panels),
            }
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rows<const R: usize>(xq: &[i16], width: usize, panels: &[i8]) -> [[i32; BLOCK]; TILE] {
        // SAFETY: the same contract.
        unsafe {
            body::<R>(xq, width, panels, |acc, x, w| {
                _mm256_add_epi32(acc, _mm256_madd_epi16(x, w))
            })
        }
    }

    #[target_feature(enable = "avx2,avxvnni")]
    pub(super) unsafe fn rows_vnni<const R: usize>(xq: &[i16], width: usize, panels: &[i8]) -> [[i32; BLOCK]; TILE] {
        // SAFETY: the same contract.
        unsafe { body::<R>(xq, width, panels, |acc, x, w| _mm256_dpwssd_avx_epi32(acc, x, w)) }
    }

    /// The loop both variants share, inlined into each so it is compiled with its features.
    #[inline(always)]
    unsafe fn body<const R: usize>(
        xq: &[i16],
        width: usize,
        panels: &[i8],
        madd: impl Fn(__m256i, __m256i, __m256i) -> __m256i,
    ) -> [[i32; BLOCK]; TILE] {
        let second = width * PANEL;
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for pair in 0..width / 2 {
            // SAFETY (the caller's contract): `second + pair * 16 + 16 <= width * BLOCK` and
            // `r * width + 2 * pair + 2 <= R * width`.
            let (w0, w1) = unsafe {
                (
                    _mm256_cvtepi8_epi16(_mm_loadu_si128(panels.as_ptr().add(pair * 16) as *const __m128i)),
                    _mm256_cvtepi8_epi16(_mm_loadu_si128(
                        panels.as_ptr().add(second + pair * 16) as *const __m128i
                    )),
                )
            };
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_set1_epi32(unsafe {
                    (xq.as_ptr().add(r * width + pair * 2) as *const i32).read_unaligned()
                });
                acc[0] = madd(acc[0], x, w0);
                acc[1] = madd(acc[1], x, w1);
            }
        }
        let mut sums = [[0i32; BLOCK]; TILE];
        for (sums, acc) in sums.iter_mut().zip(acc) {
            // SAFETY: 16 i32 lanes into 16 i32s.
            unsafe {
                _mm256_storeu_si256(sums.as_mut_ptr() as *mut __m256i, acc[0]);
                _mm256_storeu_si256(sums.as_mut_ptr().add(PANEL) as *mut __m256i, acc[1]);
            }
        }
        sums
    }
}

impl Op for MatMulInt8 {
    fn name(&self) -> StaticName {
        "MatMulInt8".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("int8 weight {} × {}", self.weights.k, self.weights.n)])
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
            k == self.weights.k,
            "MatMulInt8: input of shape {shape:?} against a weight of {} rows",
            self.weights.k
        );
        let rows = x.len() / k;
        let mut out_shape: TVec<usize> = shape.into();
        if let Some(last) = out_shape.last_mut() {
            *last = self.weights.n;
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
            *last = self.weights.n.to_dim();
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
        let n = self.weights.n;
        s.given(&inputs[0].rank, move |s, rank| {
            let last = (rank as usize).saturating_sub(1);
            for axis in 0..last {
                s.equals(&inputs[0].shape[axis], &outputs[0].shape[axis])?;
            }
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
/// values), and its string attribute `activation` (`gelu`, or absent).
pub(super) fn parse(_ctx: &ParsingContext, node: &pb::NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let attribute = |name: &str| node.attribute.iter().find(|a| a.name == name);
    let tensor = |name: &str| -> TractResult<Option<Tensor>> {
        match attribute(name).and_then(|a| a.t.as_ref()) {
            Some(t) => super::rewrite::proto_tensor(t)?
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
    let (k, n) = (q.shape()[0], q.shape()[1]);
    let (q, scale) = (q.try_as_plain_ram()?, scale.try_as_plain_ram()?);
    let bias = bias.as_ref().map(|b| b.try_as_plain_ram()).transpose()?;
    let bias = bias.as_ref().map(|b| b.as_slice::<f32>()).transpose()?;
    let op = MatMulInt8::new(q.as_slice::<i8>()?, k, n, scale.as_slice::<f32>()?, bias, gelu)?;
    Ok((Box::new(op), vec![]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), seeded.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn f32(&mut self) -> f32 {
            (self.next() % 20_001) as f32 / 10_000.0 - 1.0
        }
        fn i8(&mut self) -> i8 {
            (self.next() % 256) as u8 as i8
        }
    }

    fn reference(x: &[f32], q: &[i8], scale: &[f32], k: usize, n: usize) -> Vec<f32> {
        let rows = x.len() / k;
        let mut y = vec![0f32; rows * n];
        for r in 0..rows {
            for c in 0..n {
                let mut sum = 0f64;
                for i in 0..k {
                    sum += f64::from(x[r * k + i]) * f64::from(q[i * n + c]);
                }
                y[r * n + c] = (sum * f64::from(scale[c])) as f32;
            }
        }
        y
    }

    #[test]
    fn matches_the_f32_product_on_odd_shapes() {
        let seed = 0x5eed_1234_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        for (rows, k, n) in [
            (1, 1, 1),
            (3, 5, 7),
            (5, 384, 9),
            (9, 17, 24),
            (13, 1536, 20),
            (4, 2, 8),
        ] {
            let x: Vec<f32> = (0..rows * k).map(|_| rng.f32() * 4.0).collect();
            let q: Vec<i8> = (0..k * n).map(|_| rng.i8()).collect();
            let scale: Vec<f32> = (0..n).map(|_| rng.f32().abs() * 0.01 + 0.001).collect();
            let op = MatMulInt8::new(&q, k, n, &scale, None, false).unwrap();
            let got = op.apply(&x, rows, None);
            let want = reference(&x, &q, &scale, k, n);
            for r in 0..rows {
                // Error bound: each x rounded by at most half a level of its row's largest value.
                let largest = x[r * k..(r + 1) * k].iter().fold(0f32, |m, v| m.max(v.abs()));
                for c in 0..n {
                    let bound = k as f32 * 0.5 * largest / op.weights.levels * 128.0 * scale[c] + 1e-5;
                    let (g, w) = (got[r * n + c], want[r * n + c]);
                    assert!(
                        (g - w).abs() <= bound,
                        "{rows}×{k}×{n} [{r},{c}]: {g} vs {w} (bound {bound})"
                    );
                }
            }
        }
    }

    #[test]
    fn the_simd_kernel_equals_the_portable_one() {
        let seed = 0xabcd_ef01_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        let width = 40;
        let xq: Vec<i16> = (0..TILE * width).map(|_| (rng.next() % 65_535) as i32 as i16).collect();
        let panel: Vec<i8> = (0..width * BLOCK).map(|_| rng.i8()).collect();
        for tile in 1..=TILE {
            let xq = &xq[..tile * width];
            assert_eq!(
                kernel(xq, width, &panel, tile),
                portable(xq, width, &panel, tile),
                "tile {tile}"
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn both_avx2_kernels_equal_the_portable_one() {
        let seed = 0x0dd_ba11_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        let width = 24;
        let xq: Vec<i16> = (0..TILE * width).map(|_| (rng.next() % 65_535) as i32 as i16).collect();
        let panels: Vec<i8> = (0..width * BLOCK).map(|_| rng.i8()).collect();
        let want = portable(&xq, width, &panels, TILE);
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 checked just above.
            assert_eq!(unsafe { avx2::rows::<TILE>(&xq, width, &panels) }, want);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("avxvnni") {
            // SAFETY: both checked just above.
            assert_eq!(unsafe { avx2::rows_vnni::<TILE>(&xq, width, &panels) }, want);
        }
    }

    #[test]
    fn zero_rows_stay_zero_and_bad_weights_are_refused() {
        let op = MatMulInt8::new(&[1, 2, 3, 4], 2, 2, &[0.5], None, false).unwrap();
        assert_eq!(op.apply(&[0.0, 0.0, 1.0, 0.0], 2, None), [0.0, 0.0, 0.5, 1.0]);
        assert!(MatMulInt8::new(&[1, 2, 3], 2, 2, &[1.0], None, false).is_err());
        assert!(MatMulInt8::new(&[1, 2, 3, 4], 2, 2, &[1.0, 2.0, 3.0], None, false).is_err());
        assert!(MatMulInt8::new(&[1, 2, 3, 4], 2, 2, &[1.0], Some(&[1.0]), false).is_err());
    }

    #[test]
    fn the_epilogue_adds_bias_then_gelu_then_residual_and_takes_a_factor() {
        // x = [1, 0] picks q's first row: [2, -4] · 0.5 = [1, -2].
        let x = [1.0, 0.0];
        let plain = MatMulInt8::new(&[2, -4, 3, 1], 2, 2, &[0.5], Some(&[0.5, 1.0]), false).unwrap();
        assert_eq!(plain.apply(&x, 1, None), [1.5, -1.0]);
        assert_eq!(plain.apply(&x, 1, Some(&[1.0, 2.0])), [2.5, 1.0]);
        assert_eq!(plain.times(2.0).apply(&x, 1, None), [3.0, -2.0]);
        let gelu = MatMulInt8::new(&[2, -4, 3, 1], 2, 2, &[0.5], Some(&[0.5, 1.0]), true).unwrap();
        let got = gelu.apply(&x, 1, None);
        // GELU(h) = h·Φ(h): GELU(1.5) = 1.5 · 0.9331928, GELU(-1) = -0.1586553.
        assert!(
            (got[0] - 1.399_789).abs() < 1e-5 && (got[1] + 0.158_655).abs() < 1e-5,
            "{got:?}"
        );
    }

    #[test]
    fn erf_is_within_its_bound() {
        // Reference values of erf (Abramowitz and Stegun, table 7.1).
        for (x, want) in [
            (0.0, 0.0),
            (0.1, 0.112_462_9),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (3.5, 0.999_999_3),
        ] {
            assert!((erf(x) - want).abs() < 5e-7, "erf({x}) = {} not {want}", erf(x));
            assert!((erf(-x) + want).abs() < 5e-7);
        }
    }
}
