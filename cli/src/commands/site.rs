//! `sextant build --site <dir>`: index a built static site and add search to it.
//!
//! Writes into `<dir>/sextant/` content-hashed, immutable files (the split index, model, tokenizer, the
//! package with its wasm and the search worker) beside three small fixed-name files — the entry
//! manifest `sextant.json` (fetched fresh on every page load), and the drop-in `sextant-ui.js`
//! and `sextant-ui.css` — plus the offline service worker `<dir>/sextant-sw.js` (at the root, so
//! it may serve every page). It changes nothing else, and removes only what an earlier build
//! recorded writing (`crate::owned`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use sextant::chunk::Document;
use sextant::config::{BuildConfig, InputConfig};
use sextant::digest::sha256_hex;
use sextant::embed::Weights;
use sextant::loader::load_site_page;

use crate::indexing::{bar, build_index, oversized, write_atomically, BuildStats};
use crate::inputs::{glob_set, walk};
use crate::owned::{Owned, Planned, Record, ENTRY_MANIFEST};

/// What `sextant build --site` was asked to do.
#[derive(Debug)]
pub struct SiteBuild {
    /// The built site's folder.
    pub site: PathBuf,
    /// The build configuration (`--include`/`--exclude` already merged into `input`).
    pub config: BuildConfig,
    /// `--model`.
    pub model: Option<PathBuf>,
    /// `--package`.
    pub package: Option<PathBuf>,
    /// The embedding cache folder, if any.
    pub cache: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
    /// The whole site, one share of it, or a merge of shares.
    pub plan: SitePlan,
    /// `--merge-index`: other sites the search box searches too.
    pub merge: Vec<MergedSite>,
    /// `--body-weights`: the model body's layer weights (`Weights::Int5` packs them).
    pub body_weights: sextant::embed::Weights,
}

/// Another site whose search the box merges (`--merge-index URL[,WEIGHT]`): written into
/// `sextant.json` as `merge`, read by the drop-in UI like its `data-merge-index`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergedSite {
    /// The folder holding that site's `sextant.json` (absolute, or a path from this site's root).
    pub url: String,
    /// How much its results count (over 0, at most 100; 1 by default).
    pub weight: f32,
}

/// Reads `URL[,WEIGHT]` of `--merge-index`.
pub fn parse_merged_site(text: &str) -> std::result::Result<MergedSite, String> {
    let (url, weight) = match text.rsplit_once(',') {
        Some((url, w)) if w.trim().parse::<f32>().is_ok() => (url.trim(), w.trim().parse::<f32>().unwrap_or(1.0)),
        _ => (text.trim(), 1.0),
    };
    if !(url.starts_with("https://") || url.starts_with("http://") || url.starts_with('/')) {
        return Err(format!(
            "{url:?} is not a URL: give the folder holding the other site's sextant.json, as https://blog.example.com/sextant/ or /blog/sextant/, and a weight after a comma if you like (…/sextant/,0.5)"
        ));
    }
    if !(weight > 0.0 && weight <= sextant::search::bases::MAX_BASE_WEIGHT) {
        return Err(format!(
            "the weight {weight} is not over 0 and at most {}",
            sextant::search::bases::MAX_BASE_WEIGHT
        ));
    }
    Ok(MergedSite {
        url: url.to_string(),
        weight,
    })
}

/// What a site build does with its pages.
#[derive(Debug)]
pub enum SitePlan {
    /// Embeds every page and writes the site's search.
    Whole,
    /// Embeds one share of the pages and writes their vectors to `partial` (`crate::shard`).
    Shard {
        /// Which share.
        shard: crate::shard::Shard,
        /// The partial file to write.
        partial: PathBuf,
    },
    /// Writes the site's search from the vectors of every share's partial, embedding nothing.
    Merge(Vec<PathBuf>),
}

/// The output folder inside the site.
pub const OUTPUT_DIR: &str = "sextant";
/// The index's folder inside the output folder.
pub const INDEX_DIR: &str = "index";
/// The folder under `sextant/` of the model's body and row files.
pub const MODEL_DIR: &str = "model";
/// The drop-in UI's files, rewritten in place on every build (their names are fixed: pages load
/// them by name).
const UI_FILES: [&str; 2] = ["sextant-ui.js", "sextant-ui.css"];

