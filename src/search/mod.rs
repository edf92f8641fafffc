//! Queries over an index: keyword (BM25), dense (vectors) or hybrid (both, fused), and framing
//! their results as LLM context.
//!
//! A query is read once into a [`plan::QueryPlan`] ([`query::Query`] parses its syntax) and runs
//! the stages of [`pipeline::stages`], each a [`Step`]: words written
//! `-word` exclude their chunks and `"quoted phrases"` keep only the chunks holding them; BM25
//! takes its top `depth` chunks (`depth` defaults to `max(10·k, 100)`; with `document_bm25` and
//! results by document, the chunks of its top `depth` documents scored whole), a query word the
//! index does not hold (outside quotes) searched for as its nearest terms
//! ([`pipeline::fallback_terms`], weighted [`pipeline::FALLBACK_WEIGHT`]; the response spells
//! them as the results do in `did_you_mean`),
//! expanded by RM3 from its top chunks when `query_expansion` is on; the dense retriever
//! scores every chunk's binary code and takes the best `depth` (at least `layout.rescore`),
//! rescoring the best `layout.rescore` of them (at least [`crate::options::RESCORE_PER_RESULT`]
//! per result) with their int8 vectors and the rest by their codes on the same scale; hybrid fuses the two lists (a convex combination of normalised scores, or
//! RRF), chunk by chunk or page by page; an attached cross-encoder reranks the best
//! `rerank_depth`; then results under `score_threshold` are dropped, at most `sub_results` chunks
//! of each document are kept (one with `per_document`), and the first `k` are assembled from the
//! text fragments.
//! The options are [`crate::options::SearchOptions`].
//!
//! The engine reads no files: over a split index a query answers [`Step::Need`] with the files it
//! needs and has not been given yet; the caller fetches them, adds them with
//! [`Engine::add_file`] and asks again. A packed index holds every file, so it always answers
//! [`Step::Done`].
//!
//! Files: this one holds the types and [`Engine::search`], which strings the stages together and
//! times them; `engine` the engine's lifecycle; `context` framing; `plan` the query read once;
//! `pipeline` the pure steps and `pipeline::stages` the stages over a store; `lookup` chunks and
//! documents by id; `bases` several knowledge bases fused.

pub mod bases;
mod context;
mod engine;
pub mod llm_rerank;
pub mod lookup;
pub mod pipeline;
pub mod plan;
pub mod query;

mod types;

use crate::options::{validate_query, Mode, RerankStrategy, SearchOptions};
pub use engine::Engine;
use pipeline::stages::Stages;
use plan::QueryPlan;
pub use types::*;

/// The value of a [`Step::Done`], or returns the [`Step::Need`] from the enclosing function (which
/// answers `Result<Step<_>, _>`).
macro_rules! done_or_return {
    ($step:expr) => {
        match $step {
            Step::Done(value) => value,
            Step::Need(files) => return Ok(Step::Need(files)),
        }
    };
}

