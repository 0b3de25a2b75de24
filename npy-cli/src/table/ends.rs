//! The two ends of a table conversion: a table file opened for reading ([`TableIn`]) and where
//! and how a table is written ([`TableOut`]), with the last step of writing one to a file
//! ([`finish_file`]).

use std::collections::HashMap;
use std::fs::File;

use npy_serde::AlignedWriter;
use std::io::{Seek, Write};

use arrow_array::RecordBatchReader;
use arrow_schema::SchemaRef;

use crate::failure::{CliResult, Failure};
use crate::output::Target;
use crate::table::progress::Progress;

/// A table file opened for reading.
pub struct TableIn {
    /// Its batches.
    pub reader: Box<dyn RecordBatchReader>,
    /// The file's schema with its metadata, where the batches' own schemas have none (Parquet);
    /// `None`: the reader's.
    pub schema: Option<SchemaRef>,
    /// The progress bar, over the rows.
    pub progress: Progress,
    /// The widest value of each string column (if asked for).
    pub widths: HashMap<String, usize>,
}

/// Where and how a table is written.
#[derive(Clone, Copy, Debug)]
pub struct TableOut<'a> {
    /// How the input is named in messages (a file, or "the query"); for an `.npz` output without
    /// `:KEY`, its file stem is the member's key.
    pub input: &'a str,
    /// OUT (`ARCHIVE.npz` or `ARCHIVE.npz:KEY` for an archive member).
    pub output: &'a str,
    /// The output format: `.npy`, `.npz`, `.parquet` or `.arrow` (JSON and CSV are refused).
    pub target: Target,
    /// `--compression` (Parquet output).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))] // read by `parquet`
    pub compression: Option<&'a str>,
    /// `--row-group-size` (Parquet output).
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))] // read by `parquet`
    pub row_group_size: Option<usize>,
    /// `--sorted-by` (`.npy` and `.npz` output): the order the rows are verified in, and
    /// recorded with the output.
    pub sorted_by: Option<&'a [npy_arrow::order::SortColumn]>,
}

/// Flushes a table file the writer has finished.
pub fn finish_file(mut f: AlignedWriter<File>, output: &str) -> CliResult {
    f.flush().map_err(|e| Failure::write(output, e))?;
    let _ = f.stream_position();
    Ok(())
}
