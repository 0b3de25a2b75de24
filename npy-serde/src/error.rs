//! The crate's single error type.
//!
//! An [`Error`] is a boxed [`ErrorKind`] (what went wrong, with expected versus found where that
//! applies) plus a [`Position`] (where: byte offset in the input, record index, field path).
//! Boxing keeps `Result<T, Error>` one pointer wide, as in `csv` and `serde_json`.

use std::fmt;
use std::io;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where in the input an error happened. Every part is optional: a header error has a byte
/// offset but no record; a type mismatch found while deserializing has a record index and a
/// field path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// Byte offset from the start of the `.npy` stream (or member).
    pub byte: Option<u64>,
    /// Index of the record (array element, in logical C order).
    pub record: Option<u64>,
    /// Dotted path of the field inside the record, e.g. `pos.x` or `v[2]`.
    pub field: Option<String>,
}

impl Position {
    /// True if nothing is known about the position.
    pub fn is_empty(&self) -> bool {
        self.byte.is_none() && self.record.is_none() && self.field.is_none()
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        if let Some(r) = self.record {
            write!(f, "record {r}")?;
            sep = ", ";
        }
        if let Some(p) = &self.field {
            write!(f, "{sep}field `{p}`")?;
            sep = ", ";
        }
        if let Some(b) = self.byte {
            write!(f, "{sep}byte {b}")?;
        }
        Ok(())
    }
}

/// What went wrong.
///
/// The enum is `#[non_exhaustive]`: match on the variants you handle and use
/// [`ErrorKind::code`] for a stable machine-readable name.
#[derive(Debug)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An I/O error from the underlying reader or writer.
    Io(io::Error),
    /// The input does not start with `\x93NUMPY`.
    BadMagic {
        /// The first bytes found, escaped.
        found: String,
    },
    /// A format version other than 1.0, 2.0 or 3.0.
    UnsupportedVersion {
        /// Major version byte.
        major: u8,
        /// Minor version byte.
        minor: u8,
    },
    /// The header length field exceeds the configured limit (NumPy's `max_header_size`).
    HeaderTooLarge {
        /// Declared header length.
        len: u64,
        /// Configured limit.
        limit: u64,
    },
    /// The header text is not a valid `.npy` header dictionary.
    InvalidHeader(String),
    /// The `descr` is not a dtype description this crate understands.
    InvalidDescr(String),
    /// A dtype that exists in NumPy but cannot be read or written here (object arrays).
    UnsupportedDType(String),
    /// A v3.0 header that is not valid UTF-8.
    InvalidUtf8,
    /// The input ended before the expected number of bytes.
    UnexpectedEof {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        expected: u64,
        /// Bytes available.
        found: u64,
    },
    /// A configured limit (dimensions, nesting, sizes) was exceeded.
    LimitExceeded {
        /// What is limited.
        what: &'static str,
        /// The limit.
        limit: u64,
        /// The value found.
        found: u64,
    },
    /// A size computation overflowed.
    Overflow(String),
    /// The file's dtype cannot be converted to the requested Rust type.
    TypeMismatch {
        /// What the caller asked for (a Rust type or serde shape).
        expected: String,
        /// The dtype (or shape) in the file.
        found: String,
    },
    /// A value in the data is invalid for its dtype (bool byte not 0/1, invalid UTF-8, bad code point).
    InvalidValue(String),
    /// The value being written does not fit the dtype or shape.
    Write(String),
    /// The data cannot be seen in place as a slice of the Rust type (a typed memory-map view).
    View {
        /// The Rust element type asked for.
        rust: String,
        /// What does not fit: `"type"`, `"dtype"`, `"byte order"`, `"order"` or `"alignment"`.
        what: &'static str,
        /// The details, with what to do instead.
        detail: String,
    },
    /// The file's array has another number of dimensions than the array type asked for
    /// (an `ndarray::Array2` from a 3-D file; feature `ndarray`).
    Dimension {
        /// The number of dimensions asked for.
        expected: usize,
        /// The file's shape, as NumPy prints it: `(2, 3, 4)`.
        shape: String,
    },
    /// An error in a `.npz` (zip) archive.
    Zip(String),
    /// A message from a `Deserialize` or `Serialize` implementation (serde's `custom`).
    Message(String),
    /// A pickle (the data of an object array) this crate's data-only reader refuses or cannot
    /// read: a global it does not turn into data, a call, a malformed opcode stream.
    Pickle(String),
    /// An object store (S3, HTTP) failed or answered wrongly: the URL and what happened.
    Remote {
        /// The object's URL (`s3://bucket/key`, `http://host/path`).
        url: String,
        /// What went wrong (the store's error, a short read, a timeout).
        message: String,
    },
}

