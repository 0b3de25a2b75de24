//! Timestamps in seconds, which Parquet cannot hold: written as milliseconds, read back as
//! seconds.
//!
//! Parquet's TIMESTAMP has the units MILLIS, MICROS and NANOS, and the parquet crate writes an
//! Arrow `Timestamp(Second, _)` as a plain INT64 that pyarrow, polars and DuckDB read as
//! integers. So the writer casts such columns (at the top level, or inside structs and lists:
//! a `M8[s]`, `M8[m]` or `M8[h]` column of a `.npy` file, which [`crate`] reads as
//! seconds) to `Timestamp(Millisecond, _)`, as pyarrow does: a null stays null, a value whose
//! milliseconds overflow `i64` is an error naming the column and row. The field keeps its
//! `numpy.descr` (one is added to a top-level seconds column without one), and the reader
//! casts a millisecond column back to seconds where that descr says seconds: exactly, or an
//! error naming the column and row, so `.npy` -> Parquet -> `.npy` gives the same bytes.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{TimestampMillisecondType, TimestampSecondType};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, LargeListArray, ListArray, OffsetSizeTrait,
    PrimitiveArray, RecordBatch, StructArray,
};
use arrow_schema::{DataType, FieldRef, Fields, Schema, SchemaRef, TimeUnit};

use crate::{data_type_for, DESCR_KEY};
use npy_serde::dtype::DType;
use npy_serde::error::{Error, Result};

const MS_PER_S: i64 = 1000;

/// The type with every `Timestamp(Second, tz)` in it (through structs and lists) as
/// `Timestamp(Millisecond, tz)`.
fn millis_type(dt: &DataType) -> DataType {
    let field = |f: &FieldRef| {
        Arc::new(
            f.as_ref()
                .clone()
                .with_data_type(millis_type(f.data_type())),
        )
    };
    match dt {
        DataType::Timestamp(TimeUnit::Second, tz) => {
            DataType::Timestamp(TimeUnit::Millisecond, tz.clone())
        }
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(field).collect()),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        other => other.clone(),
    }
}

/// The schema written to Parquet for `schema`, if it has a seconds timestamp: those as
/// milliseconds, a top-level one given the `numpy.descr` `<M8[s]` if it had none.
pub(super) fn parquet_schema(schema: &Schema) -> Option<SchemaRef> {
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .map(|f| {
            let dt = millis_type(f.data_type());
            if &dt == f.data_type() {
                return f.clone();
            }
            let mut meta = f.metadata().clone();
            if matches!(f.data_type(), DataType::Timestamp(..)) {
                meta.entry(DESCR_KEY.to_string())
                    .or_insert_with(|| "'<M8[s]'".to_string());
            }
            Arc::new(f.as_ref().clone().with_data_type(dt).with_metadata(meta))
        })
        .collect();
    let changed = fields
        .iter()
        .zip(schema.fields())
        .any(|(a, b)| a.data_type() != b.data_type());
    changed.then(|| Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}

/// The type `read` (a Parquet column's) had when written: `Timestamp(Second, tz)` wherever
/// `original` (its `numpy.descr`'s type) has seconds and `read` milliseconds; `None` if
/// the two do not correspond.
fn seconds_type(read: &DataType, original: &DataType) -> Option<DataType> {
    let field = |a: &FieldRef, b: &FieldRef| {
        seconds_type(a.data_type(), b.data_type())
            .map(|t| Arc::new(a.as_ref().clone().with_data_type(t)))
    };
    Some(match (read, original) {
        (
            DataType::Timestamp(TimeUnit::Millisecond, tz),
            DataType::Timestamp(TimeUnit::Second, _),
        ) => DataType::Timestamp(TimeUnit::Second, tz.clone()),
        (DataType::Struct(a), DataType::Struct(b)) if a.len() == b.len() => DataType::Struct(
            a.iter()
                .zip(b.iter())
                .map(|(a, b)| field(a, b))
                .collect::<Option<Fields>>()?,
        ),
        (DataType::FixedSizeList(a, n), DataType::FixedSizeList(b, m)) if n == m => {
            DataType::FixedSizeList(field(a, b)?, *n)
        }
        (DataType::List(a), DataType::List(b)) => DataType::List(field(a, b)?),
        (DataType::LargeList(a), DataType::LargeList(b)) => DataType::LargeList(field(a, b)?),
        (a, b) if a.equals_datatype(b) || matches!(a, DataType::Timestamp(..)) => a.clone(),
        _ => return None,
    })
}

/// The schema the reader gives for a Parquet file's `schema`, if a column's `numpy.descr`
/// says seconds where the file has milliseconds: those as seconds again.
pub(super) fn restored_schema(schema: &Schema) -> Option<SchemaRef> {
    let fields: Vec<FieldRef> = schema
        .fields()
        .iter()
        .map(|f| {
            let original = f
                .metadata()
                .get(DESCR_KEY)
                .and_then(|d| DType::from_descr(d).ok())
                .and_then(|d| data_type_for(&d).ok());
            match original.and_then(|o| seconds_type(f.data_type(), &o)) {
                Some(t) if &t != f.data_type() => Arc::new(f.as_ref().clone().with_data_type(t)),
                _ => f.clone(),
            }
        })
        .collect();
    let changed = fields
        .iter()
        .zip(schema.fields())
        .any(|(a, b)| a.data_type() != b.data_type());
    changed.then(|| Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())))
}

