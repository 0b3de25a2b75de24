//! [`FaultStore`]: an `ObjectStore` wrapper whose GETs fail the way servers do (short bodies,
//! errors, stalls, too many bytes), after a number of good ones: for tests of the remote
//! doors' error paths.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

use super::count::{forward_store, Call};

/// What a [`FaultStore`]'s faulty GETs do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The body ends early: only the first half of the bytes asked for (rounded down).
    Short,
    /// The body carries one byte more than asked for.
    Long,
    /// The request fails with a store error.
    Error,
    /// The request never answers.
    Stall,
    /// The response starts (with the first half of the body) and then never ends.
    StallBody,
}

/// An `ObjectStore` passing every call to `inner`, whose GETs after the first `good` ones
/// fail as `fault` says (HEADs, LISTs and PUTs pass unharmed).
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use npy_remote::{Fault, FaultStore, FetchOptions, RemoteNpy};
/// use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt, PutPayload};
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let mem = Arc::new(InMemory::new());
///     let path = Path::from("x.npy");
///     mem.put(&path, PutPayload::from(npy_serde::to_vec(&[1u8; 100])?)).await.unwrap();
///
///     let stalled: Arc<dyn ObjectStore> = Arc::new(FaultStore::new(mem, Fault::Stall, 0));
///     let opts = FetchOptions::default().timeout(Duration::from_millis(50));
///     let rb = Default::default();
///     let err = RemoteNpy::open_with(stalled, path, "s3://b/x.npy", &rb, &opts).await.unwrap_err();
///     assert_eq!(err.kind().code(), "remote");
///     assert!(err.to_string().starts_with("s3://b/x.npy: "));
///     Ok::<(), npy_serde::Error>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct FaultStore {
    inner: Arc<dyn ObjectStore>,
    fault: Fault,
    good: u64,
    gets: Arc<AtomicU64>,
    /// Every GET body handed on in frames of at most this many bytes (0: as `inner` does).
    frame: usize,
}

impl FaultStore {
    /// A store whose GETs after the first `good` fail as `fault` says.
    pub fn new(inner: Arc<dyn ObjectStore>, fault: Fault, good: u64) -> Self {
        FaultStore {
            inner,
            fault,
            good,
            gets: Arc::default(),
            frame: 0,
        }
    }

    /// This store with every GET body, the good ones' and the faulty ones' alike, handed on
    /// in frames of at most `bytes` bytes (0: as the inner store hands them on), as an HTTP
    /// client returns a body: for the readers that decode a body frame by frame. A faulty
    /// body's excess byte then comes in its last frame, after the bytes asked for. With
    /// `good` at `u64::MAX` no GET is faulty: a store that only cuts bodies into frames.
    pub fn with_frames(mut self, bytes: usize) -> Self {
        self.frame = bytes;
        self
    }

    /// `res` with its body cut into frames of at most `self.frame` bytes.
    fn framed(&self, mut res: GetResult) -> GetResult {
        let frame = self.frame;
        if frame == 0 {
            return res;
        }
        let whole = take_body(&mut res);
        let frames = whole.into_stream().map_ok(move |body| {
            let cut: Vec<Result<Bytes>> = (0..body.len())
                .step_by(frame)
                .map(|at| Ok(body.slice(at..body.len().min(at + frame))))
                .collect();
            futures::stream::iter(cut)
        });
        res.payload = GetResultPayload::Stream(frames.try_flatten().boxed());
        res
    }

    fn pass(&self, _call: Call) {}
}

/// `res`'s body moved into a `GetResult` of its own (with its metadata, range and
/// attributes), `res` left with an empty one: for stores that rework a body.
pub(crate) fn take_body(res: &mut GetResult) -> GetResult {
    let empty = GetResultPayload::Stream(futures::stream::empty().boxed());
    GetResult {
        payload: std::mem::replace(&mut res.payload, empty),
        meta: res.meta.clone(),
        range: res.range.clone(),
        attributes: res.attributes.clone(),
    }
}

impl fmt::Display for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultStore({:?}, {})", self.fault, self.inner)
    }
}

impl ObjectStore for FaultStore {
    fn get_opts<'a, 'b, 'c>(
        &'a self,
        location: &'b Path,
        options: GetOptions,
    ) -> BoxFuture<'c, Result<GetResult>>
    where
        'a: 'c,
        'b: 'c,
        Self: 'c,
    {
        let n = self.gets.fetch_add(1, Ordering::SeqCst);
        if options.head || n < self.good {
            let get = self.inner.get_opts(location, options);
            return async move { Ok(self.framed(get.await?)) }.boxed();
        }
        let fault = self.fault;
        async move {
            match fault {
                Fault::Error => {
                    return Err(object_store::Error::Generic {
                        store: "FaultStore",
                        source: "injected failure".into(),
                    });
                }
                Fault::Stall => futures::future::pending::<()>().await,
                _ => {}
            }
            let mut res = self.inner.get_opts(location, options).await?;
            let whole = take_body(&mut res);
            let body = whole.bytes().await?;
            let half = body.slice(..body.len() / 2);
            let stream: BoxStream<'static, Result<Bytes>> = match fault {
                Fault::Short => futures::stream::once(async move { Ok(half) }).boxed(),
                Fault::Long => {
                    let mut more = body.to_vec();
                    more.push(0);
                    futures::stream::once(async move { Ok(Bytes::from(more)) }).boxed()
                }
                _ => futures::stream::once(async move { Ok(half) })
                    .chain(futures::stream::pending())
                    .boxed(),
            };
            res.payload = GetResultPayload::Stream(stream);
            Ok(self.framed(res))
        }
        .boxed()
    }

    forward_store!(pass);
}
