//! The scan of a column table, planned as DataFusion's own `DataSourceExec` over a
//! `FileScanConfig`: its file groups are runs of rows, one per partition (the table's rows,
//! or the first `LIMIT` of them, split evenly), each one `PartitionedFile` that names the
//! table's location with the run as its `range` (rows, not bytes). [`ColumnSource`], the
//! `FileSource`, reads only the projected columns of a run, batch by batch, from a blocking
//! task.
//!
//! A table declared sorted (the option `sort_order`, SQL's `WITH ORDER`) is in that order
//! from its first row to its last, so each run is too: the scan's `output_ordering` is the
//! declared order in every partition (one file per group, as DataFusion requires of an
//! ordering it keeps), and an `ORDER BY` on it merges the partitions
//! (`SortPreservingMergeExec`) instead of sorting. The order is trusted, not checked.
//!
//! A `DataSourceExec` over file groups is what Ballista's scheduler restricts to each task's
//! partitions, so the tasks of a cluster read disjoint runs of rows; and it is what the
//! physical codec already sends (datafusion-proto's `FileScanExecConf`, our options beside).
//!
//! The columns are opened once per scan and shared by its partitions (which start on
//! different columns, so that the work of opening them, inflating deflated members and
//! checking CRCs, is spread over them); on a cluster, once per task. A column on an object
//! store is fetched for the rows of the scan's runs only: every row in one process, the runs
//! of its partitions on a cluster's task.
//!
//! The scan takes the filters DataFusion pushes into it (the physical `FilterPushdown` rule)
//! that it evaluates exactly (see `filter::pushable`), unless `filter_pushdown=false` or a
//! `LIMIT` was planned into it: each batch's filter columns are read first and the predicate
//! evaluated on them; a batch no row of which passes is skipped, and the other projected
//! columns are read only for the rows that pass (late materialisation: a column viewed in place
//! copies only the kept values, a decoded one, strings say, decodes only the kept rows when
//! they are sparse). The filter's conjuncts that compare a `U<n>` column with string literals
//! (`=`, `IN`, `LIKE`, ...) are evaluated first, on the column's UTF-32 bytes (see `raw`): such
//! a column is made Arrow strings only for the rows that pass, and not at all when the query
//! does not return it (TPC-H Q19's `l_shipinstruct`, Q13's `o_comment`). Its metric
//! `bytes_scanned`, one per column (`EXPLAIN ANALYZE` shows them), counts the column bytes
//! each read.
//!
//! Statistics: the exact number of rows of the scan and of each run; and where the scan
//! reports an order, the least and greatest values of the order's first column, of the scan
//! and of each run (its first and last rows, see `bounds`), exact. DataFusion answers `min` and
//! `max` of that column from them without a scan (its `AggregateStatistics` rule). DataFusion
//! prunes no file group by its statistics itself (only its Parquet opener prunes files): the
//! scan does, each run whose bounds exclude every row of the pushed filter is not read (its
//! metric `runs_pruned` counts them).

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use arrow_array::{BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::datasource::listing::{ListingTableUrl, PartitionedFile};
use datafusion::datasource::physical_plan::{
    FileGroup, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_optimizer::pruning::FilePruner;
use datafusion::physical_plan::filter_pushdown::FilterPushdownPropagation;
use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder};
use datafusion::physical_plan::{DisplayFormatType, PhysicalExpr};
use futures::stream::{self, StreamExt};
use object_store::ObjectStore;
use tokio::sync::mpsc::Sender;

use super::super::filter::{take_filters, Lookups, ScanFilter};
use super::super::opener::ErrorMap;
use super::super::options::NpyReadOptions;
use super::bounds::Bounds;
use super::data::{open_archive, open_column, ColumnData, OpenArchive};
use super::remote;
use super::survey::{in_column, Place, Survey};
use crate::raw::{Raw, Values};
use npy_arrow::arrow_err;
use npy_serde::error::Error;

/// An error shared by the partitions that met it.
type Shared<T> = OnceLock<Result<T, Arc<DataFusionError>>>;

/// What the partitions of one scan share: the survey, the archive, the opened columns (by
/// their index in the table).
struct Opened {
    survey: Shared<Arc<Survey>>,
    archive: Shared<Option<Arc<OpenArchive>>>,
    columns: Vec<Shared<Arc<ColumnData>>>,
}

impl Opened {
    fn new(columns: usize) -> Opened {
        Opened {
            survey: OnceLock::new(),
            archive: OnceLock::new(),
            columns: (0..columns).map(|_| OnceLock::new()).collect(),
        }
    }
}

/// The scan of `survey`'s table (registered with the columns of `table`): `projection` of
/// them, the first `limit` rows, over `partitions` runs of rows.
pub(crate) fn plan(
    location: &str,
    options: &NpyReadOptions,
    table: SchemaRef,
    survey: &Survey,
    projection: Option<Vec<usize>>,
    limit: Option<usize>,
    partitions: usize,
) -> DfResult<Arc<DataSourceExec>> {
    let rows = survey.rows;
    let read = limit.map_or(rows, |l| rows.min(l as u64));
    let n = partitions.max(1) as u64;
    // The least and greatest values of the sorted columns (of each run: its first and last).
    let bounds = Bounds::of(survey, options, &table);
    let mut groups = Vec::new();
    for p in 0..n {
        let (start, end) = (read * p / n, read * (p + 1) / n);
        if start == end && !groups.is_empty() {
            continue;
        }
        let exact = Arc::new(bounds.exact(&table, start, end));
        let statistics = Arc::new(bounds.statistics(&table, start, end));
        groups.push(run(location, exact, statistics, start, end)?);
    }
    // The runs are consecutive rows of the table: each is in the table's declared order.
    let ordering = options.output_ordering(&table)?;
    let source = ColumnSource::new(location, options.clone(), table.clone(), rows, read);
    let statistics = bounds.statistics(&table, 0, read);
    let config = FileScanConfigBuilder::new(remote::store_url(location)?, Arc::new(source))
        .with_file_groups(groups)
        .with_projection_indices(projection)?
        .with_limit(limit)
        .with_statistics(statistics)
        .with_output_ordering(ordering)
        .build();
    Ok(DataSourceExec::from_data_source(config))
}

/// The file group of rows `start..end`: one file, its range those rows, its `exact`
/// statistics (the exact number of rows; the bounds of sorted columns: what the pruning of
/// runs reads), the group's `statistics` those and the recorded ones (inexact, for planning).
fn run(
    location: &str,
    exact: Arc<Statistics>,
    statistics: Arc<Statistics>,
    start: u64,
    end: u64,
) -> DfResult<FileGroup> {
    let bound =
        |r: u64| i64::try_from(r).map_err(|_| DataFusionError::Internal(format!("{r} rows")));
    let file = PartitionedFile::new(object_path(location)?, 0)
        .with_range(bound(start)?, bound(end)?)
        .with_statistics(exact);
    Ok(FileGroup::new(vec![file]).with_statistics(statistics))
}

/// The path of the location in its store (what the file groups name; the opener reads the
/// location the source holds).
fn object_path(location: &str) -> DfResult<String> {
    Ok(ListingTableUrl::parse(location)?.prefix().to_string())
}

/// The `FileSource` of a column table's scan; see the [module docs](self).
#[derive(Clone)]
pub(crate) struct ColumnSource {
    /// The archive, directory or prefix, as the table names it.
    location: String,
    options: NpyReadOptions,
    table_schema: TableSchema,
    projection: SplitProjection,
    /// The table's rows when the scan was planned, and the rows it reads (a `LIMIT`'s).
    rows: u64,
    read: u64,
    batch_size: usize,
    map_err: Option<ErrorMap>,
    metrics: ExecutionPlanMetricsSet,
    opened: Arc<Opened>,
    /// The filter pushed into the scan (over the table's columns).
    predicate: Option<Arc<dyn PhysicalExpr>>,
}

impl std::fmt::Debug for ColumnSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnSource")
            .field("location", &self.location)
            .field("file_indices", &self.projection.file_indices)
            .field("rows", &self.rows)
            .field("read", &self.read)
            .field("predicate", &self.predicate)
            .finish_non_exhaustive()
    }
}

