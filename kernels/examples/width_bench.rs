//! What 8-bit activations would buy the int8 product, measured before it is built: the inner loop
//! of `PackedInt8`'s AVX-512 kernel as it is (rows rounded to 16 bits, weights widened to 16, a
//! pair of `k` a step, `vpdpwssd`) against the same loop on bytes (unsigned 8-bit rows, int8
//! weights, four of `k` a step, `vpdpbusd`), both in the product's loop order (columns in blocks
//! of 16, rows in tiles of 12) at a passage's shapes in all-MiniLM-L6-v2, one thread. Only the
//! integer sums: no rounding of rows, no epilogue. x86_64 with AVX-512 VNNI only:
//! `cargo run --release -p sextant-kernels --example width_bench [rows]`.

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Rows a kernel call takes, as `PackedInt8`'s AVX-512 kernel.
    pub const TILE: usize = 12;

    /// `TILE` rows of 16-bit values against 16 columns, a pair of `k` a step.
    ///
    /// # Safety
    ///
    /// AVX-512F and AVX-512 VNNI; `x` holds `TILE × k` values, `w` `k × 16`, `k` even.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub unsafe fn words(x: &[i16], w: &[i16], k: usize) -> i32 {
        let mut acc = [_mm512_setzero_si512(); TILE];
        for pair in 0..k / 2 {
            // SAFETY: the contract's lengths.
            unsafe {
                let weights = _mm512_loadu_si512(w.as_ptr().add(pair * 32) as *const __m512i);
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_epi32((x.as_ptr().add(r * k + pair * 2) as *const i32).read_unaligned());
                    *acc = _mm512_dpwssd_epi32(*acc, x, weights);
                }
            }
        }
        acc.iter()
            .map(|a| _mm512_reduce_add_epi32(*a))
            .fold(0, i32::wrapping_add)
    }

    /// `TILE` rows of unsigned bytes against 16 columns of int8 weights, four of `k` a step.
    ///
    /// # Safety
    ///
    /// AVX-512F and AVX-512 VNNI; `x` holds `TILE × k` values, `w` `k × 16`, `k` a multiple of 4.
    #[target_feature(enable = "avx512f,avx512vnni")]
    pub unsafe fn bytes(x: &[u8], w: &[i8], k: usize) -> i32 {
        let mut acc = [_mm512_setzero_si512(); TILE];
        for quad in 0..k / 4 {
            // SAFETY: the contract's lengths.
            unsafe {
                let weights = _mm512_loadu_si512(w.as_ptr().add(quad * 64) as *const __m512i);
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_epi32((x.as_ptr().add(r * k + quad * 4) as *const i32).read_unaligned());
                    *acc = _mm512_dpbusd_epi32(*acc, x, weights);
                }
            }
        }
        acc.iter()
            .map(|a| _mm512_reduce_add_epi32(*a))
            .fold(0, i32::wrapping_add)
    }

    /// Every block of 16 columns against every whole tile of rows, with `kernel`.
    pub fn product<X, W>(
        x: &[X],
        w: &[W],
        rows: usize,
        k: usize,
        n: usize,
        kernel: unsafe fn(&[X], &[W], usize) -> i32,
    ) -> i32 {
        let mut checksum = 0i32;
        for block in w.chunks_exact(k * 16).take(n / 16) {
            for tile in x.chunks_exact(TILE * k).take(rows / TILE) {
                // SAFETY: `main` checked the CPU; the chunks have the kernel's lengths.
                checksum = checksum.wrapping_add(unsafe { kernel(tile, block, k) });
            }
        }
        checksum
    }
}

#[cfg(target_arch = "x86_64")]
fn main() {
    use std::time::Instant;
    if !(std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vnni")) {
        eprintln!("width_bench needs AVX-512 VNNI, which this CPU lacks");
        std::process::exit(1);
    }
    let rows: usize = std::env::args()
        .nth(1)
        .map_or(192, |r| r.parse().expect("rows: a number"));
    for (k, n) in [(384, 384), (384, 1536), (1536, 384)] {
        let words: Vec<i16> = (0..rows * k).map(|i| ((i * 104_729) % 65_535) as i32 as i16).collect();
        let wide: Vec<i16> = (0..k * n).map(|i| i16::from(((i * 7919) % 255) as u8 as i8)).collect();
        let bytes: Vec<u8> = (0..rows * k).map(|i| ((i * 104_729) % 256) as u8).collect();
        let narrow: Vec<i8> = (0..k * n).map(|i| ((i * 7919) % 255) as u8 as i8).collect();
        let median = |run: &dyn Fn() -> i32| {
            let mut times: Vec<f64> = (0..30)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(run());
                    t.elapsed().as_secs_f64()
                })
                .collect();
            times.sort_by(f64::total_cmp);
            times[times.len() / 2]
        };
        let sixteen = median(&|| x86::product(&words, &wide, rows, k, n, x86::words));
        let eight = median(&|| x86::product(&bytes, &narrow, rows, k, n, x86::bytes));
        let macs = ((rows / x86::TILE * x86::TILE) * k * (n / 16 * 16)) as f64;
        println!(
            "{rows} × {k} × {n}: 16-bit rows {:.1}, 8-bit rows {:.1} G multiply-adds/s ({:.2}×)",
            macs / sixteen / 1e9,
            macs / eight / 1e9,
            sixteen / eight
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("width_bench measures x86_64's AVX-512 kernels only");
}
