//! Writing `.npz` archives.

use std::io::{self, Seek, Write};

use serde::Serialize;
use zip::write::{SimpleFileOptions, StreamWriter};
use zip::ZipWriter;

use super::{from_zip, name_for_key, positional_key, quote, zip_error, Compression};
use crate::error::{Error, Result};
use crate::header::Header;
use crate::record::NpyRecord;
use crate::value::Array;
use crate::write::{NpyWriter, WriterBuilder};

/// Unix permissions NumPy's members get (Python's `zipfile` default for `ZipFile.open(name, "w")`).
const MEMBER_PERMISSIONS: u32 = 0o600;

/// The boundary [`NpzWriter::align`] puts stored members' data on: NumPy's `.npy` header
/// alignment, so a member's array data (which starts at a multiple of 64 in the `.npy` file)
/// is at a multiple of 64 in the archive too.
pub const ALIGNMENT: u64 = 64;

/// The member started with `start_member` and not finished yet.
#[derive(Debug)]
struct Pending {
    name: String,
    /// Data bytes the member must get, if checked here.
    expected: Option<u64>,
    written: u64,
}

/// The writer logic shared by [`NpzWriter`] and [`NpzStreamWriter`].
pub(super) struct Core<Z: Write + Seek> {
    zip: ZipWriter<Z>,
    pub(super) compression: Compression,
    /// Stored members padded so their `.npy` bytes start at a multiple of [`ALIGNMENT`](crate::npz::ALIGNMENT).
    pub(super) align: bool,
    pub(super) positional: usize,
    pending: Option<Pending>,
    /// Set once a member is left unfinished: the archive would be invalid.
    broken: Option<String>,
    /// The archive comment `finish` writes.
    pub(super) comment: Box<[u8]>,
    /// Whole deflated members queued for compression on all cores (`None`: deflated on this
    /// thread as they are written, as the appender does).
    #[cfg(feature = "parallel")]
    pipe: Option<super::par::Pipeline>,
    /// The names of the members added, queued ones included (with `pipe`: a queued member is
    /// not in the zip writer's directory yet, so duplicates are caught here).
    #[cfg(feature = "parallel")]
    names: std::collections::HashSet<String>,
}

impl<Z: Write + Seek> Core<Z> {
    pub(super) fn new(zip: ZipWriter<Z>) -> Self {
        Core {
            zip,
            compression: Compression::Stored,
            align: false,
            positional: 0,
            pending: None,
            broken: None,
            comment: Box::default(),
            #[cfg(feature = "parallel")]
            pipe: None,
            #[cfg(feature = "parallel")]
            names: std::collections::HashSet::new(),
        }
    }

    /// A core whose whole deflated members ([`write_member`](Self::write_member)) are deflated
    /// on all cores (feature `parallel`; without it, the same as [`new`](Self::new)).
    /// `stream`: the output cannot seek (sizes go in data descriptors).
    pub(super) fn new_parallel(zip: ZipWriter<Z>, stream: bool) -> Self {
        #[allow(unused_mut)] // without `parallel`
        let mut core = Self::new(zip);
        #[cfg(feature = "parallel")]
        {
            core.pipe = Some(super::par::Pipeline::new(stream));
        }
        #[cfg(not(feature = "parallel"))]
        let _ = stream;
        core
    }

    /// Writes every queued member (waiting for its compression); a failure leaves the archive
    /// unusable.
    fn drain(&mut self) -> Result<()> {
        #[cfg(feature = "parallel")]
        if let Some(pipe) = self.pipe.as_mut().filter(|p| !p.is_empty())
            && let Err(e) = pipe.write_ready(&mut self.zip, true)
        {
            self.broken = Some(format!("writing a deflated member failed: {e}"));
            return Err(e);
        }
        Ok(())
    }

    /// True if a whole member added now is queued for deflating on all cores
    /// ([`queue_member`](Self::queue_member)).
    #[cfg(feature = "parallel")]
    fn queues(&self) -> bool {
        self.pipe.is_some() && self.compression == Compression::Deflate
    }

