//! [`CountingStore`]: an `ObjectStore` wrapper counting the requests made through it (GETs,
//! HEADs, LISTs, PUTs and the rest) and the bytes its GETs delivered, for tests that assert how
//! many requests an operation costs.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

/// The requests counted by a [`CountingStore`] so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// GET requests (ranged or not), HEADs excluded.
    pub gets: u64,
    /// HEAD requests (`get_opts` with `head: true`, `head`).
    pub heads: u64,
    /// LIST requests (`list`, `list_with_offset`, `list_with_delimiter`).
    pub lists: u64,
    /// PUTs and multipart uploads started.
    pub puts: u64,
    /// Deletes, copies and renames.
    pub others: u64,
    /// Bytes the GETs delivered.
    pub bytes: u64,
}

impl Counts {
    /// Every request counted.
    pub fn requests(&self) -> u64 {
        self.gets + self.heads + self.lists + self.puts + self.others
    }
}

#[derive(Debug, Default)]
struct Counters {
    gets: AtomicU64,
    heads: AtomicU64,
    lists: AtomicU64,
    puts: AtomicU64,
    others: AtomicU64,
    bytes: Arc<AtomicU64>,
}

/// An `ObjectStore` that passes every call to `inner` and counts it; clones share the counts.
///
/// ```
/// use std::sync::Arc;
/// use npy_remote::{CountingStore, RemoteNpy};
/// use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt, PutPayload};
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let counting = CountingStore::new(Arc::new(InMemory::new()));
///     let path = Path::from("x.npy");
///     let file = npy_serde::to_vec(&[1.5f64, 2.5, 3.5])?;
///     counting.put(&path, PutPayload::from(file)).await.unwrap();
///     counting.reset();
///
///     let store: Arc<dyn ObjectStore> = Arc::new(counting.clone());
///     let npy = RemoteNpy::open(store, path, "memory:///x.npy", &Default::default()).await?;
///     assert_eq!(counting.counts().gets, 1);
///     assert_eq!(npy.read_rows::<f64>(1..3).await?, [2.5, 3.5]);
///     assert_eq!(counting.counts().gets, 2);
///     Ok::<(), npy_serde::Error>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counters: Arc<Counters>,
}

impl CountingStore {
    /// Counts the calls made to `inner` through the new store.
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        CountingStore {
            inner,
            counters: Arc::default(),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> Counts {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::SeqCst);
        Counts {
            gets: get(&c.gets),
            heads: get(&c.heads),
            lists: get(&c.lists),
            puts: get(&c.puts),
            others: get(&c.others),
            bytes: get(&c.bytes),
        }
    }

    /// Sets every count back to 0.
    pub fn reset(&self) {
        let c = &self.counters;
        for a in [&c.gets, &c.heads, &c.lists, &c.puts, &c.others, &*c.bytes] {
            a.store(0, Ordering::SeqCst);
        }
    }

    fn add(a: &AtomicU64) {
        a.fetch_add(1, Ordering::SeqCst);
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CountingStore({})", self.inner)
    }
}

/// The kinds of request [`forward_store!`] reports to its hook.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Call {
    Put,
    List,
    Other,
}

