//! How well binary codes choose the shortlist a dense query rescores with int8 vectors: the recall
//! of the exact int8 top 10 (every chunk's vector scored) in the best R chunks by code score,
//! every code read (no partitions), for R from 10 to 300. First the index's own codes as stored
//! (`index`), then code schemes rebuilt from its int8 vectors, to compare: the signs around the
//! mean weighted by the spread (`plain`, the codes before format 2.7), the same with each code's
//! factor in 8 bits (`factor`: what 2.7 stores, but from the int8 vectors and with one range for
//! all the codes rather than one a file), and with the vectors rotated first, by a seeded random
//! orthogonal matrix (`rotated`) or a randomized Hadamard transform on blocks of 128
//! (`hadamard`), each with its factor (experiments, not in the format).
//!
//! `cargo run --example code_recall -- <index.sxt | manifest.json> <queries.jsonl> <model dir>`
//! (BENCHMARKS.md, "Binary codes with a factor").

use std::sync::Arc;

use sextant::embed::{Embedder, ModelOptions, TextKind, TractEmbedder};
use sextant::eval::parse_queries;
use sextant::index::files::{CodeFile, VectorMeta};
use sextant::index::packed::Packed;
use sextant::index::{IndexManifest, IndexStore};
use sextant::search::pipeline::binary_scored;

mod common;
use common::{split_index, Error};

