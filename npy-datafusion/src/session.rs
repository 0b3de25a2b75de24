//! The session extension: [`NpySessionExt`] (`register_npy` / `read_npy` and
//! `register_spec` / `read_spec` on a `SessionContext`) and [`register_npy_format`] (SQL's `STORED AS NPY`).

use std::sync::Arc;

use arrow_schema::{DataType, Schema};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider, TableProviderFactory};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig};
use datafusion::datasource::provider::DefaultTableFactory;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::CreateExternalTable;
use datafusion::prelude::SessionContext;

use super::columns::ColumnTable;
use super::file_format::{NpyFormatFactory, NpzFormatFactory};
use super::listing::{npy_table, spec_table};
use super::options::{check_sort_columns, NpyReadOptions, SortColumn, SortExprs, TableLayout};
use super::spec::TableSpec;

/// `register_npy` and `read_npy` on a DataFusion `SessionContext`.
#[async_trait]
pub trait NpySessionExt {
    /// Registers the `.npy` file, directory or glob at `path` (a local path or an object
    /// store URL) as the table `name`. A [`TableSpec`](super::TableSpec) gives both:
    /// `register_npy(name, spec.location(), spec.options().clone())`.
    async fn register_npy(&self, name: &str, path: &str, options: NpyReadOptions) -> DfResult<()>;

    /// A `DataFrame` reading the `.npy` file, directory or glob at `path`.
    async fn read_npy(&self, path: &str, options: NpyReadOptions) -> DfResult<DataFrame>;

    /// Registers the table of `spec` as `name`, in its format: `.npy` files and `.npz`
    /// members as [`register_npy`](Self::register_npy) does, Parquet, Arrow IPC and CSV files
    /// through DataFusion's own readers (see [`TableSpec`] for the formats and their
    /// options). A spec whose location says no format (a directory, `data/*`) takes it from
    /// its files' extension; files of two formats are an error asking to name one.
    ///
    /// ```
    /// use datafusion::prelude::SessionContext;
    /// use npy_datafusion::{NpySessionExt, TableSpec};
    /// # let dir = std::env::temp_dir().join(format!("df-spec-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # npy_serde::to_path(dir.join("a.npy"), &[1i64, 2, 3])?;
    /// # std::fs::write(dir.join("b.csv"), "value,name\n2,two\n3,three\n")?;
    /// let rt = tokio::runtime::Runtime::new()?;
    /// rt.block_on(async {
    ///     let ctx = SessionContext::new();
    ///     let a: TableSpec = dir.join("a.npy").to_str().unwrap().parse()?;
    ///     let b: TableSpec = dir.join("b.csv").to_str().unwrap().parse()?;
    ///     ctx.register_spec("a", &a).await?;
    ///     ctx.register_spec("b", &b).await?;
    ///     let df = ctx.sql("SELECT sum(a.value) FROM a JOIN b ON a.value = b.value").await?;
    ///     let text = datafusion::arrow::util::pretty::pretty_format_batches(&df.collect().await?)?;
    ///     assert!(text.to_string().contains("| 5 "), "{text}");
    ///     Ok::<_, Box<dyn std::error::Error>>(())
    /// })?;
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn register_spec(&self, name: &str, spec: &TableSpec) -> DfResult<()>;

    /// A `DataFrame` reading the table of `spec` (as [`register_spec`](Self::register_spec)).
    async fn read_spec(&self, spec: &TableSpec) -> DfResult<DataFrame>;
}

#[async_trait]
impl NpySessionExt for SessionContext {
    async fn register_npy(&self, name: &str, path: &str, options: NpyReadOptions) -> DfResult<()> {
        let table = npy_provider(self, path, &options).await?;
        self.register_table(name, table)?;
        Ok(())
    }

    async fn read_npy(&self, path: &str, options: NpyReadOptions) -> DfResult<DataFrame> {
        let table = npy_provider(self, path, &options).await?;
        self.read_table(table)
    }

    async fn register_spec(&self, name: &str, spec: &TableSpec) -> DfResult<()> {
        let table = spec_provider(self, spec).await?;
        self.register_table(name, table)?;
        Ok(())
    }

    async fn read_spec(&self, spec: &TableSpec) -> DfResult<DataFrame> {
        let table = spec_provider(self, spec).await?;
        self.read_table(table)
    }
}

/// The table of the `.npy` files at `path`: a listing table of row files, or a column table.
async fn npy_provider(
    ctx: &SessionContext,
    path: &str,
    options: &NpyReadOptions,
) -> DfResult<Arc<dyn TableProvider>> {
    Ok(match options.layout() {
        TableLayout::Columns => {
            Arc::new(ColumnTable::open(&ctx.runtime_env(), path, options).await?)
        }
        TableLayout::Rows => Arc::new(npy_table(ctx, path, options).await?),
    })
}

/// The table of `spec`.
async fn spec_provider(ctx: &SessionContext, spec: &TableSpec) -> DfResult<Arc<dyn TableProvider>> {
    Ok(match spec.options().layout() {
        TableLayout::Columns => {
            Arc::new(ColumnTable::open(&ctx.runtime_env(), spec.location(), spec.options()).await?)
        }
        TableLayout::Rows => Arc::new(spec_table(ctx, spec).await?),
    })
}

