//! [`NpyBatchWriter`]: Arrow record batches into a `.npy` array, streamed with the count not
//! known up front (the crate's [`NpyWriter`] patches the header's shape at the end).
//!
//! The element dtype comes from the NumPy metadata the reader puts on the schema (so a round
//! trip gives the original bytes), or, without it, from the Arrow types (see the
//! [module docs](crate)).

use std::collections::HashMap;
use std::fs::File;
#[cfg(feature = "npz")]
use std::io;
use std::io::{Seek, Write};
use std::path::Path;
#[cfg(feature = "npz")]
use std::path::PathBuf;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit as ArrowUnit};

use super::decode::{At, Slots};
use super::encode::{encode, widest, Nulls};
use super::foreign::normalize::{Choices, Prep};
use super::foreign::policy::{DecimalPolicy, NullPolicy};
use super::foreign::title::is_marker;
use super::fortran::FortranWriter;
use super::object_writer::{object_column, ObjectChoice, ObjectSink};
use super::schema::{Layout, DESCR_KEY, FORTRAN_KEY, SHAPE_KEY, TITLE_KEY};
use npy_serde::dtype::{ByteOrder, DType, Record, Scalar, TimeUnit};
use npy_serde::error::{Error, Result};
use npy_serde::header::{Header, Version};
#[cfg(feature = "npz")]
use npy_serde::npz::NpzWriter;
use npy_serde::write::{NpyWriter, WriterBuilder};

/// Options for writing record batches as a `.npy` array.
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{ArrayRef, Int32Array, RecordBatch, StringArray};
/// use npy_arrow::{BatchWriterBuilder, NullPolicy};
///
/// let batch = RecordBatch::try_from_iter([
///     ("id", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
///     ("name", Arc::new(StringArray::from(vec![Some("ab"), None])) as ArrayRef),
/// ]).unwrap();
/// let mut w = BatchWriterBuilder::new()
///     .string_width("name", 8)
///     .nulls(NullPolicy::Fill("?".into()))
///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
/// w.write(&batch)?;
/// let bytes = w.finish()?.into_inner();
/// let h = npy_serde::header::parse_header(&bytes, &Default::default())?;
/// assert_eq!(h.header.dtype.descr(), "[('id', '<i4'), ('name', '<U8')]");
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct BatchWriterBuilder {
    widths: HashMap<String, usize>,
    default_width: Option<usize>,
    pub(crate) foreign: Choices,
    ignore_metadata: bool,
    version: Option<Version>,
    objects: ObjectChoice,
}

impl BatchWriterBuilder {
    /// Dtypes from the NumPy metadata where present, string widths from the first batch,
    /// nulls an error (except NaT), decimals [`DecimalPolicy::Auto`], every column.
    pub fn new() -> Self {
        Self::default()
    }

    /// The width (`U` characters or `S` bytes) of the string column `column` (a top-level
    /// column name; for a string inside a struct or list, the top-level column's name).
    pub fn string_width(mut self, column: &str, width: usize) -> Self {
        self.widths.insert(column.to_string(), width);
        self
    }

    /// The width of every string column not named by [`string_width`](Self::string_width)
    /// (default: the widest value of the first batch, at least 1).
    pub fn default_string_width(mut self, width: usize) -> Self {
        self.default_width = Some(width);
        self
    }

    /// What a null becomes in every column not named by [`nulls_for`](Self::nulls_for)
    /// (default: [`NullPolicy::Error`], except that a column read back from a mask keeps
    /// its mask).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    /// use npy_arrow::{BatchWriterBuilder, NullPolicy};
    /// let batch = RecordBatch::try_from_iter([
    ///     ("n", Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef),
    /// ]).unwrap();
    /// let mut w = BatchWriterBuilder::new()
    ///     .nulls(NullPolicy::Nan)
    ///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
    /// w.write(&batch)?;
    /// // An integer column with nulls becomes <f8 (NaN for the null), titled with its type.
    /// assert_eq!(w.dtype().unwrap().descr(), "[(('arrow:n:Int64', 'n'), '<f8')]");
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn nulls(mut self, policy: NullPolicy) -> Self {
        self.foreign.nulls = Some(policy);
        self
    }

    /// What a null becomes in the top-level column `column` (it must exist).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Float64Array, RecordBatch};
    /// use npy_arrow::{BatchWriterBuilder, NullPolicy};
    /// let batch = RecordBatch::try_from_iter([
    ///     ("x", Arc::new(Float64Array::from(vec![Some(1.5), None])) as ArrayRef),
    /// ]).unwrap();
    /// let mut w = BatchWriterBuilder::new()
    ///     .nulls_for("x", NullPolicy::Mask)
    ///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
    /// w.write(&batch)?;
    /// let d = w.dtype().unwrap().descr();
    /// assert_eq!(d, "[('x', '<f8'), (('arrow:x_valid:mask', 'x_valid'), '|b1')]");
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn nulls_for(mut self, column: &str, policy: NullPolicy) -> Self {
        self.foreign.nulls_for.insert(column.to_string(), policy);
        self
    }

