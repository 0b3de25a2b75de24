//! Column tables (`layout=columns`) without a query engine: an `.npz` archive whose `.npy`
//! members are the columns (what `np.savez(path, **columns)` writes), or a directory of `.npy`
//! files, one per column (`COLUMN.npy`, Kuzu's `COPY FROM NPY` layout).
//!
//! - [`ColumnTableReader`] ([`BatchReaderBuilder::open_column_table`]) reads one as record
//!   batches: a column per member or file, named by its key or stem; a 1-D array is a column of
//!   its type, an N-d one a fixed-size-list column, a record array a struct column. Every
//!   column must have the same number of rows. A stored member is mapped and its CRC-32 checked
//!   once when the table is opened; a deflated one is inflated whole (its CRC checked as it is).
//! - [`ColumnTableWriter`] ([`BatchWriterBuilder::column_table`]) writes batches as one: one
//!   plain array per column, in an archive of stored members whose data starts at a multiple of
//!   64 bytes (viewed in place by `npy sql`'s column scan), or in a directory. Nothing appears
//!   under the target's name until [`finish`](ColumnTableWriter::finish) succeeds.
//!
//! `npy sql`'s column scan (npy-datafusion) reads the same tables with filters and ranges of
//! rows; this reader is the whole-table stream the Python package's `scan` and conversions use.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader, StructArray};
use arrow_schema::{ArrowError, DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use npy_serde::header::{parse_contents, Contents, Header};
use npy_serde::npz::{Compression, MmapNpz, NpzReaderBuilder, NpzWriter};
use npy_serde::{AlignedWriter, DType, Error, ErrorKind, Result};

use crate::order::{OrderCheck, RecordedOrder, SortColumn, StatsCollector, TableRecord};
use crate::reader::{to_arrow, BatchReaderBuilder, NpyBatchReader};
use crate::writer::{BatchWriterBuilder, NpyBatchWriter};
use crate::{choose_columns, TITLE_KEY};

/// `e`, said of the column at `place` (`member a.npy of t.npz`, `file t/a.npy`).
fn in_place(e: Error, place: &str) -> Error {
    Error::new(ErrorKind::Message(format!("{place}: {e}")))
}

/// One column being read: its reader, whether it is a record array (read as a struct
/// column), and the rows read but not yet handed out.
struct ColumnIn {
    reader: NpyBatchReader<'static>,
    record: bool,
    pending: Option<ArrayRef>,
    place: String,
}

impl ColumnIn {
    /// Rows of this column not yet handed out (none only at the end).
    fn fill(&mut self, field: &FieldRef) -> Result<Option<&ArrayRef>> {
        while self.pending.as_ref().is_none_or(|a| a.is_empty()) {
            let Some(batch) = self.reader.next_batch()? else {
                return Ok(None);
            };
            let column: ArrayRef = if self.record {
                let DataType::Struct(fields) = field.data_type() else {
                    unreachable!("a record column's field is a struct")
                };
                let arrays = batch.columns().to_vec();
                Arc::new(
                    StructArray::try_new(fields.clone(), arrays, None)
                        .map_err(|e| in_place(Error::invalid_value(e.to_string()), &self.place))?,
                )
            } else {
                batch.column(0).clone()
            };
            self.pending = Some(column);
        }
        Ok(self.pending.as_ref())
    }
}

/// The batches of a column table, an `.npz` archive whose `.npy` members are the columns or a
/// directory of `COLUMN.npy` files: a column per array, named by its key or stem (a 1-D array
/// a column of its type, an N-d one a fixed-size-list column, a record array a struct column);
/// made by [`BatchReaderBuilder::open_column_table`].
///
/// ```
/// use npy_arrow::BatchReaderBuilder;
/// # let dir = std::env::temp_dir().join(format!("column-table-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// npy_serde::to_path(dir.join("id.npy"), &[1i64, 2, 3])?;
/// npy_serde::to_path(dir.join("x.npy"), &[0.5f32, 1.5, 2.5])?;
/// let mut table = BatchReaderBuilder::new().open_column_table(&dir)?;
/// assert_eq!(table.num_rows(), 3);
/// let batch = table.next_batch()?.unwrap();
/// assert_eq!(batch.schema().field(1).name(), "x");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct ColumnTableReader {
    schema: SchemaRef,
    columns: Vec<ColumnIn>,
    rows: u64,
    done: u64,
}

