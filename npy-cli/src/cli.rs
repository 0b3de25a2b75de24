//! The command line: the global options and one subcommand per command, whose arguments each
//! command declares beside its code; `--help`'s long texts (the JSON conventions).

use clap::{Parser, Subcommand};

use npy_serde::header::DEFAULT_MAX_HEADER_SIZE;

use crate::global::Global;
use crate::input::elements::MAX_EMPTY_ITEMS;
use crate::{cat, check, convert, info, sql};

const LONG_ABOUT: &str = "\
Inspect, print, convert and validate NumPy .npy and .npz files.

A FILE is a .npy file, a .npz archive, or one member of an archive written ARCHIVE:KEY \
(e.g. data.npz:x for the member x.npy). Archives are recognised by their content, not their \
name.

With the `remote` feature a FILE may also be a URL: s3://bucket/key (credentials, region and \
endpoint from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, \
AWS_ENDPOINT_URL, and AWS_ALLOW_HTTP=true for a plain-http endpoint; ~/.aws is not read) or \
http(s)://host/path, read with ranged GETs (only the bytes needed). A URL names an archive \
member when its path holds .npz: (s3://b/d/a.npz:x is member x of s3://b/d/a.npz; the key is \
everything after that colon); otherwise use --member. convert writes to a URL too \
(s3://bucket/key.npy, .npz, .parquet: a multipart upload, aborted on any error, so no partial \
object is left; http(s):// on a server that takes PUTs, WebDAV: one PUT). \
--timeout and --retries bound every request.

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
  object arrays (--allow-pickle-data): str a string, None null, bytes latin-1 text, bool,
  int (any size), float and complex as above, lists, tuples and sets as lists, dicts and
  records as objects (keys other than str as their Python repr), NumPy arrays nested;
  datetime, date and time as isoformat() text, timezone as its tzname(), timedelta as its
  exact seconds, Decimal as its exact number (NaN, Infinity as strings).
  Plain text prints each element as Python's repr; a class or function is refused.
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
convert TABLE OUT.npz --layout columns: the table as a column table, one aligned member per
  column (what np.savez(OUT, **columns) holds); convert TABLE DIR --layout columns: one
  DIR/COLUMN.npy per column. Query them with npy sql -t 'npz(OUT.npz, layout=columns)'.

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
pub struct Cli {
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
        default_value_t = MAX_EMPTY_ITEMS
    )]
    max_empty_items: u64,

    /// With --allow-pickle-data: how the str values of Python 2 pickles are read, as
    /// np.load's encoding: ascii (the default: a non-ASCII byte is an error), latin1 or bytes.
    #[arg(long, global = true, value_name = "ENC", default_value = "ascii")]
    pickle_encoding: npy_serde::pickle::Encoding,

    /// Seconds one request to an object store (s3://, http(s)://) may take, from connecting
    /// to the last byte of its answer (connecting: at most 5 s, or this if shorter).
    #[arg(long, global = true, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,

    /// How many times a failed object-store request is retried (a refused connection, a
    /// timeout, a 5xx answer; a missing object or refused credentials are not retried).
    #[arg(long, global = true, value_name = "N", default_value_t = 2)]
    retries: usize,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The options every command shares.
    pub fn global(&self) -> Global {
        Global {
            max_header_size: self.max_header_size,
            max_empty_items: self.max_empty_items,
            pickle_encoding: self.pickle_encoding,
            timeout: std::time::Duration::try_from_secs_f64(self.timeout)
                .unwrap_or(std::time::Duration::from_secs(10)),
            retries: self.retries,
        }
    }
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Show the header: version, dtype (as a tree with offsets), shape, order, sizes; for an
    /// .npz archive every member with its compression and sizes.
    Info(info::Args),
    /// Print the values (plain text by default: one element per line for 1-D arrays).
    Cat(cat::Args),
    /// Re-encode a .npy file (byte order, memory order, format version), extract an archive
    /// member, write JSON / CSV, or convert between .npy and Parquet / Arrow IPC (.parquet,
    /// .arrow, .feather; chosen by the extensions, or --to). Streams the data.
    Convert(convert::Args),
    /// Run SQL over .npy files, .npz members and Parquet, Arrow IPC or CSV files (DataFusion;
    /// needs the `datafusion` feature, and `parquet` for Parquet tables). Each FILE is a table
    /// named by its stem (ARCHIVE:KEY by KEY); results print as an aligned table, or as
    /// CSV / JSON, or go to a .npy, .parquet or .arrow file with -o.
    #[command(after_long_help = sql::args::spec_help())]
    Sql(sql::args::Args),
    /// Validate files: the header, that the data is complete, and that every value decodes
    /// (bool bytes are 0 or 1, U code points are valid); with --allow-pickle-data, that an
    /// object array's pickle reads as data (it is never run).
    Check(check::Args),
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
            Command::Convert(a) => assert_eq!(a.version, Some(convert::VersionArg::V2)),
            other => panic!("parsed as {other:?}"),
        }
        let cli = Cli::try_parse_from(["npy", "--max-header-size", "99", "info", "a.npy"])
            .expect("parses");
        assert_eq!(cli.max_header_size, 99);
    }
}
