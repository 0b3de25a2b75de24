//! [`MmapNpz`]: an `.npz` archive mapped into memory, its stored members viewed in place.
//!
//! NumPy ignores `mmap_mode` for archives (numpy issue 5976) and reads every member whole, even
//! a stored one whose bytes sit uncompressed in the file. Here a stored member is an
//! [`MmapArray`] over the archive's map: `as_slice`, `view` (feature `ndarray`), `records`,
//! `record(i)` and the rest work on it as on a mapped `.npy` file, without a copy.
//!
//! Opening reads the central directory and each member's local header, nothing else: its cost
//! does not grow with the members' sizes. Every member's place is checked against the file
//! before anything is handed out (local header inside the file and in agreement with the
//! central directory, data before the central directory, no two members overlapping), so a
//! hostile archive is refused with the reason when it is opened.

use std::collections::HashMap;
use std::fs::File;
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use zip::ZipArchive;

use super::member::{check_member_size, MemberInfo};
use super::read::{NpzArchive, NpzReaderBuilder};
use super::{from_zip, name_for_key, quote, zip_error, Compression};
use crate::error::Result;
use crate::read::MmapArray;

/// The fixed part of a zip local file header (signature included).
const LOCAL_HEADER_LEN: u64 = 30;
const LOCAL_SIGNATURE: u32 = 0x0403_4b50;
/// General-purpose flag bits: encrypted, sizes and CRC in a data descriptor.
const FLAG_ENCRYPTED: u16 = 1;
const FLAG_DESCRIPTOR: u16 = 1 << 3;

/// Where one member lies in the archive, checked when the archive was opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Place {
    /// The member's local header.
    header_start: u64,
    /// Its first stored byte (for a stored `.npy` member, the first byte of the `.npy` file).
    data_start: u64,
    /// One past its last stored byte.
    data_end: u64,
}

/// An `.npz` archive mapped into memory: stored members are read in place.
///
/// [`array`](Self::array) gives a stored (uncompressed, unencrypted) member as an
/// [`MmapArray`] sharing the archive's map, with all of its doors: the typed view
/// [`as_slice`](MmapArray::as_slice), the ndarray `MmapArray::view` (feature
/// `ndarray`), [`records`](MmapArray::records), [`record`](MmapArray::record),
/// [`to_vec`](MmapArray::to_vec), ... A deflated or encrypted member is refused with
/// the reason (an [`ErrorKind::Zip`](crate::ErrorKind::Zip) error), and so is a typed view of
/// a member whose data is not aligned for the type in the file (an
/// [`ErrorKind::View`](crate::ErrorKind::View) error): `np.savez` does not align its members, so
/// only some of them can be viewed as `&[f64]`, while
/// [`NpzWriter::align`](super::NpzWriter::align) writes archives whose stored members all can.
/// [`archive`](Self::archive) reads any member the copying way, from the same map.
///
/// The views do not check the member's CRC-32 (that would read it all);
/// [`verify`](Self::verify) does.
///
/// ```
/// use npy_serde::npz::{MmapNpz, NpzWriter};
///
/// # let dir = std::env::temp_dir().join(format!("mmap-npz-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let path = dir.join("model.npz");
/// let mut w = NpzWriter::new(std::fs::File::create(&path)?).align(true);
/// w.add("weights", &[0.5f32, 1.5, 2.5, 3.5])?;
/// w.add("ids", &[7u64, 8])?;
/// w.finish()?;
///
/// let npz = MmapNpz::open(&path)?;
/// assert_eq!(npz.keys().collect::<Vec<_>>(), ["weights", "ids"]);
/// let weights = npz.array("weights")?;
/// let w: &[f32] = weights.as_slice()?; // in place: no copy
/// assert_eq!(w.iter().sum::<f32>(), 8.0);
/// assert_eq!(npz.array("ids")?.record::<u64>(1)?, 8);
/// assert_eq!(npz.data_offset("weights")? % 64, 0);
/// # drop((weights, npz));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
///
/// # File changes
///
/// As for [`MmapArray`]: the map shows the file's current contents, so the archive must not be
/// modified (appended to, rewritten) or truncated while it, or an array from it, is alive.
pub struct MmapNpz {
    map: Arc<memmap2::Mmap>,
    members: Vec<MemberInfo>,
    by_name: HashMap<String, usize>,
    places: Vec<Place>,
    options: NpzReaderBuilder,
    comment: Box<[u8]>,
}

