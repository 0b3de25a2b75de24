//! Parquet files written and read on all cores (feature `parquet`): Arrow record batches, as
//! [`crate`] reads them from `.npy` files and writes them back, into and out of Parquet.
//! `npy convert` converts between `.npy` and `.parquet` through these two.
//!
//! - [`ParquetWriter`]: record batches into a Parquet file. The parquet crate's `ArrowWriter`
//!   encodes a row group's columns one after the other on the caller's thread; here each
//!   column's writer runs on a pool of worker threads (a column at a time per worker, in batch
//!   order, the column furthest behind first), while the caller decodes the next batch. The
//!   file is the one `ArrowWriter` writes with the same properties (same schema, metadata, row
//!   groups, pages).
//! - [`ParquetReader`]: a Parquet file's batches in file order, its row groups decoded on
//!   worker threads (one per core, each with its own file handle): the worker of the row group
//!   being handed out runs [`QUEUED_BATCHES`] batches ahead of the caller, the others decode
//!   the next row groups meanwhile, into at most [`AHEAD_BYTES`] of batches between them.
//!
//! Datetimes: Parquet has no seconds unit, so `Timestamp(Second, _)` columns (a `.npy` file's
//! `M8[s]`, `M8[m]`, `M8[h]`) are written as TIMESTAMP(MILLIS), which pyarrow, polars and
//! DuckDB read as timestamps, their `numpy.descr` kept so that the reader gives seconds back
//! (and `.npy` -> Parquet -> `.npy` the same bytes). `M8[D]` and `M8[W]` are DATE, `M8[ms]`,
//! `M8[us]`, `M8[ns]` TIMESTAMP; the units Parquet cannot hold (`ps`, `fs`, `as`, `Y`, `M`,
//! multiples) stay INT64 with the unit in the field's `numpy.unit`.
//!
//! Columns: [`ParquetReader::open_columns`] decodes only the top-level columns asked for.
//!
//! Memory: the writer holds one row group's encoded pages (as `ArrowWriter` does) plus at
//! most [`QUEUED_BATCHES`] batches waiting to be encoded; the reader [`QUEUED_BATCHES`]
//! decoded batches plus [`AHEAD_BYTES`] (or one batch, if larger).
//!
//! Without feature `parallel` each pool has one worker thread.
//!
//! # Writing
//!
//! A `.npy` file into Parquet: the batches of an [`NpyBatchReader`](crate::NpyBatchReader)
//! into a [`ParquetWriter`] (the properties, e.g. compression or rows per row group, are the
//! parquet crate's `WriterProperties`; `None` takes `ArrowWriter`'s defaults).
//!
//! ```
//! use npy_arrow::NpyBatchReader;
//! use npy_arrow::parquet::ParquetWriter;
//! use npy_serde::NpyRecord;
//! use serde::Serialize;
//!
//! #[derive(Serialize, NpyRecord)]
//! struct Rec { id: i64, x: f64 }
//!
//! let recs: Vec<Rec> = (0..1000).map(|i| Rec { id: i, x: i as f64 / 2.0 }).collect();
//! let npy = npy_serde::to_vec(&recs)?;
//!
//! let mut reader = NpyBatchReader::from_slice(&npy)?;
//! let mut w = ParquetWriter::new(Vec::new(), reader.schema_ref().clone(), None)?;
//! while let Some(batch) = reader.next_batch()? {
//!     w.write(&batch)?; // queued: its columns are encoded while the next batch is read
//! }
//! let file = w.finish()?; // the last row group and the footer
//! assert_eq!(&file[..4], b"PAR1");
//! # Ok::<(), npy_serde::Error>(())
//! ```
//!
//! # Reading
//!
//! A Parquet file into `.npy`: a [`ParquetReader`] is a `RecordBatchReader`, so
//! [`write_batches`](crate::write_batches) takes it as it is.
//!
//! ```
//! # use std::sync::Arc;
//! # use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
//! use npy_arrow::parquet::ParquetReader;
//! # use npy_arrow::parquet::ParquetWriter;
//! use npy_serde::NpyRecord;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, NpyRecord)]
//! struct Rec { id: i64, x: f64 }
//!
//! # let dir = std::env::temp_dir();
//! # let (pq, npy) = (dir.join(format!("pq-doc-{}.parquet", std::process::id())), dir.join(format!("pq-doc-{}.npy", std::process::id())));
//! # let batch = RecordBatch::try_from_iter([
//! #     ("id", Arc::new(Int64Array::from_iter_values(0..1000)) as ArrayRef),
//! #     ("x", Arc::new(Float64Array::from_iter_values((0..1000).map(|i| i as f64 / 2.0))) as ArrayRef),
//! # ]).unwrap();
//! # let mut w = ParquetWriter::new(std::fs::File::create(&pq)?, batch.schema(), None)?;
//! # w.write(&batch)?;
//! # w.finish()?;
//! // Batches of at most 256 rows (none spans two row groups), in file order.
//! let reader = ParquetReader::open(&pq, 256)?;
//! assert_eq!(reader.num_rows(), 1000);
//! assert_eq!(npy_arrow::write_batches(&npy, reader)?, 1000);
//!
//! let recs: Vec<Rec> = npy_serde::from_path(&npy)?;
//! assert_eq!((recs[999].id, recs[999].x), (999, 499.5));
//! # std::fs::remove_file(&pq)?;
//! # std::fs::remove_file(&npy)?;
//! # Ok::<(), npy_serde::Error>(())
//! ```

mod error;
mod locate;
#[cfg(test)]
mod npy_tests;
mod reader;
mod seconds;
#[cfg(test)]
mod tests;
mod threads;
mod writer;

pub use reader::{ParquetReader, AHEAD_BYTES};
pub use threads::QUEUED_BATCHES;
pub use writer::ParquetWriter;

/// The Parquet codec named by `text`, as `npy convert --compression` and the Python package's
/// `convert` take it: `none` (or `uncompressed`), `snappy`, `zstd` (level 3) or `zstd:LEVEL`.
///
/// ```
/// use parquet::basic::{Compression, ZstdLevel};
/// assert_eq!(npy_arrow::parquet::compression("snappy")?, Compression::SNAPPY);
/// assert_eq!(npy_arrow::parquet::compression("zstd:9")?, Compression::ZSTD(ZstdLevel::try_new(9).unwrap()));
/// assert!(npy_arrow::parquet::compression("lz5").is_err());
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn compression(text: &str) -> npy_serde::Result<parquet::basic::Compression> {
    use parquet::basic::{Compression, ZstdLevel};
    let say = |msg: String| npy_serde::Error::new(npy_serde::ErrorKind::Message(msg));
    let bad = || {
        say(format!(
            "compression {text}: use none, snappy, zstd or zstd:LEVEL"
        ))
    };
    Ok(match text {
        "none" | "uncompressed" => Compression::UNCOMPRESSED,
        "snappy" => Compression::SNAPPY,
        z => {
            let level = match z.strip_prefix("zstd") {
                Some("") => 3,
                Some(l) => l
                    .strip_prefix(':')
                    .and_then(|l| l.parse().ok())
                    .ok_or_else(bad)?,
                None => return Err(bad()),
            };
            let level =
                ZstdLevel::try_new(level).map_err(|e| say(format!("compression {text}: {e}")))?;
            Compression::ZSTD(level)
        }
    })
}
