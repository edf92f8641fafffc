//! Times `PackedInt8::product` at a passage's shapes in all-MiniLM-L6-v2 (200 tokens; the
//! attention projections 384 → 384, the feed-forward 384 → 1536 and 1536 → 384), one thread, and
//! prints the multiply-adds per second with rows rounded to 15 bits (`Rows::Wide`) and to bytes
//! (`Rows::Bytes`), side by side: `cargo run --release -p sextant-kernels --example
//! product_bench [rows]`.

use std::time::Instant;

use sextant_kernels::{Epilogue, PackedInt8, Rows};

fn main() {
    let rows: usize = std::env::args()
        .nth(1)
        .map_or(200, |r| r.parse().expect("rows: a number"));
    for (k, n) in [(384, 384), (384, 1536), (1536, 384)] {
        let q: Vec<i8> = (0..k * n).map(|i| ((i * 7919) % 255) as i8).collect();
        let x: Vec<f32> = (0..rows * k)
            .map(|i| ((i * 104_729) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        let scale = vec![0.01f32; n];
        let epilogue = Epilogue {
            scale: &scale,
            bias: None,
            gelu: false,
        };
        for (name, rows_as) in [("15-bit rows", Rows::Wide), ("8-bit rows", Rows::Bytes)] {
            let packed = PackedInt8::new(&q, k, n, rows_as).expect("weights");
            let mut times = Vec::new();
            let mut checksum = 0f32;
            for _ in 0..30 {
                let t = Instant::now();
                checksum += packed.product(&x, rows, &epilogue, None)[3];
                times.push(t.elapsed().as_secs_f64());
            }
            times.sort_by(f64::total_cmp);
            let median = times[times.len() / 2];
            let macs = (rows * k * n) as f64;
            println!(
                "{rows} × {k} × {n}, {name}: median {:.3} ms, {:.1} G multiply-adds/s (checksum {checksum})",
                median * 1000.0,
                macs / median / 1e9
            );
        }
    }
}
