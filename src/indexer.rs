//! Turning documents into an index. The CLI drives these steps (it owns files, threads and
//! progress bars):
//!
//! 1. [`chunk_corpus`]: validate the configuration against the model, chunk every document.
//! 2. embed every chunk's text with [`crate::embed::Embedder::embed`] (`TextKind::Passage`),
//!    in parallel if you like: a text's vector never depends on the others.
//! 3. [`assemble`]: build the index files (format 2: keyword shards, fragments, quantized
//!    vectors) and the manifest; pack them into one file, or write them as a site's files.

use crate::bm25::Bm25Error;
use crate::chunk::{collect_chunks, split_document, ChunkParamError, ChunkedCorpus, Document};
use crate::config::BuildConfig;
use crate::embed::{EmbedError, ModelSpec, ModelTokenizer};
use crate::index::writer::{write_index, BuiltIndex, IndexInput};
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
    /// The vectors given do not match the chunks.
    #[error("{vectors} vectors for {chunks} chunks")]
    VectorCount {
        /// Vectors given.
        vectors: usize,
        /// Chunks.
        chunks: usize,
    },
}

/// Checks the configuration against the model's tokenizer and chunks the documents, one after
/// the other. (The CLI does the same with [`validate`], [`split`] on all cores, then
/// [`collect`].)
pub fn chunk_corpus(
    documents: &[Document],
    config: &BuildConfig,
    tokenizer: &ModelTokenizer,
) -> Result<ChunkedCorpus, BuildError> {
    validate(documents, config, tokenizer)?;
    let splits = documents
        .iter()
        .map(|d| split(d, config, tokenizer))
        .collect::<Result<Vec<_>, _>>()?;
    collect(documents, splits)
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
        })
        .collect();
    Ok(write_index(IndexInput {
        documents: &infos,
        chunks: &corpus.chunks,
        duplicates_dropped: corpus.duplicates_dropped,
        shared_chunks: corpus.shared,
        vectors,
        model,
        chunking: config.chunking,
        bm25: config.bm25,
        fields: config.fields,
        analyzer: crate::analyzer::Analyzer::NAME,
        layout: config.layout,
    })?)
}

#[cfg(feature = "indexer")]
/// Converts a format-1 bundle into a format-2 index, without embedding again: the same
/// documents, chunks and BM25 parameters, its f32 vectors quantized, cut as `layout` says.
pub fn upgrade(v1: &[u8], layout: Layout) -> Result<BuiltIndex, BuildError> {
    let bundle = crate::format1::Bundle::from_bytes(v1)?;
    Ok(write_index(IndexInput {
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
mod tests {
    use super::*;
    use crate::chunk::Section;
    use crate::embed::Embedder;

    fn doc(id: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            source: format!("{id}.md"),
            url: None,
            title: id.to_uppercase(),
            metadata: Default::default(),
            sections: vec![Section {
                heading_path: vec![id.to_uppercase()],
                anchor: None,
                text: text.into(),
                code: Vec::new(),
            }],
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
