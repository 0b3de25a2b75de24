//! One Arrow column made NumPy-ready: encodings unpacked (dictionary, run-end, views), lists of
//! one length as fixed-size lists, times as durations, decimals per their policy, the types
//! with no dtype refused (naming the option), and the null policy applied to the leaves.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, DurationMicrosecondArray, DurationMillisecondArray, DurationNanosecondArray,
    DurationSecondArray, FixedSizeListArray, StructArray, UInt64Array,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Fields, TimeUnit};

use super::arrow_err;
use super::decimal;
use super::nulls;
use super::policy::{Ctx, DecimalPolicy, NullPolicy};
use npy_serde::error::{Error, Result};

/// The refusal of a type with no dtype.
fn refuse(cx: &Ctx, path: &str, dt: &DataType, extra: &str) -> Error {
    let top = cx.top;
    Error::write(format!(
        "column `{path}` is {dt}, which has no NumPy dtype{extra}: leave the column out with \
         BatchWriterBuilder::exclude([\"{top}\"]) or `--exclude {top}`"
    ))
}

/// `a` made NumPy-ready; `settled` is the type the first batch gave it (`None` for the first).
pub(crate) fn column(
    a: &ArrayRef,
    cx: &Ctx,
    path: &str,
    settled: Option<&DataType>,
) -> Result<ArrayRef> {
    let dt = a.data_type();
    let out: ArrayRef = match dt {
        DataType::Dictionary(..) => return column(&undict(a, cx, path)?, cx, path, settled),
        DataType::RunEndEncoded(..) => return column(&unrun(a, path)?, cx, path, settled),
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::ListView(_)
        | DataType::LargeListView(_) => fixed(a, cx, path, settled)?,
        DataType::FixedSizeList(f, n) => {
            let l = a.as_fixed_size_list();
            let item = match settled {
                Some(DataType::FixedSizeList(g, _)) => Some(g.data_type()),
                _ => None,
            };
            let values = column(l.values(), cx, path, item)?;
            if values.data_type() == f.data_type() && Arc::ptr_eq(&values, l.values()) {
                // Nothing inside changed: the column as it is (its item field too, which the
                // writer matches against the NumPy metadata).
                return Ok(a.clone());
            }
            let field = Arc::new(
                f.as_ref()
                    .clone()
                    .with_data_type(values.data_type().clone())
                    .with_nullable(true),
            );
            Arc::new(
                FixedSizeListArray::try_new_with_length(
                    field,
                    *n,
                    values,
                    l.nulls().cloned(),
                    l.len(),
                )
                .map_err(arrow_err)?,
            )
        }
        DataType::Struct(fs) => {
            let s = a.as_struct();
            let mut cols = Vec::with_capacity(fs.len());
            let mut fields = Vec::with_capacity(fs.len());
            for (i, f) in fs.iter().enumerate() {
                let inner = match settled {
                    Some(DataType::Struct(g)) => g.get(i).map(|g| g.data_type()),
                    _ => None,
                };
                let c = column(s.column(i), cx, &format!("{path}.{}", f.name()), inner)?;
                let same = Arc::ptr_eq(&c, s.column(i));
                let nullable = f.is_nullable() || !same;
                fields.push(
                    f.as_ref()
                        .clone()
                        .with_data_type(c.data_type().clone())
                        .with_nullable(nullable),
                );
                cols.push(c);
            }
            if cols.iter().zip(s.columns()).all(|(c, o)| Arc::ptr_eq(c, o)) {
                return Ok(a.clone());
            }
            Arc::new(
                StructArray::try_new(Fields::from(fields), cols, s.nulls().cloned())
                    .map_err(arrow_err)?,
            )
        }
        DataType::Time32(_) | DataType::Time64(_) => times(a),
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => {
            if cx.decimals == DecimalPolicy::Scaled
                && *cx.nulls == NullPolicy::Nan
                && a.null_count() > 0
            {
                return Err(Error::write(format!(
                    "column `{path}` is {dt} with nulls, written scaled (<i8), which has no \
                     NaN: choose the null policy mask or fill=VALUE for `{}`",
                    cx.top
                )));
            }
            let w = decimal::write(a, cx.decimals, path, cx.first_row)?;
            if w.data_type() == &DataType::Int64 {
                // The unscaled integers: a fill value is one too, never turned into <f8.
                return match cx.nulls {
                    NullPolicy::Nan => Ok(w),
                    _ => nulls::leaf(w, cx, path, settled),
                };
            }
            w
        }
        DataType::Map(..) | DataType::Union(..) | DataType::Interval(_) => {
            return Err(refuse(cx, path, dt, ""));
        }
        DataType::Null => {
            return Err(refuse(
                cx,
                path,
                dt,
                " (every value is null, so no null policy, error, nan, fill=VALUE or mask, \
                 can give it one; or cast it to a type first)",
            ));
        }
        _ => a.clone(),
    };
    match out.data_type() {
        DataType::Struct(_) | DataType::FixedSizeList(..) => Ok(out),
        _ => nulls::leaf(out, cx, path, settled),
    }
}

