//! The index readers never panic: random flips, truncations and splices of a real packed index,
//! damage to one of its files with the file renamed to its new hash and the manifest patched (so
//! the file decoders, not only the checksums, see the bad bytes), and a damaged manifest. Every
//! case is a typed error or an index that searches.
//!
//! The seed is printed; rerun a failure with `SEXTANT_TEST_SEED=<seed>`.

mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use sextant::container::{self, SectionId};
use sextant::index::files::file_name;
use sextant::index::packed::{pack, Packed};
use sextant::index::{IndexManifest, INDEX_MAJOR, INDEX_MINOR};
use sextant::options::{Mode, SearchOptions, VectorSearch};
use sextant::search::{Engine, NoClock, Step};

fn golden() -> Vec<u8> {
    std::fs::read(common::fixture("golden-v2.sxt")).unwrap()
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

/// The manifest (JSON) and the files of a packed index.
fn unpacked(bytes: &[u8]) -> (String, Vec<(String, Vec<u8>)>) {
    let packed = Packed::parse(bytes).unwrap();
    let manifest = String::from_utf8(packed.manifest.to_vec()).unwrap();
    let files = packed
        .files
        .iter()
        .map(|(name, body)| (name.to_string(), body.to_vec()))
        .collect();
    (manifest, files)
}

/// Loads and, if that works, exercises every search path.
fn load_and_search(bytes: &[u8]) {
    let Ok(engine) = Engine::from_bytes(bytes) else { return };
    let dims = engine.manifest().model.dims;
    let vector: Vec<f32> = (0..dims).map(|i| ((i * 7919) % 13) as f32 / 13.0 - 0.5).collect();
    for mode in Mode::ALL {
        for vector_search in [VectorSearch::Auto, VectorSearch::Exact] {
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
fn the_golden_index_itself_loads_and_searches() {
    let engine = Engine::from_bytes(&golden()).unwrap();
    assert!(engine.store().is_complete());
    let options = SearchOptions {
        k: 3,
        mode: Mode::Keyword,
        ..Default::default()
    };
    let step = engine.search("fog horn", &options, &NoClock).unwrap();
    let Step::Done(response) = step else {
        panic!("a packed index needs no files")
    };
    assert_eq!(response.results[0].doc_id, "faq-2");
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
    runner(300)
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
                    let piece: Vec<u8> = bytes[a..(a + n).min(len)].to_vec();
                    let end = b + piece.len();
                    if end > damaged.len() {
                        damaged.resize(end, 0);
                    }
                    damaged[b..end].copy_from_slice(&piece);
                }
            }
            if damaged != bytes {
                prop_assert!(Engine::from_bytes(&damaged).is_err(), "damaged index accepted");
            }
            load_and_search(&damaged);
            Ok(())
        })
        .unwrap();
}

