//! The word table, row by row: a model whose table rows come in small files as queries need them.
//!
//! Half of all-MiniLM-L6-v2 int8 is its word-embedding table (30,522 rows × 384 int8), of which a
//! query reads a handful of rows. [`split_model`] cuts a `model.onnx` into a *body* (the graph and
//! every other weight; the tables gathered by the token ids keep their shapes but not their data)
//! and *row files* of [`ROWS_PER_FILE`] rows each, named by their content (`rows.{hash}.bin`). The
//! body names its row files and the model it came from in its `metadata_props`, so a body is
//! loaded like a model and its vectors are the whole model's, bit for bit.
//!
//! Both run the same plan: every table gathered by the token ids (the word table and, in int8
//! exports, its per-row scales) is an input of the plan, given on each run only the rows of the
//! text's distinct ids, with the ids renumbered into them ([`RowTables::gather`]). A whole model
//! takes the rows from its tables in memory; a body from the row files added so far, and names the
//! missing ones ([`EmbedError::MissingRows`]) for the caller to fetch and add ([`RowTables::add_file`]).
//! Renumbering is safe only where the ids are read by those gathers and by `Shape` alone, checked
//! at load ([`row_table_names`]); a model that reads them otherwise keeps its tables as constants
//! and cannot be split.

use tract_onnx::pb;
use tract_onnx::prelude::*;

use super::onnx::proto_tensor;
use super::rowstore::{RowStore, MAX_ROW_BYTES};
use super::EmbedError;
use crate::digest::sha256_hex;
use crate::index::files::file_name;

/// Rows a row file holds (the last holds the rest): 64 rows of all-MiniLM's 384 int8 values and
/// their scales are 24.8 kB. Fewer rows a file would fetch fewer unused rows per query and make
/// more files (30,522 rows: 477 files) and requests.
pub const ROWS_PER_FILE: usize = 64;
/// The `external_data` location of a table whose rows are in row files.
const LOCATION: &str = "sextant-rows";
/// `metadata_props` of a body: the SHA-256 of the whole `model.onnx`, the tables cut into rows
/// (comma-separated, in the order of each file's blocks), rows per file, and the row files.
const META_SOURCE: &str = "sextant.rows.source_sha256";
const META_TABLES: &str = "sextant.rows.tables";
const META_PER_FILE: &str = "sextant.rows.per_file";
const META_FILES: &str = "sextant.rows.files";

/// The file kind of row files: a caller routes `need`s of this kind to the model's folder.
pub const ROW_FILE_KIND: &str = "rows";

/// Whether `name` is a row file's name (`rows.{hash}.bin`).
pub fn is_row_file(name: &str) -> bool {
    name.starts_with("rows.") && crate::index::files::valid_file_name(name)
}

/// Whether `model` may be a body (its bytes hold the key of a body's metadata): a quick look
/// before the parse, which decides.
pub fn may_be_body(model: &[u8]) -> bool {
    let key = META_SOURCE.as_bytes();
    model.windows(key.len()).any(|w| w == key)
}

/// A model cut by [`split_model`].
#[derive(Debug)]
pub struct ModelParts {
    /// The body: `model.onnx` without the rows of its token tables.
    pub body: Vec<u8>,
    /// The row files, by name, in row order.
    pub row_files: Vec<(String, Vec<u8>)>,
    /// Rows in each table.
    pub rows: usize,
}

/// Cuts `model` (the bytes of a `model.onnx`) into a body and row files of [`ROWS_PER_FILE`]
/// rows, or says why it cannot.
pub fn split_model(model: &[u8]) -> Result<ModelParts, EmbedError> {
    split_model_with(model, ROWS_PER_FILE)
}