impl ColumnSource {
    /// The scan of the table at `location` with the columns `table`, which had `rows` rows when
    /// it was planned; `read` of them are read (the first ones).
    pub(crate) fn new(
        location: &str,
        options: NpyReadOptions,
        table: SchemaRef,
        rows: u64,
        read: u64,
    ) -> ColumnSource {
        let table_schema = TableSchema::from(table.clone());
        ColumnSource {
            location: location.to_string(),
            options,
            projection: SplitProjection::unprojected(&table_schema),
            opened: Arc::new(Opened::new(table.fields().len())),
            table_schema,
            rows,
            read,
            batch_size: npy_arrow::DEFAULT_BATCH_SIZE,
            map_err: None,
            metrics: ExecutionPlanMetricsSet::new(),
            predicate: None,
        }
    }
}

/// What Ballista's physical codec reads and sets.
#[cfg(feature = "ballista")]
impl ColumnSource {
    /// The scan with every error passed through `f` (Ballista's executors send them as text).
    pub(crate) fn with_error_map(mut self, f: ErrorMap) -> Self {
        self.map_err = Some(f);
        self
    }

    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    pub(crate) fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The table's rows when the scan was planned, and the rows it reads.
    pub(crate) fn rows(&self) -> (u64, u64) {
        (self.rows, self.read)
    }

