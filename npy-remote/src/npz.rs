//! [`RemoteNpz`]: an `.npz` archive on an object store, opened by its central directory (a
//! ranged GET of the tail) and read member by member without fetching the others.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{GetRange, ObjectStore};
use serde::de::DeserializeOwned;

use super::fetch::{open_with_defaults, FetchOptions, Object};
use super::npy::RemoteNpy;
use super::zipdir::{self, Directory, Entry, Tail, LOCAL_LEN, ZIP64_EOCD_LEN};
use npy_serde::error::{Error, Result};
use npy_serde::{NpyRecord, ReaderBuilder};

/// The largest central directory read (64 MiB: 700,000 members of 50-byte names).
pub const MAX_DIRECTORY_BYTES: u64 = 64 << 20;

/// The most members an archive may list (as [`NpzReaderBuilder`](npy_serde::npz::NpzReaderBuilder)'s
/// default).
const MAX_MEMBERS: u64 = 100_000;

/// The largest deflated member inflated (4 GiB, as `NpzReaderBuilder`'s default).
const MAX_MEMBER: u64 = 4 << 30;

/// Deflate expands at most 1032 times.
const MAX_RATIO: u64 = 1032;

/// An `.npz` archive on an object store: its central directory, read with one ranged GET of
/// the object's tail (a second if the directory is longer than the tail, and one for a zip64
/// end record outside it); members by key, as [`NpzArchive`](npy_serde::NpzArchive) names them
/// (`"a"` or `"a.npy"` for member `a.npy`).
///
/// A stored member (`np.savez`) opens as a [`RemoteNpy`] ([`member`](RemoteNpz::member)) and
/// reads by row ranges; locating and opening it takes at most 3 requests (the tail, the member's
/// local header with the start of its data, and the rest of a header longer than that), its
/// CRC-32 checked when it is read whole. A deflated member (`np.savez_compressed`) is read
/// whole ([`read`](RemoteNpz::read)): its compressed bytes (the length its directory entry
/// declares, checked against the archive) fetched in chunks of
/// [`FetchOptions::chunk_bytes`], concurrently, the first with its local header (a member of
/// one chunk or less: one GET), then inflated on a blocking thread, its length and CRC-32
/// checked. It is not inflated as its chunks arrive: the compressed bytes are held until the
/// last one comes, so such a read holds the compressed and the inflated member at once (both
/// bounded: 4 GiB inflated, at most 1032 times the compressed length).
///
/// ```
/// use std::sync::Arc;
/// use npy_serde::npz::NpzWriter;
/// use npy_remote::RemoteNpz;
/// use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt, PutPayload};
///
/// let mut w = NpzWriter::new(std::io::Cursor::new(Vec::new()));
/// w.add("a", &[1i32, 2, 3])?;
/// w.add("b", &[0.5f64; 4])?;
/// let bytes = w.finish()?.into_inner();
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let mem = Arc::new(InMemory::new());
///     let path = Path::from("x.npz");
///     mem.put(&path, PutPayload::from(bytes)).await.unwrap();
///     let store: Arc<dyn ObjectStore> = mem;
///
///     let npz = RemoteNpz::open(store, path, "memory:///x.npz", &Default::default()).await?;
///     assert_eq!(npz.keys().collect::<Vec<_>>(), ["a", "b"]);
///     let a = npz.member("a").await?;
///     assert_eq!(a.read_rows::<i32>(1..3).await?, [2, 3]);
///     assert_eq!(npz.read::<f64>("b").await?, [0.5; 4]);
///     Ok::<(), npy_serde::Error>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct RemoteNpz {
    obj: Arc<Object>,
    dir: Directory,
    entries: Vec<Entry>,
    rb: ReaderBuilder,
    comment: Vec<u8>,
}

impl RemoteNpz {
    open_with_defaults!(
        /// Opens the archive at `path` on `store` (`url` names it in errors) with the default
        /// [`FetchOptions`]; `reader`'s limits apply to every member's header and data.
        RemoteNpz
    );