/// [`split_model`] with `per_file` rows a file.
pub fn split_model_with(model: &[u8], per_file: usize) -> Result<ModelParts, EmbedError> {
    let per_file = per_file.max(1);
    let bad = |reason: String| EmbedError::BadModel { reason };
    let mut proto = super::runner::decode_model(model)?;
    if body_info(&proto)?.is_some() {
        return Err(bad(
            "this model is already a body without its word table; split the whole model.onnx".into(),
        ));
    }
    let graph = proto
        .graph
        .as_mut()
        .ok_or_else(|| bad("the model has no graph".into()))?;
    // The tables the load will gather by the ids, found on the graph as the load rewrites it.
    let mut rewritten = graph.clone();
    super::rewrite::dequantize_gathered_rows(&mut rewritten);
    let names = row_table_names(&rewritten)
        .map_err(bad)?
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            bad("no table is gathered by the token ids (input_ids), so there are no rows to fetch apart".into())
        })?;
    let mut tables = Vec::new();
    for name in &names {
        let proto_table = graph
            .initializer
            .iter()
            .find(|t| &t.name == name)
            .ok_or_else(|| bad(format!("the table {name} is not an initializer of the model")))?;
        let tensor = proto_tensor(proto_table)
            .map_err(|e| bad(format!("the table {name} could not be read ({e})")))?
            .ok_or_else(|| bad(format!("the table {name} is neither int8, uint8 nor f32")))?;
        tables.push((RowTable::of(name, &tensor).map_err(bad)?, tensor_bytes(&tensor)));
    }
    let rows = tables[0].0.rows;
    if let Some((t, _)) = tables.iter().find(|(t, _)| t.rows != rows) {
        return Err(bad(format!(
            "the tables gathered by the ids have {rows} and {} rows",
            t.rows
        )));
    }
    let mut row_files = Vec::new();
    for first in (0..rows).step_by(per_file) {
        let end = (first + per_file).min(rows);
        let mut bytes = Vec::new();
        for (table, data) in &tables {
            bytes.extend_from_slice(&data[first * table.row_bytes..end * table.row_bytes]);
        }
        row_files.push((file_name(ROW_FILE_KIND, "bin", &bytes), bytes));
    }
    for t in &mut graph.initializer {
        if names.contains(&t.name) {
            t.raw_data.clear();
            t.int32_data.clear();
            t.float_data.clear();
            t.data_location = Some(pb::tensor_proto::DataLocation::External as i32);
            t.external_data = vec![entry("location", LOCATION)];
        }
    }
    let files: Vec<&str> = row_files.iter().map(|(n, _)| n.as_str()).collect();
    proto.metadata_props.retain(|p| !p.key.starts_with("sextant.rows."));
    proto.metadata_props.extend([
        entry(META_SOURCE, &sha256_hex(model)),
        entry(META_TABLES, &names.join(",")),
        entry(META_PER_FILE, &per_file.to_string()),
        entry(META_FILES, &files.join(",")),
    ]);
    use prost::Message;
    Ok(ModelParts {
        body: proto.encode_to_vec(),
        row_files,
        rows,
    })
}

fn entry(key: &str, value: &str) -> pb::StringStringEntryProto {
    pb::StringStringEntryProto {
        key: key.to_string(),
        value: value.to_string(),
    }
}

/// What a body's `metadata_props` say about its rows.
#[derive(Debug, Clone)]
pub(super) struct BodyInfo {
    /// The SHA-256 of the whole `model.onnx` (what indexes record).
    pub source_sha256: String,
    tables: Vec<String>,
    per_file: usize,
    files: Vec<String>,
}

impl BodyInfo {
    /// The tables cut into rows, in the order of each file's blocks.
    pub(super) fn tables(&self) -> &[String] {
        &self.tables
    }

    /// Rows a file holds (the last holds the rest).
    pub(super) fn per_file(&self) -> usize {
        self.per_file
    }

    /// The row files, in row order.
    pub(super) fn files(&self) -> &[String] {
        &self.files
    }
}

