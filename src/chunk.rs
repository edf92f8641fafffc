//! Documents, and how they are cut into chunks.
//!
//! A [`Document`] is a list of [`Section`]s (one per heading, with its breadcrumb and anchor).
//! Each section is split on its own, so a chunk never spans two headings, with a recursive
//! splitter: try `"\n\n"`, then `"\n"`, `". "`, `" "` and finally single characters, merging
//! the pieces back greedily up to `chunk_size` tokens with `chunk_overlap` tokens carried over
//! between neighbours. Sizes are counted in *model* tokens (special tokens excluded), and every
//! chunk is checked against the limit after merging, so the embedder never truncates one.
//!
//! Every chunk is also at most `max_chunk_bytes` long (a model may count a 50 MB run without
//! spaces as one unknown token), and the work is linear in the text on any input: nothing longer
//! than `max_chunk_bytes` is ever handed to the token counter, and a run without separators is cut
//! by a galloping search whose cost grows with the chunk, not with the text.

use std::collections::{BTreeMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;

/// One document as loaded from a file or a JSONL line.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Document {
    /// Stable id: the path relative to the input root, or the JSONL `_id`.
    pub id: String,
    /// Where it came from: a relative path, or for JSONL `file.jsonl:LINE`.
    pub source: String,
    /// The URL a reader should open (sites: `/a/` for `a/index.html`), if any.
    pub url: Option<String>,
    /// Title (front matter `title`, HTML `<title>`, first heading, or JSONL `title`).
    pub title: String,
    /// Front matter and other metadata, flattened to strings, sorted by key (shown with results:
    /// HTML's `data-sextant-meta`).
    pub metadata: BTreeMap<String, String>,
    /// Filter values by filter name (HTML's `data-sextant-filter`, front matter keys named in
    /// `input.filters`), each list sorted, each value once: what `filters` in a query selects.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub filters: BTreeMap<String, Vec<String>>,
    /// Sort values by sort key (HTML's `data-sextant-sort`, front matter keys named in
    /// `input.sort`): what `sort` in a query orders by.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sort: BTreeMap<String, String>,
    /// The page's language (`<html lang>`, a BCP 47 tag), if it says: a site build indexes each
    /// language apart, with its analyzer. Not stored in the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Content, one section per heading.
    pub sections: Vec<Section>,
}

/// A run of text under one heading.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Section {
    /// Headings from the top of the document down to this one (the breadcrumb).
    pub heading_path: Vec<String>,
    /// The heading's anchor (`id`), without `#`.
    pub anchor: Option<String>,
    /// Plain text, paragraphs separated by blank lines.
    pub text: String,
    /// The text of each code block in `text` (`<pre>`, fenced or indented Markdown code), as the
    /// loader added it: which lines of a chunk are code, for `fields.code_weight`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code: Vec<String>,
    /// The text of each element of `text` with a keyword weight other than 1 (HTML's
    /// `data-sextant-weight`), with its weight (0–[`crate::index::Fields::MAX_WEIGHT`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weighted: Vec<(String, u32)>,
}

/// Chunking parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChunkParams {
    /// Most model tokens in a chunk (special tokens and prefixes excluded). Default 200; at most
    /// the model window minus its special tokens and passage prefix (254 for MiniLM).
    pub chunk_size: usize,
    /// Tokens repeated from the end of one chunk at the start of the next, so a sentence cut at a
    /// boundary is still whole somewhere. Default 32; must be below `chunk_size`.
    pub chunk_overlap: usize,
    /// Most bytes of text in a chunk, whatever its token count. Default 8192 (a 200-token chunk of
    /// prose is about 1 KB); at least 64. A safety limit on pathological input (base64 blocks,
    /// minified code), so it is not recorded in the index's manifest.
    #[serde(skip_serializing)]
    pub max_chunk_bytes: usize,
}

/// Default of [`ChunkParams::max_chunk_bytes`].
pub const DEFAULT_MAX_CHUNK_BYTES: usize = 8192;

impl Default for ChunkParams {
    fn default() -> Self {
        Self {
            chunk_size: 200,
            chunk_overlap: 32,
            max_chunk_bytes: DEFAULT_MAX_CHUNK_BYTES,
        }
    }
}

