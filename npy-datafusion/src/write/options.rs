//! [`NpyWriteOptions`]: how `COPY TO` and `INSERT INTO` write `.npy` files and `.npz` archives
//! (the layout, the member of a row archive, and the batch writer's null, decimal and string
//! choices), and their SQL option keys.

use std::collections::BTreeMap;

use arrow_schema::Schema;
use datafusion::error::{DataFusionError, Result as DfResult};
use npy_arrow::order::{format_order, parse_orders, SortColumn};
use npy_arrow::{BatchWriterBuilder, DecimalPolicy, NullPolicy};

use crate::options::TableLayout;

/// The member key of a row archive when no `member` option names one: NumPy's own for the
/// first array `np.savez(path, a)` is given.
pub(crate) const DEFAULT_MEMBER: &str = "arr_0";

/// The option keys (after `format.`) that are write options; `nulls`, `decimals` and
/// `string_width` also take `KEY.COLUMN` for one column.
pub(crate) const WRITE_KEYS: &[&str] = &["nulls", "decimals", "string_width", "strings"];

/// The option keys that are both read and write options: a format takes them for both.
pub(crate) const SHARED_KEYS: &[&str] = &["layout", "sort_order"];

/// How `COPY ... TO` and `INSERT INTO` write `.npy` files and `.npz` archives: the choices of
/// npy-arrow's [`BatchWriterBuilder`] (what a null becomes, how decimals are written, the width
/// of string columns), the layout of an archive and the member of a row archive.
///
/// Each has an option key for SQL (`COPY ... OPTIONS ('nulls' 'nan')`, a `STORED AS NPY`
/// table's `OPTIONS` for its `INSERT`s) and [`set`](Self::set):
///
/// | key | value | default |
/// |---|---|---|
/// | `nulls`, `nulls.COLUMN` | `error`, `nan`, `fill=VALUE`, `mask` ([`NullPolicy`]) | `error` |
/// | `decimals`, `decimals.COLUMN` | `auto`, `f8`, `scaled` ([`DecimalPolicy`]) | `auto` |
/// | `string_width`, `string_width.COLUMN` | characters (`U`) or bytes (`S`) | the widest value |
/// | `strings` | `fixed` (`U<n>`) or `objects` (an object array of one string column) | `fixed` |
/// | `layout` | `rows` (one record array) or `columns` (an `.npz` member per column) | `rows` |
/// | `member` | the key of a row archive's one member | `arr_0` |
/// | `sort_order` | `COLUMN [ASC\|DESC] [NULLS FIRST\|LAST], ...` (after `;` another order): verified while written, recorded | none |
///
/// # Recorded orders
///
/// Each file a statement writes gets the record of its order that npy-arrow's
/// [`order`](npy_arrow::order) module describes (what `npy convert --sorted-by` writes: a
/// `.npy` file's `FILE.npy.order`, an archive's comment), or none; a statement never leaves
/// the record of an earlier file in place:
///
/// - With `sort_order` ([`sorted_by`](Self::sorted_by); on a table `STORED AS NPY` its read
///   option of the same key, so its `INSERT`s are checked too) every row of every file is
///   verified in each order given, against the row before it, as it is written; a row out of
///   order fails the statement naming the rows and their values, and nothing is written (no
///   file, no record changed). The first order is recorded.
/// - Without it, the order the plan gives the rows (a `COPY (SELECT ... ORDER BY k) TO`, the
///   order an `INSERT INTO` a table with an order sorts its rows in) is verified the same way
///   and recorded when every row of the file was in it; when one was not, nothing is recorded
///   (the statement succeeds).
/// - A key column holding nulls gives no record unless its nulls read back as nulls (the
///   `mask` policy; `NaT` in datetime and duration columns): `nan` and `fill` write them as
///   values, which need not be where the nulls were. With `sort_order` such a null fails the
///   statement.
/// - A record is put in place after its file: an earlier `FILE.npy.order` is removed before
///   the new file is renamed over the old (or uploaded), the new one written after it; an
///   archive carries its record in its own comment. A file written into a directory that holds
///   a column table's `_npy_order` removes that record (the table's columns changed).
///
/// A string column whose width no option gives is as wide as its widest value over the whole
/// output (as `npy convert` writes it): its file's batches are held in memory until the last
/// one has come. Give `string_width` to stream them.
///
/// ```
/// use npy_datafusion::NpyWriteOptions;
/// let options = NpyWriteOptions::new()
///     .set("nulls", "nan")?
///     .set("decimals.price", "scaled")?
///     .set("string_width", "12")?;
/// assert!(NpyWriteOptions::new().set("nulls", "zero").is_err());
/// # Ok::<(), datafusion::error::DataFusionError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NpyWriteOptions {
    pub(crate) nulls: Option<NullPolicy>,
    pub(crate) nulls_for: BTreeMap<String, NullPolicy>,
    pub(crate) decimals: Option<DecimalPolicy>,
    pub(crate) decimals_for: BTreeMap<String, DecimalPolicy>,
    pub(crate) width: Option<usize>,
    pub(crate) widths: BTreeMap<String, usize>,
    pub(crate) objects: bool,
    pub(crate) layout: TableLayout,
    pub(crate) sort_order: Vec<Vec<SortColumn>>,
}

