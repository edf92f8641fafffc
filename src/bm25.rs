//! Okapi BM25 over chunks, with compact postings.
//!
//! Score of chunk `d` for query terms `q1..qn` (a term that occurs twice in the query counts
//! twice):
//!
//! ```text
//! score(d) = Σ idf(t) · tf(t,d) · (k1 + 1) / (tf(t,d) + k1 · (1 − b + b · |d| / avgdl))
//! idf(t)   = ln((N − df(t) + 0.5) / (df(t) + 0.5) + 1)
//! ```
//!
//! `N` is the number of chunks, `df(t)` the chunks containing `t`, `|d|` the number of analyzer
//! terms in `d` and `avgdl` their mean. The IDF is computed when the index is built and stored,
//! so a query does no transcendental math and native and wasm scores agree bit for bit.
//!
//! The index is a [`TermTable`] (sorted terms with their postings) and the chunk lengths. Format
//! 2 splits the table into shards by term range ([`TermTable::split`]) and keeps the lengths in a
//! norms file (`crate::index::files::Norms`), so a query fetches only the shards of its terms,
//! which [`score`] reads. Layouts: `docs/FORMAT.md`.

use crate::codec::{put_string, put_varint, ByteReader, DecodeError};
use serde::{Deserialize, Serialize};

/// BM25's two knobs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Bm25Params {
    /// Term-frequency saturation. `0` ignores how often a term occurs (only whether it does);
    /// larger values let repeated terms keep adding score. Default 1.5, range 0.0–10.0
    /// (1.2–2.0 is typical).
    pub k1: f32,
    /// Length normalisation. `0` ignores chunk length; `1` fully normalises by length relative to
    /// the average, so long chunks are not favoured just for being long. Default 0.6 (chosen over
    /// four collections, BENCHMARKS.md, issue 23), range 0.0–1.0.
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self { k1: 1.5, b: 0.6 }
    }
}

/// BM25 parameters for one query; a parameter left out is the index's.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bm25Override {
    /// `k1` for this query (0.0–10.0), else the index's.
    pub k1: Option<f32>,
    /// `b` for this query (0.0–1.0), else the index's.
    pub b: Option<f32>,
}

impl Bm25Override {
    /// The parameters to use: these over `base` (the index's).
    pub fn over(&self, base: Bm25Params) -> Bm25Params {
        Bm25Params {
            k1: self.k1.unwrap_or(base.k1),
            b: self.b.unwrap_or(base.b),
        }
    }

    /// Checks the values given against the documented ranges.
    pub fn validate(&self) -> Result<(), Bm25Error> {
        self.over(Bm25Params::default()).validate()
    }
}

/// Errors for BM25 parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Bm25Error {
    /// `k1` outside 0–10.
    #[error("bm25.k1 = {k1} is out of range; use a value from 0.0 to 10.0 (default 1.5)")]
    K1OutOfRange {
        /// The value given.
        k1: f32,
    },
    /// `b` outside 0–1.
    #[error("bm25.b = {b} is out of range; use a value from 0.0 to 1.0 (default 0.6)")]
    BOutOfRange {
        /// The value given.
        b: f32,
    },
}

impl Bm25Params {
    /// Checks the documented ranges.
    pub fn validate(&self) -> Result<(), Bm25Error> {
        if !(0.0..=10.0).contains(&self.k1) {
            return Err(Bm25Error::K1OutOfRange { k1: self.k1 });
        }
        if !(0.0..=1.0).contains(&self.b) {
            return Err(Bm25Error::BOutOfRange { b: self.b });
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq)]
struct TermEntry {
    term: String,
    df: u32,
    idf: f32,
    /// Byte range of this term's postings in `postings`.
    start: usize,
    end: usize,
}

/// Sorted terms, each with its document frequency, IDF and postings (chunk number deltas and term
/// frequencies, varints).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TermTable {
    terms: Vec<TermEntry>,
    postings: Vec<u8>,
}

