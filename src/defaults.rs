//! `defaults()`: everything a JS caller needs to know without restating it — every default and
//! limit of the options, the names each enumerated option takes, the error codes with their HTTP
//! statuses, the texts said to an LLM or an agent, the research loop's defaults, and the tools'
//! schemas. The package exports it as `defaults()`; the UI, the Worker, MCP and `research()`
//! take everything from it.

use serde::Serialize;

use crate::config::InputConfig;
use crate::embed::Weights;
use crate::error_code::{error_table, ErrorCodeInfo};
use crate::options::{
    AskOptions, ContextOptions, FrameOptions, Fusion, Limits, LoadOptions, Mode, PageScore, Purpose, SearchOptions,
    VectorSearch, MAX_DEPTH, MAX_K, MAX_QUERY_BYTES, MAX_REQUEST_BYTES, MAX_RERANK_DEPTH, MAX_TOKEN_BUDGET,
};
#[cfg(feature = "answers")]
use crate::prompt::{Prompts, PROMPTS};
use crate::research::{CompressOptions, ResearchOptions};
use crate::search::bases::MAX_BASE_NAME;
#[cfg(feature = "answers")]
use crate::tools::{tools, Tools};

/// The names an enumerated option takes, in the order its type lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Names {
    /// `mode`.
    pub mode: &'static [&'static str],
    /// `fusion`.
    pub fusion: &'static [&'static str],
    /// `vector_search`.
    pub vector_search: &'static [&'static str],
    /// `page_score`.
    pub page_score: &'static [&'static str],
    /// `weights`.
    pub weights: &'static [&'static str],
    /// What a search is for (`searchFor`, `contextOf`).
    pub purpose: &'static [&'static str],
}

/// What `defaults()` returns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Defaults {
    /// `load()`.
    pub load: LoadOptions,
    /// `search()`.
    pub search: SearchOptions,
    /// `frame()`.
    pub frame: FrameOptions,
    /// `context()`.
    pub context: ContextOptions,
    /// `ask()`.
    pub ask: AskOptions,
    /// `research()`.
    pub research: ResearchOptions,
    /// A research conversation's compression.
    pub compress: CompressOptions,
    /// The limits.
    pub limits: Limits,
    /// What a document may cost (`sextant.toml` `[input]`): file size, nesting, front matter.
    pub input: InputConfig,
    /// The names of each enumerated option.
    pub names: Names,
    /// Longest name of a knowledge base, in bytes.
    pub max_base_name: usize,
    /// Every error code with its HTTP status.
    pub error_codes: Vec<ErrorCodeInfo>,
    /// Every text said to an LLM or an agent.
    #[cfg(feature = "answers")]
    pub prompts: Prompts,
    /// The system prompt sent with framed context (`prompts.system`).
    #[cfg(feature = "answers")]
    pub system_prompt: &'static str,
    /// The answer given without calling the LLM when nothing relevant was retrieved
    /// (`prompts.refusal`).
    #[cfg(feature = "answers")]
    pub refusal: &'static str,
    /// The tools offered to a model (research) and to an agent (MCP).
    #[cfg(feature = "answers")]
    pub tools: Tools,
}

/// The defaults, limits, names, error codes, prompts and tools.
pub fn defaults() -> Defaults {
    Defaults {
        load: LoadOptions::default(),
        search: SearchOptions::default(),
        frame: FrameOptions::default(),
        context: ContextOptions::default(),
        ask: AskOptions::default(),
        research: ResearchOptions::default(),
        compress: CompressOptions::default(),
        limits: Limits {
            max_query_bytes: MAX_QUERY_BYTES,
            max_k: MAX_K,
            max_depth: MAX_DEPTH,
            max_token_budget: MAX_TOKEN_BUDGET,
            max_rerank_depth: MAX_RERANK_DEPTH,
            max_request_bytes: MAX_REQUEST_BYTES,
        },
        input: InputConfig::default(),
        names: Names {
            mode: &Mode::NAMES,
            fusion: &Fusion::NAMES,
            vector_search: &VectorSearch::NAMES,
            page_score: &PageScore::NAMES,
            weights: &Weights::NAMES,
            purpose: &Purpose::NAMES,
        },
        max_base_name: MAX_BASE_NAME,
        error_codes: error_table(),
        #[cfg(feature = "answers")]
        prompts: PROMPTS,
        #[cfg(feature = "answers")]
        system_prompt: PROMPTS.system,
        #[cfg(feature = "answers")]
        refusal: PROMPTS.refusal,
        #[cfg(feature = "answers")]
        tools: tools(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_one_json_object_with_the_core_values() {
        let d = serde_json::to_value(defaults()).unwrap();
        assert_eq!(d["search"]["mode"], "hybrid");
        assert_eq!(d["names"]["mode"], serde_json::json!(["hybrid", "dense", "keyword"]));
        assert_eq!(d["names"]["purpose"], serde_json::json!(["search", "context", "ask"]));
        assert_eq!(d["research"]["k"], 5);
        assert_eq!(d["input"]["max_file_bytes"], 64 * 1024 * 1024);
        assert_eq!(d["research"]["max_answer_bytes"], 256 * 1024, "LLM settings flat");
        assert_eq!(d["prompts"]["system"], d["system_prompt"]);
        assert_eq!(d["tools"]["mcp"][0]["name"], "search");
        assert_eq!(
            d["tools"]["research_search"]["function"]["parameters"]["properties"]["k"]["maximum"],
            20
        );
    }
}
