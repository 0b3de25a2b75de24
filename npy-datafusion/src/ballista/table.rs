//! [`NpyTable`]: a `.npy` listing table that Ballista can send to its scheduler, and
//! [`NpyTableRule`], which swaps it in for the listing tables of a query (and of an `INSERT
//! INTO`), and puts a `COPY ... TO`'s `OPTIONS` into its format factory.
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
use datafusion::datasource::file_format::{file_type_to_format, format_as_file_type};
use datafusion::datasource::listing::{ListingTable, ListingTableUrl};
use datafusion::datasource::{provider_as_source, source_as_provider};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::dml::{CopyTo, InsertOp};
use datafusion::logical_expr::{
    DmlStatement, Expr, LogicalPlan, TableProviderFilterPushDown, TableSource, TableType,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_plan::ExecutionPlan;

use crate::options::SortExprs;
use crate::{
    NpyFormat, NpyFormatFactory, NpyReadOptions, NpyWriteOptions, NpzFormatFactory, SortColumn,
};

/// A table of `.npy` files (a DataFusion `ListingTable` with [`NpyFormat`]) that Ballista's
/// protobuf layer can carry: its paths, file extension, [`NpyReadOptions`] (with its declared
/// orders), [`NpyWriteOptions`] and partition columns go to the scheduler through
/// [`NpyLogicalCodec`](super::NpyLogicalCodec), which rebuilds the listing table there. Scans, filters, statistics and `INSERT INTO` are the
/// listing table's.
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
    write: NpyWriteOptions,
    paths: Vec<ListingTableUrl>,
    file_extension: String,
    partition_columns: Vec<String>,
}

impl NpyTable {
    /// The `.npy` table `provider` is, if it is a `ListingTable` with [`NpyFormat`]
    /// (`None` for any other table).
    ///
    /// Its [`options`](Self::options) declare the orders of the listing table's
    /// `file_sort_order` too (SQL's `WITH ORDER`, or listing options built by hand), as far as
    /// they are of columns ([`SortColumn`]): of an order with an expression, the columns
    /// before it.
    pub fn try_wrap(provider: &Arc<dyn TableProvider>) -> Option<NpyTable> {
        let listing = provider.downcast_ref::<ListingTable>()?;
        let format = listing.options().format.downcast_ref::<NpyFormat>()?;
        let mut options = format.options().clone();
        for order in &listing.options().file_sort_order {
            // Rows sorted by `a, f(b)` are sorted by `a`: the columns before an expression.
            options = options.sorted_by(order.iter().map_while(SortColumn::of_sort_expr));
        }
        Some(NpyTable {
            inner: provider.clone(),
            options,
            write: format.write_options().clone(),
            paths: listing.table_paths().clone(),
            file_extension: listing.options().file_extension.clone(),
            partition_columns: partition_columns(listing),
        })
    }

    /// Wraps a listing table built from its parts (by the codec on the scheduler; the write
    /// options and partition columns are its own).
    pub(crate) fn from_parts(
        listing: ListingTable,
        options: NpyReadOptions,
        paths: Vec<ListingTableUrl>,
        file_extension: String,
    ) -> NpyTable {
        let write = (listing.options().format.downcast_ref::<NpyFormat>())
            .map(|f| f.write_options().clone())
            .unwrap_or_default();
        NpyTable {
            partition_columns: partition_columns(&listing),
            inner: Arc::new(listing),
            options,
            write,
            paths,
            file_extension,
        }
    }

    /// The options its files are read with (with its declared orders).
    pub fn options(&self) -> &NpyReadOptions {
        &self.options
    }

    /// The names of its partition columns (hive-style `COLUMN=value` directories; their types
    /// are the table schema's), in the table's order.
    pub fn partition_columns(&self) -> &[String] {
        &self.partition_columns
    }

    /// The options its `INSERT INTO`s write with.
    pub fn write_options(&self) -> &NpyWriteOptions {
        &self.write
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
        let plan = self.inner.scan(state, projection, filters, limit).await?;
        scan_in(state, plan)
    }

    async fn scan_with_args<'a>(
        &self,
        state: &dyn Session,
        args: ScanArgs<'a>,
    ) -> DfResult<ScanResult> {
        let scan = self.inner.scan_with_args(state, args).await?;
        Ok(ScanResult::new(scan_in(state, scan.into_inner())?))
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

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.inner.insert_into(state, input, insert_op).await
    }
}

