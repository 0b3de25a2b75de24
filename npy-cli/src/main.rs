//! `npy`: inspect, print, convert and validate NumPy `.npy` / `.npz` files.
//!
//! Install with `cargo install --path npy-cli`. See `npy --help` for the
//! commands and the JSON conventions.

mod archive_out;
mod check;
mod convert;
mod info;
mod input;
mod lenient;
mod literal;
mod object;
mod output;
#[cfg(feature = "datafusion")]
mod sql;
#[cfg(feature = "datafusion")]
mod sql_json;
#[cfg(feature = "arrow")]
mod tables;

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use npy_serde::header::DEFAULT_MAX_HEADER_SIZE;

const LONG_ABOUT: &str = "\
Inspect, print, convert and validate NumPy .npy and .npz files.

A FILE is a .npy file, a .npz archive, or one member of an archive written ARCHIVE:KEY \
(e.g. data.npz:x for the member x.npy). Archives are recognised by their content, not their \
name.

Exit status: 0 on success, 1 if an input is bad (unreadable, malformed, truncated, invalid \
values) or the operation is impossible for it, 2 for usage errors. Error messages go to stderr \
and name the file.";

const AFTER_LONG_HELP: &str = "\
JSON CONVENTIONS (stable)

info --json, for a .npy file (or one archive member):
  {\"version\": [1, 0], \"descr\": D, \"shape\": [..], \"fortran_order\": false,
   \"data_offset\": 128, \"itemsize\": 8, \"count\": 3}
  D is the header's descr as written, tuples as lists: a string for a plain dtype
  (\"<f8\"); for records a list of [name, descr] or [name, descr, shape] entries, titled
  fields as [[title, name], descr], padding entries as in the header ([\"\", \"|V4\"]).
info --json, for a .npz archive:
  {\"members\": [{\"name\": \"x.npy\", \"key\": \"x\", \"compression\": \"stored\"|\"deflate\",
   \"compressed_size\": n, \"size\": n, \"array\": <the info object above, or null>,
   \"in_place\": {\"data_offset\": n, \"alignment\": a} or null}]}
  (in_place: the member can be memory-mapped in place, a stored .npy member of an archive
  that passes the mapped archive's checks; its data starts at byte data_offset of the
  archive, a multiple of alignment (1 to 64): a typed view needs the type's alignment)
  (array is null for members that are not .npy files, their bytes verified; compression
  names other zip methods as e.g. \"bzip2 (method 12)\"). A member that cannot be read
  (unsupported compression, encryption) has \"error\": \"why\" instead of an array, and the
  exit status is 1; a corrupt member (CRC, inflate error, wrong size) is an error on stderr.

cat --json (and convert to .json):
  nested lists in logical C order, like ndarray.tolist(); a bare value for a 0-d array.
  records: objects with the fields in dtype order, padding omitted
  bool: true/false          integers: exact (full int64/uint64 range)
  floats: the shortest text that round-trips the float64 value (float16, float32 and
          longdouble are converted to float64 first); NaN and infinities as the strings
          \"nan\", \"inf\", \"-inf\"
  complex: [re, im]         S: latin-1 decoded string, trailing NULs stripped
  U: string, trailing NULs stripped        V: lowercase hex
  datetime64/timedelta64: the raw int64 count of the dtype's unit; NaT as \"NaT\"
  .npz: an object {key: value} for every .npy member, in archive order.
sql --json: an array of objects, one per result row, values as above; a NULL is null, or
  \"NaT\" in a datetime/duration column; complex columns (structs of real and imag) as
  [re, im]; decimals as numbers; other types without a NumPy counterpart as their text.

cat --csv: one row per element along the first axis (a 0-d array is one row); a header row of
  column paths: record fields as pos.x, subarray items as v[0], columns of a 2-D array as [j]
  (a 1-D plain array has the single column `value`). Values as in JSON, without quotes unless
  needed; complex as re+imj.

convert IN OUT: without options, for any file numpy.save wrote, OUT is byte-identical to IN
  (the header is rewritten exactly as numpy.save writes it).
convert IN OUT.npz [--align]: an archive of IN's members (or of IN.npy, as member IN.npy),
  copied with their compression; --align puts each stored member's data at a multiple of 64.
convert TABLE OUT.npz[:KEY]: a .parquet or .arrow table as the .npy member KEY of a new
  archive (default: TABLE's file stem), streamed through a temporary file.

check FILE...: one line `FILE: message` on stdout per bad file, nothing for good files
  (`FILE: ok` with -v); exit status 1 if any file is bad.";

#[derive(Parser, Debug)]
#[command(
    name = "npy",
    version,
    about = "Inspect, print, convert and validate NumPy .npy/.npz files",
    long_about = LONG_ABOUT,
    after_long_help = AFTER_LONG_HELP
)]
struct Cli {
    /// Largest accepted .npy header in bytes (NumPy's max_header_size); raise it only for
    /// files you trust.
    #[arg(
        long,
        global = true,
        value_name = "BYTES",
        default_value_t = DEFAULT_MAX_HEADER_SIZE
    )]
    max_header_size: u64,

    /// Most values without data bytes that cat and convert print (elements of zero-size
    /// dtypes such as |V0, and the lists above a zero-length axis: a (10**18, 0) array has
    /// 10**18 of them, though it has no data).
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = input::MAX_EMPTY_ITEMS
    )]
    max_empty_items: u64,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show the header: version, dtype (as a tree with offsets), shape, order, sizes; for an
    /// .npz archive every member with its compression and sizes.
    Info {
        /// The .npy/.npz file (or ARCHIVE:KEY).
        file: String,
        /// Only this member of an .npz archive.
        #[arg(long, value_name = "KEY")]
        member: Option<String>,
        /// Print JSON (see the conventions in --help).
        #[arg(long, conflicts_with = "arrow")]
        json: bool,
        /// Print the Arrow schema the array maps to (as `npy convert` to .parquet / .arrow
        /// writes it; needs the `arrow` feature).
        #[arg(long)]
        arrow: bool,
    },
    /// Print the values (plain text by default: one element per line for 1-D arrays).
    Cat {
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
    },
    /// Re-encode a .npy file (byte order, memory order, format version), extract an archive
    /// member, write JSON / CSV, or convert between .npy and Parquet / Arrow IPC (.parquet,
    /// .arrow, .feather; chosen by the extensions, or --to). Streams the data.
    Convert {
        /// The input .npy file, .npz archive (with --member) or ARCHIVE:KEY.
        input: String,
        /// The output file: .npy, .json, .csv, .npz, .parquet or .arrow (or `-` for stdout, with
        /// --to); for a table input, OUT.npz:KEY names the archive member.
        output: String,
        /// The member of an .npz input to convert.
        #[arg(long, value_name = "KEY")]
        member: Option<String>,
        /// Byte order of the output's multi-byte values (default: keep the input's).
        #[arg(long, value_enum)]
        byte_order: Option<ByteOrderArg>,
        /// Memory order of the output's data (default: keep the input's). As numpy.save,
        /// arrays that are both C- and Fortran-contiguous (at most one axis longer than 1)
        /// are written with fortran_order False.
        #[arg(long, value_enum)]
        order: Option<OrderArg>,
        /// Format version of the output header (default: the smallest that holds it, as
        /// numpy.save).
        #[arg(long, value_enum)]
        version: Option<VersionArg>,
        /// Output format (default: from OUT's extension).
        #[arg(long, value_enum)]
        to: Option<Format>,
        /// For .npz output: pad each stored member so its array data starts at a multiple of
        /// 64 bytes in the archive (which NumPy reads as any archive), so that it can be
        /// memory-mapped in place (npy_serde::npz::MmapNpz).
        #[arg(long)]
        align: bool,
        /// Parquet output compression: none, snappy (default), zstd or zstd:LEVEL.
        #[arg(long, value_name = "CODEC")]
        compression: Option<String>,
        /// Parquet output: most rows per row group (default 1048576).
        #[arg(long, value_name = "ROWS")]
        row_group_size: Option<usize>,
        /// .npy output from a table: write nulls as NaN / 0 / False / empty instead of failing
        /// (nulls in datetime columns are NaT either way).
        #[arg(long)]
        fill_nulls: bool,
    },
    /// Run SQL over .npy files (DataFusion; needs the `datafusion` feature). Each FILE is a
    /// table named by its stem (ARCHIVE:KEY by KEY); results print as an aligned table, or as
    /// CSV / JSON, or go to a .npy, .parquet or .arrow file with -o.
    Sql {
        /// The query, e.g. "SELECT flag, count(*) FROM w2 GROUP BY flag".
        query: String,
        /// .npy files (or ARCHIVE:KEY members), each a table named by its stem.
        files: Vec<String>,
        /// A table NAME over PATH: a file, a directory of shards, a glob, or ARCHIVE:KEY.
        #[arg(short = 't', long = "table", value_name = "NAME=PATH")]
        tables: Vec<String>,
        /// Print CSV (a header row, then one line per row).
        #[arg(long, conflicts_with_all = ["json", "output"])]
        csv: bool,
        /// Print JSON: an array of objects, one per row, values as `cat --json` prints them (NULL
        /// as null, or "NaT" in a datetime or duration column).
        #[arg(long, conflicts_with = "output")]
        json: bool,
        /// Write the result to a .npy, .parquet or .arrow file instead, streamed.
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<String>,
        /// Parquet output: none, snappy (default), zstd or zstd:LEVEL.
        #[arg(long, value_name = "CODEC", requires = "output")]
        compression: Option<String>,
        /// Parquet output: rows per row group.
        #[arg(long, value_name = "ROWS", requires = "output")]
        row_group_size: Option<usize>,
    },
    /// Validate files: the header, that the data is complete, and that every value decodes
    /// (bool bytes are 0 or 1, U code points are valid).
    Check {
        /// The files to check.
        #[arg(required = true)]
        files: Vec<String>,
        /// Also print `FILE: ok` for good files.
        #[arg(short, long)]
        verbose: bool,
    },
}

/// `--byte-order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ByteOrderArg {
    Little,
    Big,
    Native,
}

/// `--order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OrderArg {
    #[value(name = "C", alias = "c")]
    C,
    #[value(name = "F", alias = "f")]
    F,
}

