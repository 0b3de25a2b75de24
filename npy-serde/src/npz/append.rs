//! Adding members to an existing archive in place ([`NpzAppender`]), with the archive restored
//! as it was if anything fails before the new central directory is written.
//!
//! The members already there are never rewritten: the new local entries are written over the
//! old central directory, then a new central directory lists the old members and the new
//! ones. The old central directory (with everything after it) is kept in memory; if a member
//! fails (a value that does not fit, an I/O error), the appender is dropped, or
//! [`finish`](NpzAppender::finish) fails, it is written back and the file cut to its old
//! length.

use std::fs::{File, OpenOptions};
use std::io::{self, Cursor, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;
use zip::{ZipArchive, ZipWriter};

use super::read::NpzReaderBuilder;
use super::write::{writer_methods, Core};
use super::{
    from_zip, name_for_key, positional_key, zip_error, Compression, MemberWriter, NpzRecordWriter,
    RawMemberWriter,
};
use crate::error::Result;
use crate::header::Header;
use crate::record::NpyRecord;
use crate::value::Array;
use crate::write::WriterBuilder;

/// Storage an archive can be appended to: read, written, and cut back to its old length if the
/// append fails. Implemented for [`File`] and `Cursor<Vec<u8>>` (and `&mut` of either).
pub trait AppendTarget: Read + Write + Seek {
    /// Truncates (or extends) the storage to `len` bytes, as [`File::set_len`].
    fn set_len(&mut self, len: u64) -> io::Result<()>;
}

impl AppendTarget for File {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }
}

impl AppendTarget for Cursor<Vec<u8>> {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(io::Error::other)?;
        self.get_mut().resize(len, 0);
        Ok(())
    }
}

impl<T: AppendTarget + ?Sized> AppendTarget for &mut T {
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        (**self).set_len(len)
    }
}

/// No position to move to (see [`Shared::start_at`]).
const NONE: u64 = u64::MAX;

/// State shared between the appender and its storage, which the zip writer owns.
#[derive(Debug)]
struct Shared {
    /// Set once the storage failed: later writes are discarded (the archive is restored when
    /// the storage is dropped), so the zip writer's own clean-up cannot fail again.
    failed: AtomicBool,
    /// Where the next access starts: the old central directory. The zip crate's `new_append`
    /// leaves the position after it, and would write the new members there.
    start_at: AtomicU64,
}

/// The archive's storage, as the zip writer sees it: restores the old end of the archive when
/// dropped before [`NpzAppender::finish`] succeeded.
struct Guard<F: AppendTarget> {
    inner: Option<F>,
    shared: Arc<Shared>,
    /// Where the old central directory started, and what followed from there to the end.
    cd_start: u64,
    tail: Vec<u8>,
    /// Something was written: the old tail may be overwritten.
    dirty: bool,
    committed: bool,
    /// The position reported once the storage failed and writes are discarded.
    ghost: u64,
}

impl<F: AppendTarget> Guard<F> {
    fn inner(&mut self) -> io::Result<&mut F> {
        let inner = self
            .inner
            .as_mut()
            .ok_or_else(|| io::Error::other("the archive was already finished"))?;
        let at = self.shared.start_at.swap(NONE, Ordering::Relaxed);
        if at != NONE {
            inner.seek(SeekFrom::Start(at))?;
        }
        Ok(inner)
    }

    fn failed(&self) -> bool {
        self.shared.failed.load(Ordering::Relaxed)
    }

    fn note<T>(&mut self, r: io::Result<T>) -> io::Result<T> {
        if r.is_err() {
            self.shared.failed.store(true, Ordering::Relaxed);
        }
        r
    }

    /// Writes the old central directory back and cuts the file to its old length.
    fn restore(&mut self) -> io::Result<()> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(());
        };
        inner.seek(SeekFrom::Start(self.cd_start))?;
        inner.write_all(&self.tail)?;
        inner.set_len(self.cd_start + self.tail.len() as u64)?;
        inner.flush()
    }
}

impl<F: AppendTarget> Drop for Guard<F> {
    fn drop(&mut self) {
        if self.dirty && !self.committed {
            // Nothing to report to: `NpzAppender::finish` restores before it returns an error.
            let _ = self.restore();
        }
    }
}

impl<F: AppendTarget> Read for Guard<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failed() {
            return Ok(0);
        }
        let r = self.inner().and_then(|f| f.read(buf));
        self.note(r)
    }
}

impl<F: AppendTarget> Write for Guard<F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.failed() {
            self.ghost += buf.len() as u64;
            return Ok(buf.len());
        }
        self.dirty = true;
        let r = self.inner().and_then(|f| f.write(buf));
        if let Ok(n) = r {
            self.ghost += n as u64;
        }
        self.note(r)
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.failed() {
            return Ok(());
        }
        let r = self.inner().and_then(|f| f.flush());
        self.note(r)
    }
}

impl<F: AppendTarget> Seek for Guard<F> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        if self.failed() {
            self.ghost = match pos {
                SeekFrom::Start(p) => p,
                SeekFrom::Current(d) => self.ghost.saturating_add_signed(d),
                SeekFrom::End(d) => self.ghost.saturating_add_signed(d),
            };
            return Ok(self.ghost);
        }
        let r = self.inner().and_then(|f| f.seek(pos));
        if let Ok(p) = r {
            self.ghost = p;
        }
        self.note(r)
    }
}

