//! Sort orders of a table's rows: [`SortColumn`] (one column of an order, SQL's
//! `name [ASC|DESC] [NULLS FIRST|NULLS LAST]`), [`OrderCheck`] (verifies that batches stream in
//! an order, row after row across batches) and [`RecordedOrder`] (the record of a verified
//! order kept with a table, where NumPy still loads it: see [Where the record is](#where-the-record-is));
//! and, kept in the same places, [`RecordedStats`] (a column table's column statistics, see
//! [the statistics record](#the-statistics-record-stats-version-1)).
//!
//! `npy convert --sorted-by` checks its rows with an [`OrderCheck`] while it writes and, when
//! every row was in order, records the order; npy-datafusion reads the record and reports the
//! order to DataFusion for a table that declares none, so that an `ORDER BY` or a `GROUP BY` on
//! the key plans no sort.
//!
//! # Where the record is
//!
//! NumPy refuses `.npy` header keys it does not know, so the record is kept beside the arrays:
//!
//! | table | record |
//! |---|---|
//! | an `.npz` archive (of rows or of columns) | the zip archive comment ([`NpzWriter::set_comment`](npy_serde::npz::NpzWriter::set_comment)), which `np.load` and `zipfile` ignore |
//! | a directory of per-column `.npy` files | the file [`DIRECTORY_RECORD`] (`_npy_order`) in the directory (not a `.npy` file, so not a column) |
//! | a `.npy` file of rows | the file `FILE.npy.order` beside it ([`sidecar_of`]) |
//!
//! # The record's text (version 1)
//!
//! One line of UTF-8: `npy-serde/1:sort_order=ORDER;rows=N`, then `;member=KEY` for an archive
//! of rows (the member the rows are in: `KEY` is the rest of the line). `ORDER` is the columns
//! as [`SortColumn`] writes them (`a ASC NULLS LAST, "b c" DESC NULLS FIRST`); `N` is the
//! number of rows that were verified. A reader trusts a record only while it holds: the table
//! has `N` rows (every column, for a column table), the member named is the one read, and every
//! column named is there ([`RecordedOrder::holds_for`]). A record whose check fails is stale
//! (another tool rewrote the table and kept the comment or the file) and is ignored; so is a
//! record of another version or one that does not parse. A rewrite that keeps the number of
//! rows is not detected: whatever rewrites a table in place should remove its record (`npy
//! convert` does).
//!
//! A record's text may have other lines (a statistics record, below): the order record is the
//! first line that is one. (Readers older than the statistics record read the whole text as
//! one record, so they take a text with a statistics line for no record at all: they ignore it.)
//!
//! ```
//! use npy_arrow::order::{RecordedOrder, SortColumn};
//!
//! let record = RecordedOrder::new(vec![SortColumn::asc("k"), SortColumn::desc("t")], 3);
//! let text = record.to_string();
//! assert_eq!(text, "npy-serde/1:sort_order=k ASC NULLS LAST, t DESC NULLS FIRST;rows=3");
//! let back = RecordedOrder::parse(text.as_bytes()).unwrap();
//! assert_eq!(back, record);
//! assert!(back.holds_for(3, None));
//! assert!(!back.holds_for(4, None)); // stale: the table has another number of rows
//! assert_eq!(RecordedOrder::parse(b"made by zip"), None);
//! ```
//!
//! # The statistics record (`stats` version 1)
//!
//! A column table's writer ([`ColumnTableWriter`](crate::ColumnTableWriter), and so `npy
//! convert --layout columns` and npy-datafusion's `COPY ... TO` in column layout) records what
//! it saw of each column's values ([`RecordedStats`]): in the same place as the order record
//! (the archive's comment, the directory's `_npy_order`), on a line of its own after it (or
//! alone, when no order was verified). One line of UTF-8:
//!
//! ```text
//! npy-serde/stats1:rows=N;"NAME","TYPE",NULLS,DISTINCT,"MIN","MAX";"NAME","TYPE",NULLS,,,;...
//! ```
//!
//! `N` is the number of rows written; then one entry per column, `;` before each: its name,
//! its Arrow type as the writer had it (`DataType`'s `Display`: `Int64`, `Utf8`, `Date32`,
//! `Timestamp(ns, "UTC")`), its number of nulls and an estimate of its number of distinct
//! values other than null (a HyperLogLog sketch's, within a few percent; each empty: not
//! known), its least and greatest values (both empty: not known). Names, types and values are in double quotes, `"` and `\`
//! escaped by a `\`, a line end written `\n` and a carriage return `\r`. A value's text is:
//! an integer's decimal digits (for dates, times, timestamps and durations, the integer they
//! are stored as: days, or units since the epoch); a float's shortest text that reads back as
//! it (`-0.5`, `inf`; NaN is never a least or greatest value: it is left out); `true` or
//! `false`; a string itself (one longer than [`MAX_VALUE`] bytes is left out, both values of
//! its column with it). Other types (structs, lists, bytes, decimals) have no entry. The values
//! are those of the arrays as written, after the null and decimal policies (a filled null is
//! its fill value, a float's null the NaN it is written as), which are what a reader gets.
//!
//! The whole text (order and statistics) is at most [`MAX_RECORD`] bytes, what a zip comment
//! holds: a writer whose statistics would not fit leaves them out; a reader takes a longer text
//! for no record. The record is untrusted (anyone can write a comment): its parser checks
//! every length and number, allocates only as it reads, and a line that does not parse is no
//! record (nor is a count above `N`). A reader uses it only as estimates, and only while it holds: the table has `N` rows,
//! and a column's entry is used only while the column has that name and that Arrow type. A
//! rewrite that keeps both is not detected: npy-datafusion reports the values as inexact
//! statistics (for planning: join order, filter selectivity), never to answer a query or skip
//! rows, so a stale record can only make a plan slower.
//!
//! ```
//! use npy_arrow::order::{read_archive_records, RecordedStats};
//! # use std::sync::Arc;
//! # use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
//! # let dir = std::env::temp_dir().join(format!("stats-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! let batch = RecordBatch::try_from_iter([
//!     ("k", Arc::new(Int64Array::from(vec![3, 1, 2])) as ArrayRef),
//!     ("x", Arc::new(Float64Array::from(vec![Some(0.5), None, Some(-1.0)])) as ArrayRef),
//! ]).unwrap();
//! let path = dir.join("t.npz");
//! let mut w = npy_arrow::BatchWriterBuilder::new()
//!     .nulls(npy_arrow::NullPolicy::Nan)
//!     .column_table(&path, &batch.schema())?;
//! w.write(&batch)?;
//! w.finish()?;
//! let stats = read_archive_records(&path)?.stats.unwrap();
//! assert_eq!(
//!     stats.to_string(),
//!     r#"npy-serde/stats1:rows=3;"k","Int64",0,3,"1","3";"x","Float64",0,3,"-1","0.5""#
//! );
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), npy_serde::Error>(())
//! ```

