//! `.npy` headers read together with their raw bytes (which `info --json` shows as written), and
//! header errors as failures.

use std::io::{self, Read};

use npy_serde::header::{read_contents, Contents, ObjectHeader};
use npy_serde::{DType, Header, Limits, ParsedHeader};

use crate::failure::{CliResult, Failure};
use crate::input::archive::Member;

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

/// What a header says its file holds (the library's [`Contents`]), a typed header with its
/// bytes: every command reads the header once and goes on by this kind.
#[derive(Clone, Debug)]
pub enum Kind {
    /// An array of a dtype the library models.
    Typed(RawHeader),
    /// Python objects, whose data is one pickle (read as data with `--allow-pickle-data`).
    Objects(ObjectHeader),
}

impl Kind {
    fn of(contents: Contents, bytes: &[u8]) -> npy_serde::Result<Kind> {
        Ok(match contents {
            Contents::Objects(h) => Kind::Objects(h),
            // `Contents` is non-exhaustive: any other kind is a typed header, or the error
            // `typed` gives for it.
            other => Kind::Typed(RawHeader {
                parsed: other.typed()?,
                bytes: bytes.to_vec(),
            }),
        })
    }

    /// The typed header; an object array is refused with the library's error (which names
    /// the option that reads it).
    pub fn typed(self, display: &str) -> CliResult<RawHeader> {
        match self {
            Kind::Typed(h) => Ok(h),
            Kind::Objects(h) => Err(header_failure(display, h.refusal())),
        }
    }
}

/// Reads a header from `r`, keeping its bytes; `r` is left at the first data byte.
pub fn read_raw_contents<R: Read + ?Sized>(r: &mut R, limits: &Limits) -> npy_serde::Result<Kind> {
    let mut tee = Tee {
        inner: r,
        seen: Vec::new(),
    };
    let contents = read_contents(&mut tee, limits)?;
    Kind::of(contents, &tee.seen)
}

/// Reads a member's header (with its bytes).
pub fn member_contents(m: &mut Member<'_>, display: &str) -> CliResult<Kind> {
    let contents = m
        .contents()
        .map_err(|e| header_failure(display, e))?
        .clone();
    Kind::of(contents, m.header_bytes().unwrap_or_default()).map_err(|e| header_failure(display, e))
}

/// A member's typed header; an object array is refused.
pub fn member_header(m: &mut Member<'_>, display: &str) -> CliResult<RawHeader> {
    member_contents(m, display)?.typed(display)
}

/// Like [`member_contents`], but `None` for a member that is not an `.npy` file: NumPy decides
/// by the magic string, and so do we, once the member's bytes are verified complete; any
/// other failure (CRC, inflate error, wrong size, truncated archive) is an error naming it.
pub fn member_contents_if_npy(m: &mut Member<'_>, display: &str) -> CliResult<Option<Kind>> {
    let read = m.contents().map(|_| ());
    match read {
        Ok(()) => member_contents(m, display).map(Some),
        Err(e) if e.kind().code() == "bad_magic" || (e.is_eof() && m.position() < 6) => {
            // Not an .npy file only if the member's complete bytes check out (its size and
            // CRC-32): a corrupt compressed member inflates to anything, so its first bytes say
            // nothing until the whole member is verified.
            match std::io::copy(m, &mut std::io::sink()) {
                Ok(_) => Ok(None),
                Err(io) => Err(header_failure(display, npy_serde::Error::from(io))),
            }
        }
        Err(e) => Err(header_failure(display, e)),
    }
}
