//! `scan`: `.npy` files (one, a directory's, a glob's, an `.npz` member, or a column table) as
//! Arrow record batches through the Arrow PyCapsule interface (`__arrow_c_stream__`, `__arrow_c_schema__`),
//! so `pyarrow.table(x)`, `polars.DataFrame(x)` and `duckdb.sql("FROM x")` take them with no
//! pyarrow dependency here. Each `__arrow_c_stream__` call opens the files again (a scan can be
//! read more than once); a `requested_schema` selects and orders the columns it names.

use std::collections::VecDeque;
use std::ffi::CStr;
use std::io::Cursor;
use std::sync::Arc;

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use npy_arrow::{BatchReaderBuilder, NpyBatchReader};
use npy_serde::NpzReaderBuilder;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::{guard, value_error, IntoPy};
use crate::filter::{Filter, Lit};

const STREAM: &CStr = c"arrow_array_stream";
const SCHEMA: &CStr = c"arrow_schema";

/// `reader` as an `arrow_array_stream` capsule (the PyCapsule interface), which a consumer
/// moves the stream out of; one it leaves is released with the capsule.
pub fn stream_capsule<'py>(
    py: Python<'py>,
    reader: Box<dyn RecordBatchReader + Send>,
) -> PyResult<Bound<'py, PyCapsule>> {
    PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(reader), STREAM)
}

/// What a scan reads: `.npy` files in order, one member of an archive, or a column table
/// (an `.npz` of columns or a directory of `COLUMN.npy` files).
#[derive(Clone, Debug)]
enum Files {
    Npy(Vec<String>),
    Member { archive: String, key: String },
    Columns(String),
}

/// The batches of the scanned files, one after another (every file of the same schema).
struct Chain {
    next: VecDeque<String>,
    builder: BatchReaderBuilder,
    current: Option<NpyBatchReader<'static>>,
    schema: SchemaRef,
}

