//! Reading `.npz` archives.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek};
use std::path::Path;

use serde::de::DeserializeOwned;
use zip::read::ZipFile;
use zip::ZipArchive;

use super::{
    from_zip, key_for_name, name_for_key, quote, zip_error, Compression, DEFAULT_MAX_MEMBERS,
    DEFAULT_MAX_MEMBER_SIZE, MAX_DEFLATE_RATIO,
};
use crate::error::{Error, ErrorKind, Result};
use crate::header::{self, Header, Limits, ParsedHeader};
use crate::pyliteral;
use crate::read::ReaderBuilder;
use crate::read::{Exact, General, RecordReader};
use crate::record::NpyRecord;
use crate::value::Array;

/// Options for opening an `.npz` archive: the limits applied to untrusted input.
///
/// ```
/// use npy_serde::npz::NpzReaderBuilder;
/// # let mut buf = std::io::Cursor::new(Vec::new());
/// # let mut w = npy_serde::npz::NpzWriter::new(&mut buf);
/// # let h = npy_serde::Header::new("<f8".parse()?, vec![2]);
/// # let mut m = w.start_member("x", &h)?;
/// # std::io::Write::write_all(&mut m, &[0u8; 16])?;
/// # m.finish()?;
/// # w.finish()?;
/// # let bytes = buf.into_inner();
/// let archive = NpzReaderBuilder::new()
///     .max_members(16)
///     .max_member_size(1 << 20)
///     .reject_duplicate_names(true)
///     .from_bytes(&bytes)?;
/// assert_eq!(archive.keys().collect::<Vec<_>>(), ["x"]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct NpzReaderBuilder {
    max_members: usize,
    max_member_size: u64,
    reader: ReaderBuilder,
    reject_duplicate_names: bool,
}

impl Default for NpzReaderBuilder {
    fn default() -> Self {
        NpzReaderBuilder {
            max_members: DEFAULT_MAX_MEMBERS,
            max_member_size: DEFAULT_MAX_MEMBER_SIZE,
            reader: ReaderBuilder::new(),
            reject_duplicate_names: false,
        }
    }
}

impl NpzReaderBuilder {
    /// The default options: at most [`DEFAULT_MAX_MEMBERS`] members, each at most
    /// [`DEFAULT_MAX_MEMBER_SIZE`] bytes decompressed, NumPy's header limits, duplicate member
    /// names resolved like NumPy (last wins).
    pub fn new() -> Self {
        Self::default()
    }

    /// The most members the archive may list (default [`DEFAULT_MAX_MEMBERS`]); opening an
    /// archive with more fails.
    pub fn max_members(mut self, n: usize) -> Self {
        self.max_members = n;
        self
    }

    /// The largest decompressed size of a member that may be read (default
    /// [`DEFAULT_MAX_MEMBER_SIZE`], 4 GiB). Reading (not listing) a larger member fails before
    /// any of it is decompressed. Raise it to read big archives you trust; `u64::MAX` disables
    /// the check (streaming reads still use O(record) memory, but collecting reads allocate as
    /// much as the member holds).
    pub fn max_member_size(mut self, bytes: u64) -> Self {
        self.max_member_size = bytes;
        self
    }

    /// The limits used to parse each member's `.npy` header (default: NumPy's).
    pub fn header_limits(mut self, limits: Limits) -> Self {
        self.reader = self.reader.with_limits(limits);
        self
    }

    /// Shorthand to set only the `max_header_size` of the header limits (NumPy's
    /// `max_header_size`, default 10000).
    pub fn max_header_size(mut self, bytes: u64) -> Self {
        self.reader = self.reader.max_header_size(bytes);
        self
    }

    /// The options used to read each member's `.npy` data (header limits, data-size limits),
    /// as for a plain `.npy` file.
    pub fn reader_options(mut self, reader: ReaderBuilder) -> Self {
        self.reader = reader;
        self
    }

    /// If true, opening an archive whose central directory lists a member name twice fails.
    /// If false (the default, NumPy's behaviour), the last entry with that name wins and the
    /// name is listed once.
    pub fn reject_duplicate_names(mut self, yes: bool) -> Self {
        self.reject_duplicate_names = yes;
        self
    }

