//! [`RecordReader`]: an iterator over an array's elements, one at a time, in O(element)
//! memory.
//!
//! The data is read in large blocks into one reused buffer and each element is decoded from
//! that buffer; no per-element `io::Read` call. With a seekable reader,
//! [`RecordReader::seek_to_record`] jumps to any element.
//!
//! ```
//! # fn main() -> npy_serde::Result<()> {
//! # let mut file = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
//! # let dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
//! # file.extend_from_slice(dict.as_bytes());
//! # file.resize(127, b' ');
//! # file.push(b'\n');
//! # for v in [10i32, 20, 30] { file.extend_from_slice(&v.to_le_bytes()); }
//! let mut records = npy_serde::RecordReader::<_, i64>::new_serde(std::io::Cursor::new(file))?;
//! assert_eq!(records.len(), 3);
//! records.seek_to_record(1)?;
//! let rest: Vec<i64> = records.collect::<Result<_, _>>()?;
//! assert_eq!(rest, [20, 30]);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::marker::PhantomData;
use std::ops::ControlFlow;

use serde::de::{DeserializeOwned, DeserializeSeed};

use super::elem::ElemDe;
use super::entry::FastDe;
use super::exact::{self, Exact, General};
use super::options::ReaderBuilder;
use super::plan::{Ctx, Plan};
use super::planned::{LastPlan, PlannedRun, RowDe};
use super::source::{BlockReader, FortranWalk};
use crate::error::{Error, Result};
use crate::header::{read_contents, Contents, Header, ParsedHeader};
use crate::record::NpyRecord;

/// Yields the elements of one `.npy` array as `T`, in logical C order (the array's axes are
/// flattened; for a 0-d array, one element).
///
/// A Fortran-order array with more than one non-trivial axis is read into memory first
/// (logical C order needs random access); every other array streams in O(block) memory.
///
/// After an I/O or end-of-input error the iterator ends; after an error in one element (a type
/// mismatch, an invalid value), it continues with the next element.
///
/// `E` is the tiers tried first: [`Exact`] for types that know their dtype ([`new`](Self::new),
/// the default), [`General`] for any `Deserialize` type ([`new_serde`](Self::new_serde)). `for_each`,
/// `fold`, `sum`, `collect` and the like iterate internally, a block at a time: each element
/// then goes from the block just read to the closure with nothing in between (on the exact
/// tier, the fields the closure does not use are never decoded). A `for` loop takes one
/// element per `next` instead, which costs more per element.
pub struct RecordReader<R, T, E = Exact<T>> {
    block: BlockReader<R>,
    header: ParsedHeader,
    itemsize: usize,
    count: u64,
    next: u64,
    /// Fortran-order data held in memory, with its walker in logical C order.
    memory: Option<(Vec<u8>, FortranWalk)>,
    ctx: Ctx,
    /// The element's decode plan, computed once.
    plan: Plan,
    failed: bool,
    /// Whether elements still go to the fast tier first.
    fast: bool,
    last: LastPlan,
    /// The exact tier of `T`'s compile-time layout ([`RecordReader::new`]), until its
    /// first miss.
    exact: E,
    _t: PhantomData<fn() -> T>,
}

impl<R, T, E> fmt::Debug for RecordReader<R, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordReader")
            .field("header", &self.header)
            .field("next", &self.next)
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl<R: Read, T: DeserializeOwned> RecordReader<R, T> {
    /// [`new`](RecordReader::new) for any `Deserialize` type (no `NpyRecord` needed): reads the
    /// header from `reader` (default limits) and streams the elements after it, on the
    /// runtime-planned and general tiers. The same elements and errors as `new`, which is
    /// several times faster on records for types that derive `NpyRecord`.
    ///
    /// (Declared on the default `RecordReader<R, T>` so that `RecordReader::<_, T>::new_serde`
    /// names it; it returns the reader over the general tiers.)
    pub fn new_serde(reader: R) -> Result<RecordReader<R, T, General>> {
        RecordReader::with_builder(reader, &ReaderBuilder::new())
    }

    /// [`from_parts`](RecordReader::from_parts) for any `Deserialize` type.
    pub fn from_parts_serde(
        reader: R,
        header: ParsedHeader,
    ) -> Result<RecordReader<R, T, General>> {
        RecordReader::build(reader, header, &ReaderBuilder::new())
    }
}

impl<R: Read, T: DeserializeOwned> RecordReader<R, T, General> {
    pub(crate) fn with_builder(mut reader: R, rb: &ReaderBuilder) -> Result<Self> {
        let header = match read_contents(&mut reader, &rb.limits)? {
            Contents::Typed(h) => h,
            Contents::Objects(h) => {
                return Err(super::objects::not_element_wise(&h, rb, "streamed"));
            }
        };
        Self::build(reader, header, rb)
    }