impl std::fmt::Debug for MmapNpz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MmapNpz")
            .field("len", &self.map.len())
            .field("members", &self.members)
            .finish_non_exhaustive()
    }
}

impl NpzReaderBuilder {
    /// Maps the archive at `path` with these options; see [`MmapNpz`].
    pub fn open_mmap<P: AsRef<Path>>(&self, path: P) -> Result<MmapNpz> {
        MmapNpz::open_with(path, self)
    }
}

impl MmapNpz {
    /// Maps the archive at `path` with the default options ([`NpzReaderBuilder::new`]).
    pub fn open<P: AsRef<Path>>(path: P) -> Result<MmapNpz> {
        Self::open_with(path, &NpzReaderBuilder::new())
    }

    /// Maps the archive at `path` with `options` (member count limit, duplicate names, the
    /// members' header limits). Reads the central directory and the local headers only.
    pub fn open_with<P: AsRef<Path>>(path: P, options: &NpzReaderBuilder) -> Result<MmapNpz> {
        Self::from_file(&File::open(path.as_ref())?, options)
    }

    /// Maps the archive `file` (open for reading) with `options`: for a caller that also asks
    /// the open file something, such as its metadata, knowing the map is of the same file.
    ///
    /// ```no_run
    /// # fn main() -> npy_serde::Result<()> {
    /// use npy_serde::npz::{MmapNpz, NpzReaderBuilder};
    ///
    /// let file = std::fs::File::open("data.npz")?;
    /// let modified = file.metadata()?.modified()?;
    /// let npz = MmapNpz::from_file(&file, &NpzReaderBuilder::new())?;
    /// println!("{} members, modified {modified:?}", npz.len());
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_file(file: &File, options: &NpzReaderBuilder) -> Result<MmapNpz> {
        // SAFETY: as in `MmapArray::open_with`: the map is only ever read, any byte values are
        // valid for every decode path, and the docs tell the caller that the file must not be
        // modified or truncated while mapped.
        let map = unsafe { memmap2::Mmap::map(file)? };
        Self::from_map(Arc::new(map), options)
    }

    /// An archive held in memory, copied into an anonymous map: for tests and fuzzing (the
    /// views behave as for a file). To read an archive in memory without a copy, use
    /// [`NpzArchive::from_bytes`].
    ///
    /// ```
    /// # use npy_serde::npz::{MmapNpz, NpzReaderBuilder, NpzWriter};
    /// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new())).align(true);
    /// w.add("x", &[1.5f64, 2.5])?;
    /// let bytes = w.finish()?.into_inner();
    /// let npz = MmapNpz::from_bytes_with(&bytes, &NpzReaderBuilder::new())?;
    /// assert_eq!(npz.array("x")?.as_slice::<f64>()?, [1.5, 2.5]);
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn from_bytes_with(bytes: &[u8], options: &NpzReaderBuilder) -> Result<MmapNpz> {
        if bytes.is_empty() {
            return Err(zip_error("cannot read the archive: it is empty"));
        }
        let mut map = memmap2::MmapMut::map_anon(bytes.len())?;
        map.copy_from_slice(bytes);
        let map = map.make_read_only()?;
        Self::from_map(Arc::new(map), options)
    }