const DEPTHS: [usize; 6] = [10, 20, 40, 75, 150, 300];

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A seeded orthogonal matrix (Gram-Schmidt on Gaussian rows).
fn rotation(d: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut s = seed;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for _ in 0..d {
        let mut r: Vec<f64> = (0..d)
            .map(|_| {
                let (u1, u2) = (next().max(1e-12), next());
                (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect();
        for _ in 0..2 {
            for p in &rows {
                let k: f64 = r.iter().zip(p).map(|(a, b)| a * b).sum();
                for (x, y) in r.iter_mut().zip(p) {
                    *x -= k * y;
                }
            }
        }
        let n = r.iter().map(|x| x * x).sum::<f64>().sqrt();
        rows.push(r.into_iter().map(|x| x / n).collect());
    }
    rows.into_iter()
        .map(|r| r.into_iter().map(|x| x as f32).collect())
        .collect()
}

/// A randomized block Hadamard transform as a matrix: `rounds` times signs, a permutation, then
/// Walsh-Hadamard on blocks of 128.
fn hadamard(d: usize, seed: u64, rounds: usize) -> Vec<Vec<f32>> {
    let mut s = seed;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut plan = Vec::new();
    for _ in 0..rounds {
        let signs: Vec<f32> = (0..d).map(|_| if next() & 1 == 1 { 1.0 } else { -1.0 }).collect();
        let mut perm: Vec<usize> = (0..d).collect();
        for i in (1..d).rev() {
            perm.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        plan.push((signs, perm));
    }
    let transform = |v: &[f32]| -> Vec<f32> {
        let mut x = v.to_vec();
        for (signs, perm) in &plan {
            let y: Vec<f32> = perm.iter().map(|&p| x[p] * signs[p]).collect();
            x = y;
            for block in x.chunks_mut(128) {
                let n = block.len();
                let mut h = 1;
                while h < n {
                    for i in (0..n).step_by(2 * h) {
                        for j in i..i + h {
                            let (a, b) = (block[j], block[j + h]);
                            block[j] = a + b;
                            block[j + h] = a - b;
                        }
                    }
                    h *= 2;
                }
                let scale = 1.0 / (n as f32).sqrt();
                block.iter_mut().for_each(|z| *z *= scale);
            }
        }
        x
    };
    // Rows of the matrix: the transform of each basis vector gives a column.
    let cols: Vec<Vec<f32>> = (0..d)
        .map(|i| {
            let mut e = vec![0.0; d];
            e[i] = 1.0;
            transform(&e)
        })
        .collect();
    (0..d).map(|r| (0..d).map(|c| cols[c][r]).collect()).collect()
}

fn apply(m: &[Vec<f32>], v: &[f32]) -> Vec<f32> {
    m.iter().map(|row| dot(row, v)).collect()
}

/// One code scheme: per chunk a sign vector times per-dimension weights, and a per-chunk factor.
struct Scheme {
    name: String,
    /// Query transform (rotation or identity), then per-dimension weights.
    rotate: Option<Vec<Vec<f32>>>,
    weights: Vec<f32>,
    signs: Vec<Vec<i8>>,
    factor: Vec<f32>,
}

impl Scheme {
    fn scores(&self, q: &[f32]) -> Vec<f32> {
        let q = match &self.rotate {
            Some(m) => apply(m, q),
            None => q.to_vec(),
        };
        let w: Vec<f32> = q.iter().zip(&self.weights).map(|(a, b)| a * b).collect();
        self.signs
            .iter()
            .zip(&self.factor)
            .map(|(s, f)| f * s.iter().zip(&w).map(|(&b, x)| f32::from(b) * x).sum::<f32>())
            .collect()
    }
}

/// Builds the schemes over centered vectors `r` (each with its own `rotate`d copy).
fn schemes(vectors: &[Vec<f32>], d: usize) -> Vec<Scheme> {
    let mut out = Vec::new();
    // 8 bits between the least and greatest, as the format stores them (one range for all).
    let quantize = |f: &[f32]| -> Vec<f32> {
        let file = CodeFile::new(0, Vec::new(), Vec::new(), f);
        (0..f.len()).map(|i| file.factor(i)).collect()
    };
    for (tag, rot) in [
        ("", None),
        ("rotated ", Some(rotation(d, 0x5eed_2026))),
        ("hadamard ", Some(hadamard(d, 0x5eed_2026, 2))),
    ] {
        let vs: Vec<Vec<f32>> = match &rot {
            Some(m) => vectors.iter().map(|v| apply(m, v)).collect(),
            None => vectors.to_vec(),
        };
        let VectorMeta { mean, spread } = VectorMeta::calibrate(&vs, d);
        let centered: Vec<Vec<f32>> = vs
            .iter()
            .map(|v| v.iter().zip(&mean).map(|(x, m)| x - m).collect())
            .collect();
        let signs: Vec<Vec<i8>> = centered
            .iter()
            .map(|r| r.iter().map(|&x| if x > 0.0 { 1 } else { -1 }).collect())
            .collect();
        {
            let weights = spread;
            let u = |s: &[i8]| -> Vec<f32> { s.iter().zip(&weights).map(|(&b, w)| f32::from(b) * w).collect() };
            let rabit: Vec<f32> = centered
                .iter()
                .zip(&signs)
                .map(|(r, s)| dot(r, r) / dot(r, &u(s)).max(1e-9))
                .collect();
            let mut variants = vec![("factor", quantize(&rabit))];
            if rot.is_none() {
                variants.insert(0, ("plain", vec![1.0; vectors.len()]));
            }
            for (ftag, factor) in variants {
                out.push(Scheme {
                    name: format!("{tag}{ftag}"),
                    rotate: rot.clone(),
                    weights: weights.clone(),
                    signs: signs.clone(),
                    factor,
                });
            }
        }
    }
    out
}

fn top(scores: &[f32], k: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    let best = |a: &usize, b: &usize| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b));
    if k < idx.len() {
        idx.select_nth_unstable_by(k, best);
        idx.truncate(k);
    }
    idx.sort_by(best);
    idx
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: code_recall <index.sxt | manifest.json> <queries.jsonl> <model dir>");
        std::process::exit(2);
    }
    let queries = parse_queries(&std::fs::read_to_string(&args[2])?)?;
    let model = std::fs::read(format!("{}/model.onnx", args[3]))?;
    let tokenizer = std::fs::read(format!("{}/tokenizer.json", args[3]))?;
    let mut store;
    if args[1].ends_with(".json") {
        let (manifest, files) = split_index(std::path::Path::new(&args[1]))?;
        store = IndexStore::new(manifest);
        store.load_files(files.iter().map(|(n, b)| (n.as_str(), b.as_slice())))?;
    } else {
        let bytes = std::fs::read(&args[1])?;
        let packed = Packed::parse(&bytes)?;
        store = IndexStore::new(IndexManifest::from_json(packed.manifest)?);
        store.load_files(packed.files.iter().map(|(n, b)| (*n, *b)))?;
    }
    let n = store.manifest().counts.chunks;
    let vectors: Vec<Vec<f32>> = (0..n as u32)
        .map(|c| store.vector(c).ok_or("a chunk without a vector"))
        .collect::<Result<_, _>>()?;
    let d = store.manifest().model.dims;
    let embedder = Arc::new(TractEmbedder::from_bytes(&model, &tokenizer, &ModelOptions::default())?);
    let qv: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| embedder.embed(&q.text, TextKind::Query))
        .collect::<Result<_, _>>()?;
    let truth: Vec<Vec<usize>> = qv
        .iter()
        .map(|q| top(&vectors.iter().map(|v| dot(v, q)).collect::<Vec<_>>(), 10))
        .collect();
    println!(
        "# {n} chunks, {} queries; recall of the exact top 10 in the best R by code",
        queries.len()
    );
    println!("{:<22} {}", "scheme", DEPTHS.map(|r| format!("R={r:<5}")).join(" "));
    let total = (truth.iter().map(Vec::len).sum::<usize>()).max(1) as f64;
    let meta = store.meta().ok_or("no calibration")?;
    let mut found = [0usize; DEPTHS.len()];
    for (q, t) in qv.iter().zip(&truth) {
        let best = *DEPTHS.last().unwrap_or(&10);
        let order: Vec<usize> = binary_scored(meta, store.codes(), q, best)
            .into_iter()
            .map(|(c, _)| c as usize)
            .collect();
        for (i, &r) in DEPTHS.iter().enumerate() {
            found[i] += t.iter().filter(|c| order[..r.min(order.len())].contains(c)).count();
        }
    }
    println!(
        "{:<22} {}",
        "index",
        found.map(|f| format!("{:.3}  ", f as f64 / total)).join(" ")
    );
    for scheme in schemes(&vectors, d) {
        let mut found = [0usize; DEPTHS.len()];
        for (q, t) in qv.iter().zip(&truth) {
            let scores = scheme.scores(q);
            let order = top(&scores, *DEPTHS.last().unwrap());
            for (i, &r) in DEPTHS.iter().enumerate() {
                found[i] += t.iter().filter(|c| order[..r.min(order.len())].contains(c)).count();
            }
        }
        println!(
            "{:<22} {}",
            scheme.name,
            found.map(|f| format!("{:.3}  ", f as f64 / total)).join(" ")
        );
    }
    Ok(())
}