impl Engine {
    /// Searches with the embedder attached. See the module docs for the pipeline.
    pub fn search(
        &self,
        query: &str,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<Step<SearchResponse>, SearchError> {
        let start = clock.now_ms();
        validate_query(query)?;
        options.validate()?;
        let plan = QueryPlan::new(query, &self.analyzer, options.mode)?;
        // Excluded words (`-word`) are not embedded: the vector is of what the reader wants.
        let query_vector = if options.mode.needs_model() {
            Some(done_or_return!(self.embed_query(&plan.text, options.mode)?))
        } else {
            None
        };
        let embedded = clock.now_ms();
        let step = self.run(&plan, query_vector.as_deref(), options, clock)?;
        let step = self.with_corrected_vector(&plan, step, options, clock)?;
        Ok(match step {
            Step::Done(mut response) => {
                // The typed query's embedding, and the corrected query's if there was one.
                response.timings.embed_ms += embedded - start;
                response.timings.total_ms = clock.now_ms() - start;
                Step::Done(response)
            }
            need => need,
        })
    }

    /// The vector `search` embeds for `query` in `mode` (which must use the model): the words it
    /// searches for, without exclusions. What an engine without the model (a page using a
    /// Worker's `/embed`) passes to [`Engine::search_with_vector`] for the same results (but for
    /// a misspelled query: an engine without the model cannot embed its correction, see
    /// `SearchOptions::embed_corrections`). A model body answers the row files it needs first.
    pub fn query_vector(&self, query: &str, mode: Mode) -> Result<Step<Vec<f32>>, SearchError> {
        validate_query(query)?;
        let plan = QueryPlan::new(query, &self.analyzer, mode)?;
        self.embed_query(&plan.text, mode)
    }

    /// Searches with a query vector computed elsewhere (`None` is allowed in keyword mode).
    pub fn search_with_vector(
        &self,
        query: &str,
        query_vector: Option<&[f32]>,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<Step<SearchResponse>, SearchError> {
        validate_query(query)?;
        options.validate()?;
        let vector = self.check_vector(options.mode, query_vector)?;
        let plan = QueryPlan::new(query, &self.analyzer, options.mode)?;
        let step = self.run(&plan, vector, options, clock)?;
        self.with_corrected_vector(&plan, step, options, clock)
    }

    /// A misspelled word reads to the model as other word pieces: when the keyword stage
    /// corrected the query (`did_you_mean`) and this engine has the model, the dense half
    /// searches again with the corrected query's vector (`embed_corrections`; the keyword half
    /// is the same). Otherwise `step` as it is.
    fn with_corrected_vector(
        &self,
        plan: &QueryPlan,
        step: Step<SearchResponse>,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<Step<SearchResponse>, SearchError> {
        let corrected = match &step {
            Step::Done(first)
                if options.embed_corrections && options.mode.needs_model() && self.embedder().is_some() =>
            {
                first.did_you_mean.clone()
            }
            _ => None,
        };
        let Some(corrected) = corrected else {
            return Ok(step);
        };
        let fixed = QueryPlan::new(&corrected, &self.analyzer, options.mode)?;
        let t = clock.now_ms();
        let vector = done_or_return!(self.embed_query(&fixed.text, options.mode)?);
        let embed_ms = clock.now_ms() - t;
        Ok(match self.run(plan, Some(&vector), options, clock)? {
            Step::Done(mut again) => {
                again.timings.embed_ms += embed_ms;
                again.did_you_mean = again.did_you_mean.or(Some(corrected));
                Step::Done(again)
            }
            need => need,
        })
    }

    /// The query vector a mode uses: none for keyword search, else one of the index's
    /// dimensions.
    fn check_vector<'v>(&self, mode: Mode, vector: Option<&'v [f32]>) -> Result<Option<&'v [f32]>, SearchError> {
        let dims = self.manifest().model.dims;
        match (mode, vector) {
            (Mode::Keyword, _) => Ok(None),
            (mode, None) => Err(SearchError::NoModel {
                mode: needs_model_for(mode),
            }),
            (_, Some(v)) if v.len() != dims => Err(SearchError::BadArgument {
                name: "query vector",
                reason: format!("it has {} dimensions but the index's vectors have {dims}", v.len()),
            }),
            (_, Some(v)) => Ok(Some(v)),
        }
    }

    /// The cross-encoder a search reranks with: the attached one unless `rerank` says none; an
    /// error when `cross_encoder` is asked without one, or `llm` (its host runs it).
    fn reranker_for(&self, rerank: Option<RerankStrategy>) -> Result<Option<&dyn crate::embed::Reranker>, SearchError> {
        let bad = |reason: &str| SearchError::BadArgument {
            name: "rerank",
            reason: reason.into(),
        };
        match rerank {
            Some(RerankStrategy::None) => Ok(None),
            None => Ok(self.reranker.as_deref()),
            Some(RerankStrategy::CrossEncoder) => match self.reranker.as_deref() {
                Some(reranker) => Ok(Some(reranker)),
                None => Err(bad("no cross-encoder is attached; give one ([rerank] in sextant.toml, loadReranker()), or use none or llm")),
            },
            Some(RerankStrategy::Llm) => Err(bad(
                "llm is run by the host that holds your LLM (the package's search, context and ask with llm; sextant search --rerank llm; the Worker), not by this search",
            )),
        }
    }

    /// The stages of [`pipeline::stages`] in order, timed, on a validated query. Files the
    /// binary stage's candidates need are asked for with the keyword stage's, so a split index
    /// fetches them in the same round.
    fn run(
        &self,
        plan: &QueryPlan,
        query_vector: Option<&[f32]>,
        options: &SearchOptions,
        clock: &dyn Clock,
    ) -> Result<Step<SearchResponse>, SearchError> {
        let start = clock.now_ms();
        let vector = self.check_vector(options.mode, query_vector)?;
        let reranker = self.reranker_for(options.rerank)?;
        self.store.begin_query();
        let stages = Stages {
            store: &self.store,
            analyzer: &self.analyzer,
            plan,
            options,
        };
        let mut timings = StageTimings::default();
        let need = stages.first_needs(vector);
        if !need.is_empty() {
            return Ok(Step::Need(need));
        }
        let admissible = done_or_return!(stages.admissible());

        let probed = match vector {
            Some(v) => done_or_return!(stages.probed(v, &admissible)),
            None => None,
        };
        let t = clock.now_ms();
        let binary = vector
            .zip(probed.as_ref())
            .and_then(|(v, p)| stages.binary(v, p, &admissible));
        let binary_ms = clock.now_ms() - t;
        let block_need = binary.as_ref().map(|b| stages.block_needs(b)).unwrap_or_default();

        let t = clock.now_ms();
        let keyword = match stages.keyword(&admissible) {
            Step::Done(keyword) => keyword,
            Step::Need(mut need) => {
                need.extend(block_need);
                need.sort();
                need.dedup();
                return Ok(Step::Need(need));
            }
        };
        if options.mode != Mode::Dense {
            timings.keyword_ms = clock.now_ms() - t;
        }

        let filter_counts = options
            .filter_counts
            .then(|| stages.filter_counts(&admissible, &keyword, binary.as_ref().map(|b| b.chunks()).as_deref()));
        let (dense, vector_method) = match (vector, binary) {
            (Some(vector), Some(binary)) => {
                let t = clock.now_ms();
                let dense = done_or_return!(stages.dense(vector, &binary));
                timings.vector_ms = binary_ms + (clock.now_ms() - t);
                (dense, Some(binary.method))
            }
            _ => (Vec::new(), None),
        };

        let t = clock.now_ms();
        let fused = stages.fuse(&dense, &keyword.hits);
        let r = clock.now_ms();
        let reranked = done_or_return!(stages.rerank(reranker, fused)?);
        if !reranked.scores.is_empty() {
            timings.rerank_ms = clock.now_ms() - r;
        }
        let results = done_or_return!(stages.results(reranked, &dense, &keyword.hits));
        let did_you_mean = pipeline::did_you_mean(&plan.query, &keyword.corrections, &results, &self.analyzer);
        timings.fusion_ms = clock.now_ms() - t - timings.rerank_ms;
        timings.total_ms = clock.now_ms() - start;
        Ok(Step::Done(SearchResponse {
            results,
            timings,
            vector_method,
            fallback: keyword.fallback,
            did_you_mean,
            filter_counts,
        }))
    }
}

#[cfg(all(test, feature = "indexer"))]
mod tests {
    use super::*;
    use crate::index::tests::{full_store, tiny};
    use crate::index::{IndexManifest, IndexStore};

