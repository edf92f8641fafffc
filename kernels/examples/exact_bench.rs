//! Times `exact::matmul` and `exact::softmax` at attention's shapes (12 heads, 256 tokens or as
//! many as given, 32 dimensions per head): `cargo run --release -p sextant-kernels --example
//! exact_bench [tokens]`.

use std::time::Instant;

use sextant_kernels::exact;

fn main() {
    let s: usize = std::env::args()
        .nth(1)
        .map_or(256, |t| t.parse().expect("tokens: a number"));
    let (heads, d) = (12, 32);
    let a: Vec<f32> = (0..s * d).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5).collect();
    let b: Vec<f32> = (0..d * s)
        .map(|i| ((i * 104_729) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let p: Vec<f32> = (0..s * s).map(|i| ((i * 31) % 1000) as f32 / 1000.0).collect();
    let v: Vec<f32> = (0..s * d).map(|i| ((i * 17) % 1000) as f32 / 1000.0).collect();
    for round in 0..3 {
        let t = Instant::now();
        let mut checksum = 0f32;
        for _ in 0..heads {
            checksum += exact::matmul(&a, &b, s, d, s)[7];
        }
        let scores = t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        for _ in 0..heads {
            checksum += exact::matmul(&p, &v, s, s, d)[7];
        }
        let weighted = t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        let mut x = p.clone();
        for _ in 0..heads {
            exact::softmax(&mut x, s);
        }
        checksum += x[3];
        let softmax = t.elapsed().as_secs_f64() * 1000.0;
        println!(
            "round {round}: one layer's Q·Kᵀ {scores:.2} ms, P·V {weighted:.2} ms, softmax {softmax:.2} ms ({checksum})"
        );
    }
}
