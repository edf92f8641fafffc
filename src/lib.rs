//! sextant: hybrid (meaning + keyword) retrieval that runs where the reader is — in the browser,
//! at the edge and offline.
//!
//! The pure core: no files, clocks, environment, threads or global randomness. See
//! `docs/ARCHITECTURE.md` for how the modules fit together and `docs/FORMAT.md` for the bundle.
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
pub mod digest;
pub mod embed;
pub mod error_code;
pub mod eval;
#[cfg(feature = "indexer")]
pub mod format1;
pub mod frame;
pub mod fusion;
#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod index;
#[cfg(feature = "collection")]
pub mod indexer;
#[cfg(feature = "loaders")]
pub mod loader;
pub mod options;
pub mod prompt;
pub mod search;
pub mod vecmath;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
