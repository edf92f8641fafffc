//! A BERT WordPiece tokenizer of our own, for the encoder build (no `tokenizers` crate, whose
//! regular-expression engines are a quarter of that wasm): it reads a `tokenizer.json` whose
//! parts are BERT's — `BertNormalizer`, `BertPreTokenizer`, `WordPiece`, a template adding one
//! special token before and after — and refuses any other. The same token ids as the
//! `tokenizers` crate with that file (tested on text of every kind against it): special tokens
//! split out of the raw text first (leftmost, longest), each other piece cleaned (control
//! characters removed, whitespace made spaces), CJK ideographs spaced, accents stripped (NFD,
//! nonspacing marks removed), lower-cased, split at whitespace and punctuation, and each word cut
//! greedily into the longest pieces in the vocabulary (`##` inside a word), a word of more than
//! `max_input_chars_per_word` characters or with no such cut being `[UNK]`.

use std::collections::HashMap;

use serde::Deserialize;
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

use super::EmbedError;

/// The most entries a vocabulary may have (BERT's: 30,522; multilingual ones: ~250,000).
const MAX_VOCAB: usize = 1 << 20;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    normalizer: Option<Normalizer>,
    pre_tokenizer: Option<PreTokenizer>,
    model: Model,
    post_processor: Option<PostProcessor>,
}

#[derive(Deserialize)]
struct AddedToken {
    id: u32,
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Normalizer {
    BertNormalizer {
        clean_text: bool,
        handle_chinese_chars: bool,
        strip_accents: Option<bool>,
        lowercase: bool,
    },
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum PreTokenizer {
    BertPreTokenizer,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Model {
    WordPiece {
        unk_token: String,
        continuing_subword_prefix: String,
        max_input_chars_per_word: usize,
        vocab: HashMap<String, u32>,
    },
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum PostProcessor {
    TemplateProcessing {
        single: Vec<Piece>,
        special_tokens: HashMap<String, SpecialToken>,
    },
    BertProcessing {
        sep: (String, u32),
        cls: (String, u32),
    },
}

#[derive(Deserialize)]
enum Piece {
    SpecialToken { id: String },
    Sequence { id: String },
}

#[derive(Deserialize)]
struct SpecialToken {
    ids: Vec<u32>,
}

/// A BERT WordPiece tokenizer read from `tokenizer.json`.
#[derive(Debug, Clone)]
pub struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: u32,
    prefix: String,
    max_word_chars: usize,
    clean_text: bool,
    chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
    /// Special tokens matched in the raw text, longest first where two start at one place.
    added: Vec<(String, u32)>,
    /// The ids before and after a sequence.
    before: Vec<u32>,
    after: Vec<u32>,
}

fn unsupported(reason: impl std::fmt::Display) -> EmbedError {
    EmbedError::BadTokenizer {
        reason: format!(
            "{reason}: the encoder build reads BERT WordPiece tokenizers only; load this model with the full engine"
        ),
    }
}

impl WordPiece {
    /// Reads a `tokenizer.json`; any part that is not BERT's is refused with what it is.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, EmbedError> {
        let file: File = serde_json::from_slice(bytes).map_err(|e| unsupported(format!("tokenizer.json: {e}")))?;
        let Some(Normalizer::BertNormalizer {
            clean_text,
            handle_chinese_chars,
            strip_accents,
            lowercase,
        }) = file.normalizer
        else {
            return Err(unsupported("it has no BertNormalizer"));
        };
        if file.pre_tokenizer.is_none() {
            return Err(unsupported("it has no BertPreTokenizer"));
        }
        let Model::WordPiece {
            unk_token,
            continuing_subword_prefix,
            max_input_chars_per_word,
            vocab,
        } = file.model;
        if vocab.len() > MAX_VOCAB {
            return Err(unsupported(format!("a vocabulary of {} entries", vocab.len())));
        }
        let unk = *vocab
            .get(&unk_token)
            .ok_or_else(|| unsupported(format!("its unknown token {unk_token:?} is not in its vocabulary")))?;
        let mut added = Vec::new();
        for token in file.added_tokens {
            if token.single_word || token.lstrip || token.rstrip || token.normalized || token.content.is_empty() {
                return Err(unsupported(format!(
                    "its added token {:?} is matched other than as written",
                    token.content
                )));
            }
            added.push((token.content, token.id));
        }
        // Longest first: at one starting place the longest token wins (leftmost-longest).
        added.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        let (before, after) = match file.post_processor {
            Some(PostProcessor::BertProcessing { sep, cls }) => (vec![cls.1], vec![sep.1]),
            Some(PostProcessor::TemplateProcessing { single, special_tokens }) => {
                let at = single
                    .iter()
                    .position(|p| matches!(p, Piece::Sequence { .. }))
                    .filter(|_| single.iter().filter(|p| matches!(p, Piece::Sequence { .. })).count() == 1)
                    .ok_or_else(|| unsupported("its template has not one sequence"))?;
                let ids = |pieces: &[Piece]| -> Result<Vec<u32>, EmbedError> {
                    let mut ids = Vec::new();
                    for piece in pieces {
                        match piece {
                            Piece::SpecialToken { id } => ids.extend(
                                &special_tokens
                                    .get(id)
                                    .ok_or_else(|| {
                                        unsupported(format!("its template names {id:?}, which it does not define"))
                                    })?
                                    .ids,
                            ),
                            Piece::Sequence { id } => return Err(unsupported(format!("a second sequence {id:?}"))),
                        }
                    }
                    Ok(ids)
                };
                (ids(&single[..at])?, ids(&single[at + 1..])?)
            }
            None => (Vec::new(), Vec::new()),
        };
        Ok(Self {
            vocab,
            unk,
            prefix: continuing_subword_prefix,
            max_word_chars: max_input_chars_per_word,
            clean_text,
            chinese_chars: handle_chinese_chars,
            strip_accents: strip_accents.unwrap_or(lowercase),
            lowercase,
            added,
            before,
            after,
        })
    }

    /// How many special tokens a sequence gets.
    pub fn special_tokens(&self) -> usize {
        self.before.len() + self.after.len()
    }

    /// The ids before and after a sequence.
    pub fn wrap(&self, ids: Vec<u32>) -> Vec<u32> {
        let mut out = Vec::with_capacity(ids.len() + self.special_tokens());
        out.extend(&self.before);
        out.extend(ids);
        out.extend(&self.after);
        out
    }

    /// The text's token ids, without special tokens around it and without truncation.
    pub fn ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match self.next_added(rest) {
                Some((at, content, id)) => {
                    self.piece(&rest[..at], &mut ids);
                    ids.push(id);
                    rest = &rest[at + content..];
                }
                None => {
                    self.piece(rest, &mut ids);
                    break;
                }
            }
        }
        ids
    }

