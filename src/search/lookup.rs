//! A chunk or a whole document found by its id (what an agent asks for after a search: "fetch
//! `guide/install.md#3`", or all of `guide/install.md`).
//!
//! Ids are not sorted in the index (chunks are numbered in the order documents were read), so a
//! lookup reads the text fragments: those held first, then the others in batches of
//! [`LOOKUP_BATCH`] until the id is found. A document's chunks are numbered one after another, so
//! once some are found only the fragments on either side are needed to know it is whole.

use serde::{Deserialize, Serialize};

use super::engine::Engine;
use super::types::Step;
use crate::chunk::Chunk;
use crate::index::DocumentInfo;

/// Fragments asked for at once while looking for an id.
pub const LOOKUP_BATCH: usize = 32;

/// Whether an id named a chunk or a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FoundKind {
    /// One chunk.
    Chunk,
    /// A whole document: its chunks' texts, in order.
    Document,
}

/// What an id names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Found {
    /// The id asked for.
    pub id: String,
    /// A chunk or a document.
    pub kind: FoundKind,
    /// The document's id.
    pub doc_id: String,
    /// The document's title.
    pub title: String,
    /// The document's source path.
    pub source: String,
    /// The chunk's URL (with its heading's anchor), or the document's.
    pub url: String,
    /// The chunk's headings (empty for a document).
    pub heading_path: Vec<String>,
    /// The chunk's text, or the document's chunks' texts separated by blank lines.
    pub text: String,
    /// The chunks' ids, in order (one for a chunk).
    pub chunk_ids: Vec<String>,
}

impl Found {
    /// What `id` names: `chunk` whole, or `doc` with `chunk` its first chunk (the caller adds the
    /// others and the text).
    fn new(id: &str, kind: FoundKind, doc: &DocumentInfo, chunk: &Chunk) -> Self {
        let (url, heading_path, text) = match kind {
            FoundKind::Chunk => (chunk.url.clone(), chunk.heading_path.clone(), chunk.text.clone()),
            FoundKind::Document => (
                doc.url.clone().unwrap_or_else(|| doc.source.clone()),
                Vec::new(),
                String::new(),
            ),
        };
        Self {
            id: id.to_string(),
            kind,
            doc_id: doc.id.clone(),
            title: doc.title.clone(),
            source: doc.source.clone(),
            url,
            heading_path,
            text,
            chunk_ids: vec![chunk.id.clone()],
        }
    }
}

impl Engine {
    /// The chunk or document with this id (`None` when the index holds neither), or the text
    /// fragments to look in next.
    pub fn lookup(&self, id: &str) -> Step<Option<Found>> {
        let store = &self.store;
        // Fragments read through are not marked used (only those holding what is found are), so
        // the memory bound can let them go once the lookup ends.
        store.begin_query();
        let manifest = store.manifest();
        let total = manifest.counts.chunks as u32;
        let per = manifest.files.fragments.chunks_per_file.max(1) as u32;
        let mut missing: Vec<u32> = Vec::new();
        let mut of_document: Vec<u32> = Vec::new();
        for first in (0..total).step_by(per as usize) {
            let Some(fragment) = store.peek_fragment(first) else {
                missing.push(first);
                continue;
            };
            for (at, chunk) in fragment.chunks.iter().enumerate() {
                let number = fragment.first + at as u32;
                let Some(doc) = fragment.document(chunk.doc) else {
                    continue;
                };
                if chunk.id == id {
                    store.fragment(number); // kept: it holds what was asked for
                    return Step::Done(Some(Found::new(id, FoundKind::Chunk, doc, chunk)));
                }
                if doc.id == id {
                    of_document.push(number);
                }
            }
        }
        let (Some(&low), Some(&high)) = (of_document.first(), of_document.last()) else {
            if missing.is_empty() {
                return Step::Done(None);
            }
            missing.truncate(LOOKUP_BATCH);
            return Step::Need(store.fragment_needs(missing));
        };
        // Every fragment from the chunk before the first found to the chunk after the last: the
        // ones between may hold more of it (not read yet), and those either side tell whether the
        // document goes on.
        let from = low.saturating_sub(1);
        let to = (high + 1).min(total.saturating_sub(1));
        let need = store.fragment_needs((from..=to).step_by(per as usize).chain([to]));
        if !need.is_empty() {
            return Step::Need(need);
        }
        self.document_of(id, &of_document)
            .map_or(Step::Done(None), |found| Step::Done(Some(found)))
    }

