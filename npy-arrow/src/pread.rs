//! [`FileData`]: the data of a `.npy` file read by position (`pread`), so that several threads
//! read and decode their own batches at once, each into a buffer of its own that stays in its
//! core's cache. A stream (`io::Read`) hands out one block after another on one thread: the
//! copy out of the page cache then runs alone, before the batches' decoding on all cores.

use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;

use npy_serde::error::{Error, Result};

/// A file's array data, `len` bytes from `data_offset` (checked against the file's size when
/// opened; a file that shrinks later gives an end-of-data error, never short data).
pub(super) struct FileData {
    file: File,
    data_offset: u64,
    len: u64,
    /// The buffer of reads on the owning thread.
    scratch: Vec<u8>,
}

impl FileData {
    pub(super) fn new(file: File, data_offset: u64, len: u64) -> Self {
        FileData {
            file,
            data_offset,
            len,
            scratch: Vec::new(),
        }
    }

    /// Fills `buf` from data byte `start`.
    fn read_into(&self, buf: &mut [u8], start: u64) -> Result<()> {
        let offset = self.data_offset + start;
        self.file.read_exact_at(buf, offset).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                let size = self.file.metadata().map_or(0, |m| m.len());
                let avail = size.saturating_sub(self.data_offset).min(self.len);
                Error::eof("the array data", self.len, avail).at_byte(self.data_offset + avail)
            } else {
                Error::from(e).at_byte(offset)
            }
        })
    }

    /// The `len` data bytes from data byte `start`, and their file offset.
    pub(super) fn get(&mut self, start: u64, len: usize) -> Result<(&[u8], u64)> {
        let mut buf = std::mem::take(&mut self.scratch);
        if buf.len() < len {
            buf.resize(len, 0);
        }
        let read = self.read_into(&mut buf[..len], start);
        self.scratch = buf;
        read?;
        Ok((&self.scratch[..len], self.data_offset + start))
    }

    /// Calls `then` with the `len` data bytes from data byte `start` (and their file offset),
    /// read into a buffer of the calling thread (kept for its next reads: at most the largest
    /// `len` asked for, which the batch reader bounds by the bytes it decodes ahead).
    pub(super) fn with<T>(
        &self,
        start: u64,
        len: usize,
        then: impl FnOnce(&[u8], u64) -> Result<T>,
    ) -> Result<T> {
        thread_local! {
            static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        let offset = self.data_offset + start;
        BUF.with(|cell| {
            // A reentrant call (not made by this crate) gets a buffer of its own.
            let mut own = Vec::new();
            let mut held = cell.try_borrow_mut();
            let buf = match held.as_deref_mut() {
                Ok(b) => b,
                Err(_) => &mut own,
            };
            if buf.len() < len {
                buf.resize(len, 0);
            }
            self.read_into(&mut buf[..len], start)?;
            then(&buf[..len], offset)
        })
    }
}
