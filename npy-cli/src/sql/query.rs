//! `npy sql QUERY FILE...`: SQL over `.npy` files with DataFusion (feature `datafusion`), and
//! over Parquet (feature `parquet` too), Arrow IPC and CSV files beside them. Each FILE is a
//! table named by its stem; `-t NAME=SPEC` names a file, a directory of shards, a glob or an
//! archive member (`ARCHIVE:KEY`), with its format and options
//! (`npy_datafusion::TableSpec`). Results go to stdout as an aligned table, CSV
//! or JSON, or to a `.npy`, `.parquet` or `.arrow` file, streamed. With no statements on a
//! terminal, the session is interactive ([`shell`](super::shell)).

use std::io::{self, IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

use datafusion::arrow::array::{RecordBatch, RecordBatchReader};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;
use futures::StreamExt;
use npy_datafusion::{
    memory_limited_context, register_npy_format, with_topk_prefilter, MemoryLimit, NpyReadOptions,
    NpySessionExt, TableFormat, TableSpec,
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

/// How results print on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    /// An aligned table.
    Table,
    /// A header row, then one line per row.
    Csv,
    /// An array of objects, one per row.
    Json,
}

impl Format {
    pub(super) fn of(a: &Args) -> Format {
        match (a.csv, a.json) {
            (true, _) => Format::Csv,
            (_, true) => Format::Json,
            _ => Format::Table,
        }
    }

    /// `table`, `csv` or `json`.
    pub(super) fn parse(text: &str) -> Option<Format> {
        match text.to_ascii_lowercase().as_str() {
            "table" => Some(Format::Table),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Csv => "csv",
            Format::Json => "json",
        }
    }
}

/// The query runtime and the session, its tables registered.
pub(super) struct Opened {
    pub(super) rt: Runtime,
    pub(super) ctx: SessionContext,
    pub(super) interrupts: Interrupts,
}

/// Ctrl-C, counted by one listener for the whole run, so that a Ctrl-C between two batches
/// (while one prints) stops the query too. A query stopped this way is dropped, which on a
/// cluster cancels its job (see [`finish`]).
#[derive(Clone)]
pub(super) struct Interrupts(tokio::sync::watch::Receiver<u64>);

impl Interrupts {
    /// Starts listening: from now on Ctrl-C no longer ends the process, it stops the query
    /// that runs (the command ends with status 130 unless it is the interactive session).
    pub(super) fn listen(rt: &Runtime) -> Interrupts {
        let (tx, rx) = tokio::sync::watch::channel(0u64);
        rt.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                tx.send_modify(|n| *n += 1);
            }
        });
        Interrupts(rx)
    }

    /// The count so far; what a statement starts from.
    pub(super) fn count(&self) -> u64 {
        *self.0.borrow()
    }

    /// Resolves at the next Ctrl-C (one counted since `self` last saw the count); never, if
    /// the listener could not be installed.
    async fn next(&mut self) {
        if self.0.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// A stopped query's failure: status 130, as a shell gives a command ended by Ctrl-C.
pub(super) fn stopped() -> Failure {
    Failure {
        code: 130,
        msg: "the query was stopped (Ctrl-C)".into(),
    }
}

/// Before the command exits: a query on a cluster that was stopped has its job's cancellation
/// sent to the scheduler on a thread that the exit would cut off; wait for it (a few seconds
/// at most).
pub(super) fn finish() {
    #[cfg(feature = "ballista")]
    npy_datafusion::ballista::wait_for_cancellations(std::time::Duration::from_secs(6));
}

/// Starts the runtime and the session with the tables of `a` registered; returns them with
/// the statements to run (none: an interactive session, see [`statements_and_files`]).
pub(super) fn open(g: &Global, a: &Args) -> CliResult<(Opened, Option<String>)> {
    let (text, files) = statements_and_files(a)?;
    if text.is_none() && a.output.is_some() {
        return Err(Failure::usage(
            "sql: -o writes the result of statements given as QUERY or with -f FILE",
        ));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::input(format!("cannot start the query runtime: {e}")))?;
    let ctx = session(a, &rt)?;
    register_npy_format(&ctx).map_err(query_failure)?;
    let options = NpyReadOptions::new().reader_options(g.reader_options());
    // FILEs take --allow-pickle-data; -t specs their own allow_pickle_data=true.
    let mut file_options = options.clone();
    if a.allow_pickle_data {
        file_options = file_options
            .set("allow_pickle_data", "true")
            .map_err(query_failure)?;
    }
    let mut named: Vec<(String, String, &NpyReadOptions)> = Vec::new();
    for file in &files {
        named.push((stem(file)?, file.clone(), &file_options));
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
    // From here on Ctrl-C stops the query rather than the process (until here, the process).
    let interrupts = Interrupts::listen(&rt);
    Ok((
        Opened {
            rt,
            ctx,
            interrupts,
        },
        text,
    ))
}

/// Runs the statements of `text` and prints or writes their results.
pub(super) fn run(opened: &Opened, a: &Args, text: &str) -> CliResult {
    let (rt, ctx) = (&opened.rt, &opened.ctx);
    let statements = parse(ctx, text)?;
    let count = statements.len();
    // In order: a view or table one statement creates is there for the next. A statement whose
    // result has no columns (CREATE VIEW, DROP VIEW, SET) prints nothing.
    let mut written = None;
    let mut printed = false;
    let run_start = opened.interrupts.count();
    for (i, statement) in statements.into_iter().enumerate() {
        let numbered = |f: Failure| match count {
            1 => f,
            _ => Failure {
                msg: format!("statement {} of {count}: {}", i + 1, f.msg),
                ..f
            },
        };
        // A failure after a Ctrl-C is the stop's; a Ctrl-C while a result printed stops the
        // statements after it.
        let interrupted = || opened.interrupts.count() > run_start;
        let failed = |f: Failure| numbered(if interrupted() { stopped() } else { f });
        if interrupted() {
            return Err(failed(stopped()));
        }
        let started = Instant::now();
        let mut batches = execute(ctx, rt, statement, &opened.interrupts).map_err(failed)?;
        if batches.schema().fields().is_empty() {
            for b in &mut batches {
                b.map_err(|e| failed(arrow_failure(e)))?;
            }
            if a.timing {
                eprintln!("done in {:.3} s", started.elapsed().as_secs_f64());
            }
            continue;
        }
        let rows = if let Some(out) = &a.output {
            if let Some(first) = written {
                return Err(Failure::usage(format!(
                    "-o {out} takes the result of one statement: statements {first} and {} \
                     both return rows",
                    i + 1
                )));
            }
            written = Some(i + 1);
            write_output(&mut batches, a, out).map_err(failed)?;
            batches.rows
        } else {
            let rows = print(batches, Format::of(a), printed).map_err(failed)?;
            printed = true;
            rows
        };
        if a.timing {
            eprintln!(
                "{rows} row{} in {:.3} s",
                if rows == 1 { "" } else { "s" },
                started.elapsed().as_secs_f64()
            );
        }
    }
    match (&a.output, written) {
        (Some(out), None) => Err(Failure::usage(format!(
            "-o {out}: no statement returns rows to write"
        ))),
        _ => Ok(()),
    }
}

/// Plans and starts one statement; its batches come on the calling thread. A Ctrl-C (one of
/// `interrupts` after this call) stops the query, while it is planned or runs: the batches end
/// with an error saying so, and the query is dropped.
pub(super) fn execute<'a>(
    ctx: &SessionContext,
    rt: &'a Runtime,
    statement: Statement,
    interrupts: &Interrupts,
) -> CliResult<Blocking<'a>> {
    let state = ctx.state();
    let mut interrupts = interrupts.clone();
    interrupts.0.mark_unchanged();
    let stream = rt
        .block_on(async {
            let start = async {
                let plan = state.statement_to_plan(statement).await?;
                ctx.execute_logical_plan(plan).await?.execute_stream().await
            };
            tokio::select! {
                stream = start => Some(stream),
                () = interrupts.next() => None,
            }
        })
        .ok_or_else(stopped)?
        .map_err(query_failure)?;
    Ok(Blocking {
        rt,
        stream,
        interrupts,
        rows: 0,
    })
}

