//! The keyword analyzer: one pipeline used both when an index is built and when it is queried.
//!
//! Text → Unicode word segmentation (UAX #29, `unicode-segmentation`) → identifiers split into
//! their parts (a word joined by `.`, `_` or `:`, like `os.path.join` or `default_factory`, gives
//! the whole identifier and each part) → lower case → English stop words dropped (NLTK's list,
//! `stop-words`) → Snowball English stemming (`rust-stemmers`).
//!
//! Indexes built before identifiers were split name the older analyzer
//! ([`Analyzer::WHOLE_WORDS`]), and are queried with it: [`Analyzer::named`].

use std::collections::{HashMap, HashSet};

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Splits text into index terms. Cheap to clone; build once and reuse.
pub struct Analyzer {
    stemmer: Stemmer,
    stop_words: HashSet<&'static str>,
    /// Whether identifiers give their parts as well (every analyzer but the oldest).
    split_identifiers: bool,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("stop_words", &self.stop_words.len())
            .finish()
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::english()
    }
}

impl Analyzer {
    /// The English analyzer new indexes are built with (its name, [`Analyzer::NAME`], is recorded
    /// in the manifest).
    pub fn english() -> Self {
        let stop_words = stop_words::lookup("en").unwrap_or(&[]).iter().copied().collect();
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            stop_words,
            split_identifiers: true,
        }
    }

    /// The analyzer a manifest names, if this sextant has it.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            Self::NAME => Some(Self::english()),
            Self::WHOLE_WORDS => Some(Self {
                split_identifiers: false,
                ..Self::english()
            }),
            _ => None,
        }
    }

    /// The name of the analyzer new indexes are built with, as recorded in their manifests.
    pub const NAME: &'static str = "uax29-identifier_parts-lower-nltk_en_stop-snowball_en";

    /// The analyzer of indexes built before identifiers were split (still read).
    pub const WHOLE_WORDS: &'static str = "uax29-lower-nltk_en_stop-snowball_en";

    /// This analyzer's name.
    pub fn name(&self) -> &'static str {
        if self.split_identifiers {
            Self::NAME
        } else {
            Self::WHOLE_WORDS
        }
    }

    /// The terms of `text`, in order, duplicates kept.
    pub fn terms(&self, text: &str) -> Vec<String> {
        self.terms_at(text).map(|(_, term)| term).collect()
    }

    /// The term of one word (or identifier part), or `None` for a stop word.
    fn term(&self, word: &str) -> Option<String> {
        let lower = word.to_lowercase();
        if self.stop_words.contains(lower.as_str()) {
            return None;
        }
        let stem = self.stemmer.stem(&lower);
        (!stem.is_empty()).then(|| stem.into_owned())
    }

    /// Each term of `text` with the byte range of the word it came from. An identifier gives
    /// its whole self (lower case, not stemmed) and then each part.
    fn terms_at<'t>(&'t self, text: &'t str) -> impl Iterator<Item = (std::ops::Range<usize>, String)> + 't {
        text.unicode_word_indices().flat_map(move |(at, word)| {
            let parts = self.identifier_parts(word);
            let mut out = Vec::with_capacity(parts.len() + 1);
            if parts.is_empty() {
                out.extend(self.term(word).map(|t| (at..at + word.len(), t)));
            } else {
                out.push((at..at + word.len(), word.to_lowercase()));
                out.extend(
                    parts
                        .into_iter()
                        .filter_map(|(from, part)| self.term(part).map(|t| (at + from..at + from + part.len(), t))),
                );
            }
            out
        })
    }

    /// The parts of an identifier (`os.path.join`, `default_factory`, `__init__`, `a:b`) with
    /// their byte offsets in it: split at `.`, `_` and `:`, empty parts dropped. Nothing for a
    /// plain word, a number (`3.5`), or when identifiers are not split.
    fn identifier_parts<'w>(&self, word: &'w str) -> Vec<(usize, &'w str)> {
        let is_separator = |c: char| matches!(c, '.' | '_' | ':');
        if !self.split_identifiers || !word.contains(is_separator) {
            return Vec::new();
        }
        let mut parts = Vec::new();
        let mut from = 0;
        for (i, c) in word.char_indices().chain(std::iter::once((word.len(), '.'))) {
            if is_separator(c) {
                if i > from {
                    parts.push((from, &word[from..i]));
                }
                from = i + c.len_utf8();
            }
        }
        if parts.iter().any(|(_, p)| p.chars().any(char::is_alphabetic)) {
            parts
        } else {
            Vec::new()
        }
    }

    /// The terms of `text` with their word positions, for phrases: an identifier counts as its
    /// parts (`os.path.join` is three positions, as `os path join` is), a stop word takes a
    /// position but gives no term (so "speed of sound" matches "speed and sound", as in Lucene).
    pub fn positions(&self, text: &str) -> Vec<(u32, String)> {
        let mut out = Vec::new();
        let mut position = 0u32;
        for word in text.unicode_words() {
            let parts = self.identifier_parts(word);
            let words: Vec<&str> = if parts.is_empty() {
                vec![word]
            } else {
                parts.into_iter().map(|(_, p)| p).collect()
            };
            for w in words {
                if let Some(t) = self.term(w) {
                    out.push((position, t));
                }
                position += 1;
            }
        }
        out
    }

    /// Whether `text` holds the phrase whose [`Analyzer::positions`] are `phrase`: its terms at
    /// the same distances from each other. A phrase without terms is in every text. To check
    /// several phrases against one text, read it once with [`Analyzer::phrase_text`].
    pub fn holds_phrase(&self, text: &str, phrase: &[(u32, String)]) -> bool {
        self.phrase_text(text).holds(phrase)
    }

    /// `text`'s terms at their word positions, read once, to check phrases against.
    pub fn phrase_text(&self, text: &str) -> PhraseText {
        let mut positions: HashMap<String, Vec<u32>> = HashMap::new();
        for (position, term) in self.positions(text) {
            positions.entry(term).or_default().push(position);
        }
        PhraseText { positions }
    }

    /// The byte ranges of the words of `text` that keyword search matched for `query`: whole words
    /// (never "art" inside "start") whose term is one of the query's terms, stems included
    /// ("rotating" matches a query for "rotation"). In order, not overlapping. This is what the UI
    /// highlights, so it shows exactly what BM25 found.
    pub fn highlights(&self, text: &str, query: &str) -> Vec<std::ops::Range<usize>> {
        let wanted: HashSet<String> = self.terms(query).into_iter().collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        // An identifier's range holds its parts': a matched whole hides them.
        let mut out: Vec<std::ops::Range<usize>> = Vec::new();
        for (range, term) in self.terms_at(text) {
            if wanted.contains(&term) && out.last().is_none_or(|last| range.start >= last.end) {
                out.push(range);
            }
        }
        out
    }

    /// Whether `word` (already lower case) is a stop word.
    pub fn is_stop_word(&self, word: &str) -> bool {
        self.stop_words.contains(word)
    }
}

