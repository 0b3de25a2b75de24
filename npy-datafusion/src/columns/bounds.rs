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
//!
//! Every other column gets the statistics its writer recorded with the table (npy-arrow's
//! `RecordedStats`: least and greatest values, null count, an estimate of its distinct values;
//! see [`Recorded`]), while the record
//! holds: the table has the number of rows it records, and the column the name and the Arrow
//! type. A record is untrusted and may be stale (the files rewritten by another tool since), so
//! its values are `Precision::Inexact`, estimates DataFusion plans with (join order, filter
//! selectivity) but answers no query from: DataFusion's `AggregateStatistics` answers `min` and
//! `max` from exact values only, and the pruning of runs (`FilePruner`) reads exact values only;
//! they are moreover reported for the scan and its file groups, never for the runs' files,
//! which are what the scan's pruner reads.

use arrow_schema::{DataType, Schema};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};

use super::super::options::NpyReadOptions;
use super::super::stats::{apply_recorded, recorded_columns, Recorded};
use super::data::{open_archive, open_column, ColumnData};
use super::survey::{Place, Survey};

/// One sorted column whose bounds are read.
struct Key {
    /// Its index in the table's schema.
    index: usize,
    descending: bool,
    data: ColumnData,
}

/// The sorted columns of a scan whose first and last rows bound them, and the statistics
/// recorded for the others (see the [module docs](self)).
pub(crate) struct Bounds {
    keys: Vec<Key>,
    recorded: Vec<Recorded>,
    /// The table's rows.
    rows: u64,
}

impl Bounds {
    /// The bounds of the first column of each order of `options` (the scan's) over the table
    /// `survey` surveyed, whose schema is `table`: none where they are not sure.
    pub(crate) fn of(survey: &Survey, options: &NpyReadOptions, table: &Schema) -> Bounds {
        let mut bounds = Bounds {
            keys: Vec::new(),
            recorded: recorded(survey, table),
            rows: survey.rows,
        };
        bounds.keys = keys(survey, options, table);
        bounds
    }

    /// The statistics of rows `start..end` of a table of `table`'s columns, for the scan and
    /// its file groups: the exact ones ([`exact`](Self::exact)), and the recorded ones of the
    /// other columns, inexact: the whole table's least and greatest values (which bound any of
    /// its runs), its null count (a run's share of it, for a run).
    pub(crate) fn statistics(&self, table: &Schema, start: u64, end: u64) -> Statistics {
        let mut stats = self.exact(table, start, end);
        apply_recorded(&mut stats, &self.recorded, self.rows, start, end);
        stats
    }
}

/// The sorted columns of `options`' orders whose bounds can be read (see the [module
/// docs](self)).
fn keys(survey: &Survey, options: &NpyReadOptions, table: &Schema) -> Vec<Key> {
    let mut keys: Vec<Key> = Vec::new();
    let archive = match &survey.place {
        Place::Archive(path) => match open_archive(path, options) {
            Ok(open) => Some(open),
            Err(_) => return keys,
        },
        Place::Directory(_) => None,
        Place::Remote(_) => return keys,
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
    keys
}

/// The statistics recorded with the table `survey` surveyed (whose schema is `table`), for each
/// column they hold for: none unless the record's rows are the table's, and a column's only
/// while its name and Arrow type are those recorded (and its values read as that type).
pub(crate) fn recorded(survey: &Survey, table: &Schema) -> Vec<Recorded> {
    let Some(stats) = survey.record.stats.as_ref() else {
        return Vec::new();
    };
    recorded_columns(stats, survey.rows, table, |name, t| {
        survey.column(name).is_ok_and(|s| s.field.data_type() == t)
    })
}

impl Bounds {
    /// The exact statistics of rows `start..end` of a table of `table`'s columns: their number,
    /// and the least and greatest values of each sorted column (its rows `start` and
    /// `end - 1`). What each run's file reports, which the scan's pruning of runs reads.
    pub(crate) fn exact(&self, table: &Schema, start: u64, end: u64) -> Statistics {
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

#[cfg(test)]
mod tests {
    use npy_arrow::order::{ColumnStats, RecordedStats, TableRecord};

    use super::*;

    /// The survey of an archive of `k` (i64, 0..100) and `s` (strings), with `stats` recorded.
    fn survey(stats: RecordedStats) -> Survey {
        let dir = std::env::temp_dir().join(format!("columns-bounds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.npz");
        let k: Vec<i64> = (0..100).collect();
        let mut w = npy_serde::NpzWriter::new(std::fs::File::create(&path).unwrap());
        w.add("k", &k).unwrap();
        w.add("x", &vec![0.5f64; 100]).unwrap();
        w.finish().unwrap();
        let survey = Survey::take(Place::Archive(path), &NpyReadOptions::new()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        survey.with_record(TableRecord {
            order: None,
            stats: Some(stats),
        })
    }

    fn k() -> ColumnStats {
        ColumnStats::new("k", "Int64")
            .with_nulls(0)
            .with_distinct(100)
            .with_range("0", "99")
    }

    #[test]
    fn recorded_statistics_are_inexact_and_only_while_they_hold() {
        let s = survey(RecordedStats::new(100, vec![k()]));
        let table = s.schema();
        let bounds = Bounds::of(&s, &NpyReadOptions::new(), &table);
        let st = bounds.statistics(&table, 0, 100);
        let c = &st.column_statistics[0];
        assert_eq!(c.min_value, Precision::Inexact(ScalarValue::Int64(Some(0))));
        assert_eq!(
            c.max_value,
            Precision::Inexact(ScalarValue::Int64(Some(99)))
        );
        assert_eq!(c.null_count, Precision::Inexact(0));
        assert_eq!(c.distinct_count, Precision::Inexact(100));
        // A run of 10 rows: at most 10 distinct values.
        let run = bounds.statistics(&table, 20, 30);
        assert_eq!(
            run.column_statistics[0].distinct_count,
            Precision::Inexact(10)
        );
        // The runs' files report none of them (the pruning of runs reads those).
        assert_eq!(
            bounds.exact(&table, 0, 100).column_statistics[0].min_value,
            Precision::Absent
        );
        assert_eq!(st.column_statistics[1].min_value, Precision::Absent);

        // A string column recorded as another of Arrow's string types: the same strings.
        let s = survey(RecordedStats::new(
            100,
            vec![ColumnStats::new("k", "Utf8View").with_range("a", "b")],
        ));
        assert!(recorded(&s, &table).is_empty(), "k is no string column");

        // Stale: another number of rows.
        let stale = survey(RecordedStats::new(101, vec![k()]));
        assert!(recorded(&stale, &table).is_empty());
        // Another type, values that do not read as the type, least above greatest, counts
        // above the rows: that column's entry is ignored.
        for bad in [
            ColumnStats::new("k", "Int32").with_range("0", "99"),
            ColumnStats::new("k", "Int64").with_range("0", "x"),
            ColumnStats::new("k", "Int64").with_range("99", "0"),
            ColumnStats::new("x", "Float64").with_range("NaN", "1"),
            ColumnStats::new("nope", "Int64").with_range("0", "1"),
        ] {
            let s = survey(RecordedStats::new(100, vec![bad.clone()]));
            assert!(recorded(&s, &table).is_empty(), "{bad:?}");
        }
    }
}
