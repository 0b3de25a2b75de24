//! Parquet files (feature `parquet`), read and written through npy-serde's thread pools.

use std::collections::HashMap;
use std::fs::File;

use npy_serde::AlignedWriter;

use arrow_array::RecordBatchReader;
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};
use npy_arrow::DESCR_KEY;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::properties::WriterProperties;

use crate::choice::TableChoice;
use crate::failure::{CliResult, Failure};
use crate::table::ends::TableIn;
use crate::table::ends::{finish_file, TableOut};
use crate::table::progress::Progress;
use crate::table::widths::{needs_width, string_widths};

/// Opens a Parquet file: its schema (with the metadata the batches' schemas lack), its row count,
/// and with `widths` a first pass over its string columns; then its row groups decoded on all
/// cores, only the columns `choice` keeps (a projection: the others are never decoded).
pub fn open(file: File, input: &str, widths: bool, choice: &TableChoice) -> CliResult<TableIn> {
    let b2 = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Failure::file(input, e))?;
    let file_schema = b2.schema().clone();
    let keep = choice.indices(&file_schema, input)?;
    let rows = b2.metadata().file_metadata().num_rows().max(0) as u64;
    let widths = if widths {
        // A first pass over the string columns kept only: their width is the widest value.
        let strings: Vec<usize> = file_schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(i, _)| keep.as_ref().is_none_or(|k| k.contains(i)))
            .filter(|(_, f)| needs_width(f.data_type()) && !f.metadata().contains_key(DESCR_KEY))
            .map(|(i, _)| i)
            .collect();
        if strings.is_empty() {
            HashMap::new()
        } else {
            // Through the crate's reader: all cores, and a decoding error names its column
            // and row.
            let names: Vec<String> = strings
                .iter()
                .map(|&i| file_schema.field(i).name().clone())
                .collect();
            let r = npy_arrow::parquet::ParquetReader::open_columns(
                input,
                npy_arrow::DEFAULT_BATCH_SIZE,
                Some(&names),
                &[],
            )
            .map_err(|e| Failure::file(input, e))?;
            string_widths(r, input)?
        }
    } else {
        HashMap::new()
    };
    // Row groups decoded on all cores, in batches of about 2 MiB of values, the columns kept
    // in the order asked for.
    let names: Option<Vec<String>> = keep.as_ref().map(|k| {
        k.iter()
            .map(|&i| file_schema.field(i).name().clone())
            .collect()
    });
    let kept = match &keep {
        Some(k) => file_schema
            .project(k)
            .map_err(|e| Failure::file(input, e))?,
        None => file_schema.as_ref().clone(),
    };
    let reader = npy_arrow::parquet::ParquetReader::open_columns(
        input,
        parquet_batch_rows(&kept),
        names.as_deref(),
        &[],
    )
    .map_err(|e| Failure::file(input, e))?;
    // The file's Arrow schema, with its metadata (the batches' own schemas have none), as the
    // reader gives it: the columns kept, timestamps written in seconds as seconds again.
    let schema = reader.schema_ref().clone();
    Ok(TableIn {
        reader: Box::new(reader),
        schema: Some(schema),
        progress: Progress::rows(rows, 0),
        widths,
    })
}

/// Rows per batch read from Parquet: about 2 MiB of fixed-width values (strings counted as
/// 16 bytes), at least 1024 and at most 65536 rows.
fn parquet_batch_rows(schema: &Schema) -> usize {
    fn width(dt: &DataType) -> usize {
        match dt {
            DataType::FixedSizeList(f, n) => width(f.data_type()) * (*n).max(0) as usize,
            DataType::Struct(fs) => fs.iter().map(|f| width(f.data_type())).sum(),
            DataType::FixedSizeBinary(n) => (*n).max(0) as usize,
            dt => dt.primitive_width().unwrap_or(16),
        }
    }
    let row: usize = schema.fields().iter().map(|f| width(f.data_type())).sum();
    ((2 << 20) / row.max(1)).clamp(1024, 65_536)
}

/// Writes the batches to a Parquet file: each row group's columns encoded on all cores while the
/// next batch is read.
pub fn write<R: RecordBatchReader>(
    reader: R,
    schema: &Schema,
    file: AlignedWriter<File>,
    progress: &Progress,
    o: &TableOut<'_>,
    read_err: impl Fn(ArrowError) -> Failure,
) -> CliResult {
    let output = o.output;
    let compression = npy_arrow::parquet::compression(o.compression.unwrap_or("snappy"))
        .map_err(|e| Failure::usage(format!("--{e}")))?;
    let mut props = WriterProperties::builder().set_compression(compression);
    if let Some(n) = o.row_group_size {
        props = props.set_max_row_group_row_count(Some(n.max(1)));
    }
    // Each row group's columns encoded on all cores while the next batch is read.
    let mut w = npy_arrow::parquet::ParquetWriter::new(
        file,
        SchemaRef::new(schema.clone()),
        Some(props.build()),
    )
    .map_err(|e| Failure::file(output, e))?;
    for b in reader {
        let b = b.map_err(&read_err)?;
        w.write(&b).map_err(|e| Failure::file(output, e))?;
        progress.add(b.num_rows());
    }
    let f = w.finish().map_err(|e| Failure::file(output, e))?;
    finish_file(f, output)
}
