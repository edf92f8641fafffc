//! A collection built file by file (`sextant::collection`, what the browser's research workspace
//! runs in wasm) gives the same index, byte for byte, as `sextant build` over the same files; a
//! removed file leaves the index `sextant build` makes without it; nothing unchanged is embedded
//! again; and saved vectors round-trip.

use std::path::{Path, PathBuf};
use std::process::Command;

use sextant::collection::Collection;
use sextant::config::BuildConfig;
use sextant::embed::{Embedder, TextKind, TractEmbedder};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

fn model_dir() -> PathBuf {
    std::env::var_os("SEXTANT_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var_os("HOME").unwrap()).join(".cache/sextant/models/minilm-l6-v2-int8")
        })
}

/// The default model, loaded as `config` says.
fn load_embedder(config: &BuildConfig) -> TractEmbedder {
    let dir = model_dir();
    TractEmbedder::from_bytes(
        &std::fs::read(dir.join("model.onnx")).unwrap(),
        &std::fs::read(dir.join("tokenizer.json")).unwrap(),
        &config.model,
    )
    .unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sextant-collection-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn cli_build(input: &Path, out: &Path) -> Vec<u8> {
    let result = Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args([
            "build",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--no-cache",
        ])
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    std::fs::read(out).unwrap()
}

/// The chunk ids `sextant search` returns, best first.
fn cli_search(index: &Path, query: &str, mode: &str) -> Vec<String> {
    let result = Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args([
            "search",
            index.to_str().unwrap(),
            query,
            "--mode",
            mode,
            "-k",
            "4",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    let json: serde_json::Value = serde_json::from_slice(&result.stdout).unwrap();
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["chunk_id"].as_str().unwrap().to_string())
        .collect()
}

fn embed_all(collection: &mut Collection, embedder: &TractEmbedder) -> usize {
    let pending = collection.pending();
    for text in &pending {
        collection
            .set_vector(text, embedder.embed(text, TextKind::Passage).unwrap())
            .unwrap();
    }
    pending.len()
}

/// Adds the tiny fixture's file `fixture` to the collection as `path`.
fn add(
    collection: &mut Collection,
    path: &str,
    fixture: &str,
    embedder: &TractEmbedder,
) -> Result<sextant::collection::FileSummary, sextant::collection::CollectionError> {
    let bytes = std::fs::read(fixtures().join("tiny").join(fixture)).unwrap();
    collection.add_file(path, &bytes, embedder.tokenizer())
}

fn packed(collection: &Collection, embedder: &TractEmbedder) -> Vec<u8> {
    let built = collection.build(embedder.spec(), false).unwrap();
    sextant::index::packed::pack(&built.manifest, &built.files).unwrap()
}

#[test]
fn a_collection_built_file_by_file_is_the_cli_index_of_the_same_files() {
    let embedder = load_embedder(&BuildConfig::default());
    let tiny = fixtures().join("tiny");
    let files = [
        "notes.txt",
        "pages/security.html",
        "guide/search.mdx",
        "faq.jsonl",
        "guide/install.md",
    ];
    let mut collection = Collection::new(BuildConfig::default(), embedder.spec());
    // Added in no particular order: the index comes out in the order the CLI walks the folder.
    for f in files {
        let summary = add(&mut collection, f, f, &embedder).unwrap();
        assert_eq!(summary.path, f);
        assert!(summary.chunks > 0 && summary.pending == summary.chunks, "{summary:?}");
    }
    // The CLI skips types it cannot read; the collection says why.
    let rst = add(&mut collection, "extra.rst", "extra.rst", &embedder).unwrap_err();
    assert!(rst.to_string().contains("extra.rst"), "{rst}");
    // Before every chunk is embedded: no full index, but a partial one for keyword search.
    assert!(collection.build(embedder.spec(), false).is_err());
    assert!(collection.build(embedder.spec(), true).is_ok());
    let embedded = embed_all(&mut collection, &embedder);
    assert!(embedded > 0);
    assert_eq!(
        packed(&collection, &embedder),
        cli_build(&tiny, &tmp("tiny.sxt")),
        "same bytes as sextant build"
    );

    // Remove a file: the index is the CLI's without it, and nothing is embedded again.
    assert!(collection.remove_file("notes.txt"));
    assert!(!collection.remove_file("notes.txt"));
    assert!(collection.pending().is_empty());
    let without = tmp("without");
    for f in files.iter().filter(|f| **f != "notes.txt") {
        let to = without.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(tiny.join(f), to).unwrap();
    }
    assert_eq!(packed(&collection, &embedder), cli_build(&without, &tmp("without.sxt")));

    // Re-adding it embeds nothing: its vectors were kept.
    add(&mut collection, "notes.txt", "notes.txt", &embedder).unwrap();
    assert!(collection.pending().is_empty());

    // Saved vectors restore a collection without embedding; damaged ones change nothing.
    let saved = collection.vectors_to_bytes();
    let mut restored = Collection::new(BuildConfig::default(), embedder.spec());
    for f in files {
        add(&mut restored, f, f, &embedder).unwrap();
    }
    for cut in [0, 7, 12, 16, saved.len() - 1] {
        assert!(restored.load_vectors(&saved[..cut]).is_err(), "cut at {cut}");
    }
    assert_eq!(restored.pending().len(), embedded);
    restored.load_vectors(&saved).unwrap();
    assert!(restored.pending().is_empty());
    assert_eq!(restored.vectors_to_bytes(), saved);
    assert_eq!(packed(&restored, &embedder), packed(&collection, &embedder));

    // An id clash with another file is refused and changes nothing.
    let before = collection.files();
    let clash = add(&mut collection, "more/faq.jsonl", "faq.jsonl", &embedder).unwrap_err();
    assert!(clash.to_string().contains("two documents have the id"), "{clash}");
    assert_eq!(collection.files(), before);
    assert!(collection.add_file("../x.md", b"# x", embedder.tokenizer()).is_err());
    let empty = collection
        .add_file("empty.jsonl", b"", embedder.tokenizer())
        .unwrap_err();
    assert!(empty.to_string().contains("empty.jsonl holds no documents"), "{empty}");
    assert_eq!(collection.files(), before);
}

#[test]
fn an_index_the_cli_built_imports_as_a_collection_file() {
    let embedder = load_embedder(&BuildConfig::default());
    // Two pages sharing a section, which b.md repeats: the index keeps the section in both pages
    // (embedded once) and drops b.md's own repeat, leaving a gap in its chunk numbers that the
    // import must keep (b.md#3 stays b.md#3).
    let input = tmp("import-input");
    std::fs::create_dir_all(&input).unwrap();
    let shared = "## Licence\n\nThis handbook may be copied freely for any purpose whatsoever.\n\n";
    std::fs::write(
        input.join("a.md"),
        format!("# Tides\n\nSpring tides follow the new and full moon.\n\n{shared}"),
    )
    .unwrap();
    std::fs::write(
        input.join("b.md"),
        format!("# Winds\n\nThe sea breeze turns onshore by noon.\n\n{shared}{shared}## Fog\n\nAdvection fog forms over cold water.\n"),
    )
    .unwrap();
    let cli = cli_build(&input, &tmp("import.sxt"));
    let store = sextant::index::packed::unpack(&cli).unwrap();
    let counts = &store.manifest().counts;
    assert_eq!(
        (counts.shared_chunks, counts.duplicates_dropped),
        (1, 1),
        "the fixture has a section shared between pages and one repeated in a page"
    );

    let mut collection = Collection::new(BuildConfig::default(), embedder.spec());
    let summary = collection
        .import_index("handbook.sxt", &store, embedder.tokenizer())
        .unwrap();
    // Six chunk texts (the dropped repeat's gap kept), five vectors: one per chunk of the index,
    // the shared section's in both pages.
    assert_eq!(
        (summary.file.documents, summary.file.chunks, summary.vectors),
        (2, 6, 5),
        "{summary:?}"
    );
    assert!(collection.pending().is_empty(), "the index's vectors came with it");
    // Exported again, it is the index it came from: the same documents, chunk ids, URLs,
    // headings, keyword index and int8 vectors, file for file. (The binary codes and their
    // calibration come from the int8 vectors scaled back, not the exact ones, so they may differ.)
    // Compared object by object: where each is stored in the packs moves with the codes' sizes.
    let again = collection.build(embedder.spec(), false).unwrap();
    let kept = |names: Vec<String>| -> Vec<String> {
        let kinds = ["norms.", "kw.", "frag.", "vec."];
        names
            .into_iter()
            .filter(|n| kinds.iter().any(|k| n.starts_with(k)))
            .collect()
    };
    let built: Vec<String> = again.objects().map(|(n, _)| n.to_string()).collect();
    assert!(kept(built.clone()).len() > 4, "{built:?}");
    assert_eq!(kept(built), kept(store.object_names()));
    // And it answers as the index it came from, in every mode.
    let exported = tmp("import-again.sxt");
    std::fs::write(
        &exported,
        sextant::index::packed::pack(&again.manifest, &again.files).unwrap(),
    )
    .unwrap();
    for query in [
        "spring tides moon",
        "fog over cold water",
        "may I copy the handbook",
        "sea breeze",
    ] {
        for mode in ["keyword", "dense", "hybrid"] {
            assert_eq!(
                cli_search(&exported, query, mode),
                cli_search(&tmp("import.sxt"), query, mode),
                "{query} ({mode})"
            );
        }
    }

    // Files added beside it are indexed with it; removing it leaves them.
    add(&mut collection, "notes.txt", "notes.txt", &embedder).unwrap();
    embed_all(&mut collection, &embedder);
    assert!(collection.remove_file("handbook.sxt"));
    assert_eq!(collection.files().len(), 1);

    // Built with another model (here: another passage prefix), its chunks come without vectors.
    let mut other = BuildConfig::default();
    other.model.passage_prefix = "passage: ".into();
    let other_spec = load_embedder(&other).spec().clone();
    let mut fresh = Collection::new(other, &other_spec);
    let summary = fresh
        .import_index("handbook.sxt", &store, embedder.tokenizer())
        .unwrap();
    // (Five pending: the dropped repeat's gap is never embedded; the shared section is embedded
    // in each page, since each embeds with its own page's title.)
    assert_eq!((summary.vectors, summary.file.pending), (0, 5), "{summary:?}");

    // An id clash with a file already there is refused and changes nothing.
    let mut clash = Collection::new(BuildConfig::default(), embedder.spec());
    clash.add_file("x/a.md", b"# A\n\nText.", embedder.tokenizer()).unwrap();
    clash.import_index("one.sxt", &store, embedder.tokenizer()).unwrap();
    let before = clash.files();
    let err = clash.import_index("two.sxt", &store, embedder.tokenizer()).unwrap_err();
    assert!(err.to_string().contains("two documents have the id"), "{err}");
    assert_eq!(clash.files(), before);
}
