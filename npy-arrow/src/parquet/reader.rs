//! [`ParquetReader`]: a Parquet file's record batches in file order, its row groups decoded by
//! a pool of worker threads ahead of the caller.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use ::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use ::parquet::arrow::ProjectionMask;
use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};

use super::error::read_err;
use super::locate::locate;
use super::seconds::{cast_batch, restored_schema, Cast};
use super::threads::{lock, wait, workers_for, QUEUED_BATCHES};
use npy_serde::error::{Error, Result};

/// Bytes of batches the reader's other workers decode ahead, in the row groups after the one
/// being read. With only [`QUEUED_BATCHES`] each, they stalled while the caller read the row
/// group before theirs: Parquet -> `.npy` ran on little more than one core.
pub const AHEAD_BYTES: usize = 16 << 20;

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
        lock(&self.state)
    }

    fn wait<'a>(&self, st: MutexGuard<'a, Queues>) -> MutexGuard<'a, Queues> {
        wait(&self.changed, st)
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
/// see the [module docs](crate::parquet) and their [example](crate::parquet#reading).
pub struct ParquetReader {
    /// The file's Arrow schema, with its metadata.
    schema: SchemaRef,
    rows: u64,
    /// Row groups in the file (read by the tests).
    pub(super) groups: usize,
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

impl ParquetReader {
    /// Reads the Parquet file at `path` in batches of at most `batch_size` rows (a batch does
    /// not span row groups).
    ///
    /// A millisecond timestamp column whose `numpy.descr` says seconds (as
    /// [`ParquetWriter`](super::ParquetWriter) writes `Timestamp(Second, _)` columns) is given
    /// in seconds again; a value that is not a whole second is an error naming the column and
    /// row.
    pub fn open<P: AsRef<Path>>(path: P, batch_size: usize) -> Result<Self> {
        Self::open_columns(path, batch_size, None, &[])
    }

