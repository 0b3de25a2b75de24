//! `sql` (feature `sql`): a query over tables named by the table specs `npy sql -t` takes
//! (`npy_datafusion::TableSpec`: files, directories, globs, `.npz` members, column tables,
//! Parquet, Arrow IPC and CSV, URLs), on DataFusion, inside a memory limit if given. The result
//! is planned once and executed anew for each consumer of its Arrow stream (PyCapsule
//! interface), or collected into a record array through npy-arrow's writer (`np.save`'s bytes).

use std::io::Cursor;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use datafusion::dataframe::DataFrame;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use npy_datafusion::{
    memory_limited_context, register_npy_format, with_topk_prefilter, MemoryLimit, NpyReadOptions,
    NpySessionExt, TableSpec,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};
use tokio::runtime::Runtime;

use crate::errors::{guard, value_error};
use crate::interrupt::interruptible;

/// DataFusion's error on one line, as `npy sql` prints it.
fn flat(e: impl std::fmt::Display) -> String {
    e.to_string()
        .replace("\ncaused by\n", ": ")
        .replace("External error: ", "")
}

fn df_error(e: impl std::fmt::Display) -> PyErr {
    value_error(flat(e))
}

/// A planned query, its session and runtime kept for each execution.
#[pyclass(module = "npy_serde._native", frozen)]
pub struct Query {
    /// Always `Some` until dropped (then shut down without waiting, see `Drop`).
    rt: Option<Runtime>,
    df: DataFrame,
    schema: SchemaRef,
}

/// The runtime is shut down in the background: a query stopped by Ctrl-C may still have
/// operators inside a long computation on its worker threads, which a blocking shutdown (the
/// runtime's own `Drop`) would wait for; they stop at their next yield, or with the process.
impl Drop for Query {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// A query's batches, pulled by a task on the runtime and handed over a channel.
struct Blocking {
    batches: mpsc::Receiver<datafusion::error::Result<RecordBatch>>,
    /// The task pulling the stream: aborted (the stream dropped, the query stopped) when the
    /// reader is dropped or interrupted.
    task: tokio::task::JoinHandle<()>,
    schema: SchemaRef,
}

/// How often a consumer's wait for the next batch looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

impl Blocking {
    /// Pulls `stream` on `rt`, two batches ahead of the consumer at most.
    fn new(rt: &Runtime, mut stream: SendableRecordBatchStream, schema: SchemaRef) -> Blocking {
        let (tx, batches) = mpsc::sync_channel(2);
        let task = rt.spawn(async move {
            while let Some(item) = stream.next().await {
                let last = item.is_err();
                // A full channel blocks this worker until the consumer takes a batch: the
                // runtime moves its other tasks to another thread meanwhile.
                if tokio::task::block_in_place(|| tx.send(item)).is_err() || last {
                    break;
                }
            }
        });
        Blocking {
            batches,
            task,
            schema,
        }
    }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Iterator for Blocking {
    type Item = Result<RecordBatch, ArrowError>;

    /// The next batch. While it is computed, the calling thread looks for a pending signal
    /// every 50 ms (Python runs signal handlers on the main thread only: a consumer there,
    /// `pyarrow.table(q)` say, is interruptible); on Ctrl-C the query stops and the consumer
    /// gets an error saying so.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.batches.recv_timeout(SIGNAL_POLL) {
                Ok(item) => return Some(item.map_err(|e| ArrowError::ExternalError(Box::new(e)))),
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        self.task.abort();
                        let msg = format!("the query was interrupted ({e}): Ctrl-C stops it");
                        return Some(Err(ArrowError::ExternalError(msg.into())));
                    }
                }
            }
        }
    }
}

impl RecordBatchReader for Blocking {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Query {
    fn execute(&self) -> Result<Blocking, PyErr> {
        let rt = self.rt.as_ref().expect("a live query has its runtime");
        let stream = rt
            .block_on(self.df.clone().execute_stream())
            .map_err(df_error)?;
        Ok(Blocking::new(rt, stream, self.schema.clone()))
    }
}

#[pymethods]
impl Query {
    /// Plans `query` over `tables` (name and table spec pairs), inside `memory_limit` (`"2GiB"`,
    /// spilling past it) if given.
    #[new]
    #[pyo3(signature = (query, tables, memory_limit=None))]
    fn new(
        py: Python<'_>,
        query: &str,
        tables: Vec<(String, String)>,
        memory_limit: Option<&str>,
    ) -> PyResult<Query> {
        guard(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|e| value_error(format!("cannot start the query runtime: {e}")))?;
            let ctx = match memory_limit {
                None => SessionContext::new(),
                Some(text) => {
                    let limit: MemoryLimit = text
                        .parse()
                        .map_err(|e| value_error(format!("memory_limit: {e}")))?;
                    memory_limited_context(SessionConfig::new(), limit).map_err(df_error)?
                }
            };
            // As `npy sql` plans: the TopK prefilter under each `ORDER BY ... LIMIT k`.
            let ctx = SessionContext::new_with_state(with_topk_prefilter(ctx.state()));
            register_npy_format(&ctx).map_err(df_error)?;
            let plan = py.detach(|| -> Result<DataFrame, String> {
                for (name, text) in &tables {
                    let spec = TableSpec::parse_with(text, NpyReadOptions::new())
                        .map_err(|e| format!("{name}: {text}: {e}"))?
                        .absolute()
                        .map_err(|e| format!("{name}: {text}: {e}"))?;
                    npy_datafusion::register_store_for(
                        &ctx,
                        spec.location(),
                        &npy_remote::RemoteOptions::default(),
                    )
                    .map_err(|e| format!("{name}: {}", flat(e)))?;
                    rt.block_on(ctx.register_spec(name, &spec))
                        .map_err(|e| format!("{name}: {}", flat(e)))?;
                }
                rt.block_on(ctx.sql(query)).map_err(flat)
            });
            let df = plan.map_err(value_error)?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            Ok(Query {
                rt: Some(rt),
                df,
                schema,
            })
        })
    }

    /// The result's column names.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The result as an Arrow stream (PyCapsule interface), the query run anew.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyCapsule>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        guard(|| {
            // A consumer's requested schema selects columns of a scan; a query names its own.
            if requested_schema.is_some() {
                return Err(value_error(
                    "a query's result has the columns its SELECT names: select them there",
                ));
            }
            let reader = py.detach(|| self.execute())?;
            crate::arrow::stream_capsule(py, Box::new(reader))
        })
    }

    /// The whole result as `.npy` bytes (a record array, one field per column) written by
    /// npy-arrow's writer, the query run anew; Ctrl-C stops it.
    fn npy_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        guard(|| {
            let reader = self.execute()?;
            let bytes = interruptible(py, move |cancel| {
                let schema = reader.schema();
                let mut w = npy_arrow::BatchWriterBuilder::new()
                    .writer(Cursor::new(Vec::new()), &schema)?;
                for b in reader {
                    if crate::interrupt::is_cancelled(cancel) {
                        return Err(crate::interrupt::stopped());
                    }
                    let b = b.map_err(|e| npy_serde::Error::invalid_value(flat(e)))?;
                    w.write(&b)?;
                }
                Ok(w.finish()?.into_inner())
            })?;
            Ok(PyBytes::new(py, &bytes))
        })
    }
}
