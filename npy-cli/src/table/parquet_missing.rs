//! Parquet files in a build without the `parquet` feature: the reader and the writer of
//! `parquet.rs`, refusing with the command that installs the feature.

use std::fs::File;

use npy_serde::AlignedWriter;

use arrow_array::RecordBatchReader;
use arrow_schema::{ArrowError, Schema};

use crate::choice::TableChoice;
use crate::failure::{CliResult, Failure};
use crate::table::ends::TableIn;
use crate::table::ends::TableOut;
use crate::table::progress::Progress;

/// The refusal, naming the Parquet file.
fn missing(name: &str) -> Failure {
    Failure::usage(format!(
        "{name}: this npy was built without Parquet support: install it with \
         `cargo install npy-cli --features parquet`"
    ))
}

/// Refuses to read the Parquet file `input`.
pub fn open(_: File, input: &str, _: bool, _: &TableChoice) -> CliResult<TableIn> {
    Err(missing(input))
}

/// Refuses to write the Parquet file `o.output`.
pub fn write<R: RecordBatchReader>(
    _: R,
    _: &Schema,
    _: AlignedWriter<File>,
    _: &Progress,
    o: &TableOut<'_>,
    _: impl Fn(ArrowError) -> Failure,
) -> CliResult {
    Err(missing(o.output))
}
