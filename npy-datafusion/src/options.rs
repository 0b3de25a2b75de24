//! [`NpyReadOptions`]: how a table's files are read; and the table options, each declared
//! once in [`OPTIONS`] (its key, its value's form, its help, how it is read and set). That one
//! list is every door's: SQL's `CREATE EXTERNAL TABLE ... OPTIONS ('key' 'value')`, a table
//! spec's `key=value` ([`TableSpec`](super::TableSpec)), the help text of the spec, and the
//! options message of the Ballista codec (the [`entries`](NpyReadOptions::entries), set again
//! on the other side). A new table option is one entry of the list (and the field it sets).

use arrow_schema::Schema;
use datafusion::common::config::ConfigEntry;
use datafusion::common::Column;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{Expr, SortExpr};
use datafusion::physical_expr::expressions::Column as PhysicalColumn;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};

use npy_serde::npz::NpzReaderBuilder;
use npy_serde::read::ReaderBuilder;

/// How a table's files are read: header and data limits, and the `.npz` member to read.
///
/// The options also have keys ([`set`](Self::set), [`entries`](Self::entries)): those of SQL's
/// `OPTIONS` and of a [`TableSpec`](super::TableSpec) (see
/// [`table_spec_help`](super::table_spec_help) for the list).
///
/// ```
/// use npy_datafusion::NpyReadOptions;
/// let options = NpyReadOptions::new().max_header_size(20_000).npz_member("x");
/// assert_eq!(options.extension(), ".npz");
/// let same = NpyReadOptions::new().set("max_header_size", "20000")?.set("member", "x")?;
/// assert_eq!(same.extension(), ".npz");
/// # Ok::<(), datafusion::error::DataFusionError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct NpyReadOptions {
    pub(crate) reader: ReaderBuilder,
    pub(crate) member: Option<String>,
    pub(crate) extension: Option<String>,
    pub(crate) layout: TableLayout,
    /// Whether a column table's scan checks the CRC-32 of each stored `.npz` member it reads
    /// whole (`verify_crc`, default true).
    pub(crate) skip_crc: bool,
    /// Local row files read through ranged reads instead of a memory map (`access=read`).
    pub(crate) read_access: bool,
    /// Filters stay out of the scan (`filter_pushdown=false`): DataFusion filters the rows.
    pub(crate) keep_filters: bool,
    /// The orders the table's rows are declared to be in (`sort_order`): each a list of
    /// columns; the scan reports every one of them.
    pub(crate) sort_order: Vec<Vec<SortColumn>>,
}

/// How a table's values lie in its files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableLayout {
    /// Row files: each file (or `.npz` member) is an array whose first axis is the table's
    /// rows (a record array's fields are the columns; a plain array is the column `value`).
    #[default]
    Rows,
    /// A column table: an `.npz` archive whose members are its columns (what
    /// `np.savez(path, **columns)` writes), or a directory of `.npy` files, one per column
    /// (named by its stem); every column has the same number of rows. See
    /// [`datafusion`](super)'s "Column tables".
    Columns,
}

impl TableLayout {
    /// Its name as an option value (`rows`).
    pub fn name(self) -> &'static str {
        match self {
            TableLayout::Rows => "rows",
            TableLayout::Columns => "columns",
        }
    }

    fn parse(value: &str) -> Result<TableLayout, String> {
        match value {
            "rows" => Ok(TableLayout::Rows),
            "columns" => Ok(TableLayout::Columns),
            other => Err(format!(
                "unknown layout {other:?}: the layouts are rows and columns"
            )),
        }
    }
}

/// One table option, declared once: its key, its value's form and help for the help texts,
/// and how it is read from and set on [`NpyReadOptions`].
pub(crate) struct TableOption {
    pub(crate) key: &'static str,
    /// The value's form (`BYTES`, `KEY`, ...).
    pub(crate) value: &'static str,
    pub(crate) help: &'static str,
    /// The option's value, if it has one.
    get: fn(&NpyReadOptions) -> Option<String>,
    /// Sets it from its text; the error says what was expected.
    set: fn(&mut NpyReadOptions, &str) -> Result<(), String>,
}

