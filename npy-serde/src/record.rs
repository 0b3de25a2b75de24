//! [`NpyRecord`]: Rust types that know their NumPy dtype.
//!
//! Implemented here for the scalar types and fixed-size arrays, and by `#[derive(NpyRecord)]`
//! (feature `derive`, on by default) for structs. Writers use it to build the header of
//! `Vec<T>`/`&[T]`.
//!
//! A bare `[u8; N]` is a subarray of `N` `|u1` bytes (consistent with serde, which serializes
//! arrays as tuples); mark a field `#[npy(bytes = N)]` to store it as a `|SN` byte string.
//!
//! ```
//! use npy_serde::NpyRecord;
//! assert_eq!(f64::dtype().descr(), "'<f8'");
//! assert_eq!(<[[f32; 3]; 2]>::dtype().descr(), "('<f4', (2, 3))");
//! ```

use std::marker::PhantomData;

use crate::dtype::{DType, Scalar};
use crate::kind::{numbers, Kind};
use crate::layout::{Layout, Step};

/// A Rust type with a fixed NumPy dtype.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no fixed NumPy dtype (it does not implement `NpyRecord`)",
    label = "no NumPy dtype for this type",
    note = "record fields may be bool, integers, floats, half::f16, num_complex::Complex<f32/f64> \
            (feature `complex`), npy_serde::datetime's DateTime64/TimeDelta64 (or Option of them), \
            [T; N], structs that derive NpyRecord, or strings marked \
            #[npy(bytes = N)] / #[npy(unicode = N)]",
    note = "to read into a type that only derives `Deserialize` (String, tuples, `Value`), call \
            the door's `_serde` twin: `from_path_serde`, `RecordReader::new_serde`, \
            `MmapArray::records_serde`; or add `#[derive(NpyRecord)]` for the fast door"
)]
pub trait NpyRecord {
    /// The dtype of one value of this type.
    fn dtype() -> DType;

    /// [`dtype`](NpyRecord::dtype)'s layout as a compile-time constant, for the exact decoding
    /// tier of [`from_path`](crate::from_path) and its siblings. Not a public
    /// API: implemented here and by `#[derive(NpyRecord)]`. The default (opaque) is always
    /// correct, only slower; a layout that is not `dtype()`'s only means the tier never engages.
    #[doc(hidden)]
    const LAYOUT: Layout = Layout::OPAQUE;

    /// Proof that this type's memory is its dtype's element bytes in native byte order, for
    /// typed memory-map views and one-copy reads and writes (see [`crate::pod`]). `Some` for
    /// `bool`, the integers, `f32`, `f64`, arrays of those, and `#[repr(C)]` structs of those
    /// that derive `NpyRecord` (the derive checks the layout at compile time). A hand-written
    /// impl for a `bytemuck::Pod` type can set it with [`Pod::of_bytemuck`].
    const POD: Option<Pod<Self>> = None;
}

/// Proof that `T`'s memory is its dtype's element bytes in native byte order (see the module
/// docs). Zero-sized; made only by [`Pod::new_unchecked`] (unsafe) or by the safe constructors
/// that check what they need.
pub struct Pod<T: ?Sized>(PhantomData<fn(&T)>);

impl<T: ?Sized> Clone for Pod<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Pod<T> {}

impl<T: ?Sized> std::fmt::Debug for Pod<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pod<{}>", std::any::type_name::<T>())
    }
}

impl<T: NpyRecord> Pod<T> {
    /// The proof, taken on trust.
    ///
    /// # Safety
    ///
    /// `size_of::<T>() == T::LAYOUT.size` and `T::LAYOUT` is exact, has no byte-swapped step,
    /// and describes `T`'s memory: at each leaf's offset lies a value of the leaf kind's Rust
    /// type (`bool`, `i8` .. `u64`, `f32`, `f64`), and every other byte of `T` is padding.
    pub const unsafe fn new_unchecked() -> Pod<T> {
        Pod(PhantomData)
    }

    /// The proof for a `bytemuck::Pod` type exactly as large as its layout, or `None`. Safe:
    /// with every bit pattern valid for `T`, no padding in it and the sizes equal, copying
    /// bytes into a `T` (or viewing them as one, or a `T` as bytes) is sound whatever the
    /// layout says about offsets; a wrong layout only gives wrong values.
    pub const fn of_bytemuck() -> Option<Pod<T>>
    where
        T: bytemuck::Pod,
    {
        let l = &T::LAYOUT;
        if l.is_exact() && !l.has_swaps() && l.size as usize == size_of::<T>() {
            // SAFETY: `T: bytemuck::Pod` makes every bit pattern of `size_of::<T>()` bytes a
            // valid `T` and every byte of a `T` initialized, which is all that views, bulk
            // copies and byte writes rely on; the size, which they also rely on, is checked.
            Some(unsafe { Pod::new_unchecked() })
        } else {
            None
        }
    }

