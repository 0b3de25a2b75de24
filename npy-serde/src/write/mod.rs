//! Writing `.npy` files from Rust values through serde.
//!
//! - [`to_writer`], [`to_vec`], [`to_path`]: a slice of records whose dtype comes from
//!   [`NpyRecord`] (scalars, `[T; N]`, `#[derive(NpyRecord)]` structs). A subarray element
//!   dtype folds into the shape exactly as NumPy does: a `Vec<[f64; 3]>` of length `n` is written
//!   with shape `(n, 3)` and descr `'<f8'`.
//! - [`WriterBuilder`]: the same with options (explicit dtype, shape, byte order, Fortran order,
//!   header version), plus [`WriterBuilder::serialize`] (any `Serialize` value whose nested
//!   sequences give the shape) and [`WriterBuilder::write_array`] (a dynamic [`Array`](crate::Array)).
//! - [`NpyWriter`]: a streaming writer that appends records one at a time, to any `Write` when
//!   the count is known up front, to a `Write + Seek` otherwise, or to an existing `.npy` file.
//!
//! The bytes are those `numpy.save` writes for the same array: the header is NumPy's (sorted
//! keys, growth-axis padding, 64-byte alignment), padding bytes inside records are zero and
//! strings are NUL-padded. How Rust values convert into each dtype (lossless conversions only) is
//! described below.
//!
//! # How Rust values map onto a dtype
//!
//! | dtype | accepted serde values |
//! |---|---|
//! | record | a struct or a map (matched by field name, or title), or a tuple (positional) |
//! | subarray `(base, shape)` | nested sequences/tuples of exactly `shape`; for `u1`/`i1` bases also bytes of the right length |
//! | `b1` | `bool` only |
//! | `i1`..`u8` | any integer whose *value* fits; floats are refused |
//! | `f2`, `f4`, `f8`, `f16` (longdouble) | floats and integers whose value the target represents *exactly* (NaN and ±inf always); `half::f16` (feature `half`) is taken bit for bit |
//! | `c8`, `c16`, `c32` | a 2-sequence/tuple `(re, im)` (so `num_complex::Complex`), or a real number (imaginary part 0); parts as for floats |
//! | `S<n>` | a `str` (its UTF-8 bytes), bytes, a char, a unit enum variant (its name) or a sequence of `u8`; at most `n` bytes, NUL-padded |
//! | `U<n>` | a `str`, a char or a unit enum variant; at most `n` characters, stored as UCS-4 in the dtype's byte order, NUL-padded |
//! | `V<n>` | bytes or a sequence of `u8` of exactly `n` bytes |
//! | `M8`, `m8` | an integer fitting `i64` (the raw count of the dtype's unit), or the string `"NaT"` |
//!
//! Conversions never lose information silently: a value out of range for the field, a float
//! that does not round-trip through the field's float type, or a string longer than the field
//! is an [`ErrorKind::Write`](crate::ErrorKind::Write) error naming the record index and field
//! path. `Option::None` is refused (NumPy has no null: use NaN, a sentinel or a separate mask
//! field); `Some(v)` writes `v`. Newtype structs are transparent. Data-carrying enum variants,
//! unit and `()` are refused.
//!
//! The serializer reports `is_human_readable() == false`, as binary formats do.
//!
//! # How this module is built
//!
//! The mirror of [`read`](crate::read), file for file; each calls only the layers below it:
//!
//! | file | owns | calls |
//! |---|---|---|
//! | `mod.rs` | the doors: `to_*`, [`WriterBuilder`]'s writing methods | `blocks`, `shape`, `stream`, `array` |
//! | `stream.rs`, `array.rs` | [`NpyWriter`]; the dynamic `Array` and `impl Serialize for Value` | `blocks`, `plan` |
//! | `blocks.rs` | records encoded into a reused block, tier by tier | `exact`, `general` |
//! | `shape.rs` | shapes from nested sequences (inferred, then walked) | |
//! | `exact.rs` | the compile-time-layout tier (`T: NpyRecord`) | `crate::record`, `crate::layout` |
//! | `general.rs` | the general tier: every serde value, every lossless conversion | `compound`, `elem`, `plan` |
//! | `compound.rs` | the general tier's subarrays, complex numbers, records and keys | `elem`, `plan` |
//! | `mmap.rs` | [`MmapArrayMut`]: maps written in place or created | `crate::read`, `crate::pod` |
//! | `elem.rs` | one value encoded into its slot, per scalar kind | `plan`, `crate::text` |
//! | `plan.rs` | a dtype compiled into the tree the general tier walks | |
//! | `options.rs` | the builder's options and how they resolve into a dtype | |
//!
//! ```
//! let bytes = npy_serde::to_vec(&vec![[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]])?;
//! let h = npy_serde::header::parse_header(&bytes, &Default::default())?;
//! assert_eq!(h.header.dtype.descr(), "'<f8'");
//! assert_eq!(h.header.shape, [2, 3]);
//! assert_eq!(bytes.len(), 128 + 48);
//! # Ok::<(), npy_serde::Error>(())
//! ```
//!
//! Records are encoded into a reusable block buffer (1 MiB by default) with a plan compiled once
//! per dtype, and the block is written with one `write_all`: no per-element I/O calls.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::header::Header;
use crate::pyliteral;
use crate::record::NpyRecord;
use crate::staged::StagedFile;
use blocks::{BlockSink, Blocks, PipeFn};
use exact::{write_tier, WriteTier};
use options::fold;
use plan::Plan;

