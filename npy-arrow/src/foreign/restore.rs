//! The reader's side: a field titled `arrow:NAME:TYPE` comes back as TYPE (decimals from
//! `<f8` or `<i8` exactly, times from `m8`, zones onto timestamps, ...), and a `NAME_valid`
//! field titled `arrow:NAME_valid:mask` is folded into NAME's nulls.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    make_array, Array, ArrayRef, FixedSizeListArray, GenericListArray, PrimitiveArray, StructArray,
    Time32MillisecondArray, Time32SecondArray, Time64MicrosecondArray, Time64NanosecondArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields, TimeUnit};

use super::arrow_err;
use super::decimal;
use super::title::{self, Marker};
use npy_serde::error::{Error, Result};

/// What the reader does to one column after decoding it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Restore {
    /// The Arrow type it comes back as (`None`: its own).
    pub(crate) to: Option<DataType>,
    /// The byte offset (in an element) of its mask field, a `b1`.
    pub(crate) mask: Option<usize>,
}

/// One decoded column as the reader sees it before restoring.
pub(crate) struct Seen<'a> {
    pub(crate) name: &'a str,
    pub(crate) title: Option<&'a str>,
    /// The type its dtype maps to.
    pub(crate) data_type: &'a DataType,
    pub(crate) offset: usize,
}

