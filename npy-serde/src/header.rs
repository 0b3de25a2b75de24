//! The `.npy` header: magic, version, and the Python dict literal
//! `{'descr': ..., 'fortran_order': ..., 'shape': ...}`.
//!
//! Reading checks every declared length against [`Limits`] (and against the bytes available)
//! before reading or allocating anything. Writing reproduces `numpy.save`'s bytes exactly:
//! sorted keys, growth-axis padding and 64-byte alignment.
//!
//! ```
//! use npy_serde::header::{parse_header, Header, Limits, Version};
//! use npy_serde::dtype::DType;
//!
//! let h = Header::new("<f8".parse::<DType>()?, vec![3]);
//! let bytes = h.to_bytes()?;
//! assert_eq!(bytes.len(), 128);
//! assert_eq!(&bytes[..10], b"\x93NUMPY\x01\x00v\x00");
//!
//! let parsed = parse_header(&bytes, &Limits::default())?;
//! assert_eq!(parsed.header, h);
//! assert_eq!(parsed.version, Version::V1_0);
//! assert_eq!(parsed.data_offset, 128);
//! # Ok::<(), npy_serde::Error>(())
//! ```

use std::io::Read;

use crate::dtype::{self, DType};
use crate::error::{Error, ErrorKind, Result};
pub use crate::pyliteral::Literal;
use crate::pyliteral::{self, LiteralOptions, Py, PyKind};

/// The magic string every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// NumPy's default `max_header_size`.
pub const DEFAULT_MAX_HEADER_SIZE: u64 = 10_000;
/// NumPy aligns the start of the data to this many bytes.
pub const ARRAY_ALIGN: usize = 64;
/// NumPy reserves room for this many digits in the growth axis.
pub const GROWTH_AXIS_MAX_DIGITS: usize = 21;

/// A `.npy` format version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    /// 1.0: latin-1 header, 2-byte length.
    V1_0,
    /// 2.0: latin-1 header, 4-byte length.
    V2_0,
    /// 3.0: UTF-8 header, 4-byte length.
    V3_0,
}

impl Version {
    /// `(major, minor)`.
    pub fn as_tuple(self) -> (u8, u8) {
        match self {
            Version::V1_0 => (1, 0),
            Version::V2_0 => (2, 0),
            Version::V3_0 => (3, 0),
        }
    }

    /// The version for `(major, minor)`, or an `UnsupportedVersion` error.
    pub fn from_tuple(major: u8, minor: u8) -> Result<Version> {
        match (major, minor) {
            (1, 0) => Ok(Version::V1_0),
            (2, 0) => Ok(Version::V2_0),
            (3, 0) => Ok(Version::V3_0),
            _ => Err(Error::new(ErrorKind::UnsupportedVersion { major, minor }).at_byte(6)),
        }
    }

    /// Size of the header-length field: 2 bytes for 1.0, 4 otherwise.
    pub fn length_field_size(self) -> usize {
        if self == Version::V1_0 {
            2
        } else {
            4
        }
    }

    /// Bytes before the header text: magic, version, length field.
    pub fn prefix_len(self) -> usize {
        8 + self.length_field_size()
    }
}

/// Limits applied while parsing a header. Defaults follow NumPy.
///
/// ```
/// let limits = npy_serde::header::Limits { max_header_size: 100_000, ..Default::default() };
/// # let _ = limits;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted header length field, in bytes (NumPy's `max_header_size`, 10000).
    pub max_header_size: u64,
    /// Largest nesting of containers in the header literal (dicts, lists, tuples); 128.
    pub max_depth: usize,
    /// Largest number of dimensions of the array shape and of each subarray (NumPy's 64).
    pub max_dims: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_header_size: DEFAULT_MAX_HEADER_SIZE,
            max_depth: dtype::DEFAULT_MAX_DEPTH,
            max_dims: dtype::DEFAULT_MAX_DIMS,
        }
    }
}

/// What a `.npy` header says about the array.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// The element type.
    pub dtype: DType,
    /// The array's shape; empty for a 0-d array.
    pub shape: Vec<u64>,
    /// True if the data is in Fortran (column-major) order.
    pub fortran_order: bool,
}