    pub(crate) fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// The scan keeping only the rows for which `predicate` (over the table's columns) is
    /// true, as a scan DataFusion pushed the filter into does (the codec sets it again on the
    /// executors).
    pub(crate) fn with_predicate(mut self, predicate: Option<Arc<dyn PhysicalExpr>>) -> Self {
        self.predicate = predicate;
        self
    }
}

impl FileSource for ColumnSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        let file_schema = self.table_schema.file_schema();
        let indices = self.projection.file_indices.clone();
        let filter = match &self.predicate {
            Some(p) => Some(Arc::new(ScanFilter::new(p, file_schema)?)),
            None => None,
        };
        // The projected columns, then the filter's others.
        let read = match &filter {
            Some(f) => f.read_columns(&indices),
            None => indices.clone(),
        };
        let scanned = read
            .iter()
            .map(|&i| {
                MetricBuilder::new(&self.metrics)
                    .with_new_label("column", file_schema.field(i).name().clone())
                    .counter("bytes_scanned", partition)
            })
            .collect();
        let opener = Arc::new(ColumnOpener {
            projected: Arc::new(file_schema.project(&indices)?),
            columns: Arc::new(file_schema.project(&read)?),
            projected_len: indices.len(),
            indices: read,
            filter,
            scanned: Arc::new(scanned),
            source: self.clone(),
            store: object_store,
            partition,
            span: span_of(base_config, self.read),
            pruned: MetricBuilder::new(&self.metrics).counter("runs_pruned", partition),
            pruning_errors: MetricBuilder::new(&self.metrics)
                .counter("pruning_predicate_errors", partition),
        });
        ProjectionOpener::try_new(self.projection.clone(), opener, file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(ColumnSource {
            batch_size,
            ..self.clone()
        })
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "npy columns"
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(f, ", location={}, rows={}", self.location, self.rows)?;
                match &self.predicate {
                    Some(p) => write!(f, ", predicate={p}"),
                    None => Ok(()),
                }
            }
            DisplayFormatType::TreeRender => Ok(()),
        }
    }

    /// The runs of rows are the partitions: DataFusion must not split or merge them.
    fn supports_repartitioning(&self) -> bool {
        false
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> DfResult<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        source.projection = SplitProjection::new(
            self.table_schema.file_schema(),
            &source.projection.source.try_merge(projection)?,
        );
        Ok(Some(Arc::new(source)))
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        if let Some(p) = &self.predicate
            && f(p)? == TreeNodeRecursion::Stop
        {
            return Ok(TreeNodeRecursion::Stop);
        }
        datafusion::physical_plan::apply_expression_roots(self.projection.source.iter(), f)
    }

    /// Takes the filters it evaluates exactly (over the table's columns, not volatile),
    /// answering `Yes` for them and `No` for the others (DataFusion keeps those); none with
    /// `filter_pushdown=false`, and none into a scan of a `LIMIT`'s first rows (the rows a
    /// filter keeps may lie past them).
    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        Ok(take_filters(
            &filters,
            !self.options.keep_filters && self.read == self.rows,
            &self.table_schema,
            self.predicate.as_ref(),
            |predicate| {
                let mut source = self.clone();
                source.predicate = Some(predicate);
                Arc::new(source)
            },
        ))
    }

    fn filter(&self) -> Option<Arc<dyn PhysicalExpr>> {
        self.predicate.clone()
    }
}

