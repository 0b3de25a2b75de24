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
//! - [`memory_limited_context`] builds a session inside a [`MemoryLimit`] (sorts and
//!   aggregations spill to a temporary directory), as `npy sql --memory-limit` runs.
//! - [`with_topk_prefilter`] gives a session the [`TopKPrefilter`] rule, which puts a
//!   [`TopKPrefilterExec`] under each `ORDER BY ... LIMIT k`: rows that cannot be in the
//!   answer dropped batch by batch before DataFusion's TopK (as `npy sql` and this crate's
//!   Ballista sessions plan, feature `ballista`).
//!
//! Rows and columns are those of the [Arrow mapping](npy_arrow) (one column per record
//! field, nested records as structs, subarrays as fixed-size lists, datetimes as timestamps
//! with NaT as NULL). A table's schema is its first file's; a file whose dtype (or shape
//! after the first axis) differs is an error naming it and both dtypes.
//!
//! # The scan
//! - Local `.npy` files are mapped (`access=mmap`, the default): each batch's used fields are
//!   gathered straight from the mapped pages. A file shortened by another process while a
//!   query reads it can raise `SIGBUS`, as with [`MmapArray`](npy_serde::MmapArray): choose
//!   `access=read` ([`NpyReadOptions::memory_map`]) for files that may change. Object stores,
//!   `.npz` members and `access=read` go through DataFusion's `ObjectStore`: a ranged read of
//!   the header, then ranged reads of the records.
//! - Projection: only the columns the query uses are decoded.
//! - Filters: the scan takes the filters DataFusion pushes into it (over the files' columns;
//!   `filter_pushdown=false` leaves them to DataFusion) and evaluates them exactly, decoding
//!   the other columns only for the rows that pass.
//! - Limit: a partition reads no more records than the query's `LIMIT` needs (under a pushed
//!   filter, the limit counts the rows that pass).
//! - Byte ranges: DataFusion splits large files into byte ranges (`target_partitions`,
//!   `datafusion.optimizer.repartition_file_min_size`); each range reads the whole records
//!   whose first byte it holds, so one large file is read on every core.
//! - Statistics: each file's exact row count, from its header, for a file that holds the data
//!   its header declares: a file (or `.npz` member) cut short is no table; registering it, its
//!   statistics and its scan fail alike, naming it, so `count(*)` never answers from a header
//!   whose data is missing.
//! - Order: a table declared sorted (SQL's `CREATE EXTERNAL TABLE .. WITH ORDER (k ASC)`, the
//!   option `sort_order` in `OPTIONS` or a [`TableSpec`], [`NpyReadOptions::sorted_by`] for
//!   `register_npy`) reports the order from its scan (`output_ordering` in `EXPLAIN`): an
//!   `ORDER BY` it satisfies merges the partitions instead of sorting, and aggregates and
//!   joins on the key run in order. The order is the caller's promise, as for DataFusion's
//!   listing tables, not checked: rows out of it give wrong answers. Each row file must be
//!   sorted (DataFusion keeps the order where a partition reads one file or ranges of one);
//!   a column table as a whole, each of its partitions a sorted run of it.
//! - Untrusted files: the header and data limits of [`ReaderBuilder`](npy_serde::ReaderBuilder) apply
//!   ([`NpyReadOptions::reader_options`]); a truncated or hostile file fails the query with
//!   this crate's error (the file, and the record, field and byte where it applies), never a
//!   panic.
//!
//! # Column tables
//! With the option `layout=columns` ([`TableLayout::Columns`]) a table is an `.npz` archive
//! whose `.npy` members are its columns (what `np.savez(path, **columns)` writes) or a
//! directory of `.npy` files, one per column (Kuzu's `COPY FROM NPY` layout; `npy convert
//! TABLE OUT.npz --layout columns` writes either). The layout is never guessed: `npz(t.npz,
//! layout=columns)` and `npy(DIR, layout=columns)` in a [`TableSpec`], `register_npy` with
//! [`NpyReadOptions::with_layout`], `CREATE EXTERNAL TABLE .. STORED AS NPY LOCATION ..
//! OPTIONS ('layout' 'columns')`.
//! - A column is named by its member's key (its file's stem); a 1-D array is a column of its
//!   type, an N-d array a fixed-size-list column, a record array a struct column. Every column
//!   has the same number of rows, or the table fails naming the column that differs; a column
//!   the table was registered with (or a statement declared) that is not there fails the
//!   query naming its member or file.
//! - The table is its own `TableProvider`; its scan is DataFusion's `DataSourceExec` over a
//!   `FileScanConfig` whose file groups are runs of rows, one per partition
//!   (`target_partitions`); each reads only the projected columns, and no more rows than the
//!   `LIMIT` needs. It takes the filters DataFusion pushes into it (unless
//!   `filter_pushdown=false`) and evaluates them exactly: each batch's filter columns are read
//!   first, and the other projected columns only for the rows that pass (a batch none passes
//!   is skipped). Comparisons of a `U<n>` column with string literals (`=`, `<>`, `IN`,
//!   `LIKE` and their negations, without an escape) are evaluated on its UTF-32 bytes, so the
//!   column is made strings only for the rows that pass (and a value that is not Unicode in a
//!   row dropped so is not seen). `EXPLAIN ANALYZE` shows the bytes each column read
//!   (`bytes_scanned`, labelled by column). On a Ballista
//!   cluster, the scheduler gives each task the runs of its partitions, as it does a file
//!   scan's file groups.
//! - Local files are memory-mapped. A 1-D column of native-order numbers whose
//!   data is aligned for its type (`np.save` writes files so, `npy convert --layout columns`
//!   and [`NpzWriter::align`](npy_serde::npz::NpzWriter::align) archives) is handed to DataFusion
//!   in place, without a copy; other columns (`np.savez` does not align members) are decoded
//!   from the mapped bytes of the rows read. A deflated member is inflated once per scan.
//!   As for [`MmapArray`](npy_serde::MmapArray), a file truncated by another process while a
//!   query maps it can raise SIGBUS.
//! - On an object store (`npz('s3://bucket/t.npz', layout=columns)`, a prefix
//!   `npy('s3://bucket/t/', layout=columns)`, any store registered in the session's
//!   `RuntimeEnv`): an archive if the object exists, a prefix of `.npy` objects otherwise. A
//!   survey reads the archive's central directory (or lists the prefix) and each column's
//!   header with a small ranged GET; a scan fetches, for each column it reads and no other,
//!   the data bytes of the rows it reads (every row, or the first `LIMIT`), in concurrent
//!   chunks shared by its partitions. A deflated member is fetched and inflated whole.
//! - Integrity: every query surveys the table again as it is planned (each header against the
//!   limits and against the bytes present, as for row files), so `count(*)`, answered from
//!   the exact row count, fails like any other query over a column cut short. A scan that
//!   reads a stored member whole (no `LIMIT`) checks its CRC-32 once (a query touching a
//!   corrupt member fails; `verify_crc=false` turns it off for trusted files), and later
//!   scans in the same process trust that check while the archive is unchanged; a deflated
//!   member's CRC is checked as it is inflated. A scan with a `LIMIT` reads a range of rows:
//!   it checks the member's place in the archive, its header and its size, not its CRC.
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
//! use npy_datafusion::{NpyReadOptions, NpySessionExt};
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
//! # Writing: `COPY TO` and `INSERT INTO`
//! After [`register_npy_format`], SQL writes `.npy` files and `.npz` archives as DataFusion's
//! own formats are written (the sink is [`NpySink`]; each file is written by npy-arrow's
//! writers, those of `npy convert`, so the same rows and options give the same bytes):
//! - `COPY (SELECT ...) TO 'out.npy'`: one `.npy` file, a record array of the result's
//!   columns (a plain array for a result of one column read from one). `STORED AS NPY` names
//!   the format where the path has no extension.
//! - `COPY (SELECT ...) TO 'out.npz'` (or `STORED AS NPZ`): an archive whose one member,
//!   `OPTIONS ('member' 'KEY')` (default `arr_0`), holds the records; with `OPTIONS ('layout'
//!   'columns')` an archive of one plain array per column, stored and aligned (the column table
//!   `npy convert --layout columns` writes, which `layout=columns` tables read in place).
//! - One file or a directory, as DataFusion decides for every format: a path with an
//!   extension is one file; a path ending in `/` (or without an extension) is a directory of
//!   files with generated names (`PARTITIONED BY (col)` makes hive-style `col=value/`
//!   directories); how many files and rows each are DataFusion's settings
//!   `datafusion.execution.minimum_parallel_output_files` and
//!   `soft_max_rows_per_output_file`.
//! - `INSERT INTO t ...` where `t` is a directory table `STORED AS NPY` (or `NPZ`) adds new
//!   files to its directory, written with the options it was created with. A column table
//!   (`layout=columns`) is not written to.
//! - Options ([`NpyWriteOptions`]): `nulls` (`error`, the default, `nan`, `fill=VALUE`,
//!   `mask`) and `decimals` (`auto`, `f8`, `scaled`), for every column or one (`nulls.COLUMN`),
//!   as `npy convert --nulls/--decimals`; `string_width[.COLUMN]`; `strings` (`fixed` or
//!   `objects`); `layout`; `member`. A bad key or value fails the statement naming it, what
//!   was expected and what was found.
//! - Nothing half-written: each file is written under a temporary name beside its target
//!   ([`StagedFile`](npy_serde::staged::StagedFile)) and renamed over it only once every file of
//!   the statement is written and the query has succeeded; a failing query or write removes
//!   them (and a directory the statement made), leaving an existing target as it was. On an
//!   object store, each file is written to the local temporary directory, then uploaded (in
//!   parts when large; a failed upload is aborted).
//! - The DataFrame API: [`NpyDataFrameExt::write_npy`] (as DataFusion's `write_parquet`).
//! - On a Ballista cluster (feature `ballista`) the same statements write the same bytes: the
//!   sink travels to an executor, which writes through its own object store for the output
//!   URL (see the `ballista` module's *Writing* section).
//! - Rows are written in the order the query gives them: without `ORDER BY`, a scan split
//!   into partitions may interleave them, as for any format.
//!
//! ```
//! use datafusion::prelude::SessionContext;
//! # let dir = std::env::temp_dir().join(format!("df-copy-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let ctx = SessionContext::new();
//!     npy_datafusion::register_npy_format(&ctx)?;
//!     let out = dir.join("squares.npy");
//!     let sql = format!(
//!         "COPY (SELECT value, value * value AS square FROM (VALUES (1), (2), (NULL)) AS t(value)) \
//!          TO '{}' OPTIONS ('nulls' 'fill=-1')",
//!         out.display()
//!     );
//!     ctx.sql(&sql).await?.collect().await?;
//!     #[derive(serde::Deserialize, Debug, PartialEq)]
//!     struct Row { value: i64, square: i64 }
//!     let rows: Vec<Row> = npy_serde::from_path_serde(&out)?;
//!     assert_eq!(rows[1], Row { value: 2, square: 4 });
//!     assert_eq!(rows[2], Row { value: -1, square: -1 });
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! })?;
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The rooms
//! DataFusion's own datasource layout (as `datafusion-datasource-csv`/`-parquet`):
//! `file_format` ([`NpyFormat`], [`NpyFormatFactory`]: schema and statistics from the
//! headers), `source` ([`NpySource`], which picks the opener of the scan's access path when
//! the scan is planned, and takes pushed filters), `filter` (a pushed filter, and the decoder
//! of row chunks under it), `rows` and `member` (the openers of row files and `.npz` members),
//! `objects` (object arrays, read whole), `opener` (what the openers share), `options` ([`NpyReadOptions`] and the table options,
//! declared once), `spec` ([`TableSpec`]), `formats` (the other formats' listing options and
//! [`CsvOptions`]), `listing` (a spec's listing table, and the format of a directory from its
//! files), `session` ([`NpySessionExt`]), and below them `header`, `archive`, `schema` and
//! `extent` (a header fetched through the object store, an archive opened through it, the
//! table schema a header maps to, the check that a file holds its data) over `error`, the
//! ground floor. `write` is the other way: the sink of `COPY TO` and `INSERT INTO`
//! ([`NpySink`], which `file_format` plans), its options and each file's writer. `columns` holds the column tables (their own `TableProvider` and file source, over
//! `options`, `schema` and `extent`).

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod archive;
#[cfg(feature = "ballista")]
pub mod ballista;
pub(crate) mod columns;
mod error;
mod extent;
mod file_format;
mod filter;
#[cfg(test)]
mod foreign_tests;
mod formats;
mod frame;
mod header;
mod listing;
mod member;
mod memory;
mod objects;
mod opener;
mod options;
mod raw;
mod recorded;
#[cfg(feature = "remote")]
mod remote;
mod rows;
mod schema;
mod session;
mod source;
mod spec;
mod stats;
mod topk;
mod write;

pub use file_format::{NpyFormat, NpyFormatFactory, NpzFormatFactory};
pub use formats::CsvOptions;
pub use frame::NpyDataFrameExt;
pub use memory::{memory_limited_context, MemoryLimit};
pub use options::{NpyReadOptions, SortColumn, TableLayout};
#[cfg(feature = "remote")]
pub use remote::{register_store_for, register_store_in};
pub use session::{register_npy_format, NpySessionExt};
pub use source::NpySource;
pub use spec::{table_spec_help, TableFormat, TableSpec, TableSpecError};
pub use topk::{with_topk_prefilter, TopKPrefilter, TopKPrefilterExec};
pub use write::{NpySink, NpyWriteOptions};

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
