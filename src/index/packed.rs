//! The packed form of a format-2 index: one `.sxt` file for the CLI, Node and tests, holding the
//! same manifest and files as the split form. It is the container of `crate::container` (magic,
//! versions, section table, SHA-256 digests) with major 2 and two sections: the manifest (JSON,
//! id 1) and the files (id 6: a directory of names and lengths, then the files' bytes in that
//! order). Each file is checked against its name's hash as it is added to the store.

use crate::codec::{put_string, put_varint, ByteReader};
use crate::container::{self, Container, SectionEntry, SectionId};

use super::error::IndexError;
use super::manifest::{IndexManifest, INDEX_MAJOR, OLDEST_READABLE_MAJOR};
use super::store::IndexStore;

/// Packs a manifest and its files into one `.sxt`.
pub fn pack(manifest: &IndexManifest, files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, IndexError> {
    let json = serde_json::to_vec(manifest).map_err(|e| IndexError::BadSection {
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
    Ok(container::write(
        INDEX_MAJOR,
        manifest.format.minor,
        &[(SectionId::Manifest as u32, json), (SectionId::Files as u32, directory)],
    ))
}

/// A packed index's pieces as stored, its container verified but nothing decoded: what
/// `sextant unpack` writes out and `sextant inspect` lists.
#[derive(Debug)]
pub struct Packed<'a> {
    /// Format major and minor of the container.
    pub version: (u16, u16),
    /// The section table.
    pub sections: Vec<SectionEntry>,
    /// The manifest's JSON bytes.
    pub manifest: &'a [u8],
    /// Each file's name and bytes, in stored order.
    pub files: Vec<(&'a str, &'a [u8])>,
}

impl<'a> Packed<'a> {
    /// Reads the container and the files' directory. A format-1 bundle fails with
    /// `NeedsUpgrade`, naming the command that converts it.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, IndexError> {
        let raw = Container::parse(bytes, OLDEST_READABLE_MAJOR..=INDEX_MAJOR)?;
        if raw.major < INDEX_MAJOR {
            return Err(IndexError::NeedsUpgrade {
                major: raw.major,
                minor: raw.minor,
            });
        }
        let manifest = raw.section(SectionId::Manifest)?;
        let bad = |reason: String| IndexError::BadSection {
            section: "files",
            reason,
        };
        let mut r = ByteReader::new(raw.section(SectionId::Files)?);
        // Each entry takes at least 2 bytes (a name's length and a file's), so a count the
        // directory cannot back fails here, before anything is allocated for it.
        let count = r.count("file count", 2).map_err(|e| bad(e.to_string()))?;
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let name = r.string("file name").map_err(|e| bad(e.to_string()))?;
            let len = r.count("file length", 0).map_err(|e| bad(e.to_string()))?;
            entries.push((name, len));
        }
        let mut files = Vec::with_capacity(count);
        let mut seen = std::collections::HashSet::new();
        for (name, len) in entries {
            if !seen.insert(name) {
                return Err(bad(format!("{name} appears twice")));
            }
            files.push((name, r.take(len).map_err(|e| bad(format!("{name}: {e}")))?));
        }
        r.finish("files trailing bytes").map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            version: (raw.major, raw.minor),
            sections: raw.sections,
            manifest,
            files,
        })
    }
}

/// Reads a packed index: the container, the manifest, then every file into a store, which must
/// end up complete.
pub fn unpack(bytes: &[u8]) -> Result<IndexStore, IndexError> {
    let packed = Packed::parse(bytes)?;
    let mut store = IndexStore::new(IndexManifest::from_json(packed.manifest)?);
    store.load_files(packed.files.iter().copied())?;
    if let Some((name, _)) = packed.files.iter().find(|(n, _)| !store.knows(n)) {
        return Err(IndexError::UnknownFile { file: name.to_string() });
    }
    if !store.is_complete() {
        return Err(IndexError::BadSection {
            section: "files",
            reason: "some files the manifest lists are missing".into(),
        });
    }
    Ok(store)
}
