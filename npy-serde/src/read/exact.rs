//! The exact tier of element decoding: a deserializer specialized on a type's compile-time
//! layout.
//!
//! For `T: NpyRecord`, [`NpyRecord::LAYOUT`] describes `T`'s dtype as a constant tape of steps
//! (`crate::layout`). When a file's element layout is that tape (in the same byte order, or in
//! the opposite one throughout), every element is offered to [`ExactDe`]: each of its
//! `deserialize_*` methods looks up its step *in `T::LAYOUT`* at an index that, once serde's
//! derived visitor is inlined, is a constant as well. So the kind check, the offset, the bounds
//! check and the byte swap all fold away, and a record of scalars compiles to the loads a
//! hand-written decoder would make. Measured on W2 (33-byte records into `Vec<Rec>` from a
//! memory map), that is within about 10% of such a decoder, against 3x slower for the
//! runtime-planned tier of `crate::read::planned`.
//!
//! The tier never trusts the type beyond what it checks: a request that does not match its
//! step (a conversion, a hand-written `Deserialize` asking for something else, a struct whose
//! serde field list is not the file's field names in order) is a *miss*, and the caller decodes
//! that element and the rest of the array on the other tiers, which handle every case and
//! report errors with their position. No state is shared between steps, so a visitor that
//! stops early or asks twice cannot shift later reads.

use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use serde::de::{self, Deserialize, DeserializeSeed, SeqAccess, Visitor};

use crate::datetime::time_of_name;
use crate::dtype::DType;
use crate::kind::{numbers, Kind};
use crate::layout::{time_tag, Op, MAX_STEPS};
use crate::miss::{miss, Miss, Result};
use crate::record::{flip_of, step_of};
use crate::NpyRecord;

/// The per-array state of the exact tier: the file's field names per record step, to check
/// serde's `fields` lists against, and which lists were found equal (by address).
pub(crate) struct ExactPlan {
    names: Vec<Option<Box<[String]>>>,
    verified: [Cell<usize>; MAX_STEPS],
}

/// Decodes `bytes` (whole elements) on the exact tier into `out` up to the first miss, and
/// returns how many elements it decoded.
pub(crate) type RunFn<T> = fn(&[u8], &ExactPlan, &mut Vec<T>) -> usize;

/// The exact tier for one array of `T`: its plan and the decoding loop for its byte order.
pub(crate) struct ExactTier<T> {
    pub(crate) plan: ExactPlan,
    pub(crate) run: RunFn<T>,
    /// `run`, decoding into uninitialized slots instead (for disjoint parts of one result,
    /// filled in parallel).
    pub(crate) run_into: RunIntoFn<T>,
    /// Whether the file's layout is `T::LAYOUT` in the opposite byte order (for [`one`] and
    /// [`fold`], which are generic over the caller and so not behind a pointer).
    pub(crate) flip: bool,
}

/// Decodes `bytes` (whole elements) into the first slots of `out` up to the first miss (or
/// the end of either) and returns how many slots it filled, in order.
pub(crate) type RunIntoFn<T> = fn(&[u8], &ExactPlan, &mut [MaybeUninit<T>]) -> usize;

/// The tiers of an element iterator ([`RecordReader`](crate::RecordReader),
/// [`MmapRecords`](crate::MmapRecords)) for any `Deserialize` type: the runtime-planned tier,
/// then the general one.
#[derive(Debug, Clone, Copy, Default)]
pub struct General;

/// The tiers of an element iterator for a type that knows its dtype (`NpyRecord`): the exact
/// tier of its compile-time layout first, until its first miss, then those of [`General`].
/// Made by [`RecordReader::new`](crate::RecordReader::new) and
/// [`MmapArray::records`](crate::MmapArray::records).
pub struct Exact<T>(pub(crate) Option<ExactTier<T>>);

impl<T> std::fmt::Debug for Exact<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Exact").field(&self.0.is_some()).finish()
    }
}

