//! The tract embedder reproduces the reference embeddings computed with onnxruntime and the HF
//! tokenizers library (`tests/fixtures/golden`): identical token ids, cosine >= 0.999.

mod common;

use sextant::embed::{Embedder, TextKind};

#[derive(serde::Deserialize)]
struct Golden {
    text: String,
    token_ids: Vec<u32>,
    embedding: Vec<f32>,
}

fn goldens() -> Vec<Golden> {
    let text = std::fs::read_to_string(common::fixture("golden/minilm-int8-embeddings.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn golden_embeddings_are_reproduced() {
    let embedder = common::embedder();
    assert_eq!(embedder.spec().dims, 384);
    let goldens = goldens();
    assert!(goldens.len() >= 10, "the golden file lost its texts");
    for g in goldens {
        let ids = embedder.tokenizer().encode(&g.text).unwrap();
        assert_eq!(ids, g.token_ids, "token ids differ for {:?}", g.text);
        let v = embedder.embed(&g.text, TextKind::Query).unwrap();
        let cos = common::cosine(&v, &g.embedding);
        assert!(cos >= 0.999, "cosine {cos} < 0.999 for {:?}", g.text);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "vector not normalised: {norm}");
    }
}

#[test]
fn long_text_is_truncated_at_the_window_like_the_reference() {
    let embedder = common::embedder();
    let long = "retrieval ".repeat(600);
    let ids = embedder.tokenizer().encode(&long).unwrap();
    assert_eq!(ids.len(), 256);
    assert_eq!(embedder.tokenizer().count(&long).unwrap(), 600);
    assert_eq!(embedder.tokenizer().special_tokens(), 2);
}
