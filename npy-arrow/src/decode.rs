//! Column-wise decoding: the values of one column, gathered straight from a run of C-order
//! record bytes into Arrow buffers (per column: its offset, the byte swap, its width), without
//! serde and without a per-value dispatch.
//!
//! Positions are a base offset and axes of (count, stride): the rows of a batch, then one axis
//! per subarray dimension. Every position plus the value width is checked to lie in the bytes
//! before the first read ([`Slots::check`]).

use std::sync::Arc;

use arrow_array::types::{
    Date32Type, DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType,
    DurationSecondType, Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, FixedSizeBinaryArray,
    FixedSizeListArray, PrimitiveArray, StringArray, StructArray,
};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::{DataType, TimeUnit as ArrowUnit};
use bytemuck::Pod;

use super::schema::{complex_fields, Node, TimeTarget};
use npy_serde::error::{Error, Result};
use npy_serde::text::{longdouble_to_f64, strip_nuls};

/// Where the chunk sits, for error positions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At {
    /// Logical index of the chunk's first element.
    pub(crate) first_elem: u64,
    /// Bytes per element.
    pub(crate) itemsize: usize,
    /// Stream offset of the chunk's first byte, when the chunk is the stored bytes (not a
    /// Fortran-order gather).
    pub(crate) offset: Option<u64>,
}

impl At {
    #[cold]
    pub(crate) fn err(&self, e: Error, pos: usize, path: &str) -> Error {
        let mut e = e.in_field(path);
        if let Some(k) = pos.checked_div(self.itemsize) {
            e = e.at_record(self.first_elem + k as u64);
        }
        if let Some(o) = self.offset {
            e = e.at_byte(o + pos as u64);
        }
        e
    }
}

/// Value positions: `base`, then nested axes of (count, stride), outermost first.
#[derive(Clone, Debug)]
pub(crate) struct Slots {
    pub(crate) base: usize,
    pub(crate) axes: Vec<(usize, usize)>,
}

impl Slots {
    pub(crate) fn count(&self) -> usize {
        self.axes.iter().map(|a| a.0).product()
    }

    fn shifted(&self, by: usize) -> Slots {
        Slots {
            base: self.base + by,
            axes: self.axes.clone(),
        }
    }

    fn with_axis(&self, count: usize, stride: usize) -> Slots {
        let mut axes = self.axes.clone();
        axes.push((count, stride));
        Slots {
            base: self.base,
            axes,
        }
    }

    /// Checks that every position plus `width` bytes lies inside `len` bytes.
    pub(crate) fn check(&self, width: usize, len: usize) -> Result<()> {
        if self.count() == 0 {
            return Ok(());
        }
        let last = self
            .axes
            .iter()
            .try_fold(self.base, |acc, &(n, s)| {
                acc.checked_add((n - 1).checked_mul(s)?)
            })
            .and_then(|p| p.checked_add(width));
        match last {
            Some(end) if end <= len => Ok(()),
            _ => Err(Error::eof(
                "a batch's record bytes",
                width as u64,
                len as u64,
            )),
        }
    }

    /// Calls `f` with every position, in order.
    #[inline]
    pub(crate) fn each(&self, mut f: impl FnMut(usize) -> Result<()>) -> Result<()> {
        match self.axes.as_slice() {
            [] => f(self.base),
            [(n, s)] => (0..*n).try_for_each(|i| f(self.base + i * s)),
            [(n, s), (m, t)] => (0..*n).try_for_each(|i| {
                let b = self.base + i * s;
                (0..*m).try_for_each(|j| f(b + j * t))
            }),
            axes => each_dyn(self.base, axes, &mut f),
        }
    }
}