/// Opens a run of rows (a `PartitionedFile` whose range is the rows).
struct ColumnOpener {
    source: ColumnSource,
    store: Arc<dyn ObjectStore>,
    /// The columns read (indices into the table): the projected ones, then a filter's others.
    indices: Vec<usize>,
    /// Their schema, and the projected columns' (the first `projected_len`).
    columns: SchemaRef,
    projected: SchemaRef,
    projected_len: usize,
    filter: Option<Arc<ScanFilter>>,
    /// Each read column's `bytes_scanned`.
    scanned: Arc<Vec<Count>>,
    partition: usize,
    /// The rows of every run of this scan (see [`span_of`]).
    span: Range<u64>,
    /// The runs not read (`runs_pruned`), and the filters no pruning predicate was made of.
    pruned: Count,
    pruning_errors: Count,
}

/// The rows the runs of `config`'s file groups cover, from the first one's start to the last
/// one's end (`read`, the rows the scan reads, for a file without a range): every run in one
/// process, and on a cluster's task only the runs of its partitions (Ballista's scheduler gives
/// each task the file groups of its partitions). Columns on an object store are fetched for
/// these rows only: a task of a scan over 8 partitions fetched every row of each column it read
/// (on two executors, 4 times a column's bytes at the server for one query).
fn span_of(config: &FileScanConfig, read: u64) -> Range<u64> {
    let runs = config
        .file_groups
        .iter()
        .flat_map(|g| g.files())
        .map(|f| match &f.range {
            Some(r) => {
                let end = u64::try_from(r.end).unwrap_or(0).min(read);
                (u64::try_from(r.start).unwrap_or(0).min(end), end)
            }
            None => (0, read),
        });
    let covered = runs
        .filter(|(a, b)| a < b)
        .reduce(|(a, b), (c, d)| (a.min(c), b.max(d)));
    match covered {
        Some((a, b)) => a..b,
        None => 0..0,
    }
}

impl FileOpener for ColumnOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        // A run whose statistics (the bounds of a sorted column) exclude every row the
        // pushed filter keeps is not read.
        if let Some(predicate) = &self.source.predicate
            && let Some(mut pruner) = FilePruner::try_new(
                predicate.clone(),
                self.source.table_schema.file_schema(),
                &file,
                self.pruning_errors.clone(),
            )
            && pruner.should_prune()?
        {
            self.pruned.add(1);
            return Ok(Box::pin(async { Ok(stream::empty().boxed()) }));
        }
        let (first, end) = match &file.range {
            Some(r) => (
                u64::try_from(r.start).unwrap_or(0),
                u64::try_from(r.end).unwrap_or(0),
            ),
            None => (0, self.source.read),
        };
        let part = Partition {
            source: self.source.clone(),
            store: self.store.clone(),
            projected: self.projected.clone(),
            columns: self.columns.clone(),
            projected_len: self.projected_len,
            indices: self.indices.clone(),
            filter: self.filter.clone(),
            scanned: self.scanned.clone(),
            partition: self.partition,
            span: self.span.clone(),
            first,
            end: end.min(self.source.read),
        };
        Ok(Box::pin(async move {
            let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
            tokio::task::spawn_blocking(move || part.send(&tx));
            let batches =
                stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
            Ok(batches.boxed())
        }))
    }
}

/// One run's work, on a blocking thread.
struct Partition {
    source: ColumnSource,
    store: Arc<dyn ObjectStore>,
    projected: SchemaRef,
    /// The columns read (see [`ColumnOpener`]), their schema, the projected ones' count.
    columns: SchemaRef,
    projected_len: usize,
    indices: Vec<usize>,
    filter: Option<Arc<ScanFilter>>,
    scanned: Arc<Vec<Count>>,
    partition: usize,
    /// The rows of every run of the scan: what its columns on an object store are fetched for.
    span: Range<u64>,
    first: u64,
    end: u64,
}

