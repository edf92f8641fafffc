//! [`Engine`]'s lifecycle: made over a packed index or a split index's manifest, files added as
//! queries ask for them and let go under a memory bound, a model and a reranker attached (digests
//! and options checked first), a model shared between knowledge bases, and the last query's
//! embedding remembered. Queries are in `super` (search) and `super::context` (framing).

use std::sync::Arc;

use crate::analyzer::Analyzer;
#[cfg(feature = "encoder")]
use crate::digest::sha256_hex;
#[cfg(feature = "model")]
use crate::embed::TractEmbedder;
#[cfg(feature = "encoder")]
use crate::embed::Weights;
use crate::embed::{EmbedError, Embedder, Reranker, TextKind};
use crate::index::{check_model, packed, IndexError, IndexManifest, IndexStore};
use crate::options::Mode;

use super::types::{needs_model_for, EngineError, SearchError, Step};

/// A query's text and its embedding.
type LastQuery = (String, Vec<f32>);

/// An index, ready to search; with a model attached it also does dense and hybrid search.
pub struct Engine {
    pub(crate) store: IndexStore,
    pub(crate) analyzer: Analyzer,
    embedder: Option<Arc<dyn Embedder>>,
    /// A cross-encoder that reranks the best results, if attached.
    pub(crate) reranker: Option<Arc<dyn Reranker>>,
    /// The last query embedded and its vector: a query over a split index is asked again after
    /// each batch of files arrives, and embedding is nearly all of its cost.
    /// Shared with the engines of other knowledge bases that share this model
    /// ([`Engine::share_model`]): a query searched over several bases is embedded once.
    last_query: Arc<std::sync::Mutex<Option<LastQuery>>>,
    /// The knowledge graph (`files.graph`), once added.
    pub(crate) graph: Option<Arc<crate::graph::Graph>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("chunks", &self.store.manifest().counts.chunks)
            .field("model", &self.embedder.is_some())
            .finish()
    }
}

impl Engine {
    /// An engine over a store (keyword search only until a model is attached).
    pub fn new(store: IndexStore) -> Self {
        // The manifest's analyzer is one this sextant has (checked when it was read).
        let analyzer = Analyzer::named(&store.manifest().analyzer).unwrap_or_default();
        Self {
            store,
            analyzer,
            embedder: None,
            reranker: None,
            last_query: Arc::new(std::sync::Mutex::new(None)),
            graph: None,
        }
    }