impl std::fmt::Debug for ColumnTableReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnTableReader")
            .field("schema", &self.schema)
            .field("rows", &self.rows)
            .field("done", &self.done)
            .finish()
    }
}

impl BatchReaderBuilder {
    /// Reads the column table at `path`: a directory (its `*.npy` files, in name order) or an
    /// `.npz` archive (its `.npy` members, in archive order). [`columns`](Self::columns) and
    /// [`column_indices`](Self::column_indices) choose the table's columns (not fields of a
    /// record column); the batch size bounds each batch's rows; object columns need
    /// [`allow_pickle_data`](Self::allow_pickle_data).
    pub fn open_column_table<P: AsRef<Path>>(&self, path: P) -> Result<ColumnTableReader> {
        let path = path.as_ref();
        let mut each = self.clone();
        each.names = None;
        each.indices = None;
        let mut columns = if path.is_dir() {
            directory_columns(&each, path)?
        } else {
            archive_columns(&each, path)?
        };
        if columns.is_empty() {
            return Err(Error::invalid_value(format!(
                "{}: a column table needs at least one .npy array, it has none",
                path.display()
            )));
        }
        let all = Schema::new(
            columns
                .iter()
                .map(|(name, c)| column_field(name, c))
                .collect::<Vec<_>>(),
        );
        let keep: Vec<usize> = match (&self.names, &self.indices) {
            (Some(names), _) => choose_columns(&all, Some(names), &[])
                .map_err(|e| Error::invalid_value(format!("{}: {e}", path.display())))?,
            (None, Some(indices)) => {
                if let Some(bad) = indices.iter().find(|&&i| i >= columns.len()) {
                    return Err(Error::invalid_value(format!(
                        "{}: no column {bad}: the table has {}",
                        path.display(),
                        columns.len()
                    )));
                }
                indices.clone()
            }
            (None, None) => (0..columns.len()).collect(),
        };
        let rows = columns[0].1.reader.num_rows();
        if let Some((name, c)) = columns.iter().find(|(_, c)| c.reader.num_rows() != rows) {
            return Err(Error::invalid_value(format!(
                "{}: column `{name}` has {} rows, column `{}` {rows}: the columns of a column \
                 table have one length",
                path.display(),
                c.reader.num_rows(),
                columns[0].0,
            )));
        }
        let schema = Arc::new(
            all.project(&keep)
                .map_err(|e| Error::invalid_value(e.to_string()))?,
        );
        let mut slots: Vec<Option<(String, ColumnIn)>> = columns.drain(..).map(Some).collect();
        let columns = keep
            .iter()
            .map(|&i| {
                slots[i].take().map(|(_, c)| c).ok_or_else(|| {
                    Error::invalid_value(format!("{}: column {i} chosen twice", path.display()))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ColumnTableReader {
            schema,
            columns,
            rows,
            done: 0,
        })
    }
}

/// The column a reader makes: its one field renamed (a plain array's `value`), or a struct of
/// a record array's fields.
fn column_field(name: &str, c: &ColumnIn) -> Field {
    let schema = c.reader.schema_ref();
    match c.record {
        false => schema.field(0).clone().with_name(name),
        true => Field::new(
            name,
            DataType::Struct(Fields::from(schema.fields().to_vec())),
            false,
        ),
    }
}

/// Whether `header`'s array is read as a struct column.
fn is_record(dtype: &DType) -> bool {
    matches!(dtype, DType::Record(_))
}

fn column(reader: NpyBatchReader<'static>, place: String) -> ColumnIn {
    ColumnIn {
        record: is_record(&reader.header().dtype),
        reader,
        pending: None,
        place,
    }
}

fn directory_columns(b: &BatchReaderBuilder, dir: &Path) -> Result<Vec<(String, ColumnIn)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "npy") {
            files.push(path);
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let place = format!("file {}", path.display());
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let reader = b.open(&path).map_err(|e| in_place(e, &place))?;
            Ok((name, column(reader, place)))
        })
        .collect()
}

