//! What both codecs' messages share: the read and write options on the wire, and the error
//! of a malformed message (the `.npy` table, format, scan and sink messages of `codec.rs`, the
//! column-table messages of `columns.rs`).

use datafusion::error::{DataFusionError, Result as DfResult};
use prost::Message;

use crate::{NpyReadOptions, NpyWriteOptions};

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

/// [`NpyReadOptions`] (or [`NpyWriteOptions`]) on the wire: every option that has a value.
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

/// [`NpyWriteOptions`] on the wire: its [`entries`](NpyWriteOptions::entries).
pub(super) fn write_options_to_proto(o: &NpyWriteOptions) -> OptionsProto {
    OptionsProto {
        entries: (o.entries().into_iter())
            .map(|(key, value)| OptionProto { key, value })
            .collect(),
    }
}

/// The write options of a message (none: the defaults, as a message from before they were
/// carried).
pub(super) fn write_options_from_proto(p: Option<OptionsProto>) -> DfResult<NpyWriteOptions> {
    let Some(p) = p else {
        return Ok(NpyWriteOptions::new());
    };
    p.entries
        .iter()
        .try_fold(NpyWriteOptions::new(), |o, e| o.set(&e.key, &e.value))
        .map_err(|e| malformed(&e.to_string()))
}

pub(super) fn malformed(what: &str) -> DataFusionError {
    DataFusionError::Internal(format!("npy-serde codec: malformed message: {what}"))
}
