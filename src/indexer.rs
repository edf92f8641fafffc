//! Turning documents into an index: one pipeline that `sextant build`, `build --site`, its
//! shards and merges, and collections (natively and in wasm) all drive, so that the same
//! documents give the same chunks, the same model inputs, the same vectors and the same bytes by
//! construction. What differs between them is injected: the [`Executor`] that runs independent
//! jobs (rayon's pool in the CLI, the calling thread in a collection, whose Web Workers each take
//! pending texts), the [`Embedder`], and the [`VectorStore`] vectors come from (the CLI's
//! embedding cache, a collection's vectors, a merge's partials).
//!
//! 1. [`chunk_documents`]: validate the configuration against the model, split every document
//!    (on the executor), number and de-duplicate the chunks ([`collect`]), and say what the model
//!    reads for each chunk and that text's key ([`Chunked`]).
//! 2. [`Chunked::pending`]: the chunks whose input no store has a vector for, each input once;
//!    [`Chunked::embed`] embeds them (on the executor) as passages.
//! 3. [`assemble_chunked`]: the vectors in chunk order from the store, and the index files
//!    (format 2: keyword shards, fragments, quantized vectors) and manifest ([`assemble`]); pack
//!    them into one file, or write them as a site's files.

use crate::bm25::Bm25Error;
use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::chunk::{collect_chunks, split_document, ChunkParamError, ChunkedCorpus, Document};
use crate::config::BuildConfig;
use crate::embed::{EmbedError, Embedder, ModelSpec, ModelTokenizer, TextKind};
use crate::index::writer::{write_index_on, BuiltIndex, IndexInput};
use crate::index::Fields;
#[cfg(feature = "indexer")]
use crate::index::Layout;
use crate::index::{DocumentInfo, IndexError};