/// Every table option.
pub(crate) static OPTIONS: &[TableOption] = &[
    TableOption {
        key: "member",
        value: "KEY",
        help: "the .npz member each archive of the table holds its rows in (`KEY.npy`); \
               the table's files are then archives",
        get: |o| o.member.clone(),
        set: |o, v| {
            if v.is_empty() {
                return Err("expected a member key, found \"\"".into());
            }
            o.member = Some(v.to_string());
            Ok(())
        },
    },
    TableOption {
        key: "max_header_size",
        value: "BYTES",
        help: "the largest header accepted (NumPy's max_header_size; default 10000)",
        get: |o| Some(o.reader.limits.max_header_size.to_string()),
        set: |o, v| {
            o.reader.limits.max_header_size = bytes(v)?;
            Ok(())
        },
    },
    TableOption {
        key: "max_data_size",
        value: "BYTES",
        help: "the largest array data accepted per file (default: no limit)",
        get: |o| o.reader.max_data_size.map(|n| n.to_string()),
        set: |o, v| {
            o.reader.max_data_size = Some(bytes(v)?);
            Ok(())
        },
    },
    TableOption {
        key: "max_depth",
        value: "N",
        help: "the deepest nesting of the header's literal (default 128)",
        get: |o| Some(o.reader.limits.max_depth.to_string()),
        set: |o, v| {
            o.reader.limits.max_depth = count(v)?;
            Ok(())
        },
    },
    TableOption {
        key: "max_dims",
        value: "N",
        help: "the most dimensions of the shape and of each subarray (default 64)",
        get: |o| Some(o.reader.limits.max_dims.to_string()),
        set: |o, v| {
            o.reader.limits.max_dims = count(v)?;
            Ok(())
        },
    },
    TableOption {
        key: "max_empty_items",
        value: "N",
        help: "the most values without data bytes per file (default 1048576)",
        get: |o| Some(o.reader.max_empty_items.to_string()),
        set: |o, v| {
            o.reader.max_empty_items = count(v)?;
            Ok(())
        },
    },
    TableOption {
        key: "file_extension",
        value: "EXT",
        help: "the extension of the files a directory's table reads (default .npy, .npz \
               for archives); other files are skipped",
        get: |o| o.extension.clone(),
        set: |o, v| {
            o.extension = Some(v.to_string());
            Ok(())
        },
    },
    TableOption {
        key: "allow_pickle_data",
        value: "true|false",
        help: "read object arrays (dtype O, NumPy 2 StringDType) by interpreting their pickle \
               as data, nothing imported or run (default false): a column of str becomes \
               Utf8, of bytes Binary, None a null",
        get: |o| o.reader.allow_pickle_data.then(|| "true".to_string()),
        set: |o, v| {
            o.reader.allow_pickle_data = flag(v)?;
            Ok(())
        },
    },
    TableOption {
        key: "pickle_encoding",
        value: "ascii|latin1|bytes",
        help: "with allow_pickle_data, how the str values of Python 2 pickles are read, as \
               np.load's encoding (default ascii: a non-ASCII byte is an error)",
        get: |o| {
            let e = o.reader.pickle.get_encoding();
            (e != Default::default()).then(|| e.name().to_string())
        },
        set: |o, v| {
            let e: npy_serde::pickle::Encoding = v.parse()?;
            o.reader.pickle = o.reader.pickle.encoding(e);
            Ok(())
        },
    },
    TableOption {
        key: "layout",
        value: "rows|columns",
        help: "how the values lie in the files: rows (each file an array of rows; the \
               default) or columns (an .npz archive whose members are the columns, or a \
               directory of .npy files, one per column)",
        get: |o| Some(o.layout.name().to_string()),
        set: |o, v| {
            o.layout = TableLayout::parse(v)?;
            Ok(())
        },
    },
    TableOption {
        key: "verify_crc",
        value: "true|false",
        help: "whether a column table's scan checks the CRC-32 of each stored .npz member \
               it reads whole (default true: once per process while the archive is \
               unchanged; false for trusted files)",
        get: |o| Some((!o.skip_crc).to_string()),
        set: |o, v| {
            o.skip_crc = !flag(v)?;
            Ok(())
        },
    },
    TableOption {
        key: "access",
        value: "mmap|read",
        help: "how local .npy row files are scanned: mmap (default; mapped, only the used \
               fields are touched) or read (ranged reads: for files that may change or \
               shrink while a query runs); object stores are always read",
        get: |o| Some(if o.read_access { "read" } else { "mmap" }.to_string()),
        set: |o, v| {
            o.read_access = match v {
                "mmap" => false,
                "read" => true,
                other => return Err(format!("expected mmap or read, found {other:?}")),
            };
            Ok(())
        },
    },
    TableOption {
        key: "filter_pushdown",
        value: "true|false",
        help: "whether the scan evaluates a query's filters, decoding the other columns only \
               for the rows that pass (default true)",
        get: |o| Some((!o.keep_filters).to_string()),
        set: |o, v| {
            o.keep_filters = !flag(v)?;
            Ok(())
        },
    },
    TableOption {
        key: "sort_order",
        value: "ORDER",
        help: "the order the rows are in, declared, not checked (SQL's WITH ORDER): \
               COLUMN [ASC|DESC] [NULLS FIRST|LAST], ...; after ';' another order that \
               also holds. Each file (a column table: the whole table) must be sorted so, or \
               answers are wrong. In a spec quote it: sort_order='a, b DESC'",
        get: |o| (!o.sort_order.is_empty()).then(|| format_orders(&o.sort_order)),
        set: |o, v| {
            o.sort_order = parse_orders(v)?;
            Ok(())
        },
    },
];

