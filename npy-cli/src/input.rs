//! Opening inputs: `.npy` files, `.npz` archives and `ARCHIVE:KEY` members; reading headers
//! together with their raw bytes; handing out elements in logical C order or storage order,
//! streaming (constant memory) whenever the layout allows.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use npy_serde::header::read_header;
use npy_serde::npz::NpzMember;
use npy_serde::{DType, Header, Limits, NpzArchive, NpzReaderBuilder, ParsedHeader};

use crate::{CliResult, Failure, Global};

/// Zero-byte items (an empty record, `V0`) allowed in one subarray when decoding a value:
/// the library's default.
pub const MAX_EMPTY_ITEMS: u64 = 1 << 24;

/// An archive opened from a file.
pub type Archive = NpzArchive<BufReader<File>>;
/// A member of such an archive being read.
pub type Member<'a> = NpzMember<'a, BufReader<File>>;

/// A resolved command-line input.
#[derive(Debug)]
pub struct Spec {
    /// The file on disk.
    pub path: PathBuf,
    /// The member named with `ARCHIVE:KEY` or `--member`.
    pub member: Option<String>,
    /// How the input is named in messages: the path, or `ARCHIVE:KEY`.
    pub display: String,
}

/// Resolves `FILE` or `ARCHIVE:KEY` plus an optional `--member`.
pub fn resolve(spec: &str, member: Option<&str>) -> CliResult<Spec> {
    let as_is = Path::new(spec);
    let (path, from_spec) = if as_is.exists() {
        (as_is.to_path_buf(), None)
    } else {
        // ARCHIVE:KEY; the key may itself contain ':', the archive path is the shortest
        // prefix that is an existing file.
        let split = spec
            .match_indices(':')
            .map(|(i, _)| i)
            .find(|&i| i > 0 && Path::new(&spec[..i]).is_file());
        match split {
            Some(i) => (PathBuf::from(&spec[..i]), Some(spec[i + 1..].to_string())),
            None => {
                return Err(Failure::file(spec, "no such file or directory"));
            }
        }
    };
    let member = match (from_spec, member) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(format!(
                "{spec}: give the member either as ARCHIVE:KEY or with --member, not both"
            )))
        }
        (Some(m), None) => Some(m),
        (None, m) => m.map(str::to_string),
    };
    let display = match &member {
        Some(m) if path.as_os_str() != spec => format!("{}:{m}", path.display()),
        Some(m) => format!("{spec}:{m}"),
        None => spec.to_string(),
    };
    Ok(Spec {
        path,
        member,
        display,
    })
}