/// One term's postings as stored: what [`score`] reads.
#[derive(Debug, Clone, Copy)]
pub struct Postings<'a> {
    /// Chunks containing the term.
    pub df: u32,
    /// Its IDF.
    pub idf: f32,
    /// `df` pairs (chunk delta, term frequency), varints, validated when read.
    pub bytes: &'a [u8],
}

impl Postings<'_> {
    /// The chunks holding the term, in increasing order.
    pub fn chunks(&self) -> Vec<u32> {
        let mut reader = ByteReader::new(self.bytes);
        let mut out = Vec::with_capacity(self.df as usize);
        let mut chunk = 0u32;
        for i in 0..self.df {
            let (Ok(delta), Ok(_)) = (reader.varint_u32("delta"), reader.varint_u32("tf")) else {
                break;
            };
            chunk = if i == 0 { delta } else { chunk.saturating_add(delta) };
            out.push(chunk);
        }
        out
    }
}

/// One scored chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Hit {
    /// Chunk number.
    pub doc: u32,
    /// BM25 score (> 0).
    pub score: f32,
}

/// The IDF of a term in `df` of `n` documents.
pub fn idf(n: u32, df: u32) -> f32 {
    let n = f64::from(n);
    let df = f64::from(df);
    (((n - df + 0.5) / (df + 0.5)) + 1.0).ln() as f32
}

/// The mean of chunk lengths (0 for none), as stored.
#[cfg(test)]
fn average(lengths: &[u32]) -> f32 {
    if lengths.is_empty() {
        return 0.0;
    }
    let total: u64 = lengths.iter().map(|&l| u64::from(l)).sum();
    (total as f64 / lengths.len() as f64) as f32
}

/// The `k` best chunks for the analyzer terms of a query, best first; ties broken by lower chunk
/// number. Exact: every posting of every query term is scored. Chunks that match no term are
/// never returned. `lookup` finds a term's postings (in whichever shard holds it); `lengths` are
/// the chunk lengths and `avgdl` their mean.
pub fn score<'a>(
    query_terms: &[String],
    lookup: &dyn Fn(&str) -> Option<Postings<'a>>,
    lengths: &[u32],
    avgdl: f32,
    params: Bm25Params,
    k: usize,
) -> Vec<Bm25Hit> {
    let weighted: Vec<(&str, f32)> = query_terms.iter().map(|t| (t.as_str(), 1.0)).collect();
    score_weighted(&weighted, lookup, lengths, avgdl, params, k)
}