    /// Queues whole member `name`, written by `write`, for deflating on all cores.
    #[cfg(feature = "parallel")]
    fn queue_member(
        &mut self,
        name: &str,
        write: impl FnOnce(&mut dyn Write) -> Result<()>,
    ) -> Result<()> {
        // Checked as `start_file` checks them, before anything is queued.
        self.check_ready()?;
        if self.names.contains(name) {
            return Err(zip_error(format!(
                "cannot start member {}: the archive already has a member of that name",
                quote(name)
            )));
        }
        let Some(pipe) = self.pipe.as_mut() else {
            return Err(zip_error("this archive writer deflates members in line"));
        };
        let mut sink = pipe.member(name.to_string());
        let result = write(&mut sink).and_then(|()| sink.finish());
        if let Err(e) = result {
            // `finish` failing leaves the member queued, unsealed: drop it too.
            pipe.abandon_unsealed();
            self.broken = Some(format!("writing member {} failed: {e}", quote(name)));
            return Err(e);
        }
        self.names.insert(name.to_string());
        // Write the members already deflated, without waiting for the others.
        if let Err(e) = pipe.write_ready(&mut self.zip, false) {
            self.broken = Some(format!("writing a deflated member failed: {e}"));
            return Err(e);
        }
        Ok(())
    }

    pub(super) fn check_ready(&mut self) -> Result<()> {
        if let Some(p) = self.pending.take() {
            let of = p.expected.map_or(String::new(), |e| format!(" of its {e}"));
            self.broken = Some(format!(
                "member {} was not finished ({} bytes{of} were written)",
                quote(&p.name),
                p.written,
            ));
        }
        match &self.broken {
            Some(msg) => Err(zip_error(format!("cannot continue the archive: {msg}"))),
            None => Ok(()),
        }
    }

    /// Starts member `name` (zip64 sizes always, like NumPy's `force_zip64=True`).
    fn start_file(&mut self, name: &str) -> Result<()> {
        self.check_ready()?;
        self.drain()?;
        let mut options = SimpleFileOptions::default()
            .compression_method(self.compression.to_zip()?)
            .large_file(true)
            .unix_permissions(MEMBER_PERMISSIONS);
        if self.align && self.compression == Compression::Stored {
            // The padding goes in the local header's extra field, under Android zipalign's
            // id (0xd935), which readers (Python's zipfile, so NumPy) skip.
            options = options.with_android_alignment(ALIGNMENT as u16);
        }
        #[cfg(feature = "parallel")]
        if self.pipe.is_some() && self.names.contains(name) {
            return Err(zip_error(format!(
                "cannot start member {}: the archive already has a member of that name",
                quote(name)
            )));
        }
        self.zip
            .start_file(name, options)
            .map_err(|e| from_zip(&format!("cannot start member {}", quote(name)), e))?;
        #[cfg(feature = "parallel")]
        if self.pipe.is_some() {
            self.names.insert(name.to_string());
        }
        Ok(())
    }