    /// [`open`](RemoteNpz::open) with these fetch options. The tail fetched is the larger of
    /// [`FetchOptions::probe_bytes`] and the longest a zip's end records can be (64 KiB and
    /// 77 bytes).
    pub async fn open_with(
        store: Arc<dyn ObjectStore>,
        path: Path,
        url: &str,
        reader: &ReaderBuilder,
        options: &FetchOptions,
    ) -> Result<RemoteNpz> {
        let want = options.probe.max(zipdir::MAX_TAIL);
        let (obj, tail) = Object::probe(store, path, url, options, GetRange::Suffix(want)).await?;
        let size = obj.size;
        let tail_start = size - tail.len() as u64;
        let dir = match zipdir::read_tail(&tail, size).map_err(|e| obj.error(e))? {
            Tail::Directory(d) => d,
            Tail::Zip64At(pos) => {
                let rec = obj.get(pos..pos + ZIP64_EOCD_LEN as u64).await?;
                zipdir::read_zip64(&rec, pos, u64::MAX).map_err(|e| obj.error(e))?
            }
        };
        if dir.size > MAX_DIRECTORY_BYTES {
            let e = Error::limit(
                "the central directory's bytes",
                MAX_DIRECTORY_BYTES,
                dir.size,
            );
            return Err(obj.error(e));
        }
        let bytes = if dir.offset >= tail_start {
            let at = (dir.offset - tail_start) as usize;
            tail.slice(at..at + dir.size as usize)
        } else {
            obj.get(dir.offset..dir.offset + dir.size).await?
        };
        let entries = zipdir::entries(&bytes, dir.entries, MAX_MEMBERS, dir.offset)
            .map_err(|e| obj.error(e))?;
        let comment = zipdir::comment(&tail);
        Ok(RemoteNpz {
            obj: Arc::new(obj),
            dir,
            entries,
            rb: reader.clone(),
            comment: comment.to_vec(),
        })
    }