mod check;
mod collect;
mod record;
mod stats;
mod written;

use std::fmt;
use std::str::FromStr;

pub use check::OrderCheck;
#[cfg(feature = "npz")]
pub(crate) use collect::as_read;
pub use collect::StatsCollector;
#[cfg(feature = "npz")]
pub use record::{read_archive_record, read_archive_records};
pub use record::{
    read_directory_record, read_directory_records, read_file_record, remove_stale_sidecar,
    sidecar_of, write_sidecar, write_table_record, RecordedOrder, TableRecord, DIRECTORY_RECORD,
    RECORD_PREFIX,
};
pub use stats::{ColumnStats, RecordedStats, MAX_RECORD, MAX_VALUE, STATS_PREFIX};
pub use written::WrittenOrderCheck;

/// One column of a sort order: its name, its direction and where its nulls are.
///
/// Its text is SQL's: `name [ASC|DESC] [NULLS FIRST|NULLS LAST]` (`"quoted name"` when the
/// name is not letters, digits and `_`); the nulls are last when ascending and first when
/// descending unless it says (DataFusion's default, so that `ORDER BY name` and
/// `ORDER BY name DESC` match the order).
///
/// ```
/// use npy_arrow::order::SortColumn;
/// let key: SortColumn = "l_orderkey".parse()?;
/// assert_eq!(key, SortColumn::asc("l_orderkey"));
/// assert_eq!(key.to_string(), "l_orderkey ASC NULLS LAST");
/// let day: SortColumn = "\"ship day\" desc nulls last".parse()?;
/// assert_eq!(day, SortColumn::desc("ship day").nulls_first(false));
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortColumn {
    name: String,
    descending: bool,
    nulls_first: bool,
}