/// Finds the exact tier for reading elements of `dtype` as `T`, if `T`'s layout is the file's.
pub(crate) type TierFn<T> = fn(&DType) -> Option<ExactTier<T>>;

/// The exact tier for reading elements of `dtype` as `T`: `Some` if `dtype`'s layout is
/// `T::LAYOUT`, or `T::LAYOUT` with every multi-byte value in the opposite byte order.
pub(crate) fn tier<'de, T: Deserialize<'de> + NpyRecord>(dtype: &DType) -> Option<ExactTier<T>> {
    let flip = flip_of::<T>(dtype)?;
    let (run, run_into): (RunFn<T>, RunIntoFn<T>) = match flip {
        false => (<T as Run>::run::<false>, <T as Run>::run_into::<false>),
        true => (<T as Run>::run::<true>, <T as Run>::run_into::<true>),
    };
    let mut names = Vec::with_capacity(T::LAYOUT.steps().len());
    record_names(dtype, &mut names);
    debug_assert_eq!(names.len(), T::LAYOUT.steps().len());
    Some(ExactTier {
        plan: ExactPlan {
            names,
            verified: std::array::from_fn(|_| Cell::new(0)),
        },
        run,
        run_into,
        flip,
    })
}

/// Pushes one entry per step of `Layout::of(dtype)`, in the same order: the field names at
/// record steps, `None` elsewhere. Only called on exact layouts (at most `MAX_STEPS` steps).
fn record_names(dtype: &DType, out: &mut Vec<Option<Box<[String]>>>) {
    match dtype {
        DType::Plain(_) => out.push(None),
        DType::Array(base, shape) => axes(base, shape, out),
        DType::Record(r) => {
            out.push(Some(r.fields().iter().map(|f| f.name.clone()).collect()));
            for f in r.fields() {
                record_names(&f.dtype, out);
            }
        }
    }
}

fn axes(base: &DType, shape: &[u64], out: &mut Vec<Option<Box<[String]>>>) {
    match shape.split_first() {
        None => record_names(base, out),
        Some((&n, rest)) => {
            out.push(None);
            for _ in 0..n {
                axes(base, rest, out);
            }
        }
    }
}

impl ExactPlan {
    /// True if serde's `fields` are the names of the file's record at step `at`, in order.
    #[inline(always)]
    fn fields_match<S: Site>(&self, at: usize, fields: &'static [&'static str]) -> bool {
        match self.verified.get(at) {
            Some(v) if v.get() == fields.as_ptr() as usize && !fields.is_empty() => true,
            // A trusted site's caller checks again (see `Site`): no call in its loop.
            _ if S::TRUSTED => false,
            _ => self.check_fields(at, fields),
        }
    }

    #[cold]
    #[inline(never)]
    fn check_fields(&self, at: usize, fields: &'static [&'static str]) -> bool {
        let Some(Some(names)) = self.names.get(at) else {
            return false;
        };
        let equal = names.len() == fields.len() && names.iter().zip(fields).all(|(a, b)| a == b);
        if equal && let Some(v) = self.verified.get(at) {
            v.set(fields.as_ptr() as usize);
        }
        equal
    }
}

/// The decoding loop of the exact tier.
///
/// It is a method of an impl on `T` itself because the compiler puts such a method in the same
/// codegen unit as `T`'s own impls, `T::deserialize` among them: only there can that inline
/// into the loop (it is not `#[inline]`), and a record handed back through memory instead
/// costs about half again as much as decoding it (measured on W2).
trait Run<'de>: Sized {
    fn run<const FLIP: bool>(bytes: &[u8], plan: &ExactPlan, out: &mut Vec<Self>) -> usize;
    fn run_into<const FLIP: bool>(
        bytes: &[u8],
        plan: &ExactPlan,
        out: &mut [MaybeUninit<Self>],
    ) -> usize;
}

