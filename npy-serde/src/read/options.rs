//! [`ReaderBuilder`]: the options of reading (header limits, data-size limits, the bound on
//! values without data bytes) and the checks of a header against them. The reading doors are
//! its methods in the parent module.

use super::plan::{Ctx, DEFAULT_MAX_EMPTY_ITEMS};

/// Arrays with fewer data bytes than this are decoded on the calling thread (see
/// [`ReaderBuilder::parallel_threshold`]).
pub(crate) const PARALLEL_MIN: u64 = 16 << 20;
use crate::error::{Error, Result};
use crate::header::{Header, Limits};

/// Reading options: header limits (as NumPy's `max_header_size`) and data-size limits.
///
/// ```
/// let rb = npy_serde::ReaderBuilder::new().max_header_size(100_000).max_data_size(1 << 30);
/// # let _ = rb;
/// ```
#[derive(Clone, Debug)]
pub struct ReaderBuilder {
    #[doc(hidden)]
    pub limits: Limits,
    #[doc(hidden)]
    pub max_data_size: Option<u64>,
    #[doc(hidden)]
    pub max_empty_items: u64,
    #[doc(hidden)]
    pub parallel: bool,
    #[doc(hidden)]
    pub parallel_min: u64,
    #[doc(hidden)]
    pub allow_pickle_data: bool,
    #[doc(hidden)]
    pub pickle: crate::pickle::PickleOptions,
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
            max_empty_items: DEFAULT_MAX_EMPTY_ITEMS,
            parallel: true,
            parallel_min: PARALLEL_MIN,
            allow_pickle_data: false,
            pickle: crate::pickle::PickleOptions::default(),
        }
    }

    /// Whether `from_path`, `from_slice` and `MmapArray::to_vec` may
    /// decode large arrays (16 MiB of data and more) on all cores (default true; needs the
    /// `parallel` feature, on by default). The result is the same either way.
    pub fn parallel(mut self, yes: bool) -> Self {
        self.parallel = yes;
        self
    }

    /// Arrays with fewer data bytes than this are never decoded in parallel (default 16 MiB:
    /// below that, starting threads costs more than it gains).
    pub fn parallel_threshold(mut self, bytes: u64) -> Self {
        self.parallel_min = bytes;
        self
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

    /// Largest number of values without data bytes accepted (default 2^20): elements of
    /// zero-byte types (`V0`, empty records), zero-size fields and subarrays, and the lists
    /// above a zero-length axis (a `(1000000, 0)` array has 1,000,001). Unlike every other
    /// value, their number is not bounded by the data present; see
    /// [`Header::empty_value_count`].
    pub fn max_empty_items(mut self, count: u64) -> Self {
        self.max_empty_items = count;
        self
    }

    /// Whether object arrays (`descr '|O'`, record dtypes with an `O` field, NumPy 2's
    /// `StringDType`, all stored as a Python pickle) are read (default false: refused with an
    /// error naming this option, as `np.load` refuses them without `allow_pickle=True`). Unlike
    /// NumPy's option, this one runs no code: the pickle is interpreted as data only (see
    /// [`pickle`](crate::pickle)). The doors that take it: `deserialize_slice`,
    /// `deserialize_path`, `from_slice_serde`, `from_path_serde`, and
    /// [`read_objects_slice`](ReaderBuilder::read_objects_slice) /
    /// [`read_objects_path`](ReaderBuilder::read_objects_path) for the values themselves.
    ///
    /// ```
    /// let rb = npy_serde::ReaderBuilder::new().allow_pickle_data(true);
    /// # let _ = rb;
    /// ```
    pub fn allow_pickle_data(mut self, yes: bool) -> Self {
        self.allow_pickle_data = yes;
        self
    }

    /// The choices and limits of reading pickles (Python 2 `str` encoding, depth, values and
    /// bytes after expanding shared references); see [`PickleOptions`](crate::pickle::PickleOptions).
    ///
    /// ```
    /// use npy_serde::pickle::{Encoding, PickleOptions};
    /// let rb = npy_serde::ReaderBuilder::new()
    ///     .allow_pickle_data(true)
    ///     .pickle_options(PickleOptions::default().encoding(Encoding::Latin1));
    /// # let _ = rb;
    /// ```
    pub fn pickle_options(mut self, options: crate::pickle::PickleOptions) -> Self {
        self.pickle = options;
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
    #[doc(hidden)]
    pub fn check(&self, header: &Header) -> Result<(u64, u64)> {
        let count = header.count()?;
        let len = header.data_len()?;
        if let Some(max) = self.max_data_size
            && len > max
        {
            return Err(Error::limit("the array data size", max, len));
        }
        // Values no data byte pays for (zero-size elements and fields, lists above a
        // zero-length axis) are bounded here, once for the whole array, before decoding: a
        // per-level check lets nested zero-size subarrays multiply past any limit.
        let empty = header.empty_value_count();
        if empty > self.max_empty_items {
            return Err(Error::limit(
                "the number of values without data bytes (zero-size elements or fields, or \
                 lists above a zero-length axis)",
                self.max_empty_items,
                empty,
            ));
        }
        Ok((count, len))
    }
}
