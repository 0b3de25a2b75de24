//! A table's listing table: DataFusion's `ListingTable` over a table's files, with
//! [`NpyFormat`](super::NpyFormat) for `.npy` files and `.npz` members and DataFusion's own
//! formats for Parquet, Arrow IPC and CSV files ([`formats`](super::formats)); and the format
//! of a table spec that names none (a directory, a glob without an extension), from the
//! extensions of the files it lists.

use std::collections::BTreeSet;

use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::prelude::SessionContext;
use futures::TryStreamExt;

use super::formats::listing_options;
use super::options::NpyReadOptions;
use super::spec::{TableFormat, TableSpec};

/// The listing table of the `.npy` files (`.npz` members) at `path`.
pub(crate) async fn npy_table(
    ctx: &SessionContext,
    path: &str,
    options: &NpyReadOptions,
) -> DfResult<ListingTable> {
    let url = ListingTableUrl::parse(path)?;
    let listing = options.listing_options();
    listing_table(ctx, url, listing).await
}

/// The listing table of `spec`, in its format (a format it does not name taken from the
/// extensions of its files: [`listed_format`]).
pub(crate) async fn spec_table(ctx: &SessionContext, spec: &TableSpec) -> DfResult<ListingTable> {
    let url = ListingTableUrl::parse(spec.location())?;
    let mut spec = spec.clone();
    let mut extension = spec.options().extension.clone();
    if !spec.format_is_known() {
        if let Some((format, ext)) = listed_format(ctx, &url, spec.location()).await? {
            spec = spec
                .in_format(format)
                .map_err(|e| DataFusionError::Configuration(e.to_string()))?;
            extension = Some(ext);
        }
    }
    let format = spec.format();
    let listing = if format.is_npy() {
        let mut options = spec.options().clone();
        options.extension = extension;
        options.listing_options()
    } else {
        let ext = extension.unwrap_or_else(|| format.extensions()[0].to_string());
        listing_options(&ctx.state(), format, spec.csv_options(), &ext)?
    };
    listing_table(ctx, url, listing).await
}

/// The listing table of `url` with `listing`'s format, its schema inferred from the files and
/// its statistics cached in the session's file-statistics cache. A single file is read
/// whatever its extension.
async fn listing_table(
    ctx: &SessionContext,
    url: ListingTableUrl,
    listing: ListingOptions,
) -> DfResult<ListingTable> {
    let listing = if url.is_collection() {
        listing
    } else {
        listing.with_file_extension("")
    };
    let state = ctx.state();
    let schema = listing.infer_schema(&state, &url).await?;
    let config = ListingTableConfig::new(url)
        .with_listing_options(listing)
        .with_schema(schema);
    Ok(ListingTable::try_new(config)?
        .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache()))
}

/// The format of the files at `url` (written `location` in messages) by their extensions,
/// and that extension as it is written: `None` when none has a known one (`.npy` files, as
/// every table without a format was before); an error when they have two, since a table
/// reads one format.
async fn listed_format(
    ctx: &SessionContext,
    url: &ListingTableUrl,
    location: &str,
) -> DfResult<Option<(TableFormat, String)>> {
    let state = ctx.state();
    let store = ctx.runtime_env().object_store(url)?;
    let files: Vec<_> = url
        .list_all_files(&state, store.as_ref(), "")
        .await?
        .try_collect()
        .await?;
    let mut seen: BTreeSet<(usize, String)> = BTreeSet::new();
    for file in &files {
        let name = file.location.filename().unwrap_or_default();
        if let Some(format) = TableFormat::of_file(name) {
            let rank = TableFormat::ALL
                .iter()
                .position(|f| *f == format)
                .unwrap_or(0);
            let ext = name.rfind('.').map(|i| &name[i..]).unwrap_or_default();
            seen.insert((rank, ext.to_string()));
        }
    }
    let mut found = seen.into_iter();
    let Some((rank, ext)) = found.next() else {
        return Ok(None);
    };
    let others: Vec<String> = found.map(|(_, e)| e).collect();
    if !others.is_empty() {
        let names: Vec<&str> = TableFormat::ALL.iter().map(|f| f.name()).collect();
        return Err(DataFusionError::Configuration(format!(
            "{location} holds files of more than one extension ({ext}, {}): a table reads \
             one format; name it and, when its files differ from the format's first \
             extension, theirs: FORMAT({location}, file_extension=EXT), FORMAT one of {}",
            others.join(", "),
            names.join(", ")
        )));
    }
    Ok(Some((TableFormat::ALL[rank], ext)))
}