    /// Opens the archive at `path` (buffered).
    pub fn open<P: AsRef<Path>>(&self, path: P) -> Result<NpzArchive<BufReader<File>>> {
        let file = File::open(path.as_ref())?;
        self.from_reader(BufReader::new(file))
    }

    /// Reads an archive held in memory.
    pub fn from_bytes<'a>(&self, bytes: &'a [u8]) -> Result<NpzArchive<Cursor<&'a [u8]>>> {
        self.from_reader(Cursor::new(bytes))
    }

    /// Reads an archive from any `Read + Seek` (the central directory at its end is read
    /// first).
    pub fn from_reader<R: Read + Seek>(&self, reader: R) -> Result<NpzArchive<R>> {
        let zip = ZipArchive::new(reader).map_err(|e| from_zip("cannot read the archive", e))?;
        if zip.len() > self.max_members {
            return Err(Error::new(ErrorKind::LimitExceeded {
                what: "the number of npz archive members",
                limit: self.max_members as u64,
                found: zip.len() as u64,
            }));
        }
        if self.reject_duplicate_names && zip.has_duplicate_names() {
            return Err(zip_error(
                "the archive lists the same member name more than once \
                 (rejected by NpzReaderBuilder::reject_duplicate_names)",
            ));
        }
        let mut members = Vec::with_capacity(zip.len());
        let mut by_name = HashMap::with_capacity(zip.len());
        for index in 0..zip.len() {
            let entry = zip
                .by_index_data(index)
                .map_err(|e| from_zip("cannot read the central directory", e))?;
            let name = entry
                .name()
                .map_err(|e| from_zip("cannot decode a member name", e))?
                .into_owned();
            let info = MemberInfo {
                key: key_for_name(&name).to_string(),
                compression: Compression::from_zip(entry.compression()),
                compressed_size: entry.compressed_size(),
                size: entry.size(),
                crc32: entry.crc32(),
                encrypted: entry.encrypted(),
                index,
                name,
            };
            // Two raw names can decode to the same text (CP437 vs UTF-8): keep the last, like
            // a duplicate raw name.
            by_name.insert(info.name.clone(), index);
            members.push(info);
        }
        Ok(NpzArchive {
            zip,
            members,
            by_name,
            options: self.clone(),
        })
    }
}

/// What the zip directory says about one member. Listing members reads nothing else; see
/// [`NpzArchive::header`] for the `.npy` header.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemberInfo {
    /// The full member name, e.g. `a.npy` (UTF-8 if it decodes as such, else CP437, as the
    /// zip specification says).
    pub name: String,
    /// The key NumPy lists it under: the name with one `.npy` suffix stripped.
    pub key: String,
    /// How the member is stored.
    pub compression: Compression,
    /// Size of the member's stored (possibly compressed) bytes.
    pub compressed_size: u64,
    /// Declared size of the decompressed member (header and data for a `.npy` member).
    pub size: u64,
    /// Declared CRC-32 of the decompressed member.
    pub crc32: u32,
    /// True if the member is encrypted (such members cannot be read).
    pub encrypted: bool,
    /// Position in the archive's listing ([`NpzArchive::members`]).
    pub index: usize,
}

impl MemberInfo {
    /// True if the name ends in `.npy`. NumPy itself decides by content (the magic string),
    /// which [`NpzMember::header`] checks.
    pub fn has_npy_suffix(&self) -> bool {
        self.name.ends_with(".npy")
    }

    /// Checks, without reading anything, that the member can be read within `limits`.
    fn check_readable(&self, max_member_size: u64) -> Result<()> {
        let name = quote(&self.name);
        if self.encrypted {
            return Err(zip_error(format!(
                "member {name} is encrypted, which is not supported"
            )));
        }
        match self.compression {
            Compression::Stored => {
                if self.size != self.compressed_size {
                    return Err(zip_error(format!(
                        "member {name} is stored uncompressed but the archive declares {} \
                         compressed and {} uncompressed bytes",
                        self.compressed_size, self.size
                    )));
                }
            }
            Compression::Deflate => {
                let most = self
                    .compressed_size
                    .saturating_mul(MAX_DEFLATE_RATIO)
                    .saturating_add(MAX_DEFLATE_RATIO);
                if self.size > most {
                    return Err(zip_error(format!(
                        "member {name} declares {} uncompressed bytes from {} deflate bytes, more \
                         than deflate can produce (at most {MAX_DEFLATE_RATIO} per byte): the \
                         archive is corrupt or hostile",
                        self.size, self.compressed_size
                    )));
                }
            }
            other => {
                return Err(zip_error(format!(
                    "member {name} uses {other} compression, which is not supported: only \
                     stored and deflate members can be read (the only ones NumPy writes)"
                )))
            }
        }
        if self.size > max_member_size {
            return Err(zip_error(format!(
                "member {name} is {} bytes uncompressed, more than the limit of \
                 {max_member_size}; raise it with NpzReaderBuilder::max_member_size if you \
                 trust this archive",
                self.size
            )));
        }
        Ok(())
    }
}

