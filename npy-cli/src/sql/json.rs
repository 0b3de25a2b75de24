//! `npy sql --json`: query results in the tool's JSON conventions, the ones `cat --json` follows
//! (`npy --help`): an array of objects, one per row, columns in result order.
//!
//! Values print as `cat --json` prints the NumPy value they come from: integers exact, floats as
//! the shortest round-trip text with NaN and infinities as `"nan"`/`"inf"`/`"-inf"`, `S` (Arrow
//! binary) latin-1 decoded, `V` (fixed-size binary) lowercase hex, datetimes, dates and
//! durations as their raw int64 count, complex (a `{real, imag}` struct whose field carries a
//! complex descr) as `[re, im]`, records as objects and subarrays as lists. A NULL is `"NaT"`
//! in a datetime or duration column (where NaT became NULL) and `null` elsewhere. Types NumPy
//! has no counterpart for (decimals, times of day, intervals, maps, ...) print as Arrow's
//! display text: decimals as a JSON number, the rest as a string.

use std::io::{self, Write};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{self as t, DataType, Field};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use npy_serde::Value;

use crate::format::json::{json_str, write_json};

/// Writes the rows of `batch` as JSON objects, each on a line of its own, separated by commas;
/// `first` is whether no row has been written yet (the caller writes the enclosing `[`/`]`).
pub fn write_rows(out: &mut dyn Write, batch: &RecordBatch, first: &mut bool) -> io::Result<()> {
    let schema = batch.schema();
    for row in 0..batch.num_rows() {
        out.write_all(if *first { b"\n  {" } else { b",\n  {" })?;
        *first = false;
        for (c, (field, col)) in schema.fields().iter().zip(batch.columns()).enumerate() {
            if c > 0 {
                out.write_all(b", ")?;
            }
            json_str(out, field.name())?;
            out.write_all(b": ")?;
            write_cell(out, field, col.as_ref(), row)?;
        }
        out.write_all(b"}")?;
    }
    Ok(())
}

/// The NumPy descr the Arrow bridge keeps in a field's metadata, without its byte-order mark.
fn descr(field: &Field) -> Option<&str> {
    let d = field.metadata().get("numpy.descr")?;
    Some(d.trim_start_matches(['<', '>', '|', '=']))
}

fn is_time(field: &Field) -> bool {
    matches!(
        field.data_type(),
        DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 | DataType::Duration(_)
    ) || descr(field).is_some_and(|d| d.starts_with("M8") || d.starts_with("m8"))
}

