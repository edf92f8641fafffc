//! The stages of a query over an index store, in the order [`crate::search::Engine`] runs them.
//! Each takes the query's [`QueryPlan`] and what earlier stages found, and answers a [`Step`]:
//! its result, or the files it needs first (a split index fetches them and the query runs again;
//! a packed index never needs any).
//!
//! ```text
//! first_needs → admissible → probed → binary ┬→ keyword (fallback, RM3) ┬→ fuse → rerank → results
//!                                            └→ dense (int8 rescoring) ─┘
//! ```

use std::collections::{HashMap, HashSet};

use crate::analyzer::Analyzer;
use crate::embed::Reranker;
use crate::index::facets::Passing;
use crate::index::{Facets, IndexStore, Probe};
use crate::options::{Mode, SearchOptions, VectorSearch, RESCORE_PER_RESULT};
use crate::search::plan::QueryPlan;
use crate::search::types::{FilterCounts, SearchError, SearchResult, Step};

use super::{
    assemble, binary_scored, estimate_from_codes, expand_query, fallback_terms, filter, fuse, rescore,
    weighted_keyword_candidates, Bm25Level, Candidate, FuseOptions, Ranked, VectorMethod, FALLBACK_WEIGHT,
    FEEDBACK_CHUNKS,
};

/// Keyword shards a fallback reads at most for one word before it narrows its range.
pub const FALLBACK_MAX_SHARDS: usize = 4;

/// Chunks holding a phrase's words checked for the phrase before the retrievers cut their lists
/// (more are checked as results).
pub const PHRASE_CHECK_LIMIT: usize = 500;

/// The binary stage's candidates: every admissible chunk whose code scored among the best, best
/// first, of which the first `rescored` are rescored with their int8 vectors.
#[derive(Debug, Clone, PartialEq)]
pub struct Binary {
    /// Rescored with int8 vectors, or every chunk's exactly.
    pub method: VectorMethod,
    /// Each candidate with its code score, best first (ties to the lower chunk).
    pub scored: Vec<(u32, f32)>,
    /// How many of the best are rescored.
    pub rescored: usize,
}

impl Binary {
    /// The candidates rescored with int8 vectors.
    pub fn rescored_chunks(&self) -> impl Iterator<Item = u32> + '_ {
        self.scored.iter().take(self.rescored).map(|&(c, _)| c)
    }

    /// Every candidate, by chunk.
    pub fn chunks(&self) -> Vec<u32> {
        let mut chunks: Vec<u32> = self.scored.iter().map(|&(c, _)| c).collect();
        chunks.sort_unstable();
        chunks
    }
}

/// Which chunks may be results: not those holding an excluded word, and with phrases only those
/// that may hold them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Admissible {
    /// Chunks holding every term of an excluded word.
    pub banned: HashSet<u32>,
    /// With phrases: the chunks that hold all their terms (and, when few enough to read, the
    /// phrases themselves).
    pub required: Option<HashSet<u32>>,
}

impl Admissible {
    /// Whether `chunk` may be a result.
    pub fn allows(&self, chunk: u32) -> bool {
        !self.banned.contains(&chunk) && self.required.as_ref().is_none_or(|r| r.contains(&chunk))
    }

    /// A retriever's list without the chunks that cannot be results, cut to `depth`.
    pub fn cut(&self, list: Ranked, depth: usize) -> Ranked {
        list.into_iter().filter(|(c, _)| self.allows(*c)).take(depth).collect()
    }

    /// The admissible chunks of the first `depth` documents of `list` (a list of whole
    /// documents' chunks, [`Bm25Level::Documents`]).
    pub fn cut_documents(&self, list: Ranked, depth: usize, document_of: impl Fn(u32) -> Option<u32>) -> Ranked {
        let mut documents = HashSet::new();
        list.into_iter()
            .filter(|(c, _)| self.allows(*c))
            .filter(|(c, _)| {
                let d = document_of(*c);
                documents.contains(&d) || (documents.len() < depth && documents.insert(d))
            })
            .collect()
    }

    /// How far down a retriever ranks so that `depth` admissible chunks remain after the cut:
    /// every chunk (of `chunks`) with phrases, else `depth` plus the banned.
    pub fn width(&self, depth: usize, chunks: usize) -> usize {
        match self.required {
            Some(_) => chunks,
            None => depth.saturating_add(self.banned.len()),
        }
    }
}

/// The keyword retriever's list, and the index terms it searched for instead of the query's
/// words the index does not hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeywordHits {
    /// Best first.
    pub hits: Ranked,
    /// The fallback terms ([`fallback_terms`]), or nothing.
    pub fallback: Vec<String>,
    /// Each query term the index does not hold, with the nearest term searched for in its place
    /// (the most frequent of the nearest): what "did you mean" offers.
    pub corrections: Vec<(String, String)>,
}

/// The fused list in the reranker's order, with its scores by chunk.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reranked {
    /// Candidates, best first.
    pub candidates: Vec<Candidate>,
    /// The cross-encoder's score of each chunk it read.
    pub scores: HashMap<u32, f32>,
}

