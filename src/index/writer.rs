//! Writing a format-2 index: the files and the manifest that lists them (the packed form is
//! `super::packed::pack` of the same). Pure: the CLI writes the files where it wants.

use crate::analyzer::Analyzer;
use crate::bm25::{Bm25Params, TermTable};
use crate::chunk::{Chunk, ChunkParams};
use crate::embed::ModelSpec;

use super::error::IndexError;
use super::files::DocumentInfo;
use super::files::{cluster_order, file_name, keyword_to_bytes, BlockFile, CodeFile, Fragment, Norms, VectorMeta};
use super::manifest::{
    crate_versions, Counts, Fields, FileRun, FormatVersion, IndexFiles, IndexManifest, Layout, ShardRef, VectorFiles,
    INDEX_MAJOR, INDEX_MINOR,
};

/// A written index: its manifest and its files (name, bytes), each once.
#[derive(Debug, Clone)]
pub struct BuiltIndex {
    /// The manifest.
    pub manifest: IndexManifest,
    /// The files, named by content.
    pub files: Vec<(String, Vec<u8>)>,
}

/// What a format-2 index is made from: the chunks as they will be shown, their documents, the
/// chunks' float vectors and how the index was built.
#[derive(Debug, Clone, Copy)]
pub struct IndexInput<'a> {
    /// The documents, numbered by position.
    pub documents: &'a [DocumentInfo],
    /// The chunks, numbered by position; `doc` indexes `documents`.
    pub chunks: &'a [Chunk],
    /// Chunks dropped as duplicates while chunking.
    pub duplicates_dropped: usize,
    /// Chunks kept whose text another document's chunk also has.
    pub shared_chunks: usize,
    /// One vector per chunk, `model.dims` long.
    pub vectors: &'a [Vec<f32>],
    /// The model.
    pub model: &'a ModelSpec,
    /// Chunking parameters, recorded.
    pub chunking: ChunkParams,
    /// BM25 defaults, recorded.
    pub bm25: Bm25Params,
    /// How the title and headings count in BM25 (the vectors were embedded as it says), recorded.
    pub fields: Fields,
    /// The keyword analyzer's name ([`Analyzer::NAME`] for a new index), recorded.
    pub analyzer: &'static str,
    /// How to cut the files.
    pub layout: Layout,
}

/// The documents that have chunks, numbered anew in their order, and the chunks pointing at the
/// new numbers: an index holds no document it cannot return (one whose every chunk repeated
/// another's, or one without text), so its documents are exactly those its chunks name.
fn documents_with_chunks(input: &IndexInput) -> Result<(Vec<DocumentInfo>, Vec<Chunk>), IndexError> {
    let mut number: Vec<Option<u32>> = vec![None; input.documents.len()];
    let mut documents = Vec::new();
    let mut chunks = Vec::with_capacity(input.chunks.len());
    for c in input.chunks {
        let slot = number.get_mut(c.doc as usize).ok_or_else(|| IndexError::BadSection {
            section: "chunks",
            reason: format!("chunk {} names document {}", c.id, c.doc),
        })?;
        let doc = match *slot {
            Some(n) => n,
            None => {
                let n = documents.len() as u32;
                documents.push(input.documents[c.doc as usize].clone());
                *slot = Some(n);
                n
            }
        };
        chunks.push(Chunk { doc, ..c.clone() });
    }
    Ok((documents, chunks))
}

