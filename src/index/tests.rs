//! The index files and store: names are content, the store asks for exactly what a query needs,
//! readers refuse bad bytes with errors (never a panic), and cluster order keeps similar vectors in
//! one block.

use proptest::prelude::*;

use super::files::*;
use super::writer::{write_index, BuiltIndex, IndexInput};
use super::*;
use std::collections::HashMap;

use crate::bm25::Bm25Params;
use crate::chunk::Chunk;
use crate::embed::ModelSpec;

/// A small deterministic generator (the seed is printed by the tests that use it).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn next_f32(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    /// A unit vector near `center` (noise of about `noise` a dimension).
    pub(crate) fn near(&mut self, center: &[f32], noise: f32) -> Vec<f32> {
        let v: Vec<f32> = center.iter().map(|c| c + noise * self.next_f32()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
        v.into_iter().map(|x| x / norm).collect()
    }
}

pub(crate) fn model(dims: usize) -> ModelSpec {
    let options = crate::embed::ModelOptions {
        max_tokens: 8,
        weights: crate::embed::Weights::F32,
        ..Default::default()
    };
    ModelSpec::new("0".repeat(64), "1".repeat(64), dims, &options)
}

pub(crate) fn chunk(id: &str, doc: u32, text: &str) -> Chunk {
    Chunk {
        id: id.into(),
        doc,
        index: 0,
        url: format!("/{id}"),
        heading_path: vec!["H".into()],
        text: text.into(),
        content_hash: crate::digest::sha256_hex(text.as_bytes()),
        code: Vec::new(),
        weighted: Vec::new(),
    }
}

pub(crate) fn document(id: &str) -> DocumentInfo {
    DocumentInfo {
        id: id.into(),
        source: id.into(),
        url: None,
        title: id.to_uppercase(),
        ..Default::default()
    }
}

/// An index of `texts` (one document per `per_doc` chunks) with `vectors`.
pub(crate) fn build(texts: &[String], vectors: &[Vec<f32>], per_doc: usize, layout: Layout) -> BuiltIndex {
    let documents: Vec<DocumentInfo> = (0..texts.len().div_ceil(per_doc))
        .map(|d| document(&format!("d{d}")))
        .collect();
    build_of(&documents, texts, vectors, per_doc, layout)
}

/// An index of `documents` (`per_doc` of `texts` each, named `d0`, `d1`, …) with `vectors`.
pub(crate) fn build_of(
    documents: &[DocumentInfo],
    texts: &[String],
    vectors: &[Vec<f32>],
    per_doc: usize,
    layout: Layout,
) -> BuiltIndex {
    let chunks: Vec<Chunk> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| chunk(&format!("d{}#{}", i / per_doc, i % per_doc), (i / per_doc) as u32, t))
        .collect();
    let model = model(vectors.first().map_or(3, Vec::len));
    write_index(IndexInput {
        documents,
        chunks: &chunks,
        duplicates_dropped: 0,
        shared_chunks: 0,
        vectors,
        model: &model,
        chunking: crate::chunk::ChunkParams::default(),
        bm25: Bm25Params::default(),
        fields: super::Fields::default(),
        analyzer: crate::analyzer::Analyzer::NAME,
        layout,
    })
    .expect("a valid input writes")
}

/// Three chunks in two documents, vectors along the axes.
pub(crate) fn tiny() -> BuiltIndex {
    let texts = ["lamp oil", "fog horn", "lamp lens"].map(String::from);
    let vectors = vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0], vec![0.0, 0.0, 1.0]];
    let documents = [document("a"), document("b")];
    let chunks = [
        chunk("a#0", 0, &texts[0]),
        chunk("a#1", 0, &texts[1]),
        chunk("b#0", 1, &texts[2]),
    ];
    small(&documents, &chunks, &vectors)
}

/// An index of three-dimensional vectors cut in files of two chunks.
fn small(documents: &[DocumentInfo], chunks: &[Chunk], vectors: &[Vec<f32>]) -> BuiltIndex {
    write_index(IndexInput {
        documents,
        chunks,
        duplicates_dropped: 0,
        shared_chunks: 0,
        vectors,
        model: &model(3),
        chunking: crate::chunk::ChunkParams::default(),
        bm25: Bm25Params::default(),
        fields: super::Fields::default(),
        analyzer: crate::analyzer::Analyzer::NAME,
        layout: Layout {
            fragment_chunks: 2,
            block_chunks: 2,
            code_file_chunks: 2,
            ..Layout::default()
        },
    })
    .unwrap()
}

/// Four pages, each a chunk holding "lamp" (the first most often), with filters (`tags`,
/// `lang`) and a sort key (`rank`, the reverse of BM25's order) on all but the last.
pub(crate) fn faceted() -> BuiltIndex {
    let texts = ["lamp lamp lamp oil", "lamp lamp fog", "lamp lens glass", "lamp"].map(String::from);
    let vectors = vec![
        vec![1.0, 0.0, 0.0],
        vec![0.0, 1.0, 0.0],
        vec![0.0, 0.0, 1.0],
        vec![0.6, 0.8, 0.0],
    ];
    let facets: [(&[&str], &str, &str); 4] = [
        (&["guide", "oil"], "en", "3"),
        (&["guide"], "fr", "2"),
        (&["api"], "en", "10"),
        (&[], "", ""),
    ];
    let documents: Vec<DocumentInfo> = ["a", "b", "c", "d"]
        .iter()
        .zip(facets)
        .map(|(id, (tags, lang, rank))| {
            let mut d = document(id);
            if !tags.is_empty() {
                d.filters
                    .insert("tags".into(), tags.iter().map(|t| t.to_string()).collect());
                d.filters.insert("lang".into(), vec![lang.to_string()]);
                d.sort.insert("rank".into(), rank.to_string());
            }
            d
        })
        .collect();
    let chunks: Vec<Chunk> = ["a#0", "b#0", "c#0", "d#0"]
        .iter()
        .enumerate()
        .map(|(i, id)| chunk(id, i as u32, &texts[i]))
        .collect();
    small(&documents, &chunks, &vectors)
}

/// A store holding every file of `built`.
pub(crate) fn full_store(built: &BuiltIndex) -> IndexStore {
    let manifest = IndexManifest::from_json(&serde_json::to_vec(&built.manifest).unwrap()).unwrap();
    let mut store = IndexStore::new(manifest);
    let files: HashMap<&str, &[u8]> = built.files.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    store
        .load_all(
            |n| files.get(n).map(|b| b.to_vec()).ok_or(()),
            |n, ()| panic!("{n} missing"),
        )
        .unwrap();
    assert!(store.is_complete());
    store
}

/// The bytes of an object or page of `built` by name.
pub(crate) fn bytes_of<'a>(built: &'a BuiltIndex, name: &str) -> &'a [u8] {
    built
        .object(name)
        .unwrap_or_else(|| panic!("{name} is not in the index"))
}