/// The body's description, `None` for a whole model.
pub(super) fn body_info(proto: &pb::ModelProto) -> Result<Option<BodyInfo>, EmbedError> {
    let get = |key: &str| {
        proto
            .metadata_props
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.value.as_str())
    };
    let Some(source) = get(META_SOURCE) else {
        return Ok(None);
    };
    let bad = |what: &str| EmbedError::BadModel {
        reason: format!(
            "the model body's {what} is missing or malformed; split the model again (sextant build --site does)"
        ),
    };
    if source.len() != 64 || !source.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad(META_SOURCE));
    }
    let list = |key: &str| -> Result<Vec<String>, EmbedError> {
        let value = get(key).ok_or_else(|| bad(key))?;
        Ok(value.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect())
    };
    let tables = list(META_TABLES)?;
    let files = list(META_FILES)?;
    let per_file: usize = get(META_PER_FILE)
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| bad(META_PER_FILE))?;
    if tables.is_empty() || files.is_empty() || files.iter().any(|f| !is_row_file(f)) {
        return Err(bad(META_FILES));
    }
    Ok(Some(BodyInfo {
        source_sha256: source.to_ascii_lowercase(),
        tables,
        per_file,
        files,
    }))
}

/// The first graph input that is not an initializer: the token ids.
fn ids_input(graph: &pb::GraphProto) -> Option<&str> {
    graph
        .input
        .iter()
        .map(|i| i.name.as_str())
        .find(|name| !graph.initializer.iter().any(|t| t.name == *name))
}

/// The tables gathered by the token ids, on a graph after `rewrite::dequantize_gathered_rows`:
/// the initializers read by a `Gather` on axis 0 whose indices are the ids, in graph order.
/// `Ok(None)` when the ids are read by another node than those gathers and `Shape` (renumbering
/// them would change what that node computes); an error when such a table has no data here and
/// the ids cannot be renumbered.
pub(super) fn row_table_names(graph: &pb::GraphProto) -> Result<Option<Vec<String>>, String> {
    let Some(ids) = ids_input(graph) else {
        return Ok(None);
    };
    let mut names = Vec::new();
    for node in graph.node.iter().filter(|n| n.input.iter().any(|i| i == ids)) {
        let axis = node.attribute.iter().find(|a| a.name == "axis").map_or(0, |a| a.i);
        let gathers_rows = node.op_type == "Gather"
            && node.input.len() == 2
            && node.input[1] == ids
            && node.input[0] != ids
            && axis == 0
            && graph.initializer.iter().any(|t| t.name == node.input[0]);
        if gathers_rows {
            if !names.contains(&node.input[0]) {
                names.push(node.input[0].clone());
            }
        } else if node.op_type != "Shape" {
            if external_tables(graph) {
                return Err(format!(
                    "the token ids are read by a {} node, so its word table cannot come row by row; use the whole model.onnx",
                    node.op_type
                ));
            }
            return Ok(None);
        }
    }
    // Renumbered ids index only the rows given: every reader of a table must be one of those
    // gathers (a table tied to an output layer, say, reads every row).
    for table in &names {
        let other = graph.node.iter().find(|n| {
            n.input.iter().any(|i| i == table)
                && !(n.op_type == "Gather" && n.input.len() == 2 && n.input[0] == *table && n.input[1] == ids)
        });
        if let Some(node) = other {
            if external_tables(graph) {
                return Err(format!(
                    "the table {table} is also read by a {} node, so it cannot come row by row; use the whole model.onnx",
                    node.op_type
                ));
            }
            return Ok(None);
        }
    }
    Ok(Some(names))
}

fn external_tables(graph: &pb::GraphProto) -> bool {
    graph.initializer.iter().any(is_external)
}

fn is_external(t: &pb::TensorProto) -> bool {
    t.data_location == Some(pb::tensor_proto::DataLocation::External as i32)
        && t.external_data
            .iter()
            .any(|e| e.key == "location" && e.value == LOCATION)
}

