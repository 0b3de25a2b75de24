//! `npy convert IN s3://bucket/key.{npy,npz,parquet,...}`: the conversion is written to a local
//! temporary file first (a `.npy` whose row count is known only at the end has its header
//! patched there, as for any local output), then uploaded: in one PUT up to 8 MiB, else as a
//! multipart upload of 8 MiB parts (4 in flight), aborted on any error (a part refused, the
//! file unreadable, the connection lost), so that no partial object is left. An object is
//! replaced only when the upload completes. The temporary file lives in the system's temporary
//! directory and is removed in every case.

use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::output::npz_member_output;

/// The size of each part, and the largest object sent in one PUT.
const PART: usize = 8 << 20;
/// Parts uploaded at once.
const IN_FLIGHT: usize = 4;

/// The local stand-in of a remote output: a private directory under the system's temporary
/// directory holding a file of the same name (the same extension picks the same format), and
/// the URL it goes to. Removed on drop.
#[derive(Debug)]
pub struct Staged {
    dir: PathBuf,
    /// The local output to convert to (`FILE` or `FILE.npz:KEY` as the URL was).
    pub output: String,
    /// The file to upload.
    pub file: PathBuf,
    /// Where it goes.
    pub url: String,
}

impl Staged {
    /// Stages `out` (`s3://bucket/key.ext` or `s3://bucket/key.npz:MEMBER`).
    pub fn new(out: &str) -> CliResult<Staged> {
        let (url, member) = match npz_member_output(out) {
            Some((archive, key)) => (archive, Some(key)),
            None => (out, None),
        };
        if !url
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("s3://"))
        {
            return Err(Failure::usage(format!(
                "{out}: convert uploads to s3://bucket/key only (an http(s):// server takes no uploads)"
            )));
        }
        let name = url
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                Failure::usage(format!(
                    "{out}: the URL names no object (s3://bucket/key.npy)"
                ))
            })?;
        let dir = std::env::temp_dir().join(format!("npy-upload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| Failure::file(&dir.display().to_string(), e))?;
        let file = dir.join(name);
        let output = match member {
            Some(key) => format!("{}:{key}", file.display()),
            None => file.display().to_string(),
        };
        Ok(Staged {
            dir,
            output,
            file,
            url: url.to_string(),
        })
    }

    /// Uploads the converted file.
    pub fn upload(&self, g: &Global) -> CliResult {
        let (store, path) = npy_remote::store_for_url(&self.url, &g.remote_options())
            .map_err(|e| Failure::input(e.to_string()))?;
        let file = File::open(&self.file).map_err(|e| Failure::file(&self.url, e))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::file(&self.url, format!("cannot start a runtime: {e}")))?;
        rt.block_on(upload(store, &path, file, PART)).map_err(|e| {
            Failure::input(format!(
                "{}: upload failed, nothing was stored: {e}",
                self.url
            ))
        })
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Sends everything `reader` gives to `path`: one PUT if it fits in one part, else a multipart
/// upload aborted on any error.
pub async fn upload(
    store: Arc<dyn ObjectStore>,
    path: &ObjectPath,
    mut reader: impl Read,
    part: usize,
) -> Result<(), String> {
    let mut first = vec![0u8; part];
    let n = fill(&mut reader, &mut first)?;
    if n < part {
        first.truncate(n);
        store
            .put(path, first.into())
            .await
            .map_err(|e| e.to_string())?;
        return Ok(());
    }
    let mp = store.put_multipart(path).await.map_err(|e| e.to_string())?;
    let mut w = WriteMultipart::new_with_chunk_size(mp, part);
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
        Ok(()) => w.finish().await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => {
            let _ = w.abort().await;
            Err(e)
        }
    }
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn fill(reader: &mut impl Read, buf: &mut [u8]) -> Result<usize, String> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read the converted file: {e}")),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use std::io;

    use object_store::memory::InMemory;

    use super::*;

    /// True if object `p` exists.
    fn exists(rt: &tokio::runtime::Runtime, store: &Arc<dyn ObjectStore>, p: &str) -> bool {
        rt.block_on(store.head(&ObjectPath::from(p))).is_ok()
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
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let p = ObjectPath::from("a.npy");
        rt.block_on(upload(store.clone(), &p, &data[..], 4096))
            .unwrap();
        let got = rt
            .block_on(async { store.get(&p).await?.bytes().await })
            .unwrap();
        assert_eq!(got.as_ref(), &data[..]);
        // Small: one PUT.
        let q = ObjectPath::from("b.npy");
        rt.block_on(upload(store.clone(), &q, &data[..10], 4096))
            .unwrap();
        assert!(exists(&rt, &store, "b.npy"));
        // A failure after two parts: aborted, nothing stored.
        let r = ObjectPath::from("c.npy");
        let e = rt
            .block_on(upload(store.clone(), &r, Failing { ok: 9000 }, 4096))
            .unwrap_err();
        assert!(e.contains("disk gone"), "{e}");
        assert!(!exists(&rt, &store, "c.npy"));
    }

    #[test]
    fn only_s3_urls_are_staged() {
        let s = Staged::new("s3://b/dir/x.npz:k").unwrap();
        assert_eq!(s.url, "s3://b/dir/x.npz");
        assert!(s.output.ends_with("x.npz:k"), "{}", s.output);
        assert!(s.file.ends_with("x.npz"));
        assert_eq!(Staged::new("http://h/x.npy").unwrap_err().code, 2);
        assert_eq!(Staged::new("s3://b/").unwrap_err().code, 2);
    }
}
