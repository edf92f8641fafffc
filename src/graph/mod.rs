//! Graph retrieval: a knowledge graph the user's LLM extracts from an index's chunks, searched
//! beside hybrid search for questions whose answer spans several documents. The rules live
//! here; the LLM calls are the host's (the CLI's `sextant graph build`, the package's
//! `graph: true`):
//!
//! - [`extract`]: one chunk's extraction (messages, replies read and repaired, gleaning, a chunk
//!   skipped after repeated bad replies), as a state the host advances.
//! - [`build`]: extractions merged, PageRank, vectors added; the part `graph.<digest>.json`.
//! - [`query`]: the question's entities and answer types (from the LLM, or the question alone),
//!   three recalls, n-hop expansion, scores, a token budget, and the framed graph block whose
//!   every line cites the chunks it came from.

pub mod build;
pub mod extract;
pub mod query;

use serde::{Deserialize, Serialize};

use crate::vecmath::dot;

/// The graph part's format number.
pub const GRAPH_FORMAT: u32 = 1;
/// Entities or relations a graph part may hold (a larger one is refused as it is read).
pub const MAX_ITEMS: usize = 2_000_000;

/// An entity of the graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphEntity {
    /// Its name as first seen.
    pub name: String,
    /// Its most frequent type (may be empty).
    #[serde(rename = "type")]
    pub kind: String,
    /// What the chunks say of it.
    pub description: String,
    /// The chunks (numbers in the index) that name it, in index order.
    pub chunks: Vec<u32>,
    /// Its PageRank (the ranks of a graph sum to 1).
    pub rank: f32,
    /// Its vector, int8 (`hex` in the file).
    #[serde(with = "hex_i8")]
    pub vector: Vec<i8>,
    /// The vector's scale.
    pub scale: f32,
}

impl GraphEntity {
    /// What the model reads for its vector.
    pub fn text(&self) -> String {
        match (self.kind.is_empty(), self.description.is_empty()) {
            (true, true) => self.name.clone(),
            (true, false) => format!("{}: {}", self.name, self.description),
            (false, true) => format!("{} ({})", self.name, self.kind),
            (false, false) => format!("{} ({}): {}", self.name, self.kind, self.description),
        }
    }
}

/// A relation between two entities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphRelation {
    /// One entity (its position in `entities`).
    pub source: u32,
    /// The other.
    pub target: u32,
    /// What the chunks say of it.
    pub description: String,
    /// The chunks that state it.
    pub chunks: Vec<u32>,
    /// How many chunks state it.
    pub weight: u32,
    /// Its vector, int8.
    #[serde(with = "hex_i8")]
    pub vector: Vec<i8>,
    /// The vector's scale.
    pub scale: f32,
}

/// A knowledge graph of one index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Graph {
    /// [`GRAPH_FORMAT`].
    pub format: u32,
    /// The SHA-256 of the model its vectors come from (the index's).
    pub model: String,
    /// Numbers per vector.
    pub dims: usize,
    /// Chunks of the index it was built for.
    pub index_chunks: usize,
    /// The SHA-256 of that index's chunk ids and texts in order (`Engine::chunks_digest`): a
    /// graph attached outside a manifest (a collection's) must match it.
    pub chunks_sha256: String,
    /// Chunks extracted (skipped ones included).
    pub chunks: usize,
    /// Chunks the LLM gave no graph for.
    pub skipped: usize,
    /// Entities, by name.
    pub entities: Vec<GraphEntity>,
    /// Relations, by their pair of entities.
    pub relations: Vec<GraphRelation>,
}

/// A graph part that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the graph file is unusable: {0}; build it again with `sextant graph build`")]
pub struct GraphError(pub String);

