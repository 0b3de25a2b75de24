//! SQL over `.npy` files with [Apache DataFusion](https://datafusion.apache.org) (feature
//! `datafusion`): a file, a directory or a glob of `.npy` files with one dtype is a table.
//!
//! - [`NpySessionExt`] adds [`register_npy`](NpySessionExt::register_npy) and
//!   [`read_npy`](NpySessionExt::read_npy) to a `SessionContext`, in the style of
//!   `register_parquet` / `read_parquet`.
//! - [`register_npy_format`] makes `CREATE EXTERNAL TABLE t STORED AS NPY LOCATION 'dir/'`
//!   work (options: `OPTIONS ('member' 'x')` for the member `x` of `.npz` archives,
//!   `max_header_size`, `max_data_size`).
//! - [`NpyFormat`], [`NpyFormatFactory`] and [`NpySource`] are the `FileFormat`,
//!   `FileFormatFactory` and `FileSource` underneath, for building listing tables by hand.
//!
//! Rows and columns are those of the [Arrow mapping](crate::arrow) (one column per record
//! field, nested records as structs, subarrays as fixed-size lists, datetimes as timestamps
//! with NaT as NULL). A table's schema is its first file's; a file whose dtype (or shape
//! after the first axis) differs is an error naming it and both dtypes.
//!
//! # The scan
//! - All I/O goes through DataFusion's `ObjectStore`: a ranged read of the header, then ranged
//!   reads of the records, so local files and object stores share one path.
//! - Projection: only the columns the query uses are decoded.
//! - Limit: a partition reads no more records than the query's `LIMIT` needs.
//! - Byte ranges: DataFusion splits large files into byte ranges (`target_partitions`,
//!   `datafusion.optimizer.repartition_file_min_size`); each range reads the whole records
//!   whose first byte it holds, so one large file is read on every core.
//! - Statistics: each file's exact row count, from its header.
//! - Untrusted files: the header and data limits of [`ReaderBuilder`] apply
//!   ([`NpyReadOptions::reader_options`]); a truncated or hostile file fails the query with
//!   this crate's error (the file, and the record, field and byte where it applies), never a
//!   panic.
//!
//! An `.npz` member is read by one partition per archive (its bytes may be deflated); a
//! Fortran-order array with more than one axis longer than 1 is read whole by one partition
//! (its rows are not contiguous).
//!
//! ```
//! use datafusion::prelude::SessionContext;
//! use npy_serde::datafusion::{NpyReadOptions, NpySessionExt};
//! # #[derive(serde::Serialize, npy_serde::NpyRecord)] struct Rec { flag: u8, x: f64 }
//! # let dir = std::env::temp_dir().join(format!("df-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # npy_serde::to_path(dir.join("a.npy"), &[Rec { flag: 1, x: 0.5 }, Rec { flag: 2, x: 1.5 }])?;
//! # npy_serde::to_path(dir.join("b.npy"), &[Rec { flag: 1, x: 2.0 }])?;
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let ctx = SessionContext::new();
//!     // Every .npy file in the directory is a shard of the table.
//!     ctx.register_npy("recs", dir.to_str().unwrap(), NpyReadOptions::new()).await?;
//!     let df = ctx.sql("SELECT flag, sum(x) AS s FROM recs GROUP BY flag ORDER BY flag").await?;
//!     let batches = df.collect().await?;
//!     let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
//!     assert!(text.contains("| 1    | 2.5 |"), "{text}");
//!     Ok::<_, datafusion::error::DataFusionError>(())
//! })?;
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod fetch;
mod format;
mod scan;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::provider::DefaultTableFactory;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::prelude::SessionContext;
use object_store::ObjectMeta;

pub use format::{NpyFormat, NpyFormatFactory};
pub use scan::NpySource;

use crate::error::Error;
use crate::npz::NpzReaderBuilder;
use crate::read::ReaderBuilder;

