//! Tables on object stores (features `datafusion` and `remote`): the store of an `s3://` or
//! `http(s)://` table location registered in a session's `RuntimeEnv`, so that DataFusion
//! lists (S3 prefixes and globs, see `listing::table_url`; over HTTP a table is one file, the
//! HTTP store lists only through WebDAV) and reads the table's files with the same ranged reads
//! as local ones. [`register_store_in`] does it for any `RuntimeEnv` (a Ballista executor's
//! or scheduler's), [`register_store_for`] for a `SessionContext`.

use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::SessionContext;

use super::listing::table_url;
use npy_remote::{is_url, store_for_url, RemoteOptions};

/// Registers in `ctx` the object store a table at `location` needs: for `s3://bucket/...` the
/// bucket's store (credentials and endpoint from the environment, see
/// [`npy_remote::store_for_url`]), for `http(s)://host/...` the host's, with `options`'
/// timeouts and retries. A location that is not such a URL needs nothing: `Ok(false)`.
///
/// ```
/// use datafusion::prelude::SessionContext;
/// use npy_datafusion::register_store_for;
/// use npy_remote::RemoteOptions;
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
    register_store_in(&ctx.runtime_env(), location, options)
}

/// [`register_store_for`] on a `RuntimeEnv`: what a process that builds its runtime itself
/// calls, such as a Ballista executor (in `ExecutorProcessConfig::override_runtime_producer`)
/// or scheduler (on the `runtime_env()` of the state its `override_session_builder` returns),
/// once per bucket or host its tables live in (see [`crate::ballista`]'s deployment notes).
///
/// ```
/// use datafusion::execution::runtime_env::RuntimeEnv;
/// use datafusion::execution::object_store::ObjectStoreUrl;
/// use npy_datafusion::register_store_in;
/// use npy_remote::RemoteOptions;
///
/// let runtime = RuntimeEnv::default();
/// assert!(register_store_in(&runtime, "s3://bucket/", &RemoteOptions::default())?);
/// let url = ObjectStoreUrl::parse("s3://bucket")?;
/// assert!(runtime.object_store(&url).is_ok());
/// # Ok::<(), datafusion::error::DataFusionError>(())
/// ```
pub fn register_store_in(
    runtime: &RuntimeEnv,
    location: &str,
    options: &RemoteOptions,
) -> DfResult<bool> {
    if !is_url(location) {
        return Ok(false);
    }
    let root = table_url(location)?.object_store();
    let (store, _) = store_for_url(root.as_str(), options)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    runtime.register_object_store(root.as_ref(), store);
    Ok(true)
}