/// A parsed header and where the data starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedHeader {
    /// The header's content.
    pub header: Header,
    /// The format version of the file.
    pub version: Version,
    /// Offset of the first data byte from the start of the `.npy` stream.
    pub data_offset: u64,
}

impl Header {
    /// A C-order header.
    pub fn new(dtype: DType, shape: Vec<u64>) -> Header {
        Header {
            dtype,
            shape,
            fortran_order: false,
        }
    }

    /// Number of elements: the product of the shape (1 for 0-d), checked against overflow of
    /// a signed 64-bit size (NumPy's `intp`).
    pub fn count(&self) -> Result<u64> {
        self.shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .filter(|n| *n <= i64::MAX as u64)
            .ok_or_else(|| {
                Error::overflow(format!(
                    "the element count of shape {}",
                    pyliteral::repr_shape(&self.shape)
                ))
            })
    }

    /// Number of data bytes: count × itemsize, checked.
    pub fn data_len(&self) -> Result<u64> {
        self.count()?
            .checked_mul(self.dtype.itemsize() as u64)
            .filter(|n| *n <= i64::MAX as u64)
            .ok_or_else(|| {
                Error::overflow(format!(
                    "the byte count of shape {} with itemsize {}",
                    pyliteral::repr_shape(&self.shape),
                    self.dtype.itemsize()
                ))
            })
    }

    /// How many values that occupy no data bytes a nested decoding of the whole array makes:
    /// elements of a zero-size dtype (empty records, `V0`, `S0`, `U0`), zero-size fields and
    /// subarrays inside larger elements, and the axis lists above a zero-length axis, counting
    /// each value at every level of nesting (a `List` or `Record` and what it holds).
    ///
    /// Everything else a reader produces is paid for by data bytes that must be present; these
    /// values are not, so a tiny file can declare billions of them (shape `(10**12, 0)`, or
    /// `[('a', [('b', [], (4000,))], (4000,))]`). Readers bound this count by their
    /// `max_empty_items` before decoding anything. Saturates at `u64::MAX`.
    ///
    /// ```
    /// use npy_serde::{DType, Header};
    /// let h = Header::new("[]".parse::<DType>()?, vec![3]);
    /// assert_eq!(h.empty_value_count(), 3 + 1); // 3 empty records and the list holding them
    /// let h = Header::new("<f8".parse::<DType>()?, vec![1_000_000_000_000, 0]);
    /// assert_eq!(h.empty_value_count(), 1 + 1_000_000_000_000);
    /// let h = Header::new("<f8".parse::<DType>()?, vec![1_000_000]);
    /// assert_eq!(h.empty_value_count(), 0); // a million floats, all paid for by data
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn empty_value_count(&self) -> u64 {
        let count = self.count().unwrap_or(u64::MAX);
        if self.dtype.itemsize() == 0 || count == 0 {
            // Every list and element above the first zero-length axis (or every one, for a
            // zero-size dtype) holds no data.
            let mut total = 0u64;
            let mut level = 1u64;
            for &d in &self.shape {
                total = total.saturating_add(level);
                if d == 0 {
                    return total;
                }
                level = level.saturating_mul(d);
            }
            return total.saturating_add(level.saturating_mul(all_values(&self.dtype)));
        }
        count.saturating_mul(empty_values(&self.dtype))
    }

    /// The header dict text before padding, as `numpy.lib.format` builds it.
    fn dict_text(&self) -> Result<String> {
        if let DType::Array(..) = self.dtype {
            return Err(Error::write(
                "an array's dtype cannot be a subarray: move the subarray shape into the array's shape",
            ));
        }
        let mut s = format!(
            "{{'descr': {}, 'fortran_order': {}, 'shape': {}, }}",
            self.dtype.descr(),
            if self.fortran_order { "True" } else { "False" },
            pyliteral::repr_shape(&self.shape)
        );
        let growth = if self.fortran_order {
            self.shape.last()
        } else {
            self.shape.first()
        };
        if let Some(d) = growth {
            let digits = d.to_string().len();
            s.extend(std::iter::repeat_n(
                ' ',
                GROWTH_AXIS_MAX_DIGITS.saturating_sub(digits),
            ));
        }
        Ok(s)
    }

