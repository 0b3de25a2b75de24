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

impl Encoding {
    /// The name [`FromStr`](std::str::FromStr) reads: `ascii`, `latin1` or `bytes` (NumPy's
    /// `encoding=` values).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Ascii => "ascii",
            Encoding::Latin1 => "latin1",
            Encoding::Bytes => "bytes",
        }
    }
}

/// `ascii`, `latin1` (or `latin-1`) or `bytes`, in any case, as `np.load(encoding=...)` takes
/// them.
///
/// ```
/// use npy_serde::pickle::Encoding;
/// assert_eq!("latin1".parse::<Encoding>(), Ok(Encoding::Latin1));
/// assert_eq!("ASCII".parse::<Encoding>(), Ok(Encoding::Ascii));
/// assert!("utf8".parse::<Encoding>().unwrap_err().contains("latin1"));
/// ```
impl std::str::FromStr for Encoding {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "ascii" => Ok(Encoding::Ascii),
            "latin1" | "latin-1" => Ok(Encoding::Latin1),
            "bytes" => Ok(Encoding::Bytes),
            _ => Err(format!(
                "unknown encoding {s:?}: the encodings of Python 2 str values are ascii (the \
                 default), latin1 and bytes"
            )),
        }
    }
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

    /// The encoding set with [`encoding`](Self::encoding).
    pub fn get_encoding(&self) -> Encoding {
        self.encoding
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
