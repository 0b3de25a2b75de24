//! `npy convert IN OUT --layout columns` (feature `arrow`): a table (Parquet, Arrow IPC) as a
//! column table, one `.npy` array per column, in an `.npz` archive (OUT ends in `.npz`: stored
//! members, each member's data aligned at a multiple of 64, so that `npy sql` views them in
//! place) or in a directory (one `COLUMN.npy` per column, Kuzu's `COPY FROM NPY` layout).
//!
//! The input is read once, its batches handed to the library's
//! [`ColumnTableWriter`](npy_arrow::ColumnTableWriter) with the run's null and decimal policies
//! and string widths; nothing appears under OUT's name until every column is written. The
//! writer verifies `--sorted-by` on the values it writes (after `--nulls`), and records the
//! order and the columns' statistics with the table.

use npy_arrow::order::SortColumn;
use npy_arrow::BatchWriterBuilder;

use crate::choice::TableChoice;
use crate::failure::{CliResult, Failure};
use crate::table::read;
use crate::table::widths::read_failure;
use crate::table::write::order_check;

/// Writes the table `input` as the column table `output` (an `.npz` archive or a directory),
/// verifying that its rows are in `order` and recording it with the table if given.
pub fn run(
    input: &str,
    output: &str,
    choice: &TableChoice,
    order: Option<&[SortColumn]>,
) -> CliResult {
    let t = read::open(input, true, choice)?;
    let schema = t.schema.clone().unwrap_or_else(|| t.reader.schema());
    let mut wb = choice.configure(BatchWriterBuilder::new())?;
    for (name, w) in &t.widths {
        wb = wb.string_width(name, *w);
    }
    if let Some(order) = order {
        // A column the table lacks (or one with no order) is a usage error.
        order_check(order, &schema, input)?;
    }
    let write_err = |e| Failure::file(input, format!("cannot write {output}: {e}"));
    let mut w = wb.column_table(output, &schema).map_err(write_err)?;
    if let Some(order) = order {
        // Verified by the writer on the values it writes (a null filled by `--nulls` is its
        // fill value there), which are what the record describes.
        w.sorted_by(order).map_err(write_err)?;
    }
    for b in t.reader {
        let b = b.map_err(|e| read_failure(input, e))?;
        if let Err(e) = w.write(&b) {
            return Err(match w.out_of_order() {
                true => Failure::file(input, e),
                false => write_err(e),
            });
        }
        t.progress.add(b.num_rows());
    }
    let untyped = w.finish().map_err(write_err)?;
    if !untyped.is_empty() {
        eprintln!(
            "npy convert: the Arrow types of {} are kept in NumPy field titles, which a plain \
             column array has not: their values are exact, their Arrow types the dtypes' own",
            untyped.join(", ")
        );
    }
    Ok(())
}
