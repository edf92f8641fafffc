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

fn flatten_yaml(prefix: &str, value: &yaml_rust2::Yaml, out: &mut BTreeMap<String, String>) {
    use yaml_rust2::Yaml;
    let scalar = |v: &Yaml| -> Option<String> {
        match v {
            Yaml::Real(s) | Yaml::String(s) => Some(s.clone()),
            Yaml::Integer(i) => Some(i.to_string()),
            Yaml::Boolean(b) => Some(b.to_string()),
            _ => None,
        }
    };
    match value {
        Yaml::Hash(map) => {
            for (k, v) in map {
                let Some(key) = scalar(k) else { continue };
                let key = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                flatten_yaml(&key, v, out);
            }
        }
        Yaml::Array(items) => {
            let joined: Vec<String> = items.iter().filter_map(scalar).collect();
            if !joined.is_empty() {
                out.insert(prefix.to_string(), joined.join(", "));
            }
        }
        other => {
            if let Some(s) = scalar(other) {
                out.insert(prefix.to_string(), s);
            }
        }
    }
}

fn flatten_toml(prefix: &str, value: &toml::Value, out: &mut BTreeMap<String, String>) {
    use toml::Value;
    match value {
        Value::Table(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_toml(&key, v, out);
            }
        }
        Value::Array(items) => {
            let joined: Vec<String> = items
                .iter()
                .filter_map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Table(_) | Value::Array(_) => None,
                    other => Some(other.to_string()),
                })
                .collect();
            if !joined.is_empty() {
                out.insert(prefix.to_string(), joined.join(", "));
            }
        }
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// Counts what a YAML text's first document expands to, aliases followed (each alias counts as
/// all of what its anchor holds), in one pass over the parser's events: values and scalar bytes,
/// saturating, so "billion laughs" is measured in linear time without being built.
#[derive(Default)]
struct YamlSize {
    /// Open collections: their anchor and size so far.
    open: Vec<(usize, (u64, u64))>,
    /// Each anchor's expanded size.
    anchors: HashMap<usize, (u64, u64)>,
    /// The first document's size.
    total: (u64, u64),
    done: bool,
}

impl YamlSize {
    fn add(&mut self, size: (u64, u64)) {
        let target = match self.open.last_mut() {
            Some((_, open)) => open,
            None => &mut self.total,
        };
        target.0 = target.0.saturating_add(size.0);
        target.1 = target.1.saturating_add(size.1);
    }
}

impl yaml_rust2::parser::MarkedEventReceiver for YamlSize {
    fn on_event(&mut self, event: yaml_rust2::Event, _: yaml_rust2::scanner::Marker) {
        use yaml_rust2::Event;
        if self.done {
            return;
        }
        match event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => self.open.push((anchor, (1, 0))),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, size)) = self.open.pop() {
                    if anchor > 0 {
                        self.anchors.insert(anchor, size);
                    }
                    self.add(size);
                }
            }
            Event::Scalar(value, _, anchor, _) => {
                let size = (1, value.len() as u64);
                if anchor > 0 {
                    self.anchors.insert(anchor, size);
                }
                self.add(size);
            }
            Event::Alias(anchor) => {
                let size = self.anchors.get(&anchor).copied().unwrap_or((1, 0));
                self.add(size);
            }
            Event::DocumentEnd => self.done = true,
            _ => {}
        }
    }
}

fn parse_front_matter(
    path: &str,
    kind: MetadataBlockKind,
    text: &str,
    input: &InputConfig,
) -> Result<BTreeMap<String, String>, LoadError> {
    let mut out = BTreeMap::new();
    let bad = |format: &'static str, reason: String| LoadError::BadFrontMatter {
        path: path.to_string(),
        format,
        reason,
    };
    match kind {
        MetadataBlockKind::YamlStyle => {
            // Aliases are measured before anything is built: the loader copies an alias's whole
            // anchor, so a few hundred bytes could otherwise ask for gigabytes.
            let mut size = YamlSize::default();
            yaml_rust2::parser::Parser::new_from_str(text)
                .load(&mut size, false)
                .map_err(|e| bad("YAML", e.to_string()))?;
            let limit = input.max_front_matter_values as u64;
            if size.total.0 > limit || size.total.1 > input.max_file_bytes {
                return Err(LoadError::FrontMatterTooLarge {
                    path: path.to_string(),
                    values: size.total.0,
                    bytes: size.total.1,
                    limit: input.max_front_matter_values,
                });
            }
            let docs = yaml_rust2::YamlLoader::load_from_str(text).map_err(|e| LoadError::BadFrontMatter {
                path: path.to_string(),
                format: "YAML",
                reason: e.to_string(),
            })?;
            if let Some(doc) = docs.first() {
                flatten_yaml("", doc, &mut out);
            }
        }
        MetadataBlockKind::PlusesStyle => {
            let table: toml::Table = text.parse().map_err(|e: toml::de::Error| LoadError::BadFrontMatter {
                path: path.to_string(),
                format: "TOML",
                reason: e.message().to_string(),
            })?;
            flatten_toml("", &toml::Value::Table(table), &mut out);
        }
    }
    Ok(out)
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
                    metadata = parse_front_matter(path, kind, &text, input)?;
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
                    text: String::new(),
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
            Event::End(
                TagEnd::Paragraph
                | TagEnd::CodeBlock
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
    Ok(Document {
        id: path.to_string(),
        source: path.to_string(),
        url: None,
        title,
        metadata,
        sections,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut yaml = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x]\n");
        for level in 1..9 {
            let p = level - 1;
            let refs = vec![format!("*l{p}"); 9].join(", ");
            yaml.push_str(&format!("l{level}: &l{level} [{refs}]\n"));
        }
        let md = format!("---\n{yaml}---\n# T\n\ntext\n");
        assert!(md.len() < 600);
        let started = std::time::Instant::now();
        let e = load_markdown("bomb.md", &md, &InputConfig::default()).unwrap_err();
        assert!(matches!(e, LoadError::FrontMatterTooLarge { limit: 10_000, .. }), "{e}");
        assert!(e.to_string().contains("max_front_matter_values"), "{e}");
        assert!(started.elapsed().as_secs() < 5, "measured without being built");
        // Aliases within the limit still work.
        let ok = "---\nbase: &b {owner: ops}\ncopy: *b\n---\ntext\n";
        let doc = load_markdown("ok.md", ok, &InputConfig::default()).unwrap();
        assert_eq!(doc.metadata.get("copy.owner").map(String::as_str), Some("ops"));
        // A long scalar repeated counts its bytes against max_file_bytes.
        let big = format!(
            "---\ns: &s {}\nl: [{}]\n---\nx\n",
            "y".repeat(1000),
            vec!["*s"; 100].join(", ")
        );
        let small = InputConfig {
            max_file_bytes: 50_000,
            ..InputConfig::default()
        };
        assert!(matches!(
            load_markdown("big.md", &big, &small),
            Err(LoadError::FrontMatterTooLarge { .. })
        ));
    }
}
