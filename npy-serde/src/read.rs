//! Reading `.npy` data through serde: [`from_reader`], [`from_slice`], [`from_path`] and the
//! configurable [`ReaderBuilder`].
//!
//! The whole array deserializes as nested sequences following its shape, like
//! `ndarray.tolist()`: `Vec<T>` for 1-D, `Vec<Vec<T>>` or `Vec<[T; N]>` for 2-D, a bare `T` for
//! 0-d. Fortran-order data comes out in logical C order. A record (structured element) is a
//! map keyed by field name, so a `#[derive(Deserialize)]` struct picks its fields by name (in
//! any order; file fields it does not name are skipped without being decoded), or a sequence of
//! field values for tuples.
//!
//! ```
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, Debug, PartialEq)]
//! struct Point { y: f32, x: f64 }
//!
//! // np.save(f, np.array([(1.5, 2.5)], dtype=[('x', '<f8'), ('y', '<f4')]))
//! let mut file = b"\x93NUMPY\x01\x00\x76\x00".to_vec();
//! let dict = "{'descr': [('x', '<f8'), ('y', '<f4')], 'fortran_order': False, 'shape': (1,), }";
//! file.extend_from_slice(dict.as_bytes());
//! file.resize(127, b' ');
//! file.push(b'\n');
//! file.extend_from_slice(&1.5f64.to_le_bytes());
//! file.extend_from_slice(&2.5f32.to_le_bytes());
//!
//! let points: Vec<Point> = npy_serde::from_slice(&file)?;
//! assert_eq!(points, [Point { x: 1.5, y: 2.5 }]);
//! # Ok::<(), npy_serde::Error>(())
//! ```
//!
//! # Conversions
//!
//! A scalar converts to the requested Rust type only when every value of the file's type does
//! so exactly: the same type, a wider integer (`i4` -> `i64`, `u4` -> `i64`, `u1` -> `u16`), a
//! wider float (`f2` -> `f32`, `f4` -> `f64`), or an integer into a float that holds it exactly
//! (`i2` -> `f32`, `i4` -> `f64`). Anything else (`f8` -> `f32`, `i8` -> `f64`, `i4` -> `u32`)
//! is a [`TypeMismatch`](crate::ErrorKind::TypeMismatch) error naming the record, field path,
//! file dtype and requested type. Two documented exceptions round: long double (`f16`, x87
//! 80-bit) reads as `f64` rounded to nearest, ties to even (see [`longdouble_to_f64`]).
//!
//! - `b1` -> `bool`; a byte other than 0 or 1 is an `InvalidValue` error.
//! - `f2` -> `f32`, `f64` or `half::f16` (its serde form is a newtype around an f32, which is
//!   exact for every half value).
//! - complex -> `(re, im)`, `[f64; 2]`, or `num_complex::Complex` (a 2-tuple in serde).
//! - `S<n>` -> `String`/`&str` (UTF-8 checked), `Vec<u8>`, `serde_bytes`, `&[u8]`, with
//!   trailing NULs stripped as NumPy does; `[u8; n]` gets all `n` raw bytes. Borrowing (`&str`,
//!   `&[u8]`) works from [`from_slice`] and memory maps.
//! - `U<n>` -> `String` or `char` (invalid code points are `InvalidValue` errors).
//! - `V<n>` -> bytes. `M8`/`m8` -> `i64` (the raw count; NaT is `i64::MIN`).
//! - Big-endian data is decoded transparently.
//! - A unit-only enum reads from an `S`/`U` field holding the variant name.
//! - `Option<T>` is always `Some` for a present field; a missing field is `None`.
//!
//! Because file fields the struct does not name are never shown to it,
//! `#[serde(deny_unknown_fields)]` has no effect.
//!
//! # Untrusted input
//!
//! Declared sizes are checked (with overflow checks) against the bytes actually available
//! before anything is allocated from them; from a plain `io::Read` the data is read in blocks as
//! it arrives, so a header claiming terabytes costs nothing until the bytes exist. A truncated
//! file is an `UnexpectedEof` error with the expected and found byte counts.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use serde::de::{Deserialize, DeserializeOwned};

pub use crate::de::longdouble_to_f64;
use crate::de::{Ctx, Elem, FortranWalk, ShapeDe, SliceSource, Source};
use crate::error::{Error, Result};
use crate::header::{parse_header, read_header, Header, Limits, ParsedHeader};
use crate::stream::RecordReader;

/// Reads one array from `reader` into `T`, leaving the reader just after the array's data (so
/// arrays saved back to back read in turn).
///
/// `reader` is read in large blocks; wrapping it in a `BufReader` gains nothing.
pub fn from_reader<R: Read, T: DeserializeOwned>(reader: R) -> Result<T> {
    ReaderBuilder::new().from_reader(reader)
}

/// Reads the array in `bytes` (a whole `.npy` file) into `T`, which may borrow `&str` and
/// `&[u8]` from `S` fields. Bytes after the array are ignored.
pub fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T> {
    ReaderBuilder::new().from_slice(bytes)
}