/// An open `.npz` archive.
///
/// Listing is free (the zip central directory is read when opening); each member is then
/// read on demand through [`by_key`](Self::by_key) / [`by_name`](Self::by_name), which return
/// an [`NpzMember`], or the shortcuts on this type. Only one member can be read at a time (it
/// borrows the archive).
///
/// ```
/// use std::io::Write;
/// use npy_serde::npz::{Compression, NpzArchive, NpzWriter};
/// use npy_serde::Header;
///
/// // Write an archive with one `<i4` array of 3 elements under the key "a".
/// let mut out = std::io::Cursor::new(Vec::new());
/// let mut w = NpzWriter::new(&mut out).with_compression(Compression::Deflate);
/// let mut m = w.start_member("a", &Header::new("<i4".parse()?, vec![3]))?;
/// for v in [1i32, 2, 3] {
///     m.write_all(&v.to_le_bytes())?;
/// }
/// m.finish()?;
/// w.finish()?;
///
/// let bytes = out.into_inner();
/// let mut npz = NpzArchive::from_bytes(&bytes)?;
/// assert_eq!(npz.keys().collect::<Vec<_>>(), ["a"]);
/// let info = npz.member("a").unwrap();
/// assert_eq!((info.name.as_str(), info.compression), ("a.npy", Compression::Deflate));
/// assert_eq!(npz.header("a")?.header.shape, [3]);
///
/// // Typed, dynamic, streamed or raw.
/// assert_eq!(npz.read::<Vec<i32>>("a")?, [1, 2, 3]);
/// assert_eq!(npz.read_array("a")?.values.len(), 3);
/// let total: i64 = npz.records::<i64>("a")?.map(|r| r.unwrap()).sum();
/// assert_eq!(total, 6);
/// let mut member = npz.by_key("a")?;
/// member.header()?; // consumes the header; what follows is the data
/// assert_eq!(member.read_raw()?, [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct NpzArchive<R> {
    zip: ZipArchive<R>,
    members: Vec<MemberInfo>,
    by_name: HashMap<String, usize>,
    options: NpzReaderBuilder,
}

impl<R> std::fmt::Debug for NpzArchive<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzArchive")
            .field("members", &self.members)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl NpzArchive<BufReader<File>> {
    /// Opens the archive at `path` with the default limits ([`NpzReaderBuilder::new`]).
    pub fn open<P: AsRef<Path>>(path: P) -> Result<Self> {
        NpzReaderBuilder::new().open(path)
    }
}

impl<'a> NpzArchive<Cursor<&'a [u8]>> {
    /// Reads an archive held in memory, with the default limits.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Self> {
        NpzReaderBuilder::new().from_bytes(bytes)
    }
}

impl NpzArchive<()> {
    /// Options (limits) for opening an archive: `NpzArchive::builder().max_members(10).open(p)`.
    pub fn builder() -> NpzReaderBuilder {
        NpzReaderBuilder::new()
    }
}

impl<R: Read + Seek> NpzArchive<R> {
    /// Reads an archive from any `Read + Seek`, with the default limits.
    pub fn new(reader: R) -> Result<Self> {
        NpzReaderBuilder::new().from_reader(reader)
    }

    /// Number of members (names listed once, see [`has_duplicate_names`](Self::has_duplicate_names)).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True if the archive has no members (NumPy's `savez` with no arrays writes one).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// All members in central-directory order.
    pub fn members(&self) -> &[MemberInfo] {
        &self.members
    }

