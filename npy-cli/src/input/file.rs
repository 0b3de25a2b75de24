//! An opened `.npy` file: its header, its data streamed or mapped, and the data of an archive
//! member held in memory.

use std::io::{BufReader, Read};
use std::path::Path;

use npy_serde::header::ObjectHeader;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::Member;
use crate::input::header::{header_failure, read_raw_contents, Kind, RawHeader};
use crate::input::layout::shape_text;
use crate::input::source::Source;

/// An opened `.npy` file, positioned at its first data byte.
pub struct NpyFile {
    /// The header.
    pub header: RawHeader,
    /// The file (or remote object), buffered.
    pub reader: BufReader<Source>,
    /// The file's length, if it is a regular file (an object's size).
    pub file_len: Option<u64>,
}

/// An opened `.npy` file of either kind, positioned at its first data byte.
pub enum Opened {
    /// An array of a dtype the library models.
    Typed(NpyFile),
    /// An object array: its header, and the file at the first byte of its pickle.
    Objects(ObjectHeader, BufReader<Source>),
}

impl NpyFile {
    /// Opens `path` and reads its header; an object array is refused.
    pub fn open(g: &Global, path: &Path, display: &str) -> CliResult<NpyFile> {
        match NpyFile::open_any(g, path, display)? {
            Opened::Typed(f) => Ok(f),
            Opened::Objects(h, _) => Err(header_failure(display, h.refusal())),
        }
    }

    /// Opens `path`, reads its header once and says what it holds.
    pub fn open_any(g: &Global, path: &Path, display: &str) -> CliResult<Opened> {
        let file = Source::open(g, path, display)?;
        let file_len = file.len().map_err(|e| Failure::file(display, e))?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let kind =
            read_raw_contents(&mut reader, &g.limits()).map_err(|e| header_failure(display, e))?;
        Ok(match kind {
            Kind::Typed(header) => Opened::Typed(NpyFile {
                header,
                reader,
                file_len,
            }),
            Kind::Objects(h) => Opened::Objects(h, reader),
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
    /// from a pipe or a remote object, which cannot be mapped).
    pub fn map_data(&mut self, display: &str) -> CliResult<Bytes> {
        self.check_complete(display)?;
        let len = self.header.data_len();
        if len == 0 {
            return Ok(Bytes::Owned(Vec::new()));
        }
        let (Some(_), Some(file)) = (self.file_len, self.reader.get_ref().file()) else {
            return self.read_data(len, display);
        };
        let len = usize::try_from(len)
            .map_err(|_| Failure::file(display, "the data is too large to map on this machine"))?;
        // SAFETY: the map is only read, and any byte values are valid for every decode path;
        // if another process truncates the file while we run, reading the lost pages raises
        // SIGBUS (documented limitation of memory-mapped reading, as in `npy_serde::MmapArray`).
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(self.header.parsed.data_offset)
                .len(len)
                .map(file)
        }
        .map_err(|e| Failure::file(display, format!("cannot map the data: {e}")))?;
        Ok(Bytes::Mapped(map))
    }

    /// The `len` data bytes read into memory (growing with the bytes actually there).
    fn read_data(&mut self, len: u64, display: &str) -> CliResult<Bytes> {
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
        Ok(Bytes::Owned(data))
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