/// Errors in chunking parameters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkParamError {
    /// `chunk_size` is zero.
    #[error("chunking.chunk_size must be at least 1 token")]
    ZeroSize,
    /// `chunk_overlap >= chunk_size`.
    #[error("chunking.chunk_overlap ({overlap}) must be smaller than chunking.chunk_size ({size})")]
    OverlapTooLarge {
        /// The overlap given.
        overlap: usize,
        /// The size given.
        size: usize,
    },
    /// `max_chunk_bytes` is too small to hold text.
    #[error("chunking.max_chunk_bytes ({bytes}) must be at least 64")]
    MaxBytesTooSmall {
        /// The value given.
        bytes: usize,
    },
    /// A chunk would not fit the model window.
    #[error("chunking.chunk_size ({size}) exceeds what the model can embed without truncation ({limit} tokens: a {window}-token window minus special tokens and the passage prefix); lower chunk_size to at most {limit}")]
    SizeOverWindow {
        /// The size given.
        size: usize,
        /// The largest allowed size.
        limit: usize,
        /// The model window.
        window: usize,
    },
}

impl ChunkParams {
    /// Checks the parameters against a model that can take `limit` text tokens.
    pub fn validate(&self, limit: usize, window: usize) -> Result<(), ChunkParamError> {
        if self.chunk_size == 0 {
            return Err(ChunkParamError::ZeroSize);
        }
        if self.chunk_overlap >= self.chunk_size {
            return Err(ChunkParamError::OverlapTooLarge {
                overlap: self.chunk_overlap,
                size: self.chunk_size,
            });
        }
        if self.max_chunk_bytes < 64 {
            return Err(ChunkParamError::MaxBytesTooSmall {
                bytes: self.max_chunk_bytes,
            });
        }
        if self.chunk_size > limit {
            return Err(ChunkParamError::SizeOverWindow {
                size: self.chunk_size,
                limit,
                window,
            });
        }
        Ok(())
    }
}

/// A chunk: what is indexed, retrieved and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Stable id, `{document id}#{index}`: what an LLM cites.
    pub id: String,
    /// Number of the document in the index.
    pub doc: u32,
    /// Position of the chunk within its document (before duplicates are dropped).
    pub index: u32,
    /// The document's URL or source, with `#anchor` of the chunk's heading when there is one.
    pub url: String,
    /// Breadcrumb of headings.
    pub heading_path: Vec<String>,
    /// The text.
    pub text: String,
    /// Lower-case hex SHA-256 of `text`.
    pub content_hash: String,
    /// Byte ranges of `text` that are lines of a code block of its section (what
    /// `fields.code_weight` weighs). Known where the chunk was cut from its section; not stored
    /// in the index.
    #[serde(skip)]
    pub code: Vec<(u32, u32)>,
    /// Byte ranges of `text` that hold an element of its section with a weight of its own
    /// (`Section::weighted`), with the weight. Known where the chunk was cut; not stored.
    #[serde(skip)]
    pub weighted: Vec<(u32, u32, u32)>,
}

/// Most weighted elements of a section whose text is looked for in its chunks (the rest count
/// once): what finding them costs stays linear in the text.
pub const MAX_WEIGHTED_ELEMENTS: usize = 64;

/// Where in `text` the weighted elements' texts (`elements`) are, with their weights, in order
/// and not overlapping (the first found wins). An element cut in two by a chunk boundary is not
/// found in either chunk and counts once there.
pub fn weighted_ranges(text: &str, elements: &[(String, u32)]) -> Vec<(u32, u32, u32)> {
    let mut out: Vec<(u32, u32, u32)> = Vec::new();
    for (element, weight) in elements.iter().take(MAX_WEIGHTED_ELEMENTS) {
        if element.is_empty() {
            continue;
        }
        for (at, found) in text.match_indices(element.as_str()) {
            out.push((at as u32, (at + found.len()) as u32, *weight));
        }
    }
    out.sort_unstable();
    let mut end = 0u32;
    out.retain(|&(from, to, _)| {
        let keep = from >= end;
        if keep {
            end = to;
        }
        keep
    });
    out
}

/// The byte ranges of the lines of `text` that are, trimmed, a line of one of `blocks` (code
/// blocks), in order. A line of prose that happens to equal a line of code counts as code.
pub fn code_lines(text: &str, blocks: &[String]) -> Vec<(u32, u32)> {
    CodeLines::of(blocks).ranges(text)
}

