//! `.npz` archives: zip files of `.npy` members, as written by `numpy.savez` and
//! `numpy.savez_compressed` and read by `numpy.load`. Feature `npz` (a default feature: a build
//! with `default-features = false` has no `.npz` support and no zip dependency).
//!
//! - [`NpzArchive`] reads an archive from a path, bytes, or any `Read + Seek`. Members are
//!   looked up by key (`"a"` for member `a.npy`) or by full member name, and read into any
//!   `serde` type ([`NpzArchive::read`]), a dynamic [`Array`](crate::Array)
//!   ([`NpzArchive::read_array`]), streamed record by record with deflate decoded on the fly
//!   ([`NpzArchive::records_serde`]), or as raw bytes ([`NpzArchive::read_raw`], also for members that
//!   are not `.npy` files). [`NpzReaderBuilder`] sets the limits used for untrusted archives.
//! - [`NpzWriter`] (seekable output) and [`NpzStreamWriter`] (any `Write`, e.g. a pipe) write
//!   archives NumPy loads back: whole members from slices ([`NpzWriter::add`]) or dynamic arrays
//!   ([`NpzWriter::add_array`]), unnamed members (`arr_0`, ...), or members streamed one record
//!   at a time without holding them in memory ([`NpzWriter::start_records`],
//!   [`NpzWriter::start_member`]), each stored or deflated. [`NpzWriter::align`] puts every
//!   stored member's data at a multiple of 64 bytes in the file. With feature `parallel`, whole
//!   members are deflated on all cores, pigz-style (one deflate stream per member, cut into
//!   chunks compressed in parallel; several members at once).
//! - [`MmapNpz`] maps an archive and views its stored members in place, as a mapped `.npy`
//!   ([`MmapArray`](crate::MmapArray): typed slices, ndarray views, records, one record), which
//!   NumPy cannot do (it ignores `mmap_mode` for archives).
//! - [`NpzAppender`] adds members to an existing archive in place, without rewriting the
//!   members already there, and restores the archive if anything fails.
//! - With feature `sprs`, `scipy.sparse.save_npz` archives: `NpzArchive::load_sparse` and
//!   `NpzWriter::save_sparse` (see `SparseMatrix`).
//!
//! ```
//! use npy_serde::npz::{Compression, NpzArchive, NpzWriter};
//! use npy_serde::NpyRecord;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq)]
//! struct Hit { id: u32, energy: f64 }
//!
//! let hits = vec![Hit { id: 1, energy: 0.5 }, Hit { id: 2, energy: 1.5 }];
//! // Like np.savez_compressed(f, hits=..., weights=...).
//! let mut w = NpzWriter::new_compressed(std::io::Cursor::new(Vec::new()));
//! w.add("hits", &hits)?;
//! w.add("weights", &[0.25f32, 0.75])?;
//! let bytes = w.finish()?.into_inner();
//!
//! // Like np.load(f); limits for untrusted input are set on the builder.
//! let mut npz = NpzArchive::builder().max_member_size(1 << 30).from_bytes(&bytes)?;
//! assert_eq!(npz.keys().collect::<Vec<_>>(), ["hits", "weights"]);
//! assert_eq!(npz.member("hits").unwrap().compression, Compression::Deflate);
//! assert_eq!(npz.read::<Hit>("hits")?, hits);
//! for w in npz.records_serde::<f32>("weights")? {
//!     assert!(w? < 1.0);
//! }
//! # Ok::<(), npy_serde::Error>(())
//! ```
//!
//! # NumPy's conventions
//!
//! - A member `key.npy` is listed under the key `key`: exactly one `.npy` suffix is stripped,
//!   so member `x.npy.npy` has key `x.npy`, and a member without the suffix (`README.txt`) is
//!   listed under its full name.
//! - Looking up a key first tries a member with exactly that name, then `key + ".npy"` (what
//!   `np.load(...)[key]` does), so both `"a"` and `"a.npy"` find member `a.npy`.
//! - Unnamed arrays are stored as `arr_0`, `arr_1`, ... ([`NpzWriter::add_positional`]).
//! - `savez` stores members uncompressed ([`Compression::Stored`]), `savez_compressed` uses
//!   [`Compression::Deflate`]; every member is written with zip64 extra fields (NumPy's
//!   `force_zip64=True`), so members larger than 4 GiB need nothing special.
//!
//! # Untrusted archives
//!
//! Reading never allocates from a size the archive declares before the bytes are there, and
//! bounds the work a small archive can cause:
//!
//! - a member's decompressed length is counted as it is decoded, and must equal both the zip
//!   directory's uncompressed size and, for `.npy` members, the header's data offset plus
//!   `shape` × `itemsize`; any mismatch is an error *before* the data is read when the sizes
//!   disagree, or as soon as the stream runs short or long;
//! - a deflate member cannot declare more than 1032 bytes per compressed byte (deflate's
//!   maximum ratio), and a stored member's two sizes must agree, so a lying zip64 size fails
//!   immediately; members larger than [`NpzReaderBuilder::max_member_size`] (default
//!   [`DEFAULT_MAX_MEMBER_SIZE`], 4 GiB) and archives with more than
//!   [`NpzReaderBuilder::max_members`] (default [`DEFAULT_MAX_MEMBERS`]) members are refused;
//! - the CRC-32 of every member is verified when its last byte is read: the read that would
//!   complete the member fails instead if the checksum (or the length) is wrong, whoever
//!   consumes the reader;
//! - member names are only ever compared as strings: nothing here touches the file system by
//!   member name, so a name like `../x.npy` is just the key `../x`;
//! - duplicate member names: as in Python's `zipfile` (and so `np.load`), the *last* entry of
//!   the central directory wins and the name is listed once;
//!   [`NpzReaderBuilder::reject_duplicate_names`] turns duplicates into an error instead.
//! - only stored and deflate members can be read (NumPy writes nothing else); bzip2, LZMA,
//!   zstd or encrypted members give a clear `Zip` error naming the member and its method.
//!
//! All errors from the zip layer (corrupt archive, bad CRC, corrupt deflate data, truncated
//! member) are [`ErrorKind::Zip`] errors whose message names the member.

