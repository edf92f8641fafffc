//! Chunks' extractions merged into one graph: an entity per name (its most frequent type, its
//! descriptions, the chunks that name it), a relation per pair of names, PageRank over the whole;
//! then the vectors the host embeds ([`Draft::entity_texts`], [`Draft::relation_texts`]) added,
//! quantized, and the graph written as the index part `graph.<digest>.json`.

use std::collections::BTreeMap;

use super::extract::{cut, key, Extraction, MAX_DESCRIPTION_BYTES};
use super::{Graph, GraphEntity, GraphRelation, GRAPH_FORMAT};

/// Longest merged description (the descriptions of every chunk naming it, joined).
pub const MAX_MERGED_DESCRIPTION_BYTES: usize = 2 * MAX_DESCRIPTION_BYTES;
/// Chunks listed per entity or relation (the first ones, in index order).
pub const MAX_CHUNKS_PER_ITEM: usize = 16;
/// PageRank's damping.
pub const DAMPING: f64 = 0.85;
/// PageRank's iterations at most (it stops earlier when it settles).
pub const PAGERANK_ITERATIONS: usize = 50;

/// The graph before its vectors.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Draft {
    /// Entities, by name key.
    pub entities: Vec<GraphEntity>,
    /// Relations (their endpoints' positions in `entities`).
    pub relations: Vec<GraphRelation>,
    /// Chunks read, and skipped.
    pub chunks: usize,
    /// Chunks the LLM gave no graph for.
    pub skipped: usize,
}

/// A relation's descriptions, chunks and count as chunks are merged.
type PairAcc = (Vec<String>, Vec<u32>, u32);

struct Acc {
    name: String,
    types: BTreeMap<String, (usize, usize)>,
    descriptions: Vec<String>,
    chunks: Vec<u32>,
}

fn push_description(list: &mut Vec<String>, d: &str) {
    if !d.is_empty() && !list.iter().any(|x| x == d) {
        list.push(d.to_string());
    }
}

fn push_chunk(list: &mut Vec<u32>, chunk: u32) {
    if list.len() < MAX_CHUNKS_PER_ITEM && !list.contains(&chunk) {
        list.push(chunk);
    }
}

fn joined(descriptions: &[String]) -> String {
    cut(&descriptions.join(" "), MAX_MERGED_DESCRIPTION_BYTES).to_string()
}

/// Merges extractions, given as (chunk number, extraction) in index order; `skipped` counts the
/// chunks whose extraction failed. The same extractions always give the same draft.
pub fn merge(extractions: &[(u32, Extraction)], skipped: usize) -> Draft {
    let mut entities: BTreeMap<String, Acc> = BTreeMap::new();
    let mut order = 0usize;
    let mut entity = |name: &str, kind: &str, description: &str, chunk: u32| {
        let acc = entities.entry(key(name)).or_insert_with(|| Acc {
            name: name.to_string(),
            types: BTreeMap::new(),
            descriptions: Vec::new(),
            chunks: Vec::new(),
        });
        if !kind.is_empty() {
            order += 1;
            acc.types.entry(kind.to_string()).or_insert((0, order)).0 += 1;
        }
        push_description(&mut acc.descriptions, description);
        push_chunk(&mut acc.chunks, chunk);
    };
    for (chunk, x) in extractions {
        for e in &x.entities {
            entity(&e.name, &e.kind, &e.description, *chunk);
        }
        for r in &x.relations {
            entity(&r.source, "", "", *chunk);
            entity(&r.target, "", "", *chunk);
        }
    }
    let names: Vec<String> = entities.keys().cloned().collect();
    let position = |name: &str| names.binary_search(&key(name)).ok();
    let mut relations: BTreeMap<(u32, u32), PairAcc> = BTreeMap::new();
    for (chunk, x) in extractions {
        for r in &x.relations {
            let (Some(a), Some(b)) = (position(&r.source), position(&r.target)) else {
                continue;
            };
            let pair = (a.min(b) as u32, a.max(b) as u32);
            let rel = relations.entry(pair).or_default();
            push_description(&mut rel.0, &r.description);
            push_chunk(&mut rel.1, *chunk);
            rel.2 += 1;
        }
    }
    let mut entities: Vec<GraphEntity> = entities
        .into_values()
        .map(|acc| GraphEntity {
            kind: acc
                .types
                .into_iter()
                // The most frequent type; of equals, the first named.
                .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
                .map(|t| t.0)
                .unwrap_or_default(),
            name: acc.name,
            description: joined(&acc.descriptions),
            chunks: acc.chunks,
            rank: 0.0,
            vector: Vec::new(),
            scale: 0.0,
        })
        .collect();
    let relations: Vec<GraphRelation> = relations
        .into_iter()
        .map(|((source, target), (descriptions, chunks, weight))| GraphRelation {
            source,
            target,
            description: joined(&descriptions),
            chunks,
            weight,
            vector: Vec::new(),
            scale: 0.0,
        })
        .collect();
    let ranks = pagerank(entities.len(), &relations);
    for (e, r) in entities.iter_mut().zip(ranks) {
        e.rank = r;
    }
    Draft {
        entities,
        relations,
        chunks: extractions.len() + skipped,
        skipped,
    }
}

