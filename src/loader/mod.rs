//! Document loaders: Markdown/MDX, HTML, plain text and BEIR-style JSONL, from bytes.
//!
//! The CLI walks directories and reads files; these functions only see a file's path (relative
//! to its input root, with `/` separators) and its bytes, so they are pure and tested natively.

mod front_matter;
mod html;
mod html_parse;
mod jsonl;
mod markdown;

pub use html::{load_html, load_site_page, site_url, SiteSkip};
pub use jsonl::load_jsonl;
pub use markdown::{load_markdown, slugify};

use crate::chunk::{Document, Section};
use crate::config::InputConfig;

/// The kinds of file sextant reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `.md`, `.markdown`, `.mdx`.
    Markdown,
    /// `.html`, `.htm`.
    Html,
    /// `.txt`, `.text`.
    Text,
    /// `.jsonl` (BEIR corpus: one `{"_id", "title", "text"}` a line).
    Jsonl,
}

impl FileKind {
    /// The kind for a path's extension, or `None` for a file sextant does not read.
    pub fn from_path(path: &str) -> Option<Self> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "md" | "markdown" | "mdx" => Some(Self::Markdown),
            "html" | "htm" => Some(Self::Html),
            "txt" | "text" => Some(Self::Text),
            "jsonl" => Some(Self::Jsonl),
            _ => None,
        }
    }
}