/// Adds every page of `built` to `store`: what a split index holds once it knows where every
/// object is, so a test of a step sees the objects it needs.
pub(crate) fn add_pages(store: &mut IndexStore, built: &BuiltIndex) {
    for name in store.missing().into_iter().filter(|n| n.starts_with("page.")) {
        store.add(&name, bytes_of(built, &name)).unwrap();
    }
}

/// A store of `built` holding its manifest and pages.
pub(crate) fn paged_store(built: &BuiltIndex) -> IndexStore {
    let manifest = IndexManifest::from_json(&serde_json::to_vec(&built.manifest).unwrap()).unwrap();
    let mut store = IndexStore::new(manifest);
    add_pages(&mut store, built);
    store
}

/// Words for synthetic chunks.
const WORDS: [&str; 12] = [
    "lamp", "oil", "fog", "horn", "lens", "tower", "keeper", "storm", "light", "ship", "rock", "bell",
];

/// `n` chunks in `clusters` clusters (chunk `i` in cluster `i % clusters`), 32 dimensions.
pub(crate) fn clustered(seed: u64, n: usize, clusters: usize) -> (Vec<String>, Vec<Vec<f32>>, Vec<usize>) {
    let mut rng = Lcg(seed);
    let centers: Vec<Vec<f32>> = (0..clusters)
        .map(|_| (0..32).map(|_| rng.next_f32()).collect())
        .collect();
    let mut texts = Vec::new();
    let mut vectors = Vec::new();
    let mut cluster = Vec::new();
    for i in 0..n {
        let c = i % clusters;
        vectors.push(rng.near(&centers[c], 0.05));
        texts.push(format!(
            "{} {} {i}",
            WORDS[i % WORDS.len()],
            WORDS[(i / 3) % WORDS.len()]
        ));
        cluster.push(c);
    }
    (texts, vectors, cluster)
}

#[test]
fn code_lines_count_code_weight_times() {
    let analyzer = crate::analyzer::Analyzer::english();
    let text = "Run the lamp.\nlamp --on\nThen wait.";
    let code = crate::chunk::code_lines(text, &["lamp --on".to_string()]);
    assert_eq!(code, [(14, 23)], "the second line is the code block's");
    let weighed = |code_weight| {
        Fields {
            title_weight: 0,
            heading_weight: 0,
            embed_context: false,
            code_weight,
        }
        .terms(&analyzer, "", &[], text, &code, &[])
    };
    assert_eq!(weighed(1), analyzer.terms(text), "1: code counts as prose");
    assert_eq!(weighed(0), ["run", "lamp", "wait"], "0: code is not searchable");
    assert_eq!(weighed(2), ["run", "lamp", "lamp", "lamp", "wait"]);
    // Recorded only when not 1: an index built with the default has the manifest it had.
    let json = serde_json::to_string(&Fields::default()).unwrap();
    assert!(!json.contains("code_weight"), "{json}");
    let zero: Fields = serde_json::from_str(
        &serde_json::to_string(&Fields {
            code_weight: 0,
            ..Fields::default()
        })
        .unwrap(),
    )
    .unwrap();
    assert_eq!(zero.code_weight, 0);
    assert!(Fields {
        code_weight: 11,
        ..Fields::default()
    }
    .validate()
    .is_err());
}

#[test]
fn weighted_elements_count_their_weight_and_win_over_code() {
    let analyzer = crate::analyzer::Analyzer::english();
    let text = "Intro lamp.\n\nKey lamp facts\n\nlamp --on\n\nLow lamp note";
    let elements = [
        ("Key lamp facts".to_string(), 3),
        ("Low lamp note".to_string(), 0),
        ("absent".to_string(), 5),
    ];
    let weighted = crate::chunk::weighted_ranges(text, &elements);
    assert_eq!(weighted.len(), 2, "{weighted:?}: only the elements the chunk holds");
    let code = crate::chunk::code_lines(text, &["lamp --on".to_string()]);
    let fields = Fields {
        title_weight: 0,
        heading_weight: 0,
        embed_context: false,
        code_weight: 2,
    };
    let terms = fields.terms(&analyzer, "", &[], text, &code, &weighted);
    let lamps = terms.iter().filter(|t| *t == "lamp").count();
    assert_eq!(
        lamps,
        1 + 3 + 2,
        "once in prose, three times weighted, twice as code, never at weight 0"
    );
    assert_eq!(terms.iter().filter(|t| *t == "key").count(), 3);
    assert!(!terms.contains(&"note".to_string()), "weight 0: not searchable");
    // An element overlapping a code line: the element's weight holds there.
    let over = crate::chunk::weighted_ranges(text, &[("lamp --on".to_string(), 5)]);
    let terms = fields.terms(&analyzer, "", &[], text, &code, &over);
    let lamps = terms.iter().filter(|t| *t == "lamp").count();
    assert_eq!(
        lamps,
        1 + 1 + 5 + 1,
        "the code line read at the element's 5, not code's 2"
    );
    // Overlapping elements: the first found wins, the rest of the text counts once.
    let both = crate::chunk::weighted_ranges("a lamp b", &[("a lamp".to_string(), 2), ("lamp b".to_string(), 4)]);
    assert_eq!(both, [(0, 6, 2)]);
}

#[test]
fn fields_weigh_the_title_and_headings_and_give_the_model_its_context() {
    let analyzer = crate::analyzer::Analyzer::english();
    let headings = ["Install".to_string(), "From source".to_string()];
    let fields = Fields {
        title_weight: 2,
        heading_weight: 1,
        embed_context: true,
        code_weight: 1,
    };
    assert_eq!(
        fields.terms(&analyzer, "Lamp guide", &headings, "Run make.", &[], &[]),
        ["lamp", "guid", "lamp", "guid", "instal", "sourc", "run", "make"]
    );
    assert_eq!(
        Fields::UNRECORDED.terms(&analyzer, "Lamp guide", &headings, "Run make.", &[], &[]),
        ["instal", "sourc", "run", "make"],
        "indexes without fields: the heading path once, no title"
    );
    assert_eq!(
        fields.embed_input("Lamp guide", &headings, "Run make."),
        "Lamp guide › Install › From source\nRun make."
    );
    let same = ["Lamp guide".to_string(), " ".to_string()];
    assert_eq!(
        fields.embed_input(" Lamp guide ", &same, "Run."),
        "Lamp guide\nRun.",
        "a heading equal to the title, or empty, is not repeated"
    );
    assert_eq!(fields.embed_input("", &[], "Run."), "Run.");
    assert_eq!(Fields::UNRECORDED.embed_input("Lamp", &headings, "Run."), "Run.");
    assert!(Fields {
        title_weight: 11,
        ..fields
    }
    .validate()
    .unwrap_err()
    .contains("fields.title_weight"));
    // A manifest without `fields` reads as the unrecorded weights.
    let built = tiny();
    let mut json: serde_json::Value = serde_json::to_value(&built.manifest).unwrap();
    assert_eq!(json["fields"]["embed_context"], true);
    json.as_object_mut().unwrap().remove("fields");
    let old = IndexManifest::from_json(&serde_json::to_vec(&json).unwrap()).unwrap();
    assert_eq!(old.fields, Fields::UNRECORDED);
}

