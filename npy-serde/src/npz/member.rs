//! Reading one member of an archive: what the zip directory says of it ([`MemberInfo`]), its
//! checked bytes ([`NpzMember`], a `Read` that verifies the declared size and the CRC-32) and
//! its elements streamed ([`NpzRecords`]). Calls the readers of `crate::read`; the archive
//! itself (`super::read`) calls this module, never the reverse.

use std::io::{self, Read};

use serde::de::DeserializeOwned;
use zip::read::ZipFile;

use super::{quote, zip_error, Compression, MAX_DEFLATE_RATIO};
use crate::error::{Error, ErrorKind, Result};
use crate::header::{self, Contents, Header, ParsedHeader};
use crate::pyliteral;
use crate::read::ReaderBuilder;
use crate::read::{Exact, General, RecordReader};
use crate::record::NpyRecord;
use crate::value::Array;

/// What the zip directory says about one member. Listing members reads nothing else; see
/// [`crate::NpzArchive::header`] for the `.npy` header.
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
    /// Position in the archive's listing ([`crate::NpzArchive::members`]).
    pub index: usize,
}

impl MemberInfo {
    /// True if the name ends in `.npy`. NumPy itself decides by content (the magic string),
    /// which [`NpzMember::header`] checks.
    pub fn has_npy_suffix(&self) -> bool {
        self.name.ends_with(".npy")
    }

    /// Checks, without reading anything, that the member can be read within `limits`.
    pub(super) fn check_readable(&self, max_member_size: u64) -> Result<()> {
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

/// One member being read, borrowed from its [`NpzArchive`](crate::NpzArchive).
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
    contents: Option<Contents>,
    header_bytes: Vec<u8>,
}

impl<R: Read> std::fmt::Debug for NpzMember<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzMember")
            .field("info", self.info)
            .field("position", &self.reader.pos)
            .field("contents", &self.contents)
            .finish_non_exhaustive()
    }
}

impl<'a, R: Read> NpzMember<'a, R> {
    /// The member `info` of an archive, opened as `file`, read with `options`.
    pub(super) fn new(
        info: &'a MemberInfo,
        file: ZipFile<'a, R>,
        options: &'a ReaderBuilder,
    ) -> NpzMember<'a, R> {
        NpzMember {
            info,
            reader: MemberReader {
                file,
                name: &info.name,
                size: info.size,
                pos: 0,
                verified: false,
            },
            options,
            contents: None,
            header_bytes: Vec::new(),
        }
    }

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
        match self.contents()? {
            Contents::Typed(h) => Ok(h),
            Contents::Objects(h) => Err(lift(h.refusal())),
        }
    }

    /// Reads the `.npy` header once and says what the member holds: [`Contents::Typed`] (whose
    /// declared size is checked as [`header`](Self::header) checks it) or an object array,
    /// whose pickle is the rest of the member.
    pub fn contents(&mut self) -> Result<&Contents> {
        if self.contents.is_none() {
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
            let contents = header::read_contents(&mut rec, self.options.limits()).map_err(lift)?;
            if let Contents::Typed(parsed) = &contents {
                check_member_size(self.info, parsed)?;
            }
            self.contents = Some(contents);
        }
        Ok(self.contents.as_ref().expect("just set"))
    }

    /// The header, if [`header`](Self::header) has read it.
    pub fn parsed_header(&self) -> Option<&ParsedHeader> {
        match &self.contents {
            Some(Contents::Typed(h)) => Some(h),
            _ => None,
        }
    }

    /// The raw bytes of the header, if [`header`](Self::header) has read it (the member's first
    /// `data_offset` bytes).
    pub fn header_bytes(&self) -> Option<&[u8]> {
        self.contents.as_ref().map(|_| self.header_bytes.as_slice())
    }

    /// [`at_data`](Self::at_data) for the doors that stream elements: an object array is
    /// refused naming the doors that read it whole.
    fn element_wise(&mut self) -> Result<ParsedHeader> {
        let options = self.options;
        if let Contents::Objects(h) = self.contents()? {
            return Err(crate::read::objects::not_element_wise(
                h, options, "streamed",
            ));
        }
        self.at_data()
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
    /// the member (its length and CRC-32). An object array, with the archive's reader options'
    /// [`allow_pickle_data`](crate::ReaderBuilder::allow_pickle_data), is read whole through
    /// the data-only pickle reader (as `ndarray.tolist()`).
    pub fn deserialize<T: DeserializeOwned>(mut self) -> Result<T> {
        let options = self.options;
        if let Contents::Objects(h) = self.contents()?.clone() {
            // An object array: its pickle, the rest of the member, read whole.
            let data = crate::read::objects::pickle_of(&h, options, &mut self)?;
            return crate::read::objects::whole(options.read_objects_with_header(&h, &data)?);
        }
        let header = self.at_data()?;
        let value = options
            .from_reader_with_header(&mut self, &header)
            .map_err(lift)?;
        self.drain()?;
        Ok(value)
    }

    /// Reads an object array (dtype `O`, a record with an `O` field, NumPy 2's `StringDType`)
    /// through the data-only pickle reader, with the archive's reader options'
    /// [`allow_pickle_data`](crate::ReaderBuilder::allow_pickle_data); see
    /// [`crate::NpzArchive::read_objects`]. The member is read whole and CRC-checked.
    pub fn read_objects(mut self) -> Result<crate::pickle::ObjectArray> {
        let options = self.options;
        let Contents::Objects(h) = self.contents()?.clone() else {
            return Err(Error::mismatch(
                "an object array",
                "an array without objects (read it with the other doors)",
            ));
        };
        let data = crate::read::objects::pickle_of(&h, options, &mut self).map_err(lift)?;
        options.read_objects_with_header(&h, &data).map_err(lift)
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
    /// [`crate::NpzArchive::read_ndarray`]. Feature `ndarray`.
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
    /// read; see [`crate::NpzArchive::records_serde`].
    pub fn records_serde<T: DeserializeOwned>(mut self) -> Result<NpzRecords<'a, R, T, General>> {
        let header = self.element_wise()?;
        let options = self.options;
        let inner = RecordReader::from_parts_with(self, header, options).map_err(lift)?;
        Ok(NpzRecords { inner })
    }

    /// [`records_serde`](Self::records_serde) on the exact tier; see [`crate::NpzArchive::records`].
    pub fn records<T: DeserializeOwned + NpyRecord>(
        mut self,
    ) -> Result<NpzRecords<'a, R, T, Exact<T>>> {
        let header = self.element_wise()?;
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
/// [`crate::NpzArchive::records_serde`]). The member's CRC-32 is checked when the last element is read.
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
/// let records = npz.records_serde::<u32>("v")?;
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
/// [`crate::NpzArchive::records_serde`], [`Exact`] from [`crate::NpzArchive::records`].
pub struct NpzRecords<'a, R: Read, T, E = Exact<T>> {
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

impl<R: Read, T: DeserializeOwned> Iterator for NpzRecords<'_, R, T, General> {
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
pub(super) fn check_member_size(info: &MemberInfo, parsed: &ParsedHeader) -> Result<()> {
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
