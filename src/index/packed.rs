//! The packed form of a format-2 index: one `.sxt` file for the CLI, Node and tests, holding the
//! same manifest and files as the split form. It is the container of `crate::bundle` (magic,
//! versions, section table, SHA-256 digests) with major 2 and two sections: the manifest (JSON,
//! id 1) and the files (id 6: a directory of names and lengths, then the files' bytes in that
//! order). Each file is checked against its name's hash as it is added to the store.

use crate::bundle::{write_container_version, BundleError, RawBundle, SectionId};
use crate::codec::{put_string, put_varint, ByteReader};

use super::{IndexManifest, IndexStore, INDEX_MAJOR, INDEX_MINOR};

/// Packs a manifest and its files into one `.sxt`.
pub fn pack(manifest: &IndexManifest, files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, BundleError> {
    let json = serde_json::to_vec(manifest).map_err(|e| BundleError::BadSection {
        section: "manifest",
        reason: e.to_string(),
    })?;
    let mut directory = Vec::new();
    put_varint(&mut directory, files.len() as u64);
    for (name, bytes) in files {
        put_string(&mut directory, name);
        put_varint(&mut directory, bytes.len() as u64);
    }
    for (_, bytes) in files {
        directory.extend_from_slice(bytes);
    }
    Ok(write_container_version(
        INDEX_MAJOR,
        INDEX_MINOR,
        &[(SectionId::Manifest as u32, json), (SectionId::Files as u32, directory)],
    ))
}

/// Reads a packed index: the container, the manifest, then every file into a store, which must
/// end up complete. A format-1 bundle fails with `NeedsUpgrade`, naming the command that
/// converts it.
pub fn unpack(bytes: &[u8]) -> Result<IndexStore, BundleError> {
    let raw = RawBundle::parse(bytes)?;
    if raw.major < INDEX_MAJOR {
        return Err(BundleError::NeedsUpgrade {
            major: raw.major,
            minor: raw.minor,
        });
    }
    let manifest = IndexManifest::from_json(raw.section(SectionId::Manifest)?)?;
    let files = raw.section(SectionId::Files)?;
    let bad = |reason: String| BundleError::BadSection {
        section: "files",
        reason,
    };
    let mut r = ByteReader::new(files);
    let count = r.count("file count", 2).map_err(|e| bad(e.to_string()))?;
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.string("file name").map_err(|e| bad(e.to_string()))?;
        let len = r.count("file length", 0).map_err(|e| bad(e.to_string()))?;
        entries.push((name, len));
    }
    let mut store = IndexStore::new(manifest);
    let mut seen = std::collections::HashSet::new();
    for (name, len) in entries {
        if !seen.insert(name) {
            return Err(bad(format!("{name} appears twice")));
        }
        let body = r.take(len).map_err(|e| bad(format!("{name}: {e}")))?;
        store.add(name, body)?;
    }
    r.finish("files trailing bytes").map_err(|e| bad(e.to_string()))?;
    if !store.is_complete() {
        return Err(bad("some files the manifest lists are missing".into()));
    }
    Ok(store)
}
