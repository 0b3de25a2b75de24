//! [`NpyWriter`]: writing records one at a time, counted (any `Write`), uncounted (a
//! `Write + Seek`, the header patched at [`NpyWriter::finish`]) or appended to an existing
//! file; and the [`WriterBuilder`] methods that start one.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::Serialize;

use std::any::{Any, TypeId};

use super::blocks::Blocks;
use super::exact::{write_tier, WriteTier};
use super::options::{fold, same_layout, WriterBuilder};
use super::pipe::{Background, Pipe};
use super::plan::Plan;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::header::{self, Header, Limits, Version};
use crate::pyliteral;
use crate::record::NpyRecord;
use crate::staged::{PendingRename, StagedFile};

/// The 6 bytes a seekable [`NpyWriter`] writes in place of `\x93NUMPY` until
/// [`NpyWriter::finish`] writes the real header: a file left by a writer dropped without
/// `finish` (a crash, an early return) does not read as a complete `.npy` file.
pub const UNFINISHED_MAGIC: &[u8; 6] = b"\x93UNFIN";

impl WriterBuilder {
    /// A streaming writer for exactly `len` records, on any `Write` (a pipe, a socket, a
    /// compressor). The real header is written first; [`NpyWriter::finish`] fails if a different
    /// number of records was written. A writer dropped early leaves a truncated file, which
    /// readers reject (the data is shorter than the header says).
    pub fn writer_with_len<W: Write>(&self, mut writer: W, len: u64) -> Result<NpyWriter<W>> {
        let (elem, base, sub) = self.stream_dtype()?;
        let header = stream_header(&base, &sub, self.fortran_order, len);
        header.data_len()?;
        writer.write_all(&header.to_bytes_with_version(self.version)?)?;
        Ok(NpyWriter {
            inner: writer,
            blocks: Blocks::new(Plan::new(&elem)?, self.block_size(), Some(len)),
            elem,
            base,
            sub,
            exact: None,
            staged: None,
            fortran: self.fortran_order,
            mode: Mode::Counted { expected: len },
        })
    }

    /// A streaming writer for a number of records not known up front, on a `Write + Seek` (a
    /// file). The header is written at the writer's current position with the magic replaced by
    /// [`UNFINISHED_MAGIC`]; [`NpyWriter::finish`] writes the real header, with the final shape,
    /// over it. NumPy's growth-axis padding makes the header the same length for any count, so
    /// nothing moves. Until `finish`, the file does not parse as `.npy`.
    pub fn writer<W: Write + Seek>(&self, mut writer: W) -> Result<NpyWriter<W>> {
        let (elem, base, sub) = self.stream_dtype()?;
        let start = writer.stream_position()?;
        let mut bytes = stream_header(&base, &sub, self.fortran_order, 0)
            .to_bytes_with_version(self.version)?;
        let version = Version::from_tuple(bytes[6], bytes[7])?;
        let max = max_records(&elem);
        // The largest possible header must fit in the same length (growth padding).
        header_fitting(
            &stream_header(&base, &sub, self.fortran_order, max),
            version,
            bytes.len(),
        )?;
        bytes[..6].copy_from_slice(UNFINISHED_MAGIC);
        writer.write_all(&bytes)?;
        Ok(NpyWriter {
            inner: writer,
            blocks: Blocks::new(Plan::new(&elem)?, self.block_size(), None),
            elem,
            base,
            sub,
            exact: None,
            staged: None,
            fortran: self.fortran_order,
            mode: Mode::Patch {
                start,
                header_len: bytes.len(),
                version,
                max,
                patch: patch_at::<W>,
            },
        })
    }