    pub(super) fn start_member(&mut self, key: &str, header: &Header) -> Result<MemberWriter<'_>> {
        let expected = header.data_len()?;
        let bytes = header.to_bytes()?;
        let name = name_for_key(key);
        self.start_file(&name)?;
        self.zip.write_all(&bytes)?;
        self.pending = Some(Pending {
            name,
            expected: Some(expected),
            written: 0,
        });
        Ok(MemberWriter {
            zip: &mut self.zip,
            pending: &mut self.pending,
        })
    }

    /// Starts member `key.npy` whose whole content (header included) a streaming `.npy` writer
    /// produces; it must be finished through the returned handle.
    pub(super) fn start_records(
        &mut self,
        key: &str,
        options: &WriterBuilder,
        len: u64,
    ) -> Result<NpzRecordWriter<'_>> {
        let name = name_for_key(key);
        self.start_file(&name)?;
        self.pending = Some(Pending {
            name,
            expected: None,
            written: 0,
        });
        let member = MemberWriter {
            zip: &mut self.zip,
            pending: &mut self.pending,
        };
        // On error the member stays pending, so the archive refuses to continue.
        let inner = options.writer_with_len(member, len)?;
        Ok(NpzRecordWriter { inner })
    }

    /// Writes a whole member with `write`; a failure leaves the archive unusable.
    pub(super) fn write_member(
        &mut self,
        name: &str,
        write: impl FnOnce(&mut dyn Write) -> Result<()>,
    ) -> Result<()> {
        #[cfg(feature = "parallel")]
        if self.queues() {
            return self.queue_member(name, write);
        }
        self.start_file(name)?;
        let result = write(&mut self.zip);
        if let Err(e) = &result {
            self.broken = Some(format!("writing member {} failed: {e}", quote(name)));
        }
        result
    }

    pub(super) fn start_raw(&mut self, name: &str) -> Result<RawMemberWriter<'_>> {
        self.start_file(name)?;
        Ok(RawMemberWriter { zip: &mut self.zip })
    }

    pub(super) fn add_raw(&mut self, name: &str, parts: &[&[u8]]) -> Result<()> {
        let write = |w: &mut dyn Write| -> Result<()> {
            for p in parts {
                w.write_all(p)?;
            }
            Ok(())
        };
        #[cfg(feature = "parallel")]
        if self.queues() {
            return self.queue_member(name, write);
        }
        self.start_file(name)?;
        write(&mut self.zip)
    }

    pub(super) fn next_positional(&mut self) -> String {
        let key = positional_key(self.positional);
        self.positional += 1;
        key
    }

    pub(super) fn finish(mut self) -> Result<Z> {
        self.check_ready()?;
        self.drain()?;
        if !self.comment.is_empty() {
            let comment = std::mem::take(&mut self.comment);
            (self.zip.set_raw_comment(comment))
                .map_err(|e| from_zip("cannot set the archive comment", e))?;
        }
        self.zip
            .finish()
            .map_err(|e| from_zip("cannot finish the archive", e))
    }
}

/// Writes the array data of one member started with [`NpzWriter::start_member`] (or
/// [`NpzStreamWriter::start_member`]); the header is already written.
///
/// Exactly `shape` × `itemsize` bytes must be written, then [`finish`](Self::finish) called:
/// writing more fails, and if the writer is dropped early the archive refuses to continue
/// (adding a member or finishing fails), since the member would be invalid.
pub struct MemberWriter<'a> {
    zip: &'a mut dyn Write,
    pending: &'a mut Option<Pending>,
}

impl std::fmt::Debug for MemberWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberWriter")
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl MemberWriter<'_> {
    /// Data bytes still expected.
    pub fn remaining(&self) -> u64 {
        self.pending
            .as_ref()
            .and_then(|p| p.expected.map(|e| e - p.written))
            .unwrap_or(0)
    }

    /// Checks that all the data was written and completes the member.
    pub fn finish(self) -> Result<()> {
        let p = self
            .pending
            .take()
            .ok_or_else(|| zip_error("the member was already finished"))?;
        match p.expected {
            Some(e) if e != p.written => Err(Error::write(format!(
                "member {} got {} data bytes, but its header declares {e}",
                quote(&p.name),
                p.written,
            ))),
            _ => Ok(()),
        }
    }
}

impl Write for MemberWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let p = self
            .pending
            .as_mut()
            .ok_or_else(|| io::Error::from(zip_error("the member was already finished")))?;
        let left = p.expected.map_or(u64::MAX, |e| e - p.written);
        if left == 0 && !buf.is_empty() {
            return Err(Error::write(format!(
                "member {}: more data than the {} bytes its header declares",
                quote(&p.name),
                p.written
            ))
            .into());
        }
        let n = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.zip.write(&buf[..n])?;
        p.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.zip.flush()
    }
}

/// Streams the records of one member, started with [`NpzWriter::start_records`] (or the
/// [`NpzStreamWriter`] method): a [`NpyWriter`] for a declared number of records inside the
/// archive. [`finish`](Self::finish) checks the count and completes the member; if the writer
/// is dropped before, the archive refuses to continue.
pub struct NpzRecordWriter<'a> {
    inner: NpyWriter<MemberWriter<'a>>,
}

impl std::fmt::Debug for NpzRecordWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzRecordWriter")
            .field("inner", &self.inner)
            .finish()
    }
}