impl Graph {
    /// The part's bytes: JSON, one line, fields in a fixed order (the same graph, the same bytes).
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a graph serialises")
    }

    /// Reads and checks a graph part for an index of `index_chunks` chunks whose model is
    /// `model` with `dims` numbers per vector.
    pub fn from_json(bytes: &[u8], model: &str, dims: usize, index_chunks: usize) -> Result<Self, GraphError> {
        let graph: Graph = serde_json::from_slice(bytes).map_err(|e| GraphError(e.to_string()))?;
        if graph.format != GRAPH_FORMAT {
            return Err(GraphError(format!(
                "its format is {}, this sextant reads {GRAPH_FORMAT}",
                graph.format
            )));
        }
        if graph.model != model || graph.dims != dims {
            return Err(GraphError(
                "its vectors come from another model than the index's".into(),
            ));
        }
        if graph.index_chunks != index_chunks {
            return Err(GraphError(format!(
                "it was built for an index of {} chunks, this one has {index_chunks}",
                graph.index_chunks
            )));
        }
        if graph.entities.len() > MAX_ITEMS || graph.relations.len() > MAX_ITEMS {
            return Err(GraphError("it holds too many entities or relations".into()));
        }
        let n = graph.entities.len() as u32;
        let chunk_ok = |c: &Vec<u32>| c.iter().all(|&x| (x as usize) < index_chunks);
        for e in &graph.entities {
            if e.vector.len() != dims || !chunk_ok(&e.chunks) || !e.scale.is_finite() || !e.rank.is_finite() {
                return Err(GraphError(format!("entity {:?} is malformed", e.name)));
            }
        }
        for r in &graph.relations {
            if r.source >= n || r.target >= n || r.vector.len() != dims || !chunk_ok(&r.chunks) || !r.scale.is_finite()
            {
                return Err(GraphError("a relation is malformed".into()));
            }
        }
        Ok(graph)
    }

    /// Cosine similarity of a (normalised) query vector with an entity's.
    pub fn entity_similarity(&self, entity: usize, query: &[f32]) -> f32 {
        similarity(&self.entities[entity].vector, self.entities[entity].scale, query)
    }

    /// Cosine similarity of a query vector with a relation's.
    pub fn relation_similarity(&self, relation: usize, query: &[f32]) -> f32 {
        similarity(&self.relations[relation].vector, self.relations[relation].scale, query)
    }
}

fn similarity(vector: &[i8], scale: f32, query: &[f32]) -> f32 {
    if vector.len() != query.len() {
        return 0.0;
    }
    let v: Vec<f32> = vector.iter().map(|&x| f32::from(x) * scale).collect();
    let norm = dot(&v, &v).sqrt();
    if norm == 0.0 {
        return 0.0;
    }
    dot(&v, query) / norm
}

/// int8 vectors as lower-case hex (two digits a number, two's complement).
mod hex_i8 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[i8], s: S) -> Result<S::Ok, S::Error> {
        let mut out = String::with_capacity(v.len() * 2);
        for &x in v {
            out.push_str(&format!("{:02x}", x as u8));
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i8>, D::Error> {
        let text = String::deserialize(d)?;
        if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(serde::de::Error::custom("a vector is not hex digits in pairs"));
        }
        Ok((0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap_or(0) as i8)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::build::merge;
    use super::extract::parse_reply;
    use super::*;

    #[test]
    fn a_graph_reads_back_only_with_its_index() {
        let d = merge(
            &[(
                0,
                parse_reply(r#"{"relations":[{"source":"A","target":"B","description":"r"}]}"#).unwrap(),
            )],
            0,
        );
        let g = d
            .finish(&[vec![1.0, 0.0], vec![0.0, -1.0]], &[vec![0.6, 0.8]], 2, "m", 3, "d")
            .unwrap();
        let bytes = g.to_json();
        let back = Graph::from_json(&bytes, "m", 2, 3).unwrap();
        assert_eq!(back, g);
        assert!((back.entity_similarity(1, &[0.0, -1.0]) - 1.0).abs() < 1e-3);
        assert!(Graph::from_json(&bytes, "other", 2, 3)
            .unwrap_err()
            .to_string()
            .contains("another model"));
        assert!(Graph::from_json(&bytes, "m", 2, 4)
            .unwrap_err()
            .to_string()
            .contains("3 chunks"));
        let bad = String::from_utf8(bytes.clone())
            .unwrap()
            .replace("\"chunks\":[0]", "\"chunks\":[9]");
        assert!(Graph::from_json(bad.as_bytes(), "m", 2, 3).is_err());
        assert!(Graph::from_json(b"{\"format\":1", "m", 2, 3).is_err());
        assert!(Graph::from_json(&[0xff; 64], "m", 2, 3)
            .unwrap_err()
            .to_string()
            .contains("sextant graph build"));
    }
}