/// True if the file starts like a zip archive (local file header, or the end-of-directory
/// record of an empty archive).
///
/// Only regular files are looked at: reading the start of a pipe (`npy cat <(...)`) would
/// consume it, and an archive needs a seekable file anyway.
pub fn is_zip(path: &Path) -> io::Result<bool> {
    let mut f = File::open(path)?;
    if !f.metadata()?.is_file() {
        return Ok(false);
    }
    let mut magic = [0u8; 4];
    let mut n = 0;
    while n < 4 {
        match f.read(&mut magic[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n == 4 && (magic == *b"PK\x03\x04" || magic == *b"PK\x05\x06"))
}

/// The header limits for `--max-header-size`.
pub fn limits(g: &Global) -> Limits {
    Limits {
        max_header_size: g.max_header_size,
        ..Limits::default()
    }
}

/// A header error as a failure; a header over the size limit names the option that raises it.
pub fn header_failure(display: &str, e: npy_serde::Error) -> Failure {
    match e.kind() {
        npy_serde::ErrorKind::HeaderTooLarge { len, limit } => Failure::file(
            display,
            format!(
                "the header is {len} bytes, more than the limit of {limit} (NumPy's \
                 max_header_size); raise it with --max-header-size if you trust this file"
            ),
        ),
        _ => Failure::file(display, e),
    }
}

/// Opens an archive; members are read in a streaming way, so the library's per-member size
/// limit (which guards collecting reads) is lifted.
pub fn open_archive(g: &Global, path: &Path, display: &str) -> CliResult<Archive> {
    NpzReaderBuilder::new()
        .max_header_size(g.max_header_size)
        .max_member_size(u64::MAX)
        .open(path)
        .map_err(|e| Failure::file(display, e))
}

/// A `.npy` header with its raw bytes (magic to newline).
#[derive(Clone, Debug)]
pub struct RawHeader {
    /// The parsed header.
    pub parsed: ParsedHeader,
    /// The bytes it was parsed from.
    pub bytes: Vec<u8>,
}

impl RawHeader {
    /// The header.
    pub fn header(&self) -> &Header {
        &self.parsed.header
    }

    /// The dtype.
    pub fn dtype(&self) -> &DType {
        &self.parsed.header.dtype
    }

    /// Number of elements (checked when the header was parsed).
    pub fn count(&self) -> u64 {
        self.parsed.header.count().unwrap_or(0)
    }

    /// Number of data bytes (checked when the header was parsed).
    pub fn data_len(&self) -> u64 {
        self.parsed.header.data_len().unwrap_or(0)
    }
}

/// Copies what is read through it.
struct Tee<'a, R: ?Sized> {
    inner: &'a mut R,
    seen: Vec<u8>,
}

impl<R: Read + ?Sized> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// Reads a header from `r`, keeping its bytes; `r` is left at the first data byte.
pub fn read_raw_header<R: Read + ?Sized>(
    r: &mut R,
    limits: &Limits,
) -> npy_serde::Result<RawHeader> {
    let mut tee = Tee {
        inner: r,
        seen: Vec::new(),
    };
    let parsed = read_header(&mut tee, limits)?;
    Ok(RawHeader {
        parsed,
        bytes: tee.seen,
    })
}

/// An opened `.npy` file, positioned at its first data byte.
pub struct NpyFile {
    /// The header.
    pub header: RawHeader,
    /// The file, buffered.
    pub reader: BufReader<File>,
    /// The file's length, if it is a regular file.
    pub file_len: Option<u64>,
}

impl NpyFile {
    /// Opens `path` and reads its header.
    pub fn open(g: &Global, path: &Path, display: &str) -> CliResult<NpyFile> {
        let file = File::open(path).map_err(|e| Failure::file(display, e))?;
        let meta = file.metadata().map_err(|e| Failure::file(display, e))?;
        let file_len = meta.is_file().then_some(meta.len());
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let header =
            read_raw_header(&mut reader, &limits(g)).map_err(|e| header_failure(display, e))?;
        Ok(NpyFile {
            header,
            reader,
            file_len,
        })
    }

    /// Fails if the file is shorter than the header says (checked up front, so that nothing
    /// is printed for a truncated file).
    pub fn check_complete(&self, display: &str) -> CliResult {
        let Some(len) = self.file_len else {
            return Ok(());
        };
        let need = self
            .header
            .parsed
            .data_offset
            .saturating_add(self.header.data_len());
        if len < need {
            let have = len.saturating_sub(self.header.parsed.data_offset);
            let err = npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                what: "the array data",
                expected: self.header.data_len(),
                found: have,
            })
            .at_byte(len);
            return Err(Failure::file(
                display,
                format!(
                    "{err}: shape {} of {} is truncated",
                    shape_text(&self.header.header().shape),
                    self.header.dtype()
                ),
            ));
        }
        Ok(())
    }

    /// The data, random access: the file's data bytes mapped into memory (read into memory
    /// from a pipe, which cannot be mapped).
    pub fn map_data(&mut self, display: &str) -> CliResult<Bytes> {
        self.check_complete(display)?;
        let len = self.header.data_len();
        if len == 0 {
            return Ok(Bytes::Owned(Vec::new()));
        }
        if self.file_len.is_none() {
            let mut data = Vec::new();
            // Grows with the bytes actually there, not with the declared length.
            (&mut self.reader)
                .take(len)
                .read_to_end(&mut data)
                .map_err(|e| Failure::file(display, e))?;
            if (data.len() as u64) < len {
                let err = npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                    what: "the array data",
                    expected: len,
                    found: data.len() as u64,
                });
                return Err(Failure::file(display, err));
            }
            return Ok(Bytes::Owned(data));
        }
        let len = usize::try_from(len)
            .map_err(|_| Failure::file(display, "the data is too large to map on this machine"))?;
        // SAFETY: the map is only read, and any byte values are valid for every decode path;
        // if another process truncates the file while we run, reading the lost pages raises
        // SIGBUS (documented limitation of memory-mapped reading, as in `npy_serde::MmapArray`).
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(self.header.parsed.data_offset)
                .len(len)
                .map(self.reader.get_ref())
        }
        .map_err(|e| Failure::file(display, format!("cannot map the data: {e}")))?;
        Ok(Bytes::Mapped(map))
    }
}