    /// [`from_parts_serde`](RecordReader::from_parts_serde) with options
    /// (`ReaderBuilder::records_serde` for a reader whose header is still to be read).
    #[cfg(feature = "npz")]
    pub(crate) fn from_parts_with(
        reader: R,
        header: ParsedHeader,
        rb: &ReaderBuilder,
    ) -> Result<Self> {
        Self::build(reader, header, rb)
    }

    fn build(reader: R, header: ParsedHeader, rb: &ReaderBuilder) -> Result<Self> {
        Self::build_with(reader, header, rb, General)
    }
}

impl<R: Read, T, E> RecordReader<R, T, E> {
    fn build_with(reader: R, header: ParsedHeader, rb: &ReaderBuilder, exact: E) -> Result<Self> {
        let (count, len) = rb.check(&header.header)?;
        let mut block = BlockReader::new(reader, header.data_offset, len);
        let h = &header.header;
        let memory = match h.fortran_order.then(|| FortranWalk::new(&h.shape)) {
            Some(Some(walk)) => Some((block.read_all()?, walk)),
            _ => None,
        };
        Ok(RecordReader {
            block,
            plan: Plan::of(&h.dtype),
            itemsize: h.dtype.itemsize(),
            header,
            count,
            next: 0,
            memory,
            ctx: rb.ctx(),
            failed: false,
            fast: true,
            last: LastPlan::default(),
            exact,
            _t: PhantomData,
        })
    }
}

impl<R: Read, T: DeserializeOwned + NpyRecord> RecordReader<R, T, Exact<T>> {
    /// Reads the header from `reader` (default limits) and streams the elements after it, for
    /// a type that knows its dtype (`#[derive(Deserialize, NpyRecord)]`; numbers, `bool`,
    /// arrays). When the file's element layout is `T`'s, each element decodes on the exact
    /// tier of [`from_reader`](crate::from_reader), a few thousand at a time from the block
    /// already read; otherwise, and from the first element that tier cannot decode, as
    /// [`new_serde`](RecordReader::new_serde) does, with the same elements and errors.
    ///
    /// ```
    /// # use npy_serde::{NpyRecord, RecordReader};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize, NpyRecord)]
    /// struct Rec { id: i64, x: f64 }
    ///
    /// let file = npy_serde::to_vec(&[Rec { id: 1, x: 0.5 }, Rec { id: 2, x: 1.5 }])?;
    /// let mut sum = 0.0;
    /// for r in RecordReader::<_, Rec>::new(file.as_slice())? {
    ///     sum += r?.x;
    /// }
    /// assert_eq!(sum, 2.0);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn new(reader: R) -> Result<Self> {
        Self::new_with(reader, &ReaderBuilder::new())
    }

    /// Streams the elements of an array whose header was already read: `reader` must be
    /// positioned at the first data byte (e.g. an `.npz` member after its header).
    pub fn from_parts(reader: R, header: ParsedHeader) -> Result<Self> {
        Self::records_from_parts_with(reader, header, &ReaderBuilder::new())
    }

    /// [`new`](Self::new) with reading options.
    pub fn new_with(mut reader: R, rb: &ReaderBuilder) -> Result<Self> {
        let header = match read_contents(&mut reader, &rb.limits)? {
            Contents::Typed(h) => h,
            Contents::Objects(h) => {
                return Err(super::objects::not_element_wise(&h, rb, "streamed"));
            }
        };
        Self::records_from_parts_with(reader, header, rb)
    }

    /// [`new_with`](Self::new_with) for a reader positioned at the first data
    /// byte of an array whose header was already read (an `.npz` member).
    pub(crate) fn records_from_parts_with(
        reader: R,
        header: ParsedHeader,
        rb: &ReaderBuilder,
    ) -> Result<RecordReader<R, T, Exact<T>>> {
        let mut r = RecordReader::build_with(reader, header, rb, Exact(None))?;
        if r.memory.is_none() {
            r.exact = Exact(exact::tier::<T>(&r.header.header.dtype));
        }
        Ok(r)
    }
}

impl<R, T, E> RecordReader<R, T, E> {
    /// The array's header.
    pub fn header(&self) -> &Header {
        &self.header.header
    }

    /// The header with its version and data offset.
    pub fn parsed_header(&self) -> &ParsedHeader {
        &self.header
    }

