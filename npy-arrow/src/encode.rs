//! Column-wise encoding, the mirror of `decode.rs`: the values of one Arrow column scattered
//! into a run of C-order record bytes (per column: its offset, the byte swap, its width).

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit as ArrowUnit};

use super::decode::{At, Slots, NAT};
use super::schema::{Node, TimeTarget};
use npy_serde::dtype::Scalar;
use npy_serde::error::{Error, Result};
use npy_serde::text::{f64_to_x87, put_sbytes, put_ustr, put_x87};

/// How nulls are written.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Nulls {
    /// Write the dtype's placeholder (NaN, 0, false, empty) instead of failing: the null
    /// policy (`foreign`) chose what a null is, and left only placeholders to write.
    pub(crate) fill: bool,
}

/// Writes the values of `array` (one per position of `slots`) into `out`. `path` names the
/// column for errors.
pub(crate) fn encode(
    node: &Node,
    array: &ArrayRef,
    out: &mut [u8],
    slots: &Slots,
    at: &At,
    path: &str,
    nulls: Nulls,
) -> Result<()> {
    let n = slots.count();
    if array.len() != n {
        return Err(Error::write(format!(
            "column `{path}` has {} values where {n} were expected",
            array.len()
        )));
    }
    let null_at = |i: usize, pos: usize| -> Error {
        at.err(
            Error::write(format!(
                "value {i} of the batch is null, and NumPy's {} has no null (choose a null \
                 policy, nan, fill=VALUE or mask: BatchWriterBuilder::nulls / nulls_for, or \
                 `--nulls` in `npy convert`)",
                node_name(node)
            )),
            pos,
            path,
        )
    };
    let mismatch = || {
        Error::write(format!(
            "column `{path}` is {} but its NumPy dtype needs {}",
            array.data_type(),
            node.data_type()
        ))
    };
    // Nulls of nested values (structs, lists) are checked here; leaves check their own.
    let has_nulls = array.logical_null_count() > 0;
    let mut i = 0usize;
    match node {
        Node::Fixed { width, swap, dt } => {
            if array.data_type() != dt {
                return Err(mismatch());
            }
            let d = array.to_data();
            let w = *width;
            let src = &d.buffers()[0].as_slice()[d.offset() * w..][..n * w];
            slots.check(w, out.len())?;
            if !has_nulls {
                match w {
                    1 => scatter::<1>(src, out, slots, false),
                    2 => scatter::<2>(src, out, slots, *swap),
                    4 => scatter::<4>(src, out, slots, *swap),
                    _ => scatter::<8>(src, out, slots, *swap),
                };
                return Ok(());
            }
            let fill = nan_of(dt);
            slots.each(|p| {
                let dst = &mut out[p..p + w];
                if has_nulls && array.is_null(i) {
                    if !nulls.fill {
                        return Err(null_at(i, p));
                    }
                    dst.copy_from_slice(&fill[..w]);
                } else {
                    dst.copy_from_slice(&src[i * w..i * w + w]);
                }
                if *swap {
                    dst.reverse();
                }
                i += 1;
                Ok(())
            })?;
        }
        Node::Bool => {
            let a = array.as_boolean_opt().ok_or_else(mismatch)?;
            slots.check(1, out.len())?;
            slots.each(|p| {
                if has_nulls && a.is_null(i) && !nulls.fill {
                    return Err(null_at(i, p));
                }
                out[p] = u8::from(a.is_valid(i) && a.value(i));
                i += 1;
                Ok(())
            })?;
        }
        Node::LongDouble { big } => {
            let a = array
                .as_primitive_opt::<Float64Type>()
                .ok_or_else(mismatch)?;
            slots.check(16, out.len())?;
            slots.each(|p| {
                let v = if has_nulls && a.is_null(i) {
                    if !nulls.fill {
                        return Err(null_at(i, p));
                    }
                    f64::NAN
                } else {
                    a.value(i)
                };
                put_x87(&mut out[p..p + 16], f64_to_x87(v), *big);
                i += 1;
                Ok(())
            })?;
        }
        Node::Complex { part, half } => {
            let s = array.as_struct_opt().ok_or_else(mismatch)?;
            if s.num_columns() != 2 {
                return Err(mismatch());
            }
            check_nested_nulls(array, slots, at, path, nulls, &null_at)?;
            encode(part, s.column(0), out, slots, at, path, nulls)?;
            let im = Slots {
                base: slots.base + half,
                axes: slots.axes.clone(),
            };
            encode(part, s.column(1), out, &im, at, path, nulls)?;
        }
        Node::Bytes(w) => {
            slots.check(*w, out.len())?;
            let scalar = Scalar::Bytes(*w);
            let mut put = |p: usize, v: Option<&[u8]>, i: usize| -> Result<()> {
                match v {
                    Some(b) => put_sbytes(&mut out[p..p + w], b, scalar)
                        .map_err(|e| at.err(too_long(e), p, path)),
                    None if nulls.fill => {
                        out[p..p + w].fill(0);
                        Ok(())
                    }
                    None => Err(null_at(i, p)),
                }
            };
            for_each_bytes(array, slots, &mut put).ok_or_else(mismatch)??;
        }
        Node::Unicode { chars, big } => {
            let w = chars * 4;
            slots.check(w, out.len())?;
            let mut put = |p: usize, v: Option<&str>, i: usize| -> Result<()> {
                match v {
                    Some(s) => put_ustr(&mut out[p..p + w], s, *chars, *big)
                        .map_err(|e| at.err(too_long(e), p, path)),
                    None if nulls.fill => {
                        out[p..p + w].fill(0);
                        Ok(())
                    }
                    None => Err(null_at(i, p)),
                }
            };
            for_each_str(array, slots, &mut put).ok_or_else(mismatch)??;
        }
        Node::Void(w) => {
            let a = array.as_fixed_size_binary_opt().ok_or_else(mismatch)?;
            if a.value_length() as usize != *w {
                return Err(mismatch());
            }
            slots.check(*w, out.len())?;
            slots.each(|p| {
                if has_nulls && a.is_null(i) {
                    if !nulls.fill {
                        return Err(null_at(i, p));
                    }
                    out[p..p + w].fill(0);
                } else {
                    out[p..p + w].copy_from_slice(a.value(i));
                }
                i += 1;
                Ok(())
            })?;
        }
        Node::Time {
            big,
            factor,
            target,
        } => {
            let vals = time_values(array, *target).ok_or_else(mismatch)?;
            slots.check(8, out.len())?;
            slots.each(|p| {
                let count = if has_nulls && array.is_null(i) {
                    NAT
                } else {
                    let v = vals(i);
                    if v % factor != 0 || v / factor == NAT {
                        return Err(at.err(
                            Error::write(format!(
                                "{v} is not a whole number of the dtype's unit ({factor} of \
                                 the Arrow type's)"
                            )),
                            p,
                            path,
                        ));
                    }
                    v / factor
                };
                let b = if *big {
                    count.to_be_bytes()
                } else {
                    count.to_le_bytes()
                };
                out[p..p + 8].copy_from_slice(&b);
                i += 1;
                Ok(())
            })?;
        }
        Node::List {
            child, len, stride, ..
        } => {
            let a = array.as_fixed_size_list_opt().ok_or_else(mismatch)?;
            if a.value_length() as usize != *len {
                return Err(mismatch());
            }
            check_nested_nulls(array, slots, at, path, nulls, &null_at)?;
            let mut axes = slots.axes.clone();
            axes.push((*len, *stride));
            let inner = Slots {
                base: slots.base,
                axes,
            };
            encode(child, a.values(), out, &inner, at, path, nulls)?;
        }
        Node::Struct { fields, arrow } => {
            let s = array.as_struct_opt().ok_or_else(mismatch)?;
            check_nested_nulls(array, slots, at, path, nulls, &null_at)?;
            for ((off, f), af) in fields.iter().zip(arrow.iter()) {
                let col = s.column_by_name(af.name()).ok_or_else(|| {
                    Error::write(format!("column `{path}` has no field `{}`", af.name()))
                })?;
                let inner = Slots {
                    base: slots.base + off,
                    axes: slots.axes.clone(),
                };
                let p = format!("{path}.{}", af.name());
                encode(f, col, out, &inner, at, &p, nulls)?;
            }
        }
    }
    Ok(())
}