/// Why an index could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Nothing to index.
    #[error("no documents to index: the inputs held no readable documents with text")]
    EmptyCorpus,
    /// Chunking parameters are invalid.
    #[error(transparent)]
    Chunking(#[from] ChunkParamError),
    /// BM25 parameters are invalid.
    #[error(transparent)]
    Bm25(#[from] Bm25Error),
    /// Tokenising failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// Two documents share an id.
    #[error("two documents have the id {id:?} ({first} and {second}); ids come from paths relative to each input or from JSONL _id, so make them unique")]
    DuplicateId {
        /// The id.
        id: String,
        /// Source of the first.
        first: String,
        /// Source of the second.
        second: String,
    },
    /// The configured model options disagree with the model given.
    #[error("{0}")]
    Config(String),
    /// Encoding failed.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// Chunks whose input has no vector yet, in an index that must be whole.
    #[error("{missing} chunks are not embedded yet (the first is {first}); embed the pending chunks first, or build a partial index for keyword search")]
    NotEmbedded {
        /// How many.
        missing: usize,
        /// The id of the first.
        first: String,
    },
    /// The vectors given do not match the chunks.
    #[error("{vectors} vectors for {chunks} chunks")]
    VectorCount {
        /// Vectors given.
        vectors: usize,
        /// Chunks.
        chunks: usize,
    },
}

/// The key of an embedded text: SHA-256 of the text as the model saw it (passage prefix + chunk
/// input). The CLI's embedding cache, a collection's vectors and shard partials share it.
pub fn text_key(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// Runs independent jobs on however many threads its host has: the CLI's runs them on rayon's
/// pool; [`OneThread`] on the calling thread. A job's result never depends on where it ran, so
/// every executor gives the same index.
pub trait Executor {
    /// `job(0)`, …, `job(n - 1)`, in that order.
    fn map<T: Send>(&self, n: usize, job: &(dyn Fn(usize) -> T + Sync)) -> Vec<T>;
}

/// Every job on the calling thread, one after the other (wasm, tests).
pub struct OneThread;

impl Executor for OneThread {
    fn map<T: Send>(&self, n: usize, job: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
        (0..n).map(job).collect()
    }
}

/// Vectors by the [`text_key`] of what the model read.
pub trait VectorStore {
    /// The vector of the text with this key, if the store has one.
    fn vector(&self, key: &[u8; 32]) -> Option<&[f32]>;
}

impl VectorStore for HashMap<[u8; 32], Vec<f32>> {
    fn vector(&self, key: &[u8; 32]) -> Option<&[f32]> {
        self.get(key).map(Vec::as_slice)
    }
}

impl<S: VectorStore> VectorStore for Option<S> {
    fn vector(&self, key: &[u8; 32]) -> Option<&[f32]> {
        self.as_ref().and_then(|s| s.vector(key))
    }
}

/// Chunks, with what the model reads for each and that text's key.
#[derive(Debug, Clone, Default)]
pub struct Chunked {
    /// The chunks, numbered.
    pub corpus: ChunkedCorpus,
    /// What the model reads for each chunk: its text, after its title and headings when
    /// `fields.embed_context` ([`Fields::embed_input`]).
    pub inputs: Vec<String>,
    /// The [`text_key`] of each input, the passage prefix before it.
    pub keys: Vec<[u8; 32]>,
}

/// A chunk's input embedded now.
#[derive(Debug, Clone)]
pub struct Embedded {
    /// The chunk's number (the first chunk that reads this input).
    pub chunk: usize,
    /// Its vector, as [`Embedder::embed`] gave it for a passage.
    pub vector: Vec<f32>,
    /// Model tokens in the input.
    pub tokens: usize,
}

impl Chunked {
    /// The inputs and keys of `corpus`'s chunks (numbered over `documents`).
    pub fn new(documents: &[Document], corpus: ChunkedCorpus, fields: Fields, passage_prefix: &str) -> Self {
        let inputs: Vec<String> = corpus
            .chunks
            .iter()
            .map(|c| {
                let title = documents.get(c.doc as usize).map_or("", |d| d.title.as_str());
                fields.embed_input(title, &c.heading_path, &c.text)
            })
            .collect();
        let keys = inputs
            .iter()
            .map(|t| text_key(&format!("{passage_prefix}{t}")))
            .collect();
        Self { corpus, inputs, keys }
    }

    /// The chunks `wanted` says whose input `store` has no vector for, each input once (its first
    /// chunk), in chunk order: what is left to embed.
    pub fn pending(&self, store: &impl VectorStore, wanted: &dyn Fn(usize) -> bool) -> Vec<usize> {
        let mut seen = std::collections::HashSet::new();
        (0..self.keys.len())
            .filter(|&i| wanted(i) && store.vector(&self.keys[i]).is_none() && seen.insert(self.keys[i]))
            .collect()
    }

    /// Embeds the inputs of the chunks `todo` names as passages, on `executor`, calling `tick`
    /// after each.
    pub fn embed(
        &self,
        todo: &[usize],
        embedder: &dyn Embedder,
        executor: &impl Executor,
        tick: &(dyn Fn() + Sync),
    ) -> Result<Vec<Embedded>, EmbedError> {
        executor
            .map(todo.len(), &|j| {
                let chunk = todo[j];
                let text = &self.inputs[chunk];
                let vector = embedder.embed(text, TextKind::Passage)?;
                let tokens = embedder.count_tokens(text)?;
                tick();
                Ok(Embedded { chunk, vector, tokens })
            })
            .into_iter()
            .collect()
    }

    /// Every chunk's vector from `store`, in chunk order, with the numbers of the chunks it has
    /// none for (given `dims` zeros).
    pub fn vectors(&self, store: &impl VectorStore, dims: usize) -> (Vec<Vec<f32>>, Vec<usize>) {
        let mut missing = Vec::new();
        let vectors = self
            .keys
            .iter()
            .enumerate()
            .map(|(i, key)| match store.vector(key) {
                Some(v) => v.to_vec(),
                None => {
                    missing.push(i);
                    vec![0.0; dims]
                }
            })
            .collect();
        (vectors, missing)
    }
}

/// Checks the configuration against the model's tokenizer, splits the documents on `executor`
/// (calling `tick` after each), numbers and de-duplicates their chunks, and says what the model
/// reads for each.
pub fn chunk_documents(
    documents: &[Document],
    config: &BuildConfig,
    tokenizer: &ModelTokenizer,
    passage_prefix: &str,
    executor: &impl Executor,
    tick: &(dyn Fn() + Sync),
) -> Result<Chunked, BuildError> {
    validate(documents, config, tokenizer)?;
    let splits = executor
        .map(documents.len(), &|i| {
            let texts = split(&documents[i], config, tokenizer);
            tick();
            texts
        })
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let corpus = collect(documents, splits)?;
    Ok(Chunked::new(documents, corpus, config.fields, passage_prefix))
}

/// Checks the configuration against the model's tokenizer and chunks the documents, one after
/// the other ([`chunk_documents`] on [`OneThread`], without the model inputs).
pub fn chunk_corpus(
    documents: &[Document],
    config: &BuildConfig,
    tokenizer: &ModelTokenizer,
) -> Result<ChunkedCorpus, BuildError> {
    Ok(chunk_documents(documents, config, tokenizer, "", &OneThread, &|| ())?.corpus)
}

/// The chunk texts of one document ([`split_document`] with the model's token counts).
pub fn split(
    document: &Document,
    config: &BuildConfig,
    tokenizer: &ModelTokenizer,
) -> Result<Vec<Vec<String>>, BuildError> {
    Ok(split_document(document, config.chunking, &|s: &str| {
        tokenizer.count(s)
    })?)
}

/// Numbers and de-duplicates the split documents; fails when no chunk is left.
pub fn collect(documents: &[Document], splits: Vec<Vec<Vec<String>>>) -> Result<ChunkedCorpus, BuildError> {
    let corpus = collect_chunks(documents, splits);
    if corpus.chunks.is_empty() {
        return Err(BuildError::EmptyCorpus);
    }
    Ok(corpus)
}

/// The most text tokens a chunk may have so that prefix + text + special tokens fit the window.
pub fn chunk_token_limit(config: &BuildConfig, tokenizer: &ModelTokenizer) -> Result<usize, BuildError> {
    let prefix = tokenizer.count(&config.model.passage_prefix)?;
    Ok(tokenizer
        .max_tokens()
        .saturating_sub(tokenizer.special_tokens())
        .saturating_sub(prefix))
}

/// Checks the configuration against the model's tokenizer, and that document ids are unique.
pub fn validate(documents: &[Document], config: &BuildConfig, tokenizer: &ModelTokenizer) -> Result<(), BuildError> {
    if documents.is_empty() {
        return Err(BuildError::EmptyCorpus);
    }
    config.bm25.validate()?;
    config.fields.validate().map_err(BuildError::Config)?;
    config.layout.validate().map_err(BuildError::Config)?;
    let limit = chunk_token_limit(config, tokenizer)?;
    config.chunking.validate(limit, tokenizer.max_tokens())?;
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for d in documents {
        if let Some(first) = seen.insert(&d.id, &d.source) {
            return Err(BuildError::DuplicateId {
                id: d.id.clone(),
                first: first.to_string(),
                second: d.source.clone(),
            });
        }
    }
    Ok(())
}

/// Builds the index files (format 2) from the chunks and their vectors. `vectors[i]` is the
/// embedding of `corpus.chunks[i]`. Pack them with [`crate::index::packed::pack`] for one file.
pub fn assemble(
    documents: &[Document],
    corpus: &ChunkedCorpus,
    vectors: &[Vec<f32>],
    model: &ModelSpec,
    config: &BuildConfig,
) -> Result<BuiltIndex, BuildError> {
    assemble_on(documents, corpus, vectors, model, config, &OneThread)
}

/// [`assemble`] with the index writer's independent work on `executor` (the same bytes).
fn assemble_on(
    documents: &[Document],
    corpus: &ChunkedCorpus,
    vectors: &[Vec<f32>],
    model: &ModelSpec,
    config: &BuildConfig,
    executor: &impl Executor,
) -> Result<BuiltIndex, BuildError> {
    if vectors.len() != corpus.chunks.len() {
        return Err(BuildError::VectorCount {
            vectors: vectors.len(),
            chunks: corpus.chunks.len(),
        });
    }
    let infos: Vec<DocumentInfo> = documents
        .iter()
        .map(|d| DocumentInfo {
            id: d.id.clone(),
            source: d.source.clone(),
            url: d.url.clone(),
            title: d.title.clone(),
            metadata: d.metadata.clone(),
            filters: d.filters.clone(),
            sort: d.sort.clone(),
        })
        .collect();
    Ok(write_index_on(
        IndexInput {
            documents: &infos,
            chunks: &corpus.chunks,
            duplicates_dropped: corpus.duplicates_dropped,
            shared_chunks: corpus.shared,
            vectors,
            model,
            chunking: config.chunking,
            bm25: config.bm25,
            fields: config.fields,
            analyzer: crate::analyzer::Analyzer::name_for_language(&config.input.language),
            layout: config.layout,
        },
        executor,
    )?)
}

/// Builds the index files from chunks and the vectors `store` has for their inputs. A chunk
/// without one is an error ([`BuildError::NotEmbedded`]) unless `partial`, which gives it zeros:
/// an index searched by keyword until every chunk is embedded.
pub fn assemble_chunked(
    documents: &[Document],
    chunked: &Chunked,
    store: &impl VectorStore,
    model: &ModelSpec,
    config: &BuildConfig,
    partial: bool,
) -> Result<BuiltIndex, BuildError> {
    let vectors = ordered_vectors(chunked, store, model.dims, partial)?;
    assemble(documents, &chunked.corpus, &vectors, model, config)
}

/// [`assemble_chunked`] for a build that keeps nothing after it (the CLI's build and merge): the
/// store and the model inputs are let go once the vectors are in chunk order, before the index
/// is assembled, so each vector is held once (rust-doc from a full embedding cache: peak RSS
/// 2.85 -> 2.41 GB). The index writer's independent work runs on `executor`.
pub fn assemble_owned<S: VectorStore>(
    documents: &[Document],
    chunked: Chunked,
    store: S,
    model: &ModelSpec,
    config: &BuildConfig,
    executor: &impl Executor,
) -> Result<BuiltIndex, BuildError> {
    let vectors = ordered_vectors(&chunked, &store, model.dims, false)?;
    drop(store);
    // Dropped now: fields left in a partly moved value live to the end of the function.
    let Chunked { corpus, inputs, keys } = chunked;
    drop((inputs, keys));
    assemble_on(documents, &corpus, &vectors, model, config, executor)
}

/// Every chunk's vector from `store` in chunk order; a chunk without one is
/// [`BuildError::NotEmbedded`] unless `partial` (zeros).
fn ordered_vectors(
    chunked: &Chunked,
    store: &impl VectorStore,
    dims: usize,
    partial: bool,
) -> Result<Vec<Vec<f32>>, BuildError> {
    let (vectors, missing) = chunked.vectors(store, dims);
    if let (Some(&first), false) = (missing.first(), partial) {
        return Err(BuildError::NotEmbedded {
            missing: missing.len(),
            first: chunked.corpus.chunks[first].id.clone(),
        });
    }
    Ok(vectors)
}

#[cfg(feature = "indexer")]
/// Converts a format-1 bundle into a format-2 index, without embedding again: the same
/// documents, chunks and BM25 parameters, its f32 vectors quantized, cut as `layout` says.
pub fn upgrade(v1: &[u8], layout: Layout) -> Result<BuiltIndex, BuildError> {
    let bundle = crate::format1::Bundle::from_bytes(v1)?;
    Ok(crate::index::writer::write_index(IndexInput {
        documents: &bundle.documents,
        chunks: &bundle.chunks,
        duplicates_dropped: bundle.manifest.counts.duplicates_dropped,
        shared_chunks: 0,
        vectors: &bundle.vectors,
        model: &bundle.manifest.model,
        chunking: bundle.manifest.chunking,
        bm25: bundle.manifest.bm25,
        // BM25 as format 1 counted it.
        fields: crate::index::Fields::UNRECORDED,
        analyzer: crate::analyzer::Analyzer::WHOLE_WORDS,
        layout,
    })?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::chunk::Section;
    use crate::embed::Embedder;

    fn doc(id: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            source: format!("{id}.md"),
            url: None,
            title: id.to_uppercase(),
            sections: vec![Section {
                heading_path: vec![id.to_uppercase()],
                anchor: None,
                text: text.into(),
                code: Vec::new(),
                weighted: Vec::new(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn documents_are_chunked_numbered_and_none_is_lost_to_a_twin() {
        let model = crate::test_model();
        let config = BuildConfig::default();
        let docs = [
            doc("a", "The lamp burns oil."),
            doc("b", "The lamp burns oil."),
            doc("c", "Fog horn."),
        ];
        let corpus = chunk_corpus(&docs, &config, model.tokenizer()).unwrap();
        assert_eq!(
            (corpus.shared, corpus.duplicates_dropped),
            (1, 0),
            "b's chunk repeats a's"
        );
        let ids: Vec<&str> = corpus.chunks.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a#0", "b#0", "c#0"], "b is a document of its own");
        assert_eq!(corpus.chunks[2].doc, 2, "chunks point at their document's position");
    }

    #[test]
    fn bad_inputs_fail_before_anything_is_built() {
        let model = crate::test_model();
        let config = BuildConfig::default();
        let e = chunk_corpus(&[], &config, model.tokenizer()).unwrap_err();
        assert!(matches!(e, BuildError::EmptyCorpus));
        assert!(!e.to_string().contains("--"), "the core names no CLI flag: {e}");
        let e = chunk_corpus(&[doc("a", "x"), doc("a", "y")], &config, model.tokenizer()).unwrap_err();
        assert!(e.to_string().contains("two documents have the id \"a\""), "{e}");
        let mut bad = config.clone();
        bad.fields.title_weight = 99;
        assert!(matches!(
            validate(&[doc("a", "x")], &bad, model.tokenizer()),
            Err(BuildError::Config(_))
        ));
        let corpus = chunk_corpus(&[doc("a", "x")], &config, model.tokenizer()).unwrap();
        let e = assemble(&[doc("a", "x")], &corpus, &[], model.spec(), &config).unwrap_err();
        assert!(matches!(e, BuildError::VectorCount { vectors: 0, chunks: 1 }));
    }

    #[test]
    fn assembling_twice_gives_the_same_bytes() {
        let model = crate::test_model();
        let config = BuildConfig::default();
        let docs = [doc("a", "The lamp burns oil."), doc("c", "Fog horn.")];
        let corpus = chunk_corpus(&docs, &config, model.tokenizer()).unwrap();
        let vectors: Vec<Vec<f32>> = corpus
            .chunks
            .iter()
            .map(|c| model.embed(&c.text, crate::embed::TextKind::Passage).unwrap())
            .collect();
        let one = assemble(&docs, &corpus, &vectors, model.spec(), &config).unwrap();
        let two = assemble(&docs, &corpus, &vectors, model.spec(), &config).unwrap();
        assert_eq!(one.files, two.files);
        assert_eq!(one.manifest.counts.documents, 2);
    }

    /// Runs the jobs last to first on threads of its own, as a pool may finish them.
    pub(crate) struct Backwards;

    impl Executor for Backwards {
        fn map<T: Send>(&self, n: usize, job: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
            let mut out: Vec<T> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..n).rev().map(|i| s.spawn(move || job(i))).collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            out.reverse();
            out
        }
    }

    #[test]
    fn the_pipeline_gives_the_same_index_on_any_executor_and_embeds_each_input_once() {
        let model = crate::test_model();
        let config = BuildConfig::default();
        let prefix = &model.spec().passage_prefix;
        let docs = [
            doc("a", "The lamp burns oil."),
            doc("b", "The lamp burns oil."),
            doc("c", "Fog horn."),
        ];
        let build = |executor: &dyn Fn(&Chunked, &[usize]) -> Vec<Embedded>, chunked: &Chunked| {
            let todo = chunked.pending(&HashMap::new(), &|_| true);
            let store: HashMap<[u8; 32], Vec<f32>> = executor(chunked, &todo)
                .into_iter()
                .map(|e| (chunked.keys[e.chunk], e.vector))
                .collect();
            assemble_chunked(&docs, chunked, &store, model.spec(), &config, false).unwrap()
        };
        let one = chunk_documents(&docs, &config, model.tokenizer(), prefix, &OneThread, &|| ()).unwrap();
        let many = chunk_documents(&docs, &config, model.tokenizer(), prefix, &Backwards, &|| ()).unwrap();
        assert_eq!(one.inputs, many.inputs);
        assert_eq!(one.keys, many.keys);
        // Each distinct input is embedded once, however many chunks read it.
        let distinct: std::collections::HashSet<_> = one.keys.iter().collect();
        assert_eq!(one.pending(&HashMap::new(), &|_| true).len(), distinct.len());
        let serial = build(
            &|c, todo| c.embed(todo, model.as_ref(), &OneThread, &|| ()).unwrap(),
            &one,
        );
        let pooled = build(
            &|c, todo| c.embed(todo, model.as_ref(), &Backwards, &|| ()).unwrap(),
            &many,
        );
        assert_eq!(serial.files, pooled.files, "byte for byte");
        // A chunk without a vector: refused, naming it, unless the index may be partial.
        let e = assemble_chunked(&docs, &one, &HashMap::new(), model.spec(), &config, false).unwrap_err();
        assert!(
            matches!(&e, BuildError::NotEmbedded { missing: 3, first } if first == "a#0"),
            "{e}"
        );
        assert!(e.to_string().contains("embed the pending chunks"), "{e}");
        assert!(assemble_chunked(&docs, &one, &HashMap::new(), model.spec(), &config, true).is_ok());
        // Only the chunks wanted, less those the store has.
        let half: HashMap<[u8; 32], Vec<f32>> = [(one.keys[2], vec![0.5; model.spec().dims])].into();
        assert_eq!(one.pending(&half, &|i| i != 0), vec![1]);
    }

    #[cfg(feature = "indexer")]
    #[test]
    fn a_format_1_bundle_upgrades_without_embedding_again() {
        let v1 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden-v1.sxt")).unwrap();
        let built = upgrade(&v1, Layout::default()).unwrap();
        assert_eq!((built.manifest.counts.documents, built.manifest.counts.chunks), (7, 12));
        assert_eq!(built.manifest.analyzer, crate::analyzer::Analyzer::WHOLE_WORDS);
        let e = upgrade(b"not a bundle", Layout::default()).unwrap_err();
        assert!(matches!(e, BuildError::Index(_)), "{e}");
    }
}
