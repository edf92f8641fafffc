//! The research loop's rules (the JS package's `research()` and `Conversation` run it: they own
//! the LLM calls, the loop and the trace): its defaults and limits ([`ResearchOptions`],
//! [`CompressOptions`]), what one tool call of a round becomes ([`tool_call`]), and how the fixed
//! pipeline reads the model's rewritten query and verdict ([`rewritten_query`], [`judged`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::options::LlmSettings;
use crate::prompt::{tool_bad_search_arguments, tool_unknown, TOOL_ARGUMENTS_NOT_JSON, TOOL_ONE_CALL_PER_ROUND};

/// How `research()` searches and answers unless asked otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResearchOptions {
    /// Passages a search returns unless the model asks for another number. Default 5.
    pub k: usize,
    /// Most passages the model may ask one search for. Default 20.
    pub max_k: usize,
    /// Searches the tool loop may run for one question. Default 5.
    pub max_tool_calls: usize,
    /// Model tokens of the passages the answer reads. Default 2000.
    pub token_budget: usize,
    /// Fewest tokens one search's passages get (they get half of `token_budget`, at least this).
    /// Default 200.
    pub min_search_budget: usize,
    /// Longest search query taken from the model, in characters. Default 300.
    pub max_query_chars: usize,
    /// `llm`: the same LLM rates each search's results before the model reads them (`rerank:
    /// llm`, `crate::search::llm_rerank`); `none` (the default): the search's order.
    pub rerank: ResearchRerank,
    /// How the LLM is called.
    #[serde(flatten)]
    pub llm: LlmSettings,
}

/// How `research()` reranks each search's results ([`ResearchOptions::rerank`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResearchRerank {
    /// The search's order.
    None,
    /// Rated by the research LLM.
    Llm,
}

impl Default for ResearchOptions {
    fn default() -> Self {
        Self {
            k: 5,
            max_k: 20,
            max_tool_calls: 5,
            token_budget: 2000,
            min_search_budget: 200,
            max_query_chars: 300,
            rerank: ResearchRerank::None,
            llm: LlmSettings::default(),
        }
    }
}

impl ResearchOptions {
    /// The token budget of one search's passages.
    pub fn search_budget(&self) -> usize {
        (self.token_budget / 2).max(self.min_search_budget)
    }
}

/// When and how a conversation's earliest rounds are folded into a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompressOptions {
    /// Model tokens of the working context above which it is compressed. Default 12000.
    pub threshold: usize,
    /// Model tokens it is compressed to (at most). Default 8000.
    pub target: usize,
    /// Rounds folded in by one LLM call. Default 4.
    pub batch: usize,
    /// The most recent rounds always kept whole. Default 2.
    pub keep: usize,
}

impl Default for CompressOptions {
    fn default() -> Self {
        Self {
            threshold: 12_000,
            target: 8_000,
            batch: 4,
            keep: 2,
        }
    }
}

/// A tool call that cannot run, as the model reads it (JSON in the tool message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    /// `one_call_per_round`, `unknown_tool` or `bad_arguments`.
    pub error_type: &'static str,
    /// What was wrong, for the model.
    pub message: String,
    /// Whether calling again, corrected, may work.
    pub retryable: bool,
}

/// What one tool call of a round becomes: a search to run, or an error for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStep {
    /// Run the search tool.
    Search {
        /// The query, trimmed.
        query: String,
        /// Passages wanted.
        k: usize,
    },
    /// Answer the model with this error.
    Error(ToolError),
}

fn tool_error(error_type: &'static str, message: String, retryable: bool) -> ToolStep {
    ToolStep::Error(ToolError {
        error_type,
        message,
        retryable,
    })
}

/// The search tool's arguments (an object: `query`, and `k` or the default): a search, or why
/// not.
pub fn search_arguments(args: &Value, options: &ResearchOptions) -> ToolStep {
    let bad = || tool_error("bad_arguments", tool_bad_search_arguments(options.max_k), true);
    let query = args.get("query").and_then(Value::as_str).map(str::trim).unwrap_or("");
    if query.is_empty() {
        return bad();
    }
    let k = match args.get("k") {
        None | Some(Value::Null) => Some(options.k),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
            .and_then(|k| usize::try_from(k).ok()),
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(_) => None,
    };
    match k {
        Some(k) if (1..=options.max_k).contains(&k) => ToolStep::Search {
            query: query.chars().take(options.max_query_chars).collect(),
            k,
        },
        _ => bad(),
    }
}

