//! [`RecordedStats`]: the record of a column table's column statistics (least and greatest
//! values, null counts) as its writer saw the values it wrote, and its text (see the
//! [module docs](super#the-statistics-record-stats-version-1)).

use std::fmt::{self, Write as _};

/// The start of a statistics record's text, its kind and version included: `npy-serde/stats1:`.
pub const STATS_PREFIX: &str = "npy-serde/stats1:";

/// The longest a table's records can be, in bytes (a zip archive's comment holds 65535): a
/// longer text is not read, and a writer leaves its statistics out rather than write one.
pub const MAX_RECORD: usize = 65535;

/// The longest text a recorded value can have, in bytes: a longer string's least or greatest
/// value is left out of the record (a prefix would not bound it from above).
pub const MAX_VALUE: usize = 256;

/// What a column table's writer saw of one column's values: its Arrow type as the writer had it
/// (as `DataType`'s `Display` writes it), its nulls, an estimate of its number of distinct
/// values, and its least and greatest values, as text (see the
/// [module docs](super#the-statistics-record-stats-version-1) for each type's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnStats {
    name: String,
    data_type: String,
    nulls: Option<u64>,
    distinct: Option<u64>,
    min: Option<String>,
    max: Option<String>,
}

impl ColumnStats {
    /// The statistics of the column `name` of the type whose text is `data_type`, nothing
    /// known yet.
    pub fn new(name: impl Into<String>, data_type: impl Into<String>) -> ColumnStats {
        ColumnStats {
            name: name.into(),
            data_type: data_type.into(),
            nulls: None,
            distinct: None,
            min: None,
            max: None,
        }
    }

    /// The same, with an estimate of `distinct` distinct values (nulls not counted).
    pub fn with_distinct(mut self, distinct: u64) -> ColumnStats {
        self.distinct = Some(distinct);
        self
    }

    /// The estimate of its number of distinct values (nulls not counted), if recorded.
    pub fn distinct(&self) -> Option<u64> {
        self.distinct
    }

    /// The same, with `nulls` nulls.
    pub fn with_nulls(mut self, nulls: u64) -> ColumnStats {
        self.nulls = Some(nulls);
        self
    }

    /// The same, with these least and greatest values (texts).
    pub fn with_range(mut self, min: impl Into<String>, max: impl Into<String>) -> ColumnStats {
        self.min = Some(min.into());
        self.max = Some(max.into());
        self
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The text of its Arrow type when it was written (`Int64`, `Utf8`, `Date32`...).
    pub fn data_type(&self) -> &str {
        &self.data_type
    }

    /// Its number of nulls, if recorded.
    pub fn nulls(&self) -> Option<u64> {
        self.nulls
    }

    /// The text of its least value, if recorded.
    pub fn min(&self) -> Option<&str> {
        self.min.as_deref()
    }

    /// The text of its greatest value, if recorded.
    pub fn max(&self) -> Option<&str> {
        self.max.as_deref()
    }
}

/// The statistics a column table's writer recorded of its columns, over `rows` rows: see the
/// [module docs](super#the-statistics-record-stats-version-1).
///
/// ```
/// use npy_arrow::order::{ColumnStats, RecordedStats};
/// let stats = RecordedStats::new(
///     3,
///     vec![
///         ColumnStats::new("k", "Int64").with_nulls(0).with_distinct(3).with_range("1", "9"),
///         ColumnStats::new("s, t", "Utf8").with_nulls(1),
///     ],
/// );
/// let text = stats.to_string();
/// assert_eq!(text, r#"npy-serde/stats1:rows=3;"k","Int64",0,3,"1","9";"s, t","Utf8",1,,,"#);
/// assert_eq!(RecordedStats::parse(text.as_bytes()), Some(stats.clone()));
/// assert!(stats.holds_for(3) && !stats.holds_for(4));
/// assert_eq!(stats.column("k").unwrap().max(), Some("9"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedStats {
    rows: u64,
    columns: Vec<ColumnStats>,
}

