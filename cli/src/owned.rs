//! What `sextant build --site` may change in a user's site: only the files it wrote itself and
//! recorded. Its entry manifest (`sextant/sextant.json`) records every file a build wrote
//! (`files`), the SHA-256 of the files it rewrites in place (`fixed_sha256`: the UI's script and
//! stylesheet) and of the service worker at the site's root; while a build writes, a pending
//! record (`sextant/.sextant-pending.json`) lists what it is about to write, so an interrupted
//! build's files are still known as sextant's.
//!
//! Everything is checked before anything changes: the output folder must be a real folder (never
//! a link out of the site) holding no link and nothing sextant did not record; a file it rewrites
//! must still be as it wrote it; a `sextant-sw.js` at the root must be the one it wrote. Every
//! write and every removal checks again that no folder on its way is a link. After the new build
//! is in place, only the recorded files the new record no longer lists are removed (with the
//! temporary files of an interrupted write), and the folders their removal empties.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sextant::digest::sha256_hex;

use crate::indexing::write_atomically;

/// The entry manifest's name inside the output folder.
pub const ENTRY_MANIFEST: &str = "sextant.json";
/// The record of a build under way.
const PENDING: &str = ".sextant-pending.json";
/// How many unknown files an error names.
const NAMED: usize = 8;

/// What a build records about what it wrote (fields of the entry manifest; the pending record
/// uses `files` alone).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Record {
    /// Every file written under the output folder, `/`-separated, sorted (the entry manifest
    /// aside).
    #[serde(default)]
    pub files: Vec<String>,
    /// SHA-256 of each file rewritten in place on every build (not named by its content).
    #[serde(default)]
    pub fixed_sha256: BTreeMap<String, String>,
    /// SHA-256 of the service worker written at the site's root.
    #[serde(default)]
    pub service_worker_sha256: Option<String>,
}

/// A file a build writes under the output folder.
#[derive(Debug)]
pub struct Planned {
    /// Its path under the output folder, `/`-separated.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Whether its name holds its content's hash (a file already there is already right).
    pub hashed: bool,
}

/// The files an earlier build recorded, checked against what is on disk.
#[derive(Debug)]
pub struct Owned {
    out: PathBuf,
    record: Record,
    /// The recorded files and those of an interrupted build's pending record.
    files: BTreeSet<String>,
}

/// Paths under `out` as a record spells them.
fn rel(out: &Path, path: &Path) -> String {
    crate::inputs::rel_string(path.strip_prefix(out).unwrap_or(path))
}

/// Whether a recorded name is a plain relative path (no empty, `.` or `..` part, not absolute).
fn plain(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('/') && name.split('/').all(|p| !p.is_empty() && p != "." && p != "..")
}

/// Fails when `out` or any folder between it and `name` is a link (checked at the moment of use,
/// so a link put there since the first check is not followed).
fn no_link_on_the_way(out: &Path, name: &str) -> Result<()> {
    let mut at = out.to_path_buf();
    let mut parts: Vec<&str> = name.split('/').collect();
    parts.pop();
    for part in std::iter::once("").chain(parts) {
        if !part.is_empty() {
            at.push(part);
        }
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            bail!(
                "{} is a link; sextant never writes or removes through a link out of the site: remove the link and build again",
                at.display()
            );
        }
    }
    Ok(())
}

/// Whether `name` (under the output folder) is the temporary file of an interrupted write of one
/// of `files`: `.{file}.tmp-{pid}` beside it.
fn temporary_of(name: &str, files: &BTreeSet<String>) -> bool {
    let (dir, file) = name.rsplit_once('/').map_or(("", name), |(d, f)| (d, f));
    let Some((original, pid)) = file.strip_prefix('.').and_then(|f| f.rsplit_once(".tmp-")) else {
        return false;
    };
    let original = if dir.is_empty() {
        original.to_string()
    } else {
        format!("{dir}/{original}")
    };
    !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) && files.contains(&original)
}

