//! Object arrays (`descr '|O'`, a record dtype with an `O` field, NumPy 2's `StringDType`) as
//! Arrow columns, behind [`BatchReaderBuilder::allow_pickle_data`](super::BatchReaderBuilder::allow_pickle_data).
//!
//! The pickle is read by the data-only reader ([`npy_serde::pickle`]: nothing is imported or run)
//! into an [`ObjectArray`], whose elements become whole columns here; the batch reader hands
//! them out in slices of its batch size.
//!
//! | elements of an object column (or field) | Arrow |
//! |---|---|
//! | every one a `str` or `None` | `Utf8` (`LargeUtf8` past `i32` offsets), `None` a null |
//! | every one `bytes` or `None` | `Binary` (`LargeBinary` past `i32` offsets), `None` a null |
//! | only `None` (or none at all) | `Utf8`, all null |
//! | anything else | an error naming the element's index, its Python type and the column |
//!
//! The non-object fields of a record with an object field are read from their NumPy scalars:
//! `b1`, `i1`..`i8`, `u1`..`u8`, `f4`, `f8`, `U<n>` and `S<n>` (as the plain mapping does);
//! any other such field is an error naming it. An N-d array's trailing axes are nested
//! `FixedSizeList`s, as for other arrays. Each field's `numpy.descr` is the pickled dtype's
//! (`'|O'`, `StringDType()`), the schema's the whole element's.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeListArray, LargeBinaryArray, LargeStringArray,
    PrimitiveArray, StringArray,
};
use arrow_schema::{DataType, Field, Schema};

use super::schema::{DESCR_KEY, FORTRAN_KEY, PLAIN_COLUMN, SHAPE_KEY};
use npy_serde::dtype::DType;
use npy_serde::error::{Error, ErrorKind, Result};
use npy_serde::pickle::{ObjectArray, PyValue};
use npy_serde::value::Value;

/// An object array's columns, whole.
pub(crate) struct ObjectColumns {
    /// Every column's field, with the NumPy metadata, and the schema's metadata.
    pub(crate) schema: Schema,
    pub(crate) columns: Vec<ArrayRef>,
    /// Rows (items along the first axis; 1 for 0-d).
    pub(crate) rows: u64,
}

/// The columns of `a`.
pub(crate) fn object_columns(a: &ObjectArray) -> Result<ObjectColumns> {
    let rows = a.shape.first().copied().unwrap_or(1);
    let inner: &[u64] = a.shape.get(1..).unwrap_or(&[]);
    let mut meta = HashMap::new();
    meta.insert(DESCR_KEY.to_string(), a.descr.clone());
    meta.insert(
        SHAPE_KEY.to_string(),
        npy_serde::pyliteral::repr_shape(&a.shape),
    );
    let fortran = if a.fortran_order { "True" } else { "False" };
    meta.insert(FORTRAN_KEY.to_string(), fortran.to_string());
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    match record_fields(&a.descr)? {
        None => {
            let (flat, descr) = (column(a.values.iter(), PLAIN_COLUMN)?, &a.descr);
            let (f, c) = nest(PLAIN_COLUMN, flat, inner, descr)?;
            fields.push(f);
            columns.push(c);
        }
        Some(record) => {
            for (j, (name, descr)) in record.iter().enumerate() {
                let values = a.values.iter().enumerate().map(move |(i, v)| match v {
                    PyValue::Record(fs) => fs.get(j).map(|(_, v)| v).ok_or(i),
                    _ => Err(i),
                });
                let mut got = Vec::with_capacity(a.values.len());
                for v in values {
                    got.push(v.map_err(|i| {
                        Error::new(ErrorKind::Pickle(format!(
                            "element {i} of the record array is not a record with field {name:?}"
                        )))
                        .at_record(i as u64)
                    })?);
                }
                let flat = if is_object_descr(descr) {
                    column(got.into_iter(), name)?
                } else {
                    scalar_column(&got, name, descr)?
                };
                let (f, c) = nest(name, flat, inner, descr)?;
                fields.push(f);
                columns.push(c);
            }
        }
    }
    Ok(ObjectColumns {
        schema: Schema::new_with_metadata(fields, meta),
        columns,
        rows,
    })
}

