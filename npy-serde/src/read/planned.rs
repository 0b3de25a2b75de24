//! The runtime-planned tier of element decoding (the "fast tier").
//!
//! When the caller owns the `T::deserialize` call for each element (reading a whole array
//! into a `Vec`, streaming records), each element is first offered to [`RowDe`]: a minimal
//! deserializer that only knows the exact, planned cases (a scalar requested as its own Rust
//! type, a record read positionally into a struct with the same fields, 1-D subarrays of
//! scalars) and carries no error context. Anything else, and any error at all, is a *miss*:
//! the caller decodes the same element again through the general deserializer, which handles
//! every conversion and reports errors with their position, and keeps using the general path
//! for the rest of the array.
//!
//! The point is code size: with nothing but the planned cases and a one-word miss, serde's
//! derived visitor and our checks inline into one straight line of about ten instructions per
//! field (a byte compare for the kind and byte order, one bounds compare, the load). On W2
//! (33-byte records into `Vec<Rec>`, callgrind) a record costs 177 instructions this way,
//! against about 550 through the general path before this tier existed.
//!
//! Deserializing twice is safe for any `Deserialize` impl: a miss only discards a partly
//! built value.

use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::slice;

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};

use super::plan::{Ctx, FieldPlan, Plan, StructPlan};
use crate::datetime::time_of_name;
use crate::dtype::DType;
use crate::kind::{load, numbers, Kind};
use crate::miss::{miss, Miss, Result};

/// One whole element.
///
/// `S` names the call site: each site gets its own instance of `T::deserialize` and of the
/// visitor's methods, so each has one caller and can inline into it (see
/// `crate::read::exact`'s `ExactDe`).
pub(crate) struct RowDe<'a, 'c, S = ()> {
    pub(crate) bytes: &'a [u8],
    pub(crate) dtype: &'a DType,
    pub(crate) plan: Plan,
    pub(crate) ctx: &'c Ctx,
    /// The struct plan of the previous element (its `Ctx` slot), keyed by serde's `fields`
    /// list: every element of the array has the same record dtype, so this skips the search.
    pub(crate) last: &'c LastPlan,
    pub(crate) site: PhantomData<fn() -> S>,
}

/// See [`RowDe::last`].
/// The key is the address of serde's `fields` list (an integer, so that readers stay `Send`).
pub(crate) type LastPlan = Cell<Option<(usize, usize)>>;

/// A value at `at` of its parent's `bytes`: a record field or a subarray item. Offsets are
/// `u32` (fields ending below 4 GiB; see `FieldPlan::at`): `at as usize + size` cannot
/// overflow, so one comparison bounds each read.
struct ValDe<'a, 's, S> {
    bytes: &'a [u8],
    at: u32,
    /// Borrowed, so that checking it reads single bytes.
    plan: &'s Plan,
    site: PhantomData<fn() -> S>,
}

/// A record's fields, positionally.
struct RowSeq<'a, 's, S> {
    bytes: &'a [u8],
    fields: slice::Iter<'s, FieldPlan>,
    site: PhantomData<fn() -> S>,
}

/// The items of a 1-D subarray of scalars.
struct ItemSeq<'a, S> {
    bytes: &'a [u8],
    at: u32,
    item: Plan,
    left: usize,
    size: u32,
    site: PhantomData<fn() -> S>,
}

/// The items of the subarray at `at` of `bytes`, given its plan's [`Plan::vector`] and the
/// length serde asks for, if any.
///
/// Item offsets are `u32`, so `bytes` must be shorter than 4 GiB: then every in-bounds offset
/// is below 2^32, and walking the items in order meets an out-of-bounds item (a miss) before
/// an offset could wrap.
#[inline(always)]
fn items<S>(
    bytes: &[u8],
    at: usize,
    vector: Option<(Plan, usize, usize)>,
    len: Option<usize>,
) -> Result<ItemSeq<'_, S>> {
    match vector {
        Some((item, n, size))
            if len.is_none_or(|l| l == n) && u32::try_from(bytes.len()).is_ok() =>
        {
            Ok(ItemSeq {
                bytes,
                at: at as u32,
                item,
                left: n,
                // At most 16: a scalar's size.
                size: size as u32,
                site: PhantomData,
            })
        }
        _ => Err(miss()),
    }
}

