//! [`MmapArray`]: a `.npy` file mapped into memory, read in place.
//!
//! The header is validated when the file is opened; records and whole arrays then deserialize
//! straight from the mapped pages, and `&str`/`&[u8]` fields borrow from them (zero copy).
//!
//! ```no_run
//! # fn main() -> npy_serde::Result<()> {
//! use npy_serde::MmapArray;
//! let map = MmapArray::open("points.npy")?;
//! let names: Vec<&str> = map.to_vec_serde()?; // an `S` array, borrowed from the map
//! let third: &str = map.record_serde(2)?;
//! # let _ = (names, third);
//! # Ok(())
//! # }
//! ```

use std::fs::File;
use std::ops::ControlFlow;
use std::path::Path;

use serde::de::Deserialize;

use super::array::decode_all;
use super::decode::{data_of, deserialize_data, vec_from_data, Elements};
use super::elem::ElemDe;
use super::entry::FastDe;
use super::exact::{self, Exact, General};
use super::options::ReaderBuilder;
use super::plan::{Ctx, Plan};
use super::planned::{LastPlan, PlannedRun, RowDe};
use super::source::{SliceSource, Source};
use crate::error::{Error, Result};
use crate::header::{parse_contents, Contents, Header, ParsedHeader};
use crate::pod::{self, Pod};
use crate::value::Array;
use crate::NpyRecord;

/// A memory-mapped `.npy` file with a validated header.
///
/// # File changes
///
/// The map shows the file's current contents. If another process (or this one) writes to the
/// file while it is mapped, values read later may change; if it truncates the file, touching
/// the lost pages raises `SIGBUS`. Map only files that nothing modifies while the map exists,
/// or read them with [`deserialize_path`](crate::deserialize_path) instead, which copies.
pub struct MmapArray {
    /// The whole mapped file (an `.npz` archive's members share one map).
    map: std::sync::Arc<memmap2::Mmap>,
    /// The `.npy` file's bytes within the map: all of it for a `.npy` file, one stored member
    /// of an archive ([`crate::npz::MmapNpz`]).
    file: std::ops::Range<usize>,
    /// The archive member's name, for the refusal messages of the views.
    member: Option<std::sync::Arc<str>>,
    header: ParsedHeader,
    /// The first data byte's offset in the map.
    data_start: usize,
    data_len: usize,
    rb: ReaderBuilder,
    /// The plans of [`record`](Self::record)'s runtime-planned tier, made once per struct and
    /// kept between calls (a call that finds it in use makes its own).
    record_ctx: std::sync::Mutex<Ctx>,
}

impl std::fmt::Debug for MmapArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MmapArray")
            .field("header", &self.header)
            .field("data_len", &self.data_len)
            .finish_non_exhaustive()
    }
}

impl MmapArray {
    /// Maps the file at `path` (default limits).
    pub fn open<P: AsRef<Path>>(path: P) -> Result<MmapArray> {
        Self::open_with(path, &ReaderBuilder::new())
    }

    /// Maps the file at `path` with the given reading options.
    ///
    /// An object array (`descr '|O'`) is refused even with
    /// [`allow_pickle_data`](ReaderBuilder::allow_pickle_data): its data is one Python pickle,
    /// no element lies in place to view; the error says so and names the doors that read it
    /// ([`ReaderBuilder::from_path_serde`], [`ReaderBuilder::read_objects_path`]).
    pub fn open_with<P: AsRef<Path>>(path: P, rb: &ReaderBuilder) -> Result<MmapArray> {
        let file = File::open(path.as_ref())?;
        // SAFETY: `Mmap::map` is unsafe because the mapped memory can change under us: another
        // process (or this one) writing the file makes the bytes we read change, and truncating
        // it makes access to the lost pages raise SIGBUS. This crate never writes through the
        // map and only ever reads bytes, so any byte values are valid for every decode path (a
        // changed bool byte is an error, never UB); the caller is told in `MmapArray`'s docs
        // that the file must not be modified or truncated while mapped.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let len = map.len();
        Self::in_map(std::sync::Arc::new(map), 0..len, None, rb)
    }