    /// The members' full names, in the directory's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
    }

    /// The members' keys: each name with one `.npy` suffix stripped, as `np.load` lists them.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.names().map(|n| n.strip_suffix(".npy").unwrap_or(n))
    }

    /// The archive's comment (empty if it has none), read with the central directory.
    pub fn comment(&self) -> &[u8] {
        &self.comment
    }

    /// The archive's URL, as given to `open`.
    pub fn url(&self) -> &str {
        &self.obj.url
    }

    /// True if `key` names a member (exactly, or with `.npy` appended).
    pub fn contains(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    fn find(&self, key: &str) -> Result<&Entry> {
        let npy = format!("{key}.npy");
        let e = (self.entries.iter().find(|e| e.name == key))
            .or_else(|| self.entries.iter().find(|e| e.name == npy));
        let e = e.ok_or_else(|| self.obj.error(format!("no member {key:?} in the archive")))?;
        if e.flags & 1 != 0 {
            return Err(self.obj.error(format!("member {:?} is encrypted", e.name)));
        }
        Ok(e)
    }

    /// Opens the stored member for `key` as a [`RemoteNpy`], to read by row ranges: one GET of
    /// its local header and first bytes (two if its header is longer). A deflated member is an
    /// error naming [`read`](RemoteNpz::read), which reads it whole.
    pub async fn member(&self, key: &str) -> Result<RemoteNpy> {
        let e = self.find(key)?;
        match e.method {
            0 => {}
            8 => {
                return Err(self.obj.error(format!(
                    "member {:?} is deflated (np.savez_compressed): it has no byte ranges; read \
                     it whole with RemoteNpz::read",
                    e.name
                )));
            }
            m => return Err(self.unsupported(e, m)),
        }
        if e.compressed != e.size {
            return Err(self.obj.error(format!(
                "stored member {:?} declares {} bytes stored and {} bytes long",
                e.name, e.compressed, e.size
            )));
        }
        let guess = LOCAL_LEN as u64 + e.name.len() as u64 + 64 + self.obj.opts.probe;
        let (local, start) = self.local(e, guess).await?;
        let first = local.slice((start - e.local) as usize..);
        let npy = RemoteNpy::at(
            self.obj.clone(),
            start,
            e.size,
            first,
            &self.rb,
            Some(&e.name),
        );
        Ok(npy.await?.with_crc(e.crc32))
    }

    /// The bytes from member `e`'s local header on (up to `want` of them, within the data
    /// before the directory) and where its data starts; one GET, two if its local header is
    /// longer than `want`.
    async fn local(&self, e: &Entry, want: u64) -> Result<(Bytes, u64)> {
        let end = (e.local.saturating_add(want)).min(self.dir.offset);
        let mut bytes = self.obj.get(e.local..end).await?;
        let len = zipdir::local_len(&bytes, e).map_err(|x| self.obj.error(x))?;
        let start = e.local + len;
        if start
            .checked_add(e.compressed)
            .is_none_or(|end| end > self.dir.offset)
        {
            return Err(self.obj.error(format!(
                "member {:?}: its {} bytes from byte {start} run past the central directory at \
                 byte {}",
                e.name, e.compressed, self.dir.offset
            )));
        }
        if (bytes.len() as u64) < len {
            let more = self.obj.get(end..start.max(end)).await?;
            let mut all = Vec::with_capacity(bytes.len() + more.len());
            all.extend_from_slice(&bytes);
            all.extend_from_slice(&more);
            bytes = Bytes::from(all);
        }
        Ok((bytes, start))
    }

    /// Reads the whole member for `key` into a `Vec<T>` (the exact tier, as
    /// [`RemoteNpy::read_rows`]); a stored member by ranges, a deflated one inflated. Its
    /// length and CRC-32 are checked.
    pub async fn read<T: DeserializeOwned + NpyRecord + Send + 'static>(
        &self,
        key: &str,
    ) -> Result<Vec<T>> {
        match self.inflated(key).await? {
            Some(file) => self
                .rb
                .from_slice::<T>(&file)
                .map_err(|e| self.named(key, e)),
            None => {
                let m = self.member(key).await?;
                m.read_rows(0..m.len()).await
            }
        }
    }

    /// [`read`](RemoteNpz::read) for any `Deserialize` element type.
    pub async fn read_serde<T: DeserializeOwned + Send>(&self, key: &str) -> Result<Vec<T>> {
        match self.inflated(key).await? {
            Some(file) => self
                .rb
                .from_slice_serde::<T>(&file)
                .map_err(|e| self.named(key, e)),
            None => {
                let m = self.member(key).await?;
                m.read_rows_serde(0..m.len()).await
            }
        }
    }

    /// The keys of the members whose names end in `.npy`, each with whether it is deflated
    /// (any method but stored): a column table's columns.
    pub fn npy_members(&self) -> impl Iterator<Item = (&str, bool)> {
        self.entries.iter().filter_map(|e| {
            let key = e.name.strip_suffix(".npy")?;
            Some((key, e.method != 0))
        })
    }

    /// A deflated member's header, from its first chunk of compressed bytes inflated only as
    /// far as the header (one GET), and its inflated length; the data is neither inflated nor
    /// checked here.
    #[cfg(feature = "npz")]
    pub async fn deflated_header(
        &self,
        key: &str,
    ) -> Result<(npy_serde::header::ParsedHeader, u64)> {
        let e = self.find(key)?.clone();
        if e.method != 8 {
            return Err(self.unsupported(&e, e.method));
        }
        let first = e.compressed.min(self.obj.opts.probe.max(zipdir::MAX_TAIL));
        let guess = (LOCAL_LEN as u64 + e.name.len() as u64 + 64).saturating_add(first);
        let (local, start) = self.local(&e, guess).await?;
        let end = ((start - e.local).saturating_add(first) as usize).min(local.len());
        let local = local.slice(..end);
        // The magic, version and length field, and at most the longest header allowed.
        let want = self
            .rb
            .limits
            .max_header_size
            .saturating_add(12)
            .min(e.size);
        let head = inflate_prefix(&local, &e, want).map_err(|x| self.obj.error(x))?;
        let header = npy_serde::header::parse_header(&head, &self.rb.limits)
            .map_err(|x| self.named(key, x))?;
        Ok((header, e.size))
    }

    /// A deflated member's whole `.npy` bytes, checked; `None` for a stored member.
    #[doc(hidden)]
    pub async fn inflated(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let e = self.find(key)?.clone();
        match e.method {
            0 => return Ok(None),
            8 => {}
            m => return Err(self.unsupported(&e, m)),
        }
        let limit = (e.compressed.saturating_mul(MAX_RATIO)).min(MAX_MEMBER);
        if e.size > limit {
            return Err(self.obj.error(format!(
                "member {:?} declares {} bytes inflated from {} (more than deflate's 1032:1, or \
                 the 4 GiB member limit)",
                e.name, e.size, e.compressed
            )));
        }
        // The local header and up to one chunk of data in the first GET; the rest in chunks,
        // concurrently (a member of one chunk or less: one GET).
        let first = e.compressed.min(self.obj.opts.chunk);
        let guess = (LOCAL_LEN as u64 + e.name.len() as u64 + 64).saturating_add(first);
        let (local, start) = self.local(&e, guess).await?;
        let data_end = (start - e.local + e.compressed) as usize;
        let local = if local.len() < data_end {
            let more = self
                .obj
                .get_chunked(e.local + local.len() as u64..start + e.compressed)
                .await?;
            let mut all = Vec::with_capacity(data_end);
            all.extend_from_slice(&local);
            all.extend_from_slice(&more);
            Bytes::from(all)
        } else {
            local.slice(..data_end)
        };
        let url = self.obj.url.clone();
        let job = tokio::task::spawn_blocking(move || inflate(&local, &e));
        let out = job.await.map_err(|j| Error::remote(&url, j))?;
        out.map(Some).map_err(|x| self.obj.error(x))
    }

    fn unsupported(&self, e: &Entry, method: u16) -> Error {
        self.obj.error(format!(
            "member {:?}: compression method {method} (only stored, 0, and deflate, 8, are \
             read)",
            e.name
        ))
    }

    /// A member's header error, naming the URL and member; a decoding error as it is.
    fn named(&self, key: &str, e: Error) -> Error {
        use npy_serde::ErrorKind as K;
        match e.kind() {
            K::BadMagic { .. }
            | K::UnsupportedVersion { .. }
            | K::HeaderTooLarge { .. }
            | K::InvalidHeader(_)
            | K::InvalidDescr(_)
            | K::UnexpectedEof { .. }
            | K::LimitExceeded { .. } => self.obj.error(format!("member {key:?}: {e}")),
            _ => e,
        }
    }
}