/// [`Slots::each`] for three axes and more.
fn each_dyn(
    base: usize,
    axes: &[(usize, usize)],
    f: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<()> {
    match axes {
        [] => f(base),
        [(n, s), rest @ ..] => (0..*n).try_for_each(|i| each_dyn(base + i * s, rest, f)),
    }
}

/// Byte swapping for the unsigned integer of each width, and its [`Raw`] variant.
pub(crate) trait Swap: Pod + ArrowNativeType {
    fn swap(self) -> Self;
    /// The values, if `raw` holds values of this width.
    fn of_raw(raw: Raw) -> Option<Vec<Self>>;
}
macro_rules! swap_impl {
    ($($t:ty => $v:ident),*) => {$(
        impl Swap for $t {
            #[inline(always)]
            fn swap(self) -> Self { self.swap_bytes() }
            fn of_raw(raw: Raw) -> Option<Vec<Self>> {
                match raw {
                    Raw::$v(v) => Some(v),
                    _ => None,
                }
            }
        }
    )*};
}
swap_impl!(u8 => U8, u16 => U16, u32 => U32, u64 => U64);

/// The values of one fixed-width leaf of a column (a number, bool byte or datetime count at
/// each of its positions), gathered ahead of [`decode_gathered`].
#[derive(Debug)]
pub(crate) enum Raw {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

impl Raw {
    /// Room for `n` values `width` bytes wide (1, 2, 4 or 8).
    fn with_capacity(width: usize, n: usize) -> Raw {
        match width {
            1 => Raw::U8(Vec::with_capacity(n)),
            2 => Raw::U16(Vec::with_capacity(n)),
            4 => Raw::U32(Vec::with_capacity(n)),
            _ => Raw::U64(Vec::with_capacity(n)),
        }
    }

    /// Appends the values at `slots`.
    fn append(&mut self, chunk: &[u8], slots: &Slots, swap: bool) -> Result<()> {
        match self {
            Raw::U8(v) => gather_append(v, chunk, slots, false),
            Raw::U16(v) => gather_append(v, chunk, slots, swap),
            Raw::U32(v) => gather_append(v, chunk, slots, swap),
            Raw::U64(v) => gather_append(v, chunk, slots, swap),
        }
    }
}

/// A fixed-width leaf of a column: its values' width and byte swap, and their positions in a
/// batch (rows first, then any subarray axes).
#[derive(Clone, Debug)]
pub(crate) struct Leaf {
    width: usize,
    swap: bool,
    slots: Slots,
}

impl Leaf {
    /// The leaf's bytes in one row.
    #[cfg(feature = "parallel")]
    fn row_bytes(&self) -> usize {
        self.width * self.slots.axes[1..].iter().map(|a| a.0).product::<usize>()
    }
}

/// Appends the fixed-width leaves of `node` at `slots`, in the order [`decode_gathered`] takes
/// their values; false (with some leaves maybe appended) if a part of the node is decoded
/// otherwise (strings, bytes, long doubles): then the whole column is decoded on its own.
pub(crate) fn leaves(node: &Node, slots: &Slots, out: &mut Vec<Leaf>) -> bool {
    let mut leaf = |width, swap| {
        out.push(Leaf {
            width,
            swap,
            slots: slots.clone(),
        });
        true
    };
    match node {
        Node::Fixed { width, swap, .. } => leaf(*width, *swap),
        Node::Bool => leaf(1, false),
        Node::Time { big, .. } => leaf(8, *big != cfg!(target_endian = "big")),
        Node::Complex { part, half } => {
            leaves(part, slots, out) && leaves(part, &slots.shifted(*half), out)
        }
        Node::List {
            child, len, stride, ..
        } => leaves(child, &slots.with_axis(*len, *stride), out),
        Node::Struct { fields, .. } => fields
            .iter()
            .all(|(off, f)| leaves(f, &slots.shifted(*off), out)),
        Node::LongDouble { .. } | Node::Bytes(_) | Node::Unicode { .. } | Node::Void(_) => false,
    }
}

/// Record bytes per tile: a batch's fixed-width leaves are gathered a tile of rows at a time,
/// every leaf from the same tile while it is in the L1 cache. Gathering each column over the
/// whole batch instead read the batch's bytes from L2 or memory once per column.
const TILE_BYTES: usize = 16 << 10;

/// The values of `leaves` (positions in a batch of `rows` rows of `row_bytes` each, the first
/// axis of every leaf being the rows), gathered tile by tile. When `parallel`, the leaves are
/// split into groups of about the same bytes per row, one per core, each group gathered tile
/// by tile on its own.
pub(crate) fn gather_leaves(
    leaves: &[Leaf],
    chunk: &[u8],
    rows: usize,
    row_bytes: usize,
    parallel: bool,
) -> Result<Vec<Raw>> {
    let tile = (TILE_BYTES / row_bytes.max(1)).max(1);
    #[cfg(feature = "parallel")]
    if parallel && leaves.len() > 1 {
        use rayon::prelude::*;
        let cores = rayon::current_num_threads().min(leaves.len());
        // Largest first, each to the group with the fewest bytes per row so far.
        let mut order: Vec<usize> = (0..leaves.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(leaves[k].row_bytes()));
        let mut groups: Vec<(usize, Vec<usize>)> = vec![(0, Vec::new()); cores];
        for k in order {
            let g = groups
                .iter_mut()
                .min_by_key(|g| g.0)
                .expect("at least one group");
            g.0 += leaves[k].row_bytes();
            g.1.push(k);
        }
        let done: Vec<Vec<(usize, Raw)>> = groups
            .into_par_iter()
            .map(|(_, group)| {
                let mine: Vec<&Leaf> = group.iter().map(|&k| &leaves[k]).collect();
                let raws = tiles(&mine, chunk, rows, tile, row_bytes)?;
                Ok(group.into_iter().zip(raws).collect())
            })
            .collect::<Result<_>>()?;
        let mut all: Vec<(usize, Raw)> = done.into_iter().flatten().collect();
        all.sort_by_key(|(k, _)| *k);
        return Ok(all.into_iter().map(|(_, r)| r).collect());
    }
    let _ = parallel;
    let all: Vec<&Leaf> = leaves.iter().collect();
    tiles(&all, chunk, rows, tile, row_bytes)
}

/// The values of `leaves` in a batch of `rows` rows, gathered `tile` rows at a time.
fn tiles(
    leaves: &[&Leaf],
    chunk: &[u8],
    rows: usize,
    tile: usize,
    row_bytes: usize,
) -> Result<Vec<Raw>> {
    let mut raws: Vec<Raw> = leaves
        .iter()
        .map(|l| Raw::with_capacity(l.width, l.slots.count()))
        .collect();
    let mut slots: Vec<Slots> = leaves.iter().map(|l| l.slots.clone()).collect();
    let mut r = 0;
    while r < rows {
        let t = tile.min(rows - r);
        for ((leaf, s), raw) in leaves.iter().zip(&mut slots).zip(&mut raws) {
            s.base = leaf.slots.base + r * row_bytes;
            s.axes[0].0 = t;
            raw.append(chunk, s, leaf.swap)?;
        }
        r += t;
    }
    Ok(raws)
}

/// The values of the next leaf: gathered ahead (`pre`), or now.
fn take<U: Swap>(pre: &mut Pre, chunk: &[u8], slots: &Slots, swap: bool) -> Result<Vec<U>> {
    match pre.next() {
        Some(raw) => U::of_raw(raw)
            .ok_or_else(|| Error::invalid_value("internal: a gathered leaf of another width")),
        None => gather(chunk, slots, swap),
    }
}

/// The values gathered ahead for a column's leaves, in order (see [`leaves`]).
pub(crate) type Pre = std::vec::IntoIter<Raw>;

/// The `U` values at every position, as read (swapped when `swap`).
fn gather<U: Swap>(chunk: &[u8], slots: &Slots, swap: bool) -> Result<Vec<U>> {
    let mut out = Vec::with_capacity(slots.count());
    gather_append(&mut out, chunk, slots, swap)?;
    Ok(out)
}

/// Appends the `U` values at every position of `slots` to `out`, as read (swapped when
/// `swap`).
fn gather_append<U: Swap>(out: &mut Vec<U>, chunk: &[u8], slots: &Slots, swap: bool) -> Result<()> {
    let w = std::mem::size_of::<U>();
    slots.check(w, chunk.len())?;
    match slots.axes.as_slice() {
        // Values one after another: one copy of their bytes.
        [(n, s)] if *s == w && *n > 0 && !swap => {
            let bytes = &chunk[slots.base..slots.base + n * w];
            let start = out.len();
            out.resize(start + n, U::zeroed());
            bytemuck::cast_slice_mut::<U, u8>(&mut out[start..]).copy_from_slice(bytes);
            Ok(())
        }
        [(n, s)] if *s >= w && *n > 0 => {
            let src = chunk[slots.base..].chunks(*s).take(*n);
            if swap {
                out.extend(src.map(|c| bytemuck::pod_read_unaligned::<U>(&c[..w]).swap()));
            } else {
                out.extend(src.map(|c| bytemuck::pod_read_unaligned::<U>(&c[..w])));
            }
            Ok(())
        }
        _ => {
            let start = out.len();
            out.resize(start + slots.count(), U::zeroed());
            gather_into(&mut out[start..], chunk, slots, swap)
        }
    }
}

/// The `U` values at every position of `slots` (as many as `out` holds; checked to lie in
/// `chunk`), as read (swapped when `swap`), into `out`.
fn gather_into<U: Swap>(out: &mut [U], chunk: &[u8], slots: &Slots, swap: bool) -> Result<()> {
    let w = std::mem::size_of::<U>();
    debug_assert_eq!(out.len(), slots.count());
    match slots.axes.as_slice() {
        // Rows of contiguous subarray items (`v: ('<f4', (3,))` of a record): a short run
        // (a few values) value by value, inlined (a `memcpy` call per row costs more than the
        // copy); a long one copied per row. Then one swap pass.
        [(n, s), (m, t)] if *t == w && *n > 0 && *m > 0 && *s >= m * w => {
            let run = m * w;
            let src = &chunk[slots.base..];
            if run <= 64 {
                match m {
                    2 => runs_of::<U, 2>(out, src, *s),
                    3 => runs_of::<U, 3>(out, src, *s),
                    4 => runs_of::<U, 4>(out, src, *s),
                    _ => {
                        for (d, c) in out.chunks_exact_mut(*m).zip(src.chunks(*s)) {
                            for (v, b) in d.iter_mut().zip(c[..run].chunks_exact(w)) {
                                *v = bytemuck::pod_read_unaligned::<U>(b);
                            }
                        }
                    }
                }
            } else {
                let dst: &mut [u8] = bytemuck::cast_slice_mut(out);
                for (d, c) in dst.chunks_exact_mut(run).zip(src.chunks(*s)) {
                    d.copy_from_slice(&c[..run]);
                }
            }
            if swap {
                out.iter_mut().for_each(|v| *v = v.swap());
            }
        }
        _ => {
            let mut dst = out.iter_mut();
            slots.each(|p| {
                let v = bytemuck::pod_read_unaligned::<U>(&chunk[p..p + w]);
                if let Some(d) = dst.next() {
                    *d = if swap { v.swap() } else { v };
                }
                Ok(())
            })?
        }
    }
    Ok(())
}

/// Rows of `M` contiguous values (a short subarray) from rows `stride` bytes apart into `out`
/// (`M` values per row), with the run length known at compile time: no loop per row.
#[inline(always)]
fn runs_of<U: Swap, const M: usize>(out: &mut [U], src: &[u8], stride: usize) {
    let w = std::mem::size_of::<U>();
    for (d, c) in out.chunks_exact_mut(M).zip(src.chunks(stride)) {
        let c = &c[..M * w];
        for k in 0..M {
            d[k] = bytemuck::pod_read_unaligned::<U>(&c[k * w..(k + 1) * w]);
        }
    }
}

fn prim<T: ArrowPrimitiveType, U: ArrowNativeType>(
    v: Vec<U>,
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    let n = v.len();
    Arc::new(PrimitiveArray::<T>::new(
        ScalarBuffer::new(Buffer::from_vec(v), 0, n),
        nulls,
    ))
}

/// The Arrow array of same-width values `v` (the bytes of `dt`'s native type).
pub fn fixed_array(dt: &DataType, buf: Buffer, n: usize) -> ArrayRef {
    macro_rules! p {
        ($t:ty) => {
            Arc::new(PrimitiveArray::<$t>::new(
                ScalarBuffer::new(buf, 0, n),
                None,
            ))
        };
    }
    match dt {
        DataType::Int8 => p!(Int8Type),
        DataType::Int16 => p!(Int16Type),
        DataType::Int32 => p!(Int32Type),
        DataType::Int64 => p!(Int64Type),
        DataType::UInt8 => p!(UInt8Type),
        DataType::UInt16 => p!(UInt16Type),
        DataType::UInt32 => p!(UInt32Type),
        DataType::UInt64 => p!(UInt64Type),
        DataType::Float16 => p!(Float16Type),
        DataType::Float32 => p!(Float32Type),
        _ => p!(Float64Type),
    }
}

/// Decodes the values of `node` at `slots` of `chunk`, taking the values of its fixed-width
/// leaves from `pre` (gathered ahead by [`gather_leaves`], in [`leaves`]' order) while it has
/// any, and gathering the others here. `path` names the column (errors).
pub(crate) fn decode_gathered(
    node: &Node,
    chunk: &[u8],
    slots: &Slots,
    at: &At,
    path: &str,
    pre: &mut Pre,
) -> Result<ArrayRef> {
    let n = slots.count();
    Ok(match node {
        Node::Fixed { width, swap, dt } => {
            let buf = match width {
                1 => Buffer::from_vec(take::<u8>(pre, chunk, slots, false)?),
                2 => Buffer::from_vec(take::<u16>(pre, chunk, slots, *swap)?),
                4 => Buffer::from_vec(take::<u32>(pre, chunk, slots, *swap)?),
                _ => Buffer::from_vec(take::<u64>(pre, chunk, slots, *swap)?),
            };
            fixed_array(dt, buf, n)
        }
        Node::Bool => {
            let bytes = take::<u8>(pre, chunk, slots, false)?;
            if let Some(i) = bytes.iter().position(|&b| b > 1) {
                let pos = nth_pos(slots, i);
                return Err(at.err(
                    Error::invalid_value(format!("bool byte {} is neither 0 nor 1", bytes[i])),
                    pos,
                    path,
                ));
            }
            let bits = BooleanBuffer::collect_bool(n, |i| bytes[i] == 1);
            Arc::new(BooleanArray::new(bits, None))
        }
        Node::LongDouble { big } => {
            slots.check(16, chunk.len())?;
            let mut out: Vec<f64> = Vec::with_capacity(n);
            slots.each(|p| {
                let mut b: [u8; 16] = chunk[p..p + 16].try_into().expect("16 bytes");
                if *big {
                    b.reverse();
                }
                out.push(longdouble_to_f64(b));
                Ok(())
            })?;
            prim::<Float64Type, f64>(out, None)
        }
        Node::Complex { part, half } => {
            let re = decode_gathered(part, chunk, slots, at, path, pre)?;
            let im = decode_gathered(part, chunk, &slots.shifted(*half), at, path, pre)?;
            Arc::new(
                StructArray::try_new_with_length(
                    complex_fields(part.data_type()),
                    vec![re, im],
                    None,
                    n,
                )
                .map_err(arrow_err)?,
            )
        }
        Node::Bytes(w) => {
            slots.check(*w, chunk.len())?;
            let mut offsets: Vec<i32> = Vec::with_capacity(n + 1);
            let mut values: Vec<u8> = Vec::new();
            offsets.push(0);
            let mut total = 0usize;
            slots.each(|p| {
                let s = &chunk[p..p + w];
                let s = &s[..strip_nuls(s)];
                values.extend_from_slice(s);
                total += s.len();
                offsets.push(offset_i32(total)?);
                Ok(())
            })?;
            Arc::new(BinaryArray::new(
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Buffer::from_vec(values),
                None,
            ))
        }
        Node::Unicode { chars, big } => {
            let w = chars * 4;
            slots.check(w, chunk.len())?;
            if let [(n, s)] = slots.axes.as_slice()
                && *s == w
                && *n > 0
            {
                // In `chunk`: checked above.
                let run = &chunk[slots.base..slots.base + n * w];
                if let Some(a) = ascii_run(run, *chars, *big)? {
                    return Ok(a);
                }
            }
            let mut offsets: Vec<i32> = Vec::with_capacity(n + 1);
            let mut values: Vec<u8> = Vec::with_capacity(n * (*chars).min(16));
            offsets.push(0);
            slots.each(|p| {
                ucs4_into(&chunk[p..p + w], *big, &mut values)
                    .map_err(|(i, u)| at.err(bad_code_point(u, i), p + 4 * i, path))?;
                offsets.push(offset_i32(values.len())?);
                Ok(())
            })?;
            // Valid UTF-8: every value was encoded from `char`s.
            Arc::new(StringArray::new(
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Buffer::from_vec(values),
                None,
            ))
        }
        Node::Void(w) => {
            slots.check(*w, chunk.len())?;
            let mut values: Vec<u8> = Vec::with_capacity(n * w);
            slots.each(|p| {
                values.extend_from_slice(&chunk[p..p + w]);
                Ok(())
            })?;
            Arc::new(
                FixedSizeBinaryArray::try_new_with_len(
                    *w as i32,
                    Buffer::from_vec(values),
                    None,
                    n,
                )
                .map_err(arrow_err)?,
            )
        }
        Node::Time {
            big,
            factor,
            target,
        } => {
            let raw = take::<u64>(pre, chunk, slots, *big != cfg!(target_endian = "big"))?;
            time_array(raw, *factor, *target, slots, at, path)?
        }
        Node::List {
            child,
            len,
            stride,
            item,
        } => {
            let values =
                decode_gathered(child, chunk, &slots.with_axis(*len, *stride), at, path, pre)?;
            Arc::new(
                FixedSizeListArray::try_new_with_length(item.clone(), *len as i32, values, None, n)
                    .map_err(arrow_err)?,
            )
        }
        Node::Struct { fields, arrow } => {
            let mut children = Vec::with_capacity(fields.len());
            for ((off, f), af) in fields.iter().zip(arrow.iter()) {
                let p = format!("{path}.{}", af.name());
                children.push(decode_gathered(
                    f,
                    chunk,
                    &slots.shifted(*off),
                    at,
                    &p,
                    pre,
                )?);
            }
            Arc::new(
                StructArray::try_new_with_length(arrow.clone(), children, None, n)
                    .map_err(arrow_err)?,
            )
        }
    })
}

/// The `i`-th position of `slots`.
fn nth_pos(slots: &Slots, mut i: usize) -> usize {
    let mut p = slots.base;
    let mut left = slots.count();
    for &(n, s) in &slots.axes {
        left /= n.max(1);
        let k = i / left.max(1);
        i %= left.max(1);
        p += k * s;
    }
    p
}

fn offset_i32(n: usize) -> Result<i32> {
    i32::try_from(n).map_err(|_| {
        Error::limit(
            "the string bytes of one batch column (use a smaller batch size)",
            i32::MAX as u64,
            n as u64,
        )
    })
}

fn bad_code_point(u: u32, i: usize) -> Error {
    Error::invalid_value(format!(
        "U+{u:X} is not a Unicode code point (at character {i})"
    ))
}

/// Appends the UTF-8 of a `U` value (UCS-4 in the given order, trailing NULs stripped); an
/// invalid code point is `Err((character index, code unit))`.
#[inline]
fn ucs4_into(bytes: &[u8], big: bool, out: &mut Vec<u8>) -> std::result::Result<(), (usize, u32)> {
    let value = &bytes[..bytes.len() / 4 * 4];
    // ASCII, the common case: every unit below 0x80 (one OR over the value), so each is its
    // low byte (its first little-endian, its last big-endian) and a NUL unit a zero byte:
    // the low bytes are appended and their trailing zeros cut (all three loops vectorise).
    let high = if big {
        0xFFFF_FF80u32.to_be()
    } else {
        0xFFFF_FF80u32.to_le()
    };
    let any = value.chunks_exact(4).fold(0u32, |a, c| {
        a | u32::from_ne_bytes([c[0], c[1], c[2], c[3]])
    });
    if any & high == 0 {
        let start = out.len();
        if big {
            out.extend(value.chunks_exact(4).map(|c| c[3]));
        } else {
            out.extend(value.chunks_exact(4).map(|c| c[0]));
        }
        let kept = without_trailing_zeros(&out[start..]);
        out.truncate(start + kept);
        return Ok(());
    }
    let n = value
        .chunks_exact(4)
        .rposition(|c| c != [0, 0, 0, 0])
        .map_or(0, |i| i + 1);
    for (i, c) in value[..n * 4].chunks_exact(4).enumerate() {
        let a = [c[0], c[1], c[2], c[3]];
        let u = if big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        };
        if u < 0x80 {
            out.push(u as u8);
        } else {
            let ch = char::from_u32(u).ok_or((i, u))?;
            let mut b = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
        }
    }
    Ok(())
}

/// The `U<chars>` values that lie one after another in `bytes`, as strings, when all are
/// ASCII (`None` otherwise): the low byte of each code unit taken (one vectorised pass),
/// then each value's trailing NULs cut; when no value has a NUL, the bytes taken are the
/// strings' bytes as they are.
fn ascii_run(bytes: &[u8], chars: usize, big: bool) -> Result<Option<ArrayRef>> {
    if chars == 0 {
        // `U0`: empty strings, which the general path makes.
        return Ok(None);
    }
    let high = if big {
        0xFFFF_FF80u32.to_be()
    } else {
        0xFFFF_FF80u32.to_le()
    };
    // A block of units at a time: their OR, then their low bytes, while they are in the cache.
    let mut low: Vec<u8> = Vec::with_capacity(bytes.len() / 4);
    for block in bytes.chunks(1024) {
        let any = (block.chunks_exact(4)).fold(0u32, |a, c| {
            a | u32::from_ne_bytes([c[0], c[1], c[2], c[3]])
        });
        if any & high != 0 {
            return Ok(None);
        }
        if big {
            low.extend(block.chunks_exact(4).map(|c| c[3]));
        } else {
            low.extend(block.chunks_exact(4).map(|c| c[0]));
        }
    }
    let n = low.len() / chars;
    offset_i32(low.len())?;
    let (offsets, values): (Vec<i32>, Vec<u8>) = if !low.contains(&0) {
        // Every value `chars` characters: the offsets are multiples of it (fit: checked above).
        let offsets = (0..=n).map(|i| (i * chars) as i32).collect();
        (offsets, low)
    } else {
        let mut offsets = Vec::with_capacity(n + 1);
        let mut values = Vec::with_capacity(low.len());
        offsets.push(0);
        for v in low.chunks_exact(chars) {
            values.extend_from_slice(&v[..without_trailing_zeros(v)]);
            offsets.push(values.len() as i32);
        }
        (offsets, values)
    };
    // Valid UTF-8: ASCII.
    Ok(Some(Arc::new(StringArray::new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Buffer::from_vec(values),
        None,
    ))))
}

