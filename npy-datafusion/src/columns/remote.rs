//! Column tables on object stores: an `.npz` object whose `.npy` members are the columns, or a
//! prefix whose `.npy` objects are, on a store registered in the session's `RuntimeEnv`
//! ([`register_store_for`](crate::register_store_for) does it for `s3://` and
//! `http(s)://` locations). They are read with the ranged GETs of [`npy_remote`]:
//!
//! - the survey reads the archive's central directory (one GET of its tail) and each
//!   column's header (one small GET of a stored member's local header and `.npy` header, or
//!   of a deflated member's first compressed bytes, inflated only as far as its header; for
//!   a prefix, one LIST and a GET of each object's header);
//! - a scan fetches, for each column it reads and for nothing else, the data bytes of the
//!   rows it reads (every row, or the first `LIMIT` ones), in chunks fetched concurrently,
//!   once per scan (its partitions share them); a deflated member is fetched and inflated
//!   whole. A stored member read whole has its CRC-32 checked unless `verify_crc=false`.

use std::sync::Arc;

use arrow_buffer::Buffer;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::super::extent::data_extent;
use super::super::options::NpyReadOptions;
use super::survey::{in_column, in_table, Column, Place, RemotePlace, Source, Survey};
use npy_arrow::order::TableRecord;
use npy_remote::{FetchOptions, RemoteNpy, RemoteNpz};

use super::super::recorded::table_record_object;
use npy_serde::error::{Error, Result};
use npy_serde::header::{parse_header, ParsedHeader};

/// The first GET of a column's header: most `.npy` headers are 128 bytes, a wide record's a
/// few KiB (a longer one takes a second GET). The default 64 KiB would fetch as many bytes of
/// every column's data whenever a table is surveyed.
const HEADER_PROBE: u64 = 4 << 10;

