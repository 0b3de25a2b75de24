//! `npy convert` when IN or OUT is a table (feature `arrow`): a Parquet or Arrow IPC input, or a
//! `.npy` file or archive member read as Arrow batches through `npy_serde::arrow`, streamed batch
//! by batch into the table writer.

use std::collections::HashMap;

use npy_serde::arrow::BatchReaderBuilder;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::header::header_failure;
use crate::input::spec::{is_table, is_zip, resolve};
use crate::output::Target;
use crate::table::ends::TableOut;
use crate::table::progress::Progress;
use crate::table::read;
use crate::table::write::write;

/// Converts IN (a table file, or a `.npy` file or archive member named by `member` or
/// `ARCHIVE:KEY`) into the table output `o`.
pub fn run(g: &Global, input: &str, member: Option<&str>, o: &TableOut<'_>) -> CliResult {
    if is_table(input) {
        if member.is_some() {
            return Err(Failure::usage(format!("{input}: not an .npz archive")));
        }
        let t = read::open(input, matches!(o.target, Target::Npy | Target::Npz))?;
        return write(t.reader, t.schema, t.progress, o, t.widths);
    }
    // A .npy file or an archive member.
    let spec = resolve(input, member)?;
    let zip = is_zip(&spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    let builder = BatchReaderBuilder::new().reader_options(g.reader_options());
    if zip {
        let archive_name = spec.path.display().to_string();
        let Some(key) = spec.member.as_deref() else {
            return Err(Failure::usage(format!(
                "{}: an .npz archive holds several arrays: name one with --member KEY or {}:KEY",
                spec.display, spec.display
            )));
        };
        let mut archive = open_archive(g, &spec.path, &archive_name)?;
        let member = archive
            .by_key(key)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let reader = builder
            .from_npz_member(member)
            .map_err(|e| header_failure(&spec.display, e))?;
        let p = Progress::rows(reader.num_rows(), row_bytes(reader.header()));
        write(reader, None, p, o, HashMap::new())
    } else {
        let reader = builder
            .open(&spec.path)
            .map_err(|e| header_failure(&spec.display, e))?;
        let p = Progress::rows(reader.num_rows(), row_bytes(reader.header()));
        write(reader, None, p, o, HashMap::new())
    }
}

/// The bytes of one row (an element along the first axis), for the progress bar.
fn row_bytes(h: &npy_serde::Header) -> u64 {
    let per: u64 = h.shape.iter().skip(1).product();
    per * h.dtype.itemsize() as u64
}