    /// How every decimal column not named by [`decimals_for`](Self::decimals_for) is written
    /// (default: [`DecimalPolicy::Auto`]).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Decimal128Array, RecordBatch};
    /// use npy_arrow::{BatchWriterBuilder, DecimalPolicy};
    /// let d = Decimal128Array::from(vec![12345]).with_precision_and_scale(38, 2).unwrap();
    /// let batch = RecordBatch::try_from_iter([("p", Arc::new(d) as ArrayRef)]).unwrap();
    /// let mut w = BatchWriterBuilder::new()
    ///     .decimals(DecimalPolicy::Scaled)
    ///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
    /// w.write(&batch)?;
    /// assert_eq!(w.dtype().unwrap().descr(), "[(('arrow:p:Decimal128(38, 2)', 'p'), '<i8')]");
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn decimals(mut self, policy: DecimalPolicy) -> Self {
        self.foreign.decimals = policy;
        self
    }

    /// How the decimal column `column` (top-level) is written.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Decimal128Array, RecordBatch};
    /// use npy_arrow::{BatchWriterBuilder, DecimalPolicy};
    /// let d = Decimal128Array::from(vec![1]).with_precision_and_scale(20, 2).unwrap();
    /// let batch = RecordBatch::try_from_iter([("p", Arc::new(d) as ArrayRef)]).unwrap();
    /// // Wider than 15 digits: refused unless a policy is chosen.
    /// let mut w = BatchWriterBuilder::new().writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
    /// assert!(w.write(&batch).unwrap_err().to_string().contains("scaled"));
    /// let mut w = BatchWriterBuilder::new()
    ///     .decimals_for("p", DecimalPolicy::F8)
    ///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
    /// w.write(&batch)?;
    /// assert_eq!(w.dtype().unwrap().descr(), "[(('arrow:p:Decimal128(20, 2)', 'p'), '<f8')]");
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn decimals_for(mut self, column: &str, policy: DecimalPolicy) -> Self {
        self.foreign.decimals_for.insert(column.to_string(), policy);
        self
    }

