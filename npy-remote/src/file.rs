//! [`RemoteFile`]: one object of a store read through `std::io::Read + Seek`, each buffer refill
//! one ranged GET, run to completion on a Tokio runtime of its own (or a given one).

use std::io::{self, Read, Seek, SeekFrom};
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use tokio::runtime::{Handle, Runtime};

use super::store::{store_for_url, store_message, RemoteOptions};
use npy_serde::{Error, Result};

/// The first read-ahead: one GET of up to this many bytes (also the opening probe).
const FIRST_READ_AHEAD: usize = 256 << 10;
/// Sequential reads double the read-ahead up to this.
const MAX_READ_AHEAD: usize = 16 << 20;

/// Where the async calls run.
#[derive(Debug)]
enum Exec {
    /// A current-thread runtime owned by the file.
    Own(Runtime),
    /// A runtime given by the caller.
    Handle(Handle),
}

impl Exec {
    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        match self {
            Exec::Own(rt) => rt.block_on(f),
            Exec::Handle(h) => h.block_on(f),
        }
    }
}

/// One object of a store, read as a blocking `Read + Seek` stream over ranged GETs.
///
/// Opening makes one GET of the object's first bytes (its answer carries the object's size; an
/// empty object is measured with a HEAD instead). Reads are served from a read-ahead buffer; a
/// read outside it makes one GET of the bytes asked for, or more: the read-ahead starts at
/// 256 KiB and doubles (up to 16 MiB) while reads follow each other, and falls back after a
/// seek elsewhere (e.g. a zip reader jumping to the central directory). Nothing is fetched past
/// the object's end, and a GET that answers with fewer bytes than asked is an error, not a
/// short read.
///
/// Errors are [`ErrorKind::Remote`](npy_serde::ErrorKind::Remote) naming the URL; through `Read`
/// and `Seek` they travel inside an `io::Error` (kind `Other`, `io::Error::into_inner` gives the
/// crate's [`Error`](npy_serde::Error) back).
///
/// The calls block: use it from synchronous code, never from inside an async task (Tokio
/// refuses to block a runtime thread).
///
/// ```no_run
/// use std::io::Read;
/// use npy_remote::{RemoteFile, RemoteOptions};
///
/// let mut file = RemoteFile::open("s3://bucket/data/x.npy", &RemoteOptions::default())?;
/// println!("{} bytes", file.len());
/// let mut magic = [0u8; 6];
/// file.read_exact(&mut magic)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RemoteFile {
    store: Arc<dyn ObjectStore>,
    path: Path,
    url: String,
    exec: Exec,
    len: u64,
    pos: u64,
    buf: Bytes,
    buf_start: u64,
    read_ahead: usize,
    requests: u64,
}

impl RemoteFile {
    /// Opens the object at `url` (`s3://bucket/key`, `http(s)://host/path`; see
    /// [`store_for_url`]) on a runtime of its own.
    pub fn open(url: &str, options: &RemoteOptions) -> Result<RemoteFile> {
        let (store, path) = store_for_url(url, options)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::remote(url, format!("cannot start a runtime: {e}")))?;
        RemoteFile::start(store, path, url, Exec::Own(rt))
    }

    /// Opens `path` in `store`, named `url` in errors, running the requests on `handle` (which
    /// must not be the runtime the caller runs on, if any).
    ///
    /// ```
    /// use std::io::Read;
    /// use std::sync::Arc;
    /// use object_store::{memory::InMemory, path::Path, ObjectStoreExt};
    /// use npy_remote::RemoteFile;
    ///
    /// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    /// let store = Arc::new(InMemory::new());
    /// let path = Path::from("a.bin");
    /// rt.block_on(store.put(&path, vec![1u8, 2, 3].into()))?;
    /// let mut f = RemoteFile::with_store(store, path, "mem://a.bin", rt.handle().clone())?;
    /// let mut all = Vec::new();
    /// f.read_to_end(&mut all)?;
    /// assert_eq!(all, [1, 2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        path: Path,
        url: &str,
        handle: Handle,
    ) -> Result<RemoteFile> {
        RemoteFile::start(store, path, url, Exec::Handle(handle))
    }

    fn start(store: Arc<dyn ObjectStore>, path: Path, url: &str, exec: Exec) -> Result<RemoteFile> {
        let mut file = RemoteFile {
            store,
            path,
            url: url.to_string(),
            exec,
            len: 0,
            pos: 0,
            buf: Bytes::new(),
            buf_start: 0,
            read_ahead: FIRST_READ_AHEAD,
            requests: 0,
        };
        file.probe()?;
        Ok(file)
    }

    /// The first GET: the first bytes and the object's size.
    fn probe(&mut self) -> Result<()> {
        let options = GetOptions {
            range: Some(GetRange::Bounded(0..FIRST_READ_AHEAD as u64)),
            ..GetOptions::default()
        };
        self.requests += 1;
        let got = self.exec.block_on(async {
            let result = self.store.get_opts(&self.path, options).await?;
            let size = result.meta.size;
            let range = result.range.clone();
            let bytes = result.bytes().await?;
            Ok::<_, object_store::Error>((size, range, bytes))
        });
        match got {
            Ok((size, range, bytes)) => {
                self.len = size;
                self.check_answer(&range, range.start..range.end, &bytes)?;
                self.buf_start = range.start;
                self.buf = bytes;
                Ok(())
            }
            // An empty object has no byte 0 to ask for (416 Range Not Satisfiable): measure it.
            Err(e) if !matches!(e, object_store::Error::NotFound { .. }) => {
                self.requests += 1;
                let meta = self
                    .exec
                    .block_on(self.store.head(&self.path))
                    .map_err(|head| Error::remote(&self.url, store_message(&head)))?;
                if meta.size != 0 {
                    return Err(Error::remote(&self.url, store_message(&e)));
                }
                self.len = 0;
                Ok(())
            }
            Err(e) => Err(Error::remote(&self.url, store_message(&e))),
        }
    }

    /// Fails unless `bytes` is exactly the range asked for.
    fn check_answer(&self, got: &Range<u64>, asked: Range<u64>, bytes: &Bytes) -> Result<()> {
        let want = asked.end.min(self.len).saturating_sub(asked.start);
        if got.start != asked.start || bytes.len() as u64 != want {
            return Err(Error::remote(
                &self.url,
                format!(
                    "the server sent {} bytes at offset {} for the {want} bytes asked for at offset {} \
                     (a truncated object, or one that changed while being read)",
                    bytes.len(),
                    got.start,
                    asked.start
                ),
            ));
        }
        Ok(())
    }

    /// The object's size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty object.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The URL errors name.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests made so far (the opening probe included).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Reads `range` of the object in one GET, bypassing the read-ahead buffer.
    ///
    /// An empty range is not requested; a range past the object's end is an error.
    pub fn read_range(&mut self, range: Range<u64>) -> Result<Bytes> {
        if range.end > self.len || range.start > range.end {
            return Err(Error::remote(
                &self.url,
                format!(
                    "bytes {}..{} asked for, the object has {}",
                    range.start, range.end, self.len
                ),
            ));
        }
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        self.requests += 1;
        let bytes = self
            .exec
            .block_on(self.store.get_range(&self.path, range.clone()))
            .map_err(|e| Error::remote(&self.url, store_message(&e)))?;
        self.check_answer(&range, range.clone(), &bytes)?;
        Ok(bytes)
    }

    /// Refills the buffer at `self.pos` with at least `want` bytes (less at the end).
    fn fill(&mut self, want: usize) -> Result<()> {
        let sequential = self.pos == self.buf_start + self.buf.len() as u64;
        self.read_ahead = if sequential {
            self.read_ahead.saturating_mul(2).min(MAX_READ_AHEAD)
        } else {
            FIRST_READ_AHEAD
        };
        let n = want.max(self.read_ahead) as u64;
        let end = self.pos.saturating_add(n).min(self.len);
        let bytes = self.read_range(self.pos..end)?;
        self.buf_start = self.pos;
        self.buf = bytes;
        Ok(())
    }
}