/// One column of a declared sort order ([`NpyReadOptions::sorted_by`], the option
/// `sort_order`): npy-arrow's [`SortColumn`](npy_arrow::order::SortColumn), whose text is
/// SQL's `name [ASC|DESC] [NULLS FIRST|NULLS LAST]` (nulls last ascending, first descending
/// unless it says, as DataFusion orders them).
///
/// ```
/// use npy_datafusion::SortColumn;
/// let key: SortColumn = "l_orderkey".parse()?;
/// assert_eq!(key, SortColumn::asc("l_orderkey"));
/// assert_eq!(key.to_string(), "l_orderkey ASC NULLS LAST");
/// # Ok::<(), String>(())
/// ```
pub use npy_arrow::order::SortColumn;

/// A [`SortColumn`] as DataFusion's logical sort expression, and back.
pub(crate) trait SortExprs: Sized {
    /// DataFusion's logical sort expression of the column.
    fn sort_expr(&self) -> SortExpr;

    /// The column of a logical sort expression (SQL's `WITH ORDER (...)`), if it is a column.
    fn of_sort_expr(sort: &SortExpr) -> Option<Self>;
}

impl SortExprs for SortColumn {
    fn sort_expr(&self) -> SortExpr {
        let column = Expr::Column(Column::new_unqualified(self.name()));
        SortExpr::new(column, !self.is_descending(), self.is_nulls_first())
    }

    fn of_sort_expr(sort: &SortExpr) -> Option<SortColumn> {
        match &sort.expr {
            Expr::Column(c) => Some(SortColumn::new(c.name.clone(), !sort.asc, sort.nulls_first)),
            _ => None,
        }
    }
}

/// Fails naming the first of `names` (the columns of a declared sort order) that `schema` (the
/// table `table`'s) does not have: DataFusion would fail each query over the table instead.
pub(crate) fn check_sort_columns<'a>(
    names: impl IntoIterator<Item = &'a str>,
    schema: &Schema,
    table: &str,
) -> DfResult<()> {
    for name in names {
        if schema.index_of(name).is_err() {
            let all: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            return Err(DataFusionError::Configuration(format!(
                "sort_order: the table {table} has no column {name:?}; its columns are {}",
                all.join(", ")
            )));
        }
    }
    Ok(())
}

