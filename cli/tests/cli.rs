//! The `sextant` binary end to end, on the tiny corpus in `tests/fixtures/tiny`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

fn sextant(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sextant"))
        .args(args)
        .output()
        .expect("run sextant")
}

fn ok(args: &[&str]) -> String {
    let out = sextant(args);
    assert!(
        out.status.success(),
        "sextant {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = sextant(args);
    assert!(!out.status.success(), "sextant {args:?} should have failed");
    String::from_utf8(out.stderr).unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sextant-cli-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The tiny corpus built once for the tests that only read it.
fn tiny_bundle() -> &'static Path {
    static BUNDLE: OnceLock<PathBuf> = OnceLock::new();
    BUNDLE.get_or_init(|| {
        let out = tmp("tiny.sxt");
        let tiny = fixtures().join("tiny");
        ok(&["build", tiny.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        out
    })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn build_summary_counts_and_skips_unknown_types() {
    let out = tmp("summary.sxt");
    let tiny = fixtures().join("tiny");
    let result = sextant(&["build", s(&tiny), "-o", s(&out), "--json"]);
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        stderr.contains("warning: skipped") && stderr.contains("extra.rst"),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&result.stdout).unwrap();
    assert_eq!(summary["files"], 5);
    assert_eq!(summary["documents"], 7, "5 files, the JSONL holding 3 records");
    assert!(summary["chunks"].as_u64().unwrap() >= 10);
    assert_eq!(summary["skipped"].as_array().unwrap().len(), 1);
    let names: Vec<&str> = summary["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["manifest", "files"]);
    // The index's objects by kind: centroids, codes, fragments, keyword shards, norms, pages, int8
    // blocks, calibration.
    let kinds: Vec<&str> = summary["index_files"]["kinds"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(kinds, ["cent", "codes", "frag", "kw", "norms", "page", "vec", "vmeta"]);
    assert_eq!(summary["index_files"]["files"], 1, "one pack holds a tiny index");
    assert_eq!(summary["embedding"]["chunks"], summary["chunks"]);
}

#[test]
fn same_inputs_give_byte_identical_bundles() {
    let a = tmp("det-a.sxt");
    let b = tmp("det-b.sxt");
    let tiny = fixtures().join("tiny");
    let c = tmp("det-c.sxt");
    ok(&["build", s(&tiny), "-o", s(&a)]);
    ok(&["build", s(&tiny), "-o", s(&b)]);
    // One thread or one per core: the same index.
    ok(&["build", s(&tiny), "-o", s(&c), "--threads", "1", "--no-cache"]);
    let (a, b, c) = (
        std::fs::read(a).unwrap(),
        std::fs::read(b).unwrap(),
        std::fs::read(c).unwrap(),
    );
    assert!(a == b, "two builds of the same inputs differ");
    assert!(a == c, "a build on one thread differs");
    let err = fails(&["build", s(&tiny), "-o", s(&tmp("det-d.sxt")), "--threads", "0"]);
    assert!(err.contains("--threads"), "{err}");
}

#[test]
fn search_finds_the_right_document_in_every_mode() {
    let bundle = tiny_bundle();
    for mode in ["hybrid", "dense", "keyword"] {
        let out = ok(&[
            "search",
            s(bundle),
            "how do I clean the lens",
            "--mode",
            mode,
            "-k",
            "3",
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let top = &v["results"][0];
        assert_eq!(top["doc_id"], "notes.txt", "{mode}: {out}");
        assert_eq!(top["rank"], 1);
        match mode {
            // Both retrievers rank notes.txt first (the other two modes below), so its fused
            // score is the convex fusion's highest: each list's best normalises to 1, and the
            // weights sum to 1.
            "hybrid" => {
                assert_eq!(
                    (&top["dense"]["rank"], &top["keyword"]["rank"]),
                    (&1.into(), &1.into()),
                    "{out}"
                );
                let score = top["score"].as_f64().unwrap();
                assert!((score - 1.0).abs() < 1e-6, "hybrid score {score}");
            }
            "dense" => assert!(top["keyword"].is_null() && top["dense"]["rank"] == 1),
            _ => assert!(top["dense"].is_null() && top["keyword"]["rank"] == 1),
        }
    }
    // Meaning, not words: "storms" is not in the corpus, gales are.
    let out = ok(&[
        "search",
        s(bundle),
        "bad weather with storms",
        "--mode",
        "dense",
        "-k",
        "1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["results"][0]["doc_id"], "guide/search.mdx", "{out}");
    // Anchors and breadcrumbs come through.
    let out = ok(&[
        "search",
        s(bundle),
        "install from source make install",
        "--mode",
        "keyword",
        "-k",
        "1",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["results"][0]["url"], "guide/install.md#from-source");
    assert_eq!(v["results"][0]["heading_path"][0], "Install from source");
    let human = ok(&["search", s(bundle), "fog horn"]);
    assert!(human.contains("What is a fog horn for?"), "{human}");
}

#[test]
fn frame_quotes_and_blocks_injected_delimiters() {
    let bundle = tiny_bundle();
    let out = ok(&[
        "frame",
        s(bundle),
        "prompt injection password",
        "--token-budget",
        "400",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let context = v["context"].as_str().unwrap();
    assert!(context.contains("[blocked-retrieved-context-end]"), "{context}");
    assert_eq!(
        context.matches("<retrieved_context ").count(),
        context.matches("</retrieved_context>").count()
    );
    for line in context.lines() {
        assert!(
            line.starts_with("<retrieved_context ") || line.starts_with("| ") || line == "</retrieved_context>",
            "{line:?}"
        );
    }
    assert!(v["tokens"].as_u64().unwrap() <= 400);
    assert!(v["system_prompt"].as_str().unwrap().contains("untrusted"));
    // HTML chrome never reaches the index.
    assert!(!context.contains("Advertisement") && !context.contains("pwned"));
}

#[test]
fn inspect_verifies_and_reports_the_manifest() {
    let out = ok(&["inspect", s(tiny_bundle()), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // 2.9: passages embedded on activation rows rounded to bytes, the default.
    assert_eq!(v["format"], "2.9");
    assert_eq!(v["manifest"]["model"]["weights"], "int8a8");
    assert_eq!(v["manifest"]["model"]["dims"], 384);
    assert_eq!(
        v["manifest"]["model"]["sha256"],
        "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    );
    assert_eq!(v["manifest"]["layout"]["rescore"], 75);
    assert_eq!(v["files"], 1, "one pack holds the tiny index");
    let human = ok(&["inspect", s(tiny_bundle())]);
    assert!(human.contains("all digests verified"));
    assert!(
        human.contains("1 packs") && human.contains("pages of 256 objects"),
        "{human}"
    );

    // The same index split (`sextant unpack`): inspected from its manifest, every file checked.
    let dir = tmp("inspect-split");
    let _ = std::fs::remove_dir_all(&dir);
    ok(&["unpack", s(tiny_bundle()), "-o", s(&dir)]);
    let manifest = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("manifest."))
        .unwrap();
    let split: serde_json::Value = serde_json::from_str(&ok(&["inspect", s(&manifest), "--json"])).unwrap();
    assert_eq!(
        (&split["format"], &split["files"], &split["chunks"]),
        (&v["format"], &v["files"], &v["chunks"])
    );
    assert!(ok(&["inspect", s(&manifest)]).contains("each verified against its name"));
    // A damaged pack: the error names the object read from it and the pack; a truncated one too.
    let pack = dir.join(split["manifest"]["files"]["packs"][0].as_str().unwrap());
    let original = std::fs::read(&pack).unwrap();
    let mut bytes = original.clone();
    bytes[0] ^= 1;
    std::fs::write(&pack, bytes).unwrap();
    let err = fails(&["inspect", s(&manifest)]);
    let norms = split["manifest"]["files"]["norms"]
        .as_str()
        .unwrap()
        .split('@')
        .next()
        .unwrap();
    let pack_name = pack.file_name().unwrap().to_str().unwrap();
    assert!(err.contains(norms) && err.contains(pack_name), "{err}");
    std::fs::write(&pack, &original[..original.len() - 10]).unwrap();
    let err = fails(&["inspect", s(&manifest)]);
    assert!(err.contains(pack_name) && err.contains("truncated"), "{err}");
}

#[test]
fn eval_reports_one_json_object_per_mode() {
    let queries = tmp("q.jsonl");
    let qrels = tmp("qrels.tsv");
    std::fs::write(&queries, "{\"_id\": \"1\", \"text\": \"why do lighthouse beams rotate\"}\n{\"_id\": \"2\", \"text\": \"who writes the logbook\"}\n").unwrap();
    std::fs::write(&qrels, "query-id\tcorpus-id\tscore\n1\tfaq-1\t2\n2\tfaq-3\t2\n").unwrap();
    let out = ok(&[
        "eval",
        s(tiny_bundle()),
        "--queries",
        s(&queries),
        "--qrels",
        s(&qrels),
        "--all-modes",
        "--json",
    ]);
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines.len(),
        6,
        "three modes, hybrid against each single one, then the queries where they disagree: {out}"
    );
    for (line, mode) in lines.iter().zip(["hybrid", "dense", "keyword"]) {
        assert_eq!(line["mode"], mode);
        assert_eq!(line["collection"], "tiny.sxt");
        assert_eq!(line["variant"], "defaults");
        assert_eq!(line["queries"], 2);
        assert!(line["ndcg@10"].as_f64().unwrap() > 0.5, "{line}");
        assert!(line["mrr@10"].is_f64() && line["recall@100"].is_f64());
    }
    for (line, mode) in lines[3..5].iter().zip(["dense", "keyword"]) {
        assert_eq!(line["hybrid_minus"], mode);
        let ci = &line["ci95"]["nDCG@10"];
        let (low, mean, high) = (
            ci["low"].as_f64().unwrap(),
            ci["mean"].as_f64().unwrap(),
            ci["high"].as_f64().unwrap(),
        );
        assert!(low <= mean && mean <= high, "{line}");
    }
    let split = &lines[5]["disagreement"];
    assert!(split["queries"].as_u64().unwrap() <= 2, "{split}");
    assert!(lines[5]["hybrid_below_better_by_0.1"].as_u64().unwrap() <= 2);
    // As a search for one result: of a query's two judged pages, it finds one.
    let two = tmp("qrels-two.tsv");
    std::fs::write(
        &two,
        "query-id\tcorpus-id\tscore\n2\tfaq-3\t2\n2\tguide/search.mdx\t1\n",
    )
    .unwrap();
    let recall = |k: &str| -> f64 {
        let args = ["eval", s(tiny_bundle()), "--queries", s(&queries), "--qrels", s(&two)];
        let out = ok(&[&args[..], &["--mode", "keyword", "--k", k, "--json"]].concat());
        let line: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
        line["recall@100"].as_f64().unwrap()
    };
    assert_eq!((recall("1"), recall("100")), (0.5, 1.0));
    let args = [
        "eval",
        s(tiny_bundle()),
        "--queries",
        s(&queries),
        "--qrels",
        s(&two),
        "--k",
        "0",
    ];
    let err = fails(&args);
    assert!(err.contains("--k") && err.contains("1..=100"), "{err}");
}

/// Two BEIR-layout collection folders in a fresh folder: `lights` (the tiny corpus's topics as
/// JSONL) and `logs`, whose two documents have the same text.
fn two_collections(name: &str) -> PathBuf {
    let root = tmp(name);
    let _ = std::fs::remove_dir_all(&root);
    let lights = root.join("lights");
    let logs = root.join("logs");
    for dir in [&lights, &logs] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(
        lights.join("corpus.jsonl"),
        concat!(
            "{\"_id\": \"beam\", \"title\": \"Why the beam turns\", \"text\": \"A lighthouse lens rotates so that its beam sweeps the horizon and ships see a flash.\"}\n",
            "{\"_id\": \"lens\", \"title\": \"Cleaning\", \"text\": \"Clean the Fresnel lens with a soft cloth and alcohol every week.\"}\n",
            "{\"_id\": \"fog\", \"title\": \"Fog signals\", \"text\": \"In fog the keeper sounds a horn every thirty seconds.\"}\n",
        ),
    )
    .unwrap();
    std::fs::write(
        lights.join("queries.jsonl"),
        "{\"_id\": \"1\", \"text\": \"why does the beam rotate\"}\n{\"_id\": \"2\", \"text\": \"how to clean the lens\"}\n",
    )
    .unwrap();
    std::fs::write(
        lights.join("qrels.tsv"),
        "query-id\tcorpus-id\tscore\n1\tbeam\t2\n2\tlens\t2\n",
    )
    .unwrap();
    std::fs::write(
        logs.join("corpus.jsonl"),
        concat!(
            "{\"_id\": \"monday\", \"text\": \"The keeper writes the logbook at dawn and at dusk.\"}\n",
            "{\"_id\": \"tuesday\", \"text\": \"The keeper writes the logbook at dawn and at dusk.\"}\n",
            "{\"_id\": \"storm\", \"text\": \"Storms break the glass of the lantern room.\"}\n",
        ),
    )
    .unwrap();
    std::fs::write(
        logs.join("queries.jsonl"),
        "{\"_id\": \"1\", \"text\": \"who writes the logbook\"}\n{\"_id\": \"2\", \"text\": \"broken lantern glass\"}\n",
    )
    .unwrap();
    // The second of two identical documents is the one judged: it must still be found.
    std::fs::write(
        logs.join("qrels.tsv"),
        "query-id\tcorpus-id\tscore\n1\ttuesday\t2\n2\tstorm\t1\n",
    )
    .unwrap();
    root
}

#[test]
fn eval_runs_over_collection_folders_and_their_mean() {
    let root = two_collections("collections-eval");
    let out = ok(&[
        "eval",
        s(&root.join("lights")),
        s(&root.join("logs")),
        "--mode",
        "keyword",
        "--no-cache",
        "--json",
    ]);
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let names: Vec<&str> = lines.iter().map(|l| l["collection"].as_str().unwrap()).collect();
    assert_eq!(names, ["lights", "logs", "mean"], "{out}");
    // Both identical documents are indexed: the judged one is found (at rank 1 or 2).
    // (query 1 at rank 2 or better, query 2 at rank 1: a mean of at least 0.75).
    assert!(lines[1]["mrr@10"].as_f64().unwrap() >= 0.75, "{out}");
    let mean = (lines[0]["ndcg@10"].as_f64().unwrap() + lines[1]["ndcg@10"].as_f64().unwrap()) / 2.0;
    assert!((lines[2]["ndcg@10"].as_f64().unwrap() - mean).abs() < 1e-9, "{out}");
    assert_eq!(lines[2]["collections"], 2);
    // A folder without judgements is an error that names what is missing.
    let bare = tmp("collections-bare");
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::write(bare.join("corpus.jsonl"), "{\"_id\": \"1\", \"text\": \"x\"}\n").unwrap();
    let err = fails(&["eval", s(&bare), "--mode", "keyword"]);
    assert!(err.contains("queries.jsonl"), "{err}");
    // A corpus linked to a site that is not there says so.
    let linked = tmp("collections-linked");
    let _ = std::fs::remove_dir_all(&linked);
    std::fs::create_dir_all(&linked).unwrap();
    for f in ["queries.jsonl", "qrels.tsv"] {
        std::fs::copy(root.join("logs").join(f), linked.join(f)).unwrap();
    }
    std::os::unix::fs::symlink(linked.join("no-such-site"), linked.join("corpus")).unwrap();
    let err = fails(&["eval", s(&linked), "--mode", "keyword"]);
    assert!(err.contains("is a link to") && err.contains("no-such-site"), "{err}");
}

#[test]
fn eval_sweep_chooses_across_collections_and_cross_validates() {
    let root = two_collections("collections-sweep");
    let out = ok(&[
        "eval",
        s(&root.join("lights")),
        s(&root.join("logs")),
        "--sweep",
        "--folds",
        "2",
        "--no-cache",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = v["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lights", "logs"]);
    // 2 expansions × 2 BM25 levels × 3 depths × 3 levels (chunks, pages by max, by sum3) ×
    // (rrf + 7 convex weights); 2 expansions × 2 BM25 levels × (4 k1 × 4 b + the index's own).
    assert_eq!(v["hybrid"].as_array().unwrap().len(), 288);
    assert_eq!(v["keyword"].as_array().unwrap().len(), 68);
    assert_eq!(v["dense"].as_array().unwrap().len(), 1);
    for decision in [&v["hybrid_decision"], &v["keyword_decision"]] {
        // One score per collection; the chosen configuration is one of the table's.
        assert_eq!(decision["chosen_ndcg"].as_array().unwrap().len(), 2, "{decision}");
        assert_eq!(decision["folds"].as_array().unwrap().len(), 2, "{decision}");
        for ci in decision["cv_minus_defaults"].as_array().unwrap() {
            assert!(ci["low"].as_f64().unwrap() <= ci["high"].as_f64().unwrap(), "{ci}");
        }
        let cv = decision["cv_mean"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&cv), "{cv}");
    }
}

#[test]
fn embed_prints_the_golden_token_ids() {
    let out = ok(&["embed", "The quick brown fox jumps over the lazy dog.", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["dims"], 384);
    assert_eq!(v["vector"].as_array().unwrap().len(), 384);
    let ids: Vec<u64> = v["token_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(
        ids,
        [101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 1012, 102]
    );
}

#[test]
fn passage_vectors_have_the_same_bits_with_every_simd_kernel() {
    // Each kernel the CPU has, capped by SEXTANT_SIMD (AMX, AVX-512 VNNI, AVX-VNNI, AVX2, plain Rust),
    // gives the same vector: rows rounded to bytes (the passages' default, whose byte kernels
    // and 16-bit kernels differ most) and to 15 bits. A passage longer than a tile of rows.
    let text = "The boundary layer over a flat plate at hypersonic speeds thickens with the Mach \
                number; the shock wave and the viscous layer interact, and the pressure induced \
                on the plate rises near its leading edge. Measurements in a shock tunnel agree \
                with the similarity solution within the scatter of the heat transfer gauges.";
    let config = tmp("int8-weights.toml");
    std::fs::write(&config, "[model]\nweights = \"int8\"\n").unwrap();
    let config = config.to_str().unwrap();
    for extra in [&[][..], &["--config", config][..]] {
        let vector = |simd: &str| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_sextant"));
            command.args(["embed", "--passage", "--json", text]).args(extra);
            if !simd.is_empty() {
                command.env("SEXTANT_SIMD", simd);
            }
            let out = command.output().expect("run sextant");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(v["token_ids"].as_array().unwrap().len() > 24, "longer than a tile");
            v["vector"].clone()
        };
        let best = vector("");
        for simd in ["avx-512", "avx-vnni", "avx2", "portable"] {
            assert_eq!(vector(simd), best, "SEXTANT_SIMD={simd} {extra:?}");
        }
    }
}

#[test]
fn bad_inputs_fail_clearly_and_write_nothing() {
    let out = tmp("bad.sxt");
    let _ = std::fs::remove_file(&out);
    let dir = out.parent().unwrap().to_path_buf();
    let leftovers = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().contains("bad.sxt"))
    };

    let err = fails(&["build", "/no/such/dir", "-o", s(&out)]);
    assert!(err.contains("/no/such/dir") && err.contains("does not exist"), "{err}");

    let empty = tmp("empty-dir");
    std::fs::create_dir_all(&empty).unwrap();
    let err = fails(&["build", s(&empty), "-o", s(&out)]);
    assert!(err.contains("no documents to index"), "{err}");

    let bad_utf8 = tmp("latin1.txt");
    std::fs::write(&bad_utf8, b"caf\xe9 au lait").unwrap();
    let err = fails(&["build", s(&bad_utf8), "-o", s(&out)]);
    assert!(err.contains("latin1.txt") && err.contains("not valid UTF-8"), "{err}");

    let jsonl = tmp("broken.jsonl");
    std::fs::write(
        &jsonl,
        "{\"_id\": \"1\", \"text\": \"fine\"}\n{\"_id\": \"2\", \"text\": \n",
    )
    .unwrap();
    let err = fails(&["build", s(&jsonl), "-o", s(&out)]);
    assert!(err.contains("broken.jsonl:2:"), "{err}");

    let text_only = fixtures().join("tiny/notes.txt");
    let config = tmp("overlap.toml");
    std::fs::write(&config, "[chunking]\nchunk_size = 100\nchunk_overlap = 100\n").unwrap();
    let err = fails(&["build", s(&text_only), "-o", s(&out), "--config", s(&config)]);
    assert!(
        err.contains("chunk_overlap (100) must be smaller than chunking.chunk_size (100)"),
        "{err}"
    );

    std::fs::write(&config, "[chunking]\nchunk_size = 1000\n").unwrap();
    let err = fails(&["build", s(&text_only), "-o", s(&out), "--config", s(&config)]);
    assert!(err.contains("lower chunk_size to at most 254"), "{err}");

    std::fs::write(&config, "[chunking]\nchunk_sise = 100\n").unwrap();
    let err = fails(&["build", s(&text_only), "-o", s(&out), "--config", s(&config)]);
    assert!(err.contains("unknown field") && err.contains("chunk_sise"), "{err}");

    std::fs::write(&config, "[hnsw]\nef_search = 100\n").unwrap();
    let err = fails(&["build", s(&text_only), "-o", s(&out), "--config", s(&config)]);
    assert!(err.contains("[hnsw] is gone") && err.contains("[layout]"), "{err}");

    let err = fails(&["build", s(&text_only), "-o", "/no/such/dir/out.sxt"]);
    assert!(err.contains("output directory /no/such/dir does not exist"), "{err}");

    let err = fails(&["build", s(&text_only), "-o", s(&out), "--model", "/no/model"]);
    assert!(
        err.contains("/no/model/model.onnx not found") && err.contains("make model"),
        "{err}"
    );

    assert!(!out.exists() && !leftovers(), "a failed build left files behind");
}

#[test]
fn corrupt_bundles_and_other_models_are_refused() {
    let bundle = std::fs::read(tiny_bundle()).unwrap();
    let mut corrupt = bundle.clone();
    let n = corrupt.len();
    corrupt[n - 10] ^= 0xff;
    let path = tmp("corrupt.sxt");
    std::fs::write(&path, &corrupt).unwrap();
    let err = fails(&["search", s(&path), "lamp", "--mode", "keyword"]);
    assert!(err.contains("is corrupt") && err.contains("SHA-256"), "{err}");

    std::fs::write(&path, &bundle[..bundle.len() / 2]).unwrap();
    let err = fails(&["inspect", s(&path)]);
    assert!(err.contains("truncated"), "{err}");

    std::fs::write(&path, b"<html>not a bundle</html>").unwrap();
    let err = fails(&["inspect", s(&path)]);
    assert!(err.contains("not a sextant index"), "{err}");

    // A model folder whose tokenizer differs by one byte is another model.
    let model_dir = std::env::var_os("SEXTANT_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var_os("HOME").unwrap()).join(".cache/sextant/models/minilm-l6-v2-int8")
        });
    let other = tmp("other-model");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(model_dir.join("model.onnx"), other.join("model.onnx")).unwrap();
    let mut tokenizer = std::fs::read(model_dir.join("tokenizer.json")).unwrap();
    tokenizer.push(b'\n');
    std::fs::write(other.join("tokenizer.json"), tokenizer).unwrap();
    let err = fails(&["search", s(tiny_bundle()), "lamp", "--model", s(&other)]);
    assert!(err.contains("tokenizer.json does not match the index"), "{err}");
    // Keyword search needs no model, so it still works.
    ok(&[
        "search",
        s(tiny_bundle()),
        "lamp",
        "--mode",
        "keyword",
        "--model",
        s(&other),
    ]);
}

#[test]
fn site_mode_writes_hashed_files_a_manifest_and_says_what_it_skipped() {
    let site = tmp("site");
    let _ = std::fs::remove_dir_all(&site);
    for (path, html) in [
        (
            "index.html",
            "<main><h1 id=\"top\">Lighthouse docs</h1><p>How the lamp turns at dusk.</p></main>",
        ),
        (
            "guide/index.html",
            "<main><h2 id=\"fog\">Fog</h2><p>The horn sounds in fog.</p></main>",
        ),
        (
            "old/index.html",
            "<head><meta http-equiv=\"refresh\" content=\"0; url=/guide/\"></head><body>Moved</body>",
        ),
        (
            "drafts/index.html",
            "<body data-sextant-ignore><p>Not ready.</p></body>",
        ),
        ("empty.html", "<body><nav>only links</nav></body>"),
    ] {
        let file = site.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, html).unwrap();
    }
    let package = fake_package();
    let out = ok(&["build", "--site", s(&site), "--package", s(&package), "--json"]);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["pages_indexed"], 2);
    let skipped: Vec<(String, String)> = summary["pages_skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["page"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [
            (
                "drafts/index.html".to_string(),
                "marked data-sextant-ignore".to_string()
            ),
            ("empty.html".to_string(), "no text in the main content".to_string()),
            ("old/index.html".to_string(), "redirect page (meta refresh)".to_string()),
        ]
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("sextant/sextant.json")).unwrap()).unwrap();
    for key in ["index", "model", "tokenizer"] {
        let name = manifest[key].as_str().unwrap();
        assert!(
            name.split('.').nth(1).is_some_and(|h| h.len() == 16),
            "{name} is not content-hashed"
        );
        assert!(site.join("sextant").join(name).is_file());
    }
    assert!(site
        .join("sextant")
        .join(manifest["worker"].as_str().unwrap())
        .is_file());
    assert!(site.join("sextant/sextant-ui.js").is_file() && site.join("sextant-sw.js").is_file());
    // The search box's script names the package folder written beside it (its first query fetches
    // the keyword wasm from there while sextant.json is on its way).
    let folder = manifest["package"].as_str().unwrap();
    assert!(folder.starts_with("pkg.") && manifest["worker"].as_str().unwrap().starts_with(folder));
    let ui = std::fs::read_to_string(site.join("sextant/sextant-ui.js")).unwrap();
    assert_eq!(
        ui.matches(&format!("const BUILT_PACKAGE = \"{folder}\";")).count(),
        1,
        "the script does not name {folder}"
    );
    // The search box's model: the body without the word table, and the table's rows in files of
    // 64 beside it, each recorded as written (so a rebuild may replace them).
    let body = manifest["model_body"].as_str().unwrap();
    assert!(
        body.starts_with("model/body.") && site.join("sextant").join(body).is_file(),
        "{body}"
    );
    let rows: Vec<String> = std::fs::read_dir(site.join("sextant/model"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rows."))
        .collect();
    assert_eq!(rows.len(), 30_522usize.div_ceil(64));
    let recorded: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(rows.iter().all(|r| recorded.contains(&format!("model/{r}").as_str())));
    assert!(
        manifest["bytes"]["model_body"].as_u64().unwrap()
            < manifest["bytes"]["model"].as_u64().unwrap() / 2 + 1_000_000
    );
    // sextant's own encoder (no tract in the search box's wasm): the body's layers in a file of
    // its own, checked against the body when written, recorded like the rows.
    let encoder = manifest["model_encoder"].as_str().unwrap();
    assert!(
        encoder.starts_with("model/encoder.") && encoder.ends_with(".bin"),
        "{encoder}"
    );
    assert!(recorded.contains(&encoder));
    let encoder_len = std::fs::metadata(site.join("sextant").join(encoder)).unwrap().len();
    assert_eq!(manifest["bytes"]["model_encoder"].as_u64(), Some(encoder_len));
    assert!(encoder_len <= manifest["bytes"]["model_body"].as_u64().unwrap());
    assert!(site
        .join("sextant")
        .join(manifest["package"].as_str().unwrap())
        .join("sextant_encoder_bg.wasm")
        .is_file());
    // The index's chunks carry site URLs with anchors (the CLI searches a split index too).
    let index = site.join("sextant").join(manifest["index"].as_str().unwrap());
    let hit = ok(&[
        "search",
        s(&index),
        "fog horn",
        "--mode",
        "keyword",
        "-k",
        "1",
        "--json",
    ]);
    let hit: serde_json::Value = serde_json::from_str(&hit).unwrap();
    assert_eq!(hit["results"][0]["url"], "/guide/#fog");
    // A rebuild after an edit replaces the hashed bundle and removes the stale one.
    std::fs::write(
        site.join("guide/index.html"),
        "<main><h2 id=\"fog\">Fog</h2><p>The horn sounds twice in fog.</p></main>",
    )
    .unwrap();
    let before: Vec<String> = std::fs::read_dir(site.join("sextant/index"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    ok(&["build", "--site", s(&site), "--package", s(&package)]);
    let after: Vec<String> = std::fs::read_dir(site.join("sextant/index"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // Files of the old build that the new manifest does not list are removed.
    assert!(after.iter().any(|f| !before.contains(f)), "{before:?} -> {after:?}");
    assert!(!index.exists(), "the old manifest is removed");
    let entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("sextant/sextant.json")).unwrap()).unwrap();
    let new_index = site.join("sextant").join(entry["index"].as_str().unwrap());
    let hit: serde_json::Value = serde_json::from_str(&ok(&[
        "search",
        s(&new_index),
        "horn sounds twice",
        "--mode",
        "keyword",
        "-k",
        "1",
        "--json",
    ]))
    .unwrap();
    assert_eq!(hit["results"][0]["url"], "/guide/#fog");
}

/// The CLI copies the package files as they are (the UI's script with the package folder named in
/// its one `BUILT_PACKAGE` line); stand-ins are enough for site builds.
fn fake_package() -> PathBuf {
    let package = tmp("fake-package");
    for f in [
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
        "ui/sextant-ui.js",
        "ui/sextant-ui.css",
        "ui/sextant-sw.js",
    ] {
        let file = package.join(f);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let text = if f == "ui/sextant-ui.js" {
            format!("// {f}\nconst BUILT_PACKAGE = null;\n")
        } else {
            format!("// {f}")
        };
        std::fs::write(file, text).unwrap();
    }
    package
}

/// A one-page site in a fresh folder.
fn small_site(name: &str) -> PathBuf {
    let site = tmp(name);
    let _ = std::fs::remove_dir_all(&site);
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(
        site.join("index.html"),
        "<main><h1 id=\"top\">Lighthouse</h1><p>The lamp turns at dusk.</p></main>",
    )
    .unwrap();
    site
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_site_build_changes_nothing_it_did_not_write() {
    let package = fake_package();
    let build = |site: &Path| sextant(&["build", "--site", s(site), "--package", s(&package)]);
    // A page and an image of the user's in sextant/: refused, both kept, nothing written.
    let site = small_site("site-users-folder");
    std::fs::create_dir_all(site.join("sextant/img")).unwrap();
    std::fs::write(site.join("sextant/index.html"), "<p>my page</p>").unwrap();
    std::fs::write(site.join("sextant/img/logo.png"), "png bytes").unwrap();
    let before = snapshot(&site);
    let out = build(&site);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sextant/img/logo.png, sextant/index.html"), "{err}");
    assert_eq!(snapshot(&site), before, "nothing changed");
    // sextant/ a link to a folder outside the site: refused, the folder untouched.
    let site = small_site("site-linked");
    let outside = tmp("outside-folder");
    let _ = std::fs::remove_dir_all(&outside);
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("precious.txt"), "keep me").unwrap();
    std::os::unix::fs::symlink(&outside, site.join("sextant")).unwrap();
    let err = String::from_utf8_lossy(&build(&site).stderr).into_owned();
    assert!(err.contains("is a link"), "{err}");
    assert_eq!(
        std::fs::read_to_string(outside.join("precious.txt")).unwrap(),
        "keep me"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
    // A service worker of the user's at the root: refused, kept.
    let site = small_site("site-own-sw");
    std::fs::write(site.join("sextant-sw.js"), "// mine").unwrap();
    let err = String::from_utf8_lossy(&build(&site).stderr).into_owned();
    assert!(err.contains("sextant did not write it"), "{err}");
    assert_eq!(std::fs::read_to_string(site.join("sextant-sw.js")).unwrap(), "// mine");
    assert!(!site.join("sextant").exists(), "checked before anything was written");
    // Sextant's own output: rebuilt in place, and what it recorded is what it removes.
    let site = small_site("site-rebuilt");
    assert!(build(&site).status.success());
    let entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("sextant/sextant.json")).unwrap()).unwrap();
    let files: Vec<&str> = entry["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(files.iter().any(|f| f.starts_with("index/manifest.")), "{files:?}");
    for f in &files {
        assert!(site.join("sextant").join(f).is_file(), "{f}");
    }
    std::fs::write(
        site.join("index.html"),
        "<main><h1 id=\"top\">Lighthouse</h1><p>The lamp turns at dawn.</p></main>",
    )
    .unwrap();
    assert!(build(&site).status.success(), "a rebuild over its own output");
    let old_index = site.join("sextant").join(entry["index"].as_str().unwrap());
    assert!(!old_index.exists(), "the old index manifest is removed");
}

#[test]
fn the_output_may_not_be_an_input() {
    let dir = tmp("output-is-input");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("docs")).unwrap();
    let notes = dir.join("notes.md");
    std::fs::write(&notes, "# Notes\n\nKeep these.\n").unwrap();
    std::fs::write(dir.join("docs/a.md"), "# A\n\nText.\n").unwrap();
    let err = fails(&["build", s(&notes), "-o", s(&notes)]);
    assert!(err.contains("is the same file as the input"), "{err}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "# Notes\n\nKeep these.\n");
    let inside = dir.join("docs/index.sxt");
    let err = fails(&["build", s(&dir.join("docs")), "-o", s(&inside)]);
    assert!(err.contains("is inside the input"), "{err}");
    assert!(!inside.exists());
    // Through a link to the input, too (refused: the link is not replaced by the index either).
    let link = dir.join("link.md");
    std::os::unix::fs::symlink(&notes, &link).unwrap();
    fails(&["build", s(&notes), "-o", s(&link)]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let err = fails(&["upgrade", s(&notes), "-o", s(&notes)]);
    assert!(err.contains("same file"), "{err}");
}

#[test]
fn a_file_over_an_input_limit_is_skipped_not_the_build() {
    let dir = tmp("over-limits");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ok.md"), "# Fine\n\nThe lamp turns at dusk.\n").unwrap();
    let mut maps = String::from("m0: &m0 {a: x, b: x, c: x, d: x, e: x, f: x, g: x, h: x, i: x}\n");
    for level in 1..9 {
        let refs: Vec<String> = "abcdefghi".chars().map(|k| format!("{k}: *m{}", level - 1)).collect();
        maps.push_str(&format!("m{level}: &m{level} {{{}}}\n", refs.join(", ")));
    }
    std::fs::write(dir.join("bomb.md"), format!("---\n{maps}---\n# Bomb\n\ntext\n")).unwrap();
    std::fs::write(dir.join("deep.html"), "<div></x>".repeat(20_000)).unwrap();
    let out = tmp("over-limits.sxt");
    let summary: serde_json::Value = serde_json::from_str(&ok(&["build", s(&dir), "-o", s(&out), "--json"])).unwrap();
    assert_eq!(summary["documents"], 1);
    let reasons: Vec<String> = summary["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("max_front_matter_values")),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("max_nesting_depth")), "{reasons:?}");
}

/// The `--help` text of a command.
fn help(command: &str) -> String {
    ok(&[command, "--help"])
}

#[test]
fn every_search_option_has_its_flag() {
    use sextant::options::{ContextOptions, SearchOptions};
    let flag = |key: &str| {
        if key == "k" {
            "-k".to_string()
        } else {
            format!("--{}", key.replace('_', "-"))
        }
    };
    let flags_of = |value: serde_json::Value| -> Vec<String> {
        let serde_json::Value::Object(map) = value else {
            panic!("options are an object")
        };
        map.keys()
            .flat_map(|key| match key.as_str() {
                // The BM25 override is an object: one flag per parameter.
                "bm25" => vec!["--bm25-k1".to_string(), "--bm25-b".to_string()],
                // Filters are given one at a time.
                "filters" => vec!["--filter".to_string()],
                _ => vec![flag(key)],
            })
            .collect()
    };
    let search = help("search");
    for f in flags_of(serde_json::to_value(SearchOptions::default()).unwrap()) {
        assert!(search.contains(&f), "sextant search has no {f}");
    }
    let frame = help("frame");
    for f in flags_of(serde_json::to_value(ContextOptions::default()).unwrap()) {
        assert!(frame.contains(&f), "sextant frame has no {f}");
    }
    // The flags reach the core: a deep candidate list and a BM25 override change the results.
    let bundle = tiny_bundle();
    let ranked = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "search",
            s(bundle),
            "lamp lens clean",
            "--mode",
            "keyword",
            "-k",
            "5",
            "--json",
        ];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| format!("{}:{}", r["chunk_id"], r["score"]))
            .collect()
    };
    assert_ne!(ranked(&[]), ranked(&["--bm25-k1", "0", "--bm25-b", "0"]));
    let err = fails(&["search", s(bundle), "lamp", "--mode", "fuzzy"]);
    assert!(err.contains("hybrid") && err.contains("keyword"), "{err}");
}

#[test]
fn a_build_of_the_tiny_corpus_is_the_golden_index() {
    // The golden index of today's defaults (golden-v2-layout.sxt: fragments of 4 chunks, int8
    // blocks of 2, pages of 256, passages on byte rows, format 2.9) was built from
    // tests/fixtures/tiny with no embedding cache. The same inputs give the same bytes, vectors
    // included: int8 passages have the same bits on every CPU.
    let golden = std::fs::read(fixtures().join("golden-v2-layout.sxt")).unwrap();
    let defaults = std::fs::read(tiny_bundle()).unwrap();
    assert!(
        golden == defaults,
        "the tiny corpus no longer builds to golden-v2-layout.sxt"
    );
    // The golden index of format 2.7 (golden-v2-factors.sxt: packs, and a factor with each
    // binary code) was built with the layout and the passages' arithmetic of its day (rows
    // rounded to 15 bits), which still build it byte for byte.
    let config = tmp("layout-2.7.toml");
    std::fs::write(
        &config,
        "[model]\nweights = \"int8\"\n[layout]\nfragment_chunks = 8\nblock_chunks = 4\npage_entries = 128\n",
    )
    .unwrap();
    let out = tmp("tiny-2.7.sxt");
    let tiny = fixtures().join("tiny");
    ok(&["build", s(&tiny), "-o", s(&out), "--config", s(&config)]);
    let built = std::fs::read(&out).unwrap();
    assert!(
        std::fs::read(fixtures().join("golden-v2-factors.sxt")).unwrap() == built,
        "the tiny corpus with 2.7's layout no longer builds to golden-v2-factors.sxt"
    );
    // The finer layout cuts the same index into smaller objects: the same codes in the same
    // order (blocks of 2 are cut from the cluster order's leaves of 4) and the same int8 vectors
    // (today's layout with 2.7's passages).
    {
        use sextant::index::files::BlockFile;
        let int8 = tmp("tiny-int8.sxt");
        let config = tmp("int8-passages.toml");
        std::fs::write(&config, "[model]\nweights = \"int8\"\n").unwrap();
        ok(&["build", s(&tiny), "-o", s(&int8), "--config", s(&config)]);
        let defaults = std::fs::read(&int8).unwrap();
        let (old, new) = (unpack(&built).unwrap(), unpack(&defaults).unwrap());
        let (dims, chunks) = (new.manifest().model.dims, new.manifest().counts.chunks);
        let objects = |packed: &[u8], prefix: &str| -> Vec<Vec<u8>> {
            let parsed = Packed::parse(packed).unwrap();
            let store = unpack(packed).unwrap();
            let mut names = store.object_names();
            names.retain(|n| n.starts_with(prefix));
            let packs = &store.manifest().files.packs;
            names.sort_by_key(|n| {
                let (pack, at) = store.location(n).unwrap();
                (packs.iter().position(|p| p == pack), at.offset)
            });
            names
                .iter()
                .map(|n| {
                    let (pack, at) = store.location(n).unwrap();
                    let pack = parsed.files.iter().find(|(p, _)| *p == pack).unwrap().1;
                    at.object(&pack[at.offset as usize..(at.offset + at.len) as usize])
                        .unwrap()
                        .into_owned()
                })
                .collect()
        };
        assert_eq!(objects(&built, "codes."), objects(&defaults, "codes."));
        let vectors = |packed: &[u8]| -> Vec<(u32, u32, Vec<i8>)> {
            objects(packed, "vec.")
                .iter()
                .flat_map(|b| {
                    let count = u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize;
                    let block = BlockFile::from_bytes(b, count, dims, chunks).unwrap();
                    (0..count)
                        .map(|i| {
                            let values = block.values[i * dims..(i + 1) * dims].to_vec();
                            (block.chunks[i], block.scales[i].to_bits(), values)
                        })
                        .collect::<Vec<_>>()
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect()
        };
        assert_eq!(vectors(&built), vectors(&defaults));
        assert_eq!(
            (old.manifest().layout.block_chunks, new.manifest().layout.block_chunks),
            (4, 2)
        );
    }
    // Format 2.4 (golden-v2-packs.sxt) stored the same objects as 2.3 did (golden-v2-int8.sxt),
    // byte for byte, and 2.7 stores them again, but for the binary codes, which now carry a
    // factor each: the same chunks in the same order with the same codes.
    use sextant::index::files::CodeFile;
    use sextant::index::packed::{unpack, Packed};
    let listed = std::fs::read(fixtures().join("golden-v2-int8.sxt")).unwrap();
    let listed = Packed::parse(&listed).unwrap();
    let packed = Packed::parse(&built).unwrap();
    let store = unpack(&built).unwrap();
    let manifest = store.manifest();
    assert_eq!((manifest.format.minor, manifest.files.vectors.code_factors), (7, true));
    let (dims, chunks) = (manifest.model.dims, manifest.counts.chunks);
    let old_codes: Vec<&str> = listed
        .files
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| n.starts_with("codes."))
        .collect();
    let new_codes = store
        .object_names()
        .into_iter()
        .filter(|n| n.starts_with("codes."))
        .collect::<Vec<_>>();
    assert_eq!(old_codes.len(), new_codes.len());
    let stored = |name: &str| -> Vec<u8> {
        let (pack, at) = store
            .location(name)
            .unwrap_or_else(|| panic!("{name} is not in a pack"));
        let pack = packed.files.iter().find(|(n, _)| *n == pack).unwrap().1;
        at.object(&pack[at.offset as usize..(at.offset + at.len) as usize])
            .unwrap()
            .into_owned()
    };
    let read = |bytes: &[u8]| {
        let count = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
        CodeFile::from_bytes(bytes, count, dims, chunks).unwrap()
    };
    let new_codes: Vec<CodeFile> = new_codes.iter().map(|n| read(&stored(n))).collect();
    for old in &old_codes {
        let old = read(listed.files.iter().find(|(n, _)| n == old).unwrap().1);
        let new = new_codes
            .iter()
            .find(|f| f.chunks == old.chunks)
            .expect("a code file of the same chunks");
        assert_eq!(old.codes, new.codes);
        assert!(new.iter().all(|(_, _, f)| f > 0.0) && old.iter().all(|(_, _, f)| f == 1.0));
    }
    for (name, bytes) in listed.files.iter().filter(|(n, _)| !n.starts_with("codes.")) {
        assert_eq!(stored(name), *bytes, "{name}");
    }
    // The golden index of format 2.1 (f32 passages, golden-v2-fields.sxt) has vectors that agree
    // to float rounding.
    let old = unpack(&std::fs::read(fixtures().join("golden-v2-fields.sxt")).unwrap()).unwrap();
    let built = store;
    let (gm, bm) = (old.manifest(), built.manifest());
    assert_eq!(
        (&gm.counts, &gm.fields, &gm.analyzer),
        (&bm.counts, &bm.fields, &bm.analyzer)
    );
    assert_eq!(
        (gm.model.weights, bm.model.weights),
        (sextant::embed::Weights::F32, sextant::embed::Weights::Int8)
    );
    let probe: Vec<f32> = (0..384).map(|i| ((i * 37) % 11) as f32 / 11.0 - 0.5).collect();
    for chunk in 0..gm.counts.chunks as u32 {
        let (x, y) = (old.dot(chunk, &probe), built.dot(chunk, &probe));
        assert!(
            x.is_none() && y.is_none() || (x.unwrap() - y.unwrap()).abs() < 0.02,
            "chunk {chunk}: {x:?} vs {y:?}"
        );
    }
}

#[test]
fn files_over_the_input_limits_are_skipped_with_the_reason() {
    let dir = tmp("limits");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("good.md"), "# Lamps\n\nThe keeper trims the wick at dusk.\n").unwrap();
    // Nesting that once overflowed the stack and killed the build without naming the file.
    let deep = format!(
        "<body>{}deep text{}</body>",
        "<div>".repeat(40_000),
        "</div>".repeat(40_000)
    );
    std::fs::write(dir.join("deep.html"), deep).unwrap();
    std::fs::write(dir.join("big.txt"), "word ".repeat(250_000)).unwrap();
    let config = tmp("limits.toml");
    std::fs::write(&config, "[input]\nmax_file_bytes = 1000000\n").unwrap();
    let out = tmp("limits.sxt");
    let result = sextant(&["build", s(&dir), "-o", s(&out), "--config", s(&config), "--json"]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&result.stdout).unwrap();
    assert_eq!(summary["documents"], 1);
    let skipped: Vec<String> = summary["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{}: {}", s["path"].as_str().unwrap(), s["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("big.txt") && s.contains("input.max_file_bytes")),
        "{skipped:?}"
    );
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("deep.html") && s.contains("input.max_nesting_depth")),
        "{skipped:?}"
    );
    assert!(stderr.contains("deep.html"), "{stderr}");
}

/// The texts (lower case) of a search's top 20 in a mode.
fn texts(bundle: &Path, query: &str, mode: &str) -> Vec<String> {
    let out = ok(&["search", s(bundle), query, "--mode", mode, "-k", "20", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["text"].as_str().unwrap().to_lowercase())
        .collect()
}

#[test]
fn an_excluded_word_removes_its_chunks_in_every_mode() {
    let bundle = tiny_bundle();
    for mode in ["hybrid", "dense", "keyword"] {
        let all = texts(bundle, "lighthouse lens", mode);
        assert!(
            all.iter().any(|t| t.contains("lens")),
            "{mode}: the word is there to exclude"
        );
        let without = texts(bundle, "lighthouse -lens", mode);
        assert!(!without.is_empty(), "{mode}");
        assert!(without.iter().all(|t| !t.contains("lens")), "{mode}: {without:?}");
    }
    // A hyphen inside a word excludes nothing (the same results as the words apart); a query of
    // exclusions only is refused.
    assert_eq!(
        texts(bundle, "lighthouse lens-cleaning", "keyword"),
        texts(bundle, "lighthouse lens cleaning", "keyword")
    );
    assert!(texts(bundle, "lighthouse lens-cleaning", "keyword")
        .iter()
        .any(|t| t.contains("lens")));
    let err = fails(&["search", s(bundle), "--mode", "keyword", "--", "-lens"]);
    assert!(err.contains("nothing to search for"), "{err}");
}

#[test]
fn a_word_the_index_does_not_hold_falls_back_to_the_nearest_terms() {
    let bundle = tiny_bundle();
    let search = |query: &str| -> serde_json::Value {
        let out = ok(&["search", s(bundle), query, "--mode", "keyword", "-k", "3", "--json"]);
        serde_json::from_str(&out).unwrap()
    };
    let exact = search("lighthouse");
    assert_eq!(exact["fallback"], serde_json::json!([]));
    assert_eq!(exact["did_you_mean"], serde_json::Value::Null);
    // A typo (two letters swapped) and a word half typed find what the word would have, and
    // the query is offered as the results spell it.
    for typo in ["lighthuose", "lightho"] {
        let v = search(typo);
        assert_eq!(v["fallback"], serde_json::json!(["lighthous"]), "{typo}: {v}");
        assert_eq!(v["results"], exact["results"].clone(), "{typo}");
        assert_eq!(v["did_you_mean"], "lighthouse", "{typo}");
    }
    // Beside a word the index holds, the typo is searched as its nearest term too: the
    // results are those of both words.
    let v = search("lighthuose keeper");
    assert_eq!(v["fallback"], serde_json::json!(["lighthous"]), "{v}");
    assert_eq!(v["results"], search("lighthouse keeper")["results"].clone());
    assert_eq!(v["did_you_mean"], "lighthouse keeper");
    let text = ok(&["search", s(bundle), "lighthuose keeper", "--mode", "keyword", "-k", "3"]);
    assert!(text.starts_with("did you mean: lighthouse keeper\n"), "{text}");
    assert!(search("qqqqqqq")["results"].as_array().unwrap().is_empty());
}

#[test]
fn the_configs_cross_encoder_reranks_search_frame_and_eval() {
    // The tiny cross-encoder of tests/rerank.rs (it scores a passage by its "fog" tokens).
    let model_dir = std::env::var_os("SEXTANT_MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/sextant/models/minilm-l6-v2-int8")
        });
    let config = tmp("rerank.toml");
    std::fs::write(
        &config,
        format!(
            "[rerank]\nmodel = {:?}\ntokenizer = {:?}\n",
            fixtures().join("tiny-cross-encoder.onnx"),
            model_dir.join("tokenizer.json")
        ),
    )
    .unwrap();
    let bundle = tiny_bundle();
    let top = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "search",
            s(bundle),
            "ships coast",
            "--mode",
            "keyword",
            "-k",
            "3",
            "--json",
        ];
        args.extend_from_slice(extra);
        let v: serde_json::Value = serde_json::from_str(&ok(&args)).unwrap();
        v["results"][0].clone()
    };
    assert_eq!(top(&[])["chunk_id"], "faq-1#0");
    assert!(top(&[])["rerank"].is_null());
    let reranked = top(&["--config", s(&config)]);
    assert_eq!(reranked["chunk_id"], "faq-2#0");
    assert_eq!(reranked["rerank"], 3.0);
    assert_eq!(
        top(&["--config", s(&config), "--rerank-depth", "0"])["chunk_id"],
        "faq-1#0"
    );
    let framed = ok(&["frame", s(bundle), "ships coast", "-k", "1", "--config", s(&config)]);
    assert!(framed.contains("faq-2#0"), "{framed}");
    // A missing model file names the file and the config.
    let broken = tmp("rerank-broken.toml");
    std::fs::write(
        &broken,
        "[rerank]\nmodel = \"nowhere.onnx\"\ntokenizer = \"nowhere.json\"\n",
    )
    .unwrap();
    let err = fails(&["search", s(bundle), "ships", "--config", s(&broken)]);
    assert!(
        err.contains("nowhere.onnx") && err.contains("rerank-broken.toml"),
        "{err}"
    );
}

#[test]
fn a_quoted_phrase_keeps_only_chunks_that_hold_it_in_every_mode() {
    let bundle = tiny_bundle();
    for mode in ["hybrid", "dense", "keyword"] {
        let loose = texts(bundle, "soft cloth keeper", mode);
        assert!(
            loose.iter().any(|t| !t.contains("soft cloth")),
            "{mode}: without quotes other chunks come too"
        );
        let phrase = texts(bundle, "\"soft cloth\" keeper", mode);
        assert!(!phrase.is_empty(), "{mode}");
        assert!(phrase.iter().all(|t| t.contains("soft cloth")), "{mode}: {phrase:?}");
        assert!(
            texts(bundle, "\"cloth soft\"", mode).is_empty(),
            "{mode}: the order matters"
        );
    }
}

/// Every file under `dir`, by path relative to it, with its bytes.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_site_built_in_shards_by_separate_processes_merges_to_the_single_build_bytes() {
    // Each page has a filter value and a sort value: the merge's facets are the single build's.
    let pages: Vec<(String, String)> = (0..12)
        .map(|i| {
            (
                format!("p{i}/index.html"),
                format!(
                    "<main data-sextant-filter=\"coast:{}\" data-sextant-sort=\"height:{i}\"><h1>Page {i}</h1><p>The lamp of tower {i} turns {} times at dusk.</p><h2 id=\"fog\">Fog</h2><p>Horn {i} sounds in fog and rain.</p></main>",
                    ["north", "south", "west"][i % 3],
                    i * 3 + 1
                ),
            )
        })
        .collect();
    let make_site = |name: &str| {
        let site = tmp(name);
        let _ = std::fs::remove_dir_all(&site);
        for (path, html) in &pages {
            let file = site.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, html).unwrap();
        }
        site
    };
    let package = fake_package();
    let single = make_site("shard-single");
    ok(&["build", "--site", s(&single), "--package", s(&package), "--no-cache"]);

    // Two shards at once, as two job runners would run them, then the merge.
    let sharded = make_site("shard-merged");
    let partial = |i: usize| tmp(&format!("shard-{i}.sxs"));
    let runs: Vec<std::process::Child> = (0..2)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_sextant"))
                .args(["build", "--site", s(&sharded), "--no-cache", "--json", "--shard"])
                .arg(format!("{i}/2"))
                .arg("--partial")
                .arg(partial(i))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut in_share = 0;
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(summary["pages"], 12);
        in_share += summary["pages_in_share"].as_u64().unwrap();
    }
    assert_eq!(in_share, 12, "every page in exactly one share");
    assert!(
        !sharded.join("sextant").exists(),
        "a shard writes nothing into the site"
    );
    let merge = |extra: &[&str]| {
        let mut args = vec!["merge", "--site", s(&sharded), "--package", s(&package)];
        args.extend_from_slice(extra);
        sextant(&args)
    };
    let (p0, p1) = (partial(0), partial(1));
    let failed = |out: Output| {
        assert!(!out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let out = merge(&[s(&p0), s(&p1)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (want, got) = (tree(&single.join("sextant")), tree(&sharded.join("sextant")));
    assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (name, bytes) in &want {
        assert!(
            &got[name] == bytes,
            "{name} differs between the single and the merged build"
        );
    }

    // A missing shard is named; a shard of another configuration is refused with what differs.
    let e = failed(merge(&[s(&p1)]));
    assert!(e.contains("shard 0/2 is missing"), "{e}");
    let config = tmp("shard-config.toml");
    std::fs::write(&config, "[chunking]\nchunk_size = 100\n").unwrap();
    let e = failed(merge(&["--config", s(&config), s(&p0), s(&p1)]));
    assert!(e.contains("chunking.chunk_size: 100 here, 200 in the shard"), "{e}");
    // A truncated partial is a typed error naming the file.
    let bytes = std::fs::read(&p1).unwrap();
    std::fs::write(&p1, &bytes[..bytes.len() - 7]).unwrap();
    let e = failed(merge(&[s(&p0), s(&p1)]));
    assert!(e.contains("shard-1.sxs") && e.contains("truncated or damaged"), "{e}");
    // A partial is never written inside the site.
    let e = fails(&[
        "build",
        "--site",
        s(&sharded),
        "--shard",
        "0/2",
        "--partial",
        s(&sharded.join("p.sxs")),
    ]);
    assert!(e.contains("inside the site"), "{e}");
}

#[test]
fn filters_sort_and_counts_from_pagefind_attributes_reach_search() {
    let site = tmp("faceted-site");
    let _ = std::fs::remove_dir_all(&site);
    let pages = [
        (
            "guide/index.html",
            "guide",
            "2024-03-01",
            "The lamp is lit at dusk by the keeper.",
        ),
        (
            "api/index.html",
            "api",
            "2023-01-15",
            "The lamp API turns the lamp on and off.",
        ),
        (
            "news/index.html",
            "news",
            "2025-07-30",
            "A new lamp was fitted to the north tower.",
        ),
    ];
    for (path, section, date, text) in pages {
        let file = site.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let html = format!(
            "<html><head><meta data-pagefind-sort=\"date[content]\" content=\"{date}\"></head><body><main data-pagefind-body>\
             <h1>{section}</h1><span data-pagefind-filter=\"section\">{section}</span>\
             <span data-pagefind-filter=\"tower:north\"></span><p data-pagefind-meta=\"author:Ada\">{text}</p></main></body></html>"
        );
        std::fs::write(file, html).unwrap();
    }
    let package = fake_package();
    ok(&["build", "--site", s(&site), "--package", s(&package), "--no-cache"]);
    let site_manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("sextant/sextant.json")).unwrap()).unwrap();
    let index = site.join("sextant").join(site_manifest["index"].as_str().unwrap());
    let search = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["search", s(&index), "lamp", "--mode", "keyword", "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let urls = |v: &serde_json::Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["url"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(urls(&search(&["--filter", "section=api"])), ["/api/"]);
    let not_api = urls(&search(&["--filter", "section!=api"]));
    assert_eq!(not_api.len(), 2, "{not_api:?}");
    assert!(!not_api.contains(&"/api/".to_string()));
    assert!(
        urls(&search(&["--filter", "section=api", "--filter", "section=news"])).is_empty(),
        "both needed"
    );
    assert_eq!(urls(&search(&["--sort", "date:desc"])), ["/news/", "/guide/", "/api/"]);
    assert_eq!(urls(&search(&["--sort", "date"])), ["/api/", "/guide/", "/news/"]);
    let counted = search(&["--filter-counts", "--filter", "tower=north"]);
    assert_eq!(counted["filter_counts"]["section"]["api"], 1);
    assert_eq!(counted["filter_counts"]["tower"]["north"], 3);
    assert_eq!(counted["results"][0]["metadata"]["author"], "Ada");
    assert!(search(&[])["filter_counts"].is_null(), "not asked");
    let text = ok(&["search", s(&index), "lamp", "--mode", "keyword", "--filter-counts"]);
    assert!(text.contains("filter section: api (1), guide (1), news (1)"), "{text}");
    let err = fails(&["search", s(&index), "lamp", "--filter", "section"]);
    assert!(err.contains("NAME=VALUE"), "{err}");
    let err = fails(&["search", s(&index), "lamp", "--sort", "date:up"]);
    assert!(err.contains("asc or desc"), "{err}");
}

/// A site in three languages: an index each, with its language's analyzer, named in sextant.json;
/// each found by words of its language (a French plural stemmed, Japanese by character pairs); a
/// sharded build of it is refused with what to do.
#[test]
fn a_site_in_several_languages_gets_an_index_per_language() {
    let site = tmp("languages-site");
    let _ = std::fs::remove_dir_all(&site);
    for (path, lang, html) in [
        (
            "en/a.html",
            "en",
            "<h1>Lighthouses</h1><p>The lamp turns at dusk and the horn sounds in fog.</p>",
        ),
        (
            "en/b.html",
            "en-GB",
            "<h1>Harbours</h1><p>Pilots bring ships to their berths.</p>",
        ),
        (
            "fr/a.html",
            "fr",
            "<h1>Les phares</h1><p>Les recherches sur les lanternes des phares.</p>",
        ),
        (
            "ja/a.html",
            "ja",
            "<h1>灯台</h1><p>灯台の光は夕暮れに回ります。全文検索の索引です。</p>",
        ),
    ] {
        let file = site.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            file,
            format!("<html lang=\"{lang}\"><body><main>{html}</main></body></html>"),
        )
        .unwrap();
    }
    let package = fake_package();
    let summary: serde_json::Value =
        serde_json::from_str(&ok(&["build", "--site", s(&site), "--package", s(&package), "--json"])).unwrap();
    assert_eq!(summary["languages"], serde_json::json!({"en": 2, "fr": 1, "ja": 1}));
    assert_eq!(summary["pages_indexed"], 4);
    let entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("sextant/sextant.json")).unwrap()).unwrap();
    assert_eq!(entry["language"], "en");
    assert_eq!(entry["index"], entry["languages"]["en"]);
    let manifest = |code: &str| site.join("sextant").join(entry["languages"][code].as_str().unwrap());
    let analyzer = |code: &str| -> String {
        let m: serde_json::Value = serde_json::from_slice(&std::fs::read(manifest(code)).unwrap()).unwrap();
        m["analyzer"].as_str().unwrap().to_string()
    };
    assert_eq!(analyzer("en"), "uax29-identifier_parts-lower-nltk_en_stop-snowball_en");
    assert_eq!(analyzer("fr"), "uax29-identifier_parts-lower-nltk_fr_stop-snowball_fr");
    assert_eq!(analyzer("ja"), "uax29-identifier_parts-lower-cjk_bigrams");
    let first = |code: &str, query: &str| -> String {
        let out: serde_json::Value = serde_json::from_str(&ok(&[
            "search",
            s(&manifest(code)),
            query,
            "--mode",
            "keyword",
            "--json",
        ]))
        .unwrap();
        out["results"][0]["doc_id"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(first("fr", "recherche lanterne"), "fr/a.html");
    assert_eq!(first("ja", "索引"), "ja/a.html");
    assert_eq!(first("en", "lamps"), "en/a.html");
    // Each index holds its own language's pages only.
    assert_eq!(first("en", "recherches"), "");
    let partial = tmp("languages-shard.sxs");
    let e = fails(&["build", "--site", s(&site), "--shard", "0/2", "--partial", s(&partial)]);
    assert!(
        e.contains("in 3 languages (en, fr, ja)") && e.contains("--include"),
        "{e}"
    );
}
