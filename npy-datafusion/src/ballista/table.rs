//! [`NpyTable`]: a `.npy` listing table that Ballista can send to its scheduler, and
//! [`NpyTableRule`], which swaps it in for the listing tables of a query.
//!
//! datafusion-proto serializes a `ListingTable` only with a built-in format (its
//! `ListingTableScan` message has no hook for other formats: it fails with "unknown file
//! format"); any other table provider goes through the extension codec's
//! `try_encode_table_provider`, which [`NpyLogicalCodec`](super::NpyLogicalCodec) implements
//! for this wrapper.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{ScanArgs, ScanResult, Session, TableProvider};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Constraints, Statistics};
use datafusion::datasource::listing::{ListingTable, ListingTableUrl};
use datafusion::datasource::{provider_as_source, source_as_provider};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{Expr, LogicalPlan, TableProviderFilterPushDown, TableType};
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_plan::ExecutionPlan;

use crate::{NpyFormat, NpyReadOptions};

/// A table of `.npy` files (a DataFusion `ListingTable` with [`NpyFormat`]) that Ballista's
/// protobuf layer can carry: its paths, file extension and [`NpyReadOptions`] go to the
/// scheduler through [`NpyLogicalCodec`](super::NpyLogicalCodec), which rebuilds the listing
/// table there. Scans, filters and statistics are the listing table's.
///
/// A [`ballista` session](super::standalone) makes these from the `.npy` listing tables of
/// every query ([`NpyTableRule`]), so tables registered with
/// [`register_npy`](crate::NpySessionExt::register_npy) or `CREATE EXTERNAL TABLE
/// ... STORED AS NPY` need no wrapping by hand.
///
/// ```
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let path = std::env::temp_dir().join(format!("npy-table-{}.npy", std::process::id()));
/// # npy_serde::to_path(&path, &[1i64, 2, 3])?;
/// use datafusion::prelude::SessionContext;
/// use npy_datafusion::ballista::NpyTable;
/// use npy_datafusion::{NpyReadOptions, NpySessionExt};
///
/// let ctx = SessionContext::new();
/// ctx.register_npy("t", path.to_str().unwrap(), NpyReadOptions::new().max_data_size(1 << 20)).await?;
/// let provider = ctx.table_provider("t").await?;
/// let table = NpyTable::try_wrap(&provider).expect("a .npy listing table");
/// assert_eq!(table.options().extension(), ".npy");
/// assert_eq!(table.paths().len(), 1);
/// # std::fs::remove_file(&path)?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct NpyTable {
    inner: Arc<dyn TableProvider>,
    options: NpyReadOptions,
    paths: Vec<ListingTableUrl>,
    file_extension: String,
}

impl NpyTable {
    /// The `.npy` table `provider` is, if it is a `ListingTable` with [`NpyFormat`]
    /// (`None` for any other table).
    pub fn try_wrap(provider: &Arc<dyn TableProvider>) -> Option<NpyTable> {
        let listing = provider.downcast_ref::<ListingTable>()?;
        let format = listing.options().format.downcast_ref::<NpyFormat>()?;
        Some(NpyTable {
            inner: provider.clone(),
            options: format.options().clone(),
            paths: listing.table_paths().clone(),
            file_extension: listing.options().file_extension.clone(),
        })
    }

    /// Wraps a listing table built from its parts (by the codec on the scheduler).
    pub(crate) fn from_parts(
        listing: ListingTable,
        options: NpyReadOptions,
        paths: Vec<ListingTableUrl>,
        file_extension: String,
    ) -> NpyTable {
        NpyTable {
            inner: Arc::new(listing),
            options,
            paths,
            file_extension,
        }
    }

    /// The options its files are read with.
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The file, directory or glob URLs of the table.
    pub fn paths(&self) -> &[ListingTableUrl] {
        &self.paths
    }

    /// The extension of the files a directory's table reads (empty: every file).
    pub fn file_extension(&self) -> &str {
        &self.file_extension
    }
}

#[async_trait]
impl TableProvider for NpyTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn get_table_definition(&self) -> Option<&str> {
        self.inner.get_table_definition()
    }

    fn get_logical_plan(&'_ self) -> Option<Cow<'_, LogicalPlan>> {
        self.inner.get_logical_plan()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.inner.scan(state, projection, filters, limit).await
    }

    async fn scan_with_args<'a>(
        &self,
        state: &dyn Session,
        args: ScanArgs<'a>,
    ) -> DfResult<ScanResult> {
        self.inner.scan_with_args(state, args).await
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }
}

/// The analyzer rule a Ballista session runs on the client: every scan of a `.npy` listing
/// table becomes a scan of the same table as an [`NpyTable`], which the logical codec can
/// send to the scheduler. Other scans are left as they are.
///
/// ```
/// use std::sync::Arc;
/// let ctx = datafusion::prelude::SessionContext::new();
/// ctx.add_analyzer_rule(Arc::new(npy_datafusion::ballista::NpyTableRule));
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct NpyTableRule;

impl AnalyzerRule for NpyTableRule {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DfResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let LogicalPlan::TableScan(mut scan) = node else {
                return Ok(Transformed::no(node));
            };
            let table = source_as_provider(&scan.source)
                .ok()
                .and_then(|p| NpyTable::try_wrap(&p));
            match table {
                Some(table) => {
                    scan.source = provider_as_source(Arc::new(table));
                    Ok(Transformed::yes(LogicalPlan::TableScan(scan)))
                }
                None => Ok(Transformed::no(LogicalPlan::TableScan(scan))),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "npy_table"
    }
}