    /// A streaming writer that appends records to the `.npy` array starting at the current
    /// position of `file` (e.g. one NumPy wrote), opened for reading and writing.
    ///
    /// The array must be 1-D (C or Fortran order: the same for 1-D), or `(n,) + subarray shape`
    /// when the builder's dtype is a subarray; its dtype must equal the builder's
    /// [`dtype`](Self::dtype) if one is set, byte order aside (the file's byte order and header
    /// version are kept); and the file must end exactly where the data ends. Records go after
    /// the data; [`NpyWriter::finish`] then rewrites the header in place with the new length.
    ///
    /// The header keeps its length: NumPy's growth padding leaves room for any count. A header
    /// written without that room (by another tool) is refused up front if it cannot hold even
    /// one more record; otherwise writing more records than it can describe fails before they
    /// are written. Until `finish`, the file still reads as the original array (the appended
    /// bytes lie beyond the data its header describes, which readers ignore); a later append to
    /// such a file is refused until it is truncated back.
    pub fn append<F: Read + Write + Seek>(&self, mut file: F) -> Result<NpyWriter<F>> {
        let start = file.stream_position()?;
        let limits = Limits {
            max_header_size: u32::MAX as u64,
            ..Limits::default()
        };
        let parsed = header::read_header(&mut file, &limits)?;
        let h = parsed.header;
        let (elem, sub) = match &self.dtype {
            Some(want) => {
                let (want_base, want_sub) = fold(want);
                if !same_layout(&want_base, &h.dtype) {
                    return Err(Error::write(format!(
                        "cannot append records of dtype {} to an array of dtype {}",
                        want_base.descr(),
                        h.dtype.descr()
                    )));
                }
                (DType::array(h.dtype.clone(), want_sub.clone())?, want_sub)
            }
            None => (h.dtype.clone(), Vec::new()),
        };
        if h.shape.len() != 1 + sub.len() || h.shape[1..] != sub[..] {
            let mut want = vec![0u64];
            want.extend_from_slice(&sub);
            return Err(Error::write(format!(
                "can only append to an array of shape (n,){}; the file's shape is {}",
                if sub.is_empty() {
                    String::new()
                } else {
                    format!(" + {}", pyliteral::repr_shape(&sub))
                },
                pyliteral::repr_shape(&h.shape)
            )));
        }
        if h.fortran_order && !sub.is_empty() {
            return Err(Error::write(
                "cannot append rows to a Fortran-order array with more than one dimension",
            ));
        }
        let data_end = start
            .checked_add(parsed.data_offset)
            .and_then(|v| v.checked_add(h.data_len().ok()?))
            .ok_or_else(|| Error::overflow("the end of the array data"))?;
        let end = file.seek(SeekFrom::End(0))?;
        if end < data_end {
            return Err(Error::eof(
                "the array data",
                data_end - start - parsed.data_offset,
                end.saturating_sub(start + parsed.data_offset),
            ));
        }
        if end > data_end {
            return Err(Error::write(format!(
                "{} bytes follow the array data (left by an unfinished append?): refusing to \
                 append after them; truncate the file to {data_end} bytes to drop them",
                end - data_end
            )));
        }
        let header_len = usize::try_from(parsed.data_offset)
            .map_err(|_| Error::overflow("the header length"))?;
        let n = h.shape[0];
        let limit = max_records(&elem);
        let max = (1..=20u32)
            .rev()
            .map(|d| 10u64.checked_pow(d).map_or(u64::MAX, |p| p - 1).min(limit))
            .find(|&c| {
                header_fitting(
                    &stream_header(&h.dtype, &sub, h.fortran_order, c),
                    parsed.version,
                    header_len,
                )
                .is_ok()
            })
            .unwrap_or(n);
        if max <= n {
            return Err(Error::write(format!(
                "the file's header ({header_len} bytes) has no room for a longer shape: it was \
                 written without NumPy's growth padding; rewrite the file instead of appending"
            )));
        }
        Ok(NpyWriter {
            inner: file,
            blocks: Blocks::new(Plan::new(&elem)?, self.block_size(), None).starting_at(n),
            elem,
            base: h.dtype,
            sub,
            exact: None,
            staged: None,
            fortran: h.fortran_order,
            mode: Mode::Patch {
                start,
                header_len,
                version: parsed.version,
                max,
                patch: patch_at::<F>,
            },
        })
    }