/// Why a file could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The extension is not one sextant reads.
    #[error("{path}: unsupported file type; sextant reads .md, .mdx, .markdown, .html, .htm, .txt and .jsonl")]
    UnsupportedType {
        /// The file.
        path: String,
    },
    /// The bytes are not UTF-8.
    #[error("{path}: not valid UTF-8 (first bad byte at offset {offset}); convert the file to UTF-8")]
    InvalidUtf8 {
        /// The file.
        path: String,
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// A JSONL line is not a valid record.
    #[error("{path}:{line}: {reason}")]
    BadJsonl {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong and what is expected.
        reason: String,
    },
    /// The file is larger than `input.max_file_bytes`.
    #[error("{path}: the file is {bytes} bytes, over the limit of {limit} (input.max_file_bytes); raise the limit in sextant.toml [input] or leave the file out")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// What a document expands to (a DOCX's HTML, a PDF's text) is larger than
    /// `input.max_file_bytes`.
    #[error("{path}: the document expands to {bytes} bytes of text, over the limit of {limit} (input.max_file_bytes); split it, raise the limit, or leave it out")]
    ExpandsTooLarge {
        /// The file.
        path: String,
        /// Bytes it expands to.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// Elements are nested deeper than `input.max_nesting_depth`.
    #[error("{path}: elements are nested {depth} levels deep, over the limit of {limit} (input.max_nesting_depth); raise the limit in sextant.toml [input] or leave the file out")]
    TooDeep {
        /// The file.
        path: String,
        /// The depth reached.
        depth: usize,
        /// The limit.
        limit: usize,
    },
    /// Front matter flattens (YAML aliases followed, every value with its key path) to more than
    /// `input.max_front_matter_values` values or `input.max_front_matter_bytes` bytes.
    #[error("{path}: the front matter flattens to more than {limit} values or input.max_front_matter_bytes bytes ({values} values, {bytes} bytes when it was stopped; YAML aliases count as all they repeat, every value with its key path); simplify the front matter, raise input.max_front_matter_values or input.max_front_matter_bytes in sextant.toml [input], or leave the file out")]
    FrontMatterTooLarge {
        /// The file.
        path: String,
        /// Values it expands to (saturating).
        values: u64,
        /// Bytes of scalar text it expands to (saturating).
        bytes: u64,
        /// The limit.
        limit: usize,
    },
    /// Front matter could not be parsed.
    #[error("{path}: front matter is not valid {format}: {reason}")]
    BadFrontMatter {
        /// The file.
        path: String,
        /// YAML or TOML.
        format: &'static str,
        /// The parser's message.
        reason: String,
    },
}

/// Loads one file, choosing the loader by extension. `path` is relative to its input root, with
/// `/` separators; it becomes the document id (JSONL: each line's `_id`). `input` holds the
/// limits (file size, nesting depth).
pub fn load_file(path: &str, bytes: &[u8], input: &InputConfig) -> Result<Vec<Document>, LoadError> {
    let kind = FileKind::from_path(path).ok_or_else(|| LoadError::UnsupportedType { path: path.to_string() })?;
    let size = bytes.len() as u64;
    if size > input.max_file_bytes {
        return Err(LoadError::TooLarge {
            path: path.to_string(),
            bytes: size,
            limit: input.max_file_bytes,
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| LoadError::InvalidUtf8 {
        path: path.to_string(),
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    Ok(match kind {
        FileKind::Markdown => vec![load_markdown(path, text, input)?],
        FileKind::Html => vec![load_html(path, text, input)?],
        FileKind::Text => vec![load_text(path, text)],
        FileKind::Jsonl => load_jsonl(path, text)?,
    })
}

/// A plain-text file: one section, titled by the file name.
pub fn load_text(path: &str, text: &str) -> Document {
    Document {
        id: path.to_string(),
        source: path.to_string(),
        url: None,
        title: file_stem(path).to_string(),
        sections: vec![Section {
            heading_path: Vec::new(),
            anchor: None,
            text: text.replace("\r\n", "\n").trim().to_string(),
            code: Vec::new(),
            weighted: Vec::new(),
        }],
        ..Default::default()
    }
}

/// Most values of one filter, and most filter values over all filters, a page keeps (the rest
/// are left out): a page is found by a handful.
pub const MAX_PAGE_FILTER_VALUES: usize = 256;

/// Adds a filter value to a page: trimmed, at most [`crate::filters::MAX_FACET_BYTES`] bytes
/// (cut at a character), each once, sorted; empty values and values past
/// [`MAX_PAGE_FILTER_VALUES`] left out.
pub fn add_filter_value(document: &mut Document, name: &str, value: &str) {
    let value = clip(value.trim());
    let name = clip(name.trim());
    let total: usize = document.filters.values().map(Vec::len).sum();
    if value.is_empty() || name.is_empty() || total >= MAX_PAGE_FILTER_VALUES {
        return;
    }
    let values = document.filters.entry(name.to_string()).or_default();
    if let Err(at) = values.binary_search_by(|v| v.as_str().cmp(value)) {
        values.insert(at, value.to_string());
    }
}

/// Sets a page's sort value for `key` (the first one given wins), clipped as filter values are.
pub fn add_sort_value(document: &mut Document, key: &str, value: &str) {
    let (key, value) = (clip(key.trim()), clip(value.trim()));
    if !key.is_empty() && !value.is_empty() {
        document
            .sort
            .entry(key.to_string())
            .or_insert_with(|| value.to_string());
    }
}

/// At most [`crate::filters::MAX_FACET_BYTES`] bytes of `s`, cut at a character.
fn clip(s: &str) -> &str {
    let mut end = s.len().min(crate::filters::MAX_FACET_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The filters and sort values of a page whose metadata (its front matter) has the
/// fields `input.filters` and `input.sort` name; a list's items (flattened as `a, b`) are
/// values of their own.
pub fn facets_from_metadata(document: &mut Document, input: &InputConfig) {
    for name in &input.filters {
        if let Some(values) = document.metadata.get(name).cloned() {
            for value in values.split(", ") {
                add_filter_value(document, name, value);
            }
        }
    }
    for key in &input.sort {
        if let Some(value) = document.metadata.get(key).cloned() {
            add_sort_value(document, key, &value);
        }
    }
}

/// `docs/guide/intro.md` → `intro`.
pub(crate) fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// Adds `text` to the section being built, separating blocks with a blank line.
pub(crate) fn push_block(section: &mut String, text: &str) {
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    if !section.is_empty() {
        section.push_str("\n\n");
    }
    section.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_extension() {
        assert_eq!(FileKind::from_path("a/b.MDX"), Some(FileKind::Markdown));
        assert_eq!(FileKind::from_path("x.htm"), Some(FileKind::Html));
        assert_eq!(FileKind::from_path("corpus.jsonl"), Some(FileKind::Jsonl));
        assert_eq!(FileKind::from_path("image.png"), None);
        assert_eq!(FileKind::from_path("Makefile"), None);
    }

    #[test]
    fn errors_name_the_file() {
        assert_eq!(
            load_file("a.png", b"x", &InputConfig::default()).unwrap_err(),
            LoadError::UnsupportedType { path: "a.png".into() }
        );
        let err = load_file("bad.txt", b"ok \xff\xfe", &InputConfig::default()).unwrap_err();
        assert_eq!(
            err,
            LoadError::InvalidUtf8 {
                path: "bad.txt".into(),
                offset: 3
            }
        );
        assert!(err.to_string().contains("convert the file to UTF-8"));
    }

    #[test]
    fn text_files_are_one_section() {
        let docs = load_file(
            "notes/today.txt",
            b"\xef\xbb\xbfHello\r\nworld\n",
            &InputConfig::default(),
        )
        .unwrap();
        assert_eq!(docs[0].id, "notes/today.txt");
        assert_eq!(docs[0].title, "today");
        assert_eq!(docs[0].sections[0].text, "Hello\nworld");
    }

    #[test]
    fn files_over_the_size_limit_are_refused_with_the_knob_named() {
        let small = InputConfig {
            max_file_bytes: 4,
            ..InputConfig::default()
        };
        let err = load_file("big.md", b"# Hello", &small).unwrap_err();
        assert_eq!(
            err,
            LoadError::TooLarge {
                path: "big.md".into(),
                bytes: 7,
                limit: 4
            }
        );
        assert!(err.to_string().contains("input.max_file_bytes"));
        assert!(load_file("ok.md", b"# Hi", &small).is_ok());
    }
}
