//! sextant's hot loops, in a crate of their own so the WebAssembly build can compile them at
//! full speed (`opt-level = 3`) while the rest of the engine is compiled for size.
//!
//! [`PackedInt8`] is the product of f32 activations with int8 weights done in integers, which
//! `sextant::embed`'s `MatMulInt8` operator runs for every linear layer of an int8 model.
//! A query's products have as few rows as it has tokens, so they are bound by reading the
//! weights and by multiply-adds per instruction, not by the size of the arithmetic. Here the
//! weights stay int8, packed once at load (a quarter of the f32 bytes), and each row of `x` is
//! quantised on the fly to 16-bit integers with its own scale, so the product runs on the
//! integer multiply-add of every SIMD set (`pmaddwd`, `vpdpwssd`, WebAssembly's
//! `i32x4.dot_i16x8_s`): eight multiply-adds per instruction where f32 does four in two. Rows
//! may be rounded to bytes instead ([`Rows::Bytes`]), which AVX-VNNI and AVX-512 VNNI multiply
//! four a lane (`vpdpbusd`) and AMX sixteen thousand a tile product (`tdpbusd`). The sums are
//! exact integers, so every kernel (WebAssembly SIMD, AVX2, AVX-VNNI, AVX-512 VNNI, AMX, plain
//! Rust) gives the same bits.
//!
//! Error: the only rounding is `x`'s, each row to levels of its own largest value: as many as
//! keep every column's sum of products inside an `i32`, at most 32,767 (15 bits, as for all
//! of all-MiniLM-L6-v2's weights), about a tenth of the error the int8 weights themselves carry.
//!
//! Layout of the packed weights: columns in panels of [`PANEL`], rows in pairs; panel `j`, pair
//! `p` holds 16 bytes, `q[2p][8j + c]` and `q[2p + 1][8j + c]` for `c` in `0..8` (zero past the
//! edges), which is exactly what one 16-bit multiply-add pair instruction wants.

pub mod exact;

/// Columns per panel of packed weights.
pub const PANEL: usize = 8;

/// Rows of `x` per kernel call: six on x86_64 (twelve accumulators of two panels in AVX2's
/// sixteen registers), else four.
const TILE: usize = if cfg!(target_arch = "x86_64") { 6 } else { 4 };

/// Rows of `x` per call of the AVX-512 kernel: twelve accumulators in its 32 registers, so each
/// load of weights serves twice the rows.
const WIDE_TILE: usize = 12;

/// Rows of `x` any kernel call may return.
const MAX_TILE: usize = if cfg!(target_arch = "x86_64") { WIDE_TILE } else { TILE };

/// A kernel call's integer sums: `[row][column]`, the first `tile` rows meaningful.
type Sums = [[i32; BLOCK]; MAX_TILE];

/// Panels per kernel call: two where a register holds a pair of them (AVX2), else one.
const GROUP: usize = if cfg!(target_arch = "x86_64") { 2 } else { 1 };

/// Columns per kernel call.
const BLOCK: usize = GROUP * PANEL;

/// A method that runs [`PackedInt8::product_in`] compiled with the target features named
/// (x86_64 only), so its loops are vectorised for them.
macro_rules! compiled_for {
    ($(#[$doc:meta])* $name:ident, $features:literal) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name(
            &self,
            x: &[f32],
            rows: usize,
            epilogue: &Epilogue<'_>,
            residual: Option<&[f32]>,
        ) -> Vec<f32> {
            self.product_in(x, rows, epilogue, residual)
        }
    };
}

/// `$kernel::<R>(args)` for the `R` equal to `$tile`, one of the `R`s listed, else 1: a tile of
/// rows known at run time to a kernel compiled for each number of rows.
macro_rules! for_tile {
    ($tile:expr, $kernel:ident $args:tt, [$($rows:literal),*]) => {
        match $tile {
            $($rows => $kernel::<$rows> $args,)*
            _ => $kernel::<1> $args,
        }
    };
}

/// How each row of `x` is rounded to integers before the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// To `±levels` of the row's largest magnitude (at most 15 bits, the module docs): the
    /// finer rounding, multiplied two values an instruction (`vpdpwssd`, `pmaddwd`).
    Wide,
    /// To bytes: `0..=255` spanning the row from its least to its largest value (zero
    /// included), `x ≈ (xq − zero) · scale` with one whole zero point and one scale a row. Where
    /// the CPU multiplies bytes (AMX: `tdpbusd`, a 16 × 64 by 64 × 16 tile product an
    /// instruction; AVX-512 VNNI, AVX-VNNI: `vpdpbusd`, four values a lane an instruction) the
    /// weights are also packed in quads of rows; elsewhere (WebAssembly, AVX2 alone, plain
    /// Rust) the same bytes go through the 16-bit kernels. The zero point is taken out after the
    /// product with each column's sum of weights, `Σ (xq − zero) · q = Σ xq · q − zero · Σ q`, in
    /// integers, so every kernel still gives the same bits.
    Bytes,
}

/// An int8 weight `q` of `k × n`, packed for the kernels.
#[derive(Debug)]
pub struct PackedInt8 {
    k: usize,
    n: usize,
    /// `ceil(k / 2)`.
    pairs: usize,
    /// `panels × pairs × 16` bytes (module docs).
    data: Vec<i8>,
    /// `data` widened to 16 bits once, where the AVX2 kernel runs: it reads them as they are
    /// multiplied instead of widening each panel again for every tile of rows (twice the bytes
    /// of `data`, natively only; not with [`Rows::Bytes`] where the byte kernels run).
    #[cfg(target_arch = "x86_64")]
    wide: Vec<i16>,
    /// With [`Rows::Bytes`] where the CPU multiplies bytes: blocks of [`BLOCK`] columns, each
    /// `16 · ceil(k / 64)` quads of 64 bytes (whole AMX tiles), `q[4p + j][16b + c]` at `((b · quads + p) · 16 + c) · 4 +
    /// j` (zero past the edges): one 512-bit `vpdpbusd` operand, or two 256-bit ones. Else empty.
    #[cfg(target_arch = "x86_64")]
    quads: Vec<i8>,
    /// How rows of `x` are rounded.
    rows: Rows,
    /// `Σ_k q[k][c]` for each column `c`: what takes a row's zero point out of its sums.
    column_sums: Vec<i32>,
    /// The largest magnitude a row of `x` is rounded to: with [`Rows::Wide`], as many levels as
    /// keep every column's sum `Σ |x| · |q|` inside an `i32` (`i32::MAX / max_c Σ_k |q[k][c]|`),
    /// at most `i16::MAX`; with [`Rows::Bytes`], 255.
    levels: f32,
}

/// What is done to each column of the integer sums after the product, in this order: times
/// `scale`, plus `bias`, then GELU.
#[derive(Debug, Clone, Copy)]
pub struct Epilogue<'a> {
    /// One scale per column.
    pub scale: &'a [f32],
    /// One bias per column, added after the scale.
    pub bias: Option<&'a [f32]>,
    /// GELU (`h · (erf(h / √2) + 1) / 2`) after the bias.
    pub gelu: bool,
}