impl<'de, T: Deserialize<'de> + NpyRecord> Run<'de> for T {
    /// Through `run_into`: the one loop that calls `T::deserialize` on this tier, so that the
    /// call has one caller and inlines (with two, it did not, and W2 ran at half the speed).
    #[inline(never)]
    fn run<const FLIP: bool>(bytes: &[u8], plan: &ExactPlan, out: &mut Vec<T>) -> usize {
        let size = const { T::LAYOUT.size as usize };
        if size == 0 {
            return 0;
        }
        // Room for the whole run up front: each record is decoded straight into its slot.
        let n = bytes.len() / size;
        out.reserve(n);
        let len = out.len();
        let k = Self::run_into::<FLIP>(bytes, plan, &mut out.spare_capacity_mut()[..n]);
        // SAFETY: `run_into` initialized the first `k` slots after the `len` elements, in
        // order, and `len + k <= capacity`.
        unsafe { out.set_len(len + k) };
        k
    }

    #[inline(never)]
    fn run_into<const FLIP: bool>(
        bytes: &[u8],
        plan: &ExactPlan,
        out: &mut [MaybeUninit<T>],
    ) -> usize {
        let size = const { T::LAYOUT.size as usize };
        if size == 0 {
            return 0;
        }
        let mut n = 0;
        for (chunk, slot) in bytes.chunks_exact(size).zip(out.iter_mut()) {
            match T::deserialize(ExactDe::<T, FLIP> {
                bytes: chunk,
                at: 0,
                plan,
                _t: PhantomData,
            }) {
                Ok(v) => {
                    slot.write(v);
                }
                Err(_) => break,
            }
            n += 1;
        }
        n
    }
}

/// A call site of the exact tier (see [`ExactDe`]).
pub(crate) trait Site {
    /// A trusted site compares serde's field lists only with the ones already verified: a
    /// list not seen yet is a miss, which its caller retries on a checking site. This keeps
    /// the check's call (a string comparison) out of the site's loop, where the registers it
    /// clobbers made the loop keep its caller's state in memory.
    const TRUSTED: bool = false;
}

impl Site for () {}

/// The site `S`, checking field lists.
pub(crate) struct Checked<S>(PhantomData<S>);

impl<S> Site for Checked<S> {}

/// The site `S`, trusting only the field lists already verified.
struct Trusted<S>(PhantomData<S>);

impl<S> Site for Trusted<S> {
    const TRUSTED: bool = true;
}

/// Decodes one element (`bytes` is exactly one element) on the exact tier; `None` on a miss.
///
/// For iterators that hand out one element per call: inlined into the caller, the element is
/// decoded where it is used, with no batch in between. `S` names the caller (see [`ExactDe`]).
/// As in [`fold`], the inlined decode trusts only a field list already verified; the first
/// element (and any miss) is decoded again out of line, where the list is checked.
#[inline(always)]
pub(crate) fn one<'de, T: Deserialize<'de> + NpyRecord, S>(
    t: &ExactTier<T>,
    bytes: &[u8],
) -> Option<T> {
    let v = match t.flip {
        false => T::deserialize(ExactDe::<T, false, Trusted<S>> {
            bytes,
            at: 0,
            plan: &t.plan,
            _t: PhantomData,
        }),
        true => T::deserialize(ExactDe::<T, true, Trusted<S>> {
            bytes,
            at: 0,
            plan: &t.plan,
            _t: PhantomData,
        }),
    };
    match v {
        Ok(v) => Some(v),
        Err(_) => one_checked::<T, S>(t, bytes),
    }
}

/// [`one`] on a checking site: the first element, or a miss.
#[cold]
#[inline(never)]
fn one_checked<'de, T: Deserialize<'de> + NpyRecord, S>(
    t: &ExactTier<T>,
    bytes: &[u8],
) -> Option<T> {
    match t.flip {
        false => T::deserialize(ExactDe::<T, false, Checked<S>> {
            bytes,
            at: 0,
            plan: &t.plan,
            _t: PhantomData,
        })
        .ok(),
        true => T::deserialize(ExactDe::<T, true, Checked<S>> {
            bytes,
            at: 0,
            plan: &t.plan,
            _t: PhantomData,
        })
        .ok(),
    }
}