    /// Writes only these top-level columns, in this order (each must exist).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Int8Array, RecordBatch};
    /// use npy_arrow::BatchWriterBuilder;
    /// let batch = RecordBatch::try_from_iter([
    ///     ("a", Arc::new(Int8Array::from(vec![1])) as ArrayRef),
    ///     ("b", Arc::new(Int8Array::from(vec![2])) as ArrayRef),
    ///     ("c", Arc::new(Int8Array::from(vec![3])) as ArrayRef),
    /// ]).unwrap();
    /// let mut w = BatchWriterBuilder::new()
    ///     .columns(["c", "a", "b"])
    ///     .exclude(["b"])
    ///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
    /// w.write(&batch)?;
    /// assert_eq!(w.dtype().unwrap().descr(), "[('c', '|i1'), ('a', '|i1')]");
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn columns<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.foreign.columns = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Leaves these top-level columns out (each must exist); see [`columns`](Self::columns).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Int8Array, NullArray, RecordBatch};
    /// use npy_arrow::BatchWriterBuilder;
    /// let batch = RecordBatch::try_from_iter([
    ///     ("a", Arc::new(Int8Array::from(vec![1])) as ArrayRef),
    ///     ("empty", Arc::new(NullArray::new(1)) as ArrayRef),
    /// ]).unwrap();
    /// let mut w = BatchWriterBuilder::new()
    ///     .exclude(["empty"])
    ///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
    /// w.write(&batch)?;
    /// assert_eq!(w.dtype().unwrap().descr(), "[('a', '|i1')]");
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn exclude<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.foreign
            .exclude
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Ignore the NumPy metadata of the schema and its fields: dtypes from the Arrow types
    /// alone.
    pub fn ignore_metadata(mut self, yes: bool) -> Self {
        self.ignore_metadata = yes;
        self
    }

    /// The `.npy` format version (default: the smallest that holds the header, as `np.save`).
    pub fn version(mut self, v: Version) -> Self {
        self.version = Some(v);
        self
    }

    /// Writes a string column (`Utf8`, `LargeUtf8`, `Utf8View`) as an object array (`descr
    /// '|O'`, nulls as `None`) instead of fixed-width `U<n>`: the file that
    /// `np.load(path, allow_pickle=True)` reads into the same `str` values in NumPy 1.x and
    /// 2.x. Only a batch of that one column is written so (see [`columns`](Self::columns)):
    /// with other columns beside a string column the writer refuses, naming it, as it writes
    /// no record array with an object field. The strings are kept in memory until
    /// [`finish`](NpyBatchWriter::finish) (the pickle states the count first). A column whose
    /// `numpy.descr` metadata is `'|O'` (read from an object array) is written so without
    /// asking, unless [`ignore_metadata`](Self::ignore_metadata) or `strings_as_objects(false)`
    /// (which writes every string column as `U<n>`); such a column beside others is refused
    /// unless one of them is set, rather than becoming `U<n>` silently.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, RecordBatch, StringArray};
    /// use npy_arrow::BatchWriterBuilder;
    /// let batch = RecordBatch::try_from_iter([
    ///     ("name", Arc::new(StringArray::from(vec![Some("ab"), None])) as ArrayRef),
    /// ]).unwrap();
    /// let mut w = BatchWriterBuilder::new()
    ///     .strings_as_objects(true)
    ///     .writer(std::io::Cursor::new(Vec::new()), &batch.schema())?;
    /// w.write(&batch)?;
    /// let file = w.finish()?.into_inner();
    /// let back: Vec<Option<String>> =
    ///     npy_serde::ReaderBuilder::new().allow_pickle_data(true).from_slice_serde(&file)?;
    /// assert_eq!(back, [Some("ab".to_string()), None]);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn strings_as_objects(mut self, yes: bool) -> Self {
        self.objects.all = Some(yes);
        self
    }

    /// [`strings_as_objects`](Self::strings_as_objects) for the column `column` only (an
    /// error when the batches are written if it is not a string column or not alone).
    pub fn strings_as_objects_for(mut self, column: &str) -> Self {
        self.objects.columns.push(column.to_string());
        self
    }

    /// A writer of batches with `schema` into `inner` (a file, a `Cursor`), from its current
    /// position.
    pub fn writer<W: Write + Seek>(&self, inner: W, schema: &Schema) -> Result<NpyBatchWriter<W>> {
        Ok(NpyBatchWriter {
            state: State::Pending(inner),
            schema: SchemaRef::new(schema.clone()),
            opts: self.clone(),
            target: None,
            rows: 0,
            scratch: Vec::new(),
            pipe: None,
            staged: None,
        })
    }

    /// A writer of batches with `schema` into a new file at `path`. The encoded records are
    /// written by a second thread while the next batch is encoded.
    ///
    /// The file is written under a temporary name beside `path` and renamed over it by
    /// [`NpyBatchWriter::finish`]: until then an existing file at `path` is as it was, and a
    /// writer dropped unfinished (or failing) leaves no file behind (see
    /// [`npy_serde::staged::StagedFile`]).
    pub fn create<P: AsRef<Path>>(&self, path: P, schema: &Schema) -> Result<NpyBatchWriter<File>> {
        let (file, staged) = npy_serde::staged::StagedFile::create(path)?.into_parts();
        let mut w = self.file_writer(file, schema)?;
        w.staged = staged;
        Ok(w)
    }

    /// A writer of batches with `schema` into `file` from its current position, like
    /// [`create`](Self::create): the encoded records are written by a second thread (through a
    /// duplicate of the file's descriptor) while the next batch is encoded.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    /// use npy_arrow::BatchWriterBuilder;
    /// # let path = std::env::temp_dir().join(format!("file-writer-{}.npy", std::process::id()));
    /// let batch = RecordBatch::try_from_iter([
    ///     ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
    /// ]).unwrap();
    /// let file = std::fs::File::create(&path)?;
    /// let mut w = BatchWriterBuilder::new().file_writer(file, &batch.schema())?;
    /// w.write(&batch)?;
    /// w.finish()?;
    /// assert_eq!(npy_arrow::read_batch(&path)?.columns(), batch.columns());
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn file_writer(&self, file: File, schema: &Schema) -> Result<NpyBatchWriter<File>> {
        let dup = file.try_clone()?;
        let mut w = self.writer(file, schema)?;
        w.pipe = Some(dup);
        Ok(w)
    }

    /// This builder for a writer of the one column `column` of a column table: its
    /// whole-output choices, and of the per-column ones (null and decimal policies, string
    /// widths) only `column`'s; every column kept.
    #[cfg(feature = "npz")] // column tables only
    pub(crate) fn for_column(&self, column: &str) -> Self {
        let mut one = self.clone();
        one.foreign = self.foreign.for_column(column);
        one.widths.retain(|c, _| c == column);
        one
    }

    fn width_of(&self, column: &str, array: Option<&ArrayRef>) -> usize {
        self.widths
            .get(column)
            .copied()
            .or(self.default_width)
            .unwrap_or_else(|| array.map(widest).unwrap_or(0))
            .max(1)
    }
}