impl Read for RemoteFile {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() || self.pos >= self.len {
            return Ok(0);
        }
        let buf_end = self.buf_start + self.buf.len() as u64;
        if self.pos < self.buf_start || self.pos >= buf_end {
            self.fill(out.len()).map_err(io::Error::other)?;
        }
        let at = (self.pos - self.buf_start) as usize;
        let n = out.len().min(self.buf.len() - at);
        out[..n].copy_from_slice(&self.buf[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for RemoteFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let Some(target) = target else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: a seek before the start of the object", self.url),
            ));
        };
        self.pos = target;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, SeekFrom};

    use object_store::memory::InMemory;

    use super::*;

    fn memory(data: Vec<u8>) -> (Runtime, Arc<dyn ObjectStore>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        rt.block_on(store.put(&Path::from("x"), data.into()))
            .unwrap();
        (rt, store)
    }

    #[test]
    fn reads_and_seeks_like_a_file() {
        let data: Vec<u8> = (0..(3 << 20)).map(|i: u32| (i % 251) as u8).collect();
        let (rt, store) = memory(data.clone());
        let mut f =
            RemoteFile::with_store(store, Path::from("x"), "mem://x", rt.handle().clone()).unwrap();
        assert_eq!(f.len(), data.len() as u64);
        assert_eq!(f.requests(), 1);
        let mut all = Vec::new();
        f.read_to_end(&mut all).unwrap();
        assert_eq!(all, data);
        // 256 KiB probe, then doubling read-ahead: far fewer GETs than 64 KiB reads would need.
        assert!(f.requests() <= 5, "{} requests", f.requests());
        f.seek(SeekFrom::End(-10)).unwrap();
        let mut tail = Vec::new();
        f.read_to_end(&mut tail).unwrap();
        assert_eq!(tail, data[data.len() - 10..]);
        f.seek(SeekFrom::Start(5)).unwrap();
        let mut three = [0u8; 3];
        f.read_exact(&mut three).unwrap();
        assert_eq!(three, data[5..8]);
        assert!(f.seek(SeekFrom::Current(-100)).is_err());
        // Past the end reads nothing.
        f.seek(SeekFrom::Start(data.len() as u64 + 5)).unwrap();
        assert_eq!(f.read(&mut three).unwrap(), 0);
        let e = f.read_range(0..data.len() as u64 + 1).unwrap_err();
        assert!(e.to_string().starts_with("mem://x: bytes 0.."), "{e}");
    }

    #[test]
    fn empty_and_missing_objects() {
        let (rt, store) = memory(Vec::new());
        let mut f = RemoteFile::with_store(
            store.clone(),
            Path::from("x"),
            "mem://x",
            rt.handle().clone(),
        )
        .unwrap();
        assert!(f.is_empty());
        assert_eq!(f.read(&mut [0u8; 4]).unwrap(), 0);
        let e =
            RemoteFile::with_store(store, Path::from("nope"), "mem://nope", rt.handle().clone())
                .unwrap_err();
        assert_eq!(e.kind().code(), "remote");
        assert_eq!(e.to_string(), "mem://nope: no such object (404 Not Found)");
    }
}
