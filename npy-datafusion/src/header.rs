//! A file's `.npy` header through the object store: one ranged read (two when the header is
//! longer than the probe), its length checked against the limit before the rest is fetched.

use std::sync::Arc;

use datafusion::error::Result as DfResult;
use object_store::{GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt};

use super::error::df_err;
use super::options::NpyReadOptions;
use npy_serde::header::{parse_contents, Contents, ParsedHeader};

/// Bytes fetched first for a header: NumPy writes headers of 128 bytes or a few multiples of
/// 64; a longer one is fetched whole once its length field is known (and within the limit).
const HEADER_PROBE: u64 = 4096;

/// Reads the `.npy` header at the start of `object` with one ranged read (two when the
/// header is longer than [`HEADER_PROBE`]): its length is checked against the limit before
/// the rest is fetched. Returns the header and the object's size as the store answers it
/// now: the size in `object` may come from a listing DataFusion cached before the file
/// changed.
pub(crate) async fn fetch_header(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    options: &NpyReadOptions,
) -> DfResult<(ParsedHeader, u64)> {
    let (contents, size) = fetch_contents(store, object, options).await?;
    Ok((typed(contents, object, None)?, size))
}

/// The header of a file (member) whose kind was fetched: a typed array's, or for an object
/// array the refusal naming the table option that reads it (the scan of an object file is
/// [`super::objects`]'s).
pub(crate) fn typed(
    contents: Contents,
    object: &ObjectMeta,
    member: Option<&str>,
) -> DfResult<ParsedHeader> {
    match contents {
        Contents::Objects(_) => Err(super::error::object_refusal(object, member)),
        other => other.typed().map_err(|e| df_err(e, object)),
    }
}

/// [`fetch_header`] saying what the file holds: a typed array or an object array
/// ([`Contents`]), from the same one or two ranged reads.
pub(crate) async fn fetch_contents(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    options: &NpyReadOptions,
) -> DfResult<(Contents, u64)> {
    let limits = options.reader.limits();
    let first = GetOptions::default().with_range(Some(0..object.size.min(HEADER_PROBE)));
    let got = store.get_opts(&object.location, first).await?;
    let size = got.meta.size;
    let probe = got.bytes().await?;
    if let Some(total) = declared_header_end(&probe) {
        let text = total.saturating_sub(prefix_len(&probe));
        if total > probe.len() as u64 && text <= limits.max_header_size && total <= size {
            let whole = store.get_range(&object.location, 0..total).await?;
            let header = parse_contents(&whole, limits).map_err(|e| df_err(e, object))?;
            return Ok((header, size));
        }
    }
    // The header is in the probe, or parsing it says what is wrong (bad magic, a length
    // over the limit, a file ending inside the header).
    let header = parse_contents(&probe, limits).map_err(|e| df_err(e, object))?;
    Ok((header, size))
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
    if !bytes.starts_with(npy_serde::header::MAGIC) {
        return None;
    }
    let len = match bytes.get(6)? {
        1 => u64::from(u16::from_le_bytes(bytes.get(8..10)?.try_into().ok()?)),
        2 | 3 => u64::from(u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?)),
        _ => return None,
    };
    Some(prefix_len(bytes) + len)
}