impl RecordedStats {
    /// The record of `columns` over `rows` rows.
    pub fn new(rows: u64, columns: Vec<ColumnStats>) -> RecordedStats {
        RecordedStats { rows, columns }
    }

    /// The number of rows the writer saw.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The columns recorded.
    pub fn columns(&self) -> &[ColumnStats] {
        &self.columns
    }

    /// The recorded column `name`, if there is one (the first of that name).
    pub fn column(&self, name: &str) -> Option<&ColumnStats> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// Whether the record may describe a table of `rows` rows: the same number of rows. (Each
    /// column's recorded type must also be the column's: [`ColumnStats::data_type`].)
    pub fn holds_for(&self, rows: u64) -> bool {
        self.rows == rows
    }

    /// The statistics record among the lines of `text` (a table's comment or record file):
    /// the first line that is one, `None` if no line is (or `text` is longer than
    /// [`MAX_RECORD`], or not UTF-8).
    pub fn parse(text: &[u8]) -> Option<RecordedStats> {
        lines(text)?.find_map(parse_line)
    }
}

impl fmt::Display for RecordedStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{STATS_PREFIX}rows={}", self.rows)?;
        for c in &self.columns {
            f.write_char(';')?;
            quote(f, &c.name)?;
            f.write_char(',')?;
            quote(f, &c.data_type)?;
            f.write_char(',')?;
            if let Some(n) = c.nulls {
                write!(f, "{n}")?;
            }
            f.write_char(',')?;
            if let Some(n) = c.distinct {
                write!(f, "{n}")?;
            }
            for v in [&c.min, &c.max] {
                f.write_char(',')?;
                if let Some(v) = v {
                    quote(f, v)?;
                }
            }
        }
        Ok(())
    }
}

/// The lines of a record's `text`: `None` if it is too long or not UTF-8.
pub(super) fn lines(text: &[u8]) -> Option<std::str::Split<'_, char>> {
    if text.len() > MAX_RECORD + 1 {
        return None;
    }
    Some(std::str::from_utf8(text).ok()?.split('\n'))
}

/// Writes `text` in double quotes: `"` and `\` escaped with a `\`, a line end as `\n`, a
/// carriage return as `\r`.
fn quote(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in text.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// The statistics record of one line, if it is one.
fn parse_line(line: &str) -> Option<RecordedStats> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let rest = line.strip_prefix(STATS_PREFIX)?;
    let rest = rest.strip_prefix("rows=")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let rows = number(&rest[..digits])?;
    let mut p = Parser {
        rest: &rest[digits..],
    };
    let mut columns = Vec::new();
    while !p.rest.is_empty() {
        p.expect(';')?;
        let name = p.quoted()?;
        p.expect(',')?;
        let data_type = p.quoted()?;
        p.expect(',')?;
        let nulls = p.count()?;
        p.expect(',')?;
        let distinct = p.count()?;
        p.expect(',')?;
        let min = p.optional()?;
        p.expect(',')?;
        let max = p.optional()?;
        let counts = [nulls, distinct];
        if min.is_some() != max.is_some() || counts.iter().flatten().any(|&n| n > rows) {
            return None;
        }
        columns.push(ColumnStats {
            name,
            data_type,
            nulls,
            distinct,
            min,
            max,
        });
    }
    Some(RecordedStats { rows, columns })
}

/// A decimal number of at most 20 digits that fits a `u64`.
fn number(digits: &str) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    digits.parse().ok()
}

/// The rest of a statistics line being read.
struct Parser<'a> {
    rest: &'a str,
}