/// Package files copied into the hashed package folder.
const PACKAGE_FILES: [&str; 18] = [
    "errors.js",
    "fetching.js",
    "chat.js",
    "rerank.js",
    "graph.js",
    "index-files.js",
    "otlp.js",
    "core.js",
    "browser.js",
    "keyword.js",
    "sextant_wasm.js",
    "sextant_wasm_bg.wasm",
    "sextant_keyword.js",
    "sextant_keyword_bg.wasm",
    "encoder.js",
    "sextant_encoder.js",
    "sextant_encoder_bg.wasm",
    "ui/search-worker.js",
];

/// Where the built `sextant-search` package is: `--package`, `$SEXTANT_PACKAGE_DIR`, else the
/// repository's `pkg/` (what `make wasm` writes).
pub fn package_dir(arg: Option<&Path>) -> Result<PathBuf> {
    let dir = arg
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("SEXTANT_PACKAGE_DIR").map(PathBuf::from))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../pkg"));
    for file in PACKAGE_FILES
        .iter()
        .chain(&["ui/sextant-ui.js", "ui/sextant-ui.css", "ui/sextant-sw.js"])
    {
        if !dir.join(file).is_file() {
            bail!(
                "{} has no {file}: the sextant-search package is not built; run `make wasm`, or pass --package DIR",
                dir.display()
            );
        }
    }
    Ok(dir)
}

/// The line of the drop-in UI's script that names the package folder written beside it.
const PACKAGE_LINE: &str = "const BUILT_PACKAGE = null;";

/// The UI's script with the package folder this build writes named in it: its first query then
/// fetches the keyword engine while the entry manifest is on its way.
fn with_package_name(script: Vec<u8>, package_name: &str, path: &Path) -> Result<Vec<u8>> {
    let text = String::from_utf8(script).with_context(|| format!("{} is not UTF-8", path.display()))?;
    let found = match text.matches(PACKAGE_LINE).count() {
        1 => None,
        0 => Some("no line".to_string()),
        n => Some(format!("{n} lines")),
    };
    if let Some(found) = found {
        bail!(
            "{} has {found} `{PACKAGE_LINE}` (the script of this sextant has one): the package is from another version of sextant-search; rebuild it (`make wasm`) or pass --package DIR",
            path.display()
        );
    }
    Ok(text
        .replace(
            PACKAGE_LINE,
            &format!("const BUILT_PACKAGE = {};", serde_json::to_string(package_name)?),
        )
        .into_bytes())
}

fn short_hash(bytes: &[u8]) -> String {
    sha256_hex(bytes)[..16].to_string()
}

/// A page passed over, and why.
#[derive(Serialize)]
pub struct Skip {
    /// The page, relative to the site.
    pub page: String,
    /// Why.
    pub reason: String,
}

#[derive(Serialize)]
struct EntryManifest {
    version: u32,
    generator: String,
    /// The index manifest (format 2), relative to `sextant/`; its files are beside it.
    index: String,
    model: String,
    /// The model without its word table, in `model/` beside its row files
    /// (`sextant::embed::rows`): what the drop-in UI loads (absent when the model cannot be cut).
    #[serde(skip_serializing_if = "Option::is_none")]
    model_body: Option<String>,
    /// How the body holds its layer weights ("int5": packed at five bits, `sextant::embed::int5`;
    /// absent: int8, the whole model's): the weights a Worker serving this site embeds queries
    /// with, so `/embed` gives the search box's own vectors.
    #[serde(skip_serializing_if = "Option::is_none")]
    model_body_weights: Option<sextant::embed::Weights>,
    /// The body's layers for sextant's own encoder (`sextant::embed::bert`), in `model/` beside
    /// the row files: what the drop-in UI runs, with a wasm without tract (absent when the
    /// encoder does not give the body's vectors bit for bit: the UI then loads the body).
    #[serde(skip_serializing_if = "Option::is_none")]
    model_encoder: Option<String>,
    tokenizer: String,
    package: String,
    worker: String,
    bytes: BTreeMap<&'static str, u64>,
    pages: usize,
    chunks: usize,
    /// What this build wrote (`files`: every file under `sextant/`, this manifest aside, sorted;
    /// what a later build may remove, and what the service worker keeps), as `crate::owned`
    /// records it.
    #[serde(flatten)]
    record: Record,
    /// Other sites the search box searches too (`--merge-index`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    merge: Vec<MergedSite>,
    /// With pages in several languages: `index`'s language, and each language's index manifest
    /// (`index`'s too), each built with its language's analyzer. The drop-in UI reads the one of
    /// the page's `<html lang>`.
    #[serde(skip_serializing_if = "String::is_empty")]
    language: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    languages: BTreeMap<String, String>,
}

