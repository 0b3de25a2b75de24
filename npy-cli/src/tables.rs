//! `npy convert` between `.npy` (or an archive member) and the Arrow formats: `.parquet`
//! (feature `parquet`) and `.arrow` / `.feather` (Arrow IPC file), streamed batch by batch
//! through `npy_serde::arrow`; and `npy info --arrow`. Feature `arrow`.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use arrow_array::{RecordBatch, RecordBatchReader};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};
use npy_serde::arrow::{BatchReaderBuilder, BatchWriterBuilder, NpyBatchWriter, DESCR_KEY};
use npy_serde::ReaderBuilder;

use crate::convert::{Options, Target};
use crate::input;
use crate::{CliResult, Failure, Global};

/// A table format by file name.
pub fn is_table(name: &str) -> bool {
    matches!(
        ext(name).as_deref(),
        Some("parquet" | "pq" | "arrow" | "feather" | "ipc")
    )
}

fn ext(name: &str) -> Option<String> {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

fn is_parquet(name: &str) -> bool {
    matches!(ext(name).as_deref(), Some("parquet" | "pq"))
}

/// `npy convert` when IN or OUT is a table format.
pub fn run(g: &Global, o: &Options, target: Target) -> CliResult {
    if o.byte_order.is_some() || o.fortran_order.is_some() || o.version.is_some() {
        return Err(Failure::usage(
            "--byte-order, --order and --version apply to .npy to .npy conversions only",
        ));
    }
    let input = &o.input;
    if is_table(input) {
        if o.member.is_some() {
            return Err(Failure::usage(format!("{input}: not an .npz archive")));
        }
        let file = File::open(input).map_err(|e| Failure::file(input, e))?;
        if is_parquet(input) {
            return parquet_in(file, o, target);
        }
        let reader = arrow_ipc::reader::FileReader::try_new_buffered(file, None)
            .map_err(|e| Failure::file(input, e))?;
        let widths = if matches!(target, Target::Npy | Target::Npz) {
            let f = File::open(input).map_err(|e| Failure::file(input, e))?;
            let again = arrow_ipc::reader::FileReader::try_new_buffered(f, None)
                .map_err(|e| Failure::file(input, e))?;
            string_widths(again, input)?
        } else {
            HashMap::new()
        };
        return write_out(reader, None, Progress::none(), o, target, widths);
    }
    // A .npy file or an archive member.
    let spec = input::resolve(input, o.member.as_deref())?;
    let zip = input::is_zip(&spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    let rb = ReaderBuilder::new()
        .with_limits(input::limits(g))
        .max_empty_items(g.max_empty_items);
    let builder = BatchReaderBuilder::new().reader_options(rb);
    if zip {
        let archive_name = spec.path.display().to_string();
        let Some(key) = spec.member.as_deref() else {
            return Err(Failure::usage(format!(
                "{}: an .npz archive holds several arrays: name one with --member KEY or {}:KEY",
                spec.display, spec.display
            )));
        };
        let mut archive = input::open_archive(g, &spec.path, &archive_name)?;
        let member = archive
            .by_key(key)
            .map_err(|e| Failure::file(&archive_name, e))?;
        let reader = builder
            .from_npz_member(member)
            .map_err(|e| input::header_failure(&spec.display, e))?;
        let p = Progress::rows(reader.num_rows(), row_bytes(reader.header()));
        write_out(reader, None, p, o, target, HashMap::new())
    } else {
        let reader = builder
            .open(&spec.path)
            .map_err(|e| input::header_failure(&spec.display, e))?;
        let p = Progress::rows(reader.num_rows(), row_bytes(reader.header()));
        write_out(reader, None, p, o, target, HashMap::new())
    }
}

fn row_bytes(h: &npy_serde::Header) -> u64 {
    let per: u64 = h.shape.iter().skip(1).product();
    per * h.dtype.itemsize() as u64
}

#[cfg(feature = "parquet")]
fn parquet_in(file: File, o: &Options, target: Target) -> CliResult {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let input = &o.input;
    let open = |f: File| -> CliResult<_> {
        ParquetRecordBatchReaderBuilder::try_new(f)
            .map_err(|e| Failure::file(input, e))
            .map(|b| b.with_batch_size(npy_serde::arrow::DEFAULT_BATCH_SIZE))
    };
    let b2 = open(file)?;
    // The file's Arrow schema, with its metadata (the batches' own schemas have none).
    let schema = b2.schema().clone();
    let rows = b2.metadata().file_metadata().num_rows().max(0) as u64;
    let widths = if matches!(target, Target::Npy | Target::Npz) {
        // A first pass over the string columns only: their width is the widest value.
        let strings: Vec<usize> = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, f)| needs_width(f.data_type()) && !f.metadata().contains_key(DESCR_KEY))
            .map(|(i, _)| i)
            .collect();
        if strings.is_empty() {
            HashMap::new()
        } else {
            let mask = parquet::arrow::ProjectionMask::roots(b2.parquet_schema(), strings);
            let r = b2
                .with_projection(mask)
                .build()
                .map_err(|e| Failure::file(input, e))?;
            string_widths(r, input)?
        }
    } else {
        HashMap::new()
    };
    // Row groups decoded on all cores, in batches of about 2 MiB of values.
    let reader = npy_serde::arrow::parquet::ParquetReader::open(input, parquet_batch_rows(&schema))
        .map_err(|e| Failure::file(input, e))?;
    write_out(
        reader,
        Some(schema),
        Progress::rows(rows, 0),
        o,
        target,
        widths,
    )
}