/// `plan`, the listing table's scan, without its order where `state`'s planner would not keep
/// it (`recorded::orders_usable`).
fn scan_in(state: &dyn Session, plan: Arc<dyn ExecutionPlan>) -> DfResult<Arc<dyn ExecutionPlan>> {
    if crate::recorded::orders_usable(state.config()) {
        Ok(plan)
    } else {
        super::order::without_orders(plan)
    }
}

/// The names of `listing`'s partition columns.
fn partition_columns(listing: &ListingTable) -> Vec<String> {
    (listing.options().table_partition_cols.iter())
        .map(|(name, _)| name.clone())
        .collect()
}

/// The analyzer rule a Ballista session runs on the client: every scan of a `.npy` listing
/// table, and the target of an `INSERT INTO` one, becomes the same table as an [`NpyTable`],
/// which the logical codec can send to the scheduler. A `COPY ... TO` in the `NPY` or `NPZ`
/// format gets a format factory with the statement's `OPTIONS` applied (a bad one fails here,
/// on the client): datafusion-proto's `COPY` message carries the factory but not the options.
/// Other nodes are left as they are.
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
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::TableScan(mut scan) => match wrapped(&scan.source) {
                Some(source) => {
                    scan.source = source;
                    Ok(Transformed::yes(LogicalPlan::TableScan(scan)))
                }
                None => Ok(Transformed::no(LogicalPlan::TableScan(scan))),
            },
            LogicalPlan::Dml(dml) => match wrapped(&dml.target) {
                Some(target) => Ok(Transformed::yes(LogicalPlan::Dml(DmlStatement {
                    target,
                    ..dml
                }))),
                None => Ok(Transformed::no(LogicalPlan::Dml(dml))),
            },
            LogicalPlan::Copy(copy) => copy_with_options(copy),
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "npy_table"
    }
}

/// `source` as an [`NpyTable`], if it is a `.npy` listing table.
fn wrapped(source: &Arc<dyn TableSource>) -> Option<Arc<dyn TableSource>> {
    let table = NpyTable::try_wrap(&source_as_provider(source).ok()?)?;
    Some(provider_as_source(Arc::new(table)))
}

/// The `COPY` options that are the statement's, not the format's: DataFusion's planner reads
/// them from the statement, whose options do not reach a Ballista scheduler.
const STATEMENT_KEYS: [(&str, &str); 2] = [
    (
        "single_file_output",
        "a path with an extension is one file, a path ending in / a directory",
    ),
    (
        "execution.keep_partition_by_columns",
        "set datafusion.execution.keep_partition_by_columns in the session's config instead",
    ),
];

/// A `COPY ... TO` in the `NPY` or `NPZ` format with its `OPTIONS` in its format factory (they
/// stay in the statement too: the format applies them again, to the same result). An option
/// of the statement rather than the format is refused, saying what to do instead.
fn copy_with_options(copy: CopyTo) -> DfResult<Transformed<LogicalPlan>> {
    let Ok(factory) = file_type_to_format(&copy.file_type) else {
        return Ok(Transformed::no(LogicalPlan::Copy(copy)));
    };
    if !(factory.is::<NpyFormatFactory>() || factory.is::<NpzFormatFactory>()) {
        return Ok(Transformed::no(LogicalPlan::Copy(copy)));
    }
    for (key, instead) in STATEMENT_KEYS {
        // SQL's parser prefixes a key without a namespace with `format.`.
        if copy.options.contains_key(key) || copy.options.contains_key(&format!("format.{key}")) {
            return Err(DataFusionError::Configuration(format!(
                "COPY option {key}: a Ballista cluster does not receive a COPY statement's own \
                 options (datafusion-proto's COPY message carries its format only); {instead}"
            )));
        }
    }
    let factory: Arc<dyn datafusion::datasource::file_format::FileFormatFactory> =
        if let Some(f) = factory.downcast_ref::<NpyFormatFactory>() {
            Arc::new(f.with_format_options(&copy.options)?)
        } else if let Some(f) = factory.downcast_ref::<NpzFormatFactory>() {
            Arc::new(f.with_format_options(&copy.options)?)
        } else {
            return Ok(Transformed::no(LogicalPlan::Copy(copy)));
        };
    Ok(Transformed::yes(LogicalPlan::Copy(CopyTo {
        file_type: format_as_file_type(factory),
        ..copy
    })))
}