/// Whether a field's descr is NumPy's object dtype (`'|O'`, `'O'`, `'O8'`, `StringDType`): the
/// library's one rule.
fn is_object_descr(d: &str) -> bool {
    npy_serde::header::is_object_descr(&npy_serde::header::Literal::Str(d.into()))
}

/// The `(name, descr)` of each field when `descr` is a record's list, `None` otherwise.
fn record_fields(descr: &str) -> Result<Option<Vec<(String, String)>>> {
    if !descr.trim_start().starts_with('[') {
        return Ok(None);
    }
    let opts = npy_serde::pyliteral::LiteralOptions {
        max_depth: 64,
        allow_long_suffix: false,
    };
    let py = npy_serde::pyliteral::parse_literal(descr, opts, 0)?;
    let lit = py.to_literal(descr, 0)?;
    let npy_serde::header::Literal::List(items) = lit else {
        return Err(Error::descr(format!(
            "the record dtype {descr} is not a list"
        )));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        use npy_serde::header::Literal as L;
        match item {
            L::Tuple(t) => match t.as_slice() {
                [L::Str(name), L::Str(d)] => out.push((name.clone(), format!("'{d}'"))),
                [L::Tuple(nt), L::Str(d)] if nt.len() == 2 => match &nt[1] {
                    L::Str(name) => out.push((name.clone(), format!("'{d}'"))),
                    _ => return Err(unsupported_field(descr)),
                },
                _ => return Err(unsupported_field(descr)),
            },
            _ => return Err(unsupported_field(descr)),
        }
    }
    Ok(Some(out))
}

fn unsupported_field(descr: &str) -> Error {
    Error::new(ErrorKind::UnsupportedDType(format!(
        "the record dtype {descr} with an object field has a field that is not a plain \
         dtype (a subarray or a nested record): such arrays are read with \
         ReaderBuilder::read_objects_slice, not as Arrow columns"
    )))
}

/// `flat` (every element of the column, C order) nested by the trailing axes `inner` as
/// `FixedSizeList`s, with the field's metadata.
fn nest(name: &str, flat: ArrayRef, inner: &[u64], descr: &str) -> Result<(Field, ArrayRef)> {
    let mut array = flat;
    for &len in inner.iter().rev() {
        let size = i32::try_from(len).map_err(|_| Error::overflow("an axis as a list size"))?;
        let item = Arc::new(Field::new("item", array.data_type().clone(), true));
        let list = FixedSizeListArray::try_new(item, size, array, None)
            .map_err(super::decode::arrow_err)?;
        array = Arc::new(list);
    }
    let mut meta = HashMap::new();
    meta.insert(DESCR_KEY.to_string(), descr.to_string());
    let field = Field::new(name, array.data_type().clone(), true).with_metadata(meta);
    Ok((field, array))
}

/// What an object column holds, settled by its first element other than `None`.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    Bytes,
}

/// The refusal of element `i` of column `name`, whose type is not the column's.
fn not_a_column(i: usize, v: &PyValue, name: &str, kind: Option<Kind>) -> Error {
    let what = match kind {
        Some(Kind::Str) => "the column's earlier elements are str",
        Some(Kind::Bytes) => "the column's earlier elements are bytes",
        None => "it is neither str nor bytes",
    };
    Error::new(ErrorKind::UnsupportedDType(format!(
        "object column {name:?}: element {i} is a Python {} ({what}), so the column cannot be \
         an Arrow column: only object arrays whose elements are all str (Utf8) or all bytes \
         (Binary), None as null, are; read the values with ReaderBuilder::read_objects_slice",
        v.type_name()
    )))
    .at_record(i as u64)
}