/// The scalar, option, newtype and subarray methods, shared by [`RowDe`] (at 0) and
/// [`ValDe`] (at `self.at`).
macro_rules! planned {
    ($at:expr) => {
        numbers!(planned @scalars $at;);

        #[inline]
        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            visitor.visit_some(self)
        }

        #[inline]
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value> {
            // `half::f16` is a newtype around an f32 that the general path makes exact.
            if name == "f16" || time_of_name(name).is_some() {
                return Err(miss());
            }
            visitor.visit_newtype_struct(self)
        }

        #[inline]
        fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            visitor.visit_seq(items::<S>(self.bytes, $at(&self), self.plan.vector(), None)?)
        }

        #[inline]
        fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
            visitor.visit_seq(items::<S>(self.bytes, $at(&self), self.plan.vector(), Some(len))?)
        }

        #[inline]
        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            len: usize,
            visitor: V,
        ) -> Result<V::Value> {
            self.deserialize_tuple(len, visitor)
        }

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
            Err(miss())
        }

        fn is_human_readable(&self) -> bool {
            false
        }
    };
    (@scalars $at:expr; $($k:ident $t:ty, $u:ty, $code:literal, $method:ident, $visit:ident, $ser:ident, $conv:expr, $to:expr;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                let x = match self.plan.scalar(Kind::$k) {
                    Some(false) => load!(self.bytes, $at(&self), $u, false),
                    Some(true) => load!(self.bytes, $at(&self), $u, true),
                    None => None,
                };
                match x {
                    #[allow(clippy::redundant_closure_call)]
                    Some(x) => visitor.$visit(($conv)(x)),
                    None => Err(miss()),
                }
            }
        )*
    };
}

/// The runtime-planned tier's loop over consecutive elements, a method of a blanket impl on
/// `T` so that rustc compiles it next to `T::deserialize`, which then inlines into it (see
/// `crate::read::exact`'s `Run`); `S` names the caller (see [`RowDe`]).
pub(crate) trait PlannedRun<'de>: Sized {
    /// Decodes the whole elements of `bytes` in order up to the first miss, folding each into
    /// `acc` with `f` until `f` breaks; returns the accumulator and how many elements `f`
    /// continued on (an element `f` breaks on is not counted).
    fn planned_fold<S, B, F: FnMut(B, Self) -> ControlFlow<B, B>>(
        bytes: &[u8],
        dtype: &DType,
        ctx: &Ctx,
        last: &LastPlan,
        acc: B,
        f: F,
    ) -> (B, usize);

    /// [`planned_fold`](Self::planned_fold) handing each element to `sink` (false: stop);
    /// returns how many `sink` took.
    #[inline]
    fn planned_run<S, F: FnMut(Self) -> bool>(
        bytes: &[u8],
        dtype: &DType,
        ctx: &Ctx,
        last: &LastPlan,
        mut sink: F,
    ) -> usize {
        let step = |(), v| match sink(v) {
            true => ControlFlow::Continue(()),
            false => ControlFlow::Break(()),
        };
        Self::planned_fold::<S, _, _>(bytes, dtype, ctx, last, (), step).1
    }
}