/// `--version` of `convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum VersionArg {
    #[value(name = "1.0", alias = "1")]
    V1,
    #[value(name = "2.0", alias = "2")]
    V2,
    #[value(name = "3.0", alias = "3")]
    V3,
}

/// Output formats of `convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Npy,
    Json,
    Csv,
    Npz,
    Parquet,
    Arrow,
}

/// A failure of a command: the message (naming the file) and the exit status.
#[derive(Debug)]
pub struct Failure {
    /// 1 for bad input or an impossible operation, 2 for usage errors.
    pub code: u8,
    /// What went wrong; empty for a quiet exit (stdout closed by the reader).
    pub msg: String,
}

impl Failure {
    /// Bad input (exit status 1).
    pub fn input(msg: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            msg: msg.into(),
        }
    }

    /// A usage error found after argument parsing (exit status 2).
    pub fn usage(msg: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            msg: msg.into(),
        }
    }

    /// An error about `file`.
    pub fn file(file: &str, err: impl fmt::Display) -> Failure {
        Failure::input(format!("{file}: {err}"))
    }

    /// An error writing the output: a closed stdout pipe (`npy cat x.npy | head`) ends the
    /// program quietly and successfully.
    pub fn write(what: &str, err: io::Error) -> Failure {
        if err.kind() == io::ErrorKind::BrokenPipe {
            Failure {
                code: 0,
                msg: String::new(),
            }
        } else {
            Failure::input(format!("cannot write {what}: {err}"))
        }
    }
}