    /// The first special token in `text`: where it starts, its length and id.
    fn next_added(&self, text: &str) -> Option<(usize, usize, u32)> {
        let mut best: Option<(usize, usize, u32)> = None;
        for (content, id) in &self.added {
            if let Some(at) = text.find(content.as_str()) {
                // Earliest wins; at one place, the longest (sorted so: the first found).
                if best.is_none_or(|(b, _, _)| at < b) {
                    best = Some((at, content.len(), *id));
                }
            }
        }
        best
    }

    /// A piece of text without special tokens: normalized, split into words, each word cut.
    fn piece(&self, text: &str, ids: &mut Vec<u32>) {
        if text.is_empty() {
            return;
        }
        let mut normal: Vec<char> = Vec::with_capacity(text.len());
        for c in text.chars() {
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_whitespace(c) {
                    normal.push(' ');
                    continue;
                }
            }
            if self.chinese_chars && is_chinese_char(c) {
                normal.extend([' ', c, ' ']);
            } else {
                normal.push(c);
            }
        }
        if self.strip_accents {
            let joined: String = normal.iter().collect();
            normal = joined
                .nfd()
                .map(|(c, _)| c)
                .filter(|c| !c.is_mark_nonspacing())
                .collect();
        }
        let mut word = String::new();
        let mut buffer = String::new();
        let mut flush = |word: &mut String, ids: &mut Vec<u32>| {
            if !word.is_empty() {
                self.word(word, &mut buffer, ids);
                word.clear();
            }
        };
        for c in normal {
            let lowered: &mut dyn Iterator<Item = char> = if self.lowercase {
                &mut c.to_lowercase()
            } else {
                &mut std::iter::once(c)
            };
            for c in lowered {
                if c.is_whitespace() {
                    flush(&mut word, ids);
                } else if c.is_ascii_punctuation() || c.is_punctuation() {
                    flush(&mut word, ids);
                    word.push(c);
                    flush(&mut word, ids);
                } else {
                    word.push(c);
                }
            }
        }
        flush(&mut word, ids);
    }

    /// One word: its longest pieces in the vocabulary, greedily, or `[UNK]`.
    fn word(&self, word: &str, buffer: &mut String, ids: &mut Vec<u32>) {
        if word.chars().count() > self.max_word_chars {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let found = loop {
                if start >= end {
                    break None;
                }
                buffer.clear();
                if start > 0 {
                    buffer.push_str(&self.prefix);
                }
                buffer.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(buffer.as_str()) {
                    break Some(id);
                }
                end -= word[start..end].chars().next_back().map_or(1, char::len_utf8);
            };
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(first);
                    ids.push(self.unk);
                    return;
                }
            }
        }
    }
}

/// Whitespace as BERT cleans it: tab, newline, return, and Unicode's.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control characters BERT's cleaning removes: Unicode's Cc, Cf and Co, but not tab, newline
/// or return.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// The CJK ideographs BERT puts spaces around.
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}