/// The `ObjectStore` methods of a wrapper with a field `inner: Arc<dyn ObjectStore>` but
/// `get_opts` (written by each wrapper): each passed to `inner` after `self.$hook(call)`.
///
/// `ObjectStore` is an `#[async_trait]` trait; its methods are written out here as the macro
/// would expand them (boxed futures), so this crate needs no `async-trait` dependency.
macro_rules! forward_store {
    // A method from one path to another (copy, rename), counted as `Call::Other`.
    (@two_paths $hook:ident, $method:ident, $options:ty) => {
        fn $method<'a, 'b, 'c, 'd>(
            &'a self,
            from: &'b Path,
            to: &'c Path,
            options: $options,
        ) -> BoxFuture<'d, Result<()>>
        where
            'a: 'd,
            'b: 'd,
            'c: 'd,
            Self: 'd,
        {
            self.$hook(Call::Other);
            self.inner.$method(from, to, options)
        }
    };
    ($hook:ident) => {
        fn put_opts<'a, 'b, 'c>(
            &'a self,
            location: &'b Path,
            payload: PutPayload,
            opts: PutOptions,
        ) -> BoxFuture<'c, Result<PutResult>>
        where
            'a: 'c,
            'b: 'c,
            Self: 'c,
        {
            self.$hook(Call::Put);
            self.inner.put_opts(location, payload, opts)
        }

        fn put_multipart_opts<'a, 'b, 'c>(
            &'a self,
            location: &'b Path,
            opts: PutMultipartOptions,
        ) -> BoxFuture<'c, Result<Box<dyn MultipartUpload>>>
        where
            'a: 'c,
            'b: 'c,
            Self: 'c,
        {
            self.$hook(Call::Put);
            self.inner.put_multipart_opts(location, opts)
        }

        fn get_ranges<'a, 'b, 'c, 'd>(
            &'a self,
            location: &'b Path,
            ranges: &'c [Range<u64>],
        ) -> BoxFuture<'d, Result<Vec<Bytes>>>
        where
            'a: 'd,
            'b: 'd,
            'c: 'd,
            Self: 'd,
        {
            // Through `get_opts`, one counted GET per (coalesced) range.
            async move {
                object_store::coalesce_ranges(
                    ranges,
                    |r| {
                        let options = GetOptions {
                            range: Some(r.into()),
                            ..Default::default()
                        };
                        async move { self.get_opts(location, options).await?.bytes().await }
                    },
                    object_store::OBJECT_STORE_COALESCE_DEFAULT,
                )
                .await
            }
            .boxed()
        }

        fn delete_stream(
            &self,
            locations: BoxStream<'static, Result<Path>>,
        ) -> BoxStream<'static, Result<Path>> {
            self.$hook(Call::Other);
            self.inner.delete_stream(locations)
        }

        fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            self.$hook(Call::List);
            self.inner.list(prefix)
        }

        fn list_with_offset(
            &self,
            prefix: Option<&Path>,
            offset: &Path,
        ) -> BoxStream<'static, Result<ObjectMeta>> {
            self.$hook(Call::List);
            self.inner.list_with_offset(prefix, offset)
        }

        fn list_with_delimiter<'a, 'b, 'c>(
            &'a self,
            prefix: Option<&'b Path>,
        ) -> BoxFuture<'c, Result<ListResult>>
        where
            'a: 'c,
            'b: 'c,
            Self: 'c,
        {
            self.$hook(Call::List);
            self.inner.list_with_delimiter(prefix)
        }

        $crate::count::forward_store!(@two_paths $hook, copy_opts, CopyOptions);
        $crate::count::forward_store!(@two_paths $hook, rename_opts, RenameOptions);
    };
}
pub(crate) use forward_store;

impl ObjectStore for CountingStore {
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
        let head = options.head;
        Self::add(if head {
            &self.counters.heads
        } else {
            &self.counters.gets
        });
        let bytes = self.counters.bytes.clone();
        self.inner
            .get_opts(location, options)
            .map(move |res| {
                let mut res = res?;
                if !head {
                    let stream = std::mem::replace(
                        &mut res.payload,
                        GetResultPayload::Stream(futures::stream::empty().boxed()),
                    );
                    let stream = match stream {
                        GetResultPayload::Stream(s) => s,
                        #[allow(unreachable_patterns)]
                        other => {
                            return Ok(GetResult {
                                payload: other,
                                ..res
                            })
                        }
                    };
                    let counted = stream.inspect(move |part| {
                        if let Ok(b) = part {
                            bytes.fetch_add(b.len() as u64, Ordering::SeqCst);
                        }
                    });
                    res.payload = GetResultPayload::Stream(counted.boxed());
                }
                Ok(res)
            })
            .boxed()
    }

    forward_store!(count);
}

impl CountingStore {
    fn count(&self, call: Call) {
        Self::add(match call {
            Call::Put => &self.counters.puts,
            Call::List => &self.counters.lists,
            Call::Other => &self.counters.others,
        });
    }
}
