//! `.npz` archives opened from files, and the library errors their members' reads carry.

use std::io::{self, BufReader};
use std::path::Path;

use npy_serde::npz::NpzMember;
use npy_serde::{NpzArchive, NpzReaderBuilder};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::source::Source;

/// An archive opened from a file.
pub type Archive = NpzArchive<BufReader<Source>>;
/// A member of such an archive being read.
pub type Member<'a> = NpzMember<'a, BufReader<Source>>;

/// Opens an archive; members are read in a streaming way, so the library's per-member size
/// limit (which guards collecting reads) is lifted.
pub fn open_archive(g: &Global, path: &Path, display: &str) -> CliResult<Archive> {
    let source = Source::open(g, path, display)?;
    NpzReaderBuilder::new()
        .max_header_size(g.max_header_size)
        .max_member_size(u64::MAX)
        .from_reader(BufReader::new(source))
        .map_err(|e| Failure::file(display, e))
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
