//! `convert`: a table from one file format to another, as `npy convert` converts one, built
//! from the library's readers and writers (npy-arrow: `.npy`, `.npz` members, column tables,
//! Parquet; arrow-ipc: Arrow IPC files), streamed batch by batch with the GIL released and
//! Ctrl-C polled. The output is written under a temporary name beside it and renamed over it
//! only when complete.

use std::fs::File;
use std::io::{BufReader, BufWriter, Cursor};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use arrow_array::RecordBatchReader;
use arrow_schema::{ArrowError, Schema, SchemaRef};
use npy_arrow::parquet::{ParquetReader, ParquetWriter};
use npy_arrow::{
    choose_columns, needs_width, BatchReaderBuilder, BatchWriterBuilder, DecimalPolicy, NullPolicy,
    DESCR_KEY,
};
use npy_serde::npz::{Compression, MmapNpz, NpzReaderBuilder, NpzWriter};
use npy_serde::{Error, ErrorKind, Result, StagedFile};
use pyo3::prelude::*;

use crate::errors::guard;
use crate::interrupt::{interruptible, is_cancelled, stopped};

/// A file format, from a name's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Npy,
    Npz,
    Parquet,
    Ipc,
    /// No extension of the others: a directory of `COLUMN.npy` files (a column table).
    Directory,
}

fn kind_of(path: &str) -> Kind {
    let ext = Path::new(path)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("npy") => Kind::Npy,
        Some("npz") => Kind::Npz,
        Some("parquet") | Some("pq") => Kind::Parquet,
        Some("arrow") | Some("feather") | Some("ipc") => Kind::Ipc,
        _ => Kind::Directory,
    }
}

fn say(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Message(msg.into()))
}

/// What to convert and how: `convert`'s arguments.
struct Job {
    src: String,
    dst: String,
    member: Option<String>,
    key: Option<String>,
    columns_layout: bool,
    columns: Option<Vec<String>>,
    exclude: Vec<String>,
    nulls: Vec<(Option<String>, NullPolicy)>,
    decimals: Vec<(Option<String>, DecimalPolicy)>,
    compression: Option<String>,
    row_group_size: Option<usize>,
    allow_pickle_data: bool,
}

type Batches = Box<dyn RecordBatchReader + Send>;

impl Job {
    fn npy_builder(&self) -> BatchReaderBuilder {
        BatchReaderBuilder::new().allow_pickle_data(self.allow_pickle_data)
    }

    /// The input's batches: the columns `only` if given (a first pass over string columns),
    /// else the chosen ones.
    fn open(&self, only: Option<&[String]>) -> Result<Batches> {
        let (columns, exclude) = match only {
            Some(only) => (Some(only), &[][..]),
            None => (self.columns.as_deref(), &self.exclude[..]),
        };
        let src = &self.src;
        let kind = match (kind_of(src), Path::new(src).is_dir()) {
            (_, true) => Kind::Directory,
            (k, false) => k,
        };
        if self.member.is_some() && kind != Kind::Npz {
            return Err(say(format!("{src}: member is for .npz archives")));
        }
        match kind {
            Kind::Parquet => {
                let r = ParquetReader::open_columns(
                    src,
                    npy_arrow::DEFAULT_BATCH_SIZE,
                    columns,
                    exclude,
                )?;
                Ok(Box::new(r))
            }
            Kind::Ipc => {
                let file = BufReader::with_capacity(1 << 20, File::open(src)?);
                let r = arrow_ipc::reader::FileReader::try_new(file, None).map_err(arrow)?;
                let keep = chosen(&r.schema(), columns, exclude)?;
                let file = BufReader::with_capacity(1 << 20, File::open(src)?);
                let r = arrow_ipc::reader::FileReader::try_new(file, keep).map_err(arrow)?;
                Ok(Box::new(r))
            }
            Kind::Npz if self.member.is_none() => self.npy_chosen(columns, exclude, |b| {
                Ok(Box::new(b.open_column_table(src)?))
            }),
            Kind::Directory => self.npy_chosen(columns, exclude, |b| {
                Ok(Box::new(b.open_column_table(src)?))
            }),
            Kind::Npz => {
                let key = self.member.as_deref().unwrap_or_default();
                let options = NpzReaderBuilder::new().max_member_size(u64::MAX);
                let npz = MmapNpz::open_with(src, &options)?;
                let info = npz.member(key).ok_or_else(|| {
                    let keys: Vec<&str> = npz.keys().collect();
                    say(format!("{src}: no member {key:?} (its members: {keys:?})"))
                })?;
                let stored = info.compression == Compression::Stored;
                let index = info.index;
                self.npy_chosen(columns, exclude, |b| {
                    if stored {
                        npz.verify(key)?;
                        if let Ok(map) = npz.array_at(index) {
                            return Ok(Box::new(b.from_mmap_arc(Arc::new(map))?));
                        }
                    }
                    let bytes = npz.archive()?.by_index(index)?.read_raw()?;
                    Ok(Box::new(b.from_reader(Cursor::new(bytes))?))
                })
            }
            Kind::Npy => self.npy_chosen(columns, exclude, |b| Ok(Box::new(b.open(src)?))),
        }
    }