/// What the batches become.
struct Target {
    /// The batches made NumPy-ready (the layout's columns are its schema's).
    prep: Prep,
    layout: Layout,
    /// Schema column index of each layout column.
    cols: Vec<usize>,
    /// A 0-d array (one row).
    scalar: bool,
}

enum State<W: Write + Seek> {
    Pending(W),
    Stream(Box<NpyWriter<W>>),
    /// A Fortran-order array of a known shape (see `fortran.rs`).
    Fortran(Box<FortranWriter<W>>),
    Scalar {
        inner: W,
        bytes: Option<Vec<u8>>,
    },
    /// One string column written as an object array (`object_writer.rs`).
    Objects {
        inner: W,
        sink: ObjectSink,
        column: usize,
    },
    Done,
}

/// Writes Arrow record batches as one `.npy` array; see the [module docs](crate).
///
/// The dtype is settled by the first batch (string widths) and the header is written then;
/// [`finish`](Self::finish) writes the final shape over it.
pub struct NpyBatchWriter<W: Write + Seek> {
    state: State<W>,
    schema: SchemaRef,
    opts: BatchWriterBuilder,
    target: Option<Target>,
    rows: u64,
    scratch: Vec<u8>,
    /// For a writer made from a path: the file (a duplicate of its descriptor) whose blocks a
    /// second thread writes, once the header is written.
    pipe: Option<File>,
    /// For a writer made from a path: the rename [`finish`](Self::finish) does (the file is
    /// written under a temporary name; dropped unfinished, it is removed).
    staged: Option<npy_serde::staged::PendingRename>,
}

impl<W: Write + Seek> std::fmt::Debug for NpyBatchWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpyBatchWriter")
            .field("schema", &self.schema)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl NpyBatchWriter<File> {
    /// A writer of batches with `schema` into a new file at `path`, default options.
    pub fn create<P: AsRef<Path>>(path: P, schema: &Schema) -> Result<Self> {
        BatchWriterBuilder::new().create(path, schema)
    }
}