    /// The keys, in order, as `np.load(f).files` lists them (one per member).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|m| m.key.as_str())
    }

    /// The full member names, in order (`zipfile.ZipFile.namelist()`).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|m| m.name.as_str())
    }

    /// True if the central directory lists some name more than once (the last one is used).
    pub fn has_duplicate_names(&self) -> bool {
        self.zip.has_duplicate_names()
    }

    /// The member NumPy's `npz[key]` reads: the member named exactly `key` if there is one,
    /// else the member named `key + ".npy"`.
    pub fn member(&self, key: &str) -> Option<&MemberInfo> {
        self.index_of_key(key).map(|i| &self.members[i])
    }

    /// The member named exactly `name`.
    pub fn member_by_name(&self, name: &str) -> Option<&MemberInfo> {
        self.by_name.get(name).map(|&i| &self.members[i])
    }

    /// True if [`member`](Self::member) finds `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.index_of_key(key).is_some()
    }

    fn index_of_key(&self, key: &str) -> Option<usize> {
        self.by_name
            .get(key)
            .or_else(|| self.by_name.get(&name_for_key(key)))
            .copied()
    }

    fn not_found(&self, what: &str, wanted: &str) -> Error {
        const SHOWN: usize = 20;
        let mut keys: Vec<String> = self.keys().take(SHOWN).map(quote).collect();
        if self.len() > SHOWN {
            keys.push(format!("... ({} in all)", self.len()));
        }
        let listing = if keys.is_empty() {
            "the archive is empty".to_string()
        } else {
            format!("keys: {}", keys.join(", "))
        };
        zip_error(format!(
            "no member with {what} {} in the archive ({listing})",
            quote(wanted)
        ))
    }

    /// Opens the member for `key` (see [`member`](Self::member)) for reading.
    pub fn by_key(&mut self, key: &str) -> Result<NpzMember<'_, R>> {
        let index = self
            .index_of_key(key)
            .ok_or_else(|| self.not_found("key", key))?;
        self.by_index(index)
    }

    /// Opens the member named exactly `name` for reading.
    pub fn by_name(&mut self, name: &str) -> Result<NpzMember<'_, R>> {
        let index = *self
            .by_name
            .get(name)
            .ok_or_else(|| self.not_found("name", name))?;
        self.by_index(index)
    }

    /// Opens the `index`-th member of [`members`](Self::members) for reading.
    ///
    /// Fails without reading anything if the member cannot be read: unsupported compression
    /// or encryption, sizes that are inconsistent or larger than
    /// [`NpzReaderBuilder::max_member_size`].
    pub fn by_index(&mut self, index: usize) -> Result<NpzMember<'_, R>> {
        let info = self.members.get(index).ok_or_else(|| {
            zip_error(format!(
                "no member number {index}: the archive has {}",
                self.members.len()
            ))
        })?;
        info.check_readable(self.options.max_member_size)?;
        let file = self
            .zip
            .by_index(index)
            .map_err(|e| from_zip(&format!("cannot read member {}", quote(&info.name)), e))?;
        Ok(NpzMember {
            info,
            reader: MemberReader {
                file,
                name: &info.name,
                size: info.size,
                pos: 0,
                verified: false,
            },
            options: &self.options.reader,
            header: None,
            header_bytes: Vec::new(),
        })
    }

    /// Reads (just) the `.npy` header of the member for `key`, checking that it agrees with
    /// the member's size.
    pub fn header(&mut self, key: &str) -> Result<ParsedHeader> {
        let mut member = self.by_key(key)?;
        Ok(member.header()?.clone())
    }

    /// Reads the array of the member for `key` into `T` (see [`crate::read`] for the mapping:
    /// `Vec<T>` for 1-D, nested `Vec`s or arrays for more dimensions, a struct per record).
    pub fn read<T: DeserializeOwned>(&mut self, key: &str) -> Result<T> {
        self.by_key(key)?.deserialize()
    }

    /// Reads the array of the member for `key` as a dynamically typed [`Array`].
    pub fn read_array(&mut self, key: &str) -> Result<Array> {
        self.by_key(key)?.read_array()
    }

    /// Reads the array of the member for `key` into an `ndarray` array type
    /// (`Array2<f32>`, `ArrayD<T>`, ...), as [`crate::ndarray::read_npy`] reads a file. Feature
    /// `ndarray`.
    ///
    /// ```
    /// use ndarray::{array, Array2};
    /// use npy_serde::{NpzArchive, NpzWriter};
    /// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
    /// w.add_ndarray("a", &array![[1u8, 2], [3, 4]])?;
    /// let bytes = w.finish()?.into_inner();
    /// let a: Array2<u8> = NpzArchive::from_bytes(&bytes)?.read_ndarray("a")?;
    /// assert_eq!(a, array![[1, 2], [3, 4]]);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    #[cfg(feature = "ndarray")]
    pub fn read_ndarray<A: crate::ndarray::FromNpy>(&mut self, key: &str) -> Result<A> {
        self.by_key(key)?.read_ndarray()
    }

    /// Streams the elements of the member for `key` one at a time, decompressing on the fly:
    /// memory stays O(record) however large the member (except for Fortran-order arrays of
    /// more than one dimension, whose logical C order needs the whole array in memory).
    pub fn records<T: DeserializeOwned>(&mut self, key: &str) -> Result<NpzRecords<'_, R, T>> {
        self.by_key(key)?.records()
    }

    /// [`records`](Self::records) for a type that knows its dtype (`#[derive(Deserialize,
    /// NpyRecord)]`): the same elements and errors, on the exact tier of
    /// [`RecordReader::new_records`] (several times faster on records).
    ///
    /// ```
    /// # use npy_serde::{NpyRecord, NpzArchive, NpzWriter};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Serialize, Deserialize, NpyRecord)]
    /// struct Rec { id: i64, x: f64 }
    ///
    /// let mut w = NpzWriter::new_compressed(std::io::Cursor::new(Vec::new()));
    /// w.add("recs", &[Rec { id: 1, x: 0.5 }, Rec { id: 2, x: 1.5 }])?;
    /// let bytes = w.finish()?.into_inner();
    /// let mut npz = NpzArchive::from_bytes(&bytes)?;
    /// let sum: f64 = npz.iter_records::<Rec>("recs")?.map(|r| r.unwrap().x).sum();
    /// assert_eq!(sum, 2.0);
    /// let all: Vec<Rec> = npz.read_records("recs")?;
    /// assert_eq!(all[1].id, 2);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn iter_records<T: DeserializeOwned + NpyRecord>(
        &mut self,
        key: &str,
    ) -> Result<NpzRecords<'_, R, T, Exact<T>>> {
        self.by_key(key)?.iter_records()
    }

    /// Every element of the member for `key` as a `T` (logical C order), on the exact tier:
    /// [`iter_records`](Self::iter_records) collected, then the member's length and CRC-32
    /// checked.
    pub fn read_records<T: DeserializeOwned + NpyRecord>(&mut self, key: &str) -> Result<Vec<T>> {
        let mut it = self.iter_records::<T>(key)?;
        let v = it.by_ref().collect::<Result<Vec<T>>>()?;
        it.finish()?;
        Ok(v)
    }

    /// All the bytes of the member for `key` (a non-`.npy` member, or a `.npy` member's whole
    /// file), CRC-checked. At most [`NpzReaderBuilder::max_member_size`] bytes; the buffer
    /// grows with the bytes actually decoded, not with the declared size.
    pub fn read_raw(&mut self, key: &str) -> Result<Vec<u8>> {
        self.by_key(key)?.read_raw()
    }

    /// The options this archive was opened with.
    pub fn options(&self) -> &NpzReaderBuilder {
        &self.options
    }

    /// Consumes the archive, returning the underlying reader (at an unspecified position).
    pub fn into_inner(self) -> R {
        self.zip.into_inner()
    }
}

