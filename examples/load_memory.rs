//! Memory of loading the model (native: VmRSS and peak VmHWM from /proc) and embed speed.
//! `cargo run --release --example load_memory -- <model dir> [f32|int8]`
use sextant::embed::{ModelOptions, TractEmbedder, Weights};

fn status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or("")
        .to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model = std::fs::read(format!("{}/model.onnx", args[1])).unwrap();
    let tokenizer = std::fs::read(format!("{}/tokenizer.json", args[1])).unwrap();
    println!("before: {} {}", status("VmRSS"), status("VmHWM"));
    let weights: Weights = args.get(2).map_or(Ok(Weights::F32), |w| w.parse()).unwrap();
    let e = TractEmbedder::from_vec_with(model, &tokenizer, &ModelOptions::default(), weights).unwrap();
    println!("after load: {} {}", status("VmRSS"), status("VmHWM"));
    let t = std::time::Instant::now();
    for _ in 0..20 {
        let _ = sextant::embed::Embedder::embed(
            &e,
            "what similarity laws must be obeyed when constructing aeroelastic models",
            sextant::embed::TextKind::Query,
        );
    }
    println!("embed: {:.1} ms each", t.elapsed().as_secs_f64() * 1000.0 / 20.0);
    println!("after embed: {} {}", status("VmRSS"), status("VmHWM"));
}