#[test]
fn every_file_is_named_by_its_content_and_listed_once() {
    let built = tiny();
    let names = built.manifest.file_names();
    assert_eq!(names.len(), built.files.len());
    for (name, bytes) in &built.files {
        assert!(content_matches(name, bytes), "{name}");
        assert!(names.contains(&name.as_str()), "{name} is listed");
        let mut flipped = bytes.clone();
        flipped[0] ^= 1;
        assert!(!content_matches(name, &flipped), "{name} with a flipped byte");
    }
    // Writing twice gives the same bytes.
    let again = tiny();
    assert_eq!(
        serde_json::to_vec(&again.manifest).unwrap(),
        serde_json::to_vec(&built.manifest).unwrap()
    );
    assert_eq!(again.files, built.files);
}

#[test]
fn the_store_asks_for_exactly_the_files_a_step_needs() {
    let built = tiny();
    let manifest = IndexManifest::from_json(&serde_json::to_vec(&built.manifest).unwrap()).unwrap();
    let mut store = IndexStore::new(manifest.clone());
    let add = |store: &mut IndexStore, names: &[String]| {
        for name in names {
            store.add(name, bytes_of(&built, name)).unwrap();
        }
    };
    let terms = vec!["lamp".to_string()];
    // First the norms and the page that says which shard holds "lamp", then the shard.
    let needs = store.keyword_needs(&terms);
    let norms = store.missing().into_iter().find(|n| n.starts_with("norms.")).unwrap();
    assert_eq!(needs.len(), 2, "norms and the keyword page: {needs:?}");
    assert!(needs.contains(&norms) && needs.iter().any(|n| n.starts_with("page.")));
    add(&mut store, &needs);
    let shard = store.keyword_needs(&terms);
    assert!(shard.len() == 1 && shard[0].starts_with("kw."), "{shard:?}");
    assert!(store.location(&shard[0]).is_some(), "in a pack");
    add(&mut store, &shard);
    assert!(store.keyword_needs(&terms).is_empty());
    assert_eq!(store.postings("lamp").map(|p| p.df), Some(2));
    assert!(!store.is_complete());

    // Blocks are unknown until every code file is in.
    add_pages(&mut store, &built);
    assert!(store.block_needs([0, 1, 2]).is_empty());
    let code_needs = store.code_needs(None, usize::MAX);
    assert_eq!(code_needs.len(), 1 + 2, "meta and the two code files: {code_needs:?}");
    add(&mut store, &code_needs);
    assert_eq!(store.codes().count(), 3);
    let one = store.block_needs([2]);
    assert_eq!(one.len(), 1);
    assert_eq!(store.block_needs([0, 1, 2]).len(), 2, "three chunks in blocks of two");
    assert_eq!(store.dot(2, &[0.0, 0.0, 1.0]), None, "not added yet");
    add(&mut store, &one);
    let dot = store.dot(2, &[0.0, 0.0, 1.0]).unwrap();
    assert!((dot - 1.0).abs() < 0.01, "{dot}");

    let second = store.fragment_needs([2]);
    let first = store.fragment_needs([0, 1]);
    assert!(
        second.len() == 1 && first.len() == 1 && first != second,
        "{first:?} {second:?}"
    );
    assert!(first[0].starts_with("frag."));
}

#[test]
fn the_store_refuses_files_it_does_not_list_or_that_are_not_their_name() {
    let built = tiny();
    let mut store = IndexStore::new(built.manifest.clone());
    let name = store.missing().into_iter().find(|n| n.starts_with("norms.")).unwrap();
    let bytes = bytes_of(&built, &name).to_vec();
    assert!(matches!(
        store.add("kw.0123456789abcdef.bin", &bytes),
        Err(IndexError::UnknownFile { .. })
    ));
    let mut damaged = bytes.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0x40;
    let err = store.add(&name, &damaged).unwrap_err();
    assert!(matches!(err, IndexError::BadFile { .. }), "{err}");
    assert!(err.to_string().contains(name.as_str()), "{err}");
    assert!(
        err.to_string().contains("of pack."),
        "says which pack it was read from: {err}"
    );
    // A file added under another file's name is refused too.
    let other = store.missing().into_iter().find(|n| n.starts_with("vmeta.")).unwrap();
    assert!(matches!(store.add(&other, &bytes), Err(IndexError::BadFile { .. })));
}

#[test]
fn a_damaged_or_truncated_pack_is_refused_naming_the_file() {
    let (texts, vectors, _) = clustered(4, 64, 4);
    let layout = Layout {
        pack_bytes: 4096,
        ..Layout::default()
    };
    let built = build(&texts, &vectors, 4, layout);
    assert!(built.files.len() > 2, "several packs: {}", built.files.len());
    let manifest = IndexManifest::from_json(&serde_json::to_vec(&built.manifest).unwrap()).unwrap();
    let read = |files: &[(String, Vec<u8>)]| {
        let files: HashMap<String, Vec<u8>> = files.iter().cloned().collect();
        let mut store = IndexStore::new(manifest.clone());
        store.load_all(
            |n| files.get(n).cloned().ok_or(()),
            |n, ()| IndexError::UnknownFile { file: n.into() },
        )
    };
    assert!(read(&built.files).is_ok());
    for (i, (pack, bytes)) in built.files.iter().enumerate() {
        let mut truncated = built.files.clone();
        truncated[i].1.truncate(bytes.len() - 1);
        let err = read(&truncated).unwrap_err();
        assert!(
            err.to_string().contains(pack.as_str()) && err.to_string().contains("truncated"),
            "{err}"
        );
        let mut damaged = built.files.clone();
        damaged[i].1[bytes.len() / 2] ^= 0x10;
        let err = read(&damaged).unwrap_err();
        assert!(matches!(err, IndexError::BadFile { .. }), "{err}");
        assert!(err.to_string().contains(pack.as_str()), "names the pack: {err}");
    }
    // A whole pack added at once yields the objects whose places are known; with every page in,
    // every pack adds up to the whole index.
    let mut store = paged_store(&built);
    for (name, bytes) in &built.files {
        store.add(name, bytes).unwrap();
    }
    assert!(store.is_complete());
}

