//! Framing: results as `<retrieved_context>` blocks within a token budget (the model's tokenizer
//! counts), and the chat messages of a grounded question (`crate::prompt`).

use crate::frame::{frame, FrameChunk, Framed};
use crate::options::{AskOptions, ContextOptions, FrameOptions};
use crate::prompt::{chat_messages, REFUSAL, SYSTEM_PROMPT};

use super::engine::Engine;
use super::types::{Clock, ContextResponse, SearchError, SearchResult, StageTimings, Step};

impl Engine {
    /// Frames results as LLM context (needs the model's tokenizer to count tokens).
    pub fn frame(&self, results: &[SearchResult], options: &FrameOptions) -> Result<Framed, SearchError> {
        let chunks: Vec<FrameChunk> = results
            .iter()
            .map(|r| FrameChunk {
                chunk_id: r.chunk_id.clone(),
                source: r.url.clone(),
                text: r.text.clone(),
            })
            .collect();
        self.frame_chunks(&chunks, options)
    }

    /// Frames chunks as LLM context within the options' token budget.
    pub fn frame_chunks(&self, chunks: &[FrameChunk], options: &FrameOptions) -> Result<Framed, SearchError> {
        options.validate()?;
        let embedder = self.embedder_for("framing")?;
        Ok(frame(chunks, options.token_budget, &|s: &str| {
            embedder.count_tokens(s)
        })?)
    }

    /// Searches for a question and frames the results: what an LLM needs to answer it.
    pub fn context(
        &self,
        question: &str,
        options: &ContextOptions,
        clock: &dyn Clock,
    ) -> Result<Step<ContextResponse>, SearchError> {
        options.frame.validate()?;
        let response = match self.search(question, &options.search, clock)? {
            Step::Done(response) => response,
            Step::Need(files) => return Ok(Step::Need(files)),
        };
        self.context_of(question, response.results, &options.frame, response.timings)
            .map(Step::Done)
    }

    /// Frames results found elsewhere (several knowledge bases' results, fused) for a question:
    /// [`Engine::context`] without the search.
    pub fn context_of(
        &self,
        question: &str,
        results: Vec<SearchResult>,
        options: &FrameOptions,
        timings: StageTimings,
    ) -> Result<ContextResponse, SearchError> {
        let framed = self.frame(&results, options)?;
        Ok(ContextResponse {
            messages: chat_messages(question, &framed.context),
            refused: framed.included.is_empty(),
            refusal: REFUSAL.to_string(),
            system_prompt: SYSTEM_PROMPT.to_string(),
            results,
            context: framed.context,
            included: framed.included,
            omitted: framed.omitted,
            tokens: framed.tokens,
            budget: framed.budget,
            timings,
        })
    }

    /// [`Engine::context`] with an answer's options (validated whole, LLM settings included).
    pub fn ask_context(
        &self,
        question: &str,
        options: &AskOptions,
        clock: &dyn Clock,
    ) -> Result<Step<ContextResponse>, SearchError> {
        options.validate()?;
        self.context(question, &options.context, clock)
    }
}