/// [`score`] with a weight per query term: each term's BM25 contribution is multiplied by it
/// (a repeated term counts each time, as in [`score`]).
pub fn score_weighted<'a>(
    query_terms: &[(&str, f32)],
    lookup: &dyn Fn(&str) -> Option<Postings<'a>>,
    lengths: &[u32],
    avgdl: f32,
    params: Bm25Params,
    k: usize,
) -> Vec<Bm25Hit> {
    let mut scores = vec![0f32; lengths.len()];
    let mut touched: Vec<u32> = Vec::new();
    let (k1, b) = (params.k1, params.b);
    let avgdl = if avgdl > 0.0 { avgdl } else { 1.0 };
    for &(term, weight) in query_terms {
        let Some(entry) = lookup(term) else { continue };
        let mut reader = ByteReader::new(entry.bytes);
        let mut doc = 0u32;
        for i in 0..entry.df {
            // Postings were validated when they were read, so these reads succeed.
            let (Ok(delta), Ok(tf)) = (reader.varint_u32("delta"), reader.varint_u32("tf")) else {
                break;
            };
            doc = if i == 0 { delta } else { doc.saturating_add(delta) };
            let Some(&dl) = lengths.get(doc as usize) else {
                break;
            };
            let tf = tf as f32;
            let norm = k1 * (1.0 - b + b * (dl as f32) / avgdl);
            let contribution = weight * entry.idf * tf * (k1 + 1.0) / (tf + norm);
            if let Some(s) = scores.get_mut(doc as usize) {
                if *s == 0.0 {
                    touched.push(doc);
                }
                *s += contribution;
            }
        }
    }
    let mut hits: Vec<Bm25Hit> = touched
        .into_iter()
        .filter_map(|doc| {
            let score = *scores.get(doc as usize)?;
            (score > 0.0).then_some(Bm25Hit { doc, score })
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
    hits.truncate(k);
    hits
}

/// What BM25 over whole documents needs beside the chunk norms: each document's length (the sum
/// of its chunks', by document number), how many documents have chunks, and their mean length.
/// Computed once from the norms ([`DocumentLengths::new`]), not per query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DocumentLengths {
    /// Analyzer terms per document number (0 for a number no chunk names).
    pub lengths: Vec<u64>,
    /// Documents with at least one chunk.
    pub count: u32,
    /// Their mean length (1 when there are none).
    pub avgdl: f32,
}

impl DocumentLengths {
    /// From each chunk's length and document number (`documents` non-decreasing, as the norms
    /// store it).
    pub fn new(lengths: &[u32], documents: &[u32]) -> Self {
        let slots = documents.iter().max().map_or(0, |&d| d as usize + 1);
        let mut per = vec![0u64; slots];
        for (&l, &d) in lengths.iter().zip(documents) {
            per[d as usize] += u64::from(l);
        }
        let count = (documents.windows(2).filter(|w| w[0] != w[1]).count() + usize::from(!documents.is_empty())) as u32;
        let total: u64 = per.iter().sum();
        let avgdl = if count > 0 && total > 0 {
            (total as f64 / f64::from(count)) as f32
        } else {
            1.0
        };
        Self {
            lengths: per,
            count,
            avgdl,
        }
    }
}

/// The IDF of a term in `df` of `n` documents, computed at query time: [`idf`]'s formula with
/// `libm`'s logarithm, so native and wasm agree bit for bit.
fn query_time_idf(n: u32, df: u32) -> f32 {
    let (n, df) = (f64::from(n), f64::from(df));
    libm::log((n - df + 0.5) / (df + 0.5) + 1.0) as f32
}

/// BM25 over whole documents rather than chunks: what a page-level ranking needs when a page is
/// cut into several chunks. A document's term frequency is the sum over its chunks, its length
/// the sum of theirs (`avgdl` their mean over the documents that have chunks), and a term's IDF
/// counts the documents holding it (`N`: documents with chunks), computed here from the
/// postings. `chunks` are the chunks' lengths and their mean, as [`score_weighted`] takes them;
/// `documents` each chunk's document number (non-decreasing, as the norms store it) and the
/// documents' lengths.
///
/// Returns the matching chunks of the `k` best documents, each chunk scored with its document's
/// score: documents best first (ties to the lower document), and a document's chunks in the
/// order of their own chunk-level score ([`score_weighted`]'s; ties to the lower chunk). A list
/// of chunks, so every later step (fusion, pages, sub-results) takes it as it takes chunk BM25.
pub fn score_documents_weighted<'a>(
    query_terms: &[(&str, f32)],
    lookup: &dyn Fn(&str) -> Option<Postings<'a>>,
    (lengths, chunk_avgdl): (&[u32], f32),
    (documents, by_document): (&[u32], &DocumentLengths),
    params: Bm25Params,
    k: usize,
) -> Vec<Bm25Hit> {
    let chunks = lengths.len().min(documents.len());
    let slots = by_document.lengths.len();
    let (n, avgdl) = (by_document.count, by_document.avgdl);
    let (k1, b) = (params.k1, params.b);
    let chunk_avgdl = if chunk_avgdl > 0.0 { chunk_avgdl } else { 1.0 };
    let mut chunk_scores = vec![0f32; chunks];
    let mut doc_scores = vec![0f32; slots];
    let mut tf_of = vec![0u32; slots];
    let mut touched: Vec<u32> = Vec::new();
    for &(term, weight) in query_terms {
        let Some(entry) = lookup(term) else { continue };
        let mut reader = ByteReader::new(entry.bytes);
        let mut chunk = 0u32;
        let mut holding: Vec<u32> = Vec::new();
        for i in 0..entry.df {
            let (Ok(delta), Ok(tf)) = (reader.varint_u32("delta"), reader.varint_u32("tf")) else {
                break;
            };
            chunk = if i == 0 { delta } else { chunk.saturating_add(delta) };
            let (Some(&dl), Some(&d)) = (lengths.get(chunk as usize), documents.get(chunk as usize)) else {
                break;
            };
            if d as usize >= slots {
                break; // document lengths of other norms: nothing sound to score
            }
            let norm = k1 * (1.0 - b + b * (dl as f32) / chunk_avgdl);
            chunk_scores[chunk as usize] += weight * entry.idf * tf as f32 * (k1 + 1.0) / (tf as f32 + norm);
            if tf_of[d as usize] == 0 {
                holding.push(d);
            }
            tf_of[d as usize] += tf;
        }
        let idf = query_time_idf(n, holding.len() as u32);
        for d in holding {
            let tf = std::mem::take(&mut tf_of[d as usize]) as f32;
            let dl = by_document.lengths[d as usize] as f32;
            let norm = k1 * (1.0 - b + b * dl / avgdl);
            if doc_scores[d as usize] == 0.0 {
                touched.push(d);
            }
            doc_scores[d as usize] += weight * idf * tf * (k1 + 1.0) / (tf + norm);
        }
    }
    let mut order: Vec<u32> = touched.into_iter().filter(|&d| doc_scores[d as usize] > 0.0).collect();
    order.sort_by(|&a, &b| {
        doc_scores[b as usize]
            .total_cmp(&doc_scores[a as usize])
            .then(a.cmp(&b))
    });
    order.truncate(k);
    let mut rank = vec![u32::MAX; slots];
    for (i, &d) in order.iter().enumerate() {
        rank[d as usize] = i as u32;
    }
    let mut hits: Vec<(u32, f32, Bm25Hit)> = chunk_scores
        .iter()
        .enumerate()
        .filter_map(|(c, &chunk_score)| {
            let d = documents[c] as usize;
            (chunk_score > 0.0 && rank[d] != u32::MAX).then_some((
                rank[d],
                chunk_score,
                Bm25Hit {
                    doc: c as u32,
                    score: doc_scores[d],
                },
            ))
        })
        .collect();
    hits.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.doc.cmp(&b.2.doc)));
    hits.into_iter().map(|(_, _, hit)| hit).collect()
}