fn archive_columns(b: &BatchReaderBuilder, path: &Path) -> Result<Vec<(String, ColumnIn)>> {
    let options = NpzReaderBuilder::new()
        .max_member_size(u64::MAX)
        .reader_options(b.reader.clone());
    let npz = MmapNpz::open_with(path, &options)?;
    let mut columns = Vec::new();
    for info in npz.members() {
        if !info.has_npy_suffix() {
            continue;
        }
        let place = format!("member {} of {}", info.name, path.display());
        let err = |e| in_place(e, &place);
        let reader = match info.compression {
            Compression::Stored => {
                npz.verify(&info.key).map_err(err)?;
                let bytes = npz.stored_bytes(&info.key).map_err(err)?;
                match parse_contents(bytes, &b.reader.limits).map_err(err)? {
                    // An object column's pickle is read whole, as data (or refused).
                    Contents::Objects(_) => b.from_reader(Cursor::new(bytes.to_vec())),
                    _ => b.from_mmap_arc(Arc::new(npz.array_at(info.index).map_err(err)?)),
                }
            }
            _ => {
                let mut archive = npz.archive().map_err(err)?;
                let bytes = archive.by_index(info.index).map_err(err)?.read_raw();
                b.from_reader(Cursor::new(bytes.map_err(err)?))
            }
        }
        .map_err(err)?;
        columns.push((info.key.clone(), column(reader, place)));
    }
    Ok(columns)
}

impl ColumnTableReader {
    /// The table's rows.
    pub fn num_rows(&self) -> u64 {
        self.rows
    }

    /// The schema of the batches: one column per chosen array.
    pub fn schema_ref(&self) -> &SchemaRef {
        &self.schema
    }

    /// The next batch: the next rows of every column, as many as each holds ready (at most
    /// the batch size); `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.done >= self.rows {
            return Ok(None);
        }
        let mut n = usize::MAX;
        for (c, field) in self.columns.iter_mut().zip(self.schema.fields()) {
            let len = match c.fill(field)? {
                Some(a) => a.len(),
                None => {
                    return Err(in_place(
                        Error::eof("the column's rows", self.rows, self.done),
                        &c.place,
                    ))
                }
            };
            n = n.min(len);
        }
        let arrays = self
            .columns
            .iter_mut()
            .map(|c| {
                let a = c.pending.take().expect("filled above");
                let rest = a.len() - n;
                if rest > 0 {
                    c.pending = Some(a.slice(n, rest));
                }
                a.slice(0, n)
            })
            .collect();
        self.done += n as u64;
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(n));
        RecordBatch::try_new_with_options(self.schema.clone(), arrays, &options)
            .map(Some)
            .map_err(|e| Error::invalid_value(e.to_string()))
    }
}

impl Iterator for ColumnTableReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().map_err(to_arrow).transpose()
    }
}

impl RecordBatchReader for ColumnTableReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// A file in the target's directory, removed when dropped unless renamed into place.
struct Temp(PathBuf);