    /// The full header bytes (magic to newline) as `numpy.save` writes them, in the smallest
    /// version that holds them (1.0, else 2.0 if latin-1, else 3.0).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.to_bytes_with_version(None)
    }

    /// Like [`to_bytes`](Self::to_bytes), with an optional forced version. A forced version
    /// that cannot hold the header (too long for 1.0, non-latin-1 text for 1.0/2.0) is an error.
    pub fn to_bytes_with_version(&self, version: Option<Version>) -> Result<Vec<u8>> {
        let text = self.dict_text()?;
        let latin1 = text.chars().all(|c| (c as u32) <= 0xff);
        let candidates: &[Version] = match version {
            Some(v) => &[v][..],
            None if latin1 => &[Version::V1_0, Version::V2_0][..],
            None => &[Version::V3_0][..],
        };
        let mut last_err = None;
        for &v in candidates {
            match wrap(&text, v) {
                Ok(b) => return Ok(b),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.expect("at least one candidate version"))
    }
}

/// Values one element of `dtype` decodes to, containers included (saturating).
fn all_values(dtype: &DType) -> u64 {
    match dtype {
        DType::Plain(_) => 1,
        DType::Record(r) => r
            .fields()
            .iter()
            .fold(1u64, |acc, f| acc.saturating_add(all_values(&f.dtype))),
        DType::Array(base, shape) => {
            let mut total = 0u64;
            let mut level = 1u64;
            for &d in shape {
                total = total.saturating_add(level);
                level = level.saturating_mul(d);
            }
            total.saturating_add(level.saturating_mul(all_values(base)))
        }
    }
}

/// Values of one element of `dtype` that occupy no bytes (saturating).
fn empty_values(dtype: &DType) -> u64 {
    if dtype.itemsize() == 0 {
        return all_values(dtype);
    }
    match dtype {
        DType::Plain(_) => 0,
        DType::Record(r) => r
            .fields()
            .iter()
            .fold(0u64, |acc, f| acc.saturating_add(empty_values(&f.dtype))),
        DType::Array(base, shape) => shape
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(d))
            .saturating_mul(empty_values(base)),
    }
}

