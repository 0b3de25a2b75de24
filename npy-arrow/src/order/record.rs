//! [`RecordedOrder`]: the record of a verified order, its text, and where it is kept beside a
//! table on a local disk (see the [module docs](super#where-the-record-is)); [`TableRecord`],
//! the records a table's comment or record file holds, one a line (its order's, its columns'
//! statistics').

use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use super::stats::lines;
use super::{format_order, parse_order, split_unquoted, RecordedStats, SortColumn, MAX_RECORD};

/// The start of a record's text, before its version: `npy-serde/`.
pub const RECORD_PREFIX: &str = "npy-serde/";

/// The version of the record's text this crate writes and reads.
const VERSION: &str = "1";

/// The file a directory table's record is in: `_npy_order`.
pub const DIRECTORY_RECORD: &str = "_npy_order";

/// The order a table's rows were verified to be in when it was written, and what it held then
/// (its number of rows; for an archive of rows, the member): see the
/// [module docs](super#the-records-text-version-1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedOrder {
    order: Vec<SortColumn>,
    rows: u64,
    member: Option<String>,
}

impl RecordedOrder {
    /// The record of `rows` rows verified in `order`.
    pub fn new(order: Vec<SortColumn>, rows: u64) -> RecordedOrder {
        RecordedOrder {
            order,
            rows,
            member: None,
        }
    }

    /// The record of the rows of an archive's member `key` (an archive of rows).
    pub fn with_member(mut self, key: impl Into<String>) -> RecordedOrder {
        self.member = Some(key.into());
        self
    }

    /// The order.
    pub fn order(&self) -> &[SortColumn] {
        &self.order
    }

    /// The number of rows verified.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The archive member the rows are in, for an archive of rows.
    pub fn member(&self) -> Option<&str> {
        self.member.as_deref()
    }

    /// The record of `text` (an archive comment, a record file's contents): the first of its
    /// lines that is an order record of this version, `None` if none is (another tool's
    /// comment, another version, a broken one; a text longer than
    /// [`MAX_RECORD`](super::MAX_RECORD)). A line end after the text is allowed, and so are
    /// other lines (a [`RecordedStats`](super::RecordedStats) record's).
    pub fn parse(text: &[u8]) -> Option<RecordedOrder> {
        lines(text)?.find_map(parse_line)
    }

    /// Whether the record holds for a table of `rows` rows read from the member `member` (of
    /// an archive of rows; `None` for a column table or a file of rows): the same number of
    /// rows, and the same member.
    pub fn holds_for(&self, rows: u64, member: Option<&str>) -> bool {
        self.rows == rows && self.member.as_deref() == member
    }
}

/// The order record of one line, if it is one.
fn parse_line(text: &str) -> Option<RecordedOrder> {
    let text = text.strip_suffix('\r').unwrap_or(text);
    let rest = text.strip_prefix(RECORD_PREFIX)?;
    let (version, rest) = rest.split_once(':')?;
    if version != VERSION {
        return None;
    }
    let rest = rest.strip_prefix("sort_order=")?;
    // The order ends at the first `;` outside quotes.
    let order_text = split_unquoted(rest, ';').into_iter().next()?;
    let rest = rest[order_text.len()..].strip_prefix(";rows=")?;
    let (rows, member) = match rest.split_once(";member=") {
        Some((rows, member)) => (rows, Some(member.to_string())),
        None => (rest, None),
    };
    if rows.is_empty() || !rows.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(RecordedOrder {
        order: parse_order(order_text).ok()?,
        rows: rows.parse().ok()?,
        member,
    })
}

impl fmt::Display for RecordedOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{RECORD_PREFIX}{VERSION}:sort_order={};rows={}",
            format_order(&self.order),
            self.rows
        )?;
        if let Some(member) = &self.member {
            write!(f, ";member={member}")?;
        }
        Ok(())
    }
}