    fn from_map(map: Arc<memmap2::Mmap>, options: &NpzReaderBuilder) -> Result<MmapNpz> {
        let zip = ZipArchive::new(Cursor::new(&map[..]))
            .map_err(|e| from_zip("cannot read the archive", e))?;
        let (members, by_name) = options.list(&zip)?;
        let cd_start = zip.central_directory_start();
        let file_len = map.len() as u64;
        if cd_start > file_len {
            return Err(zip_error(format!(
                "the central directory is said to start at byte {cd_start}, past the end of \
                 the {file_len}-byte file"
            )));
        }
        let mut places = Vec::with_capacity(members.len());
        for info in &members {
            let entry = zip
                .by_index_data(info.index)
                .map_err(|e| from_zip("cannot read the central directory", e))?;
            let place = local_place(&map, info, entry.name_raw(), entry.header_start(), cd_start)?;
            places.push(place);
        }
        check_disjoint(&members, &places)?;
        let comment = zip.comment().into();
        Ok(MmapNpz {
            map,
            members,
            by_name,
            places,
            options: options.clone(),
            comment,
        })
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True if the archive has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// All members in central-directory order.
    pub fn members(&self) -> &[MemberInfo] {
        &self.members
    }

    /// The keys, in order, as `np.load(f).files` lists them.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|m| m.key.as_str())
    }