    /// [`append`](Self::append) to the file at `path`, opened for reading and writing; the
    /// blocks are written on a second thread, as by [`create_path`](Self::create_path).
    pub fn append_path<P: AsRef<Path>>(&self, path: P) -> Result<NpyWriter<File>> {
        let file = File::options().read(true).write(true).open(path)?;
        self.append(file)?.piped(self.pipelined())
    }

    /// A streaming writer into a new file at `path`, count not known up front:
    /// [`writer`](Self::writer) on the file, with the blocks written on a second
    /// thread while the caller encodes the next ones, and the file's space reserved ahead of
    /// them, as NumPy does before writing (feature `parallel`, unless
    /// [`parallel(false)`](Self::parallel)). Errors of those writes are reported by the next
    /// call that writes a block, or by [`NpyWriter::finish`].
    ///
    /// The file is written under a temporary name beside `path`, and [`NpyWriter::finish`]
    /// renames it over `path` (an existing file there stays as it was until then, and a writer
    /// dropped unfinished or failing removes its temporary file: see [`StagedFile`] for
    /// symbolic links, FIFOs and hard links).
    ///
    /// ```
    /// # use npy_serde::{NpyRecord, WriterBuilder};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize, NpyRecord)]
    /// struct Rec { id: i64, x: f64 }
    ///
    /// # let path = std::env::temp_dir().join(format!("create-path-{}.npy", std::process::id()));
    /// let mut w = WriterBuilder::new().record::<Rec>().create_path(&path)?;
    /// for i in 0..1000 {
    ///     w.write(&Rec { id: i, x: 0.5 })?;
    /// }
    /// w.finish()?;
    /// assert_eq!(npy_serde::from_path::<_, Rec>(&path)?.len(), 1000);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn create_path<P: AsRef<Path>>(&self, path: P) -> Result<NpyWriter<File>> {
        let (file, staged) = StagedFile::create(path)?.into_parts();
        let mut w = self.writer(file)?;
        w.staged = staged;
        w.piped(self.pipelined())
    }
}

impl WriterBuilder {
    /// [`writer`](Self::writer) with the blocks written on a second thread, while the caller
    /// encodes the next ones, as [`create_path`](Self::create_path) writes a file: for any
    /// `Write + Seek` that can move to a thread (`Send + 'static`), such as a `BufWriter<File>`.
    /// The writer goes into a [`Background`], which [`NpyWriter::finish`] gives back
    /// ([`Background::into_inner`] unwraps it). Errors of the thread's writes are reported by
    /// the next call that writes a block, or by `finish`. With
    /// [`parallel(false)`](Self::parallel), one CPU, or without feature `parallel`, the blocks
    /// are written on the caller's thread.
    ///
    /// Unlike `create_path`, nothing reserves the space ahead: given a path, `create_path` is
    /// faster still.
    ///
    /// ```
    /// # use npy_serde::{NpyRecord, WriterBuilder};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize, NpyRecord)]
    /// struct Rec { id: i64, x: f64 }
    ///
    /// let out = std::io::Cursor::new(Vec::new()); // a BufWriter<File>, a socket wrapper...
    /// let mut w = WriterBuilder::new().record::<Rec>().background(out)?;
    /// for i in 0..10_000 {
    ///     w.write(&Rec { id: i, x: 0.5 })?;
    /// }
    /// let bytes = w.finish()?.into_inner()?.into_inner();
    /// assert_eq!(npy_serde::from_slice::<Rec>(&bytes)?.len(), 10_000);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn background<W: Write + Seek + Send + 'static>(
        &self,
        writer: W,
    ) -> Result<NpyWriter<Background<W>>> {
        self.writer(Background::new(writer))?
            .on_thread(self.pipelined())
    }

    /// [`writer_with_len`](Self::writer_with_len) with the blocks written on a second thread,
    /// as [`background`](Self::background) does: for a `Write` without `Seek` (a pipe, a
    /// socket) when the count is known.
    pub fn background_with_len<W: Write + Send + 'static>(
        &self,
        writer: W,
        len: u64,
    ) -> Result<NpyWriter<Background<W>>> {
        self.writer_with_len(Background::new(writer), len)?
            .on_thread(self.pipelined())
    }
}