/// Surveys the column table at `location`: a local one (a path or a `file://` URL) on a
/// blocking thread, one on an object store `runtime` has by ranged GETs.
pub(crate) async fn survey(
    location: &str,
    runtime: &RuntimeEnv,
    options: &NpyReadOptions,
) -> DfResult<Survey> {
    if is_remote(location) {
        let store = runtime.object_store(store_url(location)?).map_err(|e| {
            e.context(format!(
                "column table {location}: no object store is registered for it \
                 (register_store_for registers the store of an s3:// or http(s):// URL)"
            ))
        })?;
        return survey_remote(location, store, options).await;
    }
    let place = Place::of(location)?;
    let options = options.clone();
    let task = tokio::task::spawn_blocking(move || Survey::take(place, &options));
    match task.await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// [`survey`] from a blocking thread of the runtime (a scan's partition), a remote table on
/// `store`.
pub(crate) fn survey_blocking(
    location: &str,
    store: &Arc<dyn ObjectStore>,
    options: &NpyReadOptions,
) -> DfResult<Survey> {
    if is_remote(location) {
        let survey = survey_remote(location, store.clone(), options);
        return tokio::runtime::Handle::current().block_on(survey);
    }
    Survey::take(Place::of(location)?, options)
}

async fn survey_remote(
    location: &str,
    store: Arc<dyn ObjectStore>,
    options: &NpyReadOptions,
) -> DfResult<Survey> {
    let place = Arc::new(resolve(location, store).await?);
    let (columns, npz, record) = place.columns(options).await?;
    Ok(Survey::of_columns(Place::Remote(place), columns, npz)?.with_record(record))
}

/// A URL other than `file://`.
pub(crate) fn is_remote(location: &str) -> bool {
    location.contains("://") && !location.starts_with("file://")
}

/// The object store URL of a column table's location (`file://` for a local one).
pub(crate) fn store_url(location: &str) -> DfResult<ObjectStoreUrl> {
    if is_remote(location) {
        return Ok(ListingTableUrl::parse(location)?.object_store());
    }
    Ok(ObjectStoreUrl::local_filesystem())
}

/// The column table at `location` on `store`: an archive if the object exists (one HEAD), a
/// prefix otherwise (or when `location` ends in `/`).
async fn resolve(location: &str, store: Arc<dyn ObjectStore>) -> DfResult<RemotePlace> {
    let path = ListingTableUrl::parse(location)?.prefix().clone();
    let archive = if location.ends_with('/') {
        false
    } else {
        match store.head(&path).await {
            Ok(_) => true,
            Err(object_store::Error::NotFound { .. }) => false,
            Err(e) => {
                return Err(DataFusionError::External(Box::new(Error::remote(
                    location, e,
                ))))
            }
        }
    };
    Ok(RemotePlace {
        url: location.to_string(),
        store,
        path,
        archive,
    })
}

impl RemotePlace {
    fn fetch(&self) -> FetchOptions {
        FetchOptions::default().probe_bytes(HEADER_PROBE)
    }

    /// The table's columns, each header checked, the archive's directory, and the records
    /// kept with the table (the archive's comment, the prefix's `_npy_order`: one GET more,
    /// only when the listing shows one).
    pub(crate) async fn columns(
        self: &Arc<Self>,
        options: &NpyReadOptions,
    ) -> DfResult<(Vec<Column>, Option<RemoteNpz>, TableRecord)> {
        let place = Place::Remote(self.clone());
        if self.archive {
            let npz = RemoteNpz::open_with(
                self.store.clone(),
                self.path.clone(),
                &self.url,
                &options.reader,
                &self.fetch(),
            )
            .await
            .map_err(|e| in_table(e, &place))?;
            let mut columns = Vec::new();
            for (key, deflated) in npz.npy_members() {
                let source = Source::Member(key.to_string());
                let err = |e| in_column(e, &place, &source);
                let (header, size) = if deflated {
                    npz.deflated_header(key).await.map_err(err)?
                } else {
                    let m = npz.member(key).await.map_err(err)?;
                    let header = m.parsed_header().clone();
                    // `member` checked that it holds exactly its header and declared data.
                    let size = declared_end(&header, options).map_err(err)?;
                    (header, size)
                };
                data_extent(options, &header, size).map_err(err)?;
                columns.push(Column::new(
                    &place,
                    key.to_string(),
                    header,
                    source,
                    deflated,
                )?);
            }
            let record = TableRecord::parse(npz.comment());
            return Ok((columns, Some(npz), record));
        }
        let ext = options.extension.as_deref().unwrap_or(".npy");
        let ext = format!(".{}", ext.trim_start_matches('.'));
        let depth = self.path.parts().count() + 1;
        let mut objects: Vec<Path> = self
            .store
            .list(Some(&self.path))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(|e| in_table(Error::remote(&self.url, e), &place))?;
        let record_path = self.path.clone().join(npy_arrow::order::DIRECTORY_RECORD);
        let record = match objects.contains(&record_path) {
            true => table_record_object(&self.store, &record_path).await,
            false => TableRecord::default(),
        };
        // The prefix's own `.npy` objects, not those of its sub-prefixes.
        objects.retain(|p| p.parts().count() == depth && p.as_ref().ends_with(&ext));
        objects.sort();
        let mut columns = Vec::new();
        for path in objects {
            let file = path.filename().unwrap_or_default();
            let name = file.strip_suffix(&ext).unwrap_or(file).to_string();
            let url = self.object_url(&path);
            let source = Source::Object(path.clone(), url.clone());
            let err = |e| in_column(e, &place, &source);
            let npy = self.open_object(&path, &url, options).await.map_err(err)?;
            let header = npy.parsed_header().clone();
            let size = declared_end(&header, options).map_err(err)?;
            data_extent(options, &header, size).map_err(err)?;
            columns.push(Column::new(&place, name, header, source, false)?);
        }
        Ok((columns, None, record))
    }

    /// The URL of the object at `path` (for messages).
    fn object_url(&self, path: &Path) -> String {
        let base = self.url.trim_end_matches('/');
        match path.filename() {
            Some(name) => format!("{base}/{name}"),
            None => base.to_string(),
        }
    }

    async fn open_object(
        &self,
        path: &Path,
        url: &str,
        options: &NpyReadOptions,
    ) -> Result<RemoteNpy> {
        RemoteNpy::open_with(
            self.store.clone(),
            path.clone(),
            url,
            &options.reader,
            &self.fetch(),
        )
        .await
    }

    /// One column's header, the data bytes of its rows `span` (clamped to the array), where
    /// the array's data starts in its object (for error positions) and the first row of
    /// those bytes,
    /// for a scan; `whole` when the scan reads every row of the table (a stored member's
    /// CRC-32 is then checked, unless the options say not to, when `span` is every row too).
    /// A deflated member is inflated whole: its rows start at 0.
    pub(crate) async fn column_data(
        &self,
        npz: Option<&RemoteNpz>,
        column: &Column,
        options: &NpyReadOptions,
        span: std::ops::Range<u64>,
        whole: bool,
    ) -> Result<(ParsedHeader, Buffer, u64, u64)> {
        let npy = match (&column.source, npz) {
            (Source::Member(key), Some(npz)) if column.deflated => {
                let Some(bytes) = npz.inflated(key).await? else {
                    return Err(Error::invalid_value("the member is no longer deflated"));
                };
                let header = parse_header(&bytes, &options.reader.limits)?;
                let (start, end) = data_extent(options, &header, bytes.len() as u64)?;
                let buffer = Buffer::from_vec(bytes)
                    .slice_with_length(start as usize, (end - start) as usize);
                return Ok((header, buffer, start, 0));
            }
            (Source::Member(key), Some(npz)) => npz.member(key).await?,
            (Source::Object(path, url), _) => self.open_object(path, url, options).await?,
            _ => return Err(Error::invalid_value("the archive is not open")),
        };
        let header = npy.parsed_header().clone();
        if header.header != column.header.header {
            // The caller names both headers.
            return Ok((header, Buffer::from_vec(Vec::<u8>::new()), 0, 0));
        }
        let end = span.end.min(npy.len());
        let first = span.start.min(end);
        let data = npy
            .fetch_rows(first..end, whole && options.verifies_crc())
            .await?;
        Ok((header, Buffer::from_vec(data), npy.data_start(), first))
    }
}

/// Where the data a header declares ends in its `.npy` stream (checked arithmetic).
fn declared_end(header: &ParsedHeader, options: &NpyReadOptions) -> Result<u64> {
    let (_, data_len) = options.reader.check(&header.header)?;
    header
        .data_offset
        .checked_add(data_len)
        .ok_or_else(|| Error::overflow("the array's end"))
}
