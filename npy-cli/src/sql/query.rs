//! `npy sql QUERY FILE...`: SQL over `.npy` files with DataFusion (feature `datafusion`), and
//! over Parquet (feature `parquet` too), Arrow IPC and CSV files beside them. Each FILE is a
//! table named by its stem; `-t NAME=SPEC` names a file, a directory of shards, a glob or an
//! archive member (`ARCHIVE:KEY`), with its format and options
//! (`npy_datafusion::TableSpec`). Results go to stdout as an aligned table, CSV
//! or JSON, or to a `.npy`, `.parquet` or `.arrow` file, streamed.

use std::io::{self, Write};
use std::path::Path;

use datafusion::arrow::array::{RecordBatch, RecordBatchReader};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use npy_datafusion::{
    memory_limited_context, register_npy_format, MemoryLimit, NpyReadOptions, NpySessionExt,
    TableFormat, TableSpec,
};
use tokio::runtime::Runtime;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::spec::{ext, resolve};
use crate::output::Target;
use crate::sql::args::Args;
use crate::sql::json::write_rows;
use crate::table::ends::TableOut;
use crate::table::write::write_chosen;

/// Runs the query and prints or writes its result.
pub fn run(g: &Global, a: &Args) -> CliResult {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::input(format!("cannot start the query runtime: {e}")))?;
    let ctx = session(a, &rt)?;
    register_npy_format(&ctx).map_err(query_failure)?;
    let options = NpyReadOptions::new().reader_options(g.reader_options());
    // FILEs take --allow-pickle-data; -t specs their own allow_pickle_data=true.
    let mut files = options.clone();
    if a.allow_pickle_data {
        files = files
            .set("allow_pickle_data", "true")
            .map_err(query_failure)?;
    }
    let mut named: Vec<(String, String, &NpyReadOptions)> = Vec::new();
    for file in &a.files {
        named.push((stem(file)?, file.clone(), &files));
    }
    for t in &a.tables {
        let (name, spec) = table_arg(t)?;
        named.push((name, spec, &options));
    }
    for (name, path, options) in &named {
        let spec = table_spec(path, options)?;
        #[cfg(feature = "remote")]
        npy_datafusion::register_store_for(&ctx, spec.location(), &g.remote_options())
            .map_err(|e| Failure::file(path, flat(&e)))?;
        rt.block_on(ctx.register_spec(name, &spec))
            .map_err(|e| Failure::file(path, flat(&e)))?;
    }
    let df = rt.block_on(ctx.sql(&a.query)).map_err(query_failure)?;
    let stream = rt.block_on(df.execute_stream()).map_err(query_failure)?;
    let mut batches = Blocking { rt: &rt, stream };

    if let Some(out) = &a.output {
        let target = match ext(out).as_deref() {
            Some("npy") => Target::Npy,
            Some("parquet" | "pq") => Target::Parquet,
            Some("arrow" | "feather" | "ipc") => Target::Arrow,
            _ => {
                return Err(Failure::usage(format!(
                    "-o {out}: the output is a .npy, .parquet or .arrow file"
                )))
            }
        };
        let o = TableOut {
            input: "the query",
            output: out,
            target,
            compression: a.compression.as_deref(),
            row_group_size: a.row_group_size,
        };
        return write_chosen(batches, &o, &a.choice);
    }
    let stdout = io::stdout();
    let out = io::BufWriter::new(stdout.lock());
    if a.csv {
        let mut w = datafusion::arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(out);
        for b in &mut batches {
            w.write(&b.map_err(arrow_failure)?).map_err(write_failure)?;
        }
        w.into_inner()
            .flush()
            .map_err(|e| Failure::write("stdout", e))
    } else if a.json {
        // The tool's JSON conventions (those of `cat --json`), not arrow-json's.
        let mut out = out;
        let mut first = true;
        let w = |e| Failure::write("stdout", e);
        out.write_all(b"[").map_err(w)?;
        for b in &mut batches {
            write_rows(&mut out, &b.map_err(arrow_failure)?, &mut first).map_err(w)?;
        }
        out.write_all(if first { b"]\n" } else { b"\n]\n" })
            .and_then(|_| out.flush())
            .map_err(w)
    } else {
        let all: Vec<RecordBatch> = batches
            .by_ref()
            .collect::<Result<_, _>>()
            .map_err(arrow_failure)?;
        let text =
            datafusion::arrow::util::pretty::pretty_format_batches(&all).map_err(arrow_failure)?;
        let mut out = out;
        writeln!(out, "{text}")
            .and_then(|_| out.flush())
            .map_err(|e| Failure::write("stdout", e))
    }
}

