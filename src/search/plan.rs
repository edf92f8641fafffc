//! [`QueryPlan`]: a query read once — its syntax parsed ([`super::query::Query`]) and analyzed
//! into the terms each stage of [`super::pipeline::stages`] works with.

use crate::analyzer::Analyzer;
use crate::options::Mode;

use super::query::Query;
use super::types::SearchError;

/// What a query asks for, analyzed: the words to search for, the words whose chunks are left
/// out, and the phrases results must hold. Repeated exclusions and phrases are kept once (a
/// phrase written 500 times is checked once per chunk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryPlan {
    /// The query as written.
    pub query: String,
    /// What to embed and rerank with: the query without its exclusions and quotes.
    pub text: String,
    /// The analyzer terms keyword search looks for (none in dense mode).
    pub terms: Vec<String>,
    /// Each excluded word's terms; a chunk is left out when it holds every term of one of them
    /// (a word the analyzer drops, like a stop word, excludes nothing).
    pub excluded: Vec<Vec<String>>,
    /// Each phrase's terms at their word positions ([`Analyzer::positions`]).
    pub phrases: Vec<Vec<(u32, String)>>,
}

impl QueryPlan {
    /// Reads `query` with the index's analyzer. Fails when nothing is left to search for (every
    /// word excluded, or only an empty phrase).
    pub fn new(query: &str, analyzer: &Analyzer, mode: Mode) -> Result<Self, SearchError> {
        let parsed = Query::parse(query);
        if parsed.text.trim().is_empty() {
            return Err(SearchError::BadArgument {
                name: "query",
                reason: "it has nothing to search for (every word is excluded with -word, or an empty phrase); add a word to search for".into(),
            });
        }
        let terms = if mode == Mode::Dense {
            Vec::new()
        } else {
            analyzer.terms(&parsed.text)
        };
        let mut excluded: Vec<Vec<String>> = Vec::new();
        for word in &parsed.excluded {
            let t = analyzer.terms(word);
            if !t.is_empty() && !excluded.contains(&t) {
                excluded.push(t);
            }
        }
        let mut phrases: Vec<Vec<(u32, String)>> = Vec::new();
        for phrase in &parsed.phrases {
            let p = analyzer.positions(phrase);
            if !p.is_empty() && !phrases.contains(&p) {
                phrases.push(p);
            }
        }
        Ok(Self {
            query: query.to_string(),
            text: parsed.text,
            terms,
            excluded,
            phrases,
        })
    }

    /// Every excluded term.
    pub fn excluded_terms(&self) -> Vec<String> {
        self.excluded.iter().flatten().cloned().collect()
    }

    /// Every phrase term.
    pub fn phrase_terms(&self) -> Vec<String> {
        self.phrases.iter().flatten().map(|(_, t)| t.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_read_once_into_its_terms() {
        let a = Analyzer::english();
        let plan = QueryPlan::new(r#"rotating "boundary layers" -flutter"#, &a, Mode::Hybrid).unwrap();
        assert_eq!(plan.text, "rotating boundary layers");
        assert_eq!(plan.terms, ["rotat", "boundari", "layer"]);
        assert_eq!(plan.excluded, [vec!["flutter".to_string()]]);
        assert_eq!(
            plan.phrases,
            [vec![(0, "boundari".to_string()), (1, "layer".to_string())]]
        );
        assert_eq!(plan.phrase_terms(), ["boundari", "layer"]);
        // Dense search looks for no keyword terms.
        assert!(QueryPlan::new("rotating", &a, Mode::Dense).unwrap().terms.is_empty());
    }

    #[test]
    fn repeated_phrases_and_exclusions_are_kept_once() {
        let a = Analyzer::english();
        let query = "\"flow\" ".repeat(580) + "-wing -wing -the";
        let plan = QueryPlan::new(&query, &a, Mode::Keyword).unwrap();
        assert_eq!(plan.phrases.len(), 1);
        assert_eq!(
            plan.excluded,
            [vec!["wing".to_string()]],
            "a stop word excludes nothing"
        );
        // The words are still searched for as written (BM25 counts a repeated word each time).
        assert_eq!(plan.terms.len(), 580);
    }

    #[test]
    fn nothing_left_to_search_for_is_refused() {
        let a = Analyzer::english();
        for query in ["-wing", "\"\"", "  "] {
            let e = QueryPlan::new(query, &a, Mode::Hybrid).unwrap_err();
            assert_eq!(e.code().as_str(), "BAD_ARGUMENT", "{query}");
        }
    }
}