impl<W: Write + Seek> NpyBatchWriter<W> {
    /// A writer of batches with `schema` into `inner`, default options.
    pub fn new(inner: W, schema: &Schema) -> Result<Self> {
        BatchWriterBuilder::new().writer(inner, schema)
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The element dtype, once the first batch settled it (`None` for an object array: the
    /// dtype model has no object dtype).
    pub fn dtype(&self) -> Option<&DType> {
        self.target.as_ref().map(|t| &t.layout.elem)
    }

    /// Writes the rows of `batch` (its schema must have the writer's fields).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.write_ready(batch).map(drop)
    }

    /// [`write`](Self::write), returning the batch as it was made NumPy-ready and encoded (the
    /// null and decimal policies applied; a float's null still a null here, written as NaN):
    /// `None` for an empty batch or an object array's.
    pub(crate) fn write_ready(&mut self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        if batch.num_columns() != self.schema.fields().len() {
            return Err(Error::write(format!(
                "the batch has {} columns but the writer's schema {}",
                batch.num_columns(),
                self.schema.fields().len()
            )));
        }
        if self.target.is_none() && matches!(self.state, State::Pending(_)) {
            self.start_objects()?;
        }
        if let State::Objects { sink, column, .. } = &mut self.state {
            sink.push(batch.column(*column))?;
            self.rows = sink.rows();
            return Ok(None);
        }
        if self.target.is_none() {
            self.start(Some(batch))?;
        }
        let t = self.target.as_ref().expect("started above");
        let rows = batch.num_rows();
        if rows == 0 {
            return Ok(None);
        }
        let ready = t.prep.apply(batch, self.rows)?;
        let batch = &ready;
        let row_bytes = t.layout.row_bytes;
        let len = rows
            .checked_mul(row_bytes)
            .ok_or_else(|| Error::overflow("a batch's bytes"))?;
        // Not cleared between batches: every batch writes every value byte of its rows, and
        // padding is never written, so it stays zero from when the buffer grew.
        self.scratch.resize(len, 0);
        let first_elem = self.rows * t.layout.per_row;
        let encode_rows = |first: usize, out: &mut [u8]| -> Result<()> {
            let rows = match out.len().checked_div(row_bytes) {
                Some(r) => r,
                // Zero-size records: one run of every row.
                None => batch.num_rows(),
            };
            let part;
            let batch = if first == 0 && rows == batch.num_rows() {
                batch
            } else {
                part = batch.slice(first, rows);
                &part
            };
            let at = At {
                first_elem: first_elem + first as u64 * t.layout.per_row,
                itemsize: t.layout.elem.itemsize(),
                offset: None,
            };
            for (c, &i) in t.layout.columns.iter().zip(&t.cols) {
                let slots = Slots {
                    base: c.offset,
                    axes: vec![(rows, row_bytes)],
                };
                let name = batch.schema_ref().field(i).name();
                let nulls = Nulls {
                    fill: t.prep.fills(i),
                };
                encode(&c.node, batch.column(i), out, &slots, &at, name, nulls)?;
            }
            Ok(())
        };
        encode_parts(&mut self.scratch, row_bytes, &encode_rows)?;
        match &mut self.state {
            State::Stream(w) => w.write_raw_records(&self.scratch, rows as u64)?,
            State::Fortran(w) => w.write_rows(&self.scratch, rows as u64)?,
            State::Scalar { bytes, .. } => {
                if bytes.is_some() || rows != 1 {
                    return Err(Error::write(
                        "a 0-d array (numpy.shape `()`) takes exactly one row",
                    ));
                }
                *bytes = Some(self.scratch.clone());
            }
            State::Pending(_) | State::Done | State::Objects { .. } => {
                return Err(Error::write("the writer is finished"));
            }
        }
        self.rows += rows as u64;
        Ok(Some(ready))
    }

    /// Switches to writing an object array if the caller asked for one (or the column's
    /// metadata says it was one); see `object_writer.rs`.
    fn start_objects(&mut self) -> Result<()> {
        let schema = &self.schema;
        let o = &self.opts;
        let mut kept: Vec<usize> = match &o.foreign.columns {
            Some(names) => names
                .iter()
                .filter_map(|n| schema.index_of(n).ok())
                .collect(),
            None => (0..schema.fields().len()).collect(),
        };
        kept.retain(|&i| !o.foreign.exclude.contains(schema.field(i).name()));
        let Some(column) = object_column(schema, &kept, &o.objects, o.ignore_metadata)? else {
            return Ok(());
        };
        let State::Pending(inner) = std::mem::replace(&mut self.state, State::Done) else {
            return Err(Error::write("the writer is finished"));
        };
        self.state = State::Objects {
            inner,
            sink: ObjectSink::default(),
            column,
        };
        Ok(())
    }

    /// Settles the dtype (from `first`'s string widths if given) and writes the header.
    fn start(&mut self, first: Option<&RecordBatch>) -> Result<()> {
        let target = plan(&self.schema, first, &self.opts)?;
        let inner = match std::mem::replace(&mut self.state, State::Done) {
            State::Pending(w) => w,
            _ => return Err(Error::write("the writer is finished")),
        };
        self.state = if target.scalar {
            State::Scalar { inner, bytes: None }
        } else if let Some(shape) = self.fortran_shape(&target) {
            let elem = target.layout.elem.clone();
            let w = FortranWriter::new(inner, elem, shape, self.opts.version)?;
            State::Fortran(Box::new(w))
        } else {
            let inner_shape = target.layout.shape[1..].to_vec();
            let elem = target.layout.elem.clone();
            // The row dtype is never spelled as a descr: the writer folds it into the header's
            // shape at once. So it is not held to the limits of a subarray dtype: neither a
            // zero-size element (`'<U0'` of shape (0, 0)) nor a row larger than a subarray's
            // itemsize limit (`np.zeros((0, 42949, 7296, 16))`, 40 GB a row, no row at all).
            let row = if inner_shape.is_empty() {
                elem
            } else {
                DType::Array(Box::new(elem), inner_shape)
            };
            let mut wb = WriterBuilder::new().dtype(row);
            if let Some(v) = self.opts.version {
                wb = wb.version(v);
            }
            let mut w = wb.writer(inner)?;
            if let Some(file) = self.pipe.take() {
                w = w.piped_on(&file)?;
            }
            State::Stream(Box::new(w))
        };
        self.target = Some(target);
        Ok(())
    }

    /// The shape to write a Fortran-order array in: the schema's `numpy.shape` when its
    /// `numpy.fortran_order` is `True` and `target` is that array (not a packed record of the
    /// fields), with at least one axis.
    fn fortran_shape(&self, target: &Target) -> Option<Vec<u64>> {
        let meta = self.schema.metadata();
        if self.opts.ignore_metadata || meta.get(FORTRAN_KEY).map(String::as_str) != Some("True") {
            return None;
        }
        let shape = parse_shape(meta.get(SHAPE_KEY)?)?;
        let planned = &target.layout;
        let same = meta.get(DESCR_KEY) == Some(&planned.elem.descr())
            && shape.len() == planned.shape.len()
            && shape.get(1..) == planned.shape.get(1..);
        (same && !shape.is_empty()).then_some(shape)
    }

    /// Completes the file (the header with the final shape) and returns the writer.
    ///
    /// A Fortran-order array (the schema's `numpy.fortran_order` is `True`, as
    /// [`NpyBatchReader`](super::NpyBatchReader) says of a Fortran-order file) is written in
    /// Fortran order with the schema's `numpy.shape`: its data is placed by the row count, so
    /// it fails here unless exactly that many rows were written (see `fortran.rs`: runs of
    /// rows written at their offsets, at most 16 MiB of rows buffered).
    pub fn finish(mut self) -> Result<W> {
        let staged = self.staged.take();
        let inner = self.finish_inner()?;
        if let Some(staged) = staged {
            staged.commit()?;
        }
        Ok(inner)
    }

    fn finish_inner(&mut self) -> Result<W> {
        if self.target.is_none() && matches!(self.state, State::Pending(_)) {
            self.start_objects()?;
        }
        if self.target.is_none() && matches!(self.state, State::Pending(_)) {
            self.start(None)?;
        }
        match std::mem::replace(&mut self.state, State::Done) {
            State::Objects {
                mut inner, sink, ..
            } => {
                inner.write_all(&sink.file())?;
                inner.flush()?;
                Ok(inner)
            }
            State::Stream(w) => w.finish(),
            State::Fortran(w) => w.finish(),
            State::Scalar { mut inner, bytes } => {
                let bytes = bytes.ok_or_else(|| {
                    Error::write("a 0-d array (numpy.shape `()`) takes exactly one row, got 0")
                })?;
                let t = self.target.as_ref().expect("started");
                let h = Header::new(t.layout.elem.clone(), vec![]);
                inner.write_all(&h.to_bytes_with_version(self.opts.version)?)?;
                inner.write_all(&bytes)?;
                inner.flush()?;
                Ok(inner)
            }
            State::Pending(_) | State::Done => Err(Error::write("the writer is finished")),
        }
    }
}

/// Batches with at least this many record bytes are encoded on all cores (in runs of rows).
#[cfg(feature = "parallel")]
const PARALLEL_BYTES: usize = 1 << 20;

/// Rows are encoded in runs of at most this many record bytes, so that the column passes over
/// a run stay in the core's cache (a 2 MiB batch of W2 in one run spent 1.6x the time in the
/// column scatters).
const RUN_BYTES: usize = 256 << 10;

/// Runs `encode_rows(first row, its bytes)` over `out` (whole rows of `row_bytes`) in runs of
/// at most [`RUN_BYTES`] (or one row): on all cores for a large batch (feature `parallel`).
/// The error of the first failing run is returned, as a serial pass would.
fn encode_parts(
    out: &mut [u8],
    row_bytes: usize,
    encode_rows: &(dyn Fn(usize, &mut [u8]) -> Result<()> + Sync),
) -> Result<()> {
    if row_bytes == 0 || out.len() <= RUN_BYTES {
        return encode_rows(0, out);
    }
    let per = (RUN_BYTES / row_bytes).max(1);
    #[cfg(feature = "parallel")]
    if out.len() >= PARALLEL_BYTES {
        use rayon::prelude::*;
        let results: Vec<Result<()>> = out
            .par_chunks_mut(per * row_bytes)
            .enumerate()
            .map(|(k, part)| encode_rows(k * per, part))
            .collect();
        return results.into_iter().collect();
    }
    out.chunks_mut(per * row_bytes)
        .enumerate()
        .try_for_each(|(k, part)| encode_rows(k * per, part))
}

/// Parses a shape tuple as the reader writes it: `()`, `(3,)`, `(2, 4)`.
fn parse_shape(s: &str) -> Option<Vec<u64>> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect()
}

