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
    let dir = model_dir();
    let embedder = TractEmbedder::from_bytes(
        &std::fs::read(dir.join("model.onnx")).unwrap(),
        &std::fs::read(dir.join("tokenizer.json")).unwrap(),
        &BuildConfig::default().model,
    )
    .unwrap();
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
