//! Writing `.npy` files from Rust values through serde.
//!
//! - [`to_writer`], [`to_vec`], [`to_path`]: a slice of records whose dtype comes from
//!   [`NpyRecord`] (scalars, `[T; N]`, `#[derive(NpyRecord)]` structs). A subarray element
//!   dtype folds into the shape exactly as NumPy does: a `Vec<[f64; 3]>` of length `n` is written
//!   with shape `(n, 3)` and descr `'<f8'`.
//! - [`WriterBuilder`]: the same with options (explicit dtype, shape, byte order, Fortran order,
//!   header version), plus [`WriterBuilder::serialize`] (any `Serialize` value whose nested
//!   sequences give the shape) and [`WriterBuilder::write_array`] (a dynamic [`Array`]).
//! - [`NpyWriter`]: a streaming writer that appends records one at a time, to any `Write` when
//!   the count is known up front, to a `Write + Seek` otherwise, or to an existing `.npy` file.
//!
//! The bytes are those `numpy.save` writes for the same array: the header is NumPy's (sorted
//! keys, growth-axis padding, 64-byte alignment), padding bytes inside records are zero and
//! strings are NUL-padded. How Rust values convert into each dtype (lossless conversions only) is
//! described in the [`ser`] module.
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
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::Serialize;

use crate::dtype::{ByteOrder, DType};
use crate::error::{Error, Result};
use crate::exact_ser::{write_tier, WriteTier};
use crate::header::{self, Header, Limits, Version};
use crate::pyliteral;
use crate::record::NpyRecord;
use crate::ser::{self, ElemKind, ElemSer, Plan, Sink};
use crate::value::Array;

/// Default size of the block buffer records are encoded into before each write.
pub const DEFAULT_BUFFER_SIZE: usize = 1 << 20;

/// The 6 bytes a seekable [`NpyWriter`] writes in place of `\x93NUMPY` until
/// [`NpyWriter::finish`] writes the real header: a file left by a writer dropped without
/// `finish` (a crash, an early return) does not read as a complete `.npy` file.
pub const UNFINISHED_MAGIC: &[u8; 6] = b"\x93UNFIN";

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
pub fn to_writer<W: Write, T: Serialize + NpyRecord>(writer: W, records: &[T]) -> Result<()> {
    WriterBuilder::new().to_writer(writer, records)
}

/// Like [`to_writer`], returning the bytes.
pub fn to_vec<T: Serialize + NpyRecord>(records: &[T]) -> Result<Vec<u8>> {
    WriterBuilder::new().to_vec(records)
}

/// Like [`to_writer`], creating (or truncating) the file at `path`.
pub fn to_path<P: AsRef<Path>, T: Serialize + NpyRecord>(path: P, records: &[T]) -> Result<()> {
    WriterBuilder::new().to_path(path, records)
}

/// Options for writing: dtype, shape, byte order, Fortran order and header version.
///
/// ```
/// use npy_serde::{ByteOrder, WriterBuilder};
///
/// // Six values as a big-endian 2x3 array in Fortran order.
/// let bytes = WriterBuilder::new()
///     .shape([2, 3])
///     .byte_order(ByteOrder::Big)
///     .fortran_order(true)
///     .to_vec(&[0i16, 1, 2, 3, 4, 5])?;
/// let h = npy_serde::header::parse_header(&bytes, &Default::default())?;
/// assert_eq!(h.header.dtype.descr(), "'>i2'");
/// assert!(h.header.fortran_order);
/// // Column-major: 0, 3, 1, 4, 2, 5.
/// assert_eq!(&bytes[128..], &[0, 0, 0, 3, 0, 1, 0, 4, 0, 2, 0, 5]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct WriterBuilder {
    dtype: Option<DType>,
    shape: Option<Vec<u64>>,
    byte_order: Option<ByteOrder>,
    fortran_order: bool,
    version: Option<Version>,
    buffer_size: Option<usize>,
}

impl WriterBuilder {
    /// Default options: the dtype of the records, shape from the data, native byte order as the
    /// dtype says, C order, the smallest header version that holds the header.
    pub fn new() -> Self {
        Self::default()
    }

    /// The element dtype to write. Required for [`serialize`](Self::serialize) and for streaming
    /// writers; overrides `T`'s dtype in [`to_writer`](Self::to_writer) (values are converted,
    /// value-checked). A subarray dtype folds into the array's shape.
    pub fn dtype(mut self, dtype: DType) -> Self {
        self.dtype = Some(dtype);
        self
    }

    /// The element dtype of `T`: `.dtype(T::dtype())`.
    pub fn record<T: NpyRecord>(self) -> Self {
        self.dtype(T::dtype())
    }

    /// The array's full shape (an empty shape is a 0-d array of exactly one element).
    ///
    /// For [`to_writer`](Self::to_writer) the records are laid out in order and must supply
    /// exactly as many elements as the shape holds (a flat slice can be written as any shape).
    /// For [`serialize`](Self::serialize) the value's nested sequences must match it. Streaming
    /// writers take the shape from the number of records and refuse this option.
    pub fn shape(mut self, shape: impl Into<Vec<u64>>) -> Self {
        self.shape = Some(shape.into());
        self
    }

    /// Writes every multi-byte scalar (numbers, `U` strings, datetimes) in this byte order
    /// (`NotApplicable` means native). Not used by [`append`](Self::append), which keeps the
    /// file's dtype.
    pub fn byte_order(mut self, order: ByteOrder) -> Self {
        self.byte_order = Some(order);
        self
    }

    /// Writes the data in Fortran (column-major) order and says so in the header. The input is
    /// always given in C (row-major) order; an array with more than one axis longer than 1 is
    /// then transposed on writing, which needs the whole encoded array in memory (twice). The
    /// flag is written as requested even where both orders coincide (NumPy's own `save` writes
    /// `False` for arrays that are both C and Fortran contiguous).
    pub fn fortran_order(mut self, fortran: bool) -> Self {
        self.fortran_order = fortran;
        self
    }

    /// Forces the header's format version (1.0, 2.0 or 3.0). Writing fails if that version
    /// cannot hold the header (more than 65535 bytes in 1.0, non-latin-1 text before 3.0).
    /// Not used by [`append`](Self::append), which keeps the file's version.
    pub fn version(mut self, version: Version) -> Self {
        self.version = Some(version);
        self
    }

    /// Size in bytes of the block buffer records are encoded into before each write (default
    /// [`DEFAULT_BUFFER_SIZE`]; at least one record is buffered).
    pub fn buffer_size(mut self, bytes: usize) -> Self {
        self.buffer_size = Some(bytes);
        self
    }

