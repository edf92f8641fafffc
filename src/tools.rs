//! The tools sextant offers a model or an agent, generated from the core's options so their
//! schemas never drift from what the engine accepts: the research loop's `search` function (the
//! OpenAI tool format) and the MCP server's `search`, `fetch` and `describe` tools (JSON Schema
//! `inputSchema`s). Their descriptions are words a model reads, kept here beside their schemas.
//! `defaults().tools` carries them to JS (`research()`, the Worker's `/mcp`).

use serde::Serialize;
use serde_json::{json, Value};

use crate::options::Mode;
use crate::research::ResearchOptions;

/// Passages an MCP `search` returns unless the agent asks for another number.
pub const MCP_K: usize = 8;
/// Most passages an agent may ask one MCP `search` for.
pub const MCP_MAX_K: usize = 50;

/// The research loop's search tool, in the OpenAI `tools` format.
pub fn research_search_tool(options: &ResearchOptions) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "search",
            "description": "Searches the user's documents (keyword + meaning) and returns the best passages, each with a chunk_id to cite.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in words the documents would use."},
                    "k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": options.max_k,
                        "description": format!("How many passages (default {}).", options.k),
                    },
                },
                "required": ["query"],
            },
        },
    })
}

/// The MCP server's tools (`tools/list`): `search`, `graph`, `fetch`, `describe`, read-only.
pub fn mcp_tools() -> Value {
    let annotations = json!({"readOnlyHint": true, "openWorldHint": false});
    let default_mode = Mode::default().name();
    let modes: Vec<String> = Mode::ALL
        .iter()
        .map(|m| match m {
            Mode::Hybrid => format!("{} (default)", m.name()),
            Mode::Dense => format!("{} (meaning only)", m.name()),
            Mode::Keyword => format!("{} (words only)", m.name()),
        })
        .collect();
    json!([
        {
            "name": "search",
            "title": "Search the knowledge bases",
            "description": "Hybrid (meaning + keyword) search over the documentation. Returns the best passages, each with an id to pass to fetch, its base, title, URL and text. Use \"quoted phrases\" for exact words and -word to exclude.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for, in words."},
                    "mode": {
                        "type": "string",
                        "enum": Mode::NAMES,
                        "default": default_mode,
                        "description": format!("{}.", join_or(&modes)),
                    },
                    "k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MCP_MAX_K,
                        "default": MCP_K,
                        "description": format!("How many passages (default {MCP_K})."),
                    },
                    "bases": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The knowledge bases to search (describe lists them); all by default.",
                    },
                    "filters": {
                        "type": "object",
                        "additionalProperties": {
                            "anyOf": [
                                {"type": "string"},
                                {"type": "array", "items": {"type": "string"}},
                                {
                                    "type": "object",
                                    "properties": {
                                        "any": {"type": "array", "items": {"type": "string"}},
                                        "all": {"type": "array", "items": {"type": "string"}},
                                        "none": {"type": "array", "items": {"type": "string"}},
                                        "not": {"type": "array", "items": {"type": "string"}},
                                    },
                                    "additionalProperties": false,
                                },
                            ],
                        },
                        "description": "Only pages with these filter values, by filter name (the pages' filters, e.g. {\"version\": \"3.11\"}): a value, a list the page must all have, or {\"any\": [...], \"all\": [...], \"none\": [...]}.",
                    },
                    "sort": {
                        "type": "object",
                        "additionalProperties": {"type": "string", "enum": ["asc", "desc"]},
                        "maxProperties": 1,
                        "description": "Order the best matches by one of the pages' sort keys instead of by relevance, e.g. {\"date\": \"desc\"} (numbers when every value of the key is one; pages without a value last).",
                    },
                },
                "required": ["query"],
                "additionalProperties": false,
            },
            "annotations": annotations,
        },
        {
            "name": "graph",
            "title": "Look up the knowledge graph",
            "description": "The entities and relations of the knowledge graph (when the operator built one with `sextant graph build`) that a question leads to, through the names it mentions and up to two steps of relations: for questions whose answer spans several documents. Each line cites the passages it comes from, and those passages come back with their ids (for fetch). Says so when there is no graph. Reads a server with one knowledge base.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question, in words."},
                },
                "required": ["question"],
                "additionalProperties": false,
            },
            "annotations": annotations,
        },
        {
            "name": "fetch",
            "title": "Fetch a passage or a document",
            "description": "The full text of a passage (a chunk id from search, like \"guide/install.md#3\") or of a whole document (a doc id, like \"guide/install.md\"). With several bases, ids from search start with \"base:\".",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "A chunk id or a document id from search results."},
                    "base": {"type": "string", "description": "The base holding it, when the id does not start with \"base:\"."},
                },
                "required": ["id"],
                "additionalProperties": false,
            },
            "annotations": annotations,
        },
        {
            "name": "describe",
            "title": "Describe the knowledge bases",
            "description": "The knowledge bases this server searches: their names, how many documents and passages each holds, and whether each is available.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "annotations": annotations,
        },
    ])
}

/// `a, b or c`.
fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} or {last}", head.join(", ")),
    }
}

/// What `defaults().tools` holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tools {
    /// [`research_search_tool`] with the default research options.
    pub research_search: Value,
    /// [`mcp_tools`].
    pub mcp: Value,
    /// [`MCP_K`].
    pub mcp_k: usize,
    /// [`MCP_MAX_K`].
    pub mcp_max_k: usize,
}

/// The tools with the default options.
pub fn tools() -> Tools {
    Tools {
        research_search: research_search_tool(&ResearchOptions::default()),
        mcp: mcp_tools(),
        mcp_k: MCP_K,
        mcp_max_k: MCP_MAX_K,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_follow_the_options() {
        let research = research_search_tool(&ResearchOptions {
            max_k: 12,
            k: 4,
            ..Default::default()
        });
        let k = &research["function"]["parameters"]["properties"]["k"];
        assert_eq!(
            (k["maximum"].as_u64(), k["description"].as_str()),
            (Some(12), Some("How many passages (default 4)."))
        );
        let mcp = mcp_tools();
        let names: Vec<&str> = mcp
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["search", "graph", "fetch", "describe"]);
        let search = &mcp[0]["inputSchema"]["properties"];
        assert_eq!(search["mode"]["enum"], json!(Mode::NAMES));
        assert_eq!(
            search["mode"]["description"],
            "hybrid (default), dense (meaning only) or keyword (words only)."
        );
        assert_eq!(search["k"]["maximum"], MCP_MAX_K);
        for tool in mcp.as_array().unwrap() {
            assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{tool}");
            assert_eq!(tool["annotations"]["readOnlyHint"], true);
        }
    }
}