/// The lines of a section's code blocks, gathered once for all its chunks (a page of API docs has
/// thousands of lines of code in one section cut into hundreds of chunks: gathering them for each
/// chunk made chunking rust-doc quadratic).
pub struct CodeLines<'a>(HashSet<&'a str>);

impl<'a> CodeLines<'a> {
    /// The trimmed, non-empty lines of `blocks`.
    pub fn of(blocks: &'a [String]) -> Self {
        CodeLines(
            blocks
                .iter()
                .flat_map(|b| b.lines())
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect(),
        )
    }

    /// The byte ranges of the lines of `text` that are, trimmed, one of these lines, in order.
    pub fn ranges(&self, text: &str) -> Vec<(u32, u32)> {
        if self.0.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut at = 0usize;
        for line in text.split_inclusive('\n') {
            let body = line.trim_end_matches('\n');
            if self.0.contains(body.trim()) {
                out.push((at as u32, (at + body.len()) as u32));
            }
            at += line.len();
        }
        out
    }
}

const SEPARATORS: [&str; 5] = ["\n\n", "\n", ". ", " ", ""];

/// Splits `text` into pieces of at most `params.chunk_size` tokens as counted by `count`, which
/// returns the number of tokens of a string (`Err` aborts the split), and at most
/// `params.max_chunk_bytes` bytes.
pub fn split_text<E>(
    text: &str,
    params: ChunkParams,
    count: &dyn Fn(&str) -> Result<usize, E>,
) -> Result<Vec<String>, E> {
    let splitter = Splitter { params, count };
    let mut out = Vec::new();
    if splitter.fits(text)? {
        splitter.enforce(text, &mut out)?;
        return Ok(out);
    }
    for piece in splitter.split(text, &SEPARATORS)? {
        splitter.enforce(&piece, &mut out)?;
    }
    Ok(out)
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

struct Splitter<'a, E> {
    params: ChunkParams,
    count: &'a dyn Fn(&str) -> Result<usize, E>,
}

