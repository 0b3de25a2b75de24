//! One object on a store and the ranged GETs of it: every request bounded by a timeout, every
//! answer checked to hold exactly the bytes asked for, every failure an
//! [`ErrorKind::Remote`](npy_serde::ErrorKind::Remote) naming the URL.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore};

use npy_serde::error::{Error, Result};

/// Bytes asked for by the first GET of an object (a `.npy` header, a zip's tail): 64 KiB.
pub const DEFAULT_PROBE_BYTES: u64 = 64 << 10;

/// Bytes per GET when a row range is read: 8 MiB, large enough that a request's fixed cost
/// is small beside its transfer on S3-like stores. `benches/remote.rs` sweeps 4-32 MiB and 4-8
/// in flight on loopback (`s3s-fs` and nginx): no setting was more than about 1.4x faster
/// than another there, and none the best on both servers. (An object written into `s3s-fs`'s
/// directory by hand costs an MD5 of the whole object on every GET; uploaded objects do not.)
pub const DEFAULT_CHUNK_BYTES: u64 = 8 << 20;

/// GETs in flight at once while a row range is read.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// The longest wait between two attempts of a retried request (the backoff starts at 50 ms
/// and doubles up to this).
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// How the remote doors fetch: the size of the first GET, the chunk size and concurrency of
/// row reads, and how long a request may take: its [`timeout`](FetchOptions::timeout) (from
/// sending it to its last byte) and its [`retries`](FetchOptions::retries).
///
/// This is the crate's one notion of a request's time: the stores `store_for_url` (feature
/// `remote`) builds take their request timeout and retries from it (a `RemoteOptions` holds a
/// `FetchOptions`), and the doors bound every GET
/// they make by [`request_bound`](FetchOptions::request_bound): the timeout of each attempt,
/// plus the backoff between them. A stalled server is an error naming the URL within that
/// bound, never a hang, whatever the store; the store's own timeouts and retries apply inside
/// it (for a store you build yourself, set `retries` to the retries you gave it, or the bound
/// cuts them short).
///
/// ```
/// use npy_remote::FetchOptions;
/// use std::time::Duration;
///
/// let opts = FetchOptions::default().timeout(Duration::from_secs(2)).chunk_bytes(1 << 20);
/// assert_eq!(opts.chunk_size(), 1 << 20);
/// assert_eq!(opts.request_bound(), Duration::from_secs(2));
/// let retried = opts.retries(2);
/// assert_eq!(retried.request_bound(), Duration::from_secs(3 * 2 + 2));
/// ```
#[derive(Clone, Debug)]
pub struct FetchOptions {
    pub(crate) timeout: Duration,
    pub(crate) retries: usize,
    pub(crate) probe: u64,
    pub(crate) chunk: u64,
    pub(crate) concurrency: usize,
}

impl Default for FetchOptions {
    /// A 30 s timeout per request (object_store's own default), no retries, a 64 KiB first
    /// GET, 8 MiB chunks, 4 in flight.
    fn default() -> Self {
        FetchOptions {
            timeout: Duration::from_secs(30),
            retries: 0,
            probe: DEFAULT_PROBE_BYTES,
            chunk: DEFAULT_CHUNK_BYTES,
            concurrency: DEFAULT_CONCURRENCY,
        }
    }
}

impl FetchOptions {
    /// The longest one request may take, from sending it to its last byte (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many times the store retries a failed request (default 0): the stores
    /// `store_for_url` builds retry this often; the doors wait for every attempt
    /// ([`request_bound`](FetchOptions::request_bound)).
    pub fn retries(mut self, retries: usize) -> Self {
        self.retries = retries;
        self
    }

    /// Bytes asked for by the first GET (default 64 KiB, at least 16): a `.npy` header longer
    /// than this costs a second GET; an `.npz` central directory outside the tail that long,
    /// one more.
    pub fn probe_bytes(mut self, bytes: u64) -> Self {
        self.probe = bytes.max(16);
        self
    }

    /// Bytes per GET of a row range (default 8 MiB, at least 1).
    pub fn chunk_bytes(mut self, bytes: u64) -> Self {
        self.chunk = bytes.max(1);
        self
    }

    /// GETs in flight at once (default 4, at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// The chunk size in bytes.
    pub fn chunk_size(&self) -> u64 {
        self.chunk
    }

    /// The timeout of one request.
    pub fn get_timeout(&self) -> Duration {
        self.timeout
    }

    /// The number of retries.
    pub fn get_retries(&self) -> usize {
        self.retries
    }

