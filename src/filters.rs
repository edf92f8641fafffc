//! Filters and sorting in a query: which values of a filter a page must have ([`Filter`]), the
//! order a sort key puts results in ([`SortOrder`]), their limits, and how a page's values are
//! read from what a site author writes (`key`, `key:value`, `key[attribute]`, comma-separated:
//! [`parse_attribute`]).
//!
//! In JSON a filter is a value (`"tags": "python"`), a list that must all be there (`"tags":
//! ["a", "b"]`, as Pagefind reads a list), or an object of `any`, `all` and `none` lists (`not`
//! is `none`): `{"tags": {"any": ["a", "b"], "none": ["draft"]}}`. Filters of different names
//! must all hold.

use serde::{Deserialize, Serialize};

/// Most filter names one query may use.
pub const MAX_FILTERS: usize = 64;
/// Most values one query's filters may name, over all names.
pub const MAX_FILTER_VALUES: usize = 1024;
/// Longest filter name, filter value or sort key, in bytes.
pub const MAX_FACET_BYTES: usize = 256;

/// Which values of one filter a page must have: at least one of `any` (when it names any), every
/// one of `all`, and none of `none`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub struct Filter {
    /// At least one of these (when not empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub any: Vec<String>,
    /// Every one of these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub all: Vec<String>,
    /// None of these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub none: Vec<String>,
}

impl Filter {
    /// A page with these values (sorted) passes.
    pub fn passes(&self, values: &[String]) -> bool {
        let has = |v: &String| values.binary_search(v).is_ok();
        (self.any.is_empty() || self.any.iter().any(has)) && self.all.iter().all(has) && !self.none.iter().any(has)
    }

    /// Every value it names.
    pub fn values(&self) -> impl Iterator<Item = &String> {
        self.any.iter().chain(&self.all).chain(&self.none)
    }
}

const FILTER_SHAPE: &str =
    "give a value, a list of values (all of them), or an object of \"any\", \"all\" and \"none\" lists";

/// A filter value as text: a string as it is, a number or boolean as JSON writes it (a query
/// string's `year=2024` arrives as a number).
fn value_text(value: &serde_json::Value) -> Result<String, String> {
    match value {
        serde_json::Value::String(s) => Ok(s.clone()),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        other => Err(format!("{other} is not a filter value; {FILTER_SHAPE}")),
    }
}

fn value_list(value: &serde_json::Value) -> Result<Vec<String>, String> {
    match value {
        serde_json::Value::Array(items) => items.iter().map(value_text).collect(),
        one => Ok(vec![value_text(one)?]),
    }
}

impl TryFrom<serde_json::Value> for Filter {
    type Error = String;
    fn try_from(value: serde_json::Value) -> Result<Self, String> {
        let mut filter = Filter::default();
        match &value {
            serde_json::Value::Object(map) => {
                for (key, list) in map {
                    let values = value_list(list)?;
                    match key.as_str() {
                        "any" => filter.any.extend(values),
                        "all" => filter.all.extend(values),
                        "none" | "not" => filter.none.extend(values),
                        other => return Err(format!("{other:?} is not any, all, none or not; {FILTER_SHAPE}")),
                    }
                }
            }
            other => filter.all = value_list(other)?,
        }
        Ok(filter)
    }
}

/// The order a sort key puts results in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Smallest first (numbers when every value of the key is one, else text). The default.
    #[default]
    Asc,
    /// Largest first.
    Desc,
}

named_enum!(SortOrder { Asc => "asc", Desc => "desc" });

/// Checks a query's filters and sort against their limits: the number of names and values and
/// their lengths, and at most one sort key.
pub fn validate(
    filters: &std::collections::BTreeMap<String, Filter>,
    sort: &std::collections::BTreeMap<String, SortOrder>,
) -> Result<(), (&'static str, String)> {
    if filters.len() > MAX_FILTERS {
        return Err((
            "filters",
            format!("{} filter names; use at most {MAX_FILTERS}", filters.len()),
        ));
    }
    let values: usize = filters.values().map(|f| f.values().count()).sum();
    if values > MAX_FILTER_VALUES {
        return Err(("filters", format!("{values} values; use at most {MAX_FILTER_VALUES}")));
    }
    let long = filters
        .iter()
        .flat_map(|(k, f)| std::iter::once(k).chain(f.values()))
        .chain(sort.keys())
        .find(|s| s.len() > MAX_FACET_BYTES || s.is_empty());
    if let Some(s) = long {
        let what = if sort.contains_key(s) { "sort" } else { "filters" };
        return Err((
            what,
            format!("{s:?}: a name or value must be 1 to {MAX_FACET_BYTES} bytes long"),
        ));
    }
    if sort.len() > 1 {
        return Err((
            "sort",
            format!("{} sort keys; sort by one key, e.g. {{\"date\": \"desc\"}}", sort.len()),
        ));
    }
    Ok(())
}