impl<'de, T: de::Deserialize<'de>> PlannedRun<'de> for T {
    #[inline(never)]
    fn planned_fold<S, B, F: FnMut(B, T) -> ControlFlow<B, B>>(
        bytes: &[u8],
        dtype: &DType,
        ctx: &Ctx,
        last: &LastPlan,
        mut acc: B,
        mut f: F,
    ) -> (B, usize) {
        let size = dtype.itemsize();
        let plan = Plan::of(dtype);
        let mut n = 0;
        for chunk in bytes.chunks_exact(size.max(1)) {
            // The site is `(S, F)`: a caller generic over its input (a source type, say)
            // makes one instance of this loop per input, each with its own closure `F`, and
            // each must have its own `T::deserialize` to inline it.
            let v = T::deserialize(RowDe::<(S, F)> {
                bytes: chunk,
                dtype,
                plan,
                ctx,
                last,
                site: PhantomData,
            });
            let Ok(v) = v else { break };
            match f(acc, v) {
                ControlFlow::Continue(a) => acc = a,
                ControlFlow::Break(a) => return (a, n),
            }
            n += 1;
        }
        (acc, n)
    }
}

/// The plan slot of `fields` read from a record of `dtype`, remembered in `last`: out of line,
/// so that the per-element path makes no call (the registers a call clobbers cost every
/// element spills).
#[cold]
#[inline(never)]
fn plan_slot(
    dtype: &DType,
    fields: &'static [&'static str],
    ctx: &Ctx,
    last: &LastPlan,
) -> Option<usize> {
    match (dtype, fields.len()) {
        // A struct with no fields could share its (dangling) `fields` pointer.
        (DType::Record(rec), 1..) => {
            let slot = ctx.plan_index(rec, fields)?;
            last.set(Some((fields.as_ptr() as usize, slot)));
            Some(slot)
        }
        _ => None,
    }
}

impl<'de, S> de::Deserializer<'de> for RowDe<'_, '_, S> {
    type Error = Miss;

    planned!(|_: &Self| 0usize);

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let slot = match self.last.get() {
            Some((key, slot)) if key == fields.as_ptr() as usize => slot,
            _ => plan_slot(self.dtype, fields, self.ctx, self.last).ok_or_else(miss)?,
        };
        match self.ctx.cached(slot) {
            Some(StructPlan::Seq(plan)) => {
                let mut seq = RowSeq::<S> {
                    bytes: self.bytes,
                    fields: plan.iter(),
                    site: PhantomData,
                };
                let value = visitor.visit_seq(&mut seq)?;
                if seq.fields.len() == 0 {
                    return Ok(value);
                }
                // The visitor took fewer fields than serde's list names: by name from now on
                // (see `Ctx::read_by_name`).
                if let DType::Record(rec) = self.dtype {
                    self.ctx.read_by_name(slot, rec, fields);
                }
                Err(miss())
            }
            _ => Err(miss()),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i128 u128 char str string bytes byte_buf unit unit_struct map enum identifier
        ignored_any
    }
}

impl<'de, S> de::Deserializer<'de> for ValDe<'_, '_, S> {
    type Error = Miss;

    planned!(|d: &Self| d.at as usize);

    serde::forward_to_deserialize_any! {
        bool i128 u128 char str string bytes byte_buf unit unit_struct map struct enum
        identifier ignored_any
    }
}