/// An object column: `Utf8` or `Binary` (large past `i32` offsets), nulls for `None`.
fn column<'a>(
    values: impl ExactSizeIterator<Item = &'a PyValue> + Clone,
    name: &str,
) -> Result<ArrayRef> {
    let mut kind = None;
    let mut total = 0usize;
    for (i, v) in values.clone().enumerate() {
        let (k, len) = match v {
            PyValue::None => continue,
            PyValue::Str(s) => (Kind::Str, s.len()),
            PyValue::Bytes(b) => (Kind::Bytes, b.len()),
            other => return Err(not_a_column(i, other, name, kind)),
        };
        match kind {
            None => kind = Some(k),
            Some(seen) if seen != k => return Err(not_a_column(i, v, name, kind)),
            Some(_) => {}
        }
        total = total
            .checked_add(len)
            .ok_or_else(|| Error::overflow("a column's bytes"))?;
    }
    let large = total > i32::MAX as usize;
    Ok(match kind.unwrap_or(Kind::Str) {
        Kind::Str => {
            let it = values.map(|v| v.as_str());
            if large {
                Arc::new(LargeStringArray::from_iter(it))
            } else {
                Arc::new(StringArray::from_iter(it))
            }
        }
        Kind::Bytes => {
            let it = values.map(|v| match v {
                PyValue::Bytes(b) => Some(b.as_slice()),
                _ => None,
            });
            if large {
                Arc::new(LargeBinaryArray::from_iter(it))
            } else {
                Arc::new(BinaryArray::from_iter(it))
            }
        }
    })
}

