//! The bodies of the fuzz targets (`fuzz/`, `make fuzz`), here so that the coverage-guided
//! fuzzers and the tests that replay their corpus and every crash they found
//! (`tests/fuzz_corpus.rs`, in `make test`) run exactly the same code. Each takes any bytes and
//! must return without panicking: readers answer bad bytes with errors, parsers never fail.
//!
//! Not part of the API.

use crate::analyzer::Analyzer;
use crate::chunk::{split_text, ChunkParams};
use crate::frame::{frame, FrameChunk};
use crate::index::files::{keyword_from_bytes, BlockFile, CodeFile, Fragment, Norms, VectorMeta};
use crate::search::query::Query;

/// The targets, by name (the fuzz crate's binaries and the corpus folders are named so).
pub const TARGETS: [&str; 8] = [
    "index_files",
    "loaders",
    "chunker",
    "framing",
    "query",
    "front_matter",
    "search",
    "manifest",
];

/// Runs the target `name` on `data`; false for a name that is not a target.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "index_files" => index_files(data),
        "loaders" => loaders(data),
        "chunker" => chunker(data),
        "framing" => framing(data),
        "query" => query(data),
        "front_matter" => front_matter(data),
        "search" => search(data),
        "manifest" => manifest(data),
        _ => return false,
    }
    true
}

/// Two small numbers from the first bytes (the readers' expected counts), and the rest.
fn split_params(data: &[u8]) -> (usize, usize, &[u8]) {
    match data {
        [a, b, rest @ ..] => (usize::from(*a % 32), usize::from(*b % 32), rest),
        _ => (1, 1, data),
    }
}

/// Every reader of index bytes: a packed index (then searched by keyword, so a file that
/// decodes is also used), a format-1 bundle, a manifest, each file kind (facets too), an
/// object's place as a manifest names it, and a deflated object inflated to the size it claims.
pub fn index_files(data: &[u8]) {
    if let Ok(engine) = crate::search::Engine::from_bytes(data) {
        let options = crate::options::SearchOptions {
            mode: crate::options::Mode::Keyword,
            ..Default::default()
        };
        let _ = engine.search("a b \"c d\" -e", &options, &crate::search::NoClock);
    }
    #[cfg(feature = "indexer")]
    let _ = crate::format1::Bundle::from_bytes(data);
    let _ = crate::index::IndexManifest::from_json(data);
    let (n, m, rest) = split_params(data);
    let _ = Norms::from_bytes(rest, n, m);
    let _ = keyword_from_bytes(rest, n);
    let _ = Fragment::from_bytes(rest, m as u32, n);
    let _ = VectorMeta::from_bytes(rest, m);
    let _ = CodeFile::from_bytes(rest, n, m, n + m);
    let _ = BlockFile::from_bytes(rest, n, m, n + m);
    let _ = crate::index::facets::Facets::from_bytes(rest, n, m);
    let _ = crate::index::directory::ObjectRef::parse(&String::from_utf8_lossy(rest), n);
    let place = crate::index::directory::Location {
        pack: 0,
        offset: 0,
        len: rest.len() as u64,
        inflated: (m as u64) << 4,
    };
    let _ = place.object(rest);
}

/// The document loaders, each on the same bytes (the first byte picks none: all run).
pub fn loaders(data: &[u8]) {
    #[cfg(feature = "loaders")]
    {
        let input = crate::config::InputConfig::default();
        for path in ["page.html", "notes.md", "doc.mdx", "notes.txt", "data.jsonl"] {
            let _ = crate::loader::load_file(path, data, &input);
        }
    }
    #[cfg(not(feature = "loaders"))]
    let _ = data;
}

/// The chunker on the text, with sizes from the first bytes and a count of words.
pub fn chunker(data: &[u8]) {
    let (size, overlap, rest) = split_params(data);
    let text = String::from_utf8_lossy(rest);
    let params = ChunkParams {
        chunk_size: size + 1,
        chunk_overlap: overlap % (size + 1),
        ..ChunkParams::default()
    };
    let count = |s: &str| -> Result<usize, std::convert::Infallible> { Ok(s.split_whitespace().count()) };
    let Ok(chunks) = split_text(&text, params, &count);
    for c in &chunks {
        assert!(
            c.len() <= params.max_chunk_bytes * 2,
            "a chunk far over max_chunk_bytes"
        );
    }
}