#[test]
fn without_packs_every_object_is_a_file_and_pages_name_them() {
    let (texts, vectors, _) = clustered(6, 40, 4);
    let unpacked = Layout {
        pack_bytes: 0,
        page_entries: 2,
        ..Layout::default()
    };
    let built = build(&texts, &vectors, 4, unpacked);
    assert!(built.manifest.files.packs.is_empty());
    assert!(built.files.iter().all(|(n, _)| !n.starts_with("pack.")));
    let names = built.manifest.file_names();
    assert!(
        names.len() < built.files.len(),
        "the manifest names the pages, not every object"
    );
    let store = full_store(&built);
    assert_eq!(store.location(&built.files[0].0), None);
    // The same index in packs searches the same: the objects are byte for byte the same.
    let packed = build(
        &texts,
        &vectors,
        4,
        Layout {
            pack_bytes: 1 << 20,
            ..unpacked
        },
    );
    let packed_store = full_store(&packed);
    for c in 0..40 {
        assert_eq!(store.vector(c), packed_store.vector(c));
        assert_eq!(
            store.fragment(c).map(|f| f.chunks.clone()),
            packed_store.fragment(c).map(|f| f.chunks.clone())
        );
    }
}

#[test]
fn manifests_that_do_not_add_up_are_refused() {
    let built = tiny();
    let good = serde_json::to_value(&built.manifest).unwrap();
    let mutate = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        f(&mut v);
        IndexManifest::from_json(&serde_json::to_vec(&v).unwrap())
    };
    assert!(mutate(&|_| ()).is_ok());
    assert!(matches!(
        mutate(&|v| v["format"]["major"] = 3.into()),
        Err(IndexError::UnsupportedVersion { .. })
    ));
    // Runs cover the chunks: 513 chunks in objects of 2 need 2 pages of 256, not 1.
    assert!(
        mutate(&|v| v["counts"]["chunks"] = 513.into()).is_err(),
        "runs cover the chunks"
    );
    assert!(
        mutate(&|v| v["files"]["packs"] = serde_json::json!([])).is_err(),
        "objects in packs it does not have"
    );
    assert!(mutate(&|v| v["files"]["packs"][0] = "../pack.0123456789abcdef.bin".into()).is_err());
    assert!(mutate(&|v| v["files"]["norms"] = "norms.0123456789abcdef.bin@0:0:0".into()).is_err());
    assert!(
        mutate(&|v| v["files"]["page_entries"] = 0.into()).is_err(),
        "packs without pages"
    );
    // A page that lists another count of objects than the manifest says is refused when read.
    let more = mutate(&|v| v["counts"]["chunks"] = 5.into()).unwrap();
    let page = directory::ObjectRef::parse(&more.files.fragments.files[0], 1)
        .unwrap()
        .name;
    let mut store = IndexStore::new(more);
    let err = store.add(&page, bytes_of(&built, &page)).unwrap_err();
    assert!(matches!(err, IndexError::BadFile { .. }), "{err}");
    assert!(mutate(&|v| v["analyzer"] = "klingon".into()).is_err());
    assert!(mutate(&|v| v["files"]["fragments"]["chunks_per_file"] = 0.into()).is_err());
    assert!(
        mutate(&|v| v["added_later"] = 1.into()).is_ok(),
        "a later minor version's field is ignored"
    );
    assert!(IndexManifest::from_json(b"{").is_err());
}

#[test]
fn int8_blocks_keep_dot_products_within_a_percent() {
    let seed = 7;
    println!("seed {seed}");
    let mut rng = Lcg(seed);
    let dims = 64;
    let vectors: Vec<Vec<f32>> = (0..16).map(|_| rng.near(&vec![0.0; dims], 1.0)).collect();
    let refs: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
    let chunks: Vec<u32> = (100..116).collect();
    let block = BlockFile::quantize(&chunks, &refs, dims);
    let back = BlockFile::from_bytes(&block.to_bytes(), 16, dims, 200).unwrap();
    assert_eq!(back, block);
    let query = rng.near(&vec![0.0; dims], 1.0);
    for (c, v) in chunks.iter().zip(&vectors) {
        let exact: f32 = v.iter().zip(&query).map(|(a, b)| a * b).sum();
        let int8 = back.dot(*c, &query).unwrap();
        assert!((exact - int8).abs() < 0.01, "chunk {c}: {exact} vs {int8}");
    }
    assert_eq!(back.dot(5, &query), None, "a chunk it does not hold");
    assert!(
        BlockFile::from_bytes(&block.to_bytes(), 16, dims, 110).is_err(),
        "chunk past the count"
    );
}

#[test]
fn binary_codes_and_calibration_round_trip() {
    let (_, vectors, _) = clustered(3, 40, 4);
    let meta = VectorMeta::calibrate(&vectors, 32);
    assert_eq!(VectorMeta::from_bytes(&meta.to_bytes(), 32).unwrap(), meta);
    assert!(VectorMeta::from_bytes(&meta.to_bytes(), 31).is_err());
    let codes: Vec<u8> = vectors.iter().rev().flat_map(|v| meta.code(v)).collect();
    let factors: Vec<f32> = vectors.iter().rev().map(|v| meta.factor(v)).collect();
    let file = CodeFile::new(4, (0..40).rev().collect(), codes.clone(), &factors);
    let bytes = file.to_bytes();
    assert_eq!(&bytes[..4], b"SXvq");
    let back = CodeFile::from_bytes(&bytes, 40, 32, 40).unwrap();
    assert_eq!(back, file);
    assert!(CodeFile::from_bytes(&bytes, 39, 32, 40).is_err(), "count");
    assert!(
        CodeFile::from_bytes(&bytes[..bytes.len() - 1], 40, 32, 40).is_err(),
        "a level cut off"
    );
    // Each factor is kept within a 255th of the file's range.
    let (lo, hi) = file.factors;
    assert!(lo > 0.0 && hi > lo, "{lo} {hi}");
    for (i, f) in factors.iter().enumerate() {
        assert!(
            (back.factor(i) - f).abs() <= (hi - lo) / 500.0,
            "entry {i}: {} for {f}",
            back.factor(i)
        );
    }
    // A file from before 2.7 reads with every factor 1 and writes back byte for byte.
    let old = CodeFile {
        code_len: 4,
        chunks: (0..40).rev().collect(),
        codes,
        factors: (1.0, 1.0),
        levels: Vec::new(),
    };
    let old_bytes = old.to_bytes();
    assert_eq!(&old_bytes[..4], b"SXvc");
    let read = CodeFile::from_bytes(&old_bytes, 40, 32, 40).unwrap();
    assert_eq!(read.to_bytes(), old_bytes);
    assert!(read.iter().all(|(_, _, f)| f == 1.0));
    // Damaged factors: negative, or the least above the greatest.
    for (lo, hi) in [(-1.0f32, 2.0f32), (3.0, 2.0), (f32::NAN, 1.0)] {
        let mut bad = bytes.clone();
        bad[8..12].copy_from_slice(&lo.to_le_bytes());
        bad[12..16].copy_from_slice(&hi.to_le_bytes());
        assert!(CodeFile::from_bytes(&bad, 40, 32, 40).is_err(), "{lo} {hi}");
    }
    // The factor makes the code score estimate the dot product with the vector less the mean:
    // closer over these vectors than the code score alone scaled by one least-squares constant.
    let q = &vectors[5];
    let tables = meta.lookup_table(q);
    let code_score = |v: &[f32]| -> f32 { meta.code(v).iter().zip(&tables).map(|(b, t)| t[*b as usize]).sum() };
    let truth: Vec<f32> = vectors
        .iter()
        .map(|v| v.iter().zip(&meta.mean).zip(q).map(|((x, m), y)| (x - m) * y).sum())
        .collect();
    let error = |estimates: &[f32]| -> f32 {
        let scale = estimates.iter().zip(&truth).map(|(e, t)| e * t).sum::<f32>()
            / estimates.iter().map(|e| e * e).sum::<f32>();
        estimates.iter().zip(&truth).map(|(e, t)| (scale * e - t).powi(2)).sum()
    };
    let plain: Vec<f32> = vectors.iter().map(|v| code_score(v)).collect();
    let scaled: Vec<f32> = vectors.iter().map(|v| meta.factor(v) * code_score(v)).collect();
    assert!(
        error(&scaled) < error(&plain),
        "{} vs {}",
        error(&scaled),
        error(&plain)
    );
    // A vector's own code scores best among codes for it, against a far one.
    let tables = meta.lookup_table(&vectors[0]);
    let score = |code: &[u8]| -> f32 { code.iter().zip(&tables).map(|(b, t)| t[*b as usize]).sum() };
    assert!(score(&meta.code(&vectors[0])) > score(&meta.code(&vectors[1])));
}