    /// The longest the doors wait for one GET: `(retries + 1) * timeout`, plus 1 s of backoff
    /// per retry (the most object_store waits between attempts of the stores `store_for_url`
    /// builds). With no retries, the timeout.
    pub fn request_bound(&self) -> Duration {
        let attempts = u32::try_from(self.retries.saturating_add(1)).unwrap_or(u32::MAX);
        let backoff = MAX_BACKOFF.saturating_mul(attempts - 1);
        self.timeout
            .saturating_mul(attempts)
            .saturating_add(backoff)
    }
}

/// `pub async fn open(store, path, url, reader)` for a door type whose `open_with` takes
/// [`FetchOptions`] too: `open_with` with the default options. The doc comment is the caller's.
macro_rules! open_with_defaults {
    ($(#[$doc:meta])* $door:ty) => {
        $(#[$doc])*
        pub async fn open(
            store: Arc<dyn ObjectStore>,
            path: Path,
            url: &str,
            reader: &ReaderBuilder,
        ) -> Result<$door> {
            Self::open_with(store, path, url, reader, &FetchOptions::default()).await
        }
    };
}
pub(crate) use open_with_defaults;

/// An object: its store, path, URL (for messages), size and the fetch options.
#[derive(Clone, Debug)]
pub(crate) struct Object {
    pub(crate) store: Arc<dyn ObjectStore>,
    pub(crate) path: Path,
    pub(crate) url: String,
    pub(crate) size: u64,
    pub(crate) opts: FetchOptions,
}

impl Object {
    /// The first GET of an object: `range` (clamped by the store to the object), returning the
    /// bytes and the object's size from the same response.
    pub(crate) async fn probe(
        store: Arc<dyn ObjectStore>,
        path: Path,
        url: &str,
        opts: &FetchOptions,
        range: GetRange,
    ) -> Result<(Object, Bytes)> {
        let what = format!("{range}");
        let get = async {
            let options = GetOptions {
                range: Some(range),
                ..Default::default()
            };
            let res = store
                .get_opts(&path, options)
                .await
                .map_err(|e| Error::remote(url, e))?;
            let size = res.meta.size;
            let got = res.range.clone();
            if got.start > got.end || got.end > size {
                return Err(Error::remote(
                    url,
                    format!("the store answered bytes {got:?} of an object of {size} bytes"),
                ));
            }
            let bytes = collect(res.into_stream(), got.end - got.start, url, &got).await?;
            Ok((size, bytes))
        };
        let (size, bytes) = within(opts.request_bound(), url, &what, get).await?;
        let object = Object {
            store,
            path,
            url: url.to_string(),
            size,
            opts: opts.clone(),
        };
        Ok((object, bytes))
    }

    /// Exactly the bytes `range` of the object (checked against its size first).
    pub(crate) async fn get(&self, range: Range<u64>) -> Result<Bytes> {
        self.check_range(&range)?;
        if range.start == range.end {
            return Ok(Bytes::new());
        }
        let get = async {
            let body = self.respond(&range).await?;
            collect(body, range.end - range.start, &self.url, &range).await
        };
        within(self.opts.request_bound(), &self.url, &get_what(&range), get).await
    }

    /// The bytes `range` of the object (checked against its size first), each frame of the
    /// body handed to `each` as the client returned it: a body longer than the range is an
    /// error before its excess is handed on, a shorter one an error at its end. The whole GET
    /// (body included) within [`FetchOptions::request_bound`]. An empty range makes no request.
    pub(crate) async fn get_frames(
        &self,
        range: Range<u64>,
        mut each: impl FnMut(Bytes) -> Result<()>,
    ) -> Result<()> {
        self.check_range(&range)?;
        if range.start == range.end {
            return Ok(());
        }
        let expected = range.end - range.start;
        let get = async {
            let mut body = self.respond(&range).await?;
            let mut got = 0u64;
            while let Some(frame) = body.next().await {
                let frame = frame.map_err(|e| self.error(e))?;
                if frame.is_empty() {
                    continue;
                }
                got = got.saturating_add(frame.len() as u64);
                if got > expected {
                    return Err(too_long(&self.url, expected, &range));
                }
                each(frame)?;
            }
            if got != expected {
                return Err(short_read(&self.url, expected, &range, got));
            }
            Ok(())
        };
        within(self.opts.request_bound(), &self.url, &get_what(&range), get).await
    }

    /// `range` checked against the object's size.
    fn check_range(&self, range: &Range<u64>) -> Result<()> {
        if range.start > range.end || range.end > self.size {
            return Err(self.error(format!(
                "bytes {range:?} are past the end of the object ({} bytes)",
                self.size
            )));
        }
        Ok(())
    }

    /// The body of the GET of `range` (not empty), once the store answered with that range.
    async fn respond(
        &self,
        range: &Range<u64>,
    ) -> Result<futures::stream::BoxStream<'static, object_store::Result<Bytes>>> {
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            ..Default::default()
        };
        let res = (self.store.get_opts(&self.path, options).await).map_err(|e| self.error(e))?;
        if res.range != *range {
            return Err(self.error(format!(
                "asked for bytes {range:?}, the store answered bytes {:?}",
                res.range
            )));
        }
        Ok(res.into_stream())
    }

    /// Exactly the bytes `range` of the object, in GETs of at most
    /// [`FetchOptions::chunk_bytes`] each, up to [`FetchOptions::concurrency`] in flight, each
    /// response's frames copied straight to their place in one buffer (allocated once, from a
    /// length checked against the object's size).
    pub(crate) async fn get_chunked(&self, range: Range<u64>) -> Result<Vec<u8>> {
        self.check_range(&range)?;
        let len = usize::try_from(range.end - range.start)
            .map_err(|_| Error::overflow("a byte range"))?;
        let chunk = usize::try_from(self.opts.chunk).unwrap_or(usize::MAX);
        let mut all = vec![0u8; len];
        let parts = all.chunks_mut(chunk).enumerate().map(|(i, dst)| {
            // Within `range` (the chunks of a buffer of its length): no overflow.
            let at = range.start + (i * chunk) as u64;
            let r = at..at + dst.len() as u64;
            let mut filled = 0;
            self.get_frames(r, move |frame| {
                // `get_frames` hands on no more than the range's length in all.
                dst[filled..filled + frame.len()].copy_from_slice(&frame);
                filled += frame.len();
                Ok(())
            })
        });
        futures::stream::iter(parts)
            .buffered(self.opts.concurrency)
            .try_collect::<()>()
            .await?;
        Ok(all)
    }

    /// An error naming this object's URL.
    pub(crate) fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::remote(&self.url, message)
    }
}