/// Folds `f` over the elements of `bytes` (whole elements) decoded on the exact tier, up to the
/// first miss; returns the accumulator and how many elements `f` was given.
///
/// The internal iteration of the iterators (`Iterator::fold`, and so `for_each`, `sum`,
/// `collect`): each element goes from the bytes to `f` without a stop in memory, and what `f`
/// does not use is never decoded.
#[inline]
pub(crate) fn fold<'de, T, B, F>(t: &ExactTier<T>, bytes: &[u8], acc: B, f: &mut F) -> (B, usize)
where
    T: Deserialize<'de> + NpyRecord,
    F: FnMut(B, T) -> B,
{
    match t.flip {
        false => T::fold_run::<false, B, F>(bytes, &t.plan, acc, f),
        true => T::fold_run::<true, B, F>(bytes, &t.plan, acc, f),
    }
}

/// [`fold`]'s loop, a method of a blanket impl on `T` for the reason given at [`Run`]: it is
/// compiled next to `T::deserialize`, which then inlines into it.
trait FoldRun<'de>: Sized {
    fn fold_run<const FLIP: bool, B, F: FnMut(B, Self) -> B>(
        bytes: &[u8],
        plan: &ExactPlan,
        acc: B,
        f: &mut F,
    ) -> (B, usize);
}

impl<'de, T: Deserialize<'de> + NpyRecord> FoldRun<'de> for T {
    fn fold_run<const FLIP: bool, B, F: FnMut(B, T) -> B>(
        bytes: &[u8],
        plan: &ExactPlan,
        mut acc: B,
        f: &mut F,
    ) -> (B, usize) {
        let size = const { T::LAYOUT.size as usize };
        if size == 0 {
            return (acc, 0);
        }
        let mut n = 0;
        let mut chunks = bytes.chunks_exact(size);
        loop {
            // The sites are `F`: this loop is the one caller of their `T::deserialize`.
            let mut missed = None;
            for chunk in chunks.by_ref() {
                match T::deserialize(ExactDe::<T, FLIP, Trusted<F>> {
                    bytes: chunk,
                    at: 0,
                    plan,
                    _t: PhantomData,
                }) {
                    Ok(v) => acc = f(acc, v),
                    Err(_) => {
                        missed = Some(chunk);
                        break;
                    }
                }
                n += 1;
            }
            // A field list not verified yet (the first element), or a real miss.
            let Some(chunk) = missed else { break };
            match T::deserialize(ExactDe::<T, FLIP, Checked<F>> {
                bytes: chunk,
                at: 0,
                plan,
                _t: PhantomData,
            }) {
                Ok(v) => acc = f(acc, v),
                Err(_) => break,
            }
            n += 1;
        }
        (acc, n)
    }
}

/// The value at step `at` of `T::LAYOUT`, in an element's `bytes`.
///
/// `S` names the call site (a loop of this module, or a caller's closure type): each site gets
/// its own instance of `T::deserialize`, so each instance has one caller and inlines into it
/// (an instance with two callers did not, and ran at half the speed).
struct ExactDe<'a, 'p, T, const FLIP: bool, S = ()> {
    bytes: &'a [u8],
    at: usize,
    plan: &'p ExactPlan,
    _t: PhantomData<fn() -> (T, S)>,
}

impl<T: NpyRecord, const FLIP: bool, S> ExactDe<'_, '_, T, FLIP, S> {
    /// The `N` bytes of a leaf of `kind` and whether to swap them, or `None` (a miss).
    #[inline(always)]
    fn leaf<const N: usize>(&self, kind: Kind) -> Option<([u8; N], bool)> {
        let s = step_of::<T>(self.at)?;
        if s.op != Op::Leaf(kind) {
            return None;
        }
        let at = s.arg as usize;
        let b = self.bytes.get(at..at.checked_add(N)?)?;
        Some((b.try_into().ok()?, s.swap ^ FLIP))
    }

