//! The null policies on a leaf column (after the encodings are unpacked): `nan` turns an
//! integer column with nulls into `<f8` (exactly, or refused), `fill=VALUE` writes the caller's
//! value (refused when it also occurs as data), and bool or text under `nan` is refused.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, FixedSizeBinaryArray, Float64Array,
    GenericBinaryArray, GenericStringArray, PrimitiveArray,
};
use arrow_schema::DataType;

use super::policy::{Ctx, NullPolicy};
use npy_serde::error::{Error, Result};

/// Whether a column of `dt` is a datetime, whose nulls are NaT under every policy.
pub(crate) fn is_time(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 | DataType::Duration(_)
    )
}

/// Applies the null policy of `cx` to a leaf column `a`; `settled` is the type the first batch
/// gave the column.
pub(crate) fn leaf(
    a: ArrayRef,
    cx: &Ctx,
    path: &str,
    settled: Option<&DataType>,
) -> Result<ArrayRef> {
    let dt = a.data_type().clone();
    let nulls = a.logical_null_count();
    match cx.nulls {
        NullPolicy::Error | NullPolicy::Mask => Ok(a),
        _ if is_time(&dt) => Ok(a),
        NullPolicy::Nan if dt.is_floating() => Ok(a),
        NullPolicy::Nan if dt.is_integer() => {
            if settled == Some(&DataType::Float64) || (settled.is_none() && nulls > 0) {
                return int_to_f8(&a, cx, path);
            }
            if nulls > 0 {
                let row = first_null(&a);
                return Err(Error::write(format!(
                    "column `{path}`, row {}: a null in an integer column the first batch \
                     settled as {dt} (it had no null; under the nan policy an integer column \
                     becomes <f8 only when the first batch has a null): choose the null policy \
                     mask or fill=VALUE for `{}`",
                    cx.first_row + row as u64,
                    cx.top
                )));
            }
            Ok(a)
        }
        NullPolicy::Nan if nulls > 0 => {
            let row = first_null(&a);
            Err(Error::write(format!(
                "column `{path}`, row {}: a null in a {dt} column, which has no NaN: choose the \
                 null policy mask or fill=VALUE for `{}` (BatchWriterBuilder::nulls_for, \
                 `--nulls {}:mask`)",
                cx.first_row + row as u64,
                cx.top,
                cx.top
            )))
        }
        NullPolicy::Nan => Ok(a),
        NullPolicy::Fill(v) if nulls > 0 => fill(&a, v, cx, path),
        NullPolicy::Fill(_) => Ok(a),
    }
}

fn first_null(a: &ArrayRef) -> usize {
    (0..a.len()).find(|&i| a.is_null(i)).unwrap_or(0)
}

/// An integer column as `<f8`, every value exact.
fn int_to_f8(a: &ArrayRef, cx: &Ctx, path: &str) -> Result<ArrayRef> {
    macro_rules! conv {
        ($t:ty) => {{
            let p = a.as_primitive::<$t>();
            let mut out = Vec::with_capacity(p.len());
            for (i, &v) in p.values().iter().enumerate() {
                let x = v as f64;
                if p.is_valid(i) && x as i128 != v as i128 {
                    return Err(Error::write(format!(
                        "column `{path}`, row {}: the integer {v} is not exact in <f8, which the \
                         nan policy turns an integer column with nulls into: choose the null \
                         policy mask or fill=VALUE for `{}`",
                        cx.first_row + i as u64,
                        cx.top
                    )));
                }
                out.push(x);
            }
            Ok(Arc::new(Float64Array::new(out.into(), p.nulls().cloned())) as ArrayRef)
        }};
    }
    match a.data_type() {
        DataType::Int8 => conv!(Int8Type),
        DataType::Int16 => conv!(Int16Type),
        DataType::Int32 => conv!(Int32Type),
        DataType::Int64 => conv!(Int64Type),
        DataType::UInt8 => conv!(UInt8Type),
        DataType::UInt16 => conv!(UInt16Type),
        DataType::UInt32 => conv!(UInt32Type),
        _ => conv!(UInt64Type),
    }
}

/// The refusal of a fill value that is also data (or does not parse).
fn collide(cx: &Ctx, path: &str, v: &str, row: usize) -> Error {
    Error::write(format!(
        "column `{path}`, row {}: the fill value {v:?} also occurs as data, so a null and a value \
         could not be told apart: choose another fill value, or the null policy mask for `{}`",
        cx.first_row + row as u64,
        cx.top
    ))
}

fn unparsable(path: &str, v: &str, dt: &DataType) -> Error {
    Error::write(format!(
        "column `{path}` is {dt}, and the fill value {v:?} is not one of its values"
    ))
}

