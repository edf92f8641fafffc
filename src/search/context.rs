//! Framing: results as `<retrieved_context>` blocks within a token budget (the model's tokenizer
//! counts), and the chat messages of a grounded question (`crate::prompt`).

use std::collections::BTreeMap;

use crate::frame::{frame, FrameChunk, Framed};
use crate::graph::query::{GraphBlock, GraphOptions, GraphQuery, QuestionTerms, Selection};
use crate::graph::{self, Graph};
use crate::options::{AskOptions, ContextOptions, FrameOptions, Mode};
use crate::prompt::{chat_messages, REFUSAL, SYSTEM_PROMPT};

use super::engine::Engine;
use super::lookup::Found;
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
        Ok(response(question, results, framed, timings))
    }

    /// [`Engine::context`] with a graph (`graph: true`): the search, then the graph's search
    /// for the question (`terms`: the entity names and answer types the LLM read in it, or
    /// `None` to let the question's own vector stand for its names), the chunks its best hits
    /// cite, and [`Engine::context_with_graph`]. Needs the model, and the graph file
    /// (`files.graph`: asked for like any file); an index without one is a `BAD_ARGUMENT`.
    pub fn graph_context(
        &self,
        question: &str,
        options: &ContextOptions,
        terms: Option<&QuestionTerms>,
        graph_options: &GraphOptions,
        clock: &dyn Clock,
    ) -> Result<Step<(ContextResponse, GraphBlock)>, SearchError> {
        options.frame.validate()?;
        graph_options
            .validate()
            .map_err(|reason| SearchError::BadArgument { name: "graph", reason })?;
        let Some(graph) = self.graph.clone() else {
            return match self.store.manifest().files.graph.clone() {
                Some(name) => Ok(Step::Need(vec![name])),
                None => Err(SearchError::BadArgument {
                    name: "graph",
                    reason: "this index has no knowledge graph; build one with `sextant graph build MANIFEST --llm-base-url URL --llm-model NAME` and search the manifest it writes".into(),
                }),
            };
        };
        let graph = graph.as_ref();
        let response = match self.search(question, &options.search, clock)? {
            Step::Done(response) => response,
            Step::Need(files) => return Ok(Step::Need(files)),
        };
        let mut vectors = Vec::new();
        let names = terms.map_or(&[][..], |t| t.entities.as_slice());
        for text in std::iter::once(question).chain(names.iter().map(String::as_str)) {
            match self.embed_query(text, Mode::Dense)? {
                Step::Done(v) => vectors.push(v),
                Step::Need(files) => return Ok(Step::Need(files)),
            }
        }
        let question_vector = vectors.remove(0);
        let query = GraphQuery {
            entities: vectors,
            types: terms.map(|t| t.types.clone()).unwrap_or_default(),
            question: question_vector,
        };
        let selection = graph::query::select(graph, &query, graph_options);
        let found = match self.chunks_numbered(&selection.chunks) {
            Step::Done(found) => found,
            Step::Need(files) => return Ok(Step::Need(files)),
        };
        self.context_with_graph(
            question,
            response.results,
            graph,
            &selection,
            &found,
            &options.frame,
            graph_options,
            response.timings,
        )
        .map(Step::Done)
    }

    /// [`Engine::context_of`] with a graph: the graph block first (its own budget,
    /// `graph_options.token_budget`, taken out of the context's), then the search's results, then
    /// the first `max_chunks` of the chunks the graph's hits cite (`found`, from
    /// [`Engine::chunks_numbered`], best first) that the search did not find, in what is left of
    /// the budget: the graph adds evidence and never pushes out a result the search framed
    /// within the same budget. The graph block cites only chunks framed here; the graph's chunks
    /// that were not among the results are added to them (score 0, after the search's own).
    #[allow(clippy::too_many_arguments)]
    pub fn context_with_graph(
        &self,
        question: &str,
        mut results: Vec<SearchResult>,
        graph: &Graph,
        selection: &Selection,
        found: &[(u32, Found)],
        options: &FrameOptions,
        graph_options: &GraphOptions,
        timings: StageTimings,
    ) -> Result<(ContextResponse, GraphBlock), SearchError> {
        options.validate()?;
        graph_options
            .validate()
            .map_err(|reason| SearchError::BadArgument { name: "graph", reason })?;
        let embedder = self.embedder_for("framing")?;
        let count = |s: &str| embedder.count_tokens(s);
        let reserve = graph_options.token_budget.min(options.token_budget / 2);
        // The search's results first, then the graph's chunks the search did not find, the
        // first `max_chunks` of them, in what the results leave of the budget.
        let added: Vec<&(u32, Found)> = found
            .iter()
            .filter(|(_, f)| !results.iter().any(|r| r.chunk_id == f.id))
            .take(graph_options.max_chunks)
            .collect();
        let mut chunks: Vec<FrameChunk> = Vec::new();
        let searched = results.iter().map(|r| (&r.chunk_id, &r.url, &r.text));
        for (chunk_id, source, text) in searched.chain(added.iter().map(|(_, f)| (&f.id, &f.url, &f.text))) {
            if !chunks.iter().any(|c| &c.chunk_id == chunk_id) {
                chunks.push(FrameChunk {
                    chunk_id: chunk_id.clone(),
                    source: source.clone(),
                    text: text.clone(),
                });
            }
        }
        let mut framed = frame(&chunks, options.token_budget - reserve, &count)?;
        // Every framed chunk the hits cite whose number is known: the graph's, and the search's
        // own whose fragments are held (the block may cite those too).
        let cited: Vec<u32> = selection
            .hits
            .iter()
            .flat_map(|h| graph::query::cites(graph, h).iter().copied())
            .collect();
        let included: BTreeMap<u32, String> = found
            .iter()
            .map(|(n, f)| (*n, f.id.clone()))
            .chain(self.held_chunk_ids(&cited))
            .filter(|(_, id)| framed.included.contains(id))
            .collect();
        let count_err = std::cell::RefCell::new(None);
        // The block keeps to the share of the budget kept for it.
        let block_options = GraphOptions {
            token_budget: reserve,
            ..graph_options.clone()
        };
        let block = graph::query::block(graph, selection, &included, &block_options, &|s: &str| {
            count(s).unwrap_or_else(|e| {
                *count_err.borrow_mut() = Some(e);
                usize::MAX
            })
        });
        if let Some(e) = count_err.into_inner() {
            return Err(e.into());
        }
        if !block.text.is_empty() {
            framed.context = format!("{}\n{}", block.text, framed.context);
            framed.tokens += block.tokens;
        }
        framed.budget = options.token_budget;
        let mut rank = results.len() as u32;
        for (_, f) in added {
            if !results.iter().any(|r| r.chunk_id == f.id) {
                rank += 1;
                results.push(SearchResult {
                    rank,
                    chunk_id: f.id.clone(),
                    doc_id: f.doc_id.clone(),
                    title: f.title.clone(),
                    source: f.source.clone(),
                    url: f.url.clone(),
                    heading_path: f.heading_path.clone(),
                    text: f.text.clone(),
                    score: 0.0,
                    dense: None,
                    keyword: None,
                    rerank: None,
                    metadata: Default::default(),
                });
            }
        }
        Ok((response(question, results, framed, timings), block))
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

/// The response of a question's framed context: the chat messages to send, and whether there is
/// any evidence to answer from.
fn response(question: &str, results: Vec<SearchResult>, framed: Framed, timings: StageTimings) -> ContextResponse {
    ContextResponse {
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
    }
}
