//! Every input in the fuzzers' corpus (`fuzz/corpus/<target>/`) and every crash or timeout they
//! found (`fuzz/artifacts/<target>/`, kept after the fix) run again through the same target
//! bodies (`sextant::fuzzing`), natively, in `make test`: what a fuzzer once broke stays mended.
//! `make fuzz` grows the corpus (scripts/fuzz.sh).

use std::path::Path;

#[test]
fn every_corpus_input_and_found_crash_runs_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut ran = 0;
    for target in sextant::fuzzing::TARGETS {
        let mut inputs = 0;
        for dir in ["corpus", "artifacts"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
                continue;
            };
            let mut files: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
            files.sort();
            for file in files {
                let data = std::fs::read(&file).unwrap();
                let outcome = std::panic::catch_unwind(|| sextant::fuzzing::run(target, &data));
                assert!(matches!(outcome, Ok(true)), "{target} panicked on {}", file.display());
                inputs += 1;
            }
        }
        assert!(inputs > 0, "no corpus for {target}: run `make fuzz`");
        ran += inputs;
    }
    println!("{ran} inputs replayed");
}