/// What the tool call at `position` of a round becomes (`call`: an OpenAI-style tool call,
/// `{id, type, function: {name, arguments}}`, `arguments` a JSON string or an object): only the
/// first call of a round runs, only the search tool exists, and its arguments must be an object
/// with a query and, optionally, `k` from 1 to `max_k`.
pub fn tool_call(call: &Value, position: usize, options: &ResearchOptions) -> ToolStep {
    if position > 0 {
        return tool_error("one_call_per_round", TOOL_ONE_CALL_PER_ROUND.into(), true);
    }
    let function = call.get("function");
    let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
    if name != Some("search") {
        return tool_error("unknown_tool", tool_unknown(name), false);
    }
    let args = match function.and_then(|f| f.get("arguments")) {
        Some(Value::String(text)) => serde_json::from_str::<Value>(text).ok(),
        Some(other) => Some(other.clone()),
        None => None,
    };
    match args {
        Some(args @ Value::Object(_)) => search_arguments(&args, options),
        _ => tool_error("bad_arguments", TOOL_ARGUMENTS_NOT_JSON.into(), true),
    }
}

/// The search query in the model's answer to the rewrite prompt: its first line, trimmed and cut
/// to `max_query_chars` characters; `None` when it is empty.
pub fn rewritten_query(answer: &str, options: &ResearchOptions) -> Option<String> {
    let line = answer.trim().lines().next()?.trim();
    (!line.is_empty()).then(|| line.chars().take(options.max_query_chars).collect())
}

/// The better query the judge asks for: a first line starting with "no" (any case, a whole word)
/// and a non-empty second line, cut to `max_query_chars`; `None` when the evidence is judged
/// enough or no query was given.
pub fn judged(answer: &str, options: &ResearchOptions) -> Option<String> {
    let mut lines = answer.trim().lines();
    let verdict = lines.next()?.trim_start();
    let says_no = verdict.get(..2).is_some_and(|w| w.eq_ignore_ascii_case("no"))
        && !verdict[2..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
    if !says_no {
        return None;
    }
    let better = lines.next()?.trim();
    (!better.is_empty()).then(|| better.chars().take(options.max_query_chars).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> Value {
        json!({"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}})
    }

    #[test]
    fn a_search_call_runs_with_its_query_and_k() {
        let o = ResearchOptions::default();
        let step = tool_call(
            &call("search", json!("{\"query\": \" wing flutter \", \"k\": 3}")),
            0,
            &o,
        );
        assert_eq!(
            step,
            ToolStep::Search {
                query: "wing flutter".into(),
                k: 3
            }
        );
        // Arguments as an object, k left out or a numeric string.
        assert_eq!(
            tool_call(&call("search", json!({"query": "x"})), 0, &o),
            ToolStep::Search {
                query: "x".into(),
                k: 5
            }
        );
        assert_eq!(
            tool_call(&call("search", json!({"query": "x", "k": "7"})), 0, &o),
            ToolStep::Search {
                query: "x".into(),
                k: 7
            }
        );
        let long = "w".repeat(500);
        match tool_call(&call("search", json!({ "query": long })), 0, &o) {
            ToolStep::Search { query, .. } => assert_eq!(query.chars().count(), 300),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_other_call_is_an_error_the_model_can_read() {
        let o = ResearchOptions::default();
        let kind = |step: ToolStep| match step {
            ToolStep::Error(e) => (e.error_type, e.retryable),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            kind(tool_call(&call("search", json!({"query": "x"})), 1, &o)),
            ("one_call_per_round", true)
        );
        assert_eq!(
            kind(tool_call(&call("fetch", json!({})), 0, &o)),
            ("unknown_tool", false)
        );
        assert_eq!(kind(tool_call(&json!({"id": 1}), 0, &o)), ("unknown_tool", false));
        for bad in [json!("{not json"), json!("[1]"), json!(null), json!(5)] {
            assert_eq!(kind(tool_call(&call("search", bad), 0, &o)), ("bad_arguments", true));
        }
        for bad in [
            json!({"query": " "}),
            json!({"query": "x", "k": 0}),
            json!({"query": "x", "k": 21}),
            json!({"query": "x", "k": 2.5}),
            json!({"k": 3}),
        ] {
            match tool_call(&call("search", bad.clone()), 0, &o) {
                ToolStep::Error(e) => assert!(e.message.contains("integer 1-20"), "{bad}: {}", e.message),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_pipeline_reads_the_rewrite_and_the_verdict() {
        let o = ResearchOptions::default();
        assert_eq!(
            rewritten_query("  wing flutter speed \nwhy: …", &o).as_deref(),
            Some("wing flutter speed")
        );
        assert_eq!(rewritten_query(" \n ", &o), None);
        assert_eq!(
            judged("NO\n wing flutter onset ", &o).as_deref(),
            Some("wing flutter onset")
        );
        assert_eq!(
            judged("no, not enough\nbetter query", &o).as_deref(),
            Some("better query")
        );
        assert_eq!(judged("YES", &o), None);
        assert_eq!(judged("Nothing more needed\nquery", &o), None, "a whole word");
        assert_eq!(judged("NO", &o), None, "no better query given");
        assert_eq!(ResearchOptions::default().search_budget(), 1000);
        let small = ResearchOptions {
            token_budget: 100,
            ..Default::default()
        };
        assert_eq!(small.search_budget(), 200);
    }
}
