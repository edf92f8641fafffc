//! The rows of the tables a model gathers by its token ids (the word table and its per-row
//! scales), held whole or added file by file as texts need them: what `rows` cut a model into,
//! read back. Tract-free, so the tract runner (`rows::RowTables`) and the encoder (`bert`) hold
//! rows the same way, and a text's rows are the same bytes for both.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use super::EmbedError;
use crate::index::files::content_matches;

/// The most bytes one row of one table may hold (all-MiniLM: 384; a model 100 times wider fits).
pub(super) const MAX_ROW_BYTES: usize = 1 << 16;
/// The most bytes one row file may hold (all-MiniLM: 24.8 kB).
pub(super) const MAX_FILE_BYTES: usize = 1 << 24;

enum Source {
    /// Each table's bytes, every row (a whole model's, in the tract runner).
    #[cfg_attr(not(feature = "model"), allow(dead_code))]
    Whole(Vec<Vec<u8>>),
    /// Row files of `per_file` rows (the last holds the rest), each the rows of every table in
    /// turn, named by content; those added so far, by their place.
    Files {
        per_file: usize,
        names: Vec<String>,
        loaded: Mutex<HashMap<usize, Arc<[u8]>>>,
    },
}

/// The rows of one or more tables of equal row counts (see module docs).
pub(super) struct RowStore {
    /// Bytes of one row of each table, in the order of each file's blocks.
    row_bytes: Vec<usize>,
    rows: usize,
    source: Source,
}

impl std::fmt::Debug for RowStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowStore")
            .field("row_bytes", &self.row_bytes)
            .field("rows", &self.rows)
            .field("in_files", &self.in_files())
            .finish()
    }
}

fn damaged(name: &str, len: usize) -> EmbedError {
    EmbedError::BadModel {
        reason: format!(
            "the row file {name} holds {len} bytes that are not what its name promises (a damaged or truncated download); deploy the site's sextant/ folder again"
        ),
    }
}

impl RowStore {
    /// Tables held whole: `data[i]` is every row of the table whose rows are `row_bytes[i]` bytes.
    #[cfg_attr(not(feature = "model"), allow(dead_code))]
    pub(super) fn whole(row_bytes: Vec<usize>, rows: usize, data: Vec<Vec<u8>>) -> Result<Self, String> {
        if row_bytes.is_empty() || row_bytes.len() != data.len() {
            return Err(format!("{} tables with {} row sizes", data.len(), row_bytes.len()));
        }
        for (&bytes, table) in row_bytes.iter().zip(&data) {
            if bytes > MAX_ROW_BYTES || rows.checked_mul(bytes) != Some(table.len()) {
                return Err(format!(
                    "a table of {rows} rows of {bytes} bytes holds {} bytes",
                    table.len()
                ));
            }
        }
        Ok(Self {
            row_bytes,
            rows,
            source: Source::Whole(data),
        })
    }

    /// Tables whose rows come in the files `names`, `per_file` rows each, added later
    /// ([`RowStore::add_file`]).
    pub(super) fn files(
        row_bytes: Vec<usize>,
        rows: usize,
        per_file: usize,
        names: Vec<String>,
    ) -> Result<Self, String> {
        if row_bytes.is_empty() || row_bytes.iter().any(|&b| b > MAX_ROW_BYTES) {
            return Err(format!("rows of {row_bytes:?} bytes"));
        }
        if per_file == 0 || names.len() != rows.div_ceil(per_file) {
            return Err(format!(
                "{} row files named for {rows} rows of {per_file} a file",
                names.len()
            ));
        }
        let file_row: usize = row_bytes.iter().sum();
        if per_file.checked_mul(file_row).is_none_or(|n| n > MAX_FILE_BYTES) {
            return Err(format!(
                "row files of {per_file} rows of {file_row} bytes, more than {MAX_FILE_BYTES} bytes a file"
            ));
        }
        Ok(Self {
            row_bytes,
            rows,
            source: Source::Files {
                per_file,
                names,
                loaded: Mutex::new(HashMap::new()),
            },
        })
    }

    /// Whether the rows come from row files.
    pub(super) fn in_files(&self) -> bool {
        matches!(self.source, Source::Files { .. })
    }