impl NpyWriteOptions {
    /// The defaults: a null is an error, decimals [`DecimalPolicy::Auto`], strings as wide as
    /// their widest value, rows.
    pub fn new() -> Self {
        Self::default()
    }

    /// What a null becomes in every column not given its own policy.
    pub fn nulls(mut self, policy: NullPolicy) -> Self {
        self.nulls = Some(policy);
        self
    }

    /// What a null becomes in the column `column`.
    pub fn nulls_for(mut self, column: &str, policy: NullPolicy) -> Self {
        self.nulls_for.insert(column.to_string(), policy);
        self
    }

    /// How every decimal column not given its own policy is written.
    pub fn decimals(mut self, policy: DecimalPolicy) -> Self {
        self.decimals = Some(policy);
        self
    }

    /// How the decimal column `column` is written.
    pub fn decimals_for(mut self, column: &str, policy: DecimalPolicy) -> Self {
        self.decimals_for.insert(column.to_string(), policy);
        self
    }

    /// The width of every string column not given its own (its batches are then streamed).
    pub fn string_width(mut self, width: usize) -> Self {
        self.width = Some(width);
        self
    }

    /// The width of the string column `column`.
    pub fn string_width_for(mut self, column: &str, width: usize) -> Self {
        self.widths.insert(column.to_string(), width);
        self
    }

    /// Writes an output of one string column as an object array (`'|O'`, see
    /// [`BatchWriterBuilder::strings_as_objects`]).
    pub fn strings_as_objects(mut self, yes: bool) -> Self {
        self.objects = yes;
        self
    }

    /// Rows (one record array, the default) or columns (an `.npz` archive of one member per
    /// column, what `npy convert --layout columns` writes).
    pub fn layout(mut self, layout: TableLayout) -> Self {
        self.layout = layout;
        self
    }

    /// Verifies every row written in `order` (the option `sort_order`; another call adds an
    /// order that must also hold) and records the first order with each file: see
    /// [Recorded orders](Self#recorded-orders).
    ///
    /// ```
    /// use npy_datafusion::{NpyWriteOptions, SortColumn};
    /// let options = NpyWriteOptions::new().sorted_by([SortColumn::asc("k")]);
    /// assert_eq!(options, NpyWriteOptions::new().set("sort_order", "k ASC")?);
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    pub fn sorted_by(mut self, order: impl IntoIterator<Item = SortColumn>) -> Self {
        crate::options::add_order(&mut self.sort_order, order);
        self
    }

    /// The orders verified and recorded ([`sorted_by`](Self::sorted_by)).
    pub fn sort_order(&self) -> &[Vec<SortColumn>] {
        &self.sort_order
    }