/// Which way a batch is cast.
#[derive(Clone, Copy)]
pub(super) enum Cast {
    /// Seconds to milliseconds (writing).
    ToMillis,
    /// Milliseconds to seconds (reading).
    ToSeconds,
}

/// `batch` with its columns cast to the types of `schema`'s (the batch's own field names kept;
/// `first_row` the batch's first row in the file, for errors).
pub(super) fn cast_batch(
    batch: &RecordBatch,
    schema: &Schema,
    cast: Cast,
    first_row: u64,
) -> Result<RecordBatch> {
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for ((f, col), to) in batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .zip(schema.fields())
    {
        let at = |i: usize| first_row + i as u64;
        let c = retype(col, to.data_type(), cast, f.name(), &at)?;
        fields.push(Arc::new(
            f.as_ref().clone().with_data_type(c.data_type().clone()),
        ));
        columns.push(c);
    }
    let schema = Schema::new_with_metadata(fields, batch.schema().metadata().clone());
    RecordBatch::try_new(Arc::new(schema), columns)
        .map_err(|e| Error::invalid_value(format!("Arrow: {e}")))
}

/// `array` as type `to`: timestamps cast as `cast` says, containers rebuilt around their cast
/// children; `row` maps an index of `array` to the file's row.
fn retype(
    array: &ArrayRef,
    to: &DataType,
    cast: Cast,
    column: &str,
    row: &dyn Fn(usize) -> u64,
) -> Result<ArrayRef> {
    if array.data_type() == to {
        return Ok(array.clone());
    }
    let arrow = |e: arrow_schema::ArrowError| Error::invalid_value(format!("Arrow: {e}"));
    Ok(match (array.data_type(), to) {
        (DataType::Timestamp(..), DataType::Timestamp(_, tz)) => {
            let tz = tz.clone();
            match cast {
                Cast::ToMillis => {
                    let a = array.as_primitive::<TimestampSecondType>();
                    let err = |v, r| {
                        format!(
                            "column `{column}`, row {r}: the timestamp {v} s is out of range \
                             in milliseconds (Parquet has no seconds unit: seconds are written \
                             as milliseconds, in an int64)"
                        )
                    };
                    let v = scale(a, row, |s| s.checked_mul(MS_PER_S), err)?;
                    Arc::new(
                        PrimitiveArray::<TimestampMillisecondType>::new(v, a.nulls().cloned())
                            .with_timezone_opt(tz),
                    )
                }
                Cast::ToSeconds => {
                    let a = array.as_primitive::<TimestampMillisecondType>();
                    let exact = |ms: i64| (ms % MS_PER_S == 0).then_some(ms / MS_PER_S);
                    let err = |v, r| {
                        format!(
                            "column `{column}`, row {r}: the timestamp {v} ms is not a whole \
                             number of seconds, though the column's numpy.descr says seconds \
                             (npy writes M8[s], M8[m] and M8[h] to Parquet as milliseconds)"
                        )
                    };
                    let v = scale(a, row, exact, err)?;
                    Arc::new(
                        PrimitiveArray::<TimestampSecondType>::new(v, a.nulls().cloned())
                            .with_timezone_opt(tz),
                    )
                }
            }
        }
        (DataType::Struct(_), DataType::Struct(fs)) => {
            let s = array.as_struct();
            let cols = s
                .columns()
                .iter()
                .zip(fs.iter())
                .map(|(c, f)| retype(c, f.data_type(), cast, column, row))
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(fs.clone(), cols, s.nulls().cloned()).map_err(arrow)?)
        }
        (DataType::FixedSizeList(..), DataType::FixedSizeList(f, n)) => {
            let l = array.as_fixed_size_list();
            let size = (*n).max(1) as usize;
            let values = retype(l.values(), f.data_type(), cast, column, &|i| row(i / size))?;
            Arc::new(
                FixedSizeListArray::try_new(f.clone(), *n, values, l.nulls().cloned())
                    .map_err(arrow)?,
            )
        }
        (DataType::List(_), DataType::List(f)) => {
            let l = array.as_list::<i32>();
            let values = list_values(l.values(), l.value_offsets(), f, cast, column, row)?;
            Arc::new(
                ListArray::try_new(f.clone(), l.offsets().clone(), values, l.nulls().cloned())
                    .map_err(arrow)?,
            )
        }
        (DataType::LargeList(_), DataType::LargeList(f)) => {
            let l = array.as_list::<i64>();
            let values = list_values(l.values(), l.value_offsets(), f, cast, column, row)?;
            Arc::new(
                LargeListArray::try_new(f.clone(), l.offsets().clone(), values, l.nulls().cloned())
                    .map_err(arrow)?,
            )
        }
        (from, to) => {
            return Err(Error::invalid_value(format!(
                "column `{column}`: cannot cast {from} to {to}"
            )))
        }
    })
}