/// The statements' text (the QUERY argument; with `-f FILE`, that file's, every positional
/// argument then a FILE; `-` reads standard input) and the FILEs. No text: none was given and
/// standard input is a terminal (an interactive session); none given and standard input is
/// not a terminal: the statements are read from it.
fn statements_and_files(a: &Args) -> CliResult<(Option<String>, Vec<String>)> {
    let mut files = a.files.clone();
    let source = match (&a.file, &a.query) {
        (Some(f), query) => {
            if let Some(q) = query {
                files.insert(0, q.clone());
            }
            f.clone()
        }
        (None, Some(q)) if q != "-" => return Ok((Some(q.clone()), files)),
        (None, Some(_)) => "-".to_string(),
        (None, None) if io::stdin().is_terminal() => return Ok((None, files)),
        (None, None) => "-".to_string(),
    };
    let text = if source == "-" {
        io::read_to_string(io::stdin()).map_err(|e| Failure::input(format!("stdin: {e}")))?
    } else {
        std::fs::read_to_string(&source).map_err(|e| Failure::file(&source, e))?
    };
    Ok((Some(text), files))
}

/// The statements of `text` (`;`-separated), parsed as the session's `ctx.sql` parses one: its
/// dialect and recursion limit.
pub(super) fn parse(ctx: &SessionContext, text: &str) -> CliResult<Vec<Statement>> {
    let state = ctx.state();
    let config = state.config().options();
    let dialect = dialect_from_str(config.sql_parser.dialect).ok_or_else(|| {
        Failure::usage(format!(
            "unsupported SQL dialect {}",
            config.sql_parser.dialect
        ))
    })?;
    let statements = DFParserBuilder::new(text)
        .with_dialect(dialect.as_ref())
        .with_recursion_limit(config.sql_parser.recursion_limit.get())
        .build()
        .and_then(|mut p| p.parse_statements())
        .map_err(query_failure)?;
    if statements.is_empty() {
        return Err(Failure::usage("sql: no SQL statement in the query"));
    }
    Ok(statements.into())
}