fn write_cell(out: &mut dyn Write, field: &Field, a: &dyn Array, i: usize) -> io::Result<()> {
    if a.is_null(i) {
        return out.write_all(if is_time(field) { b"\"NaT\"" } else { b"null" });
    }
    let v = match a.data_type() {
        DataType::Boolean => Value::Bool(a.as_boolean().value(i)),
        DataType::Int8 => Value::Int(a.as_primitive::<t::Int8Type>().value(i).into()),
        DataType::Int16 => Value::Int(a.as_primitive::<t::Int16Type>().value(i).into()),
        DataType::Int32 => Value::Int(a.as_primitive::<t::Int32Type>().value(i).into()),
        DataType::Int64 => Value::Int(a.as_primitive::<t::Int64Type>().value(i)),
        DataType::UInt8 => Value::UInt(a.as_primitive::<t::UInt8Type>().value(i).into()),
        DataType::UInt16 => Value::UInt(a.as_primitive::<t::UInt16Type>().value(i).into()),
        DataType::UInt32 => Value::UInt(a.as_primitive::<t::UInt32Type>().value(i).into()),
        DataType::UInt64 => Value::UInt(a.as_primitive::<t::UInt64Type>().value(i)),
        DataType::Float16 => Value::Float(a.as_primitive::<t::Float16Type>().value(i).to_f64()),
        DataType::Float32 => Value::Float(a.as_primitive::<t::Float32Type>().value(i).into()),
        DataType::Float64 => Value::Float(a.as_primitive::<t::Float64Type>().value(i)),
        DataType::Utf8 => Value::String(a.as_string::<i32>().value(i).into()),
        DataType::LargeUtf8 => Value::String(a.as_string::<i64>().value(i).into()),
        DataType::Utf8View => Value::String(a.as_string_view().value(i).into()),
        DataType::Binary => Value::Bytes(a.as_binary::<i32>().value(i).into()),
        DataType::LargeBinary => Value::Bytes(a.as_binary::<i64>().value(i).into()),
        DataType::BinaryView => Value::Bytes(a.as_binary_view().value(i).into()),
        DataType::FixedSizeBinary(_) => Value::Void(a.as_fixed_size_binary().value(i).into()),
        DataType::Date32 => Value::DateTime(a.as_primitive::<t::Date32Type>().value(i).into()),
        DataType::Date64 => Value::DateTime(a.as_primitive::<t::Date64Type>().value(i)),
        DataType::Timestamp(unit, _) => Value::DateTime(match unit {
            t::TimeUnit::Second => a.as_primitive::<t::TimestampSecondType>().value(i),
            t::TimeUnit::Millisecond => a.as_primitive::<t::TimestampMillisecondType>().value(i),
            t::TimeUnit::Microsecond => a.as_primitive::<t::TimestampMicrosecondType>().value(i),
            t::TimeUnit::Nanosecond => a.as_primitive::<t::TimestampNanosecondType>().value(i),
        }),
        DataType::Duration(unit) => Value::TimeDelta(match unit {
            t::TimeUnit::Second => a.as_primitive::<t::DurationSecondType>().value(i),
            t::TimeUnit::Millisecond => a.as_primitive::<t::DurationMillisecondType>().value(i),
            t::TimeUnit::Microsecond => a.as_primitive::<t::DurationMicrosecondType>().value(i),
            t::TimeUnit::Nanosecond => a.as_primitive::<t::DurationNanosecondType>().value(i),
        }),
        DataType::Struct(fields) => {
            let s = a.as_struct();
            if descr(field).is_some_and(|d| d.starts_with('c')) && fields.len() == 2 {
                // A complex column: [re, im], as `cat --json` prints it.
                out.write_all(b"[")?;
                write_cell(out, &fields[0], s.column(0).as_ref(), i)?;
                out.write_all(b", ")?;
                write_cell(out, &fields[1], s.column(1).as_ref(), i)?;
                return out.write_all(b"]");
            }
            out.write_all(b"{")?;
            for (k, (f, col)) in fields.iter().zip(s.columns()).enumerate() {
                if k > 0 {
                    out.write_all(b", ")?;
                }
                json_str(out, f.name())?;
                out.write_all(b": ")?;
                write_cell(out, f, col.as_ref(), i)?;
            }
            return out.write_all(b"}");
        }
        DataType::FixedSizeList(f, _) | DataType::List(f) | DataType::LargeList(f) => {
            let items = match a.data_type() {
                DataType::FixedSizeList(..) => a.as_fixed_size_list().value(i),
                DataType::List(_) => a.as_list::<i32>().value(i),
                _ => a.as_list::<i64>().value(i),
            };
            out.write_all(b"[")?;
            for k in 0..items.len() {
                if k > 0 {
                    out.write_all(b", ")?;
                }
                write_cell(out, f, items.as_ref(), k)?;
            }
            return out.write_all(b"]");
        }
        other => {
            let text = ArrayFormatter::try_new(a, &FormatOptions::default())
                .map(|f| f.value(i).to_string())
                .map_err(io::Error::other)?;
            return match other {
                DataType::Decimal32(..)
                | DataType::Decimal64(..)
                | DataType::Decimal128(..)
                | DataType::Decimal256(..) => out.write_all(text.as_bytes()),
                _ => json_str(out, &text),
            };
        }
    };
    write_json(out, &v)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use datafusion::arrow::array::{
        ArrayRef, BinaryArray, Decimal128Array, FixedSizeBinaryArray, Float32Array, Float64Array,
        Int64Array, StringArray, StructArray, TimestampNanosecondArray, UInt64Array,
    };
    use datafusion::arrow::datatypes::Schema;

    use super::*;

    fn json(batch: &RecordBatch) -> String {
        let mut out = Vec::new();
        let mut first = true;
        write_rows(&mut out, batch, &mut first).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cat_json_conventions() {
        let complex = Field::new(
            "c",
            DataType::Struct(
                vec![
                    Field::new("real", DataType::Float64, false),
                    Field::new("imag", DataType::Float64, false),
                ]
                .into(),
            ),
            false,
        )
        .with_metadata(HashMap::from([("numpy.descr".into(), "<c16".into())]));
        let DataType::Struct(parts) = complex.data_type().clone() else {
            unreachable!()
        };
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(vec![u64::MAX, 1])),
            Arc::new(Float64Array::from(vec![f64::NAN, 0.1])),
            Arc::new(Float32Array::from(vec![Some(1.5), None])),
            Arc::new(BinaryArray::from(vec![&b"x\xe9"[..], b""])),
            Arc::new(StringArray::from(vec!["a\"b", "é"])),
            Arc::new(
                FixedSizeBinaryArray::try_from_iter([[0u8, 0xff], [1, 2]].into_iter()).unwrap(),
            ),
            Arc::new(TimestampNanosecondArray::from(vec![Some(5), None])),
            Arc::new(StructArray::new(
                parts,
                vec![
                    Arc::new(Float64Array::from(vec![1.0, 0.0])),
                    Arc::new(Float64Array::from(vec![f64::INFINITY, -2.0])),
                ],
                None,
            )),
            Arc::new(
                Decimal128Array::from(vec![1250, -5])
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            Arc::new(Int64Array::from(vec![None, Some(-3)])),
        ];
        let schema = Schema::new(vec![
            Field::new("u", DataType::UInt64, false),
            Field::new("f", DataType::Float64, false),
            Field::new("g", DataType::Float32, true),
            Field::new("s", DataType::Binary, false),
            Field::new("w", DataType::Utf8, false),
            Field::new("v", DataType::FixedSizeBinary(2), false),
            Field::new(
                "t",
                DataType::Timestamp(t::TimeUnit::Nanosecond, None),
                true,
            ),
            complex,
            Field::new("d", DataType::Decimal128(10, 2), false),
            Field::new("n", DataType::Int64, true),
        ]);
        let batch = RecordBatch::try_new(Arc::new(schema), cols).unwrap();
        let text = json(&batch);
        assert_eq!(
            text,
            "\n  {\"u\": 18446744073709551615, \"f\": \"nan\", \"g\": 1.5, \"s\": \"xé\", \
             \"w\": \"a\\\"b\", \"v\": \"00ff\", \"t\": 5, \"c\": [1.0, \"inf\"], \"d\": 12.50, \
             \"n\": null},\
             \n  {\"u\": 1, \"f\": 0.1, \"g\": null, \"s\": \"\", \"w\": \"é\", \"v\": \"0102\", \
             \"t\": \"NaT\", \"c\": [0.0, -2.0], \"d\": -0.05, \"n\": -3}"
        );
        let whole = format!("[{text}\n]");
        let parsed: serde_json::Value = serde_json::from_str(&whole).unwrap();
        assert_eq!(parsed.as_array().unwrap().len(), 2);
    }
}
