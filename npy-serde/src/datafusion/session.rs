//! The session extension: [`NpySessionExt`] (`register_npy` / `read_npy` and
//! `register_spec` / `read_spec` on a `SessionContext`) and [`register_npy_format`] (SQL's `STORED AS NPY`).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::provider::DefaultTableFactory;
use datafusion::error::Result as DfResult;
use datafusion::prelude::SessionContext;

use super::file_format::NpyFormatFactory;
use super::listing::{npy_table, spec_table};
use super::options::NpyReadOptions;
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
    /// use npy_serde::datafusion::{NpySessionExt, TableSpec};
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
        let table = npy_table(self, path, &options).await?;
        self.register_table(name, Arc::new(table))?;
        Ok(())
    }

    async fn read_npy(&self, path: &str, options: NpyReadOptions) -> DfResult<DataFrame> {
        let table = npy_table(self, path, &options).await?;
        self.read_table(Arc::new(table))
    }

    async fn register_spec(&self, name: &str, spec: &TableSpec) -> DfResult<()> {
        let table = spec_table(self, spec).await?;
        self.register_table(name, Arc::new(table))?;
        Ok(())
    }

    async fn read_spec(&self, spec: &TableSpec) -> DfResult<DataFrame> {
        let table = spec_table(self, spec).await?;
        self.read_table(Arc::new(table))
    }
}

/// Registers [`NpyFormatFactory`] with the context, so that SQL's
/// `CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '...'` reads `.npy` files.
///
/// ```
/// # let rt = tokio::runtime::Runtime::new()?;
/// # rt.block_on(async {
/// # let path = std::env::temp_dir().join(format!("df-fmt-{}.npy", std::process::id()));
/// # npy_serde::to_path(&path, &[1i64, 2, 3])?;
/// let ctx = datafusion::prelude::SessionContext::new();
/// npy_serde::datafusion::register_npy_format(&ctx)?;
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
    let state = ctx.state_ref();
    let mut state = state.write();
    state.register_file_format(Arc::new(NpyFormatFactory::default()), true)?;
    state
        .table_factories_mut()
        .insert("NPY".into(), Arc::new(DefaultTableFactory::new()));
    Ok(())
}