/// Adds members to an existing `.npz` archive in place, which `np.savez` cannot do.
///
/// The members already in the archive are not read or rewritten: appending a 1 MB member to a
/// 1 GB archive costs the megabyte (and the central directory), not the gigabyte. The new
/// members are written over the old central directory, then [`finish`](Self::finish) writes
/// the new one. The methods are [`NpzWriter`](super::NpzWriter)'s: whole members
/// ([`add`](Self::add), [`add_array`](Self::add_array)), streamed ones
/// ([`start_records`](Self::start_records), [`start_member`](Self::start_member)), stored or
/// deflated ([`set_compression`](Self::set_compression)), aligned ([`align`](Self::align)).
///
/// - A key the archive already has (or that was just added) is an error before anything is
///   written; the appender stays usable.
/// - Positional members continue the archive's numbering: after `arr_0` and `arr_1`,
///   [`add_positional`](Self::add_positional) adds `arr_2`.
/// - If anything fails (a value that does not fit its dtype, an I/O error, a member left
///   unfinished) the archive is restored as it was when the appender is dropped or
///   [`finish`](Self::finish) is called; so is it if the appender is dropped without `finish`.
///   Only a crash of the process in the middle leaves it without a valid central directory.
///
/// ```
/// use npy_serde::npz::{Compression, NpzAppender, NpzArchive, NpzWriter};
///
/// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
/// w.add("a", &[1.0f64, 2.0])?;
/// let archive = w.finish()?;
///
/// let mut app = NpzAppender::new(archive)?;
/// app.set_compression(Compression::Deflate);
/// app.add("b", &[3u32, 4, 5])?;
/// assert!(app.add("a", &[0u8]).is_err()); // already there: nothing was written
/// let bytes = app.finish()?.into_inner();
///
/// let mut npz = NpzArchive::from_bytes(&bytes)?;
/// assert_eq!(npz.keys().collect::<Vec<_>>(), ["a", "b"]);
/// assert_eq!(npz.read::<u32>("b")?, [3, 4, 5]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct NpzAppender<F: AppendTarget> {
    core: Core<Guard<F>>,
    shared: Arc<Shared>,
}

impl<F: AppendTarget> std::fmt::Debug for NpzAppender<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzAppender")
            .field("compression", &self.core.compression)
            .field("positional", &self.core.positional)
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

impl NpzAppender<File> {
    /// Opens the archive at `path` (read and write) for appending.
    pub fn open<P: AsRef<Path>>(path: P) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path.as_ref())?;
        Self::new(file)
    }
}

impl<F: AppendTarget> NpzAppender<F> {
    /// Prepares `target`, which holds an archive, for appending: reads its central directory
    /// (with [`NpzReaderBuilder`]'s default limits), nothing else.
    pub fn new(mut target: F) -> Result<Self> {
        let context = "cannot append to the archive";
        let len = target.seek(SeekFrom::End(0))?;
        let (cd_start, positional) = {
            let zip = ZipArchive::new(&mut target).map_err(|e| from_zip(context, e))?;
            if zip.offset() != 0 {
                return Err(zip_error(format!(
                    "{context}: it has {} bytes of other data before its first member",
                    zip.offset()
                )));
            }
            let (members, by_name) = NpzReaderBuilder::new().list(&zip)?;
            drop(members);
            let positional = (0..)
                .find(|&i| !by_name.contains_key(&name_for_key(&positional_key(i))))
                .unwrap_or(0);
            (zip.central_directory_start(), positional)
        };
        if cd_start > len {
            return Err(zip_error(format!(
                "{context}: its central directory is said to start at byte {cd_start}, past \
                 the end of the {len}-byte file"
            )));
        }
        // The old central directory and what follows (its end records, a comment): what a
        // failed append writes back.
        let mut tail = Vec::new();
        target.seek(SeekFrom::Start(cd_start))?;
        Read::by_ref(&mut target)
            .take(len - cd_start)
            .read_to_end(&mut tail)?;
        let shared = Arc::new(Shared {
            failed: AtomicBool::new(false),
            start_at: AtomicU64::new(NONE),
        });
        let guard = Guard {
            inner: Some(target),
            shared: shared.clone(),
            cd_start,
            tail,
            dirty: false,
            committed: false,
            ghost: 0,
        };
        let zip = ZipWriter::new_append(guard).map_err(|e| from_zip(context, e))?;
        shared.start_at.store(cd_start, Ordering::Relaxed);
        let mut core = Core::new(zip);
        core.positional = positional;
        Ok(NpzAppender { core, shared })
    }

    writer_methods!();

    /// Writes the new central directory (listing the old members and the new ones) and
    /// returns the storage. If a member failed or was left unfinished, or writing fails, the
    /// archive is restored as it was and the error returned.
    pub fn finish(self) -> Result<F> {
        let shared = self.shared;
        let mut core = self.core;
        if let Err(e) = core.check_ready() {
            // Discard the zip writer's own clean-up; the storage restores the archive when
            // the writer drops it.
            shared.failed.store(true, Ordering::Relaxed);
            drop(core);
            return Err(e);
        }
        let mut guard = core.finish()?;
        if guard.failed() {
            return Err(zip_error(
                "cannot finish the archive: writing it failed; it was restored as it was",
            ));
        }
        let flushed = guard.inner().and_then(|f| f.flush());
        if let Err(e) = flushed {
            guard.shared.failed.store(true, Ordering::Relaxed);
            return Err(e.into());
        }
        guard.committed = true;
        Ok(guard.inner.take().expect("taken once"))
    }
}