/// The messages (written out rather than derived: the `.npy` core builds without proc-macro
/// crates).
impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Io(v) => write!(f, "I/O error: {v}"),
            ErrorKind::BadMagic { found } => write!(f, "not a .npy file: expected magic \\x93NUMPY, found {found}"),
            ErrorKind::UnsupportedVersion { major, minor } => write!(f, "unsupported .npy format version {major}.{minor}: only 1.0, 2.0 and 3.0 are defined"),
            ErrorKind::HeaderTooLarge { len, limit } => write!(f, "header is {len} bytes, more than the limit of {limit} (NumPy's max_header_size); \
         raise it with ReaderBuilder::max_header_size if you trust this file"),
            ErrorKind::InvalidHeader(v) => write!(f, "invalid .npy header: {v}"),
            ErrorKind::InvalidDescr(v) => write!(f, "invalid dtype descr: {v}"),
            ErrorKind::UnsupportedDType(v) => write!(f, "unsupported dtype: {v}"),
            ErrorKind::InvalidUtf8 => f.write_str("header is not valid UTF-8 (required for format version 3.0)"),
            ErrorKind::UnexpectedEof { what, expected, found } => write!(f, "unexpected end of input: needed {expected} bytes for {what}, found {found}"),
            ErrorKind::LimitExceeded { what, limit, found } => write!(f, "{what} is {found}, more than the limit of {limit}"),
            ErrorKind::Overflow(v) => write!(f, "{v} overflows a 64-bit size"),
            ErrorKind::TypeMismatch { expected, found } => write!(f, "cannot read dtype {found} as {expected}"),
            ErrorKind::InvalidValue(v) => write!(f, "invalid value: {v}"),
            ErrorKind::Write(v) => write!(f, "cannot write: {v}"),
            ErrorKind::View { rust, what, detail } => write!(f, "cannot view the data as [{rust}]: the {what} does not fit: {detail}"),
            ErrorKind::Dimension { expected, shape } => write!(f, "expected a {expected}-D array, the file's shape is {shape}"),
            ErrorKind::Zip(v) => write!(f, "npz archive: {v}"),
            ErrorKind::Message(v) => write!(f, "{v}"),
            ErrorKind::Pickle(v) => write!(f, "pickle: {v}"),
            ErrorKind::Remote { url, message } => write!(f, "{url}: {message}"),
        }
    }
}

/// The I/O error underneath, for [`ErrorKind::Io`].
impl std::error::Error for ErrorKind {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl ErrorKind {
    /// A stable, machine-readable name for the kind, e.g. `"invalid_header"`.
    pub fn code(&self) -> &'static str {
        match self {
            ErrorKind::Io(_) => "io",
            ErrorKind::BadMagic { .. } => "bad_magic",
            ErrorKind::UnsupportedVersion { .. } => "unsupported_version",
            ErrorKind::HeaderTooLarge { .. } => "header_too_large",
            ErrorKind::InvalidHeader(_) => "invalid_header",
            ErrorKind::InvalidDescr(_) => "invalid_descr",
            ErrorKind::UnsupportedDType(_) => "unsupported_dtype",
            ErrorKind::InvalidUtf8 => "invalid_utf8",
            ErrorKind::UnexpectedEof { .. } => "unexpected_eof",
            ErrorKind::LimitExceeded { .. } => "limit_exceeded",
            ErrorKind::Overflow(_) => "overflow",
            ErrorKind::TypeMismatch { .. } => "type_mismatch",
            ErrorKind::InvalidValue(_) => "invalid_value",
            ErrorKind::Write(_) => "write",
            ErrorKind::View { .. } => "view",
            ErrorKind::Dimension { .. } => "dimension",
            ErrorKind::Zip(_) => "zip",
            ErrorKind::Message(_) => "message",
            ErrorKind::Pickle(_) => "pickle",
            ErrorKind::Remote { .. } => "remote",
        }
    }
}

/// The error type of every fallible operation in this crate.
///
/// ```
/// let err = npy_serde::header::parse_header(b"\x93NUMPY\x09\x00", &Default::default()).unwrap_err();
/// assert_eq!(err.kind().code(), "unsupported_version");
/// assert!(err.to_string().contains("9.0"));
/// ```
pub struct Error(Box<ErrorImpl>);

struct ErrorImpl {
    kind: ErrorKind,
    pos: Position,
}