/// The orders of the option `sort_order` (see [`npy_arrow::order::parse_orders`]).
/// Adds `order` to `orders` unless it is empty or there already (the read and the write
/// options' `sorted_by`).
pub(crate) fn add_order(
    orders: &mut Vec<Vec<SortColumn>>,
    order: impl IntoIterator<Item = SortColumn>,
) {
    let order: Vec<SortColumn> = order.into_iter().collect();
    if !order.is_empty() && !orders.contains(&order) {
        orders.push(order);
    }
}

fn parse_orders(text: &str) -> Result<Vec<Vec<SortColumn>>, String> {
    npy_arrow::order::parse_orders(text)
}

/// The text of `orders` that [`parse_orders`] reads back.
fn format_orders(orders: &[Vec<SortColumn>]) -> String {
    let orders: Vec<String> = orders
        .iter()
        .map(|o| {
            let columns: Vec<String> = o.iter().map(SortColumn::to_string).collect();
            columns.join(", ")
        })
        .collect();
    orders.join("; ")
}

fn flag(v: &str) -> Result<bool, String> {
    match v {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("expected true or false, found {other:?}")),
    }
}

fn bytes(v: &str) -> Result<u64, String> {
    v.parse()
        .map_err(|_| format!("expected a number of bytes, found {v:?}"))
}

fn count<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("expected a number, found {v:?}"))
}