#[test]
fn damaged_files_renamed_to_their_hash_never_panic() {
    let (manifest, files) = unpacked(&golden());
    let strategy = (
        0..files.len(),
        prop_oneof![
            proptest::collection::vec((any::<usize>(), 1u8..=255), 1..6).prop_map(|f| (0u8, f, 0usize)),
            any::<usize>().prop_map(|cut| (1u8, vec![], cut)),
            proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6).prop_map(|f| (2u8, f, 0)),
        ],
    );
    runner(800)
        .run(&strategy, |(which, (kind, edits, cut))| {
            let mut files = files.clone();
            let (old_name, body) = &mut files[which];
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
            let mut parts = old_name.split('.');
            let (kind_name, extension) = (parts.next().unwrap_or(""), old_name.rsplit('.').next().unwrap_or(""));
            let new_name = file_name(kind_name, extension, body);
            let patched = manifest.replace(old_name.as_str(), &new_name);
            *old_name = new_name;
            let Ok(manifest) = serde_json::from_str::<IndexManifest>(&patched) else {
                return Ok(());
            };
            load_and_search(&pack(&manifest, &files).unwrap());
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_damaged_manifest_is_a_typed_error() {
    let bytes = golden();
    let (manifest, _) = unpacked(&bytes);
    let directory = container::Container::parse(&bytes, INDEX_MAJOR..=INDEX_MAJOR)
        .unwrap()
        .section(SectionId::Files)
        .unwrap()
        .to_vec();
    for (from, to) in [
        ("\"chunks\":", "\"chunks\":1"),
        ("\"major\":2", "\"major\":3"),
        ("\"dims\":384", "\"dims\":383"),
        ("\"chunks_per_file\":", "\"chunks_per_file\":1"),
        ("\"analyzer\":\"", "\"analyzer\":\"x"),
    ] {
        let damaged = manifest.replacen(from, to, 1);
        assert_ne!(damaged, manifest, "{from}");
        let packed = container::write(
            INDEX_MAJOR,
            INDEX_MINOR,
            &[
                (SectionId::Manifest as u32, damaged.into_bytes()),
                (SectionId::Files as u32, directory.clone()),
            ],
        );
        let e = Engine::from_bytes(&packed).unwrap_err();
        assert_eq!(
            e.code().as_str(),
            if from.contains("major") {
                "UNSUPPORTED_VERSION"
            } else {
                "CORRUPT_BUNDLE"
            },
            "{from}: {e}"
        );
    }
}

/// An index whose manifest claims 2³² − 1 chunks, documents and dimensions, in runs of as many
/// chunks a file, each file a few bytes that claim as many entries: every file is refused before
/// anything is allocated for those counts (the reader used to abort asking for 206 GB).
#[test]
fn counts_no_bytes_back_are_refused_without_allocating_them() {
    let (manifest, files) = unpacked(&golden());
    let mut m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let huge = u64::from(u32::MAX);
    m["counts"]["chunks"] = huge.into();
    m["counts"]["documents"] = huge.into();
    m["model"]["dims"] = (huge / 8).into();
    let varint_huge = [0xff, 0xff, 0xff, 0xff, 0x0f];
    let mut crafted: Vec<(String, Vec<u8>)> = Vec::new();
    let mut put = |kind: &str, ext: &str, bytes: Vec<u8>| -> String {
        let name = file_name(kind, ext, &bytes);
        crafted.push((name.clone(), bytes));
        name
    };
    let with = |magic: &[u8], tail: &[u8]| [magic, tail].concat();
    m["files"]["norms"] = put("norms", "bin", with(b"SXnm", &varint_huge)).into();
    m["files"]["vectors"]["meta"] = put("vmeta", "bin", with(b"SXvm", &(u32::MAX / 8).to_le_bytes())).into();
    let codes = put("codes", "bin", with(b"SXvc", &u32::MAX.to_le_bytes()));
    let blocks = put("vec", "bin", with(b"SXvb", &u32::MAX.to_le_bytes()));
    let fragment = put("frag", "json", br#"{"first":0,"documents":[],"chunks":[]}"#.to_vec());
    let shard = put("kw", "bin", with(b"SXkw", &varint_huge));
    m["files"]["vectors"]["codes"] = serde_json::json!({"chunks_per_file": huge, "files": [codes]});
    m["files"]["vectors"]["blocks"] = serde_json::json!({"chunks_per_file": huge, "files": [blocks]});
    m["files"]["fragments"] = serde_json::json!({"chunks_per_file": huge, "files": [fragment]});
    m["files"]["keyword"] = serde_json::json!([{"first": "a", "file": shard}]);
    let json = serde_json::to_vec(&m).unwrap();
    assert!(
        json.len() + crafted.iter().map(|(_, b)| b.len()).sum::<usize>() < 2048,
        "a small index"
    );
    let mut engine = Engine::from_manifest(&json).expect("the manifest alone is consistent");
    for (name, bytes) in &crafted {
        let e = engine.add_file(name, bytes).expect_err(name);
        assert_eq!(e.code().as_str(), "CORRUPT_BUNDLE", "{name}: {e}");
    }
    let manifest: IndexManifest = serde_json::from_slice(&json).unwrap();
    let packed = pack(&manifest, &crafted).unwrap();
    assert_eq!(
        Engine::from_bytes(&packed).unwrap_err().code().as_str(),
        "CORRUPT_BUNDLE"
    );
    drop(files);
}

/// A manifest may name only files of the form the writer gives them, relative to it: never a
/// path out of its folder or a URL of another host.
#[test]
fn file_names_outside_the_documented_form_are_refused() {
    let (manifest, files) = unpacked(&golden());
    let norms = files.iter().find(|(n, _)| n.starts_with("norms.")).unwrap().0.clone();
    for bad in [
        format!("../../../evil/{norms}"),
        format!("http://evil.example/{norms}"),
        format!("//evil.example/{norms}"),
        format!("/{norms}"),
        norms.replace("norms.", "NORMS."),
        norms.replace(".bin", ".bin?x=1"),
        format!("{norms}/x"),
    ] {
        let patched = manifest.replace(&norms, &bad);
        let e = Engine::from_manifest(patched.as_bytes()).unwrap_err();
        assert_eq!(e.code().as_str(), "CORRUPT_BUNDLE", "{bad}");
        assert!(e.to_string().contains("is not of the form"), "{bad}: {e}");
    }
}

/// A run of 2³² chunks a file once made `lookup` step by zero: counts and runs past what a u32
/// chunk number can name are refused with the manifest.
#[test]
fn counts_past_chunk_numbers_are_refused() {
    let (manifest, _) = unpacked(&golden());
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let huge = u64::from(u32::MAX) + 1;
    for path in [
        "/files/fragments/chunks_per_file",
        "/files/vectors/codes/chunks_per_file",
        "/files/vectors/blocks/chunks_per_file",
        "/counts/documents",
    ] {
        let mut m = m.clone();
        *m.pointer_mut(path).unwrap() = huge.into();
        let e = Engine::from_manifest(&serde_json::to_vec(&m).unwrap()).unwrap_err();
        assert!(e.to_string().contains("the most chunk numbers can name"), "{path}: {e}");
    }
}

/// A format-2.4 manifest claiming 2³² − 1 chunks, documents and keyword shards, listed by pages
/// of 2⁴⁰ objects (one page a run, so the manifest adds up): nothing is allocated for those
/// counts, and the real pages, which list a few objects, are refused as what they are.
#[test]
fn a_paged_manifest_claiming_huge_runs_allocates_nothing_for_them() {
    let bytes = std::fs::read(common::fixture("golden-v2-packs.sxt")).unwrap();
    let packed = Packed::parse(&bytes).unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(packed.manifest).unwrap();
    let huge = u64::from(u32::MAX);
    m["counts"]["chunks"] = huge.into();
    m["counts"]["documents"] = huge.into();
    m["files"]["keyword_shards"] = huge.into();
    m["files"]["page_entries"] = (1u64 << 40).into();
    let json = serde_json::to_vec(&m).unwrap();
    let mut engine = Engine::from_manifest(&json).expect("the manifest adds up");
    assert!(
        engine.missing().len() < 16,
        "the pages and the first objects, not the runs"
    );
    for (name, body) in &packed.files {
        let e = engine.add_file(name, body).expect_err(name);
        assert_eq!(e.code().as_str(), "CORRUPT_BUNDLE", "{name}: {e}");
    }
    let options = SearchOptions {
        mode: Mode::Keyword,
        ..Default::default()
    };
    match engine.search("lamp", &options, &NoClock) {
        Ok(Step::Need(names)) => assert!(names.len() < 16, "{names:?}"),
        Ok(Step::Done(_)) => panic!("searched an index whose files were refused"),
        Err(e) => assert_eq!(e.code().as_str(), "CORRUPT_BUNDLE", "{e}"),
    }
}
