//! `npy convert IN URL` (any URL the library's stores open: `s3://bucket/key.{npy,npz,parquet,
//! ...}`, `http(s)://host/path` on a server that takes PUTs): the conversion is written to a
//! local temporary file first (a `.npy` whose row count is known only at the end has its header
//! patched there, as for any local output), then uploaded by `npy_remote::upload_file`: in one
//! PUT up to 8 MiB, else as a multipart upload aborted on any error, so that no partial object
//! is left (an HTTP server takes the whole object in one PUT). The temporary file lives in the
//! system's temporary directory and is removed in every case.

use std::path::PathBuf;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::output::npz_member_output;

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
    /// Stages `out` (`URL` or `URL.npz:MEMBER`); a URL no store opens, or one that names no
    /// object, is a usage error (the library's, which lists the schemes).
    pub fn new(out: &str) -> CliResult<Staged> {
        let (url, member) = match npz_member_output(out) {
            Some((archive, key)) => (archive, Some(key)),
            None => (out, None),
        };
        // The store is only built here (no request): its error names what it opens.
        let (_, path) = npy_remote::store_for_url(url, &npy_remote::RemoteOptions::default())
            .map_err(|e| Failure::usage(e.to_string()))?;
        let name = path
            .filename()
            .filter(|n| !n.is_empty() && !url.ends_with('/'))
            .ok_or_else(|| Failure::usage(format!("{out}: the URL names no object")))?
            .to_string();
        let dir = std::env::temp_dir().join(format!("npy-upload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| Failure::file(&dir.display().to_string(), e))?;
        let file = dir.join(&name);
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
        npy_remote::upload_file(&self.file, &self.url, &g.remote_options())
            .map_err(|e| Failure::input(e.to_string()))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_staged_under_their_object_name() {
        let s = Staged::new("s3://b/dir/x.npz:k").unwrap();
        assert_eq!(s.url, "s3://b/dir/x.npz");
        assert!(s.output.ends_with("x.npz:k"), "{}", s.output);
        assert!(s.file.ends_with("x.npz"));
        let h = Staged::new("http://h:8/up/x.npy").unwrap();
        assert!(h.file.ends_with("x.npy"));
        // No object named, or a scheme no store opens: usage errors, before any conversion.
        assert_eq!(Staged::new("s3://b/").unwrap_err().code, 2);
        let ftp = Staged::new("ftp://h/x.npy").unwrap_err();
        assert_eq!(ftp.code, 2);
        assert!(ftp.msg.contains("s3://"), "{}", ftp.msg);
    }
}
