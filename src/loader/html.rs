//! HTML: the main content of a page, split into sections at headings.
//!
//! Main content is the first `[data-sextant-body]`, else `<main>`, else `[role=main]` (Sphinx),
//! else `<article>`, else `<body>`. Inside it, `nav`, `header`, `footer`, `script`, `style`, `noscript`, `template`,
//! `svg`, elements with `hidden` and anything marked `[data-sextant-ignore]` are dropped.
//! Anywhere on the page, `data-sextant-filter`, `-sort` and `-meta` give the page's filter
//! values, sort values and metadata (`name` takes the element's text, `name:value` the value,
//! `name[attribute]` the element's attribute; comma-separated), and in the main content
//! `data-sextant-weight` an element's own keyword weight (0–10). Pagefind's `data-pagefind-*`
//! names of the same attributes (and of `-body` and `-ignore`) are read as aliases, so a site
//! built for Pagefind is indexed as it is.
//! Headings (`h1`–`h6`) start sections; a heading's anchor is its `id`, else the `id` of the
//! element it opens (Sphinx wraps sections as `<section id=…><h2>`), else none. Permalink
//! markers (`a.headerlink`, `a.hash-link`, `¶`) are not part of heading text.

use ego_tree::NodeRef;
use scraper::{ElementRef, Html, Node, Selector};

use super::html_parse::parse_bounded;
use super::{add_filter_value, add_sort_value, file_stem, push_block, LoadError};
use crate::chunk::{Document, Section};
use crate::config::InputConfig;
use crate::filters::{parse_attribute, AttributePart};

const SKIPPED: [&str; 9] = [
    "nav", "header", "footer", "script", "style", "noscript", "template", "svg", "iframe",
];
/// Most attributes of one element `data-sextant-index-attrs` indexes (an element has a few).
const MAX_INDEXED_ATTRIBUTES: usize = 16;
/// Elements that end a block of text (table cells only add a ` | ` separator).
const BLOCKS: [&str; 28] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "form",
    "hr",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "tfoot",
    "thead",
    "tr",
    "ul",
    "caption",
];

/// The URL of a page of a built site from its path relative to the site root:
/// `a/index.html` → `/a/`, `index.html` → `/`, `a/b.html` → `/a/b.html`; each segment
/// percent-encoded (`sp ace.html` → `/sp%20ace.html`), so the link opens the file.
pub fn site_url(path: &str) -> String {
    if path == "index.html" {
        return "/".into();
    }
    let url = match path.strip_suffix("/index.html") {
        Some(dir) => format!("/{dir}/"),
        None => format!("/{path}"),
    };
    crate::url::encode_path(&url)
}

struct Walker {
    sections: Vec<Section>,
    current: Section,
    block: String,
    stack: Vec<(usize, String)>,
    first_h1: Option<String>,
    in_pre: usize,
    /// The weights of the weighted elements the walk is in (`data-sextant-weight`), innermost
    /// last, and where in `block` the text under the innermost began.
    weights: Vec<u32>,
    weighted_from: usize,
}

impl Walker {
    fn flush_block(&mut self) {
        self.close_weighted();
        let block = std::mem::take(&mut self.block);
        push_block(&mut self.current.text, &block);
        self.weighted_from = 0;
    }

    /// Records the text of `block` since the innermost weighted element's text began, with its
    /// weight (nothing outside weighted elements).
    fn close_weighted(&mut self) {
        let Some(&weight) = self.weights.last() else {
            return;
        };
        let text = self.block.get(self.weighted_from..).unwrap_or("").trim();
        if weight != 1 && !text.is_empty() && self.current.weighted.len() < crate::chunk::MAX_WEIGHTED_ELEMENTS {
            self.current.weighted.push((text.to_string(), weight));
        }
        self.weighted_from = self.block.len();
    }

    /// Enters (`Some`) or leaves (`None`) an element with a weight of its own.
    fn weigh(&mut self, weight: Option<u32>) {
        self.close_weighted();
        match weight {
            Some(w) => self.weights.push(w),
            None => {
                self.weights.pop();
            }
        }
        self.weighted_from = self.block.len();
    }