    /// The `.npy` file at `file` within `map` (a whole file, or a stored archive member named
    /// `member`), its header validated against the range's length.
    pub(crate) fn in_map(
        map: std::sync::Arc<memmap2::Mmap>,
        file: std::ops::Range<usize>,
        member: Option<std::sync::Arc<str>>,
        rb: &ReaderBuilder,
    ) -> Result<MmapArray> {
        let bytes = map.get(file.clone()).unwrap_or(&[]);
        let header = match parse_contents(bytes, &rb.limits)? {
            Contents::Typed(h) => h,
            Contents::Objects(h) => {
                return Err(super::objects::not_element_wise(&h, rb, "memory-mapped"));
            }
        };
        let data_len = data_of(bytes, &header, rb)?.len();
        let data_start = file.start + header.data_offset as usize;
        Ok(MmapArray {
            map,
            file,
            member,
            header,
            data_start,
            data_len,
            rb: rb.clone(),
            record_ctx: std::sync::Mutex::new(rb.ctx()),
        })
    }

    /// The data's offset in the mapped file (for a member, in the archive).
    #[cfg(feature = "npz")]
    #[doc(hidden)]
    pub fn data_offset_in_file(&self) -> u64 {
        self.data_start as u64
    }

    /// The data as `&[T]` after `proof`, with a refusal naming the archive member if any.
    pub(crate) fn cast<T: NpyRecord>(&self, proof: Pod<T>) -> Result<&[T]> {
        let r = pod::cast(proof, self.data(), self.data_start as u64);
        match (&self.member, r) {
            (Some(name), Err(e))
                if matches!(
                    e.kind(),
                    crate::ErrorKind::View {
                        what: "alignment",
                        ..
                    }
                ) =>
            {
                Err(pod::view_error::<T>(
                    "alignment",
                    format!(
                        "the data of archive member {name:?} starts at byte {} of the archive, \
                         not a multiple of the type's alignment {} (np.savez does not align \
                         members; write the archive with NpzWriter::align(true), or read the \
                         member with NpzArchive's copying readers)",
                        self.data_start,
                        std::mem::align_of::<T>()
                    ),
                ))
            }
            (_, r) => r,
        }
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header.header
    }

    /// The header with its version and data offset.
    pub fn parsed_header(&self) -> &ParsedHeader {
        &self.header
    }

    /// Number of elements (product of the shape).
    pub fn len(&self) -> u64 {
        // Checked when the map was opened.
        self.header.header.count().unwrap_or(0)
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw data bytes, in storage order (Fortran order if the header says so), in the
    /// file's byte order.
    pub fn data(&self) -> &[u8] {
        &self.map[self.data_start..self.data_start + self.data_len]
    }

    /// The whole mapped file (for an archive member, the member's `.npy` bytes).
    pub fn as_bytes(&self) -> &[u8] {
        &self.map[self.file.clone()]
    }

    /// Deserializes the whole array (nested sequences following the shape), borrowing strings
    /// and bytes from the map.
    pub fn deserialize<'a, T: Deserialize<'a>>(&'a self) -> Result<T> {
        deserialize_data(self.data(), true, &self.header, &self.rb)
    }

    /// [`to_vec`](Self::to_vec) for any `Deserialize` type: every element, in logical C order,
    /// into a `Vec` allocated once at its final size (see
    /// [`from_reader_serde`](crate::from_reader_serde)), borrowing strings and
    /// bytes from the map. Arrays of 16 MiB and more are decoded on all cores, as by
    /// [`from_slice_serde`](crate::from_slice_serde).
    pub fn to_vec_serde<'a, T: Deserialize<'a> + Send>(&'a self) -> Result<Vec<T>> {
        if let Some(v) = self.rb.vec_fast::<T>(&self.header, self.data()) {
            return Ok(v);
        }
        vec_from_data(self.data(), true, &self.header, &self.rb, Elements::plain())
    }

    /// Every element into a `Vec<T>` for a type that knows its dtype, as
    /// [`from_reader`](crate::from_reader) reads them: the exact-layout tier when the file's
    /// element layout is `T::dtype()`'s, else as [`to_vec_serde`](Self::to_vec_serde), with the
    /// same values and errors. Reading a memory map this way is the fastest way to a `Vec` of
    /// records.
    ///
    /// ```
    /// # use npy_serde::{MmapArray, NpyRecord};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize, NpyRecord)]
    /// struct Rec { id: i64, x: f64 }
    ///
    /// # let path = std::env::temp_dir().join(format!("to-records-{}.npy", std::process::id()));
    /// npy_serde::to_path(&path, &[Rec { id: 1, x: 0.5 }, Rec { id: 2, x: 1.5 }])?;
    /// let recs: Vec<Rec> = MmapArray::open(&path)?.to_vec()?;
    /// assert_eq!(recs[1].x, 1.5);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn to_vec<'a, T: Deserialize<'a> + NpyRecord + Send>(&'a self) -> Result<Vec<T>> {
        if let Some(v) = self.rb.records_fast::<T>(&self.header, self.data()) {
            return Ok(v);
        }
        vec_from_data(
            self.data(),
            true,
            &self.header,
            &self.rb,
            Elements::records(),
        )
    }

