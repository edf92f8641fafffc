//! Citation checking: which `[chunk_id]` citations in an LLM answer point at chunks that were
//! really sent to it.
//!
//! A citation is a bracketed token shaped like a chunk id (`{document id}#{number}`, no
//! spaces), e.g. `[guide/install.md#2]`. One bracket may hold several, separated by commas or
//! semicolons: `[a.md#1, b.md#4]`. A `chunk_id:` or `chunk_id=` prefix inside the bracket is
//! allowed. Brackets that hold anything else (`[1]`, `[see above]`) and Markdown links
//! (`[text](url)`) are not citations.

use serde::{Deserialize, Serialize};

/// One distinct citation found in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The cited chunk id.
    pub chunk_id: String,
    /// Whether it was among the chunks sent.
    pub valid: bool,
    /// Times it was cited.
    pub count: usize,
}

/// The verdict on an answer's citations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CitationReport {
    /// Every distinct citation, in order of first appearance.
    pub citations: Vec<Citation>,
    /// Cited chunk ids that were sent.
    pub valid: Vec<String>,
    /// Cited chunk ids that were not sent (made up, or from an earlier round).
    pub unknown: Vec<String>,
    /// True when at least one citation is valid.
    pub grounded: bool,
}

/// Whether `token` looks like a chunk id: no whitespace, ends in `#` and digits.
fn looks_like_chunk_id(token: &str) -> bool {
    let Some((doc, index)) = token.rsplit_once('#') else {
        return false;
    };
    !doc.is_empty()
        && !index.is_empty()
        && index.bytes().all(|b| b.is_ascii_digit())
        && !token.chars().any(char::is_whitespace)
}

/// The chunk ids cited in `answer`, in order, repeats included.
pub fn extract_citations(answer: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = answer;
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let Some(close) = after.find([']', '[', '\n']) else {
            break;
        };
        if !after[close..].starts_with(']') {
            rest = &after[close..];
            continue;
        }
        let inside = &after[..close];
        let next = &after[close + 1..];
        rest = next;
        if next.starts_with('(') {
            continue; // a Markdown link
        }
        for part in inside.split([',', ';']) {
            let part = part.trim();
            let part = part
                .strip_prefix("chunk_id:")
                .or_else(|| part.strip_prefix("chunk_id="))
                .map(str::trim)
                .unwrap_or(part);
            let part = part.trim_matches(|c| c == '"' || c == '\'' || c == '`');
            if looks_like_chunk_id(part) {
                out.push(part.to_string());
            }
        }
    }
    out
}

/// Checks every citation in `answer` against the chunk ids that were sent.
pub fn verify_citations(answer: &str, sent: &[String]) -> CitationReport {
    let mut citations: Vec<Citation> = Vec::new();
    for id in extract_citations(answer) {
        if let Some(c) = citations.iter_mut().find(|c| c.chunk_id == id) {
            c.count += 1;
        } else {
            citations.push(Citation {
                valid: sent.contains(&id),
                chunk_id: id,
                count: 1,
            });
        }
    }
    let valid: Vec<String> = citations
        .iter()
        .filter(|c| c.valid)
        .map(|c| c.chunk_id.clone())
        .collect();
    let unknown = citations
        .iter()
        .filter(|c| !c.valid)
        .map(|c| c.chunk_id.clone())
        .collect();
    CitationReport {
        grounded: !valid.is_empty(),
        citations,
        valid,
        unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn finds_single_and_grouped_citations() {
        let answer = "Clean the lens monthly [notes.txt#0]. Beams rotate [faq-1#0, guide/a.md#12; chunk_id: x#3] \
                      and again [notes.txt#0].";
        assert_eq!(
            extract_citations(answer),
            vec!["notes.txt#0", "faq-1#0", "guide/a.md#12", "x#3", "notes.txt#0"]
        );
    }

    #[test]
    fn ignores_links_numbers_and_prose_in_brackets() {
        let answer = "See [the docs](https://x.y/#3), note [1], [see above], [a b#1], [#2], [doc#x] and [unclosed a#1";
        assert!(extract_citations(answer).is_empty(), "{:?}", extract_citations(answer));
    }

    #[test]
    fn verdicts() {
        let report = verify_citations("A [a#1] B [zz#9] C [a#1]", &sent(&["a#1", "b#2"]));
        assert!(report.grounded);
        assert_eq!(report.valid, vec!["a#1"]);
        assert_eq!(report.unknown, vec!["zz#9"]);
        assert_eq!(report.citations[0].count, 2);
        let none = verify_citations("No citations at all.", &sent(&["a#1"]));
        assert!(!none.grounded && none.citations.is_empty());
        let made_up = verify_citations("Trust me [ghost#1].", &sent(&["a#1"]));
        assert!(!made_up.grounded);
        assert_eq!(made_up.unknown, vec!["ghost#1"]);
    }
}
