//! What a command-line input names: a `.npy` file, a `.npz` archive, or one member of an
//! archive (`ARCHIVE:KEY` or `--member KEY`), on disk or behind an `s3://` / `http(s)://` URL;
//! and what a file is, by its first bytes (an archive) or by its name (a table: Parquet, Arrow
//! IPC).
//!
//! How `ARCHIVE:KEY` splits: a local input is split at the first `:` whose prefix is an existing
//! file (the key may hold `:`). A URL is never probed: it names a member only when its path
//! holds `.npz:` (any case), and then the archive is the URL up to that first `.npz`, the key
//! everything after its `:` (`s3://b/d/a.npz:x` is member `x` of `s3://b/d/a.npz`;
//! `http://h:8080/a.npz:x:y` is member `x:y`). A member of an archive whose URL does not end in
//! `.npz` is named with `--member KEY`.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::source::{is_url, url_of, Source};

/// A resolved command-line input.
#[derive(Debug)]
pub struct Spec {
    /// The file on disk.
    pub path: PathBuf,
    /// The member named with `ARCHIVE:KEY` or `--member`.
    pub member: Option<String>,
    /// How the input is named in messages: the path, or `ARCHIVE:KEY`.
    pub display: String,
}

/// Resolves `FILE` or `ARCHIVE:KEY` plus an optional `--member`.
pub fn resolve(spec: &str, member: Option<&str>) -> CliResult<Spec> {
    let as_is = Path::new(spec);
    let (path, from_spec) = if is_url(spec) {
        match split_url(spec) {
            Some((archive, key)) => (PathBuf::from(archive), Some(key.to_string())),
            None => (as_is.to_path_buf(), None),
        }
    } else if as_is.exists() {
        (as_is.to_path_buf(), None)
    } else {
        // ARCHIVE:KEY; the key may itself contain ':', the archive path is the shortest
        // prefix that is an existing file.
        let split = spec
            .match_indices(':')
            .map(|(i, _)| i)
            .find(|&i| i > 0 && Path::new(&spec[..i]).is_file());
        match split {
            Some(i) => (PathBuf::from(&spec[..i]), Some(spec[i + 1..].to_string())),
            None => {
                return Err(Failure::file(spec, "no such file or directory"));
            }
        }
    };
    let member = match (from_spec, member) {
        (Some(_), Some(_)) => {
            return Err(Failure::usage(format!(
                "{spec}: give the member either as ARCHIVE:KEY or with --member, not both"
            )))
        }
        (Some(m), None) => Some(m),
        (None, m) => m.map(str::to_string),
    };
    let display = match &member {
        Some(m) if path.as_os_str() != spec => format!("{}:{m}", path.display()),
        Some(m) => format!("{spec}:{m}"),
        None => spec.to_string(),
    };
    Ok(Spec {
        path,
        member,
        display,
    })
}

/// A URL's `ARCHIVE:KEY` split (see the module docs): the archive's URL and the key, if the
/// path after the host holds `.npz:`.
pub fn split_url(url: &str) -> Option<(&str, &str)> {
    let after_scheme = url.find("://")? + 3;
    let path_start = after_scheme + url[after_scheme..].find('/')?;
    let lower = url[path_start..].to_ascii_lowercase();
    let at = path_start + lower.find(".npz:")? + ".npz".len();
    Some((&url[..at], &url[at + 1..]))
}

/// True if the file starts like a zip archive (local file header, or the end-of-directory
/// record of an empty archive).
///
/// Only regular files are looked at: reading the start of a pipe (`npy cat <(...)`) would
/// consume it, and an archive needs a seekable file anyway. A URL's object is opened (one GET
/// of its first bytes) and kept for the command's next [`Source::open`].
pub fn is_zip(g: &Global, path: &Path) -> io::Result<bool> {
    if url_of(path).is_some() {
        let mut source = Source::open(g, path, "").map_err(|f| io::Error::other(f.msg))?;
        let zip = starts_like_zip(&mut source)?;
        source.keep(path);
        return Ok(zip);
    }
    let mut f = File::open(path)?;
    if !f.metadata()?.is_file() {
        return Ok(false);
    }
    starts_like_zip(&mut f)
}

/// Reads the first four bytes: a zip's local file header or empty end-of-directory record.
fn starts_like_zip(f: &mut impl Read) -> io::Result<bool> {
    let mut magic = [0u8; 4];
    let mut n = 0;
    while n < 4 {
        match f.read(&mut magic[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n == 4 && (magic == *b"PK\x03\x04" || magic == *b"PK\x05\x06"))
}

/// A table format by file name: Parquet (`.parquet`, `.pq`) or Arrow IPC (`.arrow`,
/// `.feather`, `.ipc`).
pub fn is_table(name: &str) -> bool {
    matches!(
        ext(name).as_deref(),
        Some("parquet" | "pq" | "arrow" | "feather" | "ipc")
    )
}

/// A Parquet file by name (`.parquet`, `.pq`).
pub fn is_parquet(name: &str) -> bool {
    matches!(ext(name).as_deref(), Some("parquet" | "pq"))
}

/// The extension of `name`, in lower case.
pub fn ext(name: &str) -> Option<String> {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_after_npz_colon() {
        assert_eq!(split_url("s3://b/d/a.npz:x"), Some(("s3://b/d/a.npz", "x")));
        assert_eq!(
            split_url("http://h:8080/a.NPZ:x:y"),
            Some(("http://h:8080/a.NPZ", "x:y"))
        );
        assert_eq!(split_url("https://h:443/a.npz"), None);
        assert_eq!(split_url("s3://b/a.npy"), None);
        // The host's port is not a key, nor a bucket named like an archive.
        assert_eq!(split_url("s3://a.npz:b/c.npy"), None);
        let spec = resolve("s3://b/a.npz:k", None).unwrap();
        assert_eq!(spec.path, Path::new("s3://b/a.npz"));
        assert_eq!(spec.member.as_deref(), Some("k"));
        assert_eq!(spec.display, "s3://b/a.npz:k");
        let spec = resolve("s3://b/a.npz", Some("k")).unwrap();
        assert_eq!(spec.display, "s3://b/a.npz:k");
        assert!(resolve("s3://b/a.npz:k", Some("k")).is_err());
        let spec = resolve("http://h/x.npy", None).unwrap();
        assert_eq!(spec.member, None);
    }
}
