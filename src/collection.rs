//! A collection built where its documents are (the browser's research workspace): files are
//! added and removed one at a time and chunked at once; their chunks are embedded when the caller
//! asks, a few at a time, so a Web Worker can report progress, pause and cancel; and the whole is
//! written as a format-2 index whenever asked. It drives `sextant build`'s pipeline
//! ([`crate::indexer`]): the same chunks, model inputs and keys, and the same assembly, so the
//! same files give the same index bytes, natively and in wasm (int8 passages are exact).
//!
//! Vectors are kept by the digest of the text embedded ([`crate::indexer::text_key`]), like the CLI's embedding
//! cache, so adding or removing a file never embeds unchanged text again, and the vectors can be
//! saved and restored ([`Collection::vectors_to_bytes`]) beside the files themselves.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::chunk::{collect_chunks, ChunkedCorpus, Document, Section};
use crate::codec::ByteReader;
use crate::config::BuildConfig;
use crate::embed::{Embedder, ModelSpec, ModelTokenizer, TextKind, Weights};
use crate::error_code::ErrorCode;
use crate::index::writer::BuiltIndex;
use crate::index::IndexStore;
use crate::indexer::{assemble_chunked, split, text_key, validate, BuildError, Chunked};
use crate::loader::{load_file, LoadError};

/// The first bytes of saved vectors computed with f32 weights (all saved vectors before int8
/// passages, 2026-12-02).
const VECTORS_MAGIC_F32: &[u8; 8] = b"SXTVECS\x01";
/// The first bytes of saved vectors computed with int8 weights.
const VECTORS_MAGIC_INT8: &[u8; 8] = b"SXTVECS\x02";
/// The first bytes of saved vectors computed with five-bit layer weights (`embed::int5`).
const VECTORS_MAGIC_INT5: &[u8; 8] = b"SXTVECS\x03";
/// The first bytes of saved vectors computed with int8 weights on rows rounded to bytes.
const VECTORS_MAGIC_INT8A8: &[u8; 8] = b"SXTVECS\x04";

/// Why a collection refused a change.
#[derive(Debug, thiserror::Error)]
pub enum CollectionError {
    /// The file could not be read as a document.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Chunking, ids or configuration.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A file's path is not one a collection can hold.
    #[error("{0}")]
    BadPath(String),
    /// An index to import is not one a collection can take.
    #[error("the index cannot be imported: {0}; build it again with `sextant build`")]
    BadIndex(String),
    /// Saved vectors could not be read.
    #[error("saved vectors are damaged: {0}; embed the collection again")]
    BadVectors(String),
    /// Nothing to index or search yet.
    #[error("the collection has no documents with text yet; add files to it first")]
    Empty,
    /// The model failed on a chunk's text.
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
}

impl CollectionError {
    /// The code users see: `BAD_ARGUMENT` for a file, path or configuration the collection
    /// cannot take, `CORRUPT_BUNDLE` for damaged saved vectors or an index it cannot import.
    pub fn code(&self) -> ErrorCode {
        match self {
            CollectionError::Load(_)
            | CollectionError::BadPath(_)
            | CollectionError::Build(_)
            | CollectionError::Empty => ErrorCode::BadArgument,
            CollectionError::BadVectors(_) | CollectionError::BadIndex(_) => ErrorCode::CorruptBundle,
            CollectionError::Embed(_) => ErrorCode::EmbedFailed,
        }
    }
}

/// What [`Collection::import_index`] took from an index.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImportSummary {
    /// The file it became.
    #[serde(flatten)]
    pub file: FileSummary,
    /// Vectors taken from the index (none when it was built with another model).
    pub vectors: usize,
}

/// One file of the collection, as shown to the user.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileSummary {
    /// Its path, `/`-separated: the id of its document (JSONL: the prefix of its lines' sources).
    pub path: String,
    /// Documents it holds (JSONL: one a line).
    pub documents: usize,
    /// Chunks cut from it (before repeats within a document are dropped).
    pub chunks: usize,
    /// Of those the index keeps, those whose vector is not computed yet (a chunk the model reads
    /// exactly as an earlier file's counts with that file: one vector serves both).
    pub pending: usize,
}