/// The target of `schema`: the original array's dtype and shape from the schema's metadata
/// when its fields are that array's columns, else a packed record of the fields' dtypes.
fn plan(schema: &Schema, first: Option<&RecordBatch>, o: &BatchWriterBuilder) -> Result<Target> {
    let (prep, ready) = Prep::new(schema, first, &o.foreign)?;
    let schema = prep.schema().clone();
    let first = Some(&ready);
    let meta = schema.metadata();
    if !o.ignore_metadata
        && let (Some(d), Some(s)) = (meta.get(DESCR_KEY), meta.get(SHAPE_KEY))
        && let (Ok(elem), Some(shape)) = (DType::from_descr(d), parse_shape(s))
    {
        let mut probe = shape.clone();
        if let Some(first) = probe.first_mut() {
            *first = 0;
        }
        let layout = Layout::stored(&Header::new(elem, probe))?;
        let same =
            layout.columns.len() == schema.fields().len()
                && layout.columns.iter().zip(schema.fields()).all(|(c, f)| {
                    c.field.name() == f.name() && c.field.data_type() == f.data_type()
                });
        if same {
            let cols = (0..layout.columns.len()).collect();
            return Ok(Target {
                prep,
                layout,
                cols,
                scalar: shape.is_empty(),
            });
        }
    }
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut titles = Vec::new();
    for (i, f) in schema.fields().iter().enumerate() {
        let col = first.map(|b| b.column(i));
        let dt = field_dtype(f, col, o)?;
        // A NumPy title of its own wins; else the marker of its Arrow type, if that is not the
        // dtype's default mapping (foreign::title).
        let own = f
            .metadata()
            .get(TITLE_KEY)
            .filter(|t| !o.ignore_metadata && !is_marker(t));
        let title = own
            .cloned()
            .or_else(|| prep.title(i, &super::data_type_for(&dt).ok()?));
        if let Some(t) = title {
            titles.push((f.name().clone(), t));
        }
        fields.push((f.name().clone(), dt));
    }
    let mut rec = Record::packed(fields)?;
    for (name, t) in titles {
        rec = rec.with_title(&name, t)?;
    }
    let layout = Layout::stored(&Header::new(DType::Record(rec), vec![0]))?;
    let cols = (0..layout.columns.len()).collect();
    Ok(Target {
        prep,
        layout,
        cols,
        scalar: false,
    })
}

