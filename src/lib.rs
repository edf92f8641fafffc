//! sextant: hybrid (meaning + keyword) retrieval that runs where the reader is — in the browser,
//! at the edge and offline.
//!
//! The pure core: no files, clocks, environment, threads or global randomness. See
//! `docs/ARCHITECTURE.md` for how the modules fit together and `docs/FORMAT.md` for the index format.
#![warn(missing_docs)]

/// Names for a fieldless enum, as options, flags and reports spell them:
/// `NAMES` (in variant order), `name()`, `from_name()` and `Display`. Each enum's `FromStr` maps
/// `from_name`'s `None` to its own error.
macro_rules! named_enum {
    ($t:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $t {
            /// The names, as options and flags take them.
            pub const NAMES: [&'static str; [$($name),+].len()] = [$($name),+];

            /// Its name in options and reports.
            pub fn name(self) -> &'static str {
                match self {
                    $($t::$variant => $name),+
                }
            }

            /// The variant with this name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($name => Some($t::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

pub mod analyzer;
pub mod bm25;
pub mod chunk;
pub mod cite;
pub mod codec;
#[cfg(feature = "collection")]
pub mod collection;
pub mod config;
pub mod container;
pub mod defaults;
pub mod digest;
pub mod embed;
pub mod error_code;
pub mod eval;
pub mod filters;
#[cfg(feature = "indexer")]
pub mod format1;
pub mod frame;
pub mod fusion;
#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod graph;
pub mod index;
#[cfg(feature = "collection")]
pub mod indexer;
#[cfg(feature = "loaders")]
pub mod loader;
pub mod options;
pub mod prompt;
pub mod research;
pub mod search;
pub mod tools;
pub mod url;
pub mod vecmath;
#[cfg(target_arch = "wasm32")]
pub mod wasm;

/// The default model for the core's own tests (all-MiniLM-L6-v2 int8, the pinned files that
/// `make model` fetches): loaded once from `$SEXTANT_MODEL_DIR`, else the cache.
#[cfg(all(test, feature = "model", not(target_arch = "wasm32")))]
pub(crate) fn test_model() -> std::sync::Arc<embed::TractEmbedder> {
    static MODEL: std::sync::OnceLock<std::sync::Arc<embed::TractEmbedder>> = std::sync::OnceLock::new();
    MODEL
        .get_or_init(|| {
            let dir = std::env::var_os("SEXTANT_MODEL_DIR").map_or_else(
                || {
                    std::path::Path::new(&std::env::var_os("HOME").expect("HOME is set"))
                        .join(".cache/sextant/models/minilm-l6-v2-int8")
                },
                std::path::PathBuf::from,
            );
            let read = |name: &str| {
                std::fs::read(dir.join(name))
                    .unwrap_or_else(|e| panic!("{}: {e}; run `make model` first", dir.join(name).display()))
            };
            let model = embed::TractEmbedder::from_bytes(
                &read("model.onnx"),
                &read("tokenizer.json"),
                &embed::ModelOptions::default(),
            )
            .expect("the default model loads");
            std::sync::Arc::new(model)
        })
        .clone()
}