#[derive(Debug, Clone)]
struct FileEntry {
    documents: Vec<Document>,
    splits: Vec<Vec<Vec<String>>>,
    /// What the model reads for each chunk the file's documents keep, and its key
    /// ([`Chunked`], kept once the file is added).
    inputs: Vec<String>,
    keys: Vec<[u8; 32]>,
}

/// Documents by file, their chunk texts, and the vectors computed so far.
#[derive(Debug, Clone)]
pub struct Collection {
    config: BuildConfig,
    spec: ModelSpec,
    prefix: String,
    dims: usize,
    /// By path components, so files come in the order `sextant build` walks a folder (each
    /// folder's entries sorted by name).
    files: BTreeMap<Vec<String>, FileEntry>,
    vectors: HashMap<[u8; 32], Vec<f32>>,
}

fn components(path: &str) -> Result<Vec<String>, CollectionError> {
    let parts: Vec<String> = path.split('/').map(str::to_string).collect();
    if path.is_empty() || parts.iter().any(|p| p.is_empty() || p == "." || p == "..") {
        return Err(CollectionError::BadPath(format!(
            "{path:?} is not a relative path like notes/a.md (no empty, '.' or '..' parts); rename the file"
        )));
    }
    Ok(parts)
}

impl Collection {
    /// An empty collection built with `config` for the model `spec` describes.
    pub fn new(config: BuildConfig, spec: &ModelSpec) -> Self {
        Self {
            config,
            spec: spec.clone(),
            prefix: spec.passage_prefix.clone(),
            dims: spec.dims,
            files: BTreeMap::new(),
            vectors: HashMap::new(),
        }
    }

    /// Reads a file (Markdown, HTML, text or BEIR-style JSONL, by extension) and chunks it; a
    /// file already at `path` is replaced. Nothing changes when it fails.
    pub fn add_file(
        &mut self,
        path: &str,
        bytes: &[u8],
        tokenizer: &ModelTokenizer,
    ) -> Result<FileSummary, CollectionError> {
        components(path)?;
        let documents = load_file(path, bytes, &self.config.input)?;
        self.add_documents(path, documents, tokenizer)
    }

    /// Reads HTML made from another format (a DOCX converted in the browser) as the document
    /// `path`, with the HTML loader's sections and limits; replaces the file at `path`.
    pub fn add_html(
        &mut self,
        path: &str,
        html: &str,
        tokenizer: &ModelTokenizer,
    ) -> Result<FileSummary, CollectionError> {
        components(path)?;
        self.check_expanded(path, html.len())?;
        let document = crate::loader::load_html(path, html, &self.config.input)?;
        self.add_documents(path, vec![document], tokenizer)
    }

    /// Adds documents read elsewhere (a PDF's pages, a DOCX's text) under the file `path`,
    /// replacing what was there. Their ids must be unique in the collection.
    pub fn add_documents(
        &mut self,
        path: &str,
        documents: Vec<Document>,
        tokenizer: &ModelTokenizer,
    ) -> Result<FileSummary, CollectionError> {
        let key = components(path)?;
        let text: usize = documents
            .iter()
            .flat_map(|d| d.sections.iter())
            .map(|s| s.text.len() + s.heading_path.iter().map(String::len).sum::<usize>())
            .sum();
        self.check_expanded(path, text)?;
        if documents.is_empty() {
            return Err(CollectionError::BadPath(format!(
                "{path} holds no documents (an empty JSONL file?); add a file with text in it"
            )));
        }
        // The configuration against the model, and the ids within the file.
        validate(&documents, &self.config, tokenizer)?;
        let splits = documents
            .iter()
            .map(|d| split(d, &self.config, tokenizer))
            .collect::<Result<Vec<_>, _>>()?;
        self.insert(path, key, documents, splits)
    }

