//! Markdown and MDX: front matter (YAML `---` or TOML `+++`) becomes metadata, headings become
//! sections with a breadcrumb and an anchor (`{#id}` if given, else a GitHub-style slug).

use std::collections::{BTreeMap, HashMap};

use pulldown_cmark::{Event, HeadingLevel, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use super::{file_stem, push_block, LoadError};
use crate::chunk::{Document, Section};
use crate::config::InputConfig;

/// GitHub-style heading slug: lower case, letters, digits, `-` and `_` kept, spaces to `-`.
pub fn slugify(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.trim().chars() {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            out.extend(c.to_lowercase());
        } else if c.is_whitespace() {
            out.push('-');
        }
    }
    out
}

/// Drops MDX `import`/`export` lines outside fenced code.
fn strip_mdx_statements(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
        } else if trimmed.starts_with("```") {
            fence = Some("```");
        } else if trimmed.starts_with("~~~") {
            fence = Some("~~~");
        } else if line.starts_with("import ") || line.starts_with("export ") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn level_number(level: HeadingLevel) -> usize {
    level as usize
}

/// Loads a Markdown or MDX document.
pub fn load_markdown(path: &str, text: &str, input: &InputConfig) -> Result<Document, LoadError> {
    let source = if path.to_ascii_lowercase().ends_with(".mdx") {
        strip_mdx_statements(text)
    } else {
        text.replace("\r\n", "\n")
    };
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut metadata = BTreeMap::new();
    let mut sections: Vec<Section> = Vec::new();
    let mut current = Section::default();
    let mut block = String::new();
    let mut stack: Vec<(usize, String)> = Vec::new();
    let mut slugs: HashMap<String, usize> = HashMap::new();
    let mut first_h1: Option<String> = None;
    let mut front: Option<(MetadataBlockKind, String)> = None;
    let mut heading: Option<(usize, Option<String>, String)> = None;

    for event in Parser::new_ext(&source, options) {
        match event {
            Event::Start(Tag::MetadataBlock(kind)) => front = Some((kind, String::new())),
            Event::End(TagEnd::MetadataBlock(_)) => {
                if let Some((kind, text)) = front.take() {
                    metadata = super::front_matter::parse(path, kind, &text, input)?;
                }
            }
            Event::Start(Tag::Heading { level, id, .. }) => {
                push_block(&mut current.text, &block);
                block.clear();
                heading = Some((level_number(level), id.map(|s| s.to_string()), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some((level, id, title)) = heading.take() else {
                    continue;
                };
                let title = title.trim().to_string();
                if !current.text.is_empty() {
                    sections.push(std::mem::take(&mut current));
                }
                if level == 1 && first_h1.is_none() {
                    first_h1 = Some(title.clone());
                }
                while stack.last().is_some_and(|(l, _)| *l >= level) {
                    stack.pop();
                }
                stack.push((level, title.clone()));
                let anchor = id.unwrap_or_else(|| {
                    let base = slugify(&title);
                    let n = slugs.entry(base.clone()).or_insert(0);
                    let slug = if *n == 0 { base.clone() } else { format!("{base}-{n}") };
                    *n += 1;
                    slug
                });
                current = Section {
                    heading_path: stack.iter().map(|(_, t)| t.clone()).collect(),
                    anchor: (!anchor.is_empty()).then_some(anchor),
                    ..Section::default()
                };
                push_block(&mut current.text, &title);
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                if let Some((_, text)) = front.as_mut() {
                    text.push_str(&t);
                } else if let Some((_, _, title)) = heading.as_mut() {
                    title.push_str(&t);
                } else {
                    block.push_str(&t);
                }
            }
            Event::SoftBreak => {
                if let Some((_, _, title)) = heading.as_mut() {
                    title.push(' ');
                } else {
                    block.push(' ');
                }
            }
            Event::HardBreak => block.push('\n'),
            Event::End(TagEnd::TableCell) => block.push_str(" | "),
            Event::End(TagEnd::CodeBlock) => {
                let code = block.trim();
                if !code.is_empty() {
                    current.code.push(code.to_string());
                }
                push_block(&mut current.text, &block);
                block.clear();
            }
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::TableRow
                | TagEnd::TableHead
                | TagEnd::BlockQuote(_)
                | TagEnd::FootnoteDefinition,
            ) => {
                push_block(&mut current.text, block.trim_end_matches(" | "));
                block.clear();
            }
            // HTML blocks, inline HTML (and MDX components) are markup, not text.
            _ => {}
        }
    }
    push_block(&mut current.text, &block);
    if !current.text.is_empty() {
        sections.push(current);
    }
    let title = metadata
        .get("title")
        .cloned()
        .or(first_h1)
        .unwrap_or_else(|| file_stem(path).to_string());
    let mut document = Document {
        id: path.to_string(),
        source: path.to_string(),
        url: None,
        title,
        metadata,
        sections,
        ..Default::default()
    };
    super::facets_from_metadata(&mut document, input);
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_fields_named_in_the_config_are_filters_and_sort_keys() {
        let md = "---\ntitle: T\ntags: [install, linux]\ndate: 2024-01-02\n---\n# T\n\nText.\n";
        let input = InputConfig {
            filters: vec!["tags".into(), "missing".into()],
            sort: vec!["date".into()],
            ..InputConfig::default()
        };
        let doc = load_markdown("a.md", md, &input).unwrap();
        assert_eq!(doc.filters["tags"], ["install", "linux"]);
        assert!(!doc.filters.contains_key("missing"));
        assert_eq!(doc.sort["date"], "2024-01-02");
        let plain = load_markdown("a.md", md, &InputConfig::default()).unwrap();
        assert!(
            plain.filters.is_empty() && plain.sort.is_empty(),
            "only fields the config names"
        );
    }

    #[test]
    fn slugs_like_github() {
        assert_eq!(slugify("Getting Started!"), "getting-started");
        assert_eq!(slugify("The `--site` flag"), "the---site-flag");
        assert_eq!(slugify("Überblick: API"), "überblick-api");
    }

    #[test]
    fn headings_become_sections_with_breadcrumbs() {
        let md = "---\ntitle: The Guide\ntags: [a, b]\nnested:\n  k: v\n---\nIntro text.\n\n# Install\n\nRun it.\n\n## From source {#src}\n\nBuild `it`.\n\n```sh\nmake\n```\n\n# Use\n\n- one\n- two\n\n## Install\n\nAgain.\n";
        let doc = load_markdown("docs/guide.md", md, &InputConfig::default()).unwrap();
        assert_eq!(doc.title, "The Guide");
        assert_eq!(doc.metadata.get("tags").map(String::as_str), Some("a, b"));
        assert_eq!(doc.metadata.get("nested.k").map(String::as_str), Some("v"));
        let s = &doc.sections;
        assert_eq!(s.len(), 5);
        assert_eq!(s[0].heading_path, Vec::<String>::new());
        assert_eq!(s[0].text, "Intro text.");
        assert_eq!(s[1].heading_path, vec!["Install"]);
        assert_eq!(s[1].anchor.as_deref(), Some("install"));
        assert_eq!(s[1].text, "Install\n\nRun it.");
        assert_eq!(s[2].heading_path, vec!["Install", "From source"]);
        assert_eq!(s[2].anchor.as_deref(), Some("src"));
        assert_eq!(s[2].text, "From source\n\nBuild it.\n\nmake");
        // The fenced block is known as code; inline `it` is prose.
        assert_eq!(s[2].code, ["make"]);
        assert!(s[1].code.is_empty());
        assert_eq!(s[3].text, "Use\n\none\n\ntwo");
        assert_eq!(s[4].heading_path, vec!["Use", "Install"]);
        assert_eq!(s[4].anchor.as_deref(), Some("install-1"));
    }

    #[test]
    fn toml_front_matter_and_h1_title() {
        let md = "+++\ndraft = true\nweight = 3\n+++\n# Real Title\n\nBody\n";
        let doc = load_markdown("a.md", md, &InputConfig::default()).unwrap();
        assert_eq!(doc.title, "Real Title");
        assert_eq!(doc.metadata.get("draft").map(String::as_str), Some("true"));
        assert_eq!(doc.metadata.get("weight").map(String::as_str), Some("3"));
        let none = load_markdown("dir/plain.md", "just text", &InputConfig::default()).unwrap();
        assert_eq!(none.title, "plain");
    }

    #[test]
    fn bad_front_matter_is_an_error() {
        let err = load_markdown("a.md", "---\ntitle: [unclosed\n---\nx\n", &InputConfig::default()).unwrap_err();
        assert!(
            matches!(err, LoadError::BadFrontMatter { format: "YAML", .. }),
            "{err:?}"
        );
    }

    #[test]
    fn mdx_statements_and_components_are_not_text() {
        let mdx = "import Tabs from '@theme/Tabs'\nexport const x = 1\n\n# Title\n\n<Tabs>\n\nInside tab.\n\n</Tabs>\n\n```js\nimport kept from 'code'\n```\n";
        let doc = load_markdown("p.mdx", mdx, &InputConfig::default()).unwrap();
        let all: String = doc
            .sections
            .iter()
            .map(|s| s.text.clone())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!all.contains("@theme"), "{all}");
        assert!(!all.contains("<Tabs>"), "{all}");
        assert!(all.contains("Inside tab."));
        assert!(all.contains("import kept from 'code'"));
    }

    #[test]
    fn yaml_aliases_cannot_expand_past_the_limit() {
        // "Billion laughs": nine levels of nine aliases each, 9^9 values from about 400 bytes.
        // Lists of lists flatten to nothing, so that one costs nothing at all...
        let mut lists = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x]\n");
        // ...and mappings of mappings flatten to every path, so that one is stopped at the limit.
        let mut maps = String::from("m0: &m0 {a: x, b: x, c: x, d: x, e: x, f: x, g: x, h: x, i: x}\n");
        for level in 1..9 {
            let p = level - 1;
            let refs = vec![format!("*l{p}"); 9].join(", ");
            lists.push_str(&format!("l{level}: &l{level} [{refs}]\n"));
            let refs: Vec<String> = "abcdefghi".chars().map(|k| format!("{k}: *m{p}")).collect();
            maps.push_str(&format!("m{level}: &m{level} {{{}}}\n", refs.join(", ")));
        }
        let yaml = maps.clone();
        let md = |yaml: &str| format!("---\n{yaml}---\n# T\n\ntext\n");
        assert!(md(&maps).len() < 1_000 && md(&lists).len() < 600, "a few hundred bytes");
        let doc = load_markdown("lists.md", &md(&lists), &InputConfig::default()).unwrap();
        assert_eq!(doc.metadata.len(), 1, "{:?}", doc.metadata);
        let e = load_markdown("bomb.md", &md(&maps), &InputConfig::default()).unwrap_err();
        assert!(
            matches!(
                e,
                LoadError::FrontMatterTooLarge {
                    limit: 10_000,
                    values: 10_001,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("max_front_matter_values"),
            "stopped at the limit: {e}"
        );
        // Aliases within the limit still work.
        let ok = "---\nbase: &b {owner: ops}\ncopy: *b\n---\ntext\n";
        let doc = load_markdown("ok.md", ok, &InputConfig::default()).unwrap();
        assert_eq!(doc.metadata.get("copy.owner").map(String::as_str), Some("ops"));
        // A long scalar repeated counts its bytes.
        let big = format!(
            "---\ns: &s {}\nl: [{}]\n---\nx\n",
            "y".repeat(7_000),
            vec!["*s"; 200].join(", ")
        );
        assert!(matches!(
            load_markdown("big.md", &big, &InputConfig::default()),
            Err(LoadError::FrontMatterTooLarge { .. })
        ));
        // A second YAML document inside the block (a `---` with a tab after it does not end the
        // front matter) is not read, so it cannot expand either.
        let second = format!("---\ntitle: T\n---\t\n{yaml}---\n# T\n\ntext\n");
        let doc = load_markdown("second.md", &second, &InputConfig::default()).unwrap();
        assert_eq!(doc.metadata.get("title").map(String::as_str), Some("T"));
        // Every value carries its key path: a long key over many values is counted whole.
        let key = "k".repeat(10_000);
        let values: String = (0..200).map(|i| format!("v{i} = 1\n")).collect();
        let toml = format!("+++\n[{key}]\n{values}+++\nx\n");
        assert!(matches!(
            load_markdown("keys.md", &toml, &InputConfig::default()),
            Err(LoadError::FrontMatterTooLarge { .. })
        ));
    }

    #[test]
    fn yaml_scalars_read_as_the_core_schema_reads_them() {
        let md = "---\nflag: true\nhex: 0x10\nq: \"0x10\"\nnone: ~\nlist: [a, 1, {x: y}, [z]]\nnested: {a: {b: c}}\n1: one\n---\nx\n";
        let m = load_markdown("s.md", md, &InputConfig::default()).unwrap().metadata;
        let get = |k: &str| m.get(k).map(String::as_str);
        assert_eq!(get("flag"), Some("true"));
        assert_eq!(get("hex"), Some("16"));
        assert_eq!(get("q"), Some("0x10"));
        assert_eq!(get("none"), None);
        assert_eq!(get("list"), Some("a, 1"));
        assert_eq!(get("nested.a.b"), Some("c"));
        assert_eq!(get("1"), Some("one"));
    }
}
