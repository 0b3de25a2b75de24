//! The session extension: [`NpySessionExt`] (`register_npy` / `read_npy` on a
//! `SessionContext`) and [`register_npy_format`] (SQL's `STORED AS NPY`).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::provider::DefaultTableFactory;
use datafusion::error::Result as DfResult;
use datafusion::prelude::SessionContext;

use super::file_format::NpyFormatFactory;
use super::options::NpyReadOptions;

/// `register_npy` and `read_npy` on a DataFusion `SessionContext`.
#[async_trait]
pub trait NpySessionExt {
    /// Registers the `.npy` file, directory or glob at `path` (a local path or an object
    /// store URL) as the table `name`. A [`TableSpec`](super::TableSpec) gives both:
    /// `register_npy(name, spec.location(), spec.options().clone())`.
    async fn register_npy(&self, name: &str, path: &str, options: NpyReadOptions) -> DfResult<()>;

    /// A `DataFrame` reading the `.npy` file, directory or glob at `path`.
    async fn read_npy(&self, path: &str, options: NpyReadOptions) -> DfResult<DataFrame>;
}

#[async_trait]
impl NpySessionExt for SessionContext {
    async fn register_npy(&self, name: &str, path: &str, options: NpyReadOptions) -> DfResult<()> {
        let table = listing_table(self, path, &options).await?;
        self.register_table(name, Arc::new(table))?;
        Ok(())
    }

    async fn read_npy(&self, path: &str, options: NpyReadOptions) -> DfResult<DataFrame> {
        let table = listing_table(self, path, &options).await?;
        self.read_table(Arc::new(table))
    }
}

async fn listing_table(
    ctx: &SessionContext,
    path: &str,
    options: &NpyReadOptions,
) -> DfResult<ListingTable> {
    let url = ListingTableUrl::parse(path)?;
    let listing = listing_options_for(options, &url);
    let state = ctx.state();
    let schema = listing.infer_schema(&state, &url).await?;
    let config = ListingTableConfig::new(url)
        .with_listing_options(listing)
        .with_schema(schema);
    Ok(ListingTable::try_new(config)?
        .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache()))
}

/// The listing options for `url`: a single file is read whatever its extension.
fn listing_options_for(options: &NpyReadOptions, url: &ListingTableUrl) -> ListingOptions {
    let listing = options.listing_options();
    if url.is_collection() {
        listing
    } else {
        listing.with_file_extension("")
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