/// One member being read, borrowed from its [`NpzArchive`].
///
/// It reads the member's decompressed bytes ([`Read`]) from the start, or, after
/// [`header`](Self::header), from the first data byte. Reading is checked: the member must
/// produce exactly its declared size, and the read that delivers the last byte first checks
/// the CRC-32 and fails if it is wrong. Errors are `Zip` errors naming the member (wrapped in
/// an [`io::Error`] by the `Read` impl; this crate's readers unwrap them).
pub struct NpzMember<'a, R: Read> {
    info: &'a MemberInfo,
    reader: MemberReader<'a, R>,
    options: &'a ReaderBuilder,
    header: Option<ParsedHeader>,
    header_bytes: Vec<u8>,
}

impl<R: Read> std::fmt::Debug for NpzMember<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzMember")
            .field("info", self.info)
            .field("position", &self.reader.pos)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl<'a, R: Read> NpzMember<'a, R> {
    /// What the zip directory says about this member.
    pub fn info(&self) -> &'a MemberInfo {
        self.info
    }

    /// Bytes of the decompressed member read so far.
    pub fn position(&self) -> u64 {
        self.reader.pos
    }

    /// Reads and parses the `.npy` header (once; later calls return the same header) and
    /// checks that the header's data offset plus `shape` × `itemsize` equals the member's
    /// declared size, so a member cannot claim more data than it holds. Afterwards the
    /// member's [`Read`] yields the array data.
    ///
    /// Fails if some bytes were already read through [`Read`].
    pub fn header(&mut self) -> Result<&ParsedHeader> {
        if self.header.is_none() {
            if self.reader.pos != 0 {
                return Err(zip_error(format!(
                    "cannot read the header of member {}: {} bytes of it were already read",
                    quote(&self.info.name),
                    self.reader.pos
                )));
            }
            let mut rec = Recorder {
                inner: &mut self.reader,
                buf: &mut self.header_bytes,
            };
            let parsed = header::read_header(&mut rec, self.options.limits()).map_err(lift)?;
            check_member_size(self.info, &parsed)?;
            self.header = Some(parsed);
        }
        Ok(self.header.as_ref().expect("just set"))
    }

    /// The header, if [`header`](Self::header) has read it.
    pub fn parsed_header(&self) -> Option<&ParsedHeader> {
        self.header.as_ref()
    }

    /// The raw bytes of the header, if [`header`](Self::header) has read it (the member's first
    /// `data_offset` bytes).
    pub fn header_bytes(&self) -> Option<&[u8]> {
        self.header.as_ref().map(|_| self.header_bytes.as_slice())
    }

    /// Reads the header if needed and checks the member is positioned at its first data byte.
    fn at_data(&mut self) -> Result<ParsedHeader> {
        let header = self.header()?.clone();
        if self.reader.pos != header.data_offset {
            return Err(zip_error(format!(
                "cannot read the array of member {}: {} of its data bytes were already read",
                quote(&self.info.name),
                self.reader.pos - header.data_offset
            )));
        }
        Ok(header)
    }

    /// Reads the array into `T` (see [`crate::read`] for the mapping), then checks the rest of
    /// the member (its length and CRC-32).
    pub fn deserialize<T: DeserializeOwned>(mut self) -> Result<T> {
        let header = self.at_data()?;
        let options = self.options;
        let value = options
            .from_reader_with_header(&mut self, &header)
            .map_err(lift)?;
        self.drain()?;
        Ok(value)
    }

    /// Reads the array as a dynamically typed [`Array`], then checks the rest of the member.
    pub fn read_array(mut self) -> Result<Array> {
        let header = self.at_data()?;
        let options = self.options;
        let array = options
            .array_from_reader_with_header(&mut self, &header)
            .map_err(lift)?;
        self.drain()?;
        Ok(array)
    }

    /// Reads the array into an `ndarray` array type, then checks the rest of the member; see
    /// [`NpzArchive::read_ndarray`]. Feature `ndarray`.
    #[cfg(feature = "ndarray")]
    pub fn read_ndarray<A: crate::ndarray::FromNpy>(mut self) -> Result<A> {
        let header = self.at_data()?;
        let options = self.options;
        let (h, elements) = options
            .stored_after_header::<_, A::Elem>(&mut self, &header)
            .map_err(lift)?;
        self.drain()?;
        A::from_elements(&h, elements)
    }

    /// Streams the array's elements (logical C order), decoding the member as they are
    /// read; see [`NpzArchive::records`].
    pub fn records<T: DeserializeOwned>(mut self) -> Result<NpzRecords<'a, R, T>> {
        let header = self.at_data()?;
        let options = self.options;
        let inner = RecordReader::from_parts_with(self, header, options).map_err(lift)?;
        Ok(NpzRecords { inner })
    }

    /// [`records`](Self::records) on the exact tier; see [`NpzArchive::iter_records`].
    pub fn iter_records<T: DeserializeOwned + NpyRecord>(
        mut self,
    ) -> Result<NpzRecords<'a, R, T, Exact<T>>> {
        let header = self.at_data()?;
        let options = self.options;
        let inner = RecordReader::records_from_parts_with(self, header, options).map_err(lift)?;
        Ok(NpzRecords { inner })
    }

    /// The rest of the member's bytes (all of them if nothing was read yet, the array data
    /// after [`header`](Self::header)), CRC-checked.
    pub fn read_raw(mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        // No reservation from the declared size: the buffer grows with the decoded bytes.
        self.read_to_end(&mut out).map_err(unwrap_io)?;
        Ok(out)
    }

    /// Reads and discards whatever is left of the member, checking its length and CRC-32.
    pub fn finish(mut self) -> Result<()> {
        self.drain()
    }

    pub(crate) fn drain(&mut self) -> Result<()> {
        io::copy(self, &mut io::sink()).map_err(unwrap_io)?;
        Ok(())
    }
}

