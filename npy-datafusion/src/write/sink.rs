//! [`NpySink`]: DataFusion's `FileSink` for `.npy` files and `.npz` archives, the sink of
//! `COPY ... TO` and `INSERT INTO` that [`NpyFormat::create_writer_physical_plan`] plans.
//!
//! DataFusion's demultiplexer splits the statement's rows into files (one file, a directory
//! of files, or hive partitions); each file is written on a blocking thread by
//! [`write_file`] under a temporary name; once every file is written and the query has
//! succeeded, each is renamed into place (or uploaded). A failing query or write leaves none
//! of them, nor a directory the statement made.
//!
//! [`NpyFormat::create_writer_physical_plan`]: crate::NpyFormat

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::common::runtime::SpawnedTask;
use datafusion::datasource::file_format::write::demux::DemuxedStreamReceiver;
use datafusion::datasource::file_format::write::get_writer_schema;
use datafusion::datasource::physical_plan::{FileSink, FileSinkConfig};
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;

use super::file::{write_file, Kind, Target, Written};
use super::options::NpyWriteOptions;
#[cfg(doc)]
use super::order::planned_order;
use super::order::FileOrder;
use npy_arrow::order::SortColumn;

/// Writes a statement's rows as `.npy` files or `.npz` archives; see the
/// [module docs](crate#writing-copy-to-and-insert-into).
#[derive(Debug)]
pub struct NpySink {
    config: FileSinkConfig,
    options: NpyWriteOptions,
    kind: Kind,
    /// The order the plan gives the rows (verified in each file, then recorded).
    planned: Option<Vec<SortColumn>>,
    /// What the errors of writing the files go through (a Ballista executor's sink: its
    /// errors as text, see `ballista/errors.rs`); the query's own errors are left as they are.
    map_err: Option<fn(DataFusionError) -> DataFusionError>,
}

impl NpySink {
    pub(crate) fn new(config: FileSinkConfig, options: NpyWriteOptions, kind: Kind) -> Self {
        NpySink {
            config,
            options,
            kind,
            planned: None,
            map_err: None,
        }
    }

    /// The sink whose rows come in `order` as far as the plan says ([`planned_order`]): each
    /// file verifies it and records it if every row was in it.
    pub(crate) fn with_planned_order(mut self, order: Option<Vec<SortColumn>>) -> Self {
        self.planned = order;
        self
    }

    /// The sink whose write errors go through `f`.
    // For the Ballista codecs.
    #[cfg(feature = "ballista")]
    pub(crate) fn with_error_map(mut self, f: fn(DataFusionError) -> DataFusionError) -> Self {
        self.map_err = Some(f);
        self
    }

    /// The write options.
    pub fn options(&self) -> &NpyWriteOptions {
        &self.options
    }

    /// What each file it writes is.
    // For the Ballista codecs.
    #[cfg(feature = "ballista")]
    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }

    /// A write error, through the error map if there is one.
    fn write_error(&self, e: DataFusionError) -> DataFusionError {
        match self.map_err {
            Some(f) => f(e),
            None => e,
        }
    }

    /// The files' schema: the writer schema without a `numpy.fortran_order` a table's files
    /// had (a statement's rows come in row order: the files are written in C order).
    fn schema_of_files(&self) -> SchemaRef {
        let schema = get_writer_schema(&self.config);
        let mut metadata = schema.metadata().clone();
        if metadata.remove(npy_arrow::FORTRAN_KEY).is_none() {
            return schema;
        }
        Arc::new(Schema::new_with_metadata(schema.fields().clone(), metadata))
    }
}

impl DisplayAs for NpySink {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "NpySink(format={}, url={})",
                    self.kind.describe(),
                    self.config.original_url
                )
            }
            DisplayFormatType::TreeRender => {
                writeln!(f, "format: {}", self.kind.describe())?;
                write!(f, "file={}", self.config.original_url)
            }
        }
    }
}

