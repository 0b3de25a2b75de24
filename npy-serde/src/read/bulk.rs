//! The bulk tier: plain-data types (see [`crate::pod`]) read with one copy.
//!
//! When `T`'s memory is the file's element bytes and the file's dtype is `T::dtype()` (the
//! same fields, names, offsets and native byte order) in C order, the data is read straight
//! into the result `Vec`'s memory: one `read` loop from a reader or a file (into memory the
//! allocator hands out zeroed, so no byte of it is ever uninitialized, and backed by huge pages
//! as NumPy does), or one `memcpy` from a slice or a memory map. `bool` bytes are checked after.
//!
//! Its results and errors are those of the other tiers: when anything goes wrong (a bool byte
//! other than 0 or 1, data that ends early, an I/O error), the bytes read so far, then that
//! same end or error, are replayed to the element-by-element tiers, which give the error they
//! always give. Only the memory allocated differs.
//!
//! A large file (see [`ReaderBuilder::parallel_threshold`]) is read on all cores: positional
//! reads straight into disjoint parts of the result, still one copy.
//!
//! Calls the sources' checks (`super::decode`), the allocation (`super::vecalloc`) and the
//! plain-data casts (`crate::pod`); nothing above.

use std::io::{self, Read};

use super::decode::Elements;
use super::options::ReaderBuilder;
use super::vecalloc;
use crate::error::Result;
use crate::header::{Header, ParsedHeader};
use crate::pod::{self, Pod};
use crate::record::NpyRecord;
use crate::tier::{served, Tier};

/// `T`'s proof when an array with header `h` can be read as `T`s' bytes.
pub(super) fn plain<T: NpyRecord>(h: &Header) -> Option<Pod<T>> {
    let proof = T::POD?;
    let c_order = !h.fortran_order || h.shape.iter().filter(|&&d| d > 1).count() <= 1;
    (c_order && size_of::<T>() > 0 && h.dtype == T::dtype()).then_some(proof)
}

/// Every element of `data` (complete, checked against the header) as a `T`, with one copy;
/// `None` if a `bool` byte is not 0 or 1 (the other tiers then report it) or the memory cannot
/// be had at once.
pub(super) fn from_bytes<T: NpyRecord>(_proof: Pod<T>, data: &[u8]) -> Option<Vec<T>> {
    let n = data.len() / size_of::<T>();
    pod::check_bools(&T::LAYOUT, data, 0).ok()?;
    let mut v = vecalloc::vec_for::<T>(n as u64);
    if v.capacity() < n {
        return None;
    }
    // SAFETY: `v` has room for `n` elements (checked) and `data` holds `n * size_of::<T>()`
    // bytes; the regions do not overlap (`v` is new). The proof says that `T`'s memory is its
    // layout, every leaf kind takes any bit pattern but `bool`, whose bytes were checked, so
    // the `n` elements are valid `T`s before `set_len` exposes them.
    unsafe {
        std::ptr::copy_nonoverlapping(
            data.as_ptr(),
            v.as_mut_ptr().cast::<u8>(),
            n * size_of::<T>(),
        );
        v.set_len(n);
    }
    served(Tier::Exact, n as u64);
    Some(v)
}

/// Bytes per positional read of [`from_file_parallel`].
#[cfg(all(unix, feature = "parallel"))]
const CHUNK_BYTES: usize = 4 << 20;

/// Every element of the data of `file` (checked to hold `count` elements from byte `offset`)
/// as a `T`, with one copy on all cores: positional reads of [`CHUNK_BYTES`] each, from
/// rayon's threads, straight into their parts of the result's memory (so the kernel's copies
/// and the page faults of the result run in parallel, and nothing is copied twice). `None` if
/// the memory cannot be had, a read fails or a `bool` byte is not 0 or 1: the caller then
/// reads the data again sequentially, which reports it. The file's position is not moved.
#[cfg(all(unix, feature = "parallel"))]
pub(super) fn from_file_parallel<T: NpyRecord>(
    _proof: Pod<T>,
    file: &std::fs::File,
    offset: u64,
    count: usize,
) -> Option<Vec<T>> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    let len = count.checked_mul(size_of::<T>())?;
    let mut v = vecalloc::zeroed::<T>(count)?;
    if v.capacity() < count {
        return None;
    }
    // SAFETY: `zeroed` gave room for `count` elements, all zero bytes, so the first
    // `len = count * size_of::<T>()` bytes of the allocation are initialized `u8`s; `v` holds
    // no element (length 0), so nothing else views them, and the slice is dropped before `v`
    // is touched again.
    let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), len) };
    let read = bytes
        .par_chunks_mut(CHUNK_BYTES)
        .enumerate()
        .all(|(i, part)| {
            let at = (i as u64 * CHUNK_BYTES as u64).checked_add(offset);
            at.is_some_and(|at| file.read_exact_at(part, at).is_ok())
        });
    if !read || pod::check_bools(&T::LAYOUT, bytes, 0).is_err() {
        return None;
    }
    // SAFETY: all `count` elements' bytes were read (every chunk completely), the bool bytes
    // checked, and the proof says that such bytes are `count` valid `T`s.
    unsafe { v.set_len(count) };
    served(Tier::Exact, count as u64);
    Some(v)
}