impl PackedInt8 {
    /// Packs `q` (`k × n` values, row-major) for rows of `x` rounded as `rows` says; `None` if
    /// `q` has not `k × n > 0` values, or a column so large that its sums could leave an `i32`
    /// (`Σ_k |q[k][c]|` over `i32::MAX`, or over `i32::MAX / 255` with [`Rows::Bytes`]).
    pub fn new(q: &[i8], k: usize, n: usize, rows: Rows) -> Option<Self> {
        if k == 0 || n == 0 || q.len() != k.checked_mul(n)? {
            return None;
        }
        let mut magnitudes = vec![0u64; n];
        let mut column_sums = vec![0i64; n];
        for values in q.chunks_exact(n) {
            for ((magnitude, sum), &v) in magnitudes.iter_mut().zip(&mut column_sums).zip(values) {
                *magnitude += u64::from(v.unsigned_abs());
                *sum += i64::from(v);
            }
        }
        let largest = magnitudes.into_iter().max().unwrap_or(0).max(1);
        // |x| ≤ levels keeps every column's sum of products within an i32, partial sums too;
        // with bytes, |xq|, |xq − zero| ≤ 255 do.
        let levels = match rows {
            Rows::Wide => (i32::MAX as u64 / largest).min(i16::MAX as u64),
            Rows::Bytes => {
                if largest > i32::MAX as u64 / 255 {
                    return None;
                }
                255
            }
        };
        if levels == 0 {
            return None;
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
        #[cfg(target_arch = "x86_64")]
        let (wide, quads) = {
            let simd = Simd::detect();
            let byte_kernel = rows == Rows::Bytes && simd.multiplies_bytes();
            let wide = if simd.avx2 && !byte_kernel {
                data.iter().map(|&v| i16::from(v)).collect()
            } else {
                Vec::new()
            };
            let mut quads = Vec::new();
            if byte_kernel {
                // Quads a block, a whole number of 16 (64 bytes of a row: one AMX tile deep).
                let depth = k.div_ceil(64) * 16;
                quads = vec![0i8; n.div_ceil(BLOCK) * depth * BLOCK * 4];
                for (row, values) in q.chunks_exact(n).enumerate() {
                    let (quad, j) = (row / 4, row % 4);
                    for (col, &v) in values.iter().enumerate() {
                        let (block, c) = (col / BLOCK, col % BLOCK);
                        quads[((block * depth + quad) * BLOCK + c) * 4 + j] = v;
                    }
                }
            }
            (wide, quads)
        };
        Some(Self {
            k,
            n,
            pairs,
            data,
            #[cfg(target_arch = "x86_64")]
            wide,
            #[cfg(target_arch = "x86_64")]
            quads,
            rows,
            // |Σ q| ≤ Σ |q| ≤ i32::MAX, checked above.
            column_sums: column_sums.into_iter().map(|s| s as i32).collect(),
            levels: levels as f32,
        })
    }

    /// Rows of the weight (the length of a row of `x`).
    pub fn k(&self) -> usize {
        self.k
    }

    /// Columns of the weight (the length of a row of the product).
    pub fn n(&self) -> usize {
        self.n
    }

    /// `act((x · q) ∘ scale + bias) + residual` for `rows` rows of `x` (`rows × k` values,
    /// row-major): `rows × n` values. `epilogue.scale` and `bias` hold `n` values, `residual`
    /// (if any) `rows × n`.
    // Never inlined: a caller compiled for size would take the loops in and optimise them for
    // size too (WebAssembly's link-time optimisation keeps each function's own opt-level).
    #[inline(never)]
    pub fn product(&self, x: &[f32], rows: usize, epilogue: &Epilogue<'_>, residual: Option<&[f32]>) -> Vec<f32> {
        assert!(
            x.len() == rows * self.k,
            "x holds {} values, not {rows} × {}",
            x.len(),
            self.k
        );
        assert!(epilogue.scale.len() == self.n && epilogue.bias.is_none_or(|b| b.len() == self.n));
        assert!(residual.is_none_or(|r| r.len() == rows * self.n));
        #[cfg(target_arch = "x86_64")]
        {
            let simd = Simd::detect();
            if simd.avx512 {
                // SAFETY: `Simd::detect` found AVX-512F (and AVX2) on this CPU.
                return unsafe { self.product_avx512(x, rows, epilogue, residual) };
            }
            if simd.avx2 {
                // SAFETY: `Simd::detect` found AVX2 on this CPU.
                return unsafe { self.product_avx2(x, rows, epilogue, residual) };
            }
        }
        self.product_in(x, rows, epilogue, residual)
    }

    compiled_for! {
        /// [`PackedInt8::product`] compiled for AVX2, so the rows' rounding, the epilogue and
        /// GELU run eight lanes at a time: the same operations in the same order (Rust fuses no
        /// multiply-add by itself), so the same bits.
        ///
        /// # Safety
        ///
        /// The CPU must have AVX2.
        product_avx2, "avx2"
    }

    compiled_for! {
        /// [`PackedInt8::product`] compiled for AVX-512: the same, sixteen lanes at a time.
        ///
        /// # Safety
        ///
        /// The CPU must have AVX-512F and AVX2.
        product_avx512, "avx512f,avx2"
    }

    /// The body of [`PackedInt8::product`], its arguments checked.
    #[inline(always)]
    fn product_in(&self, x: &[f32], rows: usize, epilogue: &Epilogue<'_>, residual: Option<&[f32]>) -> Vec<f32> {
        let width = self.pairs * 2;
        // Each row rounded with its own scale (and zero point): x ≈ (xq − zero) · row_scale.
        let mut xq = vec![0i16; rows * width];
        let mut row_scale = vec![0f32; rows];
        let mut zero = vec![0i32; rows];
        let quantised = x.chunks_exact(self.k).zip(xq.chunks_exact_mut(width));
        for (((values, quantised), scale), zero) in quantised.zip(&mut row_scale).zip(&mut zero) {
            (*scale, *zero) = match self.rows {
                Rows::Wide => (round_row(values, quantised, self.levels), 0),
                Rows::Bytes => round_row_to_bytes(values, quantised),
            };
        }
        let mut y = vec![0f32; rows * self.n];
        let simd = Simd::detect();
        let step = if simd.avx512 { WIDE_TILE } else { TILE };
        // The sums of consecutive rows from `row` on, columns from `first` on, into `y`.
        let mut finish = |sums: &[[i32; BLOCK]], row: usize, first: usize| {
            let columns = BLOCK.min(self.n - first);
            let scale = &epilogue.scale[first..first + columns];
            let column_sums = &self.column_sums[first..first + columns];
            for (r, sums) in sums.iter().enumerate() {
                let out = &mut y[(row + r) * self.n + first..][..columns];
                let (x_scale, zero) = (row_scale[row + r], zero[row + r]);
                for (((y, &sum), &scale), &column_sum) in out.iter_mut().zip(sums).zip(scale).zip(column_sums) {
                    *y = (sum - zero * column_sum) as f32 * x_scale * scale;
                }
                if let Some(bias) = epilogue.bias {
                    for (y, b) in out.iter_mut().zip(&bias[first..first + columns]) {
                        *y += b;
                    }
                }
            }
        };
        #[cfg(target_arch = "x86_64")]
        if !self.quads.is_empty() && simd.multiplies_bytes() {
            // The rows as bytes, each `depth` long (whole tiles of 64; past `k` the weights are
            // zero), and with AMX zero rows up to a whole number of its tiles' rows.
            let depth = self.k.div_ceil(64) * 64;
            let held = if simd.amx {
                rows.next_multiple_of(amx::ROWS)
            } else {
                rows
            };
            let mut bytes = vec![0u8; held * depth];
            for (to, from) in bytes.chunks_exact_mut(depth).zip(xq.chunks_exact(width)) {
                to.iter_mut().zip(&from[..self.k]).for_each(|(b, &v)| *b = v as u8);
            }
            if simd.amx {
                let mut sums = [[[0i32; BLOCK]; amx::ROWS]; 2];
                // SAFETY: `Simd::detect` found AMX-INT8 and Linux gave this process its tiles;
                // the tiles are configured here and released below, on this thread.
                unsafe { amx::configure() };
                // Two blocks at a time (the last alone if their number is odd).
                for (pair, weights) in self.quads.chunks(2 * depth * BLOCK).enumerate() {
                    let blocks = weights.len() / (depth * BLOCK);
                    for row in (0..rows).step_by(amx::ROWS) {
                        let x = &bytes[row * depth..(row + amx::ROWS) * depth];
                        // SAFETY: configured above; `x` holds `amx::ROWS` rows of `depth` bytes,
                        // `weights` `blocks` blocks of `depth / 4` quads, `depth` a multiple of 64.
                        unsafe { amx::blocks(x, depth, weights, blocks, &mut sums) };
                        let held = amx::ROWS.min(rows - row);
                        for (b, sums) in sums.iter().take(blocks).enumerate() {
                            finish(&sums[..held], row, (2 * pair + b) * BLOCK);
                        }
                    }
                }
                // SAFETY: the tiles configured above are no longer needed.
                unsafe { amx::release() };
                return self.finish_rows(y, epilogue, residual);
            }
            for (block, weights) in self.quads.chunks_exact(depth * BLOCK).enumerate() {
                let mut row = 0;
                while row < rows {
                    let tile = step.min(rows - row);
                    let x = &bytes[row * depth..(row + tile) * depth];
                    // SAFETY: `Simd::detect` found AVX-512 VNNI (`avx512`) or AVX-VNNI with AVX2.
                    let sums = unsafe {
                        if simd.avx512 {
                            bytes::wide_kernel(x, depth, weights, tile)
                        } else {
                            bytes::kernel(x, depth, weights, tile)
                        }
                    };
                    finish(&sums[..tile], row, block * BLOCK);
                    row += tile;
                }
            }
            return self.finish_rows(y, epilogue, residual);
        }
        let block_len = self.pairs * PANEL * 2 * GROUP;
        for (block, weights) in self.data.chunks(block_len).enumerate() {
            #[cfg(target_arch = "x86_64")]
            let weights = Panels {
                narrow: weights,
                wide: self.wide.get(block * block_len..block * block_len + weights.len()),
            };
            #[cfg(not(target_arch = "x86_64"))]
            let weights = Panels { narrow: weights };
            let mut row = 0;
            while row < rows {
                let tile = step.min(rows - row);
                let sums = kernel(&xq[row * width..(row + tile) * width], width, &weights, tile, simd);
                finish(&sums[..tile], row, block * BLOCK);
                row += tile;
            }
        }
        self.finish_rows(y, epilogue, residual)
    }

    /// GELU (if the epilogue asks) and the residual (if any), after the scale and bias.
    #[inline(always)]
    fn finish_rows(&self, mut y: Vec<f32>, epilogue: &Epilogue<'_>, residual: Option<&[f32]>) -> Vec<f32> {
        if epilogue.gelu {
            y.iter_mut()
                .for_each(|h| *h *= 0.5 * (erf(*h * std::f32::consts::FRAC_1_SQRT_2) + 1.0));
        }
        if let Some(residual) = residual {
            y.iter_mut().zip(residual).for_each(|(y, r)| *y += r);
        }
        y
    }
}

/// Rounds `values` to `±levels` of their largest magnitude into `quantised` ([`Rows::Wide`]):
/// the row's scale, NaN if a value is not finite, 0 for a row of zeros (left zero).
#[inline(always)]
fn round_row(values: &[f32], quantised: &mut [i16], levels: f32) -> f32 {
    let largest = largest_magnitude(values);
    if !largest.is_finite() {
        return f32::NAN;
    }
    if largest == 0.0 {
        return 0.0;
    }
    let inverse = levels / largest;
    for (q, v) in quantised.iter_mut().zip(values) {
        *q = round_to_level(v * inverse, levels);
    }
    largest / levels
}

/// Rounds `values` to bytes `0..=255` spanning their least to their largest value, zero
/// included, into `quantised` ([`Rows::Bytes`]): the row's scale and zero point, with
/// `values ≈ (quantised − zero) · scale` and 0 exactly `zero`. NaN if a value (or the span) is
/// not finite; `(0, 0)` for a row of zeros (left zero).
#[inline(always)]
fn round_row_to_bytes(values: &[f32], quantised: &mut [i16]) -> (f32, i32) {
    let (least, largest) = extremes(values);
    let span = largest - least;
    if !span.is_finite() {
        return (f32::NAN, 0);
    }
    if span == 0.0 {
        return (0.0, 0);
    }
    let inverse = 255.0 / span;
    // -least ≤ span, so within 0..=255.
    let zero = i32::from(round_to_level(-least * inverse, 255.0));
    for (q, v) in quantised.iter_mut().zip(values) {
        *q = (i32::from(round_to_level(v * inverse, 255.0)) + zero).clamp(0, 255) as i16;
    }
    (span / 255.0, zero)
}

/// The least and the largest of `values` and zero, both NaN if any value is NaN: eight running
/// pairs, as [`largest_magnitude`] (the same values in any order).
#[inline(always)]
fn extremes(values: &[f32]) -> (f32, f32) {
    let mut low = [0f32; 8];
    let mut high = [0f32; 8];
    let mut nan = false;
    let mut rest = values.chunks_exact(8);
    let mut take = |low: &mut [f32; 8], high: &mut [f32; 8], chunk: &[f32]| {
        for ((low, high), &v) in low.iter_mut().zip(high.iter_mut()).zip(chunk) {
            nan |= v.is_nan();
            *low = if v < *low { v } else { *low };
            *high = if v > *high { v } else { *high };
        }
    };
    for chunk in &mut rest {
        take(&mut low, &mut high, chunk);
    }
    take(&mut low, &mut high, rest.remainder());
    if nan {
        return (f32::NAN, f32::NAN);
    }
    let least = low.into_iter().fold(0f32, |m, l| if l < m { l } else { m });
    let largest = high.into_iter().fold(0f32, |m, l| if l > m { l } else { m });
    (least, largest)
}

/// The largest `|v|` of `values`, or NaN if any is NaN (so a row with a NaN comes out NaN, as
/// the f32 product would). Eight running maxima, independent so they vectorise: the largest of
/// a set is the same value in any order, so this is the bits of a plain fold.
#[inline(always)]
fn largest_magnitude(values: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let mut nan = false;
    let mut rest = values.chunks_exact(8);
    for chunk in &mut rest {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            let a = v.abs();
            nan |= a.is_nan();
            *lane = if a > *lane { a } else { *lane };
        }
    }
    for (lane, v) in lanes.iter_mut().zip(rest.remainder()) {
        let a = v.abs();
        nan |= a.is_nan();
        *lane = if a > *lane { a } else { *lane };
    }
    if nan {
        return f32::NAN;
    }
    lanes.into_iter().fold(0f32, |m, l| if l > m { l } else { m })
}

