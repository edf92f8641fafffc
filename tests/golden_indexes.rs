//! The golden indexes stay readable: `tests/fixtures/golden-v2.sxt` (format 2, packed, built once
//! from `tests/fixtures/tiny`, before identifiers were split and fields recorded) and
//! `tests/fixtures/golden-v2-fields.sxt` (the same files, with both) are searched by every later
//! version of sextant, as are `golden-v2-packs.sxt` (2.4, packs) and `golden-v2-factors.sxt` (2.7,
//! codes with factors), and the format-1
//! bundle `tests/fixtures/golden-v1.sxt` is refused with a message naming `sextant upgrade`, which
//! converts it into an index that answers as the format-2 build does.

mod common;

use std::sync::Arc;

use sextant::embed::TextKind;
use sextant::format1::Bundle;
use sextant::index::packed::pack;
use sextant::index::Layout;
use sextant::index::{INDEX_MAJOR, OLDEST_READABLE_MAJOR};
use sextant::indexer::upgrade;
use sextant::options::{Mode, SearchOptions};
use sextant::search::{Engine, NoClock};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(common::fixture(name)).unwrap()
}

/// The top document of a query in a mode.
fn top(engine: &Engine, query: &str, mode: Mode) -> String {
    let options = SearchOptions {
        k: 3,
        mode,
        ..Default::default()
    };
    let response = engine.search(query, &options, &NoClock).unwrap().done().unwrap();
    response.results[0].doc_id.clone()
}

fn with_model(mut engine: Engine) -> Engine {
    engine.attach_model(Arc::new(common::embedder())).unwrap();
    engine
}

#[test]
fn golden_v2_is_still_readable() {
    const {
        assert!(
            OLDEST_READABLE_MAJOR <= 2 && 2 <= INDEX_MAJOR,
            "format 2 must stay readable"
        )
    };
    let engine = Engine::from_bytes(&fixture("golden-v2.sxt")).unwrap();
    let m = engine.manifest();
    assert_eq!((m.format.major, m.format.minor), (2, 0));
    assert_eq!((m.counts.documents, m.counts.chunks), (7, 12));
    assert_eq!(m.model.dims, 384);
    assert_eq!(m.chunking.chunk_size, 200);
    assert_eq!(top(&engine, "fog horn", Mode::Keyword), "faq-2");
    let engine = with_model(engine);
    assert_eq!(
        top(&engine, "how often should the bulb be changed", Mode::Hybrid),
        "notes.txt"
    );
    assert_eq!(top(&engine, "bad weather with storms", Mode::Dense), "guide/search.mdx");
    // The stored int8 vectors are those the model gives today (to quantization).
    let store = engine.store();
    let text = "A rotating beam gives each lighthouse a signature: ships count the seconds between flashes to know which coast they are on.";
    let fresh = engine.embedder().unwrap().embed(text, TextKind::Passage).unwrap();
    let self_score = (0..12u32).filter_map(|c| store.dot(c, &fresh)).fold(f32::MIN, f32::max);
    assert!(self_score > 0.8, "no stored vector is this passage's ({self_score})");
}

#[test]
fn golden_v2_is_queried_with_its_own_analyzer_and_fields() {
    use sextant::analyzer::Analyzer;
    use sextant::index::Fields;
    let old = Engine::from_bytes(&fixture("golden-v2.sxt")).unwrap();
    assert_eq!(old.manifest().analyzer, Analyzer::WHOLE_WORDS);
    assert_eq!(old.manifest().fields, Fields::UNRECORDED);
    let new = Engine::from_bytes(&fixture("golden-v2-fields.sxt")).unwrap();
    assert_eq!(new.manifest().analyzer, Analyzer::NAME);
    assert_eq!((new.manifest().format.major, new.manifest().format.minor), (2, 1));
    assert_eq!(new.manifest().fields, Fields::default());
    let keyword = |engine: &Engine, query: &str| {
        let options = SearchOptions {
            k: 5,
            mode: Mode::Keyword,
            ..Default::default()
        };
        let response = engine.search(query, &options, &NoClock).unwrap().done().unwrap();
        response.results.iter().map(|r| r.doc_id.clone()).collect::<Vec<_>>()
    };
    // `retrieved_context` (in the HTML page's text) is one word to the old analyzer, the whole
    // and its parts to the new one.
    assert!(keyword(&old, "context").is_empty());
    assert_eq!(keyword(&new, "context")[0], "pages/security.html");
    assert_eq!(keyword(&old, "retrieved_context")[0], "pages/security.html");
    assert_eq!(keyword(&new, "retrieved_context")[0], "pages/security.html");
    // The title counts in the new index: a word only in a page's title finds it.
    assert_eq!(top(&new, "installing", Mode::Keyword), "guide/install.md");
    let new = with_model(new);
    assert_eq!(
        top(&new, "how often should the bulb be changed", Mode::Hybrid),
        "notes.txt"
    );
}

