//! [`ColumnScanExec`]: the scan of a column table. Its partitions are runs of rows (the
//! table's rows, or the first `LIMIT` of them, split evenly over the partitions); each reads
//! only the projected columns, batch by batch, from a blocking task. The columns are opened
//! once per scan and shared by its partitions (which start on different columns, so that the
//! work of opening them, inflating deflated members and checking CRCs, is spread over them).

use std::sync::{Arc, OnceLock};

use arrow_array::{RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream, StatisticsArgs,
};
use futures::stream::{self, StreamExt};
use tokio::sync::mpsc::Sender;

use super::super::options::NpyReadOptions;
use super::data::{open_column, ColumnData, OpenArchive};
use super::remote;
use super::survey::{in_column, Place, Survey};
use crate::arrow::arrow_err;
use crate::error::Error;
use crate::npz::MmapNpz;

/// What a column table's scan reads: all that travels with it to another process (Ballista's
/// executors).
#[derive(Clone, Debug)]
pub(crate) struct ColumnScan {
    /// The archive or directory, as the table names it.
    pub(crate) location: String,
    pub(crate) options: NpyReadOptions,
    /// The table's columns.
    pub(crate) table: SchemaRef,
    /// The columns read (indices into `table`); all of them for `None`.
    pub(crate) projection: Option<Vec<usize>>,
    /// The query's `LIMIT`: the scan reads the first `limit` rows.
    pub(crate) limit: Option<usize>,
    /// The table's rows when the scan was planned.
    pub(crate) rows: u64,
    pub(crate) partitions: usize,
    pub(crate) batch_size: usize,
    /// What the scan's errors go through before DataFusion sees them (Ballista's executors
    /// send them as text).
    pub(crate) map_err: Option<fn(DataFusionError) -> DataFusionError>,
}

/// An error shared by the partitions that met it.
type Shared<T> = OnceLock<Result<T, Arc<DataFusionError>>>;

/// What the partitions of one scan share: the survey, the archive, the opened columns.
#[derive(Default)]
struct Opened {
    survey: Shared<Arc<Survey>>,
    archive: Shared<Option<OpenArchive>>,
    columns: Vec<Shared<Arc<ColumnData>>>,
}

/// The scan of a column table; see the [module docs](self).
pub(crate) struct ColumnScanExec {
    pub(crate) scan: ColumnScan,
    projected: SchemaRef,
    indices: Vec<usize>,
    properties: Arc<PlanProperties>,
    opened: Arc<Opened>,
}

impl std::fmt::Debug for ColumnScanExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnScanExec")
            .field("scan", &self.scan)
            .finish_non_exhaustive()
    }
}

impl ColumnScanExec {
    /// The scan `scan` describes.
    pub(crate) fn new(scan: ColumnScan) -> DfResult<ColumnScanExec> {
        let indices: Vec<usize> = match &scan.projection {
            Some(p) => p.clone(),
            None => (0..scan.table.fields().len()).collect(),
        };
        let projected = Arc::new(scan.table.project(&indices)?);
        let properties = PlanProperties::new(
            EquivalenceProperties::new(projected.clone()),
            Partitioning::UnknownPartitioning(scan.partitions.max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        let opened = Opened {
            columns: indices.iter().map(|_| OnceLock::new()).collect(),
            ..Opened::default()
        };
        Ok(ColumnScanExec {
            scan,
            projected,
            indices,
            properties: Arc::new(properties),
            opened: Arc::new(opened),
        })
    }

    /// The rows the scan reads.
    fn rows(&self) -> u64 {
        match self.scan.limit {
            Some(l) => self.scan.rows.min(l as u64),
            None => self.scan.rows,
        }
    }

    /// The rows of `partition`.
    fn range(&self, partition: usize) -> (u64, u64) {
        let n = self.scan.partitions.max(1) as u64;
        let rows = self.rows();
        let p = partition as u64;
        (rows * p / n, rows * (p + 1) / n)
    }
}

impl DisplayAs for ColumnScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let names: Vec<&str> = self
            .projected
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        match t {
            DisplayFormatType::TreeRender => write!(f, "location={}", self.scan.location),
            _ => {
                write!(
                    f,
                    "ColumnScanExec: location={}, columns=[{}], rows={}",
                    self.scan.location,
                    names.join(", "),
                    self.scan.rows
                )?;
                if let Some(l) = self.scan.limit {
                    write!(f, ", limit={l}")?;
                }
                Ok(())
            }
        }
    }
}

