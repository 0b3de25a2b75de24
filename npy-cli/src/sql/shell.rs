//! `npy sql` with no statements, on a terminal: an interactive session over the tables given
//! with `-t` and as FILEs, as datafusion-cli's and the duckdb shell's.
//!
//! - Line editing and history (rustyline; the history is kept in `~/.npy_sql_history`, or
//!   the file `NPY_SQL_HISTORY` names, empty for none).
//! - A statement may span lines: it runs when a line ends it with `;` (outside quotes and
//!   comments); several on one line run in order.
//! - Backslash commands, at the start of a statement: `\d` lists the tables, `\d NAME`
//!   shows one's columns, `\timing [on|off]`, `\format [table|csv|json]`, `\?` the help,
//!   `\q` (or `quit`, `exit`, Ctrl-D) leaves.
//! - Ctrl-C drops the statement being typed, or stops the query that runs; a failed
//!   statement prints its error and the session goes on.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use datafusion::arrow::array::{RecordBatch, RecordBatchReader, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::SessionContext;
use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;
use tokio::runtime::Runtime;

use super::query::{execute, parse, print, Format, Interrupts};
use crate::failure::{CliResult, Failure};

/// The help of `\?`.
const HELP: &str = "\
Statements end with ; and may span lines. Commands:
  \\d            list the tables
  \\d NAME       show a table's columns
  \\timing [on|off]            print each statement's rows and time (on at start)
  \\format [table|csv|json]    how results print
  \\?            this help
  \\q            leave (also quit, exit, Ctrl-D)
Ctrl-C drops the statement being typed, or stops the query that runs.";

/// What a line of commands asks.
enum Next {
    Go,
    Quit,
}

/// The session's settings.
struct Shell<'a> {
    ctx: &'a SessionContext,
    rt: &'a Runtime,
    interrupts: &'a Interrupts,
    format: Format,
    timing: bool,
}

/// Runs the session on the terminal until `\q` or the end of input.
pub(super) fn run(
    ctx: &SessionContext,
    rt: &Runtime,
    interrupts: &Interrupts,
    format: Format,
) -> CliResult {
    let mut editor =
        DefaultEditor::new().map_err(|e| Failure::input(format!("the terminal: {e}")))?;
    let history = history_file();
    if let Some(h) = &history {
        // A first session has no history yet.
        let _ = editor.load_history(h);
    }
    let mut shell = Shell {
        ctx,
        rt,
        interrupts,
        format,
        timing: true,
    };
    let tables = shell.table_names();
    println!(
        "npy sql: {} table{}{}. End statements with ; (\\? for help, \\q to leave).",
        tables.len(),
        if tables.len() == 1 { "" } else { "s" },
        if tables.is_empty() {
            String::new()
        } else {
            format!(": {}", tables.join(", "))
        }
    );
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() { "npy> " } else { "  -> " };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Failure::input(format!("the terminal: {e}"))),
        };
        if buffer.is_empty() {
            let command = line.trim();
            if command.starts_with('\\') || ["quit", "exit"].contains(&command) {
                let _ = editor.add_history_entry(command);
                match shell.command(command) {
                    Next::Go => continue,
                    Next::Quit => break,
                }
            }
            if command.is_empty() {
                continue;
            }
        }
        buffer.push_str(&line);
        buffer.push('\n');
        if !ends_statement(&buffer) {
            continue;
        }
        let text = std::mem::take(&mut buffer);
        let _ = editor.add_history_entry(text.trim_end());
        if let Err(f) = shell.statements(&text) {
            eprintln!("Error: {}", f.msg);
        }
    }
    if let Some(h) = &history {
        if let Err(e) = editor.save_history(h) {
            eprintln!("npy sql: history not saved to {}: {e}", h.display());
        }
    }
    Ok(())
}

/// `NPY_SQL_HISTORY` (empty: no history), else `~/.npy_sql_history`.
fn history_file() -> Option<PathBuf> {
    match std::env::var_os("NPY_SQL_HISTORY") {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(PathBuf::from(p)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".npy_sql_history")),
    }
}

/// Whether `text` ends a statement: its last character outside string literals, quoted
/// identifiers and comments is `;`.
fn ends_statement(text: &str) -> bool {
    let mut last = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                // A quote ends at the same quote; a doubled one is an escaped quote inside,
                // which this reads as an end and a new start.
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == c {
                        closed = true;
                        break;
                    }
                }
                if !closed {
                    return false;
                }
                last = Some(c);
            }
            '-' if chars.peek() == Some(&'-') => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut star = false;
                let mut closed = false;
                for d in chars.by_ref() {
                    if star && d == '/' {
                        closed = true;
                        break;
                    }
                    star = d == '*';
                }
                if !closed {
                    return false;
                }
            }
            c if c.is_whitespace() => {}
            c => last = Some(c),
        }
    }
    last == Some(';')
}

