//! Writing a format-2 index: the files and the manifest that lists them (the packed form is
//! `super::packed::pack` of the same). Pure: the CLI writes the files where it wants.

use std::collections::HashMap;
use std::ops::Range;

use crate::analyzer::Analyzer;
use crate::bm25::{Bm25Params, TermTable};
use crate::chunk::{Chunk, ChunkParams};
use crate::embed::ModelSpec;

use super::directory::{page_to_bytes, Location, ObjectRef, PackWriter, PageEntry, Run};
use super::error::IndexError;
use super::facets::Facets;
use super::files::DocumentInfo;
use super::files::{
    file_name, keyword_to_bytes, partition_order_on, BlockFile, CodeFile, Fragment, Norms, VectorMeta,
    CLUSTER_LEAF_CHUNKS,
};
use super::manifest::{
    crate_versions, Counts, Fields, FileRun, FormatVersion, IndexFiles, IndexManifest, Layout, ShardRef, VectorFiles,
    BYTE_ROWS_MINOR, CODE_FACTORS_MINOR, FACET_PARTITIONS_MINOR, INDEX_MAJOR,
};
use crate::indexer::{Executor, OneThread};

/// A written index: its manifest and its files (name, bytes), each once: its packs, or (with
/// `layout.pack_bytes` 0) every object and page as a file of its own.
#[derive(Debug, Clone)]
pub struct BuiltIndex {
    /// The manifest.
    pub manifest: IndexManifest,
    /// The files, named by content.
    pub files: Vec<(String, Vec<u8>)>,
    /// Where each object and page is: its file and the byte range of it.
    places: Places,
}

/// Where each object and page of a built index is: its file's number and the byte range of it.
type Places = HashMap<String, (usize, Range<usize>)>;

impl BuiltIndex {
    /// The bytes of an object or page (or a whole file) by name, wherever it is stored.
    pub fn object(&self, name: &str) -> Option<&[u8]> {
        let (file, range) = self.places.get(name)?;
        self.files.get(*file)?.1.get(range.clone())
    }

