//! f32 arithmetic that gives the same bits on every CPU and in WebAssembly: the parts of a
//! sentence model's forward pass that are not products with weights (attention's two products,
//! softmax, layer normalisation), so that a text's vector is the same everywhere it is embedded.
//!
//! IEEE 754 makes each addition, multiplication, division and square root exact to the last bit;
//! what differs between machines is the *order* of a sum (a SIMD reduction adds in lanes, a
//! scalar one left to right), fused multiply-adds (one rounding instead of two) and library
//! functions (`exp`). So here every sum has one fixed order ([`sum`]: eight running lanes, then a
//! fixed tree), no multiply-add is fused (Rust never contracts `a * b + c` on its own), and `exp`
//! is a polynomial of basic operations ([`exp`]). Loops run across independent outputs, which the
//! compiler vectorises without changing any output's order of operations: the SIMD width changes
//! the speed, never the bits.

/// `log2(e)`.
const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// The high part of ln 2 (its last 12 bits zero, so `n · LN2_HIGH` is exact).
#[allow(clippy::excessive_precision)]
const LN2_HIGH: f32 = 0.693_145_751_953_125;
/// The rest of ln 2.
#[allow(clippy::excessive_precision)]
const LN2_LOW: f32 = 1.428_606_765_330_187_0e-6;
/// 1.5 · 2^23: added to a float under 2^22 in magnitude, its last bit is worth 1.
const ROUNDER: f32 = 12_582_912.0;

/// Running lanes of a fixed-order sum.
const LANES: usize = 8;

#[inline(always)]
/// `Σ values` in one fixed order: value `i` into lane `i mod 8`, then the lanes as
/// `((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))`.
pub fn sum(values: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    for (lane, v) in lanes.iter_mut().zip(chunks.remainder()) {
        *lane += v;
    }
    ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]))
}

/// `e^x` within 2 ulp for `x` in `[-87, 88]`, 0 below, `e^88` above (NaN stays NaN), from basic
/// operations only and without branches (so a loop of it vectorises): `x = n·ln 2 + r` with
/// `|r| ≤ ln 2 / 2` (ln 2 in two parts, Cody and Waite), `e^r` by its Taylor polynomial of degree
/// 7, times `2^n` built from the exponent bits.
#[allow(clippy::excessive_precision)]
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let c = x.clamp(-87.0, 88.0);
    // n = round(c / ln 2) to the nearest even, read from the low bits of a float of magnitude
    // 1.5 · 2^23 (whose last bit is worth 1): no float-to-integer conversion, no `floor`.
    let shifted = c * LOG2_E + ROUNDER;
    let n = shifted - ROUNDER;
    let r = (c - n * LN2_HIGH) - n * LN2_LOW;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // n is in [-126, 127], so 2^n is a normal f32 (a NaN leaves p NaN).
    let power = (shifted.to_bits().wrapping_sub(ROUNDER.to_bits()).wrapping_add(127)) << 23;
    let y = f32::from_bits(power) * p;
    if x < -87.0 {
        0.0
    } else {
        y
    }
}

/// The largest value (NaNs ignored; `-∞` for none), in eight lanes so that it vectorises (a
/// maximum is exact in any order).
#[inline(always)]
fn largest(values: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane = if v > *lane { v } else { *lane };
        }
    }
    for (lane, &v) in lanes.iter_mut().zip(chunks.remainder()) {
        *lane = if v > *lane { v } else { *lane };
    }
    lanes
        .into_iter()
        .fold(f32::NEG_INFINITY, |m, v| if v > m { v } else { m })
}

/// Softmax of each row of `x` (`rows × len` values, row-major), in place:
/// `e^(x − max) / Σ e^(x − max)`.
pub fn softmax(x: &mut [f32], len: usize) {
    if len == 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F is on this CPU (checked just above).
        unsafe { softmax_avx512(x, len) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is on this CPU (checked just above).
        unsafe { softmax_avx2(x, len) };
        return;
    }
    softmax_rows(x, len);
}

