//! The cross-encoder reranker's plumbing, with a tiny model built here (no cross-encoder weights
//! ship with sextant): its score is how many of a passage's tokens are "fog", so the order it
//! must give is known.

mod common;

use sextant::embed::rerank::{tiny_cross_encoder, CrossEncoder};
use sextant::embed::ModelTokenizer;
use sextant::options::{Mode, SearchOptions};
use sextant::search::{Engine, NoClock, SearchResponse};

/// The MiniLM tokenizer's vocabulary size.
const VOCAB: usize = 30522;

fn fog_token() -> u32 {
    let tokenizer = ModelTokenizer::from_bytes(&common::model_file("tokenizer.json"), 512).unwrap();
    tokenizer.encode("fog").unwrap()[1]
}

/// The tiny cross-encoder the JS and CLI tests load: the same bytes as built here. Written again
/// with `SEXTANT_WRITE_FIXTURES=1`.
#[test]
fn the_tiny_cross_encoder_fixture_is_the_one_built_here() {
    let built = tiny_cross_encoder(VOCAB, fog_token());
    let path = common::fixture("tiny-cross-encoder.onnx");
    if std::env::var_os("SEXTANT_WRITE_FIXTURES").is_some() {
        std::fs::write(&path, &built).unwrap();
    }
    assert!(
        std::fs::read(&path).unwrap() == built,
        "{} is not the model built here; run with SEXTANT_WRITE_FIXTURES=1",
        path.display()
    );
}

#[test]
fn the_tiny_cross_encoder_counts_its_token_in_the_passage_only() {
    let tokenizer = common::model_file("tokenizer.json");
    let encoder = CrossEncoder::from_vec(tiny_cross_encoder(VOCAB, fog_token()), &tokenizer, 512).unwrap();
    assert_eq!(encoder.score("fog", "the fog, the fog horn").unwrap(), 2.0);
    assert_eq!(
        encoder.score("fog fog", "a clear night").unwrap(),
        0.0,
        "the query never counts"
    );
    // A pair is cut to the window (the passage first): [CLS] fog [SEP] … [SEP].
    let long = "fog ".repeat(2000);
    assert_eq!(encoder.score("fog", &long).unwrap(), 512.0 - 4.0);
    let err = CrossEncoder::from_vec(b"not onnx".to_vec(), &tokenizer, 512).unwrap_err();
    assert!(err.to_string().contains("not an ONNX model"), "{err}");
    // A sentence embedder is not a cross-encoder: its output is refused with the reason.
    let err = CrossEncoder::from_vec(common::model_file("model.onnx"), &tokenizer, 512).unwrap_err();
    assert!(err.to_string().contains("one logit"), "{err}");
}

fn search(engine: &Engine, query: &str, mode: Mode, rerank_depth: usize) -> SearchResponse {
    let options = SearchOptions {
        k: 5,
        mode,
        rerank_depth,
        ..Default::default()
    };
    engine.search(query, &options, &NoClock).unwrap().done().unwrap()
}

fn ids(r: &SearchResponse) -> Vec<String> {
    r.results.iter().map(|h| h.chunk_id.clone()).collect()
}

#[test]
fn a_reranker_puts_the_best_results_in_its_order_and_leaves_the_rest() {
    let index = std::fs::read(common::fixture("golden-v2-fields.sxt")).unwrap();
    let plain = Engine::from_bytes(&index).unwrap();
    let mut engine = Engine::from_bytes(&index).unwrap();
    engine
        .load_reranker(
            tiny_cross_encoder(VOCAB, fog_token()),
            &common::model_file("tokenizer.json"),
            512,
        )
        .unwrap();
    assert!(engine.has_reranker() && !plain.has_reranker());
    let query = "ships coast";
    let before = search(&plain, query, Mode::Keyword, 20);
    assert!(before.results.iter().all(|r| r.rerank.is_none()));
    // The fog chunk is among the candidates but not first; the reranker puts it first.
    let after = search(&engine, query, Mode::Keyword, 20);
    assert_ne!(before.results[0].chunk_id, "faq-2#0", "{:?}", ids(&before));
    assert_eq!(after.results[0].chunk_id, "faq-2#0", "{:?}", ids(&after));
    // It read the passage as the model embeds it: "What is a fog horn for?" (the title), then
    // the text, which asks it again and says "fog" once more.
    assert_eq!(after.results[0].rerank, Some(3.0));
    // Chunks it scores alike keep the fused order: those without "fog" follow in the order
    // the search gave them.
    let rest: Vec<String> = ids(&after).into_iter().skip(1).collect();
    let fused: Vec<String> = ids(&search(&plain, query, Mode::Keyword, 20))
        .into_iter()
        .filter(|id| id != "faq-2#0")
        .take(rest.len())
        .collect();
    assert_eq!(rest, fused);
    // Depth 0 turns it off; depth 1 reranks the first alone, so nothing moves.
    assert_eq!(ids(&search(&engine, query, Mode::Keyword, 0)), ids(&before));
    let one = search(&engine, query, Mode::Keyword, 1);
    assert_eq!(ids(&one), ids(&before));
    assert_eq!(one.results[0].rerank, Some(0.0));
    assert!(one.results[1].rerank.is_none());
    // Too deep is refused.
    let options = SearchOptions {
        rerank_depth: 10_000,
        mode: Mode::Keyword,
        ..Default::default()
    };
    let err = engine.search(query, &options, &NoClock).unwrap_err();
    assert!(err.to_string().contains("rerank_depth"), "{err}");
}