    /// Every object and page with its bytes, each once, by name.
    pub fn objects(&self) -> impl Iterator<Item = (&str, &[u8])> {
        let mut names: Vec<&str> = self.places.keys().map(String::as_str).collect();
        names.sort_unstable();
        names.into_iter().filter_map(|n| Some((n, self.object(n)?)))
    }
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

/// Builds every file and the manifest, on one thread.
pub fn write_index(input: IndexInput) -> Result<BuiltIndex, IndexError> {
    write_index_on(input, &OneThread)
}

/// [`write_index`] with the vectors' partitioning (the most work after embedding) on `executor`:
/// the same bytes on any executor.
pub fn write_index_on(input: IndexInput, executor: &impl Executor) -> Result<BuiltIndex, IndexError> {
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
    let layout = input.layout.for_chunks(input.chunks.len());
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
                .terms(&analyzer, title_of(c), &c.heading_path, &c.text, &c.code, &c.weighted)
        })
        .collect();
    let (table, lengths) = TermTable::build(&terms);
    let norms = Norms::new(lengths, input.chunks.iter().map(|c| c.doc).collect());
    let norms_name = add("norms", "bin", norms.to_bytes());
    let keyword: Vec<ShardRef> = table
        .split(layout.keyword_shard_bytes)
        .into_iter()
        .map(|shard| ShardRef {
            first: shard.first_term().unwrap_or_default().to_string(),
            file: add("kw", "bin", keyword_to_bytes(&shard)),
        })
        .collect();

    // Fragments: chunk text with its documents' records.
    let per = layout.fragment_chunks;
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
    // Both in partition order (partitions clustered by k-means, each in cluster order), so a
    // query's best candidates fall in few partitions and share few blocks; blocks smaller than a
    // leaf are cut from leaves of CLUSTER_LEAF_CHUNKS.
    let order = partition_order_on(
        input.vectors,
        dims,
        layout.code_file_chunks,
        layout.block_chunks.max(CLUSTER_LEAF_CHUNKS),
        executor,
    );
    // The facets (2.8) list the partitions holding chunks of each filter value's pages, so a
    // filtered meaning search reads only partitions that may hold pages that pass.
    let facets_name = Facets::of_documents(input.documents).map(|mut f| {
        let document_of: Vec<u32> = input.chunks.iter().map(|c| c.doc).collect();
        f.list_partitions(&order, layout.code_file_chunks, &document_of);
        add("facets", "bin", f.to_bytes())
    });
    let code_len = dims.div_ceil(8);
    let mut codes = Vec::new();
    // Each code file is a partition: its centroid (the mean of its vectors) ranks it for a query.
    let partitions: Vec<u32> = (0..order.len().div_ceil(layout.code_file_chunks) as u32).collect();
    let means: Vec<Vec<f32>> = order
        .chunks(layout.code_file_chunks)
        .map(|run| mean_vector(run.iter().map(|&c| input.vectors[c as usize].as_slice()), dims))
        .collect();
    let centroids = BlockFile::quantize(&partitions, &means.iter().map(Vec::as_slice).collect::<Vec<_>>(), dims);
    let centroids_name = (!partitions.is_empty()).then(|| add("cent", "bin", centroids.to_bytes()));
    for run in order.chunks(layout.code_file_chunks) {
        let vectors = run.iter().map(|&c| input.vectors[c as usize].as_slice());
        let bits = vectors.clone().flat_map(|v| meta.code(v)).collect();
        let factors: Vec<f32> = vectors.map(|v| meta.factor(v)).collect();
        let file = CodeFile::new(code_len, run.to_vec(), bits, &factors);
        codes.push(add("codes", "bin", file.to_bytes()));
    }
    let mut blocks = Vec::new();
    for run in order.chunks(layout.block_chunks) {
        let vectors: Vec<&[f32]> = run.iter().map(|&c| input.vectors[c as usize].as_slice()).collect();
        let block = BlockFile::quantize(run, &vectors, dims);
        blocks.push(add("vec", "bin", block.to_bytes()));
    }

    let listed_facets = facets_name.is_some();
    let listed = Listed {
        norms: norms_name,
        facets: facets_name,
        meta: meta_name,
        centroids: centroids_name,
        keyword,
        fragments,
        codes,
        blocks,
    };
    let (files, places, index_files) = store_objects(files, listed, &layout);
    let manifest = IndexManifest {
        format: FormatVersion {
            major: INDEX_MAJOR,
            // 2.8 and 2.9 only where they add something (a facets file, passages on byte rows),
            // so an index without writes what a 2.7 reader reads.
            minor: if input.model.weights == crate::embed::Weights::Int8A8 {
                BYTE_ROWS_MINOR
            } else if listed_facets {
                FACET_PARTITIONS_MINOR
            } else {
                CODE_FACTORS_MINOR
            },
        },
        generator: format!("sextant {}", env!("CARGO_PKG_VERSION")),
        crates: crate_versions(),
        model: input.model.clone(),
        analyzer: analyzer.name().to_string(),
        chunking: input.chunking,
        bm25: input.bm25,
        fields: input.fields,
        layout,
        counts: Counts {
            documents: input.documents.len(),
            chunks: input.chunks.len(),
            duplicates_dropped: input.duplicates_dropped,
            shared_chunks: input.shared_chunks,
        },
        files: index_files,
    };
    Ok(BuiltIndex {
        manifest,
        files,
        places,
    })
}

/// The mean of `vectors` (f64 sums, in order: deterministic).
fn mean_vector<'a>(vectors: impl Iterator<Item = &'a [f32]>, dims: usize) -> Vec<f32> {
    let mut sum = vec![0f64; dims];
    let mut n = 0usize;
    for v in vectors {
        sum.iter_mut().zip(v).for_each(|(s, x)| *s += f64::from(*x));
        n += 1;
    }
    sum.into_iter().map(|s| (s / n.max(1) as f64) as f32).collect()
}

/// The objects of an index by role, each run in order (names may repeat: equal objects).
struct Listed {
    norms: String,
    facets: Option<String>,
    meta: String,
    centroids: Option<String>,
    keyword: Vec<ShardRef>,
    fragments: Vec<String>,
    codes: Vec<String>,
    blocks: Vec<String>,
}