/// [`softmax_rows`] on AVX-512: sixteen lanes, the last values of a row through a mask, the sum
/// and the division compiled for it too.
///
/// # Safety
///
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn softmax_avx512(x: &mut [f32], len: usize) {
    use std::arch::x86_64::*;
    for row in x.chunks_exact_mut(len) {
        let largest = _mm512_set1_ps(largest(row));
        let mut chunks = row.chunks_exact_mut(16);
        for chunk in &mut chunks {
            // SAFETY: 16 values in `chunk`; AVX-512F is the caller's contract.
            unsafe {
                let v = _mm512_sub_ps(_mm512_loadu_ps(chunk.as_ptr()), largest);
                _mm512_storeu_ps(chunk.as_mut_ptr(), exp_avx512(v));
            }
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let mask = ((1u32 << rest.len()) - 1) as __mmask16;
            // SAFETY: the mask covers the `rest.len() < 16` values there are.
            unsafe {
                let v = _mm512_sub_ps(_mm512_maskz_loadu_ps(mask, rest.as_ptr()), largest);
                _mm512_mask_storeu_ps(rest.as_mut_ptr(), mask, exp_avx512(v));
            }
        }
        let total = sum(row);
        for v in row.iter_mut() {
            *v /= total;
        }
    }
}

/// [`exp`] of sixteen values, operation for operation.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::excessive_precision)]
fn exp_avx512(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let (low, high) = (_mm512_set1_ps(-87.0), _mm512_set1_ps(88.0));
    let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, low);
    let above = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, high);
    let c = _mm512_mask_blend_ps(above, _mm512_mask_blend_ps(below, x, low), high);
    let rounder = _mm512_set1_ps(ROUNDER);
    let shifted = _mm512_add_ps(_mm512_mul_ps(c, _mm512_set1_ps(LOG2_E)), rounder);
    let n = _mm512_sub_ps(shifted, rounder);
    let r = _mm512_sub_ps(
        _mm512_sub_ps(c, _mm512_mul_ps(n, _mm512_set1_ps(LN2_HIGH))),
        _mm512_mul_ps(n, _mm512_set1_ps(LN2_LOW)),
    );
    let mut p = _mm512_set1_ps(1.0 / 5040.0);
    for coefficient in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = _mm512_add_ps(_mm512_set1_ps(coefficient), _mm512_mul_ps(r, p));
    }
    let power = _mm512_slli_epi32::<23>(_mm512_add_epi32(
        _mm512_sub_epi32(
            _mm512_castps_si512(shifted),
            _mm512_set1_epi32(ROUNDER.to_bits() as i32),
        ),
        _mm512_set1_epi32(127),
    ));
    let y = _mm512_mul_ps(_mm512_castsi512_ps(power), p);
    _mm512_mask_blend_ps(below, y, _mm512_setzero_ps())
}

/// [`softmax_rows`] compiled for AVX2 (the same operations, wider registers, `floor` in one
/// instruction).
///
/// # Safety
///
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn softmax_avx2(x: &mut [f32], len: usize) {
    use std::arch::x86_64::*;
    for row in x.chunks_exact_mut(len) {
        let largest = largest(row);
        let mut chunks = row.chunks_exact_mut(8);
        for chunk in &mut chunks {
            // SAFETY: 8 values in `chunk`; AVX2 is the caller's contract.
            unsafe {
                let v = _mm256_sub_ps(_mm256_loadu_ps(chunk.as_ptr()), _mm256_set1_ps(largest));
                _mm256_storeu_ps(chunk.as_mut_ptr(), exp_avx2(v));
            }
        }
        for v in chunks.into_remainder() {
            *v = exp(*v - largest);
        }
        let total = sum(row);
        for v in row.iter_mut() {
            *v /= total;
        }
    }
}