/// One table gathered by the ids: its element type and the shape of one row.
#[derive(Debug, Clone)]
pub(super) struct RowTable {
    pub name: String,
    pub datum: DatumType,
    /// The shape after the first (row) axis.
    pub row_shape: Vec<usize>,
    /// Rows in the table.
    pub rows: usize,
    /// Bytes of one row.
    row_bytes: usize,
}

impl RowTable {
    fn of(name: &str, tensor: &Tensor) -> Result<Self, String> {
        Self::from_shape(name, tensor.datum_type(), tensor.shape())
    }

    fn from_shape(name: &str, datum: DatumType, shape: &[usize]) -> Result<Self, String> {
        let Some((&rows, row_shape)) = shape.split_first() else {
            return Err(format!("the table {name} has no rows"));
        };
        if !matches!(datum, DatumType::I8 | DatumType::U8 | DatumType::F32) {
            return Err(format!("the table {name} is neither int8, uint8 nor f32"));
        }
        let row_bytes = row_shape
            .iter()
            .try_fold(datum.size_of(), |n, &d| n.checked_mul(d))
            .filter(|&n| n <= MAX_ROW_BYTES)
            .ok_or_else(|| format!("the table {name}'s rows are larger than {MAX_ROW_BYTES} bytes"))?;
        Ok(Self {
            name: name.to_string(),
            datum,
            row_shape: row_shape.to_vec(),
            rows,
            row_bytes,
        })
    }

    /// A tensor of `rows` rows from their bytes, concatenated.
    fn tensor(&self, rows: usize, bytes: &[u8]) -> TractResult<Tensor> {
        let mut shape = vec![rows];
        shape.extend_from_slice(&self.row_shape);
        Ok(match self.datum {
            DatumType::I8 => {
                tract_ndarray::ArrayD::from_shape_vec(shape, bytes.iter().map(|&b| b as i8).collect())?.into_tensor()
            }
            DatumType::U8 => tract_ndarray::ArrayD::from_shape_vec(shape, bytes.to_vec())?.into_tensor(),
            _ => tract_ndarray::ArrayD::from_shape_vec(
                shape,
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            )?
            .into_tensor(),
        })
    }
}

/// A tensor's elements as little-endian bytes (int8, uint8 or f32).
fn tensor_bytes(tensor: &Tensor) -> Vec<u8> {
    match tensor.datum_type() {
        DatumType::I8 => tensor
            .to_plain_array_view::<i8>()
            .map(|s| s.iter().map(|&v| v as u8).collect())
            .unwrap_or_default(),
        DatumType::U8 => tensor
            .to_plain_array_view::<u8>()
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default(),
        _ => tensor
            .to_plain_array_view::<f32>()
            .map(|s| s.iter().flat_map(|v| v.to_le_bytes()).collect())
            .unwrap_or_default(),
    }
}

/// The tables gathered by the token ids: their types and shapes, and their rows ([`RowStore`]).
pub(super) struct RowTables {
    pub tables: Vec<RowTable>,
    store: RowStore,
}

impl std::fmt::Debug for RowTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowTables")
            .field("tables", &self.tables)
            .field("store", &self.store)
            .finish()
    }
}