impl<E> Splitter<'_, E> {
    /// Whether `text` fits one chunk. Text over the byte limit is never counted.
    fn fits(&self, text: &str) -> Result<bool, E> {
        Ok(text.len() <= self.params.max_chunk_bytes && (self.count)(text)? <= self.params.chunk_size)
    }

    /// Pieces of `text` split on the first separator that occurs, each keeping its separator at
    /// its end, so that the pieces concatenate back to `text`.
    fn pieces<'t>(text: &'t str, separator: &str) -> Vec<&'t str> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, _) in text.match_indices(separator) {
            let end = i + separator.len();
            out.push(&text[start..end]);
            start = end;
        }
        if start < text.len() {
            out.push(&text[start..]);
        }
        out
    }

    fn split(&self, text: &str, separators: &[&str]) -> Result<Vec<String>, E> {
        let at = separators
            .iter()
            .position(|s| s.is_empty() || text.contains(s))
            .unwrap_or(separators.len().saturating_sub(1));
        let separator = separators.get(at).copied().unwrap_or("");
        if separator.is_empty() {
            return self.split_chars(text);
        }
        let rest = separators.get(at + 1..).unwrap_or(&[]);
        let mut out = Vec::new();
        let mut good: Vec<(&str, usize)> = Vec::new();
        for piece in Self::pieces(text, separator) {
            let n = if piece.len() <= self.params.max_chunk_bytes {
                (self.count)(piece)?
            } else {
                usize::MAX // too long to be one chunk: not worth counting
            };
            if n <= self.params.chunk_size {
                good.push((piece, n));
            } else {
                self.merge(&mut good, &mut out);
                if rest.is_empty() {
                    out.extend(self.split_chars(piece)?);
                } else {
                    out.extend(self.split(piece, rest)?);
                }
            }
        }
        self.merge(&mut good, &mut out);
        Ok(out)
    }

    /// Last resort for a run with no separators (a long identifier, a URL, base64): the longest
    /// prefixes that fit, each found by a galloping then binary search on exact token counts
    /// (token counts of single characters do not add up to the count of the word they form), so
    /// each chunk costs time in proportion to its own length.
    fn split_chars(&self, text: &str) -> Result<Vec<String>, E> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let end = self.longest_fitting_prefix(rest)?;
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
        Ok(out)
    }

    /// The byte length of the longest prefix of `text` (at least one character) that fits.
    fn longest_fitting_prefix(&self, text: &str) -> Result<usize, E> {
        let next = |at: usize| text[at..].chars().next().map_or(text.len(), |c| at + c.len_utf8());
        let first = next(0);
        let cap = floor_boundary(text, self.params.max_chunk_bytes).max(first);
        let fits = |end: usize| -> Result<bool, E> { Ok((self.count)(&text[..end])? <= self.params.chunk_size) };
        // Gallop: double the prefix while it fits.
        let mut good = first;
        let bad = loop {
            if good >= cap {
                return Ok(good);
            }
            let mut target = floor_boundary(text, good.saturating_mul(2).min(cap));
            if target <= good {
                target = next(good);
            }
            if fits(target)? {
                good = target;
            } else {
                break target;
            }
        };
        // Binary search between the last prefix that fitted and the first that did not.
        let (mut lo, mut hi) = (good, bad);
        loop {
            let mut mid = floor_boundary(text, lo + (hi - lo) / 2);
            if mid <= lo {
                mid = next(lo);
            }
            if mid >= hi {
                return Ok(lo);
            }
            if fits(mid)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }

    /// Greedily joins small pieces up to `chunk_size` tokens and `max_chunk_bytes` bytes, keeping
    /// up to `chunk_overlap` tokens of the previous chunk at the start of the next.
    fn merge(&self, pieces: &mut Vec<(&str, usize)>, out: &mut Vec<String>) {
        let size = self.params.chunk_size;
        let max_bytes = self.params.max_chunk_bytes;
        let overlap = self.params.chunk_overlap;
        // The tail carried into the next chunk is bounded in bytes too, in proportion, so that
        // pieces of no tokens (runs of spaces, zero-width characters) cannot be carried and
        // emitted again and again.
        let overlap_bytes = max_bytes.saturating_mul(overlap) / size.max(1);
        let mut current: VecDeque<(&str, usize)> = VecDeque::new();
        let (mut total, mut bytes) = (0usize, 0usize);
        for &(piece, n) in pieces.iter() {
            let over = |total: usize, bytes: usize| total + n > size || bytes + piece.len() > max_bytes;
            if over(total, bytes) && !current.is_empty() {
                out.push(current.iter().map(|(p, _)| *p).collect());
                while total > overlap || bytes > overlap_bytes || over(total, bytes) {
                    let Some((dropped, tokens)) = current.pop_front() else {
                        break;
                    };
                    total -= tokens;
                    bytes -= dropped.len();
                }
            }
            current.push_back((piece, n));
            total += n;
            bytes += piece.len();
        }
        if !current.is_empty() {
            out.push(current.iter().map(|(p, _)| *p).collect());
        }
        pieces.clear();
    }

    /// Trims a merged chunk and checks its exact token count and length; one that is still too
    /// long (token counts are not always additive) is cut in half by characters until it fits.
    fn enforce(&self, chunk: &str, out: &mut Vec<String>) -> Result<(), E> {
        let trimmed = chunk.trim();
        if trimmed.is_empty() {
            return Ok(());
        }
        if self.fits(trimmed)? {
            out.push(trimmed.to_string());
            return Ok(());
        }
        let chars: Vec<(usize, char)> = trimmed.char_indices().collect();
        if chars.len() < 2 {
            out.push(trimmed.to_string()); // one character over the limit: nothing smaller exists
            return Ok(());
        }
        let mid = chars.get(chars.len() / 2).map_or(trimmed.len(), |(i, _)| *i);
        let (a, b) = trimmed.split_at(mid);
        self.enforce(a, out)?;
        self.enforce(b, out)
    }
}

/// What chunking a corpus produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkedCorpus {
    /// The chunks kept, in document order.
    pub chunks: Vec<Chunk>,
    /// Chunks dropped because an earlier chunk of the same document has the same text (the
    /// document stays findable by that one).
    pub duplicates_dropped: usize,
    /// Chunks kept although an earlier document has a chunk of the same text: each document
    /// stays findable by its own (their vectors are embedded once when the model reads the same
    /// input for both).
    pub shared: usize,
}

/// The texts of one document's chunks: one list per section, in order. Pure and independent of
/// the other documents, so documents can be split in parallel (see [`collect_chunks`]).
pub fn split_document<E>(
    document: &Document,
    params: ChunkParams,
    count: &dyn Fn(&str) -> Result<usize, E>,
) -> Result<Vec<Vec<String>>, E> {
    document
        .sections
        .iter()
        .map(|section| split_text(&section.text, params, count))
        .collect()
}