/// [`exp`] of eight values, operation for operation.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::excessive_precision)]
fn exp_avx2(x: std::arch::x86_64::__m256) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let (low, high) = (_mm256_set1_ps(-87.0), _mm256_set1_ps(88.0));
    let below = _mm256_cmp_ps::<_CMP_LT_OQ>(x, low);
    let above = _mm256_cmp_ps::<_CMP_GT_OQ>(x, high);
    let c = _mm256_blendv_ps(_mm256_blendv_ps(x, low, below), high, above);
    let rounder = _mm256_set1_ps(ROUNDER);
    let shifted = _mm256_add_ps(_mm256_mul_ps(c, _mm256_set1_ps(LOG2_E)), rounder);
    let n = _mm256_sub_ps(shifted, rounder);
    let r = _mm256_sub_ps(
        _mm256_sub_ps(c, _mm256_mul_ps(n, _mm256_set1_ps(LN2_HIGH))),
        _mm256_mul_ps(n, _mm256_set1_ps(LN2_LOW)),
    );
    let mut p = _mm256_set1_ps(1.0 / 5040.0);
    for coefficient in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        p = _mm256_add_ps(_mm256_set1_ps(coefficient), _mm256_mul_ps(r, p));
    }
    let power = _mm256_slli_epi32::<23>(_mm256_add_epi32(
        _mm256_sub_epi32(
            _mm256_castps_si256(shifted),
            _mm256_set1_epi32(ROUNDER.to_bits() as i32),
        ),
        _mm256_set1_epi32(127),
    ));
    let y = _mm256_mul_ps(_mm256_castsi256_ps(power), p);
    _mm256_blendv_ps(y, _mm256_setzero_ps(), below)
}

#[inline(always)]
fn softmax_rows(x: &mut [f32], len: usize) {
    for row in x.chunks_exact_mut(len) {
        let largest = largest(row);
        for v in row.iter_mut() {
            *v = exp(*v - largest);
        }
        let total = sum(row);
        for v in row.iter_mut() {
            *v /= total;
        }
    }
}

/// Layer normalisation of each row of `x` (`rows × len` values), in place:
/// `(x − mean) / √(variance + epsilon) · gamma + beta`, `gamma` and `beta` of `len` values.
pub fn layer_norm(x: &mut [f32], len: usize, gamma: &[f32], beta: &[f32], epsilon: f32) {
    assert!(
        gamma.len() == len && beta.len() == len,
        "gamma and beta must have {len} values"
    );
    if len == 0 {
        return;
    }
    let n = len as f32;
    for row in x.chunks_exact_mut(len) {
        let mean = sum(row) / n;
        for v in row.iter_mut() {
            *v -= mean;
        }
        let mut squares = [0f32; LANES];
        let mut chunks = row.chunks_exact(LANES);
        for chunk in &mut chunks {
            for (s, v) in squares.iter_mut().zip(chunk) {
                *s += v * v;
            }
        }
        for (s, v) in squares.iter_mut().zip(chunks.remainder()) {
            *s += v * v;
        }
        let deviation = (sum(&squares) / n + epsilon).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = *v / deviation * g + b;
        }
    }
}

/// Rows of `a` per step of [`matmul`].
const ROWS: usize = 4;
/// Columns of `b` per step of [`matmul`].
const COLUMNS: usize = 16;

/// `a · b` for `a` of `m × k` and `b` of `k × n` (row-major): `m × n` values, each
/// `((a₀b₀ + a₁b₁) + a₂b₂) + …` in the order of `k`, whatever the tiling or the SIMD width.
pub fn matmul(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    matmul_to(a, b, &mut out, m, k, n);
    out
}