/// A scan's filter for the columns a partition opened (see [`Partition::stage`]).
struct Staged {
    /// The conjuncts evaluated on the bytes of `U<n>`, integer and day columns, and those
    /// columns (positions among the columns read).
    raw: Vec<Raw>,
    raw_on: Vec<usize>,
    /// The others: the filter, its columns (positions among the columns read) and their
    /// schema.
    rest: Option<(Arc<ScanFilter>, Vec<usize>, SchemaRef)>,
    /// Whether the filter evaluates a join's hash-table lookup (see [`Lookups`]).
    lookups: Lookups,
}

fn shared<T: Clone>(cell: &Shared<T>, f: impl FnOnce() -> DfResult<T>) -> DfResult<T> {
    cell.get_or_init(|| f().map_err(Arc::new))
        .clone()
        .map_err(DataFusionError::Shared)
}

impl Partition {
    /// Sends the run's batches to `tx`, until the last, an error, or the query stops reading.
    fn send(self, tx: &Sender<DfResult<RecordBatch>>) {
        let map = |e: DataFusionError| match self.source.map_err {
            Some(f) => f(e),
            None => e,
        };
        let opened = self.open().and_then(|columns| {
            let staged = match &self.filter {
                Some(f) => Some(self.stage(f, &columns)?),
                None => None,
            };
            Ok((columns, staged))
        });
        let (columns, mut staged) = match opened {
            Ok(c) => c,
            Err(e) => {
                let _ = tx.blocking_send(Err(map(e)));
                return;
            }
        };
        let mut at = self.first;
        let step = self.source.batch_size.max(1) as u64;
        while at < self.end {
            let rows = step.min(self.end - at) as usize;
            let batch = match &mut staged {
                None => self.batch(&columns, at, rows).map(Some),
                Some(f) => self.filtered(f, &columns, at, rows),
            };
            at += rows as u64;
            let batch = match batch {
                Ok(None) => continue,
                Ok(Some(b)) => Ok(b),
                Err(e) => Err(map(e)),
            };
            let failed = batch.is_err();
            if tx.blocking_send(batch).is_err() || failed {
                return;
            }
        }
    }