    /// The chunks numbered `numbers` (as a graph cites them), in that order; numbers the index
    /// does not have are left out. Or the fragments that hold them.
    pub fn chunks_numbered(&self, numbers: &[u32]) -> Step<Vec<(u32, Found)>> {
        let store = &self.store;
        store.begin_query();
        let total = store.manifest().counts.chunks as u32;
        let numbers: Vec<u32> = numbers.iter().copied().filter(|&n| n < total).collect();
        let need = store.fragment_needs(numbers.iter().copied());
        if !need.is_empty() {
            return Step::Need(need);
        }
        Step::Done(
            numbers
                .into_iter()
                .filter_map(|number| {
                    let fragment = store.fragment(number)?;
                    let chunk = fragment.chunk(number)?;
                    let doc = fragment.document(chunk.doc)?;
                    Some((number, Found::new(&chunk.id, FoundKind::Chunk, doc, chunk)))
                })
                .collect(),
        )
    }

    /// The ids of the chunks numbered `numbers` whose fragments are held (nothing is fetched).
    pub fn held_chunk_ids(&self, numbers: &[u32]) -> Vec<(u32, String)> {
        numbers
            .iter()
            .filter_map(|&n| {
                let chunk = self.store.peek_fragment(n)?.chunk(n)?;
                Some((n, chunk.id.clone()))
            })
            .collect()
    }