    /// [`record`](Self::record) for any `Deserialize` type: deserializes element `index`
    /// (logical C order: for a Fortran-order array, the element whose C-order flat index is
    /// `index`).
    ///
    /// Random access in constant time: the element's bytes are found from its index, and
    /// decoded on the runtime-planned tier (the same values and errors as the general one,
    /// which takes any element it cannot decode), with its plans kept between calls. To read
    /// many elements in order, iterating ([`records_serde`](Self::records_serde),
    /// [`records`](Self::records)) costs less per element.
    pub fn record_serde<'a, T: Deserialize<'a>>(&'a self, index: u64) -> Result<T> {
        let len = self.len();
        if index >= len {
            return Err(Error::limit(
                "the record index",
                len.saturating_sub(1),
                index,
            ));
        }
        let h = &self.header.header;
        let plan = Plan::of(&h.dtype);
        // Never waits: a call that finds the kept plans in use (another thread's) makes its own.
        let kept = self.record_ctx.try_lock().ok();
        let own;
        let ctx: &Ctx = match &kept {
            Some(kept) => kept,
            None => {
                own = self.rb.ctx();
                &own
            }
        };
        if !super::needs_walk(h) {
            // Stored in C order (a 1-D Fortran array is too): at `index` × the item size.
            let size = h.dtype.itemsize();
            let start = usize::try_from(index)
                .ok()
                .and_then(|i| i.checked_mul(size));
            let bytes = start.and_then(|s| self.data().get(s..s.checked_add(size)?));
            if let Some(bytes) = bytes {
                let fast = T::deserialize(RowDe::<RecordSite> {
                    bytes,
                    dtype: &h.dtype,
                    plan,
                    ctx,
                    last: &LastPlan::default(),
                    site: std::marker::PhantomData,
                });
                if let Ok(v) = fast {
                    crate::tier::served(crate::tier::Tier::Planned, 1);
                    return Ok(v);
                }
            }
        }
        let mut src = SliceSource::new(
            self.data(),
            true,
            &h.dtype,
            &h.shape,
            h.fortran_order,
            self.header.data_offset,
        )?;
        src.seek(index);
        let e = src.next_elem()?;
        crate::tier::served(crate::tier::Tier::General, 1);
        T::deserialize(FastDe::whole(
            &mut ElemDe {
                bytes: e.bytes,
                borrowed: e.borrowed,
                dtype: &h.dtype,
                dims: &[],
                offset: e.offset,
                ctx,
            },
            plan,
        ))
        .map_err(|err| err.at_record(index))
    }

    /// Element `index` (logical C order: for a Fortran-order array, the element whose C-order
    /// flat index is `index`) as a type that knows its dtype, in constant time.
    ///
    /// One element is decoded as [`record_serde`](Self::record_serde) decodes it (on the
    /// runtime-planned tier, whose plans are kept between calls: about 30 ns for a 33-byte
    /// record); the exact tier pays off over runs of elements, so iterate with
    /// [`records`](Self::records) to read many in order.
    ///
    /// ```
    /// # use npy_serde::{MmapArray, NpyRecord};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize, NpyRecord)]
    /// struct Rec { id: i64, x: f64 }
    ///
    /// # let path = std::env::temp_dir().join(format!("record-i-{}.npy", std::process::id()));
    /// npy_serde::to_path(&path, &[Rec { id: 1, x: 0.5 }, Rec { id: 2, x: 1.5 }])?;
    /// let map = MmapArray::open(&path)?;
    /// assert_eq!(map.record::<Rec>(1)?.id, 2);
    /// # drop(map);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    #[inline]
    pub fn record<'a, T: Deserialize<'a> + NpyRecord>(&'a self, index: u64) -> Result<T> {
        self.record_serde(index)
    }

