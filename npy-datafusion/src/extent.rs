//! The size check every door of a table passes: a file (or an `.npz` member) is a table's
//! only if it holds the data its header declares. Schema inference (as a table is
//! registered), the statistics (whose exact row counts answer `count(*)` without a scan) and
//! the openers check it alike, so that a file cut short fails with the same error whatever
//! the query asks, and a file cut after its table was registered fails every query that
//! touches it. (A query whose `LIMIT` DataFusion fills from other files' exact row counts
//! does not touch the rest: it lists no more files than the limit needs.)

use super::options::NpyReadOptions;
use npy_serde::error::{Error, Result};
use npy_serde::header::ParsedHeader;

/// Where the data of a file (or member) of `size` bytes whose header is `header` starts and
/// ends, after the table's limits and the size check: the data the header declares lies
/// within the `size` bytes present.
pub(crate) fn data_extent(
    options: &NpyReadOptions,
    header: &ParsedHeader,
    size: u64,
) -> Result<(u64, u64)> {
    options.reader.check(&header.header)?;
    held_extent(header, size)
}

/// The size check alone, without the table's limits: schema inference applies it to every
/// file as the table is registered, and leaves the limits to the scan (whose options travel
/// to other processes with it: Ballista's executors).
pub(crate) fn held_extent(header: &ParsedHeader, size: u64) -> Result<(u64, u64)> {
    let len = header.header.data_len()?;
    let start = header.data_offset;
    let end = start
        .checked_add(len)
        .ok_or_else(|| Error::overflow("the data's end"))?;
    if end > size {
        return Err(Error::eof("the array data", end, size));
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use npy_serde::header::parse_header;

    #[test]
    fn a_file_holds_its_declared_data_or_is_an_error() {
        let bytes = npy_serde::to_vec(&[1.5f64; 100]).unwrap();
        let header = parse_header(&bytes, npy_serde::read::ReaderBuilder::new().limits()).unwrap();
        let total = bytes.len() as u64;
        let options = NpyReadOptions::new();
        assert_eq!(
            data_extent(&options, &header, total).unwrap(),
            (header.data_offset, total)
        );
        // Longer files are fine (NumPy reads them too); shorter ones are not.
        assert!(data_extent(&options, &header, total + 7).is_ok());
        let e = data_extent(&options, &header, total - 1).unwrap_err();
        assert!(e.is_eof(), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "unexpected end of input: needed {total} bytes for the array data, found {}",
                total - 1
            )
        );
        // The limits come first; the size check alone leaves them to the scan.
        let limited = options.clone().max_data_size(10);
        let e = data_extent(&limited, &header, total).unwrap_err();
        assert!(e.to_string().contains("more than the limit of 10"), "{e}");
        assert_eq!(
            held_extent(&header, total).unwrap(),
            (header.data_offset, total)
        );
        assert!(held_extent(&header, total - 1).unwrap_err().is_eof());
    }
}
