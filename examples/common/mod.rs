//! What the examples that read a built site's split index as a browser does share
//! (`filter_probe`, `session_bytes`).

use std::collections::HashMap;
use std::path::Path;

use sextant::index::IndexManifest;
use sextant::search::Engine;

pub type Error = Box<dyn std::error::Error>;

/// The manifest at `path` (a site's `sextant/index/manifest.*.json`) and every file of its
/// folder, by name.
pub fn split_index(path: &Path) -> Result<(IndexManifest, HashMap<String, Vec<u8>>), Error> {
    let mut files = HashMap::new();
    for entry in std::fs::read_dir(path.parent().ok_or("the manifest has no folder")?)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            files.insert(
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path())?,
            );
        }
    }
    Ok((IndexManifest::from_json(&std::fs::read(path)?)?, files))
}

/// The bytes of object or page `name`: its own file, or its range of a pack (what a Range
/// request moves).
#[allow(dead_code)] // Not every example that shares this module reads objects one by one.
pub fn object(engine: &Engine, files: &HashMap<String, Vec<u8>>, name: &str) -> Result<Vec<u8>, Error> {
    if let Some(bytes) = files.get(name) {
        return Ok(bytes.clone());
    }
    let (pack, at) = engine.locate(name).ok_or_else(|| format!("{name} is in no pack"))?;
    let bytes = files.get(pack).ok_or_else(|| format!("{pack} is missing"))?;
    let start = usize::try_from(at.offset)?;
    Ok(bytes[start..start + usize::try_from(at.len)?].to_vec())
}