impl NpzRecordWriter<'_> {
    /// Writes one record of any `Serialize` type the member's dtype accepts (see
    /// [`NpyWriter::write_serde`]).
    pub fn write_serde<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<()> {
        self.inner.write_serde(record)
    }

    /// Writes records of any `Serialize` type from a slice (see [`NpyWriter::write_all_serde`]).
    pub fn write_all_serde<T: Serialize>(&mut self, records: &[T]) -> Result<()> {
        self.inner.write_all_serde(records)
    }

    /// Writes one record of a type that knows its dtype, on the exact tier (see
    /// [`NpyWriter::write`]).
    pub fn write<T: Serialize + NpyRecord + 'static>(&mut self, record: &T) -> Result<()> {
        self.inner.write(record)
    }

    /// Writes records of a type that knows its dtype from a slice (see
    /// [`NpyWriter::write_all`]).
    pub fn write_all<T: Serialize + NpyRecord + 'static>(&mut self, records: &[T]) -> Result<()> {
        self.inner.write_all(records)
    }

    /// Records written so far.
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// True if no record was written yet.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Writes out buffered records, checks that the declared number was written, and completes
    /// the member.
    pub fn finish(self) -> Result<()> {
        self.inner.finish()?.finish()
    }
}

/// Writes the bytes of a member whose whole content the caller produces (a complete `.npy`
/// stream, for instance from this crate's streaming writer, or a non-`.npy` member); returned
/// by [`NpzWriter::start_raw`]. The member ends when the next one starts or the archive is
/// finished. Nothing is checked: use [`MemberWriter`] for checked array data.
pub struct RawMemberWriter<'a> {
    zip: &'a mut dyn Write,
}

impl std::fmt::Debug for RawMemberWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawMemberWriter").finish_non_exhaustive()
    }
}

impl Write for RawMemberWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.zip.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.zip.flush()
    }
}