impl SortColumn {
    /// The column `name`, ascending, nulls last.
    pub fn asc(name: impl Into<String>) -> SortColumn {
        SortColumn {
            name: name.into(),
            descending: false,
            nulls_first: false,
        }
    }

    /// The column `name`, descending, nulls first.
    pub fn desc(name: impl Into<String>) -> SortColumn {
        SortColumn {
            name: name.into(),
            descending: true,
            nulls_first: true,
        }
    }

    /// The column `name` in the direction `descending`, its nulls first or last.
    pub fn new(name: impl Into<String>, descending: bool, nulls_first: bool) -> SortColumn {
        SortColumn {
            name: name.into(),
            descending,
            nulls_first,
        }
    }

    /// The same column with its nulls first (`true`) or last.
    pub fn nulls_first(mut self, first: bool) -> SortColumn {
        self.nulls_first = first;
        self
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it is descending.
    pub fn is_descending(&self) -> bool {
        self.descending
    }

    /// Whether its nulls come first.
    pub fn is_nulls_first(&self) -> bool {
        self.nulls_first
    }

    /// Arrow's sort options of the column.
    pub fn sort_options(&self) -> arrow_schema::SortOptions {
        arrow_schema::SortOptions {
            descending: self.descending,
            nulls_first: self.nulls_first,
        }
    }
}

impl fmt::Display for SortColumn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plain = !self.name.is_empty()
            && !self.name.starts_with(|c: char| c.is_ascii_digit())
            && self.name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if plain {
            f.write_str(&self.name)?;
        } else {
            write!(f, "\"{}\"", self.name.replace('"', "\"\""))?;
        }
        let direction = if self.descending { "DESC" } else { "ASC" };
        let nulls = if self.nulls_first { "FIRST" } else { "LAST" };
        write!(f, " {direction} NULLS {nulls}")
    }
}

impl FromStr for SortColumn {
    type Err = String;

    /// Parses `name [ASC|DESC] [NULLS FIRST|NULLS LAST]` (keywords in any case).
    fn from_str(text: &str) -> Result<SortColumn, String> {
        let text = text.trim();
        let (name, rest) = match text.strip_prefix('"') {
            Some(quoted) => {
                let mut name = String::new();
                let mut chars = quoted.char_indices().peekable();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    if c != '"' {
                        name.push(c);
                    } else if chars.peek().is_some_and(|&(_, n)| n == '"') {
                        name.push('"');
                        chars.next();
                    } else {
                        end = Some(i + 1);
                        break;
                    }
                }
                let Some(end) = end else {
                    return Err(format!(
                        "the quote of {text:?} is not closed (a quote inside quotes is \
                         written \"\")"
                    ));
                };
                (name, &quoted[end..])
            }
            None => {
                let end = text.find(char::is_whitespace).unwrap_or(text.len());
                (text[..end].to_string(), &text[end..])
            }
        };
        if name.is_empty() {
            return Err(format!("expected a column name, found {text:?}"));
        }
        let words: Vec<String> = rest
            .split_whitespace()
            .map(str::to_ascii_uppercase)
            .collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let (descending, nulls) = match words.as_slice() {
            [] => (false, &[][..]),
            ["ASC", nulls @ ..] => (false, nulls),
            ["DESC", nulls @ ..] => (true, nulls),
            nulls => (false, nulls),
        };
        let nulls_first = match nulls {
            [] => descending,
            ["NULLS", "FIRST"] => true,
            ["NULLS", "LAST"] => false,
            _ => {
                return Err(format!(
                    "{text:?}: expected COLUMN [ASC|DESC] [NULLS FIRST|NULLS LAST] (a name \
                     holding spaces is \"quoted\")"
                ))
            }
        };
        Ok(SortColumn {
            name,
            descending,
            nulls_first,
        })
    }
}

