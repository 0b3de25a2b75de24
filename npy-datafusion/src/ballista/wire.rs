//! What both codecs' messages share: the read options on the wire, and the error of a
//! malformed message (the `.npy` table and scan messages of `codec.rs`, the column-table
//! messages of `columns.rs`).

use datafusion::error::{DataFusionError, Result as DfResult};
use prost::Message;

use crate::NpyReadOptions;

/// One table option on the wire: its key and value ([`NpyReadOptions::entries`], set again
/// with [`NpyReadOptions::set`] on the other side), so that a new table option needs nothing
/// here.
#[derive(Clone, PartialEq, Message)]
struct OptionProto {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// [`NpyReadOptions`] on the wire: every option that has a value.
#[derive(Clone, PartialEq, Message)]
pub(super) struct OptionsProto {
    #[prost(message, repeated, tag = "1")]
    entries: Vec<OptionProto>,
}

pub(super) fn options_to_proto(o: &NpyReadOptions) -> OptionsProto {
    let entries = o.entries().into_iter();
    OptionsProto {
        entries: entries
            .filter_map(|e| {
                Some(OptionProto {
                    value: e.value?,
                    key: e.key,
                })
            })
            .collect(),
    }
}

pub(super) fn options_from_proto(p: Option<OptionsProto>) -> DfResult<NpyReadOptions> {
    let p = p.ok_or_else(|| malformed("the read options are missing"))?;
    p.entries
        .iter()
        .try_fold(NpyReadOptions::new(), |o, e| o.set(&e.key, &e.value))
        .map_err(|e| malformed(&e.to_string()))
}

pub(super) fn malformed(what: &str) -> DataFusionError {
    DataFusionError::Internal(format!("npy-serde codec: malformed message: {what}"))
}
