//! An `.npz` archive through the object store: opened with the table's limits, its member's
//! header read off the async threads.

use std::io::Cursor;
use std::sync::Arc;

use datafusion::error::Result as DfResult;
use object_store::{GetResultPayload, ObjectMeta, ObjectStore, ObjectStoreExt};

use super::error::df_err;
use super::header::fetch_contents;
use super::options::NpyReadOptions;
use npy_serde::header::Contents;
use npy_serde::npz::NpzArchive;

/// A seekable reader over an object: the file itself for a local store, its bytes otherwise.
pub(crate) trait ReadSeek: std::io::Read + std::io::Seek + Send {}
impl<T: std::io::Read + std::io::Seek + Send> ReadSeek for T {}

/// Opens `object` as an `.npz` archive with the table's limits.
pub(crate) async fn open_archive(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    options: &NpyReadOptions,
) -> DfResult<NpzArchive<Box<dyn ReadSeek>>> {
    let got = store.get(&object.location).await?;
    let reader: Box<dyn ReadSeek> = match got.payload {
        GetResultPayload::File(file, _) => Box::new(std::io::BufReader::new(file)),
        GetResultPayload::Stream(_) => Box::new(Cursor::new(got.bytes().await?)),
    };
    let builder = options.npz_options();
    let meta = object.clone();
    blocking(move || builder.from_reader(reader).map_err(|e| df_err(e, &meta))).await
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// What a table reads from `object` says it holds, from its header: the file's, or its
/// member's (the table option `member`), with the size it is checked against.
pub(crate) async fn table_contents(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    options: &NpyReadOptions,
) -> DfResult<(Contents, u64)> {
    match options.member() {
        None => fetch_contents(store, object, options).await,
        Some(key) => member_header(store, object, options, key).await,
    }
}

/// The header of the member `key` of the archive `object`, and the member's size (header
/// and data, as the zip directory declares it: what its reader checks it against).
pub(crate) async fn member_header(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    options: &NpyReadOptions,
    key: &str,
) -> DfResult<(Contents, u64)> {
    let mut npz = open_archive(store, object, options).await?;
    let meta = object.clone();
    let key = key.to_string();
    blocking(move || {
        let mut member = npz.by_key(&key).map_err(|e| df_err(e, &meta))?;
        let size = member.info().size;
        let contents = member.contents().map_err(|e| df_err(e, &meta))?;
        Ok((contents.clone(), size))
    })
    .await
}
