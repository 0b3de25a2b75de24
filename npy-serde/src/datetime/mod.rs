//! NumPy's `datetime64` and `timedelta64` as Rust values that carry their unit:
//! [`DateTime64<U>`] (`M8[unit]`) and [`TimeDelta64<U>`] (`m8[unit]`), with `U` one of the unit
//! markers of this module ([`Ns`], [`S`], [`D`], ...).
//!
//! Both are an `i64` count of units (since 1970-01-01T00:00 for a datetime), exactly NumPy's
//! bytes: `#[repr(transparent)]`, plain data (views, one-copy reads), and their own
//! [`NpyRecord`] dtype, so a struct that derives `NpyRecord` with such fields gets
//! `<M8[ns]`/`<m8[s]`... fields, which NumPy loads as datetimes, and reads on the exact tier.
//!
//! - **NaT** (NumPy's "not a time", `i64::MIN`) is a value, [`DateTime64::NAT`], tested with
//!   [`is_nat`](DateTime64::is_nat); and `Option<DateTime64<U>>` reads NaT as `None` and writes
//!   `None` as NaT (for any `Option` over a datetime or timedelta field, `Option<i64>` too).
//! - **Units are checked**, not converted: reading an `M8[s]` field into a `DateTime64<Ns>` is a
//!   [`TypeMismatch`](crate::ErrorKind::TypeMismatch) that names both units, and writing a
//!   `DateTime64<Ns>` into an `M8[s]` dtype a [`Write`](crate::ErrorKind::Write) error that
//!   does. Converting a count between units is a
//!   multiplication that may overflow or a division that may lose precision: do it where you
//!   can see it, with [`DateTime64::to_unit`] (exact or `None`). A raw `i64` still reads any
//!   datetime or timedelta as its count.
//! - **Multiples** (`M8[10s]`) and generic `M8` have no marker type: read them into `i64`, and
//!   write an `i64` field as one with `#[npy(dtype = "<M8[10s]")]`.
//! - With the features `chrono` and `jiff`, `TryFrom` converts both ways between these values
//!   and those crates' dates, timestamps and durations; NaT and values out of the other type's
//!   range are errors, never wrapped.
//!
//! The unit markers are named after NumPy's codes, except where those clash: [`Mo`] is months
//! (NumPy's `M`), [`Min`] minutes (NumPy's `m`), [`H`] hours (`h`).
//!
//! ```
//! use npy_serde::datetime::{DateTime64, TimeDelta64, Ns, S};
//! use npy_serde::NpyRecord;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq)]
//! struct Tick {
//!     at: DateTime64<Ns>,
//!     held: TimeDelta64<S>,
//!     closed: Option<DateTime64<Ns>>,
//! }
//! assert_eq!(Tick::dtype().descr(), "[('at', '<M8[ns]'), ('held', '<m8[s]'), ('closed', '<M8[ns]')]");
//!
//! let ticks = vec![
//!     Tick { at: DateTime64::new(1_700_000_000_000_000_000), held: TimeDelta64::new(30), closed: None },
//!     Tick { at: DateTime64::NAT, held: TimeDelta64::new(-1), closed: Some(DateTime64::new(5)) },
//! ];
//! let bytes = npy_serde::to_vec(&ticks)?;
//! let back: Vec<Tick> = npy_serde::from_slice(&bytes)?;
//! assert_eq!(back, ticks);
//! assert!(back[1].at.is_nat());
//!
//! // The unit is part of the type: an M8[ns] field does not read as seconds.
//! #[derive(Deserialize, NpyRecord, Debug)]
//! struct Secs { at: DateTime64<S>, held: TimeDelta64<S>, closed: Option<DateTime64<S>> }
//! let err = npy_serde::from_slice::<Secs>(&bytes).unwrap_err();
//! assert!(err.to_string().contains("M8[s]") && err.to_string().contains("M8[ns]"), "{err}");
//! # Ok::<(), npy_serde::Error>(())
//! ```

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::ser::{Serialize, Serializer};

use crate::dtype::{DType, Scalar, TimeUnit};
use crate::layout::Layout;
use crate::record::{NpyRecord, Pod};

#[cfg(feature = "chrono")]
mod with_chrono;
#[cfg(feature = "jiff")]
mod with_jiff;

mod sealed {
    pub trait Sealed {}
}