    /// Number of elements in the array (the product of its shape).
    pub fn len(&self) -> u64 {
        self.count
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Index of the next element to be yielded.
    pub fn position(&self) -> u64 {
        self.next
    }

    /// Elements not yet yielded.
    pub fn remaining(&self) -> u64 {
        self.count - self.next.min(self.count)
    }
}

impl<R: Read, T, E> RecordReader<R, T, E> {
    /// Skips the elements not yet read and returns the reader, positioned just after the
    /// array's data (ready for the next array of a stream).
    pub fn into_inner(mut self) -> Result<R> {
        if self.memory.is_none() {
            self.block.drain()?;
        }
        Ok(self.block.inner)
    }
}

impl<R: Read + Seek, T, E> RecordReader<R, T, E> {
    /// Moves to element `index` (logical C order); `index == len()` moves to the end.
    ///
    /// Seeks the underlying reader relative to where the data started (so it works for readers
    /// positioned anywhere, such as a file with several arrays).
    pub fn seek_to_record(&mut self, index: u64) -> Result<()> {
        if index > self.count {
            return Err(Error::limit("the record index", self.count, index));
        }
        self.failed = false;
        if let Some((_, walk)) = &mut self.memory {
            if index < self.next {
                if let Some(w) = FortranWalk::new(&self.header.header.shape) {
                    *walk = w;
                }
                self.next = 0;
            }
            while self.next < index {
                walk.advance();
                self.next += 1;
            }
            return Ok(());
        }
        let target = index
            .checked_mul(self.itemsize as u64)
            .ok_or_else(|| Error::overflow("the record offset"))?;
        let here = self.block.inner.stream_position()?;
        let data_start = here
            .checked_sub(self.block.read_from_inner())
            .ok_or_else(|| Error::overflow("the data start"))?;
        let to = data_start
            .checked_add(target)
            .ok_or_else(|| Error::overflow("the record offset"))?;
        self.block.inner.seek(SeekFrom::Start(to))?;
        self.block.reset_to(target);
        self.next = index;
        Ok(())
    }
}

impl<R: Read, T: DeserializeOwned, E> RecordReader<R, T, E> {
    /// Deserializes the next element with a seed (for stateful deserialization).
    #[inline]
    pub fn next_seed<S, V>(&mut self, seed: S) -> Option<Result<V>>
    where
        S: for<'de> DeserializeSeed<'de, Value = V>,
    {
        if self.failed || self.next >= self.count {
            return None;
        }
        let index = self.next;
        let dtype = &self.header.header.dtype;
        let (bytes, offset) = match &mut self.memory {
            Some((data, walk)) => {
                let start = (walk.pos() as usize).wrapping_mul(self.itemsize);
                walk.advance();
                match data.get(start..start.wrapping_add(self.itemsize)) {
                    Some(b) => (b, self.header.data_offset + start as u64),
                    None => {
                        self.failed = true;
                        return Some(Err(Error::eof("an element", self.itemsize as u64, 0)));
                    }
                }
            }
            None => {
                let offset = self.block.offset();
                match self.block.next(self.itemsize) {
                    Ok(b) => (b, offset),
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(e.at_record(index)));
                    }
                }
            }
        };
        self.next += 1;
        let mut de = ElemDe {
            bytes,
            borrowed: None,
            dtype,
            dims: &[],
            offset,
            ctx: &mut self.ctx,
        };
        let de = FastDe::whole(&mut de, self.plan);
        crate::tier::served(crate::tier::Tier::General, 1);
        Some(seed.deserialize(de).map_err(|e| e.at_record(index)))
    }
}

/// The call sites of this module's runtime-planned tier (see `super::planned::RowDe`):
/// `next`, and `fold` with the closure `F`.
struct StreamSite;
struct FoldSite<F>(PhantomData<F>);

impl<R: Read, T: DeserializeOwned, E> RecordReader<R, T, E> {
    /// The next element on the runtime-planned tier, or on the general one.
    #[inline]
    fn next_planned(&mut self) -> Option<Result<T>> {
        // The fast tier first (see `crate::read::planned`); a miss decodes the element again below and
        // turns the fast tier off for the rest of the array.
        if self.fast && !self.failed && self.memory.is_none() && self.next < self.count {
            // At a block boundary, refill first, so that the element is not left to the
            // general tier (the same error as `next_seed` would give, if the refill fails).
            if let Err(e) = self.block.fill(self.itemsize) {
                self.failed = true;
                return Some(Err(e.at_record(self.next)));
            }
            if let Some(bytes) = self.block.peek(self.itemsize) {
                let fast = T::deserialize(RowDe::<StreamSite> {
                    bytes,
                    dtype: &self.header.header.dtype,
                    plan: self.plan,
                    ctx: &self.ctx,
                    last: &self.last,
                    site: std::marker::PhantomData,
                });
                match fast {
                    Ok(v) => {
                        self.block.try_next(self.itemsize);
                        self.next += 1;
                        crate::tier::served(crate::tier::Tier::Planned, 1);
                        return Some(Ok(v));
                    }
                    Err(_) => self.fast = false,
                }
            }
        }
        self.next_seed(PhantomData::<T>)
    }