/// The column with its nulls replaced by the value `v` parsed as its type.
fn fill(a: &ArrayRef, v: &str, cx: &Ctx, path: &str) -> Result<ArrayRef> {
    let dt = a.data_type();
    macro_rules! prim {
        ($t:ty, $parse:expr) => {{
            let f: Option<<$t as ArrowPrimitiveType>::Native> = $parse;
            let f = f.ok_or_else(|| unparsable(path, v, dt))?;
            prim_fill::<$t>(a, f, |x, y| x == y, cx, path, v)
        }};
    }
    macro_rules! float {
        ($t:ty, $parse:expr) => {{
            let f: Option<<$t as ArrowPrimitiveType>::Native> = $parse;
            let f = f.ok_or_else(|| unparsable(path, v, dt))?;
            prim_fill::<$t>(
                a,
                f,
                |x, y| x == y || (x.is_nan() && y.is_nan()),
                cx,
                path,
                v,
            )
        }};
    }
    match dt {
        DataType::Int8 => prim!(Int8Type, v.parse().ok()),
        DataType::Int16 => prim!(Int16Type, v.parse().ok()),
        DataType::Int32 => prim!(Int32Type, v.parse().ok()),
        DataType::Int64 => prim!(Int64Type, v.parse().ok()),
        DataType::UInt8 => prim!(UInt8Type, v.parse().ok()),
        DataType::UInt16 => prim!(UInt16Type, v.parse().ok()),
        DataType::UInt32 => prim!(UInt32Type, v.parse().ok()),
        DataType::UInt64 => prim!(UInt64Type, v.parse().ok()),
        DataType::Float16 => float!(
            Float16Type,
            v.parse::<f64>()
                .ok()
                .and_then(npy_serde::binary16::from_f64_exact)
                .map(<Float16Type as ArrowPrimitiveType>::Native::from_bits)
        ),
        DataType::Float32 => float!(Float32Type, v.parse().ok()),
        DataType::Float64 => float!(Float64Type, v.parse().ok()),
        DataType::Boolean => {
            let f = match v {
                "true" | "True" | "1" => true,
                "false" | "False" | "0" => false,
                _ => return Err(unparsable(path, v, dt)),
            };
            let b = a.as_boolean();
            if let Some(i) = (0..b.len()).find(|&i| b.is_valid(i) && b.value(i) == f) {
                return Err(collide(cx, path, v, i));
            }
            Ok(Arc::new(BooleanArray::from_iter(
                b.iter().map(|x| Some(x.unwrap_or(f))),
            )))
        }
        DataType::Utf8 => strings(a.as_string::<i32>(), v, cx, path),
        DataType::LargeUtf8 => strings(a.as_string::<i64>(), v, cx, path),
        DataType::Utf8View => {
            let s = a.as_string_view();
            if let Some(i) = (0..s.len()).find(|&i| s.is_valid(i) && s.value(i) == v) {
                return Err(collide(cx, path, v, i));
            }
            Ok(Arc::new(arrow_array::StringViewArray::from_iter(
                s.iter().map(|x| Some(x.unwrap_or(v))),
            )))
        }
        DataType::Binary => binaries(a.as_binary::<i32>(), v, cx, path),
        DataType::LargeBinary => binaries(a.as_binary::<i64>(), v, cx, path),
        DataType::BinaryView => {
            let s = a.as_binary_view();
            let vb = v.as_bytes();
            if let Some(i) = (0..s.len()).find(|&i| s.is_valid(i) && s.value(i) == vb) {
                return Err(collide(cx, path, v, i));
            }
            Ok(Arc::new(arrow_array::BinaryViewArray::from_iter(
                s.iter().map(|x| Some(x.unwrap_or(vb))),
            )))
        }
        DataType::FixedSizeBinary(n) => {
            let s = a.as_fixed_size_binary();
            let vb = v.as_bytes();
            if vb.len() != *n as usize {
                return Err(unparsable(path, v, dt));
            }
            if let Some(i) = (0..s.len()).find(|&i| s.is_valid(i) && s.value(i) == vb) {
                return Err(collide(cx, path, v, i));
            }
            let out = FixedSizeBinaryArray::try_from_iter(s.iter().map(|x| x.unwrap_or(vb)))
                .map_err(super::arrow_err)?;
            Ok(Arc::new(out))
        }
        other => Err(Error::write(format!(
            "column `{path}` is {other}, which the fill policy cannot fill"
        ))),
    }
}

fn prim_fill<T: ArrowPrimitiveType>(
    a: &ArrayRef,
    f: T::Native,
    eq: impl Fn(T::Native, T::Native) -> bool,
    cx: &Ctx,
    path: &str,
    v: &str,
) -> Result<ArrayRef> {
    let p = a.as_primitive::<T>();
    let mut out = p.values().to_vec();
    for (i, x) in out.iter_mut().enumerate() {
        if p.is_null(i) {
            *x = f;
        } else if eq(*x, f) {
            return Err(collide(cx, path, v, i));
        }
    }
    Ok(Arc::new(
        PrimitiveArray::<T>::new(out.into(), None).with_data_type(a.data_type().clone()),
    ))
}

fn strings<O: arrow_array::OffsetSizeTrait>(
    s: &GenericStringArray<O>,
    v: &str,
    cx: &Ctx,
    path: &str,
) -> Result<ArrayRef> {
    if let Some(i) = (0..s.len()).find(|&i| s.is_valid(i) && s.value(i) == v) {
        return Err(collide(cx, path, v, i));
    }
    Ok(Arc::new(GenericStringArray::<O>::from_iter(
        s.iter().map(|x| Some(x.unwrap_or(v))),
    )))
}

fn binaries<O: arrow_array::OffsetSizeTrait>(
    s: &GenericBinaryArray<O>,
    v: &str,
    cx: &Ctx,
    path: &str,
) -> Result<ArrayRef> {
    let vb = v.as_bytes();
    if let Some(i) = (0..s.len()).find(|&i| s.is_valid(i) && s.value(i) == vb) {
        return Err(collide(cx, path, v, i));
    }
    Ok(Arc::new(GenericBinaryArray::<O>::from_iter(
        s.iter().map(|x| Some(x.unwrap_or(vb))),
    )))
}
