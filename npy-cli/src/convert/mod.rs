//! `npy convert`: re-encode `.npy` (byte order, memory order, version) ([`npy`]), extract archive
//! members or write archives ([`archive`]), write JSON / CSV (the printer `cat` uses), or convert
//! to and from Parquet / Arrow IPC ([`tables`](mod@tables), feature `arrow`), chosen by OUT's extension or
//! `--to`.

mod archive;
#[cfg(feature = "arrow")]
mod columns;
mod npy;
#[cfg(feature = "arrow")]
mod tables;
#[cfg(feature = "remote")]
mod upload;

use clap::ValueEnum;

use crate::failure::{CliResult, Failure};
use crate::global::Global;
use crate::input::spec::{ext, is_table, is_zip, resolve};
use crate::output::{npz_member_output, Sink, Target};
use crate::print::arrays::Style;
use crate::print::printable::Range;
use crate::print::write::{write_input, Request};
use npy::Encoding;

// `npy convert`'s arguments. No doc comment here: clap would take it for the command's
// help, which is the doc comment of `Command::Convert` in cli.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
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
    pub(crate) version: Option<VersionArg>,
    /// Output format (default: from OUT's extension).
    #[arg(long, value_enum)]
    to: Option<Format>,
    /// For .npz output: pad each stored member so its array data starts at a multiple of
    /// 64 bytes in the archive (which NumPy reads as any archive), so that it can be
    /// memory-mapped in place (npy_serde::npz::MmapNpz).
    #[arg(long)]
    align: bool,
    /// With `columns`: write a table (.parquet, .arrow) as a column table, one .npy array per
    /// column: OUT.npz an archive of stored members, each one's data aligned at 64 bytes
    /// (what `npy sql -t 'npz(OUT.npz, layout=columns)'` views in place), or OUT a directory
    /// of COLUMN.npy files (`npy(OUT, layout=columns)`). `rows` (the default): one array of
    /// records.
    #[arg(long, value_enum, value_name = "LAYOUT")]
    layout: Option<LayoutArg>,
    /// Verify while writing that the rows are in this order, and record it with the output
    /// (SQL's syntax, as the table option sort_order: COL [ASC|DESC] [NULLS FIRST|LAST], ...;
    /// nulls last ascending, first descending, as DataFusion orders them). A row out of order
    /// fails the conversion naming the columns, the row (counted from 0) and both rows'
    /// values, and leaves no output. The record, which `npy sql` trusts for a table that
    /// declares no order: an .npz output's zip comment (np.load ignores it), a directory's
    /// _npy_order file, OUT.npy.order beside a .npy file. For .npy, .npz and --layout columns
    /// output. (A column table's record, and OUT.npy.order of a .npy file written from a
    /// table, also hold each column's least and greatest values, nulls and distinct count,
    /// with or without --sorted-by: `npy sql` plans joins with them.)
    #[arg(long, value_name = "ORDER")]
    sorted_by: Option<String>,
    /// Parquet output compression: none, snappy (default), zstd or zstd:LEVEL.
    #[arg(long, value_name = "CODEC")]
    compression: Option<String>,
    /// Parquet output: most rows per row group (default 1048576).
    #[arg(long, value_name = "ROWS")]
    row_group_size: Option<usize>,
    /// Read object arrays (dtype O, NumPy 2 StringDType: a .npy file, an .npz member, or the
    /// object members of a whole archive) by interpreting their pickles as data: nothing is
    /// imported or run (unlike NumPy's allow_pickle=True). To .parquet, .arrow or .npy: a
    /// column of str becomes a string column (of bytes a binary one, None a null; any other
    /// element is an error naming it); to .json or .csv: as `cat --allow-pickle-data --json`
    /// (or `--csv`) prints them.
    #[arg(long)]
    allow_pickle_data: bool,
    /// Conversions with a table on either side: the columns, and what nulls and decimals
    /// become in .npy output.
    #[command(flatten)]
    pub(crate) choice: crate::choice::ChoiceArgs,
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
enum LayoutArg {
    Rows,
    Columns,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OrderArg {
    #[value(name = "C", alias = "c")]
    C,
    #[value(name = "F", alias = "f")]
    F,
}

/// `--version` of `convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum VersionArg {
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

/// `npy convert`: to a local file or standard output, or (feature `remote`) to an object store
/// URL through a local temporary file that is then uploaded (see `upload`).
pub fn run(g: &Global, a: Args) -> CliResult {
    if crate::input::source::is_url(&a.output) {
        #[cfg(feature = "remote")]
        {
            let staged = upload::Staged::new(&a.output)?;
            let a = Args {
                output: staged.output.clone(),
                ..a
            };
            convert(g, a)?;
            return staged.upload(g);
        }
        #[cfg(not(feature = "remote"))]
        return Err(Failure::usage(format!(
            "{}: this npy was built without the `remote` feature, which uploads to object \
             stores (cargo install npy-cli --features remote)",
            a.output
        )));
    }
    convert(g, a)
}

/// The conversion to a local file or standard output.
fn convert(g: &Global, a: Args) -> CliResult {
    let enc = Encoding {
        byte_order: a.byte_order.map(|b| match b {
            ByteOrderArg::Little => npy_serde::ByteOrder::Little,
            ByteOrderArg::Big => npy_serde::ByteOrder::Big,
            ByteOrderArg::Native => npy_serde::ByteOrder::NATIVE,
        }),
        fortran_order: a.order.map(|o| o == OrderArg::F),
        version: a.version.map(|v| match v {
            VersionArg::V1 => npy_serde::Version::V1_0,
            VersionArg::V2 => npy_serde::Version::V2_0,
            VersionArg::V3 => npy_serde::Version::V3_0,
        }),
    };
    let to = a.to.map(|f| match f {
        Format::Npy => Target::Npy,
        Format::Json => Target::Json,
        Format::Csv => Target::Csv,
        Format::Npz => Target::Npz,
        Format::Parquet => Target::Parquet,
        Format::Arrow => Target::Arrow,
    });
    if a.layout == Some(LayoutArg::Columns) {
        return columns(&a, &enc);
    }
    if npz_member_output(&a.output).is_some() {
        if !is_table(&a.input) {
            return Err(Failure::usage(format!(
                "{}: OUT.npz:KEY names the member a table (.parquet, .arrow) is written to; \
                 a .npy or .npz input keeps its member names (convert IN OUT.npz)",
                a.output
            )));
        }
        return tables(g, &a, &enc, Target::Npz);
    }
    let target = match to {
        Some(t) => t,
        None => target_from_name(&a.output)?,
    };
    if a.sorted_by.is_some() && !matches!(target, Target::Npy | Target::Npz) {
        return Err(Failure::usage(
            "--sorted-by records the order with .npy and .npz output (and --layout columns)",
        ));
    }
    // A column choice from a .npy file to a .npy file goes through Arrow batches too, and so
    // does an object array read as data, and rows whose order is verified.
    let chosen = (a.choice.is_set() || a.allow_pickle_data) && target == Target::Npy;
    let sorted = a.sorted_by.is_some();
    if matches!(target, Target::Parquet | Target::Arrow) || is_table(&a.input) || chosen || sorted {
        if sorted && target == Target::Npz && !is_table(&a.input) {
            let spec = resolve(&a.input, a.member.as_deref())?;
            let zip = is_zip(g, &spec.path).map_err(|e| Failure::file(&spec.display, e))?;
            if zip && spec.member.is_none() {
                return Err(Failure::usage(format!(
                    "{}: --sorted-by verifies the rows of one array: name the member with \
                     --member KEY or {}:KEY",
                    spec.display, spec.display
                )));
            }
        }
        return tables(g, &a, &enc, target);
    }
    if a.choice.is_set() {
        return Err(Failure::usage(
            "--columns, --exclude, --nulls and --decimals apply to .npy, .parquet and .arrow \
             output, or to a table (.parquet, .arrow) input",
        ));
    }
    if target != Target::Npy && enc.is_set() {
        return Err(Failure::usage(
            "--byte-order, --order and --version apply to .npy output only",
        ));
    }
    if a.align && target != Target::Npz {
        return Err(Failure::usage("--align applies to .npz output only"));
    }
    let spec = resolve(&a.input, a.member.as_deref())?;
    let zip = is_zip(g, &spec.path).map_err(|e| Failure::file(&spec.display, e))?;
    if zip && spec.member.is_none() && target == Target::Npy {
        return Err(Failure::usage(format!(
            "{}: an .npz archive holds several arrays: name one with --member KEY or {}:KEY",
            spec.display, spec.display
        )));
    }
    if !zip && spec.member.is_some() {
        return Err(Failure::usage(format!(
            "{}: not an .npz archive, so it has no members",
            spec.path.display()
        )));
    }
    if target == Target::Npz {
        return archive::run(g, &spec, zip, &a.output, a.align);
    }
    let mut sink = Sink::create(&a.output)?;
    match target {
        // Returned above: tables by `tables`, archives by `archive`.
        Target::Npz | Target::Parquet | Target::Arrow => unreachable!("handled above"),
        Target::Json | Target::Csv => {
            let style = if target == Target::Json {
                Style::Json
            } else {
                Style::Csv { header: true }
            };
            let req = Request {
                style,
                range: Range::All,
                allow_pickle_data: a.allow_pickle_data,
                progress: true,
            };
            write_input(g, &spec, req, &mut sink.writer, &a.output)?;
        }
        Target::Npy => npy::write(g, &spec, zip, &enc, &mut sink.writer, &a.output)?,
    }
    sink.commit()?;
    if target == Target::Npy && a.output != "-" {
        // A sorted order recorded for an earlier OUT no longer holds.
        remove_stale_record(&a.output)?;
    }
    Ok(())
}

/// The conversions with a table on either side: what the `arrow` feature adds to `convert`.
/// `--layout columns`: a table as an `.npz` archive of columns or a directory of them.
fn columns(a: &Args, enc: &Encoding) -> CliResult {
    if !is_table(&a.input) || a.member.is_some() {
        return Err(Failure::usage(format!(
            "{}: --layout columns converts a table (.parquet, .arrow) into an .npz archive of \
             columns (OUT.npz) or a directory of per-column .npy files (OUT)",
            a.input
        )));
    }
    if enc.is_set() || a.to.is_some() || a.compression.is_some() || a.row_group_size.is_some() {
        return Err(Failure::usage(
            "--layout columns writes .npy arrays (stored and aligned in an archive): \
             --byte-order, --order, --version, --to, --compression and --row-group-size do \
             not apply",
        ));
    }
    #[cfg(feature = "arrow")]
    {
        let choice = a.choice.parse()?;
        let order = sort_order(a.sorted_by.as_deref())?;
        columns::run(&a.input, &a.output, &choice, order.as_deref())
    }
    #[cfg(not(feature = "arrow"))]
    Err(Failure::usage(
        "--layout columns reads tables: this build has no Arrow support (feature `arrow`)",
    ))
}

fn tables(g: &Global, a: &Args, enc: &Encoding, target: Target) -> CliResult {
    #[cfg(feature = "arrow")]
    {
        if enc.is_set() {
            return Err(Failure::usage(
                "--byte-order, --order and --version apply to .npy to .npy conversions only",
            ));
        }
        let order = sort_order(a.sorted_by.as_deref())?;
        let out = crate::table::ends::TableOut {
            input: &a.input,
            output: &a.output,
            target,
            compression: a.compression.as_deref(),
            row_group_size: a.row_group_size,
            sorted_by: order.as_deref(),
        };
        let choice = a.choice.parse()?;
        tables::run(
            g,
            &a.input,
            a.member.as_deref(),
            &out,
            &choice,
            a.allow_pickle_data,
        )
    }
    #[cfg(not(feature = "arrow"))]
    {
        let _ = (g, enc);
        let parquet = crate::input::spec::is_parquet(&a.input) || target == Target::Parquet;
        let feature = if parquet { "parquet" } else { "arrow" };
        Err(Failure::usage(format!(
            "{} -> {}: this npy was built without Arrow support: install it with \
             `cargo install npy-cli --features {feature}`",
            a.input, a.output
        )))
    }
}

/// The order of `--sorted-by`, parsed.
#[cfg(feature = "arrow")]
fn sort_order(text: Option<&str>) -> CliResult<Option<Vec<npy_arrow::order::SortColumn>>> {
    text.map(|t| {
        npy_arrow::order::parse_order(t).map_err(|e| Failure::usage(format!("--sorted-by: {e}")))
    })
    .transpose()
}

/// Removes the record of a sorted order beside the `.npy` file `out` (`OUT.npy.order`, see
/// npy-arrow's `order` module), if there is one: the file was just rewritten.
pub(crate) fn remove_stale_record(out: &str) -> CliResult {
    let record = format!("{out}.order");
    match std::fs::remove_file(&record) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Failure::write(&record, e)),
        _ => Ok(()),
    }
}

/// OUT's format, by its extension.
fn target_from_name(out: &str) -> CliResult<Target> {
    match ext(out).as_deref() {
        Some("npy") => Ok(Target::Npy),
        Some("json") => Ok(Target::Json),
        Some("csv") => Ok(Target::Csv),
        Some("npz") => Ok(Target::Npz),
        Some("parquet" | "pq") => Ok(Target::Parquet),
        Some("arrow" | "feather" | "ipc") => Ok(Target::Arrow),
        _ => Err(Failure::usage(format!(
            "{out}: cannot tell the output format from the name: use a .npy, .json, .csv, \
             .npz, .parquet or .arrow (.feather) extension, or --to"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_format_from_name() {
        assert_eq!(target_from_name("a/b.NPY").unwrap(), Target::Npy);
        assert_eq!(target_from_name("x.json").unwrap(), Target::Json);
        assert_eq!(target_from_name("x.txt").unwrap_err().code, 2);
    }
}
