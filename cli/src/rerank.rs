//! `search --rerank llm`: the LLM judge's calls, made by the CLI with the core's rules
//! (`sextant::search::llm_rerank`), as the package makes them: the batches together (a thread
//! each), every reply read by the core, and on any failure the fused order, with why.

use std::time::Instant;

use serde::Serialize;
use sextant::options::SearchOptions;
use sextant::search::llm_rerank;
use sextant::search::SearchResult;

use crate::llm::{Llm, LlmError};

/// What an LLM rerank did: the package's `rerank` report (without its per-try trace).
#[derive(Debug, Clone, Serialize)]
pub struct RerankReport {
    /// Always `llm`.
    pub strategy: &'static str,
    /// Results rated.
    pub depth: usize,
    /// LLM calls made.
    pub calls: usize,
    /// Milliseconds the calls took.
    pub ms: f64,
    /// Why the fused order stood, or `None`.
    pub fallback: Option<LlmError>,
}

/// `candidates` (a search with [`llm_rerank::candidate_options`]) in the judge's order, cut to
/// `options.k`, and what the rerank did.
pub fn rerank(
    llm: &Llm,
    query: &str,
    candidates: Vec<SearchResult>,
    options: &SearchOptions,
) -> (Vec<SearchResult>, RerankReport) {
    let started = Instant::now();
    let plan = llm_rerank::plan(query, &candidates, options);
    let rated: Vec<Result<Vec<f32>, LlmError>> = std::thread::scope(|scope| {
        let calls: Vec<_> = plan
            .batches
            .iter()
            .map(|batch| {
                scope.spawn(|| {
                    let reply = llm.chat(&batch.messages, &plan.settings)?;
                    llm_rerank::parse_scores(&reply, batch.positions.len()).map_err(|e| LlmError {
                        code: "LLM_BAD_RESPONSE",
                        message: e.to_string(),
                    })
                })
            })
            .collect();
        calls
            .into_iter()
            .map(|call| {
                call.join().unwrap_or_else(|_| {
                    Err(LlmError {
                        code: "INTERNAL",
                        message: "an LLM call's thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    let mut ratings = vec![0.0; plan.depth];
    let mut fallback = None;
    for (batch, scores) in plan.batches.iter().zip(rated) {
        match scores {
            Ok(scores) => {
                for (&position, score) in batch.positions.iter().zip(scores) {
                    ratings[position] = score;
                }
            }
            Err(e) => {
                // A timeout says which knob gives the judge more time.
                let hint = if e.code == "LLM_TIMEOUT" {
                    " (raise --rerank-timeout-ms to give the LLM longer)"
                } else {
                    ""
                };
                fallback.get_or_insert(LlmError {
                    code: e.code,
                    message: format!("{}{hint}: the fused order stands", e.message),
                });
            }
        }
    }
    let results = llm_rerank::apply(candidates, fallback.is_none().then_some(ratings.as_slice()), options);
    let report = RerankReport {
        strategy: "llm",
        depth: plan.depth,
        calls: plan.batches.len(),
        ms: started.elapsed().as_secs_f64() * 1000.0,
        fallback,
    };
    (results, report)
}