fn field_dtype(f: &Field, col: Option<&ArrayRef>, o: &BatchWriterBuilder) -> Result<DType> {
    if !o.ignore_metadata
        && let Some(d) = f.metadata().get(DESCR_KEY)
        && let Ok(dt) = DType::from_descr(d)
        && super::data_type_for(&dt).ok().as_ref() == Some(f.data_type())
    {
        return Ok(dt);
    }
    infer(f.data_type(), f.name(), col, o)
}

/// The NumPy dtype an Arrow field maps to when written by default: its `numpy.descr` metadata
/// if that describes the field's Arrow type, else the mapping of the Arrow type (strings as
/// wide as the widest value of `column`, or 1).
///
/// ```
/// use arrow_schema::{DataType, Field, TimeUnit};
/// let f = Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), true);
/// assert_eq!(npy_arrow::dtype_for_field(&f, None)?.descr(), "'<M8[us]'");
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn dtype_for_field(field: &Field, column: Option<&ArrayRef>) -> Result<DType> {
    let o = BatchWriterBuilder::new();
    let schema = Schema::new(vec![field.clone().with_nullable(true)]);
    let first = match column {
        Some(c) => Some(
            RecordBatch::try_new(SchemaRef::new(schema.clone()), vec![c.clone()])
                .map_err(super::decode::arrow_err)?,
        ),
        None => None,
    };
    let (prep, ready) = Prep::new(&schema, first.as_ref(), &o.foreign)?;
    field_dtype(prep.schema().field(0), Some(ready.column(0)), &o)
}