/// How a table's files are read: header and data limits, and the `.npz` member to read.
///
/// ```
/// use npy_serde::datafusion::NpyReadOptions;
/// let options = NpyReadOptions::new().max_header_size(20_000).npz_member("x");
/// assert_eq!(options.extension(), ".npz");
/// ```
#[derive(Clone, Debug, Default)]
pub struct NpyReadOptions {
    pub(crate) reader: ReaderBuilder,
    pub(crate) member: Option<String>,
    pub(crate) extension: Option<String>,
}

impl NpyReadOptions {
    /// The defaults: `.npy` files, NumPy's 10000-byte header limit, no data-size limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads with these header and data-size limits.
    pub fn reader_options(mut self, reader: ReaderBuilder) -> Self {
        self.reader = reader;
        self
    }

    /// The largest header accepted ([`ReaderBuilder::max_header_size`]).
    pub fn max_header_size(mut self, bytes: u64) -> Self {
        self.reader = self.reader.max_header_size(bytes);
        self
    }

    /// The largest array data accepted per file ([`ReaderBuilder::max_data_size`]).
    pub fn max_data_size(mut self, bytes: u64) -> Self {
        self.reader = self.reader.max_data_size(bytes);
        self
    }

    /// Reads the member `key` (`key.npy` in the archive) of each `.npz` archive: the table's
    /// files are archives (extension `.npz` unless [`file_extension`](Self::file_extension)
    /// says otherwise).
    pub fn npz_member(mut self, key: impl Into<String>) -> Self {
        self.member = Some(key.into());
        self
    }

    /// The extension of the files a directory's table reads (default `.npy`, `.npz` with
    /// [`npz_member`](Self::npz_member)); other files in the directory are skipped.
    pub fn file_extension(mut self, ext: impl Into<String>) -> Self {
        self.extension = Some(ext.into());
        self
    }

    /// The extension of the table's files.
    pub fn extension(&self) -> &str {
        match (&self.extension, &self.member) {
            (Some(e), _) => e,
            (None, Some(_)) => ".npz",
            (None, None) => ".npy",
        }
    }

    /// The archive options of an `.npz` table: the same limits; a member may be as large as
    /// the data limit allows.
    pub(crate) fn npz_options(&self) -> NpzReaderBuilder {
        let mut b = NpzReaderBuilder::new().reader_options(self.reader.clone());
        if let Some(max) = self.reader.max_data_size {
            let header = self.reader.limits().max_header_size.saturating_add(12);
            b = b.max_member_size(max.saturating_add(header));
        }
        b
    }

    /// DataFusion's listing options for a table of these files.
    pub fn listing_options(&self) -> ListingOptions {
        ListingOptions::new(Arc::new(NpyFormat::new(self.clone())))
            .with_file_extension(self.extension())
    }

    /// The listing options for `path`: a single file is read whatever its extension.
    fn listing_options_for(&self, url: &ListingTableUrl) -> ListingOptions {
        let options = self.listing_options();
        if url.is_collection() {
            options
        } else {
            options.with_file_extension("")
        }
    }
}

/// `register_npy` and `read_npy` on a DataFusion `SessionContext`.
#[async_trait]
pub trait NpySessionExt {
    /// Registers the `.npy` file, directory or glob at `path` (a local path or an object
    /// store URL) as the table `name`.
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
    let listing = options.listing_options_for(&url);
    let state = ctx.state();
    let schema = listing.infer_schema(&state, &url).await?;
    let config = ListingTableConfig::new(url)
        .with_listing_options(listing)
        .with_schema(schema);
    Ok(ListingTable::try_new(config)?
        .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache()))
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

/// This crate's error about `object`, as a DataFusion error that names the file (the
/// original error stays reachable with `DataFusionError::find_root` and a downcast).
pub(crate) fn df_err(e: Error, object: &ObjectMeta) -> DataFusionError {
    DataFusionError::External(Box::new(e)).context(format!("file {}", object.location))
}