/// Numbers the split texts of every document (document `i` gets number `i`; `splits[i]` is
/// [`split_document`] of `documents[i]`) and drops chunks whose text repeats an earlier chunk of
/// the same document. A text another document also has is kept in both (and counted as shared):
/// two documents with the same words are still two documents, each found by its own id.
pub fn collect_chunks(documents: &[Document], splits: Vec<Vec<Vec<String>>>) -> ChunkedCorpus {
    let mut seen_anywhere = HashSet::new();
    let mut corpus = ChunkedCorpus::default();
    for (doc_number, (doc, sections)) in documents.iter().zip(splits).enumerate() {
        let base = doc.url.as_deref().unwrap_or(&doc.source);
        let mut index = 0u32;
        let mut seen_here = HashSet::new();
        for (section, texts) in doc.sections.iter().zip(sections) {
            let code = CodeLines::of(&section.code);
            for text in texts {
                let this = index;
                index += 1;
                // An empty text numbers a chunk and keeps none: a chunk an older index dropped
                // (see `Collection::import_index`). Splitting never gives one.
                if text.is_empty() {
                    continue;
                }
                let content_hash = sha256_hex(text.as_bytes());
                if !seen_here.insert(content_hash.clone()) {
                    corpus.duplicates_dropped += 1;
                    continue;
                }
                if !seen_anywhere.insert(content_hash.clone()) {
                    corpus.shared += 1;
                }
                let url = match &section.anchor {
                    Some(anchor) => format!("{base}#{}", crate::url::encode_fragment(anchor)),
                    None => base.to_string(),
                };
                corpus.chunks.push(Chunk {
                    id: format!("{}#{this}", doc.id),
                    doc: doc_number as u32,
                    index: this,
                    url,
                    heading_path: section.heading_path.clone(),
                    code: code.ranges(&text),
                    weighted: weighted_ranges(&text, &section.weighted),
                    text,
                    content_hash,
                });
            }
        }
    }
    corpus
}

