//! Where an input's bytes come from: a local file, or (feature `remote`) one object behind an
//! `s3://bucket/key` or `http(s)://host/path` URL, read through `npy_remote::RemoteFile`
//! (ranged GETs with a read-ahead buffer, `Read + Seek`, so archives go through the same zip
//! reader as local ones).
//!
//! A command-line input spelled as a URL (`scheme://...`) is a URL: it is never looked for on
//! the local disk. Which schemes are read is the library's to say (`npy_remote::store_for_url`,
//! whose error lists them); inside the tool a URL travels as a `Path` holding its text
//! ([`url_of`] tells it apart).

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::failure::{CliResult, Failure};
use crate::global::Global;

/// True if `s` is spelled as a URL: a scheme (a letter, then letters, digits, `+`, `-` or
/// `.`; two characters at least, so that `C://` stays a Windows path) followed by `://`.
pub fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        scheme.len() >= 2
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// The URL an input path holds, if it is one.
pub fn url_of(path: &Path) -> Option<&str> {
    path.to_str().filter(|s| is_url(s))
}

/// An opened input.
pub enum Source {
    /// A local file.
    Local(File),
    /// An object in a store.
    #[cfg(feature = "remote")]
    Remote(Box<npy_remote::RemoteFile>),
}

thread_local! {
    /// The last remote object [`is_zip`](crate::input::spec::is_zip) opened, handed to the next
    /// [`Source::open`] of the same URL: its first GET (the probe) is not made twice.
    static OPENED: RefCell<Option<(PathBuf, Source)>> = const { RefCell::new(None) };
}

impl Source {
    /// Opens `path`: a URL through the object store (its errors name the URL), else the file
    /// (its errors prefixed with `display`).
    pub fn open(g: &Global, path: &Path, display: &str) -> CliResult<Source> {
        let Some(url) = url_of(path) else {
            return File::open(path)
                .map(Source::Local)
                .map_err(|e| Failure::file(display, e));
        };
        if let Some(mut cached) = OPENED.with(|c| {
            let mut c = c.borrow_mut();
            match c.take() {
                Some((p, s)) if p == path => Some(s),
                other => {
                    *c = other;
                    None
                }
            }
        }) {
            cached
                .seek(SeekFrom::Start(0))
                .map_err(|e| Failure::file(display, e))?;
            return Ok(cached);
        }
        open_url(g, url)
    }

    /// Keeps this opened remote object for the next [`Source::open`] of `path`.
    pub fn keep(self, path: &Path) {
        if url_of(path).is_some() {
            OPENED.with(|c| *c.borrow_mut() = Some((path.to_path_buf(), self)));
        }
    }

    /// The input's length: a regular file's or the object's size; `None` for a pipe.
    pub fn len(&self) -> io::Result<Option<u64>> {
        match self {
            Source::Local(f) => {
                let meta = f.metadata()?;
                Ok(meta.is_file().then_some(meta.len()))
            }
            #[cfg(feature = "remote")]
            Source::Remote(r) => Ok(Some(r.len())),
        }
    }

    /// The local file, which can be memory-mapped.
    pub fn file(&self) -> Option<&File> {
        match self {
            Source::Local(f) => Some(f),
            #[cfg(feature = "remote")]
            Source::Remote(_) => None,
        }
    }
}

#[cfg(feature = "remote")]
fn open_url(g: &Global, url: &str) -> CliResult<Source> {
    npy_remote::RemoteFile::open(url, &g.remote_options())
        .map(|r| Source::Remote(Box::new(r)))
        .map_err(|e| Failure::input(e.to_string()))
}

#[cfg(not(feature = "remote"))]
fn open_url(_: &Global, url: &str) -> CliResult<Source> {
    Err(Failure::input(format!(
        "{url}: this npy was built without the `remote` feature, which reads object-store URLs \
         (cargo install npy-cli --features remote)"
    )))
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::Local(f) => f.read(buf),
            #[cfg(feature = "remote")]
            Source::Remote(r) => r.read(buf),
        }
    }
}

impl Seek for Source {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        match self {
            Source::Local(f) => f.seek(to),
            #[cfg(feature = "remote")]
            Source::Remote(r) => r.seek(to),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_apart_from_paths() {
        assert!(is_url("s3://b/k.npy"));
        assert!(is_url("HTTP://h/k.npy"));
        assert!(is_url("https://h:8/k.npz:x"));
        assert!(!is_url("data/s3://x"));
        assert!(!is_url("C:\\x.npy"));
        assert!(!is_url("C://x.npy"));
        assert!(!is_url("a b://x"));
        // A URL the stores do not open is still a URL: their error says which they open.
        assert!(is_url("ftp://h/x"));
        assert_eq!(url_of(Path::new("s3://b/k")), Some("s3://b/k"));
        assert_eq!(url_of(Path::new("b/k")), None);
    }
}
