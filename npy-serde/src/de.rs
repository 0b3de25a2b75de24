//! The serde data format for reading: array elements decoded straight from byte slices.
//!
//! Two deserializers cooperate:
//!
//! - [`ShapeDe`] walks the array's own axes (the header's `shape`) as nested sequences and pulls
//!   elements, in logical C order, from a [`Source`] (a slice, a memory map, or a block buffer
//!   filled from an `io::Read`).
//! - [`ElemDe`] decodes one element (or a part of one: a field, a subarray item) from its bytes,
//!   driven by the [`DType`]: records are maps keyed by field name (or sequences, positionally),
//!   subarrays are nested sequences, scalars convert to the requested Rust type when that is
//!   lossless.
//!
//! Nothing here performs I/O: every element's bytes are already in memory when it is decoded.

use std::cell::OnceCell;

use serde::de::{
    self, Deserialize, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};

use crate::dtype::{ByteOrder, DType, Field, PlainType, Record, Scalar};
use crate::error::{Error, Result};
use crate::exact::ExactTier;
use crate::fast::{LastPlan, RowDe};

/// Default limit on the number of items of a zero-byte element type (`V0`, an empty record) in
/// one array or subarray: their count is not bounded by the size of the data.
pub(crate) const DEFAULT_MAX_EMPTY_ITEMS: u64 = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Shared per-deserialization state
// ---------------------------------------------------------------------------------------------

/// State shared by all element deserializers of one array: limits and the per-struct field
/// selection cache. Shared (`&Ctx`) by every deserializer of the array: the cache only grows,
/// so a plan found once can be borrowed for as long as the `Ctx` lives, with no per-record
/// reference counting.
pub(crate) struct Ctx {
    /// Largest count of zero-byte items accepted in one sequence.
    pub(crate) max_empty_items: u64,
    plans: [OnceCell<CacheEntry>; MAX_CACHE_ENTRIES],
}

/// How to present a given record dtype (by address) to a given struct (`fields` list).
struct CacheEntry {
    key: (usize, usize, usize),
    plan: StructPlan,
    /// Set (once, for the rest of the array) when `plan` is positional but the struct's
    /// visitor took fewer fields than it was offered: see [`Ctx::read_by_name`].
    by_name: OnceCell<StructPlan>,
}

impl CacheEntry {
    fn plan(&self) -> &StructPlan {
        self.by_name.get().unwrap_or(&self.plan)
    }
}

const MAX_CACHE_ENTRIES: usize = 32;

impl Ctx {
    pub(crate) fn new(max_empty_items: u64) -> Ctx {
        Ctx {
            max_empty_items,
            plans: std::array::from_fn(|_| OnceCell::new()),
        }
    }

    /// How to present the record to the struct (serde-derive lists every field name and alias
    /// in `fields`), computed once per record dtype and struct type; `None` once the cache is
    /// full (the caller computes the plan itself).
    #[inline]
    pub(crate) fn plan(
        &self,
        rec: &Record,
        fields: &'static [&'static str],
    ) -> Option<&StructPlan> {
        self.cached(self.plan_index(rec, fields)?)
    }

    /// The cache slot of [`Ctx::plan`]'s plan, filling it if needed.
    #[inline]
    pub(crate) fn plan_index(
        &self,
        rec: &Record,
        fields: &'static [&'static str],
    ) -> Option<usize> {
        let key = (
            rec as *const Record as usize,
            fields.as_ptr() as usize,
            fields.len(),
        );
        for (i, cell) in self.plans.iter().enumerate() {
            match cell.get() {
                Some(e) if e.key == key => return Some(i),
                Some(_) => {}
                None => {
                    Ctx::insert(cell, rec, fields, key);
                    return Some(i);
                }
            }
        }
        None
    }

    /// The plan in cache slot `i`.
    #[inline]
    pub(crate) fn cached(&self, i: usize) -> Option<&StructPlan> {
        self.plans.get(i)?.get().map(CacheEntry::plan)
    }

    /// From now on, present the record in slot `i` to its struct by name.
    ///
    /// Reading positionally stands in for reading by name when serde's `fields` list is the
    /// record's names in order, and the struct's visitor takes every field. One that takes
    /// fewer is either a hand-written visitor that stops early (by name it gets the same
    /// values) or a derived struct with a `#[serde(alias)]`, which serde lists in `fields`
    /// too, so that its fields are not the first items (by name, such a file gives the
    /// aliased field twice, and serde reports that). The fast tiers detect it on the first
    /// element, miss, and call this before the general path decodes that element again.
    #[cold]
    pub(crate) fn read_by_name(&self, i: usize, rec: &Record, fields: &'static [&'static str]) {
        if let Some(e) = self.plans.get(i).and_then(OnceCell::get) {
            e.by_name.get_or_init(|| StructPlan::by_name(rec, fields));
        }
    }

    #[cold]
    fn insert<'c>(
        cell: &'c OnceCell<CacheEntry>,
        rec: &Record,
        fields: &'static [&'static str],
        key: (usize, usize, usize),
    ) -> &'c StructPlan {
        &cell
            .get_or_init(|| CacheEntry {
                key,
                plan: StructPlan::new(rec, fields),
                by_name: OnceCell::new(),
            })
            .plan
    }
}

// ---------------------------------------------------------------------------------------------
// Element sources
// ---------------------------------------------------------------------------------------------

/// One element's bytes, in logical C order.
pub(crate) struct Elem<'s, 'de> {
    /// Exactly `itemsize` bytes.
    pub(crate) bytes: &'s [u8],
    /// The same bytes when they live as long as the input (slice and mmap input), so that `&str`
    /// and `&[u8]` can borrow from them.
    pub(crate) borrowed: Option<&'de [u8]>,
    /// Index of the element in logical C order.
    pub(crate) index: u64,
    /// Offset of the element's first byte from the start of the `.npy` stream.
    pub(crate) offset: u64,
}

/// Something that hands out the array's elements in logical C order.
pub(crate) trait Source<'de> {
    /// The next element.
    fn next_elem(&mut self) -> Result<Elem<'_, 'de>>;
    /// Skips `n` elements.
    fn skip(&mut self, n: u64) -> Result<()>;
    /// The next element's bytes and index when they are at hand without any work (no refill,
    /// no Fortran walk, no error); otherwise `None` and nothing is consumed.
    #[inline]
    fn next_bytes(&mut self) -> Option<(&[u8], u64)> {
        None
    }
    /// Index (logical C order) of the next element.
    fn index(&self) -> u64;
    /// The bytes [`Source::next_bytes`] would return, without consuming them.
    #[inline]
    fn peek_bytes(&mut self) -> Option<&[u8]> {
        None
    }
    /// The next elements (at least one), when they are stored one after another in logical C
    /// order: as many as are at hand. `Ok(None)` when there are none left, or when the source
    /// cannot hand out runs (a Fortran-order walk); then use [`Source::next_elem`].
    fn next_run(&mut self) -> Result<Option<Run<'_, 'de>>> {
        Ok(None)
    }
}

/// Consecutive whole elements, from [`Source::next_run`].
pub(crate) struct Run<'s, 'de> {
    pub(crate) bytes: &'s [u8],
    /// The same bytes when they live as long as the input (see [`Elem::borrowed`]).
    pub(crate) borrowed: Option<&'de [u8]>,
    /// Index of the first element.
    pub(crate) index: u64,
    /// Stream offset of the first byte.
    pub(crate) offset: u64,
}

/// Walks a Fortran-order array in logical C order: keeps the C multi-index and the matching
/// Fortran linear position, updated incrementally (no division per element).
#[derive(Clone, Debug)]
pub(crate) struct FortranWalk {
    dims: Vec<u64>,
    strides: Vec<u64>,
    idx: Vec<u64>,
    pos: u64,
}