    /// Writes `records` to `writer`; the dtype is the builder's or `T`'s.
    pub fn to_writer<W: Write, T: Serialize + NpyRecord>(
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
            self.fortran_order,
            |_| {},
        )
    }

    /// Like [`to_writer`](Self::to_writer), returning the bytes.
    pub fn to_vec<T: Serialize + NpyRecord>(&self, records: &[T]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.to_writer(&mut out, records)?;
        Ok(out)
    }

    /// Like [`to_writer`](Self::to_writer), creating (or truncating) the file at `path`.
    pub fn to_path<P: AsRef<Path>, T: Serialize + NpyRecord>(
        &self,
        path: P,
        records: &[T],
    ) -> Result<()> {
        let file = File::create(path)?;
        let elem = self.element_dtype(|| Some(T::dtype()))?;
        let exact = write_tier::<T>(&elem);
        self.write_flat(
            &file,
            elem,
            None,
            records,
            exact,
            self.fortran_order,
            |len| preallocate(&file, len),
        )
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
                let s = ser::infer_shape(value, ElemKind::of(&base))?;
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
            ser::serialize_nested(&mut sink, &header.shape, value)?;
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
            ser::serialize_nested(&mut sink, &header.shape, value)?;
            blocks.flush(&mut writer)?;
        }
        writer.flush()?;
        Ok(())
    }

    /// Writes a dynamic [`Array`]: its dtype (or the builder's, converting values), its shape
    /// (or the builder's), and Fortran order if the array or the builder says so.
    ///
    /// Each value is one element of the dtype (a [`Value::List`](crate::Value::List) per
    /// element for a subarray dtype, a [`Value::Record`](crate::Value::Record) for a record).
    pub fn write_array<W: Write>(&self, writer: W, array: &Array) -> Result<()> {
        let elem = self.element_dtype(|| Some(array.dtype.clone()))?;
        let count = Header::new(elem.clone(), array.shape.clone()).count()?;
        if count != array.values.len() as u64 {
            return Err(Error::write(format!(
                "the array has {} values but its shape {} holds {count}",
                array.values.len(),
                pyliteral::repr_shape(&array.shape)
            )));
        }
        let (_, sub) = fold(&elem);
        let mut shape = array.shape.clone();
        shape.extend_from_slice(&sub);
        self.write_flat(
            writer,
            elem,
            Some(shape),
            &array.values,
            None,
            self.fortran_order || array.fortran_order,
            |_| {},
        )
    }

    /// A streaming writer for exactly `len` records, on any `Write` (a pipe, a socket, a
    /// compressor). The real header is written first; [`NpyWriter::finish`] fails if a different
    /// number of records was written. A writer dropped early leaves a truncated file, which
    /// readers reject (the data is shorter than the header says).
    pub fn writer_with_len<W: Write>(&self, mut writer: W, len: u64) -> Result<NpyWriter<W>> {
        let (elem, base, sub) = self.stream_dtype()?;
        let header = stream_header(&base, &sub, self.fortran_order, len);
        header.data_len()?;
        writer.write_all(&header.to_bytes_with_version(self.version)?)?;
        Ok(NpyWriter {
            inner: writer,
            blocks: Blocks::new(Plan::new(&elem)?, self.block_size(), Some(len)),
            elem,
            base,
            sub,
            fortran: self.fortran_order,
            mode: Mode::Counted { expected: len },
        })
    }

    /// A streaming writer for a number of records not known up front, on a `Write + Seek` (a
    /// file). The header is written at the writer's current position with the magic replaced by
    /// [`UNFINISHED_MAGIC`]; [`NpyWriter::finish`] writes the real header, with the final shape,
    /// over it. NumPy's growth-axis padding makes the header the same length for any count, so
    /// nothing moves. Until `finish`, the file does not parse as `.npy`.
    pub fn writer<W: Write + Seek>(&self, mut writer: W) -> Result<NpyWriter<W>> {
        let (elem, base, sub) = self.stream_dtype()?;
        let start = writer.stream_position()?;
        let mut bytes = stream_header(&base, &sub, self.fortran_order, 0)
            .to_bytes_with_version(self.version)?;
        let version = Version::from_tuple(bytes[6], bytes[7])?;
        let max = max_records(&elem);
        // The largest possible header must fit in the same length (growth padding).
        header_fitting(
            &stream_header(&base, &sub, self.fortran_order, max),
            version,
            bytes.len(),
        )?;
        bytes[..6].copy_from_slice(UNFINISHED_MAGIC);
        writer.write_all(&bytes)?;
        Ok(NpyWriter {
            inner: writer,
            blocks: Blocks::new(Plan::new(&elem)?, self.block_size(), None),
            elem,
            base,
            sub,
            fortran: self.fortran_order,
            mode: Mode::Patch {
                start,
                header_len: bytes.len(),
                version,
                max,
                patch: patch_at::<W>,
            },
        })
    }

    /// A streaming writer that appends records to the `.npy` array starting at the current
    /// position of `file` (e.g. one NumPy wrote), opened for reading and writing.
    ///
    /// The array must be 1-D (C or Fortran order: the same for 1-D), or `(n,) + subarray shape`
    /// when the builder's dtype is a subarray; its dtype must equal the builder's
    /// [`dtype`](Self::dtype) if one is set, byte order aside (the file's byte order and header
    /// version are kept); and the file must end exactly where the data ends. Records go after
    /// the data; [`NpyWriter::finish`] then rewrites the header in place with the new length.
    ///
    /// The header keeps its length: NumPy's growth padding leaves room for any count. A header
    /// written without that room (by another tool) is refused up front if it cannot hold even
    /// one more record; otherwise writing more records than it can describe fails before they
    /// are written. Until `finish`, the file still reads as the original array (the appended
    /// bytes lie beyond the data its header describes, which readers ignore); a later append to
    /// such a file is refused until it is truncated back.
    pub fn append<F: Read + Write + Seek>(&self, mut file: F) -> Result<NpyWriter<F>> {
        let start = file.stream_position()?;
        let limits = Limits {
            max_header_size: u32::MAX as u64,
            ..Limits::default()
        };
        let parsed = header::read_header(&mut file, &limits)?;
        let h = parsed.header;
        let (elem, sub) = match &self.dtype {
            Some(want) => {
                let (want_base, want_sub) = fold(want);
                if !same_layout(&want_base, &h.dtype) {
                    return Err(Error::write(format!(
                        "cannot append records of dtype {} to an array of dtype {}",
                        want_base.descr(),
                        h.dtype.descr()
                    )));
                }
                (DType::array(h.dtype.clone(), want_sub.clone())?, want_sub)
            }
            None => (h.dtype.clone(), Vec::new()),
        };
        if h.shape.len() != 1 + sub.len() || h.shape[1..] != sub[..] {
            let mut want = vec![0u64];
            want.extend_from_slice(&sub);
            return Err(Error::write(format!(
                "can only append to an array of shape (n,){}; the file's shape is {}",
                if sub.is_empty() {
                    String::new()
                } else {
                    format!(" + {}", pyliteral::repr_shape(&sub))
                },
                pyliteral::repr_shape(&h.shape)
            )));
        }
        if h.fortran_order && !sub.is_empty() {
            return Err(Error::write(
                "cannot append rows to a Fortran-order array with more than one dimension",
            ));
        }
        let data_end = start
            .checked_add(parsed.data_offset)
            .and_then(|v| v.checked_add(h.data_len().ok()?))
            .ok_or_else(|| Error::overflow("the end of the array data"))?;
        let end = file.seek(SeekFrom::End(0))?;
        if end < data_end {
            return Err(Error::eof(
                "the array data",
                data_end - start - parsed.data_offset,
                end.saturating_sub(start + parsed.data_offset),
            ));
        }
        if end > data_end {
            return Err(Error::write(format!(
                "{} bytes follow the array data (left by an unfinished append?): refusing to \
                 append after them; truncate the file to {data_end} bytes to drop them",
                end - data_end
            )));
        }
        let header_len = usize::try_from(parsed.data_offset)
            .map_err(|_| Error::overflow("the header length"))?;
        let n = h.shape[0];
        let limit = max_records(&elem);
        let max = (1..=20u32)
            .rev()
            .map(|d| 10u64.checked_pow(d).map_or(u64::MAX, |p| p - 1).min(limit))
            .find(|&c| {
                header_fitting(
                    &stream_header(&h.dtype, &sub, h.fortran_order, c),
                    parsed.version,
                    header_len,
                )
                .is_ok()
            })
            .unwrap_or(n);
        if max <= n {
            return Err(Error::write(format!(
                "the file's header ({header_len} bytes) has no room for a longer shape: it was \
                 written without NumPy's growth padding; rewrite the file instead of appending"
            )));
        }
        Ok(NpyWriter {
            inner: file,
            blocks: Blocks::new(Plan::new(&elem)?, self.block_size(), None).starting_at(n),
            elem,
            base: h.dtype,
            sub,
            fortran: h.fortran_order,
            mode: Mode::Patch {
                start,
                header_len,
                version: parsed.version,
                max,
                patch: patch_at::<F>,
            },
        })
    }

    /// [`append`](Self::append) to the file at `path`, opened for reading and writing.
    pub fn append_path<P: AsRef<Path>>(&self, path: P) -> Result<NpyWriter<File>> {
        let file = File::options().read(true).write(true).open(path)?;
        self.append(file)
    }

    // -----------------------------------------------------------------------------------------

    fn block_size(&self) -> usize {
        self.buffer_size.unwrap_or(DEFAULT_BUFFER_SIZE)
    }

    fn element_dtype(&self, default: impl FnOnce() -> Option<DType>) -> Result<DType> {
        let dt = self.dtype.clone().or_else(default).ok_or_else(|| {
            Error::write(
                "no dtype given: set one with WriterBuilder::dtype or WriterBuilder::record",
            )
        })?;
        Ok(match self.byte_order {
            Some(order) => dt.to_byte_order(order),
            None => dt,
        })
    }

    fn stream_dtype(&self) -> Result<(DType, DType, Vec<u64>)> {
        if self.shape.is_some() {
            return Err(Error::write(
                "a streaming writer's shape is (number of records,) + the dtype's subarray \
                 shape: WriterBuilder::shape cannot be used with it",
            ));
        }
        let elem = self.element_dtype(|| None)?;
        let (base, sub) = fold(&elem);
        if self.fortran_order && !sub.is_empty() {
            return Err(Error::write(
                "Fortran order with a subarray dtype needs a transposition, which a streaming \
                 writer cannot do: use WriterBuilder::to_writer",
            ));
        }
        Ok((elem, base, sub))
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
        let mut blocks = Blocks::new(Plan::new(&elem)?, self.block_size(), Some(n));
        let head = header.to_bytes_with_version(self.version)?;
        prealloc((head.len() as u64).saturating_add(data_len));
        if fortran && needs_transpose(&header.shape) {
            let mut data = Vec::with_capacity(usize::try_from(data_len).unwrap_or(0));
            blocks.push_all(&mut data, records, &mut exact)?;
            blocks.flush(&mut data)?;
            let data = c_to_f(&data, &header.shape, base.itemsize());
            writer.write_all(&head)?;
            writer.write_all(&data)?;
        } else {
            writer.write_all(&head)?;
            blocks.push_all(&mut writer, records, &mut exact)?;
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
    if len < PREALLOCATE_MIN {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(len) = libc::off_t::try_from(len) {
            // SAFETY: `fallocate` takes plain integers and touches no memory of ours; the
            // descriptor is open for the whole call because `file` is borrowed. Failure only
            // sets errno, which we ignore (the writes then allocate as they go).
            let _ = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, 0, len) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, len);
}

/// Splits a subarray dtype into its base and shape (nested subarrays flattened); any other
/// dtype is its own base with an empty shape.
fn fold(dtype: &DType) -> (DType, Vec<u64>) {
    let mut shape = Vec::new();
    let mut d = dtype;
    while let DType::Array(base, s) = d {
        shape.extend_from_slice(s);
        d = base;
    }
    (d.clone(), shape)
}

/// Same layout and types, byte order aside.
fn same_layout(a: &DType, b: &DType) -> bool {
    a.to_byte_order(ByteOrder::Little).descr() == b.to_byte_order(ByteOrder::Little).descr()
}

fn stream_header(base: &DType, sub: &[u64], fortran: bool, count: u64) -> Header {
    let mut shape = vec![count];
    shape.extend_from_slice(sub);
    Header {
        dtype: base.clone(),
        shape,
        fortran_order: fortran,
    }
}

/// The most records of dtype `elem` an array can hold (element and byte counts fit `i64`).
fn max_records(elem: &DType) -> u64 {
    i64::MAX as u64 / (elem.itemsize() as u64).max(1)
}

/// The header bytes for `h` in `version`, exactly `len` bytes long: NumPy's own bytes when they
/// have that length, else the same text re-padded with spaces (readers accept any padding).
fn header_fitting(h: &Header, version: Version, len: usize) -> Result<Vec<u8>> {
    let canonical = h.to_bytes_with_version(Some(version))?;
    if canonical.len() == len {
        return Ok(canonical);
    }
    let prefix = version.prefix_len();
    let mut end = canonical.len();
    while end > prefix && matches!(canonical[end - 1], b' ' | b'\n') {
        end -= 1;
    }
    let text = &canonical[prefix..end];
    if prefix + text.len() + 1 > len {
        return Err(Error::write(format!(
            "the header for shape {} needs {} bytes but the file's header has {len}: there is no \
             room to grow it in place",
            pyliteral::repr_shape(&h.shape),
            prefix + text.len() + 1
        )));
    }
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&canonical[..8]);
    let hlen = len - prefix;
    if version == Version::V1_0 {
        let hlen = u16::try_from(hlen).map_err(|_| Error::overflow("the header length"))?;
        out.extend_from_slice(&hlen.to_le_bytes());
    } else {
        let hlen = u32::try_from(hlen).map_err(|_| Error::overflow("the header length"))?;
        out.extend_from_slice(&hlen.to_le_bytes());
    }
    out.extend_from_slice(text);
    out.resize(len - 1, b' ');
    out.push(b'\n');
    Ok(out)
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

fn patch_at<W: Write + Seek>(w: &mut W, start: u64, bytes: &[u8]) -> io::Result<()> {
    let end = w.stream_position()?;
    w.seek(SeekFrom::Start(start))?;
    w.write_all(bytes)?;
    w.seek(SeekFrom::Start(end))?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------

/// Records encoded into a reusable block, written out a block at a time.
struct Blocks {
    plan: Plan,
    buf: Vec<u8>,
    filled: usize,
    /// Records encoded so far (including ones already in the file, when appending).
    count: u64,
    block_bytes: usize,
    expected: Option<u64>,
}

impl Blocks {
    fn new(plan: Plan, block_bytes: usize, expected: Option<u64>) -> Blocks {
        Blocks {
            plan,
            buf: Vec::new(),
            filled: 0,
            count: 0,
            block_bytes,
            expected,
        }
    }

    fn starting_at(mut self, count: u64) -> Blocks {
        self.count = count;
        self
    }

    /// Writes out the filled part of the block.
    fn flush<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        if self.filled > 0 {
            w.write_all(&self.buf[..self.filled])?;
            self.filled = 0;
        }
        Ok(())
    }

    /// Makes room for at least one record, flushing and (first time) allocating the block.
    #[cold]
    fn make_room<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        self.flush(w)?;
        let isz = self.plan.itemsize;
        if self.buf.len() < isz {
            let mut per = (self.block_bytes / isz).max(1);
            if let Some(e) = self.expected {
                per = per.min(usize::try_from(e).unwrap_or(usize::MAX).max(1));
            }
            self.buf = vec![0; per * isz];
        }
        Ok(())
    }

    #[inline]
    fn push<W: Write + ?Sized, T: Serialize + ?Sized>(&mut self, w: &mut W, rec: &T) -> Result<()> {
        let isz = self.plan.itemsize;
        if self.filled + isz > self.buf.len() {
            self.make_room(w)?;
        }
        let slot = &mut self.buf[self.filled..self.filled + isz];
        rec.serialize(ElemSer::new(&self.plan.root, slot))
            .map_err(|e| e.at_record(self.count))?;
        self.filled += isz;
        self.count += 1;
        Ok(())
    }

    /// Encodes `recs`, on the exact tier first if there is one (`None` after its first miss).
    fn push_all<W: Write + ?Sized, T: Serialize>(
        &mut self,
        w: &mut W,
        recs: &[T],
        exact: &mut Option<WriteTier<T>>,
    ) -> Result<()> {
        let isz = self.plan.itemsize;
        if isz == 0 {
            return recs.iter().try_for_each(|r| self.push(w, r));
        }
        let mut rest = recs;
        while !rest.is_empty() {
            if self.filled + isz > self.buf.len() {
                self.make_room(w)?;
            }
            let room = (self.buf.len() - self.filled) / isz;
            let n = room.min(rest.len());
            let start = self.filled;
            let root = &self.plan.root;
            let buf = &mut self.buf[start..start + n * isz];
            let mut off = 0;
            if let Some(t) = exact {
                let k = (t.run)(&rest[..n], buf, &t.plan);
                off = k * isz;
                if k < n {
                    // A miss: the general path encodes that record again, and the rest.
                    *exact = None;
                }
            }
            for rec in &rest[off / isz..n] {
                if let Err(e) = rec.serialize(ElemSer::new(root, &mut buf[off..off + isz])) {
                    let k = off / isz;
                    self.filled += off;
                    self.count += k as u64;
                    return Err(e.at_record(self.count));
                }
                off += isz;
            }
            self.filled += n * isz;
            self.count += n as u64;
            rest = &rest[n..];
        }
        Ok(())
    }
}

