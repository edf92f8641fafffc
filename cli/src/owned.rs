//! What `sextant build --site` may change in a user's site: only the files it wrote itself and
//! recorded in its entry manifest (`sextant/sextant.json`: `files`, and the hash of the service
//! worker it put at the site's root). Everything is checked before anything changes: the output
//! folder must be a real folder (never a link out of the site), hold no link, and hold nothing
//! sextant did not record; a `sextant-sw.js` at the root must be the one sextant wrote. Then, after
//! the new build is in place, only the files of the old record that the new one no longer lists
//! are removed, and the folders their removal empties.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use sextant::digest::sha256_hex;

/// The files the previous build recorded, from its entry manifest.
#[derive(Debug, Default, Deserialize)]
struct Record {
    /// Paths under the output folder, `/`-separated.
    #[serde(default)]
    files: Vec<String>,
    /// SHA-256 of the service worker written at the site's root.
    #[serde(default)]
    service_worker_sha256: Option<String>,
}

/// The previous build's record, checked against what is on disk.
#[derive(Debug)]
pub struct Owned {
    out: PathBuf,
    files: BTreeSet<String>,
    service_worker_sha256: Option<String>,
}

/// How many unknown files an error names.
const NAMED: usize = 8;

/// Paths under `out` as a record spells them.
fn rel(out: &Path, path: &Path) -> String {
    crate::inputs::rel_string(path.strip_prefix(out).unwrap_or(path))
}

impl Owned {
    /// Checks the output folder `out` (inside `site`) and the service worker path `sw` before a
    /// build writes anything, with `manifest` the entry manifest's name inside `out`.
    pub fn check(site: &Path, out: &Path, manifest: &str, sw: &Path, new_sw: &[u8]) -> Result<Self> {
        let mut owned = Owned {
            out: out.to_path_buf(),
            files: BTreeSet::new(),
            service_worker_sha256: None,
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
            Ok(_) => owned.read_record(manifest)?,
        }
        owned.check_contents(site)?;
        owned.check_service_worker(sw, new_sw)?;
        Ok(owned)
    }

    fn read_record(&mut self, manifest: &str) -> Result<()> {
        let path = self.out.join(manifest);
        let Ok(bytes) = std::fs::read(&path) else {
            return Ok(());
        };
        let record: Record = serde_json::from_slice(&bytes).unwrap_or_default();
        if !record.files.is_empty() {
            self.files = record.files.into_iter().collect();
            self.files.insert(manifest.to_string());
        }
        self.service_worker_sha256 = record.service_worker_sha256;
        Ok(())
    }

    /// Every entry under the output folder: no links, and no file the record does not list.
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
            if entry.file_type().is_file() && !self.files.contains(&rel(&self.out, entry.path())) {
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
        if Some(&hash) == self.service_worker_sha256.as_ref() || hash == sha256_hex(new_sw) {
            return Ok(());
        }
        bail!(
            "{} exists and sextant did not write it; sextant puts its offline service worker there: rename yours (or remove it) and build again (nothing was changed)",
            sw.display()
        )
    }

    /// After the new build is in place (its entry manifest written last): removes the files the
    /// old record lists and the new one (`keep`, paths under the output folder) does not, and the
    /// folders that leaves empty. Returns how many files were removed.
    pub fn remove_stale(&self, keep: &BTreeSet<String>) -> Result<usize> {
        let mut removed = 0;
        let mut folders = BTreeSet::new();
        for name in self.files.difference(keep) {
            let path = self.out.join(name);
            // Recorded names are relative paths of plain parts; anything else is not ours.
            if name.split('/').any(|p| p.is_empty() || p == "." || p == "..") {
                continue;
            }
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_file() => {
                    std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                    removed += 1;
                    let mut parent = path.parent();
                    while let Some(dir) = parent.filter(|d| *d != self.out && d.starts_with(&self.out)) {
                        folders.insert(dir.to_path_buf());
                        parent = dir.parent();
                    }
                }
                _ => {}
            }
        }
        // Deepest first: a folder emptied by its children's removal goes too.
        for dir in folders.iter().rev() {
            if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
                std::fs::remove_dir(dir).with_context(|| format!("removing {}", dir.display()))?;
            }
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

    #[test]
    fn a_folder_of_the_users_is_refused_before_anything_changes() {
        let site = tmp("users");
        let out = site.join("sextant");
        write(&out.join("index.html"), "<p>mine</p>");
        write(&out.join("img/logo.png"), "png");
        let e = Owned::check(&site, &out, "sextant.json", &site.join("sextant-sw.js"), b"sw").unwrap_err();
        let message = format!("{e:#}");
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
            &out.join("sextant.json"),
            r#"{"files": ["index/a.bin", "pkg.1/ui/w.js", "keep.js", "../../outside"]}"#,
        );
        write(&site.join("outside"), "not ours");
        let owned = Owned::check(&site, &out, "sextant.json", &site.join("sextant-sw.js"), b"sw").unwrap();
        let keep: BTreeSet<String> = ["keep.js", "sextant.json"].map(String::from).into();
        assert_eq!(owned.remove_stale(&keep).unwrap(), 2);
        assert!(!out.join("pkg.1").exists() && !out.join("index").exists());
        assert!(out.join("keep.js").is_file() && site.join("outside").is_file());
    }

    #[test]
    fn links_and_other_service_workers_are_refused() {
        let site = tmp("links");
        let elsewhere = tmp("elsewhere");
        write(&elsewhere.join("precious.txt"), "x");
        std::os::unix::fs::symlink(&elsewhere, site.join("sextant")).unwrap();
        let sw = site.join("sextant-sw.js");
        let e = Owned::check(&site, &site.join("sextant"), "sextant.json", &sw, b"sw").unwrap_err();
        assert!(e.to_string().contains("is a link"), "{e}");
        std::fs::remove_file(site.join("sextant")).unwrap();
        std::fs::create_dir(site.join("sextant")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, site.join("sextant/index")).unwrap();
        let e = Owned::check(&site, &site.join("sextant"), "sextant.json", &sw, b"sw").unwrap_err();
        assert!(e.to_string().contains("link inside"), "{e}");
        std::fs::remove_file(site.join("sextant/index")).unwrap();
        write(&sw, "self.addEventListener('fetch', mine)");
        let e = Owned::check(&site, &site.join("sextant"), "sextant.json", &sw, b"sw").unwrap_err();
        assert!(e.to_string().contains("did not write it"), "{e}");
        // The same bytes sextant would write are not the user's.
        assert!(Owned::check(
            &site,
            &site.join("sextant"),
            "sextant.json",
            &sw,
            b"self.addEventListener('fetch', mine)"
        )
        .is_ok());
        assert!(elsewhere.join("precious.txt").is_file());
    }
}