impl<R: Read> Read for NpzMember<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reader.read(buf)
    }
}

/// The elements of one `.npz` member, streamed: an iterator of `Result<T>` (see
/// [`NpzArchive::records`]). The member's CRC-32 is checked when the last element is read.
///
/// ```
/// use std::io::Write;
/// use npy_serde::npz::{NpzArchive, NpzWriter};
/// use npy_serde::Header;
///
/// let mut w = NpzWriter::new_compressed(std::io::Cursor::new(Vec::new()));
/// let mut m = w.start_member("v", &Header::new("<u4".parse()?, vec![1000]))?;
/// for i in 0..1000u32 {
///     m.write_all(&i.to_le_bytes())?;
/// }
/// m.finish()?;
/// let bytes = w.finish()?.into_inner();
///
/// let mut npz = NpzArchive::from_bytes(&bytes)?;
/// let records = npz.records::<u32>("v")?;
/// assert_eq!(records.len(), 1000);
/// let mut sum = 0u64;
/// for r in records {
///     sum += u64::from(r?);
/// }
/// assert_eq!(sum, 999 * 1000 / 2);
/// # Ok::<(), npy_serde::Error>(())
/// ```
///
/// `E` is the tiers tried first, as for [`RecordReader`]: [`General`] from
/// [`NpzArchive::records`], [`Exact`] from [`NpzArchive::iter_records`].
pub struct NpzRecords<'a, R: Read, T, E = General> {
    inner: RecordReader<NpzMember<'a, R>, T, E>,
}