/// Data bytes held in memory or mapped.
pub enum Bytes {
    /// Read into memory (an archive member).
    Owned(Vec<u8>),
    /// A memory-mapped file region.
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

/// Reads a member's data (after its header) into memory, checking length and CRC.
pub fn member_bytes(member: Member<'_>, display: &str) -> CliResult<Bytes> {
    member
        .read_raw()
        .map(Bytes::Owned)
        .map_err(|e| Failure::file(display, e))
}

/// The number of elements of `dims`, saturating: a shape with a 0 may have other dimensions
/// whose product overflows, and then the count is 0 anyway.
pub fn product(dims: &[u64]) -> u64 {
    if dims.contains(&0) {
        return 0;
    }
    dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d))
}

/// Python's tuple repr of a shape: `()`, `(3,)`, `(2, 3)`.
pub fn shape_text(shape: &[u64]) -> String {
    match shape {
        [] => "()".into(),
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// True if the data layout of `shape` differs between C and Fortran order: more than one
/// axis is longer than 1 (otherwise the array is both C- and Fortran-contiguous).
pub fn layouts_differ(shape: &[u64]) -> bool {
    shape.iter().filter(|&&d| d > 1).count() >= 2 && shape.iter().all(|&d| d > 0)
}

/// Walks the elements of an array in one order (`out_fortran`) and yields each element's
/// index in the other layout (`in_fortran`) — the permutation between storage orders.
pub struct Walk {
    dims: Vec<u64>,
    /// Strides of the input layout, in elements.
    strides: Vec<u64>,
    /// The multi-index, in output iteration order (axis order as in `dims`).
    idx: Vec<u64>,
    /// Iterate with the first axis fastest (Fortran) or the last (C).
    out_fortran: bool,
    pos: u64,
    left: u64,
}

impl Walk {
    /// A walk over `shape`, starting at output position `start`, for `len` elements.
    pub fn new(shape: &[u64], in_fortran: bool, out_fortran: bool, start: u64, len: u64) -> Walk {
        let n = shape.len();
        let mut strides = vec![0u64; n];
        let mut s = 1u64;
        let axes: Vec<usize> = if in_fortran {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for &k in &axes {
            strides[k] = s;
            s = s.saturating_mul(shape[k]);
        }
        // Multi-index of output position `start`.
        let mut idx = vec![0u64; n];
        let mut rem = start;
        let out_axes: Vec<usize> = if out_fortran {
            (0..n).collect()
        } else {
            (0..n).rev().collect()
        };
        for &k in &out_axes {
            let d = shape[k].max(1);
            idx[k] = rem % d;
            rem /= d;
        }
        let pos = idx.iter().zip(&strides).fold(0u64, |acc, (&i, &st)| {
            acc.saturating_add(i.saturating_mul(st))
        });
        Walk {
            dims: shape.to_vec(),
            strides,
            idx,
            out_fortran,
            pos,
            left: len,
        }
    }
}

impl Iterator for Walk {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let here = self.pos;
        let n = self.dims.len();
        for step in 0..n {
            let k = if self.out_fortran { step } else { n - 1 - step };
            self.idx[k] += 1;
            self.pos = self.pos.wrapping_add(self.strides[k]);
            if self.idx[k] < self.dims[k] {
                break;
            }
            self.pos = self
                .pos
                .wrapping_sub(self.strides[k].wrapping_mul(self.dims[k]));
            self.idx[k] = 0;
        }
        Some(here)
    }
}

/// Elements of an array in logical C order, from a stream or from random-access bytes.
pub enum Elements<'a> {
    /// The data read sequentially (C-order storage, or a layout identical to it).
    Stream {
        /// Positioned at the first element wanted.
        reader: Box<dyn Read + 'a>,
        /// One element.
        buf: Vec<u8>,
        /// Elements left.
        left: u64,
        /// Stream offset of the next element (for error messages).
        offset: u64,
        /// Index of the next element (for error messages).
        index: u64,
    },
    /// Random access over Fortran-order storage.
    Random {
        /// The whole data.
        bytes: Bytes,
        /// Storage positions in logical C order.
        walk: Walk,
        /// Bytes per element.
        itemsize: usize,
        /// Offset of the data in the stream (for error messages).
        data_offset: u64,
        /// Index of the next element.
        index: u64,
    },
}

/// One element handed out by [`Elements::next`].
pub struct Elem<'b> {
    /// Its bytes.
    pub bytes: &'b [u8],
    /// Its logical C-order index.
    pub index: u64,
    /// Offset of its first byte in the `.npy` stream.
    pub offset: u64,
}