#[async_trait]
impl DataSink for NpySink {
    fn schema(&self) -> &SchemaRef {
        self.config.output_schema()
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> DfResult<u64> {
        FileSink::write_all(self, data, context).await
    }
}

#[async_trait]
impl FileSink for NpySink {
    fn config(&self) -> &FileSinkConfig {
        &self.config
    }

    async fn spawn_writer_tasks_and_join(
        &self,
        _context: &Arc<TaskContext>,
        demux_task: SpawnedTask<DfResult<()>>,
        mut file_stream_rx: DemuxedStreamReceiver,
        object_store: Arc<dyn ObjectStore>,
    ) -> DfResult<u64> {
        // DataFusion's local store, rooted at `/` (as it registers it for `file://`).
        let local = object_store.to_string() == "LocalFileSystem(file:///)";
        let schema = self.schema_of_files();
        let partitions = Arc::new(partition_names(&self.config));
        let mut made = MadeDirs::default();
        let mut tasks = Vec::new();
        let mut failed: Option<DataFusionError> = None;
        while let Some((location, rx)) = file_stream_rx.recv().await {
            let target = if local {
                let path = LocalFileSystem::new().path_to_filesystem(&location)?;
                if let Err(e) = made.parents_of(&path) {
                    failed = Some(e);
                    break;
                }
                Target::Local(path)
            } else {
                Target::Store(location)
            };
            let (kind, options, schema) = (self.kind.clone(), self.options.clone(), schema.clone());
            let (partitions, planned) = (partitions.clone(), self.planned.clone());
            tasks.push(SpawnedTask::spawn_blocking(move || {
                let order = FileOrder::new(&options, planned.as_deref(), &schema)?;
                write_file(&kind, (&options, order), (&schema, &partitions), target, rx)
            }));
        }
        // The files not taken (a directory failed) are dropped: the demultiplexer then stops.
        drop(file_stream_rx);
        // Every file is written (or failed) before any is put in place.
        let mut written: Vec<Written> = Vec::with_capacity(tasks.len());
        for task in tasks {
            match task.join_unwind().await {
                Ok(Ok(w)) => written.push(w),
                Ok(Err(e)) => {
                    failed.get_or_insert(e);
                }
                Err(e) => {
                    failed.get_or_insert(DataFusionError::ExecutionJoin(Box::new(e)));
                }
            }
        }
        // The query's own failure (its rows stopped coming) is the demultiplexer's.
        let demuxed = demux_task
            .join_unwind()
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))
            .and_then(|r| r);
        if let Some(e) = failed {
            drop(written);
            made.remove();
            return Err(self.write_error(e));
        }
        if let Err(e) = demuxed {
            drop(written);
            made.remove();
            return Err(e);
        }
        let mut rows = 0;
        for w in written {
            rows += w.rows;
            w.commit(&object_store)
                .await
                .map_err(|e| self.write_error(e))?;
        }
        Ok(rows)
    }
}

/// The names of the partition columns of `config`'s output (hive-style `COLUMN=value/`
/// directories), in order.
pub(crate) fn partition_names(config: &FileSinkConfig) -> Vec<String> {
    (config.table_partition_cols.iter())
        .map(|(name, _)| name.clone())
        .collect()
}

/// The local directories a statement made for its files (removed again, if still empty, when
/// it fails).
#[derive(Default)]
struct MadeDirs(Vec<PathBuf>);

impl MadeDirs {
    /// Makes the missing directories above `file`.
    fn parents_of(&mut self, file: &std::path::Path) -> DfResult<()> {
        let Some(dir) = file.parent() else {
            return Ok(());
        };
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            DataFusionError::from(e).context(format!("making the directory {}", dir.display()))
        })?;
        // Outermost first, so that removing them in reverse empties each before its parent.
        self.0.extend(missing.into_iter().rev());
        Ok(())
    }

    /// Removes the directories made, innermost first, each only if empty.
    fn remove(self) {
        for d in self.0.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}