#[test]
fn cluster_order_is_a_deterministic_permutation_that_fills_blocks_by_cluster() {
    let seed = 11;
    println!("seed {seed}");
    // Four clusters of 24 chunks, interleaved; blocks of 8.
    let (_, vectors, cluster) = clustered(seed, 96, 4);
    let order = cluster_order(&vectors, 32, 8);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..96).collect::<Vec<u32>>());
    assert_eq!(cluster_order(&vectors, 32, 8), order);
    let pure = order
        .chunks(8)
        .filter(|block| block.iter().all(|&c| cluster[c as usize] == cluster[block[0] as usize]))
        .count();
    assert_eq!(pure, 12, "every block of 8 holds one cluster");
    // Degenerate inputs.
    assert!(cluster_order(&[], 32, 8).is_empty());
    assert_eq!(cluster_order(&vectors[..3], 32, 8), [0, 1, 2]);
    let same = vec![vec![0.5f32; 4]; 20];
    let mut same_order = cluster_order(&same, 4, 8);
    same_order.sort_unstable();
    assert_eq!(same_order, (0..20).collect::<Vec<u32>>());
}

#[test]
fn partitions_are_clusters_of_their_own_each_keeping_its_size() {
    let seed = 13;
    println!("seed {seed}");
    // Six clusters of 16 in partitions of 16: the bisection cuts at 48, 24 and 12, so runs of 16
    // of the cluster order straddle clusters; balanced k-means makes each partition one cluster.
    let (_, vectors, cluster) = clustered(seed, 96, 6);
    let pure = |order: &[u32]| {
        order
            .chunks(16)
            .filter(|run| run.iter().all(|&c| cluster[c as usize] == cluster[run[0] as usize]))
            .count()
    };
    let before = cluster_order(&vectors, 32, 4);
    let order = partition_order(&vectors, 32, 16, 4);
    assert!(pure(&before) < 6, "the runs of the cluster order already were clusters");
    assert_eq!(pure(&order), 6, "every partition holds one cluster");
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..96).collect::<Vec<u32>>());
    assert_eq!(partition_order(&vectors, 32, 16, 4), order, "deterministic");
    // Sizes are kept (the last partition the rest), and one partition is the cluster order.
    let order = partition_order(&vectors[..90], 32, 16, 4);
    assert_eq!(order.len(), 90);
    assert_eq!(partition_order(&vectors, 32, 96, 4), before);
    assert!(partition_order(&[], 32, 16, 4).is_empty());
    let same = vec![vec![0.5f32; 4]; 40];
    let mut same_order = partition_order(&same, 4, 16, 4);
    same_order.sort_unstable();
    assert_eq!(same_order, (0..40).collect::<Vec<u32>>());
}

#[test]
fn the_vectors_are_partitioned_the_same_on_any_executor() {
    use crate::indexer::tests::Backwards;
    let seed = 7;
    println!("seed {seed}");
    // 2,500 vectors in 40 clusters: 40 partitions of 64 and three jobs of chunks; leaves of 16, so
    // the deepest level of the cluster tree is some 160 jobs (Backwards runs each on a thread).
    let (_, vectors, _) = clustered(seed, 2500, 40);
    let one = cluster_order(&vectors, 32, 16);
    assert_eq!(cluster_order_on(&vectors, 32, 16, &Backwards), one);
    let serial = partition_order(&vectors, 32, 64, 16);
    assert_eq!(partition_order_on(&vectors, 32, 64, 16, &Backwards), serial);
    assert_ne!(serial, one, "the k-means rounds moved chunks between partitions");
}

#[test]
fn blocks_smaller_than_a_leaf_change_the_files_not_the_order_or_the_scores() {
    let seed = 11;
    println!("seed {seed}");
    // 600 vectors in 12 clusters, partitions of 64: the k-means rounds run, and a leaf of the
    // cluster order is CLUSTER_LEAF_CHUNKS whatever the block size below it.
    let (texts, vectors, _) = clustered(seed, 600, 12);
    let of = |block_chunks: usize| {
        let built = build(
            &texts,
            &vectors,
            4,
            Layout {
                code_file_chunks: 64,
                block_chunks,
                ..Layout::default()
            },
        );
        let store = full_store(&built);
        let order: Vec<u32> = store.codes_in(&Probe::All).map(|(c, _, _)| c).collect();
        let dots: Vec<f32> = (0..600).map(|c| store.dot(c, &vectors[0]).unwrap()).collect();
        (order, dots, built.manifest.layout.block_chunks)
    };
    let four = of(super::files::CLUSTER_LEAF_CHUNKS);
    for block_chunks in [1, 2] {
        let smaller = of(block_chunks);
        assert_eq!(smaller.2, block_chunks);
        assert_eq!(
            smaller.0, four.0,
            "blocks of {block_chunks}: the same partitions in the same order"
        );
        assert_eq!(smaller.1, four.1, "blocks of {block_chunks}: the same int8 scores");
    }
    // A larger block is a larger leaf: another order.
    assert_ne!(of(16).0, four.0);
}