    /// Reads a packed index (`.sxt`, format 2). A format-1 bundle fails with a message naming
    /// `sextant upgrade`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, IndexError> {
        Ok(Self::new(packed::unpack(bytes)?))
    }

    /// An engine over an index held in memory (what a collection writes): its manifest and every
    /// file, each checked as [`Engine::add_file`] checks it, with nothing packed and read again.
    pub fn from_files(manifest: IndexManifest, files: &[(String, Vec<u8>)]) -> Result<Self, IndexError> {
        let mut store = IndexStore::new(manifest);
        store.load_files(files.iter().map(|(n, b)| (n.as_str(), b.as_slice())))?;
        Ok(Self::new(store))
    }

    /// An engine over a split index from its manifest (JSON); files come with [`Engine::add_file`].
    pub fn from_manifest(json: &[u8]) -> Result<Self, IndexError> {
        Ok(Self::new(IndexStore::new(IndexManifest::from_json(json)?)))
    }

    /// Adds a file of a split index (checked against its name's hash and the manifest), or a row
    /// file the model asked for (a model body's, `crate::embed::rows`, checked the same way).
    /// The knowledge graph's file (`files.graph`) is read whole and checked against the index.
    pub fn add_file(&mut self, name: &str, bytes: &[u8]) -> Result<(), EngineError> {
        let manifest = self.store.manifest();
        if manifest.files.graph.as_deref() == Some(name) {
            let bad = |reason: String| IndexError::BadFile {
                file: name.to_string(),
                reason,
            };
            if !crate::index::files::content_matches(name, bytes) {
                return Err(
                    bad("its bytes are not the ones its name promises; deploy the index folder again".into()).into(),
                );
            }
            let graph = self.read_graph(bytes).map_err(|e| bad(e.to_string()))?;
            self.graph = Some(Arc::new(graph));
            return Ok(());
        }
        if let Some(embedder) = &self.embedder {
            if embedder.add_file(name, bytes)? {
                return Ok(());
            }
        }
        Ok(self.store.add(name, bytes)?)
    }

    /// A graph file read and checked against this index's model and chunk count.
    fn read_graph(&self, bytes: &[u8]) -> Result<crate::graph::Graph, crate::graph::GraphError> {
        let manifest = self.store.manifest();
        crate::graph::Graph::from_json(
            bytes,
            &manifest.model.sha256,
            manifest.model.dims,
            manifest.counts.chunks,
        )
    }

    /// Attaches a knowledge graph built for this index outside its manifest (a collection's,
    /// which the research workspace keeps beside it), checked like a graph file and against the
    /// index's chunks (a graph of the collection as it was before a change is refused).
    pub fn attach_graph(&mut self, bytes: &[u8]) -> Result<(), IndexError> {
        let bad = |reason: String| IndexError::BadFile {
            file: "graph".into(),
            reason,
        };
        let graph = self.read_graph(bytes).map_err(|e| bad(e.to_string()))?;
        if self.chunks_digest().as_deref() != Some(graph.chunks_sha256.as_str()) {
            return Err(bad(
                "it was built for other chunks than this index's (the collection changed since): build the graph again"
                    .into(),
            ));
        }
        self.graph = Some(Arc::new(graph));
        Ok(())
    }

    /// The graph of `draft` for this index: its entities and relations embedded with the
    /// attached model (as passages), checked and recorded against the index's chunks (every
    /// fragment must be held: a collection's index).
    pub fn graph_of(&self, draft: crate::graph::build::Draft) -> Result<crate::graph::Graph, SearchError> {
        let embedder = self.embedder_for("graph")?;
        let digest = self.chunks_digest().ok_or_else(|| SearchError::BadArgument {
            name: "graph",
            reason: "a graph is built over an index whose every chunk is held (a collection's, or the CLI's `sextant graph build`)".into(),
        })?;
        let embed = |texts: Vec<String>| -> Result<Vec<Vec<f32>>, SearchError> {
            texts
                .iter()
                .map(|t| embedder.embed(t, TextKind::Passage).map_err(SearchError::from))
                .collect()
        };
        let entities = embed(draft.entity_texts())?;
        let relations = embed(draft.relation_texts())?;
        let manifest = self.store.manifest();
        draft
            .finish(
                &entities,
                &relations,
                manifest.model.dims,
                &manifest.model.sha256,
                manifest.counts.chunks,
                &digest,
            )
            .map_err(|reason| SearchError::BadArgument { name: "graph", reason })
    }

    /// Every file the model may ask for (a model body's row files): what answering offline
    /// needs beside the index's files.
    pub fn model_file_names(&self) -> Vec<String> {
        self.embedder.as_ref().map(|e| e.file_names()).unwrap_or_default()
    }

    /// Where an object or page of a split index is stored: its pack and byte range (`None`: a
    /// file of its own name).
    pub fn locate(&self, name: &str) -> Option<(&str, crate::index::directory::Location)> {
        self.store.location(name)
    }

    /// Every object and page of the index whose name is known ([`IndexStore::object_names`]).
    pub fn object_names(&self) -> Vec<String> {
        self.store.object_names()
    }

    /// Every object and page of a split index not added yet whose name is known
    /// ([`IndexStore::missing`]).
    pub fn missing(&self) -> Vec<String> {
        self.store.missing()
    }

    /// Adds every file of a split index, reading each by name with `read`
    /// ([`IndexStore::load_all`]).
    pub fn load_all<E>(
        &mut self,
        read: impl FnMut(&str) -> Result<Vec<u8>, E>,
        failed: impl FnMut(&str, E) -> IndexError,
    ) -> Result<(), IndexError> {
        self.store.load_all(read, failed)
    }

    /// Bounds the memory of a split index: lets go of the least recently used keyword shards,
    /// fragments, code files and vector blocks until those held take at most `max_bytes`, keeping what the
    /// last query used and, with `since` (an [`Engine::clock`] reading), what every query begun
    /// after it used: a host with queries in flight side by side passes the oldest one's (see
    /// [`IndexStore::trim_keeping`]). Returns how many files were dropped; a later query that
    /// needs one answers `Need` for it again.
    pub fn trim(&mut self, max_bytes: usize, since: Option<u64>) -> usize {
        self.store.trim_keeping(max_bytes, since)
    }

    /// The split index's clock ([`IndexStore::clock`]): read as a query begins, it is what
    /// [`Engine::trim`] keeps from.
    pub fn clock(&self) -> u64 {
        self.store.clock()
    }

    /// Bytes of the files [`Engine::trim`] may let go that are held now.
    pub fn held_bytes(&self) -> usize {
        self.store.held_bytes()
    }

    /// Loads the index's model from the bytes of `model.onnx` and `tokenizer.json` and attaches
    /// it: the digests are checked first (a wrong model fails fast, before the slow load), then
    /// the model is run the way the index says (pooling, window, prefixes), its weights held as
    /// `weights` says. The model bytes are freed as soon as they are parsed.
    ///
    /// `model` may also be an encoder file (`crate::embed::bert`, what `sextant build --site`
    /// writes for the search box): the engine built without tract (`--features encoder`) reads
    /// only those.
    #[cfg(feature = "encoder")]
    pub fn load_model(&mut self, model: Vec<u8>, tokenizer: &[u8], weights: Weights) -> Result<(), EngineError> {
        let manifest = self.store.manifest();
        let options = crate::embed::ModelOptions {
            weights,
            ..manifest.model.options()
        };
        // An encoder file or a model body (`crate::embed::rows`) is cut from the index's model:
        // its digest is not the model's, and the one it names is checked by `attach_model`.
        if crate::embed::bert::is_encoder(&model) {
            check_model(&manifest.model, &manifest.model.sha256, &sha256_hex(tokenizer))?;
            let encoder = crate::embed::BertEncoder::from_bytes(&model, tokenizer, &options)?;
            drop(model);
            self.attach_model(Arc::new(encoder))?;
            return Ok(());
        }
        #[cfg(feature = "model")]
        {
            let model_sha256 = if crate::embed::rows::may_be_body(&model) {
                manifest.model.sha256.clone()
            } else {
                sha256_hex(&model)
            };
            check_model(&manifest.model, &model_sha256, &sha256_hex(tokenizer))?;
            let embedder = TractEmbedder::from_vec_with(model, tokenizer, &options, weights)?;
            self.attach_model(Arc::new(embedder))?;
            Ok(())
        }
        #[cfg(not(feature = "model"))]
        Err(crate::embed::EmbedError::BadModel {
            reason: "this engine (sextant's own encoder, without tract) reads the encoder file sextant build --site writes, not model.onnx; load model.onnx with the full engine".into(),
        }
        .into())
    }

    /// Attaches an embedding model after checking it is the one the index was built with (file
    /// digests, and the same pooling, normalisation, window and prefixes).
    pub fn attach_model(&mut self, embedder: Arc<dyn Embedder>) -> Result<(), IndexError> {
        let spec = embedder.spec();
        let built = &self.store.manifest().model;
        check_model(built, &spec.sha256, &spec.tokenizer_sha256)?;
        let mut expected = built.clone();
        expected.sha256.clone_from(&spec.sha256);
        expected.tokenizer_sha256.clone_from(&spec.tokenizer_sha256);
        // Queries may be embedded with other weights than the passages were.
        expected.weights = spec.weights;
        if &expected != spec {
            return Err(IndexError::ModelMismatch {
                what: "model options",
                expected: format!("{built:?}"),
                actual: format!("{spec:?}"),
            });
        }
        self.embedder = Some(embedder);
        Ok(())
    }

    /// Attaches `other`'s model to this engine (another knowledge base built with the same model,
    /// checked as [`Engine::attach_model`] checks): one copy of the weights in memory, and a query
    /// searched over both embedded once.
    /// Returns whether `other` had a model to share.
    pub fn share_model(&mut self, other: &Engine) -> Result<bool, IndexError> {
        let Some(embedder) = other.embedder.clone() else {
            return Ok(false);
        };
        self.attach_model(embedder)?;
        self.last_query = other.last_query.clone();
        Ok(true)
    }

    /// Loads a cross-encoder from the bytes of its ONNX model and `tokenizer.json` (a query and
    /// a passage cut to `max_tokens` together) and attaches it: searches then rerank their best
    /// `rerank_depth` results with it.
    #[cfg(feature = "model")]
    pub fn load_reranker(&mut self, model: Vec<u8>, tokenizer: &[u8], max_tokens: usize) -> Result<(), EngineError> {
        let encoder = crate::embed::rerank::CrossEncoder::from_vec(model, tokenizer, max_tokens)?;
        self.attach_reranker(Arc::new(encoder));
        Ok(())
    }

    /// Attaches a reranker (see [`Engine::load_reranker`]).
    pub fn attach_reranker(&mut self, reranker: Arc<dyn Reranker>) {
        self.reranker = Some(reranker);
    }

    /// Whether a reranker is attached.
    pub fn has_reranker(&self) -> bool {
        self.reranker.is_some()
    }

    /// The embedder, if attached.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The index's files, as added so far.
    pub fn store(&self) -> &IndexStore {
        &self.store
    }

    /// The manifest.
    pub fn manifest(&self) -> &IndexManifest {
        self.store.manifest()
    }

    pub(crate) fn embedder_for(&self, what: &'static str) -> Result<&Arc<dyn Embedder>, SearchError> {
        self.embedder.as_ref().ok_or(SearchError::NoModel { mode: what })
    }

    /// The query's embedding, reusing the last one for the same text; or the row files a model
    /// body needs first (`crate::embed::rows`).
    pub(crate) fn embed_query(&self, query: &str, mode: Mode) -> Result<Step<Vec<f32>>, SearchError> {
        if let Ok(last) = self.last_query.lock() {
            if let Some((text, vector)) = last.as_ref() {
                if text == query {
                    return Ok(Step::Done(vector.clone()));
                }
            }
        }
        let vector = match self.embedder_for(needs_model_for(mode))?.embed(query, TextKind::Query) {
            Ok(vector) => vector,
            Err(EmbedError::MissingRows { files }) => return Ok(Step::Need(files)),
            Err(e) => return Err(e.into()),
        };
        if let Ok(mut last) = self.last_query.lock() {
            *last = Some((query.to_string(), vector.clone()));
        }
        Ok(Step::Done(vector))
    }
}