/// The result type of the commands.
pub type CliResult<T = ()> = std::result::Result<T, Failure>;

/// Options shared by every command.
#[derive(Clone, Debug)]
pub struct Global {
    /// `--max-header-size`.
    pub max_header_size: u64,
    /// `--max-empty-items`.
    pub max_empty_items: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let global = Global {
        max_header_size: cli.max_header_size,
        max_empty_items: cli.max_empty_items,
    };
    let result = match cli.command {
        Command::Info {
            file,
            member,
            json,
            arrow,
        } => {
            if arrow {
                info_arrow(&global, &file, member.as_deref())
            } else {
                info::run(&global, &file, member.as_deref(), json)
            }
        }
        Command::Cat {
            file,
            member,
            json,
            csv,
            no_header,
            head,
            tail,
        } => {
            let style = if json {
                output::Style::Json
            } else if csv {
                output::Style::Csv { header: !no_header }
            } else {
                output::Style::Text
            };
            let range = match (head, tail) {
                (Some(n), _) => output::Range::Head(n),
                (_, Some(n)) => output::Range::Tail(n),
                _ => output::Range::All,
            };
            output::cat(&global, &file, member.as_deref(), style, range)
        }
        Command::Convert {
            input,
            output,
            member,
            byte_order,
            order,
            version,
            to,
            align,
            compression,
            row_group_size,
            fill_nulls,
        } => convert::run(
            &global,
            &convert::Options {
                input,
                output,
                member,
                byte_order: byte_order.map(|b| match b {
                    ByteOrderArg::Little => npy_serde::ByteOrder::Little,
                    ByteOrderArg::Big => npy_serde::ByteOrder::Big,
                    ByteOrderArg::Native => npy_serde::ByteOrder::NATIVE,
                }),
                fortran_order: order.map(|o| o == OrderArg::F),
                version: version.map(|v| match v {
                    VersionArg::V1 => npy_serde::Version::V1_0,
                    VersionArg::V2 => npy_serde::Version::V2_0,
                    VersionArg::V3 => npy_serde::Version::V3_0,
                }),
                to: to.map(|f| match f {
                    Format::Npy => convert::Target::Npy,
                    Format::Json => convert::Target::Json,
                    Format::Csv => convert::Target::Csv,
                    Format::Npz => convert::Target::Npz,
                    Format::Parquet => convert::Target::Parquet,
                    Format::Arrow => convert::Target::Arrow,
                }),
                align,
                compression,
                row_group_size,
                fill_nulls,
            },
        ),
        Command::Check { files, verbose } => check::run(&global, &files, verbose),
        Command::Sql {
            query,
            files,
            tables,
            csv,
            json,
            output,
            compression,
            row_group_size,
        } => run_sql(
            &global,
            SqlArgs {
                query,
                files,
                tables,
                csv,
                json,
                output,
                compression,
                row_group_size,
            },
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if !f.msg.is_empty() {
                let mut err = io::stderr().lock();
                // Nothing sensible is left to do if stderr itself is gone.
                let _ = writeln!(err, "npy: {}", f.msg);
            }
            ExitCode::from(f.code)
        }
    }
}

