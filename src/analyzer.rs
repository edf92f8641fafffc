//! The keyword analyzer: one pipeline used both when an index is built and when it is queried.
//!
//! Text → Unicode word segmentation (UAX #29, `unicode-segmentation`) → identifiers split into
//! their parts (a word joined by `.`, `_` or `:`, like `os.path.join` or `default_factory`, gives
//! the whole identifier and each part) → lower case → English stop words dropped (NLTK's list,
//! `stop-words`) → Snowball English stemming (`rust-stemmers`).
//!
//! Indexes built before identifiers were split name the older analyzer
//! ([`Analyzer::WHOLE_WORDS`]), and are queried with it: [`Analyzer::named`].
//!
//! Other languages ([`Analyzer::for_language`], a page's `<html lang>`): the same pipeline with
//! that language's NLTK stop words and Snowball stemmer, for every language `rust-stemmers` has;
//! Chinese and Japanese text (Han, Hiragana, Katakana), which has no spaces between words, is
//! read as overlapping pairs of characters (bigrams, a lone character as itself), as Lucene's
//! CJK analyzer does, with no stemming; any other language is lower-cased words. Each analyzer's
//! name is recorded in the index's manifest, and the index is queried with the same one.

use std::collections::{HashMap, HashSet};

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Splits text into index terms. Cheap to clone; build once and reuse.
pub struct Analyzer {
    stemmer: Option<Stemmer>,
    stop_words: HashSet<&'static str>,
    /// Whether identifiers give their parts as well (every analyzer but the oldest).
    split_identifiers: bool,
    /// Whether runs of Han, Hiragana and Katakana are read as character bigrams.
    cjk: bool,
    /// The name recorded in a manifest.
    name: &'static str,
}

/// The languages with a Snowball stemmer besides English: ISO 639-1 code, the analyzer's
/// recorded name, and the stemmer (stop words are NLTK's for the code).
const STEMMED: [(&str, &str, Algorithm); 17] = [
    (
        "ar",
        "uax29-identifier_parts-lower-nltk_ar_stop-snowball_ar",
        Algorithm::Arabic,
    ),
    (
        "da",
        "uax29-identifier_parts-lower-nltk_da_stop-snowball_da",
        Algorithm::Danish,
    ),
    (
        "de",
        "uax29-identifier_parts-lower-nltk_de_stop-snowball_de",
        Algorithm::German,
    ),
    (
        "el",
        "uax29-identifier_parts-lower-nltk_el_stop-snowball_el",
        Algorithm::Greek,
    ),
    (
        "es",
        "uax29-identifier_parts-lower-nltk_es_stop-snowball_es",
        Algorithm::Spanish,
    ),
    (
        "fi",
        "uax29-identifier_parts-lower-nltk_fi_stop-snowball_fi",
        Algorithm::Finnish,
    ),
    (
        "fr",
        "uax29-identifier_parts-lower-nltk_fr_stop-snowball_fr",
        Algorithm::French,
    ),
    (
        "hu",
        "uax29-identifier_parts-lower-nltk_hu_stop-snowball_hu",
        Algorithm::Hungarian,
    ),
    (
        "it",
        "uax29-identifier_parts-lower-nltk_it_stop-snowball_it",
        Algorithm::Italian,
    ),
    (
        "nl",
        "uax29-identifier_parts-lower-nltk_nl_stop-snowball_nl",
        Algorithm::Dutch,
    ),
    (
        "no",
        "uax29-identifier_parts-lower-nltk_no_stop-snowball_no",
        Algorithm::Norwegian,
    ),
    (
        "pt",
        "uax29-identifier_parts-lower-nltk_pt_stop-snowball_pt",
        Algorithm::Portuguese,
    ),
    (
        "ro",
        "uax29-identifier_parts-lower-nltk_ro_stop-snowball_ro",
        Algorithm::Romanian,
    ),
    (
        "ru",
        "uax29-identifier_parts-lower-nltk_ru_stop-snowball_ru",
        Algorithm::Russian,
    ),
    (
        "sv",
        "uax29-identifier_parts-lower-nltk_sv_stop-snowball_sv",
        Algorithm::Swedish,
    ),
    (
        "ta",
        "uax29-identifier_parts-lower-nltk_ta_stop-snowball_ta",
        Algorithm::Tamil,
    ),
    (
        "tr",
        "uax29-identifier_parts-lower-nltk_tr_stop-snowball_tr",
        Algorithm::Turkish,
    ),
];