/// Reads the `.npy` file at `path` into `T`.
pub fn from_path<P: AsRef<Path>, T: DeserializeOwned>(path: P) -> Result<T> {
    ReaderBuilder::new().from_path(path)
}

/// Reads the data of an array whose header was already read from `reader` (which must be
/// positioned at the first data byte), e.g. a `.npz` member.
pub fn from_reader_with_header<R: Read, T: DeserializeOwned>(
    reader: R,
    header: &ParsedHeader,
) -> Result<T> {
    ReaderBuilder::new().from_reader_with_header(reader, header)
}

/// Reading options: header limits (as NumPy's `max_header_size`) and data-size limits.
///
/// ```
/// let rb = npy_serde::ReaderBuilder::new().max_header_size(100_000).max_data_size(1 << 30);
/// # let _ = rb;
/// ```
#[derive(Clone, Debug)]
pub struct ReaderBuilder {
    pub(crate) limits: Limits,
    pub(crate) max_data_size: Option<u64>,
    pub(crate) max_empty_items: u64,
}

impl Default for ReaderBuilder {
    fn default() -> Self {
        ReaderBuilder::new()
    }
}

impl ReaderBuilder {
    /// NumPy's defaults: headers up to 10000 bytes, 64 dimensions; no data-size limit.
    pub fn new() -> ReaderBuilder {
        ReaderBuilder {
            limits: Limits::default(),
            max_data_size: None,
            max_empty_items: crate::de::DEFAULT_MAX_EMPTY_ITEMS,
        }
    }

    /// Largest accepted header length (NumPy's `max_header_size`, default 10000). Raise it only
    /// for trusted files: NumPy's limit guards its `literal_eval`; this parser is linear, but a
    /// large header is still read into memory.
    pub fn max_header_size(mut self, bytes: u64) -> Self {
        self.limits.max_header_size = bytes;
        self
    }

    /// Largest nesting of containers in the header literal (default 128).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.limits.max_depth = depth;
        self
    }

    /// Largest number of dimensions of the shape and of each subarray (default 64, NumPy's).
    pub fn max_dims(mut self, dims: usize) -> Self {
        self.limits.max_dims = dims;
        self
    }

    /// Rejects arrays whose data is larger than `bytes` before reading any of it (default: no
    /// limit; data is read as it arrives, so a false size claim only costs the bytes that
    /// exist).
    pub fn max_data_size(mut self, bytes: u64) -> Self {
        self.max_data_size = Some(bytes);
        self
    }

    /// Largest element count accepted for zero-byte element types (`V0`, empty records), whose
    /// count is not bounded by the data size (default 2^24).
    pub fn max_empty_items(mut self, count: u64) -> Self {
        self.max_empty_items = count;
        self
    }

    /// The header limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Replaces the header limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub(crate) fn ctx(&self) -> Ctx {
        Ctx::new(self.max_empty_items)
    }

    /// Checks a header's sizes against the limits; returns (element count, data bytes).
    pub(crate) fn check(&self, header: &Header) -> Result<(u64, u64)> {
        let count = header.count()?;
        let len = header.data_len()?;
        if let Some(max) = self.max_data_size {
            if len > max {
                return Err(Error::limit("the array data size", max, len));
            }
        }
        if header.dtype.itemsize() == 0 && count > self.max_empty_items {
            return Err(Error::limit(
                "the number of zero-byte array elements",
                self.max_empty_items,
                count,
            ));
        }
        Ok((count, len))
    }

    /// [`from_reader`] with these options.
    pub fn from_reader<R: Read, T: DeserializeOwned>(&self, mut reader: R) -> Result<T> {
        let header = read_header(&mut reader, &self.limits)?;
        self.from_reader_with_header(reader, &header)
    }

    /// [`from_reader_with_header`] with these options.
    pub fn from_reader_with_header<R: Read, T: DeserializeOwned>(
        &self,
        reader: R,
        header: &ParsedHeader,
    ) -> Result<T> {
        let h = &header.header;
        let (count, len) = self.check(h)?;
        let mut block = BlockReader::new(reader, header.data_offset, len);
        let mut ctx = self.ctx();
        if h.fortran_order && FortranWalk::new(&h.shape).is_some() {
            // Logical C order needs random access: read the data (in blocks, as it arrives).
            let data = block.read_all()?;
            let mut src =
                SliceSource::new(&data, false, &h.dtype, &h.shape, true, header.data_offset)?;
            return T::deserialize(ShapeDe::new(&mut src, &h.dtype, &h.shape, &mut ctx));
        }
        let mut src = BlockSource {
            block,
            itemsize: h.dtype.itemsize(),
            count,
            next: 0,
        };
        let value = T::deserialize(ShapeDe::new(&mut src, &h.dtype, &h.shape, &mut ctx))?;
        src.block.drain()?;
        Ok(value)
    }

    /// [`from_slice`] with these options.
    pub fn from_slice<'de, T: Deserialize<'de>>(&self, bytes: &'de [u8]) -> Result<T> {
        let header = parse_header(bytes, &self.limits)?;
        let data = data_of(bytes, &header, self)?;
        deserialize_data(data, true, &header, self)
    }

    /// [`from_path`] with these options.
    pub fn from_path<P: AsRef<Path>, T: DeserializeOwned>(&self, path: P) -> Result<T> {
        let (file, header) = open_checked(path.as_ref(), self)?;
        self.from_reader_with_header(file, &header)
    }

    /// A streaming reader yielding the array's elements one at a time, in logical C order.
    pub fn records<R: Read, T: DeserializeOwned>(&self, reader: R) -> Result<RecordReader<R, T>> {
        RecordReader::with_builder(reader, self)
    }
}

