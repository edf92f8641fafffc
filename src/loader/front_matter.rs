//! Front matter (YAML between `---` lines, TOML between `+++` lines) flattened into metadata:
//! nested keys joined with `.` (`owner.name`), a list's scalars joined with `, `, scalars as text
//! (YAML's plain `true`, `12`, `0x10` as the YAML core schema reads them).
//!
//! What it may cost is bounded by what it produces: a YAML alias repeats all its anchor holds,
//! and every value carries its whole key path, so a few hundred bytes could ask for gigabytes.
//! The YAML is read as the parser's events, not built as a tree first, and flattened as it is
//! read, each value and each byte of the output counted against `input.max_front_matter_values`
//! and `input.max_front_matter_bytes`; an alias replays its anchor's flattened entries, counted
//! again. Only the first YAML document is read.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use pulldown_cmark::MetadataBlockKind;
use yaml_rust2::parser::{MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::{Event, Yaml};

use super::LoadError;
use crate::config::InputConfig;

/// What the flattened output may take; reaching either is an error.
struct Budget {
    values: usize,
    bytes: usize,
    max_values: usize,
    max_bytes: usize,
    over: bool,
}

impl Budget {
    /// Counts one value of the output; false once over.
    fn spend(&mut self, key: &str, value: &str) -> bool {
        self.values = self.values.saturating_add(1);
        self.bytes = self.bytes.saturating_add(key.len() + value.len());
        self.over |= self.values > self.max_values || self.bytes > self.max_bytes;
        !self.over
    }

    fn error(&self, path: &str) -> LoadError {
        LoadError::FrontMatterTooLarge {
            path: path.to_string(),
            values: self.values as u64,
            bytes: self.bytes as u64,
            limit: self.max_values,
        }
    }
}

/// A YAML node flattened.
#[derive(Debug, Clone)]
enum Flat {
    /// A scalar's text (`None`: null, or a value metadata does not keep).
    Scalar(Option<String>),
    /// A sequence: its scalars joined with `, ` (`None` when it holds none).
    Seq(Option<String>),
    /// A mapping: (key path relative to it, value), in order.
    Map(Vec<(String, String)>),
}

/// A collection being read.
enum Frame {
    Seq {
        anchor: usize,
        items: Vec<String>,
    },
    Map {
        anchor: usize,
        entries: Vec<(String, String)>,
        /// The key read, waiting for its value (`Some(None)`: a key that is not a scalar).
        key: Option<Option<String>>,
    },
}

/// Builds the flattened first document from the parser's events, within the budget.
struct Flattener {
    budget: Budget,
    stack: Vec<Frame>,
    /// What each anchor names, shared by its aliases (an alias costs nothing until it is used).
    anchors: HashMap<usize, Rc<Flat>>,
    root: Option<Rc<Flat>>,
    done: bool,
}

/// A scalar as the YAML core schema reads it, then as metadata text: quoted text as it is, plain
/// `true`/`false`, integers (`0x10` is 16) and floats as their text, null as nothing.
fn scalar_text(value: String, style: TScalarStyle) -> Option<String> {
    if style != TScalarStyle::Plain {
        return Some(value);
    }
    match Yaml::from_str(&value) {
        Yaml::Real(s) | Yaml::String(s) => Some(s),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

impl Flattener {
    /// A finished node goes where it belongs: the document, a sequence's items, a mapping's key
    /// or value; what an anchor names is kept for its aliases.
    fn deliver(&mut self, anchor: usize, node: Rc<Flat>) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let Some(frame) = self.stack.last_mut() else {
            self.root = Some(node);
            return;
        };
        match frame {
            Frame::Seq { items, .. } => {
                if let Flat::Scalar(Some(s)) = node.as_ref() {
                    if self.budget.spend("", s) {
                        items.push(s.clone());
                    }
                }
            }
            Frame::Map { entries, key, .. } => match key.take() {
                None => {
                    *key = Some(match node.as_ref() {
                        Flat::Scalar(s) if self.budget.spend("", s.as_deref().unwrap_or("")) => s.clone(),
                        _ => None,
                    });
                }
                Some(None) => {}
                Some(Some(k)) => match node.as_ref() {
                    Flat::Scalar(Some(s)) | Flat::Seq(Some(s)) => {
                        if self.budget.spend(&k, s) {
                            entries.push((k, s.clone()));
                        }
                    }
                    Flat::Map(sub) => {
                        for (rk, v) in sub {
                            let path = format!("{k}.{rk}");
                            if !self.budget.spend(&path, v) {
                                break;
                            }
                            entries.push((path, v.clone()));
                        }
                    }
                    Flat::Scalar(None) | Flat::Seq(None) => {}
                },
            },
        }
    }
}

impl MarkedEventReceiver for Flattener {
    fn on_event(&mut self, event: Event, _: Marker) {
        if self.done || self.budget.over {
            return;
        }
        match event {
            Event::SequenceStart(anchor, _) => self.stack.push(Frame::Seq {
                anchor,
                items: Vec::new(),
            }),
            Event::MappingStart(anchor, _) => self.stack.push(Frame::Map {
                anchor,
                entries: Vec::new(),
                key: None,
            }),
            Event::SequenceEnd => {
                if let Some(Frame::Seq { anchor, items }) = self.stack.pop() {
                    let joined = (!items.is_empty()).then(|| items.join(", "));
                    self.deliver(anchor, Rc::new(Flat::Seq(joined)));
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Map { anchor, entries, .. }) = self.stack.pop() {
                    self.deliver(anchor, Rc::new(Flat::Map(entries)));
                }
            }
            Event::Scalar(value, style, anchor, _) => {
                self.deliver(anchor, Rc::new(Flat::Scalar(scalar_text(value, style))));
            }
            Event::Alias(anchor) => {
                let node = self
                    .anchors
                    .get(&anchor)
                    .cloned()
                    .unwrap_or_else(|| Rc::new(Flat::Scalar(None)));
                self.deliver(0, node);
            }
            Event::DocumentEnd => self.done = true,
            _ => {}
        }
    }
}

fn flatten_toml(prefix: &str, value: &toml::Value, out: &mut BTreeMap<String, String>, budget: &mut Budget) {
    use toml::Value;
    let mut put = |key: &str, text: String| {
        if budget.spend(key, &text) {
            out.insert(key.to_string(), text);
        }
    };
    match value {
        Value::Table(map) => {
            for (k, v) in map {
                if budget.over {
                    return;
                }
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_toml(&key, v, out, budget);
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
                put(prefix, joined.join(", "));
            }
        }
        Value::String(s) => put(prefix, s.clone()),
        other => put(prefix, other.to_string()),
    }
}

/// The metadata of a front matter block, within `input`'s limits.
pub(super) fn parse(
    path: &str,
    kind: MetadataBlockKind,
    text: &str,
    input: &InputConfig,
) -> Result<BTreeMap<String, String>, LoadError> {
    let mut budget = Budget {
        values: 0,
        bytes: 0,
        max_values: input.max_front_matter_values,
        max_bytes: input.max_front_matter_bytes,
        over: false,
    };
    let bad = |format: &'static str, reason: String| LoadError::BadFrontMatter {
        path: path.to_string(),
        format,
        reason,
    };
    let mut out = BTreeMap::new();
    match kind {
        MetadataBlockKind::YamlStyle => {
            let mut flat = Flattener {
                budget,
                stack: Vec::new(),
                anchors: HashMap::new(),
                root: None,
                done: false,
            };
            Parser::new_from_str(text)
                .load(&mut flat, false)
                .map_err(|e| bad("YAML", e.to_string()))?;
            if flat.budget.over {
                return Err(flat.budget.error(path));
            }
            match flat.root.as_deref() {
                Some(Flat::Map(entries)) => out.extend(entries.iter().cloned()),
                Some(Flat::Scalar(Some(s)) | Flat::Seq(Some(s))) => {
                    out.insert(String::new(), s.clone());
                }
                _ => {}
            }
        }
        MetadataBlockKind::PlusesStyle => {
            let table: toml::Table = text
                .parse()
                .map_err(|e: toml::de::Error| bad("TOML", e.message().to_string()))?;
            flatten_toml("", &toml::Value::Table(table), &mut out, &mut budget);
            if budget.over {
                return Err(budget.error(path));
            }
        }
    }
    Ok(out)
}