/// A unit of [`DateTime64`] and [`TimeDelta64`]: one of the marker types of this module.
/// Sealed: the units are NumPy's.
pub trait Unit: sealed::Sealed + Copy + Default + Send + Sync + 'static {
    /// The unit in the dtype model.
    const UNIT: TimeUnit;
    /// The serde newtype name of `DateTime64<Self>` (how the crate's deserializers know the
    /// unit a value wants).
    #[doc(hidden)]
    const DATETIME_NAME: &'static str;
    /// The serde newtype name of `TimeDelta64<Self>`.
    #[doc(hidden)]
    const TIMEDELTA_NAME: &'static str;
}

const DATETIME_PREFIX: &str = "npy_serde::datetime64[";
const TIMEDELTA_PREFIX: &str = "npy_serde::timedelta64[";

macro_rules! units {
    ($($(#[$doc:meta])* $name:ident => $unit:ident, $code:literal;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl Unit for $name {
            const UNIT: TimeUnit = TimeUnit::$unit;
            const DATETIME_NAME: &'static str = concat!("npy_serde::datetime64[", $code, "]");
            const TIMEDELTA_NAME: &'static str = concat!("npy_serde::timedelta64[", $code, "]");
        }
    )*};
}

units! {
    /// Years (`Y`).
    Y => Year, "Y";
    /// Months (NumPy's `M`).
    Mo => Month, "M";
    /// Weeks (`W`).
    W => Week, "W";
    /// Days (`D`).
    D => Day, "D";
    /// Hours (NumPy's `h`).
    H => Hour, "h";
    /// Minutes (NumPy's `m`).
    Min => Minute, "m";
    /// Seconds (`s`).
    S => Second, "s";
    /// Milliseconds (`ms`).
    Ms => Millisecond, "ms";
    /// Microseconds (`us`).
    Us => Microsecond, "us";
    /// Nanoseconds (`ns`).
    Ns => Nanosecond, "ns";
    /// Picoseconds (`ps`).
    Ps => Picosecond, "ps";
    /// Femtoseconds (`fs`).
    Fs => Femtosecond, "fs";
    /// Attoseconds (`as`).
    As => Attosecond, "as";
}

/// A unit of a fixed length: a whole number of nanoseconds (weeks down to nanoseconds). The
/// conversions to and from `chrono` and `jiff` times and durations (features `chrono`, `jiff`)
/// are defined for these.
pub trait FixedUnit: Unit {
    /// Nanoseconds per unit.
    const NANOS: i64;
}

macro_rules! fixed {
    ($($name:ident $nanos:expr;)*) => {$(
        impl FixedUnit for $name {
            const NANOS: i64 = $nanos;
        }
    )*};
}

fixed! {
    W 7 * 86_400 * 1_000_000_000;
    D 86_400 * 1_000_000_000;
    H 3_600 * 1_000_000_000;
    Min 60 * 1_000_000_000;
    S 1_000_000_000;
    Ms 1_000_000;
    Us 1_000;
    Ns 1;
}

/// The nanoseconds of `count` units, for a conversion into `what`; NaT is an error.
#[cfg(any(feature = "chrono", feature = "jiff"))]
fn to_nanos<U: FixedUnit>(count: i64, delta: bool, what: &str) -> crate::Result<i128> {
    if count == NAT {
        return Err(crate::Error::invalid_value(format!(
            "NaT ({}) has no {what}",
            describe(delta, U::UNIT)
        )));
    }
    Ok(i128::from(count) * i128::from(U::NANOS))
}

/// The count of units in `nanos` (from `what`): an error unless it is whole and in range (not
/// NaT).
#[cfg(any(feature = "chrono", feature = "jiff"))]
fn from_nanos<U: FixedUnit>(nanos: i128, delta: bool, what: &str) -> crate::Result<i64> {
    let per = i128::from(U::NANOS);
    let target = describe(delta, U::UNIT);
    if nanos % per != 0 {
        return Err(crate::Error::invalid_value(format!(
            "{what} is not a whole number of {target} units (convert it to a coarser value first)"
        )));
    }
    match i64::try_from(nanos / per) {
        Ok(n) if n != NAT => Ok(n),
        _ => Err(crate::Error::invalid_value(format!(
            "{what} is out of the range of {target}"
        ))),
    }
}

/// The kind (`false`: datetime, `true`: timedelta) and unit a serde newtype name asks for, if
/// it is one of [`DateTime64`]'s or [`TimeDelta64`]'s.
#[inline]
pub(crate) fn time_of_name(name: &str) -> Option<(bool, TimeUnit)> {
    let (delta, rest) = if let Some(rest) = name.strip_prefix(DATETIME_PREFIX) {
        (false, rest)
    } else {
        (true, name.strip_prefix(TIMEDELTA_PREFIX)?)
    };
    Some((delta, TimeUnit::from_code(rest.strip_suffix(']')?)?))
}