macro_rules! writer_methods {
    () => {
        /// Sets the compression of the members added from now on (per-member compression: call
        /// it between members). [`Compression::Stored`] is `numpy.savez`,
        /// [`Compression::Deflate`] (zlib level 6) is `numpy.savez_compressed`; other methods
        /// make the next member fail.
        pub fn set_compression(&mut self, compression: Compression) {
            self.core.compression = compression;
        }

        /// Builder form of [`set_compression`](Self::set_compression).
        pub fn with_compression(mut self, compression: Compression) -> Self {
            self.core.compression = compression;
            self
        }

        /// Pads each stored member added from now on so that its `.npy` bytes, and so its array
        /// data (NumPy's headers end at a multiple of 64), start at a multiple of
        /// [`ALIGNMENT`](crate::npz::ALIGNMENT) (64) in the archive file: every such member can then be viewed in place by
        /// [`MmapNpz`](super::MmapNpz) as any number type. The padding is an extra field of the
        /// member's local header (as Android's `zipalign` does), which NumPy, Python's `zipfile`
        /// and other zip readers skip: `np.load` reads the archive as it reads one without
        /// padding. Deflated members are not padded (they cannot be viewed in place anyway).
        ///
        /// Off by default: the local headers are then byte for byte `np.savez`'s, so the archive
        /// is reproducible against NumPy; an aligned archive differs from it in those headers
        /// (and is up to 64 bytes per member larger).
        ///
        /// ```
        /// # use npy_serde::npz::{NpzArchive, NpzWriter};
        /// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new())).align(true);
        /// w.add("a", &[1.0f64, 2.0])?;
        /// w.add("b", &[3u8])?;
        /// let bytes = w.finish()?.into_inner();
        /// assert_eq!(NpzArchive::from_bytes(&bytes)?.read::<f64>("a")?, [1.0, 2.0]);
        /// # Ok::<(), npy_serde::Error>(())
        /// ```
        pub fn align(mut self, yes: bool) -> Self {
            self.core.align = yes;
            self
        }

        /// [`align`](Self::align) for the members added from now on, on a writer in use.
        pub fn set_align(&mut self, yes: bool) {
            self.core.align = yes;
        }

        /// Sets the archive's comment (the zip end record's, at most 65535 bytes; empty by
        /// default, as NumPy writes it), written by `finish`. `np.load` and Python's `zipfile`
        /// ignore it when loading; npy-serde's tools keep a small record there (npy-arrow's
        /// `order` module: the order `npy convert --sorted-by` verified).
        ///
        /// ```
        /// # use npy_serde::npz::{NpzArchive, NpzWriter};
        /// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
        /// w.add("a", &[1u8])?;
        /// w.set_comment(b"made by a test")?;
        /// let bytes = w.finish()?.into_inner();
        /// assert_eq!(NpzArchive::from_bytes(&bytes)?.comment(), b"made by a test");
        /// # Ok::<(), npy_serde::Error>(())
        /// ```
        pub fn set_comment(&mut self, comment: &[u8]) -> Result<()> {
            if comment.len() > usize::from(u16::MAX) {
                return Err(zip_error(format!(
                    "an archive comment holds at most 65535 bytes, not {}",
                    comment.len()
                )));
            }
            self.core.comment = comment.into();
            Ok(())
        }

        /// The compression the next member will use.
        pub fn compression(&self) -> Compression {
            self.core.compression
        }

        /// Adds `records` as member `key.npy`: a 1-D array with the dtype of `T` (a subarray
        /// dtype such as `[f32; 3]` folds into the shape, as in [`crate::to_writer`]).
        pub fn add<T: Serialize + NpyRecord + Sync>(
            &mut self,
            key: &str,
            records: &[T],
        ) -> Result<()> {
            self.core
                .write_member(&name_for_key(key), |w| crate::write::to_writer(w, records))
        }

        /// Like [`add`](Self::add) with writing options (explicit dtype, shape, byte order,
        /// Fortran order, header version).
        pub fn add_with<T: Serialize + NpyRecord + Sync>(
            &mut self,
            key: &str,
            options: &WriterBuilder,
            records: &[T],
        ) -> Result<()> {
            self.core
                .write_member(&name_for_key(key), |w| options.to_writer(w, records))
        }

        /// Adds a dynamic [`Array`] as member `key.npy`.
        pub fn add_array(&mut self, key: &str, array: &Array) -> Result<()> {
            self.core.write_member(&name_for_key(key), |w| {
                WriterBuilder::new().write_array(w, array)
            })
        }

        /// Adds an `ndarray` array (any `ArrayBase`: owned, a view, strided) as member
        /// `key.npy`, with the bytes [`crate::ndarray::write_npy`] writes (`np.savez`'s).
        /// Feature `ndarray`.
        #[cfg(feature = "ndarray")]
        pub fn add_ndarray<S, D>(
            &mut self,
            key: &str,
            array: &::ndarray::ArrayBase<S, D>,
        ) -> Result<()>
        where
            S: ::ndarray::Data,
            S::Elem: Serialize + NpyRecord + Sync + Clone,
            D: ::ndarray::Dimension,
        {
            self.core.write_member(&name_for_key(key), |w| {
                crate::ndarray::WriteNpyExt::write_npy(array, w)
            })
        }

        /// Adds `records` under the next positional key (`arr_0`, `arr_1`, ..., as
        /// `numpy.savez(file, *arrays)` names them) and returns the key. A keyword member with
        /// the same name makes this fail, as in NumPy.
        pub fn add_positional<T: Serialize + NpyRecord + Sync>(
            &mut self,
            records: &[T],
        ) -> Result<String> {
            let key = self.core.next_positional();
            self.add(&key, records)?;
            Ok(key)
        }

        /// Adds a dynamic [`Array`] under the next positional key and returns the key.
        pub fn add_positional_array(&mut self, array: &Array) -> Result<String> {
            let key = self.core.next_positional();
            self.add_array(&key, array)?;
            Ok(key)
        }

        /// Starts member `key.npy` holding exactly `len` records of `T`, written one at a time
        /// through the returned writer (streamed: memory stays O(record) whatever `len`).
        pub fn start_records<T: NpyRecord>(
            &mut self,
            key: &str,
            len: u64,
        ) -> Result<NpzRecordWriter<'_>> {
            self.core
                .start_records(key, &WriterBuilder::new().record::<T>(), len)
        }

        /// Like [`start_records`](Self::start_records) with writing options (the dtype must be
        /// set, by [`WriterBuilder::dtype`] or [`WriterBuilder::record`]).
        pub fn start_records_with(
            &mut self,
            key: &str,
            options: &WriterBuilder,
            len: u64,
        ) -> Result<NpzRecordWriter<'_>> {
            self.core.start_records(key, options, len)
        }

        /// Starts member `key.npy` for `header`, writes the header, and returns a writer for
        /// the array data (exactly `header.data_len()` bytes, in the header's byte order and
        /// memory order). The member is streamed: nothing is held in memory, so it may be
        /// larger than 4 GiB.
        pub fn start_member(&mut self, key: &str, header: &Header) -> Result<MemberWriter<'_>> {
            self.core.start_member(key, header)
        }

        /// Like [`start_member`](Self::start_member) under the next positional key (`arr_0`,
        /// `arr_1`, ...); returns the key with the writer.
        pub fn start_positional(&mut self, header: &Header) -> Result<(String, MemberWriter<'_>)> {
            let key = self.core.next_positional();
            let w = self.core.start_member(&key, header)?;
            Ok((key, w))
        }

        /// Starts a member named exactly `name` (no `.npy` appended) and returns a writer for
        /// all its bytes: for a complete `.npy` stream produced elsewhere (then name it
        /// `key.npy`), or any other content. Streamed, not length-checked.
        pub fn start_raw(&mut self, name: &str) -> Result<RawMemberWriter<'_>> {
            self.core.start_raw(name)
        }

        /// Adds a member named exactly `name` (no `.npy` appended) holding `bytes`: a
        /// non-array member, which `np.load` returns as raw bytes, or a complete `.npy` file.
        pub fn add_raw(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
            self.core.add_raw(name, &[bytes])
        }

        /// Like [`add_raw`](Self::add_raw) for a member whose bytes are `parts` one after the
        /// other, without joining them first: a `.npy` header and the array's data held
        /// elsewhere, for instance. A deflated member is deflated on all cores (see
        /// [`NpzWriter`](crate::npz::NpzWriter)).
        ///
        /// ```
        /// # use npy_serde::npz::{NpzArchive, NpzWriter};
        /// # use npy_serde::Header;
        /// let header = Header::new("<u2".parse()?, vec![2]).to_bytes()?;
        /// let mut w = NpzWriter::new_compressed(std::io::Cursor::new(Vec::new()));
        /// w.add_raw_parts("ids.npy", &[&header, &[7, 0, 9, 0]])?;
        /// let bytes = w.finish()?.into_inner();
        /// assert_eq!(NpzArchive::from_bytes(&bytes)?.read::<u16>("ids")?, [7, 9]);
        /// # Ok::<(), npy_serde::Error>(())
        /// ```
        pub fn add_raw_parts(&mut self, name: &str, parts: &[&[u8]]) -> Result<()> {
            self.core.add_raw(name, parts)
        }

        /// The number of positional arrays added so far (the next one is `arr_{n}`).
        pub fn positional_count(&self) -> usize {
            self.core.positional
        }
    };
}