fn infer(
    dt: &DataType,
    name: &str,
    col: Option<&ArrayRef>,
    o: &BatchWriterBuilder,
) -> Result<DType> {
    use Scalar as S;
    let s = |sc| Ok(DType::with_order(sc, ByteOrder::NATIVE));
    let unit = |u: &ArrowUnit| match u {
        ArrowUnit::Second => TimeUnit::Second,
        ArrowUnit::Millisecond => TimeUnit::Millisecond,
        ArrowUnit::Microsecond => TimeUnit::Microsecond,
        ArrowUnit::Nanosecond => TimeUnit::Nanosecond,
    };
    match dt {
        DataType::Boolean => s(S::Bool),
        DataType::Int8 => s(S::I8),
        DataType::Int16 => s(S::I16),
        DataType::Int32 => s(S::I32),
        DataType::Int64 => s(S::I64),
        DataType::UInt8 => s(S::U8),
        DataType::UInt16 => s(S::U16),
        DataType::UInt32 => s(S::U32),
        DataType::UInt64 => s(S::U64),
        DataType::Float16 => s(S::F16),
        DataType::Float32 => s(S::F32),
        DataType::Float64 => s(S::F64),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            s(S::Unicode(o.width_of(name, col)))
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            s(S::Bytes(o.width_of(name, col)))
        }
        DataType::FixedSizeBinary(n) => s(S::Void(*n as usize)),
        DataType::Date32 => s(S::DateTime(TimeUnit::Day, 1)),
        DataType::Date64 => s(S::DateTime(TimeUnit::Millisecond, 1)),
        DataType::Timestamp(u, _) => s(S::DateTime(unit(u), 1)),
        DataType::Duration(u) => s(S::TimeDelta(unit(u), 1)),
        DataType::Struct(fields) => {
            let sa = col.map(|c| c.as_any().downcast_ref::<arrow_array::StructArray>());
            let mut out = Vec::with_capacity(fields.len());
            for (i, f) in fields.iter().enumerate() {
                let child = sa.flatten().map(|s| s.column(i));
                out.push((f.name().clone(), field_dtype(f, child, o)?));
            }
            Ok(DType::Record(Record::packed(out)?))
        }
        DataType::FixedSizeList(item, n) => {
            let values = col
                .and_then(|c| c.as_any().downcast_ref::<arrow_array::FixedSizeListArray>())
                .map(|l| l.values());
            let inner = field_dtype(item, values, o)?;
            let (base, mut shape) = match inner {
                DType::Array(b, s) => (*b, s),
                other => (other, vec![]),
            };
            shape.insert(0, *n as u64);
            DType::array(base, shape)
        }
        other => Err(Error::write(format!(
            "column `{name}` is {other}, which has no NumPy dtype (supported: booleans, \
             integers, floats, strings, binary, dates, timestamps, durations, structs and \
             fixed-size lists)"
        ))),
    }
}

/// Writes every batch of `reader` into a new `.npy` file at `path`; returns the rows written.
///
/// ```
/// # let dir = std::env::temp_dir();
/// # let a = dir.join(format!("arrow-wb-a-{}.npy", std::process::id()));
/// # let b = dir.join(format!("arrow-wb-b-{}.npy", std::process::id()));
/// npy_serde::to_path(&a, &[1u16, 2, 3])?;
/// let reader = npy_arrow::NpyBatchReader::open(&a)?;
/// assert_eq!(npy_arrow::write_batches(&b, reader)?, 3);
/// assert_eq!(std::fs::read(&a)?, std::fs::read(&b)?);
/// # std::fs::remove_file(&a)?; std::fs::remove_file(&b)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn write_batches<P: AsRef<Path>, R: RecordBatchReader>(path: P, reader: R) -> Result<u64> {
    let w = BatchWriterBuilder::new().create(path, &reader.schema())?;
    write_all(w, reader).map(|(_, n)| n)
}

fn write_all<W: Write + Seek, R: RecordBatchReader>(
    mut w: NpyBatchWriter<W>,
    reader: R,
) -> Result<(W, u64)> {
    for b in reader {
        let b = b.map_err(from_arrow)?;
        w.write(&b)?;
    }
    let n = w.rows();
    Ok((w.finish()?, n))
}

/// An `ArrowError` from a batch source as this crate's error (this crate's own error, if it
/// carries one).
pub(crate) fn from_arrow(e: arrow_schema::ArrowError) -> Error {
    match e {
        arrow_schema::ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(e) => *e,
            Err(other) => Error::invalid_value(format!("Arrow: {other}")),
        },
        other => Error::invalid_value(format!("Arrow: {other}")),
    }
}

/// Writes every batch of `reader` as member `key.npy` of an archive; returns the rows written.
///
/// The row count is only known at the end, and a zip member cannot be rewritten in place, so
/// the array is first written to a temporary file (in `std::env::temp_dir()`), then copied into
/// the archive: memory stays bounded. Feature `npz` (default).
#[cfg(feature = "npz")]
pub fn write_npz_member<W: Write + Seek, R: RecordBatchReader>(
    npz: &mut NpzWriter<W>,
    key: &str,
    reader: R,
    options: &BatchWriterBuilder,
) -> Result<u64> {
    let tmp = TempFile::new()?;
    let w = options.writer(
        File::options().read(true).write(true).open(&tmp.0)?,
        &reader.schema(),
    )?;
    let (mut file, n) = write_all(w, reader)?;
    file.seek(io::SeekFrom::Start(0))?;
    let mut m = npz.start_raw(&npy_serde::npz::name_for_key(key))?;
    io::copy(&mut file, &mut m)?;
    Ok(n)
}

#[cfg(feature = "npz")]
/// A file removed when dropped (`write_npz_member`'s temporary array).
struct TempFile(PathBuf);

#[cfg(feature = "npz")]
impl TempFile {
    fn new() -> Result<TempFile> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(".npy-arrow-{}-{n}.npy", std::process::id()));
        File::create(&path)?;
        Ok(TempFile(path))
    }
}

#[cfg(feature = "npz")]
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
