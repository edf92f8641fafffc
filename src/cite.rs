//! Citation checking: which `[chunk_id]` citations in an LLM answer point at chunks that were
//! really sent to it, and where each citation is in the answer (so a UI links them without a
//! parser of its own).
//!
//! A citation is a bracketed token shaped like a chunk id (`{document id}#{number}`, no
//! spaces), e.g. `[guide/install.md#2]`, or the id of a chunk that was sent, whatever its
//! characters (`[my notes.md#0]`). One bracket may hold several, separated by commas or
//! semicolons: `[a.md#1, b.md#4]`. A `chunk_id:` or `chunk_id=` prefix inside the bracket is
//! allowed. The LLM saw each id as framing wrote it (an attribute value: `&` as `&amp;`, line
//! breaks as spaces), so an id is recognised in that form too, and the `;` of an entity
//! (`Q&amp;A.md#0`) never splits it. Brackets that hold anything else (`[1]`, `[see above]`) and
//! Markdown links (`[text](url)`) are not citations.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::frame::{html_entity as entity, sanitize_attribute};

/// One distinct citation found in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// The cited chunk id (the id as sent, when it was sent).
    pub chunk_id: String,
    /// Whether it was among the chunks sent.
    pub valid: bool,
    /// Times it was cited.
    pub count: usize,
}

/// Where one bracketed citation group sits in the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CitationSpan {
    /// Offset of the `[`: bytes in Rust, UTF-16 code units (a JS string index) from wasm.
    pub start: usize,
    /// Offset just past the `]`, in the same units.
    pub end: usize,
    /// The chunk ids it cites, in order (as in [`Citation::chunk_id`]).
    pub chunk_ids: Vec<String>,
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
    /// Each citation group, in order.
    pub spans: Vec<CitationSpan>,
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