/// What a value of this kind and unit is called in an error: `datetime64[ns]`.
pub(crate) fn describe(delta: bool, unit: TimeUnit) -> String {
    let (kind, code) = if delta {
        ("timedelta64", 'm')
    } else {
        ("datetime64", 'M')
    };
    format!("{kind}[{u}] ({code}8[{u}])", u = unit.code())
}

/// True if `s` is a datetime or timedelta of any unit (the dtypes whose NaT is a `None`).
pub(crate) fn is_time_scalar(s: Scalar) -> bool {
    matches!(s, Scalar::DateTime(..) | Scalar::TimeDelta(..))
}

/// NumPy's NaT ("not a time"): the smallest `i64`.
pub const NAT: i64 = i64::MIN;

macro_rules! time_type {
    ($(#[$doc:meta])* $name:ident, $delta:literal, $scalar:ident, $serde_name:ident, $what:literal, $ex:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        pub struct $name<U> {
            count: i64,
            unit: PhantomData<U>,
        }

        impl<U: Unit> $name<U> {
            /// NaT, "not a time" (NumPy's `i64::MIN`).
            pub const NAT: Self = Self::new(NAT);

            #[doc = concat!("The ", $what, " of `count` units (`i64::MIN` is NaT).")]
            ///
            /// ```
            #[doc = concat!("use npy_serde::datetime::{", stringify!($name), ", S};")]
            #[doc = concat!("let t = ", stringify!($name), "::<S>::new(", $ex, ");")]
            #[doc = concat!("assert_eq!(t.count(), ", $ex, ");")]
            /// assert!(!t.is_nat());
            /// ```
            pub const fn new(count: i64) -> Self {
                Self { count, unit: PhantomData }
            }

            /// The `i64` count of units as stored (`i64::MIN` for NaT).
            pub const fn count(self) -> i64 {
                self.count
            }

            /// True if this is NaT.
            ///
            /// ```
            #[doc = concat!("use npy_serde::datetime::{", stringify!($name), ", Ns};")]
            #[doc = concat!("assert!(", stringify!($name), "::<Ns>::NAT.is_nat());")]
            /// ```
            pub const fn is_nat(self) -> bool {
                self.count == NAT
            }

            /// The count, or `None` for NaT.
            ///
            /// ```
            #[doc = concat!("use npy_serde::datetime::{", stringify!($name), ", D};")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::<D>::new(3).get(), Some(3));")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::<D>::NAT.get(), None);")]
            /// ```
            pub const fn get(self) -> Option<i64> {
                if self.is_nat() {
                    None
                } else {
                    Some(self.count)
                }
            }

            /// The unit.
            pub const fn unit() -> TimeUnit {
                U::UNIT
            }
        }

        impl<U: FixedUnit> $name<U> {
            /// The same time in unit `V`, if it is a whole number of `V` that fits (NaT stays
            /// NaT): the explicit conversion the readers never make.
            ///
            /// ```
            #[doc = concat!("use npy_serde::datetime::{", stringify!($name), ", Ms, Ns, S};")]
            #[doc = concat!("let t = ", stringify!($name), "::<S>::new(-3);")]
            #[doc = concat!("assert_eq!(t.to_unit::<Ms>(), Some(", stringify!($name), "::new(-3_000)));")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::<Ms>::new(1_500).to_unit::<S>(), None, \"not whole\");")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::<S>::new(i64::MAX).to_unit::<Ns>(), None, \"overflow\");")]
            #[doc = concat!("assert!(", stringify!($name), "::<S>::NAT.to_unit::<Ns>().unwrap().is_nat());")]
            /// ```
            pub fn to_unit<V: FixedUnit>(self) -> Option<$name<V>> {
                if self.is_nat() {
                    return Some($name::NAT);
                }
                let ns = i128::from(self.count) * i128::from(U::NANOS);
                let per = i128::from(V::NANOS);
                if ns % per != 0 {
                    return None;
                }
                match i64::try_from(ns / per) {
                    Ok(n) if n != NAT => Some($name::new(n)),
                    _ => None,
                }
            }
        }

        impl<U> Clone for $name<U> {
            fn clone(&self) -> Self {
                *self
            }
        }

        impl<U> Copy for $name<U> {}

        impl<U> PartialEq for $name<U> {
            fn eq(&self, other: &Self) -> bool {
                self.count == other.count
            }
        }

        impl<U> Eq for $name<U> {}

        impl<U> PartialOrd for $name<U> {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        /// By count: NaT sorts first (NumPy sorts it last, and compares it unequal to itself;
        /// here it is a value like any other, so that `Eq` and `Ord` hold).
        impl<U> Ord for $name<U> {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.count.cmp(&other.count)
            }
        }

        impl<U> Hash for $name<U> {
            fn hash<Hs: Hasher>(&self, state: &mut Hs) {
                self.count.hash(state)
            }
        }

        impl<U: Unit> Default for $name<U> {
            /// Zero units (the epoch for a datetime).
            fn default() -> Self {
                Self::new(0)
            }
        }

        impl<U: Unit> fmt::Debug for $name<U> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                if self.is_nat() {
                    write!(f, "{}[{}](NaT)", stringify!($name), U::UNIT.code())
                } else {
                    write!(f, "{}[{}]({})", stringify!($name), U::UNIT.code(), self.count)
                }
            }
        }

        impl<U: Unit> From<$name<U>> for i64 {
            fn from(t: $name<U>) -> i64 {
                t.count
            }
        }

        impl<U: Unit> NpyRecord for $name<U> {
            fn dtype() -> DType {
                DType::scalar(Scalar::$scalar(U::UNIT, 1))
            }
            const LAYOUT: Layout = Layout::time($delta, U::UNIT);
            // SAFETY: `#[repr(transparent)]` over an `i64` (the `PhantomData` has no bytes):
            // the layout's one `I64` leaf at offset 0, native order, itemsize 8; every bit
            // pattern is a valid value.
            const POD: Option<Pod<Self>> = Some(unsafe { Pod::new_unchecked() });
        }

        /// NaT is `None`: the same dtype and layout, read and written through serde's
        /// `Option` (the crate's readers give `None` for NaT, its writers NaT for `None`).
        impl<U: Unit> NpyRecord for Option<$name<U>> {
            fn dtype() -> DType {
                <$name<U>>::dtype()
            }
            const LAYOUT: Layout = Layout::time($delta, U::UNIT);
        }

        /// A newtype struct of the count, named after the unit (so that this crate's readers
        /// and writers check it; other formats see the count).
        impl<U: Unit> Serialize for $name<U> {
            fn serialize<Sr: Serializer>(&self, s: Sr) -> Result<Sr::Ok, Sr::Error> {
                s.serialize_newtype_struct(U::$serde_name, &self.count)
            }
        }

        impl<'de, U: Unit> Deserialize<'de> for $name<U> {
            fn deserialize<Dr: Deserializer<'de>>(d: Dr) -> Result<Self, Dr::Error> {
                struct V<U>(PhantomData<U>);
                impl<'de, U: Unit> Visitor<'de> for V<U> {
                    type Value = $name<U>;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "{}", describe($delta, U::UNIT))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                        Ok($name::new(v))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                        i64::try_from(v).map($name::new).map_err(|_| {
                            E::invalid_value(de::Unexpected::Unsigned(v), &self)
                        })
                    }
                    fn visit_newtype_struct<Dr: Deserializer<'de>>(
                        self,
                        d: Dr,
                    ) -> Result<Self::Value, Dr::Error> {
                        i64::deserialize(d).map($name::new)
                    }
                }
                d.deserialize_newtype_struct(U::$serde_name, V(PhantomData))
            }
        }
    };
}

