//! The one table of scalar kinds that the tiers decode and encode directly: `bool` and the
//! fixed-size integers and floats, each with its Rust type, its size and alignment, its NumPy
//! type code and the serde methods that carry it.
//!
//! Every tier that handles these kinds by type (the runtime-planned and exact tiers of reading
//! and writing, the shape walk, the general tier's planned entrance) expands its per-kind
//! methods from [`numbers!`], and plans name kinds by [`Kind`]; so adding a kind here adds it
//! to every tier. The rest of the dtype model (strings, datetimes, `f2`, long double, complex)
//! is [`Scalar`], which the general tiers handle value by value.
//!
//! This module depends on nothing but the dtype model.

use crate::dtype::Scalar;

/// Calls `$callback! { rows }` with one row per numeric kind:
///
/// `Kind RustType, BitsType, "numpy code", deserialize_x, visit_x, serialize_x, from_bits, to_bits;`
///
/// where `BitsType` is the unsigned integer of the same size (the bytes as loaded, before any
/// swap), `from_bits` turns it into the Rust value and `to_bits` back, both bit for bit.
macro_rules! numbers {
    ($callback:ident $($arg:tt)*) => {
        $callback! { $($arg)*
            I8 i8, u8, "i1", deserialize_i8, visit_i8, serialize_i8, |x: u8| x as i8, |v: i8| v as u8;
            I16 i16, u16, "i2", deserialize_i16, visit_i16, serialize_i16, |x: u16| x as i16, |v: i16| v as u16;
            I32 i32, u32, "i4", deserialize_i32, visit_i32, serialize_i32, |x: u32| x as i32, |v: i32| v as u32;
            I64 i64, u64, "i8", deserialize_i64, visit_i64, serialize_i64, |x: u64| x as i64, |v: i64| v as u64;
            U8 u8, u8, "u1", deserialize_u8, visit_u8, serialize_u8, |x: u8| x, |v: u8| v;
            U16 u16, u16, "u2", deserialize_u16, visit_u16, serialize_u16, |x: u16| x, |v: u16| v;
            U32 u32, u32, "u4", deserialize_u32, visit_u32, serialize_u32, |x: u32| x, |v: u32| v;
            U64 u64, u64, "u8", deserialize_u64, visit_u64, serialize_u64, |x: u64| x, |v: u64| v;
            F32 f32, u32, "f4", deserialize_f32, visit_f32, serialize_f32, f32::from_bits, f32::to_bits;
            F64 f64, u64, "f8", deserialize_f64, visit_f64, serialize_f64, f64::from_bits, f64::to_bits;
        }
    };
}
pub(crate) use numbers;

/// Reads the unsigned integer of `size_of::<$u>()` bytes at `$at` of `$b`, swapped if `$swap`
/// (one `bswap`); `None` if the bytes are not there.
macro_rules! load {
    ($b:expr, $at:expr, $u:ty, $swap:expr) => {
        $b.get($at..$at.wrapping_add(std::mem::size_of::<$u>()))
            .and_then(|c| <[u8; std::mem::size_of::<$u>()]>::try_from(c).ok())
            .map(|a| {
                let x = <$u>::from_ne_bytes(a);
                if $swap {
                    x.swap_bytes()
                } else {
                    x
                }
            })
    };
}
pub(crate) use load;

/// Stores `$v` into `$buf` (exactly its size) in big- or little-endian order.
macro_rules! put {
    ($buf:expr, $v:expr, $big:expr) => {{
        let v = $v;
        $buf.copy_from_slice(&if $big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }};
}
pub(crate) use put;

macro_rules! kind_enum {
    ($($k:ident $t:ty, $u:ty, $code:literal, $de:ident, $visit:ident, $ser:ident, $from:expr, $to:expr;)*) => {
        /// A scalar kind decoded and encoded directly by every tier (see the module docs).
        #[derive(Clone, Copy, PartialEq, Eq, Debug)]
        #[repr(u8)]
        pub enum Kind {
            /// `|b1`: one byte, 0 or 1.
            Bool,
            $(
                #[doc = concat!("`", $code, "`: `", stringify!($t), "`.")]
                $k,
            )*
        }

        impl Kind {
            /// Every kind, in the order of their codes.
            #[cfg(test)]
            pub(crate) const ALL: &'static [Kind] = &[Kind::Bool, $(Kind::$k),*];

            /// Byte size (also NumPy's alignment of the kind in an `align=True` record).
            pub const fn size(self) -> u32 {
                match self {
                    Kind::Bool => 1,
                    $(Kind::$k => std::mem::size_of::<$t>() as u32,)*
                }
            }

            /// NumPy's type code without byte order (`"f8"`).
            pub const fn code(self) -> &'static str {
                match self {
                    Kind::Bool => "b1",
                    $(Kind::$k => $code,)*
                }
            }

            /// The kind of a scalar type, if it is one of the table's.
            pub const fn of(s: Scalar) -> Option<Kind> {
                Some(match s {
                    Scalar::Bool => Kind::Bool,
                    $(Scalar::$k => Kind::$k,)*
                    _ => return None,
                })
            }

            /// The scalar type of this kind.
            pub const fn scalar(self) -> Scalar {
                match self {
                    Kind::Bool => Scalar::Bool,
                    $(Kind::$k => Scalar::$k,)*
                }
            }
        }
    };
}
numbers!(kind_enum);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{ByteOrder, PlainType};

    #[test]
    fn the_table_agrees_with_the_dtype_model() {
        for &k in Kind::ALL {
            let s = k.scalar();
            assert_eq!(Kind::of(s), Some(k));
            assert_eq!(k.size() as usize, s.itemsize(), "{k:?}");
            assert_eq!(k.size() as usize, s.alignment(), "{k:?}");
            assert_eq!(k.code(), s.type_code(), "{k:?}");
            let p = PlainType::from_typestr(&format!("<{}", k.code())).unwrap();
            assert_eq!(p, PlainType::new(s, ByteOrder::Little));
        }
        assert_eq!(Kind::of(Scalar::F16), None);
        assert_eq!(Kind::of(Scalar::Bytes(3)), None);
    }

    #[test]
    fn bits_round_trip() {
        macro_rules! check {
            ($($k:ident $t:ty, $u:ty, $code:literal, $de:ident, $visit:ident, $ser:ident, $from:expr, $to:expr;)*) => {$(
                #[allow(clippy::redundant_closure_call)]
                {
                    let v: $t = <$t>::MAX;
                    let bits: $u = ($to)(v);
                    let back: $t = ($from)(bits);
                    assert_eq!(back, v);
                    assert_eq!(std::mem::size_of::<$t>(), std::mem::size_of::<$u>());
                }
            )*};
        }
        numbers!(check);
    }
}