/// The values of a list array cast, a value's row found by its list.
fn list_values<O: OffsetSizeTrait>(
    values: &ArrayRef,
    offsets: &[O],
    f: &FieldRef,
    cast: Cast,
    column: &str,
    row: &dyn Fn(usize) -> u64,
) -> Result<ArrayRef> {
    let of = |i: usize| {
        let list = offsets
            .partition_point(|o| o.as_usize() <= i)
            .saturating_sub(1);
        row(list)
    };
    retype(values, f.data_type(), cast, column, &of)
}

/// The values of `a` through `f` (nulls left as they are), or the error `err(value, row)`
/// for the first value `f` refuses.
fn scale<T: arrow_array::ArrowPrimitiveType<Native = i64>>(
    a: &PrimitiveArray<T>,
    row: &dyn Fn(usize) -> u64,
    f: impl Fn(i64) -> Option<i64>,
    err: impl Fn(i64, u64) -> String,
) -> Result<arrow_buffer::ScalarBuffer<i64>> {
    let mut out = Vec::with_capacity(a.len());
    for (i, &v) in a.values().iter().enumerate() {
        if a.is_null(i) {
            out.push(0);
            continue;
        }
        match f(v) {
            Some(x) => out.push(x),
            None => return Err(Error::invalid_value(err(v, row(i)))),
        }
    }
    Ok(out.into())
}
