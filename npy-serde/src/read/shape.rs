//! The shape walk: an array's own axes as nested serde sequences ([`ShapeDe`]), and every
//! element of an array into a flat `Vec` ([`collect_elements`]), each element offered to the
//! tiers in turn: exact (`super::exact`), runtime-planned (`super::planned`), then general
//! (`super::general`), which serves the rest of the array after a tier's first miss.
//!
//! Calls the tiers and the sources below it; nothing here knows a dtype's bytes.

use serde::de::{self, Deserialize, DeserializeSeed, SeqAccess, Visitor};

use super::elem::{shape_text, ElemDe};
use super::entry::FastDe;
use super::exact::ExactTier;
use super::plan::{Ctx, Plan};
use super::planned::{LastPlan, PlannedRun, RowDe};
use super::source::{count_of, Source};
use crate::datetime::is_time_scalar;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kind::{load, numbers, Kind};

// ---------------------------------------------------------------------------------------------
// The array's own axes
// ---------------------------------------------------------------------------------------------

/// Deserializes the array's axes (`dims`) as nested sequences; at the innermost level, one
/// element from the source.
pub(crate) struct ShapeDe<'s, 'de, S: Source<'de>> {
    pub(crate) src: &'s mut S,
    pub(crate) dtype: &'s DType,
    pub(crate) dims: &'s [u64],
    pub(crate) ctx: &'s Ctx,
    pub(crate) plan: Plan,
    pub(crate) _de: std::marker::PhantomData<&'de ()>,
}

impl<'s, 'de, S: Source<'de>> ShapeDe<'s, 'de, S> {
    pub(crate) fn new(src: &'s mut S, dtype: &'s DType, dims: &'s [u64], ctx: &'s Ctx) -> Self {
        ShapeDe {
            src,
            dtype,
            dims,
            ctx,
            plan: Plan::of(dtype),
            _de: std::marker::PhantomData,
        }
    }

    #[inline]
    pub(super) fn leaf<T>(self, f: impl FnOnce(FastDe<'_, '_, 'de, '_>) -> Result<T>) -> Result<T> {
        let e = self.src.next_elem()?;
        let index = e.index;
        let mut de = ElemDe {
            bytes: e.bytes,
            borrowed: e.borrowed,
            dtype: self.dtype,
            dims: &[],
            offset: e.offset,
            ctx: self.ctx,
        };
        f(FastDe::whole(&mut de, self.plan)).map_err(|err| err.at_record(index))
    }

    pub(super) fn mismatch(&self, expected: &str) -> Error {
        Error::mismatch(
            expected,
            format!(
                "an array of shape {} with dtype {}",
                shape_text(self.dims),
                self.dtype
            ),
        )
    }

    pub(super) fn seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let (n, rest) = match self.dims.split_first() {
            Some((&n, rest)) => (n, rest),
            None => return Err(self.mismatch("a sequence")),
        };
        let per_item = count_of(rest)?;
        if self.dtype.itemsize() == 0 && n.saturating_mul(per_item) > self.ctx.max_empty_items {
            return Err(Error::limit(
                "the number of zero-byte array elements",
                self.ctx.max_empty_items,
                n.saturating_mul(per_item),
            ));
        }
        let mut access = ShapeSeq {
            src: self.src,
            plan: self.plan,
            dtype: self.dtype,
            dims: rest,
            per_item,
            ctx: self.ctx,
            n,
            i: 0,
            fast: true,
            last: LastPlan::default(),
            _de: std::marker::PhantomData,
        };
        let value = visitor.visit_seq(&mut access)?;
        // A visitor that stopped early leaves the rest of this axis unread: skip it so that the
        // next sibling starts at the right element.
        let left = (access.n - access.i).saturating_mul(access.per_item);
        if left > 0 {
            access.src.skip(left)?;
        }
        Ok(value)
    }
}