impl<'de, S> SeqAccess<'de> for RowSeq<'_, '_, S> {
    type Error = Miss;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        match self.fields.next() {
            Some(f) => seed
                .deserialize(ValDe::<S> {
                    bytes: self.bytes,
                    at: f.at,
                    plan: &f.fast,
                    site: PhantomData,
                })
                .map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}

impl<'de, S> SeqAccess<'de> for ItemSeq<'_, S> {
    type Error = Miss;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let at = self.at;
        // No overflow: the subarray ends below 4 GiB (a wrapped offset would fail the bounds
        // check anyway).
        self.at = at.wrapping_add(self.size);
        seed.deserialize(ValDe::<S> {
            bytes: self.bytes,
            at,
            plan: &self.item,
            site: PhantomData,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// Deserializes `bytes` as one element of `descr` on the fast tier.
    fn fast<'de, T: Deserialize<'de>>(descr: &str, bytes: &[u8]) -> Result<T> {
        let dtype: DType = descr.parse().unwrap();
        let ctx = Ctx::new(1 << 20);
        let last = LastPlan::default();
        T::deserialize(RowDe {
            bytes,
            dtype: &dtype,
            plan: Plan::of(&dtype),
            ctx: &ctx,
            last: &last,
            site: PhantomData::<fn() -> ()>,
        })
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Rec {
        id: i64,
        y: f32,
        v: [u16; 2],
    }

    fn rec_bytes(big: bool) -> Vec<u8> {
        let mut b = Vec::new();
        if big {
            b.extend(7i64.to_be_bytes());
            b.extend(1.5f32.to_be_bytes());
            b.extend(3u16.to_be_bytes());
            b.extend(4u16.to_be_bytes());
        } else {
            b.extend(7i64.to_le_bytes());
            b.extend(1.5f32.to_le_bytes());
            b.extend(3u16.to_le_bytes());
            b.extend(4u16.to_le_bytes());
        }
        b
    }

    const REC_LE: &str = "[('id', '<i8'), ('y', '<f4'), ('v', '<u2', (2,))]";
    const REC_BE: &str = "[('id', '>i8'), ('y', '>f4'), ('v', '>u2', (2,))]";

    #[test]
    fn exact_scalars_in_both_byte_orders() {
        assert_eq!(fast::<f64>("<f8", &1.5f64.to_le_bytes()).unwrap(), 1.5);
        assert_eq!(fast::<f64>(">f8", &1.5f64.to_be_bytes()).unwrap(), 1.5);
        assert_eq!(fast::<i16>(">i2", &(-2i16).to_be_bytes()).unwrap(), -2);
        assert_eq!(fast::<u8>("|u1", &[9]).unwrap(), 9);
        assert_eq!(fast::<Option<u8>>("|u1", &[9]).unwrap(), Some(9));
    }

    #[test]
    fn records_and_subarrays() {
        let want = Rec {
            id: 7,
            y: 1.5,
            v: [3, 4],
        };
        assert_eq!(fast::<Rec>(REC_LE, &rec_bytes(false)).unwrap(), want);
        assert_eq!(fast::<Rec>(REC_BE, &rec_bytes(true)).unwrap(), want);
        assert_eq!(
            fast::<Vec<u16>>("('<u2', (3,))", &[1, 0, 2, 0, 3, 0]).unwrap(),
            [1, 2, 3]
        );
        assert_eq!(
            fast::<(u16, u16)>("('<u2', (2,))", &[1, 0, 2, 0]).unwrap(),
            (1, 2)
        );
    }

    /// Everything outside the exact cases is a miss (an error), never a wrong value or panic:
    /// the general path then decodes the element.
    #[test]
    fn everything_else_misses() {
        // Conversions, even lossless ones.
        assert!(fast::<f64>("<f4", &1.5f32.to_le_bytes()).is_err());
        assert!(fast::<i64>("<i4", &1i32.to_le_bytes()).is_err());
        // Types the fast tier does not decode.
        assert!(fast::<bool>("|b1", &[1]).is_err());
        assert!(fast::<String>("|S2", b"ab").is_err());
        #[cfg(feature = "half")]
        assert!(fast::<half::f16>("<f2", &[0, 0x3c]).is_err());
        // Fields by name (another order), or fewer of them.
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Swapped {
            y: f32,
            id: i64,
            v: [u16; 2],
        }
        assert!(fast::<Swapped>(REC_LE, &rec_bytes(false)).is_err());
        // A subarray of another length.
        assert!(fast::<[u16; 3]>("('<u2', (2,))", &[1, 0, 2, 0]).is_err());
        // Short input: a miss, not a panic.
        assert!(fast::<Rec>(REC_LE, &rec_bytes(false)[..15]).is_err());
        assert!(fast::<f64>("<f8", &[0; 4]).is_err());
        assert!(fast::<Vec<u16>>("('<u2', (3,))", &[1, 0, 2]).is_err());
    }
}