fn wrap(text: &str, version: Version) -> Result<Vec<u8>> {
    let body: Vec<u8> = if version == Version::V3_0 {
        text.as_bytes().to_vec()
    } else {
        let mut b = Vec::with_capacity(text.len());
        for c in text.chars() {
            let u = c as u32;
            if u > 0xff {
                return Err(Error::write(format!(
                    "the header contains {c:?}, which is not latin-1: format version {}.0 cannot hold it, use 3.0",
                    version.as_tuple().0
                )));
            }
            b.push(u as u8);
        }
        b
    };
    let prefix = version.prefix_len();
    let hlen = body.len() + 1;
    let padlen = ARRAY_ALIGN - ((prefix + hlen) % ARRAY_ALIGN);
    let total = hlen + padlen;
    if version == Version::V1_0 && total > u16::MAX as usize {
        return Err(Error::write(format!(
            "the header needs {total} bytes, more than format version 1.0 can hold (65535): use 2.0"
        )));
    }
    if total > u32::MAX as usize {
        return Err(Error::write("the header is larger than 4 GiB"));
    }
    let mut out = Vec::with_capacity(prefix + total);
    out.extend_from_slice(MAGIC);
    let (maj, min) = version.as_tuple();
    out.push(maj);
    out.push(min);
    if version == Version::V1_0 {
        out.extend_from_slice(&(total as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(total as u32).to_le_bytes());
    }
    out.extend_from_slice(&body);
    out.resize(out.len() + padlen, b' ');
    out.push(b'\n');
    Ok(out)
}

/// Parses the header at the start of `bytes` (the data may follow).
pub fn parse_header(bytes: &[u8], limits: &Limits) -> Result<ParsedHeader> {
    let mut r = bytes;
    read_header(&mut r, limits)
}

/// Reads exactly the header from `reader`, leaving it at the first data byte.
///
/// Reads the 8-byte magic and version, the length field, checks the length against
/// `limits.max_header_size`, and only then reads (and allocates) the header text.
pub fn read_header<R: Read + ?Sized>(reader: &mut R, limits: &Limits) -> Result<ParsedHeader> {
    let raw = read_header_text(reader, limits)?;
    let header = parse_dict(&raw.text, raw.version, limits, raw.text_start)?;
    Ok(ParsedHeader {
        header,
        version: raw.version,
        data_offset: raw.text_start + raw.len,
    })
}

/// What a header says its file holds: elements of a dtype this crate models, whose data is
/// their bytes, or Python objects, whose data is one pickle. Every door reads the header once
/// and goes on by this kind; [`parse_header`] and [`read_header`] refuse the second.
///
/// ```
/// use npy_serde::header::{parse_contents, Contents, Limits};
/// let mut file = b"\x93NUMPY\x01\x00\x3c\x00".to_vec();
/// file.extend_from_slice(b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }      \n");
/// let contents = parse_contents(&file, &Limits::default())?;
/// assert!(contents.is_object());
/// let Contents::Objects(h) = contents else { unreachable!() };
/// assert_eq!((h.shape.as_slice(), h.data_offset), (&[2u64][..], 70));
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Contents {
    /// A dtype of the dtype model ([`DType`]): the data is the elements' bytes.
    Typed(ParsedHeader),
    /// Python objects: dtype `O`, a record with an `O` field, NumPy 2's `StringDType` (which
    /// `np.save` writes as an object array). The data is one pickle, read as data by
    /// [`crate::pickle`] when `allow_pickle_data` is set.
    Objects(ObjectHeader),
}

/// The header of an object array (see [`Contents::Objects`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ObjectHeader {
    /// The `descr` as written (`'|O'`, or a record's list with an `O` field).
    pub descr: Literal,
    /// The shape.
    pub shape: Vec<u64>,
    /// True for Fortran order.
    pub fortran_order: bool,
    /// The format version.
    pub version: Version,
    /// Offset of the first data byte (the pickle) from the start of the `.npy` stream.
    pub data_offset: u64,
    /// Where the descr stands (for the refusal's position).
    descr_at: u64,
}

impl Contents {
    /// True for an object array.
    pub fn is_object(&self) -> bool {
        matches!(self, Contents::Objects(_))
    }

    /// The header of an array of a modelled dtype; an object array is refused with the error
    /// [`parse_header`] gives, which names `allow_pickle_data`.
    pub fn typed(self) -> Result<ParsedHeader> {
        match self {
            Contents::Typed(h) => Ok(h),
            Contents::Objects(h) => Err(h.refusal()),
        }
    }

    /// The shape the header declares.
    pub fn shape(&self) -> &[u64] {
        match self {
            Contents::Typed(h) => &h.header.shape,
            Contents::Objects(h) => &h.shape,
        }
    }

    /// Offset of the first data byte from the start of the `.npy` stream.
    pub fn data_offset(&self) -> u64 {
        match self {
            Contents::Typed(h) => h.data_offset,
            Contents::Objects(h) => h.data_offset,
        }
    }
}

impl ObjectHeader {
    /// The error of a door that reads no objects, or of any door without
    /// `allow_pickle_data`: it names the option.
    pub fn refusal(&self) -> Error {
        Error::new(ErrorKind::UnsupportedDType(dtype::OBJECT_REFUSAL.into())).at_byte(self.descr_at)
    }
}

/// Whether a `descr` names Python objects anywhere: `'O'`, `'|O'`, `'O8'` (`'O4'` on 32-bit
/// builds), a `StringDType(..)` string, or a record or subarray with one of them inside. The one
/// rule every door, the tool and SQL use.
pub fn is_object_descr(descr: &Literal) -> bool {
    match descr {
        Literal::Str(s) => {
            let body = s
                .trim_matches('\'')
                .trim_start_matches(['<', '>', '|', '=']);
            body == "O" || body == "O8" || body == "O4" || body.starts_with("StringDType")
        }
        Literal::Tuple(v) | Literal::List(v) => v.iter().any(is_object_descr),
        _ => false,
    }
}

