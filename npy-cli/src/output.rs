//! Where results go: the output formats ([`Target`]), `ARCHIVE.npz:KEY` outputs, and files
//! written under a temporary name beside their target and renamed over it when complete (so a
//! failed command leaves no partial file, and converting a file onto itself is safe).

use std::fs::File;
use std::io::{self, BufWriter, Stdout, Write};

use npy_serde::staged::{PendingRename, StagedFile};
use npy_serde::AlignedWriter;

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

/// The output: standard output, or a temporary file next to OUT that replaces OUT only when
/// everything was written (so a failed conversion leaves no partial file, and converting a
/// file onto itself is safe): npy-serde's [`StagedFile`], which also keeps an existing OUT's
/// permissions, follows a symbolic link and writes a FIFO or device directly.
pub struct Sink {
    /// The buffered output.
    pub writer: Buffered,
    /// The target's name and the rename still to be done (removed if not committed).
    staged: Option<(String, Option<PendingRename>)>,
}

impl Sink {
    /// Standard output for `-`, else a temporary file beside `out`.
    pub fn create(out: &str) -> CliResult<Sink> {
        if out == "-" {
            return Ok(Sink {
                writer: Buffered::Stdout(BufWriter::with_capacity(1 << 16, io::stdout())),
                staged: None,
            });
        }
        let (file, pending) = StagedFile::create(out)
            .map_err(|e| Failure::file(out, e))?
            .into_parts();
        Ok(Sink {
            writer: Buffered::File(AlignedWriter::new(file)),
            staged: Some((out.to_string(), pending)),
        })
    }

    /// Flushes, and renames the temporary file over the target.
    pub fn commit(mut self) -> CliResult {
        let name = match &self.staged {
            Some((t, _)) => t.clone(),
            None => "standard output".to_string(),
        };
        self.writer.flush().map_err(|e| Failure::write(&name, e))?;
        if let Some((_, Some(pending))) = self.staged.take() {
            pending.commit().map_err(|e| Failure::write(&name, e))?;
        }
        Ok(())
    }
}

/// A [`Sink`]'s output, buffered: a file in 2 MiB writes aligned in the file (which maps of the
/// file later fault in at a fraction of the cost, see [`AlignedWriter`]).
pub enum Buffered {
    /// Standard output.
    Stdout(BufWriter<Stdout>),
    /// A file (or a FIFO or device, which [`StagedFile`] writes directly).
    File(AlignedWriter<File>),
}

impl Write for Buffered {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Buffered::Stdout(w) => w.write(buf),
            Buffered::File(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Buffered::Stdout(w) => w.write_all(buf),
            Buffered::File(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Buffered::Stdout(w) => w.flush(),
            Buffered::File(w) => w.flush(),
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
