//! Byte sources: where an array's elements come from, in logical C order. A slice (slice
//! input, a memory map, or data read whole), or blocks read from an `io::Read` into one
//! reused buffer; a Fortran-order array is walked in C order ([`FortranWalk`]).
//!
//! Owns no decoding: a source hands out element bytes, and the tiers above decode them.

use std::io::{self, Read};

use crate::dtype::DType;
use crate::error::{Error, Result};

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
    pub(super) dims: Vec<u64>,
    pub(super) strides: Vec<u64>,
    pub(super) idx: Vec<u64>,
    pub(super) pos: u64,
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
    pub(super) data: &'de [u8],
    pub(super) borrowable: bool,
    pub(super) itemsize: usize,
    pub(super) count: u64,
    pub(super) next: u64,
    pub(super) fortran: Option<FortranWalk>,
    pub(super) base: u64,
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
    pub(super) fn storage_index(&self) -> u64 {
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
    pub(super) fn at_hand(&self) -> Option<&'de [u8]> {
        let index = self.next;
        if index >= self.count || self.fortran.is_some() {
            return None;
        }
        let start = (index as usize).wrapping_mul(self.itemsize);
        self.data.get(start..start.wrapping_add(self.itemsize))
    }

    /// Up to `max` next elements' bytes (at least one), when stored one after another in C
    /// order, without consuming them.
    #[inline]
    pub(crate) fn peek_run(&self, max: usize) -> Option<&'de [u8]> {
        let index = self.next;
        if index >= self.count || self.fortran.is_some() || self.itemsize == 0 {
            return None;
        }
        let n = usize::try_from(self.count - index)
            .unwrap_or(usize::MAX)
            .min(max);
        let start = (index as usize).checked_mul(self.itemsize)?;
        let len = n.checked_mul(self.itemsize)?;
        self.data.get(start..start.checked_add(len)?)
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

pub(crate) use crate::header::count_of;

// Block reading
// ---------------------------------------------------------------------------------------------

/// Bytes read per `read` call once the buffer is warm.
pub(super) const CHUNK: usize = 1 << 18;
pub(super) const PAGE: usize = 4096;

/// Reads the array data from an `io::Read` in large blocks into one reused buffer and hands
/// out byte ranges of it. Never reads past the end of the array's data.
///
/// Reads are placed so that the destination address is congruent to the stream offset modulo
/// the page size: a `read(2)` from the page cache into such a destination runs about three
/// times faster than into a misaligned one.
#[doc(hidden)]
pub struct BlockReader<R> {
    pub(crate) inner: R,
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    pub(super) end: usize,
    /// Data bytes not yet read from `inner`.
    pub(super) remaining: u64,
    /// Total data bytes.
    pub(super) total: u64,
    /// Stream offset of the first data byte.
    pub(super) base: u64,
}

impl<R: Read> BlockReader<R> {
    #[doc(hidden)]
    pub fn new(inner: R, base: u64, total: u64) -> Self {
        BlockReader {
            inner,
            buf: Vec::new(),
            start: 0,
            end: 0,
            remaining: total,
            total,
            base,
        }
    }