impl Error {
    /// An error of this kind with no position.
    pub fn new(kind: ErrorKind) -> Self {
        Error(Box::new(ErrorImpl {
            kind,
            pos: Position::default(),
        }))
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Consumes the error, returning its kind.
    pub fn into_kind(self) -> ErrorKind {
        self.0.kind
    }

    /// Where it went wrong.
    pub fn position(&self) -> &Position {
        &self.0.pos
    }

    /// True if the underlying cause is the input ending early (a truncated file).
    pub fn is_eof(&self) -> bool {
        match &self.0.kind {
            ErrorKind::UnexpectedEof { .. } => true,
            ErrorKind::Io(e) => e.kind() == io::ErrorKind::UnexpectedEof,
            _ => false,
        }
    }

    /// Sets the byte offset if none is set yet (the innermost, most precise offset wins).
    pub fn at_byte(mut self, byte: u64) -> Self {
        self.0.pos.byte.get_or_insert(byte);
        self
    }

    /// Sets the record index if none is set yet.
    pub fn at_record(mut self, record: u64) -> Self {
        self.0.pos.record.get_or_insert(record);
        self
    }

    /// Prepends a component to the field path (called while unwinding out of nested fields).
    pub fn in_field(mut self, name: &str) -> Self {
        self.0.pos.field = Some(match self.0.pos.field.take() {
            None => name.to_string(),
            Some(inner) if inner.starts_with('[') => format!("{name}{inner}"),
            Some(inner) => format!("{name}.{inner}"),
        });
        self
    }

    /// Prepends an index to the field path (`[i]`), for subarray elements.
    pub fn in_index(mut self, index: u64) -> Self {
        self.0.pos.field = Some(match self.0.pos.field.take() {
            None => format!("[{index}]"),
            Some(inner) if inner.starts_with('[') => format!("[{index}]{inner}"),
            Some(inner) => format!("[{index}].{inner}"),
        });
        self
    }

    /// An [`ErrorKind::InvalidHeader`]: the header dict is malformed.
    pub fn header(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidHeader(msg.into()))
    }

    /// An [`ErrorKind::InvalidDescr`]: a `descr` that does not parse.
    pub fn descr(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidDescr(msg.into()))
    }

    /// An [`ErrorKind::UnexpectedEof`]: `what` needed `expected` bytes, `found` were present.
    pub fn eof(what: &'static str, expected: u64, found: u64) -> Self {
        Error::new(ErrorKind::UnexpectedEof {
            what,
            expected,
            found,
        })
    }

    /// An [`ErrorKind::LimitExceeded`]: `what` is `found`, over the limit `limit`.
    pub fn limit(what: &'static str, limit: u64, found: u64) -> Self {
        Error::new(ErrorKind::LimitExceeded { what, limit, found })
    }

    /// An [`ErrorKind::Overflow`]: a size or count of `what` does not fit.
    pub fn overflow(what: impl Into<String>) -> Self {
        Error::new(ErrorKind::Overflow(what.into()))
    }

    /// An [`ErrorKind::Write`]: the data cannot be written as asked.
    pub fn write(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::Write(msg.into()))
    }

    /// An [`ErrorKind::TypeMismatch`]: `expected` versus `found`.
    pub fn mismatch(expected: impl Into<String>, found: impl Into<String>) -> Self {
        Error::new(ErrorKind::TypeMismatch {
            expected: expected.into(),
            found: found.into(),
        })
    }

    /// An [`ErrorKind::Remote`]: an object store failed, or an object is not what it claims, at `url`.
    pub fn remote(url: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Self::new(ErrorKind::Remote {
            url: url.into(),
            message: message.to_string(),
        })
    }

    /// An [`ErrorKind::InvalidValue`]: a value that cannot be represented or is not valid.
    pub fn invalid_value(msg: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidValue(msg.into()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.pos.is_empty() {
            fmt::Display::fmt(&self.0.kind, f)
        } else {
            write!(f, "{} (at {})", self.0.kind, self.0.pos)
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.0.kind)
            .field("position", &self.0.pos)
            .finish()
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    /// An I/O error; one that only carries this crate's error (raised inside a reader this
    /// crate wraps, such as an `.npz` member's CRC check) becomes that error again.
    fn from(e: io::Error) -> Self {
        if !e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
            return Error::new(ErrorKind::Io(e));
        }
        let kind = e.kind();
        match e.into_inner().map(|inner| inner.downcast::<Error>()) {
            Some(Ok(err)) => *err,
            // Not reached (the payload was just checked to be an `Error`).
            Some(Err(other)) => Error::new(ErrorKind::Io(io::Error::new(kind, other))),
            None => Error::new(ErrorKind::Io(io::Error::from(kind))),
        }
    }
}