impl Owned {
    /// Checks the output folder `out` (inside `site`) before a build writes anything: `sw` is
    /// the service worker's path and `new_sw` what will be written there, `fixed` the files
    /// rewritten in place with their new bytes.
    pub fn check(site: &Path, out: &Path, sw: &Path, new_sw: &[u8], fixed: &[(&str, &[u8])]) -> Result<Self> {
        let mut owned = Owned {
            out: out.to_path_buf(),
            record: Record::default(),
            files: BTreeSet::new(),
        };
        match std::fs::symlink_metadata(out) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading {}", out.display())),
            Ok(meta) if meta.file_type().is_symlink() => bail!(
                "{} is a link; sextant writes its search files into a real folder inside the site and never follows a link out of it: replace the link with a folder (or remove it) and build again",
                out.display()
            ),
            Ok(meta) if !meta.is_dir() => bail!(
                "{} is a file, not a folder; sextant writes its search files there: move the file and build again",
                out.display()
            ),
            Ok(_) => owned.read_records()?,
        }
        owned.check_contents(site)?;
        owned.check_fixed(fixed)?;
        owned.check_service_worker(sw, new_sw)?;
        Ok(owned)
    }

    /// Reads the entry manifest's record and a pending one; an unreadable record is an error
    /// that says so (its files would otherwise look like someone else's).
    fn read_records(&mut self) -> Result<()> {
        for (name, whole) in [(ENTRY_MANIFEST, true), (PENDING, false)] {
            let path = self.out.join(name);
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            let record: Record = serde_json::from_slice(&bytes).with_context(|| {
                format!(
                    "{} is not a record sextant can read; if the folder is an earlier sextant's output, delete it and build again",
                    path.display()
                )
            })?;
            self.files.extend(record.files.iter().filter(|f| plain(f)).cloned());
            self.files.insert(name.to_string());
            if whole {
                self.record = record;
            }
        }
        Ok(())
    }

    /// Every entry under the output folder: no links, and no file the records do not list.
    fn check_contents(&self, site: &Path) -> Result<()> {
        if !self.out.exists() {
            return Ok(());
        }
        let mut unknown = Vec::new();
        for entry in walkdir::WalkDir::new(&self.out).sort_by_file_name().min_depth(1) {
            let entry = entry.with_context(|| format!("walking {}", self.out.display()))?;
            let shown = rel(site, entry.path());
            if entry.path_is_symlink() {
                bail!(
                    "{shown} is a link inside sextant's output folder; sextant never follows a link out of the site: remove the link and build again"
                );
            }
            let name = rel(&self.out, entry.path());
            if entry.file_type().is_file() && !self.files.contains(&name) && !temporary_of(&name, &self.files) {
                unknown.push(shown);
            }
        }
        if !unknown.is_empty() {
            let more = unknown.len().saturating_sub(NAMED);
            let named: Vec<String> = unknown.into_iter().take(NAMED).collect();
            bail!(
                "{} holds files sextant did not write ({}{}); sextant writes its search files there and removes what it wrote before, so it will not touch a folder holding yours: move them out of {}, or delete the folder if it is the output of an older sextant (nothing was changed)",
                self.out.display(),
                named.join(", "),
                if more > 0 { format!(" and {more} more") } else { String::new() },
                self.out.display()
            );
        }
        Ok(())
    }

    /// A file rewritten in place must be as the last build wrote it (or already the new bytes).
    fn check_fixed(&self, fixed: &[(&str, &[u8])]) -> Result<()> {
        for (name, bytes) in fixed {
            let path = self.out.join(name);
            let Ok(on_disk) = std::fs::read(&path) else {
                continue;
            };
            let hash = sha256_hex(&on_disk);
            if hash == sha256_hex(bytes) || self.record.fixed_sha256.get(*name) == Some(&hash) {
                continue;
            }
            bail!(
                "{} was changed since sextant wrote it; sextant rewrites it on every build, so your changes would be lost: keep them in a file of your own (the UI takes CSS variables), restore the file or delete it, and build again (nothing was changed)",
                path.display()
            );
        }
        Ok(())
    }

    /// The service worker at the site's root is sextant's own (recorded, or the same bytes) or
    /// absent.
    fn check_service_worker(&self, sw: &Path, new_sw: &[u8]) -> Result<()> {
        let meta = match std::fs::symlink_metadata(sw) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("reading {}", sw.display())),
            Ok(meta) => meta,
        };
        if !meta.is_file() {
            bail!(
                "{} exists and is not a file sextant wrote; sextant puts its service worker there: move it and build again (nothing was changed)",
                sw.display()
            );
        }
        let hash = sha256_hex(&std::fs::read(sw).with_context(|| format!("reading {}", sw.display()))?);
        if Some(&hash) == self.record.service_worker_sha256.as_ref() || hash == sha256_hex(new_sw) {
            return Ok(());
        }
        bail!(
            "{} exists and sextant did not write it; sextant puts its offline service worker there: rename yours (or remove it) and build again (nothing was changed)",
            sw.display()
        )
    }

    /// Writes the planned files: first a pending record of them (with the earlier build's), then
    /// each file (one whose name holds its hash and exists is already right), every path checked
    /// for links at the moment it is written. Returns the record of what was written.
    pub fn write(&self, plan: &[Planned]) -> Result<Record> {
        std::fs::create_dir_all(&self.out).with_context(|| format!("creating {}", self.out.display()))?;
        no_link_on_the_way(&self.out, PENDING)?;
        let mut pending: BTreeSet<String> = self.files.clone();
        pending.extend(plan.iter().map(|p| p.name.clone()));
        let pending = Record {
            files: pending.into_iter().collect(),
            ..Record::default()
        };
        write_atomically(&self.out.join(PENDING), &serde_json::to_vec(&pending)?)?;
        let mut record = Record::default();
        for p in plan {
            if !plain(&p.name) {
                bail!(
                    "internal error: a planned file {:?} is not a plain relative path",
                    p.name
                );
            }
            no_link_on_the_way(&self.out, &p.name)?;
            let path = self.out.join(&p.name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
            }
            no_link_on_the_way(&self.out, &p.name)?;
            if !(p.hashed && path.is_file()) {
                write_atomically(&path, &p.bytes)?;
            }
            record.files.push(p.name.clone());
            if !p.hashed {
                record.fixed_sha256.insert(p.name.clone(), sha256_hex(&p.bytes));
            }
        }
        record.files.sort();
        record.files.dedup();
        Ok(record)
    }

    /// After the new build is in place (its entry manifest written last): removes the recorded
    /// files the new record (`keep`) no longer lists, the temporary files of interrupted writes,
    /// the folders that leaves empty, and the pending record. Returns how many files were
    /// removed.
    pub fn finish(&self, keep: &Record) -> Result<usize> {
        let keep: BTreeSet<&str> = keep
            .files
            .iter()
            .map(String::as_str)
            .chain([ENTRY_MANIFEST, PENDING])
            .collect();
        let mut stale: Vec<String> = self
            .files
            .iter()
            .filter(|f| plain(f) && !keep.contains(f.as_str()))
            .cloned()
            .collect();
        for entry in walkdir::WalkDir::new(&self.out).min_depth(1).into_iter().flatten() {
            let name = rel(&self.out, entry.path());
            if entry.file_type().is_file() && temporary_of(&name, &self.files) {
                stale.push(name);
            }
        }
        let mut removed = 0;
        let mut folders = BTreeSet::new();
        for name in &stale {
            no_link_on_the_way(&self.out, name)?;
            let path = self.out.join(name);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                removed += 1;
                let mut parent = path.parent();
                while let Some(dir) = parent.filter(|d| *d != self.out && d.starts_with(&self.out)) {
                    folders.insert(dir.to_path_buf());
                    parent = dir.parent();
                }
            }
        }
        // Deepest first: a folder emptied by its children's removal goes too.
        for dir in folders.iter().rev() {
            if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
                std::fs::remove_dir(dir).with_context(|| format!("removing {}", dir.display()))?;
            }
        }
        let pending = self.out.join(PENDING);
        if pending.exists() {
            std::fs::remove_file(&pending).with_context(|| format!("removing {}", pending.display()))?;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sextant-owned-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn plan(files: &[(&str, &str, bool)]) -> Vec<Planned> {
        files
            .iter()
            .map(|(name, text, hashed)| Planned {
                name: name.to_string(),
                bytes: text.as_bytes().to_vec(),
                hashed: *hashed,
            })
            .collect()
    }

    fn check(site: &Path) -> Result<Owned> {
        Owned::check(
            site,
            &site.join("sextant"),
            &site.join("sextant-sw.js"),
            b"sw",
            &[("ui.css", b"new css")],
        )
    }

    #[test]
    fn a_folder_of_the_users_is_refused_before_anything_changes() {
        let site = tmp("users");
        let out = site.join("sextant");
        write(&out.join("index.html"), "<p>mine</p>");
        write(&out.join("img/logo.png"), "png");
        let message = format!("{:#}", check(&site).unwrap_err());
        assert!(
            message.contains("sextant/img/logo.png, sextant/index.html"),
            "{message}"
        );
        assert!(message.contains("nothing was changed"), "{message}");
        assert!(out.join("index.html").is_file() && out.join("img/logo.png").is_file());
    }

    #[test]
    fn only_recorded_files_are_removed_and_the_folders_they_leave_empty() {
        let site = tmp("recorded");
        let out = site.join("sextant");
        write(&out.join("index/a.bin"), "a");
        write(&out.join("pkg.1/ui/w.js"), "w");
        write(&out.join("keep.js"), "k");
        write(
            &out.join(ENTRY_MANIFEST),
            r#"{"files": ["index/a.bin", "pkg.1/ui/w.js", "keep.js", "../../outside", "/etc/passwd"]}"#,
        );
        write(&site.join("outside"), "not ours");
        let owned = check(&site).unwrap();
        let record = owned.write(&plan(&[("keep.js", "k", true)])).unwrap();
        assert!(out.join(PENDING).is_file(), "the pending record is written first");
        assert_eq!(owned.finish(&record).unwrap(), 2);
        assert!(!out.join("pkg.1").exists() && !out.join("index").exists());
        assert!(out.join("keep.js").is_file() && site.join("outside").is_file());
        assert!(!out.join(PENDING).exists(), "and removed last");
    }

    #[test]
    fn an_interrupted_build_leaves_nothing_that_blocks_the_next() {
        let site = tmp("interrupted");
        let out = site.join("sextant");
        // A build that died after its pending record and some files, with a half-written file.
        write(
            &out.join(PENDING),
            r#"{"files": ["index/x.1234567890abcdef.bin", "ui.css"]}"#,
        );
        write(&out.join("index/x.1234567890abcdef.bin"), "x");
        write(&out.join("index/.x.1234567890abcdef.bin.tmp-4242"), "half");
        let owned = check(&site).unwrap();
        let record = owned.write(&plan(&[("ui.css", "new css", false)])).unwrap();
        owned.finish(&record).unwrap();
        assert!(
            !out.join("index").exists(),
            "the interrupted build's files and temporary file go"
        );
        assert_eq!(record.fixed_sha256.get("ui.css"), Some(&sha256_hex(b"new css")));
    }

    #[test]
    fn a_rewritten_file_the_user_changed_is_not_overwritten() {
        let site = tmp("edited");
        let out = site.join("sextant");
        write(&out.join("ui.css"), "old css");
        let recorded = format!(
            r#"{{"files": ["ui.css"], "fixed_sha256": {{"ui.css": "{}"}}}}"#,
            sha256_hex(b"old css")
        );
        write(&out.join(ENTRY_MANIFEST), &recorded);
        assert!(check(&site).is_ok(), "as sextant wrote it");
        write(&out.join("ui.css"), "my own css");
        let e = check(&site).unwrap_err();
        assert!(e.to_string().contains("was changed since sextant wrote it"), "{e}");
        assert_eq!(std::fs::read_to_string(out.join("ui.css")).unwrap(), "my own css");
        write(&out.join(ENTRY_MANIFEST), "{not json");
        let e = check(&site).unwrap_err();
        assert!(format!("{e:#}").contains("not a record sextant can read"), "{e:#}");
    }

    #[test]
    fn links_and_other_service_workers_are_refused() {
        let site = tmp("links");
        let elsewhere = tmp("elsewhere");
        write(&elsewhere.join("precious.txt"), "x");
        std::os::unix::fs::symlink(&elsewhere, site.join("sextant")).unwrap();
        let e = check(&site).unwrap_err();
        assert!(e.to_string().contains("is a link"), "{e}");
        std::fs::remove_file(site.join("sextant")).unwrap();
        std::fs::create_dir(site.join("sextant")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, site.join("sextant/index")).unwrap();
        let e = check(&site).unwrap_err();
        assert!(e.to_string().contains("link inside"), "{e}");
        // A link put in place after the check is caught when writing through it.
        std::fs::remove_file(site.join("sextant/index")).unwrap();
        let owned = check(&site).unwrap();
        std::os::unix::fs::symlink(&elsewhere, site.join("sextant/index")).unwrap();
        let e = owned.write(&plan(&[("index/a.bin", "a", true)])).unwrap_err();
        assert!(e.to_string().contains("is a link"), "{e}");
        assert!(!elsewhere.join("a.bin").exists());
        std::fs::remove_file(site.join("sextant/index")).unwrap();
        let sw = site.join("sextant-sw.js");
        write(&sw, "self.addEventListener('fetch', mine)");
        let e = check(&site).unwrap_err();
        assert!(e.to_string().contains("did not write it"), "{e}");
        assert!(elsewhere.join("precious.txt").is_file());
    }
}