impl RowTables {
    /// Takes the tables gathered by the ids out of `graph` (after
    /// `rewrite::dequantize_gathered_rows`), each becoming a graph input appended after the
    /// graph's inputs, with their rows from the graph (a whole model) or from row files (a body,
    /// `body`). `None` when the ids cannot be renumbered or nothing gathers by them.
    pub(super) fn take(graph: &mut pb::GraphProto, body: Option<&BodyInfo>) -> TractResult<Option<Self>> {
        let names = row_table_names(graph).map_err(TractError::msg)?;
        let names = match names {
            Some(n) if !n.is_empty() => n,
            _ if body.is_some() => {
                return Err(TractError::msg(
                    "the model body's tables are not gathered by its token ids",
                ));
            }
            _ => return Ok(None),
        };
        if let Some(body) = body {
            if body.tables != names {
                return Err(TractError::msg(format!(
                    "the model body lists the tables {:?} but its graph gathers {:?} by the ids",
                    body.tables, names
                )));
            }
        }
        let mut tables = Vec::new();
        let mut whole = Vec::new();
        for name in &names {
            let Some(at) = graph.initializer.iter().position(|t| &t.name == name) else {
                return Err(TractError::msg(format!("the table {name} is not an initializer")));
            };
            let proto = graph.initializer.swap_remove(at);
            let table = if is_external(&proto) {
                if body.is_none() {
                    return Err(TractError::msg(format!(
                        "the table {name}'s data is elsewhere but the model does not say where"
                    )));
                }
                let dt = super::rewrite::datum_of(proto.data_type)
                    .ok_or_else(|| TractError::msg(format!("the table {name} has an unsupported type")))?;
                let shape: Vec<usize> = proto
                    .dims
                    .iter()
                    .map(|&d| usize::try_from(d))
                    .collect::<Result<_, _>>()?;
                RowTable::from_shape(name, dt, &shape).map_err(TractError::msg)?
            } else {
                if body.is_some() {
                    return Err(TractError::msg(format!("the model body still holds the table {name}")));
                }
                let tensor = proto_tensor(&proto)?
                    .ok_or_else(|| TractError::msg(format!("the table {name} has an unsupported type")))?;
                whole.push(tensor_bytes(&tensor));
                RowTable::of(name, &tensor).map_err(TractError::msg)?
            };
            graph.input.retain(|i| &i.name != name);
            graph.input.push(super::rewrite::tensor_input_rows(
                name,
                proto.data_type,
                &table.row_shape,
            ));
            tables.push(table);
        }
        let rows = tables[0].rows;
        if let Some(t) = tables.iter().find(|t| t.rows != rows) {
            return Err(TractError::msg(format!(
                "the tables gathered by the token ids differ in rows: {} has {}, {} has {rows}",
                t.name, t.rows, tables[0].name
            )));
        }
        let row_bytes: Vec<usize> = tables.iter().map(|t| t.row_bytes).collect();
        let store = match body {
            None => RowStore::whole(row_bytes, rows, whole),
            Some(body) => RowStore::files(row_bytes, rows, body.per_file, body.files.clone())
                .map_err(|e| format!("the model body's row files do not fit its tables: {e}")),
        }
        .map_err(TractError::msg)?;
        Ok(Some(Self { tables, store }))
    }

    /// Whether the rows come from row files.
    pub(super) fn in_files(&self) -> bool {
        self.store.in_files()
    }

    /// The rows of `ids`' distinct values, one tensor per table, and the ids renumbered into them
    /// (in order of first appearance). Names the row files still missing, if any.
    pub(super) fn gather(&self, ids: &[u32]) -> Result<(Vec<u32>, Vec<Tensor>), EmbedError> {
        let (renumbered, bytes) = self.store.gather(ids)?;
        let rows = renumbered.iter().max().map_or(0, |&m| m as usize + 1);
        let tensors = self
            .tables
            .iter()
            .zip(&bytes)
            .map(|(t, b)| t.tensor(rows, b))
            .collect::<TractResult<Vec<_>>>()
            .map_err(|e| EmbedError::Run {
                reason: format!("{e:#}"),
            })?;
        Ok((renumbered, tensors))
    }

    /// Adds a row file the model named: `Ok(false)` if `name` is none of its row files; an error
    /// if the bytes are not what the name promises (a damaged or truncated download).
    pub(super) fn add_file(&self, name: &str, bytes: &[u8]) -> Result<bool, EmbedError> {
        self.store.add_file(name, bytes)
    }

    /// Every row file's name (empty for a whole model).
    pub(super) fn file_names(&self) -> Vec<String> {
        self.store.file_names()
    }
}