impl FortranWalk {
    /// `None` if the layout is the same as C order (at most one axis longer than 1).
    pub(crate) fn new(shape: &[u64]) -> Option<FortranWalk> {
        if shape.iter().filter(|&&d| d > 1).count() < 2 {
            return None;
        }
        let mut strides = Vec::with_capacity(shape.len());
        let mut s = 1u64;
        for &d in shape {
            strides.push(s);
            // The element count was checked when the header was parsed.
            s = s.saturating_mul(d);
        }
        Some(FortranWalk {
            dims: shape.to_vec(),
            strides,
            idx: vec![0; shape.len()],
            pos: 0,
        })
    }

    /// The storage index of the current element.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Moves to the next element in C order.
    pub(crate) fn advance(&mut self) {
        for k in (0..self.dims.len()).rev() {
            self.idx[k] += 1;
            self.pos = self.pos.wrapping_add(self.strides[k]);
            if self.idx[k] < self.dims[k] {
                return;
            }
            self.pos = self
                .pos
                .wrapping_sub(self.strides[k].wrapping_mul(self.dims[k]));
            self.idx[k] = 0;
        }
    }
}

/// Elements of an array whose data is entirely in one slice (slice input, memory map, or data
/// read completely into memory).
pub(crate) struct SliceSource<'de> {
    data: &'de [u8],
    borrowable: bool,
    itemsize: usize,
    count: u64,
    next: u64,
    fortran: Option<FortranWalk>,
    base: u64,
}

impl<'de> SliceSource<'de> {
    /// `data` must hold at least `count * itemsize` bytes (checked by the caller; a shortfall is
    /// reported as an end-of-input error rather than a panic). `base` is the stream offset of
    /// `data[0]`.
    pub(crate) fn new(
        data: &'de [u8],
        borrowable: bool,
        dtype: &DType,
        shape: &[u64],
        fortran_order: bool,
        base: u64,
    ) -> Result<SliceSource<'de>> {
        let count = count_of(shape)?;
        Ok(SliceSource {
            data,
            borrowable,
            itemsize: dtype.itemsize(),
            count,
            next: 0,
            fortran: if fortran_order {
                FortranWalk::new(shape)
            } else {
                None
            },
            base,
        })
    }

    /// The storage position of the next element.
    fn storage_index(&self) -> u64 {
        match &self.fortran {
            Some(w) => w.pos(),
            None => self.next,
        }
    }

    /// Moves to a given element (logical C order).
    pub(crate) fn seek(&mut self, index: u64) {
        if let Some(w) = &mut self.fortran {
            if index < self.next {
                *w = FortranWalk::new(&w.dims).unwrap_or_else(|| w.clone());
                self.next = 0;
            }
            while self.next < index {
                w.advance();
                self.next += 1;
            }
        }
        self.next = index;
    }

    /// The next element's bytes, in C order without a walk.
    #[inline]
    fn at_hand(&self) -> Option<&'de [u8]> {
        let index = self.next;
        if index >= self.count || self.fortran.is_some() {
            return None;
        }
        let start = (index as usize).wrapping_mul(self.itemsize);
        self.data.get(start..start.wrapping_add(self.itemsize))
    }

    /// Number of elements not yet handed out.
    pub(crate) fn remaining(&self) -> u64 {
        self.count - self.next.min(self.count)
    }
}

impl<'de> Source<'de> for SliceSource<'de> {
    #[inline]
    fn next_elem(&mut self) -> Result<Elem<'_, 'de>> {
        let index = self.next;
        if index >= self.count {
            return Err(Error::eof("an array element", 1, 0));
        }
        let start = (self.storage_index() as usize).wrapping_mul(self.itemsize);
        let range = start..start.wrapping_add(self.itemsize);
        let Some(bytes) = self.data.get(range) else {
            return Err(Error::eof(
                "the array data",
                (self.count as u128 * self.itemsize as u128).min(u64::MAX as u128) as u64,
                self.data.len() as u64,
            )
            .at_byte(self.base + self.data.len() as u64));
        };
        self.next += 1;
        if let Some(w) = &mut self.fortran {
            w.advance();
        }
        Ok(Elem {
            bytes,
            borrowed: if self.borrowable { Some(bytes) } else { None },
            index,
            offset: self.base + start as u64,
        })
    }

    #[inline]
    fn next_bytes(&mut self) -> Option<(&[u8], u64)> {
        let index = self.next;
        let bytes = self.at_hand()?;
        self.next += 1;
        Some((bytes, index))
    }

    #[inline]
    fn peek_bytes(&mut self) -> Option<&[u8]> {
        self.at_hand()
    }

    fn index(&self) -> u64 {
        self.next
    }

    fn skip(&mut self, n: u64) -> Result<()> {
        let target = self.next.saturating_add(n).min(self.count);
        self.seek(target);
        Ok(())
    }

    fn next_run(&mut self) -> Result<Option<Run<'_, 'de>>> {
        let index = self.next;
        if index >= self.count || self.fortran.is_some() {
            return Ok(None);
        }
        let data = self.data;
        let (start, end) = ((index as usize).wrapping_mul(self.itemsize), data.len());
        let Some(bytes) = data.get(start..end).filter(|b| b.len() >= self.itemsize) else {
            // Fewer bytes than elements: the element path reports it.
            return Ok(None);
        };
        let n = (bytes.len() / self.itemsize.max(1)) as u64;
        self.next += n.min(self.count - index);
        let len = ((self.next - index) as usize) * self.itemsize;
        let bytes = &bytes[..len];
        Ok(Some(Run {
            bytes,
            borrowed: self.borrowable.then_some(bytes),
            index,
            offset: self.base + start as u64,
        }))
    }
}