impl TermTable {
    /// Builds the table from each chunk's analyzer terms; also returns the chunk lengths.
    pub fn build(docs: &[Vec<String>]) -> (Self, Vec<u32>) {
        let mut by_term: std::collections::BTreeMap<&str, Vec<(u32, u32)>> = Default::default();
        let mut lengths = Vec::with_capacity(docs.len());
        for (doc, terms) in docs.iter().enumerate() {
            lengths.push(terms.len() as u32);
            let mut counts: std::collections::BTreeMap<&str, u32> = Default::default();
            for t in terms {
                *counts.entry(t.as_str()).or_default() += 1;
            }
            for (t, tf) in counts {
                by_term.entry(t).or_default().push((doc as u32, tf));
            }
        }
        let n = docs.len() as u32;
        let mut postings = Vec::new();
        let mut terms = Vec::with_capacity(by_term.len());
        for (term, list) in by_term {
            let start = postings.len();
            let mut previous = 0u32;
            for (i, &(doc, tf)) in list.iter().enumerate() {
                let delta = if i == 0 { doc } else { doc - previous };
                put_varint(&mut postings, u64::from(delta));
                put_varint(&mut postings, u64::from(tf));
                previous = doc;
            }
            let df = list.len() as u32;
            terms.push(TermEntry {
                term: term.to_string(),
                df,
                idf: idf(n, df),
                start,
                end: postings.len(),
            });
        }
        (Self { terms, postings }, lengths)
    }