    /// An engine over `tiny()` with only its manifest: files come as queries ask.
    fn split_engine(built: crate::index::writer::BuiltIndex) -> (Engine, crate::index::writer::BuiltIndex) {
        let manifest = IndexManifest::from_json(&serde_json::to_vec(&built.manifest).unwrap()).unwrap();
        (Engine::new(IndexStore::new(manifest)), built)
    }

    /// Searches until done, adding the files each step asks for; the steps taken.
    fn search_split(query: &str, options: &SearchOptions, vector: Option<&[f32]>) -> (SearchResponse, usize) {
        let (response, fetched) = search_split_of(tiny(), query, options, vector);
        (response, fetched.len())
    }

    /// The response over a split index, and the files it asked for, round by round.
    fn search_split_of(
        built: crate::index::writer::BuiltIndex,
        query: &str,
        options: &SearchOptions,
        vector: Option<&[f32]>,
    ) -> (SearchResponse, Vec<Vec<String>>) {
        let (mut engine, built) = split_engine(built);
        let mut fetched = Vec::new();
        for _ in 1..16 {
            match engine.search_with_vector(query, vector, options, &NoClock).unwrap() {
                Step::Done(response) => return (response, fetched),
                Step::Need(files) => {
                    assert!(!files.is_empty());
                    fetched.push(files.clone());
                    for name in files {
                        engine
                            .add_file(&name, crate::index::tests::bytes_of(&built, &name))
                            .unwrap();
                    }
                }
            }
        }
        panic!("{query}: the engine kept asking for files: {fetched:?}");
    }

