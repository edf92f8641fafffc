//! The model's tokenizer, configured the way the embedder uses it: no padding, truncation at the
//! model window. It also counts tokens for chunking and for framing budgets.
//!
//! With `model` it is the `tokenizers` crate (any tokenizer.json); the encoder build alone
//! (`encoder` without `model`, the search box's wasm) reads BERT WordPiece tokenizers with
//! `embed::wordpiece`, which gives the same ids without the crate's regular-expression engines.

#[cfg(feature = "model")]
use tokenizers::{Tokenizer, TruncationDirection};

#[cfg(not(feature = "model"))]
use super::wordpiece::WordPiece;
use super::EmbedError;

/// A model tokenizer configured the way the embedder uses it: no padding, truncation at the
/// model window. Also counts tokens for chunking and for framing budgets.
#[derive(Clone)]
pub struct ModelTokenizer {
    /// No padding, no truncation (see `encode`).
    #[cfg(feature = "model")]
    inner: Tokenizer,
    #[cfg(not(feature = "model"))]
    inner: WordPiece,
    max_tokens: usize,
    special_tokens: usize,
}

impl std::fmt::Debug for ModelTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelTokenizer")
            .field("max_tokens", &self.max_tokens)
            .field("special_tokens", &self.special_tokens)
            .finish()
    }
}

impl ModelTokenizer {
    /// Parses `tokenizer.json` bytes. `max_tokens` is the model window, special tokens included.
    pub fn from_bytes(bytes: &[u8], max_tokens: usize) -> Result<Self, EmbedError> {
        if max_tokens < 3 {
            return Err(EmbedError::BadOption {
                option: "max_tokens",
                reason: format!("{max_tokens} is too small; the window must hold special tokens and text"),
            });
        }
        #[cfg(not(feature = "model"))]
        {
            let inner = WordPiece::from_bytes(bytes)?;
            let special_tokens = inner.special_tokens();
            Ok(Self {
                inner,
                max_tokens,
                special_tokens,
            })
        }
        #[cfg(feature = "model")]
        Self::with_tokenizers(bytes, max_tokens)
    }

    /// The `tokenizers` crate's reading of the file.
    #[cfg(feature = "model")]
    fn with_tokenizers(bytes: &[u8], max_tokens: usize) -> Result<Self, EmbedError> {
        let mut inner = Tokenizer::from_bytes(bytes).map_err(|e| EmbedError::BadTokenizer { reason: e.to_string() })?;
        inner.with_padding(None);
        // No truncation inside the tokenizer: `encode` truncates itself (exactly as HF does for
        // one sequence), so the same instance also counts long texts in full.
        inner
            .with_truncation(None)
            .map_err(|e| EmbedError::BadTokenizer { reason: e.to_string() })?;
        let special_tokens = inner
            .get_post_processor()
            .map(|p| tokenizers::PostProcessor::added_tokens(p, false))
            .unwrap_or(0);
        Ok(Self {
            inner,
            max_tokens,
            special_tokens,
        })
    }

    /// The model window in tokens, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// How many special tokens (`[CLS]`, `[SEP]`) the model adds to every sequence.
    pub fn special_tokens(&self) -> usize {
        self.special_tokens
    }

    /// Token ids as the model sees them: special tokens added, truncated at the window.
    #[cfg(not(feature = "model"))]
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let mut ids = self.inner.ids(text);
        ids.truncate(self.max_tokens.saturating_sub(self.special_tokens));
        Ok(self.inner.wrap(ids))
    }

    /// Token ids as the model sees them: special tokens added, truncated at the window.
    #[cfg(feature = "model")]
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let failed = |e: tokenizers::Error| EmbedError::Tokenize { reason: e.to_string() };
        let mut encoding = self.inner.encode_fast(text, false).map_err(failed)?;
        // What HF's truncation does for one sequence: cut the text to the window minus the
        // special tokens, then add them.
        let limit = self.max_tokens.saturating_sub(self.special_tokens);
        if encoding.len() > limit {
            encoding.truncate(limit, 0, TruncationDirection::Right);
        }
        let encoding = self.inner.post_process(encoding, None, true).map_err(failed)?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Token ids and token type ids of a pair (a query and a passage, as a cross-encoder reads
    /// them: `[CLS] query [SEP] passage [SEP]` for BERT), special tokens added, cut to the window:
    /// the passage first, then the query if it alone is too long.
    #[cfg(feature = "model")]
    pub fn encode_pair(&self, first: &str, second: &str) -> Result<(Vec<u32>, Vec<u32>), EmbedError> {
        let failed = |e: tokenizers::Error| EmbedError::Tokenize { reason: e.to_string() };
        let mut a = self.inner.encode_fast(first, false).map_err(failed)?;
        let mut b = self.inner.encode_fast(second, false).map_err(failed)?;
        let specials = self
            .inner
            .get_post_processor()
            .map(|p| tokenizers::PostProcessor::added_tokens(p, true))
            .unwrap_or(0);
        let room = self.max_tokens.saturating_sub(specials);
        // The query keeps at most half the window; the passage has the rest.
        if a.len() > room / 2 {
            a.truncate(room / 2, 0, TruncationDirection::Right);
        }
        let left = room.saturating_sub(a.len());
        if b.len() > left {
            b.truncate(left, 0, TruncationDirection::Right);
        }
        let encoding = self.inner.post_process(a, Some(b), true).map_err(failed)?;
        Ok((encoding.get_ids().to_vec(), encoding.get_type_ids().to_vec()))
    }

    /// Number of tokens in `text` without special tokens and without truncation.
    #[cfg(not(feature = "model"))]
    pub fn count(&self, text: &str) -> Result<usize, EmbedError> {
        Ok(self.inner.ids(text).len())
    }

    /// Number of tokens in `text` without special tokens and without truncation.
    #[cfg(feature = "model")]
    pub fn count(&self, text: &str) -> Result<usize, EmbedError> {
        let encoding = self
            .inner
            .encode_fast(text, false)
            .map_err(|e| EmbedError::Tokenize { reason: e.to_string() })?;
        Ok(encoding.len())
    }
}
