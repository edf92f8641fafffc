//! Reading `sextant.toml`: the one place the CLI turns a config file into the core's
//! [`BuildConfig`].

use std::path::Path;

use anyhow::{Context, Result};
use sextant::config::BuildConfig;

/// Reads `sextant.toml` (or the defaults when no file is given). Unknown keys are errors.
pub fn read_config(path: Option<&Path>) -> Result<BuildConfig> {
    let Some(path) = path else {
        return Ok(BuildConfig::default());
    };
    let text = std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
    toml::from_str(&text).map_err(|e| {
        // Format 2 has no HNSW graph: say what replaced the section rather than only that it is
        // unknown.
        let hint = if text.lines().any(|l| l.trim() == "[hnsw]") {
            "; [hnsw] is gone since index format 2 (no graph: binary codes then int8 rescoring), its place taken by [layout] (see `rescore`)"
        } else {
            ""
        };
        anyhow::anyhow!(
            "invalid config {}: {}{hint}; see the README's configuration section for the keys",
            path.display(),
            e.to_string().trim_end()
        )
    })
}
