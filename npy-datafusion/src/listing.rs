//! A table's listing table: DataFusion's `ListingTable` over a table's files, with
//! [`NpyFormat`](super::NpyFormat) for `.npy` files and `.npz` members and DataFusion's own
//! formats for Parquet, Arrow IPC and CSV files ([`formats`](super::formats)); and the format
//! of a table spec that names none (a directory, a glob without an extension), from the
//! extensions of the files it lists; and the [`table_url`] of a location, whose globs work
//! over object stores too.

use std::collections::BTreeSet;

use datafusion::catalog::Session;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::prelude::SessionContext;
use futures::TryStreamExt;

use super::formats::{arrow_format, csv_format, parquet_format, CsvOptions};
use super::options::{check_sort_columns, NpyReadOptions};
use super::recorded::listed_order;
use super::spec::{TableFormat, TableSpec};
use super::NpyFormat;
use arrow_schema::Schema;

/// The listing table of the `.npy` files (`.npz` members) at `path`.
pub(crate) async fn npy_table(
    ctx: &SessionContext,
    path: &str,
    options: &NpyReadOptions,
) -> DfResult<ListingTable> {
    let url = table_url(path)?;
    let listing = options.listing_options();
    listing_table(ctx, url, listing).await
}

/// The listing table of `spec`, in its format (a format it does not name taken from the
/// extensions of its files: [`listed_format`]).
pub(crate) async fn spec_table(ctx: &SessionContext, spec: &TableSpec) -> DfResult<ListingTable> {
    let url = table_url(spec.location())?;
    let mut spec = spec.clone();
    let mut extension = spec.options().extension.clone();
    if !spec.format_is_known()
        && let Some((format, ext)) = listed_format(ctx, &url, spec.location()).await?
    {
        spec = spec
            .in_format(format)
            .map_err(|e| DataFusionError::Configuration(e.to_string()))?;
        extension = Some(ext);
    }
    let format = spec.format();
    let listing = if format.is_npy() {
        let mut options = spec.options().clone();
        options.extension = extension;
        options.listing_options()
    } else {
        let ext = extension.unwrap_or_else(|| format.extensions()[0].to_string());
        let listing = listing_options(&ctx.state(), format, spec.csv_options(), &ext)?;
        // DataFusion's own formats keep a declared order in every plan: declared only where
        // the session's planner keeps it (not under Ballista's adaptive planner).
        if crate::recorded::orders_usable(ctx.state().config()) {
            listing.with_file_sort_order(spec.options().sort_exprs())
        } else {
            listing
        }
    };
    listing_table(ctx, url, listing).await
}

/// The characters that start a glob, as DataFusion's `ListingTableUrl` knows them.
const GLOB_START: [char; 3] = ['*', '?', '['];

/// The listing URL of a table `location`: DataFusion's [`ListingTableUrl::parse`], except that
/// a URL with a scheme (`s3://bucket/shards/s[01].npy`) keeps its glob as for a local path.
/// (DataFusion takes globs only in paths without a scheme: a URL's `*` stays in the prefix
/// the store lists, which then finds nothing, and its `?` starts the URL's query.) The URL is
/// split at the last `/` before the first glob character: the part before is the prefix the
/// store lists, the rest the pattern its files match (the first path segment under the
/// prefix, as for local globs, unless `listing_table_ignore_subdirectory` is off).
pub(crate) fn table_url(location: &str) -> DfResult<ListingTableUrl> {
    let Some(scheme_end) = location.find("://") else {
        return ListingTableUrl::parse(location);
    };
    let path_start = location[scheme_end + 3..]
        .find('/')
        .map_or(location.len(), |i| scheme_end + 3 + i);
    let Some(glob_at) = location[path_start..]
        .find(GLOB_START)
        .map(|i| path_start + i)
    else {
        return ListingTableUrl::parse(location);
    };
    // `path_start` holds a '/' before `glob_at`, so `rfind` finds one.
    let slash = location[..glob_at].rfind('/').unwrap_or(path_start);
    let (base, pattern) = location.split_at(slash + 1);
    ListingTableUrl::parse(base)?
        .with_glob(pattern)
        .map_err(|e| {
            DataFusionError::Configuration(format!("{location}: the glob {pattern:?}: {e}"))
        })
}