    /// Number of distinct terms.
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }

    /// The first term, if any (where a shard's range starts).
    pub fn first_term(&self) -> Option<&str> {
        self.terms.first().map(|e| e.term.as_str())
    }

    /// The last term, if any.
    pub fn last_term(&self) -> Option<&str> {
        self.terms.last().map(|e| e.term.as_str())
    }

    /// The terms from `from` (inclusive) to `to` (exclusive), in order, with their document
    /// frequencies.
    pub fn terms_between<'a>(&'a self, from: &str, to: &str) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        let start = self.terms.partition_point(|e| e.term.as_str() < from);
        let end = self.terms.partition_point(|e| e.term.as_str() < to).max(start);
        self.terms[start..end].iter().map(|e| (e.term.as_str(), e.df))
    }

    /// The postings of `term`, if the table holds it.
    pub fn lookup(&self, term: &str) -> Option<Postings<'_>> {
        let entry = self
            .terms
            .binary_search_by(|e| e.term.as_str().cmp(term))
            .ok()
            .and_then(|i| self.terms.get(i))?;
        Some(Postings {
            df: entry.df,
            idf: entry.idf,
            bytes: self.postings.get(entry.start..entry.end)?,
        })
    }

    /// Cuts the table into consecutive term ranges of about `target_bytes` encoded bytes each (a
    /// term whose postings alone are larger gets a table of its own).
    pub fn split(&self, target_bytes: usize) -> Vec<TermTable> {
        let mut out = Vec::new();
        let mut current = TermTable::default();
        for e in &self.terms {
            let size = e.term.len() + 12 + (e.end - e.start);
            if !current.terms.is_empty() && current.encoded_len() + size > target_bytes {
                out.push(std::mem::take(&mut current));
            }
            let start = current.postings.len();
            current
                .postings
                .extend_from_slice(self.postings.get(e.start..e.end).unwrap_or(&[]));
            current.terms.push(TermEntry {
                start,
                end: current.postings.len(),
                ..e.clone()
            });
        }
        if !current.terms.is_empty() {
            out.push(current);
        }
        out
    }

    fn encoded_len(&self) -> usize {
        self.postings.len() + self.terms.iter().map(|e| e.term.len() + 12).sum::<usize>()
    }

    /// Appends the table: term count, entries (term, df, idf, postings length), postings.
    pub fn write(&self, out: &mut Vec<u8>) {
        put_varint(out, self.terms.len() as u64);
        for e in &self.terms {
            put_string(out, &e.term);
            put_varint(out, u64::from(e.df));
            out.extend_from_slice(&e.idf.to_le_bytes());
            put_varint(out, (e.end - e.start) as u64);
        }
        out.extend_from_slice(&self.postings);
    }

    /// Reads and fully validates a table written by [`TermTable::write`] over `doc_count` chunks:
    /// terms strictly sorted, each IDF the formula's, every posting list decodes to exactly `df`
    /// strictly increasing chunk numbers below the chunk count, with positive term frequencies.
    pub fn read(r: &mut ByteReader, doc_count: usize) -> Result<Self, DecodeError> {
        let term_count = r.count("bm25 term count", 7)?;
        let mut terms: Vec<TermEntry> = Vec::with_capacity(term_count);
        let mut start = 0usize;
        for _ in 0..term_count {
            let offset = r.offset();
            let term = r.string("bm25 term")?.to_string();
            if let Some(prev) = terms.last() {
                if prev.term >= term {
                    return Err(DecodeError::Invalid {
                        what: "bm25 term order",
                        offset,
                    });
                }
            }
            let df = r.varint_u32("bm25 document frequency")?;
            let idf = r.f32()?;
            let len = r.count("bm25 postings length", 0)?;
            // The IDF is stored so queries need no logarithm, but it must be the formula's: a
            // negative or zero one would silently empty keyword search.
            let expected = u32::try_from(doc_count).ok().map(|n| self::idf(n, df));
            if df == 0
                || df as usize > doc_count
                || !idf.is_finite()
                || idf <= 0.0
                || expected.is_none_or(|e| (idf - e).abs() > 1e-4 * e.max(1.0))
            {
                return Err(DecodeError::Invalid {
                    what: "bm25 term statistics",
                    offset,
                });
            }
            let end = start.checked_add(len).ok_or(DecodeError::Invalid {
                what: "bm25 postings length",
                offset,
            })?;
            terms.push(TermEntry {
                term,
                df,
                idf,
                start,
                end,
            });
            start = end;
        }
        let postings_offset = r.offset();
        let postings = r.take(start)?.to_vec();
        for e in &terms {
            let slice = postings.get(e.start..e.end).ok_or(DecodeError::Invalid {
                what: "bm25 postings range",
                offset: postings_offset + e.start,
            })?;
            let mut pr = ByteReader::new(slice);
            let mut doc: u64 = 0;
            for i in 0..e.df {
                let delta = u64::from(pr.varint_u32("bm25 chunk delta")?);
                let tf = pr.varint_u32("bm25 term frequency")?;
                if (i > 0 && delta == 0) || tf == 0 {
                    return Err(DecodeError::Invalid {
                        what: "bm25 posting",
                        offset: postings_offset + e.start + pr.offset(),
                    });
                }
                doc = if i == 0 { delta } else { doc + delta };
                if doc >= doc_count as u64 {
                    return Err(DecodeError::Invalid {
                        what: "bm25 chunk number",
                        offset: postings_offset + e.start + pr.offset(),
                    });
                }
            }
            pr.finish("bm25 postings length")?;
        }
        Ok(Self { terms, postings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn docs(texts: &[&str]) -> Vec<Vec<String>> {
        texts
            .iter()
            .map(|t| t.split_whitespace().map(String::from).collect())
            .collect()
    }

    fn q(terms: &[&str]) -> Vec<String> {
        terms.iter().map(|s| s.to_string()).collect()
    }

    /// A whole table and its chunk lengths, searched as the query path does.
    #[derive(Debug, PartialEq)]
    struct Built {
        table: TermTable,
        lengths: Vec<u32>,
    }

    impl Built {
        fn build(docs: &[Vec<String>]) -> Self {
            let (table, lengths) = TermTable::build(docs);
            Self { table, lengths }
        }

        fn search(&self, terms: &[String], params: Bm25Params, k: usize) -> Vec<Bm25Hit> {
            score(
                terms,
                &|t: &str| self.table.lookup(t),
                &self.lengths,
                average(&self.lengths),
                params,
                k,
            )
        }

        fn to_bytes(&self) -> Vec<u8> {
            let mut out = Vec::new();
            self.table.write(&mut out);
            out
        }

        fn from_bytes(bytes: &[u8], chunks: usize) -> Result<TermTable, DecodeError> {
            let mut r = ByteReader::new(bytes);
            let table = TermTable::read(&mut r, chunks)?;
            r.finish("trailing bytes")?;
            Ok(table)
        }
    }

    #[test]
    fn idf_matches_the_formula_by_hand() {
        // N = 4, df = 1: ln((4 - 1 + 0.5) / (1 + 0.5) + 1) = ln(3.3333...) = 1.2039728
        assert!((idf(4, 1) - 1.203_972_8).abs() < 1e-6);
        // df = N keeps a small positive weight: ln(0.5 / 4.5 + 1) = 0.1053605
        assert!((idf(4, 4) - 0.105_360_5).abs() < 1e-6);
    }

    #[test]
    fn scores_match_hand_computation() {
        // d0: "wing wing flow" (3 terms), d1: "flow" (1), d2: "shock wave flow drag" (4)
        let index = Built::build(&docs(&["wing wing flow", "flow", "shock wave flow drag"]));
        let p = Bm25Params { k1: 1.5, b: 0.75 };
        let hits = index.search(&q(&["wing"]), p, 10);
        // avgdl = 8/3; idf(wing) = ln((3-1+.5)/(1+.5)+1) = ln(2.6666667) = 0.98082925
        // tf = 2, dl = 3: norm = 1.5 * (0.25 + 0.75 * 3 / (8/3)) = 1.640625
        // score = 0.98082925 * 2 * 2.5 / (2 + 1.640625) = 1.3470616
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].doc, 0);
        assert!((hits[0].score - 1.347_061_6).abs() < 1e-5, "{}", hits[0].score);

        // "flow" in every doc: idf = ln(0.5/3.5 + 1) = 0.13353139; the shortest doc wins.
        let hits = index.search(&q(&["flow"]), p, 10);
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), vec![1, 0, 2]);
        // d1: dl = 1: norm = 1.5 * (0.25 + 0.75 * 1 / (8/3)) = 0.796875
        // score = 0.13353139 * 2.5 / 1.796875 = 0.18578280
        assert!((hits[0].score - 0.185_782_8).abs() < 1e-6, "{}", hits[0].score);
    }

    #[test]
    fn k1_zero_ignores_frequency_and_b_zero_ignores_length() {
        let index = Built::build(&docs(&["a a a a x y z w", "a"]));
        let flat = index.search(&q(&["a"]), Bm25Params { k1: 0.0, b: 0.75 }, 10);
        assert_eq!(flat[0].score, flat[1].score);
        let no_len = index.search(&q(&["a"]), Bm25Params { k1: 1.2, b: 0.0 }, 10);
        assert_eq!(no_len[0].doc, 0, "more occurrences win when length is ignored");
    }

    #[test]
    fn repeated_query_terms_count_twice_and_ties_break_by_chunk() {
        let index = Built::build(&docs(&["a b", "a b", "c"]));
        let once = index.search(&q(&["a"]), Bm25Params::default(), 10);
        let twice = index.search(&q(&["a", "a"]), Bm25Params::default(), 10);
        assert!((twice[0].score - 2.0 * once[0].score).abs() < 1e-6);
        assert_eq!(once.iter().map(|h| h.doc).collect::<Vec<_>>(), vec![0, 1]);
        assert!(index.search(&q(&["zzz"]), Bm25Params::default(), 10).is_empty());
        assert_eq!(index.search(&q(&["a"]), Bm25Params::default(), 1).len(), 1);
    }

    #[test]
    fn documents_score_as_one_text_made_of_their_chunks() {
        // Three documents, the first cut into two chunks: scored by document, it must score as
        // BM25 over the whole documents does (tf and length summed, IDF over documents), each
        // chunk carrying its document's score.
        let chunked = docs(&["tide moon", "moon moon sea", "tide sea", "storm"]);
        let documents = [0, 0, 1, 2];
        let whole = docs(&["tide moon moon moon sea", "tide sea", "storm"]);
        let (table, lengths) = TermTable::build(&chunked);
        let (whole_table, whole_lengths) = TermTable::build(&whole);
        let params = Bm25Params::default();
        let query = [("moon", 1.0), ("tide", 1.0)];
        let avgdl = average(&lengths);
        let document_lengths = DocumentLengths::new(&lengths, &documents);
        assert_eq!(
            (document_lengths.lengths.as_slice(), document_lengths.count),
            (&[5u64, 2, 1][..], 3)
        );
        let by_documents = |k| {
            score_documents_weighted(
                &query,
                &|t: &str| table.lookup(t),
                (&lengths, avgdl),
                (&documents, &document_lengths),
                params,
                k,
            )
        };
        let by_document = by_documents(10);
        let reference = score_weighted(
            &query,
            &|t: &str| whole_table.lookup(t),
            &whole_lengths,
            average(&whole_lengths),
            params,
            10,
        );
        // Document 0's chunks (both words first, then "moon" twice), then document 1's, each
        // with its document's score.
        assert_eq!(by_document.iter().map(|h| h.doc).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(reference.len(), 2);
        for (d, r) in [(0, 0), (1, 0), (2, 1)] {
            assert!(
                (by_document[d].score - reference[r].score).abs() < 1e-5,
                "{by_document:?} vs {reference:?}"
            );
        }
        // k counts documents.
        let best = by_documents(1);
        assert_eq!(best.iter().map(|h| h.doc).collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn params_are_validated() {
        assert!(Bm25Params::default().validate().is_ok());
        assert!(Bm25Params { k1: -1.0, b: 0.5 }.validate().is_err());
        assert!(Bm25Params { k1: 1.0, b: 1.5 }.validate().is_err());
        assert!(Bm25Params { k1: f32::NAN, b: 0.5 }.validate().is_err());
    }

    #[test]
    fn corrupt_postings_are_refused() {
        let index = Built::build(&docs(&["a b", "b c"]));
        let bytes = index.to_bytes();
        for cut in 0..bytes.len() {
            assert!(Built::from_bytes(&bytes[..cut], 2).is_err(), "prefix {cut} accepted");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(Built::from_bytes(&extra, 2).is_err());
        // A posting of a chunk past the count.
        assert!(Built::from_bytes(&bytes, 1).is_err());
    }

    #[test]
    fn a_stored_idf_that_is_not_the_formulas_is_refused() {
        let index = Built::build(&docs(&["wing flow", "flow"]));
        let good = index.to_bytes();
        let idf_of_flow = idf(2, 2).to_le_bytes();
        let at = good.windows(4).position(|w| w == idf_of_flow).unwrap();
        for bad in [-idf(2, 2), 0.0, idf(2, 2) * 3.0] {
            let mut tampered = good.clone();
            tampered[at..at + 4].copy_from_slice(&bad.to_le_bytes());
            // A negative IDF once read fine and silently emptied keyword search.
            assert!(Built::from_bytes(&tampered, 2).is_err(), "idf {bad} accepted");
        }
        assert!(Built::from_bytes(&good, 2).is_ok());
    }

    proptest! {
        #[test]
        fn round_trips_and_search_agrees(
            texts in proptest::collection::vec(proptest::collection::vec(0u8..20, 0..12), 0..30),
            query in proptest::collection::vec(0u8..20, 1..4),
        ) {
            let docs: Vec<Vec<String>> = texts.iter().map(|d| d.iter().map(|t| format!("t{t}")).collect()).collect();
            let index = Built::build(&docs);
            let back = Built {
                table: Built::from_bytes(&index.to_bytes(), docs.len()).unwrap(),
                lengths: index.lengths.clone(),
            };
            prop_assert_eq!(&back, &index);
            let qt: Vec<String> = query.iter().map(|t| format!("t{t}")).collect();
            let hits = back.search(&qt, Bm25Params::default(), 5);
            // Exact top-k: compare with brute force over all chunks.
            let all = back.search(&qt, Bm25Params::default(), usize::MAX);
            prop_assert_eq!(&hits[..], &all[..all.len().min(5)]);
            for h in &all {
                prop_assert!(docs[h.doc as usize].iter().any(|t| qt.contains(t)));
            }
            let matching = docs.iter().filter(|d| d.iter().any(|t| qt.contains(t))).count();
            prop_assert_eq!(all.len(), matching);
        }

        #[test]
        fn reading_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Built::from_bytes(&bytes, 16);
        }
    }
}
