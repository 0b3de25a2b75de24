//! The width of string columns for a `.npy` output (NumPy's `S`/`U` are fixed-width): the widest
//! value of each, from a first pass over the input.

use std::collections::HashMap;

use arrow_array::RecordBatch;
use arrow_schema::ArrowError;

use crate::failure::{CliResult, Failure};

pub use npy_arrow::needs_width;

/// The widest value of every top-level string column (a first pass over the input).
pub fn string_widths(
    reader: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    input: &str,
) -> CliResult<HashMap<String, usize>> {
    npy_arrow::string_widths(reader).map_err(|e| read_failure(input, e))
}

/// An error reading table `input`'s batches: this crate's own error (which names the column
/// and row) as it is, when a reader carried it through Arrow's `ExternalError`.
pub fn read_failure(input: &str, e: ArrowError) -> Failure {
    match e {
        ArrowError::ExternalError(inner) => match inner.downcast::<npy_serde::Error>() {
            Ok(e) => Failure::file(input, e),
            Err(other) => Failure::file(input, other),
        },
        other => Failure::file(input, other),
    }
}
