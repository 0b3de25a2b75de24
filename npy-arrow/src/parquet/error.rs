//! The parquet crate's errors as this crate's: an I/O error stays one, anything else is a
//! write error (the writer) or an invalid value (the reader), its message prefixed `Parquet: `.

use ::parquet::errors::ParquetError;

use npy_serde::error::Error;

/// An error of writing a Parquet file.
pub(super) fn write_err(e: ParquetError) -> Error {
    convert(e, Error::write)
}

/// An error of reading a Parquet file.
pub(super) fn read_err(e: ParquetError) -> Error {
    convert(e, Error::invalid_value)
}

fn convert(e: ParquetError, other: fn(String) -> Error) -> Error {
    match e {
        ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) => Error::from(*io),
            Err(other_err) => other(format!("Parquet: {other_err}")),
        },
        e => other(format!("Parquet: {e}")),
    }
}