/// [`matmul`] into `out` (`m × n` values, every one written), so that a caller's loop reuses
/// one buffer.
pub fn matmul_to(a: &[f32], b: &[f32], out: &mut [f32], m: usize, k: usize, n: usize) {
    assert!(
        a.len() == m * k && b.len() == k * n && out.len() == m * n,
        "a is not {m} × {k}, b not {k} × {n} or out not {m} × {n}"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F is on this CPU (checked just above).
        unsafe { matmul_avx512(a, b, out, m, k, n) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is on this CPU (checked just above).
        unsafe { matmul_avx2(a, b, out, m, k, n) };
        return;
    }
    matmul_into(a, b, out, m, k, n);
}

/// Rows of `a` per step of [`matmul_avx512`].
#[cfg(target_arch = "x86_64")]
const WIDE_ROWS: usize = 8;

/// [`matmul_into`]'s products on AVX-512: tiles of up to [`WIDE_ROWS`] rows and 32 columns (two
/// registers a row), the columns past `n` left out by masks. Each value is still
/// `((a₀b₀ + a₁b₁) + a₂b₂) + …`: one product and one sum a lane, in the order of `k`.
///
/// # Safety
///
/// The CPU must have AVX-512F; `a`, `b` and `out` are `m × k`, `k × n` and `m × n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn matmul_avx512(a: &[f32], b: &[f32], out: &mut [f32], m: usize, k: usize, n: usize) {
    let mut row = 0;
    while row < m {
        let rows = WIDE_ROWS.min(m - row);
        // SAFETY: the caller's contract; `row + rows <= m`.
        unsafe {
            match rows {
                8 => tiles_avx512::<8>(a, b, out, row, k, n),
                7 => tiles_avx512::<7>(a, b, out, row, k, n),
                6 => tiles_avx512::<6>(a, b, out, row, k, n),
                5 => tiles_avx512::<5>(a, b, out, row, k, n),
                4 => tiles_avx512::<4>(a, b, out, row, k, n),
                3 => tiles_avx512::<3>(a, b, out, row, k, n),
                2 => tiles_avx512::<2>(a, b, out, row, k, n),
                _ => tiles_avx512::<1>(a, b, out, row, k, n),
            }
        }
        row += rows;
    }
}

/// Rows `row..row + R` of the product, every column, 32 at a time.
///
/// # Safety
///
/// [`matmul_avx512`]'s, and `row + R <= m`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tiles_avx512<const R: usize>(a: &[f32], b: &[f32], out: &mut [f32], row: usize, k: usize, n: usize) {
    use std::arch::x86_64::*;
    let lanes = |count: usize| -> __mmask16 { ((1u32 << count.min(16)) - 1) as __mmask16 };
    for column in (0..n).step_by(32) {
        let left = n - column;
        // Lane j of each half is read and written only if its column is below n.
        let (low, high) = (lanes(left), lanes(left.saturating_sub(16)));
        let mut acc = [[_mm512_setzero_ps(); 2]; R];
        for i in 0..k {
            // SAFETY: `i < k` and `row + r < m`; the masked loads read only `b`'s row `i`
            // (`wrapping_add`: a pointer past the end is never formed by `add`).
            unsafe {
                let p = b.as_ptr().add(i * n + column);
                let (b_low, b_high) = (
                    _mm512_maskz_loadu_ps(low, p),
                    _mm512_maskz_loadu_ps(high, p.wrapping_add(16)),
                );
                for (r, acc) in acc.iter_mut().enumerate() {
                    let a_value = _mm512_set1_ps(*a.get_unchecked((row + r) * k + i));
                    acc[0] = _mm512_add_ps(acc[0], _mm512_mul_ps(a_value, b_low));
                    acc[1] = _mm512_add_ps(acc[1], _mm512_mul_ps(a_value, b_high));
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: the masks' lanes of `out`'s row `row + r` from `column`, inside `m × n`.
            unsafe {
                let p = out.as_mut_ptr().add((row + r) * n + column);
                _mm512_mask_storeu_ps(p, low, acc[0]);
                _mm512_mask_storeu_ps(p.wrapping_add(16), high, acc[1]);
            }
        }
    }
}

/// [`matmul_into`]'s products on AVX2: tiles of up to [`ROWS`] rows and [`COLUMNS`] columns,
/// the last tile of a row of tiles through masked loads and stores, so no value is left to a
/// scalar loop (at attention's shapes, `n` or `m` a few over a multiple of the tile, those
/// loops took about as long as the tiles). Each value is still `((a₀b₀ + a₁b₁) + a₂b₂) + …`:
/// one product and one sum a lane, in the order of `k`.
///
/// # Safety
///
/// The CPU must have AVX2; `a`, `b` and `out` are `m × k`, `k × n` and `m × n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn matmul_avx2(a: &[f32], b: &[f32], out: &mut [f32], m: usize, k: usize, n: usize) {
    let mut row = 0;
    while row < m {
        let rows = ROWS.min(m - row);
        // SAFETY: the caller's contract; `row + rows <= m`.
        unsafe {
            match rows {
                4 => rows_avx2::<4>(a, b, out, row, k, n),
                3 => rows_avx2::<3>(a, b, out, row, k, n),
                2 => rows_avx2::<2>(a, b, out, row, k, n),
                _ => rows_avx2::<1>(a, b, out, row, k, n),
            }
        }
        row += rows;
    }
}