/// Opens a file, reads its header and checks the declared data size against the file size.
pub(crate) fn open_checked(path: &Path, rb: &ReaderBuilder) -> Result<(File, ParsedHeader)> {
    let mut file = File::open(path)?;
    let header = read_header(&mut file, &rb.limits)?;
    let (_, len) = rb.check(&header.header)?;
    let file_len = file.metadata()?.len();
    let avail = file_len.saturating_sub(header.data_offset);
    if avail < len {
        return Err(Error::eof("the array data", len, avail).at_byte(header.data_offset + avail));
    }
    Ok((file, header))
}

/// The data bytes of a whole-file slice, checked against the header's size.
pub(crate) fn data_of<'a>(
    bytes: &'a [u8],
    header: &ParsedHeader,
    rb: &ReaderBuilder,
) -> Result<&'a [u8]> {
    let (_, len) = rb.check(&header.header)?;
    let start = usize::try_from(header.data_offset).unwrap_or(usize::MAX);
    let avail = bytes.get(start..).unwrap_or(&[]);
    match usize::try_from(len).ok().and_then(|n| avail.get(..n)) {
        Some(d) => Ok(d),
        None => Err(Error::eof("the array data", len, avail.len() as u64)
            .at_byte(header.data_offset + avail.len() as u64)),
    }
}

/// Deserializes the whole array from its data bytes (already checked to be complete).
pub(crate) fn deserialize_data<'de, T: Deserialize<'de>>(
    data: &'de [u8],
    borrowable: bool,
    header: &ParsedHeader,
    rb: &ReaderBuilder,
) -> Result<T> {
    let h = &header.header;
    let mut src = SliceSource::new(
        data,
        borrowable,
        &h.dtype,
        &h.shape,
        h.fortran_order,
        header.data_offset,
    )?;
    let mut ctx = rb.ctx();
    T::deserialize(ShapeDe::new(&mut src, &h.dtype, &h.shape, &mut ctx))
}

// ---------------------------------------------------------------------------------------------
// Block reading
// ---------------------------------------------------------------------------------------------

/// Bytes read per `read` call once the buffer is warm.
const CHUNK: usize = 1 << 20;
const PAGE: usize = 4096;

/// Reads the array data from an `io::Read` in large blocks into one reused buffer and hands
/// out byte ranges of it. Never reads past the end of the array's data.
///
/// Reads are placed so that the destination address is congruent to the stream offset modulo
/// the page size: a `read(2)` from the page cache into such a destination runs about three
/// times faster than into a misaligned one.
pub(crate) struct BlockReader<R> {
    pub(crate) inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Data bytes not yet read from `inner`.
    remaining: u64,
    /// Total data bytes.
    total: u64,
    /// Stream offset of the first data byte.
    base: u64,
}

impl<R: Read> BlockReader<R> {
    pub(crate) fn new(inner: R, base: u64, total: u64) -> Self {
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
    pub(crate) fn offset(&self) -> u64 {
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
    fn truncated(&self) -> Error {
        let found = self.total - self.remaining;
        Error::eof("the array data", self.total, found).at_byte(self.base + found)
    }

    /// Makes sure `need` bytes are buffered.
    #[inline]
    fn fill(&mut self, need: usize) -> Result<()> {
        if self.end - self.start >= need {
            return Ok(());
        }
        self.fill_slow(need)
    }

    #[inline(never)]
    fn fill_slow(&mut self, need: usize) -> Result<()> {
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
    fn make_room(&mut self, need: usize) {
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
    pub(crate) fn next(&mut self, n: usize) -> Result<&[u8]> {
        self.fill(n)?;
        let s = self.start;
        self.start += n;
        Ok(&self.buf[s..s + n])
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
    pub(crate) fn drain(&mut self) -> Result<()> {
        let n = self.total - self.consumed();
        self.skip(n)
    }

    /// Reads all the remaining data into a new buffer, growing it only as bytes arrive.
    pub(crate) fn read_all(&mut self) -> Result<Vec<u8>> {
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
