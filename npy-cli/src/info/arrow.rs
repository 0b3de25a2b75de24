//! `npy info --arrow` (feature `arrow`): the Arrow schema a `.npy` file or archive member maps to,
//! as `npy convert` to `.parquet` / `.arrow` writes it.

use std::fs::File;
use std::io::{self, BufReader, Write};

use arrow_schema::Schema;
use npy_arrow::DESCR_KEY;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::archive::open_archive;
use crate::input::header::header_failure;
use crate::input::spec::{is_zip, resolve};

/// `npy info --arrow`: the Arrow schema the file (or member) maps to.
pub fn run(g: &Global, file: &str, member: Option<&str>) -> CliResult {
    let spec = resolve(file, member)?;
    let zip = is_zip(g, &spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    let header = if zip {
        let archive_name = spec.path.display().to_string();
        let Some(key) = spec.member.as_deref() else {
            return Err(Failure::usage(format!(
                "{}: name a member with --member KEY or {}:KEY",
                spec.display, spec.display
            )));
        };
        let mut archive = open_archive(g, &spec.path, &archive_name)?;
        archive
            .header(key)
            .map_err(|e| header_failure(&spec.display, e))?
            .header
    } else {
        let mut f =
            BufReader::new(File::open(&spec.path).map_err(|e| Failure::file(&spec.display, e))?);
        npy_serde::header::read_header(&mut f, &g.limits())
            .map_err(|e| header_failure(&spec.display, e))?
            .header
    };
    let schema = npy_arrow::schema_for(&header).map_err(|e| Failure::file(&spec.display, e))?;
    let mut out = io::stdout().lock();
    print_schema(&mut out, &schema).map_err(|e| Failure::write("standard output", e))
}

fn print_schema(out: &mut dyn Write, schema: &Schema) -> io::Result<()> {
    for f in schema.fields() {
        write!(out, "{}: {}", f.name(), f.data_type())?;
        if f.is_nullable() {
            write!(out, " (nullable)")?;
        }
        if let Some(d) = f.metadata().get(DESCR_KEY) {
            write!(out, "  [numpy {d}]")?;
        }
        writeln!(out)?;
    }
    let mut meta: Vec<_> = schema.metadata().iter().collect();
    meta.sort();
    for (k, v) in meta {
        writeln!(out, "# {k} = {v}")?;
    }
    Ok(())
}