/// Chunks every document in turn ([`split_document`] then [`collect_chunks`]).
pub fn chunk_documents<E>(
    documents: &[Document],
    params: ChunkParams,
    count: &dyn Fn(&str) -> Result<usize, E>,
) -> Result<ChunkedCorpus, E> {
    let splits = documents
        .iter()
        .map(|d| split_document(d, params, count))
        .collect::<Result<Vec<_>, E>>()?;
    Ok(collect_chunks(documents, splits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One token per whitespace-separated word, like a word-level tokenizer.
    fn words(s: &str) -> Result<usize, ()> {
        Ok(s.split_whitespace().count())
    }

    fn params(size: usize, overlap: usize) -> ChunkParams {
        ChunkParams {
            chunk_size: size,
            chunk_overlap: overlap,
            ..ChunkParams::default()
        }
    }

    /// Splits with a counter that also adds up how many bytes it was handed.
    fn split_counting(text: &str, params: ChunkParams, tokens: &dyn Fn(&str) -> usize) -> (Vec<String>, usize) {
        let counted = std::cell::Cell::new(0usize);
        let count = |s: &str| -> Result<usize, ()> {
            counted.set(counted.get() + s.len());
            Ok(tokens(s))
        };
        let chunks = split_text(text, params, &count).unwrap();
        (chunks, counted.get())
    }

    /// Like WordPiece: a word over 100 characters is one unknown token, shorter words one token
    /// per 3 characters.
    fn wordpiece_like(s: &str) -> usize {
        s.split_whitespace()
            .map(|w| {
                if w.chars().count() > 100 {
                    1
                } else {
                    w.chars().count().div_ceil(3)
                }
            })
            .sum()
    }

    #[test]
    fn text_without_spaces_costs_linear_work() {
        // 200 KB of dots once took minutes: every chunk re-counted the whole rest of the text.
        let dots = ".".repeat(200_000);
        let chars = |s: &str| s.chars().count();
        let (chunks, counted) = split_counting(&dots, params(200, 0), &chars);
        assert_eq!(chunks.concat(), dots);
        assert!(chunks.iter().all(|c| c.len() <= 200));
        assert!(
            counted <= 40 * dots.len(),
            "counted {counted} bytes for {} bytes of text",
            dots.len()
        );
    }

    #[test]
    fn one_huge_word_becomes_many_bounded_chunks() {
        // One unknown token to the model, so the token limit alone would keep it whole.
        let word = "QUJD".repeat(250_000); // 1 MB of base64
        let (chunks, counted) = split_counting(&word, params(200, 32), &wordpiece_like);
        assert!(
            chunks.len() >= word.len() / DEFAULT_MAX_CHUNK_BYTES,
            "{} chunks",
            chunks.len()
        );
        assert!(chunks.iter().all(|c| c.len() <= DEFAULT_MAX_CHUNK_BYTES));
        assert_eq!(chunks.concat(), word);
        assert!(counted <= 40 * word.len(), "counted {counted} bytes");
    }

    #[test]
    fn a_long_line_of_words_costs_linear_work() {
        let line = "lighthouse keepers trim the wick and wind the clockwork ".repeat(40_000); // 2.3 MB
        let (chunks, counted) = split_counting(&line, params(200, 32), &wordpiece_like);
        assert!(chunks
            .iter()
            .all(|c| wordpiece_like(c) <= 200 && c.len() <= DEFAULT_MAX_CHUNK_BYTES));
        assert!(
            counted <= 8 * line.len(),
            "counted {counted} bytes for {} bytes",
            line.len()
        );
        let words: usize = chunks.iter().map(|c| c.split_whitespace().count()).sum();
        assert!(words >= line.split_whitespace().count(), "words were lost");
    }

    #[test]
    fn pieces_without_tokens_are_never_carried_over_and_over() {
        // Runs of spaces, and zero-width spaces the model drops: pieces of 0 tokens.
        let tokens = |s: &str| {
            s.split_whitespace()
                .filter(|w| !w.trim_matches('\u{200B}').is_empty())
                .count()
        };
        for text in [
            format!("a{}b", " ".repeat(80_000)),
            "\u{200B} ".repeat(20_000),
            format!("x {}", "\u{200B} y ".repeat(10_000)),
        ] {
            let (chunks, counted) = split_counting(&text, params(200, 32), &tokens);
            let emitted: usize = chunks.iter().map(String::len).sum();
            assert!(
                emitted <= 2 * text.len(),
                "{emitted} bytes of chunks from {} bytes",
                text.len()
            );
            assert!(counted <= 40 * text.len(), "counted {counted} bytes for {}", text.len());
            assert!(chunks.iter().all(|c| c.len() <= DEFAULT_MAX_CHUNK_BYTES));
        }
    }

    #[test]
    fn long_unknown_words_are_merged_within_the_byte_limit() {
        let word = "x".repeat(150); // 1 token each
        let text = vec![word.as_str(); 500].join(" ");
        let small = ChunkParams {
            max_chunk_bytes: 1000,
            ..params(200, 32)
        };
        let chunks = split_text(&text, small, &|s: &str| Ok::<_, ()>(wordpiece_like(s))).unwrap();
        assert!(chunks.len() >= text.len() / 1000);
        assert!(chunks.iter().all(|c| c.len() <= 1000), "a chunk is over 1000 bytes");
    }

    #[test]
    fn short_text_is_one_chunk() {
        assert_eq!(
            split_text("  hello world  ", params(10, 2), &words).unwrap(),
            vec!["hello world"]
        );
        assert!(split_text("   \n\n ", params(10, 2), &words).unwrap().is_empty());
    }

    #[test]
    fn splits_on_paragraphs_before_sentences() {
        let text = "one two three.\n\nfour five six.\n\nseven eight nine.";
        let chunks = split_text(text, params(6, 0), &words).unwrap();
        assert_eq!(chunks, vec!["one two three.\n\nfour five six.", "seven eight nine."]);
    }

    #[test]
    fn falls_back_to_sentences_then_words() {
        let text = "a b c. d e f. g h i j k l m n";
        let chunks = split_text(text, params(4, 0), &words).unwrap();
        assert_eq!(chunks, vec!["a b c.", "d e f.", "g h i j", "k l m n"]);
        for c in &chunks {
            assert!(words(c).unwrap() <= 4);
        }
    }

    #[test]
    fn overlap_repeats_the_tail_of_the_previous_chunk() {
        let text = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10";
        let chunks = split_text(text, params(4, 2), &words).unwrap();
        assert_eq!(chunks[0], "w1 w2 w3 w4");
        assert!(chunks[1].starts_with("w3 w4"), "{chunks:?}");
        assert!(chunks.last().unwrap().ends_with("w10"));
    }

    #[test]
    fn a_word_longer_than_the_limit_is_cut_by_characters() {
        let chars = |s: &str| -> Result<usize, ()> { Ok(s.chars().count()) };
        let chunks = split_text("abcdefghij", params(3, 0), &chars).unwrap();
        assert_eq!(chunks.concat(), "abcdefghij");
        assert!(chunks.iter().all(|c| c.chars().count() <= 3));
    }

    #[test]
    fn params_are_validated() {
        assert!(params(200, 32).validate(254, 256).is_ok());
        let tiny = ChunkParams {
            max_chunk_bytes: 10,
            ..params(200, 32)
        };
        assert_eq!(
            tiny.validate(254, 256),
            Err(ChunkParamError::MaxBytesTooSmall { bytes: 10 })
        );
        assert_eq!(params(0, 0).validate(254, 256), Err(ChunkParamError::ZeroSize));
        assert!(matches!(
            params(100, 100).validate(254, 256),
            Err(ChunkParamError::OverlapTooLarge { .. })
        ));
        assert!(matches!(
            params(300, 10).validate(254, 256),
            Err(ChunkParamError::SizeOverWindow { limit: 254, .. })
        ));
    }

    #[test]
    fn chunks_carry_ids_anchors_and_keep_every_documents_own() {
        let doc = |id: &str, text: &str| Document {
            id: id.into(),
            source: format!("{id}.md"),
            sections: vec![
                Section {
                    heading_path: vec!["Intro".into()],
                    anchor: None,
                    text: "Shared boilerplate line.".into(),
                    code: Vec::new(),
                    weighted: Vec::new(),
                },
                Section {
                    heading_path: vec!["Intro".into(), "Usage".into()],
                    anchor: Some("usage".into()),
                    text: text.into(),
                    code: Vec::new(),
                    weighted: Vec::new(),
                },
            ],
            ..Default::default()
        };
        let mut docs = vec![doc("a", "alpha text"), doc("b", "beta text")];
        // The same text twice in one document: the second is dropped, the document keeps the first.
        docs[1].sections.push(Section {
            heading_path: vec!["Outro".into()],
            anchor: None,
            text: "beta text".into(),
            code: Vec::new(),
            weighted: Vec::new(),
        });
        let corpus = chunk_documents(&docs, params(50, 5), &words).unwrap();
        assert_eq!((corpus.duplicates_dropped, corpus.shared), (1, 1));
        let ids: Vec<&str> = corpus.chunks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            vec!["a#0", "a#1", "b#0", "b#1"],
            "b keeps the boilerplate it shares with a"
        );
        assert_eq!(corpus.chunks[1].url, "a.md#usage");
        assert_eq!(corpus.chunks[1].heading_path, vec!["Intro", "Usage"]);
        assert_eq!(corpus.chunks[2].doc, 1);
        assert_eq!(corpus.chunks[2].content_hash, corpus.chunks[0].content_hash);
        assert_eq!(corpus.chunks[0].content_hash, sha256_hex(b"Shared boilerplate line."));
    }

    proptest! {
        #[test]
        fn every_chunk_fits_and_no_word_is_lost(
            text in "[a-z]{1,12}([ .\n]{1,3}[a-z]{1,12}){0,80}",
            size in 2usize..30,
            overlap_frac in 0usize..100,
        ) {
            let overlap = overlap_frac * (size - 1) / 100;
            let max_bytes = 64 + size * 4;
            let p = ChunkParams { max_chunk_bytes: max_bytes, ..params(size, overlap) };
            let chunks = split_text(&text, p, &words).unwrap();
            for c in &chunks {
                prop_assert!(words(c).unwrap() <= size, "chunk {c:?} over {size}");
                prop_assert!(c.len() <= max_bytes, "chunk {c:?} over {max_bytes} bytes");
                prop_assert!(!c.trim().is_empty());
            }
            // Every word of the text appears, in order, in the chunks (overlap may repeat some).
            let all: Vec<&str> = chunks.iter().flat_map(|c| c.split_whitespace()).collect();
            let mut at = 0;
            for w in text.split_whitespace() {
                let found = all[at..].iter().position(|x| *x == w);
                prop_assert!(found.is_some(), "word {w:?} lost");
                at += found.unwrap() + 1;
            }
        }
    }
}