    /// [`records`](Self::records) for any `Deserialize` type: iterates over the elements in
    /// logical C order, borrowing from the map.
    pub fn records_serde<'a, T: Deserialize<'a>>(&'a self) -> Result<MmapRecords<'a, T, General>> {
        self.iter_with(General)
    }

    fn iter_with<'a, T, E>(&'a self, exact: E) -> Result<MmapRecords<'a, T, E>> {
        let h = &self.header.header;
        Ok(MmapRecords {
            src: SliceSource::new(
                self.data(),
                true,
                &h.dtype,
                &h.shape,
                h.fortran_order,
                self.header.data_offset,
            )?,
            dtype: &h.dtype,
            plan: Plan::of(&h.dtype),
            ctx: self.rb.ctx(),
            fast: true,
            last: LastPlan::default(),
            exact,
            _t: std::marker::PhantomData,
        })
    }

    /// Iterates over the elements in logical C order, for a type that knows its dtype
    /// (`#[derive(Deserialize, NpyRecord)]`): the exact tier of [`to_vec`](Self::to_vec) when
    /// the file's element layout is `T`'s, else as [`records_serde`](Self::records_serde),
    /// with the same elements and errors. For plain data,
    /// [`as_slice`](Self::as_slice) is faster still: no decoding at all.
    pub fn records<'a, T: Deserialize<'a> + NpyRecord>(
        &'a self,
    ) -> Result<MmapRecords<'a, T, Exact<T>>> {
        self.iter_with(Exact(exact::tier::<T>(&self.header.header.dtype)))
    }

    /// The shape (the header's).
    pub fn shape(&self) -> &[u64] {
        &self.header.header.shape
    }

    /// True if the data is stored in Fortran (column-major) order.
    pub fn fortran_order(&self) -> bool {
        self.header.header.fortran_order
    }

    /// The data in place, as `&[T]`: no copy, no decoding. NumPy's `np.load(path,
    /// mmap_mode='r')`.
    ///
    /// `T` must be plain data ([`NpyRecord::POD`]: numbers, `bool`, arrays of them, `#[repr(C)]`
    /// structs of them) whose layout is the file's element layout in native byte order, and
    /// the elements must be in C order (a Fortran-order array qualifies when at most one axis
    /// is longer than 1). Otherwise the error ([`ErrorKind::View`](crate::ErrorKind::View)) says
    /// which of the type, dtype, byte order, order or alignment does not fit; reading with
    /// [`to_vec`](Self::to_vec) converts all of those. For a type with `bool` leaves,
    /// every bool byte is checked (0 or 1) first, which reads the whole map once; otherwise
    /// the view costs nothing, whatever the file's size.
    ///
    /// The element at multi-index `(i, j, ..)` is at the C-order flat index over
    /// [`shape`](Self::shape).
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("as-slice-{}.npy", std::process::id()));
    /// npy_serde::to_path(&path, &[[1.0f32, 2.0], [3.0, 4.0], [5.0, 6.0]])?;
    /// let map = npy_serde::MmapArray::open(&path)?;
    /// assert_eq!(map.shape(), [3, 2]);
    /// let v: &[f32] = map.as_slice()?;
    /// assert_eq!(v[2 * 1 + 1], 4.0);
    /// // Or one row per element:
    /// let rows: &[[f32; 2]] = map.as_slice()?;
    /// assert_eq!(rows[2], [5.0, 6.0]);
    /// # drop(map);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn as_slice<T: NpyRecord>(&self) -> Result<&[T]> {
        let h = &self.header.header;
        let proof = as_elements::<T>(h)?;
        self.cast(proof)
    }

    /// Decodes the whole array into an [`Array`] of [`Value`](crate::Value)s.
    pub fn to_array(&self) -> Result<Array> {
        decode_all(self.data(), &self.header, &self.rb)
    }
}

