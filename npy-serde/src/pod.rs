//! When a type's memory *is* the file's bytes: the one place that decides it, and the casts
//! that rely on it.
//!
//! A type qualifies ("plain data") when its in-memory representation is exactly the element
//! bytes of its dtype in native byte order: every value of its
//! [`LAYOUT`](crate::NpyRecord::LAYOUT) sits at its offset as the Rust type of its kind, and
//! the other bytes are padding. [`NpyRecord::POD`] carries the proof,
//! a [`Pod<T>`] token, which only these can make:
//!
//! - `bool`, the integers, `f32` and `f64`, and `[T; N]` of qualifying types (in this crate,
//!   through [`Pod::of_bytemuck`], which needs `bytemuck::Pod` and checks the size, or from
//!   the item's token);
//! - `#[derive(NpyRecord)]` on a `#[repr(C)]` struct whose fields all qualify: the derive
//!   compares Rust's `size_of` and every field's `offset_of!` with the dtype's at compile time.
//!   NumPy's default record layout (no padding, `np.dtype([...])`) is `#[repr(C, packed)]`;
//!   its `align=True` layout is `#[repr(C)]` with `#[npy(align)]`. A `#[repr(C)]` struct
//!   whose dtype has another layout (the default packed dtype with an `f64` after a `u8`,
//!   say) fails to compile: add `#[npy(align)]`, make it `packed`, or drop `#[repr(C)]`.
//!   Fields of a packed struct are read by copy (`{ row.x }`): Rust refuses references to
//!   them, since they may be unaligned. A struct with a field the layout
//!   model does not describe (`f16`, complex, strings) does not qualify, and reads and writes
//!   through the serde tiers as before.
//!
//! `bool` is checked: its byte must be 0 or 1 (NumPy loads any byte as `True`; Rust forbids
//! other values), so a view or a bulk copy of a type with `bool` leaves scans those bytes
//! first. Every other leaf kind takes any bit pattern.
//!
//! What it buys: [`MmapArray::as_slice`](crate::MmapArray::as_slice) views the mapped data in
//! place, `from_*` and [`MmapArray::to_vec`](crate::MmapArray::to_vec) copy
//! the data into the result once, and `to_*` writes a slice of a padding-free type with one
//! `write`.
//!
//! ```
//! use npy_serde::NpyRecord;
//! use serde::{Deserialize, Serialize};
//!
//! // np.dtype([('id', '<i8'), ('x', '<f4'), ('ok', '?')], align=True): 16 bytes, as in C.
//! #[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug, PartialEq)]
//! #[npy(align)]
//! #[repr(C)]
//! struct Row { id: i64, x: f32, ok: bool }
//!
//! assert!(Row::POD.is_some());
//! assert_eq!(Row::dtype().itemsize(), std::mem::size_of::<Row>());
//!
//! // np.dtype([('id', '<i8'), ('x', '<f4'), ('ok', '?')]): NumPy's default, 13 bytes.
//! #[derive(Serialize, Deserialize, NpyRecord, Clone, Copy, Debug)]
//! #[repr(C, packed)]
//! struct Packed { id: i64, x: f32, ok: bool }
//!
//! assert!(Packed::POD.is_some());
//! assert_eq!(Packed::dtype().itemsize(), 13);
//! let rows = vec![Packed { id: 7, x: 0.5, ok: true }];
//! let bytes = npy_serde::to_vec(&rows)?; // written from the slice's memory
//! let back: Vec<Packed> = npy_serde::from_slice(&bytes)?; // one copy
//! assert_eq!({ back[0].x }, 0.5);
//! # Ok::<(), npy_serde::Error>(())
//! ```

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::kind::Kind;
use crate::layout::{Layout, Op};
use crate::record::NpyRecord;

pub use crate::record::Pod;

/// Support for `#[derive(NpyRecord)]` on `#[repr(C)]` structs: whether the struct's Rust
/// layout (`size`, field `offsets` in declaration order) is its `LAYOUT`'s, when that layout
/// is exact and native. `Ok(false)` for a layout this model does not describe (no claim);
/// `Err(i)` when field `i` (or, as `usize::MAX`, the size) disagrees.
#[doc(hidden)]
pub const fn check_record(layout: &Layout, size: usize, offsets: &[usize]) -> Result<bool, usize> {
    if !layout.is_exact() || layout.has_swaps() {
        return Ok(false);
    }
    match layout.field_count() {
        Some(n) if n == offsets.len() => {}
        _ => return Ok(false),
    }
    let mut i = 0;
    while i < offsets.len() {
        match layout.field_offset(i) {
            Some(o) if o == offsets[i] => {}
            Some(_) => return Err(i),
            None => return Ok(false),
        }
        i += 1;
    }
    if layout.size as usize != size {
        return Err(usize::MAX);
    }
    Ok(true)
}

/// Why a dtype's data cannot be seen as `[T]`.
pub(crate) fn view_error<T>(what: &'static str, detail: String) -> Error {
    Error::new(ErrorKind::View {
        rust: std::any::type_name::<T>().to_string(),
        what,
        detail,
    })
}