impl Iterator for Chain {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = &mut self.current {
                match r.next() {
                    Some(b) => return Some(b),
                    None => self.current = None,
                }
            }
            let path = self.next.pop_front()?;
            match open_same(&self.builder, &path, &self.schema) {
                Ok(r) => self.current = Some(r),
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

impl RecordBatchReader for Chain {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The file at `path`, whose schema must be `schema` (the first file's).
fn open_same(
    builder: &BatchReaderBuilder,
    path: &str,
    schema: &SchemaRef,
) -> Result<NpyBatchReader<'static>, ArrowError> {
    let r = builder
        .open(path)
        .map_err(|e| ArrowError::ExternalError(Box::new(in_file(e, path))))?;
    if r.schema_ref().fields() != schema.fields() {
        return Err(ArrowError::SchemaError(format!(
            "{path}: its columns are {}, the first file's {}",
            r.schema_ref(),
            schema
        )));
    }
    Ok(r)
}

fn in_file(e: npy_serde::Error, path: &str) -> npy_serde::Error {
    npy_serde::Error::invalid_value(format!("{path}: {e}"))
}

/// `npy_serde.scan(...)`'s native half: the files, the columns, the batch size.
#[pyclass(module = "npy_serde._native", frozen)]
pub struct Scan {
    files: Files,
    columns: Option<Vec<String>>,
    batch_size: Option<usize>,
    allow_pickle_data: bool,
    schema: SchemaRef,
}

impl Scan {
    fn builder(&self, columns: Option<&[String]>) -> BatchReaderBuilder {
        let mut b = BatchReaderBuilder::new().allow_pickle_data(self.allow_pickle_data);
        if let Some(n) = self.batch_size {
            b = b.batch_size(n);
        }
        if let Some(c) = columns.or(self.columns.as_deref()) {
            b = b.columns(c.iter().cloned());
        }
        b
    }

    /// A fresh reader of every batch, `columns` (if given) instead of the scan's.
    fn reader(
        &self,
        columns: Option<&[String]>,
    ) -> npy_serde::Result<Box<dyn RecordBatchReader + Send>> {
        let builder = self.builder(columns);
        match &self.files {
            Files::Member { archive, key } => {
                let mut a = NpzReaderBuilder::new()
                    .max_member_size(u64::MAX)
                    .open(archive)?;
                // The member whole (CRC-checked), then decoded in batches from memory.
                let bytes = a.read_raw(key)?;
                Ok(Box::new(builder.from_reader(Cursor::new(bytes))?))
            }
            Files::Columns(path) => Ok(Box::new(
                builder
                    .open_column_table(path)
                    .map_err(|e| in_file(e, path))?,
            )),
            Files::Npy(paths) => {
                let mut next: VecDeque<String> = paths.iter().cloned().collect();
                let first = next
                    .pop_front()
                    .ok_or_else(|| npy_serde::Error::invalid_value("no files to scan"))?;
                let current = builder.open(&first).map_err(|e| in_file(e, &first))?;
                let schema = current.schema_ref().clone();
                Ok(Box::new(Chain {
                    next,
                    builder,
                    current: Some(current),
                    schema,
                }))
            }
        }
    }
}

#[pymethods]
impl Scan {
    /// Scans the `.npy` files at `paths` (one schema for all), the member `key` of the
    /// archive at `archive`, or with `column_table` the column table at `archive` (an `.npz`
    /// or a directory); the schema is read now, from the first file.
    #[new]
    #[pyo3(signature = (paths, archive, key, columns, batch_size, allow_pickle_data, column_table=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        paths: Vec<String>,
        archive: Option<String>,
        key: Option<String>,
        columns: Option<Vec<String>>,
        batch_size: Option<usize>,
        allow_pickle_data: bool,
        column_table: bool,
    ) -> PyResult<Scan> {
        guard(|| {
            let files =
                match (archive, key, column_table) {
                    (Some(table), None, true) => Files::Columns(table),
                    (Some(archive), Some(key), false) => Files::Member { archive, key },
                    (None, None, false) => Files::Npy(paths),
                    _ => return Err(value_error(
                        "an archive member needs the archive and the key; a column table its path",
                    )),
                };
            if batch_size == Some(0) {
                return Err(value_error("batch_size must be at least 1"));
            }
            let mut scan = Scan {
                files,
                columns,
                batch_size,
                allow_pickle_data,
                schema: Arc::new(Schema::empty()),
            };
            let schema = py.detach(|| scan.reader(None).map(|r| r.schema())).py()?;
            scan.schema = schema;
            Ok(scan)
        })
    }

    /// The column names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The Arrow schema (PyCapsule interface).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let ffi = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| value_error(e.to_string()))?;
        PyCapsule::new_with_value(py, ffi, SCHEMA)
    }

    /// A stream of every batch (PyCapsule interface), the files opened anew. A
    /// `requested_schema` selects and orders the columns it names; their types must be the
    /// file's (no cast is made).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        guard(|| {
            let columns = match &requested_schema {
                Some(capsule) => Some(requested(&self.schema, capsule)?),
                None => None,
            };
            let reader = py.detach(|| self.reader(columns.as_deref())).py()?;
            stream_capsule(py, reader)
        })
    }

    /// No rows, the scan's columns: a schema other libraries read from a stream.
    fn empty(&self) -> OneBatch {
        OneBatch {
            schema: self.schema.clone(),
            batch: RecordBatch::new_empty(self.schema.clone()),
        }
    }

    /// The batches (of at most `batch_size` rows) of the columns `columns` (all if `None`)
    /// as one-batch streams, for the Polars source; read anew on each call. `filter`:
    /// `(column, op, literal)` conjuncts evaluated on each batch (see `filter.rs`).
    #[pyo3(signature = (columns=None, filter=None))]
    fn batches(
        &self,
        py: Python<'_>,
        columns: Option<Vec<String>>,
        filter: Option<Vec<(String, String, Option<Lit>)>>,
    ) -> PyResult<Batches> {
        guard(|| {
            let filter = Filter::new(filter.unwrap_or_default())?;
            let reader = py.detach(|| self.reader(columns.as_deref())).py()?;
            Ok(Batches {
                reader: std::sync::Mutex::new(reader),
                filter,
            })
        })
    }
}