/// Stores the objects (each once, in `objects`) in packs of `layout.pack_bytes` (or each a file
/// of its own when 0), then the pages listing each run, `layout.page_entries` objects a page;
/// returns the files, where each object and page is, and the manifest's files section.
fn store_objects(
    objects: Vec<(String, Vec<u8>)>,
    listed: Listed,
    layout: &Layout,
) -> (Vec<(String, Vec<u8>)>, Places, IndexFiles) {
    let mut order: Vec<&str> = vec![&listed.norms, &listed.meta];
    order.extend(listed.facets.as_deref());
    order.extend(listed.centroids.as_deref());
    order.extend(listed.codes.iter().map(String::as_str));
    order.extend(listed.keyword.iter().map(|s| s.file.as_str()));
    order.extend(listed.fragments.iter().map(String::as_str));
    order.extend(listed.blocks.iter().map(String::as_str));
    let bytes_of: HashMap<&str, &[u8]> = objects.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    let mut packer = (layout.pack_bytes > 0).then(|| PackWriter::new(layout.pack_bytes));
    let mut own_files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut placed: HashMap<String, Option<Location>> = HashMap::new();
    let mut store = |name: &str, bytes: &[u8], placed: &mut HashMap<String, Option<Location>>| {
        if placed.contains_key(name) {
            return;
        }
        let at = match &mut packer {
            Some(p) => Some(p.put(bytes)),
            None => {
                own_files.push((name.to_string(), bytes.to_vec()));
                None
            }
        };
        placed.insert(name.to_string(), at);
    };
    for name in order {
        store(name, bytes_of[name], &mut placed);
    }
    let reference = |name: &str, placed: &HashMap<String, Option<Location>>| ObjectRef {
        name: name.to_string(),
        at: placed.get(name).copied().flatten(),
    };
    // The pages, after every object they place.
    let per_page = layout.page_entries.max(1);
    let mut page_bytes: Vec<(String, Vec<u8>)> = Vec::new();
    let mut pages = |run: Run, entries: Vec<PageEntry>| -> Vec<(Option<String>, String)> {
        entries
            .chunks(per_page)
            .enumerate()
            .map(|(p, page)| {
                let bytes = page_to_bytes(run, p * per_page, page);
                let name = file_name("page", "bin", &bytes);
                page_bytes.push((name.clone(), bytes));
                (page[0].first.clone(), name)
            })
            .collect()
    };
    let entries = |names: &[String], placed: &HashMap<String, Option<Location>>| -> Vec<PageEntry> {
        names
            .iter()
            .map(|n| PageEntry {
                first: None,
                object: reference(n, placed),
            })
            .collect()
    };
    let keyword_pages = pages(
        Run::Keyword,
        listed
            .keyword
            .iter()
            .map(|s| PageEntry {
                first: Some(s.first.clone()),
                object: reference(&s.file, &placed),
            })
            .collect(),
    );
    let fragment_pages = pages(Run::Fragments, entries(&listed.fragments, &placed));
    let code_pages = pages(Run::Codes, entries(&listed.codes, &placed));
    let block_pages = pages(Run::Blocks, entries(&listed.blocks, &placed));
    for (name, bytes) in &page_bytes {
        store(name, bytes, &mut placed);
    }
    let encode = |name: &str| reference(name, &placed).encode();
    let run = |pages: &[(Option<String>, String)]| pages.iter().map(|(_, n)| encode(n)).collect::<Vec<_>>();
    let packs: Vec<(String, Vec<u8>)> = packer
        .map(|p| p.packs)
        .unwrap_or_default()
        .into_iter()
        .map(|bytes| (file_name("pack", "bin", &bytes), bytes))
        .collect();
    let index_files = IndexFiles {
        packs: packs.iter().map(|(n, _)| n.clone()).collect(),
        page_entries: per_page,
        keyword_shards: listed.keyword.len(),
        norms: encode(&listed.norms),
        facets: listed.facets.as_deref().map(encode),
        facet_partitions: listed.facets.is_some(),
        graph: None,
        keyword: keyword_pages
            .iter()
            .map(|(first, page)| ShardRef {
                first: first.clone().unwrap_or_default(),
                file: encode(page),
            })
            .collect(),
        fragments: FileRun {
            chunks_per_file: layout.fragment_chunks,
            files: run(&fragment_pages),
        },
        vectors: VectorFiles {
            meta: encode(&listed.meta),
            centroids: listed.centroids.as_deref().map(encode),
            codes: FileRun {
                chunks_per_file: layout.code_file_chunks,
                files: run(&code_pages),
            },
            code_factors: true,
            blocks: FileRun {
                chunks_per_file: layout.block_chunks,
                files: run(&block_pages),
            },
        },
    };
    let files = if packs.is_empty() { own_files } else { packs };
    let file_of: HashMap<&str, usize> = files.iter().enumerate().map(|(i, (n, _))| (n.as_str(), i)).collect();
    let mut places: Places = HashMap::new();
    for (name, at) in &placed {
        let place = match at {
            Some(at) => (at.pack as usize, at.offset as usize..(at.offset + at.len) as usize),
            None => (file_of[name.as_str()], 0..files[file_of[name.as_str()]].1.len()),
        };
        places.insert(name.clone(), place);
    }
    (files, places, index_files)
}