/// Builds every file and the manifest.
pub fn write_index(input: IndexInput) -> Result<BuiltIndex, IndexError> {
    let (documents, chunks) = documents_with_chunks(&input)?;
    let input = IndexInput {
        documents: &documents,
        chunks: &chunks,
        ..input
    };
    let bad = |reason: String| IndexError::BadSection {
        section: "vectors",
        reason,
    };
    let dims = input.model.dims;
    if input.vectors.len() != input.chunks.len() {
        return Err(bad(format!(
            "{} vectors for {} chunks",
            input.vectors.len(),
            input.chunks.len()
        )));
    }
    if let Some(v) = input
        .vectors
        .iter()
        .find(|v| v.len() != dims || v.iter().any(|x| !x.is_finite()))
    {
        return Err(bad(format!(
            "a vector has {} values (or one not finite) where the model has {dims}",
            v.len()
        )));
    }
    input.layout.validate().map_err(|reason| IndexError::BadSection {
        section: "manifest",
        reason,
    })?;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut add = |kind: &str, extension: &str, bytes: Vec<u8>| -> String {
        let name = file_name(kind, extension, &bytes);
        if !files.iter().any(|(n, _)| *n == name) {
            files.push((name.clone(), bytes));
        }
        name
    };

    // Keyword: the title, heading path and text, each as many times as its weight.
    input.fields.validate().map_err(|reason| IndexError::BadSection {
        section: "manifest",
        reason,
    })?;
    let analyzer = Analyzer::named(input.analyzer).ok_or_else(|| IndexError::BadSection {
        section: "manifest",
        reason: format!("no keyword analyzer is named {:?}", input.analyzer),
    })?;
    let title_of = |c: &Chunk| input.documents.get(c.doc as usize).map_or("", |d| d.title.as_str());
    let terms: Vec<Vec<String>> = input
        .chunks
        .iter()
        .map(|c| {
            input
                .fields
                .terms(&analyzer, title_of(c), &c.heading_path, &c.text, &c.code)
        })
        .collect();
    let (table, lengths) = TermTable::build(&terms);
    let norms = Norms::new(lengths, input.chunks.iter().map(|c| c.doc).collect());
    let norms_name = add("norms", "bin", norms.to_bytes());
    let keyword: Vec<ShardRef> = table
        .split(input.layout.keyword_shard_bytes)
        .into_iter()
        .map(|shard| ShardRef {
            first: shard.first_term().unwrap_or_default().to_string(),
            file: add("kw", "bin", keyword_to_bytes(&shard)),
        })
        .collect();

    // Fragments: chunk text with its documents' records.
    let per = input.layout.fragment_chunks;
    let mut fragments = Vec::new();
    for (i, run) in input.chunks.chunks(per).enumerate() {
        let mut documents: Vec<(u32, DocumentInfo)> = Vec::new();
        for c in run {
            if !documents.iter().any(|(n, _)| *n == c.doc) {
                let doc = input
                    .documents
                    .get(c.doc as usize)
                    .ok_or_else(|| IndexError::BadSection {
                        section: "chunks",
                        reason: format!("chunk {} names document {}", c.id, c.doc),
                    })?;
                documents.push((c.doc, doc.clone()));
            }
        }
        let fragment = Fragment {
            first: (i * per) as u32,
            documents,
            chunks: run.to_vec(),
        };
        fragments.push(add("frag", "json", fragment.to_bytes()));
    }

    // Vectors: calibration, binary codes, int8 blocks.
    let meta = VectorMeta::calibrate(input.vectors, dims);
    let meta_name = add("vmeta", "bin", meta.to_bytes());
    // Both in cluster order, so a query's best candidates share few blocks.
    let order = cluster_order(input.vectors, dims, input.layout.block_chunks);
    let code_len = dims.div_ceil(8);
    let mut codes = Vec::new();
    for run in order.chunks(input.layout.code_file_chunks) {
        let file = CodeFile {
            code_len,
            chunks: run.to_vec(),
            codes: run
                .iter()
                .flat_map(|&c| meta.code(&input.vectors[c as usize]))
                .collect(),
        };
        codes.push(add("codes", "bin", file.to_bytes()));
    }
    let mut blocks = Vec::new();
    for run in order.chunks(input.layout.block_chunks) {
        let vectors: Vec<&[f32]> = run.iter().map(|&c| input.vectors[c as usize].as_slice()).collect();
        let block = BlockFile::quantize(run, &vectors, dims);
        blocks.push(add("vec", "bin", block.to_bytes()));
    }

    let manifest = IndexManifest {
        format: FormatVersion {
            major: INDEX_MAJOR,
            minor: INDEX_MINOR,
        },
        generator: format!("sextant {}", env!("CARGO_PKG_VERSION")),
        crates: crate_versions(),
        model: input.model.clone(),
        analyzer: analyzer.name().to_string(),
        chunking: input.chunking,
        bm25: input.bm25,
        fields: input.fields,
        layout: input.layout,
        counts: Counts {
            documents: input.documents.len(),
            chunks: input.chunks.len(),
            duplicates_dropped: input.duplicates_dropped,
            shared_chunks: input.shared_chunks,
        },
        files: IndexFiles {
            norms: norms_name,
            keyword,
            fragments: FileRun {
                chunks_per_file: per,
                files: fragments,
            },
            vectors: VectorFiles {
                meta: meta_name,
                codes: FileRun {
                    chunks_per_file: input.layout.code_file_chunks,
                    files: codes,
                },
                blocks: FileRun {
                    chunks_per_file: input.layout.block_chunks,
                    files: blocks,
                },
            },
        },
    };
    Ok(BuiltIndex { manifest, files })
}