/// Checks that data of `dtype` (an array of `shape`, `fortran` order) can be seen as `[T]`:
/// `T` is plain data, the file's element layout is `T`'s in native byte order, and the order
/// of the elements is C's. Returns `T`'s proof.
pub(crate) fn check_view<T: NpyRecord>(
    dtype: &DType,
    shape: &[u64],
    fortran: bool,
) -> Result<Pod<T>> {
    let Some(pod) = T::POD else {
        return Err(view_error::<T>(
            "type",
            "its memory is not its dtype's bytes (plain data is bool, integers, f32, f64, \
             [T; N] of those, and #[repr(C)] structs of those deriving NpyRecord)"
                .into(),
        ));
    };
    let file = Layout::of(dtype);
    if file != T::LAYOUT {
        let (what, detail) = if file == T::LAYOUT.flipped() {
            (
                "byte order",
                format!(
                    "the file's dtype {} is in the other byte order (read it with \
                     from_* to convert)",
                    dtype.descr()
                ),
            )
        } else {
            (
                "dtype",
                format!(
                    "the file's dtype is {}, the type's {}",
                    dtype.descr(),
                    T::dtype().descr()
                ),
            )
        };
        return Err(view_error::<T>(what, detail));
    }
    if fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(view_error::<T>(
            "order",
            "the data is in Fortran order with more than one axis longer than 1, so storage \
             order is not the logical order (transpose the shape, or read it with \
             from_*)"
                .into(),
        ));
    }
    Ok(pod)
}

/// Views `bytes` (whole elements of a layout checked by [`check_view`]) as `[T]`: the
/// alignment and length are checked here, and `bool` bytes are validated.
pub(crate) fn cast<T: NpyRecord>(_proof: Pod<T>, bytes: &[u8], offset: u64) -> Result<&[T]> {
    let size = size_of::<T>();
    if size == 0 {
        return Err(view_error::<T>("type", "it has no bytes".into()));
    }
    if !bytes.len().is_multiple_of(size) {
        return Err(Error::eof(
            "whole elements",
            size as u64,
            (bytes.len() % size) as u64,
        ));
    }
    if !(bytes.as_ptr() as usize).is_multiple_of(align_of::<T>()) {
        return Err(view_error::<T>(
            "alignment",
            format!(
                "the data starts at byte offset {offset}, not a multiple of the type's \
                 alignment {} (files written by NumPy start at a multiple of 64; this one was \
                 written by another writer: read it with from_*)",
                align_of::<T>()
            ),
        ));
    }
    check_bools(&T::LAYOUT, bytes, offset)?;
    // SAFETY: `bytes` is `bytes.len() / size` whole elements, aligned for `T` (checked
    // above), and borrowed for the returned lifetime. The proof says `T`'s memory is its
    // layout: each leaf is a value of its kind at its offset and everything else is padding;
    // every leaf kind takes any bit pattern but `bool`, whose bytes were just checked to be 0
    // or 1. So every element is a valid `T`.
    Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size) })
}

/// [`cast`] for a mutable view.
pub(crate) fn cast_mut<T: NpyRecord>(
    proof: Pod<T>,
    bytes: &mut [u8],
    offset: u64,
) -> Result<&mut [T]> {
    let n = cast(proof, bytes, offset)?.len();
    // SAFETY: as in `cast` (same checks, just made); the borrow is unique, and every value
    // written through `&mut T` is a valid `T`, so the bytes stay valid elements of the layout.
    Ok(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), n) })
}

/// The bytes of `values` (a plain type without padding), to write as they are.
pub(crate) fn bytes_of<T: NpyRecord>(_proof: Pod<T>, values: &[T]) -> Option<&[u8]> {
    if T::LAYOUT.has_gaps() {
        return None;
    }
    // SAFETY: the proof says every byte of `T` outside the layout's leaves is padding, and
    // the layout has no gaps: so `T` has no padding, every byte of `values` is initialized,
    // and `u8` has no alignment requirement. The length is `values`' size in bytes.
    Some(unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) })
}

/// Checks that every `bool` leaf of `layout` in `bytes` (whole elements) is 0 or 1.
pub(crate) fn check_bools(layout: &Layout, bytes: &[u8], offset: u64) -> Result<()> {
    let size = layout.size as usize;
    if size == 0 {
        return Ok(());
    }
    let bools: Vec<usize> = layout
        .steps()
        .iter()
        .filter(|s| s.op == Op::Leaf(Kind::Bool))
        .map(|s| s.arg as usize)
        .collect();
    if bools.is_empty() {
        return Ok(());
    }
    for (i, elem) in bytes.chunks_exact(size).enumerate() {
        for &at in &bools {
            let b = elem[at];
            if b > 1 {
                let at_byte = offset + (i * size + at) as u64;
                return Err(Error::invalid_value(format!(
                    "bool byte {b} (only 0 and 1 are bools in Rust; NumPy reads it as True)"
                ))
                .at_record(i as u64)
                .at_byte(at_byte));
            }
        }
    }
    Ok(())
}
