//! Writing `.npz` archives.

use std::io::{self, Seek, Write};

use zip::write::{SimpleFileOptions, StreamWriter};
use zip::ZipWriter;

use super::{from_zip, name_for_key, positional_key, quote, zip_error, Compression};
use crate::error::{Error, Result};
use crate::header::Header;

/// Unix permissions NumPy's members get (Python's `zipfile` default for `ZipFile.open(name, "w")`).
const MEMBER_PERMISSIONS: u32 = 0o600;

/// The member started with `start_member` and not finished yet.
#[derive(Debug)]
struct Pending {
    name: String,
    expected: u64,
    written: u64,
}

/// The writer logic shared by [`NpzWriter`] and [`NpzStreamWriter`].
struct Core<Z: Write + Seek> {
    zip: ZipWriter<Z>,
    compression: Compression,
    positional: usize,
    pending: Option<Pending>,
    /// Set once a member is left unfinished: the archive would be invalid.
    broken: Option<String>,
}

impl<Z: Write + Seek> Core<Z> {
    fn new(zip: ZipWriter<Z>) -> Self {
        Core {
            zip,
            compression: Compression::Stored,
            positional: 0,
            pending: None,
            broken: None,
        }
    }

    fn check_ready(&mut self) -> Result<()> {
        if let Some(p) = self.pending.take() {
            self.broken = Some(format!(
                "member {} was not finished: {} of its {} data bytes were written",
                quote(&p.name),
                p.written,
                p.expected
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
        let options = SimpleFileOptions::default()
            .compression_method(self.compression.to_zip()?)
            .large_file(true)
            .unix_permissions(MEMBER_PERMISSIONS);
        self.zip
            .start_file(name, options)
            .map_err(|e| from_zip(&format!("cannot start member {}", quote(name)), e))
    }

    fn start_member(&mut self, key: &str, header: &Header) -> Result<MemberWriter<'_>> {
        let expected = header.data_len()?;
        let bytes = header.to_bytes()?;
        let name = name_for_key(key);
        self.start_file(&name)?;
        self.zip.write_all(&bytes)?;
        self.pending = Some(Pending {
            name,
            expected,
            written: 0,
        });
        Ok(MemberWriter {
            zip: &mut self.zip,
            pending: &mut self.pending,
        })
    }

    fn start_raw(&mut self, name: &str) -> Result<RawMemberWriter<'_>> {
        self.start_file(name)?;
        Ok(RawMemberWriter { zip: &mut self.zip })
    }

    fn add_raw(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.start_file(name)?;
        self.zip.write_all(bytes)?;
        Ok(())
    }

    fn next_positional(&mut self) -> String {
        let key = positional_key(self.positional);
        self.positional += 1;
        key
    }

    fn finish(mut self) -> Result<Z> {
        self.check_ready()?;
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
        self.pending.as_ref().map_or(0, |p| p.expected - p.written)
    }

    /// Checks that all the data was written and completes the member.
    pub fn finish(self) -> Result<()> {
        let p = self
            .pending
            .take()
            .ok_or_else(|| zip_error("the member was already finished"))?;
        if p.written != p.expected {
            return Err(Error::write(format!(
                "member {} got {} data bytes, but its header declares {}",
                quote(&p.name),
                p.written,
                p.expected
            )));
        }
        Ok(())
    }
}

impl Write for MemberWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let p = self
            .pending
            .as_mut()
            .ok_or_else(|| io::Error::from(zip_error("the member was already finished")))?;
        let left = p.expected - p.written;
        if left == 0 && !buf.is_empty() {
            return Err(Error::write(format!(
                "member {}: more data than the {} bytes its header declares",
                quote(&p.name),
                p.expected
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

        /// The compression the next member will use.
        pub fn compression(&self) -> Compression {
            self.core.compression
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
            self.core.add_raw(name, bytes)
        }

        /// The number of positional arrays added so far (the next one is `arr_{n}`).
        pub fn positional_count(&self) -> usize {
            self.core.positional
        }
    };
}

/// Writes an `.npz` archive to a seekable output (a file, a `Cursor`).
///
/// Members are named `key.npy`; [`add_positional`](Self::add_positional)-style methods use
/// `arr_0`, `arr_1`, ... like `numpy.savez(file, *arrays)`. The local headers are
/// byte-for-byte what NumPy writes (zip64 extra field on every member, 1980-01-01 timestamp,
/// mode `0600`), so archives are reproducible. An archive with no members is the 22-byte
/// empty zip file, like `numpy.savez(file)`.
///
/// Member names must be unique; adding a key twice is an error.
///
/// ```
/// use std::io::Write;
/// use npy_serde::npz::{Compression, NpzArchive, NpzWriter};
/// use npy_serde::Header;
///
/// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
/// // A member streamed record by record: 1000 little-endian f64s.
/// let mut m = w.start_member("x", &Header::new("<f8".parse()?, vec![1000]))?;
/// for i in 0..1000 {
///     m.write_all(&(i as f64).to_le_bytes())?;
/// }
/// m.finish()?;
/// // Per-member compression, and a positional member (`arr_0`).
/// w.set_compression(Compression::Deflate);
/// let (key, mut m) = w.start_positional(&Header::new("|u1".parse()?, vec![2, 2]))?;
/// m.write_all(&[1, 2, 3, 4])?;
/// m.finish()?;
/// assert_eq!(key, "arr_0");
/// let bytes = w.finish()?.into_inner();
///
/// let npz = NpzArchive::from_bytes(&bytes)?;
/// assert_eq!(npz.keys().collect::<Vec<_>>(), ["x", "arr_0"]);
/// assert_eq!(npz.member("arr_0").unwrap().compression, Compression::Deflate);
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
    /// A writer storing members uncompressed, like `numpy.savez`.
    pub fn new(writer: W) -> Self {
        NpzWriter {
            core: Core::new(ZipWriter::new(writer)),
        }
    }

    /// A writer deflating members, like `numpy.savez_compressed`.
    pub fn new_compressed(writer: W) -> Self {
        Self::new(writer).with_compression(Compression::Deflate)
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
            core: Core::new(ZipWriter::new_stream(writer)),
        }
    }

    /// A streaming writer deflating members, like `numpy.savez_compressed`.
    pub fn new_compressed(writer: W) -> Self {
        Self::new(writer).with_compression(Compression::Deflate)
    }

    writer_methods!();

    /// Writes the central directory and returns the output. Fails if a member started with
    /// [`start_member`](Self::start_member) was not finished.
    pub fn finish(self) -> Result<W> {
        Ok(self.core.finish()?.into_inner())
    }
}
