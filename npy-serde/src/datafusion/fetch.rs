//! What the format and the scan both read through the object store: a file's header (ranged
//! reads, checked against the limits before the rest is fetched), an `.npz` archive, and the
//! table schema a header maps to.

use std::io::Cursor;
use std::sync::Arc;

use arrow_schema::Schema;
use datafusion::error::Result as DfResult;
use object_store::{GetResultPayload, ObjectMeta, ObjectStore, ObjectStoreExt};

use super::{df_err, NpyReadOptions};
use crate::arrow::schema_for;
use crate::error::{Error, Result};
use crate::header::{parse_header, ParsedHeader};
use crate::npz::NpzArchive;

/// Bytes fetched first for a header: NumPy writes headers of 128 bytes or a few multiples of
/// 64; a longer one is fetched whole once its length field is known (and within the limit).
const HEADER_PROBE: u64 = 4096;

/// The table's schema for one file: the Arrow schema of its array without the shape (files
/// of one table differ in their number of rows), with the element descr kept.
pub(crate) fn table_schema(header: &ParsedHeader) -> Result<Schema> {
    let schema = schema_for(&header.header)?;
    let mut meta = schema.metadata().clone();
    meta.retain(|k, _| k == crate::arrow::DESCR_KEY);
    Ok(Schema::new_with_metadata(schema.fields().clone(), meta))
}

/// Fails unless `schema` (of `object`) has the same columns as the table's `first` (of
/// `first_path`).
pub(crate) fn check_same(
    first: &Schema,
    first_path: &str,
    schema: &Schema,
    object: &ObjectMeta,
) -> DfResult<()> {
    if first.fields() == schema.fields() {
        return Ok(());
    }
    let descr = |s: &Schema| {
        s.metadata()
            .get(crate::arrow::DESCR_KEY)
            .cloned()
            .unwrap_or_default()
    };
    Err(df_err(
        Error::invalid_value(format!(
            "its dtype {} (rows of {}) differs from the table's {} (rows of {}, from {first_path}): \
             every file of a table has the same dtype and the same shape after the first axis",
            descr(schema),
            fields_text(schema),
            descr(first),
            fields_text(first),
        )),
        object,
    ))
}

fn fields_text(s: &Schema) -> String {
    let parts: Vec<String> = s
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect();
    parts.join(", ")
}

/// Reads the `.npy` header at the start of `object` with one ranged read (two when the
/// header is longer than [`HEADER_PROBE`]): its length is checked against the limit before
/// the rest is fetched.
pub(crate) async fn fetch_header(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    options: &NpyReadOptions,
) -> DfResult<ParsedHeader> {
    let limits = options.reader.limits();
    let probe = store
        .get_range(&object.location, 0..object.size.min(HEADER_PROBE))
        .await?;
    if let Some(total) = declared_header_end(&probe) {
        let text = total.saturating_sub(prefix_len(&probe));
        if total > probe.len() as u64 && text <= limits.max_header_size && total <= object.size {
            let whole = store.get_range(&object.location, 0..total).await?;
            return parse_header(&whole, limits).map_err(|e| df_err(e, object));
        }
    }
    // The header is in the probe, or parsing it says what is wrong (bad magic, a length
    // over the limit, a file ending inside the header).
    parse_header(&probe, limits).map_err(|e| df_err(e, object))
}

/// The length of the magic, version and length field, from the version byte.
fn prefix_len(bytes: &[u8]) -> u64 {
    if bytes.get(6) == Some(&1) {
        10
    } else {
        12
    }
}

/// Where the header of a `.npy` stream starting with `bytes` says its data starts, when the
/// magic and the length field are there.
fn declared_header_end(bytes: &[u8]) -> Option<u64> {
    if !bytes.starts_with(crate::header::MAGIC) {
        return None;
    }
    let len = match bytes.get(6)? {
        1 => u64::from(u16::from_le_bytes(bytes.get(8..10)?.try_into().ok()?)),
        2 | 3 => u64::from(u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?)),
        _ => return None,
    };
    Some(prefix_len(bytes) + len)
}

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
pub(crate) async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}