mod append;
mod file;
mod member;
mod mmap;
#[cfg(feature = "parallel")]
mod par;
mod read;
#[cfg(feature = "sprs")]
mod sparse;
mod write;

pub use append::{AppendTarget, NpzAppender};
pub use file::NpzFile;
pub use member::{MemberInfo, NpzMember, NpzRecords};
pub use mmap::MmapNpz;
pub use read::{NpzArchive, NpzReaderBuilder};
#[cfg(feature = "sprs")]
pub use sparse::SparseMatrix;
pub use write::{
    MemberWriter, NpzRecordWriter, NpzStreamWriter, NpzWriter, RawMemberWriter, ALIGNMENT,
};

use std::fmt;

use crate::error::{Error, ErrorKind};

/// Default of [`NpzReaderBuilder::max_members`]: the most members an archive may list.
pub const DEFAULT_MAX_MEMBERS: usize = 100_000;

/// Default of [`NpzReaderBuilder::max_member_size`]: the largest decompressed member, 4 GiB.
pub const DEFAULT_MAX_MEMBER_SIZE: u64 = 4 << 30;

/// Deflate cannot expand one compressed byte into more than this many bytes (a 258-byte match
/// coded in two bits, plus block overhead), so a larger declared ratio is a lie.
pub(crate) const MAX_DEFLATE_RATIO: u64 = 1032;

/// How a member's bytes are stored in the archive.
///
/// ```
/// use npy_serde::npz::Compression;
/// assert_eq!(Compression::Deflate.to_string(), "deflate");
/// assert_eq!(Compression::from_method(12).to_string(), "bzip2 (method 12)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Zip method 0, no compression (`numpy.savez`).
    #[default]
    Stored,
    /// Zip method 8, deflate (`numpy.savez_compressed`).
    Deflate,
    /// Any other zip method (bzip2 = 12, LZMA = 14, zstd = 93, ...): listed, but cannot be
    /// read or written by this crate.
    Other(u16),
}

impl Compression {
    /// The compression for a zip method number.
    pub fn from_method(method: u16) -> Compression {
        match method {
            0 => Compression::Stored,
            8 => Compression::Deflate,
            m => Compression::Other(m),
        }
    }

    /// The zip method number.
    pub fn method(self) -> u16 {
        match self {
            Compression::Stored => 0,
            Compression::Deflate => 8,
            Compression::Other(m) => m,
        }
    }

    pub(crate) fn from_zip(m: zip::CompressionMethod) -> Compression {
        #[allow(deprecated)] // the only way to get the number of an unsupported method
        Compression::from_method(m.to_u16())
    }

    pub(crate) fn to_zip(self) -> crate::Result<zip::CompressionMethod> {
        match self {
            Compression::Stored => Ok(zip::CompressionMethod::Stored),
            Compression::Deflate => Ok(zip::CompressionMethod::Deflated),
            other => Err(zip_error(format!(
                "cannot write {other} members: only stored and deflate are supported"
            ))),
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::Stored => f.write_str("stored"),
            Compression::Deflate => f.write_str("deflate"),
            Compression::Other(m) => {
                let name = match m {
                    1 => "shrink",
                    2..=5 => "reduce",
                    6 => "implode",
                    9 => "deflate64",
                    12 => "bzip2",
                    14 => "lzma",
                    93 => "zstd",
                    95 => "xz",
                    98 => "ppmd",
                    99 => "aes-encrypted",
                    _ => "unknown",
                };
                write!(f, "{name} (method {m})")
            }
        }
    }
}