pub(super) use writer_methods;

/// Writes an `.npz` archive to a seekable output (a file, a `Cursor`).
///
/// Members are named `key.npy`; [`add_positional`](Self::add_positional)-style methods use
/// `arr_0`, `arr_1`, ... like `numpy.savez(file, *arrays)`. The local headers are
/// byte-for-byte what NumPy writes (zip64 extra field on every member, 1980-01-01 timestamp,
/// mode `0600`), so archives are reproducible. An archive with no members is the 22-byte
/// empty zip file, like `numpy.savez(file)`.
///
/// Member names must be unique; adding a key twice is an error (the archive stays usable).
/// A member that fails half-way (a value that does not fit the dtype, an I/O error) or a
/// [`MemberWriter`]/[`NpzRecordWriter`] dropped before its `finish` makes every later call,
/// including [`finish`](Self::finish), fail. Dropping the writer without `finish` still lets the
/// zip layer write the central directory; a member left incomplete is then shorter than its
/// `.npy` header says, which `np.load` and this crate reject when that member is loaded.
///
/// # Deflated members on all cores
///
/// With feature `parallel` (a default feature), a whole member added deflated
/// ([`add`](Self::add), [`add_with`](Self::add_with), [`add_array`](Self::add_array),
/// [`add_raw`](Self::add_raw), the positional forms) is deflated on rayon's pool, pigz-style:
/// cut into chunks of 1 MiB, each primed with the 32 KiB before it (so the ratio stays zlib's),
/// which together form one deflate stream; the member decompresses to the same bytes, under
/// the same CRC-32, as when deflated in one piece. The call returns once the member's chunks are
/// handed over, and members are written in the order they were added as their chunks complete,
/// so small members are deflated in parallel with each other and the next member is encoded
/// while the last one is compressed. At most 2 × (threads + 1) chunks are in flight; a member's
/// compressed bytes are held until it is written. An I/O error writing a queued member is
/// reported by the next call or by `finish`, and dropping the writer without `finish` loses the
/// members still queued. Members streamed through [`start_member`](Self::start_member),
/// [`start_records`](Self::start_records) or [`start_raw`](Self::start_raw) are deflated on
/// the calling thread as they are written (the queue is written out first).
///
/// ```
/// use std::io::Write;
/// use npy_serde::npz::{Compression, NpzArchive, NpzWriter};
/// use npy_serde::Header;
///
/// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
/// // Whole arrays from slices (the dtype comes from `NpyRecord`), like np.savez(f, ids=...).
/// w.add("ids", &[10u32, 20, 30])?;
/// w.add("xyz", &[[0.5f32, 1.5, 2.5]])?; // shape (1, 3)
/// // Per-member compression, and unnamed arrays: arr_0, arr_1, ...
/// w.set_compression(Compression::Deflate);
/// assert_eq!(w.add_positional(&[true, false])?, "arr_0");
/// // A large member streamed record by record, never held in memory.
/// let mut r = w.start_records::<f64>("big", 1000)?;
/// for i in 0..1000 {
///     r.write(&(i as f64))?;
/// }
/// r.finish()?;
/// // Or raw data bytes under a header you build.
/// let mut m = w.start_member("raw", &Header::new("|u1".parse()?, vec![2, 2]))?;
/// m.write_all(&[1, 2, 3, 4])?;
/// m.finish()?;
/// let bytes = w.finish()?.into_inner();
///
/// let mut npz = NpzArchive::from_bytes(&bytes)?;
/// assert_eq!(npz.keys().collect::<Vec<_>>(), ["ids", "xyz", "arr_0", "big", "raw"]);
/// assert_eq!(npz.member("arr_0").unwrap().compression, Compression::Deflate);
/// assert_eq!(npz.read::<u32>("ids")?, [10, 20, 30]);
/// assert_eq!(npz.deserialize::<Vec<[f32; 3]>>("xyz")?, [[0.5, 1.5, 2.5]]);
/// assert_eq!(npz.read::<f64>("big")?.len(), 1000);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct NpzWriter<W: Write + Seek> {
    core: Core<W>,
}