    fn ids(response: &SearchResponse) -> Vec<&str> {
        response.results.iter().map(|r| r.chunk_id.as_str()).collect()
    }

    /// An embedder of `tiny()`'s space that knows one word: a text with "lamp" lies along b#0's
    /// axis, any other along a#1's ("fog horn"). It records what it embeds.
    struct LampEmbedder {
        spec: crate::embed::ModelSpec,
        embedded: std::sync::Mutex<Vec<String>>,
    }

    impl crate::embed::Embedder for LampEmbedder {
        fn spec(&self) -> &crate::embed::ModelSpec {
            &self.spec
        }
        fn embed(&self, text: &str, _: crate::embed::TextKind) -> Result<Vec<f32>, crate::embed::EmbedError> {
            self.embedded.lock().unwrap().push(text.to_string());
            Ok(if text.contains("lamp") {
                vec![0.0, 0.0, 1.0]
            } else {
                vec![0.0, 1.0, 0.0]
            })
        }
        fn count_tokens(&self, text: &str) -> Result<usize, crate::embed::EmbedError> {
            Ok(text.split_whitespace().count())
        }
        fn token_ids(&self, _: &str) -> Result<Vec<u32>, crate::embed::EmbedError> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn a_corrected_query_is_what_the_model_embeds() {
        for (query, corrections, embedded, first) in [
            ("lmap", true, vec!["lmap", "lamp"], "b#0"),
            ("lmap", false, vec!["lmap"], "a#1"),
            ("lamp", true, vec!["lamp"], "b#0"),
        ] {
            let mut engine = Engine::new(full_store(&tiny()));
            let embedder = std::sync::Arc::new(LampEmbedder {
                spec: crate::index::tests::model(3),
                embedded: Default::default(),
            });
            engine.attach_model(embedder.clone()).unwrap();
            let options = SearchOptions {
                embed_corrections: corrections,
                ..Default::default()
            };
            let response = engine.search(query, &options, &NoClock).unwrap().done().unwrap();
            assert_eq!(*embedder.embedded.lock().unwrap(), embedded, "{query} {corrections}");
            assert_eq!(ids(&response)[0], first, "{query} {corrections}: {:?}", ids(&response));
            assert_eq!(response.did_you_mean.is_some(), query == "lmap");
        }
    }