    /// Reads the top-level columns `columns` of the Parquet file at `path` (all if `None`), in
    /// that order, except those named in `exclude`, as [`open`](Self::open) does: the other
    /// columns are never decoded (a projection of the file). A name the file lacks, or one
    /// given twice, is an error, and so is leaving no column.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    /// use npy_arrow::parquet::{ParquetReader, ParquetWriter};
    /// # let path = std::env::temp_dir().join(format!("pq-columns-{}.parquet", std::process::id()));
    /// let col = |v: i64| Arc::new(Int64Array::from(vec![v])) as ArrayRef;
    /// let batch = RecordBatch::try_from_iter([("a", col(1)), ("b", col(2)), ("c", col(3))]).unwrap();
    /// let mut w = ParquetWriter::new(std::fs::File::create(&path)?, batch.schema(), None)?;
    /// w.write(&batch)?;
    /// w.finish()?;
    /// let cols = ["c".to_string(), "a".to_string()];
    /// let mut r = ParquetReader::open_columns(&path, 1024, Some(&cols[..]), &[])?;
    /// let got = r.next().unwrap().unwrap();
    /// assert_eq!(got.schema().field(0).name(), "c");
    /// assert_eq!(got.columns(), &[col(3), col(1)]);
    /// let r = ParquetReader::open_columns(&path, 1024, None, &["b".to_string()])?;
    /// assert_eq!(r.schema_ref().fields().len(), 2);
    /// assert!(ParquetReader::open_columns(&path, 1024, None, &["x".to_string()]).is_err());
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn open_columns<P: AsRef<Path>>(
        path: P,
        batch_size: usize,
        columns: Option<&[String]>,
        exclude: &[String],
    ) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path)?;
        let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(read_err)?;
        let chosen = choose(meta.schema(), columns, exclude)?;
        let (mask, order) = match &chosen {
            Some(c) => {
                let mut sorted = c.clone();
                sorted.sort_unstable();
                let order = c
                    .iter()
                    .map(|i| sorted.binary_search(i).unwrap_or(0))
                    .collect::<Vec<_>>();
                let mask = ProjectionMask::roots(meta.parquet_schema(), sorted);
                (mask, Some(order))
            }
            None => (ProjectionMask::all(), None),
        };
        let projected = match &chosen {
            Some(c) => Arc::new(
                meta.schema()
                    .project(c)
                    .map_err(|e| Error::invalid_value(format!("Arrow: {e}")))?,
            ),
            None => meta.schema().clone(),
        };
        let restored = restored_schema(&projected);
        let schema = restored.clone().unwrap_or(projected);
        let rows = meta.metadata().file_metadata().num_rows().max(0) as u64;
        let groups = meta.metadata().num_row_groups();
        let mut first_rows = Vec::with_capacity(groups);
        let mut at = 0u64;
        for g in meta.metadata().row_groups() {
            first_rows.push(at);
            at = at.saturating_add(g.num_rows().max(0) as u64);
        }
        let plan = Arc::new(Plan {
            mask,
            order,
            restored,
            first_rows,
        });
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
            let plan = plan.clone();
            let t = std::thread::Builder::new()
                .name(format!("npy-parquet-read-{w}"))
                .spawn(move || {
                    let _gone = Gone(&shared, w);
                    for g in (w..groups).step_by(k) {
                        let send = |msg| shared.send(w, g, msg);
                        let bs = batch_size.max(1);
                        let sent = match read_group(&path, &meta, &plan, g, bs, &send) {
                            Ok(true) => send(Msg::EndOfGroup),
                            Ok(false) => false,
                            Err(ArrowError::ExternalError(e)) => {
                                send(Msg::Failed(ArrowError::ExternalError(e)))
                            }
                            Err(e) => {
                                let first = plan.first_rows.get(g).copied().unwrap_or(0);
                                let e = locate(&path, &meta, &plan.mask, g, first, bs, e);
                                send(Msg::Failed(ArrowError::ExternalError(Box::new(e))))
                            }
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

/// The top-level columns `columns` (all if `None`) minus `exclude`, as indices of `schema`'s
/// fields in the order to give them; `None` for all, in file order.
fn choose(
    schema: &arrow_schema::Schema,
    columns: Option<&[String]>,
    exclude: &[String],
) -> Result<Option<Vec<usize>>> {
    if columns.is_none() && exclude.is_empty() {
        return Ok(None);
    }
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let index = |name: &String| {
        names.iter().position(|n| n == name).ok_or_else(|| {
            Error::invalid_value(format!(
                "no column `{name}` in the file (its columns: {})",
                names.join(", ")
            ))
        })
    };
    let mut chosen = match columns {
        Some(c) => c.iter().map(index).collect::<Result<Vec<_>>>()?,
        None => (0..names.len()).collect(),
    };
    for (k, i) in chosen.iter().enumerate() {
        if chosen[..k].contains(i) {
            return Err(Error::invalid_value(format!(
                "column `{}` is chosen twice",
                names[*i]
            )));
        }
    }
    let dropped = exclude.iter().map(index).collect::<Result<Vec<_>>>()?;
    chosen.retain(|i| !dropped.contains(i));
    if chosen.is_empty() {
        return Err(Error::invalid_value(format!(
            "no column is left to read (the file's columns: {})",
            names.join(", ")
        )));
    }
    Ok(Some(chosen))
}

/// What every worker decodes: the projection, and what it does to each batch.
struct Plan {
    mask: ProjectionMask,
    /// The decoded columns (in file order) in the order asked for.
    order: Option<Vec<usize>>,
    /// The schema with seconds restored, if a column was written as milliseconds.
    restored: Option<SchemaRef>,
    /// The first row of each row group.
    first_rows: Vec<u64>,
}

/// Decodes row group `g` of the file at `path` and sends its batches; false if the reader
/// was dropped.
fn read_group(
    path: &PathBuf,
    meta: &ArrowReaderMetadata,
    plan: &Plan,
    g: usize,
    batch_size: usize,
    send: &dyn Fn(Msg) -> bool,
) -> std::result::Result<bool, ArrowError> {
    let file = File::open(path)?;
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta.clone())
        .with_row_groups(vec![g])
        .with_projection(plan.mask.clone())
        .with_batch_size(batch_size)
        .build()?;
    let mut row = plan.first_rows.get(g).copied().unwrap_or(0);
    for b in reader {
        let mut b = b?;
        if let Some(order) = &plan.order {
            b = b.project(order)?;
        }
        if let Some(s) = &plan.restored {
            b = cast_batch(&b, s, Cast::ToSeconds, row)
                .map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
        }
        row += b.num_rows() as u64;
        if !send(Msg::Batch(b, 0)) {
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