impl Elements<'_> {
    /// Reads the remaining elements without handing them out (checking that they are there).
    pub fn drain(&mut self) -> npy_serde::Result<()> {
        match self {
            Elements::Stream {
                reader,
                buf,
                left,
                offset,
                index,
            } => {
                let want = left.saturating_mul(buf.len() as u64);
                let got = io::copy(&mut reader.take(want), &mut io::sink()).map_err(unwrap_io)?;
                if got < want {
                    let itemsize = buf.len().max(1) as u64;
                    return Err(npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                        what: "the array data",
                        expected: want,
                        found: got,
                    })
                    .at_record(*index + got / itemsize)
                    .at_byte(*offset + got));
                }
                *left = 0;
                Ok(())
            }
            Elements::Random { walk, .. } => {
                walk.left = 0;
                Ok(())
            }
        }
    }

    /// The next element, or `None` at the end.
    pub fn next(&mut self) -> npy_serde::Result<Option<Elem<'_>>> {
        match self {
            Elements::Stream {
                reader,
                buf,
                left,
                offset,
                index,
            } => {
                if *left == 0 {
                    return Ok(None);
                }
                let mut got = 0;
                while got < buf.len() {
                    match reader.read(&mut buf[got..]) {
                        Ok(0) => {
                            return Err(npy_serde::Error::new(
                                npy_serde::ErrorKind::UnexpectedEof {
                                    what: "an element",
                                    expected: buf.len() as u64,
                                    found: got as u64,
                                },
                            )
                            .at_record(*index)
                            .at_byte(*offset + got as u64))
                        }
                        Ok(k) => got += k,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(unwrap_io(e)),
                    }
                }
                *left -= 1;
                let elem = Elem {
                    bytes: buf,
                    index: *index,
                    offset: *offset,
                };
                *index += 1;
                *offset += buf.len() as u64;
                Ok(Some(elem))
            }
            Elements::Random {
                bytes,
                walk,
                itemsize,
                data_offset,
                index,
            } => {
                let Some(pos) = walk.next() else {
                    return Ok(None);
                };
                let start = (pos as usize).wrapping_mul(*itemsize);
                let b = bytes
                    .get(start..start.wrapping_add(*itemsize))
                    .ok_or_else(|| {
                        npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                            what: "an element",
                            expected: *itemsize as u64,
                            found: 0,
                        })
                        .at_record(*index)
                    })?;
                let elem = Elem {
                    bytes: b,
                    index: *index,
                    offset: *data_offset + start as u64,
                };
                *index += 1;
                Ok(Some(elem))
            }
        }
    }
}

/// A library error travelling inside an `io::Error` (e.g. a bad CRC from an archive member)
/// comes back out as itself.
pub fn unwrap_io(e: io::Error) -> npy_serde::Error {
    if !e
        .get_ref()
        .is_some_and(|inner| inner.is::<npy_serde::Error>())
    {
        return e.into();
    }
    let kind = e.kind();
    match e
        .into_inner()
        .map(|inner| inner.downcast::<npy_serde::Error>())
    {
        Some(Ok(err)) => *err,
        Some(Err(other)) => io::Error::new(kind, other).into(),
        None => io::Error::from(kind).into(),
    }
}