/// The records kept with a table, one a line: its [`RecordedOrder`] and its
/// [`RecordedStats`], each if it has one. A line that is neither (another version, another
/// tool's text) is ignored.
///
/// ```
/// use npy_arrow::order::{ColumnStats, RecordedOrder, RecordedStats, SortColumn, TableRecord};
/// let record = TableRecord {
///     order: Some(RecordedOrder::new(vec![SortColumn::asc("k")], 2)),
///     stats: Some(RecordedStats::new(2, vec![ColumnStats::new("k", "Int64").with_nulls(0)])),
/// };
/// let text = record.to_string();
/// assert_eq!(
///     text,
///     "npy-serde/1:sort_order=k ASC NULLS LAST;rows=2\nnpy-serde/stats1:rows=2;\"k\",\"Int64\",0,,,"
/// );
/// assert_eq!(TableRecord::parse(text.as_bytes()), record);
/// assert_eq!(TableRecord::parse(b"made by zip"), TableRecord::default());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableRecord {
    /// The order the rows were verified in.
    pub order: Option<RecordedOrder>,
    /// The statistics of the columns.
    pub stats: Option<RecordedStats>,
}

impl TableRecord {
    /// The records among the lines of `text`.
    pub fn parse(text: &[u8]) -> TableRecord {
        TableRecord {
            order: RecordedOrder::parse(text),
            stats: RecordedStats::parse(text),
        }
    }

    /// True when it holds no record.
    pub fn is_empty(&self) -> bool {
        self.order.is_none() && self.stats.is_none()
    }

    /// Its text, if it has a record: the order's line, then the statistics' line, unless
    /// that would make the text longer than [`MAX_RECORD`] (the statistics are then left out).
    pub fn text(&self) -> Option<String> {
        let order = self.order.as_ref().map(ToString::to_string);
        let stats = self.stats.as_ref().map(ToString::to_string);
        let whole = match (order, stats) {
            (None, None) => return None,
            (Some(o), None) => return Some(o),
            (None, Some(s)) => s,
            (Some(o), Some(s)) => format!("{o}\n{s}"),
        };
        if whole.len() <= MAX_RECORD {
            return Some(whole);
        }
        self.order.as_ref().map(ToString::to_string)
    }
}

impl fmt::Display for TableRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text().unwrap_or_default())
    }
}

/// The record file of the `.npy` file `path`: `path` with `.order` appended (`t.npy.order`).
pub fn sidecar_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".order");
    PathBuf::from(name)
}

/// Writes `record` as the record file `path` (`FILE.npy.order`, a directory's `_npy_order`):
/// under a temporary name beside it, then renamed over it.
pub fn write_sidecar(path: &Path, record: &RecordedOrder) -> io::Result<()> {
    write_text(path, &record.to_string())
}

/// Writes `text` and a line end as the file `path`: under a temporary name beside it, then
/// renamed over it.
fn write_text(path: &Path, text: &str) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.unwrap_or(Path::new(".")).join(format!(
        ".{}.{}.tmp",
        name.unwrap_or_else(|| "order".into()),
        std::process::id()
    ));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        writeln!(f, "{text}")?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Removes the record file `path` if there is one: a table rewritten without a recorded order