/// The element count of a shape, checked.
pub(crate) fn count_of(shape: &[u64]) -> Result<u64> {
    shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::overflow("the element count"))
}

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
    fn leaf<T>(self, f: impl FnOnce(FastDe<'_, '_, 'de, '_>) -> Result<T>) -> Result<T> {
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

    fn mismatch(&self, expected: &str) -> Error {
        Error::mismatch(
            expected,
            format!(
                "an array of shape {} with dtype {}",
                shape_text(self.dims),
                self.dtype
            ),
        )
    }

    fn seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
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
/// `Vec` with room for `reserve` elements up front (see [`crate::vecalloc`]): `count` when the
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
    let mut out = crate::vecalloc::vec_for::<T>(reserve.min(count));
    let plan = Plan::of(dtype);
    let size = dtype.itemsize();
    let mut done = 0u64;
    let mut fast_ok = true;
    let last = LastPlan::default();
    if size > 0 {
        // Runs of consecutive elements: one loop over each run's bytes, first through the
        // exact tier (`crate::exact`, when `T`'s layout is the file's), then the fast tier
        // (`crate::fast`); after a tier's first miss, the next one takes over for the rest of
        // the array, and the general path last (which decodes the missed element again).
        while let Some(run) = src.next_run()? {
            let mut index = run.index;
            if let Some(t) = &exact {
                let n = (t.run)(run.bytes, &t.plan, &mut out);
                index += n as u64;
                // No overflow: `n` whole elements of `run.bytes` were decoded.
                if n * size < run.bytes.len() {
                    exact = None;
                }
            }
            if fast_ok {
                let first = (index - run.index) as usize;
                let rest = run.bytes.get(first * size..).unwrap_or(&[]);
                for chunk in rest.chunks_exact(size) {
                    match T::deserialize(RowDe {
                        bytes: chunk,
                        dtype,
                        plan,
                        ctx,
                        last: &last,
                    }) {
                        Ok(v) => out.push(v),
                        Err(_) => {
                            fast_ok = false;
                            break;
                        }
                    }
                    index += 1;
                }
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
fn element<'de, T: Deserialize<'de>>(
    de: &mut ElemDe<'_, 'de, '_>,
    plan: Plan,
    index: u64,
) -> Result<T> {
    T::deserialize(FastDe::whole(de, plan)).map_err(|e| e.at_record(index))
}

struct ShapeSeq<'s, 'de, S: Source<'de>> {
    src: &'s mut S,
    plan: Plan,
    dtype: &'s DType,
    dims: &'s [u64],
    per_item: u64,
    ctx: &'s Ctx,
    n: u64,
    i: u64,
    /// Whether elements still go to the fast tier first (see `crate::fast`).
    fast: bool,
    last: LastPlan,
    _de: std::marker::PhantomData<&'de ()>,
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
        if self.fast && self.dims.is_empty() && self.i < self.n {
            if let Some(bytes) = self.src.peek_bytes() {
                let fast = T::deserialize(RowDe {
                    bytes,
                    dtype: self.dtype,
                    plan: self.plan,
                    ctx: self.ctx,
                    last: &self.last,
                });
                match fast {
                    Ok(v) => {
                        self.src.next_bytes();
                        self.i += 1;
                        return Ok(Some(v));
                    }
                    Err(_) => self.fast = false,
                }
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

/// Reads the unsigned integer of `size_of::<$u>()` bytes at `$at` of `$b`, swapped if `$swap`
/// (one `bswap`); `None` if the bytes are not there.
macro_rules! load_at {
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

/// The element path of [`ShapeDe`] when the element's bytes are not at hand or the request is
/// not the planned type: out of line, its inputs passed as arguments (in registers) so that
/// the fast path keeps nothing in memory for it.
#[cold]
#[inline(never)]
fn shape_slow<'de, S: Source<'de>, V, R>(
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
    ($($method:ident => $visit:ident, $k:ident, $u:ty, $conv:expr, $what:expr;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                if !self.dims.is_empty() {
                    return Err(self.mismatch($what));
                }
                if let Some(swap) = self.plan.scalar(Fast::$k) {
                    if let Some((b, index)) = self.src.next_bytes() {
                        if let Some(x) = load_at!(b, 0usize, $u, swap) {
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

    shape_fast! {
        deserialize_i8 => visit_i8, I8, u8, |x: u8| x as i8, "i8";
        deserialize_i16 => visit_i16, I16, u16, |x: u16| x as i16, "i16";
        deserialize_i32 => visit_i32, I32, u32, |x: u32| x as i32, "i32";
        deserialize_i64 => visit_i64, I64, u64, |x: u64| x as i64, "i64";
        deserialize_u8 => visit_u8, U8, u8, |x: u8| x, "u8";
        deserialize_u16 => visit_u16, U16, u16, |x: u16| x, "u16";
        deserialize_u32 => visit_u32, U32, u32, |x: u32| x, "u32";
        deserialize_u64 => visit_u64, U64, u64, |x: u64| x, "u64";
        deserialize_f32 => visit_f32, F32, u32, f32::from_bits, "f32";
        deserialize_f64 => visit_f64, F64, u64, f64::from_bits, "f64";
    }

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
        visitor.visit_some(self)
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

fn shape_text(dims: &[u64]) -> String {
    match dims {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// One element
// ---------------------------------------------------------------------------------------------

/// Deserializes one value of `dtype` (with the extra leading subarray axes `dims`) from
/// `bytes`, which hold exactly its bytes.
pub(crate) struct ElemDe<'a, 'de, 'c> {
    pub(crate) bytes: &'a [u8],
    pub(crate) borrowed: Option<&'de [u8]>,
    pub(crate) dtype: &'a DType,
    pub(crate) dims: &'a [u64],
    pub(crate) offset: u64,
    pub(crate) ctx: &'c Ctx,
}

/// A float read from the data, remembering its width for `deserialize_any`.
#[derive(Clone, Copy)]
enum Float {
    F32(f32),
    F64(f64),
}

impl<'a, 'de, 'c> ElemDe<'a, 'de, 'c> {
    /// The scalar type, if this is a scalar (not a subarray or record).
    #[inline(always)]
    fn plain(&self) -> Option<PlainType> {
        match self.dtype {
            DType::Plain(p) if self.dims.is_empty() => Some(*p),
            _ => None,
        }
    }

    /// What the file holds, for error messages.
    fn found(&self) -> String {
        match (self.dtype, self.dims) {
            (DType::Plain(p), []) => p.typestr(),
            (d, []) => d.descr(),
            (d, dims) => format!("({d}, {})", shape_text(dims)),
        }
    }

    #[cold]
    fn mismatch(&self, expected: &str) -> Error {
        Error::mismatch(expected, self.found()).at_byte(self.offset)
    }

    #[cold]
    fn short(&self) -> Error {
        Error::eof(
            "an element",
            self.dtype.itemsize() as u64,
            self.bytes.len() as u64,
        )
        .at_byte(self.offset)
    }

    /// The first `N` bytes in native order.
    #[inline(always)]
    fn arr<const N: usize>(&self, swap: bool) -> Result<[u8; N]> {
        match self.bytes.first_chunk::<N>() {
            Some(a) => {
                let mut a = *a;
                if swap {
                    a.reverse();
                }
                Ok(a)
            }
            None => Err(self.short()),
        }
    }

    /// A sub-deserializer for `len` bytes at `start` (relative to this value).
    #[inline(always)]
    fn sub<'b>(
        &'b mut self,
        start: usize,
        len: usize,
        dtype: &'b DType,
        dims: &'b [u64],
    ) -> Result<ElemDe<'b, 'de, 'b>> {
        let range = start..start.checked_add(len).ok_or_else(|| self.short())?;
        let Some(bytes) = self.bytes.get(range.clone()) else {
            return Err(self.short());
        };
        Ok(ElemDe {
            bytes,
            borrowed: self.borrowed.and_then(|b| b.get(range)),
            dtype,
            dims,
            offset: self.offset + start as u64,
            ctx: self.ctx,
        })
    }

    /// Any integer (or datetime, if `allow_time`) in the file, as i128, with its signedness
    /// and width; `None` if the dtype is not an integer.
    #[inline(always)]
    fn int_value(&self, allow_time: bool) -> Result<Option<(i128, bool, u32)>> {
        let Some(p) = self.plain() else {
            return Ok(None);
        };
        let s = p.order().needs_swap();
        Ok(Some(match p.scalar() {
            Scalar::I8 => (self.arr::<1>(false)?[0] as i8 as i128, true, 8),
            Scalar::I16 => (i16::from_ne_bytes(self.arr(s)?) as i128, true, 16),
            Scalar::I32 => (i32::from_ne_bytes(self.arr(s)?) as i128, true, 32),
            Scalar::I64 => (i64::from_ne_bytes(self.arr(s)?) as i128, true, 64),
            Scalar::U8 => (self.arr::<1>(false)?[0] as i128, false, 8),
            Scalar::U16 => (u16::from_ne_bytes(self.arr(s)?) as i128, false, 16),
            Scalar::U32 => (u32::from_ne_bytes(self.arr(s)?) as i128, false, 32),
            Scalar::U64 => (u64::from_ne_bytes(self.arr(s)?) as i128, false, 64),
            Scalar::DateTime(..) | Scalar::TimeDelta(..) if allow_time => {
                (i64::from_ne_bytes(self.arr(s)?) as i128, true, 64)
            }
            _ => return Ok(None),
        }))
    }

    /// An integer for a request of the given signedness and width: the file's integer type
    /// must convert losslessly for every value (`i4` -> `i64`, `u4` -> `i64`; not `i8` -> `u64`).
    #[inline(always)]
    fn int(&self, want: &str, signed: bool, bits: u32) -> Result<i128> {
        if let Some((v, fs, fb)) = self.int_value(signed && bits >= 64)? {
            let ok = if signed {
                fb < bits || (fs && fb == bits)
            } else {
                !fs && fb <= bits
            };
            if ok {
                return Ok(v);
            }
        }
        Err(self.mismatch(want))
    }

    /// A float for an `f32` (`wide == false`) or `f64` request: floats no wider than asked
    /// (long double to `f64` rounds to nearest even), and integers whose every value is exact.
    #[inline(always)]
    fn float(&self, want: &str, wide: bool) -> Result<Float> {
        if let Some(p) = self.plain() {
            let s = p.order().needs_swap();
            match p.scalar() {
                Scalar::F64 if wide => return Ok(Float::F64(f64::from_ne_bytes(self.arr(s)?))),
                Scalar::F32 => return Ok(Float::F32(f32::from_ne_bytes(self.arr(s)?))),
                Scalar::F16 => {
                    let h = half::f16::from_bits(u16::from_ne_bytes(self.arr(s)?));
                    return Ok(Float::F32(h.to_f32()));
                }
                Scalar::LongDouble if wide => {
                    return Ok(Float::F64(longdouble_to_f64(self.arr::<16>(s)?)));
                }
                _ => {}
            }
        }
        if let Some((v, _, fb)) = self.int_value(false)? {
            // f32 has a 24-bit significand, f64 53 bits.
            if fb <= if wide { 32 } else { 16 } {
                return Ok(Float::F64(v as f64));
            }
        }
        Err(self.mismatch(want))
    }

    fn bool(&self) -> Result<bool> {
        match self.plain() {
            Some(p) if p.scalar() == Scalar::Bool => match self.arr::<1>(false)?[0] {
                0 => Ok(false),
                1 => Ok(true),
                b => Err(
                    Error::invalid_value(format!("bool byte {b} is neither 0 nor 1"))
                        .at_byte(self.offset),
                ),
            },
            _ => Err(self.mismatch("bool")),
        }
    }

    /// `S` bytes without trailing NULs, as NumPy returns them.
    fn s_bytes(&self) -> (&'a [u8], Option<&'de [u8]>) {
        let n = strip_nuls(self.bytes);
        (
            &self.bytes[..n],
            self.borrowed.map(|b| &b[..n.min(b.len())]),
        )
    }

    /// Decodes a `U` value (UCS-4 in the dtype's byte order, trailing NULs stripped).
    fn unicode(&self, p: PlainType) -> Result<String> {
        decode_ucs4(self.bytes, p.order(), self.offset)
    }

    fn visit_str_value<V: Visitor<'de>>(self, visitor: V, want: &str) -> Result<V::Value> {
        let Some(p) = self.plain() else {
            return Err(self.mismatch(want));
        };
        match p.scalar() {
            Scalar::Bytes(_) => {
                let (b, borrowed) = self.s_bytes();
                match borrowed {
                    Some(b) => visitor.visit_borrowed_str(utf8(b, self.offset)?),
                    None => visitor.visit_str(utf8(b, self.offset)?),
                }
            }
            Scalar::Unicode(_) => visitor.visit_string(self.unicode(p)?),
            _ => Err(self.mismatch(want)),
        }
    }

    fn visit_bytes_value<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        if let Some(p) = self.plain() {
            match p.scalar() {
                Scalar::Bytes(_) => {
                    let (b, borrowed) = self.s_bytes();
                    return match borrowed {
                        Some(b) => visitor.visit_borrowed_bytes(b),
                        None => visitor.visit_bytes(b),
                    };
                }
                Scalar::Void(_) => {
                    return match self.borrowed {
                        Some(b) => visitor.visit_borrowed_bytes(b),
                        None => visitor.visit_bytes(self.bytes),
                    };
                }
                _ => {}
            }
        }
        // A subarray of single bytes reads as its raw bytes.
        if let Some((base, _)) = self.subarray() {
            if matches!(base, DType::Plain(p) if p.scalar() == Scalar::U8) {
                return match self.borrowed {
                    Some(b) => visitor.visit_borrowed_bytes(b),
                    None => visitor.visit_bytes(self.bytes),
                };
            }
        }
        Err(self.mismatch("bytes"))
    }

    /// The subarray view of this value: its item dtype and the axes, if it has any.
    fn subarray(&self) -> Option<(&'a DType, &'a [u64])> {
        if !self.dims.is_empty() {
            return Some((self.dtype, self.dims));
        }
        match self.dtype {
            DType::Array(base, shape) => Some((base, shape)),
            _ => None,
        }
    }

    /// The length of the value viewed as a sequence, or `None` if it is not one.
    fn seq_len(&self) -> Option<u64> {
        if let Some((_, dims)) = self.subarray() {
            return dims.first().copied().or(Some(1));
        }
        match self.dtype {
            DType::Record(r) => Some(r.fields().len() as u64),
            DType::Plain(p) => match p.scalar() {
                Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => Some(2),
                Scalar::Bytes(n) | Scalar::Void(n) => Some(n as u64),
                _ => None,
            },
            DType::Array(..) => None,
        }
    }

    /// Visits the value as a sequence: subarray items, record fields in order, the two parts of
    /// a complex number, or the bytes of `S` (NULs stripped unless `raw`) and `V`.
    fn visit_seq_value<V: Visitor<'de>>(self, visitor: V, raw: bool) -> Result<V::Value> {
        if let Some((base, dims)) = self.subarray() {
            let Some((&n, rest)) = dims.split_first() else {
                // A subarray with shape (): just the item.
                return visitor.visit_seq(OneSeq(Some(ElemDe {
                    dims: &[],
                    dtype: base,
                    ..self
                })));
            };
            let items = count_of(rest)?.saturating_mul(n);
            if base.itemsize() == 0 && items > self.ctx.max_empty_items {
                return Err(Error::limit(
                    "the number of zero-byte subarray items",
                    self.ctx.max_empty_items,
                    items,
                )
                .at_byte(self.offset));
            }
            let child = if n == 0 {
                0
            } else if rest.is_empty() {
                match base {
                    DType::Plain(p) => p.itemsize(),
                    other => other.itemsize(),
                }
            } else {
                self.bytes.len() / n as usize
            };
            return visitor.visit_seq(SubSeq {
                de: self,
                base,
                rest,
                n,
                i: 0,
                child,
            });
        }
        match self.dtype {
            DType::Record(rec) => visitor.visit_seq(FieldSeq {
                de: self,
                rec,
                i: 0,
            }),
            &DType::Plain(p) => match p.scalar() {
                Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                    let parts = self.complex(p)?;
                    visitor.visit_seq(ComplexSeq {
                        parts,
                        i: 0,
                        offset: self.offset,
                        found: p,
                    })
                }
                Scalar::Bytes(_) | Scalar::Void(_) => {
                    let b = if raw || matches!(p.scalar(), Scalar::Void(_)) {
                        self.bytes
                    } else {
                        self.s_bytes().0
                    };
                    let mut seq = de::value::SeqDeserializer::<_, Error>::new(b.iter().copied());
                    let v = visitor.visit_seq(&mut seq)?;
                    seq.end()?;
                    Ok(v)
                }
                _ => Err(self.mismatch("a sequence")),
            },
            // Subarrays were handled above.
            DType::Array(..) => Err(self.mismatch("a sequence")),
        }
    }

    fn complex(&self, p: PlainType) -> Result<[Float; 2]> {
        let s = p.order().needs_swap();
        Ok(match p.scalar() {
            Scalar::Complex64 => {
                let a: [u8; 8] = self.arr(false)?;
                let mut re: [u8; 4] = [a[0], a[1], a[2], a[3]];
                let mut im: [u8; 4] = [a[4], a[5], a[6], a[7]];
                if s {
                    re.reverse();
                    im.reverse();
                }
                [
                    Float::F32(f32::from_ne_bytes(re)),
                    Float::F32(f32::from_ne_bytes(im)),
                ]
            }
            Scalar::Complex128 => {
                let a: [u8; 16] = self.arr(false)?;
                let (r, i) = split_arr::<8, 16>(&a);
                let (mut re, mut im) = (r, i);
                if s {
                    re.reverse();
                    im.reverse();
                }
                [
                    Float::F64(f64::from_ne_bytes(re)),
                    Float::F64(f64::from_ne_bytes(im)),
                ]
            }
            _ => {
                let a: [u8; 32] = self.arr(false)?;
                let (mut re, mut im) = split_arr::<16, 32>(&a);
                if s {
                    re.reverse();
                    im.reverse();
                }
                [
                    Float::F64(longdouble_to_f64(re)),
                    Float::F64(longdouble_to_f64(im)),
                ]
            }
        })
    }

    fn visit_map_value<V: Visitor<'de>>(
        self,
        visitor: V,
        select: Option<&[(u32, usize)]>,
        want: &str,
    ) -> Result<V::Value> {
        match (self.dtype, self.dims) {
            (DType::Record(rec), []) => visitor.visit_map(FieldMap {
                de: self,
                rec,
                select,
                i: 0,
                current: 0,
                current_size: 0,
            }),
            _ => Err(self.mismatch(want)),
        }
    }
}

fn split_arr<const H: usize, const N: usize>(a: &[u8; N]) -> ([u8; H], [u8; H]) {
    let mut x = [0u8; H];
    let mut y = [0u8; H];
    x.copy_from_slice(&a[..H]);
    y.copy_from_slice(&a[H..2 * H]);
    (x, y)
}

/// Length of `b` without its trailing NUL bytes.
#[inline]
pub(crate) fn strip_nuls(b: &[u8]) -> usize {
    b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1)
}

/// Checks UTF-8, reporting the offset of the first invalid byte.
pub(crate) fn utf8(b: &[u8], offset: u64) -> Result<&str> {
    std::str::from_utf8(b).map_err(|e| {
        Error::invalid_value(format!(
            "byte string is not valid UTF-8 (invalid byte at index {})",
            e.valid_up_to()
        ))
        .at_byte(offset + e.valid_up_to() as u64)
    })
}

/// Decodes UCS-4 code units in `order`, trailing NULs stripped; an invalid code point is an
/// `InvalidValue` error at its byte offset.
pub(crate) fn decode_ucs4(bytes: &[u8], order: ByteOrder, offset: u64) -> Result<String> {
    let big = order == ByteOrder::Big
        || (order == ByteOrder::NotApplicable && ByteOrder::NATIVE == ByteOrder::Big);
    let units = bytes.chunks_exact(4).map(|c| {
        let a = [c[0], c[1], c[2], c[3]];
        if big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    });
    let n = {
        let mut n = bytes.len() / 4;
        while n > 0 {
            let c = &bytes[(n - 1) * 4..n * 4];
            if c != [0, 0, 0, 0] {
                break;
            }
            n -= 1;
        }
        n
    };
    let mut s = String::with_capacity(n);
    for (i, u) in units.take(n).enumerate() {
        match char::from_u32(u) {
            Some(c) => s.push(c),
            None => {
                return Err(Error::invalid_value(format!(
                    "U+{u:X} is not a Unicode code point (at character {i})"
                ))
                .at_byte(offset + 4 * i as u64))
            }
        }
    }
    Ok(s)
}

/// Converts an x87 80-bit extended float (NumPy's `np.longdouble` on x86-64: 64-bit significand
/// with explicit integer bit, 15-bit exponent, sign; stored little-endian in 16 bytes, the last
/// 6 bytes padding) to the nearest `f64`, ties to even.
///
/// Infinities and NaNs keep their sign (NaNs become the quiet NaN); values beyond `f64`'s range
/// become infinities; tiny values round to `f64` subnormals or zero. Denormals and
/// pseudo-denormals (exponent 0, integer bit set) are taken at face value, `m × 2^-16445`.
/// Unnormals (nonzero exponent, integer bit clear), which x87 hardware rejects as invalid
/// operands, become NaN.
pub fn longdouble_to_f64(le: [u8; 16]) -> f64 {
    let mut m_bytes = [0u8; 8];
    m_bytes.copy_from_slice(&le[..8]);
    let m = u64::from_le_bytes(m_bytes);
    let se = u16::from_le_bytes([le[8], le[9]]);
    let neg = se & 0x8000 != 0;
    let exp = (se & 0x7fff) as i32;
    let sign = if neg { -1.0 } else { 1.0 };
    if exp == 0x7fff {
        return if m << 1 == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN.copysign(sign)
        };
    }
    if exp != 0 && m >> 63 == 0 {
        return f64::NAN.copysign(sign);
    }
    if m == 0 {
        return 0.0f64.copysign(sign);
    }
    // value = m × 2^e, with m normalised so that its top bit is set.
    let e_eff = if exp == 0 { 1 } else { exp };
    let lz = m.leading_zeros() as i32;
    let m = m << lz;
    let e2 = e_eff - 16383 - lz; // unbiased exponent of the leading bit
    if e2 > 1023 {
        return sign * f64::INFINITY;
    }
    // Bits to drop: 11 for a normal f64 (64 -> 53), more for a subnormal result.
    let shift: u32 = if e2 >= -1022 {
        11
    } else {
        (11 + (-1022 - e2)).min(200) as u32
    };
    let (mut q, rem, half) = if shift >= 65 {
        (0u64, 1u128, 2u128) // below half the smallest subnormal: rounds to zero
    } else {
        let wide = m as u128;
        (
            (wide >> shift) as u64,
            wide & ((1u128 << shift) - 1),
            1u128 << (shift - 1),
        )
    };
    if rem > half || (rem == half && q & 1 == 1) {
        q += 1;
    }
    let bits = if e2 >= -1022 {
        let mut e2 = e2;
        if q == 1 << 53 {
            q >>= 1;
            e2 += 1;
        }
        if e2 > 1023 {
            return sign * f64::INFINITY;
        }
        (((e2 + 1023) as u64) << 52) | (q & ((1 << 52) - 1))
    } else {
        // q < 2^52 is a subnormal; q == 2^52 is the smallest normal, which the same bits encode.
        q
    };
    f64::from_bits(bits | (u64::from(neg) << 63))
}

// ---------------------------------------------------------------------------------------------
// Sequence and map accesses over one element
// ---------------------------------------------------------------------------------------------

/// The items of a subarray axis.
struct SubSeq<'a, 'de, 'c> {
    de: ElemDe<'a, 'de, 'c>,
    base: &'a DType,
    rest: &'a [u64],
    n: u64,
    i: u64,
    child: usize,
}

impl<'de> SeqAccess<'de> for SubSeq<'_, 'de, '_> {
    type Error = Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.i >= self.n {
            return Ok(None);
        }
        let i = self.i;
        self.i += 1;
        let start = (i as usize).wrapping_mul(self.child);
        let d = self.de.sub(start, self.child, self.base, self.rest)?;
        seed.deserialize(d).map(Some).map_err(|e| e.in_index(i))
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.n - self.i).ok()
    }
}

/// A subarray of shape `()`: one item.
struct OneSeq<'a, 'de, 'c>(Option<ElemDe<'a, 'de, 'c>>);