    /// An npy-family reader `open` makes, with the columns chosen: opened again with their
    /// indices when a choice is made, so that the others are never decoded.
    fn npy_chosen(
        &self,
        columns: Option<&[String]>,
        exclude: &[String],
        open: impl Fn(&BatchReaderBuilder) -> Result<Batches>,
    ) -> Result<Batches> {
        let b = self.npy_builder();
        let r = open(&b)?;
        match chosen(&r.schema(), columns, exclude)? {
            Some(keep) => open(&b.column_indices(keep)),
            None => Ok(r),
        }
    }

    /// The batch writer's builder with the policies, and the string widths of a first pass.
    fn writer_builder(&self, schema: &Schema) -> Result<BatchWriterBuilder> {
        let mut wb = BatchWriterBuilder::new();
        for (column, p) in &self.nulls {
            wb = match column {
                Some(c) => wb.nulls_for(c, p.clone()),
                None => wb.nulls(p.clone()),
            };
        }
        for (column, p) in &self.decimals {
            wb = match column {
                Some(c) => wb.decimals_for(c, *p),
                None => wb.decimals(*p),
            };
        }
        // A string column from a table (not one a .npy wrote: its descr says the width) is as
        // wide as its widest value anywhere in the input.
        let strings: Vec<String> = schema
            .fields()
            .iter()
            .filter(|f| needs_width(f.data_type()) && !f.metadata().contains_key(DESCR_KEY))
            .map(|f| f.name().clone())
            .collect();
        if !strings.is_empty() {
            let widths =
                npy_arrow::string_widths(self.open(Some(&strings))?).map_err(from_arrow)?;
            for (name, w) in widths {
                wb = wb.string_width(&name, w);
            }
        }
        Ok(wb)
    }

    fn run(&self, cancel: &AtomicBool) -> Result<Vec<String>> {
        let reader = self.open(None)?;
        let schema = reader.schema();
        let batches = Cancellable { reader, cancel };
        let dst = &self.dst;
        let kind = match (kind_of(dst), Path::new(dst).is_dir()) {
            (_, true) => Kind::Directory,
            (k, false) => k,
        };
        let policies = !self.nulls.is_empty() || !self.decimals.is_empty();
        if policies && matches!(kind, Kind::Parquet | Kind::Ipc) {
            return Err(say(
                "nulls and decimals apply to .npy and .npz output (Parquet and Arrow keep nulls \
                 and decimals as they are)",
            ));
        }
        if self.columns_layout && !matches!(kind, Kind::Npz | Kind::Directory) {
            return Err(say(format!(
                "{dst}: layout='columns' writes an .npz archive or a directory of .npy files"
            )));
        }
        if kind == Kind::Directory && !self.columns_layout {
            return Err(say(format!(
                "{dst}: the output's format comes from its extension (.npy, .npz, .parquet, \
                 .arrow); a directory is written with layout='columns'"
            )));
        }
        if self.columns_layout {
            let mut w = self.writer_builder(&schema)?.column_table(dst, &schema)?;
            for b in batches {
                w.write(&b.map_err(from_arrow)?)?;
            }
            return w.finish();
        }
        // Under a temporary name beside `dst`, renamed over it when complete.
        let (file, staged) = StagedFile::create(dst)?.into_parts();
        match kind {
            Kind::Npy => {
                let mut w = self.writer_builder(&schema)?.file_writer(file, &schema)?;
                for b in batches {
                    w.write(&b.map_err(from_arrow)?)?;
                }
                w.finish()?;
            }
            Kind::Npz => {
                let key = match &self.key {
                    Some(k) => k.clone(),
                    None => Path::new(&self.src)
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "arr_0".into()),
                };
                let wb = self.writer_builder(&schema)?;
                let mut npz = NpzWriter::new(BufWriter::with_capacity(1 << 20, file));
                npy_arrow::write_npz_member(&mut npz, &key, Reader { batches, schema }, &wb)?;
                npz.finish()?
                    .into_inner()
                    .map_err(|e| Error::from(e.into_error()))?;
            }
            Kind::Parquet => {
                let codec = npy_arrow::parquet::compression(
                    self.compression.as_deref().unwrap_or("snappy"),
                )?;
                let mut props =
                    parquet::file::properties::WriterProperties::builder().set_compression(codec);
                if let Some(n) = self.row_group_size {
                    props = props.set_max_row_group_row_count(Some(n.max(1)));
                }
                let out = BufWriter::with_capacity(1 << 20, file);
                let mut w = ParquetWriter::new(out, schema.clone(), Some(props.build()))?;
                for b in batches {
                    w.write(&b.map_err(from_arrow)?)?;
                }
                w.finish()?
                    .into_inner()
                    .map_err(|e| Error::from(e.into_error()))?;
            }
            Kind::Ipc => {
                let out = BufWriter::with_capacity(1 << 20, file);
                let mut w = arrow_ipc::writer::FileWriter::try_new(out, &schema).map_err(arrow)?;
                for b in batches {
                    w.write(&b.map_err(from_arrow)?).map_err(arrow)?;
                }
                w.finish().map_err(arrow)?;
                w.into_inner()
                    .map_err(arrow)?
                    .into_inner()
                    .map_err(|e| Error::from(e.into_error()))?;
            }
            Kind::Directory => unreachable!("refused above"),
        }
        if let Some(staged) = staged {
            staged.commit()?;
        }
        Ok(Vec::new())
    }
}