impl<R: Read, T, E> std::fmt::Debug for NpzRecords<'_, R, T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzRecords")
            .field("inner", &self.inner)
            .finish()
    }
}

impl<'a, R: Read, T, E> NpzRecords<'a, R, T, E> {
    /// The array's header.
    pub fn header(&self) -> &Header {
        self.inner.header()
    }

    /// The header with its version and data offset.
    pub fn parsed_header(&self) -> &ParsedHeader {
        self.inner.parsed_header()
    }

    /// Number of elements (the product of the shape).
    pub fn len(&self) -> u64 {
        self.inner.len()
    }

    /// True if the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Index of the next element.
    pub fn position(&self) -> u64 {
        self.inner.position()
    }

    /// Elements not yet yielded.
    pub fn remaining(&self) -> u64 {
        self.inner.remaining()
    }

    /// Skips the elements not yet read and checks the rest of the member (length, CRC-32).
    pub fn finish(self) -> Result<()> {
        self.inner.into_inner().map_err(lift)?.finish()
    }
}

impl<R: Read, T: DeserializeOwned> Iterator for NpzRecords<'_, R, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        self.inner.next().map(|r| r.map_err(lift))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<R: Read, T: DeserializeOwned + NpyRecord> Iterator for NpzRecords<'_, R, T, Exact<T>> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        self.inner.next().map(|r| r.map_err(lift))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }

    fn fold<B, F: FnMut(B, Self::Item) -> B>(self, init: B, mut f: F) -> B {
        self.inner.fold(init, |acc, r| f(acc, r.map_err(lift)))
    }
}

/// The header's claim of data must match the member's declared size, before any data is read.
fn check_member_size(info: &MemberInfo, parsed: &ParsedHeader) -> Result<()> {
    let h = &parsed.header;
    let data = h.data_len()?;
    let want = parsed.data_offset.checked_add(data);
    if want != Some(info.size) {
        return Err(zip_error(format!(
            "member {} does not hold what its .npy header declares: shape {} of {} needs {} \
             header bytes plus {data} data bytes, but the member is {} bytes",
            quote(&info.name),
            pyliteral::repr_shape(&h.shape),
            h.dtype.descr(),
            parsed.data_offset,
            info.size
        )));
    }
    Ok(())
}