/// Runs `fut` within `timeout`, or fails naming the URL and the request.
pub(crate) async fn within<T>(
    timeout: Duration,
    url: &str,
    what: &str,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(timeout, fut).await {
        Ok(v) => v,
        Err(_) => Err(Error::remote(
            url,
            format!("no complete answer to GET {what} within {timeout:?} (the store stalled)"),
        )),
    }
}

/// The body of a GET, which must be exactly `expected` bytes: fewer is a short read, more an
/// answer that does not match the request. Never allocates more than `expected` (a length this
/// crate chose and checked), whatever the server declares.
async fn collect(
    mut stream: futures::stream::BoxStream<'static, object_store::Result<Bytes>>,
    expected: u64,
    url: &str,
    range: &Range<u64>,
) -> Result<Bytes> {
    let cap = usize::try_from(expected).map_err(|_| Error::overflow("a GET's length"))?;
    let short = |got: usize| short_read(url, expected, range, got as u64);
    let long = || too_long(url, expected, range);
    let mut first: Option<Bytes> = None;
    let mut buf: Option<BytesMut> = None;
    while let Some(part) = stream.next().await {
        let part = part.map_err(|e| Error::remote(url, e))?;
        if part.is_empty() {
            continue;
        }
        match (&mut first, &mut buf) {
            (None, None) => {
                if part.len() > cap {
                    return Err(long());
                }
                first = Some(part);
            }
            (Some(f), None) => {
                if f.len() + part.len() > cap {
                    return Err(long());
                }
                let mut b = BytesMut::with_capacity(cap);
                b.extend_from_slice(f);
                b.extend_from_slice(&part);
                first = None;
                buf = Some(b);
            }
            (_, Some(b)) => {
                if b.len() + part.len() > cap {
                    return Err(long());
                }
                b.extend_from_slice(&part);
            }
        }
    }
    let bytes = match (first, buf) {
        (Some(f), _) => f,
        (None, Some(b)) => b.freeze(),
        (None, None) => Bytes::new(),
    };
    if bytes.len() != cap {
        return Err(short(bytes.len()));
    }
    Ok(bytes)
}

/// The request's name in messages: its `Range` header.
fn get_what(range: &Range<u64>) -> String {
    format!("bytes={}-{}", range.start, range.end - 1)
}

/// A body that ended after `got` of the `expected` bytes of `range`.
fn short_read(url: &str, expected: u64, range: &Range<u64>, got: u64) -> Error {
    Error::remote(
        url,
        format!("short read: asked for {expected} bytes (bytes {range:?}), the store sent {got}"),
    )
}

/// A body longer than the `expected` bytes of `range`.
fn too_long(url: &str, expected: u64, range: &Range<u64>) -> Error {
    Error::remote(
        url,
        format!("the store sent more than the {expected} bytes asked for (bytes {range:?})"),
    )
}