impl<W: Write + Send + 'static> NpyWriter<Background<W>> {
    /// A writer for records of `T` with its blocks written on a second thread (see
    /// [`WriterBuilder::background`]).
    pub fn background<T: NpyRecord>(writer: W) -> Result<Self>
    where
        W: Seek,
    {
        WriterBuilder::new().record::<T>().background(writer)
    }

    /// Hands the blocks to a thread writing to the shared writer, if `yes`.
    fn on_thread(mut self, yes: bool) -> Result<Self> {
        if yes {
            self.blocks.pipe = Some(Pipe::shared(&self.inner)?);
        }
        Ok(self)
    }
}

impl NpyWriter<File> {
    /// A writer for records of `T` into a new file at `path`, count not known up front (see
    /// [`WriterBuilder::create_path`]): the fastest way to write a file record by record.
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("npywriter-create-{}.npy", std::process::id()));
    /// let mut w = npy_serde::NpyWriter::create::<f32>(&path)?;
    /// for i in 0..100 {
    ///     w.write(&(i as f32))?;
    /// }
    /// w.finish()?;
    /// assert_eq!(npy_serde::from_path::<_, f32>(&path)?[99], 99.0);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn create<T: NpyRecord>(path: impl AsRef<Path>) -> Result<Self> {
        WriterBuilder::new().record::<T>().create_path(path)
    }

    /// Hands the blocks to a writing thread (see `super::pipe`), if `yes`.
    fn piped(mut self, yes: bool) -> Result<Self> {
        if yes {
            self.blocks.pipe = Some(Pipe::new(&self.inner)?);
        }
        Ok(self)
    }
}

pub(super) fn stream_header(base: &DType, sub: &[u64], fortran: bool, count: u64) -> Header {
    let mut shape = vec![count];
    shape.extend_from_slice(sub);
    Header {
        dtype: base.clone(),
        shape,
        fortran_order: fortran,
    }
}

/// The most records of dtype `elem` an array can hold (element and byte counts fit `i64`).
pub(super) fn max_records(elem: &DType) -> u64 {
    i64::MAX as u64 / (elem.itemsize() as u64).max(1)
}

/// The header bytes for `h` in `version`, exactly `len` bytes long: NumPy's own bytes when they
/// have that length, else the same text re-padded with spaces (readers accept any padding).
pub(super) fn header_fitting(h: &Header, version: Version, len: usize) -> Result<Vec<u8>> {
    let canonical = h.to_bytes_with_version(Some(version))?;
    if canonical.len() == len {
        return Ok(canonical);
    }
    let prefix = version.prefix_len();
    let mut end = canonical.len();
    while end > prefix && matches!(canonical[end - 1], b' ' | b'\n') {
        end -= 1;
    }
    let text = &canonical[prefix..end];
    if prefix + text.len() + 1 > len {
        return Err(Error::write(format!(
            "the header for shape {} needs {} bytes but the file's header has {len}: there is no \
             room to grow it in place",
            pyliteral::repr_shape(&h.shape),
            prefix + text.len() + 1
        )));
    }
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&canonical[..8]);
    let hlen = len - prefix;
    if version == Version::V1_0 {
        let hlen = u16::try_from(hlen).map_err(|_| Error::overflow("the header length"))?;
        out.extend_from_slice(&hlen.to_le_bytes());
    } else {
        let hlen = u32::try_from(hlen).map_err(|_| Error::overflow("the header length"))?;
        out.extend_from_slice(&hlen.to_le_bytes());
    }
    out.extend_from_slice(text);
    out.resize(len - 1, b' ');
    out.push(b'\n');
    Ok(out)
}

pub(super) fn patch_at<W: Write + Seek>(w: &mut W, start: u64, bytes: &[u8]) -> io::Result<()> {
    let end = w.stream_position()?;
    w.seek(SeekFrom::Start(start))?;
    w.write_all(bytes)?;
    w.seek(SeekFrom::Start(end))?;
    Ok(())
}