/// A text's terms at their word positions ([`Analyzer::phrase_text`]): any number of phrases are
/// checked against it without reading the text again.
#[derive(Debug, Clone, Default)]
pub struct PhraseText {
    /// Each term's positions, increasing.
    positions: HashMap<String, Vec<u32>>,
}

impl PhraseText {
    /// Whether the text holds the phrase whose [`Analyzer::positions`] are `phrase`.
    pub fn holds(&self, phrase: &[(u32, String)]) -> bool {
        let Some((first_at, first)) = phrase.first() else {
            return true;
        };
        let Some(starts) = self.positions.get(first) else {
            return false;
        };
        starts.iter().any(|start| {
            phrase.iter().all(|(p, t)| {
                start
                    .checked_add(*p)
                    .and_then(|q| q.checked_sub(*first_at))
                    .is_some_and(|q| self.positions.get(t).is_some_and(|at| at.binary_search(&q).is_ok()))
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercases_drops_stop_words_and_stems() {
        let a = Analyzer::english();
        assert_eq!(
            a.terms("The Flows of heated boundary-layers were measured!"),
            vec!["flow", "heat", "boundari", "layer", "measur"]
        );
    }

    #[test]
    fn segments_unicode_words() {
        let a = Analyzer::english();
        assert_eq!(a.terms("naïve café, résumé"), vec!["naïv", "café", "résumé"]);
        assert!(a.terms("  ... !!! ").is_empty());
        assert_eq!(a.terms("3.5 mach"), vec!["3.5", "mach"]);
    }

    #[test]
    fn highlights_are_whole_words_with_the_query_stems() {
        let a = Analyzer::english();
        let text = "Start the art show: rotating beams. The ROTATION of the Art-deco lamp";
        let spans: Vec<&str> = a
            .highlights(text, "art rotation")
            .into_iter()
            .map(|r| &text[r])
            .collect();
        assert_eq!(spans, ["art", "rotating", "ROTATION", "Art"]);
        assert!(
            a.highlights(text, "the of").is_empty(),
            "stop words are never highlighted"
        );
        let accents = "Café naïve";
        let spans = a.highlights(accents, "cafe café");
        assert_eq!(spans.len(), 1);
        assert_eq!(&accents[spans[0].clone()], "Café");
    }

    #[test]
    fn identifiers_give_their_whole_and_their_parts() {
        let a = Analyzer::english();
        assert_eq!(
            a.terms("Use os.path.join, not default_factory or __init__"),
            vec![
                "use",
                "os.path.join",
                "os",
                "path",
                "join",
                "default_factory",
                "default",
                "factori",
                "__init__",
                "init"
            ]
        );
        assert_eq!(a.terms("mach 3.5 e:x"), vec!["mach", "3.5", "e:x", "e", "x"]);
        assert_eq!(
            a.terms("is_file"),
            vec!["is_file", "file"],
            "a stop-word part gives no term"
        );
        let old = Analyzer::named(Analyzer::WHOLE_WORDS).unwrap();
        assert_eq!(
            old.terms("os.path.join default_factory"),
            vec!["os.path.join", "default_factori"]
        );
        assert_eq!(old.name(), Analyzer::WHOLE_WORDS);
        assert_eq!(Analyzer::named(Analyzer::NAME).unwrap().name(), Analyzer::NAME);
        assert!(Analyzer::named("klingon").is_none());
    }

    #[test]
    fn phrases_match_terms_at_their_distances() {
        let a = Analyzer::english();
        let phrase = |p: &str| a.positions(p);
        let text = "The speed of sound in a boundary layer; call os.path.join(a, b).";
        assert!(a.holds_phrase(text, &phrase("boundary layers")), "stems match");
        assert!(
            a.holds_phrase(text, &phrase("speed and sound")),
            "a stop word keeps its place"
        );
        assert!(!a.holds_phrase(text, &phrase("speed sound")));
        assert!(!a.holds_phrase(text, &phrase("layer boundary")), "order matters");
        assert!(a.holds_phrase(text, &phrase("os.path.join")));
        assert!(
            a.holds_phrase(text, &phrase("path join")),
            "identifier parts are positions"
        );
        assert!(!a.holds_phrase(text, &phrase("os join")));
        assert!(
            a.holds_phrase(text, &phrase("the of")),
            "a phrase of stop words is everywhere"
        );
        assert_eq!(phrase("of sound"), vec![(1, "sound".to_string())]);
    }

    #[test]
    fn an_identifier_is_highlighted_whole_or_by_its_matched_parts() {
        let a = Analyzer::english();
        let text = "call os.path.join or path";
        let spans = |q: &str| -> Vec<&str> { a.highlights(text, q).into_iter().map(|r| &text[r]).collect() };
        assert_eq!(spans("os.path.join"), ["os.path.join", "path"]);
        assert_eq!(spans("join"), ["join"]);
        assert_eq!(spans("path"), ["path", "path"]);
    }

    #[test]
    fn only_stop_words_gives_no_terms() {
        assert!(Analyzer::english().terms("what is the and of it").is_empty());
    }
}