    /// The rows of `ids`' distinct values, each table's bytes, and the ids renumbered into them
    /// (in order of first appearance). Names the row files still missing, if any.
    pub(super) fn gather(&self, ids: &[u32]) -> Result<(Vec<u32>, Vec<Vec<u8>>), EmbedError> {
        let mut distinct: Vec<u32> = Vec::new();
        let mut number: HashMap<u32, u32> = HashMap::new();
        let renumbered: Vec<u32> = ids
            .iter()
            .map(|&id| {
                *number.entry(id).or_insert_with(|| {
                    distinct.push(id);
                    (distinct.len() - 1) as u32
                })
            })
            .collect();
        if let Some(&id) = distinct.iter().find(|&&id| id as usize >= self.rows) {
            return Err(EmbedError::Run {
                reason: format!("token id {id} is outside the model's table of {} rows", self.rows),
            });
        }
        // Rows are at most MAX_ROW_BYTES each and a text has at most the model window's ids.
        let mut bytes: Vec<Vec<u8>> = self
            .row_bytes
            .iter()
            .map(|&b| Vec::with_capacity(distinct.len().saturating_mul(b)))
            .collect();
        match &self.source {
            Source::Whole(data) => {
                for &id in &distinct {
                    let id = id as usize;
                    for ((&b, out), data) in self.row_bytes.iter().zip(&mut bytes).zip(data) {
                        out.extend_from_slice(&data[id * b..(id + 1) * b]);
                    }
                }
            }
            Source::Files {
                per_file,
                names,
                loaded,
                ..
            } => {
                let loaded = loaded.lock().map_err(|_| EmbedError::Run {
                    reason: "the model's rows were poisoned by an earlier panic; reload".into(),
                })?;
                let missing: BTreeSet<usize> = distinct
                    .iter()
                    .map(|&id| id as usize / per_file)
                    .filter(|f| !loaded.contains_key(f))
                    .collect();
                if !missing.is_empty() {
                    return Err(EmbedError::MissingRows {
                        files: missing.into_iter().map(|f| names[f].clone()).collect(),
                    });
                }
                for &id in &distinct {
                    let (f, i) = (id as usize / per_file, id as usize % per_file);
                    let in_file = self.rows_in_file(f, *per_file);
                    let file = &loaded[&f];
                    let mut offset = 0;
                    for (&b, out) in self.row_bytes.iter().zip(&mut bytes) {
                        let at = offset + i * b;
                        out.extend_from_slice(&file[at..at + b]);
                        offset += in_file * b;
                    }
                }
            }
        }
        Ok((renumbered, bytes))
    }

    fn rows_in_file(&self, file: usize, per_file: usize) -> usize {
        per_file.min(self.rows - file * per_file)
    }

    /// Adds a row file the model named: `Ok(false)` if `name` is none of its row files; an error
    /// if the bytes are not what the name promises (a damaged or truncated download).
    pub(super) fn add_file(&self, name: &str, bytes: &[u8]) -> Result<bool, EmbedError> {
        let Source::Files {
            per_file,
            names,
            loaded,
            ..
        } = &self.source
        else {
            return Ok(false);
        };
        // Files are named by content: two blocks of equal rows share a name, and one file fills both.
        let places: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, n)| *n == name)
            .map(|(f, _)| f)
            .collect();
        if places.is_empty() {
            return Ok(false);
        }
        if !content_matches(name, bytes) {
            return Err(damaged(name, bytes.len()));
        }
        let file_row: usize = self.row_bytes.iter().sum();
        for &f in &places {
            // At most MAX_FILE_BYTES (checked when the store was made): no overflow.
            if bytes.len() != self.rows_in_file(f, *per_file) * file_row {
                return Err(damaged(name, bytes.len()));
            }
        }
        let bytes: Arc<[u8]> = Arc::from(bytes);
        if let Ok(mut loaded) = loaded.lock() {
            for f in places {
                loaded.entry(f).or_insert_with(|| bytes.clone());
            }
        }
        Ok(true)
    }

    /// Every row file's name (empty for tables held whole).
    pub(super) fn file_names(&self) -> Vec<String> {
        match &self.source {
            Source::Whole(_) => Vec::new(),
            Source::Files { names, .. } => names.clone(),
        }
    }
}