/// Iterator over the elements of an [`MmapArray`].
///
/// `for_each`, `fold`, `sum`, `collect` and the like iterate internally: each element then
/// goes from the map to the closure with nothing in between, and on the exact tier
/// ([`MmapArray::records`]) the fields the closure does not use are never decoded.
///
/// `E` is the tiers tried first: [`General`] for any `Deserialize` type
/// ([`MmapArray::records_serde`]), [`Exact`] for types that know their dtype
/// ([`MmapArray::records`]).
pub struct MmapRecords<'a, T, E = Exact<T>> {
    src: SliceSource<'a>,
    dtype: &'a crate::dtype::DType,
    /// The element's decode plan, computed once.
    plan: Plan,
    ctx: Ctx,
    /// Whether elements still go to the fast tier first.
    fast: bool,
    last: LastPlan,
    /// The exact tier ([`MmapArray::records`]), until its first miss.
    exact: E,
    _t: std::marker::PhantomData<fn() -> T>,
}

impl<'a, T: Deserialize<'a>, E> MmapRecords<'a, T, E> {
    /// The next element on the runtime-planned tier, or on the general one.
    #[inline]
    fn next_planned(&mut self) -> Option<Result<T>> {
        if self.src.remaining() == 0 {
            return None;
        }
        // The fast tier first (see `crate::read::planned`); a miss decodes the element again below and
        // turns the fast tier off for the rest of the array.
        if self.fast
            && let Some(bytes) = self.src.peek_bytes()
        {
            let fast = T::deserialize(RowDe::<MmapSite> {
                bytes,
                dtype: self.dtype,
                plan: self.plan,
                ctx: &self.ctx,
                last: &self.last,
                site: std::marker::PhantomData,
            });
            match fast {
                Ok(v) => {
                    self.src.next_bytes();
                    crate::tier::served(crate::tier::Tier::Planned, 1);
                    return Some(Ok(v));
                }
                Err(_) => self.fast = false,
            }
        }
        let e = match self.src.next_elem() {
            Ok(e) => e,
            Err(e) => return Some(Err(e)),
        };
        let index = e.index;
        crate::tier::served(crate::tier::Tier::General, 1);
        Some(
            T::deserialize(FastDe::whole(
                &mut ElemDe {
                    bytes: e.bytes,
                    borrowed: e.borrowed,
                    dtype: self.dtype,
                    dims: &[],
                    offset: e.offset,
                    ctx: &mut self.ctx,
                },
                self.plan,
            ))
            .map_err(|err| err.at_record(index)),
        )
    }

    /// `fold` over the elements the runtime-planned tier decodes, up to its first miss (which
    /// turns it off, as in `next`); the rest is left to `next`.
    fn fold_planned<B, F: FnMut(B, Result<T>) -> B>(&mut self, acc: B, f: &mut F) -> B {
        if !self.fast {
            return acc;
        }
        let Some(bytes) = self.src.peek_run(usize::MAX) else {
            return acc;
        };
        let step = |acc, v| ControlFlow::Continue(f(acc, Ok(v)));
        let (acc, k) = T::planned_fold::<FoldSite<F>, _, _>(
            bytes, self.dtype, &self.ctx, &self.last, acc, step,
        );
        self.src.next += k as u64;
        crate::tier::served(crate::tier::Tier::Planned, k as u64);
        if self.src.remaining() > 0 {
            self.fast = false;
        }
        acc
    }

    /// Moves past `n` elements (at most to the end) without decoding them.
    fn skip_ahead(&mut self, n: usize) {
        let n = u64::try_from(n)
            .unwrap_or(u64::MAX)
            .min(self.src.remaining());
        self.src.seek(self.src.next + n);
    }

    fn remaining_hint(&self) -> (usize, Option<usize>) {
        let n = self.src.remaining();
        (
            usize::try_from(n).unwrap_or(usize::MAX),
            usize::try_from(n).ok(),
        )
    }
}

impl<'a, T: Deserialize<'a>> Iterator for MmapRecords<'a, T, General> {
    type Item = Result<T>;

    #[inline]
    fn next(&mut self) -> Option<Result<T>> {
        self.next_planned()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.remaining_hint()
    }

    /// In constant time for C-order data: the elements skipped are not decoded.
    fn nth(&mut self, n: usize) -> Option<Result<T>> {
        self.skip_ahead(n);
        self.next()
    }

    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let mut acc = self.fold_planned(init, &mut f);
        // By `next` (a `for` loop does not call `fold`).
        for x in self {
            acc = f(acc, x);
        }
        acc
    }
}