#[test]
fn a_query_near_one_cluster_needs_few_blocks() {
    let seed = 5;
    println!("seed {seed}");
    let (texts, vectors, cluster) = clustered(seed, 256, 16);
    let layout = Layout {
        block_chunks: 8,
        ..Layout::default()
    };
    let built = build(&texts, &vectors, 4, layout);
    let store = full_store(&built);
    // The 16 chunks of cluster 3 lie in 2 blocks of 8 (numbered order would spread them over 16).
    let members: Vec<u32> = (0..256u32).filter(|&c| cluster[c as usize] == 3).collect();
    let mut lazy = paged_store(&built);
    for name in lazy.code_needs(None, usize::MAX) {
        lazy.add(&name, bytes_of(&built, &name)).unwrap();
    }
    assert_eq!(lazy.block_needs(members.iter().copied()).len(), 2);
    // And the store's int8 dot matches the float one.
    for &c in &members {
        let exact: f32 = vectors[c as usize]
            .iter()
            .zip(&vectors[members[0] as usize])
            .map(|(a, b)| a * b)
            .sum();
        let int8 = store.dot(c, &vectors[members[0] as usize]).unwrap();
        assert!((exact - int8).abs() < 0.01);
    }
}

#[test]
fn a_block_that_disagrees_with_the_codes_is_refused() {
    let (texts, vectors, _) = clustered(2, 32, 4);
    let built = build(&texts, &vectors, 4, Layout::default());
    // Two blocks swapped in their page: each file is intact, but holds chunks of the other.
    let pages = built.manifest.files.vectors.blocks.files.clone();
    let page = directory::ObjectRef::parse(&pages[0], built.manifest.files.packs.len()).unwrap();
    let entries = directory::page_from_bytes(
        bytes_of(&built, &page.name),
        directory::Run::Blocks,
        0,
        built
            .manifest
            .counts
            .chunks
            .div_ceil(built.manifest.layout.block_chunks)
            .min(built.manifest.files.page_entries),
        built.manifest.files.packs.len(),
    )
    .unwrap();
    let mut swapped = entries.clone();
    swapped.swap(0, 1);
    let first_block = entries[1].object.name.clone();
    let swapped_page = directory::page_to_bytes(directory::Run::Blocks, 0, &swapped);
    let page_name = file_name("page", "bin", &swapped_page);
    let mut manifest = built.manifest.clone();
    manifest.files.vectors.blocks.files[0] = page_name.clone();
    let bytes = |name: &str| -> Vec<u8> {
        if name == page_name {
            swapped_page.clone()
        } else {
            bytes_of(&built, name).to_vec()
        }
    };
    for add_blocks_first in [false, true] {
        let mut store = IndexStore::new(manifest.clone());
        store.add(&page_name, &bytes(&page_name)).unwrap();
        add_pages(&mut store, &built);
        let mut result = Ok(());
        if add_blocks_first {
            store.add(&first_block, &bytes(&first_block)).unwrap();
        }
        for name in store.code_needs(None, usize::MAX) {
            result = result.and(store.add(&name, &bytes(&name)));
        }
        if !add_blocks_first {
            result = store.add(&first_block, &bytes(&first_block));
        }
        let err = result.unwrap_err();
        assert!(err.to_string().contains("other blocks"), "{err}");
    }
}

#[test]
fn trimming_drops_the_least_recently_used_files_and_keeps_the_last_querys() {
    let (texts, vectors, _) = clustered(9, 64, 4);
    let built = build(&texts, &vectors, 4, Layout::default());
    let mut store = full_store(&built);
    let all = store.held_bytes();
    assert!(all > 0);
    assert_eq!(store.trim(all), 0, "within the limit: nothing dropped");
    // A "query" that reads every code (as an exact search does), chunk 5's fragment and its
    // vector block.
    store.begin_query();
    assert_eq!(store.codes().count(), 64);
    assert!(store.fragment(5).is_some());
    assert!(store.dot(5, &vectors[5]).is_some());
    let dropped = store.trim(0);
    assert!(dropped > 0);
    assert!(store.fragment(5).is_some(), "the last query's fragment stays");
    assert!(store.dot(5, &vectors[5]).is_some(), "and its block");
    assert!(store.fragment(60).is_none(), "others go");
    assert_eq!(store.fragment_needs([60]).len(), 1, "and are asked for again");
    assert!(store.norms().is_some() && store.meta().is_some());
    assert!(store.held_bytes() < all);
    // Added again, a dropped file is usable again.
    let name = &store.fragment_needs([60])[0].clone();
    store.add(name, bytes_of(&built, name)).unwrap();
    assert!(store.fragment(60).is_some());
}

#[test]
fn trimming_keeps_what_a_query_still_in_flight_used() {
    let (texts, vectors, _) = clustered(9, 64, 4);
    let built = build(&texts, &vectors, 4, Layout::default());
    let mut store = full_store(&built);
    // Query B begins and reads chunk 5's fragment, then waits for files; query A begins after
    // it, reads chunk 60's and ends: its trim keeps what B used since B began.
    let b_began = store.clock();
    store.begin_query();
    assert!(store.fragment(5).is_some());
    store.begin_query();
    assert!(store.fragment(60).is_some());
    let before_b = store.clock();
    store.trim_keeping(0, Some(b_began));
    assert!(store.fragment(5).is_some(), "B's fragment stays while B is in flight");
    assert!(store.fragment(60).is_some(), "and A's, the last query's");
    assert!(store.fragment(30).is_none(), "one neither query used goes");
    // Without B in flight, only the last query's stay.
    let mut alone = full_store(&built);
    alone.begin_query();
    assert!(alone.fragment(5).is_some());
    alone.begin_query();
    assert!(alone.fragment(60).is_some());
    alone.trim_keeping(0, None);
    assert!(alone.fragment(5).is_none() && alone.fragment(60).is_some());
    // What was used before B began goes: a reading of the clock keeps only what came after it.
    store.begin_query();
    assert!(store.fragment(60).is_some());
    store.trim_keeping(0, Some(before_b));
    assert!(store.fragment(5).is_none() && store.fragment(60).is_some());
}

