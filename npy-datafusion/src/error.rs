//! The ground floor of the DataFusion rooms: this crate's errors as DataFusion errors. It
//! imports nothing else of `datafusion/`.

use datafusion::error::DataFusionError;
use object_store::ObjectMeta;

use npy_serde::error::{Error, ErrorKind};

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

/// The refusal of an object array in a table without the option, naming the table option that
/// reads it, the file and the member.
pub(crate) fn object_refusal(object: &ObjectMeta, member: Option<&str>) -> DataFusionError {
    df_err_in(
        Error::new(ErrorKind::UnsupportedDType(
            "an object array ('|O'): its data is a Python pickle; read it as data (nothing is \
             imported or run) with the table option allow_pickle_data (SQL OPTIONS \
             ('allow_pickle_data' 'true'), a table spec's allow_pickle_data=true, npy sql \
             --allow-pickle-data)"
                .into(),
        )),
        object,
        member,
    )
}