/// Reads exactly the header from `reader`, leaving it at the first data byte, and says what the
/// file holds: [`Contents::Typed`] as [`read_header`] reads it, or [`Contents::Objects`]. The
/// limits apply alike (the header size before anything is allocated, nesting, dimensions).
pub fn read_contents<R: Read + ?Sized>(reader: &mut R, limits: &Limits) -> Result<Contents> {
    let raw = read_header_text(reader, limits)?;
    let data_offset = raw.text_start + raw.len;
    Ok(
        match parse_dict_any(&raw.text, raw.version, limits, raw.text_start, true)? {
            Dict::Typed(header) => Contents::Typed(ParsedHeader {
                header,
                version: raw.version,
                data_offset,
            }),
            Dict::Objects {
                descr,
                descr_at,
                shape,
                fortran_order,
            } => Contents::Objects(ObjectHeader {
                descr,
                descr_at,
                shape,
                fortran_order,
                version: raw.version,
                data_offset,
            }),
        },
    )
}

/// [`read_contents`] of the header at the start of `bytes` (the data may follow).
pub fn parse_contents(bytes: &[u8], limits: &Limits) -> Result<Contents> {
    let mut r = bytes;
    read_contents(&mut r, limits)
}

/// The header dict exactly as written, as a Python literal tree, for tools that show what a
/// file says rather than the normalised [`Header`] (`'i4'` stays `'i4'`, `'|a5'` stays `'|a5'`).
/// The header is validated first, exactly as [`parse_header`] does.
///
/// ```
/// use npy_serde::header::{header_literal, Limits, Literal};
/// let mut file = b"\x93NUMPY\x01\x00\x3c\x00".to_vec();
/// file.extend_from_slice(b"{'descr': 'i4', 'fortran_order': False, 'shape': (2,), }      \n");
/// let lit = header_literal(&file, &Limits::default())?;
/// assert_eq!(lit.get("descr"), Some(&Literal::Str("i4".into())));
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn header_literal(bytes: &[u8], limits: &Limits) -> Result<Literal> {
    let mut r = bytes;
    let raw = read_header_text(&mut r, limits)?;
    parse_dict(&raw.text, raw.version, limits, raw.text_start)?;
    let opts = LiteralOptions {
        max_depth: limits.max_depth,
        allow_long_suffix: raw.version != Version::V3_0,
    };
    pyliteral::parse_literal(&raw.text, opts, raw.text_start)?.to_literal(&raw.text, raw.text_start)
}

/// The header dict as written, *without* checking it against the dtype model: for tools that
/// show the header of an array this crate cannot read, such as an object array (`'|O'`, whose
/// data is pickled Python objects). The magic string, version, length (against
/// `limits.max_header_size`) and literal syntax are checked as in [`read_header`]; the keys and
/// values are not. Returns the dict, the version and the data offset.
///
/// ```
/// use npy_serde::header::{header_literal_unchecked, Limits, Literal};
/// let mut file = b"\x93NUMPY\x01\x00\x3c\x00".to_vec();
/// file.extend_from_slice(b"{'descr': '|O', 'fortran_order': False, 'shape': (2,), }      \n");
/// assert!(npy_serde::header::parse_header(&file, &Limits::default()).is_err());
/// let (lit, _, offset) = header_literal_unchecked(&file, &Limits::default())?;
/// assert_eq!(lit.get("descr"), Some(&Literal::Str("|O".into())));
/// assert_eq!(offset, 70);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn header_literal_unchecked(bytes: &[u8], limits: &Limits) -> Result<(Literal, Version, u64)> {
    let mut r = bytes;
    let raw = read_header_text(&mut r, limits)?;
    let opts = LiteralOptions {
        max_depth: limits.max_depth,
        allow_long_suffix: raw.version != Version::V3_0,
    };
    let lit = pyliteral::parse_literal(&raw.text, opts, raw.text_start)?
        .to_literal(&raw.text, raw.text_start)?;
    Ok((lit, raw.version, raw.text_start + raw.len))
}

/// The decoded header text and where it stands.
struct RawText {
    version: Version,
    text: String,
    text_start: u64,
    len: u64,
}