impl Temp {
    /// A hidden name beside `target`, unique to this process and writer.
    fn beside(target: &Path, what: &str) -> Temp {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = target.parent().filter(|p| !p.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_else(|| "out".into());
        Temp(dir.join(format!(".{name}.{what}.{}-{n}.tmp", std::process::id())))
    }

    fn commit(self, target: &Path) -> Result<()> {
        std::fs::rename(&self.0, target)?;
        std::mem::forget(self);
        Ok(())
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The directories a writer of a directory table made (outermost first): removed again,
/// innermost first and each only if empty, when dropped before [`keep`](Self::keep). A
/// directory that was there before is never among them.
#[derive(Default)]
struct MadeDirs(Vec<PathBuf>);

impl MadeDirs {
    /// Makes `dir` and the directories above it that are missing; the guard of those made.
    fn make(dir: &Path) -> Result<MadeDirs> {
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        missing.reverse();
        // Made first, so that a failure part way removes what was made.
        let made = MadeDirs(missing);
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::new(ErrorKind::Message(format!(
                "making the directory {}: {e}",
                dir.display()
            )))
        })?;
        Ok(made)
    }

    /// The directories stay (the table is in place).
    fn keep(mut self) {
        self.0.clear();
    }
}

impl Drop for MadeDirs {
    fn drop(&mut self) {
        for d in self.0.iter().rev() {
            match std::fs::remove_dir(d) {
                Ok(()) => {}
                // Not made after all (its making failed part way).
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                // Not empty (something else put a file there): it and its parents stay.
                Err(_) => break,
            }
        }
    }
}

/// One column being written: a one-field record array in a temporary file, made a plain
/// array when the table is finished.
struct ColumnOut {
    index: usize,
    one: SchemaRef,
    writer: NpyBatchWriter<File>,
    tmp: Temp,
}

/// Writes record batches as a column table: one plain array per column, in an archive of stored
/// members whose data starts at a multiple of 64 bytes (viewed in place by `npy sql`'s column
/// scan) or in a directory; nothing appears under the target's name until
/// [`finish`](ColumnTableWriter::finish) succeeds, and a write that fails (or a writer
/// dropped unfinished) leaves nothing new behind: no file, and no directory the writer made
/// (a directory that was there before stays). Made by [`BatchWriterBuilder::column_table`].
///
/// ```
/// # use std::sync::Arc;
/// # use arrow_array::{ArrayRef, Float32Array, Int64Array, RecordBatch};
/// use npy_arrow::{BatchReaderBuilder, BatchWriterBuilder};
/// # let dir = std::env::temp_dir().join(format!("column-writer-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let batch = RecordBatch::try_from_iter([
///     ("id", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
///     ("x", Arc::new(Float32Array::from(vec![0.5, 1.5])) as ArrayRef),
/// ]).unwrap();
/// let path = dir.join("t.npz");
/// let mut w = BatchWriterBuilder::new().column_table(&path, &batch.schema())?;
/// w.write(&batch)?;
/// w.finish()?;
/// // np.load(path)["x"] is the float32 column.
/// let back = BatchReaderBuilder::new().open_column_table(&path)?.next_batch()?.unwrap();
/// assert_eq!(back.columns(), batch.columns());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct ColumnTableWriter {
    target: PathBuf,
    archive: bool,
    schema: SchemaRef,
    columns: Vec<ColumnOut>,
    /// The order the rows are verified in and recorded with the table
    /// ([`sorted_by`](Self::sorted_by)), and its check over the values written (made by the
    /// first batch, which settles the written types).
    sorted: Option<(Vec<SortColumn>, Option<OrderCheck>)>,
    /// Set when a batch's rows broke the order of `sorted`.
    out_of_order: bool,
    /// The record given by [`record_order`](Self::record_order).
    record: Option<RecordedOrder>,
    /// The statistics of the values written, recorded with the table.
    stats: StatsCollector,
    /// After `columns`: dropped after the columns' temporary files are removed, so that the
    /// directories it made are empty again.
    made: MadeDirs,
}

impl std::fmt::Debug for ColumnTableWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnTableWriter")
            .field("target", &self.target)
            .field("archive", &self.archive)
            .field("schema", &self.schema)
            .finish()
    }
}

impl BatchWriterBuilder {
    /// A writer of batches with `schema` as the column table `path`: an `.npz` archive if
    /// `path` ends in `.npz` (any case), else a directory (made if missing, with its missing
    /// parents; removed again if the write fails) of `COLUMN.npy` files. The builder's column
    /// choice picks the columns; its null, decimal and string-width choices apply to each
    /// column's array (one given for a column to that column's only; one naming no column of
    /// `schema` is an error naming it). The `mask` null policy does not apply (it would add a
    /// field beside the column): a column with nulls it would mask is an error naming the
    /// other policies.
    pub fn column_table<P: AsRef<Path>>(
        &self,
        path: P,
        schema: &Schema,
    ) -> Result<ColumnTableWriter> {
        let target = path.as_ref().to_path_buf();
        let archive = target
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("npz"));
        let keep = choose_columns(
            schema,
            self.foreign.columns.as_deref(),
            &self.foreign.exclude,
        )
        .map_err(|e| Error::invalid_value(e.to_string()))?;
        // A per-column policy naming no column is refused here, as a record writer refuses it;
        // each column's writer is then given only its own.
        self.foreign.check_columns(schema)?;
        // Declared before `columns`, so dropped after them on a failure below: their
        // temporary files are gone by the time the directories it made are removed.
        let made = if archive {
            MadeDirs::default()
        } else {
            MadeDirs::make(&target)?
        };
        let temps_in = if archive {
            target.clone()
        } else {
            target.join("x")
        };
        let mut columns = Vec::with_capacity(keep.len());
        for index in keep {
            let field = schema.field(index);
            let one = Arc::new(Schema::new_with_metadata(
                vec![field.clone()],
                schema.metadata().clone(),
            ));
            let tmp = Temp::beside(&temps_in, field.name());
            let place = format!("column `{}`", field.name());
            let file = File::create(&tmp.0).map_err(|e| in_place(e.into(), &place))?;
            let writer = (self.for_column(field.name()).file_writer(file, &one))
                .map_err(|e| in_place(e, &place))?;
            columns.push(ColumnOut {
                index,
                one,
                writer,
                tmp,
            });
        }
        let names = columns.iter().map(|c| schema.field(c.index).name().clone());
        let stats = StatsCollector::new(names);
        Ok(ColumnTableWriter {
            target,
            archive,
            schema: Arc::new(schema.clone()),
            columns,
            sorted: None,
            out_of_order: false,
            record: None,
            stats,
            made,
        })
    }
}

