//! Reading `.npz` archives: the options ([`NpzReaderBuilder`]) and the archive
//! ([`NpzArchive`]), its listing and its shortcuts. One member's bytes and elements are read by
//! `super::member`, which this module calls.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Cursor, Read, Seek};
use std::path::Path;

use serde::de::DeserializeOwned;
use zip::ZipArchive;

use super::member::{MemberInfo, NpzMember, NpzRecords};
use super::{
    from_zip, key_for_name, name_for_key, quote, zip_error, Compression, DEFAULT_MAX_MEMBERS,
    DEFAULT_MAX_MEMBER_SIZE,
};
use crate::error::{Error, ErrorKind, Result};
use crate::header::{Limits, ParsedHeader};
use crate::read::ReaderBuilder;
use crate::read::{Exact, General};
use crate::record::NpyRecord;
use crate::value::Array;

/// The members in central-directory order, and each name's index.
pub(super) type Listing = (Vec<MemberInfo>, HashMap<String, usize>);

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
    pub(super) max_member_size: u64,
    pub(super) reader: ReaderBuilder,
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

    /// The members of an opened zip archive, with the limits and duplicate-name rule applied.
    pub(super) fn list<R: Read + Seek>(&self, zip: &ZipArchive<R>) -> Result<Listing> {
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
        Ok((members, by_name))
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
        let (members, by_name) = self.list(&zip)?;
        Ok(NpzArchive {
            zip,
            members,
            by_name,
            options: self.clone(),
        })
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
/// assert_eq!(npz.read::<i32>("a")?, [1, 2, 3]);
/// assert_eq!(npz.read_array("a")?.values.len(), 3);
/// let total: i64 = npz.records_serde::<i64>("a")?.map(|r| r.unwrap()).sum();
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
        Ok(NpzMember::new(info, file, &self.options.reader))
    }

    /// Reads (just) the `.npy` header of the member for `key`, checking that it agrees with
    /// the member's size.
    pub fn header(&mut self, key: &str) -> Result<ParsedHeader> {
        let mut member = self.by_key(key)?;
        Ok(member.header()?.clone())
    }

    /// Reads the array of the member for `key` into `T` (see [`crate::read`] for the mapping:
    /// `Vec<T>` for 1-D, nested `Vec`s or arrays for more dimensions, a struct per record).
    pub fn deserialize<T: DeserializeOwned>(&mut self, key: &str) -> Result<T> {
        self.by_key(key)?.deserialize()
    }

    /// Reads the object array of the member for `key` (dtype `O`, a record with an `O` field,
    /// NumPy 2's `StringDType`: `np.savez` pickles them) as Python values, through the
    /// data-only pickle reader: nothing is imported or run. It needs
    /// [`allow_pickle_data`](crate::ReaderBuilder::allow_pickle_data) in the archive's
    /// [`reader_options`](NpzReaderBuilder::reader_options); without it, and for a member
    /// without objects, the error says so. The member is read whole (at most
    /// [`NpzReaderBuilder::max_member_size`] bytes) and CRC-checked.
    ///
    /// ```
    /// use npy_serde::pickle::{strings_to_vec, PyValue};
    /// use npy_serde::{NpzArchive, NpzWriter, ReaderBuilder};
    ///
    /// // An object array of str and None, as np.save writes it, in an archive.
    /// let npy = strings_to_vec([Some("a"), None].into_iter());
    /// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
    /// w.add_raw("names.npy", &npy)?;
    /// let bytes = w.finish()?.into_inner();
    ///
    /// let allowed = ReaderBuilder::new().allow_pickle_data(true);
    /// let mut npz = NpzArchive::builder().reader_options(allowed).from_bytes(&bytes)?;
    /// let names = npz.read_objects("names")?;
    /// assert_eq!(names.values, [PyValue::Str("a".into()), PyValue::None]);
    /// assert!(NpzArchive::from_bytes(&bytes)?.read_objects("names").is_err());
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn read_objects(&mut self, key: &str) -> Result<crate::pickle::ObjectArray> {
        self.by_key(key)?.read_objects()
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
    pub fn records_serde<T: DeserializeOwned>(
        &mut self,
        key: &str,
    ) -> Result<NpzRecords<'_, R, T, General>> {
        self.by_key(key)?.records_serde()
    }

    /// [`records_serde`](Self::records_serde) for a type that knows its dtype (`#[derive(Deserialize,
    /// NpyRecord)]`): the same elements and errors, on the exact tier of
    /// [`RecordReader::new`](crate::RecordReader::new) (several times faster on records).
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
    /// let sum: f64 = npz.records::<Rec>("recs")?.map(|r| r.unwrap().x).sum();
    /// assert_eq!(sum, 2.0);
    /// let all: Vec<Rec> = npz.read("recs")?;
    /// assert_eq!(all[1].id, 2);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn records<T: DeserializeOwned + NpyRecord>(
        &mut self,
        key: &str,
    ) -> Result<NpzRecords<'_, R, T, Exact<T>>> {
        self.by_key(key)?.records()
    }

    /// Every element of the member for `key` as a `T` (logical C order), on the exact tier:
    /// [`records`](Self::records) collected, then the member's length and CRC-32
    /// checked.
    pub fn read<T: DeserializeOwned + NpyRecord>(&mut self, key: &str) -> Result<Vec<T>> {
        let mut it = self.records::<T>(key)?;
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

    /// The archive's comment (empty if it has none; see
    /// [`NpzWriter::set_comment`](super::NpzWriter::set_comment)).
    pub fn comment(&self) -> &[u8] {
        self.zip.comment()
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