/// Rows per batch read from Parquet: about 2 MiB of fixed-width values (strings counted as
/// 16 bytes), at least 1024 and at most 65536 rows.
#[cfg(feature = "parquet")]
fn parquet_batch_rows(schema: &Schema) -> usize {
    fn width(dt: &DataType) -> usize {
        match dt {
            DataType::FixedSizeList(f, n) => width(f.data_type()) * (*n).max(0) as usize,
            DataType::Struct(fs) => fs.iter().map(|f| width(f.data_type())).sum(),
            DataType::FixedSizeBinary(n) => (*n).max(0) as usize,
            dt => dt.primitive_width().unwrap_or(16),
        }
    }
    let row: usize = schema.fields().iter().map(|f| width(f.data_type())).sum();
    ((2 << 20) / row.max(1)).clamp(1024, 65_536)
}

#[cfg(not(feature = "parquet"))]
fn parquet_in(_: File, o: &Options, _: Target) -> CliResult {
    Err(no_parquet(&o.input))
}

#[cfg(not(feature = "parquet"))]
fn no_parquet(name: &str) -> Failure {
    Failure::usage(format!(
        "{name}: this npy was built without Parquet support: install it with \
         `cargo install npy-serde --features cli,parquet`"
    ))
}

fn needs_width(dt: &DataType) -> bool {
    match dt {
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView => true,
        DataType::FixedSizeList(f, _) => needs_width(f.data_type()),
        _ => false,
    }
}

/// The widest value of every top-level string column (a first pass over the input).
fn string_widths(
    reader: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    input: &str,
) -> CliResult<HashMap<String, usize>> {
    let mut out: HashMap<String, usize> = HashMap::new();
    for b in reader {
        let b = b.map_err(|e| Failure::file(input, e))?;
        let schema = b.schema();
        for (i, f) in schema.fields().iter().enumerate() {
            if needs_width(f.data_type()) {
                let w = widest_of(b.column(i));
                let e = out.entry(f.name().clone()).or_insert(1);
                *e = (*e).max(w);
            }
        }
    }
    Ok(out)
}

fn widest_of(a: &arrow_array::ArrayRef) -> usize {
    use arrow_array::cast::AsArray;
    let s = |it: &mut dyn Iterator<Item = Option<&str>>| {
        it.flatten().map(|v| v.chars().count()).max().unwrap_or(0)
    };
    let b = |it: &mut dyn Iterator<Item = Option<&[u8]>>| {
        it.flatten().map(<[u8]>::len).max().unwrap_or(0)
    };
    match a.data_type() {
        DataType::Utf8 => s(&mut a.as_string::<i32>().iter()),
        DataType::LargeUtf8 => s(&mut a.as_string::<i64>().iter()),
        DataType::Utf8View => s(&mut a.as_string_view().iter()),
        DataType::Binary => b(&mut a.as_binary::<i32>().iter()),
        DataType::LargeBinary => b(&mut a.as_binary::<i64>().iter()),
        DataType::BinaryView => b(&mut a.as_binary_view().iter()),
        DataType::FixedSizeList(..) => widest_of(a.as_fixed_size_list().values()),
        _ => 0,
    }
}

/// The progress bar (on a terminal, for large inputs).
struct Progress {
    pb: Option<indicatif::ProgressBar>,
    /// Bytes per row shown, when counting rows.
    per_row: u64,
}

impl Progress {
    fn rows(rows: u64, row_bytes: u64) -> Progress {
        let per_row = row_bytes.max(1);
        Progress {
            pb: crate::output::progress_bar(rows.saturating_mul(per_row)),
            per_row,
        }
    }

    fn none() -> Progress {
        Progress {
            pb: None,
            per_row: 1,
        }
    }

