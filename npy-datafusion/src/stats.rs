//! Column statistics recorded with a table by its writer (npy-arrow's `RecordedStats`: least
//! and greatest values, null count, an estimate of its distinct values), as DataFusion's
//! statistics of a scan: a column table's (its archive's comment or directory's `_npy_order`,
//! `columns/bounds.rs`) and a row file's (`FILE.npy.order`, `file_format.rs`).
//!
//! A record is untrusted and may be stale (the file rewritten by another tool since), so it is
//! used only while it holds (the table has the rows it records, the column the name and Arrow
//! type), and its values are `Precision::Inexact`: estimates DataFusion plans with (join order,
//! filter selectivity) but answers no query from (`AggregateStatistics` and the pruning of
//! files read exact values only).

use arrow_schema::{DataType, Schema, TimeUnit};
use datafusion::common::stats::Precision;
use datafusion::common::{ScalarValue, Statistics};
use npy_arrow::order::RecordedStats;

/// The statistics recorded with the table for one column, as DataFusion's values.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recorded {
    /// Its index in the table's schema.
    index: usize,
    nulls: Option<u64>,
    distinct: Option<u64>,
    range: Option<(ScalarValue, ScalarValue)>,
}

/// The statistics `stats` records for the columns of `table`, a table of `rows` rows: none
/// unless the record holds for that many rows; of a column, only if it is recorded under its
/// name and Arrow type (any of the three string types for a string column) and `read` says
/// the table reads it as that type. Values that do not read as the type, or a least above
/// the greatest, are left out; so are counts above the rows.
pub(crate) fn recorded_columns(
    stats: &RecordedStats,
    rows: u64,
    table: &Schema,
    read: impl Fn(&str, &DataType) -> bool,
) -> Vec<Recorded> {
    if !stats.holds_for(rows) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (index, field) in table.fields().iter().enumerate() {
        let Some(c) = stats.column(field.name()) else {
            continue;
        };
        let t = field.data_type();
        // A string column is written from any of Arrow's three string types and read back as
        // one of them: the same strings.
        let strings = [DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View];
        let recorded_as = |t: &DataType| c.data_type() == t.to_string();
        let as_written = recorded_as(t) || (strings.contains(t) && strings.iter().any(recorded_as));
        if !read(field.name(), t) || !as_written {
            continue;
        }
        let range = match (c.min(), c.max()) {
            (Some(min), Some(max)) => value_of(min, t).zip(value_of(max, t)),
            _ => None,
        };
        // Least above greatest: not a record of these values.
        let range = range.filter(|(min, max)| {
            min.partial_cmp(max)
                .is_some_and(|o| o != std::cmp::Ordering::Greater)
        });
        let nulls = c.nulls().filter(|&n| n <= rows);
        let distinct = c.distinct().filter(|&n| n <= rows);
        if range.is_some() || nulls.is_some() || distinct.is_some() {
            out.push(Recorded {
                index,
                nulls,
                distinct,
                range,
            });
        }
    }
    out
}

/// Sets the statistics of rows `start..end` of a table of `rows` rows from the columns'
/// `recorded` ones, inexact (a run's share of the nulls; the whole table's least and greatest
/// values, which bound any of its runs), except where `stats` already has exact bounds.
pub(crate) fn apply_recorded(
    stats: &mut Statistics,
    recorded: &[Recorded],
    rows: u64,
    start: u64,
    end: u64,
) {
    let run = end.saturating_sub(start);
    for r in recorded {
        let Some(column) = stats.column_statistics.get_mut(r.index) else {
            continue;
        };
        if column.min_value.is_exact() == Some(true) {
            continue;
        }
        if let Some(nulls) = r.nulls {
            // Rounded up: a run of a column with nulls is not estimated to have none.
            let share = match rows {
                0 => 0,
                rows => (u128::from(nulls) * u128::from(run)).div_ceil(u128::from(rows)),
            };
            let share = usize::try_from(share).unwrap_or(usize::MAX);
            column.null_count = Precision::Inexact(share);
        }
        if let Some(distinct) = r.distinct {
            let most = usize::try_from(distinct.min(run)).unwrap_or(usize::MAX);
            column.distinct_count = Precision::Inexact(most);
        }
        if let Some((min, max)) = &r.range
            && run > 0
        {
            column.min_value = Precision::Inexact(min.clone());
            column.max_value = Precision::Inexact(max.clone());
        }
    }
}