/// Every element of `src` (`count` of them, in logical C order) deserialized as a `T`, into a
/// `Vec` with room for `reserve` elements up front (see `super::vecalloc`): `count` when the
/// data is known to be there, so that the `Vec` is allocated once at its final size; less when
/// the header's count is still unproven, so that a lying header costs nothing.
pub(crate) fn collect_elements<'de, S: Source<'de>, T: Deserialize<'de>>(
    src: &mut S,
    dtype: &DType,
    count: u64,
    reserve: u64,
    ctx: &Ctx,
    mut exact: Option<ExactTier<T>>,
) -> Result<Vec<T>> {
    let mut out = super::vecalloc::vec_for::<T>(reserve.min(count));
    let plan = Plan::of(dtype);
    let size = dtype.itemsize();
    let mut done = 0u64;
    let mut fast_ok = true;
    let last = LastPlan::default();
    if size > 0 {
        // Runs of consecutive elements: one loop over each run's bytes, first through the
        // exact tier (`crate::read::exact`, when `T`'s layout is the file's), then the fast tier
        // (`crate::read::planned`); after a tier's first miss, the next one takes over for the rest of
        // the array, and the general path last (which decodes the missed element again).
        while let Some(run) = src.next_run()? {
            let mut index = run.index;
            if let Some(t) = &exact {
                let n = (t.run)(run.bytes, &t.plan, &mut out);
                index += n as u64;
                crate::tier::served(crate::tier::Tier::Exact, n as u64);
                // No overflow: `n` whole elements of `run.bytes` were decoded.
                if n * size < run.bytes.len() {
                    exact = None;
                }
            }
            if fast_ok {
                let first = (index - run.index) as usize;
                let start = index;
                let rest = run.bytes.get(first * size..).unwrap_or(&[]);
                let n = T::planned_run::<CollectSite, _>(rest, dtype, ctx, &last, |v| {
                    out.push(v);
                    true
                });
                index += n as u64;
                if n < rest.len() / size {
                    fast_ok = false;
                }
                crate::tier::served(crate::tier::Tier::Planned, index - start);
            }
            if !fast_ok {
                // Resume at the missed element (`index`).
                let first = (index - run.index) as usize;
                let mut de = ElemDe {
                    bytes: &[],
                    borrowed: None,
                    dtype,
                    dims: &[],
                    offset: run.offset + (first * size) as u64,
                    ctx,
                };
                let mut borrowed = run
                    .borrowed
                    .map(|b| b.get(first * size..).unwrap_or(&[]).chunks_exact(size));
                let missed = run.bytes.get(first * size..).unwrap_or(&[]);
                for chunk in missed.chunks_exact(size) {
                    de.bytes = chunk;
                    de.borrowed = borrowed.as_mut().and_then(Iterator::next);
                    crate::tier::served(crate::tier::Tier::General, 1);
                    out.push(element(&mut de, plan, index)?);
                    de.offset += size as u64;
                    index += 1;
                }
            }
            done = index;
        }
    }
    // Element by element: Fortran-order walks, zero-size elements, short data (which this
    // path reports).
    for _ in done..count {
        let index = src.index();
        crate::tier::served(crate::tier::Tier::General, 1);
        let value = T::deserialize(ShapeDe {
            src: &mut *src,
            dtype,
            dims: &[],
            ctx,
            plan,
            _de: std::marker::PhantomData,
        });
        out.push(value.map_err(|e| e.at_record(index))?);
    }
    Ok(out)
}

/// One element from `de`, errors marked with its index.
#[inline(always)]
pub(super) fn element<'de, T: Deserialize<'de>>(
    de: &mut ElemDe<'_, 'de, '_>,
    plan: Plan,
    index: u64,
) -> Result<T> {
    T::deserialize(FastDe::whole(de, plan)).map_err(|e| e.at_record(index))
}

pub(super) struct ShapeSeq<'s, 'de, S: Source<'de>> {
    pub(super) src: &'s mut S,
    pub(super) plan: Plan,
    pub(super) dtype: &'s DType,
    pub(super) dims: &'s [u64],
    pub(super) per_item: u64,
    pub(super) ctx: &'s Ctx,
    pub(super) n: u64,
    pub(super) i: u64,
    /// Whether elements still go to the fast tier first (see `crate::read::planned`).
    pub(super) fast: bool,
    pub(super) last: LastPlan,
    pub(super) _de: std::marker::PhantomData<&'de ()>,
}

impl<'de, S: Source<'de>> SeqAccess<'de> for ShapeSeq<'_, 'de, S> {
    type Error = Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.i >= self.n {
            return Ok(None);
        }
        self.i += 1;
        // An element's own `Deserialize` can fail after our deserializer returned (a
        // `try_from` conversion, say): name the element here too.
        let index = self.dims.is_empty().then(|| self.src.index());
        if index.is_some() {
            crate::tier::served(crate::tier::Tier::General, 1);
        }
        seed.deserialize(ShapeDe {
            src: &mut *self.src,
            plan: self.plan,
            dtype: self.dtype,
            dims: self.dims,
            ctx: self.ctx,
            _de: std::marker::PhantomData,
        })
        .map(Some)
        .map_err(|e| match index {
            Some(index) => e.at_record(index),
            None => e,
        })
    }

    /// Serde's `Vec` (and most sequence impls) ask for elements this way, with a seed that can
    /// be used twice: the innermost axis tries each element on the fast tier first.
    #[inline]
    fn next_element<T: Deserialize<'de>>(&mut self) -> Result<Option<T>> {
        if self.fast
            && self.dims.is_empty()
            && self.i < self.n
            && let Some(bytes) = self.src.peek_bytes()
        {
            let fast = T::deserialize(RowDe::<ShapeSite> {
                bytes,
                dtype: self.dtype,
                plan: self.plan,
                ctx: self.ctx,
                last: &self.last,
                site: std::marker::PhantomData,
            });
            match fast {
                Ok(v) => {
                    self.src.next_bytes();
                    self.i += 1;
                    crate::tier::served(crate::tier::Tier::Planned, 1);
                    return Ok(Some(v));
                }
                Err(_) => self.fast = false,
            }
        }
        self.next_element_seed(std::marker::PhantomData)
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.n - self.i).ok()
    }
}