impl<W: Write + Seek> std::fmt::Debug for NpzWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzWriter")
            .field("compression", &self.core.compression)
            .field("positional", &self.core.positional)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Seek> NpzWriter<W> {
    pub(super) fn from_core(core: Core<W>) -> Self {
        NpzWriter { core }
    }

    /// A writer storing members uncompressed, like `numpy.savez`.
    pub fn new(writer: W) -> Self {
        NpzWriter {
            core: Core::new_parallel(ZipWriter::new(writer), false),
        }
    }

    /// A writer deflating members, like `numpy.savez_compressed` (whole members on all cores,
    /// see [Deflated members on all cores](Self#deflated-members-on-all-cores)).
    ///
    /// ```
    /// use npy_serde::npz::{NpzArchive, NpzWriter};
    ///
    /// let x: Vec<f64> = (0..1_000_000).map(|i| f64::from(i) * 0.5).collect();
    /// let mut w = NpzWriter::new_compressed(std::io::Cursor::new(Vec::new()));
    /// w.add("x", &x)?; // 8 MB: eight chunks, deflated in parallel
    /// w.add("n", &[1u8, 2, 3])?;
    /// let bytes = w.finish()?.into_inner();
    /// assert!(bytes.len() < 2_000_000);
    /// assert_eq!(NpzArchive::from_bytes(&bytes)?.read::<f64>("x")?, x);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn new_compressed(writer: W) -> Self {
        Self::new(writer).with_compression(Compression::Deflate)
    }

    /// A writer deflating every member on this thread, as it is written (the appender's way).
    #[cfg(all(test, feature = "parallel"))]
    pub(super) fn new_in_line(writer: W) -> Self {
        NpzWriter {
            core: Core::new(ZipWriter::new(writer)),
        }
    }

    /// Cuts whole deflated members into chunks of `chunk` bytes for the pool.
    #[cfg(all(test, feature = "parallel"))]
    pub(super) fn set_chunk(&mut self, chunk: usize) {
        if let Some(p) = self.core.pipe.as_mut() {
            p.set_chunk(chunk);
        }
    }

    writer_methods!();

    /// Writes the central directory and returns the output. Fails if a member started with
    /// [`start_member`](Self::start_member) was not finished.
    pub fn finish(self) -> Result<W> {
        self.core.finish()
    }
}

