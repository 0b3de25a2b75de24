//! [`ParquetWriter`]: record batches into a Parquet file, each row group's columns encoded by a
//! pool of worker threads while the caller hands over the next batch.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use ::parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn,
    ArrowRowGroupWriterFactory,
};
use ::parquet::arrow::ArrowWriter;
use ::parquet::errors::ParquetError;
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::error::write_err;
use super::seconds::{cast_batch, parquet_schema, Cast};
use super::threads::{lock, wait, workers_for, QUEUED_BATCHES};
use npy_serde::error::{Error, Result};

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
        lock(&self.state)
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
                st = wait(&self.work, st);
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
/// [module docs](crate::parquet) and their [example](crate::parquet#writing).
pub struct ParquetWriter<W: Write + Send> {
    /// `None` once finished.
    file: Option<SerializedFileWriter<W>>,
    factory: ArrowRowGroupWriterFactory,
    /// The batches' schema.
    schema: SchemaRef,
    /// The schema written, when it differs (seconds timestamps as milliseconds).
    written: Option<SchemaRef>,
    /// Rows queued so far (for errors naming a row).
    rows: u64,
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
    ///
    /// `Timestamp(Second, _)` columns (a `.npy` file's `M8[s]`, `M8[m]`, `M8[h]`), which
    /// Parquet has no unit for, are written as `Timestamp(Millisecond, _)` (the TIMESTAMP
    /// that pyarrow, polars and DuckDB read), their `numpy.descr` kept, so that
    /// [`ParquetReader`](super::ParquetReader) gives seconds back; a value out of range in
    /// milliseconds is an error naming the column and row.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use arrow_array::{ArrayRef, RecordBatch, TimestampSecondArray};
    /// use npy_arrow::parquet::{ParquetReader, ParquetWriter};
    /// # let path = std::env::temp_dir().join(format!("pq-seconds-{}.parquet", std::process::id()));
    /// let t = TimestampSecondArray::from(vec![Some(1_700_000_000), None]);
    /// let batch = RecordBatch::try_from_iter([("t", Arc::new(t) as ArrayRef)]).unwrap();
    /// let mut w = ParquetWriter::new(std::fs::File::create(&path)?, batch.schema(), None)?;
    /// w.write(&batch)?;
    /// w.finish()?;
    /// // Milliseconds in the file, seconds again when read back.
    /// let mut r = ParquetReader::open(&path, 1024)?;
    /// assert_eq!(r.next().unwrap().unwrap().column(0), batch.column(0));
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn new(inner: W, schema: SchemaRef, props: Option<WriterProperties>) -> Result<Self> {
        let props = props.unwrap_or_default();
        let max_rows = props.max_row_group_row_count().unwrap_or(usize::MAX).max(1);
        let written = parquet_schema(&schema);
        let to_file = written.clone().unwrap_or_else(|| schema.clone());
        let (file, factory) = ArrowWriter::try_new(inner, to_file, Some(props))
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
            written,
            rows: 0,
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
        let cast;
        let batch = match &self.written {
            Some(s) => {
                cast = cast_batch(batch, s, Cast::ToMillis, self.rows)?;
                &cast
            }
            None => batch,
        };
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
        let schema = self.written.as_ref().unwrap_or(&self.schema);
        for (field, col) in schema.fields().iter().zip(batch.columns()) {
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
            st = wait(&self.pool.done, st);
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
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Waits for the row group's columns and writes them out as a row group.
    fn flush_group(&mut self) -> Result<()> {
        if self.rows_in_group == 0 {
            return Ok(());
        }
        let mut st = self.pool.lock();
        while st.error.is_none() && st.columns.iter().any(|c| c.claimed || !c.queue.is_empty()) {
            st = wait(&self.pool.done, st);
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