/// Inflates the member whose local header and compressed data are `local`: exactly its
/// declared length, checked against the directory's CRC-32.
#[cfg(feature = "npz")]
fn inflate(local: &[u8], e: &Entry) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut cursor = std::io::Cursor::new(local);
    let file = zip::read::read_zipfile_from_stream_with_compressed_size(&mut cursor, e.compressed)
        .map_err(|z| Error::new(npy_serde::ErrorKind::Zip(z.to_string())))?;
    let Some(file) = file else {
        return Err(Error::new(npy_serde::ErrorKind::Zip(format!(
            "member {:?} has no local header",
            e.name
        ))));
    };
    // The declared size is bounded by the compressed bytes present (1032:1) and 4 GiB.
    let mut out = Vec::with_capacity(e.size as usize);
    let got = file.take(e.size + 1).read_to_end(&mut out);
    if let Err(io) = got {
        return Err(Error::new(npy_serde::ErrorKind::Zip(format!(
            "member {:?}: {io}",
            e.name
        ))));
    }
    if out.len() as u64 != e.size {
        return Err(Error::new(npy_serde::ErrorKind::Zip(format!(
            "member {:?} inflates to {} bytes, its directory entry says {}",
            e.name,
            out.len(),
            e.size
        ))));
    }
    let mut crc = zipdir::Crc::new();
    crc.update(&out);
    if crc.value() != e.crc32 {
        return Err(Error::new(npy_serde::ErrorKind::Zip(format!(
            "member {:?}: CRC-32 {:#010x}, its directory entry says {:#010x}",
            e.name,
            crc.value(),
            e.crc32
        ))));
    }
    Ok(out)
}

/// The first `want` inflated bytes of the member whose local header and first compressed
/// bytes (perhaps not all of them) are `local`; fewer if the bytes present end sooner.
#[cfg(feature = "npz")]
fn inflate_prefix(local: &[u8], e: &Entry, want: u64) -> Result<Vec<u8>> {
    use std::io::Read;
    let zip_err = |m: String| Error::new(npy_serde::ErrorKind::Zip(m));
    let mut cursor = std::io::Cursor::new(local);
    let file = zip::read::read_zipfile_from_stream_with_compressed_size(&mut cursor, e.compressed)
        .map_err(|z| zip_err(z.to_string()))?
        .ok_or_else(|| zip_err(format!("member {:?} has no local header", e.name)))?;
    let mut out = Vec::new();
    let mut file = file.take(want);
    // A prefix of the compressed bytes ends the stream early: keep what was inflated.
    let mut buf = [0u8; 8192];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(io) => return Err(zip_err(format!("member {:?}: {io}", e.name))),
        }
    }
    Ok(out)
}

/// Without feature `npz` (the zip crate), deflated members are not read.
#[cfg(not(feature = "npz"))]
fn inflate(_local: &[u8], e: &Entry) -> Result<Vec<u8>> {
    Err(Error::new(npy_serde::ErrorKind::Zip(format!(
        "member {:?} is deflated: inflating needs feature `npz`",
        e.name
    ))))
}
