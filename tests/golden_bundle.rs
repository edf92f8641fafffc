//! The format-v1 golden bundle (`tests/fixtures/golden-v1.sxt`, built once from
//! `tests/fixtures/tiny`) must stay readable by every later version of sextant.

mod common;

use std::sync::Arc;

use sextant::bundle::{Bundle, FORMAT_MAJOR, OLDEST_READABLE_MAJOR};
use sextant::options::{Mode, SearchOptions};
use sextant::search::{Engine, NoClock};

fn golden() -> Vec<u8> {
    std::fs::read(common::fixture("golden-v1.sxt")).unwrap()
}

#[test]
fn golden_v1_is_still_readable() {
    const {
        assert!(
            OLDEST_READABLE_MAJOR <= 1 && 1 <= FORMAT_MAJOR,
            "format 1 must stay readable"
        )
    };
    let bundle = Bundle::from_bytes(&golden()).unwrap();
    assert_eq!((bundle.manifest.format.major, bundle.manifest.format.minor), (1, 0));
    assert_eq!(bundle.documents.len(), 7);
    assert_eq!(bundle.chunks.len(), 12);
    assert_eq!(bundle.manifest.model.dims, 384);
    assert_eq!(bundle.manifest.chunking.chunk_size, 200);
    let ids: Vec<&str> = bundle.documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "faq-1",
            "faq-2",
            "faq-3",
            "guide/install.md",
            "guide/search.mdx",
            "notes.txt",
            "pages/security.html"
        ]
    );
    let install = bundle.documents.iter().find(|d| d.id == "guide/install.md").unwrap();
    assert_eq!(install.title, "Installing the lighthouse keeper");
    assert_eq!(
        install.metadata.get("tags").map(String::as_str),
        Some("setup, beginner")
    );
}

#[test]
fn golden_v1_answers_keyword_and_hybrid_queries() {
    let mut engine = Engine::from_bytes(&golden()).unwrap();
    let keyword = SearchOptions {
        k: 3,
        mode: Mode::Keyword,
        ..Default::default()
    };
    let r = engine.search("fog horn", &keyword, &NoClock).unwrap();
    assert_eq!(r.results[0].doc_id, "faq-2");
    let embedder = common::embedder();
    engine.attach_model(Arc::new(embedder)).unwrap();
    let hybrid = SearchOptions {
        k: 3,
        ..Default::default()
    };
    let r = engine
        .search("how often should the bulb be changed", &hybrid, &NoClock)
        .unwrap();
    assert_eq!(r.results[0].doc_id, "notes.txt");
    // The stored vectors are those the model gives today (cosine with a fresh embedding).
    let chunk = engine
        .bundle()
        .chunks
        .iter()
        .position(|c| c.id.starts_with("notes.txt#"))
        .unwrap();
    let stored = engine.bundle().vectors.vector_of(chunk as u32).unwrap().to_vec();
    let fresh = engine
        .embedder()
        .unwrap()
        .embed(&engine.bundle().chunks[chunk].text, sextant::embed::TextKind::Passage)
        .unwrap();
    assert!(common::cosine(&stored, &fresh) > 0.999);
}