    /// Every option set, as the `(key, value)` pairs [`set`](Self::set) takes back: options
    /// that have no value of their own (the defaults) are left out, so
    /// `entries()` folded through `set` over [`new`](Self::new) gives these options again. It is
    /// how a Ballista plan carries them (the sink of `COPY TO` and `INSERT INTO`, a table's
    /// format).
    ///
    /// ```
    /// use npy_datafusion::NpyWriteOptions;
    /// let options = NpyWriteOptions::new().set("nulls.v", "fill=-1")?.set("layout", "columns")?;
    /// let entries = options.entries();
    /// assert!(entries.contains(&("nulls.v".to_string(), "fill=-1".to_string())));
    /// let back = entries
    ///     .iter()
    ///     .try_fold(NpyWriteOptions::new(), |o, (k, v)| o.set(k, v))?;
    /// assert_eq!(back, options);
    /// # Ok::<(), datafusion::error::DataFusionError>(())
    /// ```
    pub fn entries(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut push = |key: String, value: String| out.push((key, value));
        if let Some(p) = &self.nulls {
            push("nulls".into(), p.to_string());
        }
        for (c, p) in &self.nulls_for {
            push(format!("nulls.{c}"), p.to_string());
        }
        if let Some(p) = self.decimals {
            push("decimals".into(), p.to_string());
        }
        for (c, p) in &self.decimals_for {
            push(format!("decimals.{c}"), p.to_string());
        }
        if let Some(w) = self.width {
            push("string_width".into(), w.to_string());
        }
        for (c, w) in &self.widths {
            push(format!("string_width.{c}"), w.to_string());
        }
        if self.objects {
            push("strings".into(), "objects".into());
        }
        if self.layout != TableLayout::default() {
            push("layout".into(), self.layout.name().into());
        }
        if !self.sort_order.is_empty() {
            let orders: Vec<String> = self.sort_order.iter().map(|o| format_order(o)).collect();
            push("sort_order".into(), orders.join("; "));
        }
        out
    }

    /// True if `key` (without its `format.` prefix) is a write option's key only (`layout`,
    /// `sort_order` and `member` are also read options: a format takes them for both).
    pub(crate) fn is_write_key(key: &str) -> bool {
        let head = key.split_once('.').map_or(key, |(h, _)| h);
        WRITE_KEYS.contains(&head)
    }

    /// Sets the option `key` (see the table above; a `format.` prefix is ignored) from its
    /// text. An unknown key or a bad value is an error naming the key, what was expected and
    /// what was found.
    pub fn set(mut self, key: &str, value: &str) -> DfResult<Self> {
        let key = key.strip_prefix("format.").unwrap_or(key);
        self.apply(key, value)
            .map_err(|e| DataFusionError::Configuration(format!("npy write option {key}: {e}")))?;
        Ok(self)
    }

    fn apply(&mut self, key: &str, value: &str) -> Result<(), String> {
        let (head, column) = match key.split_once('.') {
            Some((head, column)) if !column.is_empty() => (head, Some(column)),
            Some(_) => return Err("expected KEY or KEY.COLUMN, found an empty column".into()),
            None => (key, None),
        };
        match (head, column) {
            ("nulls", c) => {
                let p: NullPolicy = value.parse().map_err(|e: npy_serde::Error| e.to_string())?;
                match c {
                    Some(c) => {
                        self.nulls_for.insert(c.to_string(), p);
                    }
                    None => self.nulls = Some(p),
                }
            }
            ("decimals", c) => {
                let p: DecimalPolicy =
                    value.parse().map_err(|e: npy_serde::Error| e.to_string())?;
                match c {
                    Some(c) => {
                        self.decimals_for.insert(c.to_string(), p);
                    }
                    None => self.decimals = Some(p),
                }
            }
            ("string_width", c) => {
                let n: usize =
                    value.parse().ok().filter(|&n| n > 0).ok_or_else(|| {
                        format!("expected a width of at least 1, found {value:?}")
                    })?;
                match c {
                    Some(c) => {
                        self.widths.insert(c.to_string(), n);
                    }
                    None => self.width = Some(n),
                }
            }
            ("strings", None) => {
                self.objects = match value {
                    "fixed" => false,
                    "objects" => true,
                    other => return Err(format!("expected fixed or objects, found {other:?}")),
                }
            }
            ("layout", None) => {
                self.layout = match value {
                    "rows" => TableLayout::Rows,
                    "columns" => TableLayout::Columns,
                    other => return Err(format!("expected rows or columns, found {other:?}")),
                }
            }
            ("sort_order", None) => self.sort_order = parse_orders(value)?,
            _ => {
                return Err(format!(
                    "unknown key: the write options are nulls[.COLUMN], decimals[.COLUMN], \
                     string_width[.COLUMN], strings, layout, sort_order and member, found {key:?}"
                ))
            }
        }
        Ok(())
    }