/// The column names a requested schema (an `arrow_schema` capsule) asks for, in its order,
/// checked against `schema`'s types.
fn requested(schema: &Schema, capsule: &Bound<'_, PyCapsule>) -> PyResult<Vec<String>> {
    let ptr = capsule.pointer_checked(Some(SCHEMA))?;
    // SAFETY: the capsule is named `arrow_schema`, which the PyCapsule interface reserves
    // for a pointer to an `ArrowSchema` owned by the capsule; it is only read here, while
    // the capsule (held by `capsule`) is alive and no Python code runs.
    let ffi = unsafe { ptr.cast::<FFI_ArrowSchema>().as_ref() };
    let wanted = Schema::try_from(ffi).map_err(|e| value_error(e.to_string()))?;
    let mut names = Vec::with_capacity(wanted.fields().len());
    for f in wanted.fields() {
        let ours = schema.field_with_name(f.name()).map_err(|_| {
            let have: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            value_error(format!(
                "requested_schema names a column `{}` the scan does not have (its columns: {})",
                f.name(),
                have.join(", ")
            ))
        })?;
        if ours.data_type() != f.data_type() {
            return Err(value_error(format!(
                "requested_schema asks for column `{}` as {}; it is {} (no cast is made)",
                f.name(),
                f.data_type(),
                ours.data_type()
            )));
        }
        names.push(f.name().clone());
    }
    Ok(names)
}

/// Batches handed out one at a time, each as a one-batch stream object.
#[pyclass(module = "npy_serde._native")]
pub struct Batches {
    reader: std::sync::Mutex<Box<dyn RecordBatchReader + Send>>,
    filter: Filter,
}

#[pymethods]
impl Batches {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<OneBatch>> {
        let chunk = self.take(py, 1)?;
        Ok(chunk.batches.into_iter().next().map(|batch| OneBatch {
            schema: chunk.schema,
            batch,
        }))
    }

    /// The next batches, together at least `rows` rows (fewer at the end; none when done), as
    /// one stream: a consumer builds one table of them, paying its per-table cost once.
    fn next_rows(&self, py: Python<'_>, rows: usize) -> PyResult<Option<OneBatch>> {
        let chunk = self.take(py, rows.max(1))?;
        if chunk.batches.is_empty() {
            return Ok(None);
        }
        let batch = arrow_select::concat::concat_batches(&chunk.schema, &chunk.batches)
            .map_err(|e| value_error(e.to_string()))?;
        Ok(Some(OneBatch {
            schema: chunk.schema,
            batch,
        }))
    }
}

/// Batches taken together.
struct Taken {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl Batches {
    /// Batches until `rows` rows are taken or the reader ends.
    fn take(&self, py: Python<'_>, rows: usize) -> PyResult<Taken> {
        guard(|| {
            let taken = py.detach(|| -> Result<Taken, ArrowError> {
                let mut r = self.reader.lock().unwrap_or_else(|p| p.into_inner());
                let schema = r.schema();
                let mut batches = Vec::new();
                let mut n = 0;
                while n < rows {
                    match r.next() {
                        Some(b) => {
                            let b = match self.filter.is_empty() {
                                true => b?,
                                false => self.filter.apply(b?)?,
                            };
                            n += b.num_rows();
                            if b.num_rows() > 0 {
                                batches.push(b);
                            }
                        }
                        None => break,
                    }
                }
                Ok(Taken { schema, batches })
            });
            taken.map_err(|e| value_error(e.to_string()))
        })
    }
}

/// One record batch, as a stream of itself (PyCapsule interface).
#[pyclass(module = "npy_serde._native", frozen)]
pub struct OneBatch {
    schema: SchemaRef,
    batch: RecordBatch,
}

#[pymethods]
impl OneBatch {
    /// Its rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let batch = match &requested_schema {
            Some(capsule) => {
                let names = requested(&self.schema, capsule)?;
                let idx: Vec<usize> = names
                    .iter()
                    .filter_map(|n| self.schema.index_of(n).ok())
                    .collect();
                self.batch
                    .project(&idx)
                    .map_err(|e| value_error(e.to_string()))?
            }
            None => self.batch.clone(),
        };
        let schema = batch.schema();
        let reader = arrow_array::RecordBatchIterator::new(vec![Ok(batch)], schema);
        stream_capsule(py, Box::new(reader))
    }
}