impl Parser<'_> {
    fn expect(&mut self, c: char) -> Option<()> {
        self.rest = self.rest.strip_prefix(c)?;
        Some(())
    }

    /// A number, or nothing (the next character is not a digit).
    fn count(&mut self) -> Option<Option<u64>> {
        let digits = self.rest.bytes().take_while(u8::is_ascii_digit).count();
        let n = match digits {
            0 => None,
            _ => Some(number(&self.rest[..digits])?),
        };
        self.rest = &self.rest[digits..];
        Some(n)
    }

    /// A quoted text, or nothing (the next character is not a quote).
    fn optional(&mut self) -> Option<Option<String>> {
        if self.rest.starts_with('"') {
            self.quoted().map(Some)
        } else {
            Some(None)
        }
    }

    /// A quoted text (see [`quote`]).
    fn quoted(&mut self) -> Option<String> {
        let body = self.rest.strip_prefix('"')?;
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.rest = &body[i + 1..];
                    return Some(out);
                }
                '\\' => out.push(match chars.next()?.1 {
                    '"' => '"',
                    '\\' => '\\',
                    'n' => '\n',
                    'r' => '\r',
                    _ => return None,
                }),
                c => out.push(c),
            }
        }
        None
    }
}

/// Statistics whose names and values need every escape the text has (the tests of the record
/// texts share them).
#[cfg(test)]
pub(crate) fn sample() -> RecordedStats {
    RecordedStats::new(
        7,
        vec![
            ColumnStats::new("a\"b\\c\nd;e,f", "Timestamp(ns, \"UTC\")")
                .with_nulls(2)
                .with_distinct(5)
                .with_range("-5", "1700000000000000000"),
            ColumnStats::new("", "Utf8").with_range("", "\r\"z\""),
            ColumnStats::new("x", "Float64"),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_whatever_the_names_and_values() {
        let stats = sample();
        let text = stats.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(RecordedStats::parse(text.as_bytes()), Some(stats.clone()));
        // Among other lines, with a line end after it.
        let lines = format!("made by zip\r\n{text}\n");
        assert_eq!(RecordedStats::parse(lines.as_bytes()), Some(stats));
        let empty = RecordedStats::new(0, Vec::new());
        assert_eq!(empty.to_string(), "npy-serde/stats1:rows=0");
        assert_eq!(
            RecordedStats::parse(b"npy-serde/stats1:rows=0"),
            Some(empty)
        );
    }

    #[test]
    fn junk_is_not_a_record() {
        for junk in [
            "",
            "npy-serde/stats1:",
            "npy-serde/stats1:rows=",
            "npy-serde/stats1:rows=-1",
            "npy-serde/stats1:rows=99999999999999999999999",
            "npy-serde/stats2:rows=1",
            "npy-serde/stats1:rows=1;",
            "npy-serde/stats1:rows=1;k,\"Int64\",0,,,",
            "npy-serde/stats1:rows=1;\"k\",\"Int64\",0,,,;",
            "npy-serde/stats1:rows=1;\"k\",\"Int64\",0,,\"1\",",
            "npy-serde/stats1:rows=1;\"k\",\"Int64\",2,,,",
            "npy-serde/stats1:rows=1;\"k\",\"Int64\",0,2,,",
            "npy-serde/stats1:rows=1;\"k\",\"Int64\",,,,,",
            "npy-serde/stats1:rows=1;\"k\",\"Int64\",0,,",
            "npy-serde/stats1:rows=1;\"k\\x\",\"Int64\",0,,,",
            "npy-serde/stats1:rows=1;\"k,\"Int64\",0,,,",
            "npy-serde/stats1:rows=1;\"k\",\"Int64\",0,,,x",
            "npy-serde/1:sort_order=k;rows=1",
        ] {
            assert_eq!(RecordedStats::parse(junk.as_bytes()), None, "{junk}");
        }
        assert_eq!(RecordedStats::parse(&[0xff, b'\n']), None);
        let long = format!(
            "{}\n{}",
            "x".repeat(MAX_RECORD),
            RecordedStats::new(1, Vec::new())
        );
        assert_eq!(RecordedStats::parse(long.as_bytes()), None);
    }
}