/// Sequential everywhere else.
#[cfg(not(all(unix, feature = "parallel")))]
pub(super) fn from_file_parallel<T: NpyRecord>(
    _proof: Pod<T>,
    _file: &std::fs::File,
    _offset: u64,
    _count: usize,
) -> Option<Vec<T>> {
    None
}

/// Reads the data of `header` from `reader` into a `Vec<T>` with one copy. `present` says the
/// data is known to be there (a file whose size was checked): the `Vec` is then allocated at
/// its final size at once; from any other reader it grows as the bytes arrive.
pub(super) fn from_reader<T: NpyRecord + serde::de::DeserializeOwned, R: Read>(
    rb: &ReaderBuilder,
    proof: Pod<T>,
    mut reader: R,
    header: &ParsedHeader,
    present: bool,
) -> Result<Vec<T>> {
    let (count, len) = rb.check(&header.header)?;
    let size = size_of::<T>();
    let (Ok(n), Ok(len)) = (usize::try_from(count), usize::try_from(len)) else {
        return rb.read_data(reader, header, Elements::<T>::records(), present);
    };
    // Declared but unproven data gets at most 1 MiB up front, as the other tiers do.
    let first = if present { n } else { n.min((1 << 20) / size) };
    let Some(mut v) = vecalloc::zeroed::<T>(first) else {
        return rb.read_data(reader, header, Elements::<T>::records(), present);
    };
    let mut got = 0usize;
    let failure = loop {
        if got == len {
            break None;
        }
        let room = v.capacity() * size;
        if got == room {
            let more = (room / size).max(1).min(n - room / size);
            if !vecalloc::grow_zeroed(&mut v, more) {
                break Some(Stop::NoMemory);
            }
        }
        let end = (v.capacity() * size).min(len);
        // SAFETY: the `v.capacity() * size` bytes of `v`'s allocation were zeroed when they were
        // allocated (`zeroed`, `grow_zeroed`) or have been written since, so they are
        // initialized `u8`s; `v` holds no element (`len` 0), so nothing else views them, and
        // the slice is dropped before `v` is touched again.
        let bytes = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), end) };
        match reader.read(&mut bytes[got..end]) {
            Ok(0) => break Some(Stop::End),
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Some(Stop::Failed(e)),
        }
    };
    // SAFETY: as above: `got <= capacity * size` initialized bytes, no element exposed.
    let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), got) };
    if failure.is_none() && pod::check_bools(&T::LAYOUT, bytes, 0).is_ok() {
        // SAFETY: all `n` elements' bytes were read (`got == len == n * size`), the bool bytes
        // checked, and `proof` says that such bytes are `n` valid `T`s.
        let _ = proof;
        unsafe { v.set_len(n) };
        served(Tier::Exact, count);
        return Ok(v);
    }
    // Replay what was read, then the same end or error (or the rest of the reader), to the
    // tiers that report it.
    match failure {
        Some(Stop::NoMemory) => rb.read_data(
            bytes.chain(reader),
            header,
            Elements::<T>::records(),
            present,
        ),
        stop => {
            let tail = match stop {
                Some(Stop::Failed(e)) => Some(e),
                _ => None,
            };
            let replay = Replay { head: bytes, tail };
            rb.read_data(replay, header, Elements::<T>::records(), present)
        }
    }
}

/// Why reading stopped early.
enum Stop {
    /// The reader ended.
    End,
    /// The reader failed.
    Failed(io::Error),
    /// The `Vec` could not grow.
    NoMemory,
}

/// Bytes already read from a reader, then its end (or its error) again.
struct Replay<'a> {
    head: &'a [u8],
    tail: Option<io::Error>,
}

impl Read for Replay<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.head.is_empty() {
            let k = self.head.read(buf)?;
            return Ok(k);
        }
        match self.tail.take() {
            Some(e) => Err(e),
            None => Ok(0),
        }
    }
}
