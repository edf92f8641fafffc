//! Collecting input files: directories walked recursively in sorted order (so builds are
//! reproducible), include/exclude globs applied to paths relative to each input.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use globset::{Glob, GlobSet, GlobSetBuilder};
use sextant::loader::FileKind;

/// A file to load.
#[derive(Debug, Clone)]
pub struct InputFile {
    /// Where it is on disk.
    pub path: PathBuf,
    /// Its id: the path relative to its input root, `/`-separated.
    pub rel: String,
}

/// A file passed over, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The file.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// The glob set of `patterns` (`None` when there are none); `what` names the option in errors.
pub fn glob_set(patterns: &[String], what: &str) -> Result<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        builder.add(Glob::new(p).with_context(|| format!("invalid {what} glob {p:?}"))?);
    }
    Ok(Some(builder.build()?))
}

/// A relative path's normal parts joined with `/` (what ids, records and globs are matched on).
pub fn rel_string(path: &Path) -> String {
    path.components()
        .filter_map(|c| match c {
            std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The files under `root`, in sorted order (so builds are reproducible), each with its path
/// relative to `root`. Hidden files and folders (a name starting with `.`) are passed over, and
/// so is every entry `skip` returns true for (with its contents). Links are not followed: a
/// link, to a file or a folder, is not listed.
pub fn walk(root: &Path, skip: impl Fn(&walkdir::DirEntry) -> bool) -> Result<Vec<InputFile>> {
    let walker = walkdir::WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !(e.file_name().to_string_lossy().starts_with('.') || skip(e)));
    let mut files = Vec::new();
    for entry in walker {
        let entry = entry.with_context(|| format!("walking {}", root.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        files.push(InputFile {
            rel: rel_string(entry.path().strip_prefix(root).unwrap_or(entry.path())),
            path: entry.path().to_path_buf(),
        });
    }
    Ok(files)
}

/// Refuses an output that is one of the inputs or inside one (`sextant build notes.md -o
/// notes.md` would replace the notes with index bytes), links resolved.
pub fn check_output(output: &Path, inputs: &[PathBuf]) -> Result<()> {
    let resolved = match std::fs::canonicalize(output) {
        Ok(path) => path,
        Err(_) => {
            let parent = output
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let name = output.file_name().context("the output path has no file name")?;
            match std::fs::canonicalize(parent) {
                Ok(dir) => dir.join(name),
                // A folder that does not exist holds no input; writing reports it.
                Err(_) => return Ok(()),
            }
        }
    };
    for input in inputs {
        let Ok(input_path) = std::fs::canonicalize(input) else {
            continue;
        };
        if resolved == input_path || resolved.starts_with(&input_path) {
            bail!(
                "the output {} is {} the input {}; writing the index there would replace what it is built from: choose an output outside the inputs",
                output.display(),
                if resolved == input_path { "the same file as" } else { "inside" },
                input.display()
            );
        }
    }
    Ok(())
}

/// Lists the files of `inputs`. Missing inputs are errors; files of unknown type are skipped
/// and reported.
pub fn collect(inputs: &[PathBuf], include: &[String], exclude: &[String]) -> Result<(Vec<InputFile>, Vec<Skipped>)> {
    if inputs.is_empty() {
        bail!("no inputs given; pass files or directories to index");
    }
    let include = glob_set(include, "--include")?;
    let exclude = glob_set(exclude, "--exclude")?;
    let wanted = |rel: &str| {
        include.as_ref().is_none_or(|g| g.is_match(rel)) && !exclude.as_ref().is_some_and(|g| g.is_match(rel))
    };
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input)
            .with_context(|| format!("input {} does not exist or cannot be read", input.display()))?;
        if meta.is_file() {
            let rel = rel_string(input);
            if FileKind::from_path(&rel).is_none() {
                skipped.push(Skipped {
                    path: input.display().to_string(),
                    reason: "unknown file type".into(),
                });
            } else {
                files.push(InputFile {
                    path: input.clone(),
                    rel,
                });
            }
            continue;
        }
        for file in walk(input, |_| false)? {
            if !wanted(&file.rel) {
                continue;
            }
            if FileKind::from_path(&file.rel).is_none() {
                skipped.push(Skipped {
                    path: file.path.display().to_string(),
                    reason: "unknown file type".into(),
                });
                continue;
            }
            files.push(file);
        }
    }
    Ok((files, skipped))
}