/// `text` with HTML entities decoded.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        match entity(tail) {
            Some((c, len)) => {
                out.push(c);
                rest = &tail[len..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Splits a bracket's inside on `,` and on `;`, except a `;` that ends an entity.
fn split_ids(inside: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (at, c) in inside.char_indices() {
        let separator = match c {
            ',' => true,
            ';' => {
                let before = &inside[start..at];
                !before.rfind('&').is_some_and(|amp| {
                    entity(&inside[start + amp..]).is_some_and(|(_, len)| start + amp + len == at + 1)
                })
            }
            _ => false,
        };
        if separator {
            parts.push(&inside[start..at]);
            start = at + 1;
        }
    }
    parts.push(&inside[start..]);
    parts
}

/// Most separators one sent id may hold (`a;b,c.md#0` holds two) when it is cited among others.
const MAX_SEPARATORS_IN_ID: usize = 7;

/// The ids cited inside one bracket: the longest runs of parts that are sent ids first (an id
/// may hold `,` or `;`), then parts shaped like chunk ids.
fn ids_in(inside: &str, known: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    if let Some(id) = known(&clean(inside)) {
        return vec![id];
    }
    let parts = split_ids(inside);
    let offset = |part: &str| part.as_ptr() as usize - inside.as_ptr() as usize;
    let mut ids = Vec::new();
    let mut i = 0;
    while let Some(first) = parts.get(i) {
        let start = offset(first);
        let last = (i + MAX_SEPARATORS_IN_ID).min(parts.len() - 1);
        let joined = (i + 1..=last).rev().find_map(|j| {
            let end = offset(parts[j]) + parts[j].len();
            known(&clean(&inside[start..end])).map(|id| (id, j))
        });
        if let Some((id, j)) = joined {
            ids.push(id);
            i = j + 1;
            continue;
        }
        let part = clean(first);
        if let Some(id) = known(&part).or_else(|| looks_like_chunk_id(&part).then_some(part)) {
            ids.push(id);
        }
        i += 1;
    }
    ids
}

/// A cited token without a `chunk_id:` prefix, quotes and entities.
fn clean(part: &str) -> String {
    let part = part.trim();
    let part = part
        .strip_prefix("chunk_id:")
        .or_else(|| part.strip_prefix("chunk_id="))
        .map(str::trim)
        .unwrap_or(part);
    unescape(part.trim_matches(|c| c == '"' || c == '\'' || c == '`'))
}

/// Every bracketed citation group in `answer`. `known` maps a cited token (entities decoded) to
/// the id of a chunk that was sent, if it is one; tokens it does not know count only if they look
/// like chunk ids.
fn spans_with(
    answer: &str,
    known: &dyn Fn(&str) -> Option<String>,
    bracketed: &[(String, String)],
) -> Vec<CitationSpan> {
    let mut out = Vec::new();
    let mut offset = 0;
    while let Some(open) = answer[offset..].find('[') {
        let open = offset + open;
        let after = &answer[open + 1..];
        // An id that holds brackets itself (`blog/[slug].mdx#0`), as it was sent.
        if let Some((form, id)) = bracketed.iter().find(|(form, _)| {
            after
                .strip_prefix(form.as_str())
                .is_some_and(|rest| rest.starts_with(']'))
        }) {
            let end = open + 1 + form.len() + 1;
            out.push(CitationSpan {
                start: open,
                end,
                chunk_ids: vec![id.clone()],
            });
            offset = end;
            continue;
        }
        let Some(close) = after.find([']', '[', '\n']) else {
            break;
        };
        if !after[close..].starts_with(']') {
            offset = open + 1 + close;
            continue;
        }
        let inside = &after[..close];
        let end = open + 1 + close + 1;
        offset = end;
        if answer[end..].starts_with('(') {
            continue; // a Markdown link
        }
        let chunk_ids = ids_in(inside, known);
        if !chunk_ids.is_empty() {
            out.push(CitationSpan {
                start: open,
                end,
                chunk_ids,
            });
        }
    }
    out
}

/// The chunk ids cited in `answer`, in order, repeats included.
pub fn extract_citations(answer: &str) -> Vec<String> {
    spans_with(answer, &|_| None, &[])
        .into_iter()
        .flat_map(|s| s.chunk_ids)
        .collect()
}

/// A cited or sent id as compared: entities decoded, whitespace runs as one space.
fn canonical(id: &str) -> String {
    unescape(id).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The form of a chunk id the LLM saw (framing's attribute value), canonical.
fn as_framed(id: &str) -> String {
    canonical(&sanitize_attribute(id))
}

/// Checks every citation in `answer` against the chunk ids that were sent.
pub fn verify_citations(answer: &str, sent: &[String]) -> CitationReport {
    let mut by_form: HashMap<String, &String> = HashMap::with_capacity(sent.len() * 2);
    let mut bracketed: Vec<(String, String)> = Vec::new();
    for id in sent {
        by_form.insert(as_framed(id), id);
        by_form.insert(canonical(id), id);
        if id.contains(['[', ']']) {
            for form in [sanitize_attribute(id), unescape(&sanitize_attribute(id)), id.clone()] {
                bracketed.push((form, id.clone()));
            }
        }
    }
    // Longest first, so `a[1]#0` is not taken for `a[1` where both were sent.
    bracketed.sort_by_key(|(form, _)| std::cmp::Reverse(form.len()));
    let spans = spans_with(
        answer,
        &|token| by_form.get(&canonical(token)).map(|id| (*id).clone()),
        &bracketed,
    );
    let sent_set: std::collections::HashSet<&String> = sent.iter().collect();
    let mut citations: Vec<Citation> = Vec::new();
    let mut at: HashMap<&String, usize> = HashMap::new();
    for id in spans.iter().flat_map(|s| &s.chunk_ids) {
        match at.get(id) {
            Some(&i) => citations[i].count += 1,
            None => {
                at.insert(id, citations.len());
                citations.push(Citation {
                    valid: sent_set.contains(id),
                    chunk_id: id.clone(),
                    count: 1,
                });
            }
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
        spans,
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

    #[test]
    fn spans_locate_each_group() {
        let answer = "Rotate [a#1, b#2]. Fog [c#3](link) and [a#1]";
        let report = verify_citations(answer, &sent(&["a#1", "b#2"]));
        let spans: Vec<(&str, Vec<&str>)> = report
            .spans
            .iter()
            .map(|s| {
                (
                    &answer[s.start..s.end],
                    s.chunk_ids.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(spans, [("[a#1, b#2]", vec!["a#1", "b#2"]), ("[a#1]", vec!["a#1"])]);
    }

    #[test]
    fn ids_with_entities_semicolons_and_spaces_are_recognised() {
        // Framing writes `Q&A.md#0` as `Q&amp;A.md#0`; an LLM copies either form.
        let ids = sent(&["Q&A.md#0", "my notes.md#2", "a;b.md#1", "line\nbreak.md#0"]);
        for (answer, want) in [
            ("See [Q&amp;A.md#0].", "Q&A.md#0"),
            ("See [Q&A.md#0].", "Q&A.md#0"),
            ("See [my notes.md#2].", "my notes.md#2"),
            ("See [a;b.md#1].", "a;b.md#1"),
            ("See [line break.md#0].", "line\nbreak.md#0"),
        ] {
            let report = verify_citations(answer, &ids);
            assert_eq!(report.valid, [want], "{answer}: {report:?}");
            assert!(report.unknown.is_empty(), "{answer}: {report:?}");
        }
        let both = verify_citations("[Q&amp;A.md#0; my notes.md#2]", &ids);
        assert_eq!(both.valid, ["Q&A.md#0", "my notes.md#2"]);
        let routes = sent(&["blog/[slug].mdx#0", "a#1"]);
        let report = verify_citations("See [blog/[slug].mdx#0] and [a#1].", &routes);
        assert_eq!(report.valid, ["blog/[slug].mdx#0", "a#1"]);
        let grouped = verify_citations("[a;b.md#1; Q&A.md#0, x#3]", &ids);
        assert_eq!(grouped.valid, ["a;b.md#1", "Q&A.md#0"]);
        assert_eq!(grouped.unknown, ["x#3"]);
    }

    #[test]
    fn entities_decode() {
        assert_eq!(
            unescape("a &amp; b &lt;c&gt; &#35;1 &#x41; &bogus; &"),
            "a & b <c> #1 A &bogus; &"
        );
        assert_eq!(split_ids("x&amp;y#1; z#2"), ["x&amp;y#1", " z#2"]);
    }
}