    /// The items of the sequence (record or subarray) at this step, if it has `len` of them.
    #[inline(always)]
    fn items(&self, len: Option<usize>) -> Result<ExactSeq<'_, '_, T, FLIP, S>> {
        match step_of::<T>(self.at) {
            Some(s)
                if matches!(s.op, Op::Record | Op::Array)
                    && len.is_none_or(|l| l == s.arg as usize) =>
            {
                Ok(ExactSeq {
                    bytes: self.bytes,
                    next: self.at + 1,
                    left: s.arg,
                    plan: self.plan,
                    _t: PhantomData,
                })
            }
            _ => Err(miss()),
        }
    }
}

macro_rules! leaves {
    ($($k:ident $t:ty, $u:ty, $code:literal, $method:ident, $visit:ident, $ser:ident, $conv:expr, $to:expr;)*) => {
        $(
            #[inline(always)]
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                match self.leaf::<{ std::mem::size_of::<$u>() }>(Kind::$k) {
                    Some((b, swap)) => {
                        let x = <$u>::from_ne_bytes(b);
                        let x = if swap { x.swap_bytes() } else { x };
                        #[allow(clippy::redundant_closure_call)]
                        visitor.$visit(($conv)(x))
                    }
                    None => Err(miss()),
                }
            }
        )*
    };
}

impl<'de, T: NpyRecord, const FLIP: bool, S: Site> de::Deserializer<'de>
    for ExactDe<'_, '_, T, FLIP, S>
{
    type Error = Miss;

    numbers!(leaves);

    #[inline(always)]
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // A byte other than 0 or 1 is an error, which the general path reports.
        match self.leaf::<1>(Kind::Bool) {
            Some(([b @ (0 | 1)], _)) => visitor.visit_bool(b == 1),
            _ => Err(miss()),
        }
    }

    #[inline(always)]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        // Positionally, when serde's field list is the record's names in order (so reading
        // by position gives what reading by name would).
        match step_of::<T>(self.at) {
            Some(s) if s.op == Op::Record && self.plan.fields_match::<S>(self.at, fields) => {
                // Only if the visitor takes every field (see `Ctx::read_by_name`, which the fast
                // tier calls when it decodes this element again).
                let mut seq = self.items(Some(fields.len()))?;
                let value = visitor.visit_seq(&mut seq)?;
                match seq.left {
                    0 => Ok(value),
                    _ => Err(miss()),
                }
            }
            _ => Err(miss()),
        }
    }

    #[inline(always)]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        visitor.visit_seq(self.items(Some(len))?)
    }

    #[inline(always)]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_tuple(len, visitor)
    }

    #[inline(always)]
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_seq(self.items(None)?)
    }

    #[inline(always)]
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // A datetime's NaT is `None` (a constant test: the tag is `T::LAYOUT`'s).
        if const { &T::LAYOUT }.is_time(self.at) {
            return match self.leaf::<8>(Kind::I64) {
                Some((b, swap)) => {
                    let x = u64::from_ne_bytes(b);
                    let x = if swap { x.swap_bytes() } else { x };
                    if x as i64 == i64::MIN {
                        visitor.visit_none()
                    } else {
                        visitor.visit_some(self)
                    }
                }
                None => Err(miss()),
            };
        }
        visitor.visit_some(self)
    }

    #[inline(always)]
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        // `half::f16` is a newtype around an f32 that the general path makes exact.
        if name == "f16" {
            return Err(miss());
        }
        // A `DateTime64<U>`/`TimeDelta64<U>` only where `T::LAYOUT` (the file's) has its unit.
        if let Some((delta, unit)) = time_of_name(name) {
            match step_of::<T>(self.at) {
                Some(s) if s.tag == time_tag(delta, unit) => {}
                _ => return Err(miss()),
            }
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        Err(miss())
    }

    fn is_human_readable(&self) -> bool {
        false
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char str string bytes byte_buf unit unit_struct map enum identifier
    }
}

/// The items of a record or subarray, each at its own step.
struct ExactSeq<'a, 'p, T, const FLIP: bool, S> {
    bytes: &'a [u8],
    /// The step of the next item.
    next: usize,
    left: u32,
    plan: &'p ExactPlan,
    _t: PhantomData<fn() -> (T, S)>,
}