/// A non-object field of a record with an object field, from its NumPy scalars.
fn scalar_column(values: &[&PyValue], name: &str, descr: &str) -> Result<ArrayRef> {
    let dt = DType::from_descr(descr)?;
    let arrow = super::data_type_for(&dt)?;
    let bad = |i: usize, v: &PyValue| {
        Error::new(ErrorKind::Pickle(format!(
            "field {name:?} of dtype {descr}: element {i} holds a {}, not a value of the dtype",
            v.type_name()
        )))
        .at_record(i as u64)
    };
    let ints = || -> Result<Vec<i64>> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| match (v.scalar(), v) {
                (Some(Value::Int(n)), _) | (_, PyValue::Int(n)) => Ok(*n),
                _ => Err(bad(i, v)),
            })
            .collect()
    };
    let uints = || -> Result<Vec<u64>> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| match (v.scalar(), v) {
                (Some(Value::UInt(n)), _) => Ok(*n),
                _ => Err(bad(i, v)),
            })
            .collect()
    };
    let floats = || -> Result<Vec<f64>> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| match (v.scalar(), v) {
                (Some(Value::Float(x)), _) | (_, PyValue::Float(x)) => Ok(*x),
                _ => Err(bad(i, v)),
            })
            .collect()
    };
    macro_rules! narrow {
        ($src:expr, $t:ty) => {{
            let v = $src?;
            let mut out = Vec::with_capacity(v.len());
            for (i, x) in v.into_iter().enumerate() {
                out.push(x.try_into().map_err(|_| {
                    Error::invalid_value(format!("field {name:?}: {x} does not fit {descr}"))
                        .at_record(i as u64)
                })?);
            }
            Arc::new(PrimitiveArray::<$t>::from_iter_values(out)) as ArrayRef
        }};
    }
    Ok(match arrow {
        DataType::Boolean => {
            let mut out = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                match (v.scalar(), v) {
                    (Some(Value::Bool(b)), _) | (_, PyValue::Bool(b)) => out.push(Some(*b)),
                    _ => return Err(bad(i, v)),
                }
            }
            Arc::new(BooleanArray::from(out))
        }
        DataType::Int8 => narrow!(ints(), Int8Type),
        DataType::Int16 => narrow!(ints(), Int16Type),
        DataType::Int32 => narrow!(ints(), Int32Type),
        DataType::Int64 => narrow!(ints(), Int64Type),
        DataType::UInt8 => narrow!(uints(), UInt8Type),
        DataType::UInt16 => narrow!(uints(), UInt16Type),
        DataType::UInt32 => narrow!(uints(), UInt32Type),
        DataType::UInt64 => narrow!(uints(), UInt64Type),
        DataType::Float32 => Arc::new(PrimitiveArray::<Float32Type>::from_iter_values(
            floats()?.into_iter().map(|x| x as f32),
        )),
        DataType::Float64 => Arc::new(PrimitiveArray::<Float64Type>::from_iter_values(floats()?)),
        DataType::Utf8 => {
            let mut out = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                match (v.scalar(), v) {
                    (Some(Value::String(s)), _) | (_, PyValue::Str(s)) => out.push(Some(s)),
                    _ => return Err(bad(i, v)),
                }
            }
            Arc::new(StringArray::from_iter(out))
        }
        DataType::Binary => {
            let mut out = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                match (v.scalar(), v) {
                    (Some(Value::Bytes(b)), _) | (_, PyValue::Bytes(b)) => {
                        out.push(Some(b.as_slice()))
                    }
                    _ => return Err(bad(i, v)),
                }
            }
            Arc::new(BinaryArray::from_iter(out))
        }
        other => {
            return Err(Error::new(ErrorKind::UnsupportedDType(format!(
                "field {name:?} of dtype {descr} (Arrow {other}) in a record with an object \
                 field: only b1, i1..i8, u1..u8, f4, f8, U and S fields are read as columns \
                 there; read the values with ReaderBuilder::read_objects_slice"
            ))))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::Array;

    fn array(descr: &str, shape: Vec<u64>, values: Vec<PyValue>) -> ObjectArray {
        ObjectArray {
            descr: descr.into(),
            shape,
            fortran_order: false,
            values,
        }
    }

    #[test]
    fn strings_and_none_are_a_utf8_column_with_nulls() {
        let a = array(
            "'|O'",
            vec![3],
            vec![
                PyValue::Str("a".into()),
                PyValue::None,
                PyValue::Str("優良".into()),
            ],
        );
        let c = object_columns(&a).unwrap();
        assert_eq!(c.rows, 3);
        let s = c.columns[0].as_string::<i32>();
        assert_eq!(s.value(2), "優良");
        assert!(s.is_null(1));
        assert_eq!(c.schema.field(0).metadata()[DESCR_KEY], "'|O'");
        assert_eq!(c.schema.metadata()[SHAPE_KEY], "(3,)");
    }

    #[test]
    fn bytes_are_binary_and_mixtures_are_refused_by_index_and_type() {
        let a = array(
            "'|O'",
            vec![2],
            vec![PyValue::Bytes(vec![0, 255]), PyValue::None],
        );
        let c = object_columns(&a).unwrap();
        assert_eq!(c.columns[0].as_binary::<i32>().value(0), [0, 255]);
        let a = array(
            "'|O'",
            vec![3],
            vec![PyValue::Str("a".into()), PyValue::None, PyValue::Int(3)],
        );
        let e = object_columns(&a).err().unwrap().to_string();
        assert!(e.contains("element 2 is a Python int"), "{e}");
        assert!(e.contains("cannot be an Arrow column"), "{e}");
        let a = array(
            "'|O'",
            vec![2],
            vec![PyValue::Bytes(vec![]), PyValue::Str("a".into())],
        );
        let e = object_columns(&a).err().unwrap().to_string();
        assert!(e.contains("element 1 is a Python str"), "{e}");
    }

    #[test]
    fn trailing_axes_nest_and_records_keep_their_fields() {
        let v = |s: &str| PyValue::Str(s.into());
        let a = array("'|O'", vec![2, 2], vec![v("a"), v("b"), v("c"), v("d")]);
        let c = object_columns(&a).unwrap();
        assert_eq!(c.rows, 2);
        let l = c.columns[0].as_fixed_size_list();
        assert_eq!(l.value(1).as_string::<i32>().value(0), "c");

        let rec = |n: i64, s: PyValue| {
            PyValue::Record(vec![
                ("a".into(), PyValue::Scalar(Value::Int(n))),
                ("b".into(), s),
            ])
        };
        let a = array(
            "[('a', '<i4'), ('b', 'O')]",
            vec![2],
            vec![rec(1, v("x")), rec(2, PyValue::None)],
        );
        let c = object_columns(&a).unwrap();
        assert_eq!(c.schema.field(0).data_type(), &DataType::Int32);
        assert_eq!(c.columns[0].as_primitive::<Int32Type>().value(1), 2);
        assert!(c.columns[1].is_null(1));
        assert_eq!(c.schema.field(1).metadata()[DESCR_KEY], "'O'");
    }
}