/// The indices `columns` less `exclude` keep of `schema` (`None`: every column, in order).
fn chosen(
    schema: &Schema,
    columns: Option<&[String]>,
    exclude: &[String],
) -> Result<Option<Vec<usize>>> {
    if columns.is_none() && exclude.is_empty() {
        return Ok(None);
    }
    choose_columns(schema, columns, exclude)
        .map(Some)
        .map_err(|e| say(e.to_string()))
}

fn arrow(e: ArrowError) -> Error {
    say(format!("Arrow: {e}"))
}

/// An error from a batch reader: the crate's own as it was (it names the column and row).
fn from_arrow(e: ArrowError) -> Error {
    match e {
        ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(e) => *e,
            Err(other) => say(other.to_string()),
        },
        other => arrow(other),
    }
}

/// Batches until the caller is interrupted (Ctrl-C), then an error.
struct Cancellable<'a> {
    reader: Batches,
    cancel: &'a AtomicBool,
}

impl Iterator for Cancellable<'_> {
    type Item = std::result::Result<arrow_array::RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if is_cancelled(self.cancel) {
            return Some(Err(ArrowError::ExternalError(Box::new(stopped()))));
        }
        self.reader.next()
    }
}

/// [`Cancellable`] as a `RecordBatchReader` (what `write_npz_member` takes).
struct Reader<'a> {
    batches: Cancellable<'a>,
    schema: SchemaRef,
}

impl Iterator for Reader<'_> {
    type Item = std::result::Result<arrow_array::RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.batches.next()
    }
}

impl RecordBatchReader for Reader<'_> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Parses `(column or None, policy)` pairs with the policy's own parser.
fn policies<P: std::str::FromStr>(
    what: &str,
    pairs: Vec<(Option<String>, String)>,
) -> PyResult<Vec<(Option<String>, P)>>
where
    P::Err: std::fmt::Display,
{
    pairs
        .into_iter()
        .map(|(c, p)| match p.parse::<P>() {
            Ok(policy) => Ok((c, policy)),
            Err(e) => Err(crate::errors::value_error(format!("{what} {p:?}: {e}"))),
        })
        .collect()
}

/// `convert(src, dst, ...)`'s native half; the package's `convert` documents the arguments.
/// Returns the columns of a column table whose Arrow types the plain arrays cannot keep.
#[pyfunction]
#[pyo3(signature = (src, dst, member, key, layout, columns, exclude, nulls, decimals, compression, row_group_size, allow_pickle_data))]
#[allow(clippy::too_many_arguments)]
pub fn convert(
    py: Python<'_>,
    src: String,
    dst: String,
    member: Option<String>,
    key: Option<String>,
    layout: &str,
    columns: Option<Vec<String>>,
    exclude: Vec<String>,
    nulls: Vec<(Option<String>, String)>,
    decimals: Vec<(Option<String>, String)>,
    compression: Option<String>,
    row_group_size: Option<usize>,
    allow_pickle_data: bool,
) -> PyResult<Vec<String>> {
    guard(|| {
        let columns_layout = match layout {
            "rows" => false,
            "columns" => true,
            other => {
                return Err(crate::errors::value_error(format!(
                    "layout {other:?}: use 'rows' or 'columns'"
                )))
            }
        };
        let job = Job {
            src,
            dst,
            member,
            key,
            columns_layout,
            columns,
            exclude,
            nulls: policies("nulls", nulls)?,
            decimals: policies("decimals", decimals)?,
            compression,
            row_group_size,
            allow_pickle_data,
        };
        interruptible(py, |cancel| job.run(cancel))
    })
}