/// The key NumPy lists member `name` under: one `.npy` suffix stripped.
///
/// ```
/// use npy_serde::npz::key_for_name;
/// assert_eq!(key_for_name("a.npy"), "a");
/// assert_eq!(key_for_name("x.npy.npy"), "x.npy");
/// assert_eq!(key_for_name("README.txt"), "README.txt");
/// ```
pub fn key_for_name(name: &str) -> &str {
    name.strip_suffix(".npy").unwrap_or(name)
}

/// The member name NumPy stores key `key` under: `key + ".npy"`.
///
/// ```
/// assert_eq!(npy_serde::npz::name_for_key("x.npy"), "x.npy.npy");
/// ```
pub fn name_for_key(key: &str) -> String {
    format!("{key}.npy")
}

/// The key of the `index`-th unnamed array, as `numpy.savez(file, *arrays)` names them.
///
/// ```
/// assert_eq!(npy_serde::npz::positional_key(2), "arr_2");
/// ```
pub fn positional_key(index: usize) -> String {
    format!("arr_{index}")
}

/// The comment of the zip archive whose last bytes are `tail` (at least its end of central
/// directory record, which a comment of up to 65535 bytes ends): `None` if `tail` holds no end
/// record. For an archive read through ranged reads (an object store), where the whole file is
/// not at hand: fetch the last 65557 bytes (or the whole file if shorter). The last end record
/// whose comment ends exactly at the end of `tail` is the one taken, as zip readers do.
///
/// ```
/// # use npy_serde::npz::{comment_of_tail, NpzWriter};
/// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
/// w.add("a", &[1u8])?;
/// w.set_comment(b"hello")?;
/// let bytes = w.finish()?.into_inner();
/// assert_eq!(comment_of_tail(&bytes[bytes.len() - 100..]), Some(&b"hello"[..]));
/// assert_eq!(comment_of_tail(b"not a zip"), None);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn comment_of_tail(tail: &[u8]) -> Option<&[u8]> {
    const EOCD: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
    const EOCD_LEN: usize = 22;
    let last = tail.len().checked_sub(EOCD_LEN)?;
    (0..=last).rev().find_map(|at| {
        let rec = &tail[at..];
        let len = usize::from(u16::from_le_bytes([rec[20], rec[21]]));
        (rec[..4] == EOCD && at + EOCD_LEN + len == tail.len()).then(|| &rec[EOCD_LEN..])
    })
}

pub(crate) fn zip_error(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Zip(msg.into()))
}

/// Quotes a member name for messages, escaping control characters.
pub(crate) fn quote(name: &str) -> String {
    format!("{name:?}")
}

/// Converts an error of the `zip` crate, adding what was being done.
pub(crate) fn from_zip(context: &str, e: zip::result::ZipError) -> Error {
    use zip::result::ZipError;
    match e {
        ZipError::Io(io) => match io.kind() {
            std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof => {
                zip_error(format!("{context}: {io}"))
            }
            _ => Error::from(io),
        },
        ZipError::InvalidArchive(msg) => {
            zip_error(format!("{context}: invalid zip archive: {msg}"))
        }
        ZipError::UnsupportedArchive(msg) => {
            zip_error(format!("{context}: unsupported zip archive: {msg}"))
        }
        other => zip_error(format!("{context}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_numbers_round_trip() {
        for m in [0u16, 8, 12, 14, 93, 99, 1234] {
            assert_eq!(Compression::from_method(m).method(), m);
        }
        assert_eq!(Compression::from_method(0), Compression::Stored);
        assert_eq!(Compression::from_method(8), Compression::Deflate);
        assert_eq!(
            Compression::from_zip(zip::CompressionMethod::Deflated),
            Compression::Deflate
        );
        assert_eq!(Compression::from_method(14).to_string(), "lzma (method 14)");
        assert!(Compression::Other(12).to_zip().is_err());
    }

    #[test]
    fn key_conventions() {
        assert_eq!(key_for_name(".npy"), "");
        assert_eq!(key_for_name("dir/a.npy"), "dir/a");
        assert_eq!(key_for_name("a.NPY"), "a.NPY");
        assert_eq!(name_for_key(""), ".npy");
        assert_eq!(positional_key(0), "arr_0");
    }
}