/// Copies `W`-byte values from `src` (consecutive) to the positions of `slots` in `out`
/// (checked by the caller), swapped if `swap`.
fn scatter<const W: usize>(src: &[u8], out: &mut [u8], slots: &Slots, swap: bool) {
    if swap {
        scatter_as::<W, true>(src, out, slots);
    } else {
        scatter_as::<W, false>(src, out, slots);
    }
}

/// [`scatter`] with the swap known at compile time: a value is one load and one store.
#[inline(always)]
fn scatter_as<const W: usize, const SWAP: bool>(src: &[u8], out: &mut [u8], slots: &Slots) {
    #[inline(always)]
    fn put<const W: usize, const SWAP: bool>(d: &mut [u8], v: &[u8]) {
        let mut v: [u8; W] = v.try_into().expect("W bytes");
        if SWAP {
            v.reverse();
        }
        d[..W].copy_from_slice(&v);
    }
    match slots.axes.as_slice() {
        // A column of a record: one value per row.
        [(n, s)] if *s >= W => {
            let dst = &mut out[slots.base..];
            for (d, v) in dst.chunks_mut(*s).zip(src.chunks_exact(W)).take(*n) {
                put::<W, SWAP>(d, v);
            }
        }
        // A subarray of a record: a run of values per row.
        [(n, s), (m, t)] if *t == W && *s >= m * W && *m > 0 => {
            let dst = &mut out[slots.base..];
            for (d, run) in dst.chunks_mut(*s).zip(src.chunks_exact(m * W)).take(*n) {
                if SWAP || m * W <= 64 {
                    // Value by value, inlined: a `memcpy` call per short run costs more.
                    for (d, v) in d[..m * W].chunks_exact_mut(W).zip(run.chunks_exact(W)) {
                        put::<W, SWAP>(d, v);
                    }
                } else {
                    d[..m * W].copy_from_slice(run);
                }
            }
        }
        _ => {
            let mut vals = src.chunks_exact(W);
            let _ = slots.each(|p| {
                if let Some(v) = vals.next() {
                    put::<W, SWAP>(&mut out[p..p + W], v);
                }
                Ok(())
            });
        }
    }
}

