//! `npy cat`: print the values of a file, an archive, or one member, as text, JSON or CSV.

use std::io::{self, BufWriter, Write};

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::spec::resolve;
use crate::print::arrays::Style;
use crate::print::printable::Range;
use crate::print::write::{write_input, Request};

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
    /// Read object arrays (dtype O, NumPy 2 StringDType: a .npy file, an .npz member, or
    /// the object members of an archive) by interpreting their pickles as data: nothing is
    /// imported or run (unlike NumPy's allow_pickle=True). They print as typed arrays do:
    /// one element per line as Python's repr, --json nested like tolist(), --csv for 0-d
    /// and 1-D arrays.
    #[arg(long)]
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
    let req = Request {
        style,
        range,
        allow_pickle_data: a.allow_pickle_data,
        progress: false,
    };
    write_input(g, &spec, req, &mut out, "standard output")?;
    out.flush()
        .map_err(|e| Failure::write("standard output", e))
}
