//! Parquet on all cores (feature `parquet`).
//!
//! - [`ParquetWriter`]: record batches into a Parquet file. The parquet crate's `ArrowWriter`
//!   encodes a row group's columns one after the other on the caller's thread; here each
//!   column's writer runs on a pool of worker threads (a column at a time per worker, in batch
//!   order, the column furthest behind first), while the caller decodes the next batch. The
//!   file is the one `ArrowWriter` writes with the same properties (same schema, metadata, row
//!   groups, pages).
//! - [`ParquetReader`]: a Parquet file's batches in file order, its row groups decoded on
//!   worker threads (one per core, each with its own file handle): the worker of the row group
//!   being handed out runs [`QUEUED_BATCHES`] batches ahead of the caller, the others decode
//!   the next row groups meanwhile, into at most [`AHEAD_BYTES`] of batches between them.
//!
//! Memory: the writer holds one row group's encoded pages (as `ArrowWriter` does) plus at
//! most [`QUEUED_BATCHES`] batches waiting to be encoded; the reader [`QUEUED_BATCHES`]
//! decoded batches plus [`AHEAD_BYTES`] (or one batch, if larger).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use ::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use ::parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn,
    ArrowRowGroupWriterFactory,
};
use ::parquet::arrow::{ArrowWriter, ProjectionMask};
use ::parquet::errors::ParquetError;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

use crate::error::{Error, Result};

/// Batches queued ahead: waiting to be encoded by the writer's workers, or decoded and not yet
/// taken from the reader's worker of the row group being read.
pub const QUEUED_BATCHES: usize = 4;

/// Bytes of batches the reader's other workers decode ahead, in the row groups after the one
/// being read. With only [`QUEUED_BATCHES`] each, they stalled while the caller read the row
/// group before theirs: Parquet -> `.npy` ran on little more than one core.
pub const AHEAD_BYTES: usize = 16 << 20;

fn write_err(e: ParquetError) -> Error {
    match e {
        ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) => Error::from(*io),
            Err(other) => Error::write(format!("Parquet: {other}")),
        },
        other => Error::write(format!("Parquet: {other}")),
    }
}

/// Worker threads for `tasks` independent tasks: the available cores (one without feature
/// `parallel`), at most one per task.
fn workers_for(tasks: usize) -> usize {
    let cores = if cfg!(feature = "parallel") {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    cores.min(tasks).max(1)
}

/// One leaf column of the row group being written.
struct Column {
    /// Leaves waiting to be encoded, in batch order.
    queue: VecDeque<ArrowLeafColumn>,
    /// The column's writer, when no worker holds it.
    writer: Option<ArrowColumnWriter>,
    /// A worker is encoding this column.
    claimed: bool,
}

struct PoolState {
    columns: Vec<Column>,
    /// The first encoding error (the writer fails from then on).
    error: Option<ParquetError>,
    shutdown: bool,
}

struct Pool {
    state: Mutex<PoolState>,
    /// Signalled when work is queued (or on shutdown).
    work: Condvar,
    /// Signalled when a worker finished a leaf.
    done: Condvar,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // A worker never panics holding the lock (encoding runs unlocked): recover the state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn worker(&self) {
        let mut st = self.lock();
        loop {
            if st.shutdown {
                return;
            }
            // The unclaimed column with the most leaves waiting (the one furthest behind).
            let pick = st
                .columns
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.claimed && !c.queue.is_empty() && c.writer.is_some())
                .max_by_key(|(i, c)| (c.queue.len(), std::cmp::Reverse(*i)))
                .map(|(i, _)| i);
            let Some(i) = pick else {
                st = self.work.wait(st).unwrap_or_else(|p| p.into_inner());
                continue;
            };
            let c = &mut st.columns[i];
            c.claimed = true;
            let leaf = c.queue.pop_front().expect("a queued leaf");
            let mut writer = c.writer.take().expect("an unclaimed column's writer");
            drop(st);
            // A panic in the parquet crate (it should return errors) fails the writer instead
            // of leaving the column claimed forever.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| writer.write(&leaf)))
                .unwrap_or_else(|_| {
                    Err(ParquetError::General("the column encoder panicked".into()))
                });
            drop(leaf);
            st = self.lock();
            let c = &mut st.columns[i];
            c.claimed = false;
            c.writer = Some(writer);
            if let Err(e) = r {
                st.error.get_or_insert(e);
                for c in &mut st.columns {
                    c.queue.clear();
                }
            }
            self.done.notify_all();
        }
    }
}

