//! `npy cat`: print the values of a file, an archive, or one member, as text, JSON or CSV.

use std::io::{self, BufWriter, Write};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::objects;
use crate::input::spec::resolve;
use crate::print::arrays::Style;
use crate::print::printable::Range;
use crate::print::write::write_input;

// `npy cat`'s arguments. No doc comment here: clap would take it for the command's
// help, which is the doc comment of `Command::Cat` in cli.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .npy/.npz file (or ARCHIVE:KEY).
    file: String,
    /// Only this member of an .npz archive (default: every member).
    #[arg(long, value_name = "KEY")]
    member: Option<String>,
    /// Print JSON (see the conventions in --help).
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV, for 0-d, 1-D and 2-D arrays (records flattened into columns).
    #[arg(long)]
    csv: bool,
    /// With --csv: leave out the header row.
    #[arg(long, requires = "csv")]
    no_header: bool,
    /// Only the first N elements along the first axis.
    #[arg(long, value_name = "N", conflicts_with = "tail")]
    head: Option<u64>,
    /// Only the last N elements along the first axis.
    #[arg(long, value_name = "N")]
    tail: Option<u64>,
    /// Read an object array (dtype O, NumPy 2 StringDType), a .npy file or an .npz member, by
    /// interpreting its pickle as data: nothing is imported or run (unlike NumPy's
    /// allow_pickle=True). Prints one element per line as JSON, in C order.
    #[arg(long, conflicts_with = "csv")]
    allow_pickle_data: bool,
}

/// `npy cat`.
pub fn run(g: &Global, a: Args) -> CliResult {
    let style = if a.json {
        Style::Json
    } else if a.csv {
        Style::Csv {
            header: !a.no_header,
        }
    } else {
        Style::Text
    };
    let range = match (a.head, a.tail) {
        (Some(n), _) => Range::Head(n),
        (_, Some(n)) => Range::Tail(n),
        _ => Range::All,
    };
    let spec = resolve(&a.file, a.member.as_deref())?;
    let stdout = io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 16, stdout);
    // Not an object array: printed as any other.
    let array = match a.allow_pickle_data {
        true => objects::read(g, &spec)?,
        false => None,
    };
    if let Some(array) = array {
        let n = array.values.len();
        let (from, to) = match range {
            Range::Head(k) => (0, n.min(k as usize)),
            Range::Tail(k) => (n.saturating_sub(k as usize), n),
            Range::All => (0, n),
        };
        for v in &array.values[from..to] {
            let line = serde_json::to_string(v).map_err(|e| Failure::file(&spec.display, e))?;
            writeln!(out, "{line}").map_err(|e| Failure::write("standard output", e))?;
        }
        return out
            .flush()
            .map_err(|e| Failure::write("standard output", e));
    }
    write_input(g, &spec, style, range, &mut out, "standard output", false)?;
    out.flush()
        .map_err(|e| Failure::write("standard output", e))
}