impl ExecutionPlan for ColumnScanExec {
    fn name(&self) -> &str {
        "ColumnScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let (first, end) = self.range(partition);
        let part = Partition {
            scan: self.scan.clone(),
            projected: self.projected.clone(),
            indices: self.indices.clone(),
            opened: self.opened.clone(),
            rows: self.rows(),
            whole: self.scan.limit.is_none(),
            runtime: context.runtime_env(),
            partition,
            first,
            end,
        };
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
        tokio::task::spawn_blocking(move || part.send(&tx));
        let batches = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.projected.clone(),
            batches.boxed(),
        )))
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        // Exact: the table was surveyed as the scan was planned (every column holds the data
        // its header declares, all of one length), and the scan fails rather than return
        // other rows.
        let rows = match args.partition() {
            Some(p) => {
                let (a, b) = self.range(p);
                b - a
            }
            None => self.rows(),
        };
        let rows = usize::try_from(rows).unwrap_or(usize::MAX);
        Ok(Arc::new(
            Statistics::new_unknown(&self.projected).with_num_rows(Precision::Exact(rows)),
        ))
    }
}

/// One partition's work, on a blocking thread.
struct Partition {
    scan: ColumnScan,
    projected: SchemaRef,
    indices: Vec<usize>,
    opened: Arc<Opened>,
    /// The rows of the whole scan (all partitions).
    rows: u64,
    whole: bool,
    runtime: Arc<RuntimeEnv>,
    partition: usize,
    first: u64,
    end: u64,
}

fn shared<T: Clone>(cell: &Shared<T>, f: impl FnOnce() -> DfResult<T>) -> DfResult<T> {
    cell.get_or_init(|| f().map_err(Arc::new))
        .clone()
        .map_err(DataFusionError::Shared)
}

impl Partition {
    /// Sends the partition's batches to `tx`, until the last, an error, or the query stops
    /// reading.
    fn send(self, tx: &Sender<DfResult<RecordBatch>>) {
        let map = |e: DataFusionError| match self.scan.map_err {
            Some(f) => f(e),
            None => e,
        };
        let columns = match self.open() {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.blocking_send(Err(map(e)));
                return;
            }
        };
        let mut at = self.first;
        let step = self.scan.batch_size.max(1) as u64;
        while at < self.end {
            let rows = step.min(self.end - at) as usize;
            let batch = self.batch(&columns, at, rows).map_err(map);
            let failed = batch.is_err();
            if tx.blocking_send(batch).is_err() || failed {
                return;
            }
            at += rows as u64;
        }
    }

    /// The survey, the archive and the projected columns, opened by the first partition that
    /// needs each.
    fn open(&self) -> DfResult<Vec<Arc<ColumnData>>> {
        let scan = &self.scan;
        let survey = shared(&self.opened.survey, || {
            let survey = remote::survey_blocking(&scan.location, &self.runtime, &scan.options)?;
            survey.check_columns(&self.projected)?;
            if survey.rows != scan.rows {
                return Err(
                    DataFusionError::External(Box::new(Error::invalid_value(format!(
                        "the table has {} rows, {} when the query was planned: its files \
                         changed during the query",
                        survey.rows, scan.rows
                    ))))
                    .context(format!("file {}", survey.place)),
                );
            }
            Ok(Arc::new(survey))
        })?;
        let archive = shared(&self.opened.archive, || match &survey.place {
            Place::Archive(path) => MmapNpz::open_with(path, &scan.options.npz_options())
                .map(|npz| Some(Arc::new(npz)))
                .map_err(|e| {
                    DataFusionError::External(Box::new(e))
                        .context(format!("file {}", path.display()))
                }),
            Place::Directory(_) | Place::Remote(_) => Ok(None),
        })?;
        let n = self.indices.len();
        let mut out: Vec<Option<Arc<ColumnData>>> = vec![None; n];
        for k in 0..n {
            let j = (k + self.partition) % n;
            let name = self.projected.field(j).name();
            let column = survey.column(name)?;
            let data = shared(&self.opened.columns[j], || {
                open_column(
                    &survey,
                    archive.as_ref(),
                    column,
                    &scan.options,
                    self.rows,
                    self.whole,
                )
                .map(Arc::new)
            })?;
            out[j] = Some(data);
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn batch(&self, columns: &[Arc<ColumnData>], first: u64, rows: usize) -> DfResult<RecordBatch> {
        let mut arrays = Vec::with_capacity(columns.len());
        for (j, c) in columns.iter().enumerate() {
            let a = c.rows(first, rows).map_err(|e| self.column_err(j, e))?;
            arrays.push(a);
        }
        RecordBatch::try_new_with_options(
            self.projected.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| DataFusionError::External(Box::new(arrow_err(e))))
    }

    fn column_err(&self, j: usize, e: Error) -> DataFusionError {
        let name = self.projected.field(j).name();
        match self.opened.survey.get() {
            Some(Ok(survey)) => match survey.column(name) {
                Ok(c) => in_column(e, &survey.place, &c.source),
                Err(other) => other,
            },
            _ => DataFusionError::External(Box::new(e)).context(format!("column {name}")),
        }
    }
}
