//! `npy sql`'s arguments (the command's help is the doc comment of `Command::Sql` in cli.rs).
//! They are parsed in every build; without the `datafusion` feature the command refuses.

// `npy sql QUERY FILE... [-f SQL] [-t NAME=SPEC]... [--csv | --json | -o OUT]` (no doc comment: clap
// would take it for the command's help).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The query, e.g. "SELECT flag, count(*) FROM w2 GROUP BY flag"; several statements
    /// separated by `;` run in order (CREATE VIEW v AS ...; SELECT ... FROM v), each result
    /// printed. `-` reads the statements from standard input. `COPY (SELECT ..) TO 'out.npy'`
    /// writes a result as .npy (or 'out.npz', OPTIONS ('layout' 'columns') for an archive of
    /// columns, 'dir/' for a directory of files; OPTIONS ('nulls' 'nan', 'decimals' 'f8', ..)
    /// as --nulls/--decimals), and INSERT INTO adds files to a STORED AS NPY directory table.
    pub query: Option<String>,
    /// .npy files (or ARCHIVE:KEY members), and .parquet, .arrow/.feather or .csv files, each
    /// a table named by its stem.
    pub files: Vec<String>,
    /// Read the statements from FILE (`-`: standard input); every positional argument is then
    /// a FILE.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: Option<String>,
    /// A table NAME over SPEC: a file, a directory of shards, a glob, or ARCHIVE:KEY (of .npy,
    /// .npz, .parquet, .arrow or .csv files); or FORMAT(LOCATION, KEY=VALUE, ...) with its
    /// format and options (see below).
    #[arg(short = 't', long = "table", value_name = "NAME=SPEC")]
    pub tables: Vec<String>,
    /// Read object arrays (dtype O, NumPy 2 StringDType) among the FILEs by interpreting their
    /// pickle as data: nothing is imported or run (unlike NumPy's allow_pickle=True). A
    /// column of str becomes a string column, of bytes a binary one, None a NULL; any other
    /// element is an error. For -t SPEC tables: the option allow_pickle_data=true.
    #[arg(long)]
    pub allow_pickle_data: bool,
    /// Print each statement's rows and time to standard error as it ends (`N rows in S s`,
    /// `done in S s`), as `\timing` does in the interactive session. The time covers
    /// planning, running and printing (or writing) the result.
    #[arg(long)]
    pub timing: bool,
    /// Print CSV (a header row, then one line per row).
    #[arg(long, conflicts_with_all = ["json", "output"])]
    pub csv: bool,
    /// Print JSON: an array of objects, one per row, values as `cat --json` prints them (NULL
    /// as null, or "NaT" in a datetime or duration column).
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
    /// Write the result to a .npy, .parquet or .arrow file instead, streamed (of several
    /// statements, the one that returns rows).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<String>,
    /// Parquet output: none, snappy (default), zstd or zstd:LEVEL.
    #[arg(long, value_name = "CODEC", requires = "output")]
    pub compression: Option<String>,
    /// Parquet output: rows per row group.
    #[arg(long, value_name = "ROWS", requires = "output")]
    pub row_group_size: Option<usize>,
    /// Run the query inside this much memory (256MiB, 1GiB, 512M, ...): sorts and
    /// aggregations spill to a temporary directory ($TMPDIR) past it; a query that cannot
    /// spill fails with "Resources exhausted" naming the limit (exit status 1).
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<String>,
    /// Run the query on a Ballista cluster: its scheduler's URL (df://HOST:PORT), started
    /// with `npy-scheduler`, with `npy-executor`s. Every node reads the tables itself: local
    /// paths must be the same files on every node, object stores reachable from each.
    /// Ctrl-C cancels the query's job on the cluster (the command then exits with status 130).
    #[cfg(feature = "ballista")]
    #[arg(long, value_name = "URL", conflicts_with = "memory_limit")]
    pub cluster: Option<String>,
    /// -o: the result's columns, and what nulls and decimals become in .npy output
    /// (`write_with` takes `choice.parse()?`; the columns through `table::select::Select`).
    #[command(flatten)]
    pub choice: crate::choice::ChoiceArgs,
}

/// The long help's part on table specs (`npy sql --help`): the grammar and options of
/// `npy_datafusion::TableSpec`.
pub fn spec_help() -> String {
    #[cfg(feature = "datafusion")]
    {
        let mut text = npy_datafusion::table_spec_help();
        if cfg!(feature = "remote") {
            text.push_str(REMOTE_HELP);
        }
        text
    }
    #[cfg(not(feature = "datafusion"))]
    {
        String::from(
            "Table specs (-t NAME=SPEC) are described by the help of an npy built with the \
             `datafusion` feature.",
        )
    }
}

/// The long help's part on tables over object stores (feature `remote`).
#[cfg(feature = "datafusion")]
const REMOTE_HELP: &str =
    "\nTables on object stores: a LOCATION may be s3://bucket/key.npy, a prefix \
s3://bucket/shards/ or a glob s3://bucket/shards/part-*.npy (listed under the prefix before the \
first *, ? or [), and http(s)://host/path for one file (HTTP servers are not listed). For \
s3:// the credentials, region and endpoint come from the environment: AWS_ACCESS_KEY_ID, \
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL (an S3-compatible \
server, e.g. http://127.0.0.1:9000, addressed path-style), and AWS_ALLOW_HTTP=true for a \
plain-http endpoint; ~/.aws profiles are not read. --timeout and --retries bound every request.\n";