/// `x` rounded to the nearest integer, halves away from zero, then clamped to `±levels`, as an
/// `i16`: what `x.round().clamp(-levels, levels) as i16` gives for every `x` (NaN: 0), without
/// the call `round` is on x86_64, so a loop of it vectorises. `levels` is a whole number of at
/// most `i16::MAX`. Two forms of the same function, each the faster where it runs (both tested
/// natively): on x86_64, [`round_to_level_in_range`]; elsewhere (WebAssembly, whose saturating
/// conversion is one instruction, vector too), [`round_to_level_saturating`].
#[inline(always)]
fn round_to_level(x: f32, levels: f32) -> i16 {
    if cfg!(target_arch = "x86_64") {
        round_to_level_in_range(x, levels)
    } else {
        round_to_level_saturating(x, levels)
    }
}

/// [`round_to_level`] with Rust's `as` conversion, which saturates and makes NaN 0: on x86_64
/// that is a scalar conversion a value, even in a loop the compiler vectorises.
#[inline(always)]
fn round_to_level_saturating(x: f32, levels: f32) -> i16 {
    // Truncation toward zero, exact; what is left of x is exact too (|x| < 2^24 has no bits
    // below the integer's that the subtraction could lose).
    // Beyond levels + 1 every x comes out as ±levels: clamped first, the integers stay small.
    let x = x.clamp(-levels - 1.0, levels + 1.0);
    let whole = x as i32;
    let rest = x - whole as f32;
    let rounded = whole + i32::from(rest >= 0.5) - i32::from(rest <= -0.5);
    let limit = levels as i32;
    rounded.clamp(-limit, limit) as i16
}

/// [`round_to_level`] with every value brought in range before a plain conversion, which
/// vectorises on x86_64 (`vcvttps2dq`): `max` and `min` take the bound where x is NaN, made 0 at
/// the end. In WebAssembly their NaN rules cost more than `as` saves.
#[inline(always)]
fn round_to_level_in_range(x: f32, levels: f32) -> i16 {
    let nan = x.is_nan();
    let x = x.max(-levels - 1.0).min(levels + 1.0);
    // SAFETY: `x` is within ±(levels + 1) ≤ ±32,768 (not NaN: `max` took the bound), so it
    // truncates to an i32.
    let whole: i32 = unsafe { x.to_int_unchecked() };
    let rest = x - whole as f32;
    let rounded = whole + i32::from(rest >= 0.5) - i32::from(rest <= -0.5);
    let limit = levels as i32;
    let rounded = rounded.clamp(-limit, limit);
    (if nan { 0 } else { rounded }) as i16
}