impl ColumnTableWriter {
    /// Verifies that the rows written from now on (call it before the first
    /// [`write`](Self::write)) are in `order`, and records the order with the table when it is
    /// finished: in the archive's comment, or in the directory's
    /// [`_npy_order`](crate::order::DIRECTORY_RECORD) file (see [`crate::order`]). A row out of
    /// order fails its `write`, naming the columns, the row and both rows' values (and the
    /// table is then not finished: nothing is left). Fails if `order` names a column the
    /// table does not write.
    ///
    /// Without it, a directory table's `_npy_order` from an earlier write is replaced when the
    /// table is finished by one holding only the columns' statistics, which every table gets
    /// (see [`crate::order`]; an archive is written whole, its comment with it).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    /// use npy_arrow::order::{read_archive_record, SortColumn};
    /// use npy_arrow::BatchWriterBuilder;
    /// # let dir = std::env::temp_dir().join(format!("column-sorted-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let batch = RecordBatch::try_from_iter([
    ///     ("k", Arc::new(Int64Array::from(vec![1, 2, 2])) as ArrayRef),
    /// ]).unwrap();
    /// let path = dir.join("t.npz");
    /// let mut w = BatchWriterBuilder::new().column_table(&path, &batch.schema())?;
    /// w.sorted_by(&[SortColumn::asc("k")])?;
    /// w.write(&batch)?;
    /// w.finish()?;
    /// let record = read_archive_record(&path)?.unwrap();
    /// assert_eq!((record.order(), record.rows()), (&[SortColumn::asc("k")][..], 3));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn sorted_by(&mut self, order: &[SortColumn]) -> Result<()> {
        let written: Vec<&str> = (self.columns.iter())
            .map(|c| self.schema.field(c.index).name().as_str())
            .collect();
        if let Some(c) = order.iter().find(|c| !written.contains(&c.name())) {
            return Err(Error::new(ErrorKind::Message(format!(
                "the sort order names the column {:?}, which the table does not write; its \
                 columns are {}",
                c.name(),
                written.join(", ")
            ))));
        }
        OrderCheck::new(order, &self.schema)?;
        self.sorted = Some((order.to_vec(), None));
        Ok(())
    }

    /// True once a [`write`](Self::write) failed because its rows broke the order of
    /// [`sorted_by`](Self::sorted_by) (its error names the rows), not for another reason.
    pub fn out_of_order(&self) -> bool {
        self.out_of_order
    }

    /// Records `record` with the table when it is finished, as [`sorted_by`](Self::sorted_by)
    /// does, without verifying it: for a caller that verified the rows itself (with an
    /// [`OrderCheck`] of its own). A verified order of `sorted_by` takes its place.
    pub fn record_order(&mut self, record: RecordedOrder) {
        self.record = Some(record);
    }

    /// Writes the chosen columns of `batch` (whose schema is the writer's).
    ///
    /// The order of [`sorted_by`](Self::sorted_by) is verified, and the statistics recorded
    /// with the table are taken, on the values as they are written (after the null and decimal
    /// policies: a null filled with a value is that value, a float's null is NaN), which are
    /// the values a reader of the table sees.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut written = Vec::with_capacity(self.columns.len());
        for c in &mut self.columns {
            let part = RecordBatch::try_new(c.one.clone(), vec![batch.column(c.index).clone()])
                .map_err(|e| Error::invalid_value(e.to_string()))?;
            let ready = c.writer.write_ready(&part).map_err(|e| {
                in_place(
                    e,
                    &format!("column `{}`", self.schema.field(c.index).name()),
                )
            })?;
            // An object array's column (strings as objects): its values as given.
            let column = match ready {
                Some(r) => r.column(0).clone(),
                None => batch.column(c.index).clone(),
            };
            written.push(crate::order::as_read(column));
        }
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.stats.add(&written, batch.num_rows());
        if let Some((order, check)) = &mut self.sorted {
            let fields: Vec<Field> = (self.columns.iter().zip(&written))
                .map(|(c, a)| {
                    Field::new(
                        self.schema.field(c.index).name(),
                        a.data_type().clone(),
                        true,
                    )
                })
                .collect();
            let view = RecordBatch::try_new(Arc::new(Schema::new(fields)), written)
                .map_err(|e| Error::invalid_value(e.to_string()))?;
            let check = match check {
                Some(c) => c,
                None => check.insert(OrderCheck::new(order, &view.schema())?),
            };
            if let Err(e) = check.check(&view) {
                self.out_of_order = true;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Finishes every column's array and puts the table in place: the archive renamed over
    /// `path`, or each `COLUMN.npy` renamed into the directory. Returns the columns whose Arrow
    /// type a plain array cannot keep (a record field keeps it in its title, see the crate
    /// docs): their values are exact, their type on reading the dtype's own.
    ///
    /// A directory's files are all written under temporary names before any is renamed into
    /// place; if a rename fails, the files already renamed are removed again (a file of the
    /// same name that was there before is then gone: it was replaced), and so is a directory
    /// the writer made.
    pub fn finish(mut self) -> Result<Vec<String>> {
        let made = std::mem::take(&mut self.made);
        // `self` is consumed whole: every temporary file is gone when it returns.
        let untyped = self.finish_in_place()?;
        made.keep();
        Ok(untyped)
    }

    /// [`finish`](Self::finish) but for the directories the writer made.
    fn finish_in_place(self) -> Result<Vec<String>> {
        let (target, archive, files, untyped, record) = self.finish_columns()?;
        if archive {
            let part = Temp::beside(&target, "npz");
            let file = AlignedWriter::new(File::create(&part.0)?);
            let w = write_archive(file, &files, &record)?;
            w.into_inner()?;
            part.commit(&target)?;
            return Ok(untyped);
        }
        let mut parts = Vec::with_capacity(files.len());
        for (name, tmp, header, offset) in &files {
            let target = target.join(format!("{name}.npy"));
            let part = Temp::beside(&target, "part");
            let mut out = AlignedWriter::new(File::create(&part.0)?);
            out.write_all(header)?;
            io::copy(&mut data_of(&tmp.0, *offset)?, &mut out)?;
            out.into_inner()?;
            parts.push((part, target));
        }
        drop(files);
        // The record goes in with the columns; an old one goes whatever this write records.
        let record_path = target.join(crate::order::DIRECTORY_RECORD);
        if record.is_empty() {
            crate::order::remove_stale_sidecar(&record_path)?;
        } else {
            let part = Temp::beside(&record_path, "part");
            crate::order::write_table_record(&part.0, &record)?;
            parts.push((part, record_path));
        }
        let mut placed: Vec<PathBuf> = Vec::with_capacity(parts.len());
        for (part, target) in parts {
            if let Err(e) = part.commit(&target) {
                for p in &placed {
                    let _ = std::fs::remove_file(p);
                }
                return Err(e);
            }
            placed.push(target);
        }
        Ok(untyped)
    }

    /// Finishes every column's array and writes the table as an `.npz` archive (the archive
    /// [`finish`](Self::finish) puts at an `.npz` path) into `out`, from its current position,
    /// whatever the writer's path: for callers that stage or upload the file themselves
    /// (npy-datafusion's `COPY TO`). Returns `out` and the columns [`finish`](Self::finish)
    /// returns. The column arrays' temporary files are beside the writer's path, as ever.
    pub fn finish_into<W: Write + Seek>(mut self, out: W) -> Result<(W, Vec<String>)> {
        // Nothing goes to the writer's own path: a directory it made for it is removed again
        // (when `made` is dropped, after the temporary files), whatever the outcome.
        let made = std::mem::take(&mut self.made);
        let written = self
            .finish_columns()
            .and_then(|(_, _, files, untyped, record)| {
                let out = write_archive(out, &files, &record)?;
                Ok((out, untyped))
            });
        drop(made);
        written
    }

    /// Finishes every column's temporary array: the target, whether it is an archive, each
    /// column's name, temporary file, plain header and data offset, the untyped columns, and
    /// the records of the verified order and of the columns' statistics.
    #[allow(clippy::type_complexity)]
    fn finish_columns(
        self,
    ) -> Result<(
        PathBuf,
        bool,
        Vec<(String, Temp, Vec<u8>, u64)>,
        Vec<String>,
        TableRecord,
    )> {
        let mut files = Vec::with_capacity(self.columns.len());
        let mut untyped = Vec::new();
        for c in self.columns {
            c.writer.finish()?;
            let field = self.schema.field(c.index);
            let (plain, titled, offset) = plain_header(&c.tmp.0, field.name())?;
            if titled || field.metadata().contains_key(TITLE_KEY) {
                untyped.push(field.name().clone());
            }
            files.push((field.name().clone(), c.tmp, plain, offset));
        }
        let order = match self.sorted {
            Some((_, Some(check))) => Some(check.record()),
            // No row written: the order holds of none.
            Some((order, None)) => Some(RecordedOrder::new(order, 0)),
            None => self.record,
        };
        let record = TableRecord {
            order,
            stats: Some(self.stats.finish()),
        };
        Ok((self.target, self.archive, files, untyped, record))
    }
}

/// The archive of the finished columns `files` (stored members, data aligned at 64) into `out`,
/// `record` in its comment.
fn write_archive<W: Write + Seek>(
    out: W,
    files: &[(String, Temp, Vec<u8>, u64)],
    record: &TableRecord,
) -> Result<W> {
    let mut npz = NpzWriter::new(out).align(true);
    if let Some(text) = record.text() {
        npz.set_comment(text.as_bytes())?;
    }
    for (name, tmp, header, offset) in files {
        let mut m = npz.start_raw(&format!("{name}.npy"))?;
        m.write_all(header)?;
        io::copy(&mut data_of(&tmp.0, *offset)?, &mut m)?;
    }
    npz.finish()
}

/// The `.npy` header of the plain array whose data is that of the one-field record array at
/// `path`, whether that field has a title, and where the record array's data starts.
fn plain_header(path: &Path, column: &str) -> Result<(Vec<u8>, bool, u64)> {
    let mut f = File::open(path)?;
    let parsed = npy_serde::header::read_header(&mut f, &npy_serde::Limits::default())?;
    let header = parsed.header;
    let field = match &header.dtype {
        DType::Record(r)
            if r.fields().len() == 1 && r.itemsize() == r.fields()[0].dtype.itemsize() =>
        {
            &r.fields()[0]
        }
        _ => {
            return Err(Error::invalid_value(format!(
                "column {column}: a column table holds one plain array per column: the `mask` \
                 null policy (a validity field beside the column) does not apply; choose \
                 `error`, `nan` or `fill`"
            )))
        }
    };
    // A subarray field's shape goes into the array's (NumPy gives `('<f8', (2,))` fields of n
    // records as an (n, 2) array of `<f8`).
    let (mut dtype, mut shape) = (field.dtype.clone(), header.shape.clone());
    while let DType::Array(base, sub) = dtype {
        shape.extend(sub);
        dtype = *base;
    }
    let plain = Header::new(dtype, shape);
    Ok((plain.to_bytes()?, field.title.is_some(), parsed.data_offset))
}

/// The data of the array at `path`, from `offset`.
fn data_of(path: &Path, offset: u64) -> Result<impl Read> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(offset))?;
    Ok(BufReader::with_capacity(1 << 20, f))
}

#[cfg(test)]
mod tests;