/// The query's session: on the `--cluster`'s scheduler, inside `--memory-limit` (spilling)
/// if given, unbounded otherwise.
fn session(a: &Args, rt: &tokio::runtime::Runtime) -> CliResult<SessionContext> {
    #[cfg(feature = "ballista")]
    if let Some(url) = &a.cluster {
        let config = npy_datafusion::ballista::session_config();
        return rt
            .block_on(npy_datafusion::ballista::remote(url, config))
            .map_err(|e| Failure::input(format!("--cluster {url}: {}", flat(&e))));
    }
    #[cfg(not(feature = "ballista"))]
    let _ = rt;
    let Some(text) = &a.memory_limit else {
        return Ok(SessionContext::new());
    };
    let limit: MemoryLimit = text
        .parse()
        .map_err(|e| Failure::usage(format!("--memory-limit: {e}")))?;
    memory_limited_context(SessionConfig::new(), limit).map_err(query_failure)
}

/// `-t NAME=SPEC`: the table's name and spec.
fn table_arg(t: &str) -> CliResult<(String, String)> {
    let Some((name, spec)) = t.split_once('=') else {
        return Err(Failure::usage(format!("-t {t}: use -t NAME=SPEC")));
    };
    Ok((name.to_string(), spec.to_string()))
}

/// A file's table name: its stem (`data/w2.npy` is `w2`; `a.npz:x` is `x`).
fn stem(file: &str) -> CliResult<String> {
    let spec = resolve(file, None)?;
    let name = match &spec.member {
        Some(key) => key.clone(),
        None => spec
            .path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string(),
    };
    if name.is_empty() {
        return Err(Failure::usage(format!(
            "{file}: no table name in it: name it with -t NAME={file}"
        )));
    }
    Ok(name)
}

/// The table of a SPEC (a FILE, or the SPEC of `-t NAME=SPEC`: the grammar of [`TableSpec`]),
/// read over the tool's `defaults`, at the location DataFusion lists. Directories, globs and
/// URLs are passed as they are; a local file as an absolute path (`ListingTableUrl` would read
/// `x:` as a URL scheme). A bare spec naming no file is looked up as `ARCHIVE:KEY` whatever the
/// archive's name, as every command of the tool does.
fn table_spec(text: &str, defaults: &NpyReadOptions) -> CliResult<TableSpec> {
    let spec = TableSpec::parse_with(text, defaults.clone())
        .map_err(|e| Failure::usage(format!("{text}: {e}")))?;
    let location = spec.location().to_string();
    if location.contains("://")
        || Path::new(&location).is_dir()
        || location.contains(['*', '?', '['])
    {
        return Ok(spec);
    }
    let (path, member) = if location == text {
        let resolved = resolve(&location, None)?;
        (resolved.path, resolved.member)
    } else if Path::new(&location).exists() {
        // Split by the spec (`A.npz:KEY`) or named in `FORMAT(...)`: the file as it is.
        (location.into(), None)
    } else {
        return Err(Failure::file(&location, "no such file or directory"));
    };
    let absolute = std::path::absolute(&path)
        .map_err(|e| Failure::file(text, e))?
        .display()
        .to_string();
    match member {
        Some(key) => TableSpec::new(
            absolute,
            TableFormat::Npz,
            spec.options().clone().npz_member(key),
        )
        .map_err(|e| Failure::usage(format!("{text}: {e}"))),
        None => Ok(spec.with_location(absolute)),
    }
}

/// A failed query: DataFusion's message, which names the file and carries this crate's
/// error (with its record, field and byte) when a file was bad.
fn query_failure(e: DataFusionError) -> Failure {
    Failure::input(flat(&e))
}

/// DataFusion's message on one line: `file F: what went wrong`.
fn flat(e: &DataFusionError) -> String {
    e.to_string()
        .replace("\ncaused by\n", ": ")
        .replace("External error: ", "")
}

fn arrow_failure(e: ArrowError) -> Failure {
    match e {
        ArrowError::ExternalError(inner) => match inner.downcast::<DataFusionError>() {
            Ok(df) => query_failure(*df),
            Err(other) => Failure::input(other.to_string()),
        },
        other => Failure::input(other.to_string()),
    }
}

fn write_failure(e: ArrowError) -> Failure {
    match e {
        ArrowError::IoError(_, io) => Failure::write("stdout", io),
        other => Failure::input(format!("cannot write the result: {other}")),
    }
}

/// The query's batches, one at a time, on the calling thread.
struct Blocking<'a> {
    rt: &'a Runtime,
    stream: SendableRecordBatchStream,
}

impl Iterator for Blocking<'_> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rt
            .block_on(self.stream.next())
            .map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
    }
}

impl RecordBatchReader for Blocking<'_> {
    fn schema(&self) -> SchemaRef {
        self.stream.schema()
    }
}
