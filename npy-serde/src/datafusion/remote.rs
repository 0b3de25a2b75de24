//! Tables on object stores (features `datafusion` and `remote`): the store of an `s3://` or
//! `http(s)://` table location registered in the session's `RuntimeEnv`, so that DataFusion
//! lists (S3 prefixes; globs over S3 are not listed yet; over HTTP a table is one file, the HTTP store lists only
//! through WebDAV) and reads the table's files with the same ranged reads as local ones.

use datafusion::datasource::listing::ListingTableUrl;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::prelude::SessionContext;

use crate::remote::{is_url, store_for_url, RemoteOptions};

/// Registers in `ctx` the object store a table at `location` needs: for `s3://bucket/...` the
/// bucket's store (credentials and endpoint from the environment, see
/// [`crate::remote::store_for_url`]), for `http(s)://host/...` the host's, with `options`'
/// timeouts and retries. A location that is not such a URL needs nothing: `Ok(false)`.
///
/// ```
/// use datafusion::prelude::SessionContext;
/// use npy_serde::datafusion::register_store_for;
/// use npy_serde::remote::RemoteOptions;
///
/// let ctx = SessionContext::new();
/// assert!(register_store_for(&ctx, "s3://bucket/shards/*.npy", &RemoteOptions::default())?);
/// assert!(!register_store_for(&ctx, "data/w2.npy", &RemoteOptions::default())?);
/// # Ok::<(), datafusion::error::DataFusionError>(())
/// ```
pub fn register_store_for(
    ctx: &SessionContext,
    location: &str,
    options: &RemoteOptions,
) -> DfResult<bool> {
    if !is_url(location) {
        return Ok(false);
    }
    let table_url = ListingTableUrl::parse(location)?;
    let root = table_url.object_store();
    let (store, _) = store_for_url(root.as_str(), options)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    ctx.register_object_store(root.as_ref(), store);
    Ok(true)
}