    #[test]
    fn a_split_index_answers_as_the_packed_one_after_fetching_what_it_needs() {
        let full = Engine::new(full_store(&tiny()));
        let vector = [0.0, 0.6, 0.8];
        for (query, mode) in [
            ("lamp", Mode::Keyword),
            ("lamp -oil", Mode::Keyword),
            ("\"lamp lens\"", Mode::Keyword),
            ("lmap", Mode::Keyword),
            ("fog", Mode::Hybrid),
            ("anything", Mode::Dense),
        ] {
            let options = SearchOptions {
                mode,
                ..SearchOptions::default()
            };
            let v = mode.needs_model().then_some(&vector[..]);
            let (split, rounds) = search_split(query, &options, v);
            let packed = full
                .search_with_vector(query, v, &options, &NoClock)
                .unwrap()
                .done()
                .unwrap();
            assert_eq!(split, packed, "{query} ({mode})");
            assert!(rounds > 1, "{query}: a split index fetches before it answers");
        }
        let (lamp, _) = search_split("lamp -oil", &SearchOptions::default(), Some(&vector));
        assert_eq!(ids(&lamp)[0], "b#0", "lamp, and nearest the vector");
        assert!(!ids(&lamp).contains(&"a#0"), "oil excludes a#0 from both retrievers");
        let (typo, _) = search_split(
            "lmap",
            &SearchOptions {
                mode: Mode::Keyword,
                ..Default::default()
            },
            None,
        );
        assert_eq!(typo.fallback, ["lamp"]);
        assert_eq!(typo.timings, StageTimings::default(), "no clock, no timings");
        // One word of two misspelled: the other is searched as written, the typo as its
        // nearest term, so both count ("lens" alone would rank b#0 only by "lens").
        let keyword = SearchOptions {
            mode: Mode::Keyword,
            ..Default::default()
        };
        let (partial, _) = search_split("lmap oil", &keyword, None);
        assert_eq!(partial.fallback, ["lamp"]);
        assert_eq!(ids(&partial), ["a#0", "b#0"], "lamp and oil, then lamp alone");
        assert_eq!(
            partial.did_you_mean.as_deref(),
            Some("lamp oil"),
            "spelled as the results do"
        );
        let (exact, _) = search_split("lamp oil", &keyword, None);
        assert!(exact.fallback.is_empty(), "every word held: no fallback");
        assert_eq!(exact.did_you_mean, None);
        // A quoted phrase is taken as written; a word outside it still falls back.
        let (phrase, _) = search_split("\"lmap oil\"", &keyword, None);
        assert!(phrase.fallback.is_empty() && phrase.results.is_empty());
        let (beside, _) = search_split("\"oil\" lmap", &keyword, None);
        assert_eq!(beside.fallback, ["lamp"]);
        assert_eq!(
            ids(&beside),
            ["a#0"],
            "the phrase's chunk, found by the corrected word too"
        );
        assert_eq!(beside.did_you_mean.as_deref(), Some("\"oil\" lamp"));
        // By document, BM25 scores a's two chunks together: "lamp fog" matches both of a's
        // chunks (a document holding both words) above b's single "lamp".
        let by_document = SearchOptions {
            per_document: true,
            ..keyword
        };
        let (pages, _) = search_split("lamp fog", &by_document, None);
        assert_eq!(ids(&pages)[0].split('#').next(), Some("a"));
        assert_eq!(pages.results.len(), 2, "one result per document");
    }