    /// The SHA-256 of every chunk's id and text in index order (what a graph built for this
    /// index records, so a graph of another index's chunks is refused), or `None` while some
    /// fragment is not held.
    pub fn chunks_digest(&self) -> Option<String> {
        let total = self.store.manifest().counts.chunks as u32;
        let mut bytes: Vec<u8> = Vec::new();
        for n in 0..total {
            let chunk = self.store.peek_fragment(n)?.chunk(n)?;
            bytes.extend_from_slice(chunk.id.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(crate::digest::sha256_hex(chunk.text.as_bytes()).as_bytes());
            bytes.push(0);
        }
        Some(crate::digest::sha256_hex(&bytes))
    }

    /// The document `id` from its chunks (`numbers`, in order, every fragment held).
    fn document_of(&self, id: &str, numbers: &[u32]) -> Option<Found> {
        let mut found: Option<Found> = None;
        let mut texts: Vec<&str> = Vec::with_capacity(numbers.len());
        for &number in numbers {
            let fragment = self.store.fragment(number)?;
            let chunk = fragment.chunk(number)?;
            let doc = fragment.document(chunk.doc)?;
            match found.as_mut() {
                Some(f) => f.chunk_ids.push(chunk.id.clone()),
                None => found = Some(Found::new(id, FoundKind::Document, doc, chunk)),
            }
            texts.push(&chunk.text);
        }
        found.map(|mut f| {
            f.text = texts.join("\n\n");
            f
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::tests::tiny;

    /// Looks `id` up over a split index, adding the files each step asks for; returns what was
    /// found and how many files were fetched.
    fn look_up(id: &str, start_with: &[usize]) -> (Option<Found>, usize) {
        look_up_in(&tiny(), id, start_with)
    }

    fn look_up_in(built: &crate::index::writer::BuiltIndex, id: &str, start_with: &[usize]) -> (Option<Found>, usize) {
        let store = crate::index::tests::paged_store(built);
        let per = built.manifest.files.fragments.chunks_per_file as u32;
        let fragments: Vec<String> = (0..built.manifest.counts.chunks as u32)
            .step_by(per as usize)
            .map(|c| store.fragment_needs([c]).remove(0))
            .collect();
        let mut engine = Engine::new(store);
        let bytes = |name: &str| crate::index::tests::bytes_of(built, name).to_vec();
        for &i in start_with {
            engine.add_file(&fragments[i], &bytes(&fragments[i])).unwrap();
        }
        let mut fetched = 0;
        for _ in 0..10 {
            match engine.lookup(id) {
                Step::Done(found) => return (found, fetched),
                Step::Need(names) => {
                    assert!(!names.is_empty());
                    for name in names {
                        engine.add_file(&name, &bytes(&name)).unwrap();
                        fetched += 1;
                    }
                }
            }
        }
        panic!("lookup of {id} did not end");
    }

    #[test]
    fn chunks_by_their_numbers() {
        let built = tiny();
        let store = crate::index::tests::paged_store(&built);
        let mut engine = Engine::new(store);
        let total = built.manifest.counts.chunks as u32;
        let found = loop {
            match engine.chunks_numbered(&[1, total + 5, 0]) {
                Step::Done(found) => break found,
                Step::Need(names) => {
                    for name in names {
                        let bytes = crate::index::tests::bytes_of(&built, &name).to_vec();
                        engine.add_file(&name, &bytes).unwrap();
                    }
                }
            }
        };
        let ids: Vec<(u32, &str)> = found.iter().map(|(n, f)| (*n, f.id.as_str())).collect();
        assert_eq!(
            ids,
            vec![(1, "a#1"), (0, "a#0")],
            "in the order asked, numbers out of range left out"
        );
        assert_eq!(found[0].1.text, "fog horn");
    }

    #[test]
    fn a_chunk_by_its_id_and_a_document_whole() {
        let (chunk, _) = look_up("a#1", &[]);
        let chunk = chunk.expect("a#1 is in the index");
        assert_eq!(
            (chunk.kind, chunk.doc_id.as_str(), chunk.text.as_str()),
            (FoundKind::Chunk, "a", "fog horn")
        );
        assert_eq!(chunk.chunk_ids, ["a#1"]);
        let (doc, _) = look_up("a", &[]);
        let doc = doc.expect("document a is in the index");
        assert_eq!(doc.kind, FoundKind::Document);
        assert_eq!(doc.chunk_ids, ["a#0", "a#1"]);
        assert_eq!(doc.text, "lamp oil\n\nfog horn");
    }

    #[test]
    fn held_fragments_are_read_first_and_a_document_is_checked_whole() {
        // b#0 is in the second fragment: held, so nothing is fetched.
        let (found, fetched) = look_up("b#0", &[1]);
        assert_eq!(found.map(|f| f.text), Some("lamp lens".to_string()));
        assert_eq!(fetched, 0);
        // Document b starts the second fragment: the chunk before it is read to know it is whole.
        let (found, fetched) = look_up("b", &[1]);
        assert_eq!(found.map(|f| f.chunk_ids), Some(vec!["b#0".to_string()]));
        assert_eq!(fetched, 1);
    }

    #[test]
    fn a_document_is_whole_even_when_only_its_ends_were_held() {
        // d0 is chunks 0–7, over fragments 0–3 of two chunks each; only its first and last
        // fragments are held, so the two between must be read too.
        let texts: Vec<String> = (0..12).map(|i| format!("lamp {i}")).collect();
        let vectors: Vec<Vec<f32>> = (0..12).map(|i| vec![1.0, i as f32, 0.0]).collect();
        let layout = crate::index::Layout {
            fragment_chunks: 2,
            block_chunks: 2,
            code_file_chunks: 2,
            ..Default::default()
        };
        let built = crate::index::tests::build(&texts, &vectors, 8, layout);
        let (found, fetched) = look_up_in(&built, "d0", &[0, 3]);
        let found = found.expect("d0 is in the index");
        assert_eq!(found.chunk_ids, (0..8).map(|i| format!("d0#{i}")).collect::<Vec<_>>());
        assert_eq!(found.text.matches("lamp").count(), 8);
        assert_eq!(fetched, 3, "fragments 1 and 2 between, and 4 after");
    }

    #[test]
    fn fragments_read_through_can_be_let_go_after_a_lookup() {
        let built = tiny();
        let mut engine = Engine::new(crate::index::tests::paged_store(&built));
        for _ in 0..3 {
            match engine.lookup("nowhere#1") {
                Step::Done(found) => {
                    assert!(found.is_none());
                    break;
                }
                Step::Need(names) => {
                    for name in names {
                        engine
                            .add_file(&name, crate::index::tests::bytes_of(&built, &name))
                            .unwrap();
                    }
                }
            }
        }
        assert_eq!(engine.trim(0, None), 2, "both fragments were only read through");
    }

    #[test]
    fn an_unknown_id_is_none_after_every_fragment_is_read() {
        assert_eq!(look_up("nowhere#9", &[]), (None, 2));
        assert_eq!(look_up("", &[0, 1]), (None, 0));
    }
}
