//! Where a Parquet read failed: the column and the row of a decoding error.
//!
//! arrow-rs's Parquet decoder reports a corrupt page, or a dictionary key past its dictionary,
//! without saying where. Only once a row group has failed, its columns (those the read
//! decodes) are read again one at a time to find the first that fails, and that column again a
//! row at a time from its failing batch on, to find the row. The error then names both; a read
//! that does not fail costs nothing more.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;

use ::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use ::parquet::arrow::ProjectionMask;
use arrow_schema::ArrowError;

use npy_serde::error::Error;

/// The error `e` of reading row group `g` (whose first row is `first_row`, read with
/// `projection` in batches of `batch_size`), with the column and row it belongs to where a
/// second read finds them.
pub(super) fn locate(
    path: &Path,
    meta: &ArrowReaderMetadata,
    projection: &ProjectionMask,
    g: usize,
    first_row: u64,
    batch_size: usize,
    e: ArrowError,
) -> Error {
    let schema = meta.parquet_schema();
    let roots: BTreeSet<usize> = (0..schema.num_columns())
        .filter(|&leaf| projection.leaf_included(leaf))
        .map(|leaf| schema.get_column_root_idx(leaf))
        .collect();
    for r in roots {
        let one = ProjectionMask::roots(schema, [r]);
        let Some((batch_start, _)) = first_failure(path, meta, &one, g, batch_size, 0) else {
            continue;
        };
        // The failing batch again, a row at a time (at most `batch_size` rows are decoded).
        let (row, err) = first_failure(path, meta, &one, g, 1, batch_start)
            .unwrap_or((batch_start, ArrowError::ParquetError(e.to_string())));
        let name = meta
            .schema()
            .fields()
            .get(r)
            .map_or_else(|| format!("column {r}"), |f| f.name().clone());
        return Error::invalid_value(format!("Parquet: {err}"))
            .at_record(first_row + row)
            .in_field(&name);
    }
    Error::invalid_value(format!("Parquet: {e}"))
}

/// The first row of the first batch that fails when row group `g` is read with `projection`
/// from its row `skip` on, and its error; `None` if every batch decodes.
fn first_failure(
    path: &Path,
    meta: &ArrowReaderMetadata,
    projection: &ProjectionMask,
    g: usize,
    batch_size: usize,
    skip: u64,
) -> Option<(u64, ArrowError)> {
    let file = File::open(path).ok()?;
    let rows = u64::try_from(meta.metadata().row_group(g).num_rows()).ok()?;
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta.clone())
        .with_row_groups(vec![g])
        .with_projection(projection.clone())
        .with_batch_size(batch_size);
    if skip > 0 {
        let skip = usize::try_from(skip).ok()?;
        let rest = usize::try_from(rows).ok()?.checked_sub(skip)?;
        builder = builder.with_row_selection(RowSelection::from(vec![
            RowSelector::skip(skip),
            RowSelector::select(rest),
        ]));
    }
    let reader = match builder.build() {
        Ok(r) => r,
        Err(e) => return Some((skip, e.into())),
    };
    let mut at = skip;
    for batch in reader {
        match batch {
            Ok(b) => at += b.num_rows() as u64,
            Err(e) => return Some((at, e)),
        }
    }
    None
}