    #[test]
    fn filters_apply_before_the_cut_in_every_mode_and_counts_and_sort_follow_them() {
        let built = crate::index::tests::faceted();
        let reference = built.manifest.files.facets.clone().expect("the pages have filters");
        let facets_file = reference.split('@').next().unwrap().to_string();
        let vector = [0.0, 1.0, 0.0];
        let with = |json: serde_json::Value| -> SearchOptions {
            let mut options = serde_json::json!({"mode": "keyword", "k": 1, "depth": 1});
            options
                .as_object_mut()
                .unwrap()
                .extend(json.as_object().unwrap().clone());
            serde_json::from_value(options).unwrap()
        };
        let run = |options: &SearchOptions| {
            let v = options.mode.needs_model().then_some(&vector[..]);
            let (split, fetched) = search_split_of(crate::index::tests::faceted(), "lamp", options, v);
            let packed = Engine::new(full_store(&crate::index::tests::faceted()))
                .search_with_vector("lamp", v, options, &NoClock)
                .unwrap()
                .done()
                .unwrap();
            assert_eq!(split, packed, "{options:?}");
            let read_facets = fetched.iter().flatten().any(|f| *f == facets_file);
            assert_eq!(
                read_facets,
                options.uses_facets(),
                "{options:?}: the facets file only when used"
            );
            split
        };
        // The best page for "lamp" is a; with depth 1 and k 1 the filter still finds c.
        assert_eq!(ids(&run(&with(serde_json::json!({})))), ["a#0"]);
        for mode in ["keyword", "dense", "hybrid"] {
            let api = run(&with(serde_json::json!({"mode": mode, "filters": {"tags": "api"}})));
            assert_eq!(ids(&api), ["c#0"], "{mode}");
            let not_guide = run(&with(
                serde_json::json!({"mode": mode, "k": 4, "filters": {"tags": {"none": ["guide"]}}}),
            ));
            assert_eq!(not_guide.results.len(), 2, "{mode}: c and the page without tags");
        }
        let both = run(&with(
            serde_json::json!({"k": 4, "filters": {"tags": ["guide", "oil"]}}),
        ));
        assert_eq!(ids(&both), ["a#0"], "a list needs all its values");
        let any = run(&with(
            serde_json::json!({"k": 4, "filters": {"tags": {"any": ["oil", "api"]}, "lang": "en"}}),
        ));
        assert_eq!(ids(&any), ["a#0", "c#0"]);
        let nothing = run(&with(serde_json::json!({"filters": {"nope": "x"}})));
        assert!(nothing.results.is_empty(), "a filter no page has matches none");

        let counted = run(&with(
            serde_json::json!({"k": 4, "filter_counts": true, "filters": {"lang": "en"}}),
        ));
        let counts = counted.filter_counts.expect("asked for");
        assert_eq!(counts["tags"]["guide"], 1, "a (b is fr)");
        assert_eq!(counts["tags"]["api"], 1);
        assert_eq!(counts["lang"]["fr"], 0, "filtered out, still listed");
        assert_eq!(run(&with(serde_json::json!({}))).filter_counts, None, "not asked");

        let sorted = run(&with(serde_json::json!({"k": 4, "depth": 4, "sort": {"rank": "asc"}})));
        assert_eq!(ids(&sorted), ["b#0", "a#0", "c#0", "d#0"], "2 < 3 < 10, unranked last");
        let desc = run(&with(serde_json::json!({"k": 2, "depth": 4, "sort": {"rank": "desc"}})));
        assert_eq!(ids(&desc), ["c#0", "a#0"]);
        assert_eq!(desc.results[0].metadata, Default::default());

        let keyword = SearchOptions {
            mode: Mode::Keyword,
            ..Default::default()
        };
        let plain = Engine::new(full_store(&tiny()));
        let filtered = SearchOptions {
            filters: [("tags".to_string(), serde_json::from_str("\"x\"").unwrap())].into(),
            filter_counts: true,
            ..keyword
        };
        let response = plain.search("lamp", &filtered, &NoClock).unwrap().done().unwrap();
        assert!(response.results.is_empty(), "an index without facets has no values");
        assert_eq!(response.filter_counts, Some(Default::default()));
    }

    #[test]
    fn bad_queries_and_vectors_are_typed_errors() {
        let engine = Engine::new(full_store(&tiny()));
        let code = |r: Result<Step<SearchResponse>, SearchError>| r.unwrap_err().code().as_str();
        let hybrid = SearchOptions::default();
        assert_eq!(
            code(engine.search_with_vector("lamp", None, &hybrid, &NoClock)),
            "NO_MODEL"
        );
        assert_eq!(code(engine.search("lamp", &hybrid, &NoClock)), "NO_MODEL");
        assert_eq!(
            code(engine.search_with_vector("lamp", Some(&[1.0, 0.0]), &hybrid, &NoClock)),
            "BAD_ARGUMENT"
        );
        let keyword = SearchOptions {
            mode: Mode::Keyword,
            ..Default::default()
        };
        assert_eq!(code(engine.search("-lamp", &keyword, &NoClock)), "BAD_ARGUMENT");
        assert_eq!(code(engine.search("   ", &keyword, &NoClock)), "BAD_ARGUMENT");
        let bad_k = SearchOptions { k: 0, ..keyword };
        assert_eq!(code(engine.search("lamp", &bad_k, &NoClock)), "BAD_ARGUMENT");
    }