/// DataFusion's listing options for a table of `format` (Parquet, Arrow or CSV) whose files
/// have the extension `extension`, the session's table options under the spec's.
fn listing_options(
    state: &dyn Session,
    format: TableFormat,
    csv: &CsvOptions,
    extension: &str,
) -> DfResult<ListingOptions> {
    let table_options = state.default_table_options();
    let file_format = match format {
        TableFormat::Arrow => arrow_format(),
        TableFormat::Csv => csv_format(csv, table_options),
        TableFormat::Parquet => parquet_format(table_options)?,
        TableFormat::Npy | TableFormat::Npz => {
            return Err(DataFusionError::Internal(format!(
                "{} tables are read by NpyFormat",
                format.name()
            )))
        }
    };
    Ok(ListingOptions::new(file_format).with_file_extension(extension))
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
    let listing = with_recorded_order(listing, &state, std::slice::from_ref(&url), &schema).await?;
    let sorted = listing.file_sort_order.iter().flatten();
    let columns: Vec<_> = sorted.flat_map(|s| s.expr.column_refs()).collect();
    check_sort_columns(
        columns.iter().map(|c| c.name.as_str()),
        &schema,
        url.as_str(),
    )?;
    let config = ListingTableConfig::new(url)
        .with_listing_options(listing)
        .with_schema(schema);
    Ok(ListingTable::try_new(config)?
        .with_cache(ctx.runtime_env().cache_manager.get_file_statistic_cache()))
}

/// `listing` with the order recorded with every one of its files at `urls` (whose schema is
/// `schema`) if it is of `.npy` files (archive members) and declares no order (see
/// `recorded`).
pub(crate) async fn with_recorded_order(
    listing: ListingOptions,
    state: &dyn Session,
    urls: &[ListingTableUrl],
    schema: &Schema,
) -> DfResult<ListingOptions> {
    if !listing.file_sort_order.is_empty() {
        return Ok(listing);
    }
    let Some(format) = listing.format.downcast_ref::<NpyFormat>() else {
        return Ok(listing);
    };
    let order = listed_order(
        state,
        urls,
        format.options(),
        &listing.file_extension,
        schema,
    )
    .await?;
    Ok(listing.with_file_sort_order(order))
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

#[cfg(test)]
mod tests {
    use object_store::path::Path;

    use super::table_url;

    #[test]
    fn url_globs_list_their_prefix_and_match_their_pattern() {
        for (location, hits, misses) in [
            (
                "s3://b/shards/s[01].npy",
                &["s0.npy", "s1.npy"][..],
                &["s2.npy", "s10.npy"][..],
            ),
            (
                "s3://b/shards/s?.npy",
                &["s0.npy", "s9.npy"],
                &["s10.npy", "t0.npy"],
            ),
            (
                "http://h:80/shards/*.npy",
                &["a.npy"],
                &["a.npz", "sub/a.npy"],
            ),
        ] {
            let url = table_url(location).unwrap();
            assert_eq!(url.prefix().as_ref(), "shards", "{location}");
            assert!(url.is_collection(), "{location}");
            for name in hits {
                let path = Path::from(format!("shards/{name}"));
                assert!(url.contains(&path, true), "{location} takes {name}");
            }
            for name in misses {
                let path = Path::from(format!("shards/{name}"));
                assert!(!url.contains(&path, true), "{location} skips {name}");
            }
        }
    }

    #[test]
    fn locations_without_url_globs_parse_as_datafusion_parses_them() {
        for location in [
            "s3://b/shards/",
            "s3://b/x.npy",
            "s3://b",
            "/tmp/d/*.npy",
            "d/x.npy",
        ] {
            let ours = table_url(location).unwrap();
            let theirs = datafusion::datasource::listing::ListingTableUrl::parse(location).unwrap();
            assert_eq!(ours, theirs, "{location}");
        }
        let bad = table_url("s3://b/shards/[.npy").unwrap_err().to_string();
        assert!(
            bad.contains("s3://b/shards/[.npy") && bad.contains("glob"),
            "{bad}"
        );
    }
}