/// Writes an `.npz` archive to any `Write`, without seeking (a pipe, a socket, stdout).
///
/// The same methods as [`NpzWriter`]. Each member's sizes and CRC-32 follow its data in a
/// zip64 data descriptor, as NumPy does when it saves to a non-seekable stream; `np.load` and
/// [`NpzArchive`](super::NpzArchive) read such archives (from a file, once it is complete).
/// Whole members added deflated are compressed on all cores as [`NpzWriter`]'s are (see
/// [Deflated members on all cores](NpzWriter#deflated-members-on-all-cores)), with data
/// descriptors too.
///
/// ```
/// use std::io::Write;
/// use npy_serde::npz::{NpzArchive, NpzStreamWriter};
/// use npy_serde::Header;
///
/// let mut out: Vec<u8> = Vec::new();
/// let mut w = NpzStreamWriter::new_compressed(&mut out);
/// let mut m = w.start_member("ids", &Header::new("<u2".parse()?, vec![2]))?;
/// m.write_all(&[7, 0, 9, 0])?;
/// m.finish()?;
/// w.finish()?;
///
/// let mut npz = NpzArchive::from_bytes(&out)?;
/// let mut member = npz.by_key("ids")?;
/// member.header()?;
/// assert_eq!(member.read_raw()?, [7, 0, 9, 0]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct NpzStreamWriter<W: Write> {
    core: Core<StreamWriter<W>>,
}

impl<W: Write> std::fmt::Debug for NpzStreamWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzStreamWriter")
            .field("compression", &self.core.compression)
            .field("positional", &self.core.positional)
            .finish_non_exhaustive()
    }
}

impl<W: Write> NpzStreamWriter<W> {
    /// A streaming writer storing members uncompressed, like `numpy.savez`.
    pub fn new(writer: W) -> Self {
        NpzStreamWriter {
            core: Core::new_parallel(ZipWriter::new_stream(writer), true),
        }
    }

    /// A streaming writer deflating members, like `numpy.savez_compressed`.
    pub fn new_compressed(writer: W) -> Self {
        Self::new(writer).with_compression(Compression::Deflate)
    }

    /// A streaming writer deflating every member on this thread, as it is written.
    #[cfg(all(test, feature = "parallel"))]
    pub(super) fn new_in_line(writer: W) -> Self {
        NpzStreamWriter {
            core: Core::new(ZipWriter::new_stream(writer)),
        }
    }

    writer_methods!();

    /// Writes the central directory and returns the output. Fails if a member started with
    /// [`start_member`](Self::start_member) was not finished.
    pub fn finish(self) -> Result<W> {
        Ok(self.core.finish()?.into_inner())
    }
}