    /// The proof for `[T; N]` from `T`'s.
    pub const fn array<const N: usize>(item: Option<Pod<T>>) -> Option<Pod<[T; N]>> {
        match item {
            // SAFETY: `[T; N]` is `N` values of `T` at a stride of `size_of::<T>()`, which
            // `T`'s proof says is `T::LAYOUT.size`: exactly `Layout::array(T::LAYOUT, N)`.
            // An array whose layout is not exact (too many steps) is refused.
            Some(_) if <[T; N] as NpyRecord>::LAYOUT.is_exact() => {
                Some(unsafe { Pod::new_unchecked() })
            }
            _ => None,
        }
    }
}

#[cfg(any(feature = "half", feature = "complex"))]
macro_rules! scalar_impls {
    ($($t:ty => $s:expr $(, $k:ident)?);* $(;)?) => {
        $(impl NpyRecord for $t {
            fn dtype() -> DType {
                DType::scalar($s)
            }
            $(const LAYOUT: Layout = Layout::leaf(Kind::$k);)?
        })*
    };
}

// `half::f16` as `f2` (feature `half`, default). `f2` files are read and written without it
// (as `f32`/`f64`, `Value::Float`), through `crate::binary16`.
#[cfg(feature = "half")]
scalar_impls! {
    half::f16 => Scalar::F16;
}

/// The kinds of the table (`crate::kind`): `bool` and the numbers, each its own plain leaf.
macro_rules! number_impls {
    ($($k:ident $t:ty, $u:ty, $code:literal, $de:ident, $visit:ident, $ser:ident, $from:expr, $to:expr;)*) => {
        $(impl NpyRecord for $t {
            fn dtype() -> DType {
                DType::scalar(Scalar::$k)
            }
            const LAYOUT: Layout = Layout::leaf(Kind::$k);
            const POD: Option<Pod<Self>> = Pod::of_bytemuck();
        })*
    };
}
numbers!(number_impls);

impl NpyRecord for bool {
    fn dtype() -> DType {
        DType::scalar(Scalar::Bool)
    }
    const LAYOUT: Layout = Layout::leaf(Kind::Bool);
    // SAFETY: a `bool` is one byte, 0 or 1, which is its layout (one `Bool` leaf at offset 0,
    // native order since it has none); every view and bulk copy checks bool bytes first.
    const POD: Option<Pod<Self>> = Some(unsafe { Pod::new_unchecked() });
}

#[cfg(feature = "complex")]
scalar_impls! {
    num_complex::Complex<f32> => Scalar::Complex64;
    num_complex::Complex<f64> => Scalar::Complex128;
}

/// `[T; N]` is a subarray; nested arrays flatten into one multi-dimensional subarray, as NumPy
/// folds `(('<f4', (3,)), (2,))` into `('<f4', (2, 3))`.
impl<T: NpyRecord, const N: usize> NpyRecord for [T; N] {
    fn dtype() -> DType {
        match T::dtype() {
            DType::Array(base, shape) => {
                let mut s = Vec::with_capacity(shape.len() + 1);
                s.push(N as u64);
                s.extend(shape);
                DType::Array(base, s)
            }
            other => DType::Array(Box::new(other), vec![N as u64]),
        }
    }

    const LAYOUT: Layout = Layout::array(&T::LAYOUT, N);
    const POD: Option<Pod<Self>> = Pod::array(T::POD);
}

/// The step at `at` of `T::LAYOUT`, for the exact tiers (`crate::read::exact`, `crate::write::exact`).
#[inline(always)]
pub(crate) fn step_of<T: NpyRecord>(at: usize) -> Option<Step> {
    // A reference to the constant (not a copy of it), so that reads at a constant index fold.
    let layout: &'static Layout = const { &T::LAYOUT };
    if at < layout.len as usize {
        layout.steps.get(at).copied()
    } else {
        None
    }
}

/// Whether `dtype`'s layout is `T::LAYOUT` (`Some(false)`), or `T::LAYOUT` with every
/// multi-byte value in the opposite byte order (`Some(true)`): the exact tiers' condition, and
/// their `FLIP`.
pub(crate) fn flip_of<T: NpyRecord>(dtype: &DType) -> Option<bool> {
    if !T::LAYOUT.is_exact() {
        return None;
    }
    let file = Layout::of(dtype);
    if file == T::LAYOUT {
        Some(false)
    } else if file == T::LAYOUT.flipped() {
        Some(true)
    } else {
        None
    }
}

#[doc(hidden)]
/// Support for the code `#[derive(NpyRecord)]` generates. Not a public API: its contents may
/// change in any release.
pub mod __private {
    use std::borrow::Cow;

    pub use crate::dtype::{ByteOrder, DType, PlainType, Record, Scalar, TimeUnit};
    pub use crate::layout::Layout;
    pub use crate::pod::check_record;