/// The length of `b` without its trailing zero bytes (eight at a time).
#[inline]
fn without_trailing_zeros(b: &[u8]) -> usize {
    let mut n = b.len();
    while n >= 8 {
        let word = u64::from_le_bytes(b[n - 8..n].try_into().expect("8 bytes"));
        if word != 0 {
            return n - (word.leading_zeros() / 8) as usize;
        }
        n -= 8;
    }
    b[..n].iter().rposition(|&x| x != 0).map_or(0, |i| i + 1)
}

/// NumPy's NaT.
pub(crate) const NAT: i64 = i64::MIN;

fn time_array(
    raw: Vec<u64>,
    factor: i64,
    target: TimeTarget,
    slots: &Slots,
    at: &At,
    path: &str,
) -> Result<ArrayRef> {
    let n = raw.len();
    if factor == 1 && target == TimeTarget::Date32 {
        // Days to days, the common case (`datetime64[D]`): each fits 32 bits and none is
        // NaT (which does not fit); both loops vectorise. Otherwise the general path below
        // finds the NaTs and names the value that does not fit.
        let days: Vec<i32> = raw.iter().map(|&u| u as i32).collect();
        let exact =
            (raw.iter().zip(&days)).fold(true, |ok, (&u, &d)| ok & (i64::from(d) == u as i64));
        if exact {
            return Ok(prim::<Date32Type, i32>(days, None));
        }
    }
    let mut vals: Vec<i64> = raw.into_iter().map(|u| u as i64).collect();
    let has_nat = vals.contains(&NAT);
    let nulls = has_nat.then(|| NullBuffer::from_iter(vals.iter().map(|&v| v != NAT)));
    let overflow = |i: usize, v: i64| {
        at.err(
            Error::invalid_value(format!(
                "the datetime count {v} times {factor} does not fit {}",
                if target == TimeTarget::Date32 {
                    "Arrow's Date32 (32-bit days)"
                } else {
                    "a 64-bit Arrow time value"
                }
            )),
            nth_pos(slots, i),
            path,
        )
    };
    if factor != 1 {
        for (i, v) in vals.iter_mut().enumerate() {
            if *v != NAT {
                *v = v.checked_mul(factor).ok_or_else(|| overflow(i, *v))?;
                if *v == NAT {
                    return Err(overflow(i, *v / factor));
                }
            } else {
                *v = 0;
            }
        }
    } else if has_nat {
        vals.iter_mut().filter(|v| **v == NAT).for_each(|v| *v = 0);
    }
    Ok(match target {
        TimeTarget::Date32 => {
            let mut days: Vec<i32> = Vec::with_capacity(n);
            for (i, &v) in vals.iter().enumerate() {
                days.push(i32::try_from(v).map_err(|_| overflow(i, v / factor))?);
            }
            prim::<Date32Type, i32>(days, nulls)
        }
        TimeTarget::Timestamp(u) => match u {
            ArrowUnit::Second => prim::<TimestampSecondType, i64>(vals, nulls),
            ArrowUnit::Millisecond => prim::<TimestampMillisecondType, i64>(vals, nulls),
            ArrowUnit::Microsecond => prim::<TimestampMicrosecondType, i64>(vals, nulls),
            ArrowUnit::Nanosecond => prim::<TimestampNanosecondType, i64>(vals, nulls),
        },
        TimeTarget::Duration(u) => match u {
            ArrowUnit::Second => prim::<DurationSecondType, i64>(vals, nulls),
            ArrowUnit::Millisecond => prim::<DurationMillisecondType, i64>(vals, nulls),
            ArrowUnit::Microsecond => prim::<DurationMicrosecondType, i64>(vals, nulls),
            ArrowUnit::Nanosecond => prim::<DurationNanosecondType, i64>(vals, nulls),
        },
        TimeTarget::Raw => prim::<Int64Type, i64>(vals, nulls),
    })
}

/// An Arrow error (from building an array whose parts this module made consistent) as this
/// crate's error.
pub fn arrow_err(e: arrow_schema::ArrowError) -> Error {
    Error::invalid_value(format!("Arrow: {e}"))
}

#[cfg(test)]
mod tests;