    #[test]
    fn a_dense_query_rescores_five_int8_vectors_per_result_and_no_more() {
        let seed = 7;
        println!("seed {seed}");
        let (texts, vectors, cluster) = crate::index::tests::clustered(seed, 512, 16);
        // A block per chunk, so the blocks asked for are the chunks rescored.
        let layout = crate::index::Layout {
            block_chunks: 1,
            rescore: 4,
            ..crate::index::Layout::default()
        };
        let built = || crate::index::tests::build(&texts, &vectors, 4, layout);
        let query = vectors[3].clone();
        let dense = SearchOptions {
            mode: Mode::Dense,
            k: 2,
            depth: Some(40),
            ..SearchOptions::default()
        };
        let blocks = |fetched: &[Vec<String>]| fetched.iter().flatten().filter(|n| n.starts_with("vec.")).count();
        let (response, fetched) = search_split_of(built(), "anything", &dense, Some(&query));
        assert_eq!(blocks(&fetched), 5 * 2, "max(rescore, 5 k) of the 40 candidates");
        // The query's own chunk first, as when every vector is scored, then one of its cluster
        // (32 near-equal vectors: which one, codes cannot tell).
        let exact = SearchOptions {
            vector_search: crate::options::VectorSearch::Exact,
            ..dense.clone()
        };
        let (truth, fetched_all) = search_split_of(built(), "anything", &exact, Some(&query));
        assert_eq!(blocks(&fetched_all), 512);
        assert_eq!(ids(&response)[0], ids(&truth)[0]);
        let chunk = |id: &str| {
            let (d, i) = id.trim_start_matches('d').split_once('#').unwrap();
            d.parse::<usize>().unwrap() * 4 + i.parse::<usize>().unwrap()
        };
        assert!(
            ids(&response).iter().all(|id| cluster[chunk(id)] == cluster[3]),
            "{:?}",
            ids(&response)
        );
        // The index's rescore when it is the larger.
        let one = SearchOptions { k: 1, ..dense };
        let (response, fetched) = search_split_of(built(), "anything", &one, Some(&query));
        assert_eq!(blocks(&fetched), 5);
        assert_eq!(response.results.len(), 1);
        let wide = crate::index::Layout { rescore: 30, ..layout };
        let (_, fetched) = search_split_of(
            crate::index::tests::build(&texts, &vectors, 4, wide),
            "anything",
            &one,
            Some(&query),
        );
        assert_eq!(blocks(&fetched), 30);
    }
    #[test]
    fn a_filtered_dense_query_reads_partitions_until_they_hold_enough_pages_that_pass() {
        let seed = 11;
        println!("seed {seed}");
        // 16 clusters, a document a chunk; the pages of cluster 5 pass the filter.
        let (texts, vectors, cluster) = crate::index::tests::clustered(seed, 512, 16);
        let documents: Vec<_> = (0..texts.len())
            .map(|d| {
                let mut doc = crate::index::tests::document(&format!("d{d}"));
                let tag = if cluster[d] == 5 { "five" } else { "other" };
                doc.filters.insert("cluster".into(), vec![tag.to_string()]);
                doc
            })
            .collect();
        let layout = crate::index::Layout {
            code_file_chunks: 32,
            probe: 1,
            ..crate::index::Layout::default()
        };
        let built = || crate::index::tests::build_of(&documents, &texts, &vectors, 1, layout);
        let query = vectors[3].clone();
        let codes = |fetched: &[Vec<String>]| fetched.iter().flatten().filter(|n| n.starts_with("codes.")).count();
        let dense: SearchOptions =
            serde_json::from_value(serde_json::json!({"mode": "dense", "k": 4, "depth": 8})).unwrap();
        let (near, fetched) = search_split_of(built(), "anything", &dense, Some(&query));
        assert_eq!(codes(&fetched), 1, "the one partition nearest, as the index says");
        assert!(ids(&near)
            .iter()
            .all(|id| cluster[id[1..].split('#').next().unwrap().parse::<usize>().unwrap()] == 3));
        let filtered: SearchOptions = serde_json::from_value(
            serde_json::json!({"mode": "dense", "k": 4, "depth": 8, "filters": {"cluster": "five"}}),
        )
        .unwrap();
        let clusters = |r: &SearchResponse| -> Vec<usize> {
            ids(r)
                .iter()
                .map(|id| cluster[id[1..].split('#').next().unwrap().parse::<usize>().unwrap()])
                .collect()
        };
        let (five, fetched) = search_split_of(built(), "anything", &filtered, Some(&query));
        // How many partitions the facets list for the pages that pass.
        let lists = |built: &crate::index::writer::BuiltIndex, tag: (&str, &str)| {
            let mut store = IndexStore::new(built.manifest.clone());
            store
                .load_files(built.files.iter().map(|(n, b)| (n.as_str(), b.as_slice())))
                .unwrap();
            let filters = serde_json::from_value(serde_json::json!({ tag.0: tag.1 })).unwrap();
            store.facets().unwrap().passing_partitions(&filters).unwrap().len()
        };
        let holding_five = lists(&built(), ("cluster", "five"));
        assert!(holding_five < 4, "cluster 5 is in {holding_five} partitions");
        assert_eq!(
            codes(&fetched),
            holding_five,
            "the 32 chunks that pass fit in one probe's partitions: every partition holding them is read, and only those"
        );
        assert_eq!(five.results.len(), 4, "k results, as k pages pass");
        assert!(clusters(&five).iter().all(|&c| c == 5));
        let (exact, _) = search_split_of(
            built(),
            "anything",
            &serde_json::from_value(serde_json::json!({"mode": "dense", "k": 4, "depth": 8,
                "filters": {"cluster": "five"}, "vector_search": "exact"}))
            .unwrap(),
            Some(&query),
        );
        assert_eq!(
            ids(&five),
            ids(&exact),
            "the partition holding the pages that pass is read"
        );
        // A filter most pages pass: probe partitions for the share that passes (512 / 480 of one).
        let broad: SearchOptions = serde_json::from_value(
            serde_json::json!({"mode": "dense", "k": 4, "depth": 8, "filters": {"cluster": "other"}}),
        )
        .unwrap();
        let (other, fetched) = search_split_of(built(), "anything", &broad, Some(&query));
        assert!(
            codes(&fetched) <= 2,
            "the nearest that hold chunks that pass hold enough of them: {}",
            codes(&fetched)
        );
        assert_eq!(ids(&other), ids(&near));
        // Half the pages pass, none of the query's own cluster: past the share's two, partitions
        // are read until they hold a partition's worth of chunks that pass.
        let halves: Vec<_> = (0..texts.len())
            .map(|d| {
                let mut doc = crate::index::tests::document(&format!("d{d}"));
                let tag = if cluster[d] >= 8 { "far" } else { "near" };
                doc.filters.insert("half".into(), vec![tag.to_string()]);
                doc
            })
            .collect();
        let far = |search: &str| -> SearchOptions {
            serde_json::from_value(serde_json::json!({"mode": "dense", "k": 4, "depth": 8,
                "filters": {"half": "far"}, "vector_search": search}))
            .unwrap()
        };
        let halved = || crate::index::tests::build_of(&halves, &texts, &vectors, 1, layout);
        let (got, fetched) = search_split_of(halved(), "anything", &far("auto"), Some(&query));
        assert!(cluster[3] < 8, "the query's cluster does not pass");
        assert_eq!(got.results.len(), 4, "k results, as k pages pass");
        assert!(clusters(&got).iter().all(|&c| c >= 8), "{:?}", clusters(&got));
        println!("partitions read with half the pages passing: {}", codes(&fetched));
        let holding_far = lists(&halved(), ("half", "far"));
        assert!(
            codes(&fetched) < holding_far,
            "{} partitions read: only some of the {holding_far} holding pages that pass",
            codes(&fetched)
        );
        let (exact, _) = search_split_of(halved(), "anything", &far("exact"), Some(&query));
        assert_eq!(ids(&got), ids(&exact));
        // A deep list reads enough partitions to hold twice its depth, and a longer top k
        // `probe` partitions for every 10 results.
        let deep: SearchOptions =
            serde_json::from_value(serde_json::json!({"mode": "dense", "k": 4, "depth": 64})).unwrap();
        let (_, fetched) = search_split_of(built(), "anything", &deep, Some(&query));
        assert_eq!(codes(&fetched), 4);
        let thirty: SearchOptions =
            serde_json::from_value(serde_json::json!({"mode": "dense", "k": 30, "depth": 30})).unwrap();
        let (_, fetched) = search_split_of(built(), "anything", &thirty, Some(&query));
        assert_eq!(codes(&fetched), 3);
    }
}
