//! The scan: [`NpySource`], DataFusion's `FileSource` for `.npy` files and `.npz` members. It
//! holds the projection, batch size and options, and picks the opener of the scan's access
//! path when the scan is planned: [`RowFileOpener`] for `.npy` row files (byte ranges of whole
//! records; local files mapped unless `access=read`), [`MemberOpener`] for a member of each
//! `.npz` archive. It takes the filters DataFusion pushes into the scan (the physical
//! `FilterPushdown` rule) that it evaluates exactly (see `filter`), unless
//! `filter_pushdown=false`.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::physical_plan::{FileOpener, FileScanConfig, FileSource};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_plan::filter_pushdown::FilterPushdownPropagation;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, PhysicalExpr};
use object_store::ObjectStore;

use super::filter::{take_filters, ScanFilter};
use super::member::MemberOpener;
use super::objects::ObjectFileOpener;
use super::opener::{ErrorMap, ScanFiles};
use super::options::NpyReadOptions;
use super::rows::RowFileOpener;

/// DataFusion's `FileSource` for `.npy` files (and `.npz` members); made by
/// [`NpyFormat`](super::NpyFormat).
#[derive(Clone)]
pub struct NpySource {
    table_schema: TableSchema,
    options: NpyReadOptions,
    projection: SplitProjection,
    metrics: ExecutionPlanMetricsSet,
    batch_size: usize,
    /// What the scan's errors go through (see [`NpySource::with_error_map`]).
    map_err: Option<ErrorMap>,
    /// The filter pushed into the scan (over the table's columns).
    predicate: Option<Arc<dyn PhysicalExpr>>,
}

impl std::fmt::Debug for NpySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpySource")
            .field("options", &self.options)
            .field("file_indices", &self.projection.file_indices)
            .field("batch_size", &self.batch_size)
            .field("predicate", &self.predicate)
            .finish_non_exhaustive()
    }
}

impl NpySource {
    /// A scan of tables with this schema, every column, reading with `options`.
    pub fn new(table_schema: TableSchema, options: NpyReadOptions) -> Self {
        NpySource {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            options,
            metrics: ExecutionPlanMetricsSet::new(),
            batch_size: npy_arrow::DEFAULT_BATCH_SIZE,
            map_err: None,
            predicate: None,
        }
    }

    /// The scan keeping only the rows for which `predicate` (over the table's columns) is
    /// true, as a scan DataFusion pushed the filter into does: the Ballista codec sets it
    /// again on the executors. `None`: every row.
    pub fn with_predicate(mut self, predicate: Option<Arc<dyn PhysicalExpr>>) -> Self {
        self.predicate = predicate;
        self
    }

    /// The scan with every error (of opening a file and of each batch) passed through `f`
    /// before DataFusion sees it: for scans whose errors leave the process in another form
    /// (the Ballista codec's executors send them as text).
    pub fn with_error_map(mut self, f: fn(DataFusionError) -> DataFusionError) -> Self {
        self.map_err = Some(f);
        self
    }

    /// The options the scan reads with (header and data limits, an `.npz` member).
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The rows per batch.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }
}

impl FileSource for NpySource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        _partition: usize,
    ) -> DfResult<Arc<dyn FileOpener>> {
        let file_schema = self.table_schema.file_schema();
        let indices = self.projection.file_indices.clone();
        let filter = match &self.predicate {
            Some(p) => Some(Arc::new(ScanFilter::new(p, file_schema)?)),
            None => None,
        };
        // DataFusion's local store, rooted at `/` (as it registers it for `file://`).
        let local = object_store.to_string() == "LocalFileSystem(file:///)";
        let scan = Arc::new(ScanFiles {
            filter,
            map_local: local && !self.options.read_access,
            store: object_store,
            options: self.options.clone(),
            table: file_schema.clone(),
            projected: Arc::new(file_schema.project(&indices)?),
            indices,
            batch_size: self.batch_size.max(1),
            limit: base_config.limit,
            map_err: self.map_err,
        });
        let opener: Arc<dyn FileOpener> = match self.options.member() {
            _ if self.options.reader.allow_pickle_data => Arc::new(ObjectFileOpener(scan)),
            None => Arc::new(RowFileOpener(scan)),
            Some(key) => Arc::new(MemberOpener {
                scan,
                key: key.to_string(),
            }),
        };
        ProjectionOpener::try_new(self.projection.clone(), opener, file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(NpySource {
            batch_size,
            ..self.clone()
        })
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        "npy"
    }

    /// Shows a pushed filter in `EXPLAIN` (as Parquet's scan does): `, predicate=...`.
    fn fmt_extra(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match (t, &self.predicate) {
            (DisplayFormatType::Default | DisplayFormatType::Verbose, Some(p)) => {
                write!(f, ", predicate={p}")
            }
            _ => Ok(()),
        }
    }

    /// `.npy` files split into byte ranges of whole records; an `.npz` member is read by one
    /// partition (its bytes may be compressed).
    fn supports_repartitioning(&self) -> bool {
        self.options.member.is_none()
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

    /// Takes the filters it evaluates exactly (over the files' own columns, not volatile),
    /// answering `Yes` for them and `No` for the others (DataFusion keeps those); none with
    /// `filter_pushdown=false`.
    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> DfResult<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        Ok(take_filters(
            &filters,
            !self.options.keep_filters,
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