#[test]
fn trimming_lets_code_files_go_and_a_query_reads_them_again() {
    let (texts, vectors, _) = clustered(9, 64, 4);
    let layout = Layout {
        code_file_chunks: 8,
        ..Layout::default()
    };
    let built = build(&texts, &vectors, 4, layout);
    let mut store = full_store(&built);
    let partitions = built.manifest.files.vectors.codes.objects(64);
    assert!(partitions > 2, "{partitions} code files");
    // A "query" that probes the partition nearest chunk 5's vector, and scores a chunk of it.
    store.begin_query();
    let Some(Probe::These(probed)) = store.probed(&vectors[5], 1) else {
        panic!("one partition probed")
    };
    let read: Vec<u32> = store.codes_in(&Probe::These(probed.clone())).map(|(c, ..)| c).collect();
    let c = read[0];
    assert!(store.dot(c, &vectors[c as usize]).is_some());
    store.trim(0);
    // The probed code file stays with its chunks' blocks; every other goes, with its entries in
    // the block map, and is asked for again.
    assert!(
        store.partition_needs(&probed).is_empty(),
        "the last query's code file stays"
    );
    assert!(
        store.dot(c, &vectors[c as usize]).is_some(),
        "and its chunk's block and place in it"
    );
    let others: Vec<usize> = (0..partitions).filter(|p| !probed.contains(p)).collect();
    let needs = store.partition_needs(&others);
    assert_eq!(needs.len(), others.len(), "every other code file is let go: {needs:?}");
    let elsewhere = (0..64u32).find(|c| !read.contains(c)).unwrap();
    assert!(store.dot(elsewhere, &vectors[elsewhere as usize]).is_none());
    assert_eq!(
        store.codes_in(&Probe::All).count(),
        read.len(),
        "only the held codes are read"
    );
    // Read again, the codes are whole again and each chunk has its block: an exact search over
    // every code sees all 64 chunks, each once.
    for name in store.code_needs(None, 0) {
        store.add(&name, bytes_of(&built, &name)).unwrap();
    }
    let mut chunks: Vec<u32> = store.codes().map(|(c, ..)| c).collect();
    chunks.sort_unstable();
    assert_eq!(chunks, (0..64).collect::<Vec<_>>());
    for name in store.block_needs(0..64) {
        store.add(&name, bytes_of(&built, &name)).unwrap();
    }
    assert!((0..64u32).all(|c| store.dot(c, &vectors[c as usize]).is_some()));
}

#[test]
fn code_files_are_of_the_kind_the_manifest_says() {
    let built = tiny();
    let files = || built.files.iter().map(|(n, b)| (n.as_str(), b.as_slice()));
    assert!(built.manifest.files.vectors.code_factors);
    IndexStore::new(built.manifest.clone()).load_files(files()).unwrap();
    // A manifest that says the codes have no factors, over codes that have them: refused (the
    // two would score on different scales), naming the code file.
    let mut manifest = built.manifest.clone();
    manifest.files.vectors.code_factors = false;
    let e = IndexStore::new(manifest).load_files(files()).unwrap_err();
    assert!(
        e.to_string().contains("codes.") && e.to_string().contains("factors"),
        "{e}"
    );
    // A manifest of a minor before the factors that claims them is refused when read.
    let mut json = serde_json::to_value(&built.manifest).unwrap();
    json["format"]["minor"] = 6.into();
    let e = IndexManifest::from_json(&serde_json::to_vec(&json).unwrap()).unwrap_err();
    assert!(e.to_string().contains("code factors"), "{e}");
}

#[test]
fn facets_files_are_of_the_kind_the_manifest_says() {
    let texts: Vec<String> = (0..12).map(|i| format!("text {i}")).collect();
    let vectors: Vec<Vec<f32>> = (0..12).map(|i| vec![1.0, i as f32, (i % 3) as f32]).collect();
    let documents: Vec<DocumentInfo> = (0..6)
        .map(|d| {
            let mut doc = document(&format!("d{d}"));
            doc.filters.insert("half".into(), vec![(d % 2).to_string()]);
            doc
        })
        .collect();
    // Each object a file of its own, so one can be swapped for a file of an earlier kind.
    let layout = Layout {
        code_file_chunks: 4,
        block_chunks: 4,
        pack_bytes: 0,
        ..Layout::default()
    };
    let built = build_of(&documents, &texts, &vectors, 2, layout);
    let files = || built.files.iter().map(|(n, b)| (n.as_str(), b.as_slice()));
    assert!(built.manifest.files.facet_partitions);
    assert_eq!(built.manifest.format.minor, FACET_PARTITIONS_MINOR);
    let mut store = IndexStore::new(built.manifest.clone());
    store.load_files(files()).unwrap();
    let lists = store.facets().unwrap().partitions.as_ref().unwrap();
    assert_eq!(lists.count, 3);
    // Each value lists exactly the partitions holding a chunk of one of its pages (chunk `c` is
    // page `c / 2`'s, whose value is its number mod 2).
    for value in ["0", "1"] {
        let holding: Vec<u32> = (0..3u32)
            .filter(|&p| {
                let probe = Probe::These(vec![p as usize]);
                let chunks: Vec<u32> = store.codes_in(&probe).map(|(c, _, _)| c).collect();
                chunks.iter().any(|c| (c / 2 % 2).to_string() == value)
            })
            .collect();
        assert_eq!(lists.of["half"][value], holding, "value {value}");
    }
    // A manifest that does not say the facets list partitions, over facets that do (or the
    // reverse): refused, naming the facets file.
    let mut manifest = built.manifest.clone();
    manifest.files.facet_partitions = false;
    let e = IndexStore::new(manifest).load_files(files()).unwrap_err();
    assert!(
        e.to_string().contains("facets.") && e.to_string().contains("partition lists"),
        "{e}"
    );
    // A facets file from before 2.8 (`SXfc`, no lists) in an index that says so is read, and
    // refused by a manifest that says it has lists.
    let facets_name = built.manifest.files.facets.clone().unwrap();
    let mut old = store.facets().unwrap().clone();
    old.partitions = None;
    let old_bytes = old.to_bytes();
    let old_name = file_name("facets", "bin", &old_bytes);
    let swapped: Vec<(String, Vec<u8>)> = built
        .files
        .iter()
        .map(|(n, b)| match *n == facets_name {
            true => (old_name.clone(), old_bytes.clone()),
            false => (n.clone(), b.clone()),
        })
        .collect();
    let swapped = || swapped.iter().map(|(n, b)| (n.as_str(), b.as_slice()));
    let mut manifest = built.manifest.clone();
    manifest.files.facets = Some(old_name);
    let e = IndexStore::new(manifest.clone()).load_files(swapped()).unwrap_err();
    assert!(e.to_string().contains("have no partition lists"), "{e}");
    manifest.files.facet_partitions = false;
    manifest.format.minor = 7;
    let mut old_store = IndexStore::new(manifest);
    old_store.load_files(swapped()).unwrap();
    assert_eq!(old_store.facets(), Some(&old));
    // A manifest of a minor before the lists that claims them is refused when read, as is one
    // that claims them with no facets file.
    let mut json = serde_json::to_value(&built.manifest).unwrap();
    json["format"]["minor"] = 7.into();
    let e = IndexManifest::from_json(&serde_json::to_vec(&json).unwrap()).unwrap_err();
    assert!(e.to_string().contains("partition lists"), "{e}");
    let mut json = serde_json::to_value(&tiny().manifest).unwrap();
    assert_eq!(json["format"]["minor"], 7, "an index without facets is written as 2.7");
    json["format"]["minor"] = 8.into();
    json["files"]["facet_partitions"] = true.into();
    let e = IndexManifest::from_json(&serde_json::to_vec(&json).unwrap()).unwrap_err();
    assert!(e.to_string().contains("no facets file"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn readers_never_panic_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256), n in 0usize..8) {
        let _ = Norms::from_bytes(&bytes, n, n);
        let _ = keyword_from_bytes(&bytes, n);
        let _ = Fragment::from_bytes(&bytes, 0, n);
        let _ = VectorMeta::from_bytes(&bytes, n);
        let _ = CodeFile::from_bytes(&bytes, n, 16, n);
        // Past the magic of a code file with factors, which random bytes hardly ever start with.
        let _ = CodeFile::from_bytes(&[b"SXvq".as_slice(), &bytes].concat(), n, 16, n);
        let _ = BlockFile::from_bytes(&bytes, n, 4, n);
        let _ = IndexManifest::from_json(&bytes);
        // Past either magic of a facets file.
        let _ = Facets::from_bytes(&[b"SXfc".as_slice(), &bytes].concat(), n, n);
        let _ = Facets::from_bytes(&[b"SXfp".as_slice(), &bytes].concat(), n, n);
    }

    #[test]
    fn readers_never_panic_on_damaged_files(flip in any::<prop::sample::Index>(), byte in any::<u8>(), cut in any::<prop::sample::Index>()) {
        let built = tiny();
        let m = &built.manifest;
        for (name, bytes) in &built.files {
            let mut damaged = bytes.clone();
            let i = flip.index(damaged.len());
            damaged[i] ^= byte | 1;
            let truncated = &bytes[..cut.index(bytes.len())];
            for b in [damaged.as_slice(), truncated] {
                let _ = Norms::from_bytes(b, m.counts.chunks, m.counts.documents);
                let _ = keyword_from_bytes(b, m.counts.chunks);
                let _ = Fragment::from_bytes(b, 0, 2);
                let _ = VectorMeta::from_bytes(b, 3);
                let _ = CodeFile::from_bytes(b, 2, 3, 3);
                let _ = BlockFile::from_bytes(b, 2, 3, 3);
            }
            prop_assert!(!content_matches(name, &damaged));
        }
    }
}