macro_rules! shape_forward {
    ($($method:ident ( $($arg:ident : $ty:ty),* ) => $what:expr;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value> {
                if self.dims.is_empty() {
                    self.leaf(|d| d.$method($($arg,)* visitor))
                } else {
                    Err(self.mismatch($what))
                }
            }
        )*
    };
}

/// The element path of [`ShapeDe`] when the element's bytes are not at hand or the request is
/// not the planned type: out of line, its inputs passed as arguments (in registers) so that
/// the fast path keeps nothing in memory for it.
#[cold]
#[inline(never)]
pub(super) fn shape_slow<'de, S: Source<'de>, V, R>(
    src: &mut S,
    dtype: &DType,
    ctx: &Ctx,
    plan: Plan,
    visitor: V,
    f: impl FnOnce(FastDe<'_, '_, 'de, '_>, V) -> Result<R>,
) -> Result<R> {
    let e = src.next_elem()?;
    let index = e.index;
    let mut de = ElemDe {
        bytes: e.bytes,
        borrowed: e.borrowed,
        dtype,
        dims: &[],
        offset: e.offset,
        ctx,
    };
    f(FastDe::whole(&mut de, plan), visitor).map_err(|err| err.at_record(index))
}

macro_rules! shape_fast {
    ($($k:ident $t:ty, $u:ty, $code:literal, $method:ident, $visit:ident, $ser:ident, $conv:expr, $to:expr;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                if !self.dims.is_empty() {
                    return Err(self.mismatch(stringify!($t)));
                }
                if let Some(swap) = self.plan.scalar(Kind::$k) {
                    if let Some((b, index)) = self.src.next_bytes() {
                        if let Some(x) = load!(b, 0usize, $u, swap) {
                            #[allow(clippy::redundant_closure_call)]
                            return visitor.$visit::<Error>(($conv)(x)).map_err(|err| err.at_record(index));
                        }
                        // A planned scalar's element has exactly its bytes.
                        return Err(Error::eof(
                            "an element",
                            std::mem::size_of::<$u>() as u64,
                            b.len() as u64,
                        )
                        .at_record(index));
                    }
                }
                shape_slow(self.src, self.dtype, self.ctx, self.plan, visitor, |d, v| d.$method(v))
            }
        )*
    };
}

impl<'de, S: Source<'de>> de::Deserializer<'de> for ShapeDe<'_, 'de, S> {
    type Error = Error;

    numbers!(shape_fast);

    shape_forward! {
        deserialize_bool() => "bool";
        deserialize_i128() => "i128";
        deserialize_u128() => "u128";
        deserialize_char() => "char";
        deserialize_str() => "a string";
        deserialize_string() => "a string";
        deserialize_bytes() => "bytes";
        deserialize_byte_buf() => "bytes";
        deserialize_unit() => "unit";
        deserialize_unit_struct(name: &'static str) => name;
        deserialize_map() => "a map";
        deserialize_struct(name: &'static str, fields: &'static [&'static str]) => name;
        deserialize_enum(name: &'static str, variants: &'static [&'static str]) => name;
        deserialize_identifier() => "an identifier";
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.dims.is_empty() {
            self.leaf(|d| d.deserialize_any(visitor))
        } else {
            self.seq(visitor)
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if self.dims.is_empty() {
            self.leaf(|d| d.deserialize_seq(visitor))
        } else {
            self.seq(visitor)
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        match self.dims.first() {
            None => self.leaf(|d| d.deserialize_tuple(len, visitor)),
            Some(&n) if n == len as u64 => self.seq(visitor),
            Some(_) => Err(self.mismatch(&format!("a tuple of {len}"))),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        match self.dims.first() {
            None => self.leaf(|d| d.deserialize_tuple_struct(name, len, visitor)),
            Some(&n) if n == len as u64 => self.seq(visitor),
            Some(_) => Err(self.mismatch(&format!("{name} (a tuple of {len})"))),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        // A datetime's NaT is `None`: the element decides.
        match self.dtype {
            DType::Plain(p) if self.dims.is_empty() && is_time_scalar(p.scalar()) => {
                self.leaf(|d| d.deserialize_option(visitor))
            }
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        if self.dims.is_empty() {
            self.leaf(|d| d.deserialize_newtype_struct(name, visitor))
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let n = count_of(self.dims)?;
        self.src.skip(n)?;
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The call sites of this module's runtime-planned tier (see `super::planned::RowDe`).
struct CollectSite;
struct ShapeSite;