impl<'de, T: NpyRecord, const FLIP: bool, X: Site> SeqAccess<'de> for ExactSeq<'_, '_, T, FLIP, X> {
    type Error = Miss;

    #[inline(always)]
    fn next_element_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<Option<S::Value>> {
        if self.left == 0 {
            return Ok(None);
        }
        let at = self.next;
        let Some(s) = step_of::<T>(at) else {
            return Err(miss());
        };
        self.left -= 1;
        // The next sibling, whatever this item's visitor does.
        self.next = s.end as usize;
        seed.deserialize(ExactDe::<T, FLIP, X> {
            bytes: self.bytes,
            at,
            plan: self.plan,
            _t: PhantomData,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use serde::Deserialize;

    /// Decodes the elements of `data` (of `descr`) on the exact tier, if it engages: the
    /// elements decoded before the first miss.
    fn exact<T: for<'de> Deserialize<'de> + NpyRecord>(descr: &str, data: &[u8]) -> Option<Vec<T>> {
        let dtype: DType = descr.parse().unwrap();
        let t = tier::<T>(&dtype)?;
        let mut out = Vec::new();
        let n = (t.run)(data, &t.plan, &mut out);
        assert_eq!(n, out.len());
        Some(out)
    }

    #[derive(Deserialize, Debug, PartialEq)]
    struct Rec {
        id: i64,
        y: f32,
        ok: bool,
        v: [u16; 2],
    }

    impl NpyRecord for Rec {
        fn dtype() -> DType {
            "[('id','<i8'),('y','<f4'),('ok','|b1'),('v','<u2',(2,))]"
                .parse()
                .unwrap()
        }
        const LAYOUT: Layout = Layout::record(
            &[
                &i64::LAYOUT,
                &f32::LAYOUT,
                &bool::LAYOUT,
                &<[u16; 2]>::LAYOUT,
            ],
            false,
        );
    }

    const LE: &str = "[('id','<i8'),('y','<f4'),('ok','|b1'),('v','<u2',(2,))]";
    const BE: &str = "[('id','>i8'),('y','>f4'),('ok','|b1'),('v','>u2',(2,))]";

    fn bytes(big: bool, recs: &[(i64, f32, u8, [u16; 2])]) -> Vec<u8> {
        let mut b = Vec::new();
        for &(id, y, ok, v) in recs {
            if big {
                b.extend(id.to_be_bytes());
                b.extend(y.to_be_bytes());
                b.push(ok);
                v.iter().for_each(|x| b.extend(x.to_be_bytes()));
            } else {
                b.extend(id.to_le_bytes());
                b.extend(y.to_le_bytes());
                b.push(ok);
                v.iter().for_each(|x| b.extend(x.to_le_bytes()));
            }
        }
        b
    }

    #[test]
    fn both_byte_orders() {
        let recs = [(7, 1.5, 1, [3, 4]), (-1, -0.25, 0, [65535, 0])];
        let want = vec![
            Rec {
                id: 7,
                y: 1.5,
                ok: true,
                v: [3, 4],
            },
            Rec {
                id: -1,
                y: -0.25,
                ok: false,
                v: [65535, 0],
            },
        ];
        assert_eq!(exact::<Rec>(LE, &bytes(false, &recs)).unwrap(), want);
        assert_eq!(exact::<Rec>(BE, &bytes(true, &recs)).unwrap(), want);
    }

    #[test]
    fn stops_at_the_first_miss() {
        // A bool byte of 2 is for the general path to report.
        let data = bytes(
            false,
            &[
                (1, 0.0, 1, [0, 0]),
                (2, 0.0, 2, [0, 0]),
                (3, 0.0, 0, [0, 0]),
            ],
        );
        let got = exact::<Rec>(LE, &data).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].id, 1);
    }

    #[test]
    fn engages_only_on_the_same_layout_and_names() {
        // Other types, offsets, byte orders mixed, or fewer fields: no tier at all.
        for descr in [
            "[('id','<i4'),('y','<f4'),('ok','|b1'),('v','<u2',(2,))]",
            "[('id','<i8'),('y','<f4'),('ok','|b1'),('v','<u2',(3,))]",
            "[('id','<i8'),('y','>f4'),('ok','|b1'),('v','<u2',(2,))]",
            "[('id','<i8'),('y','<f4'),('ok','|b1')]",
            "[('id','<i8'),('','|V1'),('y','<f4'),('ok','|b1'),('v','<u2',(2,))]",
        ] {
            assert!(exact::<Rec>(descr, &[0; 64]).is_none(), "{descr}");
        }
        // Same layout, other names: the tier exists but misses the first element (serde's
        // field list is not the file's names).
        let renamed = "[('id','<i8'),('z','<f4'),('ok','|b1'),('v','<u2',(2,))]";
        let data = bytes(false, &[(1, 0.0, 1, [0, 0])]);
        assert_eq!(exact::<Rec>(renamed, &data).unwrap(), []);
    }

    #[test]
    fn other_requests_miss() {
        let data = bytes(false, &[(1, 2.0, 1, [3, 4])]);
        // Another type for a field (a lossless widening is still for the general path).
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Wide {
            id: i64,
            y: f64,
            ok: bool,
            v: [u16; 2],
        }
        impl NpyRecord for Wide {
            fn dtype() -> DType {
                Rec::dtype()
            }
            const LAYOUT: Layout = Rec::LAYOUT;
        }
        assert_eq!(exact::<Wide>(LE, &data).unwrap().len(), 0);
        // A hand-written impl that asks for something else.
        #[derive(Debug)]
        struct Odd;
        impl<'de> Deserialize<'de> for Odd {
            fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Odd, D::Error> {
                d.deserialize_i64(de::IgnoredAny).map(|_| Odd)
            }
        }
        impl NpyRecord for Odd {
            fn dtype() -> DType {
                Rec::dtype()
            }
            const LAYOUT: Layout = Rec::LAYOUT;
        }
        assert_eq!(exact::<Odd>(LE, &data).unwrap().len(), 0);
    }

    #[test]
    fn positional_tuples_and_subarray_sequences() {
        let data = bytes(false, &[(5, 0.5, 0, [8, 9])]);
        type Tup = (i64, f32, bool, Vec<u16>);
        #[derive(Deserialize, Debug, PartialEq)]
        struct T(Tup);
        impl NpyRecord for T {
            fn dtype() -> DType {
                Rec::dtype()
            }
            const LAYOUT: Layout = Rec::LAYOUT;
        }
        assert_eq!(
            exact::<T>(LE, &data).unwrap(),
            [T((5, 0.5, false, vec![8, 9]))]
        );
    }

    /// A visitor that reads fewer items than the sequence has cannot shift the next field.
    #[test]
    fn short_visitors_do_not_shift_later_fields() {
        #[derive(Debug, PartialEq)]
        struct First(u16);
        impl<'de> Deserialize<'de> for First {
            fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = First;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a sequence")
                    }
                    fn visit_seq<A: SeqAccess<'de>>(
                        self,
                        mut seq: A,
                    ) -> std::result::Result<First, A::Error> {
                        Ok(First(seq.next_element()?.unwrap_or(0)))
                    }
                }
                d.deserialize_tuple(2, V)
            }
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct R2 {
            v: First,
            w: u16,
        }
        impl NpyRecord for R2 {
            fn dtype() -> DType {
                "[('v','<u2',(2,)),('w','<u2')]".parse().unwrap()
            }
            const LAYOUT: Layout = Layout::record(&[&<[u16; 2]>::LAYOUT, &u16::LAYOUT], false);
        }
        let data = [1, 0, 2, 0, 3, 0];
        assert_eq!(
            exact::<R2>("[('v','<u2',(2,)),('w','<u2')]", &data).unwrap(),
            [R2 { v: First(1), w: 3 }]
        );
    }
}