/// `config` for pages in `code`: its analyzer.
fn in_language(config: &BuildConfig, code: &str) -> BuildConfig {
    let mut c = config.clone();
    c.input.language = code.to_string();
    c
}

/// The pages of a sharded build, which indexes one language, and the configuration for it; an
/// error for a site in several.
fn one_language(documents: Vec<Document>, config: &BuildConfig) -> Result<(Vec<Document>, BuildConfig)> {
    let mut groups = by_language(documents, &config.input.language);
    if groups.len() > 1 {
        bail!(
            "the site's pages are in {} languages ({}); a sharded build indexes one language: build it whole (without --shard), or --include one language's pages",
            groups.len(),
            groups.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    let (code, documents) = groups.pop().unwrap_or_default();
    Ok((documents, in_language(config, &code)))
}

/// The pages by language: each page's `<html lang>` (its first subtag, lower case), or `default`
/// (English when empty) for a page that says none. The language with the most pages comes first
/// (ties: the default, then by code), the others by code.
pub fn by_language(documents: Vec<Document>, default: &str) -> Vec<(String, Vec<Document>)> {
    let code = |tag: &str| tag.split(['-', '_']).next().unwrap_or("").trim().to_ascii_lowercase();
    let fallback = match code(default) {
        c if c.is_empty() => "en".to_string(),
        c => c,
    };
    let mut groups: BTreeMap<String, Vec<Document>> = BTreeMap::new();
    for d in documents {
        let lang = d
            .language
            .as_deref()
            .map(code)
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| fallback.clone());
        groups.entry(lang).or_default().push(d);
    }
    if groups.is_empty() {
        return vec![(fallback, Vec::new())];
    }
    let mut out: Vec<(String, Vec<Document>)> = groups.into_iter().collect();
    let main = out
        .iter()
        .enumerate()
        .max_by(|(_, (a, da)), (_, (b, db))| {
            da.len()
                .cmp(&db.len())
                .then((*a == fallback).cmp(&(*b == fallback)))
                .then(b.cmp(a))
        })
        .map(|(i, _)| i);
    if let Some(i) = main {
        let first = out.remove(i);
        out.insert(0, first);
    }
    out
}

#[derive(Serialize)]
struct SiteSummary {
    site: String,
    embedding: BuildStats,
    index_files: usize,
    /// Pages per language, when there are several (an index each).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    languages: BTreeMap<String, usize>,
    pages_indexed: usize,
    pages_skipped: Vec<Skip>,
    chunks: usize,
    duplicates_dropped: usize,
    shared_chunks: usize,
    files: Vec<String>,
    bytes: u64,
    seconds: f64,
}

/// The HTML pages of the site, sorted, relative paths with `/`.
fn pages(site: &Path, include: &[String], exclude: &[String]) -> Result<Vec<(PathBuf, String)>> {
    let include = glob_set(include, "--include")?;
    let exclude = glob_set(exclude, "--exclude")?;
    let mut out = Vec::new();
    for file in walk(site, |e| e.depth() == 1 && e.file_name() == OUTPUT_DIR)? {
        let lower = file.rel.to_ascii_lowercase();
        if !(lower.ends_with(".html") || lower.ends_with(".htm")) {
            continue;
        }
        if include.as_ref().is_some_and(|g| !g.is_match(&file.rel))
            || exclude.as_ref().is_some_and(|g| g.is_match(&file.rel))
        {
            continue;
        }
        out.push((file.path, file.rel));
    }
    Ok(out)
}

/// The documents of a built site's HTML pages (as `build --site` reads them: URLs from paths),
/// with the pages skipped and why (each also printed); an error when no page has text.
pub fn site_documents(site: &Path, input: &InputConfig) -> Result<(Vec<Document>, Vec<Skip>)> {
    let pages = pages(site, &input.include, &input.exclude)?;
    if pages.is_empty() {
        bail!("no HTML pages in {}; pass the folder of a built site", site.display());
    }
    let mut documents = Vec::new();
    let mut skipped = Vec::new();
    let reading = bar(pages.len() as u64, "reading");
    for (path, rel) in &pages {
        reading.inc(1);
        if let Some(reason) = oversized(path, input)? {
            skipped.push(Skip {
                page: rel.clone(),
                reason,
            });
            continue;
        }
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let Ok(text) = std::str::from_utf8(&bytes) else {
            skipped.push(Skip {
                page: rel.clone(),
                reason: "not valid UTF-8".into(),
            });
            continue;
        };
        match load_site_page(rel, text.strip_prefix('\u{feff}').unwrap_or(text), input) {
            Ok(doc) => documents.push(doc),
            Err(skip) => skipped.push(Skip {
                page: rel.clone(),
                reason: skip.reason(),
            }),
        }
    }
    reading.finish_and_clear();
    if !skipped.is_empty() {
        let mut err = std::io::stderr().lock();
        write_skipped(&mut err, &skipped)?;
    }
    if documents.is_empty() {
        bail!(
            "none of the {} pages in {} has text to index (all skipped)",
            pages.len(),
            site.display()
        );
    }
    Ok((documents, skipped))
}

/// Up to this many skipped pages are each named; more are counted by reason, with examples.
const SKIPS_NAMED: usize = 20;

/// The pages skipped and why: each one when there are few; by reason with the first few of each
/// when there are many (a large site's redirect pages: rust-doc has 10,098), `--json` naming every
/// page.
fn write_skipped(out: &mut impl Write, skipped: &[Skip]) -> std::io::Result<()> {
    if skipped.len() <= SKIPS_NAMED {
        for s in skipped {
            writeln!(out, "skipped {}: {}", s.page, s.reason)?;
        }
        return Ok(());
    }
    // Reasons in the order first met, so the same site prints the same lines.
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for s in skipped {
        match reasons.iter_mut().find(|(r, _)| *r == s.reason) {
            Some((_, pages)) => pages.push(&s.page),
            None => reasons.push((&s.reason, vec![&s.page])),
        }
    }
    writeln!(out, "skipped {} pages (`--json` lists every one):", skipped.len())?;
    for (reason, pages) in &reasons {
        let shown: Vec<&str> = pages.iter().take(3).copied().collect();
        let more = if pages.len() > shown.len() { ", …" } else { "" };
        writeln!(out, "  {} {reason}: {}{more}", pages.len(), shown.join(", "))?;
    }
    Ok(())
}

/// `--shard I/N`: embeds the share's pages and writes the partial (never inside the site).
fn run_shard(
    site: &Path,
    config: &BuildConfig,
    model_arg: Option<&Path>,
    cache: Option<&Path>,
    shard: crate::shard::Shard,
    partial: &Path,
    json: bool,
) -> Result<()> {
    let parent = partial
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let (Ok(dir), Ok(site_dir)) = (parent.canonicalize(), site.canonicalize()) {
        if dir.starts_with(&site_dir) {
            bail!(
                "the partial {} is inside the site {}; write it outside the site (a shard never writes into the site)",
                partial.display(),
                site.display()
            );
        }
    }
    let (documents, _skipped) = site_documents(site, &config.input)?;
    let (documents, config) = one_language(documents, config)?;
    let embedder = crate::model::load(&crate::model::model_dir(model_arg)?, &config.model)?;
    let summary = crate::shard::build_shard(&documents, &config, &embedder, cache, shard, partial)?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &summary)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "shard {}: {} of {} pages, {} vectors written to {} in {:.1} s",
        summary.shard, summary.pages_in_share, summary.pages, summary.vectors, summary.partial, summary.seconds
    )?;
    summary.embedding.print(&mut out)?;
    writeln!(
        out,
        "  when every shard is done: sextant merge --site {} PARTIAL…",
        site.display()
    )?;
    Ok(())
}