    /// `wb` with these options for files of `schema`, whose output is partitioned by
    /// `partitions` (hive-style `COLUMN=value/` directories; empty for none): a column named
    /// by an option is matched exactly, else without regard to case (SQL lowercases option
    /// keys); one the files have not is an error naming it and the files' columns, or saying
    /// that it is a partition column (its values are in the directory names, not in a file,
    /// so no per-column option applies to it).
    pub(crate) fn builder_over(
        &self,
        mut wb: BatchWriterBuilder,
        schema: &Schema,
        partitions: &[String],
    ) -> DfResult<BatchWriterBuilder> {
        let column_of = |key: &str, column: &str| column_of(schema, partitions, key, column);
        if let Some(p) = &self.nulls {
            wb = wb.nulls(p.clone());
        }
        for (c, p) in &self.nulls_for {
            wb = wb.nulls_for(&column_of("nulls", c)?, p.clone());
        }
        if let Some(p) = self.decimals {
            wb = wb.decimals(p);
        }
        for (c, p) in &self.decimals_for {
            wb = wb.decimals_for(&column_of("decimals", c)?, *p);
        }
        if let Some(w) = self.width {
            wb = wb.default_string_width(w);
        }
        for (c, w) in &self.widths {
            wb = wb.string_width(&column_of("string_width", c)?, *w);
        }
        if self.objects {
            wb = wb.strings_as_objects(true);
        }
        Ok(wb)
    }

    /// True if a string column of `schema` has no width from these options: its width is
    /// measured over every batch first.
    pub(crate) fn measures(&self, schema: &Schema) -> bool {
        !self.objects
            && self.width.is_none()
            && schema.fields().iter().any(|f| {
                npy_arrow::needs_width(f.data_type())
                    && !self.widths.keys().any(|c| c.eq_ignore_ascii_case(f.name()))
            })
    }
}

/// The column of `schema` (the files' columns; the output's `partitions` are not among them)
/// an option `key.column` names.
fn column_of(schema: &Schema, partitions: &[String], key: &str, column: &str) -> DfResult<String> {
    let names = || {
        schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if schema.field_with_name(column).is_ok() {
        return Ok(column.to_string());
    }
    let found: Vec<&str> = schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| n.eq_ignore_ascii_case(column))
        .collect();
    let partition = (partitions.iter())
        .find(|p| p.as_str() == column)
        .or_else(|| partitions.iter().find(|p| p.eq_ignore_ascii_case(column)));
    match (found.as_slice(), partition) {
        ([one], _) => Ok(one.to_string()),
        ([], Some(p)) => Err(DataFusionError::Configuration(format!(
            "npy write option {key}.{column}: {p} is a partition column of the output: its \
             values are the directory names ({p}=VALUE/), not data in the files, so it takes \
             no per-column option (the files' columns: {})",
            names()
        ))),
        ([], None) => Err(DataFusionError::Configuration(format!(
            "npy write option {key}.{column}: the output has no column {column:?} (its columns: {})",
            names()
        ))),
        (_, _) => Err(DataFusionError::Configuration(format!(
            "npy write option {key}.{column}: columns {} differ only in case; SQL lowercases \
             option keys, so name a column whose name is unique without case",
            found.join(" and ")
        ))),
    }
}