/// The weights of one kernel call: up to [`GROUP`] panels, and on x86_64 the same widened to 16
/// bits where the AVX2 kernel runs.
struct Panels<'a> {
    narrow: &'a [i8],
    #[cfg(target_arch = "x86_64")]
    wide: Option<&'a [i16]>,
}

/// The error function, by Abramowitz and Stegun's 7.1.28 (absolute error under 3e-7, what an f32
/// holds near 1), in a form the compiler vectorises: no branch, no `exp`.
#[allow(clippy::excessive_precision)]
pub fn erf(x: f32) -> f32 {
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

/// The instructions the CPU offers the kernels beyond the build's baseline, found once per
/// product (WebAssembly's SIMD is fixed at build time, `+simd128`).
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Simd {
    /// AVX2: the x86_64 kernel.
    avx2: bool,
    /// AVX-VNNI beside AVX2: its fused multiply-add of pairs.
    vnni: bool,
    /// AVX-512 with VNNI beside AVX2: the same multiply-add of pairs on both panels at once.
    avx512: bool,
    /// AMX-INT8 beside AVX-512 VNNI, its tiles granted by the OS: byte rows as tile products.
    amx: bool,
}

impl Simd {
    /// Whether a byte kernel ([`Rows::Bytes`]) runs here: AMX (always beside AVX-512 VNNI here),
    /// AVX-512 VNNI or AVX-VNNI.
    #[cfg(target_arch = "x86_64")]
    fn multiplies_bytes(&self) -> bool {
        self.avx512 || self.vnni
    }

    /// What this CPU has, less what `SEXTANT_SIMD` leaves out (`portable`, `avx2`, `avx-vnni` or
    /// `avx-512` (no AMX):
    /// the best kernel to use, for side-by-side measurements; unset: the best there is; anything
    /// else: the best there is, said once on stderr). The only
    /// constructor: the kernels trust what it says. Read once.
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            static FOUND: std::sync::OnceLock<Simd> = std::sync::OnceLock::new();
            *FOUND.get_or_init(|| {
                let limit = std::env::var("SEXTANT_SIMD").unwrap_or_default();
                if !matches!(limit.as_str(), "" | "portable" | "avx2" | "avx-vnni" | "avx-512") {
                    // It exists for side-by-side measurements: a misspelt cap must not pass for one.
                    eprintln!(
                        "sextant: SEXTANT_SIMD={limit:?} is not one of portable, avx2, avx-vnni, avx-512; using the best kernel this CPU has"
                    );
                }
                let avx2 = limit != "portable" && std::arch::is_x86_feature_detected!("avx2");
                let vnni = avx2 && limit != "avx2" && std::arch::is_x86_feature_detected!("avxvnni");
                let avx512 = avx2
                    && !matches!(limit.as_str(), "avx2" | "avx-vnni")
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vnni");
                let amx = avx512 && limit.is_empty() && amx::available();
                Self {
                    avx2,
                    vnni,
                    avx512,
                    amx,
                }
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Self {
                avx2: false,
                vnni: false,
                avx512: false,
                amx: false,
            }
        }
    }
}

/// Integer sums for up to [`TILE`] rows ([`WIDE_TILE`] with AVX-512) of quantised `x` (`tile` rows of `width` values) against
/// up to [`GROUP`] consecutive panels: `[row][column]`.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn kernel(xq: &[i16], width: usize, panels: &Panels<'_>, tile: usize, simd: Simd) -> Sums {
    debug_assert!(xq.len() == tile * width && tile <= if simd.avx512 { WIDE_TILE } else { TILE });
    let narrow = panels.narrow;
    debug_assert!(narrow.len().is_multiple_of(width * PANEL) && narrow.len() <= width * BLOCK);
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        use simd128::kernel as simd128_rows;
        for_tile!(tile, simd128_rows(xq, width, narrow), [4, 3, 2])
    }
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(wide) = panels.wide.filter(|w| w.len() == width * BLOCK && simd.avx2) {
            // SAFETY: `simd` comes from `Simd::detect`, which found AVX2 (and AVX-VNNI or
            // AVX-512 VNNI if it says so) on this CPU.
            return unsafe {
                if simd.avx512 {
                    avx512::kernel(xq, width, wide, tile)
                } else {
                    avx2::kernel(xq, width, wide, tile, simd.vnni)
                }
            };
        }
        portable(xq, width, narrow, tile)
    }
    #[cfg(not(any(all(target_arch = "wasm32", target_feature = "simd128"), target_arch = "x86_64")))]
    {
        portable(xq, width, narrow, tile)
    }
}