/// Chinese and Japanese (and Korean, whose words UAX #29 already finds): bigrams, no stemming.
const CJK: &str = "uax29-identifier_parts-lower-cjk_bigrams";
/// Any other language: lower-cased words, nothing dropped or stemmed.
const PLAIN: &str = "uax29-identifier_parts-lower";

/// Whether `c` is written without spaces between words (Han, Hiragana, Katakana).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF
        | 0xFF66..=0xFF9F | 0x20000..=0x2FA1F)
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
            stemmer: Some(Stemmer::create(Algorithm::English)),
            stop_words,
            split_identifiers: true,
            cjk: false,
            name: Self::NAME,
        }
    }

    /// The analyzer for a language tag (`fr`, `pt-BR`, `zh-Hans`; its first subtag, any case):
    /// English for `en` or an empty tag.
    pub fn for_language(tag: &str) -> Self {
        Self::named(Self::name_for_language(tag)).unwrap_or_default()
    }

    /// The recorded name of [`Analyzer::for_language`]'s analyzer.
    pub fn name_for_language(tag: &str) -> &'static str {
        let code = tag.split(['-', '_']).next().unwrap_or("").trim().to_ascii_lowercase();
        let code = match code.as_str() {
            "nb" | "nn" => "no",
            other => other,
        };
        match code {
            "" | "en" => Self::NAME,
            "zh" | "ja" | "ko" => CJK,
            _ => STEMMED
                .iter()
                .find(|(c, _, _)| *c == code)
                .map_or(PLAIN, |(_, name, _)| name),
        }
    }

    /// The analyzer a manifest names, if this sextant has it.
    pub fn named(name: &str) -> Option<Self> {
        let plain = |name: &'static str, cjk: bool| Self {
            stemmer: None,
            stop_words: HashSet::new(),
            split_identifiers: true,
            cjk,
            name,
        };
        match name {
            Self::NAME => Some(Self::english()),
            Self::WHOLE_WORDS => Some(Self {
                split_identifiers: false,
                name: Self::WHOLE_WORDS,
                ..Self::english()
            }),
            CJK => Some(plain(CJK, true)),
            PLAIN => Some(plain(PLAIN, false)),
            _ => STEMMED
                .iter()
                .find(|(_, n, _)| *n == name)
                .map(|&(code, name, algorithm)| Self {
                    stemmer: Some(Stemmer::create(algorithm)),
                    stop_words: stop_words::lookup(code).unwrap_or(&[]).iter().copied().collect(),
                    ..plain(name, false)
                }),
        }
    }

    /// Every analyzer name this sextant reads.
    pub fn names() -> impl Iterator<Item = &'static str> {
        [Self::NAME, Self::WHOLE_WORDS, CJK, PLAIN]
            .into_iter()
            .chain(STEMMED.iter().map(|(_, name, _)| *name))
    }

    /// The name of the analyzer new indexes are built with, as recorded in their manifests.
    pub const NAME: &'static str = "uax29-identifier_parts-lower-nltk_en_stop-snowball_en";

    /// The analyzer of indexes built before identifiers were split (still read).
    pub const WHOLE_WORDS: &'static str = "uax29-lower-nltk_en_stop-snowball_en";

    /// This analyzer's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The words of `text` with their byte offsets (UAX #29), runs of CJK characters read as
    /// their bigrams when this analyzer does so.
    fn words<'t>(&self, text: &'t str) -> Vec<(usize, &'t str)> {
        if !self.cjk {
            return text.unicode_word_indices().collect();
        }
        let mut out = Vec::new();
        // A run of CJK characters: UAX #29 gives most of them one word each, Katakana joined.
        let mut run: Vec<(usize, char)> = Vec::new();
        let flush = |run: &mut Vec<(usize, char)>, out: &mut Vec<(usize, &'t str)>| {
            match run.as_slice() {
                [] => {}
                [(at, c)] => out.push((*at, &text[*at..*at + c.len_utf8()])),
                pairs => {
                    for w in pairs.windows(2) {
                        let (at, _) = w[0];
                        let (next, c) = w[1];
                        out.push((at, &text[at..next + c.len_utf8()]));
                    }
                }
            }
            run.clear();
        };
        for (at, word) in text.unicode_word_indices() {
            if word.chars().all(is_cjk) {
                // Adjacent to the run so far (nothing between), or a new run.
                if run.last().is_some_and(|&(last, c)| last + c.len_utf8() != at) {
                    flush(&mut run, &mut out);
                }
                run.extend(word.char_indices().map(|(i, c)| (at + i, c)));
            } else {
                flush(&mut run, &mut out);
                out.push((at, word));
            }
        }
        flush(&mut run, &mut out);
        out
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
        let Some(stemmer) = &self.stemmer else {
            return (!lower.is_empty()).then_some(lower);
        };
        let stem = stemmer.stem(&lower);
        (!stem.is_empty()).then(|| stem.into_owned())
    }

    /// Each term of `text` with the byte range of the word it came from. An identifier gives
    /// its whole self (lower case, not stemmed) and then each part.
    fn terms_at<'t>(&'t self, text: &'t str) -> impl Iterator<Item = (std::ops::Range<usize>, String)> + 't {
        self.words(text).into_iter().flat_map(move |(at, word)| {
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
        for (_, word) in self.words(text) {
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
            if !wanted.contains(&term) {
                continue;
            }
            match out.last_mut() {
                // Overlapping bigrams join; an identifier's parts are within it.
                Some(last) if range.start < last.end => last.end = last.end.max(range.end),
                _ => out.push(range),
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
    fn every_language_with_a_stemmer_stems_and_drops_its_stop_words() {
        let fr = Analyzer::for_language("fr-CA");
        assert_eq!(fr.name(), "uax29-identifier_parts-lower-nltk_fr_stop-snowball_fr");
        assert_eq!(
            fr.terms("Les recherches"),
            fr.terms("la recherche"),
            "stop words dropped, plurals stemmed"
        );
        let de = Analyzer::for_language("DE");
        assert_eq!(de.terms("die Häuser"), de.terms("das Haus"));
        assert_eq!(Analyzer::for_language("nb").name(), Analyzer::for_language("no").name());
        // Every name reads back as the analyzer it names, each with its stop words.
        for (code, name, _) in STEMMED {
            let a = Analyzer::named(name).unwrap();
            assert_eq!(a.name(), name);
            assert_eq!(Analyzer::name_for_language(code), name);
            assert!(!a.stop_words.is_empty(), "{code}");
        }
        for name in Analyzer::names() {
            assert_eq!(Analyzer::named(name).map(|a| a.name()), Some(name));
        }
        // English is what it always was; an unknown language is plain words.
        assert_eq!(Analyzer::for_language("").name(), Analyzer::NAME);
        assert_eq!(Analyzer::for_language("en-GB").name(), Analyzer::NAME);
        let pl = Analyzer::for_language("pl");
        assert_eq!(pl.name(), PLAIN);
        assert_eq!(pl.terms("Wyszukiwanie Dokumentów"), ["wyszukiwanie", "dokumentów"]);
    }

    #[test]
    fn chinese_and_japanese_are_read_as_bigrams() {
        let ja = Analyzer::for_language("ja");
        assert_eq!(ja.name(), CJK);
        assert_eq!(ja.terms("東京都"), ["東京", "京都"]);
        // A lone character is itself; runs break at spaces, punctuation and Latin words.
        assert_eq!(ja.terms("検索 は、API の 索引"), ["検索", "は", "api", "の", "索引"]);
        // Katakana (one UAX #29 word) and Hiragana join the run.
        assert_eq!(
            ja.terms("インデックスを"),
            ["イン", "ンデ", "デッ", "ック", "クス", "スを"]
        );
        // A query's bigrams are found in a text's, and highlighted as one stretch.
        let text = "全文検索の索引を作る";
        let hits = ja.highlights(text, "検索");
        assert_eq!(hits.iter().map(|r| &text[r.clone()]).collect::<Vec<_>>(), ["検索"]);
        let hits = ja.highlights(text, "全文検索");
        assert_eq!(hits.iter().map(|r| &text[r.clone()]).collect::<Vec<_>>(), ["全文検索"]);
        // Phrases: each bigram a position.
        assert!(ja.holds_phrase(text, &ja.positions("文検索")));
        assert!(!ja.holds_phrase(text, &ja.positions("索引検")));
        let zh = Analyzer::for_language("zh-Hans");
        assert_eq!(zh.terms("中文分词"), ["中文", "文分", "分词"]);
        // English never reads bigrams (indexes built before stay as they are).
        assert_eq!(Analyzer::english().terms("東京都"), ["東", "京", "都"]);
    }

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
