//! The keyword analyzer: one pipeline used both when a bundle is built and when it is queried.
//!
//! Text → Unicode word segmentation (UAX #29, `unicode-segmentation`) → lower case → English stop
//! words dropped (NLTK's list, `stop-words`) → Snowball English stemming (`rust-stemmers`).

use std::collections::HashSet;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Splits text into index terms. Cheap to clone; build once and reuse.
pub struct Analyzer {
    stemmer: Stemmer,
    stop_words: HashSet<&'static str>,
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
    /// The English analyzer (the only one for now; its name is recorded in the manifest).
    pub fn english() -> Self {
        let stop_words = stop_words::lookup("en").unwrap_or(&[]).iter().copied().collect();
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            stop_words,
        }
    }

    /// The analyzer's name as recorded in a bundle manifest.
    pub const NAME: &'static str = "uax29-lower-nltk_en_stop-snowball_en";

    /// The terms of `text`, in order, duplicates kept.
    pub fn terms(&self, text: &str) -> Vec<String> {
        self.terms_at(text).map(|(_, term)| term).collect()
    }

    /// Each term of `text` with the byte range of the word it came from.
    fn terms_at<'t>(&'t self, text: &'t str) -> impl Iterator<Item = (std::ops::Range<usize>, String)> + 't {
        text.unicode_word_indices().filter_map(|(at, word)| {
            let lower = word.to_lowercase();
            if self.stop_words.contains(lower.as_str()) {
                return None;
            }
            let stem = self.stemmer.stem(&lower);
            (!stem.is_empty()).then(|| (at..at + word.len(), stem.into_owned()))
        })
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
        self.terms_at(text)
            .filter(|(_, term)| wanted.contains(term))
            .map(|(range, _)| range)
            .collect()
    }

    /// Whether `word` (already lower case) is a stop word.
    pub fn is_stop_word(&self, word: &str) -> bool {
        self.stop_words.contains(word)
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
    fn only_stop_words_gives_no_terms() {
        assert!(Analyzer::english().terms("what is the and of it").is_empty());
    }
}