fn read_header_text<R: Read + ?Sized>(reader: &mut R, limits: &Limits) -> Result<RawText> {
    let mut pre = [0u8; 8];
    let n = read_full(reader, &mut pre)?;
    if n < 6 || &pre[..6] != MAGIC {
        if n < 6 && pre[..n] == MAGIC[..n] {
            return Err(Error::eof("the magic string", 6, n as u64).at_byte(0));
        }
        return Err(Error::new(ErrorKind::BadMagic {
            found: escape_bytes(&pre[..n]),
        })
        .at_byte(0));
    }
    if n < 8 {
        return Err(Error::eof("the format version", 8, n as u64).at_byte(n as u64));
    }
    let version = Version::from_tuple(pre[6], pre[7])?;
    let lf = version.length_field_size();
    let mut lenbuf = [0u8; 4];
    let got = read_full(reader, &mut lenbuf[..lf])?;
    if got < lf {
        return Err(Error::eof("the header length", lf as u64, got as u64).at_byte(8));
    }
    let hlen = if lf == 2 {
        u16::from_le_bytes([lenbuf[0], lenbuf[1]]) as u64
    } else {
        u32::from_le_bytes(lenbuf) as u64
    };
    if hlen > limits.max_header_size {
        return Err(Error::new(ErrorKind::HeaderTooLarge {
            len: hlen,
            limit: limits.max_header_size,
        })
        .at_byte(8));
    }
    let text_start = version.prefix_len() as u64;
    // hlen <= max_header_size, so this allocation is bounded by the caller's limit.
    let mut raw = Vec::new();
    let got = reader.take(hlen).read_to_end(&mut raw)?;
    if (got as u64) < hlen {
        return Err(Error::eof("the header", hlen, got as u64).at_byte(text_start));
    }
    let text: String = match version {
        Version::V3_0 => String::from_utf8(raw).map_err(|e| {
            Error::new(ErrorKind::InvalidUtf8)
                .at_byte(text_start + e.utf8_error().valid_up_to() as u64)
        })?,
        _ => raw.iter().map(|&b| b as char).collect(),
    };
    Ok(RawText {
        version,
        text,
        text_start,
        len: hlen,
    })
}

/// Like `read_exact` but returns how many bytes were read before EOF.
fn read_full<R: Read + ?Sized>(r: &mut R, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(n)
}

fn escape_bytes(b: &[u8]) -> String {
    if b.is_empty() {
        return "an empty input".into();
    }
    let mut s = String::from("b\"");
    for &c in b {
        s.extend(std::ascii::escape_default(c).map(char::from));
    }
    s.push('"');
    s
}

fn parse_dict(text: &str, version: Version, limits: &Limits, base: u64) -> Result<Header> {
    match parse_dict_any(text, version, limits, base, false)? {
        Dict::Typed(h) => Ok(h),
        Dict::Objects { .. } => unreachable!("objects are only told apart when asked"),
    }
}

/// A header dict: a dtype this crate models, or (when told apart) Python objects.
enum Dict {
    Typed(Header),
    Objects {
        descr: Literal,
        descr_at: u64,
        shape: Vec<u64>,
        fortran_order: bool,
    },
}