/// A null struct or list is an error unless nulls are filled (its values are then written as
/// they are in the child arrays).
fn check_nested_nulls(
    array: &ArrayRef,
    slots: &Slots,
    at: &At,
    path: &str,
    nulls: Nulls,
    null_at: &dyn Fn(usize, usize) -> Error,
) -> Result<()> {
    let _ = (at, path);
    if nulls.fill || array.logical_null_count() == 0 {
        return Ok(());
    }
    let mut i = 0;
    slots.each(|p| {
        if array.is_null(i) {
            return Err(null_at(i, p));
        }
        i += 1;
        Ok(())
    })
}

fn too_long(e: Error) -> Error {
    Error::write(format!(
        "{} (give the width with BatchWriterBuilder::string_width)",
        e.kind().to_string().trim_start_matches("cannot write: ")
    ))
}

/// The fill value of a float column (NaN) or zero.
fn nan_of(dt: &DataType) -> [u8; 8] {
    match dt {
        DataType::Float16 => {
            let mut b = [0u8; 8];
            b[..2].copy_from_slice(&0x7e00u16.to_ne_bytes());
            b
        }
        DataType::Float32 => {
            let mut b = [0u8; 8];
            b[..4].copy_from_slice(&f32::NAN.to_ne_bytes());
            b
        }
        DataType::Float64 => f64::NAN.to_ne_bytes(),
        _ => [0; 8],
    }
}

fn node_name(node: &Node) -> &'static str {
    match node {
        Node::Bool => "bool",
        Node::Fixed { dt, .. } if dt.is_floating() => "float",
        Node::Fixed { .. } => "integer",
        Node::LongDouble { .. } => "long double",
        Node::Complex { .. } => "complex",
        Node::Bytes(_) => "bytes (S)",
        Node::Unicode { .. } => "string (U)",
        Node::Void(_) => "void (V)",
        Node::Time { .. } => "datetime",
        Node::List { .. } => "subarray",
        Node::Struct { .. } => "record",
    }
}