    /// The full member names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|m| m.name.as_str())
    }

    /// The member for `key`: named exactly `key`, else `key + ".npy"` (as `np.load`).
    pub fn member(&self, key: &str) -> Option<&MemberInfo> {
        self.index_of_key(key).map(|i| &self.members[i])
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

    fn index(&self, key: &str) -> Result<usize> {
        self.index_of_key(key).ok_or_else(|| {
            let keys: Vec<String> = self.keys().take(20).map(quote).collect();
            zip_error(format!(
                "no member with key {} in the archive (keys: {})",
                quote(key),
                if keys.is_empty() {
                    "none".into()
                } else {
                    keys.join(", ")
                }
            ))
        })
    }

    /// The stored bytes of the member for `key`, in place, if they are its content: the member
    /// is stored (not compressed) and not encrypted. Otherwise the error says why. The CRC-32
    /// is not checked ([`verify`](Self::verify) does).
    pub fn stored_bytes(&self, key: &str) -> Result<&[u8]> {
        let i = self.index(key)?;
        self.stored(i)
    }

    fn stored(&self, i: usize) -> Result<&[u8]> {
        let info = &self.members[i];
        let name = quote(&info.name);
        if info.encrypted {
            return Err(zip_error(format!(
                "member {name} is encrypted: it cannot be read in place (nor read at all: \
                 encryption is not supported)"
            )));
        }
        match info.compression {
            Compression::Stored => {}
            Compression::Deflate => {
                return Err(zip_error(format!(
                    "member {name} is deflate-compressed (np.savez_compressed), so its array \
                     is not in the file as it is: it cannot be mapped in place; read it with \
                     MmapNpz::archive() or NpzArchive, which decompress it"
                )))
            }
            other => {
                return Err(zip_error(format!(
                    "member {name} uses {other} compression: it cannot be mapped in place, \
                     nor read (only stored and deflate members are supported)"
                )))
            }
        }
        if info.size != info.compressed_size {
            return Err(zip_error(format!(
                "member {name} is stored uncompressed but the archive declares {} stored and \
                 {} uncompressed bytes",
                info.compressed_size, info.size
            )));
        }
        let p = self.places[i];
        // Checked against the map's length when the archive was opened.
        Ok(&self.map[p.data_start as usize..p.data_end as usize])
    }

    /// The stored `.npy` member for `key` as an [`MmapArray`] viewing the archive's map in
    /// place (no copy; the map is shared, so the array may outlive this value). Its header is
    /// validated, and must declare exactly the member's size.
    ///
    /// Fails with the reason if the member is compressed or encrypted (read it with
    /// [`archive`](Self::archive) then), or is not a valid `.npy` file.
    pub fn array(&self, key: &str) -> Result<MmapArray> {
        let i = self.index(key)?;
        self.array_at(i)
    }

    /// [`array`](Self::array) for the `index`-th member of [`members`](Self::members).
    pub fn array_at(&self, index: usize) -> Result<MmapArray> {
        let info = self.members.get(index).ok_or_else(|| {
            zip_error(format!(
                "no member number {index}: the archive has {}",
                self.members.len()
            ))
        })?;
        self.stored(index)?;
        let p = self.places[index];
        let name: Arc<str> = Arc::from(info.name.as_str());
        let range = p.data_start as usize..p.data_end as usize;
        let array = MmapArray::in_map(self.map.clone(), range, Some(name), &self.options.reader)
            .map_err(|e| {
                zip_error(format!(
                    "member {} is not a valid .npy file: {e}",
                    quote(&info.name)
                ))
            })?;
        check_member_size(info, array.parsed_header())?;
        Ok(array)
    }

    /// The offset in the archive file of the first array-data byte of the stored `.npy`
    /// member for `key` (what decides which typed views its data allows: a multiple of 8 fits
    /// every number type). Fails as [`array`](Self::array) does.
    pub fn data_offset(&self, key: &str) -> Result<u64> {
        Ok(self.array(key)?.data_offset_in_file())
    }

    /// Reads the member for `key` whole and checks its CRC-32 and length (what the in-place
    /// views skip). A stored member's CRC-32 is computed over its bytes in the map, where they
    /// lie (reading it through the zip reader copied every byte once more: a tenth of TPC-H
    /// Q19's time over column tables), on all cores for a large member when the reader
    /// options decode in parallel (feature `parallel`; the pieces' CRC-32s combined).
    pub fn verify(&self, key: &str) -> Result<()> {
        let i = self.index(key)?;
        let info = &self.members[i];
        if info.compression == Compression::Stored && !info.encrypted {
            let place = self.places[i];
            let data = &self.map[place.data_start as usize..place.data_end as usize];
            if data.len() as u64 != info.size {
                return Err(zip_error(format!(
                    "member {}: holds {} bytes, not the {} the archive declares",
                    quote(&info.name),
                    data.len(),
                    info.size
                )));
            }
            if crc32(data, &self.options.reader) != info.crc32 {
                return Err(zip_error(format!(
                    "member {}: CRC-32 mismatch: the member's data is corrupt",
                    quote(&info.name)
                )));
            }
            return Ok(());
        }
        let mut archive = self.archive()?;
        let name = &self.members[i].name;

        archive.by_name(name)?.finish()
    }

    /// The archive read the copying way, from this map: for members that cannot be mapped
    /// (deflated), or to read into owned values. Parses the central directory again.
    pub fn archive(&self) -> Result<NpzArchive<Cursor<&[u8]>>> {
        self.options.from_bytes(&self.map)
    }

    /// The archive's comment (empty if it has none; see
    /// [`NpzWriter::set_comment`](super::NpzWriter::set_comment)).
    pub fn comment(&self) -> &[u8] {
        &self.comment
    }

    /// The whole mapped archive.
    pub fn as_bytes(&self) -> &[u8] {
        &self.map
    }

    /// The options the archive was opened with.
    pub fn options(&self) -> &NpzReaderBuilder {
        &self.options
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads member `info`'s local header at `header_start`, checks it against the central
/// directory (name, method, encryption, CRC-32 and sizes unless they follow in a data
/// descriptor) and the stored bytes against the file (before the central directory at
/// `cd_start`), and returns where the member lies.
fn local_place(
    map: &[u8],
    info: &MemberInfo,
    cd_name: &[u8],
    header_start: u64,
    cd_start: u64,
) -> Result<Place> {
    let name = quote(&info.name);
    let fixed_end = header_start.checked_add(LOCAL_HEADER_LEN);
    let Some(fixed_end) = fixed_end.filter(|&e| e <= cd_start) else {
        return Err(zip_error(format!(
            "member {name}: its local header is said to start at byte {header_start}, but \
             the members end where the central directory starts, at byte {cd_start}"
        )));
    };
    let h = &map[header_start as usize..fixed_end as usize];
    if u32_at(h, 0) != LOCAL_SIGNATURE {
        return Err(zip_error(format!(
            "member {name}: no local header at byte {header_start}, where the central \
             directory says it is (found bytes {:02x?})",
            &h[..4]
        )));
    }
    let flags = u16_at(h, 6);
    let method = u16_at(h, 8);
    let crc = u32_at(h, 14);
    let csize32 = u32_at(h, 18);
    let usize32 = u32_at(h, 22);
    let name_len = u64::from(u16_at(h, 26));
    let extra_len = u64::from(u16_at(h, 28));
    let data_start = fixed_end + name_len + extra_len;
    if data_start > cd_start {
        return Err(zip_error(format!(
            "member {name}: its local header (bytes {header_start}..{data_start}) runs into \
             the central directory at byte {cd_start}"
        )));
    }
    let local_name = &map[fixed_end as usize..(fixed_end + name_len) as usize];
    let extra = &map[(fixed_end + name_len) as usize..data_start as usize];
    let disagree = |what: &str, local: String, central: String| {
        zip_error(format!(
            "member {name}: the local header at byte {header_start} says {what} {local}, the \
             central directory says {central}: the archive is corrupt or hostile"
        ))
    };
    if local_name != cd_name {
        return Err(disagree(
            "the name is",
            quote(&String::from_utf8_lossy(local_name)),
            quote(&String::from_utf8_lossy(cd_name)),
        ));
    }
    if method != info.compression.method() {
        return Err(disagree(
            "the method is",
            Compression::from_method(method).to_string(),
            info.compression.to_string(),
        ));
    }
    if (flags & FLAG_ENCRYPTED != 0) != info.encrypted {
        return Err(disagree(
            "encrypted is",
            (flags & FLAG_ENCRYPTED != 0).to_string(),
            info.encrypted.to_string(),
        ));
    }
    if flags & FLAG_DESCRIPTOR == 0 {
        if crc != info.crc32 {
            return Err(disagree(
                "the CRC-32 is",
                format!("{crc:#010x}"),
                format!("{:#010x}", info.crc32),
            ));
        }
        let (usize64, csize64) = local_sizes(extra, usize32, csize32).ok_or_else(|| {
            zip_error(format!(
                "member {name}: its local header at byte {header_start} defers its sizes to \
                 a zip64 extra field it does not have"
            ))
        })?;
        if (usize64, csize64) != (info.size, info.compressed_size) {
            return Err(disagree(
                "the sizes (uncompressed, stored) are",
                format!("({usize64}, {csize64})"),
                format!("({}, {})", info.size, info.compressed_size),
            ));
        }
    }
    let data_end = data_start
        .checked_add(info.compressed_size)
        .filter(|&e| e <= cd_start)
        .ok_or_else(|| {
            zip_error(format!(
                "member {name}: its {} stored bytes from byte {data_start} run past the start \
                 of the central directory at byte {cd_start} (the file is {} bytes): the \
                 central directory lies about its size, or the file is truncated",
                info.compressed_size,
                map.len()
            ))
        })?;
    Ok(Place {
        header_start,
        data_start,
        data_end,
    })
}

/// The sizes in a local header: the 32-bit fields, or the zip64 extra field's where a field
/// is `0xFFFFFFFF` (`None` if that field is missing).
fn local_sizes(extra: &[u8], usize32: u32, csize32: u32) -> Option<(u64, u64)> {
    let mut u = u64::from(usize32);
    let mut c = u64::from(csize32);
    if usize32 != u32::MAX && csize32 != u32::MAX {
        return Some((u, c));
    }
    let mut rest = extra;
    while rest.len() >= 4 {
        let id = u16_at(rest, 0);
        let len = usize::from(u16_at(rest, 2));
        let body = rest.get(4..4 + len)?;
        if id == 1 {
            let mut at = 0;
            let mut next = || {
                let v = body.get(at..at + 8)?;
                at += 8;
                Some(u64::from_le_bytes(v.try_into().ok()?))
            };
            if usize32 == u32::MAX {
                u = next()?;
            }
            if csize32 == u32::MAX {
                c = next()?;
            }
            return Some((u, c));
        }
        rest = &rest[4 + len..];
    }
    None
}

/// No two members (local header through stored bytes) may share a byte.
fn check_disjoint(members: &[MemberInfo], places: &[Place]) -> Result<()> {
    let mut order: Vec<usize> = (0..places.len()).collect();
    order.sort_by_key(|&i| places[i].header_start);
    for pair in order.windows(2) {
        let (a, b) = (&places[pair[0]], &places[pair[1]]);
        if b.header_start < a.data_end {
            return Err(zip_error(format!(
                "members {} (bytes {}..{}) and {} (bytes {}..{}) overlap: the archive is \
                 corrupt or hostile",
                quote(&members[pair[0]].name),
                a.header_start,
                a.data_end,
                quote(&members[pair[1]].name),
                b.header_start,
                b.data_end
            )));
        }
    }
    Ok(())
}

/// The CRC-32 of `data`: with feature `parallel`, when `reader` decodes arrays this large in
/// parallel, pieces of it on rayon's threads, combined (a 474 MB `o_comment` member of a
/// TPC-H orders table took a fifth of Q13 on one core while the other waited for it).
fn crc32(data: &[u8], reader: &crate::ReaderBuilder) -> u32 {
    #[cfg(feature = "parallel")]
    if crate::read::parallel_worth(data.len() as u64, reader) && rayon::current_num_threads() > 1 {
        /// Bytes a piece: below it, one thread's hash beats a split.
        const PIECE: usize = 8 << 20;
        fn hash(data: &[u8]) -> crc32fast::Hasher {
            if data.len() <= PIECE {
                let mut h = crc32fast::Hasher::new();
                h.update(data);
                return h;
            }
            let (a, b) = data.split_at(data.len() / 2);
            let (mut a, b) = rayon::join(|| hash(a), || hash(b));
            a.combine(&b);
            a
        }
        return hash(data).finalize();
    }
    let _ = reader;
    crc32fast::hash(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Split and combined on rayon's threads, the CRC-32 is the one of the whole, at every
    /// size about the piece's; and a member corrupt in its last piece is found so.
    #[test]
    fn a_parallel_crc_is_the_whole_ones() {
        let all = crate::ReaderBuilder::new().parallel_threshold(1);
        let data: Vec<u8> = (0..(17u32 << 20) + 5)
            .map(|i| i.wrapping_mul(2654435761) as u8)
            .collect();
        for n in [0, 1, 8 << 20, (8 << 20) + 1, 16 << 20, data.len()] {
            assert_eq!(crc32(&data[..n], &all), crc32fast::hash(&data[..n]), "{n}");
        }
        let path = std::env::temp_dir().join(format!("npy-crc-{}.npz", std::process::id()));
        let values: Vec<u64> = (0..3u64 << 20).collect();
        crate::npz::NpzWriter::create(&path)
            .and_then(|mut w| {
                w.add("a", &values)?;
                w.commit()
            })
            .unwrap();
        let options = crate::npz::NpzReaderBuilder::new().reader_options(all);
        assert!(MmapNpz::open_with(&path, &options)
            .unwrap()
            .verify("a")
            .is_ok());
        let mut bytes = std::fs::read(&path).unwrap();
        // A bit of the last value (the data runs up to the central directory).
        let at = bytes.len() - 200;
        bytes[at] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let e = MmapNpz::open_with(&path, &options)
            .unwrap()
            .verify("a")
            .unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(e.to_string().contains("CRC-32 mismatch"), "{e}");
    }
}