time_type! {
    /// A NumPy `datetime64[unit]` (`<M8[unit]`): an `i64` count of `U` since
    /// 1970-01-01T00:00 (UTC, as NumPy counts), or NaT. See the [module docs](self).
    ///
    /// ```
    /// use npy_serde::datetime::{DateTime64, D};
    /// use npy_serde::NpyRecord;
    /// assert_eq!(DateTime64::<D>::dtype().descr(), "'<M8[D]'");
    /// let day = DateTime64::<D>::new(19_000);
    /// assert_eq!(format!("{day:?}"), "DateTime64[D](19000)");
    /// ```
    DateTime64, false, DateTime, DATETIME_NAME, "datetime", "1_700_000_000"
}

time_type! {
    /// A NumPy `timedelta64[unit]` (`<m8[unit]`): an `i64` count of `U`, or NaT. See the
    /// [module docs](self).
    ///
    /// ```
    /// use npy_serde::datetime::{TimeDelta64, Ms};
    /// use npy_serde::NpyRecord;
    /// assert_eq!(TimeDelta64::<Ms>::dtype().descr(), "'<m8[ms]'");
    /// ```
    TimeDelta64, true, TimeDelta, TIMEDELTA_NAME, "timedelta", "-90"
}

#[cfg(test)]
mod tests;