    fn text(&mut self, t: &str) {
        if self.in_pre > 0 {
            self.block.push_str(t);
            return;
        }
        for (i, part) in t.split(char::is_whitespace).enumerate() {
            if i > 0 && !self.block.ends_with(' ') && !self.block.ends_with('\n') && !self.block.is_empty() {
                self.block.push(' ');
            }
            self.block.push_str(part);
        }
    }

    /// The values of the attributes `data-sextant-index-attrs` (or Pagefind's
    /// `data-pagefind-index-attrs`) names, comma-separated (`alt,title`), as text where the element
    /// begins: an image's `alt` is searchable.
    fn indexed_attributes(&mut self, e: &scraper::node::Element) {
        let Some(names) = data_attr(e, "index-attrs") else {
            return;
        };
        for name in names
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .take(MAX_INDEXED_ATTRIBUTES)
        {
            if let Some(value) = e.attr(name).filter(|v| !v.trim().is_empty()) {
                self.text(&format!(" {value} "));
            }
        }
    }

    fn heading(&mut self, level: usize, element: ElementRef, anchor: Option<String>) {
        self.flush_block();
        let mut title = String::new();
        collect_text(*element, &mut title);
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        let title = title.trim_end_matches(['¶', '#', ' ']).to_string();
        if !self.current.text.is_empty() {
            self.sections.push(std::mem::take(&mut self.current));
        }
        if level == 1 && self.first_h1.is_none() {
            self.first_h1 = Some(title.clone());
        }
        while self.stack.last().is_some_and(|(l, _)| *l >= level) {
            self.stack.pop();
        }
        self.stack.push((level, title.clone()));
        self.current = Section {
            heading_path: self.stack.iter().map(|(_, t)| t.clone()).collect(),
            anchor,
            ..Section::default()
        };
        push_block(&mut self.current.text, &title);
    }

