//! Where results go: the output formats ([`Target`]), `ARCHIVE.npz:KEY` outputs, and files
//! written under a temporary name beside their target and renamed over it when complete (so a
//! failed command leaves no partial file, and converting a file onto itself is safe).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::failure::{CliResult, Failure};

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// `.npy`
    Npy,
    /// `.json`
    Json,
    /// `.csv`
    Csv,
    /// `.npz`: an archive of the input's members (or of the `.npy` file)
    Npz,
    /// `.parquet` (feature `parquet`)
    Parquet,
    /// `.arrow` / `.feather`: an Arrow IPC file (feature `arrow`)
    Arrow,
}

/// `ARCHIVE.npz:KEY` as an output: the archive's path and the member's key.
pub fn npz_member_output(out: &str) -> Option<(&str, &str)> {
    let i = out.to_ascii_lowercase().find(".npz:")?;
    let (archive, key) = (&out[..i + 4], &out[i + 5..]);
    (!key.is_empty()).then_some((archive, key))
}

/// The temporary file an output is written to before it is renamed over `target`: beside it
/// (so the rename stays on one file system), hidden, named for this process.
pub fn temp_path_for(target: &Path) -> PathBuf {
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    dir.join(format!(".{name}.npy-tmp-{}", std::process::id()))
}

/// The output: standard output, or a temporary file next to OUT that replaces OUT only when
/// everything was written (so a failed conversion leaves no partial file, and converting a
/// file onto itself is safe).
pub struct Sink {
    /// The buffered output.
    pub writer: BufWriter<Box<dyn Write>>,
    tmp: Option<(PathBuf, PathBuf)>,
}

impl Sink {
    /// Standard output for `-`, else a temporary file beside `out`.
    pub fn create(out: &str) -> CliResult<Sink> {
        if out == "-" {
            return Ok(Sink {
                writer: BufWriter::with_capacity(1 << 16, Box::new(io::stdout())),
                tmp: None,
            });
        }
        let target = PathBuf::from(out);
        let tmp = temp_path_for(&target);
        let file = File::create(&tmp).map_err(|e| Failure::file(out, e))?;
        Ok(Sink {
            writer: BufWriter::with_capacity(1 << 16, Box::new(file)),
            tmp: Some((tmp, target)),
        })
    }

    /// Flushes, and renames the temporary file over the target.
    pub fn commit(mut self) -> CliResult {
        let name = match &self.tmp {
            Some((_, t)) => t.display().to_string(),
            None => "standard output".to_string(),
        };
        self.writer.flush().map_err(|e| Failure::write(&name, e))?;
        if let Some((tmp, target)) = self.tmp.take() {
            if let Err(e) = std::fs::rename(&tmp, &target) {
                let _ = std::fs::remove_file(&tmp);
                return Err(Failure::write(&name, e));
            }
        }
        Ok(())
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.tmp.take() {
            // Not committed: remove the partial output.
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npz_member_outputs() {
        assert_eq!(npz_member_output("a/t.npz:x"), Some(("a/t.npz", "x")));
        assert_eq!(npz_member_output("T.NPZ:a:b"), Some(("T.NPZ", "a:b")));
        assert_eq!(npz_member_output("t.npz"), None);
        assert_eq!(npz_member_output("t.npz:"), None);
    }
}