#[test]
fn only_documents_with_chunks_are_counted_and_numbered() {
    // Document b has no chunk (say, its text was empty): it is not in the index.
    let documents = [document("a"), document("b"), document("c")];
    let chunks = [chunk("a#0", 0, "lamp oil"), chunk("c#0", 2, "fog horn")];
    let vectors = vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]];
    let built = write_index(IndexInput {
        documents: &documents,
        chunks: &chunks,
        duplicates_dropped: 1,
        shared_chunks: 0,
        vectors: &vectors,
        model: &model(3),
        chunking: crate::chunk::ChunkParams::default(),
        bm25: Bm25Params::default(),
        fields: Fields::default(),
        analyzer: crate::analyzer::Analyzer::NAME,
        layout: Layout::default(),
    })
    .unwrap();
    assert_eq!(built.manifest.counts.documents, 2);
    let store = full_store(&built);
    assert_eq!(store.norms().unwrap().documents, [0, 1]);
    let fragment = store.fragment(1).unwrap();
    assert_eq!(fragment.chunk(1).unwrap().doc, 1);
    assert_eq!(fragment.document(1).unwrap().id, "c");
}

#[test]
fn a_document_count_the_chunks_do_not_bear_out_is_refused() {
    let built = tiny();
    let norms = IndexStore::new(built.manifest.clone())
        .missing()
        .into_iter()
        .find(|n| n.starts_with("norms."))
        .unwrap();
    for (documents, minor, accepted) in [(2, 2, true), (3, 2, false), (3, 1, true)] {
        let mut manifest = built.manifest.clone();
        manifest.counts.documents = documents;
        manifest.format.minor = minor;
        // Code factors came in 2.7: a manifest of an earlier minor cannot claim them.
        manifest.files.vectors.code_factors = false;
        let manifest = IndexManifest::from_json(&serde_json::to_vec(&manifest).unwrap()).unwrap();
        let result = IndexStore::new(manifest).add(&norms, bytes_of(&built, &norms));
        assert_eq!(
            result.is_ok(),
            accepted,
            "{documents} documents, minor {minor}: {result:?}"
        );
    }
    let norms = |documents: Vec<u32>| Norms::new(vec![1; documents.len()], documents);
    assert!(norms(vec![0, 0, 1, 2, 2]).names_every_document(3));
    assert!(!norms(vec![0, 2]).names_every_document(3), "a gap");
    assert!(!norms(vec![0, 1]).names_every_document(3), "one short");
    assert!(norms(vec![]).names_every_document(0));
}

#[test]
fn a_dense_query_reads_only_the_partitions_nearest_it_whatever_else_is_held() {
    let seed = 21;
    println!("seed {seed}");
    // 16 clusters of 32 chunks in partitions of 32: cluster order puts each in one or two.
    let (texts, vectors, cluster) = clustered(seed, 512, 16);
    let layout = Layout {
        code_file_chunks: 32,
        block_chunks: 8,
        probe: 2,
        ..Layout::default()
    };
    let built = build(&texts, &vectors, 4, layout);
    assert_eq!(built.manifest.files.vectors.codes.objects(512), 16);
    let query = vectors[3].clone();
    let mut store = paged_store(&built);
    // First the calibration and the centroids, then exactly two code files.
    let first = store.code_needs(Some(&query), 2);
    assert!(first.iter().any(|n| n.starts_with("cent.")), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("codes.")), "{first:?}");
    for name in &first {
        store.add(name, bytes_of(&built, name)).unwrap();
    }
    let codes = store.code_needs(Some(&query), 2);
    assert_eq!(codes.len(), 2, "{codes:?}");
    for name in &codes {
        store.add(name, bytes_of(&built, name)).unwrap();
    }
    assert!(store.code_needs(Some(&query), 2).is_empty());
    let probed = store.probed(&query, 2).unwrap();
    let meta = store.meta().unwrap().clone();
    let candidates = crate::search::pipeline::binary_candidates(&meta, store.codes_in(&probed), &query, 10);
    assert!(
        candidates.iter().all(|&c| cluster[c as usize] == cluster[3]),
        "the query's cluster"
    );
    let wide = crate::search::pipeline::binary_candidates(&meta, store.codes_in(&probed), &query, 64);
    assert!(wide.contains(&3), "the query's own chunk is in the partitions read");
    // Their blocks are known (and only theirs); every other code file held changes nothing.
    assert!(!store.block_needs(candidates.iter().copied()).is_empty());
    let full = full_store(&built);
    assert_eq!(full.probed(&query, 2).unwrap(), probed);
    let again = crate::search::pipeline::binary_candidates(&meta, full.codes_in(&probed), &query, 10);
    assert_eq!(again, candidates);
    assert_eq!(full.probed(&query, usize::MAX).unwrap(), Probe::All, "exact reads all");
    assert_eq!(full.codes_in(&Probe::All).count(), 512);
    assert!(matches!(probed, Probe::These(ref p) if p.len() == 2));
    // A partition size that splits vector blocks is refused.
    let bad = Layout {
        code_file_chunks: 30,
        block_chunks: 8,
        ..Layout::default()
    };
    assert!(bad.validate().unwrap_err().contains("multiple of layout.block_chunks"));
}