/// The call site of [`MmapRecords::next`]'s exact tier (see `exact::one`).
struct NextSite;

impl<'a, T: Deserialize<'a> + NpyRecord> Iterator for MmapRecords<'a, T, Exact<T>> {
    type Item = Result<T>;

    #[inline]
    fn next(&mut self) -> Option<Result<T>> {
        if let Some(t) = &self.exact.0 {
            // C order and the bytes at hand (else the other tiers take over and report).
            if let Some(bytes) = self.src.at_hand()
                && let Some(v) = exact::one::<T, NextSite>(t, bytes)
            {
                self.src.next += 1;
                crate::tier::served(crate::tier::Tier::Exact, 1);
                return Some(Ok(v));
            }
            if self.src.remaining() > 0 {
                self.exact.0 = None;
            }
        }
        self.next_planned()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.remaining_hint()
    }

    /// In constant time for C-order data: the elements skipped are not decoded.
    fn nth(&mut self, n: usize) -> Option<Result<T>> {
        self.skip_ahead(n);
        self.next()
    }

    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        if let Some(t) = self.exact.0.take()
            && let Some(bytes) = self.src.peek_run(usize::MAX)
        {
            let (a, k) = exact::fold(&t, bytes, acc, &mut |acc, v| f(acc, Ok(v)));
            acc = a;
            self.src.next += k as u64;
            crate::tier::served(crate::tier::Tier::Exact, k as u64);
        }
        // A miss, or elements the tier cannot see (Fortran order, missing bytes): the
        // other tiers take that element and the rest.
        acc = self.fold_planned(acc, &mut f);
        // By `next` (a `for` loop does not call `fold`).
        for x in self {
            acc = f(acc, x);
        }
        acc
    }
}

/// The proof that the data of an array with header `h` can be seen as `[T]`, where `T` is the
/// element type or, for a subarray dtype, `T` may also be the subarray's base (a `(2, 3)` array
/// of `<f4` is 6 `f32`s or 3 `[f32; 2]`s, as NumPy folds subarrays into the shape).
pub(crate) fn as_elements<T: NpyRecord>(h: &Header) -> Result<Pod<T>> {
    let direct = pod::check_view::<T>(&h.dtype, &h.shape, h.fortran_order);
    match (&direct, &h.dtype) {
        (Err(_), crate::dtype::DType::Plain(_)) if !h.shape.is_empty() => {
            // `[T; N]` over the last axes of a plain array: the last axes folded into the
            // element (only for C order, where they are contiguous).
            let mut dims = h.shape.clone();
            let mut folded = h.dtype.clone();
            while let Some(n) = dims.pop() {
                folded = match crate::dtype::DType::array(folded, vec![n]) {
                    Ok(d) => d,
                    Err(_) => break,
                };
                if let Ok(p) = pod::check_view::<T>(&normalize(&folded), &dims, h.fortran_order) {
                    // Fortran order is C order only with at most one axis longer than 1.
                    if !h.fortran_order || h.shape.iter().filter(|&&d| d > 1).count() <= 1 {
                        return Ok(p);
                    }
                }
            }
            direct
        }
        _ => direct,
    }
}

/// A subarray dtype with its nested axes merged into one subarray (`((f4, (3,)), (2,))` is
/// `(f4, (2, 3))`), as `[[f32; 3]; 2]`'s dtype is.
fn normalize(dt: &crate::dtype::DType) -> crate::dtype::DType {
    use crate::dtype::DType;
    let mut shape = Vec::new();
    let mut d = dt;
    while let DType::Array(base, s) = d {
        shape.extend_from_slice(s);
        d = base;
    }
    match shape.is_empty() {
        true => d.clone(),
        false => DType::Array(Box::new(d.clone()), shape),
    }
}

/// The call sites of this module's runtime-planned tier (see `super::planned::RowDe`):
/// `next`, and `fold` with the closure `F`.
struct MmapSite;
struct FoldSite<F>(std::marker::PhantomData<F>);
/// The call site of [`MmapArray::record`]'s runtime-planned tier.
struct RecordSite;