pub(super) enum Mode<W> {
    /// The real header is written; exactly `expected` records must follow.
    Counted { expected: u64 },
    /// The header at `start` (`header_len` bytes, in `version`) is rewritten at `finish`.
    Patch {
        start: u64,
        header_len: usize,
        version: Version,
        /// The most records the header can describe.
        max: u64,
        patch: fn(&mut W, u64, &[u8]) -> io::Result<()>,
    },
}

/// A streaming `.npy` writer: records are appended one at a time (or a slice at a time) and
/// [`finish`](Self::finish) completes the file.
///
/// Created by [`WriterBuilder::writer_with_len`] (count known, any `Write`),
/// [`WriterBuilder::writer`] (count unknown, `Write + Seek`), [`WriterBuilder::append`] (an
/// existing file), or the shortcuts [`NpyWriter::with_len`], [`NpyWriter::new`] and
/// [`NpyWriter::append`].
///
/// A record that fails to serialize (a value out of range, a string too long) is not written
/// and the writer stays usable. A writer dropped without `finish` writes nothing more (buffered
/// records are discarded) and leaves a file that does not read as complete, see each
/// constructor.
///
/// ```
/// use npy_serde::NpyWriter;
/// use std::io::Cursor;
///
/// let mut w = NpyWriter::new::<[f32; 2]>(Cursor::new(Vec::new()))?;
/// for i in 0..5 {
///     w.write(&[i as f32, 0.5])?;
/// }
/// let bytes = w.finish()?.into_inner();
/// let h = npy_serde::header::parse_header(&bytes, &Default::default())?;
/// assert_eq!(h.header.shape, [5, 2]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct NpyWriter<W> {
    pub(super) inner: W,
    pub(super) blocks: Blocks,
    pub(super) elem: DType,
    pub(super) base: DType,
    pub(super) sub: Vec<u64>,
    pub(super) fortran: bool,
    pub(super) mode: Mode<W>,
    /// The exact tier for the record type last given to [`NpyWriter::write`] or
    /// [`NpyWriter::write_all`] (an `Option<WriteTier<T>>`, with its type id).
    pub(super) exact: Option<(TypeId, Box<dyn Any + Send>)>,
    /// The rename that [`NpyWriter::finish`] completes, for a writer into a new file at a path
    /// (see [`StagedFile`]); dropped unfinished, it removes the temporary file.
    pub(super) staged: Option<PendingRename>,
}

impl<W: Write> NpyWriter<W> {
    /// A writer for exactly `len` records of `T` (see [`WriterBuilder::writer_with_len`]).
    pub fn with_len<T: NpyRecord>(writer: W, len: u64) -> Result<Self> {
        WriterBuilder::new()
            .record::<T>()
            .writer_with_len(writer, len)
    }