/// Copies every byte read through it into `buf` (used to keep the header bytes).
struct Recorder<'r, R> {
    inner: &'r mut R,
    buf: &'r mut Vec<u8>,
}

impl<R: Read> Read for Recorder<'_, R> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(b)?;
        self.buf.extend_from_slice(&b[..n]);
        Ok(n)
    }
}

/// The decompressed bytes of a member, counted against its declared size, with the CRC-32
/// verified before the last byte is handed out.
struct MemberReader<'a, R: Read> {
    file: ZipFile<'a, R>,
    name: &'a str,
    size: u64,
    pos: u64,
    verified: bool,
}

impl<R: Read> MemberReader<'_, R> {
    fn error(&self, msg: String) -> io::Error {
        io::Error::from(zip_error(format!("member {}: {msg}", quote(self.name))))
    }

    /// Wraps an error of the zip layer (bad CRC, corrupt deflate data, declared size exceeded)
    /// as a `Zip` error naming the member; other I/O errors pass through.
    fn wrap(&self, e: io::Error) -> io::Error {
        use io::ErrorKind as K;
        match e.kind() {
            _ if e.get_ref().is_some_and(|inner| inner.is::<Error>()) => e,
            K::InvalidData | K::InvalidInput | K::UnexpectedEof | K::Other => {
                let text = e.to_string();
                let msg = match text.as_str() {
                    "Invalid checksum" => "CRC-32 mismatch: the member's data is corrupt".into(),
                    "File is larger than its declared uncompressed size" => format!(
                        "holds more than the {} bytes the archive declares",
                        self.size
                    ),
                    _ => format!("corrupt member data: {text}"),
                };
                self.error(msg)
            }
            _ => e,
        }
    }

    /// At the declared end: one more read must report the end of the member, which makes the
    /// zip layer compare the CRC-32.
    fn verify_end(&mut self) -> io::Result<()> {
        if self.verified {
            return Ok(());
        }
        let mut probe = [0u8; 1];
        loop {
            match self.file.read(&mut probe) {
                Ok(0) => break,
                Ok(_) => {
                    return Err(self.error(format!(
                        "holds more than the {} bytes the archive declares",
                        self.size
                    )))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.wrap(e)),
            }
        }
        self.verified = true;
        Ok(())
    }
}

impl<R: Read> Read for MemberReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let left = self.size - self.pos;
        if left == 0 {
            self.verify_end()?;
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = loop {
            match self.file.read(&mut buf[..want]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => break r.map_err(|e| self.wrap(e))?,
            }
        };
        if n == 0 {
            return Err(self.error(format!(
                "truncated: it ends after {} of the {} bytes the archive declares",
                self.pos, self.size
            )));
        }
        self.pos += n as u64;
        if self.pos == self.size {
            self.verify_end()?;
        }
        Ok(n)
    }
}

/// Turns an `io::Error` that carries one of this crate's errors back into that error.
pub(crate) fn unwrap_io(e: io::Error) -> Error {
    if e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
        let inner = e.into_inner().expect("checked above");
        match inner.downcast::<Error>() {
            Ok(err) => *err,
            Err(other) => Error::from(io::Error::other(other)),
        }
    } else {
        Error::from(e)
    }
}

/// Lifts a `Zip` error that travelled through a reader as an I/O error out of the `Io` kind,
/// keeping the position the outer layer added.
pub(crate) fn lift(e: Error) -> Error {
    let carries =
        matches!(e.kind(), ErrorKind::Io(io) if io.get_ref().is_some_and(|i| i.is::<Error>()));
    if !carries {
        return e;
    }
    let pos = e.position().clone();
    let ErrorKind::Io(io) = e.into_kind() else {
        unreachable!("checked above")
    };
    let mut inner = unwrap_io(io);
    if let Some(r) = pos.record {
        inner = inner.at_record(r);
    }
    if let Some(b) = pos.byte {
        inner = inner.at_byte(b);
    }
    if let Some(f) = pos.field {
        inner = inner.in_field(&f);
    }
    inner
}