/// The option keys as a list for messages: `a, b and c`.
pub(crate) fn option_keys() -> String {
    let keys: Vec<&str> = OPTIONS.iter().map(|o| o.key).collect();
    match keys.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl NpyReadOptions {
    /// The defaults: `.npy` files, NumPy's 10000-byte header limit, no data-size limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads with these header and data-size limits.
    pub fn reader_options(mut self, reader: ReaderBuilder) -> Self {
        self.reader = reader;
        self
    }

    /// The largest header accepted ([`ReaderBuilder::max_header_size`]).
    pub fn max_header_size(mut self, bytes: u64) -> Self {
        self.reader = self.reader.max_header_size(bytes);
        self
    }

    /// The largest array data accepted per file ([`ReaderBuilder::max_data_size`]).
    pub fn max_data_size(mut self, bytes: u64) -> Self {
        self.reader = self.reader.max_data_size(bytes);
        self
    }

    /// Reads the member `key` (`key.npy` in the archive) of each `.npz` archive: the table's
    /// files are archives (extension `.npz` unless [`file_extension`](Self::file_extension)
    /// says otherwise).
    pub fn npz_member(mut self, key: impl Into<String>) -> Self {
        self.member = Some(key.into());
        self
    }

    /// The extension of the files a directory's table reads (default `.npy`, `.npz` with
    /// [`npz_member`](Self::npz_member)); other files in the directory are skipped.
    pub fn file_extension(mut self, ext: impl Into<String>) -> Self {
        self.extension = Some(ext.into());
        self
    }

    /// The extension of the table's files.
    pub fn extension(&self) -> &str {
        match (&self.extension, &self.member) {
            (Some(e), _) => e,
            (None, Some(_)) => ".npz",
            (None, None) => ".npy",
        }
    }

    /// Scans local `.npy` row files through a memory map (`true`, the default: each
    /// partition touches only the bytes of the fields a query uses) or through ranged reads
    /// (`false`). A mapped file that another process shortens while a query reads it can
    /// raise `SIGBUS`, as with [`MmapArray`](npy_serde::MmapArray) and NumPy's memmap: read files
    /// that may change. Object stores and `.npz` members are always read. The option
    /// `access=mmap|read`.
    ///
    /// ```
    /// use npy_datafusion::NpyReadOptions;
    /// let o = NpyReadOptions::new().memory_map(false);
    /// let same = NpyReadOptions::new().set("access", "read")?;
    /// assert_eq!(format!("{:?}", o.entries()), format!("{:?}", same.entries()));
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    pub fn memory_map(mut self, yes: bool) -> Self {
        self.read_access = !yes;
        self
    }

    /// Lets the scan evaluate a query's filters (`true`, the default: the filter's columns are
    /// decoded first, the others only for the rows that pass) or leaves them to DataFusion
    /// (`false`), in row files and column tables alike. Answers are the same either way. The
    /// option `filter_pushdown=true|false`.
    ///
    /// ```
    /// use npy_datafusion::NpyReadOptions;
    /// let o = NpyReadOptions::new().filter_pushdown(false);
    /// let same = NpyReadOptions::new().set("filter_pushdown", "false")?;
    /// assert_eq!(format!("{:?}", o.entries()), format!("{:?}", same.entries()));
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    pub fn filter_pushdown(mut self, yes: bool) -> Self {
        self.keep_filters = !yes;
        self
    }

    /// Declares that the table's rows are sorted by `order` (the option `sort_order`, SQL's
    /// `WITH ORDER (...)`): the scan reports the order, so DataFusion plans no sort for an
    /// `ORDER BY` it satisfies, and aggregates, joins and windows over it run in order
    /// (TPC-H's `lineitem` is sorted by `l_orderkey`). Called again, it declares a second
    /// order that holds as well.
    ///
    /// The order is the caller's promise, as for DataFusion's listing tables: it is not
    /// checked, and rows not in it give wrong answers. For row files the order is each
    /// file's (DataFusion keeps it for a partition that reads one file, or ranges of one
    /// file, and merges the partitions); a column table's order is the whole table's, and each
    /// of its partitions (a run of rows) is sorted. An order naming a column the table does
    /// not have fails the registration naming it.
    ///
    /// On a Ballista cluster (feature `ballista`) the order is used with Ballista's static
    /// planner (`ballista.planner.adaptive.enabled` set to false), where
    /// `ballista::OrderAcrossShuffles` sorts each partition again after a shuffle that
    /// DataFusion planned to keep the order. Ballista's adaptive planner (its default)
    /// re-plans each stage with rules of its own, which lose the order across a shuffle (an
    /// aggregate grouped and ordered by the order's key answered wrongly): in its sessions
    /// the table reports no order, and queries sort where they need one.
    ///
    /// ```
    /// # let rt = tokio::runtime::Runtime::new()?;
    /// # rt.block_on(async {
    /// # let path = std::env::temp_dir().join(format!("df-sorted-{}.npy", std::process::id()));
    /// # npy_serde::to_path(&path, &[1i64, 2, 3])?;
    /// use datafusion::prelude::SessionContext;
    /// use npy_datafusion::{NpyReadOptions, NpySessionExt, SortColumn};
    ///
    /// let options = NpyReadOptions::new().sorted_by([SortColumn::asc("value")]);
    /// let same = NpyReadOptions::new().set("sort_order", "value ASC")?;
    /// assert_eq!(options.sort_order(), same.sort_order());
    /// let ctx = SessionContext::new();
    /// ctx.register_npy("t", path.to_str().unwrap(), options).await?;
    /// let plan = ctx.sql("EXPLAIN SELECT value FROM t ORDER BY value").await?.collect().await?;
    /// let text = datafusion::arrow::util::pretty::pretty_format_batches(&plan)?.to_string();
    /// assert!(text.contains("output_ordering=[value@0 ASC NULLS LAST]"), "{text}");
    /// assert!(!text.contains("SortExec"), "{text}");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sorted_by(mut self, order: impl IntoIterator<Item = SortColumn>) -> Self {
        add_order(&mut self.sort_order, order);
        self
    }

    /// The declared orders ([`sorted_by`](Self::sorted_by)).
    pub fn sort_order(&self) -> &[Vec<SortColumn>] {
        &self.sort_order
    }

    /// The options with no order declared (for a planner that would not keep one).
    pub(crate) fn without_orders(mut self) -> Self {
        self.sort_order.clear();
        self
    }

    /// The declared orders as DataFusion's logical sort expressions (a listing table's
    /// `file_sort_order`).
    pub(crate) fn sort_exprs(&self) -> Vec<Vec<SortExpr>> {
        self.sort_order
            .iter()
            .map(|o| o.iter().map(SortColumn::sort_expr).collect())
            .collect()
    }

    /// The options with the orders of SQL's `WITH ORDER (...)` declared too: each must be of
    /// columns (a column table's order is of its columns).
    pub(crate) fn with_sort_exprs(mut self, orders: &[Vec<SortExpr>]) -> DfResult<Self> {
        for order in orders {
            let columns = order
                .iter()
                .map(|s| {
                    SortColumn::of_sort_expr(s).ok_or_else(|| {
                        DataFusionError::Configuration(format!(
                            "WITH ORDER ({s}): a column table's order is of its columns, \
                             COLUMN [ASC|DESC] [NULLS FIRST|LAST]"
                        ))
                    })
                })
                .collect::<DfResult<Vec<_>>>()?;
            self = self.sorted_by(columns);
        }
        Ok(self)
    }

    /// Fails naming a column of a declared order that `schema` (the table `table`'s) does not
    /// have.
    pub(crate) fn check_sort_order(&self, schema: &Schema, table: &str) -> DfResult<()> {
        let names = self.sort_order.iter().flatten().map(SortColumn::name);
        check_sort_columns(names, schema, table)
    }

    /// The declared orders over the columns of `schema`, as a scan reports them.
    pub(crate) fn output_ordering(&self, schema: &Schema) -> DfResult<Vec<LexOrdering>> {
        let mut orderings = Vec::new();
        for order in &self.sort_order {
            let mut exprs = Vec::with_capacity(order.len());
            for column in order {
                let index = schema.index_of(column.name())?;
                let options = column.sort_options();
                let expr = PhysicalColumn::new(column.name(), index);
                exprs.push(PhysicalSortExpr::new(std::sync::Arc::new(expr), options));
            }
            orderings.extend(LexOrdering::new(exprs));
        }
        Ok(orderings)
    }

    /// The `.npz` member the table reads, if its files are archives.
    pub fn member(&self) -> Option<&str> {
        self.member.as_deref()
    }

    /// How the values lie in the files.
    pub fn layout(&self) -> TableLayout {
        self.layout
    }

    /// Reads the files in `layout`: [`TableLayout::Columns`] makes the location an `.npz`
    /// archive of columns or a directory of per-column `.npy` files.
    ///
    /// ```
    /// use npy_datafusion::{NpyReadOptions, TableLayout};
    /// let options = NpyReadOptions::new().with_layout(TableLayout::Columns);
    /// assert_eq!(options.layout(), TableLayout::Columns);
    /// let same = NpyReadOptions::new().set("layout", "columns")?;
    /// assert_eq!(same.layout(), TableLayout::Columns);
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    pub fn with_layout(mut self, layout: TableLayout) -> Self {
        self.layout = layout;
        self
    }

    /// Whether a column table's scan checks the CRC-32 of each stored `.npz` member it reads
    /// whole (default true; the option `verify_crc`). A process checks a member once while
    /// its archive is unchanged (the same device, inode, size and modification and change
    /// times, last changed at least 2 s before the check): later scans trust that check.
    pub fn verify_crc(mut self, yes: bool) -> Self {
        self.skip_crc = !yes;
        self
    }

    /// Whether the CRC-32 of stored members is checked ([`verify_crc`](Self::verify_crc)).
    pub fn verifies_crc(&self) -> bool {
        !self.skip_crc
    }

    /// Sets the option `key` (a key of SQL's `OPTIONS`; see
    /// [`table_spec_help`](super::table_spec_help) for the list) from its text. An unknown key
    /// or a bad value is a configuration error naming it.
    pub fn set(mut self, key: &str, value: &str) -> DfResult<Self> {
        self.apply(key, value)
            .map_err(DataFusionError::Configuration)?;
        Ok(self)
    }

    /// Every option with its key, value (`None`: not set) and description; setting each
    /// entry with a value on [`NpyReadOptions::new`] gives these options back.
    pub fn entries(&self) -> Vec<ConfigEntry> {
        OPTIONS
            .iter()
            .map(|o| ConfigEntry {
                key: o.key.to_string(),
                value: (o.get)(self),
                description: o.help,
            })
            .collect()
    }

    /// Sets the option `key` from its text; the error is the message.
    pub(crate) fn apply(&mut self, key: &str, value: &str) -> Result<(), String> {
        let Some(option) = OPTIONS.iter().find(|o| o.key == key) else {
            return Err(format!(
                "unknown npy option {key:?}: the options are {}",
                option_keys()
            ));
        };
        (option.set)(self, value).map_err(|e| format!("npy option {key}: {e}"))
    }

    /// The archive options of an `.npz` table: the same limits; a member may be as large as
    /// the data limit allows.
    pub(crate) fn npz_options(&self) -> NpzReaderBuilder {
        let mut b = NpzReaderBuilder::new().reader_options(self.reader.clone());
        if let Some(max) = self.reader.max_data_size {
            let header = self.reader.limits().max_header_size.saturating_add(12);
            b = b.max_member_size(max.saturating_add(header));
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_set_again_give_the_options_back() {
        let o = NpyReadOptions::new()
            .reader_options(
                ReaderBuilder::new()
                    .max_depth(7)
                    .max_dims(3)
                    .max_empty_items(9)
                    .allow_pickle_data(true)
                    .pickle_options(
                        npy_serde::pickle::PickleOptions::default()
                            .encoding(npy_serde::pickle::Encoding::Latin1),
                    ),
            )
            .max_header_size(123)
            .max_data_size(456)
            .npz_member("x")
            .file_extension(".zip")
            .memory_map(false)
            .filter_pushdown(false)
            .sorted_by([
                SortColumn::asc("a"),
                SortColumn::desc("b c").nulls_first(false),
            ])
            .sorted_by([SortColumn::asc("x,\"y")]);
        let mut back = NpyReadOptions::new();
        for e in o.entries() {
            if let Some(v) = &e.value {
                back.apply(&e.key, v).unwrap();
            }
        }
        assert_eq!(
            format!("{:?}", back.entries()),
            format!("{:?}", o.entries())
        );
        assert_eq!(back.reader.limits.max_depth, 7);
        assert_eq!(back.reader.max_empty_items, 9);
        assert_eq!(
            back.reader.pickle.get_encoding(),
            npy_serde::pickle::Encoding::Latin1
        );
        assert_eq!(back.member(), Some("x"));
        assert_eq!(back.extension(), ".zip");
        assert!(back.read_access && back.keep_filters);
        assert_eq!(back.sort_order(), o.sort_order());
        assert_eq!(back.sort_order().len(), 2);
        // Unset options have no value.
        let none = NpyReadOptions::new().entries();
        let unset: Vec<&str> = none
            .iter()
            .filter(|e| e.value.is_none())
            .map(|e| e.key.as_str())
            .collect();
        assert_eq!(
            unset,
            [
                "member",
                "max_data_size",
                "file_extension",
                "allow_pickle_data",
                "pickle_encoding",
                "sort_order"
            ]
        );
    }

    #[test]
    fn bad_keys_and_values_are_named() {
        let mut o = NpyReadOptions::new();
        assert_eq!(
            o.apply("nope", "1").unwrap_err(),
            "unknown npy option \"nope\": the options are member, max_header_size, \
             max_data_size, max_depth, max_dims, max_empty_items, file_extension, \
             allow_pickle_data, pickle_encoding, layout, verify_crc, access, \
             filter_pushdown and sort_order"
        );
        assert_eq!(
            o.apply("max_header_size", "big").unwrap_err(),
            "npy option max_header_size: expected a number of bytes, found \"big\""
        );
        assert_eq!(
            o.apply("max_dims", "-1").unwrap_err(),
            "npy option max_dims: expected a number, found \"-1\""
        );
        assert_eq!(
            o.apply("member", "").unwrap_err(),
            "npy option member: expected a member key, found \"\""
        );
        o.apply("layout", "columns").unwrap();
        assert_eq!(o.layout(), TableLayout::Columns);
        assert!(o
            .apply("layout", "diagonal")
            .unwrap_err()
            .contains("unknown layout \"diagonal\": the layouts are rows and columns"));
        assert_eq!(
            o.apply("verify_crc", "maybe").unwrap_err(),
            "npy option verify_crc: expected true or false, found \"maybe\""
        );
        o.apply("verify_crc", "false").unwrap();
        assert!(!o.verifies_crc());
        o.apply("layout", "rows").unwrap();
        assert_eq!(
            o.apply("access", "mapped").unwrap_err(),
            "npy option access: expected mmap or read, found \"mapped\""
        );
        assert_eq!(
            o.apply("filter_pushdown", "yes").unwrap_err(),
            "npy option filter_pushdown: expected true or false, found \"yes\""
        );
        o.apply("access", "read").unwrap();
        o.apply("filter_pushdown", "false").unwrap();
        assert!(o.read_access && o.keep_filters);
        assert_eq!(o.layout(), TableLayout::Rows);
        for bad in ["", " ; ", "a,", "a b", "a asc nulls", "\"a"] {
            let e = o.apply("sort_order", bad).unwrap_err();
            assert!(e.starts_with("npy option sort_order: "), "{bad:?}: {e}");
        }
        let e = NpyReadOptions::new().set("nope", "1").unwrap_err();
        assert!(matches!(e, DataFusionError::Configuration(_)), "{e}");
    }

    #[test]
    fn sort_orders_parse_as_sql_writes_them_and_print_back() {
        let o = NpyReadOptions::new()
            .set(
                "sort_order",
                "k, \"ship day\" DESC; V desc NULLS last ; x nulls FIRST",
            )
            .unwrap();
        let want = [
            vec![SortColumn::asc("k"), SortColumn::desc("ship day")],
            vec![SortColumn::desc("V").nulls_first(false)],
            vec![SortColumn::asc("x").nulls_first(true)],
        ];
        assert_eq!(o.sort_order(), want);
        let text = format_orders(o.sort_order());
        assert_eq!(
            text,
            "k ASC NULLS LAST, \"ship day\" DESC NULLS FIRST; V DESC NULLS LAST; \
             x ASC NULLS FIRST"
        );
        assert_eq!(parse_orders(&text).unwrap(), want);
        // The logical expressions DataFusion's listing tables take, and back.
        let exprs = o.sort_exprs();
        assert_eq!(exprs[0][1].to_string(), "ship day DESC NULLS FIRST");
        let again = NpyReadOptions::new().with_sort_exprs(&exprs).unwrap();
        assert_eq!(again.sort_order(), want);
        // The physical orderings over a schema: indices of its columns.
        use arrow_schema::{DataType, Field};
        let schema = Schema::new(vec![
            Field::new("x", DataType::Int64, false),
            Field::new("k", DataType::Int64, false),
            Field::new("ship day", DataType::Int32, true),
            Field::new("V", DataType::Int8, false),
        ]);
        let orderings = o.output_ordering(&schema).unwrap();
        let shown: Vec<String> = orderings.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            shown,
            [
                "k@1 ASC NULLS LAST, ship day@2 DESC",
                "V@3 DESC NULLS LAST",
                "x@0 ASC"
            ]
        );
        o.check_sort_order(&schema, "t").unwrap();
        let e = NpyReadOptions::new()
            .sorted_by([SortColumn::asc("y")])
            .check_sort_order(&schema, "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the table t has no column \"y\"; its columns are x, k, ship day, V"),
            "{e}"
        );
    }
}
