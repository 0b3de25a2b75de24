//! What a command-line input names: a `.npy` file, a `.npz` archive, or one member of an
//! archive (`ARCHIVE:KEY` or `--member KEY`); and what a file is, by its first bytes (an archive)
//! or by its name (a table: Parquet, Arrow IPC).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::failure::{CliResult, Failure};

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
    let (path, from_spec) = if as_is.exists() {
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

/// True if the file starts like a zip archive (local file header, or the end-of-directory
/// record of an empty archive).
///
/// Only regular files are looked at: reading the start of a pipe (`npy cat <(...)`) would
/// consume it, and an archive needs a seekable file anyway.
pub fn is_zip(path: &Path) -> io::Result<bool> {
    let mut f = File::open(path)?;
    if !f.metadata()?.is_file() {
        return Ok(false);
    }
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