impl<'de> SeqAccess<'de> for OneSeq<'_, 'de, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        match self.0.take() {
            Some(d) => seed.deserialize(d).map(Some),
            None => Ok(None),
        }
    }
}

/// A record's fields, positionally.
struct FieldSeq<'a, 'de, 'c> {
    de: ElemDe<'a, 'de, 'c>,
    rec: &'a Record,
    i: usize,
}

impl<'de> SeqAccess<'de> for FieldSeq<'_, 'de, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let Some(f) = self.rec.fields().get(self.i) else {
            return Ok(None);
        };
        self.i += 1;
        let d = self.de.sub(f.offset, f.dtype.itemsize(), &f.dtype, &[])?;
        seed.deserialize(d)
            .map(Some)
            .map_err(|e| e.in_field(&f.name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.rec.fields().len() - self.i)
    }
}

/// A record as a map from field name to value.
struct FieldMap<'a, 'de, 'c, 's> {
    de: ElemDe<'a, 'de, 'c>,
    rec: &'a Record,
    /// Only these (field index, byte size) pairs (the fields the target struct names), or all.
    select: Option<&'s [(u32, usize)]>,
    i: usize,
    current: usize,
    current_size: usize,
}

impl<'de> MapAccess<'de> for FieldMap<'_, 'de, '_, '_> {
    type Error = Error;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let (idx, size) = match &self.select {
            Some(s) => match s.get(self.i) {
                Some(&(k, size)) => (k as usize, size),
                None => return Ok(None),
            },
            None => match self.rec.fields().get(self.i) {
                Some(f) => (self.i, f.dtype.itemsize()),
                None => return Ok(None),
            },
        };
        let Some(f) = self.rec.fields().get(idx) else {
            return Ok(None);
        };
        self.i += 1;
        self.current = idx;
        self.current_size = size;
        seed.deserialize(de::value::StrDeserializer::<Error>::new(&f.name))
            .map(Some)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let Some(f) = self.rec.fields().get(self.current) else {
            return Err(Error::invalid_value("next_value called before next_key"));
        };
        let d = self.de.sub(f.offset, self.current_size, &f.dtype, &[])?;
        seed.deserialize(d).map_err(|e| e.in_field(&f.name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(match &self.select {
            Some(s) => s.len().saturating_sub(self.i),
            None => self.rec.fields().len().saturating_sub(self.i),
        })
    }
}

/// The real and imaginary parts of a complex number.
struct ComplexSeq {
    parts: [Float; 2],
    i: usize,
    offset: u64,
    found: PlainType,
}

impl<'de> SeqAccess<'de> for ComplexSeq {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let Some(&v) = self.parts.get(self.i) else {
            return Ok(None);
        };
        let half = self.found.itemsize() as u64 / 2;
        let d = PartDe {
            v,
            offset: self.offset + half * self.i as u64,
            found: self.found,
        };
        let i = self.i;
        self.i += 1;
        seed.deserialize(d)
            .map(Some)
            .map_err(|e| e.in_field(if i == 0 { "real" } else { "imag" }))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(2 - self.i)
    }
}