/// One query's stages over a store.
#[derive(Debug, Clone, Copy)]
pub struct Stages<'a> {
    /// The index's files, as added so far.
    pub store: &'a IndexStore,
    /// The index's analyzer.
    pub analyzer: &'a Analyzer,
    /// The query.
    pub plan: &'a QueryPlan,
    /// Validated options.
    pub options: &'a SearchOptions,
}

/// Sorted, each once.
fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names.dedup();
    names
}

impl Stages<'_> {
    /// The files every query reads first: the norms and the shards of its terms (searched,
    /// excluded and in phrases), and with a query vector the calibration, the centroids and the
    /// binary codes of the partitions it probes ([`Stages::probe`]).
    pub fn first_needs(&self, vector: Option<&[f32]>) -> Vec<String> {
        let mut need = self.store.keyword_needs(&self.plan.terms);
        need.extend(self.store.keyword_needs(&self.plan.excluded_terms()));
        need.extend(self.store.keyword_needs(&self.plan.phrase_terms()));
        if let Some(vector) = vector {
            need.extend(match (self.first_probe(), self.passing_order(vector)) {
                // With filters and the facets' lists, the nearest partitions that hold pages
                // that pass.
                (Some(probe), Some(order)) => {
                    let mut first = self.store.code_pages_needs();
                    first.extend(self.store.partition_needs(&order[..probe.min(order.len())]));
                    first
                }
                (Some(probe), None) => self.store.code_needs(Some(vector), probe),
                // Filters are weighed once the facets are here: until then no codes.
                (None, _) => self.store.code_pages_needs(),
            });
        }
        if self.options.uses_facets() {
            need.extend(self.store.facets_needs());
        }
        sorted(need)
    }

    /// How many partitions of binary codes a dense query reads first: `layout.probe` for every
    /// 10 results asked for (at least `layout.probe`: a deeper top k needs more partitions for
    /// the same recall of it), and enough to hold twice its depth; every one with
    /// `vector_search: exact`. A query with filters may read more ([`Stages::probed`]).
    fn probe(&self) -> usize {
        match self.options.vector_search {
            VectorSearch::Exact => usize::MAX,
            VectorSearch::Auto => {
                let manifest = self.store.manifest();
                let probe = manifest.layout.probe;
                let for_k = probe.saturating_mul(self.options.k).div_ceil(10);
                let per_partition = manifest.files.vectors.codes.chunks_per_file.max(1);
                let for_depth = self.options.depth().saturating_mul(2).div_ceil(per_partition);
                probe.max(for_k).max(for_depth)
            }
        }
    }

    /// How many partitions a dense query reads first: [`Stages::probe`]; with filters, once the
    /// facets and the norms are added (`None` before), that many for the share of the chunks
    /// whose pages pass among those of the partitions that may hold them (as many as hold the same
    /// count of chunks that pass, if those are spread evenly), and every one of those partitions
    /// when the chunks that pass are no more than [`Stages::probe`] partitions hold (every one of
    /// them is needed). The partitions that may hold them are those the facets list for the pages
    /// that pass (2.8), else all.
    fn first_probe(&self) -> Option<usize> {
        let probe = self.probe();
        if self.options.filters.is_empty() || probe == usize::MAX {
            return Some(probe);
        }
        let passing = self.passing_chunks()?;
        let manifest = self.store.manifest();
        let per_partition = manifest.files.vectors.codes.chunks_per_file.max(1);
        if passing <= probe.saturating_mul(per_partition) {
            return Some(usize::MAX);
        }
        let around = match self.passing_partitions() {
            Some(partitions) => partitions
                .len()
                .saturating_mul(per_partition)
                .min(manifest.counts.chunks),
            None => manifest.counts.chunks,
        };
        Some(probe.saturating_mul(around).div_ceil(passing))
    }

    /// How many chunks belong to pages that pass the query's filters; `None` until the facets (if
    /// the index has them) and the norms are added.
    fn passing_chunks(&self) -> Option<usize> {
        if !self.store.facets_needs().is_empty() {
            return None;
        }
        self.store.norms()?;
        let chunks = self.store.manifest().counts.chunks;
        let Some(passing) = self.passing() else {
            return Some(chunks);
        };
        let count = |docs: &mut dyn Iterator<Item = &u32>| docs.map(|&d| self.chunks_of(d).len()).sum::<usize>();
        Some(match &passing.required {
            Some(required) => count(&mut required.iter().filter(|d| !passing.excluded.contains(d))),
            None => chunks.saturating_sub(count(&mut passing.excluded.iter())),
        })
    }

    /// The partitions that may hold chunks of the pages that pass the query's filters,
    /// increasing, when the facets list each filter value's partitions (2.8) and a filter requires
    /// a value; `None` otherwise (any partition may hold them), and before the facets are added.
    fn passing_partitions(&self) -> Option<Vec<usize>> {
        let partitions = self.store.facets()?.passing_partitions(&self.options.filters)?;
        Some(partitions.into_iter().map(|p| p as usize).collect())
    }

    /// The partitions of binary codes a dense query reads: the [`Stages::first_probe`] nearest
    /// it. With filters, only partitions that hold chunks of pages that pass are read (when the
    /// facets list them, 2.8), and the nearest may hold fewer such chunks than the share said, so
    /// partitions are read nearest first until those read hold as many admissible chunks as
    /// [`Stages::probe`] partitions hold chunks: about what an unfiltered query reads of all, read
    /// of those that pass around the query, and `k` results when `k` pass. Each further round
    /// asks for as many partitions as the admissible chunks found so far say hold that many.
    /// `Done(None)` before the centroids (and, with filters, the facets) are added.
    pub fn probed(&self, vector: &[f32], admissible: &Admissible) -> Step<Option<Probe>> {
        let Some(first) = self.first_probe() else {
            return Step::Done(None);
        };
        // With the facets' lists, only the partitions that may hold pages that pass.
        let passing_order = self.passing_order(vector);
        let restricted = passing_order.is_some();
        if !restricted {
            let probed = self.store.probed(vector, first);
            if self.options.filters.is_empty() || !matches!(probed, Some(Probe::These(_))) {
                return Step::Done(probed);
            }
        }
        let Some(order) = passing_order.or_else(|| self.store.nearest_partitions(vector)) else {
            return Step::Done(None);
        };
        let per_partition = self.store.manifest().files.vectors.codes.chunks_per_file.max(1);
        let target = self.probe().saturating_mul(per_partition);
        let mut n = first;
        while n < order.len() {
            let mut these = order[..n].to_vec();
            these.sort_unstable();
            let need = self.store.partition_needs(&these);
            if !need.is_empty() {
                return Step::Need(need);
            }
            let probed = Probe::These(these);
            let seen = self
                .store
                .codes_in(&probed)
                .filter(|(c, _, _)| admissible.allows(*c))
                .count();
            if seen >= target {
                return Step::Done(Some(probed));
            }
            // Four times as many while none read holds an admissible chunk.
            let wanted = match seen {
                0 => n.saturating_mul(4),
                _ => n.saturating_mul(target).div_ceil(seen),
            };
            n = wanted.max(n + 1);
        }
        let need = self.store.partition_needs(&order);
        if !need.is_empty() {
            return Step::Need(need);
        }
        Step::Done(Some(match restricted {
            true => {
                let mut these = order;
                these.sort_unstable();
                Probe::These(these)
            }
            false => Probe::All,
        }))
    }

    /// The partitions holding chunks of pages that pass the query's filters, nearest `vector`
    /// first, when the facets list them (2.8) and the centroids are added; `None` otherwise, and
    /// without filters or with `vector_search: exact`.
    fn passing_order(&self, vector: &[f32]) -> Option<Vec<usize>> {
        if self.options.filters.is_empty() || self.options.vector_search == VectorSearch::Exact {
            return None;
        }
        let passing = self.passing_partitions()?;
        let mut order = self.store.nearest_partitions(vector)?;
        order.retain(|p| passing.binary_search(p).is_ok());
        Some(order)
    }

    /// The chunks that may be results. With phrases, when few chunks hold all their terms, their
    /// fragments are read now and only those holding the phrases stay, so the retrievers' lists
    /// are cut after them (more are checked as results, by [`Stages::fuse`]). With filters, only
    /// the chunks of the pages that pass them.
    pub fn admissible(&self) -> Step<Admissible> {
        let mut banned: HashSet<u32> = self.plan.excluded.iter().flat_map(|t| self.chunks_holding(t)).collect();
        let phrase_terms = self.plan.phrase_terms();
        let mut required = (!phrase_terms.is_empty()).then(|| self.chunks_holding(&phrase_terms));
        if let Some(r) = required.as_mut().filter(|r| r.len() <= PHRASE_CHECK_LIMIT) {
            let need = self.store.fragment_needs(r.iter().copied());
            if !need.is_empty() {
                return Step::Need(need);
            }
            r.retain(|&c| self.holds_phrases(c) == Some(true));
        }
        if let Some(passing) = self.passing() {
            banned.extend(passing.excluded.iter().flat_map(|&d| self.chunks_of(d)));
            if let Some(documents) = passing.required {
                let allowed: HashSet<u32> = documents.iter().flat_map(|&d| self.chunks_of(d)).collect();
                required = Some(match required {
                    None => allowed,
                    Some(r) => r.intersection(&allowed).copied().collect(),
                });
            }
        }
        Step::Done(Admissible { banned, required })
    }

    /// The pages the query's filters let through (`None`: it has none). An index without a
    /// facets file has no values: only filters of `none` lists pass there.
    fn passing(&self) -> Option<Passing> {
        let none = Facets::default();
        self.store.facets().unwrap_or(&none).passing(&self.options.filters)
    }

    /// The chunks of document `doc` (the norms list documents in order).
    fn chunks_of(&self, doc: u32) -> std::ops::Range<u32> {
        let documents = self.store.norms().map_or(&[][..], |n| &n.documents[..]);
        let from = documents.partition_point(|&d| d < doc);
        let to = documents.partition_point(|&d| d <= doc);
        from as u32..to as u32
    }

    /// For every filter value, the matching pages that have it ([`SearchOptions::filter_counts`]):
    /// the pages of the chunks holding a searched term (the query's, or the fallback's in their
    /// place) and of the dense retriever's candidates (`binary`), those `admissible` only.
    pub fn filter_counts(
        &self,
        admissible: &Admissible,
        keyword: &KeywordHits,
        binary: Option<&[u32]>,
    ) -> FilterCounts {
        let Some(facets) = self.store.facets() else {
            return FilterCounts::new();
        };
        let mut chunks: HashSet<u32> = binary.unwrap_or_default().iter().copied().collect();
        if self.options.mode != Mode::Dense {
            for term in self.plan.terms.iter().chain(&keyword.fallback) {
                chunks.extend(self.store.postings(term).map(|p| p.chunks()).unwrap_or_default());
            }
        }
        let documents: HashSet<u32> = chunks
            .into_iter()
            .filter(|&c| admissible.allows(c))
            .filter_map(|c| self.document_of(c))
            .collect();
        facets.counts(&documents)
    }

    /// The binary stage: the chunks of the partitions `probed` ([`Stages::probed`]) whose codes
    /// score best for `vector` (the best `layout.rescore`, at least `depth`, or every chunk with
    /// `vector_search: exact`), among those admissible; the best `layout.rescore` of them, at least [`RESCORE_PER_RESULT`] per
    /// result asked for, are rescored with their int8 vectors.
    /// `None` before the calibration is added.
    pub fn binary(&self, vector: &[f32], probed: &Probe, admissible: &Admissible) -> Option<Binary> {
        let meta = self.store.meta()?;
        let manifest = self.store.manifest();
        let chunks = manifest.counts.chunks;
        let (method, count, rescored) = match self.options.vector_search {
            VectorSearch::Exact => (VectorMethod::Exact, chunks, chunks),
            VectorSearch::Auto => (
                VectorMethod::Rescored,
                manifest.layout.rescore.max(self.options.depth()),
                manifest
                    .layout
                    .rescore
                    .max(self.options.k.saturating_mul(RESCORE_PER_RESULT)),
            ),
        };
        let scored = match &admissible.required {
            // The chunks that can hold the phrases, best binary codes first.
            Some(_) => {
                let mut all = binary_scored(meta, self.store.codes_in(probed), vector, chunks);
                all.retain(|(c, _)| admissible.allows(*c));
                all.truncate(count);
                all
            }
            None => {
                let wide = count.saturating_add(admissible.banned.len());
                let mut some = binary_scored(meta, self.store.codes_in(probed), vector, wide);
                some.retain(|(c, _)| admissible.allows(*c));
                some
            }
        };
        Some(Binary {
            method,
            rescored: rescored.min(scored.len()),
            scored,
        })
    }

    /// The vector blocks the binary stage's rescored candidates need (asked for together with
    /// the keyword stage's files, so a split index fetches them in one round).
    pub fn block_needs(&self, binary: &Binary) -> Vec<String> {
        self.store.block_needs(binary.rescored_chunks())
    }

    /// The keyword retriever: BM25 over the query's terms, the top `depth` admissible chunks;
    /// the words the index does not hold replaced by their nearest terms; then, unless
    /// `query_expansion` is off, RM3 expansion from the top chunks, rescored. Nothing in dense
    /// mode.
    pub fn keyword(&self, admissible: &Admissible) -> Step<KeywordHits> {
        if self.options.mode == Mode::Dense {
            return Step::Done(KeywordHits::default());
        }
        let manifest = self.store.manifest();
        let params = self.options.bm25.map_or(manifest.bm25, |o| o.over(manifest.bm25));
        let depth = self.options.depth();
        let wide = admissible.width(depth, manifest.counts.chunks);
        let mut terms = self.plan.terms.clone();
        let mut weighted: Vec<(String, f32)> = terms.iter().map(|t| (t.clone(), 1.0)).collect();
        let mut fallback = Vec::new();
        let mut corrections = Vec::new();
        let level = if self.options.scores_documents() {
            Bm25Level::Documents
        } else {
            Bm25Level::Chunks
        };
        // A quoted phrase is taken as written: its words are never replaced.
        let quoted: HashSet<String> = self.plan.phrase_terms().into_iter().collect();
        let missing: Vec<String> = terms
            .iter()
            .filter(|t| self.store.postings(t).is_none() && !quoted.contains(*t))
            .cloned()
            .collect();
        if !missing.is_empty() {
            // A word of the query the index does not hold (a typo, or a word being typed) is
            // searched for as its nearest terms (each weighted FALLBACK_WEIGHT), beside the
            // words it holds.
            let nearest = match self.fallback(&missing) {
                Step::Done(f) => f,
                Step::Need(need) => return Step::Need(need),
            };
            terms.retain(|t| !missing.contains(t));
            weighted.retain(|(t, _)| !missing.contains(t));
            for (term, near) in nearest {
                if let Some(best) = near.first() {
                    corrections.push((term, best.clone()));
                }
                for t in near {
                    if !weighted.iter().any(|(w, _)| *w == t) {
                        weighted.push((t.clone(), FALLBACK_WEIGHT));
                        terms.push(t.clone());
                        fallback.push(t);
                    }
                }
            }
        }
        let cut = |list: Ranked| match level {
            Bm25Level::Chunks => admissible.cut(list, depth),
            Bm25Level::Documents => admissible.cut_documents(list, depth, |c| self.document_of(c)),
        };
        let mut hits = cut(weighted_keyword_candidates(self.store, &weighted, params, wide, level));
        if self.options.query_expansion && !hits.is_empty() {
            let expanded = match self.expansion(&terms, &hits) {
                Step::Done(e) => e,
                Step::Need(need) => return Step::Need(need),
            };
            hits = cut(weighted_keyword_candidates(self.store, &expanded, params, wide, level));
        }
        Step::Done(KeywordHits {
            hits,
            fallback,
            corrections,
        })
    }

    /// The nearest index terms to each of `terms` ([`fallback_terms`]), from the shards of the
    /// terms that start as each does ([`Stages::fallback_range`]); a term none is near to is
    /// left out.
    fn fallback(&self, terms: &[String]) -> Step<Vec<(String, Vec<String>)>> {
        let mut ranges: Vec<(String, String)> = Vec::new();
        let mut need: Vec<String> = Vec::new();
        for term in terms {
            match self.fallback_range(term) {
                Ok(Some(range)) => ranges.push(range),
                Ok(None) => {}
                Err(pages) => need.extend(pages),
            }
        }
        need.extend(
            ranges
                .iter()
                .flat_map(|(from, to)| self.store.term_range_needs(from, to)),
        );
        if !need.is_empty() {
            return Step::Need(sorted(need));
        }
        Step::Done(
            terms
                .iter()
                .filter_map(|t| {
                    let candidates = self
                        .fallback_range(t)
                        .ok()
                        .flatten()
                        .map(|(from, to)| self.store.terms_between(&from, &to))
                        .unwrap_or_default();
                    let near = fallback_terms(t, &candidates);
                    (!near.is_empty()).then(|| (t.clone(), near))
                })
                .collect(),
        )
    }

    /// The range of index terms a fallback for `term` looks among: those starting with its first
    /// character, or with its first two when that range spans more than
    /// [`FALLBACK_MAX_SHARDS`] keyword shards (a large index: fewer bytes fetched); or the
    /// directory pages to add to count them.
    fn fallback_range(&self, term: &str) -> Result<Option<(String, String)>, Vec<String>> {
        let Some(first) = prefix_range(term, 1) else {
            return Ok(None);
        };
        if self.store.shard_count_between(&first.0, &first.1)? <= FALLBACK_MAX_SHARDS {
            return Ok(Some(first));
        }
        Ok(prefix_range(term, 2).or(Some(first)))
    }

    /// RM3: `terms` expanded from the top [`FEEDBACK_CHUNKS`] of `hits` ([`expand_query`]), once
    /// their fragments and the shards of the terms they add are here.
    fn expansion(&self, terms: &[String], hits: &Ranked) -> Step<Vec<(String, f32)>> {
        let top: Vec<(u32, f32)> = hits.iter().take(FEEDBACK_CHUNKS).copied().collect();
        let need = self.store.fragment_needs(top.iter().map(|(c, _)| *c));
        if !need.is_empty() {
            return Step::Need(need);
        }
        let fields = self.store.manifest().fields;
        let feedback: Vec<(Vec<String>, f32)> = top
            .iter()
            .filter_map(|&(c, s)| {
                // What the index scored: the title, heading path and text, weighted.
                let fragment = self.store.fragment(c)?;
                let chunk = fragment.chunk(c)?;
                let title = fragment.document(chunk.doc).map_or("", |d| d.title.as_str());
                Some((
                    fields.terms(
                        self.analyzer,
                        title,
                        &chunk.heading_path,
                        &chunk.text,
                        &chunk.code,
                        &chunk.weighted,
                    ),
                    s,
                ))
            })
            .collect();
        let expanded = expand_query(terms, &feedback);
        let added: Vec<String> = expanded.iter().map(|(t, _)| t.clone()).collect();
        let need = self.store.keyword_needs(&added);
        if !need.is_empty() {
            return Step::Need(need);
        }
        Step::Done(expanded)
    }

    /// The dense retriever: the binary stage's rescored candidates ranked by their int8 vectors'
    /// dot product with `vector`, the others by their code scores mapped onto the same scale
    /// ([`estimate_from_codes`]), the top `depth` at or above `min_similarity`, once the rescored
    /// candidates' blocks are here.
    pub fn dense(&self, vector: &[f32], binary: &Binary) -> Step<Ranked> {
        let need = self.block_needs(binary);
        if !need.is_empty() {
            return Step::Need(need);
        }
        let (head, tail) = binary.scored.split_at(binary.rescored);
        let dots: Vec<(u32, f32)> = head
            .iter()
            .filter_map(|&(c, _)| Some((c, self.store.dot(c, vector)?)))
            .collect();
        let pairs: Vec<(f32, f32)> = head
            .iter()
            .zip(&dots)
            .map(|(&(_, code), &(_, dot))| (code, dot))
            .collect();
        let tail_codes: Vec<f32> = tail.iter().map(|&(_, s)| s).collect();
        let estimated: Vec<(u32, f32)> = tail
            .iter()
            .map(|&(c, _)| c)
            .zip(estimate_from_codes(&pairs, &tail_codes))
            .collect();
        let exact: HashMap<u32, f32> = dots.into_iter().collect();
        let rescored: Vec<u32> = binary.rescored_chunks().collect();
        Step::Done(rescore(
            &rescored,
            &|c| exact.get(&c).copied(),
            &estimated,
            self.options.depth(),
            self.options.min_similarity,
        ))
    }

    /// The chunk's document number, from the norms.
    fn document_of(&self, chunk: u32) -> Option<u32> {
        self.store.norms()?.documents.get(chunk as usize).copied()
    }

    /// One ranking for the mode ([`fuse`]); with phrases, the chunks known not to hold them are
    /// dropped (those whose fragments are not here yet are checked as results).
    pub fn fuse(&self, dense: &[(u32, f32)], keyword: &[(u32, f32)]) -> Vec<Candidate> {
        let o = self.options;
        let fuse_options = FuseOptions {
            fusion: o.fusion,
            dense_weight: o.dense_weight as f32,
            documents: o.fuse_documents,
            page_score: o.page_score,
        };
        let mut fused = fuse(o.mode, dense, keyword, &fuse_options, &|c| self.document_of(c));
        if !self.plan.phrases.is_empty() {
            fused.retain(|c| self.holds_phrases(c.chunk) != Some(false));
        }
        fused
    }

    /// A cross-encoder reads the best `rerank_depth` candidates again with the query and puts
    /// them in its order (stable: equal scores keep the fused order); their fragments and those
    /// of the first `k` are asked for together. Without a reranker or with `rerank_depth` 0, the
    /// fused order.
    pub fn rerank(
        &self,
        reranker: Option<&dyn Reranker>,
        mut fused: Vec<Candidate>,
    ) -> Result<Step<Reranked>, SearchError> {
        let mut scores = HashMap::new();
        let Some(reranker) = reranker.filter(|_| self.options.rerank_depth > 0) else {
            return Ok(Step::Done(Reranked {
                candidates: fused,
                scores,
            }));
        };
        let head = self.options.rerank_depth.min(fused.len());
        let need = self
            .store
            .fragment_needs(fused.iter().take(head.max(self.options.k)).map(|c| c.chunk));
        if !need.is_empty() {
            return Ok(Step::Need(need));
        }
        let fields = self.store.manifest().fields;
        let mut scored: Vec<(f32, Candidate)> = Vec::with_capacity(head);
        for candidate in fused.drain(..head) {
            let passage = self.store.fragment(candidate.chunk).and_then(|f| {
                let chunk = f.chunk(candidate.chunk)?;
                let title = f.document(chunk.doc).map_or("", |d| d.title.as_str());
                Some(fields.embed_input(title, &chunk.heading_path, &chunk.text))
            });
            let score = match passage {
                Some(passage) => reranker.score(&self.plan.text, &passage)?,
                None => f32::NEG_INFINITY,
            };
            scores.insert(candidate.chunk, score);
            scored.push((score, candidate));
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        fused.splice(0..0, scored.into_iter().map(|(_, c)| c));
        Ok(Step::Done(Reranked {
            candidates: fused,
            scores,
        }))
    }

    /// The first `k` candidates scoring at least `score_threshold` (at most
    /// [`SearchOptions::chunks_per_document`] of each document), assembled from their fragments
    /// once those are here.
    pub fn results(&self, reranked: Reranked, dense: &[(u32, f32)], keyword: &[(u32, f32)]) -> Step<Vec<SearchResult>> {
        let o = self.options;
        let mut candidates = reranked.candidates;
        if let (Some((key, &order)), Some(facets)) = (o.sort.iter().next(), self.store.facets()) {
            facets.sort_by(&mut candidates, key, order, |c| self.document_of(c.chunk));
        }
        let kept = filter(candidates, o.k, o.score_threshold, o.chunks_per_document(), |c| {
            self.document_of(c)
        });
        let need = self.store.fragment_needs(kept.iter().map(|c| c.chunk));
        if !need.is_empty() {
            return Step::Need(need);
        }
        Step::Done(assemble(self.store, &kept, dense, keyword, &reranked.scores))
    }

    /// The chunks that hold every one of `terms` (the store holds their shards).
    fn chunks_holding(&self, terms: &[String]) -> HashSet<u32> {
        let mut holding: Option<HashSet<u32>> = None;
        for t in terms {
            let chunks: HashSet<u32> = self
                .store
                .postings(t)
                .map(|p| p.chunks().into_iter().collect())
                .unwrap_or_default();
            holding = Some(match holding {
                None => chunks,
                Some(h) => h.intersection(&chunks).copied().collect(),
            });
        }
        holding.unwrap_or_default()
    }

    /// Whether a chunk holds every phrase (in its text, a heading, or its document's title when
    /// BM25 reads titles), or `None` while its fragment is not here. Each field is read once
    /// for all the phrases.
    fn holds_phrases(&self, chunk: u32) -> Option<bool> {
        let fragment = self.store.fragment(chunk)?;
        let c = fragment.chunk(chunk)?;
        let title = fragment
            .document(c.doc)
            .filter(|_| self.store.manifest().fields.title_weight > 0)
            .map(|d| d.title.as_str());
        let fields: Vec<_> = std::iter::once(c.text.as_str())
            .chain(c.heading_path.iter().map(String::as_str))
            .chain(title)
            .map(|text| self.analyzer.phrase_text(text))
            .collect();
        Some(self.plan.phrases.iter().all(|p| fields.iter().any(|f| f.holds(p))))
    }
}

