//! Tables of other formats beside the `.npy` ones: Parquet, Arrow IPC files (`.arrow`,
//! `.feather`) and CSV, read by DataFusion's own readers (its `ParquetFormat`, `ArrowFormat`
//! and `CsvFormat` under a listing table), so that one query joins them with `.npy` tables.
//! Here: the CSV options of a table spec ([`CsvOptions`], their keys declared once in
//! [`CSV_OPTIONS`]) and DataFusion's format of each (the listing table over them is
//! [`listing`](super::listing)'s).
//!
//! Parquet tables need npy-serde's `parquet` feature beside `datafusion` (it turns on
//! DataFusion's Parquet reader; `ballista` has it already); Arrow and CSV tables come with
//! `datafusion` alone (DataFusion builds their readers in any case).

use std::sync::Arc;

use datafusion::config::TableOptions;
use datafusion::datasource::file_format::arrow::ArrowFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::error::Result as DfResult;

/// How a CSV table's files are read: whether their first line is a header (the column
/// names; default yes) and the delimiter (default `,`). Without a header the columns are
/// `column_1`, `column_2`, ...; the column types are inferred from the first 1000 rows, as
/// DataFusion infers them.
///
/// ```
/// use npy_datafusion::{CsvOptions, TableSpec};
/// let spec: TableSpec = "csv(data/*.tsv, header=false, delimiter=\\t)".parse()?;
/// assert_eq!(spec.csv_options(), &CsvOptions::new().with_header(false).with_delimiter(b'\t'));
/// assert_eq!(CsvOptions::new().delimiter(), b',');
/// # Ok::<(), npy_datafusion::TableSpecError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    header: bool,
    delimiter: u8,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            header: true,
            delimiter: b',',
        }
    }
}

impl CsvOptions {
    /// The defaults: a header line, `,` between values.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the first line of each file names the columns.
    pub fn with_header(mut self, header: bool) -> Self {
        self.header = header;
        self
    }

    /// The byte between values.
    pub fn with_delimiter(mut self, delimiter: u8) -> Self {
        self.delimiter = delimiter;
        self
    }

    /// Whether the first line of each file names the columns.
    pub fn header(&self) -> bool {
        self.header
    }

    /// The byte between values.
    pub fn delimiter(&self) -> u8 {
        self.delimiter
    }

    /// Sets the option `key` of [`CSV_OPTIONS`] from its text, or `None` when `key` is not one
    /// of them; the error says what was expected.
    pub(crate) fn apply(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        let option = CSV_OPTIONS.iter().find(|o| o.key == key)?;
        Some((option.set)(self, value).map_err(|e| format!("csv option {key}: {e}")))
    }
}

/// One CSV table option: its key, its value's form and help for the help texts, and how it is
/// set.
pub(crate) struct CsvOption {
    pub(crate) key: &'static str,
    pub(crate) value: &'static str,
    pub(crate) help: &'static str,
    set: fn(&mut CsvOptions, &str) -> Result<(), String>,
}

/// The options of CSV tables (beside `file_extension`, which every table has).
pub(crate) static CSV_OPTIONS: &[CsvOption] = &[
    CsvOption {
        key: "header",
        value: "true|false",
        help: "whether each file's first line names the columns (default true; without, \
               they are column_1, column_2, ...)",
        set: |o, v| {
            o.header = match v.to_ascii_lowercase().as_str() {
                "true" | "yes" | "1" => true,
                "false" | "no" | "0" => false,
                _ => return Err(format!("expected true or false, found {v:?}")),
            };
            Ok(())
        },
    },
    CsvOption {
        key: "delimiter",
        value: "CHAR",
        help: "the character between values: one ASCII character, or \\t (or tab) for a tab \
               (default ,)",
        set: |o, v| {
            o.delimiter = match v {
                "\\t" | "tab" => b'\t',
                _ if v.len() == 1 && v.is_ascii() && v != "\n" && v != "\r" => v.as_bytes()[0],
                _ => {
                    return Err(format!(
                        "expected one ASCII character (or \\t for a tab), found {v:?}"
                    ))
                }
            };
            Ok(())
        },
    },
];

/// DataFusion's format for CSV files read with `csv`, the session's table options under it.
pub(crate) fn csv_format(csv: &CsvOptions, options: TableOptions) -> Arc<dyn FileFormat> {
    Arc::new(
        CsvFormat::default()
            .with_options(options.csv)
            .with_has_header(csv.header)
            .with_delimiter(csv.delimiter),
    )
}

/// DataFusion's format for Arrow IPC files.
pub(crate) fn arrow_format() -> Arc<dyn FileFormat> {
    Arc::new(ArrowFormat)
}

/// DataFusion's format for Parquet files, the session's table options under it.
#[cfg(any(feature = "parquet", feature = "ballista"))]
pub(crate) fn parquet_format(options: TableOptions) -> DfResult<Arc<dyn FileFormat>> {
    use datafusion::datasource::file_format::parquet::ParquetFormat;
    Ok(Arc::new(ParquetFormat::new().with_options(options.parquet)))
}

/// DataFusion's format for Parquet files: without DataFusion's Parquet reader (npy-serde's
/// `parquet` feature), the error naming the feature that builds it.
#[cfg(not(any(feature = "parquet", feature = "ballista")))]
pub(crate) fn parquet_format(_options: TableOptions) -> DfResult<Arc<dyn FileFormat>> {
    Err(datafusion::error::DataFusionError::Configuration(
        "Parquet tables need npy-serde's `parquet` feature beside `datafusion` (the npy tool: \
         --features datafusion,parquet)"
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_options_parse_or_say_what_they_expect() {
        let mut o = CsvOptions::new();
        assert!(o.apply("nope", "1").is_none());
        o.apply("header", "False").unwrap().unwrap();
        o.apply("delimiter", "\\t").unwrap().unwrap();
        assert_eq!(
            o,
            CsvOptions::new().with_header(false).with_delimiter(b'\t')
        );
        o.apply("delimiter", ";").unwrap().unwrap();
        assert_eq!(o.delimiter(), b';');
        assert_eq!(
            o.apply("header", "maybe").unwrap().unwrap_err(),
            "csv option header: expected true or false, found \"maybe\""
        );
        for bad in ["", ";;", "é", "\n"] {
            let e = o.apply("delimiter", bad).unwrap().unwrap_err();
            assert!(
                e.starts_with("csv option delimiter: expected one ASCII"),
                "{e}"
            );
        }
    }
}