/// The header dict at `text`, checked: the keys, the shape and the order as for any array;
/// with `objects`, a descr that names Python objects ([`is_object_descr`]) gives
/// [`Dict::Objects`], without, it is refused by the dtype parser (naming the option that reads
/// it).
fn parse_dict_any(
    text: &str,
    version: Version,
    limits: &Limits,
    base: u64,
    objects: bool,
) -> Result<Dict> {
    let opts = LiteralOptions {
        max_depth: limits.max_depth,
        allow_long_suffix: version != Version::V3_0,
    };
    let py = pyliteral::parse_literal(text, opts, base)?;
    let at = |p: &Py| base + p.start as u64;
    let PyKind::Dict(pairs) = &py.kind else {
        return Err(Error::header(format!(
            "the header must be a dict, found {} {}",
            py.type_name(),
            py.snippet(text)
        ))
        .at_byte(at(&py)));
    };
    let (mut descr, mut order, mut shape) = (None, None, None);
    // Duplicate keys: the last one wins, as in Python's dict literal (and so in NumPy).
    for (k, v) in pairs {
        let PyKind::Str(key) = &k.kind else {
            return Err(Error::header(format!(
                "header keys must be strings, found {}",
                k.snippet(text)
            ))
            .at_byte(at(k)));
        };
        match key.as_str() {
            "descr" => descr = Some(v),
            "fortran_order" => order = Some(v),
            "shape" => shape = Some(v),
            other => {
                return Err(Error::header(format!(
                    "unexpected key {}: the header must have exactly the keys 'descr', 'fortran_order' and 'shape'",
                    pyliteral::repr_str(other)
                ))
                .at_byte(at(k)))
            }
        }
    }
    let missing = |k: &str| {
        Error::header(format!(
            "missing key '{k}': the header must have exactly the keys 'descr', 'fortran_order' and 'shape'"
        ))
        .at_byte(at(&py))
    };
    let descr = descr.ok_or_else(|| missing("descr"))?;
    let order = order.ok_or_else(|| missing("fortran_order"))?;
    let shape_py = shape.ok_or_else(|| missing("shape"))?;

    let bad_shape = || {
        Error::header(format!(
            "'shape' must be a tuple of non-negative integers, found {}",
            shape_py.snippet(text)
        ))
        .at_byte(at(shape_py))
    };
    let PyKind::Tuple(dims) = &shape_py.kind else {
        return Err(bad_shape());
    };
    if dims.len() > limits.max_dims {
        return Err(Error::limit(
            "the number of dimensions",
            limits.max_dims as u64,
            dims.len() as u64,
        )
        .at_byte(at(shape_py)));
    }
    let mut shape = Vec::with_capacity(dims.len());
    for d in dims {
        match d.kind {
            PyKind::Int(Some(v)) if v >= 0 => match u64::try_from(v) {
                Ok(v) => shape.push(v),
                Err(_) => {
                    return Err(Error::overflow(format!("dimension {}", d.snippet(text))).at_byte(at(d)))
                }
            },
            PyKind::Int(None) => {
                return Err(Error::overflow(format!("dimension {}", d.snippet(text))).at_byte(at(d)))
            }
            PyKind::Int(Some(_)) => {
                return Err(Error::header(format!(
                    "'shape' must be a tuple of non-negative integers, found negative dimension {} in {}",
                    d.snippet(text),
                    shape_py.snippet(text)
                ))
                .at_byte(at(d)))
            }
            _ => return Err(bad_shape()),
        }
    }
    let fortran_order = match order.kind {
        PyKind::Bool(b) => b,
        _ => {
            return Err(Error::header(format!(
                "'fortran_order' must be True or False, found {}",
                order.snippet(text)
            ))
            .at_byte(at(order)))
        }
    };
    let dtype = match dtype::from_py(descr, text, base, limits.max_dims) {
        // Objects exactly when the dtype model refuses the descr for its object type first: a
        // descr with another fault before it fails as the typed doors fail on it, and the
        // refusal stands where theirs would (an object field's own descr).
        Err(e) if objects && dtype::is_object_refusal(&e) => {
            // The descr as written; one the literal tree cannot hold (an integer past 64 bits
            // after the object field) is refused as the typed doors refuse it.
            let lit = match descr.to_literal(text, base) {
                Ok(lit) if is_object_descr(&lit) => lit,
                _ => return Err(e),
            };
            count_of(&shape).map_err(|e| e.at_byte(at(shape_py)))?;
            return Ok(Dict::Objects {
                descr: lit,
                descr_at: e.position().byte.unwrap_or(at(descr)),
                shape,
                fortran_order,
            });
        }
        other => other?,
    };
    let header = Header {
        dtype,
        shape,
        fortran_order,
    };
    header.data_len().map_err(|e| e.at_byte(at(shape_py)))?;
    Ok(Dict::Typed(header))
}

/// The element count of a shape, checked.
pub(crate) fn count_of(shape: &[u64]) -> Result<u64> {
    shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Error::overflow("the element count"))
}

#[cfg(test)]
mod tests;
