//! The ground floor of the DataFusion rooms: this crate's errors as DataFusion errors. It
//! imports nothing else of `datafusion/`.

use datafusion::error::DataFusionError;
use object_store::ObjectMeta;

use npy_serde::error::Error;

/// This crate's error about `object`, as a DataFusion error that names the file (the
/// original error stays reachable with `DataFusionError::find_root` and a downcast).
pub(crate) fn df_err(e: Error, object: &ObjectMeta) -> DataFusionError {
    DataFusionError::External(Box::new(e)).context(format!("file {}", object.location))
}

/// This crate's error about `object`, or about its member `member` when the table reads one
/// (the context then names the member and the file).
pub(crate) fn df_err_in(e: Error, object: &ObjectMeta, member: Option<&str>) -> DataFusionError {
    match member {
        None => df_err(e, object),
        Some(key) => DataFusionError::External(Box::new(e))
            .context(format!("member {key} of file {}", object.location)),
    }
}
