//! What ordering the vectors into partitions costs a build or a merge at a large site's size, on
//! one thread and on several: `cluster_order_on` and `partition_order_on` (which starts from the
//! cluster order) over seeded vectors near `topics` directions, once with `OneThread` and once on
//! a pool of `threads` scoped threads, checking both give the same order.
//!
//! `cargo run --release --example partition_time -- [chunks] [partition size] [threads] [seed]`
//! (defaults 254000, 256 and 2: rust-doc's chunks and partitions on this machine's cores; seed 1).
//! Prints one JSON line. The vectors are synthetic (the cost is in their count and size, not
//! their meaning), so the k-means may take another number of rounds than real ones.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use sextant::index::files::{cluster_order_on, partition_order_on};
use sextant::indexer::{Executor, OneThread};

const DIMS: usize = 384;
const TOPICS: usize = 2000;
const BLOCK: usize = 4;

/// Jobs taken in turn by `threads` scoped threads, results put back in job order.
struct Pool(usize);

impl Executor for Pool {
    fn map<T: Send>(&self, n: usize, job: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
        let next = AtomicUsize::new(0);
        let out: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
        std::thread::scope(|s| {
            for _ in 0..self.0.max(1) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let value = job(i);
                    out.lock().unwrap()[i] = Some(value);
                });
            }
        });
        out.into_inner().unwrap().into_iter().map(|v| v.unwrap()).collect()
    }
}

fn main() {
    let arg = |i: usize, default: u64| {
        std::env::args()
            .nth(i)
            .map_or(default, |a| a.parse().expect("a whole number"))
    };
    let chunks = arg(1, 254_000) as usize;
    let part = arg(2, 256) as usize;
    let threads = arg(3, 2) as usize;
    let seed = arg(4, 1);
    eprintln!("seed {seed}");
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let topics: Vec<Vec<f32>> = (0..TOPICS).map(|_| (0..DIMS).map(|_| next()).collect()).collect();
    let vectors: Vec<Vec<f32>> = (0..chunks)
        .map(|i| {
            let v: Vec<f32> = topics[(i * 7919) % TOPICS].iter().map(|x| x + 0.3 * next()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter().map(|x| x / norm).collect()
        })
        .collect();
    let timed = |f: &dyn Fn() -> Vec<u32>| {
        let t = Instant::now();
        let order = f();
        (t.elapsed().as_secs_f64(), order)
    };
    let pool = Pool(threads);
    let (cluster_one, a) = timed(&|| cluster_order_on(&vectors, DIMS, BLOCK, &OneThread));
    let (cluster_pool, b) = timed(&|| cluster_order_on(&vectors, DIMS, BLOCK, &pool));
    assert_eq!(a, b, "the cluster order differs on the pool");
    let (partition_one, a) = timed(&|| partition_order_on(&vectors, DIMS, part, BLOCK, &OneThread));
    let (partition_pool, b) = timed(&|| partition_order_on(&vectors, DIMS, part, BLOCK, &pool));
    assert_eq!(a, b, "the partition order differs on the pool");
    println!(
        "{{\"chunks\":{chunks},\"partition_chunks\":{part},\"threads\":{threads},\"cluster_order_s\":{{\"one\":{cluster_one:.2},\"pool\":{cluster_pool:.2}}},\"partition_order_s\":{{\"one\":{partition_one:.2},\"pool\":{partition_pool:.2}}}}}"
    );
}