    /// What a file expands to (a DOCX's HTML, a PDF's text) is held to `input.max_file_bytes`,
    /// as the file itself is.
    fn check_expanded(&self, path: &str, bytes: usize) -> Result<(), CollectionError> {
        let limit = self.config.input.max_file_bytes;
        if bytes as u64 > limit {
            return Err(LoadError::ExpandsTooLarge {
                path: path.to_string(),
                bytes: bytes as u64,
                limit,
            }
            .into());
        }
        Ok(())
    }

    /// Keeps a file's documents and chunk texts once their ids are checked against every other
    /// file's: they are unique collection-wide.
    fn insert(
        &mut self,
        path: &str,
        key: Vec<String>,
        documents: Vec<Document>,
        splits: Vec<Vec<Vec<String>>>,
    ) -> Result<FileSummary, CollectionError> {
        for (k, f) in self.files.iter().filter(|(k, _)| **k != key) {
            if let Some(d) = f.documents.iter().find(|d| documents.iter().any(|n| n.id == d.id)) {
                let second = documents
                    .iter()
                    .find(|n| n.id == d.id)
                    .map_or("", |n| n.source.as_str());
                return Err(BuildError::DuplicateId {
                    id: d.id.clone(),
                    first: format!("{} ({})", d.source, k.join("/")),
                    second: second.to_string(),
                }
                .into());
            }
        }
        // A chunk repeating an earlier one of its document is dropped within the document, so
        // the file's chunks are the ones the whole collection keeps of it.
        let chunked = Chunked::new(
            &documents,
            collect_chunks(&documents, splits.clone()),
            self.config.fields,
            &self.prefix,
        );
        let entry = FileEntry {
            documents,
            splits,
            inputs: chunked.inputs,
            keys: chunked.keys,
        };
        self.files.insert(key, entry);
        Ok(self.summary(path).expect("just added"))
    }

