//! The bundle reader never panics: random flips, truncations and splices of a real bundle, and
//! damage to a section's content with its digest recomputed (so the section decoders, not only
//! the checksums, see the bad bytes). Every case is a typed error or a bundle that searches.
//!
//! The seed is printed; rerun a failure with `SEXTANT_TEST_SEED=<seed>`.

mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use sextant::bundle::{write_container, Bundle, RawBundle, SectionId};
use sextant::options::{Mode, SearchOptions, VectorSearch};
use sextant::search::{Engine, NoClock};

fn golden() -> Vec<u8> {
    std::fs::read(common::fixture("golden-v1.sxt")).unwrap()
}

fn runner(cases: u32) -> TestRunner {
    let seed: u64 = std::env::var("SEXTANT_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    println!("seed = {seed} (rerun with SEXTANT_TEST_SEED={seed})");
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// The known sections of a bundle as (id, body) pairs, ready for `write_container`.
fn sections_of(bytes: &[u8]) -> Vec<(u32, Vec<u8>)> {
    let raw = RawBundle::parse(bytes).unwrap();
    SectionId::ALL
        .iter()
        .map(|id| (*id as u32, raw.section(*id).unwrap().to_vec()))
        .collect()
}

/// Loads and, if that works, exercises every search path.
fn load_and_search(bytes: &[u8]) {
    let Ok(bundle) = Bundle::from_bytes(bytes) else { return };
    let dims = bundle.manifest.model.dims;
    let engine = Engine::new(bundle);
    let vector: Vec<f32> = (0..dims).map(|i| ((i * 7919) % 13) as f32 / 13.0 - 0.5).collect();
    for mode in Mode::ALL {
        for vector_search in [VectorSearch::Exact, VectorSearch::Hnsw] {
            let options = SearchOptions {
                k: 5,
                mode,
                vector_search,
                per_document: true,
                ..Default::default()
            };
            let _ = engine.search_with_vector("lamp fog logbook", Some(&vector), &options, &NoClock);
        }
    }
}

#[test]
fn the_golden_bundle_itself_loads() {
    let bytes = golden();
    assert!(Bundle::from_bytes(&bytes).is_ok());
}

#[test]
fn flipped_truncated_and_spliced_bytes_never_panic() {
    let bytes = golden();
    let len = bytes.len();
    let edit = prop_oneof![
        proptest::collection::vec((0..len, 1u8..=255), 1..8).prop_map(|flips| (0u8, flips, 0usize, 0usize, 0usize)),
        (0..len).prop_map(|cut| (1u8, vec![], cut, 0, 0)),
        (0..len, 0..len, 1usize..256).prop_map(|(from, to, n)| (2u8, vec![], from, to, n)),
    ];
    runner(400)
        .run(&edit, |(kind, flips, a, b, n)| {
            let mut damaged = bytes.clone();
            match kind {
                0 => {
                    for (at, x) in flips {
                        damaged[at] ^= x;
                    }
                }
                1 => damaged.truncate(a),
                _ => {
                    // Copy n bytes from `a` over position `b`, growing the file if needed.
                    let piece: Vec<u8> = bytes[a..(a + n).min(len)].to_vec();
                    let end = b + piece.len();
                    if end > damaged.len() {
                        damaged.resize(end, 0);
                    }
                    damaged[b..end].copy_from_slice(&piece);
                }
            }
            if damaged != bytes {
                prop_assert!(Bundle::from_bytes(&damaged).is_err(), "damaged bundle accepted");
            }
            load_and_search(&damaged);
            Ok(())
        })
        .unwrap();
}

#[test]
fn damaged_sections_with_valid_digests_never_panic() {
    let bytes = golden();
    let sections = sections_of(&bytes);
    let strategy = (
        0..sections.len(),
        prop_oneof![
            proptest::collection::vec((any::<usize>(), 1u8..=255), 1..6).prop_map(|f| (0u8, f, 0usize)),
            any::<usize>().prop_map(|cut| (1u8, vec![], cut)),
            proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6).prop_map(|f| (2u8, f, 0)),
        ],
    );
    runner(1500)
        .run(&strategy, |(which, (kind, edits, cut))| {
            let mut resealed = sections.clone();
            let body = &mut resealed[which].1;
            match kind {
                0 if !body.is_empty() => {
                    for (at, x) in edits {
                        let n = body.len();
                        body[at % n] ^= x;
                    }
                }
                1 => {
                    let n = body.len();
                    body.truncate(cut % (n + 1));
                }
                _ => {
                    for (at, x) in edits {
                        let n = body.len();
                        body.insert(at % (n + 1), x);
                    }
                }
            }
            load_and_search(&write_container(&resealed));
            Ok(())
        })
        .unwrap();
}

#[test]
fn unknown_sections_are_skipped() {
    let bytes = golden();
    let mut sections = sections_of(&bytes);
    sections.insert(2, (4242, b"from a future minor version".to_vec()));
    let bundle = Bundle::from_bytes(&write_container(&sections)).unwrap();
    assert_eq!(bundle.chunks.len(), 12);
    assert!(bundle.sections.iter().any(|s| s.id == 4242));
}