/// Writes `records` as a `.npy` array to `writer`, with the dtype of `T`.
///
/// The shape is `(records.len(),)`, followed by the subarray shape if `T`'s dtype is a subarray
/// (`[f32; 3]` gives `(n, 3)`). Use [`WriterBuilder`] for other shapes and options.
///
/// ```
/// let mut out = Vec::new();
/// npy_serde::to_writer(&mut out, &[1i32, 2, 3])?;
/// assert_eq!(&out[..8], b"\x93NUMPY\x01\x00");
/// assert_eq!(&out[128..], &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn to_writer<W: Write, T: Serialize + NpyRecord + Sync>(
    writer: W,
    records: &[T],
) -> Result<()> {
    WriterBuilder::new().to_writer(writer, records)
}

/// Like [`to_writer`], returning the bytes.
pub fn to_vec<T: Serialize + NpyRecord + Sync>(records: &[T]) -> Result<Vec<u8>> {
    WriterBuilder::new().to_vec(records)
}

/// Like [`to_writer`], into the file at `path`, created or replaced when complete (see
/// [`WriterBuilder::to_path`]).
pub fn to_path<P: AsRef<Path>, T: Serialize + NpyRecord + Sync>(
    path: P,
    records: &[T],
) -> Result<()> {
    WriterBuilder::new().to_path(path, records)
}

mod array;
mod blocks;
mod compound;
mod elem;
mod exact;
mod general;
mod mmap;
mod options;
mod pipe;
mod plan;
mod planned;
mod shape;
mod stream;

pub use mmap::MmapArrayMut;
pub use options::{WriterBuilder, DEFAULT_BUFFER_SIZE};
#[cfg(feature = "npz")]
pub(crate) use pipe::reserve;
pub use pipe::Background;
pub(crate) use shape::ElemKind;
pub use stream::{NpyWriter, UNFINISHED_MAGIC};

impl WriterBuilder {
    /// Writes `records` to `writer`; the dtype is the builder's or `T`'s.
    pub fn to_writer<W: Write, T: Serialize + NpyRecord + Sync>(
        &self,
        writer: W,
        records: &[T],
    ) -> Result<()> {
        let elem = self.element_dtype(|| Some(T::dtype()))?;
        let exact = write_tier::<T>(&elem);
        self.write_flat(
            writer,
            elem,
            None,
            records,
            exact,
            Some(Blocks::push_pipelined::<_, T>),
            self.fortran_order,
            |_| {},
        )
    }

    /// Like [`to_writer`](Self::to_writer), returning the bytes.
    pub fn to_vec<T: Serialize + NpyRecord + Sync>(&self, records: &[T]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.to_writer(&mut out, records)?;
        Ok(out)
    }

    /// Like [`to_writer`](Self::to_writer), into the file at `path`, created or replaced: the
    /// file is written under a temporary name beside `path` and renamed over it when complete
    /// (see [`StagedFile`] for symbolic links, FIFOs and hard links), so a failed write leaves
    /// `path` as it was.
    pub fn to_path<P: AsRef<Path>, T: Serialize + NpyRecord + Sync>(
        &self,
        path: P,
        records: &[T],
    ) -> Result<()> {
        let elem = self.element_dtype(|| Some(T::dtype()))?;
        let staged = StagedFile::create(path)?;
        let file = staged.file();
        let exact = write_tier::<T>(&elem);
        self.write_flat(
            file,
            elem,
            None,
            records,
            exact,
            Some(Blocks::push_pipelined::<_, T>),
            self.fortran_order,
            |len| preallocate(file, len),
        )?;
        staged.commit()?;
        Ok(())
    }

