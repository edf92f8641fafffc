//! BEIR-style JSONL: one `{"_id": …, "title": …, "text": …}` object a line.

use serde_json::Value;

use super::LoadError;
use crate::chunk::{Document, Section};

/// Loads every line of a JSONL corpus. `_id` (string or number) and `text` (string) are
/// required, `title` is optional, other scalar fields become metadata. Blank lines are skipped.
/// The indexed text is the title, a blank line, then the text.
pub fn load_jsonl(path: &str, text: &str) -> Result<Vec<Document>, LoadError> {
    let mut docs = Vec::new();
    for (at, line) in text.lines().enumerate() {
        let line_no = at + 1;
        let bad = |reason: String| LoadError::BadJsonl {
            path: path.to_string(),
            line: line_no,
            reason,
        };
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| bad(format!("not valid JSON ({e}); each line must be one object like {{\"_id\": \"1\", \"title\": \"…\", \"text\": \"…\"}}")))?;
        let Value::Object(fields) = value else {
            return Err(bad("expected a JSON object with _id and text".into()));
        };
        let id = match fields.get("_id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(bad("missing \"_id\" (a non-empty string or a number)".into())),
        };
        let body = match fields.get("text") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(bad(format!("record {id:?} has no \"text\" string"))),
        };
        let title = match fields.get("title") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(bad(format!("record {id:?} has a \"title\" that is not a string"))),
        };
        let metadata = fields
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "_id" | "title" | "text"))
            .filter_map(|(k, v)| match v {
                Value::String(s) => Some((k.clone(), s.clone())),
                Value::Number(n) => Some((k.clone(), n.to_string())),
                Value::Bool(b) => Some((k.clone(), b.to_string())),
                _ => None,
            })
            .collect();
        let mut section = String::new();
        super::push_block(&mut section, &title);
        super::push_block(&mut section, &body);
        docs.push(Document {
            source: format!("{path}:{line_no}"),
            id,
            url: None,
            title,
            metadata,
            sections: vec![Section {
                heading_path: Vec::new(),
                anchor: None,
                text: section,
                code: Vec::new(),
                weighted: Vec::new(),
            }],
            ..Default::default()
        });
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_beir_records() {
        let text = "{\"_id\": \"12\", \"title\": \"Wings\", \"text\": \"Lift and drag.\", \"year\": 1962}\n\n{\"_id\": 7, \"text\": \"No title.\"}\n";
        let docs = load_jsonl("c.jsonl", text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].id, "12");
        assert_eq!(docs[0].source, "c.jsonl:1");
        assert_eq!(docs[0].sections[0].text, "Wings\n\nLift and drag.");
        assert_eq!(docs[0].metadata.get("year").map(String::as_str), Some("1962"));
        assert_eq!(docs[1].id, "7");
        assert_eq!(docs[1].source, "c.jsonl:3");
        assert_eq!(docs[1].sections[0].text, "No title.");
    }

    #[test]
    fn malformed_lines_name_their_line_number() {
        let text = "{\"_id\": \"1\", \"text\": \"ok\"}\n{\"_id\": \"2\", \"text\": \"cut\n";
        match load_jsonl("c.jsonl", text).unwrap_err() {
            LoadError::BadJsonl { line, .. } => assert_eq!(line, 2),
            e => panic!("{e:?}"),
        }
        let missing = load_jsonl("c.jsonl", "{\"title\": \"x\", \"text\": \"y\"}").unwrap_err();
        assert!(
            missing.to_string().starts_with("c.jsonl:1: missing \"_id\""),
            "{missing}"
        );
        assert!(load_jsonl("c.jsonl", "[1,2]").is_err());
        assert!(load_jsonl("c.jsonl", "{\"_id\": \"1\"}").is_err());
    }
}
