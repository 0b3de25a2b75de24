//! [`WriterBuilder`]: the options of writing (dtype, shape, byte order, order, version,
//! buffer size) and how they resolve into the element dtype. The writing doors themselves
//! are in the parent module, the streaming ones in `super::stream`.

use crate::dtype::{ByteOrder, DType};
use crate::error::{Error, Result};
use crate::header::Version;
use crate::record::NpyRecord;

/// Default size of the block buffer records are encoded into before each write.
pub const DEFAULT_BUFFER_SIZE: usize = 1 << 20;

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
    pub(super) dtype: Option<DType>,
    pub(super) shape: Option<Vec<u64>>,
    pub(super) byte_order: Option<ByteOrder>,
    pub(super) fortran_order: bool,
    pub(super) version: Option<Version>,
    pub(super) buffer_size: Option<usize>,
    /// `parallel(false)`.
    pub(super) sequential: bool,
    /// The records are given in the header's storage order already (Fortran order included):
    /// written as they are, never transposed (`crate::ndarray`'s Fortran-layout arrays).
    pub(crate) stored_order: bool,
}

/// Arrays with fewer data bytes than this are encoded on the calling thread only.
pub(super) const PIPELINE_MIN: u64 = 16 << 20;

impl WriterBuilder {
    /// Whether `to_writer`, `to_vec` and `to_path` may encode large arrays (16 MiB of data and
    /// more) on a second thread while this one writes, and streaming writers made from a path
    /// ([`create_path`](Self::create_path), [`append_path`](Self::append_path)) write their
    /// blocks on a second thread (default true; needs the `parallel` feature, on by default,
    /// and two cores). The bytes are the same either way.
    pub fn parallel(mut self, yes: bool) -> Self {
        self.sequential = !yes;
        self
    }

    /// True if `len` data bytes are worth encoding on a second thread.
    pub(super) fn pipelines(&self, len: u64) -> bool {
        !self.sequential
            && cfg!(feature = "parallel")
            && len >= PIPELINE_MIN
            && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
    }

    /// True if a streaming writer made from a path writes its blocks on a second thread.
    pub(super) fn pipelined(&self) -> bool {
        !self.sequential
            && cfg!(feature = "parallel")
            && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
    }

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
}

impl WriterBuilder {
    pub(super) fn block_size(&self) -> usize {
        self.buffer_size.unwrap_or(DEFAULT_BUFFER_SIZE)
    }

    pub(super) fn element_dtype(&self, default: impl FnOnce() -> Option<DType>) -> Result<DType> {
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

    pub(super) fn stream_dtype(&self) -> Result<(DType, DType, Vec<u64>)> {
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
}

/// Splits a subarray dtype into its base and shape (nested subarrays flattened); any other
/// dtype is its own base with an empty shape.
pub(super) fn fold(dtype: &DType) -> (DType, Vec<u64>) {
    let mut shape = Vec::new();
    let mut d = dtype;
    while let DType::Array(base, s) = d {
        shape.extend_from_slice(s);
        d = base;
    }
    (d.clone(), shape)
}

/// Same layout and types, byte order aside.
pub(super) fn same_layout(a: &DType, b: &DType) -> bool {
    a.to_byte_order(ByteOrder::Little).descr() == b.to_byte_order(ByteOrder::Little).descr()
}
