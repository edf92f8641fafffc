//! A whole `model.onnx` loaded to embed passages and queries ([`ModelEmbedder`]): sextant's own
//! encoder (`bert`) where it runs the model, else the tract plan (`runner`).
//!
//! Both give the same vectors, bit for bit: with integer weights every step of the forward pass
//! is sextant's arithmetic either way (`sextant_kernels`), and tract only walks the graph. The
//! encoder leaves out what the plan does generically around it, above all the attention mask
//! added to every score and the select after softmax (both broadcast over heads and tokens): in
//! WebAssembly a long passage takes 0.66× the plan's time (BENCHMARKS.md, "Passages through
//! sextant's own encoder"). So the CLI's builds, collections and their workers embed with it.
//! Its load holds more at its peak (the model, its cut parts and the encoder file at once, about
//! 40 MB more in wasm), so the engine that embeds queries (`Engine::load_model`, in a Worker's
//! 128 MB isolate) keeps the plan: the same vectors.
//!
//! The encoder is written from the model's layers at load (`rows::split_model`,
//! `bert::write_encoder`, the word table kept whole). A model it does not run (not a BERT
//! encoder, f32 weights) is run by the tract plan. For a model other than those the tests prove
//! bit for bit ([`PROVEN_MODELS`]), the encoder is first checked against the plan on
//! [`bert::CHECK_TEXTS`], and the plan runs it if they part.

use super::bert::{self, BertEncoder};
use super::{EmbedError, Embedder, ModelOptions, ModelSpec, ModelTokenizer, OpTime, TextKind, TractEmbedder, Weights};

/// SHA-256 of the models whose encoder `tests/golden_embeddings.rs` proves equal to the tract
/// plan bit for bit (int8 and five-bit weights; golden texts, a window-long text, Cranfield
/// passages): all-MiniLM-L6-v2 int8, the default model. Any other model is checked at load.
pub const PROVEN_MODELS: [&str; 1] = ["8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"];

/// A whole model loaded to embed (see the module docs).
pub enum ModelEmbedder {
    /// sextant's own encoder, written from the model's layers.
    Encoder(Box<BertEncoder>),
    /// tract's plan of the model.
    Tract(Box<TractEmbedder>),
}

impl std::fmt::Debug for ModelEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.engine())
    }
}

impl ModelEmbedder {
    /// Loads `model.onnx` and `tokenizer.json` bytes, run as `options` say.
    pub fn load(model: Vec<u8>, tokenizer: &[u8], options: &ModelOptions) -> Result<Self, EmbedError> {
        Self::load_with(model, tokenizer, options, options.weights)
    }

    /// Like [`ModelEmbedder::load`], holding the weights as `weights` says (whatever
    /// `options.weights` says).
    pub fn load_with(
        model: Vec<u8>,
        tokenizer: &[u8],
        options: &ModelOptions,
        weights: Weights,
    ) -> Result<Self, EmbedError> {
        if weights == Weights::F32 {
            return TractEmbedder::from_vec_with(model, tokenizer, options, weights).map(|t| Self::Tract(Box::new(t)));
        }
        let options = ModelOptions {
            weights,
            ..options.clone()
        };
        let Ok(encoder) = encoder_of(&model, tokenizer, &options) else {
            return TractEmbedder::from_vec_with(model, tokenizer, &options, weights).map(|t| Self::Tract(Box::new(t)));
        };
        if PROVEN_MODELS.contains(&encoder.spec().sha256.as_str()) {
            return Ok(Self::Encoder(Box::new(encoder)));
        }
        let plan = TractEmbedder::from_vec_with(model, tokenizer, &options, weights)?;
        Ok(match bert::check_against(&encoder, &plan, &bert::CHECK_TEXTS) {
            Ok(()) => Self::Encoder(Box::new(encoder)),
            Err(_) => Self::Tract(Box::new(plan)),
        })
    }

    /// What runs the model: `encoder` (sextant's own) or `tract`.
    pub fn engine(&self) -> &'static str {
        match self {
            Self::Encoder(_) => "encoder",
            Self::Tract(_) => "tract",
        }
    }

    /// The model's tokenizer.
    pub fn tokenizer(&self) -> &ModelTokenizer {
        match self {
            Self::Encoder(e) => e.tokenizer(),
            Self::Tract(t) => t.tokenizer(),
        }
    }

    fn inner(&self) -> &dyn Embedder {
        match self {
            Self::Encoder(e) => e.as_ref(),
            Self::Tract(t) => t.as_ref(),
        }
    }
}

/// The encoder of a whole model: its body (the five-bit one for [`Weights::Int5`], as the tract
/// plan rounds it) written as an encoder file, the word table's rows added whole.
fn encoder_of(model: &[u8], tokenizer: &[u8], options: &ModelOptions) -> Result<BertEncoder, EmbedError> {
    let parts = super::rows::split_model(model)?;
    let body = match options.weights {
        Weights::Int5 => super::int5::pack_body(&parts.body)?.0,
        _ => parts.body,
    };
    let file = bert::write_encoder(&body, options.max_tokens)?;
    drop(body);
    // It names the model it was written from (`rows::split_model` records its digest), so its
    // spec is the plan's.
    let encoder = BertEncoder::from_bytes(&file, tokenizer, options)?;
    for (name, bytes) in &parts.row_files {
        encoder.add_file(name, bytes)?;
    }
    Ok(encoder)
}

impl Embedder for ModelEmbedder {
    fn spec(&self) -> &ModelSpec {
        self.inner().spec()
    }

    fn embed(&self, text: &str, kind: TextKind) -> Result<Vec<f32>, EmbedError> {
        self.inner().embed(text, kind)
    }

    fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        self.inner().count_tokens(text)
    }

    fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        self.inner().token_ids(text)
    }

    fn profile(&self, ids: &[u32], rounds: usize, now: &dyn Fn() -> f64) -> Option<Result<Vec<OpTime>, EmbedError>> {
        self.inner().profile(ids, rounds, now)
    }

    fn add_file(&self, name: &str, bytes: &[u8]) -> Result<bool, EmbedError> {
        self.inner().add_file(name, bytes)
    }

    fn file_names(&self) -> Vec<String> {
        // The encoder's row files were all added at load: nothing to fetch, as for the plan.
        match self {
            Self::Encoder(_) => Vec::new(),
            Self::Tract(t) => t.file_names(),
        }
    }
}
