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

use crate::dtype::{DType, Scalar};

/// A Rust type with a fixed NumPy dtype.
pub trait NpyRecord {
    /// The dtype of one value of this type.
    fn dtype() -> DType;
}

macro_rules! scalar_impls {
    ($($t:ty => $s:expr),* $(,)?) => {
        $(impl NpyRecord for $t {
            fn dtype() -> DType {
                DType::scalar($s)
            }
        })*
    };
}

scalar_impls! {
    bool => Scalar::Bool,
    i8 => Scalar::I8, i16 => Scalar::I16, i32 => Scalar::I32, i64 => Scalar::I64,
    u8 => Scalar::U8, u16 => Scalar::U16, u32 => Scalar::U32, u64 => Scalar::U64,
    f32 => Scalar::F32, f64 => Scalar::F64,
    half::f16 => Scalar::F16,
}

#[cfg(feature = "complex")]
scalar_impls! {
    num_complex::Complex<f32> => Scalar::Complex64,
    num_complex::Complex<f64> => Scalar::Complex128,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_and_arrays() {
        assert_eq!(bool::dtype().descr(), "'|b1'");
        assert_eq!(u8::dtype().descr(), "'|u1'");
        assert_eq!(i16::dtype().descr(), "'<i2'");
        assert_eq!(half::f16::dtype().descr(), "'<f2'");
        assert_eq!(<[u8; 4]>::dtype().itemsize(), 4);
        assert_eq!(<[[[f64; 2]; 3]; 4]>::dtype().descr(), "('<f8', (4, 3, 2))");
    }
}
