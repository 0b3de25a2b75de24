//! `.npy` headers read together with their raw bytes (which `info --json` shows as written), and
//! header errors as failures.

use std::io::{self, Read};

use npy_serde::header::read_header;
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

/// Reads a member's header (with its bytes).
pub fn member_header(m: &mut Member<'_>, display: &str) -> CliResult<RawHeader> {
    let parsed = m.header().map_err(|e| header_failure(display, e))?.clone();
    let bytes = m.header_bytes().unwrap_or_default().to_vec();
    Ok(RawHeader { parsed, bytes })
}

/// Like [`member_header`], but `None` for a member that is not an `.npy` file: NumPy decides
/// by the magic string, and so do we, once the member's bytes are verified complete; any
/// other failure (CRC, inflate error, wrong size, truncated archive) is an error naming it.
pub fn member_header_if_npy(m: &mut Member<'_>, display: &str) -> CliResult<Option<RawHeader>> {
    let read = m.header().map(|_| ());
    match read {
        Ok(()) => member_header(m, display).map(Some),
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