/// The elements `[start, start + len)` (logical C order) of an open `.npy` file.
pub fn file_elements<'a>(
    file: &'a mut NpyFile,
    display: &str,
    start: u64,
    len: u64,
) -> CliResult<Elements<'a>> {
    file.check_complete(display)?;
    let h = file.header.header().clone();
    let itemsize = h.dtype.itemsize();
    let data_offset = file.header.parsed.data_offset;
    if h.fortran_order && layouts_differ(&h.shape) {
        let bytes = file.map_data(display)?;
        return Ok(Elements::Random {
            bytes,
            walk: Walk::new(&h.shape, true, false, start, len),
            itemsize,
            data_offset,
            index: start,
        });
    }
    let skip = start.saturating_mul(itemsize as u64);
    if skip > 0 && file.file_len.is_some() {
        file.reader
            .seek(SeekFrom::Start(data_offset + skip))
            .map_err(|e| Failure::file(display, e))?;
    } else if skip > 0 {
        // A pipe: read past the elements not wanted.
        let got = io::copy(&mut (&mut file.reader).take(skip), &mut io::sink())
            .map_err(|e| Failure::file(display, e))?;
        if got < skip {
            let err = npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                what: "the array data",
                expected: skip,
                found: got,
            });
            return Err(Failure::file(display, err));
        }
    }
    Ok(Elements::Stream {
        reader: Box::new(&mut file.reader),
        buf: vec![0; itemsize],
        left: len,
        offset: data_offset + skip,
        index: start,
    })
}

/// The elements `[start, start + len)` (logical C order) of an archive member whose header
/// was read.
pub fn member_elements<'a>(
    mut member: Member<'a>,
    header: &RawHeader,
    display: &str,
    start: u64,
    len: u64,
) -> CliResult<Elements<'a>> {
    let h = header.header();
    let itemsize = h.dtype.itemsize();
    let data_offset = header.parsed.data_offset;
    if h.fortran_order && layouts_differ(&h.shape) {
        let bytes = member_bytes(member, display)?;
        return Ok(Elements::Random {
            bytes,
            walk: Walk::new(&h.shape, true, false, start, len),
            itemsize,
            data_offset,
            index: start,
        });
    }
    let skip = start.saturating_mul(itemsize as u64);
    if skip > 0 {
        io::copy(&mut (&mut member).take(skip), &mut io::sink())
            .map_err(|e| Failure::file(display, unwrap_io(e)))?;
    }
    Ok(Elements::Stream {
        reader: Box::new(member),
        buf: vec![0; itemsize],
        left: len,
        offset: data_offset + skip,
        index: start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_c_over_fortran_storage() {
        // shape (2, 3) stored in Fortran order: element (i, j) at i + 2 j.
        let got: Vec<u64> = Walk::new(&[2, 3], true, false, 0, 6).collect();
        assert_eq!(got, [0, 2, 4, 1, 3, 5]);
        let got: Vec<u64> = Walk::new(&[2, 3], true, false, 4, 2).collect();
        assert_eq!(got, [3, 5]);
        // Fortran output order over C storage: (i, j) at 3 i + j.
        let got: Vec<u64> = Walk::new(&[2, 3], false, true, 0, 6).collect();
        assert_eq!(got, [0, 3, 1, 4, 2, 5]);
        let got: Vec<u64> = Walk::new(&[2, 2, 2], true, false, 0, 8).collect();
        assert_eq!(got, [0, 4, 2, 6, 1, 5, 3, 7]);
    }

    #[test]
    fn layouts() {
        assert!(!layouts_differ(&[5]));
        assert!(!layouts_differ(&[3, 1]));
        assert!(!layouts_differ(&[]));
        assert!(!layouts_differ(&[3, 0, 2]));
        assert!(layouts_differ(&[2, 3]));
    }

    #[test]
    fn shapes() {
        assert_eq!(shape_text(&[]), "()");
        assert_eq!(shape_text(&[3]), "(3,)");
        assert_eq!(shape_text(&[2, 3]), "(2, 3)");
    }
}