/// must not keep an old one (it could hold the same number of rows in another order).
pub fn remove_stale_sidecar(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The text of the record file `path` (a sidecar, a directory's `_npy_order`), if it has one
/// no longer than a record can be.
fn read_record_text(path: &Path) -> Option<Vec<u8>> {
    let mut text = Vec::new();
    let f = std::fs::File::open(path).ok()?;
    f.take(MAX_RECORD as u64 + 2).read_to_end(&mut text).ok()?;
    (text.len() <= MAX_RECORD + 1).then_some(text)
}

/// The record of the local `.npy` file `path` (its `FILE.npy.order`), if it has one that
/// parses. Whether it holds is the caller's to check ([`RecordedOrder::holds_for`]).
pub fn read_file_record(path: &Path) -> Option<RecordedOrder> {
    RecordedOrder::parse(&read_record_text(&sidecar_of(path))?)
}

/// The record of the local directory table `dir` (its `_npy_order`), if it has one that
/// parses.
pub fn read_directory_record(dir: &Path) -> Option<RecordedOrder> {
    read_directory_records(dir).order
}

/// The records of the local directory table `dir` (its `_npy_order`): its order and its
/// statistics, each if there is one that parses.
pub fn read_directory_records(dir: &Path) -> TableRecord {
    read_record_text(&dir.join(DIRECTORY_RECORD))
        .map(|t| TableRecord::parse(&t))
        .unwrap_or_default()
}

/// Writes the text of `record` (its lines, see [`TableRecord::text`]) as the record file
/// `path` (a directory's `_npy_order`), as [`write_sidecar`] does; with no record in it,
/// removes the file instead ([`remove_stale_sidecar`]).
pub fn write_table_record(path: &Path, record: &TableRecord) -> io::Result<()> {
    match record.text() {
        Some(text) => write_text(path, &text),
        None => remove_stale_sidecar(path),
    }
}

#[cfg(feature = "npz")]
/// The record in the comment of the local `.npz` archive `path`, if it has one that parses
/// (the archive's last 65557 bytes are read).
pub fn read_archive_record(path: &Path) -> io::Result<Option<RecordedOrder>> {
    Ok(read_archive_records(path)?.order)
}

#[cfg(feature = "npz")]
/// The records in the comment of the local `.npz` archive `path`: its order and its
/// statistics, each if there is one that parses (the archive's last 65557 bytes are read).
pub fn read_archive_records(path: &Path) -> io::Result<TableRecord> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let size = f.metadata()?.len();
    let want = size.min(22 + 65535);
    f.seek(SeekFrom::Start(size - want))?;
    let mut tail = Vec::with_capacity(want as usize);
    f.take(want).read_to_end(&mut tail)?;
    Ok(npy_serde::npz::comment_of_tail(&tail)
        .map(TableRecord::parse)
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::super::ColumnStats;
    use super::*;

    #[test]
    fn text_round_trips_and_strangers_are_not_records() {
        let order = vec![
            SortColumn::asc("a;b"),
            SortColumn::desc("c").nulls_first(false),
        ];
        let r = RecordedOrder::new(order, 12).with_member("rows;x");
        let text = r.to_string();
        assert_eq!(
            text,
            "npy-serde/1:sort_order=\"a;b\" ASC NULLS LAST, c DESC NULLS LAST;rows=12;\
             member=rows;x"
        );
        assert_eq!(
            RecordedOrder::parse(format!("{text}\n").as_bytes()),
            Some(r.clone())
        );
        assert!(r.holds_for(12, Some("rows;x")));
        assert!(!r.holds_for(12, None));
        for stranger in [
            "",
            "npy-serde/2:sort_order=a;rows=1",
            "npy-serde/1:sort_order=a;rows=",
            "npy-serde/1:sort_order=a;rows=-1",
            "npy-serde/1:sort_order=;rows=1",
            "npy-serde/1:sort_order=a sideways;rows=1",
            "npy-serde/1:rows=1",
        ] {
            assert_eq!(
                RecordedOrder::parse(stranger.as_bytes()),
                None,
                "{stranger}"
            );
        }
        assert_eq!(RecordedOrder::parse(&[0xff, 0xfe]), None);
    }

    #[test]
    fn sidecars_are_written_whole_and_removed() {
        let dir = std::env::temp_dir().join(format!("npy-order-sidecar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.npy");
        assert_eq!(sidecar_of(&file), dir.join("t.npy.order"));
        assert_eq!(read_file_record(&file), None);
        let r = RecordedOrder::new(vec![SortColumn::asc("k")], 3);
        write_sidecar(&sidecar_of(&file), &r).unwrap();
        assert_eq!(read_file_record(&file), Some(r.clone()));
        write_sidecar(&dir.join(DIRECTORY_RECORD), &r).unwrap();
        assert_eq!(read_directory_record(&dir), Some(r));
        remove_stale_sidecar(&sidecar_of(&file)).unwrap();
        remove_stale_sidecar(&sidecar_of(&file)).unwrap();
        assert_eq!(read_file_record(&file), None);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(DIRECTORY_RECORD)]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_order_and_statistics_share_a_text() {
        let stats = super::super::stats::sample();
        let text = stats.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(RecordedStats::parse(text.as_bytes()), Some(stats.clone()));
        // Among other lines, after an order, with a line end after it.
        let order = RecordedOrder::new(vec![SortColumn::asc("a")], 7);
        let both = format!("made by zip\n{order}\n{text}\n");
        let record = TableRecord::parse(both.as_bytes());
        assert_eq!(record.order, Some(order));
        assert_eq!(record.stats, Some(stats));
    }

    #[test]
    fn statistics_too_long_for_a_comment_are_left_out() {
        let order = RecordedOrder::new(vec![SortColumn::asc("k")], 1);
        let columns = (0..5000)
            .map(|i| ColumnStats::new(format!("column_{i}"), "Int64").with_range("0", "1"))
            .collect();
        let record = TableRecord {
            order: Some(order.clone()),
            stats: Some(RecordedStats::new(1, columns)),
        };
        assert_eq!(record.text(), Some(order.to_string()));
        let none = TableRecord::default();
        assert!(none.is_empty());
        assert_eq!(none.text(), None);
    }
}