    /// Writes any `Serialize` value as an array of the builder's [`dtype`](Self::dtype)
    /// (required).
    ///
    /// The value is nested sequences (or tuples) down to elements of the dtype: structs or maps
    /// for a record dtype, numbers for numeric dtypes, `(re, im)` pairs for complex ones,
    /// strings or bytes for `S`/`U`/`V`. Without an explicit [`shape`](Self::shape) the shape
    /// is inferred from the lengths of the first item at each level (a bare element is a 0-d
    /// array); either way every sequence is checked to have the length the shape says
    /// (non-rectangular input is an error, which may come after part of the data was written).
    ///
    /// ```
    /// use npy_serde::{DType, WriterBuilder};
    /// let rows = vec![vec![1u8, 2, 3], vec![4, 5, 6]];
    /// let mut out = Vec::new();
    /// WriterBuilder::new().dtype("<i2".parse()?).serialize(&mut out, &rows)?;
    /// let h = npy_serde::header::parse_header(&out, &Default::default())?;
    /// assert_eq!(h.header.shape, [2, 3]);
    ///
    /// let ragged = vec![vec![1u8, 2, 3], vec![4]];
    /// let err = WriterBuilder::new().dtype("<i2".parse()?).serialize(Vec::new(), &ragged);
    /// assert!(err.unwrap_err().to_string().contains("not rectangular"));
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn serialize<W: Write, T: Serialize + ?Sized>(
        &self,
        mut writer: W,
        value: &T,
    ) -> Result<()> {
        let elem = self.element_dtype(|| None)?;
        let (base, sub) = fold(&elem);
        let shape = match &self.shape {
            Some(s) => s.clone(),
            None => {
                let s = shape::infer_shape(value, ElemKind::of(&base))?;
                if !s.ends_with(&sub) {
                    return Err(Error::write(format!(
                        "the value's shape {} does not end with the dtype's subarray shape {}",
                        pyliteral::repr_shape(&s),
                        pyliteral::repr_shape(&sub)
                    )));
                }
                s
            }
        };
        let header = Header {
            dtype: base.clone(),
            shape,
            fortran_order: self.fortran_order,
        };
        let data_len = header.data_len()?;
        let mut blocks = Blocks::new(Plan::new(&base)?, self.block_size(), header.count().ok());
        if self.fortran_order && needs_transpose(&header.shape) {
            let mut data = Vec::with_capacity(usize::try_from(data_len).unwrap_or(0));
            let mut sink = BlockSink {
                blocks: &mut blocks,
                w: &mut data,
            };
            shape::serialize_nested(&mut sink, &header.shape, value)?;
            blocks.flush(&mut data)?;
            let data = c_to_f(&data, &header.shape, base.itemsize());
            writer.write_all(&header.to_bytes_with_version(self.version)?)?;
            writer.write_all(&data)?;
        } else {
            writer.write_all(&header.to_bytes_with_version(self.version)?)?;
            let mut sink = BlockSink {
                blocks: &mut blocks,
                w: &mut writer,
            };
            shape::serialize_nested(&mut sink, &header.shape, value)?;
            blocks.flush(&mut writer)?;
        }
        writer.flush()?;
        Ok(())
    }