/// The kernel in plain Rust: the reference every SIMD kernel must equal.
#[cfg_attr(all(target_arch = "wasm32", target_feature = "simd128"), allow(dead_code))]
fn portable(xq: &[i16], width: usize, panels: &[i8], tile: usize) -> Sums {
    let mut sums = [[0i32; BLOCK]; MAX_TILE];
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

    use super::{Sums, BLOCK, MAX_TILE, PANEL, TILE};

    /// `R` rows against one panel: per pair of `x` values, the panel's 16 weights widened to two
    /// `i16x8` (columns 0–3 and 4–7), each multiplied-and-added with the pair splatted.
    pub(super) fn kernel<const R: usize>(xq: &[i16], width: usize, panel: &[i8]) -> Sums {
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
        let mut sums = [[0i32; BLOCK]; MAX_TILE];
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

    use super::{Sums, BLOCK, MAX_TILE, PANEL, TILE};

    /// Up to [`TILE`] rows against two panels of widened weights: per pair of `x` values, each
    /// panel's 16 weights (one vector) multiplied-and-added with the pair broadcast (in one
    /// instruction, `vpdpwssd`, where the CPU has AVX-VNNI).
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2, and AVX-VNNI if `vnni`.
    pub(super) unsafe fn kernel(xq: &[i16], width: usize, panels: &[i16], tile: usize, vnni: bool) -> Sums {
        assert!(tile <= TILE && xq.len() >= tile * width && panels.len() >= width * BLOCK && width.is_multiple_of(2));
        // SAFETY: the caller guarantees the features; the bounds are asserted above.
        unsafe {
            if vnni {
                for_tile!(tile, rows_vnni(xq, width, panels), [6, 5, 4, 3, 2])
            } else {
                for_tile!(tile, rows(xq, width, panels), [6, 5, 4, 3, 2])
            }
        }
    }

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rows<const R: usize>(xq: &[i16], width: usize, panels: &[i16]) -> Sums {
        // SAFETY: the same contract.
        unsafe {
            body::<R>(xq, width, panels, |acc, x, w| {
                _mm256_add_epi32(acc, _mm256_madd_epi16(x, w))
            })
        }
    }

    #[target_feature(enable = "avx2,avxvnni")]
    pub(super) unsafe fn rows_vnni<const R: usize>(xq: &[i16], width: usize, panels: &[i16]) -> Sums {
        // SAFETY: the same contract.
        unsafe { body::<R>(xq, width, panels, |acc, x, w| _mm256_dpwssd_avx_epi32(acc, x, w)) }
    }

    /// The loop both variants share, inlined into each so it is compiled with its features.
    #[inline(always)]
    unsafe fn body<const R: usize>(
        xq: &[i16],
        width: usize,
        panels: &[i16],
        madd: impl Fn(__m256i, __m256i, __m256i) -> __m256i,
    ) -> Sums {
        let second = width * PANEL;
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for pair in 0..width / 2 {
            // SAFETY (the caller's contract): `second + pair * 16 + 16 <= width * BLOCK` and
            // `r * width + 2 * pair + 2 <= R * width`.
            let (w0, w1) = unsafe {
                (
                    _mm256_loadu_si256(panels.as_ptr().add(pair * 16) as *const __m256i),
                    _mm256_loadu_si256(panels.as_ptr().add(second + pair * 16) as *const __m256i),
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
        let mut sums = [[0i32; BLOCK]; MAX_TILE];
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

/// The same product on AVX-512: one 512-bit multiply-add of pairs (`vpdpwssd`) covers both
/// panels of a row, half the instructions of the AVX2 kernels for the same exact sums.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{Sums, BLOCK, MAX_TILE, PANEL, WIDE_TILE};

    /// Up to [`WIDE_TILE`] rows against two panels of widened weights, as [`super::avx2::kernel`].
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512F and AVX-512 VNNI.
    pub(super) unsafe fn kernel(xq: &[i16], width: usize, panels: &[i16], tile: usize) -> Sums {
        assert!(
            tile <= WIDE_TILE && xq.len() >= tile * width && panels.len() >= width * BLOCK && width.is_multiple_of(2)
        );
        // SAFETY: the caller guarantees the features; the bounds are asserted above.
        unsafe { for_tile!(tile, rows(xq, width, panels), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2]) }
    }

    #[target_feature(enable = "avx512f,avx512vnni")]
    pub(super) unsafe fn rows<const R: usize>(xq: &[i16], width: usize, panels: &[i16]) -> Sums {
        let second = width * PANEL;
        let mut acc = [_mm512_setzero_si512(); R];
        for pair in 0..width / 2 {
            // SAFETY (the caller's contract): `second + pair * 16 + 16 <= width * BLOCK` and
            // `r * width + 2 * pair + 2 <= R * width`. Lanes 0–7: the first panel's columns,
            // 8–15: the second's, the order of `sums` below.
            let w = unsafe {
                let first = _mm256_loadu_si256(panels.as_ptr().add(pair * 16) as *const __m256i);
                let next = _mm256_loadu_si256(panels.as_ptr().add(second + pair * 16) as *const __m256i);
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(first), next)
            };
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_epi32(unsafe {
                    (xq.as_ptr().add(r * width + pair * 2) as *const i32).read_unaligned()
                });
                *acc = _mm512_dpwssd_epi32(*acc, x, w);
            }
        }
        let mut sums = [[0i32; BLOCK]; MAX_TILE];
        for (sums, acc) in sums.iter_mut().zip(acc) {
            // SAFETY: 16 i32 lanes into 16 i32s.
            unsafe { _mm512_storeu_si512(sums.as_mut_ptr() as *mut __m512i, acc) };
        }
        sums
    }
}

/// The product on bytes ([`Rows::Bytes`]): rows of unsigned bytes against int8 weights packed in
/// quads of rows (`PackedInt8::quads`), four multiply-adds a lane an instruction (`vpdpbusd`),
/// twice the 16-bit kernels' for the same exact sums.
#[cfg(target_arch = "x86_64")]
mod bytes {
    use std::arch::x86_64::*;

    use super::{Sums, BLOCK, MAX_TILE, TILE, WIDE_TILE};

    /// Up to [`TILE`] rows against one block of quads with AVX-VNNI: per quad of `x` values,
    /// the block's two halves (columns 0–7, 8–15), each one 256-bit `vpdpbusd` with the quad
    /// broadcast.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2 and AVX-VNNI.
    pub(super) unsafe fn kernel(xq: &[u8], depth: usize, quads: &[i8], tile: usize) -> Sums {
        assert!(tile <= TILE && xq.len() >= tile * depth && quads.len() >= depth * BLOCK && depth.is_multiple_of(4));
        // SAFETY: the caller guarantees the features; the bounds are asserted above.
        unsafe { for_tile!(tile, rows(xq, depth, quads), [6, 5, 4, 3, 2]) }
    }

    #[target_feature(enable = "avx2,avxvnni")]
    pub(super) unsafe fn rows<const R: usize>(xq: &[u8], depth: usize, quads: &[i8]) -> Sums {
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        for quad in 0..depth / 4 {
            // SAFETY (the caller's contract): `quad * 64 + 64 <= depth * BLOCK` and
            // `r * depth + 4 * quad + 4 <= R * depth`.
            let (low, high) = unsafe {
                (
                    _mm256_loadu_si256(quads.as_ptr().add(quad * 64) as *const __m256i),
                    _mm256_loadu_si256(quads.as_ptr().add(quad * 64 + 32) as *const __m256i),
                )
            };
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_set1_epi32(unsafe {
                    (xq.as_ptr().add(r * depth + quad * 4) as *const i32).read_unaligned()
                });
                acc[0] = _mm256_dpbusd_avx_epi32(acc[0], x, low);
                acc[1] = _mm256_dpbusd_avx_epi32(acc[1], x, high);
            }
        }
        let mut sums = [[0i32; BLOCK]; MAX_TILE];
        for (sums, acc) in sums.iter_mut().zip(acc) {
            // SAFETY: 16 i32 lanes into 16 i32s.
            unsafe {
                _mm256_storeu_si256(sums.as_mut_ptr() as *mut __m256i, acc[0]);
                _mm256_storeu_si256(sums.as_mut_ptr().add(BLOCK / 2) as *mut __m256i, acc[1]);
            }
        }
        sums
    }

    /// Up to [`WIDE_TILE`] rows against one block of quads with AVX-512 VNNI: one 512-bit
    /// `vpdpbusd` a quad a row covers all sixteen columns.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512F and AVX-512 VNNI.
    pub(super) unsafe fn wide_kernel(xq: &[u8], depth: usize, quads: &[i8], tile: usize) -> Sums {
        assert!(
            tile <= WIDE_TILE && xq.len() >= tile * depth && quads.len() >= depth * BLOCK && depth.is_multiple_of(4)
        );
        // SAFETY: the caller guarantees the features; the bounds are asserted above.
        unsafe { for_tile!(tile, wide_rows(xq, depth, quads), [12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2]) }
    }

    #[target_feature(enable = "avx512f,avx512vnni")]
    pub(super) unsafe fn wide_rows<const R: usize>(xq: &[u8], depth: usize, quads: &[i8]) -> Sums {
        let mut acc = [_mm512_setzero_si512(); R];
        for quad in 0..depth / 4 {
            // SAFETY (the caller's contract): as `rows`.
            let w = unsafe { _mm512_loadu_si512(quads.as_ptr().add(quad * 64) as *const __m512i) };
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_epi32(unsafe {
                    (xq.as_ptr().add(r * depth + quad * 4) as *const i32).read_unaligned()
                });
                *acc = _mm512_dpbusd_epi32(*acc, x, w);
            }
        }
        let mut sums = [[0i32; BLOCK]; MAX_TILE];
        for (sums, acc) in sums.iter_mut().zip(acc) {
            // SAFETY: 16 i32 lanes into 16 i32s.
            unsafe { _mm512_storeu_si512(sums.as_mut_ptr() as *mut __m512i, acc) };
        }
        sums
    }
}

/// The byte product on AMX's tiles (Intel since Sapphire Rapids): 16 rows of bytes times 16
/// quads of a block's weights, 16,384 multiply-adds an instruction (`tdpbusd`), the same exact
/// integer sums as `vpdpbusd`. In `asm!` (Rust has no stable AMX intrinsics); Linux hands a
/// process the tiles' state only when it asks (`arch_prctl`), which [`available`] does once.
#[cfg(target_arch = "x86_64")]
mod amx {
    use std::arch::asm;

    use super::BLOCK;

    /// Rows of `x` a tile holds.
    pub(super) const ROWS: usize = 16;

    /// Bytes of a row a tile holds (16 quads).
    const DEPTH: usize = 64;

    /// Whether the CPU has AMX-INT8 and Linux gives this process the tiles' state.
    pub(super) fn available() -> bool {
        // CPUID leaf 7: EDX bit 24 AMX-TILE, bit 25 AMX-INT8.
        let leaf = std::arch::x86_64::__cpuid_count(7, 0);
        if leaf.edx & (3 << 24) != 3 << 24 {
            return false;
        }
        #[cfg(target_os = "linux")]
        {
            // arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): 0 when granted.
            const ARCH_PRCTL: usize = 158;
            const ARCH_REQ_XCOMP_PERM: usize = 0x1023;
            const XFEATURE_XTILEDATA: usize = 18;
            let result: isize;
            // SAFETY: a system call that only changes this process's permissions.
            unsafe {
                asm!(
                    "syscall",
                    inlateout("rax") ARCH_PRCTL as isize => result,
                    in("rdi") ARCH_REQ_XCOMP_PERM,
                    in("rsi") XFEATURE_XTILEDATA,
                    lateout("rcx") _,
                    lateout("r11") _,
                    options(nostack),
                )
            };
            result == 0
        }
        #[cfg(not(target_os = "linux"))]
        false
    }

