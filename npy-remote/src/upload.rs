//! Writing an object: everything a reader gives, sent in one PUT when it fits in one part,
//! else as a multipart upload of parts sent a few at a time and aborted on any error (a part
//! refused, the reader failing, the connection lost), so that no partial object is left and an
//! existing object is replaced only when the upload completes.
//!
//! A store that takes no multipart uploads (object_store's HTTP store: a WebDAV server takes
//! plain PUTs only) is sent the whole object in one PUT, held in memory (tested against nginx's
//! WebDAV PUT in npy-cli's `remote` tests).

use std::io::Read;
use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};

use npy_serde::{Error, Result};

/// The size of each part of a multipart upload, and of the largest object sent in one PUT
/// (8 MiB).
pub const DEFAULT_PART_BYTES: usize = 8 << 20;

/// Parts of a multipart upload in flight at once.
const IN_FLIGHT: usize = 4;

/// Sends everything `reader` gives to the object `path` of `store`: one PUT if it fits in one
/// part of `part_bytes`, else a multipart upload aborted on any error. Errors name `url` (what
/// the object is called in messages) and say that nothing was stored.
///
/// ```
/// use std::sync::Arc;
/// use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
/// let data = vec![7u8; 10_000];
/// npy_remote::upload(store.clone(), &Path::from("a.npy"), &data[..], 4096, "memory://a.npy").await?;
/// let back = store.get(&Path::from("a.npy")).await.unwrap().bytes().await.unwrap();
/// assert_eq!(back.len(), 10_000);
/// # Ok::<(), npy_serde::Error>(())
/// # }).unwrap();
/// ```
pub async fn upload(
    store: Arc<dyn ObjectStore>,
    path: &Path,
    mut reader: impl Read,
    part_bytes: usize,
    url: &str,
) -> Result<()> {
    let failed = |e: String| Error::remote(url, format!("upload failed, nothing was stored: {e}"));
    let part_bytes = part_bytes.max(1);
    let mut first = vec![0u8; part_bytes];
    let n = fill(&mut reader, &mut first).map_err(failed)?;
    if n < part_bytes {
        first.truncate(n);
        return put(&store, path, first).await.map_err(failed);
    }
    let mp = match store.put_multipart(path).await {
        Ok(mp) => mp,
        // No multipart uploads on this store: the whole object in one PUT.
        Err(object_store::Error::NotImplemented { .. }) => {
            reader
                .read_to_end(&mut first)
                .map_err(|e| failed(read_error(e)))?;
            return put(&store, path, first).await.map_err(failed);
        }
        Err(e) => return Err(failed(e.to_string())),
    };
    let mut w = WriteMultipart::new_with_chunk_size(mp, part_bytes);
    w.write(&first);
    let sent = async {
        let mut buf = first;
        loop {
            let n = fill(&mut reader, &mut buf)?;
            if n == 0 {
                break;
            }
            w.wait_for_capacity(IN_FLIGHT)
                .await
                .map_err(|e| e.to_string())?;
            w.write(&buf[..n]);
        }
        w.wait_for_capacity(0).await.map_err(|e| e.to_string())
    }
    .await;
    match sent {
        // `finish` aborts the upload itself if completing it fails.
        Ok(()) => w
            .finish()
            .await
            .map(|_| ())
            .map_err(|e| failed(e.to_string())),
        Err(e) => {
            let _ = w.abort().await;
            Err(failed(e))
        }
    }
}

async fn put(store: &Arc<dyn ObjectStore>, path: &Path, bytes: Vec<u8>) -> Result<(), String> {
    store
        .put(path, PutPayload::from(bytes))
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The local file at `local` uploaded to the object at `url` (any URL [`store_for_url`]
/// opens: `s3://bucket/key`, or `http(s)://host/path` on a server that takes PUTs), as
/// [`upload`] sends it, with the timeouts and retries of `options`. Blocking: it runs its own
/// runtime, so it must not be called from inside one.
///
/// [`store_for_url`]: crate::store::store_for_url
///
/// ```no_run
/// use npy_remote::{upload_file, RemoteOptions};
/// upload_file("out.npy", "s3://bucket/data/out.npy", &RemoteOptions::default())?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[cfg(feature = "clients")]
pub fn upload_file(
    local: impl AsRef<std::path::Path>,
    url: &str,
    options: &crate::store::RemoteOptions,
) -> Result<()> {
    let (store, path) = crate::store::store_for_url(url, options)?;
    let local = local.as_ref();
    let file = std::fs::File::open(local)
        .map_err(|e| Error::remote(url, format!("cannot read {}: {e}", local.display())))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::remote(url, format!("cannot start a runtime: {e}")))?;
    rt.block_on(upload(
        store,
        &path,
        std::io::BufReader::new(file),
        DEFAULT_PART_BYTES,
        url,
    ))
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn fill(reader: &mut impl Read, buf: &mut [u8]) -> Result<usize, String> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_error(e)),
        }
    }
    Ok(n)
}

fn read_error(e: std::io::Error) -> String {
    format!("cannot read what is uploaded: {e}")
}

#[cfg(test)]
mod tests {
    use std::io;

    use object_store::memory::InMemory;

    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// True if object `p` exists.
    fn exists(rt: &tokio::runtime::Runtime, store: &Arc<dyn ObjectStore>, p: &str) -> bool {
        rt.block_on(store.head(&Path::from(p))).is_ok()
    }

    /// Gives `ok` bytes, then fails.
    struct Failing {
        ok: usize,
    }

    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.ok == 0 {
                return Err(io::Error::other("disk gone"));
            }
            let n = buf.len().min(self.ok);
            buf[..n].fill(7);
            self.ok -= n;
            Ok(n)
        }
    }

    #[test]
    fn parts_then_complete_or_abort() {
        let rt = rt();
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let p = Path::from("a.npy");
        rt.block_on(upload(store.clone(), &p, &data[..], 4096, "m://a.npy"))
            .unwrap();
        let got = rt
            .block_on(async { store.get(&p).await?.bytes().await })
            .unwrap();
        assert_eq!(got.as_ref(), &data[..]);
        // Small: one PUT.
        let q = Path::from("b.npy");
        rt.block_on(upload(store.clone(), &q, &data[..10], 4096, "m://b.npy"))
            .unwrap();
        assert!(exists(&rt, &store, "b.npy"));
        // A failure after two parts: aborted, nothing stored, the error names the object.
        let r = Path::from("c.npy");
        let e = rt
            .block_on(upload(
                store.clone(),
                &r,
                Failing { ok: 9000 },
                4096,
                "m://c.npy",
            ))
            .unwrap_err()
            .to_string();
        assert!(e.contains("m://c.npy") && e.contains("disk gone"), "{e}");
        assert!(e.contains("nothing was stored"), "{e}");
        assert!(!exists(&rt, &store, "c.npy"));
    }
}