/// Writes one statement's result to `-o OUT`, streamed.
fn write_output(batches: &mut Blocking<'_>, a: &Args, out: &str) -> CliResult {
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
        sorted_by: None,
    };
    write_chosen(batches, &o, &a.choice)
}

/// Prints one statement's result on stdout: an aligned table, CSV (a header, then the rows) or
/// a JSON array; returns its rows. A result after the first is set off by an empty line (CSV,
/// tables); JSON prints one array per result.
pub(super) fn print(
    mut batches: Blocking<'_>,
    format: Format,
    after_another: bool,
) -> CliResult<usize> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    if after_another && format != Format::Json {
        writeln!(out).map_err(|e| Failure::write("stdout", e))?;
    }
    let mut rows = 0;
    match format {
        Format::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(out);
            for b in &mut batches {
                let b = b.map_err(arrow_failure)?;
                rows += b.num_rows();
                w.write(&b).map_err(write_failure)?;
            }
            w.into_inner()
                .flush()
                .map_err(|e| Failure::write("stdout", e))?;
        }
        Format::Json => {
            // The tool's JSON conventions (those of `cat --json`), not arrow-json's.
            let mut first = true;
            let w = |e| Failure::write("stdout", e);
            out.write_all(b"[").map_err(w)?;
            for b in &mut batches {
                let b = b.map_err(arrow_failure)?;
                rows += b.num_rows();
                write_rows(&mut out, &b, &mut first).map_err(w)?;
            }
            out.write_all(if first { b"]\n" } else { b"\n]\n" })
                .and_then(|_| out.flush())
                .map_err(w)?;
        }
        Format::Table => {
            let all: Vec<RecordBatch> = batches
                .by_ref()
                .collect::<Result<_, _>>()
                .map_err(arrow_failure)?;
            rows = all.iter().map(RecordBatch::num_rows).sum();
            let text = datafusion::arrow::util::pretty::pretty_format_batches(&all)
                .map_err(arrow_failure)?;
            writeln!(out, "{text}")
                .and_then(|_| out.flush())
                .map_err(|e| Failure::write("stdout", e))?;
        }
    }
    Ok(rows)
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
    // In one process, the sorts with a fetch get the TopK prefilter (`TopKPrefilterExec`).
    let ctx = match &a.memory_limit {
        None => SessionContext::new(),
        Some(text) => {
            let limit: MemoryLimit = text
                .parse()
                .map_err(|e| Failure::usage(format!("--memory-limit: {e}")))?;
            memory_limited_context(SessionConfig::new(), limit).map_err(query_failure)?
        }
    };
    Ok(SessionContext::new_with_state(with_topk_prefilter(
        ctx.state(),
    )))
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

pub(super) fn arrow_failure(e: ArrowError) -> Failure {
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
pub(super) struct Blocking<'a> {
    rt: &'a Runtime,
    stream: SendableRecordBatchStream,
    /// Ctrl-C stops the query: the next batch is an error saying so, and none follows.
    interrupts: Interrupts,
    /// The rows of the batches returned so far.
    rows: usize,
}

impl Iterator for Blocking<'_> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (stream, interrupts) = (&mut self.stream, &mut self.interrupts);
        let next = self.rt.block_on(async {
            tokio::select! {
                b = stream.next() => Some(b),
                () = interrupts.next() => None,
            }
        });
        match next {
            Some(b) => b.map(|r| {
                let b = r.map_err(|e| ArrowError::ExternalError(Box::new(e)))?;
                self.rows += b.num_rows();
                Ok(b)
            }),
            None => {
                // Dropped on the runtime (its operators may spawn on it as they stop); on a
                // cluster, the drop cancels the job.
                let _inside = self.rt.enter();
                self.stream = Box::pin(
                    datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                        self.stream.schema(),
                        futures::stream::empty(),
                    ),
                );
                Some(Err(ArrowError::ExternalError(stopped().msg.into())))
            }
        }
    }
}

impl RecordBatchReader for Blocking<'_> {
    fn schema(&self) -> SchemaRef {
        self.stream.schema()
    }
}

/// `-o` writes through a borrow, so that the rows written can be counted after.
impl RecordBatchReader for &mut Blocking<'_> {
    fn schema(&self) -> SchemaRef {
        self.stream.schema()
    }
}