#[cfg(feature = "arrow")]
fn info_arrow(g: &Global, file: &str, member: Option<&str>) -> CliResult {
    tables::info(g, file, member)
}

#[cfg(not(feature = "arrow"))]
fn info_arrow(_: &Global, _: &str, _: Option<&str>) -> CliResult {
    Err(Failure::usage(
        "--arrow: this npy was built without Arrow support: install it with \
         `cargo install npy-serde --features cli,arrow`",
    ))
}

/// `npy sql`'s arguments.
#[cfg_attr(not(feature = "datafusion"), allow(dead_code))]
#[derive(Debug)]
pub struct SqlArgs {
    pub query: String,
    pub files: Vec<String>,
    pub tables: Vec<String>,
    pub csv: bool,
    pub json: bool,
    pub output: Option<String>,
    pub compression: Option<String>,
    pub row_group_size: Option<usize>,
}

#[cfg(feature = "datafusion")]
fn run_sql(g: &Global, a: SqlArgs) -> CliResult {
    sql::run(g, &a)
}

#[cfg(not(feature = "datafusion"))]
fn run_sql(_: &Global, _: SqlArgs) -> CliResult {
    Err(Failure::usage(
        "sql: this npy was built without SQL support: install it with \
         `cargo install npy-serde --features cli,datafusion`",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn convert_version_flag_is_not_clap_version() {
        let cli = Cli::try_parse_from(["npy", "convert", "a.npy", "b.npy", "--version", "2.0"])
            .expect("parses");
        match cli.command {
            Command::Convert { version, .. } => assert_eq!(version, Some(VersionArg::V2)),
            other => panic!("parsed as {other:?}"),
        }
        let cli = Cli::try_parse_from(["npy", "--max-header-size", "99", "info", "a.npy"])
            .expect("parses");
        assert_eq!(cli.max_header_size, 99);
    }
}