/// Registers [`NpyFormatFactory`] with the context, so that SQL's
/// `CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '...'` reads `.npy` files (and, with
/// `OPTIONS ('layout' 'columns')`, a column table: an `.npz` archive of columns or a directory
/// of per-column `.npy` files; columns declared in the statement must all be there).
/// `WITH ORDER (k ASC)` or `OPTIONS ('sort_order' 'k')` declares the rows sorted, for row
/// files and column tables alike ([`NpyReadOptions::sorted_by`]: trusted, not checked).
///
/// ```
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let path = std::env::temp_dir().join(format!("df-fmt-{}.npy", std::process::id()));
/// # npy_serde::to_path(&path, &[1i64, 2, 3])?;
/// let ctx = datafusion::prelude::SessionContext::new();
/// npy_datafusion::register_npy_format(&ctx)?;
/// let sql = format!("CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}'", path.display());
/// ctx.sql(&sql).await?.collect().await?;
/// let batches = ctx.sql("SELECT sum(value) FROM t").await?.collect().await?;
/// assert_eq!(batches[0].column(0).as_any().downcast_ref::<arrow_array::Int64Array>().unwrap().value(0), 6);
/// # std::fs::remove_file(&path)?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn register_npy_format(ctx: &SessionContext) -> DfResult<()> {
    register_formats(ctx, false)
}

/// [`register_npy_format`] for a session on a Ballista cluster: the partition columns of its
/// `STORED AS NPY` tables are plain `Utf8` where one process has DataFusion's
/// `Dictionary(UInt16, Utf8)` (see [`crate::ballista`]'s docs: Ballista's remote shuffle
/// reads deliver a dictionary column decoded, and the stage reading it fails).
#[cfg(feature = "ballista")]
pub(crate) fn register_npy_format_for_cluster(ctx: &SessionContext) -> DfResult<()> {
    register_formats(ctx, true)
}

fn register_formats(ctx: &SessionContext, plain_partitions: bool) -> DfResult<()> {
    let state = ctx.state_ref();
    let mut state = state.write();
    state.register_file_format(Arc::new(NpyFormatFactory::default()), true)?;
    state.register_file_format(Arc::new(NpzFormatFactory::default()), true)?;
    let factory = Arc::new(NpyTableFactory {
        listing: DefaultTableFactory::default(),
        plain_partitions,
    });
    let tables = state.table_factories_mut();
    tables.insert("NPY".into(), factory.clone());
    tables.insert("NPZ".into(), factory);
    Ok(())
}

/// `STORED AS NPY`: DataFusion's listing tables of row files, column tables for
/// `OPTIONS ('layout' 'columns')`. A declared order is the statement's `WITH ORDER (...)`
/// and the option `sort_order`, both: each holds.
#[derive(Debug, Default)]
struct NpyTableFactory {
    listing: DefaultTableFactory,
    /// A listing table's dictionary partition columns (DataFusion's type for hive partitions
    /// it infers or is given without a type) become their values' type (a Ballista session's
    /// tables).
    plain_partitions: bool,
}