impl From<ErrorKind> for Error {
    fn from(k: ErrorKind) -> Self {
        Error::new(k)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        match e.into_kind() {
            ErrorKind::Io(e) => e,
            other => io::Error::new(io::ErrorKind::InvalidData, Error::new(other)),
        }
    }
}

impl serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(ErrorKind::Message(msg.to_string()))
    }
}

impl serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(ErrorKind::Message(msg.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_includes_position_and_path() {
        let e = Error::mismatch("u8", "<i4")
            .in_field("b")
            .in_field("pos")
            .at_record(7)
            .at_byte(1234);
        assert_eq!(
            e.to_string(),
            "cannot read dtype <i4 as u8 (at record 7, field `pos.b`, byte 1234)"
        );
        let e = Error::invalid_value("x").in_index(2).in_field("v");
        assert_eq!(e.position().field.as_deref(), Some("v[2]"));
    }

    #[test]
    fn innermost_byte_offset_wins() {
        let e = Error::header("x").at_byte(10).at_byte(0);
        assert_eq!(e.position().byte, Some(10));
    }

    #[test]
    fn error_is_one_pointer() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }

    /// Every kind's message, word for word (they were derived by `thiserror` before).
    #[test]
    fn every_message() {
        use std::error::Error as _;
        let s = |k: ErrorKind| k.to_string();
        let io = io::Error::other("disk");
        assert_eq!(s(ErrorKind::Io(io)), "I/O error: disk");
        let found = "b'PK'".to_string();
        assert_eq!(
            s(ErrorKind::BadMagic { found }),
            "not a .npy file: expected magic \\x93NUMPY, found b'PK'"
        );
        assert_eq!(
            s(ErrorKind::UnsupportedVersion { major: 9, minor: 1 }),
            "unsupported .npy format version 9.1: only 1.0, 2.0 and 3.0 are defined"
        );
        assert_eq!(
            s(ErrorKind::HeaderTooLarge { len: 20, limit: 10 }),
            "header is 20 bytes, more than the limit of 10 (NumPy's max_header_size); raise it \
             with ReaderBuilder::max_header_size if you trust this file"
        );
        let m = || "m".to_string();
        assert_eq!(s(ErrorKind::InvalidHeader(m())), "invalid .npy header: m");
        assert_eq!(s(ErrorKind::InvalidDescr(m())), "invalid dtype descr: m");
        assert_eq!(s(ErrorKind::UnsupportedDType(m())), "unsupported dtype: m");
        assert_eq!(
            s(ErrorKind::InvalidUtf8),
            "header is not valid UTF-8 (required for format version 3.0)"
        );
        let eof = ErrorKind::UnexpectedEof {
            what: "data",
            expected: 8,
            found: 3,
        };
        assert_eq!(
            s(eof),
            "unexpected end of input: needed 8 bytes for data, found 3"
        );
        let limit = ErrorKind::LimitExceeded {
            what: "ndim",
            limit: 64,
            found: 65,
        };
        assert_eq!(s(limit), "ndim is 65, more than the limit of 64");
        assert_eq!(s(ErrorKind::Overflow(m())), "m overflows a 64-bit size");
        let mismatch = ErrorKind::TypeMismatch {
            expected: "u8".into(),
            found: "<f4".into(),
        };
        assert_eq!(s(mismatch), "cannot read dtype <f4 as u8");
        assert_eq!(s(ErrorKind::InvalidValue(m())), "invalid value: m");
        assert_eq!(s(ErrorKind::Write(m())), "cannot write: m");
        let view = ErrorKind::View {
            rust: "u16".into(),
            what: "dtype",
            detail: "d".into(),
        };
        assert_eq!(
            s(view),
            "cannot view the data as [u16]: the dtype does not fit: d"
        );
        let dim = ErrorKind::Dimension {
            expected: 2,
            shape: "(2, 3, 4)".into(),
        };
        assert_eq!(
            s(dim),
            "expected a 2-D array, the file's shape is (2, 3, 4)"
        );
        assert_eq!(s(ErrorKind::Zip(m())), "npz archive: m");
        assert_eq!(s(ErrorKind::Message(m())), "m");
        // The I/O error is the source, of the kind and of the error.
        let io = || ErrorKind::Io(io::Error::other("disk"));
        assert_eq!(io().source().unwrap().to_string(), "disk");
        assert_eq!(Error::new(io()).source().unwrap().to_string(), "disk");
        assert!(ErrorKind::Message(m()).source().is_none());
    }
}
