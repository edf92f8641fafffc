//! What a query asks for, read from its text: the words to search for, `"quoted phrases"` the
//! results must hold, and `-words` they must not.
//!
//! - `"boundary layer"` (straight, curly, « » or full-width quotes): every result holds these words next to each
//!   other in this order (stop words keep their place: `"speed of sound"` also matches "speed and
//!   sound"). The phrase's words are searched for as well. A quote left open is not a phrase: it
//!   is ignored, and the words after it are plain words.
//! - `-flutter`: no result holds the word (all of its terms: `-e-mail` leaves out chunks with both
//!   "e" and "mail"). `-"wave drag"` leaves out chunks with all of the phrase's words. A `-` inside
//!   a word (`x-sextant-chunks`), before a digit (`-40`) or alone is a plain character.
//!
//! Parsing never fails; the engine refuses a query with nothing left to search for.

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Query {
    /// What to search for and embed: the query without its exclusions, quotes removed, words
    /// separated by single spaces.
    pub text: String,
    /// The phrases results must hold, in the order written.
    pub phrases: Vec<String>,
    /// The words (or quoted phrases, without quotes) results must not hold.
    pub excluded: Vec<String>,
}

fn is_quote(c: char) -> bool {
    matches!(
        c,
        '"' | '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{FF02}' | '\u{00AB}' | '\u{00BB}'
    )
}

impl Query {
    /// Reads a query's text.
    pub fn parse(query: &str) -> Self {
        let mut parsed = Query::default();
        let mut wanted: Vec<&str> = Vec::new();
        let mut rest = query;
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            let excluding = rest
                .strip_prefix('-')
                .and_then(|r| r.chars().next())
                .is_some_and(|c| c.is_alphabetic() || is_quote(c));
            let body = if excluding { &rest[1..] } else { rest };
            // A quoted phrase: up to the next quote.
            if let Some(open) = body.chars().next().filter(|&c| is_quote(c)) {
                let inner = &body[open.len_utf8()..];
                if let Some(close) = inner.find(is_quote) {
                    let phrase = inner[..close].split_whitespace().collect::<Vec<_>>().join(" ");
                    rest = &inner[close + inner[close..].chars().next().map_or(1, char::len_utf8)..];
                    if phrase.is_empty() {
                        continue;
                    }
                    if excluding {
                        parsed.excluded.push(phrase);
                    } else {
                        wanted.extend(inner[..close].split_whitespace());
                        parsed.phrases.push(phrase);
                    }
                    continue;
                }
                // An unclosed quote: dropped; what follows is plain words (after `-"`, the next word
                // is still excluded).
                rest = inner;
                if excluding {
                    let next = rest.trim_start();
                    let end = next
                        .find(|c: char| c.is_whitespace() || is_quote(c))
                        .unwrap_or(next.len());
                    if end > 0 {
                        parsed.excluded.push(next[..end].to_string());
                    }
                    rest = &next[end..];
                }
                continue;
            }
            let end = body
                .find(|c: char| c.is_whitespace() || is_quote(c))
                .unwrap_or(body.len());
            let word = &body[..end];
            rest = &body[end..];
            if excluding {
                parsed.excluded.push(word.to_string());
            } else {
                wanted.push(word);
            }
        }
        parsed.text = wanted.join(" ");
        parsed
    }
}

#[cfg(test)]
mod tests {
    use super::Query;

    fn parse(q: &str) -> (String, Vec<String>, Vec<String>) {
        let p = Query::parse(q);
        (p.text, p.phrases, p.excluded)
    }

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plain_words_come_back_as_they_are() {
        assert_eq!(parse("  wing   flutter "), ("wing flutter".into(), vec![], vec![]));
        assert_eq!(parse(""), (String::new(), vec![], vec![]));
    }

    #[test]
    fn exclusions_are_words_that_start_with_a_minus() {
        assert_eq!(
            parse("wing  -flutter x-ray - -40 -e-mail"),
            ("wing x-ray - -40".into(), vec![], strings(&["flutter", "e-mail"]))
        );
        assert_eq!(parse("-only"), (String::new(), vec![], strings(&["only"])));
    }

    #[test]
    fn quoted_phrases_are_searched_and_required() {
        assert_eq!(
            parse(r#"heat "boundary   layer" transfer"#),
            (
                "heat boundary layer transfer".into(),
                strings(&["boundary layer"]),
                vec![]
            )
        );
        assert_eq!(
            parse("\u{201C}os.path.join\u{201D}-x"),
            ("os.path.join".into(), strings(&["os.path.join"]), strings(&["x"]))
        );
        assert_eq!(
            parse(r#"wing -"wave drag" "" x"#),
            ("wing x".into(), vec![], strings(&["wave drag"]))
        );
    }

    #[test]
    fn an_unclosed_quote_is_dropped() {
        assert_eq!(
            parse(r#"wing "boundary layer"#),
            ("wing boundary layer".into(), vec![], vec![])
        );
        assert_eq!(parse(r#"""#), (String::new(), vec![], vec![]));
        assert_eq!(
            parse(r#"wing -"flutter drag"#),
            ("wing drag".into(), vec![], strings(&["flutter"])),
            "an open quote after a minus still excludes its word"
        );
        assert_eq!(
            parse("\u{00AB}boundary layer\u{00BB} \u{FF02}x y\u{FF02}"),
            ("boundary layer x y".into(), strings(&["boundary layer", "x y"]), vec![])
        );
    }

    #[test]
    fn parsing_any_text_never_panics_and_keeps_its_words() {
        // Seeded pseudo-random strings over the characters the syntax cares about.
        let alphabet = ['a', 'b', ' ', '-', '"', '\u{201C}', '\u{201D}', 'é', '4', '\t'];
        let mut state: u64 = 0x5eed;
        println!("seed {state:#x}");
        for _ in 0..20_000 {
            let len = (state % 12) as usize;
            let text: String = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    alphabet[(state >> 33) as usize % alphabet.len()]
                })
                .collect();
            let p = Query::parse(&text);
            // Every letter of the query is searched for, excluded, or in a phrase.
            let letters = |s: &str| s.chars().filter(|c| c.is_alphanumeric()).count();
            let kept = letters(&p.text) + p.excluded.iter().map(|e| letters(e)).sum::<usize>();
            assert_eq!(kept, letters(&text), "{text:?} → {p:?}");
            assert!(!p.text.contains(super::is_quote), "{text:?} → {p:?}");
        }
    }
}