/// Rows `row..row + R` of the product, every column: [`COLUMNS`] at a time, then the rest.
///
/// # Safety
///
/// [`matmul_avx2`]'s, and `row + R <= m`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2<const R: usize>(a: &[f32], b: &[f32], out: &mut [f32], row: usize, k: usize, n: usize) {
    use std::arch::x86_64::*;
    let full = n - n % COLUMNS;
    for column in (0..full).step_by(COLUMNS) {
        // SAFETY: `column + 16 <= n`.
        unsafe { tile_avx2::<R>(a, b, out, row, column, k, n, None) };
    }
    if full < n {
        // Lane j of each half is read and written only if its column is below n.
        let left = (n - full) as i32;
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let masks = (
            _mm256_cmpgt_epi32(_mm256_set1_epi32(left), lanes),
            _mm256_cmpgt_epi32(_mm256_set1_epi32(left - 8), lanes),
        );
        // SAFETY: the masks cover only columns below n.
        unsafe { tile_avx2::<R>(a, b, out, row, full, k, n, Some(masks)) };
    }
}

/// One tile: rows `row..row + R`, columns `column..column + 16` (those of `masks` only, where
/// given).
///
/// # Safety
///
/// [`rows_avx2`]'s, and `column + 16 <= n` unless `masks` leaves out every lane at or past `n`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn tile_avx2<const R: usize>(
    a: &[f32],
    b: &[f32],
    out: &mut [f32],
    row: usize,
    column: usize,
    k: usize,
    n: usize,
    masks: Option<(std::arch::x86_64::__m256i, std::arch::x86_64::__m256i)>,
) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    for i in 0..k {
        // SAFETY: `i < k` and `row + r < m`; the loads are inside `b`'s row `i` (masked lanes
        // read nothing; `wrapping_add` so that a pointer past the end is never formed by `add`).
        unsafe {
            let p = b.as_ptr().add(i * n + column);
            let (b_low, b_high) = match masks {
                None => (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))),
                Some((low, high)) => (_mm256_maskload_ps(p, low), _mm256_maskload_ps(p.wrapping_add(8), high)),
            };
            for (r, acc) in acc.iter_mut().enumerate() {
                let a_value = _mm256_set1_ps(*a.get_unchecked((row + r) * k + i));
                acc[0] = _mm256_add_ps(acc[0], _mm256_mul_ps(a_value, b_low));
                acc[1] = _mm256_add_ps(acc[1], _mm256_mul_ps(a_value, b_high));
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: 16 values at `(row + r) * n + column`, inside `m × n` (or those of `masks`).
        unsafe {
            let p = out.as_mut_ptr().add((row + r) * n + column);
            match masks {
                None => {
                    _mm256_storeu_ps(p, acc[0]);
                    _mm256_storeu_ps(p.add(8), acc[1]);
                }
                Some((low, high)) => {
                    _mm256_maskstore_ps(p, low, acc[0]);
                    _mm256_maskstore_ps(p.wrapping_add(8), high, acc[1]);
                }
            }
        }
    }
}

#[inline(always)]
fn matmul_into(a: &[f32], b: &[f32], out: &mut [f32], m: usize, k: usize, n: usize) {
    // The last columns of `b` when `n` is not a multiple of a tile, padded with zeros to one, so
    // that they take the tiles' loop too (a scalar loop a value took about as long as the tiles
    // at attention's shapes); the padding's lanes are never stored.
    let full = n - n % COLUMNS;
    let mut padded = Vec::new();
    if full < n {
        padded = vec![0f32; k * COLUMNS];
        for (i, to) in padded.chunks_exact_mut(COLUMNS).enumerate() {
            to[..n - full].copy_from_slice(&b[i * n + full..(i + 1) * n]);
        }
    }
    let mut row = 0;
    while row < m {
        let rows = ROWS.min(m - row);
        match rows {
            4 => rows_into::<4>(a, b, &padded, out, row, k, n),
            3 => rows_into::<3>(a, b, &padded, out, row, k, n),
            2 => rows_into::<2>(a, b, &padded, out, row, k, n),
            _ => rows_into::<1>(a, b, &padded, out, row, k, n),
        }
        row += rows;
    }
}