/// The value of a column of type `t` whose recorded text is `text` (see npy-arrow's `order`
/// module docs), if it reads as one.
fn value_of(text: &str, t: &DataType) -> Option<ScalarValue> {
    let int = || text.parse::<i64>().ok();
    Some(match t {
        DataType::Int8 => ScalarValue::Int8(Some(text.parse().ok()?)),
        DataType::Int16 => ScalarValue::Int16(Some(text.parse().ok()?)),
        DataType::Int32 => ScalarValue::Int32(Some(text.parse().ok()?)),
        DataType::Int64 => ScalarValue::Int64(Some(text.parse().ok()?)),
        DataType::UInt8 => ScalarValue::UInt8(Some(text.parse().ok()?)),
        DataType::UInt16 => ScalarValue::UInt16(Some(text.parse().ok()?)),
        DataType::UInt32 => ScalarValue::UInt32(Some(text.parse().ok()?)),
        DataType::UInt64 => ScalarValue::UInt64(Some(text.parse().ok()?)),
        DataType::Float32 => {
            ScalarValue::Float32(Some(text.parse().ok().filter(|x: &f32| !x.is_nan())?))
        }
        DataType::Float64 => {
            ScalarValue::Float64(Some(text.parse().ok().filter(|x: &f64| !x.is_nan())?))
        }
        DataType::Boolean => ScalarValue::Boolean(Some(text.parse().ok()?)),
        DataType::Utf8 => ScalarValue::Utf8(Some(text.to_string())),
        DataType::LargeUtf8 => ScalarValue::LargeUtf8(Some(text.to_string())),
        DataType::Utf8View => ScalarValue::Utf8View(Some(text.to_string())),
        DataType::Date32 => ScalarValue::Date32(Some(text.parse().ok()?)),
        DataType::Date64 => ScalarValue::Date64(Some(int()?)),
        DataType::Timestamp(unit, tz) => {
            let (v, tz) = (Some(int()?), tz.clone());
            match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(v, tz),
                TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(v, tz),
                TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(v, tz),
                TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(v, tz),
            }
        }
        DataType::Duration(unit) => {
            let v = Some(int()?);
            match unit {
                TimeUnit::Second => ScalarValue::DurationSecond(v),
                TimeUnit::Millisecond => ScalarValue::DurationMillisecond(v),
                TimeUnit::Microsecond => ScalarValue::DurationMicrosecond(v),
                TimeUnit::Nanosecond => ScalarValue::DurationNanosecond(v),
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_values_read_as_their_types() {
        let cases = [
            ("-3", DataType::Int8, ScalarValue::Int8(Some(-3))),
            (
                "18446744073709551615",
                DataType::UInt64,
                ScalarValue::UInt64(Some(u64::MAX)),
            ),
            ("-0.5", DataType::Float32, ScalarValue::Float32(Some(-0.5))),
            (
                "inf",
                DataType::Float64,
                ScalarValue::Float64(Some(f64::INFINITY)),
            ),
            ("true", DataType::Boolean, ScalarValue::Boolean(Some(true))),
            (
                "a\nb",
                DataType::Utf8,
                ScalarValue::Utf8(Some("a\nb".into())),
            ),
            ("19000", DataType::Date32, ScalarValue::Date32(Some(19000))),
            (
                "5",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                ScalarValue::TimestampMicrosecond(Some(5), Some("UTC".into())),
            ),
            (
                "7",
                DataType::Duration(TimeUnit::Second),
                ScalarValue::DurationSecond(Some(7)),
            ),
        ];
        for (text, t, want) in cases {
            assert_eq!(value_of(text, &t), Some(want), "{text} {t}");
        }
        assert_eq!(value_of("300", &DataType::Int8), None);
        assert_eq!(value_of("NaN", &DataType::Float64), None);
        assert_eq!(value_of("1", &DataType::Binary), None);
    }
}
