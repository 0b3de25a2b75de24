//! `npy convert IN OUT --layout columns` (feature `arrow`): a table (Parquet, Arrow IPC) as a
//! column table, one `.npy` array per column, in an `.npz` archive (OUT ends in `.npz`: stored
//! members, each member's data aligned at a multiple of 64, so that `npy sql` views them in
//! place) or in a directory (one `COLUMN.npy` per column, Kuzu's `COPY FROM NPY` layout).
//!
//! The input is read once: each batch's columns go to one batch writer per column (a record
//! array of that one field, with the run's null and decimal policies and string widths), whose
//! file is then made a plain array (the same data bytes under the field's dtype) in place or in
//! the archive.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use npy_arrow::{BatchWriterBuilder, TITLE_KEY};
use npy_serde::{DType, Header};

use crate::choice::TableChoice;
use crate::failure::{CliResult, Failure};
use crate::output::temp_path_for;
use crate::table::read;
use crate::table::widths::read_failure;

/// Writes the table `input` as the column table `output` (an `.npz` archive or a directory).
pub fn run(input: &str, output: &str, choice: &TableChoice) -> CliResult {
    let t = read::open(input, true, choice)?;
    let schema: SchemaRef = t.schema.clone().unwrap_or_else(|| t.reader.schema());
    let archive = output.to_ascii_lowercase().ends_with(".npz");
    let dir = if archive {
        PathBuf::from(output)
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    } else {
        std::fs::create_dir_all(output).map_err(|e| Failure::file(output, e))?;
        PathBuf::from(output)
    };
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let one = Arc::new(Schema::new_with_metadata(
            vec![field.clone()],
            schema.metadata().clone(),
        ));
        let mut wb = choice.configure(BatchWriterBuilder::new())?;
        if let Some(w) = t.widths.get(field.name()) {
            wb = wb.string_width(field.name(), *w);
        }
        // Not the name `plain` writes the column's array under before renaming it.
        let tmp = Temp(temp_path_for(&dir.join(format!("{}.record", field.name()))));
        let file = File::create(&tmp.0).map_err(|e| Failure::file(output, e))?;
        let w = wb
            .file_writer(file, &one)
            .map_err(|e| Failure::file(input, format!("column {}: {e}", field.name())))?;
        columns.push((i, one, w, tmp));
    }
    for b in t.reader {
        let b = b.map_err(|e| read_failure(input, e))?;
        for (i, one, w, _) in &mut columns {
            let part = RecordBatch::try_new(one.clone(), vec![b.column(*i).clone()])
                .map_err(|e| Failure::file(input, e))?;
            w.write(&part)
                .map_err(|e| Failure::file(input, format!("cannot write {output}: {e}")))?;
        }
        t.progress.add(b.num_rows());
    }
    let mut files = Vec::with_capacity(columns.len());
    let mut untitled = Vec::new();
    for (i, _, w, tmp) in columns {
        w.finish().map_err(|e| Failure::file(output, e))?;
        let field = schema.field(i);
        if field.metadata().contains_key(TITLE_KEY) || titled(&tmp.0)? {
            untitled.push(field.name().clone());
        }
        files.push((field.name().clone(), tmp));
    }
    if !untitled.is_empty() {
        eprintln!(
            "npy convert: the Arrow types of {} are kept in NumPy field titles, which a plain \
             column array has not: their values are exact, their Arrow types the dtypes' own",
            untitled.join(", ")
        );
    }
    if archive {
        write_archive(output, &files)
    } else {
        for (name, tmp) in &files {
            let target = Path::new(output).join(format!("{name}.npy"));
            plain(&tmp.0, &target, output)?;
        }
        Ok(())
    }
}

/// Whether the one field of the record array at `path` has a title.
fn titled(path: &Path) -> CliResult<bool> {
    let (header, _) = header_of(path)?;
    Ok(matches!(&header.dtype, DType::Record(r) if r.fields().iter().any(|f| f.title.is_some())))
}

/// The header of the one-field record array at `path` and where its data starts.
fn header_of(path: &Path) -> CliResult<(Header, u64)> {
    let name = path.display().to_string();
    let mut f = File::open(path).map_err(|e| Failure::file(&name, e))?;
    let parsed = npy_serde::header::read_header(&mut f, &npy_serde::Limits::default())
        .map_err(|e| Failure::file(&name, e))?;
    Ok((parsed.header, parsed.data_offset))
}

/// The `.npy` bytes of the plain array whose data is that of the one-field record array at
/// `path`: its header, and the file positioned at the data.
fn plain_header(path: &Path) -> CliResult<(Vec<u8>, BufReader<File>)> {
    let name = path.display().to_string();
    let (header, offset) = header_of(path)?;
    let DType::Record(record) = &header.dtype else {
        return Err(Failure::file(&name, "expected a record array"));
    };
    let [field] = record.fields() else {
        return Err(Failure::usage(
            "--layout columns writes one array per column: --nulls mask (a mask field beside \
             each column) does not apply",
        ));
    };
    let plain = Header::new(field.dtype.clone(), header.shape.clone());
    let bytes = plain.to_bytes().map_err(|e| Failure::file(&name, e))?;
    let mut f = File::open(path).map_err(|e| Failure::file(&name, e))?;
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| Failure::file(&name, e))?;
    Ok((bytes, BufReader::with_capacity(1 << 20, f)))
}

/// Writes the plain array of the record array at `tmp` to `target`.
fn plain(tmp: &Path, target: &Path, output: &str) -> CliResult {
    let (header, mut data) = plain_header(tmp)?;
    let part = temp_path_for(target);
    let out = File::create(&part).map_err(|e| Failure::file(output, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let copied = out
        .write_all(&header)
        .and_then(|()| std::io::copy(&mut data, &mut out).map(|_| ()))
        .and_then(|()| out.flush());
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&part);
        return Err(Failure::write(output, e));
    }
    std::fs::rename(&part, target).map_err(|e| Failure::write(output, e))
}

/// Writes the archive `output` of the columns' plain arrays, stored and aligned.
fn write_archive(output: &str, files: &[(String, Temp)]) -> CliResult {
    let target = PathBuf::from(output);
    let part = Temp(temp_path_for(&target));
    let file = File::create(&part.0).map_err(|e| Failure::file(output, e))?;
    let mut npz = npy_serde::NpzWriter::new(BufWriter::with_capacity(1 << 20, file)).align(true);
    for (name, tmp) in files {
        let (header, mut data) = plain_header(&tmp.0)?;
        let mut m = npz
            .start_raw(&format!("{name}.npy"))
            .map_err(|e| Failure::file(output, e))?;
        m.write_all(&header)
            .and_then(|()| copy(&mut data, &mut m))
            .map_err(|e| Failure::write(output, e))?;
    }
    let w = npz.finish().map_err(|e| Failure::file(output, e))?;
    w.into_inner()
        .map_err(|e| Failure::write(output, e.into_error()))?;
    std::fs::rename(&part.0, &target).map_err(|e| Failure::write(output, e))
}

fn copy(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<()> {
    std::io::copy(from, to).map(|_| ())
}

/// A temporary file removed when dropped.
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