/// Rows `row..row + R` of [`matmul_into`]'s product, every column (`padded`: the last columns of
/// `b`, padded to a tile, when `n` is not a multiple of one).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_into<const R: usize>(a: &[f32], b: &[f32], padded: &[f32], out: &mut [f32], row: usize, k: usize, n: usize) {
    let a_rows: [&[f32]; R] = std::array::from_fn(|r| &a[(row + r) * k..][..k]);
    let full = n - n % COLUMNS;
    for column in (0..full).step_by(COLUMNS) {
        let acc = tile::<R>(a_rows, k, |i| &b[i * n + column..][..COLUMNS]);
        for (r, acc) in acc.iter().enumerate() {
            out[(row + r) * n + column..][..COLUMNS].copy_from_slice(acc);
        }
    }
    if full < n {
        let acc = tile::<R>(a_rows, k, |i| &padded[i * COLUMNS..][..COLUMNS]);
        for (r, acc) in acc.iter().enumerate() {
            out[(row + r) * n + full..(row + r + 1) * n].copy_from_slice(&acc[..n - full]);
        }
    }
}

/// One tile of [`matmul_into`]: `R` rows of `a` against the [`COLUMNS`] columns `b_row(i)` gives
/// for each `i` of `k`, each sum in the order of `k`.
#[inline(always)]
fn tile<'b, const R: usize>(a_rows: [&[f32]; R], k: usize, b_row: impl Fn(usize) -> &'b [f32]) -> [[f32; COLUMNS]; R] {
    let mut acc = [[0f32; COLUMNS]; R];
    for i in 0..k {
        let b_tile = b_row(i);
        for (acc, a_row) in acc.iter_mut().zip(a_rows) {
            let a_value = a_row[i];
            for (s, &bv) in acc.iter_mut().zip(b_tile) {
                *s += a_value * bv;
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_within_two_ulp_of_f64() {
        let mut worst = 0f64;
        let mut x = -86.9f32;
        while x < 87.9 {
            let (got, want) = (f64::from(exp(x)), f64::from(x).exp());
            worst = worst.max(((got - want) / want).abs());
            x += 0.013;
        }
        assert!(worst < 2.5e-7, "largest relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-100.0), 0.0);
        assert_eq!(exp(100.0), exp(88.0));
        assert!(exp(f32::NAN).is_nan());
    }

    #[test]
    fn the_simd_exp_and_softmax_give_the_scalar_bits() {
        let row: Vec<f32> = (0..37).map(|i| i as f32 * 3.7 - 90.0).collect();
        let mut scalar = row.clone();
        softmax_rows(&mut scalar, 37);
        let mut dispatched = row.clone();
        softmax(&mut dispatched, 37);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        assert_eq!(bits(&scalar), bits(&dispatched));
        // Each SIMD form this CPU has, whichever the dispatch chose.
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            let mut wide = row.clone();
            // SAFETY: AVX-512F checked above.
            unsafe { softmax_avx512(&mut wide, 37) };
            assert_eq!(bits(&scalar), bits(&wide));
            let x: [f32; 16] = std::array::from_fn(|i| -100.0 + i as f32 * 12.9);
            let mut got = [0f32; 16];
            // SAFETY: AVX-512F checked above; 16 values each way.
            unsafe {
                use std::arch::x86_64::*;
                _mm512_storeu_ps(got.as_mut_ptr(), exp_avx512(_mm512_loadu_ps(x.as_ptr())));
            }
            assert_eq!(bits(&got), bits(&x.map(exp)));
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut narrow = row.clone();
            // SAFETY: AVX2 checked above.
            unsafe { softmax_avx2(&mut narrow, 37) };
            assert_eq!(bits(&scalar), bits(&narrow));
            for start in [-100.0f32, -60.0, -3.3, 0.0, 40.0, 85.0] {
                let x: [f32; 8] = std::array::from_fn(|i| start + i as f32 * 0.77);
                let mut got = [0f32; 8];
                // SAFETY: AVX2 checked above; 8 values each way.
                unsafe {
                    use std::arch::x86_64::*;
                    _mm256_storeu_ps(got.as_mut_ptr(), exp_avx2(_mm256_loadu_ps(x.as_ptr())));
                }
                assert_eq!(bits(&got), bits(&x.map(exp)), "from {start}");
            }
        }
    }

    #[test]
    fn sums_in_one_fixed_order() {
        let values: Vec<f32> = (0..19).map(|i| 1.0 / (i as f32 + 1.0)).collect();
        let mut lanes = [0f32; 8];
        for (i, v) in values.iter().enumerate() {
            lanes[i % 8] += v;
        }
        let want = ((lanes[0] + lanes[4]) + (lanes[2] + lanes[6])) + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7]));
        assert_eq!(sum(&values).to_bits(), want.to_bits());
        assert_eq!(sum(&[]), 0.0);
    }

    #[test]
    fn softmax_and_layer_norm_by_hand() {
        let mut x = [0.0, 2f32.ln(), 0.0, 0.0];
        softmax(&mut x, 2);
        assert!(
            (x[0] - 1.0 / 3.0).abs() < 1e-7 && (x[1] - 2.0 / 3.0).abs() < 1e-7,
            "{x:?}"
        );
        assert_eq!(&x[2..], [0.5, 0.5]);
        let mut y = [1.0, 3.0];
        layer_norm(&mut y, 2, &[2.0, 1.0], &[0.0, 10.0], 0.0);
        assert_eq!(y, [-2.0, 11.0]);
    }

    #[test]
    fn every_tiling_of_the_product_adds_in_the_order_of_k() {
        let seed = 0x5eed_0024_u64;
        println!("seed {seed:#x}");
        let mut state = seed;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_001) as f32 / 7_000.0 - 1.4
        };
        // Attention's shapes at 190 tokens too: tiles that end past every edge.
        for (m, k, n) in [
            (1, 1, 1),
            (4, 32, 16),
            (5, 33, 17),
            (9, 7, 40),
            (8, 64, 32),
            (3, 5, 7),
            (190, 32, 190),
            (190, 190, 32),
            (13, 9, 33),
            (2, 3, 48),
        ] {
            let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let b: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let got = matmul(&a, &b, m, k, n);
            let mut portable = vec![0f32; m * n];
            matmul_into(&a, &b, &mut portable, m, k, n);
            // Each SIMD form this CPU has, whichever the dispatch chose.
            let mut forms: Vec<(&str, Vec<f32>)> = vec![("portable", portable)];
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx2") {
                    let mut out = vec![f32::NAN; m * n];
                    // SAFETY: AVX2 checked just above; the shapes are the product's.
                    unsafe { matmul_avx2(&a, &b, &mut out, m, k, n) };
                    forms.push(("AVX2", out));
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    let mut out = vec![f32::NAN; m * n];
                    // SAFETY: AVX-512F checked just above; the shapes are the product's.
                    unsafe { matmul_avx512(&a, &b, &mut out, m, k, n) };
                    forms.push(("AVX-512", out));
                }
            }
            for r in 0..m {
                for c in 0..n {
                    let mut s = 0f32;
                    for i in 0..k {
                        s += a[r * k + i] * b[i * n + c];
                    }
                    assert_eq!(got[r * n + c].to_bits(), s.to_bits(), "{m}×{k}×{n} [{r},{c}]");
                    for (form, out) in &forms {
                        assert_eq!(out[r * n + c].to_bits(), s.to_bits(), "{form}: {m}×{k}×{n} [{r},{c}]");
                    }
                }
            }
        }
    }
}