    /// [`write`](Self::write) for any `Serialize` value the dtype accepts (no `NpyRecord`
    /// needed): one record, an element of the writer's dtype, through the general serializer.
    /// The same bytes and errors as `write`, which is several times faster for the writer's
    /// own `NpyRecord` type.
    #[inline(always)]
    pub fn write_serde<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        self.check_room(1)?;
        self.blocks.push(&mut self.inner, record)
    }

    /// [`write_all`](Self::write_all) for any `Serialize` values: records from a slice. The
    /// space is checked for all of them first; if one fails to serialize, the ones before it
    /// are written and the error names its index.
    pub fn write_all_serde<T: Serialize>(&mut self, records: &[T]) -> Result<()> {
        self.check_room(records.len() as u64)?;
        self.blocks.push_all(&mut self.inner, records, &mut None)
    }

    /// Writes one record of a type that knows its dtype (`#[derive(Serialize, NpyRecord)]`;
    /// numbers, `bool`, arrays). When the array's dtype is `T`'s, the record is encoded on the
    /// exact tier of [`to_writer`](crate::to_writer), with every check resolved at compile
    /// time; otherwise as [`write_serde`](Self::write_serde) encodes it, with the same bytes
    /// and errors. [`write_serde`](Self::write_serde) takes any `Serialize` value the dtype
    /// accepts.
    ///
    /// ```
    /// # use npy_serde::{NpyRecord, NpyWriter};
    /// # use serde::Serialize;
    /// #[derive(Serialize, NpyRecord)]
    /// struct Rec { id: i64, x: f64 }
    ///
    /// let mut w = NpyWriter::with_len::<Rec>(Vec::new(), 1000)?;
    /// for i in 0..1000 {
    ///     w.write(&Rec { id: i, x: 0.5 })?;
    /// }
    /// let bytes = w.finish()?;
    /// # assert_eq!(bytes.len(), 128 + 16 * 1000);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    #[inline]
    pub fn write<T: Serialize + NpyRecord + 'static>(&mut self, record: &T) -> Result<()> {
        self.check_room(1)?;
        let tier = exact_for::<T>(&mut self.exact, &self.elem);
        self.blocks.push_exact(&mut self.inner, record, tier)
    }

    /// Writes records from a slice, as [`write`](Self::write) writes each; plain data without
    /// padding is written as its bytes, with one `write`. The space is checked for all of them
    /// first; if one fails to serialize, the ones before it are written and the error names its
    /// index.
    pub fn write_all<T: Serialize + NpyRecord + 'static>(&mut self, records: &[T]) -> Result<()> {
        self.check_room(records.len() as u64)?;
        let tier = exact_for::<T>(&mut self.exact, &self.elem);
        let raw = tier.as_ref().and_then(|t| t.raw).and_then(|f| f(records));
        match raw {
            Some(bytes) => self
                .blocks
                .push_raw(&mut self.inner, bytes, records.len() as u64),
            None => self.blocks.push_all(&mut self.inner, records, tier),
        }
    }

    /// Writes `n` whole records given as their bytes, in the writer's dtype (byte order and
    /// padding included): the Arrow bridge encodes a batch's columns itself.
    #[doc(hidden)]
    pub fn write_raw_records(&mut self, bytes: &[u8], n: u64) -> Result<()> {
        self.check_room(n)?;
        self.blocks.push_raw_buffered(&mut self.inner, bytes, n)
    }

    /// Hands the blocks to a thread writing to `file` (see `super::pipe`), which must be the
    /// file this writer writes to (a duplicate of its descriptor, sharing its offset).
    #[doc(hidden)]
    pub fn piped_on(mut self, file: &File) -> Result<Self> {
        self.blocks.pipe = Some(Pipe::new(file)?);
        Ok(self)
    }

    /// Number of records in the array so far (including an appended-to file's own).
    pub fn len(&self) -> u64 {
        self.blocks.count
    }

    /// True if the array has no records yet.
    pub fn is_empty(&self) -> bool {
        self.blocks.count == 0
    }

    /// The dtype of one record (a subarray dtype folds into the array's shape).
    pub fn dtype(&self) -> &DType {
        &self.elem
    }

    /// The underlying writer (data still in the block buffer has not reached it yet).
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Writes out buffered records and completes the header; returns the underlying writer,
    /// positioned after the data.
    ///
    /// For a counted writer, fails if the number of records differs from the count declared.
    /// For a seekable or appending writer, writes the final header over the provisional one
    /// (the data is written and flushed first, then the header).
    pub fn finish(mut self) -> Result<W> {
        self.blocks.settle(&mut self.inner)?;
        if let Some(pipe) = &mut self.blocks.pipe {
            pipe.release()?;
        }
        let count = self.blocks.count;
        match self.mode {
            Mode::Counted { expected } => {
                if count != expected {
                    return Err(Error::write(format!(
                        "{count} records written but {expected} were declared: the file is incomplete"
                    )));
                }
            }
            Mode::Patch {
                start,
                header_len,
                version,
                patch,
                ..
            } => {
                self.inner.flush()?;
                let h = stream_header(&self.base, &self.sub, self.fortran, count);
                let bytes = header_fitting(&h, version, header_len)?;
                patch(&mut self.inner, start, &bytes)?;
            }
        }
        self.inner.flush()?;
        if let Some(staged) = self.staged.take() {
            staged.commit()?;
        }
        Ok(self.inner)
    }

    #[inline]
    pub(super) fn check_room(&self, n: u64) -> Result<()> {
        let count = self.blocks.count;
        let (limit, why) = match &self.mode {
            Mode::Counted { expected } => (*expected, "were declared when the writer was created"),
            Mode::Patch { max, .. } => (*max, "fit in the file's header"),
        };
        if count.checked_add(n).is_none_or(|t| t > limit) {
            return Err(no_room(n, count, limit, why));
        }
        Ok(())
    }
}

