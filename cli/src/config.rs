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
        anyhow::anyhow!(
            "invalid config {}: {}; see the README's configuration section for the keys",
            path.display(),
            e.to_string().trim_end()
        )
    })
}