struct BlockSink<'a, W: ?Sized> {
    blocks: &'a mut Blocks,
    w: &'a mut W,
}

impl<W: Write + ?Sized> Sink for BlockSink<'_, W> {
    #[inline]
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.blocks.push(self.w, value)
    }

    fn position(&self) -> u64 {
        self.blocks.count
    }
}

// ---------------------------------------------------------------------------------------------

enum Mode<W> {
    /// The real header is written; exactly `expected` records must follow.
    Counted { expected: u64 },
    /// The header at `start` (`header_len` bytes, in `version`) is rewritten at `finish`.
    Patch {
        start: u64,
        header_len: usize,
        version: Version,
        /// The most records the header can describe.
        max: u64,
        patch: fn(&mut W, u64, &[u8]) -> io::Result<()>,
    },
}

/// A streaming `.npy` writer: records are appended one at a time (or a slice at a time) and
/// [`finish`](Self::finish) completes the file.
///
/// Created by [`WriterBuilder::writer_with_len`] (count known, any `Write`),
/// [`WriterBuilder::writer`] (count unknown, `Write + Seek`), [`WriterBuilder::append`] (an
/// existing file), or the shortcuts [`NpyWriter::with_len`], [`NpyWriter::new`] and
/// [`NpyWriter::append`].
///
/// A record that fails to serialize (a value out of range, a string too long) is not written
/// and the writer stays usable. A writer dropped without `finish` writes nothing more (buffered
/// records are discarded) and leaves a file that does not read as complete, see each
/// constructor.
///
/// ```
/// use npy_serde::NpyWriter;
/// use std::io::Cursor;
///
/// let mut w = NpyWriter::new::<[f32; 2]>(Cursor::new(Vec::new()))?;
/// for i in 0..5 {
///     w.write(&[i as f32, 0.5])?;
/// }
/// let bytes = w.finish()?.into_inner();
/// let h = npy_serde::header::parse_header(&bytes, &Default::default())?;
/// assert_eq!(h.header.shape, [5, 2]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct NpyWriter<W> {
    inner: W,
    blocks: Blocks,
    elem: DType,
    base: DType,
    sub: Vec<u64>,
    fortran: bool,
    mode: Mode<W>,
}