/// One part of a complex number.
struct PartDe {
    v: Float,
    offset: u64,
    found: PlainType,
}

impl PartDe {
    fn mismatch(&self, want: &str) -> Error {
        Error::mismatch(want, format!("a part of {}", self.found.typestr())).at_byte(self.offset)
    }
}

macro_rules! part_refuse {
    ($($method:ident ( $($arg:ident : $ty:ty),* ) => $what:expr;)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* _visitor: V) -> Result<V::Value> {
                $(let _ = $arg;)*
                Err(self.mismatch($what))
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for PartDe {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.v {
            Float::F32(v) => visitor.visit_f32(v),
            Float::F64(v) => visitor.visit_f64(v),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.v {
            Float::F32(v) => visitor.visit_f32(v),
            Float::F64(_) => Err(self.mismatch("f32")),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.v {
            Float::F32(v) => visitor.visit_f64(v as f64),
            Float::F64(v) => visitor.visit_f64(v),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    part_refuse! {
        deserialize_bool() => "bool";
        deserialize_i8() => "i8";
        deserialize_i16() => "i16";
        deserialize_i32() => "i32";
        deserialize_i64() => "i64";
        deserialize_i128() => "i128";
        deserialize_u8() => "u8";
        deserialize_u16() => "u16";
        deserialize_u32() => "u32";
        deserialize_u64() => "u64";
        deserialize_u128() => "u128";
        deserialize_char() => "char";
        deserialize_str() => "a string";
        deserialize_string() => "a string";
        deserialize_bytes() => "bytes";
        deserialize_byte_buf() => "bytes";
        deserialize_unit() => "unit";
        deserialize_unit_struct(name: &'static str) => "unit struct";
        deserialize_seq() => "a sequence";
        deserialize_tuple(len: usize) => "a tuple";
        deserialize_tuple_struct(name: &'static str, len: usize) => "a tuple struct";
        deserialize_map() => "a map";
        deserialize_struct(name: &'static str, fields: &'static [&'static str]) => "a struct";
        deserialize_enum(name: &'static str, variants: &'static [&'static str]) => "an enum";
        deserialize_identifier() => "an identifier";
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// The element Deserializer
// ---------------------------------------------------------------------------------------------

macro_rules! de_int {
    ($($method:ident => $visit:ident, $t:ty, $name:literal, $signed:expr, $bits:expr;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                let v = self.int($name, $signed, $bits)?;
                visitor.$visit(v as $t)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for ElemDe<'_, 'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let Some(p) = self.plain() else {
            return match self.dtype {
                DType::Record(_) if self.dims.is_empty() => {
                    self.visit_map_value(visitor, None, "a map")
                }
                _ => self.visit_seq_value(visitor, false),
            };
        };
        let s = p.order().needs_swap();
        match p.scalar() {
            Scalar::Bool => visitor.visit_bool(self.bool()?),
            Scalar::I8 => visitor.visit_i8(self.arr::<1>(false)?[0] as i8),
            Scalar::I16 => visitor.visit_i16(i16::from_ne_bytes(self.arr(s)?)),
            Scalar::I32 => visitor.visit_i32(i32::from_ne_bytes(self.arr(s)?)),
            Scalar::I64 | Scalar::DateTime(..) | Scalar::TimeDelta(..) => {
                visitor.visit_i64(i64::from_ne_bytes(self.arr(s)?))
            }
            Scalar::U8 => visitor.visit_u8(self.arr::<1>(false)?[0]),
            Scalar::U16 => visitor.visit_u16(u16::from_ne_bytes(self.arr(s)?)),
            Scalar::U32 => visitor.visit_u32(u32::from_ne_bytes(self.arr(s)?)),
            Scalar::U64 => visitor.visit_u64(u64::from_ne_bytes(self.arr(s)?)),
            Scalar::F16 | Scalar::F32 | Scalar::F64 | Scalar::LongDouble => {
                match self.float("a float", true)? {
                    Float::F32(v) => visitor.visit_f32(v),
                    Float::F64(v) => visitor.visit_f64(v),
                }
            }
            Scalar::Complex64 | Scalar::Complex128 | Scalar::ComplexLongDouble => {
                self.visit_seq_value(visitor, false)
            }
            Scalar::Bytes(_) | Scalar::Void(_) => self.visit_bytes_value(visitor),
            Scalar::Unicode(_) => visitor.visit_string(self.unicode(p)?),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_bool(self.bool()?)
    }

    de_int! {
        deserialize_i8 => visit_i8, i8, "i8", true, 8;
        deserialize_i16 => visit_i16, i16, "i16", true, 16;
        deserialize_i32 => visit_i32, i32, "i32", true, 32;
        deserialize_i64 => visit_i64, i64, "i64", true, 64;
        deserialize_i128 => visit_i128, i128, "i128", true, 128;
        deserialize_u8 => visit_u8, u8, "u8", false, 8;
        deserialize_u16 => visit_u16, u16, "u16", false, 16;
        deserialize_u32 => visit_u32, u32, "u32", false, 32;
        deserialize_u64 => visit_u64, u64, "u64", false, 64;
        deserialize_u128 => visit_u128, u128, "u128", false, 128;
    }

    #[inline]
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.float("f32", false)? {
            Float::F32(v) => visitor.visit_f32(v),
            Float::F64(v) => visitor.visit_f32(v as f32),
        }
    }

    #[inline]
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.float("f64", true)? {
            Float::F32(v) => visitor.visit_f64(v as f64),
            Float::F64(v) => visitor.visit_f64(v),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.plain() {
            Some(p) if matches!(p.scalar(), Scalar::Unicode(_)) => {
                let s = self.unicode(p)?;
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => visitor.visit_char(c),
                    _ => Err(Error::invalid_value(format!(
                        "expected a single character, found {s:?}"
                    ))
                    .at_byte(self.offset)),
                }
            }
            _ => Err(self.mismatch("char")),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_str_value(visitor, "a string")
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_str_value(visitor, "a string")
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_bytes_value(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_bytes_value(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let empty = match (self.dtype, self.dims) {
            (DType::Record(r), []) => r.fields().is_empty(),
            (DType::Plain(p), []) => p.scalar() == Scalar::Void(0),
            _ => false,
        };
        if empty {
            visitor.visit_unit()
        } else {
            Err(self.mismatch("unit"))
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        // `half::f16` deserializes as a newtype struct named "f16" that accepts an f32; give it
        // the exact value of an `f2`, and refuse narrowing from wider floats.
        if name == "f16" {
            return match self.plain() {
                Some(p) if p.scalar() == Scalar::F16 => match self.float("half::f16", false)? {
                    Float::F32(v) => visitor.visit_f32(v),
                    Float::F64(v) => visitor.visit_f64(v),
                },
                _ => Err(self.mismatch("half::f16")),
            };
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_seq_value(visitor, false)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        match self.seq_len() {
            Some(n) if n == len as u64 => self.visit_seq_value(visitor, true),
            _ => Err(self.mismatch(&format!("a tuple of {len}"))),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        match self.seq_len() {
            Some(n) if n == len as u64 => self.visit_seq_value(visitor, true),
            _ => Err(self.mismatch(&format!("{name} (a tuple of {len})"))),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_map_value(visitor, None, "a map")
    }

    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match (self.dtype, self.dims) {
            (DType::Record(_), []) => {
                let mut de = self;
                FastDe::whole(&mut de, Plan::OTHER).deserialize_struct(name, fields, visitor)
            }
            _ => Err(self.mismatch(name)),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        // A unit variant from its name in an `S` or `U` field, as serde_json reads a string.
        let s = match self.plain() {
            Some(p) if matches!(p.scalar(), Scalar::Bytes(_)) => {
                utf8(self.s_bytes().0, self.offset)?.to_owned()
            }
            Some(p) if matches!(p.scalar(), Scalar::Unicode(_)) => self.unicode(p)?,
            _ => return Err(self.mismatch(name)),
        };
        visitor.visit_enum(IntoDeserializer::<Error>::into_deserializer(s))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.visit_str_value(visitor, "an identifier")
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

// ---------------------------------------------------------------------------------------------
// Fast paths: precomputed per-field plans
// ---------------------------------------------------------------------------------------------

/// A scalar type the fast paths decode directly.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Fast {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
}

impl Fast {
    /// The fast kind of a scalar type and whether its bytes need swapping.
    fn of(p: PlainType) -> Option<(Fast, bool)> {
        let k = match p.scalar() {
            Scalar::I8 => Fast::I8,
            Scalar::I16 => Fast::I16,
            Scalar::I32 => Fast::I32,
            Scalar::I64 => Fast::I64,
            Scalar::U8 => Fast::U8,
            Scalar::U16 => Fast::U16,
            Scalar::U32 => Fast::U32,
            Scalar::U64 => Fast::U64,
            Scalar::F32 => Fast::F32,
            Scalar::F64 => Fast::F64,
            _ => return None,
        };
        Some((k, p.order().needs_swap()))
    }
}

/// How to decode one value of a dtype, computed once per file (not per element): a scalar
/// decoded directly when the request is its exact Rust type, a 1-D subarray of such scalars,
/// or anything else (the general [`ElemDe`] path). Eight bytes, passed in a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `Fast as u8`, with [`Plan::SWAP`] set if the bytes need swapping and [`Plan::VECTOR`]
    /// for a subarray; [`Plan::OTHER`]'s code otherwise. Byte order is part of the code so
    /// that the common case (native order, exact type) is a single comparison.
    code: u8,
    /// Byte size of the scalar (of one item, for a subarray).
    size: u8,
    /// Subarray length.
    n: u32,
}

impl Plan {
    const VECTOR: u8 = 0x80;
    const SWAP: u8 = 0x40;
    const OTHER_CODE: u8 = 0xff;
    /// The general path.
    pub(crate) const OTHER: Plan = Plan {
        code: Plan::OTHER_CODE,
        size: 0,
        n: 0,
    };

    /// The plan of a value of `dtype` (with no extra subarray axes).
    pub(crate) fn of(dtype: &DType) -> Plan {
        let other = Plan::OTHER;
        let scalar = |p: &PlainType| {
            let (k, swap) = Fast::of(*p)?;
            let code = if swap { k as u8 | Plan::SWAP } else { k as u8 };
            Some((code, u8::try_from(p.itemsize()).ok()?))
        };
        match dtype {
            DType::Plain(p) => match scalar(p) {
                Some((code, size)) => Plan { code, size, n: 0 },
                None => other,
            },
            DType::Array(base, shape) => match (&**base, shape.as_slice()) {
                (DType::Plain(p), &[n]) => match (scalar(p), u32::try_from(n)) {
                    (Some((code, size)), Ok(n)) => Plan {
                        code: code | Plan::VECTOR,
                        size,
                        n,
                    },
                    _ => other,
                },
                _ => other,
            },
            DType::Record(_) => other,
        }
    }

    /// `Some(swap)` if this is a scalar of kind `k`.
    #[inline(always)]
    pub(crate) fn scalar(self, k: Fast) -> Option<bool> {
        if self.code == k as u8 {
            Some(false)
        } else if self.code == k as u8 | Plan::SWAP {
            Some(true)
        } else {
            None
        }
    }

    /// For a 1-D subarray plan: the items' plan, their count and byte size.
    #[inline(always)]
    pub(crate) fn vector(self) -> Option<(Plan, usize, usize)> {
        if self.code & Plan::VECTOR == 0 || self.code == Plan::OTHER_CODE {
            return None;
        }
        let item = Plan {
            code: self.code & !Plan::VECTOR,
            n: 0,
            ..self
        };
        Some((item, self.n as usize, self.size as usize))
    }
}

/// One field of a record read positionally: its byte range in the record and its plan.
#[derive(Debug)]
pub(crate) struct FieldPlan {
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) plan: Plan,
    /// For the fast tier (`crate::fast`): the offset as a `u32` (so that adding a scalar's
    /// size cannot overflow and one comparison bounds the read) and the plan, which is
    /// [`Plan::OTHER`] when the field does not end below 4 GiB.
    pub(crate) at: u32,
    pub(crate) fast: Plan,
}

/// How a record is presented to a given struct.
pub(crate) enum StructPlan {
    /// The file's fields are exactly the struct's, in order: a sequence of field values (one
    /// [`FieldPlan`] per field of the record, in the same order).
    Seq(Box<[FieldPlan]>),
    /// A map of these (field index, byte size) pairs: the fields the struct names.
    Map(Box<[(u32, usize)]>),
}

impl StructPlan {
    fn new(rec: &Record, fields: &'static [&'static str]) -> StructPlan {
        let exact = rec.fields().len() == fields.len()
            && rec
                .fields()
                .iter()
                .zip(fields)
                .all(|(f, name)| f.name == *name);
        if exact {
            return StructPlan::Seq(
                rec.fields()
                    .iter()
                    .map(|f| {
                        let size = f.dtype.itemsize();
                        let plan = Plan::of(&f.dtype);
                        let end = f.offset.checked_add(size).map(u32::try_from);
                        let (at, fast) = match (u32::try_from(f.offset), end) {
                            (Ok(at), Some(Ok(_))) => (at, plan),
                            _ => (0, Plan::OTHER),
                        };
                        FieldPlan {
                            offset: f.offset,
                            size,
                            plan,
                            at,
                            fast,
                        }
                    })
                    .collect(),
            );
        }
        StructPlan::by_name(rec, fields)
    }

    /// The fields of `rec` the struct names, by name.
    fn by_name(rec: &Record, fields: &'static [&'static str]) -> StructPlan {
        StructPlan::Map(
            rec.fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| fields.contains(&f.name.as_str()))
                .map(|(i, f)| (i as u32, f.dtype.itemsize()))
                .collect(),
        )
    }
}

/// A deserializer for the value at `start..start + len` of `bytes` (its parent's bytes), with
/// a precomputed [`Plan`]: requests for the plan's exact Rust type decode directly from
/// `bytes`, and so do records read positionally and 1-D subarrays of such scalars; everything
/// else (and every error) goes through an [`ElemDe`] built from `parent` only then.
pub(crate) struct FastDe<'p, 'a, 'de, 'c> {
    /// The parent's bytes (only read by the fast paths).
    bytes: &'a [u8],
    start: usize,
    len: usize,
    dtype: &'a DType,
    plan: Plan,
    parent: &'p mut ElemDe<'a, 'de, 'c>,
}

impl<'p, 'a, 'de, 'c> FastDe<'p, 'a, 'de, 'c> {
    /// The whole of `de` (which has no extra subarray axes).
    #[inline]
    pub(crate) fn whole(de: &'p mut ElemDe<'a, 'de, 'c>, plan: Plan) -> Self {
        FastDe {
            bytes: de.bytes,
            start: 0,
            len: de.bytes.len(),
            dtype: de.dtype,
            parent: de,
            plan,
        }
    }

    /// The general deserializer for this value.
    #[inline]
    fn elem(self) -> Result<ElemDe<'p, 'de, 'p>> {
        self.parent.sub(self.start, self.len, self.dtype, &[])
    }

    /// The items of a planned 1-D subarray (of length `len`, if given), or `None`.
    #[inline]
    fn vector(self, len: Option<usize>) -> std::result::Result<VectorSeq<'p, 'a, 'de, 'c>, Self> {
        match (self.plan.vector(), self.dtype) {
            (Some((item, n, size)), DType::Array(base, _)) if len.is_none_or(|l| l == n) => {
                Ok(VectorSeq {
                    bytes: self.bytes,
                    at: self.start,
                    parent: self.parent,
                    base,
                    item,
                    n,
                    size,
                    i: 0,
                })
            }
            _ => Err(self),
        }
    }
}

/// The general path of a [`FastDe`], kept out of line. Takes the fields separately (in
/// registers) so that the fast path need not build a `FastDe` in memory.
#[cold]
#[inline(never)]
fn slow<'p, 'a, 'de, 'c, R, V>(
    parent: &'p mut ElemDe<'a, 'de, 'c>,
    start: usize,
    len: usize,
    dtype: &'a DType,
    visitor: V,
    f: impl FnOnce(ElemDe<'p, 'de, 'p>, V) -> Result<R>,
) -> Result<R> {
    f(parent.sub(start, len, dtype, &[])?, visitor)
}

macro_rules! fast_scalar {
    ($($method:ident => $visit:ident, $k:ident, $u:ty, $conv:expr;)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                if let Some(swap) = self.plan.scalar(Fast::$k) {
                    if let Some(x) = load_at!(self.bytes, self.start, $u, swap) {
                        #[allow(clippy::redundant_closure_call)]
                        return visitor.$visit(($conv)(x));
                    }
                }
                slow(self.parent, self.start, self.len, self.dtype, visitor, |d, v| d.$method(v))
            }
        )*
    };
}

macro_rules! fast_forward {
    ($($method:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value> {
                self.elem()?.$method($($arg,)* visitor)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for FastDe<'_, '_, 'de, '_> {
    type Error = Error;

    fast_scalar! {
        deserialize_i8 => visit_i8, I8, u8, |x: u8| x as i8;
        deserialize_i16 => visit_i16, I16, u16, |x: u16| x as i16;
        deserialize_i32 => visit_i32, I32, u32, |x: u32| x as i32;
        deserialize_i64 => visit_i64, I64, u64, |x: u64| x as i64;
        deserialize_u8 => visit_u8, U8, u8, |x: u8| x;
        deserialize_u16 => visit_u16, U16, u16, |x: u16| x;
        deserialize_u32 => visit_u32, U32, u32, |x: u32| x;
        deserialize_u64 => visit_u64, U64, u64, |x: u64| x;
        deserialize_f32 => visit_f32, F32, u32, f32::from_bits;
        deserialize_f64 => visit_f64, F64, u64, f64::from_bits;
    }

    fast_forward! {
        deserialize_any();
        deserialize_bool();
        deserialize_i128();
        deserialize_u128();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_map();
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    /// A record read positionally (see [`StructPlan::Seq`]) decodes its fields straight from
    /// the parent's bytes, without building a general deserializer for the record.
    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        let DType::Record(rec) = self.dtype else {
            return self.elem()?.deserialize_struct(name, fields, visitor);
        };
        let ctx = self.parent.ctx;
        let owned;
        let plan = match ctx.plan(rec, fields) {
            Some(plan) => plan,
            None => {
                owned = StructPlan::new(rec, fields);
                &owned
            }
        };
        match plan {
            StructPlan::Seq(plan) => visitor.visit_seq(PlanSeq {
                bytes: self.bytes,
                base: self.start,
                parent: self.parent,
                fields: rec.fields().iter(),
                plan: plan.iter(),
            }),
            StructPlan::Map(select) => self.elem()?.visit_map_value(visitor, Some(select), name),
        }
    }

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
        if name == "f16" {
            self.elem()?.deserialize_newtype_struct(name, visitor)
        } else {
            visitor.visit_newtype_struct(self)
        }
    }

    #[inline]
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.vector(None) {
            Ok(seq) => visitor.visit_seq(seq),
            Err(d) => slow(d.parent, d.start, d.len, d.dtype, visitor, |d, v| {
                d.deserialize_seq(v)
            }),
        }
    }

    #[inline]
    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value> {
        match self.vector(Some(len)) {
            Ok(seq) => visitor.visit_seq(seq),
            Err(d) => slow(d.parent, d.start, d.len, d.dtype, visitor, |d, v| {
                d.deserialize_tuple(len, v)
            }),
        }
    }

    #[inline]
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        match self.vector(Some(len)) {
            Ok(seq) => visitor.visit_seq(seq),
            Err(d) => slow(d.parent, d.start, d.len, d.dtype, visitor, |d, v| {
                d.deserialize_tuple_struct(name, len, v)
            }),
        }
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The items of a 1-D subarray of plain scalars: `n` items of `size` bytes from `at` of the
/// parent's `bytes`.
struct VectorSeq<'p, 'a, 'de, 'c> {
    bytes: &'a [u8],
    at: usize,
    parent: &'p mut ElemDe<'a, 'de, 'c>,
    base: &'a DType,
    item: Plan,
    n: usize,
    size: usize,
    i: usize,
}

impl<'de> SeqAccess<'de> for VectorSeq<'_, '_, 'de, '_> {
    type Error = Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        if self.i >= self.n {
            return Ok(None);
        }
        let i = self.i;
        let at = self.at;
        self.i += 1;
        self.at = at.wrapping_add(self.size);
        seed.deserialize(FastDe {
            bytes: self.bytes,
            start: at,
            len: self.size,
            dtype: self.base,
            plan: self.item,
            parent: &mut *self.parent,
        })
        .map(Some)
        .map_err(|e| e.in_index(i as u64))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.n - self.i)
    }
}

/// A record's fields, positionally, for a struct whose fields are exactly the file's: the
/// record is at `base` of the parent's `bytes`, and `plan` has one entry per field of `rec`.
struct PlanSeq<'p, 'a, 'de, 'c, 's> {
    bytes: &'a [u8],
    base: usize,
    parent: &'p mut ElemDe<'a, 'de, 'c>,
    /// The record's fields not yet handed out, and their plans.
    fields: std::slice::Iter<'a, Field>,
    plan: std::slice::Iter<'s, FieldPlan>,
}

impl<'de> SeqAccess<'de> for PlanSeq<'_, '_, 'de, '_, '_> {
    type Error = Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let (Some(f), Some(fp)) = (self.fields.next(), self.plan.next()) else {
            return Ok(None);
        };
        seed.deserialize(FastDe {
            bytes: self.bytes,
            start: self.base.wrapping_add(fp.offset),
            len: fp.size,
            dtype: &f.dtype,
            plan: fp.plan,
            parent: &mut *self.parent,
        })
        .map(Some)
        .map_err(|e| e.in_field(&f.name))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.fields.len())
    }
}