/// Splits `text` at each `sep` outside double quotes.
pub(crate) fn split_unquoted(text: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in text.char_indices() {
        if c == '"' {
            quoted = !quoted;
        } else if c == sep && !quoted {
            out.push(&text[start..i]);
            start = i + 1;
        }
    }
    out.push(&text[start..]);
    out
}

/// Orders separated by `;` (outside quotes), each as [`parse_order`] reads it (empty ones
/// skipped); at least one. The text of the table option `sort_order`.
///
/// ```
/// use npy_arrow::order::{parse_orders, SortColumn};
/// let orders = parse_orders("a; b DESC")?;
/// assert_eq!(orders, [vec![SortColumn::asc("a")], vec![SortColumn::desc("b")]]);
/// assert!(parse_orders(";").is_err());
/// # Ok::<(), String>(())
/// ```
pub fn parse_orders(text: &str) -> Result<Vec<Vec<SortColumn>>, String> {
    let mut orders = Vec::new();
    for order in split_unquoted(text, ';') {
        if order.trim().is_empty() {
            continue;
        }
        orders.push(parse_order(order)?);
    }
    if orders.is_empty() {
        return Err(format!(
            "expected COLUMN [ASC|DESC] [NULLS FIRST|NULLS LAST], ..., found {text:?}"
        ));
    }
    Ok(orders)
}

/// One order: columns separated by `,` (outside quotes), each a [`SortColumn`]; at least one.
///
/// ```
/// use npy_arrow::order::{parse_order, SortColumn};
/// let order = parse_order("a, \"b, c\" DESC")?;
/// assert_eq!(order, [SortColumn::asc("a"), SortColumn::desc("b, c")]);
/// assert!(parse_order(" ").is_err());
/// # Ok::<(), String>(())
/// ```
pub fn parse_order(text: &str) -> Result<Vec<SortColumn>, String> {
    if text.trim().is_empty() {
        return Err(format!(
            "expected COLUMN [ASC|DESC] [NULLS FIRST|NULLS LAST], ..., found {text:?}"
        ));
    }
    split_unquoted(text, ',')
        .into_iter()
        .map(SortColumn::from_str)
        .collect()
}

/// The text of `order` that [`parse_order`] reads back: its columns joined by `, `.
pub fn format_order(order: &[SortColumn]) -> String {
    let columns: Vec<String> = order.iter().map(SortColumn::to_string).collect();
    columns.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_parse_and_print_back() {
        for (text, want) in [
            ("a", SortColumn::asc("a")),
            ("a desc", SortColumn::desc("a")),
            (
                "a DESC NULLS LAST",
                SortColumn::desc("a").nulls_first(false),
            ),
            ("a nulls first", SortColumn::asc("a").nulls_first(true)),
            ("\"x \"\"y\"\"\" asc", SortColumn::asc("x \"y\"")),
            ("\"1st\"", SortColumn::asc("1st")),
        ] {
            let got: SortColumn = text.parse().unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string().parse::<SortColumn>().unwrap(), want);
        }
        for bad in ["", "\"open", "a sideways", "a nulls middle"] {
            assert!(bad.parse::<SortColumn>().is_err(), "{bad}");
        }
    }

    #[test]
    fn orders_split_outside_quotes() {
        let order = parse_order("a, \"b,c\" desc,d").unwrap();
        assert_eq!(
            order,
            [
                SortColumn::asc("a"),
                SortColumn::desc("b,c"),
                SortColumn::asc("d")
            ]
        );
        assert_eq!(parse_order(&format_order(&order)).unwrap(), order);
        assert!(parse_order("a,,b").is_err());
    }
}