/// The range of terms that start with `term`'s first `n` characters (`None` when it is shorter):
/// from that prefix to the prefix with its last character incremented.
fn prefix_range(term: &str, n: usize) -> Option<(String, String)> {
    let prefix: Vec<char> = term.chars().take(n).collect();
    if prefix.len() < n {
        return None;
    }
    let (last, head) = prefix.split_last()?;
    let next = (u32::from(*last) + 1..=u32::from(char::MAX)).find_map(char::from_u32)?;
    let from: String = prefix.iter().collect();
    let to: String = head.iter().chain(std::iter::once(&next)).collect();
    Some((from, to))
}

#[cfg(all(test, feature = "indexer"))]
mod tests {
    use super::*;
    use crate::index::tests::{full_store, tiny};

    /// A store of `tiny()` holding only its manifest and pages (a split index before any fetch
    /// of what a query needs).
    fn empty_store() -> (IndexStore, crate::index::writer::BuiltIndex) {
        let built = tiny();
        (crate::index::tests::paged_store(&built), built)
    }

    fn add(store: &mut IndexStore, built: &crate::index::writer::BuiltIndex, names: &[String]) {
        for name in names {
            store.add(name, crate::index::tests::bytes_of(built, name)).unwrap();
        }
    }

    fn stages<'a>(
        store: &'a IndexStore,
        analyzer: &'a Analyzer,
        plan: &'a QueryPlan,
        options: &'a SearchOptions,
    ) -> Stages<'a> {
        Stages {
            store,
            analyzer,
            plan,
            options,
        }
    }

    fn plan(query: &str, mode: Mode) -> QueryPlan {
        QueryPlan::new(query, &Analyzer::english(), mode).unwrap()
    }

    #[test]
    fn a_query_first_needs_the_norms_and_its_shards_then_the_codes() {
        let (mut store, built) = empty_store();
        let a = Analyzer::english();
        let o = SearchOptions::default();
        let p = plan("lamp -fog", Mode::Hybrid);
        let s = stages(&store, &a, &p, &o);
        let keyword_only = s.first_needs(None);
        assert!(keyword_only.iter().any(|n| n.starts_with("norms.")), "{keyword_only:?}");
        let with_vectors = s.first_needs(Some(&[1.0, 0.0, 0.0]));
        assert!(with_vectors.iter().any(|n| n.starts_with("vmeta.")), "{with_vectors:?}");
        assert!(with_vectors.len() > keyword_only.len());
        add(&mut store, &built, &with_vectors);
        assert!(stages(&store, &a, &p, &o)
            .first_needs(Some(&[1.0, 0.0, 0.0]))
            .is_empty());
    }

    #[test]
    fn exclusions_ban_chunks_and_phrases_require_them() {
        let store = full_store(&tiny());
        let a = Analyzer::english();
        let o = SearchOptions::default();
        let p = plan("lamp -oil", Mode::Keyword);
        let Step::Done(admissible) = stages(&store, &a, &p, &o).admissible() else {
            panic!("a full store needs nothing");
        };
        assert_eq!(admissible.banned, HashSet::from([0]));
        assert!(!admissible.allows(0) && admissible.allows(2));
        let p = plan("\"lamp lens\"", Mode::Keyword);
        let Step::Done(admissible) = stages(&store, &a, &p, &o).admissible() else {
            panic!();
        };
        assert_eq!(admissible.required, Some(HashSet::from([2])));
        assert_eq!(admissible.cut(vec![(0, 3.0), (2, 1.0)], 10), [(2, 1.0)]);
        assert_eq!(admissible.width(10, 3), 3, "with phrases, every chunk is ranked");
    }

    #[test]
    fn phrases_read_their_fragments_first_over_a_split_index() {
        let (mut store, built) = empty_store();
        let a = Analyzer::english();
        let o = SearchOptions::default();
        let p = plan("\"lamp lens\"", Mode::Keyword);
        let first = stages(&store, &a, &p, &o).first_needs(None);
        add(&mut store, &built, &first);
        let Step::Need(fragments) = stages(&store, &a, &p, &o).admissible() else {
            panic!("the phrase's candidates are in fragments not fetched yet");
        };
        assert!(fragments.iter().all(|n| n.starts_with("frag.")), "{fragments:?}");
        add(&mut store, &built, &fragments);
        assert!(matches!(stages(&store, &a, &p, &o).admissible(), Step::Done(_)));
    }

    #[test]
    fn keyword_falls_back_to_near_terms_and_expands_only_when_asked() {
        let store = full_store(&tiny());
        let a = Analyzer::english();
        let o = SearchOptions {
            mode: Mode::Keyword,
            query_expansion: false,
            ..SearchOptions::default()
        };
        let p = plan("lmap", Mode::Keyword);
        let s = stages(&store, &a, &p, &o);
        let Step::Done(hits) = s.keyword(&Admissible::default()) else {
            panic!();
        };
        assert_eq!(hits.fallback, ["lamp"]);
        assert_eq!(hits.hits.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [0, 2]);
        let p = plan("lamp", Mode::Keyword);
        let plain = stages(&store, &a, &p, &o).keyword(&Admissible::default());
        let expanded_options = SearchOptions {
            query_expansion: true,
            ..o.clone()
        };
        let expanded = stages(&store, &a, &p, &expanded_options).keyword(&Admissible::default());
        match (plain, expanded) {
            (Step::Done(plain), Step::Done(expanded)) => {
                assert!(plain.fallback.is_empty());
                assert_ne!(plain.hits, expanded.hits, "the expanded query weighs its terms");
            }
            other => panic!("{other:?}"),
        }
        // Dense mode runs no keyword search.
        let dense = SearchOptions { mode: Mode::Dense, ..o };
        assert_eq!(
            stages(&store, &a, &p, &dense).keyword(&Admissible::default()),
            Step::Done(KeywordHits::default())
        );
    }

    #[test]
    fn dense_needs_its_blocks_then_rescores_and_results_need_their_fragments() {
        let (mut store, built) = empty_store();
        let a = Analyzer::english();
        let o = SearchOptions {
            mode: Mode::Dense,
            k: 2,
            ..SearchOptions::default()
        };
        let p = plan("anything", Mode::Dense);
        let query = [0.0, 0.6, 0.8];
        let first = stages(&store, &a, &p, &o).first_needs(Some(&[0.0, 0.0, 1.0]));
        add(&mut store, &built, &first);
        let s = stages(&store, &a, &p, &o);
        let Step::Done(Some(probed)) = s.probed(&query, &Admissible::default()) else {
            panic!("the codes are added");
        };
        let candidates = s.binary(&query, &probed, &Admissible::default()).unwrap();
        assert_eq!(candidates.method, VectorMethod::Rescored);
        let Step::Need(blocks) = s.dense(&query, &candidates) else {
            panic!("blocks first");
        };
        add(&mut store, &built, &blocks);
        let s = stages(&store, &a, &p, &o);
        let Step::Done(dense) = s.dense(&query, &candidates) else {
            panic!();
        };
        assert_eq!(dense.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [2, 1, 0]);
        let fused = s.fuse(&dense, &[]);
        let Step::Done(reranked) = s.rerank(None, fused).unwrap() else {
            panic!("no reranker: nothing to fetch");
        };
        assert!(reranked.scores.is_empty());
        let Step::Need(fragments) = s.results(reranked.clone(), &dense, &[]) else {
            panic!("the results' text is in fragments");
        };
        add(&mut store, &built, &fragments);
        let Step::Done(results) = stages(&store, &a, &p, &o).results(reranked, &dense, &[]) else {
            panic!();
        };
        assert_eq!(
            results.iter().map(|r| r.chunk_id.as_str()).collect::<Vec<_>>(),
            ["b#0", "a#1"],
            "k = 2"
        );
    }

    #[test]
    fn fused_chunks_known_not_to_hold_a_phrase_are_dropped() {
        let store = full_store(&tiny());
        let a = Analyzer::english();
        let o = SearchOptions {
            mode: Mode::Keyword,
            ..SearchOptions::default()
        };
        let p = plan("\"lens lamp\"", Mode::Keyword);
        let s = stages(&store, &a, &p, &o);
        // Chunk 2 is "lamp lens": the words, not the phrase in this order.
        assert!(s.fuse(&[], &[(2, 1.0), (0, 0.5)]).is_empty());
        let p = plan("\"lamp lens\"", Mode::Keyword);
        let s = stages(&store, &a, &p, &o);
        assert_eq!(s.fuse(&[], &[(2, 1.0), (0, 0.5)]).len(), 1);
    }

    #[test]
    fn prefix_ranges_cover_the_terms_that_start_alike() {
        assert_eq!(prefix_range("lamp", 1), Some(("l".into(), "m".into())));
        assert_eq!(prefix_range("lamp", 2), Some(("la".into(), "lb".into())));
        assert_eq!(prefix_range("l", 2), None);
    }
}