/// PageRank of `n` entities over the relations (undirected, weighted by how many chunks state
/// them); an entity without relations spreads its rank over all. Sums to 1.
pub fn pagerank(n: usize, relations: &[GraphRelation]) -> Vec<f32> {
    if n == 0 {
        return Vec::new();
    }
    let mut out_weight = vec![0f64; n];
    for r in relations {
        out_weight[r.source as usize] += f64::from(r.weight);
        out_weight[r.target as usize] += f64::from(r.weight);
    }
    let mut rank = vec![1.0 / n as f64; n];
    for _ in 0..PAGERANK_ITERATIONS {
        let dangling: f64 = (0..n).filter(|&i| out_weight[i] == 0.0).map(|i| rank[i]).sum();
        let base = (1.0 - DAMPING) / n as f64 + DAMPING * dangling / n as f64;
        let mut next = vec![base; n];
        for r in relations {
            let (a, b, w) = (r.source as usize, r.target as usize, f64::from(r.weight));
            next[b] += DAMPING * rank[a] * w / out_weight[a];
            next[a] += DAMPING * rank[b] * w / out_weight[b];
        }
        let change: f64 = next.iter().zip(&rank).map(|(x, y)| (x - y).abs()).sum();
        rank = next;
        if change < 1e-9 {
            break;
        }
    }
    rank.into_iter().map(|r| r as f32).collect()
}

impl Draft {
    /// What the model reads for each entity's vector: `name (type): description`.
    pub fn entity_texts(&self) -> Vec<String> {
        self.entities.iter().map(GraphEntity::text).collect()
    }

    /// What the model reads for each relation's vector: `source — target: description`.
    pub fn relation_texts(&self) -> Vec<String> {
        self.relations
            .iter()
            .map(|r| {
                format!(
                    "{} — {}: {}",
                    self.entities[r.source as usize].name, self.entities[r.target as usize].name, r.description
                )
            })
            .collect()
    }

    /// The graph, with each entity's and relation's vector (as many as there are of each, of
    /// `dims` numbers) quantized to int8. `model` is the index's model digest, `index_chunks` its
    /// chunk count and `chunks_sha256` the digest of its chunks (a graph is read only with the
    /// index it was built for).
    pub fn finish(
        self,
        entity_vectors: &[Vec<f32>],
        relation_vectors: &[Vec<f32>],
        dims: usize,
        model: &str,
        index_chunks: usize,
        chunks_sha256: &str,
    ) -> Result<Graph, String> {
        if entity_vectors.len() != self.entities.len() || relation_vectors.len() != self.relations.len() {
            return Err(format!(
                "{} entity and {} relation vectors for {} entities and {} relations",
                entity_vectors.len(),
                relation_vectors.len(),
                self.entities.len(),
                self.relations.len()
            ));
        }
        if let Some(v) = entity_vectors.iter().chain(relation_vectors).find(|v| v.len() != dims) {
            return Err(format!("a vector of {} numbers where the model gives {dims}", v.len()));
        }
        let mut entities = self.entities;
        for (e, v) in entities.iter_mut().zip(entity_vectors) {
            (e.vector, e.scale) = quantize(v);
        }
        let mut relations = self.relations;
        for (r, v) in relations.iter_mut().zip(relation_vectors) {
            (r.vector, r.scale) = quantize(v);
        }
        Ok(Graph {
            format: GRAPH_FORMAT,
            model: model.to_string(),
            dims,
            index_chunks,
            chunks_sha256: chunks_sha256.to_string(),
            chunks: self.chunks,
            skipped: self.skipped,
            entities,
            relations,
        })
    }
}