/// What becomes of each column: `Err(())` for a mask folded into another column (dropped),
/// `Ok(Some(r))` for a restored one.
pub(crate) fn plan(cols: &[Seen<'_>]) -> Vec<std::result::Result<Option<Restore>, ()>> {
    let mut out: Vec<std::result::Result<Option<Restore>, ()>> = vec![Ok(None); cols.len()];
    for (j, c) in cols.iter().enumerate() {
        let Some(t) = c.title else { continue };
        match title::parse(t, c.name) {
            Some(Marker::Mask) if c.data_type == &DataType::Boolean => {
                let Some(base) = c.name.strip_suffix("_valid") else {
                    continue;
                };
                let Some(i) = cols.iter().position(|o| o.name == base) else {
                    continue;
                };
                if out[i]
                    .as_ref()
                    .is_ok_and(|r| r.as_ref().is_some_and(|r| r.mask.is_some()))
                {
                    continue;
                }
                out[j] = Err(());
                let mut r = out[i].clone().ok().flatten().unwrap_or(Restore {
                    to: None,
                    mask: None,
                });
                r.mask = Some(c.offset);
                out[i] = Ok(Some(r));
            }
            Some(Marker::Type(to)) if restorable(c.data_type, &to) => {
                if let Ok(slot) = &mut out[j] {
                    let r = slot.get_or_insert(Restore {
                        to: None,
                        mask: None,
                    });
                    r.to = (to != *c.data_type).then_some(to);
                }
            }
            _ => {}
        }
    }
    out
}

/// The field a restored column comes back with.
pub(crate) fn field(f: &Field, r: &Restore) -> Field {
    let mut meta = f.metadata().clone();
    if r.mask.is_some() {
        meta.insert(title::MASK_KEY.to_string(), title::mask_name(f.name()));
    }
    let dt = r.to.clone().unwrap_or_else(|| f.data_type().clone());
    Field::new(f.name(), dt, true).with_metadata(meta)
}

/// Whether a column of `from` (a dtype's default mapping) can come back as `to`.
pub(crate) fn restorable(from: &DataType, to: &DataType) -> bool {
    use DataType as D;
    if title::same_type(from, to) {
        return true;
    }
    match (from, to) {
        (_, D::Decimal32(..) | D::Decimal64(..) | D::Decimal128(..) | D::Decimal256(..)) => {
            decimal::readable(from)
        }
        (D::Float64, t) => t.is_integer(),
        (D::Duration(u), D::Time32(v)) => {
            u == v && matches!(u, TimeUnit::Second | TimeUnit::Millisecond)
        }
        (D::Duration(u), D::Time64(v)) => {
            u == v && matches!(u, TimeUnit::Microsecond | TimeUnit::Nanosecond)
        }
        (D::Timestamp(u, None), D::Timestamp(v, Some(_))) => u == v,
        (D::Timestamp(TimeUnit::Millisecond, None), D::Date64) => true,
        (D::Utf8, D::LargeUtf8) | (D::Binary, D::LargeBinary) => true,
        (D::FixedSizeList(f, _), D::List(g) | D::LargeList(g)) => {
            restorable(f.data_type(), g.data_type())
        }
        (D::FixedSizeList(f, n), D::FixedSizeList(g, m)) => {
            n == m && restorable(f.data_type(), g.data_type())
        }
        (D::Struct(a), D::Struct(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|(x, y)| x.name() == y.name() && restorable(x.data_type(), y.data_type()))
        }
        _ => false,
    }
}

/// The decoded column `a` restored per `r`, its nulls from `mask` (the decoded mask field) too.
pub(crate) fn apply(
    r: &Restore,
    a: ArrayRef,
    mask: Option<ArrayRef>,
    path: &str,
    first_row: u64,
) -> Result<ArrayRef> {
    let a = match &r.to {
        Some(to) => to_type(&a, to, path, first_row)?,
        None => a,
    };
    let Some(m) = mask else { return Ok(a) };
    let m = m.as_boolean();
    let valid = NullBuffer::new(m.values().clone());
    let nulls = NullBuffer::union(a.nulls(), Some(&valid));
    let data = a
        .to_data()
        .into_builder()
        .nulls(nulls)
        .build()
        .map_err(arrow_err)?;
    Ok(make_array(data))
}

/// `a` (of a type [`restorable`] to `to`) as `to`.
fn to_type(a: &ArrayRef, to: &DataType, path: &str, first_row: u64) -> Result<ArrayRef> {
    use DataType as D;
    let from = a.data_type();
    if from == to {
        return Ok(a.clone());
    }
    let nulls = a.nulls().cloned();
    Ok(match (from, to) {
        (_, D::Decimal32(..) | D::Decimal64(..) | D::Decimal128(..) | D::Decimal256(..)) => {
            decimal::read(a, to, path, first_row)?
        }
        (D::Float64, t) if t.is_integer() => ints(a, t, path, first_row)?,
        (D::Duration(_), D::Time32(TimeUnit::Second)) => {
            let v = time32(a, 86_400, path, first_row)?;
            Arc::new(Time32SecondArray::new(v.into(), nulls))
        }
        (D::Duration(_), D::Time32(_)) => {
            let v = time32(a, 86_400_000, path, first_row)?;
            Arc::new(Time32MillisecondArray::new(v.into(), nulls))
        }
        (D::Duration(TimeUnit::Microsecond), D::Time64(_)) => {
            let v = a.as_primitive::<DurationMicrosecondType>().values().clone();
            Arc::new(Time64MicrosecondArray::new(v, nulls))
        }
        (D::Duration(_), D::Time64(_)) => {
            let v = a.as_primitive::<DurationNanosecondType>().values().clone();
            Arc::new(Time64NanosecondArray::new(v, nulls))
        }
        (D::Timestamp(..), D::Timestamp(..)) | (D::Timestamp(..), D::Date64) => {
            let data = a
                .to_data()
                .into_builder()
                .data_type(to.clone())
                .build()
                .map_err(arrow_err)?;
            make_array(data)
        }
        (D::Utf8, D::LargeUtf8) => Arc::new(arrow_array::LargeStringArray::from_iter(
            a.as_string::<i32>().iter(),
        )),
        (D::Binary, D::LargeBinary) => Arc::new(arrow_array::LargeBinaryArray::from_iter(
            a.as_binary::<i32>().iter(),
        )),
        (D::FixedSizeList(_, n), D::List(g) | D::LargeList(g) | D::FixedSizeList(g, _)) => {
            let l = a.as_fixed_size_list();
            let values = to_type(l.values(), g.data_type(), path, first_row)?;
            let g = Arc::new(
                g.as_ref()
                    .clone()
                    .with_data_type(values.data_type().clone()),
            );
            let lens = std::iter::repeat_n(*n as usize, l.len());
            match to {
                D::List(_) => Arc::new(
                    GenericListArray::<i32>::try_new(
                        g,
                        OffsetBuffer::from_lengths(lens),
                        values,
                        nulls,
                    )
                    .map_err(arrow_err)?,
                ),
                D::LargeList(_) => Arc::new(
                    GenericListArray::<i64>::try_new(
                        g,
                        OffsetBuffer::from_lengths(lens),
                        values,
                        nulls,
                    )
                    .map_err(arrow_err)?,
                ),
                _ => Arc::new(
                    FixedSizeListArray::try_new_with_length(g, *n, values, nulls, l.len())
                        .map_err(arrow_err)?,
                ),
            }
        }
        (D::Struct(_), D::Struct(fs)) => {
            let s = a.as_struct();
            let mut cols = Vec::with_capacity(fs.len());
            for (c, f) in s.columns().iter().zip(fs.iter()) {
                cols.push(to_type(
                    c,
                    f.data_type(),
                    &format!("{path}.{}", f.name()),
                    first_row,
                )?);
            }
            let fields: Fields = fs
                .iter()
                .zip(&cols)
                .map(|(f, c)| {
                    let nullable = f.is_nullable() || c.null_count() > 0;
                    Arc::new(f.as_ref().clone().with_nullable(nullable))
                })
                .collect();
            Arc::new(StructArray::try_new(fields, cols, nulls).map_err(arrow_err)?)
        }
        _ => {
            return Err(Error::invalid_value(format!(
                "column `{path}` is {from}, which does not come back as {to}"
            )));
        }
    })
}

/// A time of day from a duration, checked to be within a day (`day` units).
fn time32(a: &ArrayRef, day: i64, path: &str, first_row: u64) -> Result<Vec<i32>> {
    let vals = match a.data_type() {
        DataType::Duration(TimeUnit::Second) => a.as_primitive::<DurationSecondType>().values(),
        _ => a.as_primitive::<DurationMillisecondType>().values(),
    };
    let mut out = Vec::with_capacity(vals.len());
    for (i, &x) in vals.iter().enumerate() {
        if a.is_valid(i) && !(0..day).contains(&x) {
            return Err(Error::invalid_value(format!(
                "column `{path}`, row {}: {x} is not a time of day",
                first_row + i as u64
            )));
        }
        out.push(x as i32);
    }
    Ok(out)
}

/// An integer column from doubles (the `nan` policy's): NaN is a null, any other value must be
/// a whole number of the type's range.
fn ints(a: &ArrayRef, to: &DataType, path: &str, first_row: u64) -> Result<ArrayRef> {
    let f = a.as_primitive::<Float64Type>();
    macro_rules! conv {
        ($t:ty, $n:ty) => {{
            let mut vals = Vec::with_capacity(f.len());
            let mut valid = Vec::with_capacity(f.len());
            for i in 0..f.len() {
                let x = f.value(i);
                if f.is_null(i) || x.is_nan() {
                    vals.push(0);
                    valid.push(false);
                    continue;
                }
                let v = (x.fract() == 0.0 && x >= <$n>::MIN as f64 && x <= <$n>::MAX as f64)
                    .then(|| x as $n)
                    .filter(|&v| v as f64 == x)
                    .ok_or_else(|| {
                        Error::invalid_value(format!(
                            "column `{path}`, row {}: {x} is not a value of {to}, the type its \
                             title names",
                            first_row + i as u64
                        ))
                    })?;
                vals.push(v);
                valid.push(true);
            }
            let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
            Arc::new(PrimitiveArray::<$t>::new(vals.into(), nulls)) as ArrayRef
        }};
    }
    Ok(match to {
        DataType::Int8 => conv!(Int8Type, i8),
        DataType::Int16 => conv!(Int16Type, i16),
        DataType::Int32 => conv!(Int32Type, i32),
        DataType::Int64 => conv!(Int64Type, i64),
        DataType::UInt8 => conv!(UInt8Type, u8),
        DataType::UInt16 => conv!(UInt16Type, u16),
        DataType::UInt32 => conv!(UInt32Type, u32),
        _ => conv!(UInt64Type, u64),
    })
}