    /// Imports a complete format-2 index (a `.sxt` that `sextant build` wrote, unpacked with
    /// [`crate::index::packed::unpack`]) as the file `path`: its documents with their titles,
    /// URLs and metadata, and its chunks as they are (not cut again, so their ids and what they
    /// say stay the index's). When the index was built with this collection's model, its vectors
    /// come too (the int8 vectors, scaled back: searching needs no embedding); otherwise its
    /// chunks are pending. A document none of whose chunks the index kept (every one a duplicate
    /// of another document's, as older indexes dropped them) has nothing to search and is
    /// not imported. Replaces the file at
    /// `path`; nothing changes when it fails.
    pub fn import_index(
        &mut self,
        path: &str,
        store: &IndexStore,
        tokenizer: &ModelTokenizer,
    ) -> Result<ImportSummary, CollectionError> {
        let key = components(path)?;
        let bad = |reason: String| CollectionError::BadIndex(reason);
        if !store.is_complete() {
            return Err(bad("some of its files are missing".into()));
        }
        let manifest = store.manifest();
        // Its vectors are of what this collection's model would read: the same model, and the
        // title and headings embedded (or not) alike.
        let same_model =
            manifest.model == self.spec && manifest.fields.embed_context == self.config.fields.embed_context;
        let mut numbers: Vec<u32> = Vec::new(); // the index's document number of each document
        let mut seen = HashSet::new();
        let mut documents: Vec<Document> = Vec::new();
        let mut splits: Vec<Vec<Vec<String>>> = Vec::new();
        let mut vectors = Vec::new();
        for number in 0..manifest.counts.chunks as u32 {
            let fragment = store
                .fragment(number)
                .ok_or_else(|| bad(format!("chunk {number} has no fragment")))?;
            let chunk = fragment
                .chunk(number)
                .ok_or_else(|| bad(format!("chunk {number} is missing")))?;
            if numbers.last() != Some(&chunk.doc) {
                if !seen.insert(chunk.doc) {
                    return Err(bad(format!("document {}'s chunks are not together", chunk.doc)));
                }
                let info = fragment
                    .document(chunk.doc)
                    .ok_or_else(|| bad(format!("chunk {number} names a document it does not hold")))?;
                numbers.push(chunk.doc);
                documents.push(Document {
                    id: info.id.clone(),
                    source: info.source.clone(),
                    url: info.url.clone(),
                    title: info.title.clone(),
                    metadata: info.metadata.clone(),
                    filters: info.filters.clone(),
                    sort: info.sort.clone(),
                    language: None,
                    sections: Vec::new(),
                });
                splits.push(Vec::new());
            }
            let document = documents.last_mut().expect("pushed above");
            let texts = splits.last_mut().expect("pushed above");
            // A chunk the index dropped as a duplicate left a gap in its document's numbering:
            // it is held as an empty text, which numbers a chunk and keeps none
            // ([`collect_chunks`]), so every later chunk keeps its number and id.
            let next = texts.len() as u32;
            if chunk.index < next {
                return Err(bad(format!("chunk {} is numbered out of order", chunk.id)));
            }
            for _ in next..chunk.index {
                document.sections.push(Section::default());
                texts.push(vec![String::new()]);
            }
            let base = document.url.as_deref().unwrap_or(&document.source);
            let anchor = chunk
                .url
                .strip_prefix(base)
                .and_then(|rest| rest.strip_prefix('#'))
                .map(str::to_string);
            document.sections.push(Section {
                heading_path: chunk.heading_path.clone(),
                anchor,
                text: chunk.text.clone(),
                code: Vec::new(),
                weighted: Vec::new(),
            });
            texts.push(vec![chunk.text.clone()]);
            if same_model {
                let vector = store
                    .vector(number)
                    .ok_or_else(|| bad(format!("chunk {number} has no vector")))?;
                let input = self
                    .config
                    .fields
                    .embed_input(&document.title, &chunk.heading_path, &chunk.text);
                vectors.push((input, vector));
            }
        }
        validate(&documents, &self.config, tokenizer)?;
        let summary = self.insert(path, key, documents, splits)?;
        let vectors_taken = vectors.len();
        for (text, vector) in vectors {
            self.vectors.insert(self.key(&text), vector);
        }
        Ok(ImportSummary {
            file: self.summary(path).unwrap_or(summary),
            vectors: vectors_taken,
        })
    }

    /// Removes a file and its documents; false if there was none at `path`. Its vectors stay
    /// (another file may share a chunk's text) until [`Collection::prune_vectors`].
    pub fn remove_file(&mut self, path: &str) -> bool {
        components(path).is_ok_and(|key| self.files.remove(&key).is_some())
    }

    /// Every file, in build order.
    pub fn files(&self) -> Vec<FileSummary> {
        let pending = self.pending_by_file();
        self.files
            .iter()
            .map(|(key, entry)| Self::summarise(key, entry, pending.get(key.as_slice()).copied().unwrap_or(0)))
            .collect()
    }

    fn summary(&self, path: &str) -> Option<FileSummary> {
        let (key, entry) = self.files.get_key_value(&components(path).ok()?)?;
        Some(Self::summarise(
            key,
            entry,
            self.pending_by_file().get(key.as_slice()).copied().unwrap_or(0),
        ))
    }

    fn summarise(key: &[String], entry: &FileEntry, pending: usize) -> FileSummary {
        FileSummary {
            path: key.join("/"),
            documents: entry.documents.len(),
            chunks: entry.splits.iter().flatten().flatten().count(),
            pending,
        }
    }

    /// Each file's kept chunks without a vector yet (one pass over the collection).
    fn pending_by_file(&self) -> HashMap<&[String], usize> {
        let mut pending = HashMap::new();
        for (file, _, key) in self.kept_inputs() {
            if !self.vectors.contains_key(key) {
                *pending.entry(file).or_default() += 1;
            }
        }
        pending
    }