/// A vector as int8 and the scale that gives it back (`x ≈ q · scale`).
pub fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (vec![0; v.len()], 0.0);
    }
    let scale = max / 127.0;
    (
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
            .collect(),
        scale,
    )
}

#[cfg(test)]
mod tests {
    use super::super::extract::parse_reply;
    use super::*;

    fn x(json: &str) -> Extraction {
        parse_reply(json).unwrap()
    }

    #[test]
    fn names_merge_across_chunks_with_their_chunks_and_most_frequent_type() {
        let a = x(
            r#"{"entities":[{"name":"Ada Lovelace","type":"person","description":"A."},{"name":"Engine","type":"product"}],"relations":[{"source":"Ada Lovelace","target":"Engine","description":"programmed"}]}"#,
        );
        let b = x(
            r#"{"entities":[{"name":"ada  lovelace","type":"writer","description":"B."},{"name":"Babbage","type":"person"}],"relations":[{"source":"Engine","target":"ada lovelace","description":"programmed"},{"source":"Babbage","target":"Engine","description":"designed"}]}"#,
        );
        let c = x(r#"{"entities":[{"name":"Ada Lovelace","type":"person"}]}"#);
        let d = merge(&[(3, a), (7, b), (9, c)], 1);
        let names: Vec<_> = d.entities.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, vec!["Ada Lovelace", "Babbage", "Engine"]);
        let ada = &d.entities[0];
        assert_eq!((ada.kind.as_str(), ada.description.as_str()), ("person", "A. B."));
        assert_eq!(ada.chunks, vec![3, 7, 9]);
        assert_eq!(d.relations.len(), 2);
        let programmed = d.relations.iter().find(|r| r.description == "programmed").unwrap();
        assert_eq!((programmed.source, programmed.target, programmed.weight), (0, 2, 2));
        assert_eq!(programmed.chunks, vec![3, 7]);
        assert_eq!((d.chunks, d.skipped), (4, 1));
        // The hub has the highest rank; ranks sum to 1.
        assert!(d.entities[2].rank > d.entities[0].rank && d.entities[2].rank > d.entities[1].rank);
        assert!((d.entities.iter().map(|e| e.rank).sum::<f32>() - 1.0).abs() < 1e-4);
    }

    #[test]
    fn the_same_extractions_give_the_same_graph() {
        let a = x(
            r#"{"entities":[{"name":"B","type":"t"},{"name":"A","type":"u"}],"relations":[{"source":"A","target":"B","description":"r"}]}"#,
        );
        let one = merge(&[(0, a.clone()), (1, a.clone())], 0);
        let two = merge(&[(0, a.clone()), (1, a)], 0);
        assert_eq!(one, two);
        let vecs = |n: usize| (0..n).map(|i| vec![i as f32 + 0.5, -1.0]).collect::<Vec<_>>();
        let g1 = one.finish(&vecs(2), &vecs(1), 2, "m", 2, "d").unwrap().to_json();
        let g2 = two.finish(&vecs(2), &vecs(1), 2, "m", 2, "d").unwrap().to_json();
        assert_eq!(g1, g2);
    }

    #[test]
    fn vectors_must_match_what_they_are_for() {
        let d = merge(&[(0, x(r#"{"entities":["A"]}"#))], 0);
        assert!(d.clone().finish(&[], &[], 2, "m", 1, "d").is_err());
        assert!(d
            .finish(&[vec![1.0, 2.0, 3.0]], &[], 2, "m", 1, "d")
            .unwrap_err()
            .contains("3 numbers"));
        let (q, s) = quantize(&[0.5, -0.25, 0.0]);
        assert_eq!(q, vec![127, -64, 0]);
        assert!((f32::from(q[1]) * s + 0.25).abs() < 0.01);
    }
}