/// A dictionary column as its values (every key checked against the dictionary first).
fn undict(a: &ArrayRef, cx: &Ctx, path: &str) -> Result<ArrayRef> {
    let DataType::Dictionary(k, _) = a.data_type() else {
        unreachable!("a dictionary")
    };
    macro_rules! keys {
        ($t:ty) => {{
            let d = a.as_dictionary::<$t>();
            let n = d.values().len() as i128;
            let keys = d.keys();
            let mut idx = Vec::with_capacity(keys.len());
            for (i, &key) in keys.values().iter().enumerate() {
                let key = key as i128;
                if keys.is_valid(i) && !(0..n).contains(&key) {
                    return Err(Error::invalid_value(format!(
                        "column `{path}`, row {}: the dictionary key {key} points past the \
                         dictionary of {n} value(s)",
                        cx.first_row + i as u64
                    )));
                }
                idx.push(if keys.is_valid(i) { key as u64 } else { 0 });
            }
            (
                d.values().clone(),
                UInt64Array::new(idx.into(), keys.nulls().cloned()),
            )
        }};
    }
    let (values, idx) = match k.as_ref() {
        DataType::Int8 => keys!(Int8Type),
        DataType::Int16 => keys!(Int16Type),
        DataType::Int32 => keys!(Int32Type),
        DataType::Int64 => keys!(Int64Type),
        DataType::UInt8 => keys!(UInt8Type),
        DataType::UInt16 => keys!(UInt16Type),
        DataType::UInt32 => keys!(UInt32Type),
        _ => keys!(UInt64Type),
    };
    arrow_select::take::take(values.as_ref(), &idx, None).map_err(arrow_err)
}

/// A run-end encoded column as its values, one per row.
fn unrun(a: &ArrayRef, path: &str) -> Result<ArrayRef> {
    macro_rules! run {
        ($t:ty) => {{
            let r = a.as_run::<$t>();
            let logical: Vec<u64> = (0..r.len() as u64).collect();
            let phys = r.get_physical_indices(&logical).map_err(arrow_err)?;
            (r.values().clone(), phys)
        }};
    }
    let (values, phys) = match a.data_type() {
        DataType::RunEndEncoded(e, _) => match e.data_type() {
            DataType::Int16 => run!(Int16Type),
            DataType::Int32 => run!(Int32Type),
            _ => run!(Int64Type),
        },
        _ => unreachable!("a run-end encoded column"),
    };
    if phys.iter().any(|&p| p >= values.len()) {
        return Err(Error::invalid_value(format!(
            "column `{path}`: its run ends point past its {} value(s)",
            values.len()
        )));
    }
    let idx = UInt64Array::from_iter_values(phys.into_iter().map(|p| p as u64));
    arrow_select::take::take(values.as_ref(), &idx, None).map_err(arrow_err)
}