    /// What the model reads for each chunk the collection keeps, with its key and file, in build
    /// order; each input once (chunks of several documents that the model reads alike share one
    /// vector).
    fn kept_inputs(&self) -> Vec<(&[String], &str, &[u8; 32])> {
        let mut listed: HashSet<&[u8; 32]> = HashSet::new();
        let mut out = Vec::new();
        for (file, entry) in &self.files {
            for (input, key) in entry.inputs.iter().zip(&entry.keys) {
                if listed.insert(key) {
                    out.push((file.as_slice(), input.as_str(), key));
                }
            }
        }
        out
    }

    fn key(&self, text: &str) -> [u8; 32] {
        text_key(&format!("{}{text}", self.prefix))
    }

    /// What the model is to read for each chunk without a vector yet (its text, after its title
    /// and headings when `fields.embed_context`), each once, in build order: embed them as
    /// passages.
    pub fn pending(&self) -> Vec<String> {
        self.kept_inputs()
            .into_iter()
            .filter(|(_, _, key)| !self.vectors.contains_key(*key))
            .map(|(_, input, _)| input.to_string())
            .collect()
    }

    /// Keeps the vector of a pending text (as [`crate::embed::Embedder::embed`] gave it for a
    /// passage).
    pub fn set_vector(&mut self, text: &str, vector: Vec<f32>) -> Result<(), CollectionError> {
        if vector.len() != self.dims || vector.iter().any(|x| !x.is_finite()) {
            return Err(CollectionError::BadVectors(format!(
                "a vector of {} values (or one not finite) for a model of {}",
                vector.len(),
                self.dims
            )));
        }
        self.vectors.insert(self.key(text), vector);
        Ok(())
    }

    /// Embeds at most `max` pending texts (in build order) with `embedder`, as passages, and keeps
    /// their vectors; returns how many. Call it in a loop, reporting progress and checking for a
    /// pause or a cancel between calls: each call is short.
    pub fn embed_pending(&mut self, embedder: &dyn Embedder, max: usize) -> Result<usize, CollectionError> {
        let texts: Vec<String> = self.pending().into_iter().take(max).collect();
        for text in &texts {
            let vector = embedder.embed(text, TextKind::Passage)?;
            self.set_vector(text, vector)?;
        }
        Ok(texts.len())
    }

    /// Forgets vectors no file's chunk needs any more.
    pub fn prune_vectors(&mut self) {
        let needed: HashSet<[u8; 32]> = self.kept_inputs().into_iter().map(|(_, _, key)| *key).collect();
        self.vectors.retain(|k, _| needed.contains(k));
    }

    fn corpus(&self) -> (Vec<Document>, ChunkedCorpus) {
        let documents: Vec<Document> = self.files.values().flat_map(|f| f.documents.iter().cloned()).collect();
        let splits: Vec<Vec<Vec<String>>> = self.files.values().flat_map(|f| f.splits.iter().cloned()).collect();
        (documents.clone(), collect_chunks(&documents, splits))
    }

    /// The format-2 index of the collection, as `sextant build` writes it for the same files.
    /// With chunks still pending, `partial` decides: an error, or an index whose pending chunks
    /// have zero vectors — search it by keyword only until [`Collection::pending`] is empty.
    pub fn build(&self, spec: &ModelSpec, partial: bool) -> Result<BuiltIndex, CollectionError> {
        let (documents, corpus) = self.corpus();
        if corpus.chunks.is_empty() {
            return Err(CollectionError::Empty);
        }
        let chunked = Chunked::new(&documents, corpus, self.config.fields, &self.prefix);
        Ok(assemble_chunked(
            &documents,
            &chunked,
            &self.vectors,
            spec,
            &self.config,
            partial,
        )?)
    }

