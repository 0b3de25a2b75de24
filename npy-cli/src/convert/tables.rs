//! `npy convert` when IN or OUT is a table (feature `arrow`): a Parquet or Arrow IPC input, or a
//! `.npy` file or archive member read as Arrow batches through `npy_arrow`, streamed batch
//! by batch into the table writer.

use std::collections::HashMap;
use std::io::BufReader;

use npy_arrow::BatchReaderBuilder;

use crate::choice::TableChoice;
use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::header::header_failure;
use crate::input::source::{url_of, Source};
use crate::input::spec::{is_table, is_zip, resolve};
use crate::output::Target;
use crate::table::ends::TableOut;
use crate::table::progress::Progress;
use crate::table::read;
use crate::table::select::Select;
use crate::table::write::write_with;

/// Converts IN (a table file, or a `.npy` file or archive member named by `member` or
/// `ARCHIVE:KEY`) into the table output `o`, with the columns and policies of `choice`; an
/// object array of a `.npy` file read as data with `allow_pickle_data`.
pub fn run(
    g: &Global,
    input: &str,
    member: Option<&str>,
    o: &TableOut<'_>,
    choice: &TableChoice,
    allow_pickle_data: bool,
) -> CliResult {
    if is_table(input) {
        if member.is_some() {
            return Err(Failure::usage(format!("{input}: not an .npz archive")));
        }
        let widths = matches!(o.target, Target::Npy | Target::Npz);
        let t = read::open(input, widths, choice)?;
        return write_with(t.reader, t.schema, t.progress, o, t.widths, choice);
    }
    // A .npy file or an archive member.
    let spec = resolve(input, member)?;
    let zip = is_zip(g, &spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    let builder = BatchReaderBuilder::new()
        .reader_options(g.reader_options())
        .allow_pickle_data(allow_pickle_data);
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
        let schema = reader.schema_ref().clone();
        match choice.indices(&schema, &spec.display)? {
            // A member is read once: its batches projected.
            Some(keep) => {
                let reader = Select::new(reader, &schema, keep)?;
                write_with(reader, None, p, o, HashMap::new(), choice)
            }
            None => write_with(reader, None, p, o, HashMap::new(), choice),
        }
    } else {
        let open = |b: &BatchReaderBuilder| match url_of(&spec.path) {
            Some(_) => {
                let source = Source::open(g, &spec.path, &spec.display)?;
                b.from_reader(BufReader::with_capacity(1 << 20, source))
                    .map_err(|e| header_failure(&spec.display, e))
            }
            None => b
                .open(&spec.path)
                .map_err(|e| header_failure(&spec.display, e)),
        };
        let mut reader = open(&builder)?;
        if let Some(keep) = choice.indices(reader.schema_ref(), &spec.display)? {
            // Opened again with the columns kept: the others are never decoded.
            reader = open(&builder.clone().column_indices(keep))?;
        }
        let p = Progress::rows(reader.num_rows(), row_bytes(reader.header()));
        write_with(reader, None, p, o, HashMap::new(), choice)
    }
}

/// The bytes of one row (an element along the first axis), for the progress bar.
fn row_bytes(h: &npy_serde::Header) -> u64 {
    let per: u64 = h.shape.iter().skip(1).product();
    per * h.dtype.itemsize() as u64
}