    /// Rust types that may hold a fixed-width NumPy string field (`#[npy(bytes = N)]` or
    /// `#[npy(unicode = N)]`).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a NumPy string field",
        label = "#[npy(bytes = N)] / #[npy(unicode = N)] need a string type here",
        note = "string fields may be String, &str, Box<str>, Cow<str>, Vec<u8>, &[u8], \
                Box<[u8]>, Cow<[u8]> or [u8; N]"
    )]
    pub trait StringField {}

    impl StringField for String {}
    impl StringField for &str {}
    impl StringField for Box<str> {}
    impl StringField for Cow<'_, str> {}
    impl StringField for Vec<u8> {}
    impl StringField for &[u8] {}
    impl StringField for Box<[u8]> {}
    impl StringField for Cow<'_, [u8]> {}
    impl<const N: usize> StringField for [u8; N] {}

    /// Rust types that may hold a `datetime64`/`timedelta64` field set by
    /// `#[npy(dtype = "<M8[...]")]`: the `i64` count, or `Option<i64>` (NaT as `None`).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot hold a NumPy datetime64/timedelta64 field",
        label = "#[npy(dtype = \"<M8[...]\")] / \"<m8[...]\" needs i64 or Option<i64> here",
        note = "a datetime64/timedelta64 is an i64 count of its unit (NaT is i64::MIN); \
                npy_serde::datetime::DateTime64<Unit> / TimeDelta64<Unit> carry their unit \
                without an attribute"
    )]
    pub trait TimeCountField {}

    impl TimeCountField for i64 {}
    impl TimeCountField for Option<i64> {}

    /// The dtype of a time field: `M8[<mult><unit>]` (`delta == false`) or `m8[...]`.
    pub fn time_field<T: TimeCountField + ?Sized>(
        delta: bool,
        unit: TimeUnit,
        mult: u32,
        order: ByteOrder,
    ) -> DType {
        let scalar = if delta {
            Scalar::TimeDelta(unit, mult)
        } else {
            Scalar::DateTime(unit, mult)
        };
        DType::Plain(PlainType::new(scalar, order))
    }

    /// Rust types that may hold a `|V<N>` field set by `#[npy(dtype = "|V<N>")]`: `[u8; N]`
    /// exactly, or a byte container (whose length writers check: exactly `N` bytes).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot hold a NumPy |V{N} field ({N} raw bytes)",
        label = "#[npy(dtype = \"|V{N}\")] needs [u8; {N}] or a byte container here",
        note = "a |V<N> field is exactly N bytes: [u8; N], Vec<u8>, &[u8], Box<[u8]> or Cow<[u8]>"
    )]
    pub trait VoidField<const N: usize> {}

    impl<const N: usize> VoidField<N> for [u8; N] {}
    impl<const N: usize> VoidField<N> for Vec<u8> {}
    impl<const N: usize> VoidField<N> for &[u8] {}
    impl<const N: usize> VoidField<N> for Box<[u8]> {}
    impl<const N: usize> VoidField<N> for Cow<'_, [u8]> {}

    /// The dtype of a raw-bytes field: `|V<n>`.
    pub fn void_field<T: VoidField<N> + ?Sized, const N: usize>() -> DType {
        DType::scalar(Scalar::Void(N))
    }

    /// The dtype of a string field: `|S<n>` or `<U<n>`.
    pub fn string_field<T: StringField + ?Sized>(scalar: Scalar) -> DType {
        DType::scalar(scalar)
    }

    /// The layout of `dtype` as the exact tier sees a file's (for tests that a derived
    /// `LAYOUT` is its `dtype()`'s).
    pub fn layout_of(dtype: &DType) -> Layout {
        Layout::of(dtype)
    }

    /// Builds a derived struct's record dtype.
    ///
    /// # Panics
    ///
    /// If the record cannot be built: its itemsize exceeds NumPy's limit (`i32::MAX` bytes).
    /// Names are checked for duplicates when the derive expands.
    pub fn record(
        type_name: &str,
        fields: Vec<(&'static str, DType)>,
        aligned: bool,
        order: Option<ByteOrder>,
    ) -> DType {
        let rec = if aligned {
            Record::aligned(fields)
        } else {
            Record::packed(fields)
        };
        let dt = match rec {
            Ok(r) => DType::Record(r),
            Err(e) => panic!("npy_serde: cannot build the dtype of `{type_name}`: {e}"),
        };
        match order {
            Some(o) => dt.to_byte_order(o),
            None => dt,
        }
    }

    /// Applies a container `#[npy(byte_order = ...)]` to a transparent struct's dtype.
    pub fn with_order(dt: DType, order: Option<ByteOrder>) -> DType {
        match order {
            Some(o) => dt.to_byte_order(o),
            None => dt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_and_arrays() {
        assert_eq!(bool::dtype().descr(), "'|b1'");
        assert_eq!(u8::dtype().descr(), "'|u1'");
        assert_eq!(i16::dtype().descr(), "'<i2'");
        #[cfg(feature = "half")]
        assert_eq!(half::f16::dtype().descr(), "'<f2'");
        assert_eq!(<[u8; 4]>::dtype().itemsize(), 4);
        assert_eq!(<[[[f64; 2]; 3]; 4]>::dtype().descr(), "('<f8', (4, 3, 2))");
    }
}