#[async_trait]
impl TableProviderFactory for NpyTableFactory {
    async fn create(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> DfResult<Arc<dyn TableProvider>> {
        let layout = cmd
            .options
            .iter()
            .find(|(k, _)| k.strip_prefix("format.").unwrap_or(k) == "layout");
        if layout.is_none_or(|(_, v)| v != "columns") {
            let table = self.rows(state, cmd).await?;
            return match self.plain_partitions {
                true => with_plain_partitions(table, state, cmd),
                false => Ok(table),
            };
        }
        let mut options = NpyReadOptions::new();
        for (key, value) in &cmd.options {
            let key = key.strip_prefix("format.").unwrap_or(key);
            // A column table is not written to (its INSERTs are refused): the write options
            // are checked and left.
            if crate::NpyWriteOptions::is_write_key(key) {
                crate::NpyWriteOptions::new().set(key, value)?;
                continue;
            }
            options = options.set(key, value)?;
        }
        let options = options.with_sort_exprs(&cmd.order_exprs)?;
        let [location] = cmd.locations.as_slice() else {
            return Err(DataFusionError::Configuration(format!(
                "a column table (layout=columns) has one location, an archive or a directory: \
                 found {}",
                cmd.locations.join(", ")
            )));
        };
        let schema: Schema = cmd.schema.as_arrow().clone();
        let table = if schema.fields().is_empty() {
            ColumnTable::open(state.runtime_env(), location, &options).await?
        } else {
            ColumnTable::with_schema(state.runtime_env(), location, &options, Arc::new(schema))
                .await?
        };
        Ok(Arc::new(table))
    }
}

/// `table` (of the statement `cmd`) with each dictionary partition column as a column of its
/// values' type (`Dictionary(UInt16, Utf8)`: `Utf8`), if it is a listing table with one;
/// else `table` itself.
fn with_plain_partitions(
    table: Arc<dyn TableProvider>,
    state: &dyn Session,
    cmd: &CreateExternalTable,
) -> DfResult<Arc<dyn TableProvider>> {
    let Some(listing) = table.downcast_ref::<ListingTable>() else {
        return Ok(table);
    };
    let partitions = &listing.options().table_partition_cols;
    if !(partitions.iter()).any(|(_, t)| matches!(t, DataType::Dictionary(..))) {
        return Ok(table);
    }
    let plain: Vec<(String, DataType)> = (partitions.iter())
        .map(|(name, t)| match t {
            DataType::Dictionary(_, values) => (name.clone(), values.as_ref().clone()),
            other => (name.clone(), other.clone()),
        })
        .collect();
    let options = listing.options().clone().with_table_partition_cols(plain);
    rebuilt(listing, options, state, cmd)
}

/// The schema of the files of `listing`: the table's columns but its partition columns.
fn file_schema(listing: &ListingTable) -> DfResult<Schema> {
    // The table's columns are its files' and then its partition columns.
    let partitions = &listing.options().table_partition_cols;
    let schema = listing.schema();
    let files = (schema.fields().len().checked_sub(partitions.len())).ok_or_else(|| {
        DataFusionError::Internal(format!(
            "a listing table of {} columns with {} partition columns",
            schema.fields().len(),
            partitions.len()
        ))
    })?;
    Ok(Schema::new_with_metadata(
        schema.fields()[..files].to_vec(),
        schema.metadata().clone(),
    ))
}

/// The listing table of `listing`'s files (of the statement `cmd`) with `options`.
fn rebuilt(
    listing: &ListingTable,
    options: ListingOptions,
    state: &dyn Session,
    cmd: &CreateExternalTable,
) -> DfResult<Arc<dyn TableProvider>> {
    let config = ListingTableConfig::new_with_multi_paths(listing.table_paths().clone())
        .with_listing_options(options)
        .with_schema(Arc::new(file_schema(listing)?));
    let table = ListingTable::try_new(config)?
        .with_cache(state.runtime_env().cache_manager.get_file_statistic_cache())
        .with_definition(cmd.definition.clone())
        .with_constraints(cmd.constraints.clone())
        .with_column_defaults(cmd.column_defaults.clone());
    Ok(Arc::new(table))
}

/// `table` (of the statement `cmd`, which declares no order) with the order recorded with its
/// files, if it is a listing table of `.npy` files that all record one that holds (see
/// `recorded`); else `table` itself.
async fn with_recorded_order(
    table: Arc<dyn TableProvider>,
    state: &dyn Session,
    cmd: &CreateExternalTable,
) -> DfResult<Arc<dyn TableProvider>> {
    let Some(listing) = table.downcast_ref::<ListingTable>() else {
        return Ok(table);
    };
    let files = file_schema(listing)?;
    let paths = listing.table_paths().clone();
    let options =
        super::listing::with_recorded_order(listing.options().clone(), state, &paths, &files)
            .await?;
    if options.file_sort_order.is_empty() {
        return Ok(table);
    }
    rebuilt(listing, options, state, cmd)
}

impl NpyTableFactory {
    /// The listing table of row files of `cmd`, each file sorted in the orders of its `WITH
    /// ORDER` and of the option `sort_order`: DataFusion's listing factory reads the
    /// statement's orders, so the option's join them; and the option then holds the orders of
    /// columns among them, for the format's options (what Ballista's codec sends of the table).
    async fn rows(
        &self,
        state: &dyn Session,
        cmd: &CreateExternalTable,
    ) -> DfResult<Arc<dyn TableProvider>> {
        let is_order = |k: &String| k.strip_prefix("format.").unwrap_or(k) == "sort_order";
        let key = cmd.options.keys().find(|k| is_order(k)).cloned();
        let declared = match key.as_ref().map(|k| &cmd.options[k]) {
            Some(value) => NpyReadOptions::new().set("sort_order", value)?,
            None => NpyReadOptions::new(),
        };
        if cmd.order_exprs.is_empty() && key.is_none() {
            let table = self.listing.create(state, cmd).await?;
            return with_recorded_order(table, state, cmd).await;
        }
        let mut cmd = cmd.clone();
        for order in declared.sort_exprs() {
            if !cmd.order_exprs.contains(&order) {
                cmd.order_exprs.push(order);
            }
        }
        let mut columns = NpyReadOptions::new();
        for order in &cmd.order_exprs {
            let order: Option<Vec<_>> = order.iter().map(SortColumn::of_sort_expr).collect();
            columns = columns.sorted_by(order.unwrap_or_default());
        }
        let entry = columns
            .entries()
            .into_iter()
            .find(|e| e.key == "sort_order")
            .and_then(|e| e.value);
        if let Some(value) = entry {
            let key = key.unwrap_or_else(|| "format.sort_order".to_string());
            cmd.options.insert(key, value);
        }
        let table = self.listing.create(state, &cmd).await?;
        let names = declared.sort_order().iter().flatten().map(SortColumn::name);
        check_sort_columns(names, &table.schema(), &cmd.locations.join(", "))?;
        Ok(table)
    }
}