    /// The magic of saved vectors made with this collection's weights.
    fn vectors_magic(&self) -> &'static [u8; 8] {
        match self.spec.weights {
            Weights::F32 => VECTORS_MAGIC_F32,
            Weights::Int8 => VECTORS_MAGIC_INT8,
            Weights::Int5 => VECTORS_MAGIC_INT5,
            Weights::Int8A8 => VECTORS_MAGIC_INT8A8,
        }
    }

    /// The vectors, to save: sorted by key, so the same vectors give the same bytes.
    pub fn vectors_to_bytes(&self) -> Vec<u8> {
        let mut keys: Vec<&[u8; 32]> = self.vectors.keys().collect();
        keys.sort_unstable();
        let mut out = Vec::with_capacity(16 + keys.len() * (32 + 4 * self.dims));
        out.extend_from_slice(self.vectors_magic());
        out.extend_from_slice(&(self.dims as u32).to_le_bytes());
        out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
        for k in keys {
            out.extend_from_slice(k);
            for x in &self.vectors[k] {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out
    }

    /// Restores saved vectors (added to those held). Damaged bytes change nothing.
    pub fn load_vectors(&mut self, bytes: &[u8]) -> Result<usize, CollectionError> {
        let bad = |e: String| CollectionError::BadVectors(e);
        let mut r = ByteReader::new(bytes);
        let magic = r.take(8).map_err(|e| bad(e.to_string()))?;
        if magic != self.vectors_magic() {
            return Err(bad(
                if [
                    VECTORS_MAGIC_F32,
                    VECTORS_MAGIC_INT8,
                    VECTORS_MAGIC_INT5,
                    VECTORS_MAGIC_INT8A8,
                ]
                .iter()
                .any(|m| magic == *m)
                {
                    "vectors saved with other weights (f32, int8, int5 and int8a8 passages differ); they are embedded again"
                        .into()
                } else {
                    "not a sextant vectors file".into()
                },
            ));
        }
        let dims = r.u32().map_err(|e| bad(e.to_string()))? as usize;
        if dims != self.dims {
            return Err(bad(format!("{dims} dimensions where the model has {}", self.dims)));
        }
        let count = r.u32().map_err(|e| bad(e.to_string()))? as usize;
        let record = 32 + 4 * dims;
        if r.remaining() != count.saturating_mul(record) {
            return Err(bad(format!("{} bytes for {count} vectors of {dims}", r.remaining())));
        }
        let mut loaded = Vec::with_capacity(count);
        for _ in 0..count {
            let mut key = [0u8; 32];
            key.copy_from_slice(r.take(32).map_err(|e| bad(e.to_string()))?);
            let raw = r.take(4 * dims).map_err(|e| bad(e.to_string()))?;
            let v: Vec<f32> = raw
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            if v.iter().any(|x| !x.is_finite()) {
                return Err(bad("a value is not finite".into()));
            }
            loaded.push((key, v));
        }
        self.vectors.extend(loaded);
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::Embedder;
    use crate::options::{Mode, SearchOptions};
    use crate::search::{Engine, NoClock};

    const GUIDE: &str = "# Lamps\n\nThe lamp burns oil and must be trimmed each evening.\n\n## Lenses\n\nClean the lens with a soft cloth before the light is lit.\n";
    const NOTES: &str = "The fog horn sounds every thirty seconds in bad weather.";

    fn collection() -> (Collection, std::sync::Arc<crate::embed::TractEmbedder>) {
        let model = crate::test_model();
        (Collection::new(BuildConfig::default(), model.spec()), model)
    }

    #[test]
    fn files_are_chunked_at_once_and_embedded_in_steps() {
        let (mut c, model) = collection();
        let guide = c
            .add_file("guide/lamps.md", GUIDE.as_bytes(), model.tokenizer())
            .unwrap();
        assert_eq!((guide.path.as_str(), guide.documents), ("guide/lamps.md", 1));
        assert!(guide.chunks >= 1 && guide.pending == guide.chunks, "{guide:?}");
        c.add_file("notes.txt", NOTES.as_bytes(), model.tokenizer()).unwrap();
        let pending = c.pending().len();
        assert!(pending >= 2);
        // Not embedded yet: a full index is refused, a partial one is keyword-only.
        assert!(matches!(c.build(model.spec(), false), Err(CollectionError::Build(_))));
        assert!(c.build(model.spec(), true).is_ok());
        assert_eq!(c.embed_pending(model.as_ref(), 1).unwrap(), 1);
        assert_eq!(c.pending().len(), pending - 1);
        assert_eq!(c.embed_pending(model.as_ref(), 100).unwrap(), pending - 1);
        assert_eq!(c.embed_pending(model.as_ref(), 100).unwrap(), 0, "nothing left");
        let built = c.build(model.spec(), false).unwrap();
        let mut engine = Engine::from_files(built.manifest, &built.files).unwrap();
        engine.attach_model(model.clone()).unwrap();
        let options = SearchOptions {
            mode: Mode::Hybrid,
            k: 3,
            ..Default::default()
        };
        let found = engine
            .search("when does the horn sound", &options, &NoClock)
            .unwrap()
            .done()
            .unwrap();
        assert_eq!(found.results[0].doc_id, "notes.txt");
    }

    #[test]
    fn the_same_files_give_sextant_builds_index() {
        let (mut c, model) = collection();
        // Added out of order: the index follows the order `sextant build` walks a folder.
        c.add_file("notes.txt", NOTES.as_bytes(), model.tokenizer()).unwrap();
        c.add_file("guide/lamps.md", GUIDE.as_bytes(), model.tokenizer())
            .unwrap();
        c.embed_pending(model.as_ref(), usize::MAX).unwrap();
        let built = c.build(model.spec(), false).unwrap();
        let config = BuildConfig::default();
        let documents: Vec<Document> = [("guide/lamps.md", GUIDE), ("notes.txt", NOTES)]
            .into_iter()
            .flat_map(|(path, text)| load_file(path, text.as_bytes(), &config.input).unwrap())
            .collect();
        let corpus = crate::indexer::chunk_corpus(&documents, &config, model.tokenizer()).unwrap();
        let vectors: Vec<Vec<f32>> = corpus
            .chunks
            .iter()
            .map(|ch| {
                let title = documents[ch.doc as usize].title.as_str();
                let input = config.fields.embed_input(title, &ch.heading_path, &ch.text);
                model.embed(&input, TextKind::Passage).unwrap()
            })
            .collect();
        let direct = crate::indexer::assemble(&documents, &corpus, &vectors, model.spec(), &config).unwrap();
        assert_eq!(built.manifest, direct.manifest);
        assert_eq!(built.files, direct.files, "byte for byte");
    }

    #[test]
    fn removing_saving_and_restoring_keep_what_is_embedded() {
        let (mut c, model) = collection();
        c.add_file("notes.txt", NOTES.as_bytes(), model.tokenizer()).unwrap();
        c.add_file("guide/lamps.md", GUIDE.as_bytes(), model.tokenizer())
            .unwrap();
        c.embed_pending(model.as_ref(), usize::MAX).unwrap();
        let saved = c.vectors_to_bytes();
        assert!(c.remove_file("notes.txt"));
        assert!(!c.remove_file("notes.txt"));
        assert_eq!(c.files().len(), 1);
        c.prune_vectors();
        // Added again: its vector was pruned, so it is pending until restored.
        c.add_file("notes.txt", NOTES.as_bytes(), model.tokenizer()).unwrap();
        assert_eq!(c.pending().len(), 1);
        assert_eq!(
            c.load_vectors(&saved).unwrap(),
            c.files().iter().map(|f| f.chunks).sum::<usize>()
        );
        assert!(c.pending().is_empty());
        // Damaged bytes: an error and nothing changed.
        let mut fresh = collection().0;
        for bad in [&saved[..saved.len() - 1], b"SXTVECS\x02", b"not vectors at all"] {
            let e = fresh.load_vectors(bad).unwrap_err();
            assert_eq!(e.code().as_str(), "CORRUPT_BUNDLE", "{e}");
        }
        // Vectors saved with f32 passages (before int8 passages) are embedded again, not mixed in.
        let mut old = saved.clone();
        old[..8].copy_from_slice(b"SXTVECS\x01");
        let e = fresh.load_vectors(&old).unwrap_err();
        assert!(e.to_string().contains("embedded again"), "{e}");
        assert_eq!(fresh.vectors_to_bytes().len(), 16, "still empty");
    }

    #[test]
    fn mistakes_are_typed_errors_in_the_collections_words() {
        let (mut c, model) = collection();
        let e = c.build(model.spec(), true).unwrap_err();
        assert_eq!(e.code().as_str(), "BAD_ARGUMENT");
        assert!(!e.to_string().contains("--"), "no CLI flag in a page: {e}");
        assert!(e.to_string().contains("add files"), "{e}");
        for path in ["", "../x.md", "a//b.md", "./a.md"] {
            let e = c.add_file(path, b"text", model.tokenizer()).unwrap_err();
            assert_eq!(e.code().as_str(), "BAD_ARGUMENT", "{path}");
        }
        let e = c.add_file("x.bin", b"\x00\x01", model.tokenizer()).unwrap_err();
        assert_eq!(e.code().as_str(), "BAD_ARGUMENT", "{e}");
        // A document id in two files.
        c.add_file(
            "a/x.jsonl",
            b"{\"_id\": \"same\", \"text\": \"one\"}\n",
            model.tokenizer(),
        )
        .unwrap();
        let e = c
            .add_file(
                "b/y.jsonl",
                b"{\"_id\": \"same\", \"text\": \"two\"}\n",
                model.tokenizer(),
            )
            .unwrap_err();
        assert!(e.to_string().contains("same"), "{e}");
        assert_eq!(c.files().len(), 1, "nothing changed");
        assert!(c.set_vector("text", vec![0.5; 3]).is_err());
    }

    #[test]
    fn what_a_document_expands_to_is_held_to_the_file_limit() {
        let model = crate::test_model();
        let config = BuildConfig {
            input: crate::config::InputConfig {
                max_file_bytes: 1000,
                ..Default::default()
            },
            ..BuildConfig::default()
        };
        let mut c = Collection::new(config, model.spec());
        let html = format!("<p>{}</p>", "lamp ".repeat(400));
        let e = c.add_html("big.docx", &html, model.tokenizer()).unwrap_err();
        assert!(e.to_string().contains("expands to"), "{e}");
        assert_eq!(e.code().as_str(), "BAD_ARGUMENT");
        let pages = vec![Document {
            id: "big.pdf".into(),
            source: "big.pdf".into(),
            url: None,
            title: "Big".into(),
            sections: vec![Section {
                heading_path: vec![],
                anchor: None,
                text: "fog ".repeat(400),
                code: Vec::new(),
                weighted: Vec::new(),
            }],
            ..Default::default()
        }];
        assert!(c.add_documents("big.pdf", pages, model.tokenizer()).is_err());
        assert!(c.files().is_empty(), "nothing added");
        c.add_html("small.docx", "<p>lamp</p>", model.tokenizer()).unwrap();
    }

    #[test]
    fn an_index_sextant_built_imports_with_its_vectors() {
        let (mut source, model) = collection();
        source
            .add_file("guide/lamps.md", GUIDE.as_bytes(), model.tokenizer())
            .unwrap();
        source.embed_pending(model.as_ref(), usize::MAX).unwrap();
        let built = source.build(model.spec(), false).unwrap();
        let packed = crate::index::packed::pack(&built.manifest, &built.files).unwrap();
        let store = crate::index::packed::unpack(&packed).unwrap();
        let (mut c, _) = collection();
        let summary = c.import_index("lamps.sxt", &store, model.tokenizer()).unwrap();
        assert_eq!(summary.vectors, built.manifest.counts.chunks);
        assert!(c.pending().is_empty(), "same model: nothing to embed");
    }
}
