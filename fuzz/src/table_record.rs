//! The `table_record` target (the text of the records kept with a table: the order record and
//! the column statistics record, feature `arrow`).

/// Target `table_record`: bytes (a zip comment, a `_npy_order` file) parsed as a table's
/// records; whatever parses prints back to a text that parses as the same records (the
/// printed statistics are one line, and the text is no longer than `MAX_RECORD`), and a
/// record never claims more nulls than rows.
#[cfg(feature = "arrow")]
pub fn table_record(data: &[u8]) {
    use npy_arrow::order::{RecordedOrder, RecordedStats, TableRecord, MAX_RECORD};
    let record = TableRecord::parse(data);
    assert_eq!(record.order, RecordedOrder::parse(data));
    assert_eq!(record.stats, RecordedStats::parse(data));
    if data.len() > MAX_RECORD + 1 {
        assert!(record.is_empty(), "a text longer than a record parsed");
    }
    if let Some(stats) = &record.stats {
        for c in stats.columns() {
            assert!(c.nulls().is_none_or(|n| n <= stats.rows()), "{c:?}");
            assert_eq!(c.min().is_some(), c.max().is_some(), "{c:?}");
        }
        let line = stats.to_string();
        assert!(!line.contains('\n'), "{line:?}");
        assert_eq!(
            RecordedStats::parse(line.as_bytes()).as_ref(),
            Some(stats),
            "{line:?}"
        );
    }
    if let Some(text) = record.text() {
        assert!(text.len() <= MAX_RECORD, "{}", text.len());
        let back = TableRecord::parse(text.as_bytes());
        assert_eq!(
            back.stats.is_some(),
            text.contains('\n') || record.order.is_none()
        );
        if back.stats.is_some() {
            assert_eq!(back.stats, record.stats);
        }
        // An order record whose member holds a line end prints as two lines: not the same.
        if record
            .order
            .as_ref()
            .is_some_and(|o| !o.to_string().contains('\n'))
        {
            assert_eq!(back.order, record.order, "{text:?}");
        }
    }
}