impl<W: Write> NpyWriter<W> {
    /// A writer for exactly `len` records of `T` (see [`WriterBuilder::writer_with_len`]).
    pub fn with_len<T: NpyRecord>(writer: W, len: u64) -> Result<Self> {
        WriterBuilder::new()
            .record::<T>()
            .writer_with_len(writer, len)
    }

    /// Writes one record (an element of the writer's dtype).
    #[inline]
    pub fn write<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        self.check_room(1)?;
        self.blocks.push(&mut self.inner, record)
    }

    /// Writes records from a slice. The space is checked for all of them first; if one fails to
    /// serialize, the ones before it are written and the error names its index.
    pub fn write_all<T: Serialize>(&mut self, records: &[T]) -> Result<()> {
        self.check_room(records.len() as u64)?;
        self.blocks.push_all(&mut self.inner, records, &mut None)
    }

    /// Number of records in the array so far (including an appended-to file's own).
    pub fn len(&self) -> u64 {
        self.blocks.count
    }

    /// True if the array has no records yet.
    pub fn is_empty(&self) -> bool {
        self.blocks.count == 0
    }

    /// The dtype of one record (a subarray dtype folds into the array's shape).
    pub fn dtype(&self) -> &DType {
        &self.elem
    }

    /// The underlying writer (data still in the block buffer has not reached it yet).
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Writes out buffered records and completes the header; returns the underlying writer,
    /// positioned after the data.
    ///
    /// For a counted writer, fails if the number of records differs from the count declared.
    /// For a seekable or appending writer, writes the final header over the provisional one
    /// (the data is written and flushed first, then the header).
    pub fn finish(mut self) -> Result<W> {
        self.blocks.flush(&mut self.inner)?;
        let count = self.blocks.count;
        match self.mode {
            Mode::Counted { expected } => {
                if count != expected {
                    return Err(Error::write(format!(
                        "{count} records written but {expected} were declared: the file is incomplete"
                    )));
                }
            }
            Mode::Patch {
                start,
                header_len,
                version,
                patch,
                ..
            } => {
                self.inner.flush()?;
                let h = stream_header(&self.base, &self.sub, self.fortran, count);
                let bytes = header_fitting(&h, version, header_len)?;
                patch(&mut self.inner, start, &bytes)?;
            }
        }
        self.inner.flush()?;
        Ok(self.inner)
    }

    fn check_room(&self, n: u64) -> Result<()> {
        let count = self.blocks.count;
        let (limit, why) = match &self.mode {
            Mode::Counted { expected } => (*expected, "were declared when the writer was created"),
            Mode::Patch { max, .. } => (*max, "fit in the file's header"),
        };
        if count.checked_add(n).is_none_or(|t| t > limit) {
            return Err(Error::write(format!(
                "cannot write {n} more record(s) after {count}: only {limit} {why}"
            ))
            .at_record(count));
        }
        Ok(())
    }
}

