//! The least and greatest values of a column table's sorted columns, as statistics of its
//! scan: where the scan reports an order (declared, or recorded while its record holds), the
//! order's first column is sorted over the whole table, so its first and last rows are its
//! least and greatest, and each run of rows' first and last rows are the run's. Two values
//! a run, read when the scan is planned; exact, as DataFusion's `Precision::Exact`.
//!
//! Only where that is sure: the column is not nullable (a datetime column, whose `NaT` is a
//! null, gets none: its nulls may be first or last), its type is an integer, a bool or a
//! string (no floats: NaN sorts above every number in an order but `min`/`max` need not agree,
//! and `-0.0 = 0.0`), and the table is local with the column stored (a mapped file or a
//! stored member: a deflated member would be inflated whole to read two values; a table on
//! an object store would need a request for each). Anything else leaves the statistics
//! absent, never read from whole columns. A declared order is trusted, as the scan trusts it:
//! statistics of a table that is not in its declared order are as wrong as its order.

use std::sync::Arc;

use arrow_schema::{DataType, Schema};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};
use npy_serde::npz::MmapNpz;

use super::super::options::NpyReadOptions;
use super::data::{open_column, ColumnData};
use super::survey::{Place, Survey};

/// One sorted column whose bounds are read.
struct Key {
    /// Its index in the table's schema.
    index: usize,
    descending: bool,
    data: ColumnData,
}

/// The sorted columns of a scan whose first and last rows bound them (see the [module
/// docs](self)).
pub(crate) struct Bounds {
    keys: Vec<Key>,
}

impl Bounds {
    /// The bounds of the first column of each order of `options` (the scan's) over the table
    /// `survey` surveyed, whose schema is `table`: none where they are not sure.
    pub(crate) fn of(survey: &Survey, options: &NpyReadOptions, table: &Schema) -> Bounds {
        let mut keys: Vec<Key> = Vec::new();
        let archive = match &survey.place {
            Place::Archive(path) => match MmapNpz::open_with(path, &options.npz_options()) {
                Ok(npz) => Some(Arc::new(npz)),
                Err(_) => return Bounds { keys },
            },
            Place::Directory(_) => None,
            Place::Remote(_) => return Bounds { keys },
        };
        for order in options.sort_order() {
            let Some(first) = order.first() else { continue };
            let Ok(index) = table.index_of(first.name()) else {
                continue;
            };
            let field = table.field(index);
            if keys.iter().any(|k| k.index == index)
                || field.is_nullable()
                || !bounded(field.data_type())
            {
                continue;
            }
            let Ok(column) = survey.column(first.name()) else {
                continue;
            };
            if column.deflated || column.field.data_type() != field.data_type() {
                continue;
            }
            let rows = 0..survey.rows;
            // A column that cannot be opened gives none: the scan names the failure.
            if let Ok(data) = open_column(survey, archive.as_ref(), column, options, rows, false) {
                keys.push(Key {
                    index,
                    descending: first.is_descending(),
                    data,
                });
            }
        }
        Bounds { keys }
    }

    /// The statistics of rows `start..end` of a table of `table`'s columns: their number, and
    /// the least and greatest values of each sorted column (its rows `start` and `end - 1`).
    pub(crate) fn statistics(&self, table: &Schema, start: u64, end: u64) -> Statistics {
        let rows = usize::try_from(end - start).unwrap_or(usize::MAX);
        let mut stats = Statistics::new_unknown(table).with_num_rows(Precision::Exact(rows));
        if end <= start {
            return stats;
        }
        for key in &self.keys {
            let (Some(a), Some(b)) = (key.value(start), key.value(end - 1)) else {
                continue;
            };
            let (min, max) = if key.descending { (b, a) } else { (a, b) };
            stats.column_statistics[key.index] = ColumnStatistics::new_unknown()
                .with_min_value(Precision::Exact(min))
                .with_max_value(Precision::Exact(max))
                .with_null_count(Precision::Exact(0));
        }
        stats
    }
}

impl Key {
    /// The value of row `row`, if it reads.
    fn value(&self, row: u64) -> Option<ScalarValue> {
        let a = self.data.rows(row, 1).ok()?;
        ScalarValue::try_from_array(&a, 0)
            .ok()
            .filter(|v| !v.is_null())
    }
}

/// True for a type whose least and greatest values are where an order puts its first and
/// last rows.
fn bounded(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Boolean
            | DataType::Utf8
            | DataType::LargeUtf8
    )
}