    fn add(&self, rows: usize) {
        if let Some(pb) = &self.pb {
            pb.inc(rows as u64 * self.per_row);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(pb) = self.pb.take() {
            pb.finish_and_clear();
        }
    }
}

/// The output file, written under a temporary name and renamed when complete.
struct Out {
    tmp: PathBuf,
    target: PathBuf,
    done: bool,
}

impl Out {
    fn create(name: &str) -> CliResult<(Out, BufWriter<File>)> {
        if name == "-" {
            return Err(Failure::usage(
                "Parquet, Arrow and .npy table output needs a file (it is written out of order)",
            ));
        }
        let target = PathBuf::from(name);
        let tmp = crate::convert::temp_path_for(&target);
        let f = File::create(&tmp).map_err(|e| Failure::file(name, e))?;
        Ok((
            Out {
                tmp,
                target,
                done: false,
            },
            BufWriter::with_capacity(1 << 20, f),
        ))
    }

    fn commit(mut self) -> CliResult {
        let name = self.target.display().to_string();
        std::fs::rename(&self.tmp, &self.target).map_err(|e| Failure::write(&name, e))?;
        self.done = true;
        Ok(())
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

fn write_out<R: RecordBatchReader>(
    reader: R,
    schema: Option<SchemaRef>,
    progress: Progress,
    o: &Options,
    target: Target,
    widths: HashMap<String, usize>,
) -> CliResult {
    let schema: SchemaRef = schema.unwrap_or_else(|| reader.schema());
    let input = o.input.as_str();
    let (output, _) = npz_target(o);
    let output = if target == Target::Npz {
        output
    } else {
        o.output.as_str()
    };
    let read_err = |e: ArrowError| match e {
        ArrowError::ExternalError(inner) => match inner.downcast::<npy_serde::Error>() {
            Ok(e) => Failure::file(input, e),
            Err(other) => Failure::file(input, other),
        },
        other => Failure::file(input, other),
    };
    let (out, file) = Out::create(output)?;
    match target {
        Target::Npy => {
            let mut wb = BatchWriterBuilder::new().fill_nulls(o.fill_nulls);
            for (name, w) in &widths {
                wb = wb.string_width(name, *w);
            }
            // Written through the batch writer's own thread: no buffer of ours in between.
            let file = file
                .into_inner()
                .map_err(|e| Failure::write(output, e.into_error()))?;
            let mut w: NpyBatchWriter<File> = wb
                .file_writer(file, &schema)
                .map_err(|e| Failure::file(output, e))?;
            for b in reader {
                let b = b.map_err(read_err)?;
                w.write(&b)
                    .map_err(|e| Failure::file(input, format!("cannot write {output}: {e}")))?;
                progress.add(b.num_rows());
            }
            w.finish().map_err(|e| Failure::file(output, e))?;
        }
        Target::Arrow => {
            let mut w = arrow_ipc::writer::FileWriter::try_new(file, &schema)
                .map_err(|e| Failure::file(output, e))?;
            for b in reader {
                let b = b.map_err(read_err)?;
                w.write(&b).map_err(|e| Failure::file(output, e))?;
                progress.add(b.num_rows());
            }
            w.finish().map_err(|e| Failure::file(output, e))?;
            let f = w.into_inner().map_err(|e| Failure::file(output, e))?;
            finish_file(f, output)?;
        }
        Target::Parquet => parquet_out(reader, &schema, file, &progress, o, read_err)?,
        Target::Npz => {
            let (_, key) = npz_target(o);
            let mut wb = BatchWriterBuilder::new().fill_nulls(o.fill_nulls);
            for (name, w) in &widths {
                wb = wb.string_width(name, *w);
            }
            let mut npz = npy_serde::NpzWriter::new(file);
            let failed = std::cell::RefCell::new(None);
            let counted = Counted {
                reader,
                progress: &progress,
                failed: &failed,
                read_err: &read_err,
            };
            let written = npy_serde::arrow::write_npz_member(&mut npz, &key, counted, &wb);
            if let Some(f) = failed.into_inner() {
                return Err(f);
            }
            written.map_err(|e| Failure::file(input, format!("cannot write {output}: {e}")))?;
            let f = npz.finish().map_err(|e| Failure::file(output, e))?;
            finish_file(f, output)?;
        }
        Target::Json | Target::Csv => {
            return Err(Failure::usage(
                "JSON and CSV output is from .npy input only (convert the table to .npy first)",
            ))
        }
    }
    out.commit()
}

/// `npy sql -o OUT`: a query's batches into `.npy`, `.parquet` or `.arrow`, as `convert`
/// writes a table.
#[cfg(feature = "datafusion")]
pub fn write_query<R: RecordBatchReader>(reader: R, o: &Options, target: Target) -> CliResult {
    write_out(reader, None, Progress::none(), o, target, HashMap::new())
}

/// The archive and member key of an `.npz` output: `OUT.npz:KEY`, or `OUT.npz` with the
/// input's file stem as the key.
fn npz_target(o: &Options) -> (&str, String) {
    match crate::convert::npz_member_output(&o.output) {
        Some((archive, key)) => (archive, key.to_string()),
        None => {
            let stem = Path::new(&o.input)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "arr_0".into());
            (o.output.as_str(), stem)
        }
    }
}

/// A batch reader that moves the progress bar and keeps the first read error as the input's
/// failure (the writer then stops with an error of its own).
struct Counted<'a, R, F> {
    reader: R,
    progress: &'a Progress,
    failed: &'a std::cell::RefCell<Option<Failure>>,
    read_err: &'a F,
}

impl<R: RecordBatchReader, F: Fn(ArrowError) -> Failure> Iterator for Counted<'_, R, F> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.reader.next()? {
            Ok(b) => {
                self.progress.add(b.num_rows());
                Some(Ok(b))
            }
            Err(e) => {
                let msg = e.to_string();
                self.failed.replace(Some((self.read_err)(e)));
                Some(Err(ArrowError::ExternalError(msg.into())))
            }
        }
    }
}