/// A variable-length list column (list, large list, list view) as a fixed-size list when every
/// list has one length; refused, naming `exclude`, when they differ.
fn fixed(a: &ArrayRef, cx: &Ctx, path: &str, settled: Option<&DataType>) -> Result<ArrayRef> {
    let (values, spans): (ArrayRef, Vec<(usize, usize)>) = match a.data_type() {
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let o = l.value_offsets();
            (
                l.values().clone(),
                o.windows(2)
                    .map(|w| (w[0] as usize, (w[1] - w[0]) as usize))
                    .collect(),
            )
        }
        DataType::LargeList(_) => {
            let l = a.as_list::<i64>();
            let o = l.value_offsets();
            (
                l.values().clone(),
                o.windows(2)
                    .map(|w| (w[0] as usize, (w[1] - w[0]) as usize))
                    .collect(),
            )
        }
        DataType::ListView(_) => {
            let l = a.as_list_view::<i32>();
            let s = l.offsets().iter().zip(l.sizes().iter());
            (
                l.values().clone(),
                s.map(|(&o, &n)| (o as usize, n as usize)).collect(),
            )
        }
        _ => {
            let l = a.as_list_view::<i64>();
            let s = l.offsets().iter().zip(l.sizes().iter());
            (
                l.values().clone(),
                s.map(|(&o, &n)| (o as usize, n as usize)).collect(),
            )
        }
    };
    let (want, item) = match settled {
        Some(DataType::FixedSizeList(f, n)) => {
            (Some((*n as usize, usize::MAX)), Some(f.data_type()))
        }
        _ => (None, None),
    };
    let mut len: Option<(usize, usize)> = want;
    for (i, &(o, n)) in spans.iter().enumerate() {
        if a.is_null(i) {
            continue;
        }
        if o.checked_add(n).is_none_or(|e| e > values.len()) {
            return Err(Error::invalid_value(format!(
                "column `{path}`, row {}: the list points past its values",
                cx.first_row + i as u64
            )));
        }
        match len {
            None => len = Some((n, i)),
            Some((m, j)) if m != n => {
                let first = if j == usize::MAX {
                    "the first batch's lists".to_string()
                } else {
                    format!("row {}", cx.first_row + j as u64)
                };
                return Err(refuse(
                    cx,
                    path,
                    a.data_type(),
                    &format!(
                        " as a subarray: its lists differ in length ({m} in {first}, {n} in row \
                         {}), and a subarray has one shape",
                        cx.first_row + i as u64
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    let n = len.map_or(0, |(n, _)| n);
    let mut idx: Vec<Option<u64>> = Vec::with_capacity(spans.len().saturating_mul(n));
    for (i, &(o, _)) in spans.iter().enumerate() {
        if a.is_null(i) {
            idx.extend(std::iter::repeat_n(None, n));
            continue;
        }
        idx.extend((o..o + n).map(|k| Some(k as u64)));
    }
    let taken = arrow_select::take::take(values.as_ref(), &UInt64Array::from(idx), None)
        .map_err(arrow_err)?;
    let child = column(&taken, cx, path, item)?;
    let n = i32::try_from(n).map_err(|_| Error::overflow("a list length"))?;
    let field = Arc::new(Field::new("item", child.data_type().clone(), true));
    let nulls = a
        .logical_nulls()
        .filter(|b: &NullBuffer| b.null_count() > 0);
    Ok(Arc::new(
        FixedSizeListArray::try_new_with_length(field, n, child, nulls, spans.len())
            .map_err(arrow_err)?,
    ))
}

/// A time-of-day column as the duration since midnight in its unit.
fn times(a: &ArrayRef) -> ArrayRef {
    let nulls = a.nulls().cloned();
    match a.data_type() {
        DataType::Time32(TimeUnit::Second) => {
            let v = a
                .as_primitive::<Time32SecondType>()
                .values()
                .iter()
                .map(|&x| x as i64);
            Arc::new(DurationSecondArray::new(
                v.collect::<Vec<_>>().into(),
                nulls,
            ))
        }
        DataType::Time32(_) => {
            let v = a
                .as_primitive::<Time32MillisecondType>()
                .values()
                .iter()
                .map(|&x| x as i64);
            Arc::new(DurationMillisecondArray::new(
                v.collect::<Vec<_>>().into(),
                nulls,
            ))
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            let v = a.as_primitive::<Time64MicrosecondType>().values().clone();
            Arc::new(DurationMicrosecondArray::new(v, nulls))
        }
        _ => {
            let v = a.as_primitive::<Time64NanosecondType>().values().clone();
            Arc::new(DurationNanosecondArray::new(v, nulls))
        }
    }
}