    /// Writes records laid out one after the other (each of dtype `elem`) as an array whose
    /// full shape is `shape` (default: `(len,) + subarray shape`).
    /// Writes the header and `records`; `prealloc` is told the total byte count first.
    // Private, with three callers that each pass a different mix; a struct for the arguments
    // would only rename them.
    #[allow(clippy::too_many_arguments)]
    fn write_flat<W: Write, T: Serialize>(
        &self,
        mut writer: W,
        elem: DType,
        shape: Option<Vec<u64>>,
        records: &[T],
        mut exact: Option<WriteTier<T>>,
        pipe: Option<PipeFn<W, T>>,
        fortran: bool,
        prealloc: impl FnOnce(u64),
    ) -> Result<()> {
        let (base, sub) = fold(&elem);
        let n = records.len() as u64;
        let shape = match (&self.shape, shape) {
            (Some(s), _) => s.clone(),
            (None, Some(s)) => s,
            (None, None) => {
                let mut s = vec![n];
                s.extend_from_slice(&sub);
                s
            }
        };
        let header = Header {
            dtype: base.clone(),
            shape,
            fortran_order: fortran,
        };
        let sub_count = Header::new(base.clone(), sub.clone()).count()?;
        let given = n
            .checked_mul(sub_count)
            .ok_or_else(|| Error::overflow("the element count"))?;
        if header.count()? != given {
            return Err(Error::write(format!(
                "shape {} holds {} elements of {} but {n} records give {given}",
                pyliteral::repr_shape(&header.shape),
                header.count()?,
                base.descr()
            )));
        }
        let data_len = header.data_len()?;
        let head = header.to_bytes_with_version(self.version)?;
        let transpose = fortran && !self.stored_order && needs_transpose(&header.shape);
        // Plain data without padding: the records' own bytes, with one write.
        let raw = exact.as_ref().and_then(|t| t.raw).and_then(|f| f(records));
        if let (Some(bytes), false) = (raw, transpose) {
            prealloc((head.len() as u64).saturating_add(data_len));
            writer.write_all(&head)?;
            writer.write_all(bytes)?;
            crate::tier::served(crate::tier::Tier::Exact, n);
            writer.flush()?;
            return Ok(());
        }
        let mut blocks = Blocks::new(Plan::new(&elem)?, self.block_size(), Some(n));
        prealloc((head.len() as u64).saturating_add(data_len));
        if transpose {
            let mut data = Vec::with_capacity(usize::try_from(data_len).unwrap_or(0));
            blocks.push_all(&mut data, records, &mut exact)?;
            blocks.flush(&mut data)?;
            let data = c_to_f(&data, &header.shape, base.itemsize());
            writer.write_all(&head)?;
            writer.write_all(&data)?;
        } else {
            writer.write_all(&head)?;
            match pipe.filter(|_| exact.is_some() && self.pipelines(data_len)) {
                Some(p) => p(&mut blocks, &mut writer, records, &elem)?,
                None => blocks.push_all(&mut writer, records, &mut exact)?,
            }
            blocks.flush(&mut writer)?;
        }
        writer.flush()?;
        Ok(())
    }
}

/// Files at least this large are preallocated before writing.
const PREALLOCATE_MIN: u64 = 1 << 20;

/// Asks the file system to allocate the first `len` bytes of `file` up front, as NumPy does
/// before `np.save` writes: on ext4 writing 160 MB into the page cache in 1 MiB `write`s
/// measured 0.9-1.0 GB/s without and 2.5-3.1 GB/s with it (loaded 2-core VM).
///
/// Linux `fallocate` with `FALLOC_FL_KEEP_SIZE`: the file's size is left alone (the writes
/// set it), so an error or a short write never leaves zeros behind. Best effort: a file
/// system without support, or another platform, simply skips it.
fn preallocate(file: &File, len: u64) {
    if len >= PREALLOCATE_MIN {
        pipe::reserve(file, 0, len);
    }
}

/// True if C and Fortran order lay out an array of `shape` differently (two or more axes
/// longer than 1).
fn needs_transpose(shape: &[u64]) -> bool {
    shape.iter().filter(|&&d| d > 1).count() > 1
}

/// Reorders C-order elements of `itemsize` bytes into Fortran order.
fn c_to_f(data: &[u8], shape: &[u64], itemsize: usize) -> Vec<u8> {
    if itemsize == 0 || data.is_empty() {
        return data.to_vec();
    }
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let nd = dims.len();
    let mut cstrides = vec![0usize; nd];
    let mut acc = 1usize;
    for d in (0..nd).rev() {
        cstrides[d] = acc;
        acc *= dims[d];
    }
    let n = data.len() / itemsize;
    let mut out = Vec::with_capacity(data.len());
    let mut idx = vec![0usize; nd];
    let mut src = 0usize;
    for _ in 0..n {
        out.extend_from_slice(&data[src * itemsize..(src + 1) * itemsize]);
        // Next index in Fortran order: the first axis varies fastest.
        for d in 0..nd {
            idx[d] += 1;
            src += cstrides[d];
            if idx[d] < dims[d] {
                break;
            }
            src -= cstrides[d] * dims[d];
            idx[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests;