    /// The survey, the archive and the projected columns, opened by the first partition that
    /// needs each.
    fn open(&self) -> DfResult<Vec<Arc<ColumnData>>> {
        let src = &self.source;
        let opened = &src.opened;
        let survey = shared(&opened.survey, || {
            let survey = remote::survey_blocking(&src.location, &self.store, &src.options)?;
            survey.check_columns(&self.columns)?;
            if survey.rows != src.rows {
                return Err(
                    DataFusionError::External(Box::new(Error::invalid_value(format!(
                        "the table has {} rows, {} when the query was planned: its files \
                         changed during the query",
                        survey.rows, src.rows
                    ))))
                    .context(format!("file {}", survey.place)),
                );
            }
            Ok(Arc::new(survey))
        })?;
        let archive = shared(&opened.archive, || match &survey.place {
            Place::Archive(path) => open_archive(path, &src.options)
                .map(|open| Some(Arc::new(open)))
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
            let column = survey.column(self.columns.field(j).name())?;
            let data = shared(&opened.columns[self.indices[j]], || {
                let whole = src.read == src.rows;
                open_column(
                    &survey,
                    archive.as_deref(),
                    column,
                    &src.options,
                    self.span.clone(),
                    whole,
                )
                .map(Arc::new)
            })?;
            out[j] = Some(data);
        }
        Ok(out.into_iter().flatten().collect())
    }

    /// Rows `first..first + rows` of the projected columns.
    fn batch(&self, columns: &[Arc<ColumnData>], first: u64, rows: usize) -> DfResult<RecordBatch> {
        let mut arrays = Vec::with_capacity(self.projected_len);
        for (j, c) in columns.iter().enumerate().take(self.projected_len) {
            let a = c.rows(first, rows).map_err(|e| self.column_err(j, e))?;
            self.scanned[j].add(c.row_bytes() * rows);
            arrays.push(a);
        }
        self.projected_batch(arrays, rows)
    }

    /// The scan's filter staged for the columns opened: its conjuncts that compare `U<n>`
    /// columns with strings evaluated on their bytes (see `raw`), then the others.
    fn stage(&self, filter: &Arc<ScanFilter>, columns: &[Arc<ColumnData>]) -> DfResult<Staged> {
        let position = |t: usize| self.indices.iter().position(|&i| i == t).unwrap_or(0);
        let on: Vec<usize> = filter.on().iter().map(|&t| position(t)).collect();
        let on_schema = self.columns.project(&on)?;
        // A `U<n>` column the scan makes strings (as the table's schema says it does).
        let utf32 = |k: usize| {
            let j = *on.get(k)?;
            let strings = matches!(
                self.columns.field(j).data_type(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            );
            Some((j, columns.get(j)?.utf32().filter(|_| strings)?))
        };
        // An integer or day column the scan makes the Arrow type of its values, read for the
        // filter alone: one the query returns is made an array for the whole batch anyway
        // when most rows pass, and DataFusion compares that as fast.
        let int = |k: usize| {
            let j = *on.get(k)?;
            if j < self.projected_len {
                return None;
            }
            let int = columns.get(j)?.int()?;
            (int.arrow().as_ref() == Some(self.columns.field(j).data_type())).then_some((j, int))
        };
        let compile = |c: &Arc<dyn PhysicalExpr>| Raw::compile_with(c, &utf32, &int);
        let (raw, rest) = match filter.split(&on_schema, compile)? {
            Some((raw, rest)) => (raw, rest.map(Arc::new)),
            None => (Vec::new(), Some(filter.clone())),
        };
        let mut raw_on = Vec::new();
        for r in &raw {
            r.columns(&mut raw_on);
        }
        let rest = match rest {
            Some(f) => {
                // The rest's columns: positions among `on` when any conjunct was taken (it
                // was made over `on`), else the files' columns.
                let cols: Vec<usize> = if raw.is_empty() {
                    on.clone()
                } else {
                    f.on().iter().map(|&k| on[k]).collect()
                };
                let schema = Arc::new(self.columns.project(&cols)?);
                Some((f, cols, schema))
            }
            None => None,
        };
        // Strings made of columns the filter does not read, for the rows that pass.
        let strings = (0..self.projected_len).any(|j| {
            !on.contains(&j)
                && matches!(
                    self.columns.field(j).data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                )
        });
        let lookups = if strings { Lookups::Try } else { Lookups::Skip };
        Ok(Staged {
            raw,
            raw_on,
            rest,
            lookups,
        })
    }

    /// The rows of `first..first + rows` that `filter` keeps, in the projected columns: the
    /// filter's `U<n>` columns compared on their bytes, its other columns read, then the
    /// other projected columns read for the kept rows only; `None` when no row passes.
    fn filtered(
        &self,
        filter: &mut Staged,
        columns: &[Arc<ColumnData>],
        first: u64,
        rows: usize,
    ) -> DfResult<Option<RecordBatch>> {
        let mut mask: Option<BooleanBuffer> = None;
        if !filter.raw.is_empty() {
            let mut bytes: Vec<Values<'_>> = vec![Values::default(); columns.len()];
            for &j in &filter.raw_on {
                let c = &columns[j];
                let raw = c.raw(first, rows).map_err(|e| self.column_err(j, e))?;
                bytes[j] = Values::packed(raw, c.row_bytes());
                self.scanned[j].add(c.row_bytes() * rows);
            }
            for r in &filter.raw {
                let Some(m) = r.evaluate(rows, &bytes) else {
                    // A day count without a Date32 value: decoding its column names it.
                    for &j in &filter.raw_on {
                        columns[j]
                            .rows(first, rows)
                            .map_err(|e| self.column_err(j, e))?;
                    }
                    return Err(DataFusionError::Internal(
                        "a raw comparison found a value its column decodes".into(),
                    ));
                };
                mask = Some(match mask {
                    Some(a) => &a & &m,
                    None => m,
                });
            }
            if mask.as_ref().is_some_and(|m| m.count_set_bits() == 0) {
                return Ok(None);
            }
        }
        let mut on_arrays = Vec::new();
        if let Some((f, on, schema)) = &filter.rest {
            for &j in on {
                let c = &columns[j];
                on_arrays.push(c.rows(first, rows).map_err(|e| self.column_err(j, e))?);
                if !filter.raw_on.contains(&j) {
                    self.scanned[j].add(c.row_bytes() * rows);
                }
            }
            let on_batch = RecordBatch::try_new_with_options(
                schema.clone(),
                on_arrays.clone(),
                &RecordBatchOptions::new().with_row_count(Some(rows)),
            )?;
            let m = f.mask(&on_batch, &mut filter.lookups)?;
            mask = Some(match mask {
                Some(a) => &a & m.values(),
                None => m.values().clone(),
            });
        }
        let mask = BooleanArray::new(mask.unwrap_or_else(|| BooleanBuffer::new_set(rows)), None);
        let kept = mask.true_count();
        if kept == 0 {
            return Ok(None);
        }
        let rest_on = filter
            .rest
            .as_ref()
            .map_or(&[][..], |(_, on, _)| on.as_slice());
        let mut arrays = Vec::with_capacity(self.projected_len);
        for (j, c) in columns.iter().enumerate().take(self.projected_len) {
            let a = match rest_on.iter().position(|&k| k == j) {
                Some(k) if kept == rows => on_arrays[k].clone(),
                Some(k) => datafusion::arrow::compute::filter(&on_arrays[k], &mask)?,
                None => {
                    let (a, bytes) = c
                        .rows_where(first, rows, &mask, kept)
                        .map_err(|e| self.column_err(j, e))?;
                    if !filter.raw_on.contains(&j) {
                        self.scanned[j].add(bytes);
                    }
                    a
                }
            };
            arrays.push(a);
        }
        self.projected_batch(arrays, kept).map(Some)
    }

    fn projected_batch(
        &self,
        arrays: Vec<arrow_array::ArrayRef>,
        rows: usize,
    ) -> DfResult<RecordBatch> {
        RecordBatch::try_new_with_options(
            self.projected.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| DataFusionError::External(Box::new(arrow_err(e))))
    }

    fn column_err(&self, j: usize, e: Error) -> DataFusionError {
        let name = self.columns.field(j).name();
        match self.source.opened.survey.get() {
            Some(Ok(survey)) => match survey.column(name) {
                Ok(c) => in_column(e, &survey.place, &c.source),
                Err(other) => other,
            },
            _ => DataFusionError::External(Box::new(e)).context(format!("column {name}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_schema::{DataType, Field, Schema};
    use datafusion::execution::object_store::ObjectStoreUrl;

    #[test]
    fn a_scan_fetches_the_rows_of_its_own_runs() {
        let table: SchemaRef =
            Arc::new(Schema::new(vec![Field::new("x", DataType::Float64, false)]));
        let span = |runs: &[(u64, u64)]| {
            let groups = runs
                .iter()
                .map(|&(a, b)| {
                    let statistics = Arc::new(Statistics::new_unknown(&table));
                    run("/t.npz", statistics.clone(), statistics, a, b).unwrap()
                })
                .collect();
            let source =
                ColumnSource::new("/t.npz", NpyReadOptions::new(), table.clone(), 100, 100);
            let config =
                FileScanConfigBuilder::new(ObjectStoreUrl::local_filesystem(), Arc::new(source))
                    .with_file_groups(groups)
                    .build();
            span_of(&config, 100)
        };
        // One process: every run of the scan.
        assert_eq!(span(&[(0, 25), (25, 50), (50, 75), (75, 100)]), 0..100);
        // A cluster's task: the runs of its partitions.
        assert_eq!(span(&[(50, 75), (75, 100)]), 50..100);
        assert_eq!(span(&[(25, 50)]), 25..50);
        // Empty runs add nothing; a run past the rows read is cut there.
        assert_eq!(span(&[(0, 0), (30, 40)]), 30..40);
        assert_eq!(span(&[(90, 120)]), 90..100);
        assert_eq!(span(&[]), 0..0);
    }
}