    /// Data bytes handed out (or skipped) so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.total - self.remaining - (self.end - self.start) as u64
    }

    /// Data bytes read from `inner` so far.
    pub(crate) fn read_from_inner(&self) -> u64 {
        self.total - self.remaining
    }

    /// Stream offset of the next byte handed out.
    #[doc(hidden)]
    pub fn offset(&self) -> u64 {
        self.base + self.consumed()
    }

    /// Forgets buffered bytes and continues as if `consumed` data bytes had been read (after the
    /// caller repositioned `inner` there).
    pub(crate) fn reset_to(&mut self, consumed: u64) {
        self.start = 0;
        self.end = 0;
        self.remaining = self.total - consumed.min(self.total);
    }

    #[cold]
    pub(super) fn truncated(&self) -> Error {
        let found = self.total - self.remaining;
        Error::eof("the array data", self.total, found).at_byte(self.base + found)
    }

    /// Bytes buffered and not yet handed out.
    pub(crate) fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Makes sure `need` bytes are buffered.
    #[inline]
    pub(crate) fn fill(&mut self, need: usize) -> Result<()> {
        if self.end - self.start >= need {
            return Ok(());
        }
        self.fill_slow(need)
    }

    #[inline(never)]
    pub(super) fn fill_slow(&mut self, need: usize) -> Result<()> {
        while self.end - self.start < need {
            if self.remaining == 0 {
                return Err(self.truncated());
            }
            if self.end == self.buf.len() {
                self.make_room(need);
            }
            let room = (self.buf.len() - self.end) as u64;
            let n = room.min(self.remaining) as usize;
            let got = loop {
                match self.inner.read(&mut self.buf[self.end..self.end + n]) {
                    Ok(k) => break k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Error::from(e).at_byte(self.offset())),
                }
            };
            if got == 0 {
                return Err(self.truncated());
            }
            self.end += got;
            self.remaining -= got as u64;
        }
        Ok(())
    }

    /// Grows the buffer (at most doubling it, so memory follows the bytes that actually
    /// arrive) and slides the unconsumed bytes to just before a page-congruent read target.
    pub(super) fn make_room(&mut self, need: usize) {
        let live = self.end - self.start;
        let to_read = (need.saturating_sub(live) as u64)
            .max(CHUNK as u64)
            .min(self.remaining) as usize;
        let wanted = live.saturating_add(PAGE).saturating_add(to_read);
        if wanted > self.buf.len() {
            let cap = wanted.min(self.buf.len().saturating_mul(2).max(CHUNK + 2 * PAGE));
            self.buf.resize(cap, 0);
        }
        let addr = self.buf.as_ptr() as usize;
        let next = (self.base + self.total - self.remaining) as usize;
        let t = live + next.wrapping_sub(addr.wrapping_add(live)) % PAGE;
        let t = if t < self.buf.len() { t } else { live };
        if self.start != t - live {
            self.buf.copy_within(self.start..self.end, t - live);
            self.start = t - live;
            self.end = t;
        }
    }

    /// The next `n` bytes.
    #[inline]
    #[doc(hidden)]
    pub fn next(&mut self, n: usize) -> Result<&[u8]> {
        self.fill(n)?;
        let s = self.start;
        self.start += n;
        Ok(&self.buf[s..s + n])
    }

    /// The next `n` bytes if they are already buffered.
    #[inline]
    pub(crate) fn try_next(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.start;
        let e = s.checked_add(n)?;
        if e > self.end {
            return None;
        }
        self.start = e;
        self.buf.get(s..e)
    }

    /// The next `n` bytes if they are already buffered, without consuming them.
    #[inline]
    pub(crate) fn peek(&self, n: usize) -> Option<&[u8]> {
        let e = self.start.checked_add(n)?;
        if e > self.end {
            return None;
        }
        self.buf.get(self.start..e)
    }

    /// Skips `n` bytes.
    pub(crate) fn skip(&mut self, mut n: u64) -> Result<()> {
        let buffered = ((self.end - self.start) as u64).min(n);
        self.start += buffered as usize;
        n -= buffered;
        while n > 0 {
            self.start = 0;
            self.end = 0;
            let step = n.min(CHUNK as u64) as usize;
            self.fill(step)?;
            let take = (self.end - self.start).min(step);
            self.start += take;
            n -= take as u64;
        }
        Ok(())
    }

    /// Reads and discards the rest of the data, leaving `inner` just after the array.
    #[doc(hidden)]
    pub fn drain(&mut self) -> Result<()> {
        let n = self.total - self.consumed();
        self.skip(n)
    }

    /// Reads all the remaining data into a new buffer, growing it only as bytes arrive.
    #[doc(hidden)]
    pub fn read_all(&mut self) -> Result<Vec<u8>> {
        let want = self.total - self.consumed();
        let mut out = Vec::new();
        out.extend_from_slice(&self.buf[self.start..self.end]);
        self.start = self.end;
        while self.remaining > 0 {
            let len = out.len();
            let step = (len.max(CHUNK) as u64).min(self.remaining) as usize;
            out.resize(len + step, 0);
            let mut filled = 0;
            while filled < step {
                match self.inner.read(&mut out[len + filled..len + step]) {
                    Ok(0) => {
                        self.remaining -= filled as u64;
                        return Err(self.truncated());
                    }
                    Ok(k) => filled += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e.into()),
                }
            }
            self.remaining -= step as u64;
        }
        debug_assert_eq!(out.len() as u64, want);
        Ok(out)
    }
}

/// Elements from a [`BlockReader`], in storage order (C order, or any order for 1-D).
pub(crate) struct BlockSource<R> {
    pub(crate) block: BlockReader<R>,
    pub(crate) itemsize: usize,
    pub(crate) count: u64,
    pub(crate) next: u64,
}

impl<'de, R: Read> Source<'de> for BlockSource<R> {
    #[inline]
    fn next_elem(&mut self) -> Result<Elem<'_, 'de>> {
        let index = self.next;
        if index >= self.count {
            return Err(Error::eof("an array element", 1, 0));
        }
        let offset = self.block.offset();
        let bytes = self.block.next(self.itemsize)?;
        self.next += 1;
        Ok(Elem {
            bytes,
            borrowed: None,
            index,
            offset,
        })
    }

    #[inline]
    fn next_bytes(&mut self) -> Option<(&[u8], u64)> {
        let index = self.next;
        if index >= self.count {
            return None;
        }
        let b = self.block.try_next(self.itemsize)?;
        self.next += 1;
        Some((b, index))
    }

    fn index(&self) -> u64 {
        self.next
    }

    #[inline]
    fn peek_bytes(&mut self) -> Option<&[u8]> {
        if self.next >= self.count {
            return None;
        }
        self.block.peek(self.itemsize)
    }

    fn next_run(&mut self) -> Result<Option<Run<'_, 'de>>> {
        let index = self.next;
        let left = self.count - index;
        if left == 0 || self.itemsize == 0 {
            return Ok(None);
        }
        self.block.fill(self.itemsize)?;
        let n = (self.block.buffered() / self.itemsize) as u64;
        let n = n.min(left);
        let offset = self.block.offset();
        // No overflow: the `n` elements are buffered.
        let bytes = self.block.next(n as usize * self.itemsize)?;
        self.next += n;
        Ok(Some(Run {
            bytes,
            borrowed: None,
            index,
            offset,
        }))
    }

    fn skip(&mut self, n: u64) -> Result<()> {
        let n = n.min(self.count - self.next);
        let bytes = n
            .checked_mul(self.itemsize as u64)
            .ok_or_else(|| Error::overflow("skipped bytes"))?;
        self.block.skip(bytes)?;
        self.next += n;
        Ok(())
    }
}