impl<W: Write + Seek> NpyWriter<W> {
    /// A writer for records of `T`, count not known up front (see [`WriterBuilder::writer`]).
    pub fn new<T: NpyRecord>(writer: W) -> Result<Self> {
        WriterBuilder::new().record::<T>().writer(writer)
    }
}

impl<F: Read + Write + Seek> NpyWriter<F> {
    /// Appends to the 1-D `.npy` array in `file`, with the file's dtype (see
    /// [`WriterBuilder::append`]).
    pub fn append(file: F) -> Result<Self> {
        WriterBuilder::new().append(file)
    }
}

impl<W> std::fmt::Debug for NpyWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpyWriter")
            .field("dtype", &self.elem.descr())
            .field("records", &self.blocks.count)
            .field(
                "mode",
                &match self.mode {
                    Mode::Counted { .. } => "counted",
                    Mode::Patch { .. } => "patch",
                },
            )
            .finish_non_exhaustive()
    }
}

/// [`NpyWriter::check_room`]'s error, out of line (it runs once, and kept the format out of
/// every record's path).
#[cold]
#[inline(never)]
fn no_room(n: u64, count: u64, limit: u64, why: &str) -> Error {
    Error::write(format!(
        "cannot write {n} more record(s) after {count}: only {limit} {why}"
    ))
    .at_record(count)
}

/// The cached exact tier for `T` (built, or rebuilt for another type, on first use).
///
/// Inlined into every caller (a compare of type ids and a cast): with a plain `#[inline]`, a
/// program with writers of two types (a `File` and a `BufWriter<File>`) gave it two callers
/// and LLVM kept it out of line, a call per record. The building is out of line, cold.
#[inline(always)]
fn exact_for<'a, T: Serialize + NpyRecord + 'static>(
    cache: &'a mut Option<(TypeId, Box<dyn Any + Send>)>,
    elem: &DType,
) -> &'a mut Option<WriteTier<T>> {
    let want = TypeId::of::<Option<WriteTier<T>>>();
    let tier = match cache {
        Some((id, tier)) if *id == want => tier,
        _ => build_exact::<T>(cache, elem),
    };
    debug_assert_eq!(want, (**tier).type_id());
    // Not `downcast_mut`: its virtual `type_id()` call returns the id through memory, and
    // comparing it stalled each record (24 ns per record of f64 measured, 10 without).
    // SAFETY: the box was made from an `Option<WriteTier<T>>`, whose type id is stored beside
    // it (`build_exact`) and was just compared equal to that type's, or it was just built
    // from one: the box holds exactly that type, so the pointer cast is to its real type,
    // borrowed mutably for `'a` through `cache`.
    unsafe { &mut *(&mut **tier as *mut (dyn Any + Send)).cast::<Option<WriteTier<T>>>() }
}

/// [`exact_for`]'s first use for `T`: builds the tier and caches it with its type id.
#[cold]
#[inline(never)]
fn build_exact<'a, T: Serialize + NpyRecord + 'static>(
    cache: &'a mut Option<(TypeId, Box<dyn Any + Send>)>,
    elem: &DType,
) -> &'a mut Box<dyn Any + Send> {
    let want = TypeId::of::<Option<WriteTier<T>>>();
    let tier: Option<WriteTier<T>> = write_tier::<T>(elem);
    &mut cache.insert((want, Box::new(tier))).1
}