impl<R: RecordBatchReader, F: Fn(ArrowError) -> Failure> RecordBatchReader for Counted<'_, R, F> {
    fn schema(&self) -> SchemaRef {
        self.reader.schema()
    }
}

fn finish_file(mut f: BufWriter<File>, output: &str) -> CliResult {
    f.flush().map_err(|e| Failure::write(output, e))?;
    let _ = f.stream_position();
    Ok(())
}

#[cfg(feature = "parquet")]
fn parquet_out<R: RecordBatchReader>(
    reader: R,
    schema: &Schema,
    file: BufWriter<File>,
    progress: &Progress,
    o: &Options,
    read_err: impl Fn(ArrowError) -> Failure,
) -> CliResult {
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::WriterProperties;
    let output = o.output.as_str();
    let compression = match o.compression.as_deref().unwrap_or("snappy") {
        "none" | "uncompressed" => Compression::UNCOMPRESSED,
        "snappy" => Compression::SNAPPY,
        z if z.starts_with("zstd") => {
            let level = z
                .strip_prefix("zstd")
                .and_then(|l| l.strip_prefix(':'))
                .map(|l| l.parse::<i32>())
                .transpose()
                .map_err(|_| Failure::usage(format!("--compression {z}: use zstd:LEVEL")))?
                .unwrap_or(3);
            Compression::ZSTD(
                ZstdLevel::try_new(level).map_err(|e| Failure::usage(format!("{z}: {e}")))?,
            )
        }
        other => {
            return Err(Failure::usage(format!(
                "--compression {other}: use none, snappy or zstd[:LEVEL]"
            )))
        }
    };
    let mut props = WriterProperties::builder().set_compression(compression);
    if let Some(n) = o.row_group_size {
        props = props.set_max_row_group_row_count(Some(n.max(1)));
    }
    // Each row group's columns encoded on all cores while the next batch is read.
    let mut w = npy_serde::arrow::parquet::ParquetWriter::new(
        file,
        SchemaRef::new(schema.clone()),
        Some(props.build()),
    )
    .map_err(|e| Failure::file(output, e))?;
    for b in reader {
        let b = b.map_err(&read_err)?;
        w.write(&b).map_err(|e| Failure::file(output, e))?;
        progress.add(b.num_rows());
    }
    let f = w.finish().map_err(|e| Failure::file(output, e))?;
    finish_file(f, output)
}

#[cfg(not(feature = "parquet"))]
fn parquet_out<R: RecordBatchReader>(
    _: R,
    _: &Schema,
    _: BufWriter<File>,
    _: &Progress,
    o: &Options,
    _: impl Fn(ArrowError) -> Failure,
) -> CliResult {
    Err(no_parquet(&o.output))
}

/// `npy info --arrow`: the Arrow schema the file (or member) maps to.
pub fn info(g: &Global, file: &str, member: Option<&str>) -> CliResult {
    let spec = input::resolve(file, member)?;
    let zip = input::is_zip(&spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    let header = if zip {
        let archive_name = spec.path.display().to_string();
        let Some(key) = spec.member.as_deref() else {
            return Err(Failure::usage(format!(
                "{}: name a member with --member KEY or {}:KEY",
                spec.display, spec.display
            )));
        };
        let mut archive = input::open_archive(g, &spec.path, &archive_name)?;
        archive
            .header(key)
            .map_err(|e| input::header_failure(&spec.display, e))?
            .header
    } else {
        let mut f =
            BufReader::new(File::open(&spec.path).map_err(|e| Failure::file(&spec.display, e))?);
        npy_serde::header::read_header(&mut f, &input::limits(g))
            .map_err(|e| input::header_failure(&spec.display, e))?
            .header
    };
    let schema =
        npy_serde::arrow::schema_for(&header).map_err(|e| Failure::file(&spec.display, e))?;
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