impl<W: Write + Seek> NpyWriter<W> {
    /// A writer for records of `T`, count not known up front (see [`WriterBuilder::writer`]).
    pub fn new<T: NpyRecord>(writer: W) -> Result<Self> {
        WriterBuilder::new().record::<T>().writer(writer)
    }
}

impl<F: Read + Write + Seek> NpyWriter<F> {
    /// Appends to the 1-D `.npy` array in `file`, with the file's dtype (see
    /// [`WriterBuilder::append`]).
    pub fn append(file: F) -> Result<Self> {
        WriterBuilder::new().append(file)
    }
}

impl<W> std::fmt::Debug for NpyWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpyWriter")
            .field("dtype", &self.elem.descr())
            .field("records", &self.blocks.count)
            .field(
                "mode",
                &match self.mode {
                    Mode::Counted { .. } => "counted",
                    Mode::Patch { .. } => "patch",
                },
            )
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::dtype::{Record, Scalar};
    use crate::header::parse_header;
    use crate::value::Value;

    fn header_of(bytes: &[u8]) -> crate::header::ParsedHeader {
        parse_header(bytes, &Limits::default()).unwrap()
    }

    fn data_of(bytes: &[u8]) -> &[u8] {
        &bytes[header_of(bytes).data_offset as usize..]
    }

    fn le_bytes<T: Copy, const N: usize>(vals: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        vals.iter().flat_map(|&v| f(v)).collect()
    }

    #[test]
    fn header_is_numpys_and_subarrays_fold_into_the_shape() {
        let bytes = to_vec(&[[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]]).unwrap();
        let want = Header::new("<f8".parse().unwrap(), vec![2, 3]);
        let hb = want.to_bytes().unwrap();
        assert_eq!(&bytes[..hb.len()], &hb[..]);
        assert_eq!(
            &bytes[hb.len()..],
            le_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], f64::to_le_bytes)
        );
        // Nested arrays flatten: [[[u8; 2]; 3]] of length 4 is (4, 3, 2).
        let bytes = to_vec(&[[[7u8; 2]; 3]; 4]).unwrap();
        let h = header_of(&bytes);
        assert_eq!(h.header.shape, [4, 3, 2]);
        assert_eq!(h.header.dtype.descr(), "'|u1'");
        assert_eq!(data_of(&bytes), [7u8; 24]);
    }

    #[test]
    fn zero_d_and_empty_arrays() {
        let b = WriterBuilder::new().shape([]).to_vec(&[2.5f32]).unwrap();
        assert!(header_of(&b).header.shape.is_empty());
        assert_eq!(data_of(&b), 2.5f32.to_le_bytes());
        let e = WriterBuilder::new()
            .shape([])
            .to_vec(&[1u8, 2])
            .unwrap_err();
        assert!(e.to_string().contains("shape () holds 1 elements"), "{e}");

        let b = to_vec::<f64>(&[]).unwrap();
        assert_eq!(header_of(&b).header.shape, [0]);
        assert!(data_of(&b).is_empty());
        let b = to_vec::<[i16; 3]>(&[]).unwrap();
        assert_eq!(header_of(&b).header.shape, [0, 3]);
        let b = WriterBuilder::new()
            .shape([2, 0])
            .to_vec::<f64>(&[])
            .unwrap();
        assert_eq!(header_of(&b).header.shape, [2, 0]);
        // An empty record dtype: itemsize 0, any number of elements.
        let empty = DType::Record(Record::packed::<&str>([]).unwrap());
        let b = WriterBuilder::new().dtype(empty).serialize(
            Vec::new(),
            &vec![std::collections::BTreeMap::<String, u8>::new(); 3],
        );
        assert!(b.is_ok(), "{b:?}");
    }

    #[test]
    fn reshape_checks_the_element_count() {
        let b = WriterBuilder::new()
            .shape([2, 3])
            .to_vec(&[0i32, 1, 2, 3, 4, 5])
            .unwrap();
        assert_eq!(header_of(&b).header.shape, [2, 3]);
        let e = WriterBuilder::new()
            .shape([4])
            .to_vec(&[0i32, 1, 2, 3, 4, 5])
            .unwrap_err();
        assert_eq!(e.kind().code(), "write");
        assert!(e.to_string().contains("6 records give 6"), "{e}");
    }

    #[test]
    fn byte_order_converts_every_multibyte_scalar() {
        let dt: DType = "[('a', '<i4'), ('b', '|u1'), ('c', '<U1', (2,))]"
            .parse()
            .unwrap();
        let rec = Value::Record(vec![
            ("a".into(), Value::Int(0x01020304)),
            ("b".into(), Value::UInt(9)),
            (
                "c".into(),
                Value::List(vec![Value::String("A".into()), Value::String("".into())]),
            ),
        ]);
        let b = WriterBuilder::new()
            .dtype(dt)
            .byte_order(ByteOrder::Big)
            .serialize(Vec::new(), &[rec])
            .map(|_| ());
        assert!(b.is_ok());
        let mut out = Vec::new();
        WriterBuilder::new()
            .dtype(
                "[('a', '<i4'), ('b', '|u1'), ('c', '<U1', (2,))]"
                    .parse()
                    .unwrap(),
            )
            .byte_order(ByteOrder::Big)
            .serialize(
                &mut out,
                &[serde_json::json!({"a": 0x01020304, "b": 9, "c": ["A", ""]})],
            )
            .unwrap();
        let h = header_of(&out);
        assert_eq!(
            h.header.dtype.descr(),
            "[('a', '>i4'), ('b', '|u1'), ('c', '>U1', (2,))]"
        );
        assert_eq!(data_of(&out), [1, 2, 3, 4, 9, 0, 0, 0, 65, 0, 0, 0, 0]);
        let b = WriterBuilder::new()
            .byte_order(ByteOrder::Big)
            .to_vec(&[1.0f64])
            .unwrap();
        assert_eq!(header_of(&b).header.dtype.descr(), "'>f8'");
        assert_eq!(data_of(&b), 1.0f64.to_be_bytes());
    }

    #[test]
    fn fortran_order_transposes_c_input() {
        // 2x3: C order 0..6, Fortran order column by column.
        let b = WriterBuilder::new()
            .shape([2, 3])
            .fortran_order(true)
            .to_vec(&[0u8, 1, 2, 3, 4, 5])
            .unwrap();
        let h = header_of(&b);
        assert!(h.header.fortran_order);
        assert_eq!(data_of(&b), [0, 3, 1, 4, 2, 5]);
        // 2x3x4 against the index formula: F offset of (i, j, k) is i + 2j + 6k.
        let vals: Vec<u16> = (0..24).collect();
        let b = WriterBuilder::new()
            .shape([2, 3, 4])
            .fortran_order(true)
            .to_vec(&vals)
            .unwrap();
        let data = data_of(&b);
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    let c = (i * 12 + j * 4 + k) as u16;
                    let f = i + 2 * j + 6 * k;
                    assert_eq!(u16::from_le_bytes([data[2 * f], data[2 * f + 1]]), c);
                }
            }
        }
        // Subarray records folded into the shape transpose too.
        let b = WriterBuilder::new()
            .fortran_order(true)
            .to_vec(&[[0u8, 1, 2], [3, 4, 5]])
            .unwrap();
        assert_eq!(data_of(&b), [0, 3, 1, 4, 2, 5]);
        // And nested serialize().
        let mut out = Vec::new();
        WriterBuilder::new()
            .dtype("|u1".parse().unwrap())
            .fortran_order(true)
            .serialize(&mut out, &vec![vec![0u8, 1, 2], vec![3, 4, 5]])
            .unwrap();
        assert_eq!(data_of(&out), [0, 3, 1, 4, 2, 5]);
        // 1-D: nothing to transpose, the flag is written as asked.
        let b = WriterBuilder::new()
            .fortran_order(true)
            .to_vec(&[1u8, 2])
            .unwrap();
        assert!(header_of(&b).header.fortran_order);
        assert_eq!(data_of(&b), [1, 2]);
    }

    #[test]
    fn forced_versions() {
        let b = WriterBuilder::new()
            .version(Version::V2_0)
            .to_vec(&[1u8])
            .unwrap();
        assert_eq!(&b[6..8], &[2, 0]);
        assert_eq!(header_of(&b).version, Version::V2_0);
        let b = WriterBuilder::new()
            .version(Version::V3_0)
            .to_vec(&[1u8])
            .unwrap();
        assert_eq!(&b[6..8], &[3, 0]);
        // 2000 fields with long names: too big for 1.0.
        let fields: Vec<(String, DType)> = (0..2000)
            .map(|i| {
                (
                    format!("field_with_a_long_name_{i:05}"),
                    DType::scalar(Scalar::U8),
                )
            })
            .collect();
        let dt = DType::Record(Record::packed(fields).unwrap());
        let e = WriterBuilder::new()
            .dtype(dt.clone())
            .version(Version::V1_0)
            .serialize(Vec::new(), &Vec::<()>::new())
            .unwrap_err();
        assert!(e.to_string().contains("1.0"), "{e}");
        let mut out = Vec::new();
        WriterBuilder::new()
            .dtype(dt)
            .serialize(&mut out, &Vec::<()>::new())
            .unwrap();
        assert_eq!(&out[6..8], &[2, 0]);
    }

    #[test]
    fn serialize_infers_and_checks_shapes() {
        let f8: DType = "<f8".parse().unwrap();
        let mut out = Vec::new();
        let v = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]];
        WriterBuilder::new()
            .dtype(f8.clone())
            .serialize(&mut out, &v)
            .unwrap();
        assert_eq!(header_of(&out).header.shape, [3, 2]);
        assert_eq!(
            data_of(&out),
            le_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], f64::to_le_bytes)
        );
        // A bare element is 0-d.
        let mut out = Vec::new();
        WriterBuilder::new()
            .dtype(f8.clone())
            .serialize(&mut out, &1.5)
            .unwrap();
        assert!(header_of(&out).header.shape.is_empty());
        // Ragged input: an error naming the element index.
        let ragged = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0]];
        let e = WriterBuilder::new()
            .dtype(f8.clone())
            .serialize(Vec::new(), &ragged)
            .unwrap_err();
        assert!(e.to_string().contains("not rectangular"), "{e}");
        assert_eq!(e.position().record, Some(4));
        let ragged = vec![vec![1.0], vec![3.0, 4.0]];
        let e = WriterBuilder::new()
            .dtype(f8.clone())
            .serialize(Vec::new(), &ragged)
            .unwrap_err();
        assert!(e.to_string().contains("not rectangular"), "{e}");
        // Explicit shape must match.
        let e = WriterBuilder::new()
            .dtype(f8.clone())
            .shape([2, 3])
            .serialize(Vec::new(), &v)
            .unwrap_err();
        assert!(e.to_string().contains("axis 0"), "{e}");
        // Scalars where a sequence was expected.
        let e = WriterBuilder::new()
            .dtype(f8)
            .shape([2])
            .serialize(Vec::new(), &1.0)
            .unwrap_err();
        assert!(e.to_string().contains("expected a sequence"), "{e}");
        // Strings are elements of S dtypes.
        let mut out = Vec::new();
        WriterBuilder::new()
            .dtype("|S2".parse().unwrap())
            .serialize(&mut out, &["a", "bc", ""])
            .unwrap();
        assert_eq!(header_of(&out).header.shape, [3]);
        assert_eq!(data_of(&out), b"a\0bc\0\0");
        // A subarray dtype: the value's shape must end with it.
        let sub: DType = "('<i2', (2,))".parse().unwrap();
        let mut out = Vec::new();
        WriterBuilder::new()
            .dtype(sub.clone())
            .serialize(&mut out, &vec![[1i16, 2]; 3])
            .unwrap();
        let h = header_of(&out);
        assert_eq!(h.header.shape, [3, 2]);
        assert_eq!(h.header.dtype.descr(), "'<i2'");
        let e = WriterBuilder::new()
            .dtype(sub)
            .serialize(Vec::new(), &vec![[1i16, 2, 3]; 3])
            .unwrap_err();
        assert!(e.to_string().contains("subarray shape (2,)"), "{e}");
        // No dtype.
        let e = WriterBuilder::new()
            .serialize(Vec::new(), &[1.0])
            .unwrap_err();
        assert!(e.to_string().contains("no dtype"), "{e}");
    }

    #[test]
    fn errors_name_the_record_index() {
        let e = WriterBuilder::new()
            .dtype("|i1".parse().unwrap())
            .to_vec(&[1i32, 2, 3, 4, 5, 300, 7])
            .unwrap_err();
        assert_eq!(e.position().record, Some(5));
        assert!(e.to_string().contains("300 is out of range for |i1"), "{e}");
        // Across block boundaries too.
        let vals: Vec<i32> = (0..100).map(|i| if i == 77 { 1000 } else { i }).collect();
        let e = WriterBuilder::new()
            .dtype("|i1".parse().unwrap())
            .buffer_size(10)
            .to_vec(&vals)
            .unwrap_err();
        assert_eq!(e.position().record, Some(77));
    }

    #[test]
    fn padding_is_zero_even_when_the_block_is_reused() {
        let dt = DType::Record(
            Record::aligned([
                ("a", DType::scalar(Scalar::U8)),
                ("b", DType::scalar(Scalar::I32)),
            ])
            .unwrap(),
        );
        let recs: Vec<(u8, i32)> = (0..50).map(|i| (0xff, -1 - i)).collect();
        let mut out = Vec::new();
        WriterBuilder::new()
            .dtype(dt)
            .buffer_size(16)
            .serialize(&mut out, &recs)
            .unwrap();
        let data = data_of(&out);
        assert_eq!(data.len(), 50 * 8);
        for (i, rec) in data.chunks(8).enumerate() {
            assert_eq!(rec[..4], [0xff, 0, 0, 0]);
            assert_eq!(
                i32::from_le_bytes(rec[4..].try_into().unwrap()),
                -1 - i as i32
            );
        }
    }

    #[test]
    fn write_array_round_trips() {
        let arr = Array {
            dtype: "[('x', '<f4'), ('s', '|S3'), ('v', '>i2', (2,))]"
                .parse()
                .unwrap(),
            shape: vec![2, 1],
            fortran_order: false,
            values: vec![
                Value::Record(vec![
                    ("x".into(), Value::Float(0.5)),
                    ("s".into(), Value::Bytes(b"ab".to_vec())),
                    ("v".into(), Value::List(vec![Value::Int(1), Value::Int(-1)])),
                ]),
                Value::Record(vec![
                    ("x".into(), Value::Float(-2.0)),
                    ("s".into(), Value::Bytes(b"xyz".to_vec())),
                    ("v".into(), Value::List(vec![Value::Int(3), Value::Int(4)])),
                ]),
            ],
        };
        let mut out = Vec::new();
        WriterBuilder::new().write_array(&mut out, &arr).unwrap();
        assert_eq!(Array::from_slice(&out).unwrap(), arr);
        let h = header_of(&out);
        assert_eq!(h.header.shape, [2, 1]);
        let mut want = 0.5f32.to_le_bytes().to_vec();
        want.extend_from_slice(b"ab\0\0\x01\xff\xff");
        want.extend_from_slice(&(-2.0f32).to_le_bytes());
        want.extend_from_slice(b"xyz\0\x03\0\x04");
        assert_eq!(data_of(&out), want);

        let bad = Array {
            values: arr.values[..1].to_vec(),
            ..arr
        };
        let e = WriterBuilder::new()
            .write_array(Vec::new(), &bad)
            .unwrap_err();
        assert!(e.to_string().contains("1 values"), "{e}");
    }

    #[test]
    fn counted_writer() {
        let mut w = NpyWriter::with_len::<u16>(Vec::new(), 3).unwrap();
        w.write(&1u16).unwrap();
        w.write_all(&[2u16, 3]).unwrap();
        assert_eq!(w.len(), 3);
        let e = w.write(&4u16).unwrap_err();
        assert!(e.to_string().contains("only 3 were declared"), "{e}");
        assert_eq!(w.finish().unwrap(), to_vec(&[1u16, 2, 3]).unwrap());

        let mut w = NpyWriter::with_len::<u16>(Vec::new(), 3).unwrap();
        w.write(&1u16).unwrap();
        // A failing record is not written and the writer goes on.
        assert!(w.write(&-1i32).is_err());
        w.write(&2u16).unwrap();
        let e = w.finish().unwrap_err();
        assert!(e.to_string().contains("2 records written but 3"), "{e}");

        // Subarray records: shape (n, 2); a shape option is refused.
        let mut w = NpyWriter::with_len::<[f32; 2]>(Vec::new(), 2).unwrap();
        w.write_all(&[[1.0f32, 2.0], [3.0, 4.0]]).unwrap();
        let b = w.finish().unwrap();
        assert_eq!(b, to_vec(&[[1.0f32, 2.0], [3.0, 4.0]]).unwrap());
        let e = WriterBuilder::new()
            .record::<u8>()
            .shape([2])
            .writer_with_len(Vec::new(), 2)
            .unwrap_err();
        assert!(e.to_string().contains("shape"), "{e}");
        let e = WriterBuilder::new()
            .record::<[u8; 2]>()
            .fortran_order(true)
            .writer_with_len(Vec::new(), 2)
            .unwrap_err();
        assert!(e.to_string().contains("Fortran"), "{e}");
    }

    #[test]
    fn uncounted_writer_patches_the_header() {
        let vals: Vec<f64> = (0..100_000).map(|i| i as f64 * 0.25).collect();
        let mut w = NpyWriter::new::<f64>(Cursor::new(Vec::new())).unwrap();
        for v in &vals[..10] {
            w.write(v).unwrap();
        }
        w.write_all(&vals[10..]).unwrap();
        let out = w.finish().unwrap().into_inner();
        assert_eq!(out, to_vec(&vals).unwrap());

        // Zero records and a writer starting mid-stream.
        let mut cur = Cursor::new(b"prefix".to_vec());
        cur.seek(SeekFrom::End(0)).unwrap();
        let w = WriterBuilder::new().record::<u8>().writer(cur).unwrap();
        let out = w.finish().unwrap().into_inner();
        assert_eq!(&out[..6], b"prefix");
        assert_eq!(out[6..], to_vec::<u8>(&[]).unwrap()[..]);

        // Fortran 1-D and forced versions keep working through the patch.
        let mut w = WriterBuilder::new()
            .record::<i8>()
            .fortran_order(true)
            .version(Version::V3_0)
            .writer(Cursor::new(Vec::new()))
            .unwrap();
        w.write_all(&[1i8, 2, 3]).unwrap();
        let out = w.finish().unwrap().into_inner();
        let want = WriterBuilder::new()
            .fortran_order(true)
            .version(Version::V3_0)
            .to_vec(&[1i8, 2, 3])
            .unwrap();
        assert_eq!(out, want);
    }

    #[test]
    fn dropped_writer_leaves_an_unreadable_file() {
        let mut w = NpyWriter::new::<u32>(Cursor::new(Vec::new())).unwrap();
        w.write_all(&[1u32; 1000]).unwrap();
        let partial = w.get_ref().get_ref().clone();
        drop(w);
        assert_eq!(&partial[..6], UNFINISHED_MAGIC);
        let e = parse_header(&partial, &Limits::default()).unwrap_err();
        assert_eq!(e.kind().code(), "bad_magic");

        // On disk, the same.
        let path = temp_path("dropped");
        {
            let mut w = NpyWriter::new::<u32>(File::create(&path).unwrap()).unwrap();
            w.write_all(&[7u32; 5000]).unwrap();
        }
        let bytes = std::fs::read(&path).unwrap();
        assert!(parse_header(&bytes, &Limits::default()).is_err());
        std::fs::remove_file(&path).unwrap();

        // A counted writer dropped early leaves data shorter than its header says.
        let mut w = NpyWriter::with_len::<u32>(Vec::new(), 10).unwrap();
        w.write_all(&[1u32; 4]).unwrap();
        w.blocks.flush(&mut w.inner).unwrap();
        let partial = w.get_ref().clone();
        let h = header_of(&partial);
        assert!(
            (partial.len() as u64) < h.data_offset + h.header.data_len().unwrap(),
            "a truncated counted file must be detectably short"
        );
    }

    fn temp_path(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!(
            "npy-serde-write-{tag}-{}-{:?}.npy",
            std::process::id(),
            std::thread::current().id()
        ))
    }

    /// `to_path` preallocates large files: the result must be byte-identical to `to_vec`, with
    /// exactly the written length (no preallocated tail), also when writing fails half-way.
    #[test]
    fn to_path_preallocation_leaves_exact_files() {
        let path = temp_path("prealloc");
        let vals: Vec<f64> = (0..300_000).map(|i| i as f64 * 0.25).collect();
        to_path(&path, &vals).unwrap();
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk, to_vec(&vals).unwrap());
        assert!(on_disk.len() as u64 >= PREALLOCATE_MIN);
        // Overwriting with a smaller array truncates; no bytes of the old file remain.
        let small: Vec<f64> = vals[..1000].to_vec();
        to_path(&path, &small).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), to_vec(&small).unwrap());

        // A record that cannot be encoded stops the write: the file holds only what was
        // written (header and the blocks before the bad record), never the preallocated size.
        let rows: Vec<(i64, String)> = (0..200_000)
            .map(|i| {
                (
                    i,
                    if i == 150_000 {
                        "x".repeat(9)
                    } else {
                        "ok".into()
                    },
                )
            })
            .collect();
        let builder = WriterBuilder::new().dtype("[('a','<i8'),('s','S4')]".parse().unwrap());
        let e = builder
            .clone()
            .serialize(File::create(&path).unwrap(), &rows)
            .unwrap_err();
        assert_eq!(e.position().record, Some(150_000));
        #[derive(serde::Serialize)]
        struct Row {
            a: i64,
            s: String,
        }
        impl crate::NpyRecord for Row {
            fn dtype() -> DType {
                "[('a','<i8'),('s','S4')]".parse().unwrap()
            }
        }
        let rows: Vec<Row> = rows.into_iter().map(|(a, s)| Row { a, s }).collect();
        let e = to_path(&path, &rows).unwrap_err();
        assert_eq!(e.position().record, Some(150_000));
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len < 128 + 12 * 200_000, "{len}");
        assert_eq!((len - 128) % 12, 0, "whole records only: {len}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn append_to_an_existing_file() {
        let mut cur = Cursor::new(to_vec(&[1u32, 2, 3]).unwrap());
        let mut w = NpyWriter::append(cur).unwrap();
        assert_eq!(w.len(), 3);
        w.write_all(&[4u32, 5]).unwrap();
        cur = w.finish().unwrap();
        assert_eq!(cur.get_ref(), &to_vec(&[1u32, 2, 3, 4, 5]).unwrap());
        // And again, many more (the digit count grows).
        let mut w = NpyWriter::append(Cursor::new(cur.into_inner())).unwrap();
        let more: Vec<u32> = (6..=20_000).collect();
        w.write_all(&more).unwrap();
        let out = w.finish().unwrap().into_inner();
        let all: Vec<u32> = (1..=20_000).collect();
        assert_eq!(out, to_vec(&all).unwrap());

        // Big-endian file: records are written in the file's order.
        let be = WriterBuilder::new()
            .byte_order(ByteOrder::Big)
            .to_vec(&[1u32])
            .unwrap();
        let mut w = WriterBuilder::new()
            .record::<u32>()
            .append(Cursor::new(be))
            .unwrap();
        w.write(&2u32).unwrap();
        let out = w.finish().unwrap().into_inner();
        assert_eq!(
            out,
            WriterBuilder::new()
                .byte_order(ByteOrder::Big)
                .to_vec(&[1u32, 2])
                .unwrap()
        );

        // Subarray records onto an (n, 2) file.
        let f = to_vec(&[[1i16, 2]]).unwrap();
        let mut w = WriterBuilder::new()
            .record::<[i16; 2]>()
            .append(Cursor::new(f))
            .unwrap();
        w.write(&[3i16, 4]).unwrap();
        let out = w.finish().unwrap().into_inner();
        assert_eq!(out, to_vec(&[[1i16, 2], [3, 4]]).unwrap());
    }

    #[test]
    fn append_refusals() {
        let file = to_vec(&[1u32, 2]).unwrap();
        let e = WriterBuilder::new()
            .record::<i64>()
            .append(Cursor::new(file.clone()))
            .unwrap_err();
        assert!(e.to_string().contains("dtype"), "{e}");
        let two_d = to_vec(&[[1u32, 2]]).unwrap();
        let e = NpyWriter::append(Cursor::new(two_d)).unwrap_err();
        assert!(e.to_string().contains("shape (n,)"), "{e}");
        let mut trailing = file.clone();
        trailing.push(0);
        let e = NpyWriter::append(Cursor::new(trailing)).unwrap_err();
        assert!(e.to_string().contains("1 bytes follow"), "{e}");
        let short = file[..file.len() - 1].to_vec();
        let e = NpyWriter::append(Cursor::new(short)).unwrap_err();
        assert_eq!(e.kind().code(), "unexpected_eof");
    }

    /// A header written without growth padding, exactly as long as its text.
    fn tight_file(count: u64) -> Vec<u8> {
        let canon = Header::new("|u1".parse().unwrap(), vec![count])
            .to_bytes()
            .unwrap();
        let mut end = canon.len();
        while matches!(canon[end - 1], b' ' | b'\n') {
            end -= 1;
        }
        let text = &canon[10..end];
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&((text.len() + 1) as u16).to_le_bytes());
        out.extend_from_slice(text);
        out.push(b'\n');
        out.extend(std::iter::repeat_n(1u8, count as usize));
        out
    }

    #[test]
    fn append_without_growth_room() {
        // Room for one digit: up to 9 records.
        let mut w = NpyWriter::append(Cursor::new(tight_file(3))).unwrap();
        w.write_all(&[2u8; 6]).unwrap();
        let e = w.write(&2u8).unwrap_err();
        assert!(e.to_string().contains("fit in the file's header"), "{e}");
        let out = w.finish().unwrap().into_inner();
        let h = header_of(&out);
        assert_eq!(h.header.shape, [9]);
        assert_eq!(data_of(&out), [1, 1, 1, 2, 2, 2, 2, 2, 2]);
        // No room at all for a tenth record.
        let e = NpyWriter::append(Cursor::new(tight_file(9))).unwrap_err();
        assert!(e.to_string().contains("growth padding"), "{e}");
    }

    #[test]
    fn interrupted_append_keeps_the_original_array() {
        let path = temp_path("append");
        to_path(&path, &[1.5f64, 2.5]).unwrap();
        {
            let mut w = WriterBuilder::new().append_path(&path).unwrap();
            // More than one block, so some of it reaches the file.
            w.write_all(&vec![9.0f64; 300_000]).unwrap();
            // dropped without finish
        }
        let bytes = std::fs::read(&path).unwrap();
        let arr = Array::from_slice(&bytes).unwrap();
        assert_eq!(arr.values, [Value::Float(1.5), Value::Float(2.5)]);
        let e = WriterBuilder::new().append_path(&path).unwrap_err();
        assert!(e.to_string().contains("follow the array data"), "{e}");
        // Truncated back, appending works.
        let f = File::options().write(true).open(&path).unwrap();
        f.set_len(128 + 16).unwrap();
        drop(f);
        let mut w = WriterBuilder::new().append_path(&path).unwrap();
        w.write(&3.5f64).unwrap();
        w.finish().unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            to_vec(&[1.5f64, 2.5, 3.5]).unwrap()
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn header_fitting_repads() {
        let h = Header::new("<f8".parse().unwrap(), vec![5]);
        let canon = h.to_bytes().unwrap();
        assert_eq!(
            header_fitting(&h, Version::V1_0, canon.len()).unwrap(),
            canon
        );
        let longer = header_fitting(&h, Version::V1_0, 192).unwrap();
        assert_eq!(longer.len(), 192);
        let p = header_of(&longer);
        assert_eq!(p.header, h);
        assert_eq!(p.data_offset, 192);
        assert!(header_fitting(&h, Version::V1_0, 40).is_err());
    }
}