/// Framing: the text as chunk text, source and id, within a budget from the first byte.
pub fn framing(data: &[u8]) {
    let (budget, _, rest) = split_params(data);
    let text = String::from_utf8_lossy(rest);
    let mut parts = text.splitn(3, '\u{1}');
    let chunk = FrameChunk {
        text: parts.next().unwrap_or_default().to_string(),
        source: parts.next().unwrap_or_default().to_string(),
        chunk_id: parts.next().unwrap_or_default().to_string(),
    };
    let count = |s: &str| -> Result<usize, std::convert::Infallible> { Ok(s.chars().count() / 4) };
    let Ok(framed) = frame(std::slice::from_ref(&chunk), budget * 64 + 1, &count);
    assert!(framed.tokens <= framed.budget, "framing went over its budget");
    let _ = crate::frame::frame_block(&chunk);
}

/// The query parser and the analyzer steps a query takes (terms, positions, phrases,
/// highlights, the fallback's near terms).
pub fn query(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = Query::parse(&text);
    let analyzer = Analyzer::english();
    let terms = analyzer.terms(&parsed.text);
    let _ = analyzer.highlights(&text, &parsed.text);
    for p in &parsed.phrases {
        let positions = analyzer.positions(p);
        let _ = analyzer.holds_phrase(&text, &positions);
    }
    let candidates: Vec<(String, u32)> = terms.iter().map(|t| (format!("{t}s"), 1)).collect();
    for t in terms.iter().take(8) {
        let _ = crate::search::pipeline::fallback_terms(t, &candidates);
    }
}

/// Front matter: the bytes as a Markdown file's YAML and TOML front matter (aliases, anchors,
/// deep nesting), through the loader and its expansion limit.
pub fn front_matter(data: &[u8]) {
    #[cfg(feature = "loaders")]
    {
        let text = String::from_utf8_lossy(data);
        let input = crate::config::InputConfig::default();
        for fence in ["---", "+++"] {
            let md = format!("{fence}\n{text}\n{fence}\n# Title\n\nBody text.\n");
            let _ = crate::loader::load_markdown("fuzz.md", &md, &input);
        }
    }
    #[cfg(not(feature = "loaders"))]
    let _ = data;
}

/// The golden index (format 2, packed), for the targets that query or re-assemble it.
const GOLDEN: &[u8] = include_bytes!("../tests/fixtures/golden-v2-fields.sxt");

/// A keyword search of the golden index with the bytes as the query (phrases, exclusions,
/// fallback terms, RM3), and a search with every option the first bytes pick.
pub fn search(data: &[u8]) {
    use crate::options::{Mode, SearchOptions};
    static ENGINE: std::sync::OnceLock<Option<crate::search::Engine>> = std::sync::OnceLock::new();
    let Some(engine) = ENGINE.get_or_init(|| crate::search::Engine::from_bytes(GOLDEN).ok()) else {
        return;
    };
    let (a, b, rest) = split_params(data);
    let query = String::from_utf8_lossy(rest);
    let options = SearchOptions {
        mode: Mode::Keyword,
        k: a + 1,
        depth: Some(b + 1),
        per_document: a % 2 == 1,
        query_expansion: b % 2 == 0,
        ..Default::default()
    };
    let _ = engine.search(&query, &options, &crate::search::NoClock);
    let _ = engine.lookup(&query);
}

/// The bytes as a split index's manifest: when it reads, the golden index's files are offered to
/// its store under every name it lists (roles and counts the files do not match), then searched.
pub fn manifest(data: &[u8]) {
    static FILES: std::sync::OnceLock<Vec<(String, Vec<u8>)>> = std::sync::OnceLock::new();
    let files = FILES.get_or_init(|| {
        crate::index::packed::Packed::parse(GOLDEN)
            .map(|p| p.files.iter().map(|(n, b)| (n.to_string(), b.to_vec())).collect())
            .unwrap_or_default()
    });
    let Ok(mut engine) = crate::search::Engine::from_manifest(data) else {
        return;
    };
    let names: Vec<String> = engine.manifest().file_names().into_iter().map(String::from).collect();
    for (i, name) in names.iter().enumerate() {
        if let Some((_, bytes)) = files.get(i % files.len().max(1)) {
            let _ = engine.add_file(name, bytes);
        }
    }
    let options = crate::options::SearchOptions {
        mode: crate::options::Mode::Keyword,
        ..Default::default()
    };
    let _ = engine.search("lamp \"fog horn\" -oil", &options, &crate::search::NoClock);
}
