//! The choices and limits of reading a pickle: [`PickleOptions`], [`Encoding`].

/// How Python 2 `str` values (the STRING, BINSTRING and SHORT_BINSTRING opcodes) are read, as
/// `np.load`'s `encoding` argument.
///
/// ```
/// use npy_serde::pickle::{load, Encoding, PickleOptions, PyValue};
/// let py2 = b"S'caf\\xe9'\n.";
/// assert!(load(py2, &PickleOptions::default()).is_err());
/// let v = load(py2, &PickleOptions::default().encoding(Encoding::Latin1))?;
/// assert_eq!(v, PyValue::Str("café".into()));
/// let v = load(py2, &PickleOptions::default().encoding(Encoding::Bytes))?;
/// assert_eq!(v, PyValue::Bytes(b"caf\xe9".to_vec()));
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// ASCII text (NumPy's default): a non-ASCII byte is an error naming the other choices.
    #[default]
    Ascii,
    /// Each byte is the code point of the same number (what NumPy advises for Python 2 files
    /// holding numeric arrays).
    Latin1,
    /// Kept as bytes.
    Bytes,
}

/// The choices and limits of reading one pickle.
///
/// ```
/// use npy_serde::pickle::{Encoding, PickleOptions};
/// let o = PickleOptions::default().encoding(Encoding::Latin1).max_depth(32).max_values(1 << 20);
/// # let _ = o;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PickleOptions {
    pub(crate) encoding: Encoding,
    pub(crate) max_depth: usize,
    pub(crate) max_values: Option<u64>,
    pub(crate) max_bytes: Option<u64>,
}

impl Default for PickleOptions {
    fn default() -> Self {
        PickleOptions {
            encoding: Encoding::Ascii,
            max_depth: 128,
            max_values: None,
            max_bytes: None,
        }
    }
}

impl PickleOptions {
    /// How Python 2 `str` values are read (default [`Encoding::Ascii`]).
    pub fn encoding(mut self, e: Encoding) -> Self {
        self.encoding = e;
        self
    }

    /// The deepest nesting of containers and arrays (default 128).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// The most values the pickle may expand into, a shared reference counted each time it is
    /// reached (default 2^20 plus 4 per byte of pickle: a pickle without sharing holds fewer
    /// values than bytes).
    pub fn max_values(mut self, n: u64) -> Self {
        self.max_values = Some(n);
        self
    }

    /// The most bytes of strings, bytes and array data the pickle may expand into, shared
    /// references counted each time (default 64 MiB plus 4 per byte of pickle).
    pub fn max_bytes(mut self, n: u64) -> Self {
        self.max_bytes = Some(n);
        self
    }
}
