//! The scan: [`NpySource`], DataFusion's `FileSource` for `.npy` files and `.npz` members. It
//! holds the projection, batch size and options, and picks the opener of the scan's access
//! path when the scan is planned: [`RowFileOpener`] for `.npy` row files (byte ranges of whole
//! records), [`MemberOpener`] for a member of each `.npz` archive.

use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::physical_plan::{FileOpener, FileScanConfig, FileSource};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::PhysicalExpr;
use object_store::ObjectStore;

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
}

impl std::fmt::Debug for NpySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpySource")
            .field("options", &self.options)
            .field("file_indices", &self.projection.file_indices)
            .field("batch_size", &self.batch_size)
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
            batch_size: crate::arrow::DEFAULT_BATCH_SIZE,
            map_err: None,
        }
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
        let scan = Arc::new(ScanFiles {
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
            None if self.options.reader.allow_pickle_data => Arc::new(ObjectFileOpener(scan)),
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
        datafusion::physical_plan::apply_expression_roots(self.projection.source.iter(), f)
    }
}