impl Shell<'_> {
    /// Runs the statements of `text` in order, each result printed; the first failure stops
    /// them.
    fn statements(&self, text: &str) -> CliResult {
        for statement in parse(self.ctx, text)? {
            let started = Instant::now();
            let batches = execute(self.ctx, self.rt, statement, self.interrupts)?;
            let shown = !batches.schema().fields().is_empty();
            let rows = if shown {
                print(batches, self.format, false)?
            } else {
                let mut n = 0;
                for b in batches {
                    n += b.map_err(super::query::arrow_failure)?.num_rows();
                }
                n
            };
            if self.timing {
                let s = started.elapsed().as_secs_f64();
                if shown {
                    println!("{rows} row{} in {s:.3} s", if rows == 1 { "" } else { "s" });
                } else {
                    println!("done in {s:.3} s");
                }
            }
        }
        Ok(())
    }

    /// A backslash command (or `quit`, `exit`).
    fn command(&mut self, line: &str) -> Next {
        let mut words = line.split_whitespace();
        let name = words.next().unwrap_or_default();
        let arg = words.next();
        let result = match (name, arg) {
            ("\\q" | "quit" | "exit", _) => return Next::Quit,
            ("\\?" | "\\h" | "\\help", _) => {
                println!("{HELP}");
                Ok(())
            }
            ("\\d", None) => self.list_tables(),
            ("\\d", Some(table)) => self.describe(table),
            ("\\timing", arg) => match arg.map(str::to_ascii_lowercase).as_deref() {
                None => {
                    self.timing = !self.timing;
                    Ok(())
                }
                Some("on") => {
                    self.timing = true;
                    Ok(())
                }
                Some("off") => {
                    self.timing = false;
                    Ok(())
                }
                Some(other) => Err(Failure::usage(format!(
                    "\\timing {other}: say \\timing on or \\timing off"
                ))),
            }
            .map(|()| println!("timing is {}", if self.timing { "on" } else { "off" })),
            ("\\format", None) => {
                println!("format is {}", self.format.name());
                Ok(())
            }
            ("\\format", Some(f)) => match Format::parse(f) {
                Some(f) => {
                    self.format = f;
                    println!("format is {}", f.name());
                    Ok(())
                }
                None => Err(Failure::usage(format!(
                    "\\format {f}: the formats are table, csv and json"
                ))),
            },
            (other, _) => Err(Failure::usage(format!(
                "unknown command {other}: \\? lists the commands"
            ))),
        };
        if let Err(f) = result {
            eprintln!("Error: {}", f.msg);
        }
        Next::Go
    }

    /// The tables of the session's default schema, sorted.
    fn table_names(&self) -> Vec<String> {
        let mut names = self
            .ctx
            .catalog("datafusion")
            .and_then(|c| c.schema("public"))
            .map(|s| s.table_names())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// `\d`: each table with its number of columns.
    fn list_tables(&self) -> CliResult {
        let mut names = Vec::new();
        let mut columns = Vec::new();
        for name in self.table_names() {
            let n = self.schema_of(&name)?.fields().len();
            columns.push(n.to_string());
            names.push(name);
        }
        show(&[("table", names), ("columns", columns)])
    }

    /// `\d NAME`: the table's columns, their types and whether they may be null.
    fn describe(&self, table: &str) -> CliResult {
        let schema = self.schema_of(table)?;
        let f = schema.fields();
        show(&[
            ("column", f.iter().map(|f| f.name().clone()).collect()),
            (
                "type",
                f.iter().map(|f| f.data_type().to_string()).collect(),
            ),
            (
                "nullable",
                f.iter()
                    .map(|f| if f.is_nullable() { "yes" } else { "no" }.to_string())
                    .collect(),
            ),
        ])
    }

    fn schema_of(&self, table: &str) -> CliResult<datafusion::arrow::datatypes::SchemaRef> {
        let provider = self
            .rt
            .block_on(self.ctx.table_provider(table))
            .map_err(|_| Failure::usage(format!("no table {table}: \\d lists the tables")))?;
        Ok(provider.schema())
    }
}

/// Prints columns of text as an aligned table.
fn show(columns: &[(&str, Vec<String>)]) -> CliResult {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, _)| Field::new(*name, DataType::Utf8, false))
        .collect();
    let arrays = columns
        .iter()
        .map(|(_, v)| std::sync::Arc::new(StringArray::from(v.clone())) as _)
        .collect();
    let batch = RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), arrays)
        .map_err(super::query::arrow_failure)?;
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&[batch])
        .map_err(super::query::arrow_failure)?;
    let mut out = io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|_| out.flush())
        .map_err(|e| Failure::write("stdout", e))
}

#[cfg(test)]
mod tests {
    use super::ends_statement;

    #[test]
    fn a_statement_ends_at_a_semicolon_outside_quotes_and_comments() {
        assert!(ends_statement("SELECT 1;"));
        assert!(ends_statement("SELECT 1;  \n"));
        assert!(ends_statement("SELECT 1; -- done\n"));
        assert!(ends_statement("SELECT 1; /* done */"));
        assert!(ends_statement("SELECT 'a;b', \"c;\" FROM t;"));
        assert!(ends_statement("SELECT 'it''s';"));
        assert!(!ends_statement("SELECT 1"));
        assert!(!ends_statement("SELECT 'a;"));
        assert!(!ends_statement("SELECT 1 -- ;\n"));
        assert!(!ends_statement("SELECT 1 /* ; */"));
        assert!(!ends_statement("SELECT 1 /* ;"));
        assert!(!ends_statement(""));
    }
}