    /// Walks the subtree under `root` in document order with an explicit stack (no recursion,
    /// so no nesting depth can overflow the call stack). Fails with the depth reached when an
    /// element is nested more than `max_depth` levels below `root`.
    fn walk(&mut self, root: NodeRef<Node>, max_depth: usize) -> Result<(), usize> {
        enum Step<'a> {
            Enter(NodeRef<'a, Node>, usize),
            Leave(&'a str),
            Unweigh,
        }
        let mut stack: Vec<Step> = root.children().rev().map(|c| Step::Enter(c, 1)).collect();
        while let Some(step) = stack.pop() {
            let (node, depth) = match step {
                Step::Enter(node, depth) => (node, depth),
                Step::Leave(name) => {
                    self.leave(name);
                    continue;
                }
                Step::Unweigh => {
                    self.weigh(None);
                    continue;
                }
            };
            if depth > max_depth {
                return Err(depth);
            }
            match node.value() {
                Node::Text(t) => self.text(t),
                Node::Element(e) => {
                    let Some(element) = ElementRef::wrap(node) else {
                        continue;
                    };
                    if skipped(element) {
                        continue;
                    }
                    let name = e.name();
                    if let Some(level) = heading_level(name) {
                        let anchor = e.attr("id").map(String::from).or_else(|| parent_anchor(element));
                        self.heading(level, element, anchor.filter(|a| !a.is_empty()));
                        continue;
                    }
                    if name == "br" {
                        self.block.push('\n');
                        continue;
                    }
                    if BLOCKS.contains(&name) {
                        self.flush_block();
                    }
                    if name == "pre" {
                        self.in_pre += 1;
                    }
                    if let Some(weight) = element_weight(e) {
                        self.weigh(Some(weight));
                        stack.push(Step::Unweigh);
                    }
                    self.indexed_attributes(e);
                    stack.push(Step::Leave(name));
                    stack.extend(node.children().rev().map(|c| Step::Enter(c, depth + 1)));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// What closing element `name` does: end a `pre`, separate table cells, end a block.
    fn leave(&mut self, name: &str) {
        // A block that ends inside a `pre` (or ends it) is code.
        let in_code = self.in_pre > 0;
        if name == "pre" {
            self.in_pre = self.in_pre.saturating_sub(1);
        }
        if matches!(name, "td" | "th") {
            self.block.push_str(" | ");
        } else if BLOCKS.contains(&name) {
            let trimmed = self.block.trim_end_matches(" | ").to_string();
            self.block = trimmed;
            let code = self.block.trim();
            if in_code && !code.is_empty() {
                self.current.code.push(code.to_string());
            }
            self.flush_block();
        }
    }
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

/// An element's own keyword weight (`data-sextant-weight`, or Pagefind's `data-pagefind-weight`):
/// a number from 0 to [`crate::index::Fields::MAX_WEIGHT`], rounded to a whole one (out of range:
/// the nearest end), but a fraction over 0 is at least 1: a word cannot count less than once, and
/// Pagefind's `0.2` (found, ranked low) must not become 0 (not searchable by keyword). `None`
/// without one, or when it is not a number.
fn element_weight(e: &scraper::node::Element) -> Option<u32> {
    let w: f64 = data_attr(e, "weight")?
        .trim()
        .parse()
        .ok()
        .filter(|w: &f64| w.is_finite())?;
    let floor = if w > 0.0 { 1.0 } else { 0.0 };
    Some(w.round().clamp(floor, f64::from(crate::index::Fields::MAX_WEIGHT)) as u32)
}

/// The attribute `data-sextant-{name}`, else Pagefind's `data-pagefind-{name}`.
fn data_attr<'a>(e: &'a scraper::node::Element, name: &str) -> Option<&'a str> {
    e.attr(&format!("data-sextant-{name}"))
        .or_else(|| e.attr(&format!("data-pagefind-{name}")))
}

fn skipped(element: ElementRef) -> bool {
    let e = element.value();
    if SKIPPED.contains(&e.name()) || data_attr(e, "ignore").is_some() || e.attr("hidden").is_some() {
        return true;
    }
    e.name() == "a"
        && e.classes()
            .any(|c| matches!(c, "headerlink" | "hash-link" | "anchor-link"))
}

/// The `id` of the parent when the heading is its first element (`<section id=x><h2>`).
fn parent_anchor(heading: ElementRef) -> Option<String> {
    let parent = heading.parent().and_then(ElementRef::wrap)?;
    let first = parent.children().find_map(ElementRef::wrap)?;
    if first.id() != heading.id() {
        return None;
    }
    parent.value().attr("id").map(String::from)
}

/// The text under `node` (skipped elements left out), without recursion.
fn collect_text(node: NodeRef<Node>, out: &mut String) {
    let mut stack: Vec<NodeRef<Node>> = node.children().rev().collect();
    while let Some(child) = stack.pop() {
        match child.value() {
            Node::Text(t) => out.push_str(t),
            Node::Element(_) => {
                if ElementRef::wrap(child).is_some_and(skipped) {
                    continue;
                }
                stack.extend(child.children().rev());
            }
            _ => {}
        }
    }
}

fn select_first<'a>(html: &'a Html, selector: &str) -> Option<ElementRef<'a>> {
    let selector = Selector::parse(selector).ok()?;
    html.select(&selector).next()
}

/// Why a page of a built site is not indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteSkip {
    /// Elements are nested deeper than `input.max_nesting_depth`.
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// `<html>` or `<body>` carries `data-sextant-ignore`.
    Ignored,
    /// A `<meta http-equiv="refresh">` redirect page.
    Redirect,
    /// `<meta name="robots" content="noindex">`.
    NoIndex,
    /// The main content has no text.
    Empty,
}

impl SiteSkip {
    /// The reason as shown in the build summary.
    pub fn reason(self) -> String {
        match self {
            SiteSkip::TooDeep { limit } => {
                format!("elements nested more than {limit} levels deep; raise input.max_nesting_depth to index it")
            }
            SiteSkip::Ignored => "marked data-sextant-ignore".into(),
            SiteSkip::Redirect => "redirect page (meta refresh)".into(),
            SiteSkip::NoIndex => "robots noindex".into(),
            SiteSkip::Empty => "no text in the main content".into(),
        }
    }
}

/// Loads a page of a built site: the URL comes from its path ([`site_url`]), and pages that
/// should not be searched are reported with the reason.
pub fn load_site_page(path: &str, text: &str, input: &InputConfig) -> Result<Document, SiteSkip> {
    let html = parse_bounded(text, input.max_nesting_depth).map_err(|_| SiteSkip::TooDeep {
        limit: input.max_nesting_depth,
    })?;
    if select_first(
        &html,
        "html[data-sextant-ignore], body[data-sextant-ignore], html[data-pagefind-ignore], body[data-pagefind-ignore]",
    )
    .is_some()
    {
        return Err(SiteSkip::Ignored);
    }
    if let Ok(meta) = Selector::parse("meta") {
        for m in html.select(&meta) {
            let attr = |name: &str| m.value().attr(name).unwrap_or("").to_ascii_lowercase();
            if attr("http-equiv") == "refresh" {
                return Err(SiteSkip::Redirect);
            }
            if attr("name") == "robots" && attr("content").contains("noindex") {
                return Err(SiteSkip::NoIndex);
            }
        }
    }
    let mut doc = document_from(path, &html, input.max_nesting_depth).map_err(|_| SiteSkip::TooDeep {
        limit: input.max_nesting_depth,
    })?;
    if doc.sections.iter().all(|s| s.text.trim().is_empty()) {
        return Err(SiteSkip::Empty);
    }
    doc.url = Some(site_url(path));
    Ok(doc)
}

/// Loads an HTML page. `url` is left empty; `sextant build --site` sets it from [`site_url`].
pub fn load_html(path: &str, text: &str, input: &InputConfig) -> Result<Document, LoadError> {
    let too_deep = |depth| LoadError::TooDeep {
        path: path.to_string(),
        depth,
        limit: input.max_nesting_depth,
    };
    let html = parse_bounded(text, input.max_nesting_depth).map_err(too_deep)?;
    document_from(path, &html, input.max_nesting_depth).map_err(too_deep)
}

/// The document of a parsed page, or the nesting depth that went over `max_depth`.
fn document_from(path: &str, html: &Html, max_depth: usize) -> Result<Document, usize> {
    let root = [
        "[data-sextant-body]",
        "[data-pagefind-body]",
        "main",
        "[role=main]",
        "article",
        "body",
    ]
    .iter()
    .find_map(|s| select_first(html, s))
    .unwrap_or_else(|| html.root_element());
    let mut walker = Walker {
        sections: Vec::new(),
        current: Section::default(),
        block: String::new(),
        stack: Vec::new(),
        first_h1: None,
        in_pre: 0,
        weights: Vec::new(),
        weighted_from: 0,
    };
    // Depth counts from the document, so the main content's own ancestors count too.
    let root_depth = root.ancestors().count();
    walker
        .walk(*root, max_depth.saturating_sub(root_depth))
        .map_err(|depth| depth + root_depth)?;
    walker.flush_block();
    if !walker.current.text.is_empty() {
        walker.sections.push(walker.current);
    }
    let title = select_first(html, "title")
        .map(|t| {
            t.text()
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|t| !t.is_empty())
        .or(walker.first_h1)
        .unwrap_or_else(|| file_stem(path).to_string());
    let mut document = Document {
        id: path.to_string(),
        source: path.to_string(),
        url: None,
        title,
        sections: walker.sections,
        ..Default::default()
    };
    read_facets(html, &mut document);
    document.language = select_first(html, "html")
        .and_then(|e| e.value().attr("lang"))
        .map(|lang| lang.trim().to_string())
        .filter(|lang| {
            !lang.is_empty()
                && lang.len() <= 35
                && lang.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    Ok(document)
}

/// The page's filter values, sort values and metadata from `data-sextant-filter`, `-sort` and
/// `-meta` (or Pagefind's names) anywhere on it; metadata `title` replaces the page's title.
/// `-default-meta` gives metadata that no `-meta` of the page gives (not a title: every page has
/// one, from its `<title>`, its first `<h1>` or its file name).
fn read_facets(html: &Html, document: &mut Document) {
    let Ok(selector) = Selector::parse(
        "[data-sextant-filter], [data-sextant-sort], [data-sextant-meta], [data-sextant-default-meta], \
         [data-pagefind-filter], [data-pagefind-sort], [data-pagefind-meta], [data-pagefind-default-meta]",
    ) else {
        return;
    };
    let mut defaults: Vec<(String, String)> = Vec::new();
    for element in html.select(&selector) {
        let e = element.value();
        for kind in ["filter", "sort", "meta", "default-meta"] {
            let Some(attribute) = data_attr(e, kind) else {
                continue;
            };
            for part in parse_attribute(attribute) {
                let (name, value) = match part {
                    AttributePart::Value(name, value) => (name, value),
                    AttributePart::Text(name) => {
                        let mut text = String::new();
                        collect_text(*element, &mut text);
                        (name, text.split_whitespace().collect::<Vec<_>>().join(" "))
                    }
                    AttributePart::Attribute(name, attr) => match e.attr(&attr) {
                        Some(value) => (name, value.to_string()),
                        None => continue,
                    },
                };
                match kind {
                    "filter" => add_filter_value(document, &name, &value),
                    "sort" => add_sort_value(document, &name, &value),
                    // Never a title; empty values and those over the limit are dropped.
                    "default-meta" => defaults.extend(
                        (name != "title" && !value.trim().is_empty() && defaults.len() < MAX_DEFAULT_META)
                            .then(|| (name, value.trim().to_string())),
                    ),
                    _ if name == "title" && !value.trim().is_empty() => document.title = value.trim().to_string(),
                    _ if !value.trim().is_empty() => {
                        document
                            .metadata
                            .entry(name)
                            .or_insert_with(|| value.trim().to_string());
                    }
                    _ => {}
                }
            }
        }
    }
    for (name, value) in defaults {
        document.metadata.entry(name).or_insert(value);
    }
}

/// Most `data-sextant-default-meta` values a page's metadata takes (a page has a handful).
const MAX_DEFAULT_META: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_of_site_pages() {
        assert_eq!(site_url("index.html"), "/");
        assert_eq!(site_url("cli/index.html"), "/cli/");
        assert_eq!(site_url("a/b.html"), "/a/b.html");
        assert_eq!(site_url("sp ace#1.html"), "/sp%20ace%231.html");
        assert_eq!(site_url("pct%41%2F.html"), "/pct%2541%252F.html");
        assert_eq!(site_url("dir\r\n/index.html"), "/dir%0D%0A/");
    }

    #[test]
    fn main_content_headings_and_dropped_chrome() {
        let page = r##"<!doctype html><html><head><title> CLI  reference </title><style>p{}</style></head>
<body><nav>Home Docs</nav><header>Site header</header>
<main>
  <h1 id="cli">CLI <a class="headerlink" href="#cli">¶</a></h1>
  <p>Intro   text
  over lines.</p>
  <section id="build"><h2>build</h2><p>Builds a <code>bundle</code>.</p>
    <pre>sextant build docs
  -o out.sxt</pre>
    <div data-sextant-ignore><p>Ignored ad</p></div>
    <script>alert(1)</script>
    <ul><li>one</li><li>two</li></ul>
    <table><tr><th>flag</th><th>meaning</th></tr><tr><td>-o</td><td>output</td></tr></table>
  </section>
</main><footer>Footer text</footer></body></html>"##;
        let doc = load_html("cli/index.html", page, &InputConfig::default()).unwrap();
        assert_eq!(doc.title, "CLI reference");
        assert_eq!(doc.sections.len(), 2);
        assert_eq!(doc.sections[0].heading_path, vec!["CLI"]);
        assert_eq!(doc.sections[0].anchor.as_deref(), Some("cli"));
        assert_eq!(doc.sections[0].text, "CLI\n\nIntro text over lines.");
        let s = &doc.sections[1];
        assert_eq!(s.heading_path, vec!["CLI", "build"]);
        assert_eq!(s.anchor.as_deref(), Some("build"));
        assert_eq!(
            s.text,
            "build\n\nBuilds a bundle.\n\nsextant build docs\n  -o out.sxt\n\none\n\ntwo\n\nflag | meaning\n\n-o | output"
        );
        // The pre block is known as code (inline <code> is prose); the first section has none.
        assert_eq!(s.code, ["sextant build docs\n  -o out.sxt"]);
        assert!(doc.sections[0].code.is_empty());
        let all: String = doc.sections.iter().map(|s| s.text.as_str()).collect();
        for gone in ["Home Docs", "Site header", "Footer text", "Ignored ad", "alert", "¶"] {
            assert!(!all.contains(gone), "{gone} leaked into {all:?}");
        }
    }

    #[test]
    fn site_pages_get_urls_and_skips_say_why() {
        let doc = load_site_page(
            "guide/index.html",
            "<main><h2 id=\"a\">A</h2><p>text</p></main>",
            &InputConfig::default(),
        )
        .unwrap();
        assert_eq!(doc.url.as_deref(), Some("/guide/"));
        let skip = |html: &str| load_site_page("x.html", html, &InputConfig::default()).unwrap_err();
        assert_eq!(
            skip("<body data-sextant-ignore><p>hidden</p></body>"),
            SiteSkip::Ignored
        );
        assert_eq!(
            skip("<head><meta http-equiv=\"Refresh\" content=\"0; url=/b/\"></head><body>Moved</body>"),
            SiteSkip::Redirect
        );
        assert_eq!(
            skip("<head><meta name=\"robots\" content=\"noindex, nofollow\"></head><body><p>x</p></body>"),
            SiteSkip::NoIndex
        );
        assert_eq!(skip("<body><nav>only navigation</nav></body>"), SiteSkip::Empty);
    }

    #[test]
    fn filters_sort_and_meta_come_from_sextant_and_pagefind_attributes() {
        let page = r#"<html><head>
            <meta data-pagefind-filter="version[content]" content="3.11">
            <meta data-sextant-sort="date[content]" content="2024-05-01">
            </head><body>
            <nav data-sextant-filter="section:Reference">menu</nav>
            <div data-pagefind-body>
              <h1>Pathlib</h1>
              <span data-pagefind-filter="tag">  file   system </span>
              <span data-sextant-filter="tag:paths, level:intro\, basics"></span>
              <p data-sextant-meta="author:Ada, title:Paths made easy" data-pagefind-sort="weight:2">Text.</p>
              <img data-pagefind-meta="image[src]" src="/p.png">
              <div data-pagefind-ignore><p>skipped words</p></div>
            </div></body></html>"#;
        let doc = load_site_page("lib/pathlib.html", page, &InputConfig::default()).unwrap();
        let values = |name: &str| doc.filters.get(name).cloned().unwrap_or_default();
        assert_eq!(values("tag"), ["file system", "paths"], "text collapsed, sorted");
        assert_eq!(values("version"), ["3.11"], "an attribute, outside the body");
        assert_eq!(values("section"), ["Reference"], "in chrome that is not indexed");
        assert_eq!(values("level"), ["intro, basics"], "an escaped comma");
        assert_eq!(doc.sort.get("date").map(String::as_str), Some("2024-05-01"));
        assert_eq!(doc.sort.get("weight").map(String::as_str), Some("2"));
        assert_eq!(doc.metadata.get("author").map(String::as_str), Some("Ada"));
        assert_eq!(doc.metadata.get("image").map(String::as_str), Some("/p.png"));
        assert_eq!(doc.title, "Paths made easy", "meta title names the result");
        let text: String = doc.sections.iter().map(|s| s.text.as_str()).collect();
        assert!(!text.contains("skipped") && !text.contains("menu"), "{text}");
        assert!(text.contains("Text."), "data-pagefind-body is the main content");
        let ignored = "<html><body data-pagefind-ignore><main><p>x</p></main></body></html>";
        assert_eq!(
            load_site_page("i.html", ignored, &InputConfig::default()),
            Err(SiteSkip::Ignored)
        );
    }

    #[test]
    fn pagefind_index_attrs_and_default_meta() {
        let page = r#"<html><head>
            <meta data-pagefind-default-meta="image[content]" content="/default.png">
            <meta data-sextant-default-meta="author[content], title:Not taken" content="Nobody">
            </head><body><main><h1>Gallery</h1>
            <p>Before <img data-pagefind-index-attrs="alt, title, missing" alt="a red lighthouse" title="Coast" src="/l.png"> after.</p>
            <img data-sextant-index-attrs="alt" alt="   ">
            <meta data-pagefind-meta="author:Ada"></main></body></html>"#;
        let doc = load_site_page("g.html", page, &InputConfig::default()).unwrap();
        assert_eq!(doc.sections[0].text, "Gallery\n\nBefore a red lighthouse Coast after.");
        assert_eq!(
            doc.metadata.get("image").map(String::as_str),
            Some("/default.png"),
            "no meta image: the default"
        );
        assert_eq!(
            doc.metadata.get("author").map(String::as_str),
            Some("Ada"),
            "a meta wins over its default"
        );
        assert_eq!(doc.title, "Gallery", "a default title is not taken");
    }

    #[test]
    fn elements_with_a_weight_are_recorded_with_it() {
        let page = r#"<main><h1>Lamp</h1>
            <p data-sextant-weight="3">Key facts about the lamp.</p>
            <p>Plain <span data-pagefind-weight="0.2">quiet words</span> here.</p>
            <p>And <span data-sextant-weight="0">unsearched words</span>, <span data-sextant-weight="-2">these too</span>.</p>
            <div data-sextant-weight="12"><p>Loud one.</p><p data-sextant-weight="1">Normal inside.</p><p>Loud two.</p></div>
            <p data-sextant-weight="often">Not a number.</p><p data-pagefind-weight="2.5">Rounded up.</p></main>"#;
        let doc = load_html("w.html", page, &InputConfig::default()).unwrap();
        let weighted = &doc.sections[0].weighted;
        assert_eq!(
            weighted,
            &[
                ("Key facts about the lamp.".to_string(), 3),
                ("unsearched words".to_string(), 0),
                ("these too".to_string(), 0),
                ("Loud one.".to_string(), 10),
                ("Loud two.".to_string(), 10),
                ("Rounded up.".to_string(), 3),
            ],
            "rounded, capped at 10, a fraction over 0 at least 1 (\"quiet words\" count once, as \
             plain text); weight 1 and non-numbers are plain text"
        );
        let text = &doc.sections[0].text;
        for (element, _) in weighted {
            assert!(text.contains(element.as_str()), "{element:?} is in the section's text");
        }
    }

    #[test]
    fn a_pages_filter_values_are_bounded() {
        let spans: String = (0..400)
            .map(|i| format!("<span data-sextant-filter=\"n:{i}\"></span>"))
            .collect();
        let long = "x".repeat(1000);
        let page = format!("<main><p>t</p>{spans}<b data-sextant-filter=\"long:{long}\"></b></main>");
        let doc = load_html("b.html", &page, &InputConfig::default()).unwrap();
        let total: usize = doc.filters.values().map(Vec::len).sum();
        assert_eq!(total, crate::loader::MAX_PAGE_FILTER_VALUES);
        assert!(!doc.filters.contains_key("long"), "past the page's limit");
        let one = format!("<main><p>t</p><b data-sextant-filter=\"long:{long}é\"></b></main>");
        let doc = load_html("c.html", &one, &InputConfig::default()).unwrap();
        assert_eq!(doc.filters["long"][0].len(), crate::filters::MAX_FACET_BYTES);
    }

    #[test]
    fn data_sextant_body_wins_and_body_is_the_fallback() {
        let page = "<body><main><p>main text</p></main><div data-sextant-body><p>chosen</p></div></body>";
        assert_eq!(
            load_html("x.html", page, &InputConfig::default()).unwrap().sections[0].text,
            "chosen"
        );
        let plain = load_html("dir/page.html", "<p>just a paragraph</p>", &InputConfig::default()).unwrap();
        assert_eq!(plain.sections[0].text, "just a paragraph");
        assert_eq!(plain.title, "page");
    }

    #[test]
    fn deep_nesting_is_an_error_naming_the_file_not_a_crash() {
        // 40,000 nested elements once overflowed the stack of a recursive walk.
        let deep = format!("<body>{}text{}</body>", "<div>".repeat(40_000), "</div>".repeat(40_000));
        let input = InputConfig::default();
        let err = load_html("deep.html", &deep, &input).unwrap_err();
        assert!(matches!(err, LoadError::TooDeep { limit: 512, .. }), "{err:?}");
        let message = err.to_string();
        assert!(
            message.contains("deep.html") && message.contains("input.max_nesting_depth"),
            "{message}"
        );
        assert_eq!(
            load_site_page("deep.html", &deep, &input).unwrap_err(),
            SiteSkip::TooDeep { limit: 512 }
        );
        // Under the limit, the text is found however deep it is (the walk has no recursion).
        let roomy = InputConfig {
            max_nesting_depth: 100_000,
            ..InputConfig::default()
        };
        let deep = format!("<body>{}text{}</body>", "<div>".repeat(15_000), "</div>".repeat(15_000));
        assert_eq!(load_html("deep.html", &deep, &roomy).unwrap().sections[0].text, "text");
        let shallow = format!("<body>{}text{}</body>", "<div>".repeat(500), "</div>".repeat(500));
        assert_eq!(load_html("ok.html", &shallow, &input).unwrap().sections[0].text, "text");
    }

    #[test]
    fn only_elements_that_nest_count_for_depth() {
        // Unclosed paragraphs and list items, void elements, self-closing SVG, markup inside
        // scripts and comments: none of them nest, however many there are.
        let flat = format!(
            "<!doctype html><body>{}{}{}<script>{}</script><!-- {} --></body>",
            "<p>para".repeat(2000),
            "<li>item<br><img src=x>".repeat(2000),
            "<svg><path d='M0'/><circle r='1'/></svg>".repeat(2000),
            "if (a<b) { x = '<div>'; }".repeat(2000),
            "<div>".repeat(2000)
        );
        assert!(load_html("flat.html", &flat, &InputConfig::default()).is_ok());
        let too_deep = |page: &str| {
            matches!(
                load_html("x.html", page, &InputConfig::default()),
                Err(LoadError::TooDeep { .. })
            )
        };
        assert!(too_deep(&format!("<div>{}", "<section><span>".repeat(300))));
        // In HTML the slash of `<span/>` is ignored: they nest, as a browser nests them.
        assert!(too_deep(&"<span/>".repeat(600)));
        // End tags of nothing open, and end tags that cannot close past a div, hide nothing:
        // measured on 200,000 repeats, where the parse used to take minutes.
        for unit in ["<div></x>", "<span><div></span>", "<a><div></a>", "<div><b></div>t"] {
            assert!(too_deep(&unit.repeat(200_000)), "{unit}");
        }
        assert!(too_deep(&format!("<!-->{}", "<div></x>".repeat(200_000))));
        let closed = "<div><span>x</span></div>".repeat(10_000);
        assert!(load_html("closed.html", &closed, &InputConfig::default()).is_ok());
    }
}
