//! [`ColumnTable`]: a column table as DataFusion's `TableProvider`. Registering it surveys
//! the table (its schema, its row count; a local one on a blocking thread, one on an object
//! store by ranged GETs, see `remote`); each query surveys it again as it is planned, so a
//! file cut short or rewritten since fails the query naming it, and plans a
//! scan of the columns the query uses (`scan`: a `DataSourceExec` whose file groups are runs
//! of rows). The table answers `Unsupported` for every filter (the logical plan keeps them);
//! DataFusion's physical `FilterPushdown` then hands the scan those it evaluates exactly
//! (see `scan`). A declared order (the option `sort_order`, SQL's `WITH ORDER`) is the whole
//! table's, trusted, not checked: the scan reports it for each of its partitions. A table that
//! declares none reports the order recorded with it (`npy convert --sorted-by`), read again by
//! each query's survey and dropped once its record no longer holds (see `recorded`).

use std::sync::Arc;

use arrow_schema::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::super::options::NpyReadOptions;
use super::remote;
use super::scan;

/// A column table: an `.npz` archive whose `.npy` members are its columns, or a directory
/// whose `.npy` files are; see the [`datafusion` module docs](super::super).
#[derive(Debug, Clone)]
pub(crate) struct ColumnTable {
    location: String,
    options: NpyReadOptions,
    schema: SchemaRef,
}

impl ColumnTable {
    /// The column table at `location` (a local archive or directory, or one on an object
    /// store `runtime` has), surveyed.
    pub(crate) async fn open(
        runtime: &RuntimeEnv,
        location: &str,
        options: &NpyReadOptions,
    ) -> DfResult<ColumnTable> {
        let survey = remote::survey(location, runtime, options).await?;
        let schema = survey.schema();
        options.check_sort_order(&schema, location)?;
        Ok(ColumnTable {
            location: location.to_string(),
            options: options.clone(),
            schema,
        })
    }

    /// The column table at `location` with the columns of `schema` (SQL's `CREATE EXTERNAL
    /// TABLE t (a BIGINT, ...)`): each must be a column of the table, of the same type.
    pub(crate) async fn with_schema(
        runtime: &RuntimeEnv,
        location: &str,
        options: &NpyReadOptions,
        schema: SchemaRef,
    ) -> DfResult<ColumnTable> {
        let survey = remote::survey(location, runtime, options).await?;
        survey.check_columns(&schema)?;
        options.check_sort_order(&schema, location)?;
        Ok(ColumnTable {
            location: location.to_string(),
            options: options.clone(),
            schema,
        })
    }
}

#[cfg(feature = "ballista")]
impl ColumnTable {
    /// The table at `location` with `schema`, as another process planned it (Ballista's
    /// codec): surveyed as each query is planned.
    pub(crate) fn from_parts(
        location: String,
        options: NpyReadOptions,
        schema: SchemaRef,
    ) -> ColumnTable {
        ColumnTable {
            location,
            options,
            schema,
        }
    }

    /// The archive or directory.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// The options.
    pub(crate) fn options(&self) -> &NpyReadOptions {
        &self.options
    }
}

#[async_trait]
impl TableProvider for ColumnTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let survey = remote::survey(&self.location, state.runtime_env(), &self.options).await?;
        survey.check_columns(&self.schema)?;
        // The declared order, or the one recorded with the table while its record holds.
        let mut options = survey.scan_options(&self.options, &self.schema);
        if !crate::recorded::orders_usable(state.config()) {
            options = options.without_orders();
        }
        let exec = scan::plan(
            &self.location,
            &options,
            self.schema.clone(),
            &survey,
            projection.cloned(),
            limit,
            state.config().target_partitions(),
        )?;
        Ok(exec)
    }

    /// Refused: a column table's columns are whole arrays, which rows are not appended to.
    async fn insert_into(
        &self,
        _state: &dyn Session,
        _input: Arc<dyn ExecutionPlan>,
        _op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(DataFusionError::NotImplemented(format!(
            "INSERT into the column table {} (layout=columns): its columns are whole arrays, \
             not appended to; write a new one with COPY (...) TO 'x.npz' OPTIONS ('layout' \
             'columns'), or insert into a directory table of row files (STORED AS NPY)",
            self.location
        )))
    }
}