#[test]
fn golden_v1_is_refused_with_the_upgrade_command_and_upgrades() {
    let v1 = fixture("golden-v1.sxt");
    let e = Engine::from_bytes(&v1).unwrap_err();
    assert_eq!(e.code().as_str(), "UNSUPPORTED_VERSION");
    assert!(e.to_string().contains("sextant upgrade"), "{e}");
    // The format-1 reader still decodes it whole, for the upgrade.
    let old = Bundle::from_bytes(&v1).unwrap();
    assert_eq!((old.documents.len(), old.chunks.len()), (7, 12));
    let built = upgrade(&v1, Layout::default()).unwrap();
    let engine = Engine::from_bytes(&pack(&built.manifest, &built.files).unwrap()).unwrap();
    assert_eq!(engine.manifest().counts.chunks, 12);
    assert_eq!(top(&engine, "fog horn", Mode::Keyword), "faq-2");
    let engine = with_model(engine);
    assert_eq!(
        top(&engine, "how often should the bulb be changed", Mode::Hybrid),
        "notes.txt"
    );
    // The upgrade keeps the documents, chunks and BM25 of the bundle: keyword results equal the
    // golden v2's (built from the same files).
    let v2 = Engine::from_bytes(&fixture("golden-v2.sxt")).unwrap();
    for query in ["fog horn", "lens cleaning", "logbook keeper"] {
        let options = SearchOptions {
            k: 5,
            mode: Mode::Keyword,
            ..Default::default()
        };
        let a = engine.search(query, &options, &NoClock).unwrap().done().unwrap();
        let b = v2.search(query, &options, &NoClock).unwrap().done().unwrap();
        let ids = |r: &sextant::search::SearchResponse| {
            r.results
                .iter()
                .map(|h| (h.chunk_id.clone(), h.score))
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&a), ids(&b), "{query}");
    }
}

/// The tiny corpus in packs with codes before 2.7 (`golden-v2-packs.sxt`, format 2.4, `SXvc`) and
/// with a factor to each code (`golden-v2-factors.sxt`, 2.7): both searched, by meaning too, and
/// alike (every chunk of so small an index is rescored with its int8 vector).
#[test]
fn golden_indexes_with_codes_before_and_after_their_factors_answer_alike() {
    let old = with_model(Engine::from_bytes(&fixture("golden-v2-packs.sxt")).unwrap());
    let new = with_model(Engine::from_bytes(&fixture("golden-v2-factors.sxt")).unwrap());
    let (om, nm) = (old.manifest(), new.manifest());
    assert_eq!((om.format.minor, om.files.vectors.code_factors), (4, false));
    assert_eq!((nm.format.minor, nm.files.vectors.code_factors), (7, true));
    let ranked = |engine: &Engine, query: &str, mode: Mode| {
        let options = SearchOptions {
            k: 5,
            mode,
            ..Default::default()
        };
        let response = engine.search(query, &options, &NoClock).unwrap().done().unwrap();
        response.results.iter().map(|r| r.chunk_id.clone()).collect::<Vec<_>>()
    };
    for (query, mode) in [
        ("bad weather with storms", Mode::Dense),
        ("how often should the bulb be changed", Mode::Hybrid),
        ("lens cleaning", Mode::Dense),
    ] {
        let before = ranked(&old, query, mode);
        assert_eq!(before.len(), 5, "{query}");
        assert_eq!(before, ranked(&new, query, mode), "{query} ({mode:?})");
    }
    assert_eq!(top(&old, "bad weather with storms", Mode::Dense), "guide/search.mdx");
}