    /// Palette 1: tmm0 and tmm3 sums (16 rows of 16 `i32`), tmm1 rows of `x` (16 × 64 bytes),
    /// tmm2 and tmm4 16 quads of a block's weights (16 rows of 16 columns × 4 bytes): 16 rows of
    /// 64 bytes each.
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    const CONFIG: Config = {
        let mut c = [0u8; 64];
        c[0] = 1;
        let mut tile = 0;
        while tile < 5 {
            c[16 + 2 * tile] = 64;
            c[48 + tile] = ROWS as u8;
            tile += 1;
        }
        Config(c)
    };

    /// Configures this thread's tiles.
    ///
    /// # Safety
    ///
    /// [`available`] said yes.
    pub(super) unsafe fn configure() {
        // SAFETY: the caller's contract; `CONFIG` is 64 bytes, aligned.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
    }

    /// Lets go of this thread's tiles.
    ///
    /// # Safety
    ///
    /// [`available`] said yes.
    pub(super) unsafe fn release() {
        // SAFETY: the caller's contract.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }

    /// The sums of [`ROWS`] rows of `x` (`depth` bytes each) against `blocks` (one or two)
    /// consecutive blocks of quads (`depth / 4` of 64 bytes each), into `sums` (`[row][column]`,
    /// 16 columns a block): each load of `x` serves both blocks, two independent sums.
    ///
    /// # Safety
    ///
    /// The tiles are configured ([`configure`]); `x` holds `ROWS × depth` bytes, `quads`
    /// `blocks × depth × BLOCK` bytes, and `depth` is a multiple of 64.
    pub(super) unsafe fn blocks(
        x: &[u8],
        depth: usize,
        quads: &[i8],
        blocks: usize,
        sums: &mut [[[i32; BLOCK]; ROWS]; 2],
    ) {
        debug_assert!(
            x.len() >= ROWS * depth
                && (1..=2).contains(&blocks)
                && quads.len() >= blocks * depth * BLOCK
                && depth.is_multiple_of(DEPTH)
        );
        let next = depth * BLOCK;
        // SAFETY (the caller's contract): each tile load reads 16 rows of 64 bytes within `x`
        // (stride `depth`) or a block of `quads` (stride 64); each store writes 16 rows of 64
        // bytes, one of `sums`.
        unsafe {
            asm!("tilezero tmm0", "tilezero tmm3", options(nostack, nomem));
            for step in 0..depth / DEPTH {
                let w = quads.as_ptr().add(step * DEPTH * BLOCK);
                if blocks == 2 {
                    asm!(
                        "tileloadd tmm1, [{x} + {stride}*1]",
                        "tileloadd tmm2, [{w} + {wide}*1]",
                        "tileloadd tmm4, [{v} + {wide}*1]",
                        "tdpbusd tmm0, tmm1, tmm2",
                        "tdpbusd tmm3, tmm1, tmm4",
                        x = in(reg) x.as_ptr().add(step * DEPTH),
                        stride = in(reg) depth,
                        w = in(reg) w,
                        v = in(reg) w.add(next),
                        wide = in(reg) DEPTH,
                        options(nostack, readonly),
                    );
                } else {
                    asm!(
                        "tileloadd tmm1, [{x} + {stride}*1]",
                        "tileloadd tmm2, [{w} + {wide}*1]",
                        "tdpbusd tmm0, tmm1, tmm2",
                        x = in(reg) x.as_ptr().add(step * DEPTH),
                        stride = in(reg) depth,
                        w = in(reg) w,
                        wide = in(reg) DEPTH,
                        options(nostack, readonly),
                    );
                }
            }
            asm!(
                "tilestored [{first} + {wide}*1], tmm0",
                "tilestored [{second} + {wide}*1], tmm3",
                first = in(reg) sums[0].as_mut_ptr(),
                second = in(reg) sums[1].as_mut_ptr(),
                wide = in(reg) DEPTH,
                options(nostack),
            );
        }
    }
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
            let packed = PackedInt8::new(&q, k, n, Rows::Wide).unwrap();
            let got = packed.product(&x, rows, &plain(&scale, None), None);
            let want = reference(&x, &q, &scale, k, n);
            for r in 0..rows {
                // Error bound: each x rounded by at most half a level of its row's largest value.
                let largest = x[r * k..(r + 1) * k].iter().fold(0f32, |m, v| m.max(v.abs()));
                for c in 0..n {
                    let bound = k as f32 * 0.5 * largest / packed.levels * 128.0 * scale[c] + 1e-5;
                    let (g, w) = (got[r * n + c], want[r * n + c]);
                    assert!(
                        (g - w).abs() <= bound,
                        "{rows}×{k}×{n} [{r},{c}]: {g} vs {w} (bound {bound})"
                    );
                }
            }
        }
    }

    /// Random quantised rows (the whole i16 range) and a block of panels, `width` values deep.
    fn operands(seed: u64, width: usize) -> (Vec<i16>, Vec<i8>) {
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        let xq = (0..MAX_TILE * width)
            .map(|_| (rng.next() % 65_535) as i32 as i16)
            .collect();
        let panels = (0..width * BLOCK).map(|_| rng.i8()).collect();
        (xq, panels)
    }

    #[test]
    fn the_simd_kernel_equals_the_portable_one() {
        let width = 40;
        let (xq, panel) = operands(0xabcd_ef01, width);
        let wide: Vec<i16> = panel.iter().map(|&v| i16::from(v)).collect();
        let panels = Panels {
            narrow: &panel,
            #[cfg(target_arch = "x86_64")]
            wide: Some(&wide),
        };
        let simd = Simd::detect();
        for tile in 1..=if simd.avx512 { WIDE_TILE } else { TILE } {
            let xq = &xq[..tile * width];
            assert_eq!(
                kernel(xq, width, &panels, tile, simd),
                portable(xq, width, &panel, tile),
                "tile {tile}"
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_x86_kernel_equals_the_portable_one() {
        let width = 24;
        let (all, narrow) = operands(0x0dd_ba11, width);
        let xq = &all[..TILE * width];
        let want = portable(xq, width, &narrow, TILE);
        let panels: Vec<i16> = narrow.iter().map(|&v| i16::from(v)).collect();
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 checked just above.
            assert_eq!(unsafe { avx2::rows::<TILE>(xq, width, &panels) }, want);
            // SAFETY: the same.
            assert_eq!(unsafe { avx2::kernel(xq, width, &panels, TILE, false) }, want);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("avxvnni") {
            // SAFETY: both checked just above.
            assert_eq!(unsafe { avx2::rows_vnni::<TILE>(xq, width, &panels) }, want);
        }
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vnni") {
            let xq = &all[..WIDE_TILE * width];
            let want = portable(xq, width, &narrow, WIDE_TILE);
            for tile in 1..=WIDE_TILE {
                // SAFETY: both checked just above.
                let got = unsafe { avx512::kernel(&xq[..tile * width], width, &panels, tile) };
                assert_eq!(got[..tile], want[..tile], "AVX-512, tile {tile}");
            }
        } else {
            println!("no AVX-512 VNNI here: its kernel is not run");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_compilation_of_the_product_gives_the_same_bits() {
        let seed = 0x0e91_1093_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        let simd = Simd::detect();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        for (rows, k, n) in [(1, 7, 5), (13, 384, 40), (25, 64, 1536), (3, 1536, 17)] {
            let mut x: Vec<f32> = (0..rows * k).map(|_| rng.f32() * 6.0).collect();
            x[k / 2] = f32::NAN;
            let q: Vec<i8> = (0..k * n).map(|_| rng.i8()).collect();
            let scale: Vec<f32> = (0..n).map(|_| rng.f32().abs() * 0.01 + 0.001).collect();
            let bias: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
            let residual: Vec<f32> = (0..rows * n).map(|_| rng.f32() * 3.0).collect();
            for (rows_as, gelu) in [
                (Rows::Wide, false),
                (Rows::Wide, true),
                (Rows::Bytes, false),
                (Rows::Bytes, true),
            ] {
                let packed = PackedInt8::new(&q, k, n, rows_as).unwrap();
                let epilogue = Epilogue {
                    scale: &scale,
                    bias: Some(&bias),
                    gelu,
                };
                let want = bits(&packed.product_in(&x, rows, &epilogue, Some(&residual)));
                if simd.avx2 {
                    // SAFETY: `Simd::detect` found AVX2.
                    let got = unsafe { packed.product_avx2(&x, rows, &epilogue, Some(&residual)) };
                    assert_eq!(bits(&got), want, "AVX2, {rows_as:?}, {rows}×{k}×{n}, GELU {gelu}");
                }
                if simd.avx512 {
                    // SAFETY: `Simd::detect` found AVX-512F and AVX2.
                    let got = unsafe { packed.product_avx512(&x, rows, &epilogue, Some(&residual)) };
                    assert_eq!(bits(&got), want, "AVX-512, {rows_as:?}, {rows}×{k}×{n}, GELU {gelu}");
                }
            }
        }
    }

    #[test]
    fn byte_rows_match_the_f32_product_on_odd_shapes() {
        let seed = 0xb17e_5eed_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        for (rows, k, n) in [
            (1, 1, 1),
            (3, 5, 7),
            (5, 384, 9),
            (14, 17, 24),
            (13, 1536, 20),
            (4, 2, 8),
        ] {
            // Rows of one sign, of both, and shifted: the zero point moves.
            let x: Vec<f32> = (0..rows * k)
                .map(|i| rng.f32() * 4.0 + [0.0, 3.0, -5.0][(i / k) % 3])
                .collect();
            let q: Vec<i8> = (0..k * n).map(|_| rng.i8()).collect();
            let scale: Vec<f32> = (0..n).map(|_| rng.f32().abs() * 0.01 + 0.001).collect();
            let packed = PackedInt8::new(&q, k, n, Rows::Bytes).unwrap();
            let got = packed.product(&x, rows, &plain(&scale, None), None);
            let want = reference(&x, &q, &scale, k, n);
            for r in 0..rows {
                // Each x rounded by at most half a step of its row's span (zero included).
                let row = &x[r * k..(r + 1) * k];
                let span = row.iter().fold(0f32, |m, &v| m.max(v)) - row.iter().fold(0f32, |m, &v| m.min(v));
                for c in 0..n {
                    let bound = k as f32 * 0.5 * span / 255.0 * 128.0 * scale[c] * 1.001 + 1e-4;
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
    fn byte_rows_keep_zero_exact_and_refuse_what_would_overflow() {
        let mut quantised = [0i16; 5];
        let (scale, zero) = round_row_to_bytes(&[-1.0, 0.0, 3.0, -0.0, 1.0], &mut quantised);
        assert_eq!((scale, zero), (4.0 / 255.0, 64));
        assert_eq!(quantised, [0, 64, 255, 64, 128]);
        // All positive: zero is the least, at 0.
        assert_eq!(round_row_to_bytes(&[2.0, 1.0], &mut quantised[..2]), (2.0 / 255.0, 0));
        assert_eq!(quantised[..2], [255, 128]);
        let mut quantised = [7i16; 3];
        assert_eq!(round_row_to_bytes(&[0.0, -0.0, 0.0], &mut quantised), (0.0, 0));
        assert!(round_row_to_bytes(&[1.0, f32::NAN, 0.0], &mut quantised).0.is_nan());
        assert!(round_row_to_bytes(&[f32::MAX, f32::MIN], &mut quantised[..2])
            .0
            .is_nan());
        let packed = PackedInt8::new(&[1, 2, 3, 4], 2, 2, Rows::Bytes).unwrap();
        let got = packed.product(&[0.0, 0.0, 1.0, 0.0, f32::NAN, 1.0], 3, &plain(&[0.5, 0.5], None), None);
        assert!(
            got[..4] == [0.0, 0.0, 0.5, 1.0] && got[4].is_nan() && got[5].is_nan(),
            "{got:?}"
        );
        // 255 · Σ|q| must stay inside an i32.
        let heavy = vec![-128i8; 66_000];
        assert!(PackedInt8::new(&heavy, 66_000, 1, Rows::Bytes).is_none());
        assert!(PackedInt8::new(&heavy, 66_000, 1, Rows::Wide).is_some());
        assert!(PackedInt8::new(&heavy[..65_000], 65_000, 1, Rows::Bytes).is_some());
    }

    #[test]
    fn the_extremes_are_the_plain_folds() {
        let seed = 0xe7_7e3e_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        for len in [0, 1, 7, 8, 9, 17, 384, 1537] {
            let values: Vec<f32> = (0..len).map(|_| rng.f32() * 100.0 + 20.0).collect();
            let least = values.iter().fold(0f32, |m, &v| m.min(v));
            let largest = values.iter().fold(0f32, |m, &v| m.max(v));
            assert_eq!(extremes(&values), (least, largest), "{len} values");
        }
        assert!(extremes(&[1.0, f32::NAN, -1.0]).0.is_nan());
    }

    /// Random bytes for rows and a block of quads, `depth` values deep.
    #[cfg(target_arch = "x86_64")]
    fn byte_operands(seed: u64, depth: usize) -> (Vec<u8>, Vec<i8>) {
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        let xq = (0..MAX_TILE * depth).map(|_| rng.next() as u8).collect();
        let quads = (0..depth * BLOCK).map(|_| rng.i8()).collect();
        (xq, quads)
    }

    /// [`portable`] on byte rows against a block of quads: the same block repacked in pairs.
    #[cfg(target_arch = "x86_64")]
    fn portable_on_bytes(xq: &[u8], depth: usize, quads: &[i8], tile: usize) -> Sums {
        let mut panels = vec![0i8; depth * BLOCK];
        for (at, &v) in quads.iter().enumerate() {
            let (quad, c, j) = (at / (BLOCK * 4), at / 4 % BLOCK, at % 4);
            let (row, panel, c) = (quad * 4 + j, c / PANEL, c % PANEL);
            panels[((panel * (depth / 2) + row / 2) * PANEL + c) * 2 + row % 2] = v;
        }
        let wide: Vec<i16> = xq.iter().map(|&v| i16::from(v)).collect();
        portable(&wide[..tile * depth], depth, &panels, tile)
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_byte_kernel_equals_the_portable_one() {
        let depth = 36;
        let (xq, quads) = byte_operands(0xb7e5_0001, depth);
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("avxvnni") {
            for tile in 1..=TILE {
                // SAFETY: both checked just above.
                let got = unsafe { bytes::kernel(&xq[..tile * depth], depth, &quads, tile) };
                let want = portable_on_bytes(&xq, depth, &quads, tile);
                assert_eq!(got[..tile], want[..tile], "AVX-VNNI, tile {tile}");
            }
        } else {
            println!("no AVX-VNNI here: its byte kernel is not run");
        }
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vnni") {
            for tile in 1..=WIDE_TILE {
                // SAFETY: both checked just above.
                let got = unsafe { bytes::wide_kernel(&xq[..tile * depth], depth, &quads, tile) };
                let want = portable_on_bytes(&xq, depth, &quads, tile);
                assert_eq!(got[..tile], want[..tile], "AVX-512 VNNI, tile {tile}");
            }
        } else {
            println!("no AVX-512 VNNI here: its byte kernel is not run");
        }
        if Simd::detect().amx {
            // Sixteen rows, two tiles deep.
            let depth = 128;
            let mut rng = Rng(0xb7e5_0003);
            let xq: Vec<u8> = (0..amx::ROWS * depth).map(|_| rng.next() as u8).collect();
            let quads: Vec<i8> = (0..depth * BLOCK).map(|_| rng.i8()).collect();
            // Two blocks: the second the first's weights negated and turned.
            let mut both = quads.clone();
            both.extend(quads.iter().rev().map(|&q| q.saturating_neg()));
            for blocks in [1, 2] {
                let mut got = [[[0i32; BLOCK]; amx::ROWS]; 2];
                // SAFETY: `Simd::detect` found AMX and its tiles; configured and released here.
                unsafe {
                    amx::configure();
                    amx::blocks(&xq, depth, &both, blocks, &mut got);
                    amx::release();
                }
                for (b, got) in got.iter().take(blocks).enumerate() {
                    let quads = &both[b * depth * BLOCK..(b + 1) * depth * BLOCK];
                    let mut want = portable_on_bytes(&xq[..MAX_TILE * depth], depth, quads, MAX_TILE).to_vec();
                    let rest = amx::ROWS - MAX_TILE;
                    want.extend_from_slice(&portable_on_bytes(&xq[MAX_TILE * depth..], depth, quads, rest)[..rest]);
                    assert_eq!(got[..], want[..], "AMX, {blocks} blocks, block {b}");
                }
            }
        } else {
            println!("no AMX here: its tiles are not run");
        }
    }

    /// With byte rows, the byte kernels, the AVX2 16-bit kernel and the portable one (each
    /// that runs here) give the same bits for the whole product.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn byte_rows_give_the_same_bits_on_every_kernel() {
        let seed = 0xb7e5_0002_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        for (rows, k, n) in [(1, 7, 5), (13, 384, 40), (25, 64, 1536), (3, 1535, 17)] {
            let x: Vec<f32> = (0..rows * k).map(|_| rng.f32() * 6.0 - 1.0).collect();
            let q: Vec<i8> = (0..k * n).map(|_| rng.i8()).collect();
            let scale: Vec<f32> = (0..n).map(|_| rng.f32().abs() * 0.01 + 0.001).collect();
            let bias: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
            let epilogue = Epilogue {
                scale: &scale,
                bias: Some(&bias),
                gelu: true,
            };
            let mut packed = PackedInt8::new(&q, k, n, Rows::Bytes).unwrap();
            let first = bits(&packed.product(&x, rows, &epilogue, None));
            println!(
                "{rows}×{k}×{n}: the dispatch's kernel ran with {} quads",
                packed.quads.len()
            );
            packed.quads.clear();
            packed.wide.clear();
            assert_eq!(
                bits(&packed.product_in(&x, rows, &epilogue, None)),
                first,
                "portable, {rows}×{k}×{n}"
            );
            if Simd::detect().avx2 {
                packed.wide = packed.data.iter().map(|&v| i16::from(v)).collect();
                assert_eq!(
                    bits(&packed.product_in(&x, rows, &epilogue, None)),
                    first,
                    "16-bit SIMD, {rows}×{k}×{n}"
                );
            }
        }
    }

    fn plain<'a>(scale: &'a [f32], bias: Option<&'a [f32]>) -> Epilogue<'a> {
        Epilogue {
            scale,
            bias,
            gelu: false,
        }
    }

    #[test]
    fn the_largest_magnitude_is_the_plain_folds() {
        let seed = 0x1a59_e570_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        let plain = |values: &[f32]| {
            values.iter().fold(0f32, |m, v| {
                if m.is_nan() || v.is_nan() {
                    f32::NAN
                } else {
                    m.max(v.abs())
                }
            })
        };
        for len in [0, 1, 7, 8, 9, 17, 384, 1536, 1537] {
            let mut values: Vec<f32> = (0..len).map(|_| rng.f32() * 100.0).collect();
            assert_eq!(
                largest_magnitude(&values).to_bits(),
                plain(&values).to_bits(),
                "{len} values"
            );
            if len > 0 {
                let at = (rng.next() as usize) % len;
                values[at] = f32::NEG_INFINITY;
                assert_eq!(largest_magnitude(&values), f32::INFINITY);
                values[(rng.next() as usize) % len] = -0.0;
                values[at] = f32::NAN;
                assert!(largest_magnitude(&values).is_nan(), "a NaN at {at} of {len}");
            }
        }
        assert_eq!(largest_magnitude(&[-0.0, 0.0]).to_bits(), 0f32.to_bits());
    }

    #[test]
    fn zero_rows_stay_zero_and_bad_weights_are_refused() {
        let packed = PackedInt8::new(&[1, 2, 3, 4], 2, 2, Rows::Wide).unwrap();
        assert_eq!(
            packed.product(&[0.0, 0.0, 1.0, 0.0], 2, &plain(&[0.5, 0.5], None), None),
            [0.0, 0.0, 0.5, 1.0]
        );
        assert!(PackedInt8::new(&[1, 2, 3], 2, 2, Rows::Wide).is_none());
        assert!(PackedInt8::new(&[], 0, 2, Rows::Wide).is_none());
        // Levels: i32::MAX over the largest column sum of |q|, at most 32,767.
        assert_eq!(
            PackedInt8::new(&[1, 2, 3, 4], 2, 2, Rows::Wide).unwrap().levels,
            32_767.0
        );
        let heavy = vec![-128i8; 4096];
        assert_eq!(
            PackedInt8::new(&heavy, 4096, 1, Rows::Wide).unwrap().levels,
            (i32::MAX / (4096 * 128)) as f32
        );
    }

    #[test]
    fn the_epilogue_adds_bias_then_gelu_then_residual() {
        // x = [1, 0] picks q's first row: [2, -4] · 0.5 = [1, -2].
        let x = [1.0, 0.0];
        let packed = PackedInt8::new(&[2, -4, 3, 1], 2, 2, Rows::Wide).unwrap();
        let scale = [0.5, 0.5];
        let bias = [0.5, 1.0];
        assert_eq!(packed.product(&x, 1, &plain(&scale, Some(&bias)), None), [1.5, -1.0]);
        assert_eq!(
            packed.product(&x, 1, &plain(&scale, Some(&bias)), Some(&[1.0, 2.0])),
            [2.5, 1.0]
        );
        let gelu = Epilogue {
            gelu: true,
            ..plain(&scale, Some(&bias))
        };
        let got = packed.product(&x, 1, &gelu, None);
        // GELU(h) = h·Φ(h): GELU(1.5) = 1.5 · 0.9331928, GELU(-1) = -0.1586553.
        assert!(
            (got[0] - 1.399_789).abs() < 1e-5 && (got[1] + 0.158_655).abs() < 1e-5,
            "{got:?}"
        );
        // The residual comes after GELU: GELU(1.5) + 1, GELU(-1) + 2.
        let got = packed.product(&x, 1, &gelu, Some(&[1.0, 2.0]));
        assert!(
            (got[0] - 2.399_789).abs() < 1e-5 && (got[1] - 1.841_345).abs() < 1e-5,
            "{got:?}"
        );
        // A NaN in a row makes that row NaN, and only that row.
        let got = packed.product(&[f32::NAN, 1.0, 1.0, 0.0], 2, &plain(&scale, None), None);
        assert!(got[0].is_nan() && got[1].is_nan() && got[2..] == [1.0, -2.0], "{got:?}");
    }

    #[test]
    fn rounding_to_levels_is_round_then_clamp() {
        let levels = [32_767.0f32, 1_000.0, 1.0];
        let check = |x: f32| {
            for &l in &levels {
                let want = x.round().clamp(-l, l) as i16;
                assert_eq!(round_to_level(x, l), want, "{x:e} ({:#x}) at {l}", x.to_bits());
                assert_eq!(round_to_level_saturating(x, l), want, "saturating: {x:e} at {l}");
                assert_eq!(round_to_level_in_range(x, l), want, "in range: {x:e} at {l}");
            }
        };
        // Every f32 between -40,000 and 40,000 that is a whole number or a half, each with its
        // neighbours, and zeros, infinities and NaN.
        let mut half = -80_000i32;
        while half <= 80_000 {
            let x = half as f32 / 2.0;
            for y in [
                x,
                f32::from_bits(x.to_bits() + 1),
                f32::from_bits(x.to_bits().wrapping_sub(1)),
            ] {
                check(y);
            }
            half += 1;
        }
        for x in [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e30,
            -1e30,
            0.49999997,
            -0.49999997,
        ] {
            check(x);
        }
        // And 10^6 random bit patterns.
        let seed = 0x0123_4567_u64;
        println!("seed {seed:#x}");
        let mut rng = Rng(seed);
        for _ in 0..1_000_000 {
            check(f32::from_bits(rng.next() as u32));
        }
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