    /// `fold` over the elements the runtime-planned tier decodes, a block at a time, up to its
    /// first miss (which turns it off, as in `next`); the rest is left to `next`. A failed
    /// refill is handed to `f` and ends the iterator, as `next` would.
    fn fold_planned<B, F: FnMut(B, Result<T>) -> B>(&mut self, mut acc: B, f: &mut F) -> B {
        while self.fast && !self.failed && self.memory.is_none() && self.itemsize > 0 {
            let left = self.count.saturating_sub(self.next);
            if left == 0 {
                break;
            }
            if let Err(e) = self.block.fill(self.itemsize) {
                self.failed = true;
                return f(acc, Err(e.at_record(self.next)));
            }
            let n = (self.block.buffered() / self.itemsize)
                .min(usize::try_from(left).unwrap_or(usize::MAX));
            let Some(bytes) = self.block.peek(n * self.itemsize) else {
                break;
            };
            let step = |acc, v| ControlFlow::Continue(f(acc, Ok(v)));
            let (a, k) = T::planned_fold::<FoldSite<F>, _, _>(
                bytes,
                &self.header.header.dtype,
                &self.ctx,
                &self.last,
                acc,
                step,
            );
            acc = a;
            self.block.try_next(k * self.itemsize);
            self.next += k as u64;
            crate::tier::served(crate::tier::Tier::Planned, k as u64);
            if k < n {
                self.fast = false;
            }
        }
        acc
    }

    fn remaining_hint(&self) -> (usize, Option<usize>) {
        if self.failed {
            return (0, Some(0));
        }
        let n = self.remaining();
        (
            usize::try_from(n).unwrap_or(usize::MAX),
            usize::try_from(n).ok(),
        )
    }
}

impl<R: Read, T: DeserializeOwned> Iterator for RecordReader<R, T, General> {
    type Item = Result<T>;

    #[inline]
    fn next(&mut self) -> Option<Result<T>> {
        self.next_planned()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.remaining_hint()
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

/// The call site of [`RecordReader::next`]'s exact tier (see `exact::one`).
struct NextSite;

impl<R: Read, T: DeserializeOwned + NpyRecord> Iterator for RecordReader<R, T, Exact<T>> {
    type Item = Result<T>;

    #[inline]
    fn next(&mut self) -> Option<Result<T>> {
        if let Some(t) = &self.exact.0 {
            if self.failed || self.next >= self.count {
                return None;
            }
            if let Err(e) = self.block.fill(self.itemsize) {
                self.failed = true;
                return Some(Err(e.at_record(self.next)));
            }
            if let Some(bytes) = self.block.peek(self.itemsize)
                && let Some(v) = exact::one::<T, NextSite>(t, bytes)
            {
                self.block.try_next(self.itemsize);
                self.next += 1;
                crate::tier::served(crate::tier::Tier::Exact, 1);
                return Some(Ok(v));
            }
            // A miss: that element and the rest go to the other tiers.
            self.exact.0 = None;
        }
        self.next_planned()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.remaining_hint()
    }

    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        let mut g = |acc, v| f(acc, Ok(v));
        while let Some(t) = &self.exact.0 {
            if self.failed || self.next >= self.count || self.itemsize == 0 {
                break;
            }
            if let Err(e) = self.block.fill(self.itemsize) {
                self.failed = true;
                return f(acc, Err(e.at_record(self.next)));
            }
            let n = (self.block.buffered() / self.itemsize)
                .min(usize::try_from(self.count - self.next).unwrap_or(usize::MAX));
            let Some(bytes) = self.block.peek(n * self.itemsize) else {
                break;
            };
            let (a, k) = exact::fold(t, bytes, acc, &mut g);
            acc = a;
            self.block.try_next(k * self.itemsize);
            self.next += k as u64;
            crate::tier::served(crate::tier::Tier::Exact, k as u64);
            if k < n {
                self.exact.0 = None;
            }
        }
        // After a miss of the exact tier, the runtime-planned one.
        acc = self.fold_planned(acc, &mut f);
        // By `next` (a `for` loop does not call `fold`).
        for x in self {
            acc = f(acc, x);
        }
        acc
    }
}
#[cfg(test)]
mod send_tests {
    /// Readers can move to another thread (their per-array caches hold no `Rc` or pointers).
    #[test]
    fn readers_are_send() {
        fn send<T: Send>() {}
        send::<super::RecordReader<std::fs::File, f64>>();
        send::<crate::MmapArray>();
        send::<crate::MmapRecords<'static, f64>>();
        send::<crate::ReaderBuilder>();
    }

    /// A map can be shared between threads (`record` keeps its plans behind a lock that it
    /// never waits for).
    #[test]
    fn maps_are_sync() {
        fn sync<T: Sync>() {}
        sync::<crate::MmapArray>();
    }
}