/// Builds the site's search: see the module docs.
pub fn run(build: SiteBuild) -> Result<()> {
    let started = Instant::now();
    let SiteBuild {
        site,
        config,
        model: model_arg,
        package: package_arg,
        cache,
        json,
        plan,
        merge,
        body_weights,
    } = build;
    let site = site.as_path();
    if !site.is_dir() {
        bail!(
            "site folder {} does not exist; pass the folder your site generator wrote (e.g. public/ or _site/)",
            site.display()
        );
    }
    if let SitePlan::Shard { shard, partial } = &plan {
        return run_shard(
            site,
            &config,
            model_arg.as_deref(),
            cache.as_deref(),
            *shard,
            partial,
            json,
        );
    }
    let package = package_dir(package_arg.as_deref())?;
    let model_dir = crate::model::model_dir(model_arg.as_deref())?;
    // Whether the build may write where it writes, checked before anything (embedding included).
    let out = site.join(OUTPUT_DIR);
    let sw_path = site.join("sextant-sw.js");
    let sw = std::fs::read(package.join("ui/sextant-sw.js"))?;
    // The package's files, in a folder named by their content.
    let mut package_bytes = Vec::new();
    let mut files = Vec::new();
    for f in PACKAGE_FILES {
        let bytes = std::fs::read(package.join(f)).with_context(|| format!("reading {}", package.join(f).display()))?;
        package_bytes.extend_from_slice(f.as_bytes());
        package_bytes.extend_from_slice(&bytes);
        files.push((f, bytes));
    }
    let package_name = format!("pkg.{}/", short_hash(&package_bytes));
    let mut ui = Vec::new();
    for f in UI_FILES {
        let path = package.join("ui").join(f);
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let bytes = if f == "sextant-ui.js" {
            with_package_name(bytes, &package_name, &path)?
        } else {
            bytes
        };
        ui.push((f, bytes));
    }
    let fixed: Vec<(&str, &[u8])> = ui.iter().map(|(f, b)| (*f, b.as_slice())).collect();
    let owned = Owned::check(site, &out, &sw_path, &sw, &fixed)?;
    let (documents, skipped) = site_documents(site, &config.input)?;
    let pages_indexed = documents.len();
    // One index per language, each with its analyzer; the language of most pages is `index`.
    let groups = match plan {
        SitePlan::Merge(_) => {
            let (documents, config) = one_language(documents, &config)?;
            vec![(config.input.language, documents)]
        }
        _ => by_language(documents, &config.input.language),
    };
    let (main_language, main_documents) = &groups[0];
    let main_config = in_language(&config, main_language);
    let (built, mut stats) = match plan {
        SitePlan::Merge(partials) => {
            let embedder = crate::model::load(&model_dir, &config.model)?;
            crate::shard::merge_index(main_documents, &main_config, &embedder, &partials)?
        }
        _ => build_index(main_documents, &main_config, Some(&model_dir), cache.as_deref())?,
    };
    let mut others = Vec::new();
    for (code, docs) in &groups[1..] {
        let config = in_language(&config, code);
        let (other, other_stats) = build_index(docs, &config, Some(&model_dir), cache.as_deref())?;
        stats.add(&other_stats);
        others.push((code.clone(), other));
    }
    let manifest = &built.manifest;

    // Every file the build writes, planned first, so that a pending record names them all before
    // the first is written.
    let mut plan: Vec<Planned> = Vec::new();
    let mut add = |name: String, bytes: Vec<u8>, hashed: bool| -> String {
        plan.push(Planned {
            name: name.clone(),
            bytes,
            hashed,
        });
        name
    };
    let model = std::fs::read(model_dir.join("model.onnx"))?;
    let tokenizer = std::fs::read(model_dir.join("tokenizer.json"))?;
    let (model_len, tokenizer_len) = (model.len() as u64, tokenizer.len() as u64);
    let mut index_bytes = 0u64;
    let mut manifest_len = 0u64;
    let mut index_files = 0usize;
    let (mut chunks, mut shared, mut dropped) = (0usize, 0usize, 0usize);
    let mut languages = BTreeMap::new();
    for (code, index) in std::iter::once((main_language, &built)).chain(others.iter().map(|(c, b)| (c, b))) {
        for (name, bytes) in &index.files {
            add(format!("{INDEX_DIR}/{name}"), bytes.clone(), true);
            index_bytes += bytes.len() as u64;
        }
        index_files += index.files.len();
        chunks += index.manifest.counts.chunks;
        shared += index.manifest.counts.shared_chunks;
        dropped += index.manifest.counts.duplicates_dropped;
        let json = serde_json::to_vec(&index.manifest)?;
        manifest_len += json.len() as u64;
        let name = add(format!("{INDEX_DIR}/manifest.{}.json", short_hash(&json)), json, true);
        languages.insert(code.clone(), name);
    }
    let index_name = languages[main_language].clone();
    if groups.len() == 1 {
        languages.clear();
    }
    // The model cut in two for the drop-in UI: a body without its word table and the table's
    // rows in small files, fetched as queries need them (`sextant::embed::rows`); the whole model
    // stays for what reads every row (collections, the Worker).
    let (mut model_encoder, mut encoder_len) = (None, 0u64);
    let (model_body, body_len) = match sextant::embed::rows::split_model(&model) {
        Ok(mut parts) => {
            if body_weights == Weights::Int5 {
                (parts.body, _) = sextant::embed::int5::pack_body(&parts.body).context(
                    "packing the model body's layer weights at five bits (--body-weights int8 keeps them whole)",
                )?;
            }
            let len = parts.body.len() as u64;
            // The same layers for sextant's own encoder (no tract in the search box's wasm), kept
            // only if it gives the body's vectors bit for bit.
            let options = manifest.model.options();
            let encoder = sextant::embed::bert::write_encoder(&parts.body, options.max_tokens).and_then(|encoder| {
                sextant::embed::bert::check_encoder(
                    &encoder,
                    &parts.body,
                    &parts.row_files,
                    &tokenizer,
                    &options,
                    &sextant::embed::bert::CHECK_TEXTS,
                )?;
                Ok(encoder)
            });
            model_encoder = match encoder {
                Ok(encoder) => {
                    encoder_len = encoder.len() as u64;
                    Some(add(
                        format!("{MODEL_DIR}/encoder.{}.bin", short_hash(&encoder)),
                        encoder,
                        true,
                    ))
                }
                Err(e) => {
                    eprintln!("note: the search box will run the model with the full engine ({e})");
                    None
                }
            };
            for (name, bytes) in parts.row_files {
                add(format!("{MODEL_DIR}/{name}"), bytes, true);
            }
            (
                Some(add(
                    format!("{MODEL_DIR}/body.{}.onnx", short_hash(&parts.body)),
                    parts.body,
                    true,
                )),
                len,
            )
        }
        Err(e) => {
            eprintln!("note: the model is served whole to the search box ({e})");
            (None, 0)
        }
    };
    let model_name = add(format!("model.{}.onnx", short_hash(&model)), model, true);
    let tokenizer_name = add(format!("tokenizer.{}.json", short_hash(&tokenizer)), tokenizer, true);
    let (mut wasm_bytes, mut keyword_wasm_bytes, mut encoder_wasm_bytes) = (0u64, 0u64, 0u64);
    for (f, bytes) in files {
        match f {
            "sextant_wasm_bg.wasm" => wasm_bytes = bytes.len() as u64,
            "sextant_encoder_bg.wasm" => encoder_wasm_bytes = bytes.len() as u64,
            "sextant_keyword_bg.wasm" => keyword_wasm_bytes = bytes.len() as u64,
            _ => {}
        }
        add(format!("{package_name}{f}"), bytes, true);
    }
    for (f, bytes) in ui {
        add(f.to_string(), bytes, false);
    }
    let record = owned.write(&plan)?;
    let written = record.files.clone();
    let entry = EntryManifest {
        version: 2,
        generator: manifest.generator.clone(),
        index: index_name,
        model: model_name,
        model_body_weights: (model_body.is_some() && body_weights == Weights::Int5).then_some(Weights::Int5),
        model_body,
        model_encoder,
        tokenizer: tokenizer_name,
        worker: format!("{package_name}ui/search-worker.js"),
        package: package_name,
        bytes: BTreeMap::from([
            ("index", index_bytes + manifest_len),
            ("index_manifest", manifest_len),
            ("model", model_len),
            ("model_body", body_len),
            ("model_encoder", encoder_len),
            ("tokenizer", tokenizer_len),
            ("wasm", wasm_bytes),
            ("keyword_wasm", keyword_wasm_bytes),
            ("encoder_wasm", encoder_wasm_bytes),
        ]),
        pages: pages_indexed,
        chunks,
        record: Record {
            service_worker_sha256: Some(sha256_hex(&sw)),
            ..record.clone()
        },
        merge,
        language: if languages.is_empty() {
            String::new()
        } else {
            main_language.clone()
        },
        languages: languages.clone(),
    };
    let mut entry_json = serde_json::to_vec_pretty(&entry)?;
    entry_json.push(b'\n');
    write_atomically(&sw_path, &sw)?;
    // Written last: a page never sees a manifest naming files that are not there yet.
    write_atomically(&out.join(ENTRY_MANIFEST), &entry_json)?;
    owned.finish(&record)?;
    let mut written = written;
    written.push(ENTRY_MANIFEST.to_string());

    let total: u64 = written
        .iter()
        .filter_map(|f| std::fs::metadata(out.join(f)).ok())
        .map(|m| m.len())
        .sum::<u64>()
        + sw.len() as u64;
    let summary = SiteSummary {
        site: site.display().to_string(),
        embedding: stats,
        index_files,
        pages_indexed,
        pages_skipped: skipped,
        chunks,
        duplicates_dropped: dropped,
        shared_chunks: shared,
        languages: groups
            .iter()
            .map(|(c, d)| (c.clone(), d.len()))
            .filter(|_| groups.len() > 1)
            .collect(),
        files: written
            .iter()
            .map(|f| format!("{OUTPUT_DIR}/{f}"))
            .chain(["sextant-sw.js".to_string()])
            .collect(),
        bytes: total,
        seconds: started.elapsed().as_secs_f64(),
    };
    let mut stdout = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut stdout, &summary)?;
        writeln!(stdout)?;
        return Ok(());
    }
    writeln!(
        stdout,
        "indexed {} pages of {} ({} chunks: {} shared with another page, {} repeats within a page dropped) in {:.1} s",
        summary.pages_indexed,
        summary.site,
        summary.chunks,
        summary.shared_chunks,
        summary.duplicates_dropped,
        summary.seconds
    )?;
    summary.embedding.print(&mut stdout)?;
    if !summary.languages.is_empty() {
        let each: Vec<String> = summary
            .languages
            .iter()
            .map(|(c, n)| format!("{c} ({n} page{})", if *n == 1 { "" } else { "s" }))
            .collect();
        writeln!(stdout, "an index for each language: {}", each.join(", "))?;
    }
    if !summary.pages_skipped.is_empty() {
        // Why each was skipped is on stderr, as the pages were read.
        writeln!(
            stdout,
            "skipped {} pages (why: above; `--json` lists every one)",
            summary.pages_skipped.len()
        )?;
    }
    writeln!(
        stdout,
        "wrote {} files ({} bytes) to {}/{OUTPUT_DIR}/",
        summary.files.len(),
        summary.bytes,
        summary.site
    )?;
    writeln!(stdout, "add search to a page with:")?;
    writeln!(stdout, "  <div id=\"search\"></div>")?;
    writeln!(
        stdout,
        "  <script type=\"module\" src=\"/{OUTPUT_DIR}/sextant-ui.js\"></script>"
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skips(n: usize) -> Vec<Skip> {
        (0..n)
            .map(|i| Skip {
                page: format!("p{i}.html"),
                reason: if i % 10 == 9 {
                    "robots noindex"
                } else {
                    "redirect page (meta refresh)"
                }
                .into(),
            })
            .collect()
    }

    #[test]
    fn the_ui_script_names_the_package_folder_or_the_build_says_the_package_is_not_its_own() {
        let path = Path::new("pkg/ui/sextant-ui.js");
        let script = b"const here = 1;\nconst BUILT_PACKAGE = null;\nload();\n".to_vec();
        let named = with_package_name(script, "pkg.0123456789abcdef/", path).unwrap();
        assert_eq!(
            String::from_utf8(named).unwrap(),
            "const here = 1;\nconst BUILT_PACKAGE = \"pkg.0123456789abcdef/\";\nload();\n"
        );
        for (script, found) in [
            (&b"const here = 1;\n"[..], "no line"),
            (b"const BUILT_PACKAGE = null;const BUILT_PACKAGE = null;", "2 lines"),
        ] {
            let err = with_package_name(script.to_vec(), "pkg.0123456789abcdef/", path)
                .unwrap_err()
                .to_string();
            let says = format!("pkg/ui/sextant-ui.js has {found} `const BUILT_PACKAGE = null;`");
            assert!(
                err.contains(&says) && err.contains("another version of sextant-search") && err.contains("make wasm"),
                "{err}"
            );
        }
    }

    fn written(skipped: &[Skip]) -> String {
        let mut out = Vec::new();
        write_skipped(&mut out, skipped).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_few_skipped_pages_are_each_named_many_are_counted_by_reason() {
        let few = written(&skips(SKIPS_NAMED));
        assert_eq!(few.lines().count(), SKIPS_NAMED, "{few}");
        assert!(few.contains("skipped p9.html: robots noindex"), "{few}");
        let many = written(&skips(1000));
        assert_eq!(
            many,
            "skipped 1000 pages (`--json` lists every one):\n  \
             900 redirect page (meta refresh): p0.html, p1.html, p2.html, …\n  \
             100 robots noindex: p9.html, p19.html, p29.html, …\n"
        );
    }
}