/// One `name: value` a page's attribute gives, with where its value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributePart {
    /// `name:value`: this value.
    Value(String, String),
    /// `name`: the element's text.
    Text(String),
    /// `name[attribute]`: the element's attribute.
    Attribute(String, String),
}

/// Reads a `data-sextant-filter` / `-meta` / `-sort` attribute (and Pagefind's `data-pagefind-*`,
/// which are written the same way): comma-separated parts, each `name`, `name:value` or
/// `name[attribute]`; `\,` is a comma inside a value. Empty names are left out.
pub fn parse_attribute(text: &str) -> Vec<AttributePart> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    let mut finish = |current: &mut String| {
        let part = std::mem::take(current);
        let part = part.trim();
        if let Some((name, value)) = part.split_once(':') {
            let name = name.trim();
            if !name.is_empty() {
                parts.push(AttributePart::Value(name.to_string(), value.trim().to_string()));
            }
        } else if let Some((name, rest)) = part.split_once('[') {
            let name = name.trim();
            if let (false, Some(attribute)) = (name.is_empty(), rest.strip_suffix(']')) {
                parts.push(AttributePart::Attribute(name.to_string(), attribute.trim().to_string()));
            }
        } else if !part.is_empty() {
            parts.push(AttributePart::Text(part.to_string()));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&',') => {
                current.push(',');
                chars.next();
            }
            ',' => finish(&mut current),
            c => current.push(c),
        }
    }
    finish(&mut current);
    parts
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn filter(json: &str) -> Result<Filter, String> {
        serde_json::from_str::<Filter>(json).map_err(|e| e.to_string())
    }

    #[test]
    fn a_filter_is_a_value_a_list_or_any_all_none() {
        let values = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(filter(r#""a""#).unwrap().all, values(&["a"]));
        assert_eq!(filter(r#"["a", "b"]"#).unwrap().all, values(&["a", "b"]));
        assert_eq!(
            filter("2024").unwrap().all,
            values(&["2024"]),
            "a query string's number"
        );
        let f = filter(r#"{"any": ["a", "b"], "not": "c"}"#).unwrap();
        assert_eq!((f.any, f.none), (values(&["a", "b"]), values(&["c"])));
        for bad in [r#"{"some": ["a"]}"#, "null", r#"[{"a": 1}]"#] {
            let e = filter(bad).unwrap_err();
            assert!(e.contains("any") && e.contains("none"), "{bad}: {e}");
        }
        let f = filter(r#"{"any": ["a", "b"], "all": ["c"], "none": ["d"]}"#).unwrap();
        assert!(f.passes(&values(&["a", "c"])));
        assert!(!f.passes(&values(&["a"])), "c is missing");
        assert!(!f.passes(&values(&["c"])), "neither a nor b");
        assert!(!f.passes(&values(&["b", "c", "d"])), "d is excluded");
        assert!(
            filter(r#"{"none": ["d"]}"#).unwrap().passes(&[]),
            "no values: none holds"
        );
    }

    #[test]
    fn limits_are_checked_with_the_option_named() {
        let mut filters = BTreeMap::new();
        let sort = BTreeMap::new();
        assert!(validate(&filters, &sort).is_ok());
        filters.insert("x".repeat(MAX_FACET_BYTES + 1), Filter::default());
        assert_eq!(validate(&filters, &sort).unwrap_err().0, "filters");
        filters.clear();
        filters.insert(
            "tags".into(),
            Filter {
                all: vec!["v".into(); MAX_FILTER_VALUES + 1],
                ..Filter::default()
            },
        );
        assert_eq!(validate(&filters, &sort).unwrap_err().0, "filters");
        let two: BTreeMap<String, SortOrder> = [("a".into(), SortOrder::Asc), ("b".into(), SortOrder::Desc)].into();
        let e = validate(&BTreeMap::new(), &two).unwrap_err();
        assert_eq!(e.0, "sort");
    }

    #[test]
    fn attributes_read_as_pagefind_writes_them() {
        use AttributePart::*;
        assert_eq!(parse_attribute("author"), [Text("author".into())]);
        assert_eq!(
            parse_attribute("author:Jane Doe, year:2024"),
            [
                Value("author".into(), "Jane Doe".into()),
                Value("year".into(), "2024".into())
            ]
        );
        assert_eq!(
            parse_attribute("date[content]"),
            [Attribute("date".into(), "content".into())]
        );
        assert_eq!(
            parse_attribute(r"title:a\, b, , :x"),
            [Value("title".into(), "a, b".into())]
        );
        assert_eq!(
            parse_attribute("url:https://x.org/a"),
            [Value("url".into(), "https://x.org/a".into())]
        );
    }
}