/// The raw int64 (or Date32) values of a time column, if its type is one.
fn time_values(array: &ArrayRef, target: TimeTarget) -> Option<Box<dyn Fn(usize) -> i64 + '_>> {
    use arrow_array::types::*;
    macro_rules! p {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            Some(Box::new(move |i| a.value(i) as i64))
        }};
    }
    let ok = match (array.data_type(), target) {
        (DataType::Date32, TimeTarget::Date32) => true,
        (DataType::Timestamp(u, _), TimeTarget::Timestamp(t)) => *u == t,
        (DataType::Duration(u), TimeTarget::Duration(t)) => *u == t,
        (DataType::Int64, TimeTarget::Raw) => true,
        (DataType::Date64, TimeTarget::Timestamp(ArrowUnit::Millisecond)) => true,
        _ => false,
    };
    if !ok {
        return None;
    }
    match array.data_type() {
        DataType::Date32 => p!(Date32Type),
        DataType::Date64 => p!(Date64Type),
        DataType::Int64 => p!(Int64Type),
        DataType::Timestamp(ArrowUnit::Second, _) => p!(TimestampSecondType),
        DataType::Timestamp(ArrowUnit::Millisecond, _) => p!(TimestampMillisecondType),
        DataType::Timestamp(ArrowUnit::Microsecond, _) => p!(TimestampMicrosecondType),
        DataType::Timestamp(ArrowUnit::Nanosecond, _) => p!(TimestampNanosecondType),
        DataType::Duration(ArrowUnit::Second) => p!(DurationSecondType),
        DataType::Duration(ArrowUnit::Millisecond) => p!(DurationMillisecondType),
        DataType::Duration(ArrowUnit::Microsecond) => p!(DurationMicrosecondType),
        DataType::Duration(ArrowUnit::Nanosecond) => p!(DurationNanosecondType),
        _ => None,
    }
}

/// Writes one value (`None`: a null) at a position: `put(position, value, index)`.
type PutFn<'a, T> = dyn FnMut(usize, Option<&T>, usize) -> Result<()> + 'a;

/// Calls `put(position, value, index)` for every value of a binary (or string) column; `None`
/// if the column is neither.
fn for_each_bytes(
    array: &ArrayRef,
    slots: &Slots,
    put: &mut PutFn<'_, [u8]>,
) -> Option<Result<()>> {
    let mut i = 0;
    macro_rules! run {
        ($a:expr) => {{
            let a = $a;
            Some(slots.each(|p| {
                let v = a
                    .is_valid(i)
                    .then(|| <_ as AsRef<[u8]>>::as_ref(a.value(i)));
                put(p, v, i)?;
                i += 1;
                Ok(())
            }))
        }};
    }
    match array.data_type() {
        DataType::Binary => run!(array.as_binary::<i32>()),
        DataType::LargeBinary => run!(array.as_binary::<i64>()),
        DataType::BinaryView => run!(array.as_binary_view()),
        DataType::Utf8 => run!(array.as_string::<i32>()),
        DataType::LargeUtf8 => run!(array.as_string::<i64>()),
        DataType::Utf8View => run!(array.as_string_view()),
        _ => None,
    }
}

/// Calls `put(position, value, index)` for every value of a string column.
fn for_each_str(array: &ArrayRef, slots: &Slots, put: &mut PutFn<'_, str>) -> Option<Result<()>> {
    let mut i = 0;
    macro_rules! run {
        ($a:expr) => {{
            let a = $a;
            Some(slots.each(|p| {
                let v = a.is_valid(i).then(|| a.value(i));
                put(p, v, i)?;
                i += 1;
                Ok(())
            }))
        }};
    }
    match array.data_type() {
        DataType::Utf8 => run!(array.as_string::<i32>()),
        DataType::LargeUtf8 => run!(array.as_string::<i64>()),
        DataType::Utf8View => run!(array.as_string_view()),
        _ => None,
    }
}

/// The widest value of a string or binary column: characters for strings, bytes for binary.
pub(crate) fn widest(array: &ArrayRef) -> usize {
    let strs = |it: &mut dyn Iterator<Item = Option<&str>>| {
        it.flatten().map(|s| s.chars().count()).max().unwrap_or(0)
    };
    let bins = |it: &mut dyn Iterator<Item = Option<&[u8]>>| {
        it.flatten().map(|s| s.len()).max().unwrap_or(0)
    };
    match array.data_type() {
        DataType::Utf8 => strs(&mut array.as_string::<i32>().iter()),
        DataType::LargeUtf8 => strs(&mut array.as_string::<i64>().iter()),
        DataType::Utf8View => strs(&mut array.as_string_view().iter()),
        DataType::Binary => bins(&mut array.as_binary::<i32>().iter()),
        DataType::LargeBinary => bins(&mut array.as_binary::<i64>().iter()),
        DataType::BinaryView => bins(&mut array.as_binary_view().iter()),
        DataType::FixedSizeList(..) => widest(array.as_fixed_size_list().values()),
        _ => 0,
    }
}
