//! SQL over `.npy` files with [Apache DataFusion](https://datafusion.apache.org) (feature
//! `datafusion`): a file, a directory or a glob of `.npy` files with one dtype is a table;
//! Parquet (feature `parquet` too), Arrow IPC and CSV files are tables beside them.
//!
//! - [`NpySessionExt`] adds [`register_npy`](NpySessionExt::register_npy) and
//!   [`read_npy`](NpySessionExt::read_npy) to a `SessionContext`, in the style of
//!   `register_parquet` / `read_parquet`, and [`register_spec`](NpySessionExt::register_spec)
//!   / [`read_spec`](NpySessionExt::read_spec), which register the table of a [`TableSpec`] in
//!   its format: `.npy` files and `.npz` members with [`NpyFormat`], Parquet, Arrow IPC
//!   (`.arrow`, `.feather`) and CSV files ([`CsvOptions`]) with DataFusion's own readers, so
//!   one query joins them all (a directory takes the format of its files' extension).
//! - [`register_npy_format`] makes `CREATE EXTERNAL TABLE t STORED AS NPY LOCATION 'dir/'`
//!   work (options: `OPTIONS ('member' 'x')` for the member `x` of `.npz` archives,
//!   `max_header_size`, `max_data_size`, ...: the keys of [`NpyReadOptions::set`]).
//! - [`TableSpec`] parses a table spec, the one string that names a table's files, format and
//!   options (`runs.npz:obs`, `npz(data/*.npz, member=x, max_header_size=20000)`,
//!   `t.parquet`, `csv(t.tsv, delimiter=\t)`); its grammar is in the [`TableSpec`] docs and
//!   [`table_spec_help`]. `npy sql -t NAME=SPEC` takes it.
//! - [`NpyFormat`], [`NpyFormatFactory`] and [`NpySource`] are the `FileFormat`,
//!   `FileFormatFactory` and `FileSource` underneath, for building listing tables by hand.
//!
//! Rows and columns are those of the [Arrow mapping](crate::arrow) (one column per record
//! field, nested records as structs, subarrays as fixed-size lists, datetimes as timestamps
//! with NaT as NULL). A table's schema is its first file's; a file whose dtype (or shape
//! after the first axis) differs is an error naming it and both dtypes.
//!
//! # The scan
//! - All I/O goes through DataFusion's `ObjectStore`: a ranged read of the header, then ranged
//!   reads of the records, so local files and object stores share one path.
//! - Projection: only the columns the query uses are decoded.
//! - Limit: a partition reads no more records than the query's `LIMIT` needs.
//! - Byte ranges: DataFusion splits large files into byte ranges (`target_partitions`,
//!   `datafusion.optimizer.repartition_file_min_size`); each range reads the whole records
//!   whose first byte it holds, so one large file is read on every core.
//! - Statistics: each file's exact row count, from its header, for a file that holds the data
//!   its header declares: a file (or `.npz` member) cut short is no table; registering it, its
//!   statistics and its scan fail alike, naming it, so `count(*)` never answers from a header
//!   whose data is missing.
//! - Untrusted files: the header and data limits of [`ReaderBuilder`](crate::ReaderBuilder) apply
//!   ([`NpyReadOptions::reader_options`]); a truncated or hostile file fails the query with
//!   this crate's error (the file, and the record, field and byte where it applies), never a
//!   panic.
//!
//! An `.npz` member is read by one partition per archive (its bytes may be deflated); a
//! Fortran-order array with more than one axis longer than 1 is read whole by one partition
//! (its rows are not contiguous).
//!
//! Object arrays (`'|O'`, NumPy 2's `StringDType`) are tables only with the table option
//! `allow_pickle_data` (off by default; carried to Ballista's executors with the other
//! options): their pickle is read as data, nothing imported or run, and a column of `str`
//! becomes `Utf8` (see `objects`).
//!
//! ```
//! use datafusion::prelude::SessionContext;
//! use npy_serde::datafusion::{NpyReadOptions, NpySessionExt};
//! # #[derive(serde::Serialize, npy_serde::NpyRecord)] struct Rec { flag: u8, x: f64 }
//! # let dir = std::env::temp_dir().join(format!("df-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # npy_serde::to_path(dir.join("a.npy"), &[Rec { flag: 1, x: 0.5 }, Rec { flag: 2, x: 1.5 }])?;
//! # npy_serde::to_path(dir.join("b.npy"), &[Rec { flag: 1, x: 2.0 }])?;
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let ctx = SessionContext::new();
//!     // Every .npy file in the directory is a shard of the table.
//!     ctx.register_npy("recs", dir.to_str().unwrap(), NpyReadOptions::new()).await?;
//!     let df = ctx.sql("SELECT flag, sum(x) AS s FROM recs GROUP BY flag ORDER BY flag").await?;
//!     let batches = df.collect().await?;
//!     let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
//!     assert!(text.contains("| 1    | 2.5 |"), "{text}");
//!     Ok::<_, datafusion::error::DataFusionError>(())
//! })?;
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The rooms
//! DataFusion's own datasource layout (as `datafusion-datasource-csv`/`-parquet`):
//! `file_format` ([`NpyFormat`], [`NpyFormatFactory`]: schema and statistics from the
//! headers), `source` ([`NpySource`], which picks the opener of the scan's access path when
//! the scan is planned), `rows` and `member` (the openers of row files and `.npz` members),
//! `objects` (object arrays, read whole), `opener` (what the openers share), `options` ([`NpyReadOptions`] and the table options,
//! declared once), `spec` ([`TableSpec`]), `formats` (the other formats' listing options and
//! [`CsvOptions`]), `listing` (a spec's listing table, and the format of a directory from its
//! files), `session` ([`NpySessionExt`]), and below them `header`, `archive`, `schema` and
//! `extent` (a header fetched through the object store, an archive opened through it, the
//! table schema a header maps to, the check that a file holds its data) over `error`, the
//! ground floor.

mod archive;
mod error;
mod extent;
mod file_format;
mod formats;
mod header;
mod listing;
mod member;
mod objects;
mod opener;
mod options;
mod rows;
mod schema;
mod session;
mod source;
mod spec;

pub use file_format::{NpyFormat, NpyFormatFactory};
pub use formats::CsvOptions;
pub use options::{NpyReadOptions, TableLayout};
pub use session::{register_npy_format, NpySessionExt};
pub use source::NpySource;
pub use spec::{table_spec_help, TableFormat, TableSpec, TableSpecError};