/// Record batches into a Parquet file, each row group's columns encoded on all cores; see the
/// [module docs](self).
///
/// ```
/// use std::sync::Arc;
/// use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
/// use npy_serde::arrow::parquet::ParquetWriter;
///
/// let batch = RecordBatch::try_from_iter([
///     ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
///     ("x", Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5])) as ArrayRef),
/// ]).unwrap();
/// let mut w = ParquetWriter::new(Vec::new(), batch.schema(), None)?;
/// w.write(&batch)?;
/// let file = w.finish()?;
/// assert_eq!(&file[..4], b"PAR1");
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct ParquetWriter<W: Write + Send> {
    /// `None` once finished.
    file: Option<SerializedFileWriter<W>>,
    factory: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    /// Rows per row group.
    max_rows: usize,
    /// Rows queued in the row group being written (0: no row group started).
    rows_in_group: usize,
    /// Row groups completed.
    groups: usize,
    leaves: usize,
    pool: Arc<Pool>,
    threads: Vec<JoinHandle<()>>,
    /// The error that stopped encoding: every later call fails with it (the row group being
    /// written lost values, so no file may be completed from it).
    failed: Option<String>,
}

impl<W: Write + Send> std::fmt::Debug for ParquetWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetWriter")
            .field("schema", &self.schema)
            .field("groups", &self.groups)
            .field("rows_in_group", &self.rows_in_group)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send> ParquetWriter<W> {
    /// A writer of batches with `schema` into `inner` (default properties if `None`: those of
    /// `ArrowWriter`, whose schema conversion and embedded Arrow schema this writer uses).
    pub fn new(inner: W, schema: SchemaRef, props: Option<WriterProperties>) -> Result<Self> {
        let props = props.unwrap_or_default();
        let max_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let (file, factory) = ArrowWriter::try_new(inner, schema.clone(), Some(props))
            .and_then(|w| w.into_serialized_writer())
            .map_err(write_err)?;
        let leaves = file.schema_descr().num_columns();
        let pool = Arc::new(Pool {
            state: Mutex::new(PoolState {
                columns: Vec::new(),
                error: None,
                shutdown: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        let threads = (0..workers_for(leaves))
            .map(|k| {
                let pool = pool.clone();
                std::thread::Builder::new()
                    .name(format!("npy-parquet-{k}"))
                    .spawn(move || pool.worker())
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(ParquetWriter {
            file: Some(file),
            factory,
            schema,
            max_rows,
            rows_in_group: 0,
            groups: 0,
            leaves,
            pool,
            threads,
            failed: None,
        })
    }

    /// An encoding error, remembered so that the writer fails from then on.
    fn fail(&mut self, e: ParquetError) -> Error {
        let e = write_err(e);
        self.failed = Some(e.to_string());
        e
    }

    fn check_failed(&self) -> Result<()> {
        match &self.failed {
            Some(msg) => Err(Error::write(format!("an earlier write failed: {msg}"))),
            None => Ok(()),
        }
    }

    /// Queues the rows of `batch` (columns as the writer's schema) for encoding; returns once
    /// they are queued (a completed row group is written out first).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_failed()?;
        if batch.num_columns() != self.schema.fields().len() {
            return Err(Error::write(format!(
                "the batch has {} columns but the writer's schema {}",
                batch.num_columns(),
                self.schema.fields().len()
            )));
        }
        for (f, c) in self.schema.fields().iter().zip(batch.columns()) {
            // As `ArrowWriter`: field names and nullability inside nested types may differ,
            // and dictionary-encoded values are written as their values.
            let dict = matches!(c.data_type(), arrow_schema::DataType::Dictionary(..));
            if !dict && !f.data_type().equals_datatype(c.data_type()) {
                return Err(Error::write(format!(
                    "column `{}` is {} in the batch but {} in the writer's schema",
                    f.name(),
                    c.data_type(),
                    f.data_type()
                )));
            }
        }
        let mut start = 0;
        while start < batch.num_rows() {
            let room = self.max_rows - self.rows_in_group;
            let n = room.min(batch.num_rows() - start);
            let part = if start == 0 && n == batch.num_rows() {
                batch.clone()
            } else {
                batch.slice(start, n)
            };
            self.queue(&part)?;
            start += n;
            if self.rows_in_group == self.max_rows {
                self.flush_group()?;
            }
        }
        Ok(())
    }

    fn queue(&mut self, batch: &RecordBatch) -> Result<()> {
        let mut leaves = Vec::with_capacity(self.leaves);
        for (field, col) in self.schema.fields().iter().zip(batch.columns()) {
            leaves.extend(compute_leaves(field, col).map_err(write_err)?);
        }
        if leaves.len() != self.leaves {
            return Err(Error::write(format!(
                "the batch has {} Parquet leaf columns, the schema {}",
                leaves.len(),
                self.leaves
            )));
        }
        if self.rows_in_group == 0 {
            let writers = self
                .factory
                .create_column_writers(self.groups)
                .map_err(write_err)?;
            let mut st = self.pool.lock();
            st.columns = writers
                .into_iter()
                .map(|w| Column {
                    queue: VecDeque::new(),
                    writer: Some(w),
                    claimed: false,
                })
                .collect();
        }
        let mut st = self.pool.lock();
        while st.error.is_none() && st.columns.iter().any(|c| c.queue.len() >= QUEUED_BATCHES) {
            st = self.pool.done.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(e) = st.error.take() {
            drop(st);
            return Err(self.fail(e));
        }
        for (c, leaf) in st.columns.iter_mut().zip(leaves) {
            c.queue.push_back(leaf);
        }
        drop(st);
        self.pool.work.notify_all();
        self.rows_in_group += batch.num_rows();
        Ok(())
    }

    /// Waits for the row group's columns and writes them out as a row group.
    fn flush_group(&mut self) -> Result<()> {
        if self.rows_in_group == 0 {
            return Ok(());
        }
        let mut st = self.pool.lock();
        while st.error.is_none() && st.columns.iter().any(|c| c.claimed || !c.queue.is_empty()) {
            st = self.pool.done.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(e) = st.error.take() {
            drop(st);
            return Err(self.fail(e));
        }
        let writers: Vec<ArrowColumnWriter> = std::mem::take(&mut st.columns)
            .into_iter()
            .map(|c| c.writer.expect("an idle column's writer"))
            .collect();
        drop(st);
        let written = close_all(writers).and_then(|chunks| {
            let file = self
                .file
                .as_mut()
                .ok_or_else(|| ParquetError::General("the writer is finished".into()))?;
            let mut rg = file.next_row_group()?;
            for chunk in chunks {
                chunk.append_to_row_group(&mut rg)?;
            }
            rg.close().map(|_| ())
        });
        written.map_err(|e| self.fail(e))?;
        self.rows_in_group = 0;
        self.groups += 1;
        Ok(())
    }

    /// Writes the last row group and the footer; returns the inner writer.
    pub fn finish(mut self) -> Result<W> {
        self.check_failed()?;
        self.flush_group()?;
        self.stop();
        let file = self
            .file
            .take()
            .ok_or_else(|| Error::write("the writer is finished"))?;
        file.into_inner().map_err(write_err)
    }

    fn stop(&mut self) {
        {
            let mut st = self.pool.lock();
            st.shutdown = true;
        }
        self.pool.work.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl<W: Write + Send> Drop for ParquetWriter<W> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Closes the column writers of a row group (each finishes its last page), on all cores.
fn close_all(
    writers: Vec<ArrowColumnWriter>,
) -> std::result::Result<Vec<ArrowColumnChunk>, ParquetError> {
    #[cfg(feature = "parallel")]
    let chunks: Vec<std::result::Result<ArrowColumnChunk, ParquetError>> = {
        use rayon::prelude::*;
        writers.into_par_iter().map(|w| w.close()).collect()
    };
    #[cfg(not(feature = "parallel"))]
    let chunks: Vec<std::result::Result<ArrowColumnChunk, ParquetError>> =
        writers.into_iter().map(|w| w.close()).collect();
    chunks.into_iter().collect()
}

/// What a reader's worker hands over.
enum Msg {
    /// A batch, and its bytes if they count toward [`AHEAD_BYTES`].
    Batch(RecordBatch, usize),
    /// The row group's last batch was sent.
    EndOfGroup,
    Failed(ArrowError),
}

/// The reader's queues, one per worker, and what they hold ahead.
struct Queues {
    queues: Vec<VecDeque<Msg>>,
    /// The row group being handed out.
    current: usize,
    /// Bytes of the batches queued for later row groups.
    ahead: usize,
    /// Workers whose thread has ended (or panicked).
    gone: Vec<bool>,
    stop: bool,
}

struct Shared {
    state: Mutex<Queues>,
    /// Signalled on every change.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        // Nothing panics holding the lock (decoding runs unlocked): recover the state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(&self, st: MutexGuard<'a, Queues>) -> MutexGuard<'a, Queues> {
        self.changed.wait(st).unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `msg` of row group `g` from worker `w` once there is room: up to
    /// [`QUEUED_BATCHES`] for the group being handed out, [`AHEAD_BYTES`] for the later ones;
    /// false once the reader is dropped.
    fn send(&self, w: usize, g: usize, msg: Msg) -> bool {
        let bytes = match &msg {
            Msg::Batch(b, _) => b.get_array_memory_size(),
            _ => 0,
        };
        let mut st = self.lock();
        loop {
            if st.stop {
                return false;
            }
            let room = if g == st.current {
                st.queues[w].len() < QUEUED_BATCHES
            } else {
                st.ahead + bytes <= AHEAD_BYTES
            };
            if room || bytes == 0 {
                break;
            }
            st = self.wait(st);
        }
        let msg = match msg {
            Msg::Batch(b, _) if g != st.current => {
                st.ahead += bytes;
                Msg::Batch(b, bytes)
            }
            other => other,
        };
        st.queues[w].push_back(msg);
        drop(st);
        self.changed.notify_all();
        true
    }
}

/// Marks a worker gone when its thread ends, however it ends.
struct Gone<'a>(&'a Shared, usize);

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        self.0.lock().gone[self.1] = true;
        self.0.changed.notify_all();
    }
}

/// A Parquet file's record batches in file order, its row groups decoded on worker threads;
/// see the [module docs](self).
///
/// ```
/// # use std::sync::Arc;
/// # use arrow_array::{ArrayRef, Int64Array, RecordBatch};
/// use npy_serde::arrow::parquet::{ParquetReader, ParquetWriter};
/// # let path = std::env::temp_dir().join(format!("pq-reader-{}.parquet", std::process::id()));
/// # let batch = RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef)]).unwrap();
/// # let mut w = ParquetWriter::new(std::fs::File::create(&path)?, batch.schema(), None)?;
/// # w.write(&batch)?;
/// # w.finish()?;
/// let reader = ParquetReader::open(&path, 2)?;
/// assert_eq!(reader.num_rows(), 3);
/// let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
/// assert_eq!(batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(), [2, 1]);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct ParquetReader {
    /// The file's Arrow schema, with its metadata.
    schema: SchemaRef,
    rows: u64,
    groups: usize,
    workers: usize,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for ParquetReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetReader")
            .field("schema", &self.schema)
            .field("rows", &self.rows)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

fn read_err(e: ParquetError) -> Error {
    match e {
        ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) => Error::from(*io),
            Err(other) => Error::invalid_value(format!("Parquet: {other}")),
        },
        other => Error::invalid_value(format!("Parquet: {other}")),
    }
}

impl ParquetReader {
    /// Reads the Parquet file at `path` in batches of at most `batch_size` rows (a batch does
    /// not span row groups).
    pub fn open<P: AsRef<Path>>(path: P, batch_size: usize) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path)?;
        let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(read_err)?;
        let schema = meta.schema().clone();
        let rows = meta.metadata().file_metadata().num_rows().max(0) as u64;
        let groups = meta.metadata().num_row_groups();
        let k = workers_for(groups);
        let shared = Arc::new(Shared {
            state: Mutex::new(Queues {
                queues: (0..k).map(|_| VecDeque::new()).collect(),
                current: 0,
                ahead: 0,
                gone: vec![false; k],
                stop: false,
            }),
            changed: Condvar::new(),
        });
        // Built first, so that a failure to start a thread stops (on drop) the ones started.
        let mut reader = ParquetReader {
            schema,
            rows,
            groups,
            workers: k,
            shared,
            threads: Vec::with_capacity(k),
        };
        for w in 0..k {
            let (meta, path, shared) = (meta.clone(), path.clone(), reader.shared.clone());
            let t = std::thread::Builder::new()
                .name(format!("npy-parquet-read-{w}"))
                .spawn(move || {
                    let _gone = Gone(&shared, w);
                    for g in (w..groups).step_by(k) {
                        let send = |msg| shared.send(w, g, msg);
                        let sent = match read_group(&path, &meta, g, batch_size.max(1), &send) {
                            Ok(true) => send(Msg::EndOfGroup),
                            Ok(false) => false,
                            Err(e) => send(Msg::Failed(e)),
                        };
                        if !sent {
                            return;
                        }
                    }
                })?;
            reader.threads.push(t);
        }
        Ok(reader)
    }

    /// Rows in the whole file.
    pub fn num_rows(&self) -> u64 {
        self.rows
    }

    /// The file's Arrow schema, with its metadata (the batches' own schemas have none).
    pub fn schema_ref(&self) -> &SchemaRef {
        &self.schema
    }

    fn stop(&mut self) {
        {
            let mut st = self.shared.lock();
            st.stop = true;
            st.current = self.groups;
            st.queues.iter_mut().for_each(VecDeque::clear);
        }
        self.shared.changed.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Decodes row group `g` of the file at `path` and sends its batches; false if the reader
/// was dropped.
fn read_group(
    path: &PathBuf,
    meta: &ArrowReaderMetadata,
    g: usize,
    batch_size: usize,
    send: &dyn Fn(Msg) -> bool,
) -> std::result::Result<bool, ArrowError> {
    let file = File::open(path)?;
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta.clone())
        .with_row_groups(vec![g])
        .with_projection(ProjectionMask::all())
        .with_batch_size(batch_size)
        .build()?;
    for b in reader {
        if !send(Msg::Batch(b?, 0)) {
            return Ok(false);
        }
    }
    Ok(true)
}

impl Iterator for ParquetReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut st = self.shared.lock();
        while st.current < self.groups {
            let w = st.current % self.workers;
            match st.queues[w].pop_front() {
                Some(Msg::Batch(b, ahead)) => {
                    st.ahead -= ahead;
                    drop(st);
                    self.shared.changed.notify_all();
                    return Some(Ok(b));
                }
                Some(Msg::EndOfGroup) => {
                    st.current += 1;
                    // The batches of the group now handed out no longer count as ahead.
                    let next = st.current % self.workers;
                    let mut queued = 0;
                    for m in st.queues[next].iter_mut() {
                        match m {
                            Msg::Batch(_, n) => queued += std::mem::take(n),
                            _ => break,
                        }
                    }
                    st.ahead -= queued;
                    self.shared.changed.notify_all();
                }
                Some(Msg::Failed(e)) => {
                    drop(st);
                    self.stop();
                    return Some(Err(e));
                }
                None if st.gone[w] => {
                    drop(st);
                    self.stop();
                    return Some(Err(ArrowError::ExternalError(Box::new(
                        Error::invalid_value("a Parquet reading thread stopped (it panicked)"),
                    ))));
                }
                None => st = self.shared.wait(st),
            }
        }
        None
    }
}

impl RecordBatchReader for ParquetReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for ParquetReader {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        ArrayRef, FixedSizeListArray, Float32Array, Int64Array, StringArray,
        TimestampMicrosecondArray,
    };
    use arrow_schema::{DataType, Field};

    fn batch(first: i64, n: usize) -> RecordBatch {
        let ids: Vec<i64> = (first..first + n as i64).collect();
        let v: Vec<f32> = ids
            .iter()
            .flat_map(|&i| [i as f32, 0.5, -(i as f32)])
            .collect();
        let item = Arc::new(Field::new("item", DataType::Float32, false));
        let list = FixedSizeListArray::new(item, 3, Arc::new(Float32Array::from(v)), None);
        let names: Vec<String> = ids.iter().map(|i| format!("r{}", i % 7)).collect();
        let t: Vec<Option<i64>> = ids.iter().map(|&i| (i % 5 != 0).then_some(i)).collect();
        RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("v", Arc::new(list) as ArrayRef),
            ("s", Arc::new(StringArray::from(names)) as ArrayRef),
            (
                "t",
                Arc::new(TimestampMicrosecondArray::from(t)) as ArrayRef,
            ),
        ])
        .unwrap()
    }

    fn props() -> WriterProperties {
        WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .build()
    }

    /// Batches of 37 rows (row groups of 100 split them): the file is the one `ArrowWriter`
    /// writes, and reads back in order, no batch spanning two row groups.
    #[test]
    fn same_file_as_arrow_writer_and_read_back_in_order() {
        let batches: Vec<RecordBatch> = (0..9).map(|k| batch(k * 37, 37)).collect();
        let schema = batches[0].schema();
        let mut ours = ParquetWriter::new(Vec::new(), schema.clone(), Some(props())).unwrap();
        let mut theirs = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props())).unwrap();
        for b in &batches {
            ours.write(b).unwrap();
            theirs.write(b).unwrap();
        }
        let ours = ours.finish().unwrap();
        assert!(
            ours == theirs.into_inner().unwrap(),
            "not ArrowWriter's file"
        );

        let path = std::env::temp_dir().join(format!("npy-pq-unit-{}.parquet", std::process::id()));
        std::fs::write(&path, &ours).unwrap();
        let r = ParquetReader::open(&path, 16).unwrap();
        assert_eq!(r.num_rows(), 333);
        assert_eq!(r.groups, 4);
        let got: Vec<RecordBatch> = r.collect::<std::result::Result<_, _>>().unwrap();
        std::fs::remove_file(&path).unwrap();
        // 100 = 6 * 16 + 4: seven batches per full row group, then 33 = 2 * 16 + 1.
        let sizes: Vec<usize> = got.iter().map(|b| b.num_rows()).collect();
        let mut want = Vec::new();
        for _ in 0..3 {
            want.extend([16, 16, 16, 16, 16, 16, 4]);
        }
        want.extend([16, 16, 1]);
        assert_eq!(sizes, want);
        assert_eq!(check_runs(&got), 333);
        assert_eq!(check_runs(&batches), 333);
    }

    /// Checks that the batches are the test batches of ids 0, 1, 2, ... without a gap (their
    /// other columns follow from the ids); returns the rows.
    fn check_runs(batches: &[RecordBatch]) -> i64 {
        let mut next = 0;
        for x in batches {
            let ids = x.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            assert_eq!(ids.value(0), next);
            assert_eq!(x.columns(), batch(next, ids.len()).columns());
            next += ids.len() as i64;
        }
        next
    }

    #[test]
    fn no_rows_and_errors() {
        let schema = batch(0, 1).schema();
        let ours = ParquetWriter::new(Vec::new(), schema.clone(), None).unwrap();
        let theirs = ArrowWriter::try_new(Vec::new(), schema.clone(), None).unwrap();
        assert!(ours.finish().unwrap() == theirs.into_inner().unwrap());

        let mut w = ParquetWriter::new(Vec::new(), schema, None).unwrap();
        let one =
            RecordBatch::try_from_iter([("id", Arc::new(Int64Array::from(vec![1])) as ArrayRef)])
                .unwrap();
        let e = w.write(&one).unwrap_err();
        assert!(e.to_string().contains("1 columns"), "{e}");
        let b = batch(0, 3);
        let mut cols = b.columns().to_vec();
        cols[0] = Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0]));
        let wrong = RecordBatch::try_new(
            Arc::new(arrow_schema::Schema::new(vec![
                Field::new("id", DataType::Float32, false),
                b.schema().field(1).clone(),
                b.schema().field(2).clone(),
                b.schema().field(3).clone(),
            ])),
            cols,
        )
        .unwrap();
        let e = w.write(&wrong).unwrap_err();
        assert!(e.to_string().contains("column `id` is Float32"), "{e}");
        // The writer is still good for batches of its schema.
        w.write(&b).unwrap();
        assert!(w.finish().unwrap().starts_with(b"PAR1"));
        // Dropped unfinished with leaves queued: the workers stop, nothing hangs.
        let mut w = ParquetWriter::new(Vec::new(), b.schema(), None).unwrap();
        for k in 0..10 {
            w.write(&batch(k * 100, 100)).unwrap();
        }
        drop(w);

        let path = std::env::temp_dir().join(format!("npy-pq-bad-{}.parquet", std::process::id()));
        std::fs::write(&path, b"not parquet at all").unwrap();
        let e = ParquetReader::open(&path, 8).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(e.to_string().contains("Parquet"), "{e}");
    }

    /// Many row groups over the workers: every batch in file order; a row group that fails
    /// to decode ends the batches there with its error, after all the rows before it.
    #[test]
    fn row_groups_in_order_and_a_bad_one_ends_them() {
        use ::parquet::file::reader::{FileReader, SerializedFileReader};
        let path = std::env::temp_dir().join(format!("npy-pq-many-{}.parquet", std::process::id()));
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .set_compression(::parquet::basic::Compression::UNCOMPRESSED)
            .build();
        let mut w = ParquetWriter::new(
            File::create(&path).unwrap(),
            batch(0, 1).schema(),
            Some(props),
        )
        .unwrap();
        for k in 0..20 {
            w.write(&batch(k * 100, 100)).unwrap();
        }
        w.finish().unwrap();
        let got: Vec<RecordBatch> = ParquetReader::open(&path, 7)
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(check_runs(&got), 2000);

        // Garbage over the first page header of row group 12's first column.
        let start = {
            let r = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
            r.metadata().row_group(12).column(0).data_page_offset() as usize
        };
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[start..start + 16].fill(0xff);
        std::fs::write(&path, &bytes).unwrap();
        let mut good = Vec::new();
        let mut err = None;
        for b in ParquetReader::open(&path, 7).unwrap() {
            match b {
                Ok(b) => good.push(b),
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
        assert_eq!(check_runs(&good), 1200);
        assert!(err.is_some(), "no error after row group 11");
    }

    #[test]
    fn a_reader_dropped_early_stops_its_workers() {
        let path = std::env::temp_dir().join(format!("npy-pq-drop-{}.parquet", std::process::id()));
        let mut w = ParquetWriter::new(
            File::create(&path).unwrap(),
            batch(0, 1).schema(),
            Some(props()),
        )
        .unwrap();
        for k in 0..20 {
            w.write(&batch(k * 50, 50)).unwrap();
        }
        w.finish().unwrap();
        let mut r = ParquetReader::open(&path, 10).unwrap();
        let b = r.next().unwrap().unwrap();
        assert_eq!(b.num_rows(), 10);
        drop(r);
        std::fs::remove_file(&path).unwrap();
    }
}
