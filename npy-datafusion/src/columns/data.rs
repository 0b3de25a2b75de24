//! One column's bytes in a scan ([`ColumnData`]) and its rows as Arrow arrays.
//!
//! - A `.npy` file, or a stored member, is mapped: its data is one Arrow buffer over the map
//!   (the map kept alive by the buffer). A 1-D column of native-order integers or floats
//!   whose data is aligned for its type (as `np.save` and `npy convert --layout columns`
//!   write it) is handed out as slices of that buffer, without a copy; the others (`np.savez`
//!   does not align its members, strings, big-endian numbers, subarrays) are decoded from the
//!   mapped bytes of the rows asked for.
//! - A deflated member is inflated whole once per scan (every partition shares it); the zip
//!   reader checks its CRC-32 and length as it inflates it.
//! - A stored member's CRC-32 is checked by a scan that reads it whole (no `LIMIT`), unless
//!   `verify_crc=false`: a query that touches a corrupt member fails. A process checks each
//!   member of a version of an archive once: later scans of the unchanged file trust that
//!   check (`verified`). A scan with a `LIMIT` reads a range of rows: it checks the member's
//!   place in the archive (the zip directory and local header agree, the data lies before the
//!   directory and overlaps no other member), its header and that the member holds the data
//!   the header declares, but not the CRC (which would read the member whole).

use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, StructArray};
use arrow_buffer::Buffer;
use arrow_schema::DataType;
use datafusion::arrow::compute::filter;
use datafusion::error::Result as DfResult;

use super::super::options::NpyReadOptions;
use super::survey::{in_column, Column, Place, Source, Survey};
use super::verified::{self, FileVersion};
use crate::raw::{Int, Utf32};
use npy_arrow::{arrow_err, fixed_array, RowDecoder};
use npy_serde::dtype::{ByteOrder, Scalar};
use npy_serde::error::{Error, Result};
use npy_serde::header::{parse_header, ParsedHeader};
use npy_serde::npz::MmapNpz;
use npy_serde::read::MmapArray;
use npy_serde::DType;

/// One column's data in a scan.
pub(crate) struct ColumnData {
    /// The array's data bytes (after its header).
    data: Buffer,
    /// Where the data starts in its file (error positions).
    offset: u64,
    /// The row the data starts at: 0, or for a column fetched from an object store, the first
    /// row of the runs the scan reads (a cluster's task reads its own runs only).
    base: u64,
    decoder: RowDecoder,
    /// The Arrow type of the values when the buffer's slices are the column (no copy).
    in_place: Option<DataType>,
    /// A record array's fields, made a struct column.
    is_struct: bool,
    /// A 1-D `U<n>` column's width (its filters can be evaluated on its bytes, `raw`).
    utf32: Option<Utf32>,
    /// A 1-D integer or `datetime64[D]` column's kind (the same).
    int: Option<Int>,
}

impl std::fmt::Debug for ColumnData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnData")
            .field("len", &self.data.len())
            .field("in_place", &self.in_place)
            .finish_non_exhaustive()
    }
}

/// The open archive of a scan of an archive's columns (shared by its partitions), and the
/// version of the file mapped (`None`: unknown, and no check is remembered).
pub(crate) struct OpenArchive {
    pub(crate) npz: MmapNpz,
    pub(crate) version: Option<FileVersion>,
}

/// Maps the archive at `path` for a scan, with the version of the file mapped.
pub(crate) fn open_archive(
    path: &std::path::Path,
    options: &NpyReadOptions,
) -> Result<OpenArchive> {
    let file = std::fs::File::open(path)?;
    let version = file.metadata().ok().as_ref().and_then(FileVersion::of);
    let npz = MmapNpz::from_file(&file, &options.npz_options())?;
    Ok(OpenArchive { npz, version })
}

/// Opens `column` of the table at `place` for a scan that reads the rows `span`: maps it (or
/// inflates it; from an object store, fetches the rows of `span` only), and checks it against
/// the survey's header and row count; `whole` when the scan reads every row of the table
/// (then a stored member's CRC-32 is checked, unless the options say not to).
pub(crate) fn open_column(
    survey: &Survey,
    archive: Option<&OpenArchive>,
    column: &Column,
    options: &NpyReadOptions,
    span: std::ops::Range<u64>,
    whole: bool,
) -> DfResult<ColumnData> {
    let place = &survey.place;
    let err = |e| in_column(e, place, &column.source);
    let (header, data, offset, base) = if let Place::Remote(remote) = place {
        // On a blocking thread of the runtime (the scan's partitions run there).
        let fetch = remote.column_data(survey.npz.as_ref(), column, options, span, whole);
        tokio::runtime::Handle::current()
            .block_on(fetch)
            .map_err(err)?
    } else {
        let (header, data, offset) = match (&column.source, archive) {
            (Source::File(path), _) => {
                let map = MmapArray::open_with(path, &options.reader).map_err(err)?;
                mapped(Arc::new(map))
            }
            (Source::Member(key), Some(open)) if !column.deflated => {
                let npz = &open.npz;
                let map = npz.array(key).map_err(err)?;
                if whole && options.verifies_crc() {
                    verify(open, key).map_err(err)?;
                }
                mapped(Arc::new(map))
            }
            (Source::Member(key), Some(open)) => inflate(&open.npz, key, options).map_err(err)?,
            (Source::Member(_), None) | (Source::Object(..), _) => {
                return Err(err(Error::invalid_value("the archive is not open")));
            }
        };
        (header, data, offset, 0)
    };
    if header.header != column.header.header {
        return Err(err(Error::invalid_value(format!(
            "its header {:?} differs from the one the table was planned with ({:?}): the file \
             changed during the query",
            header.header.dtype.descr(),
            column.header.header.dtype.descr()
        ))));
    }
    let decoder = RowDecoder::new(&header.header, None, false).map_err(err)?;
    let in_place = in_place_type(&header, &data, column.field.data_type());
    let is_struct = decoder.column_count() != 1;
    let utf32 = utf32_of(&header);
    // A plain integer or `datetime64[D]` column: its one column says so.
    let int = (decoder.column_count() == 1)
        .then(|| decoder.int_column(0))
        .flatten()
        .and_then(|(_, dt, big)| Int::of(&dt, big));
    // Where the data's first row (`base`) starts in the file.
    let offset = (base.checked_mul(decoder.row_bytes() as u64))
        .and_then(|b| b.checked_add(offset))
        .ok_or_else(|| err(Error::overflow("a row's offset")))?;
    Ok(ColumnData {
        data,
        offset,
        base,
        decoder,
        in_place,
        is_struct,
        utf32,
        int,
    })
}

/// The width of a 1-D column of `U<n>` strings (`n` > 0).
fn utf32_of(header: &ParsedHeader) -> Option<Utf32> {
    let h = &header.header;
    match &h.dtype {
        DType::Plain(p) if h.shape.len() == 1 => match p.scalar() {
            Scalar::Unicode(chars) if chars > 0 => Some(Utf32 {
                chars,
                big: p.order() == ByteOrder::Big,
            }),
            _ => None,
        },
        _ => None,
    }
}

/// The header, the data as one buffer over the map, and where the data starts in the file.
fn mapped(map: Arc<MmapArray>) -> (ParsedHeader, Buffer, u64) {
    let header = map.parsed_header().clone();
    let offset = map.data_offset_in_file();
    let data = map.data();
    let buffer = match std::ptr::NonNull::new(data.as_ptr() as *mut u8) {
        // SAFETY: `ptr` points to `data.len()` initialised bytes inside the map owned by
        // `*map`; the `Arc` handed to the buffer keeps that `MmapArray` (and so the map)
        // alive, unmoved and unmodified through it, for as long as the buffer or any slice of
        // it exists. The bytes are only ever read (Arrow buffers are immutable;
        // `Buffer::into_mutable` fails on a custom allocation). Changes to the file by other
        // processes are the caller's contract documented on `MmapArray` (and in the module
        // docs of `datafusion`: a file truncated while mapped can raise SIGBUS).
        Some(ptr) if !data.is_empty() => unsafe {
            Buffer::from_custom_allocation(ptr, data.len(), map.clone())
        },
        _ => Buffer::from_vec(Vec::<u8>::new()),
    };
    (header, buffer, offset)
}

/// Checks the CRC-32 of the stored member `key`, unless a scan in this process checked it in
/// the same version of the archive (see `verified`).
fn verify(open: &OpenArchive, key: &str) -> Result<()> {
    let offset = open.npz.data_offset(key)?;
    if open.version.is_some_and(|v| verified::checked(v, offset)) {
        return Ok(());
    }
    open.npz.verify(key)?;
    if let Some(v) = open.version {
        verified::remember(v, offset, std::time::SystemTime::now());
    }
    Ok(())
}

/// Inflates the deflated member `key` whole (its CRC-32 and length checked by the zip
/// reader), within the table's limits.
fn inflate(
    npz: &MmapNpz,
    key: &str,
    options: &NpyReadOptions,
) -> Result<(ParsedHeader, Buffer, u64)> {
    let mut archive = npz.archive()?;
    let bytes = archive.read_raw(key)?;
    let header = parse_header(&bytes, &options.reader.limits)?;
    let (start, end) = super::super::extent::data_extent(options, &header, bytes.len() as u64)?;
    let buffer = Buffer::from_vec(bytes).slice_with_length(start as usize, (end - start) as usize);
    Ok((header, buffer, start))
}

/// The Arrow type of a column whose data can be handed out as it is: a 1-D array of
/// native-order integers or floats, aligned for its type, with nothing to restore.
fn in_place_type(header: &ParsedHeader, data: &Buffer, field: &DataType) -> Option<DataType> {
    let h = &header.header;
    if h.shape.len() != 1 {
        return None;
    }
    let DType::Plain(plain) = &h.dtype else {
        return None;
    };
    if plain.order().needs_swap() {
        return None;
    }
    let width = plain.itemsize();
    let fits = matches!(
        (field, width),
        (DataType::Int8 | DataType::UInt8, 1)
            | (DataType::Int16 | DataType::UInt16 | DataType::Float16, 2)
            | (DataType::Int32 | DataType::UInt32 | DataType::Float32, 4)
            | (DataType::Int64 | DataType::UInt64 | DataType::Float64, 8)
    );
    (fits && (data.as_ptr() as usize).is_multiple_of(width)).then(|| field.clone())
}

impl ColumnData {
    /// The bytes of one row.
    pub(crate) fn row_bytes(&self) -> usize {
        self.decoder.row_bytes()
    }

    /// Where rows `first..first + rows` lie in the data (byte offsets), checked.
    fn extent(&self, first: u64, rows: usize) -> Result<(usize, usize)> {
        let row_bytes = self.decoder.row_bytes();
        let Some(from_base) = first.checked_sub(self.base) else {
            return Err(Error::invalid_value(format!(
                "row {first} is before the rows this scan fetched (from row {})",
                self.base
            )));
        };
        let start = usize::try_from(from_base)
            .ok()
            .and_then(|f| f.checked_mul(row_bytes))
            .ok_or_else(|| Error::overflow("a row's offset"))?;
        let len = rows
            .checked_mul(row_bytes)
            .ok_or_else(|| Error::overflow("a batch's bytes"))?;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| {
                Error::eof(
                    "the array data",
                    self.offset + start as u64 + len as u64,
                    self.offset + self.data.len() as u64,
                )
            })?;
        Ok((start, end))
    }

    /// The width of a 1-D `U<n>` column.
    pub(crate) fn utf32(&self) -> Option<Utf32> {
        self.utf32
    }

    /// A 1-D integer or day column's kind (see `raw`).
    pub(crate) fn int(&self) -> Option<Int> {
        self.int
    }

    /// The bytes of rows `first..first + rows`, as they are in the file.
    pub(crate) fn raw(&self, first: u64, rows: usize) -> Result<&[u8]> {
        let (start, end) = self.extent(first, rows)?;
        Ok(&self.data.as_slice()[start..end])
    }

    /// Rows `first..first + rows` as one Arrow array.
    pub(crate) fn rows(&self, first: u64, rows: usize) -> Result<ArrayRef> {
        let (start, end) = self.extent(first, rows)?;
        let len = end - start;
        if let Some(dt) = &self.in_place {
            return Ok(fixed_array(
                dt,
                self.data.slice_with_length(start, len),
                rows,
            ));
        }
        let chunk = &self.data.as_slice()[start..end];
        let batch = self
            .decoder
            .decode(chunk, first, rows, self.offset + start as u64)?;
        Ok(self.column_of(batch))
    }

    /// The rows of `first..first + rows` that `mask` keeps (`kept` of them, at least one), as
    /// one Arrow array, and the bytes of the column read to make it.
    ///
    /// A column viewed in place is sliced and filtered (only the kept values are copied); a
    /// decoded one is decoded whole and filtered when the filter keeps at least one row in
    /// [`DENSE`](super::super::filter::DENSE), else only the kept rows' bytes are copied
    /// together and decoded. A decoding error among those is found again in the whole run,
    /// whose positions are the file's.
    pub(crate) fn rows_where(
        &self,
        first: u64,
        rows: usize,
        mask: &BooleanArray,
        kept: usize,
    ) -> Result<(ArrayRef, usize)> {
        let row_bytes = self.decoder.row_bytes();
        if kept == rows {
            return Ok((self.rows(first, rows)?, rows * row_bytes));
        }
        if self.in_place.is_some() || kept.saturating_mul(super::super::filter::DENSE) >= rows {
            let read = if self.in_place.is_some() { kept } else { rows };
            let all = self.rows(first, rows)?;
            return Ok((filter(&all, mask).map_err(arrow_err)?, read * row_bytes));
        }
        let (start, end) = self.extent(first, rows)?;
        let chunk = &self.data.as_slice()[start..end];
        let mut bytes = Vec::with_capacity(kept * row_bytes);
        for i in mask.values().set_indices() {
            bytes.extend_from_slice(&chunk[i * row_bytes..(i + 1) * row_bytes]);
        }
        match self
            .decoder
            .decode(&bytes, first, kept, self.offset + start as u64)
        {
            Ok(batch) => Ok((self.column_of(batch), kept * row_bytes)),
            Err(e) => {
                let all = self.rows(first, rows)?;
                Ok((filter(&all, mask).map_err(|_| e)?, rows * row_bytes))
            }
        }
    }

    /// A decoded batch as the column: its one column, or a struct of a record's fields.
    fn column_of(&self, batch: arrow_array::RecordBatch) -> ArrayRef {
        if self.is_struct {
            return Arc::new(StructArray::from(batch));
        }
        batch.column(0).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::super::survey::Place;
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Float64Type;

    /// The column `x` of an archive of `x` (f64) and `b` (u8) written aligned or not.
    fn column_x(align: bool) -> (ColumnData, Vec<f64>) {
        let dir = std::env::temp_dir().join(format!("columns-data-{}-{align}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.npz");
        let xs: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
        let mut w = npy_serde::NpzWriter::new(std::fs::File::create(&path).unwrap()).align(align);
        // A 1-byte member first, so that an unaligned archive leaves `x` off its alignment.
        w.add("b", &[7u8]).unwrap();
        w.add("x", &xs).unwrap();
        w.finish().unwrap();
        let options = NpyReadOptions::new();
        let survey = Survey::take(Place::Archive(path.clone()), &options);
        assert!(survey.is_err(), "b has 1 row, x 1000");
        let mut w = npy_serde::NpzWriter::new(std::fs::File::create(&path).unwrap()).align(align);
        w.add("b", &vec![7u8; 1000]).unwrap();
        w.add("x", &xs).unwrap();
        w.finish().unwrap();
        let survey = Survey::take(Place::Archive(path.clone()), &options).unwrap();
        let open = open_archive(&path, &options).unwrap();
        let column = survey.column("x").unwrap();
        let data = open_column(&survey, Some(&open), column, &options, 0..1000, true).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        (data, xs)
    }

    #[test]
    fn aligned_columns_are_viewed_in_place_and_others_decoded_alike() {
        for align in [true, false] {
            let (data, xs) = column_x(align);
            assert_eq!(data.in_place.is_some(), align);
            let a = data.rows(10, 5).unwrap();
            assert_eq!(a.as_primitive::<Float64Type>().values(), &xs[10..15]);
            let e = data.rows(998, 5).unwrap_err();
            assert!(e.is_eof(), "{e}");
        }
    }

    /// A member checked in a settled version of its archive is trusted in that version (here
    /// corrupted behind an unchanged version, which only a test can make) and checked in any
    /// other, or when the version is unknown.
    #[test]
    fn a_member_checked_in_a_settled_archive_is_trusted_in_that_version_only() {
        let dir = std::env::temp_dir().join(format!("columns-verified-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.npz");
        let xs: Vec<f64> = (0..1000).map(|i| i as f64).collect();
        let mut w = npy_serde::NpzWriter::new(std::fs::File::create(&path).unwrap());
        w.add("x", &xs).unwrap();
        w.finish().unwrap();
        std::thread::sleep(verified::SETTLED + std::time::Duration::from_millis(200));
        let options = NpyReadOptions::new();
        let settled = open_archive(&path, &options).unwrap();
        assert!(settled.version.is_some());
        verify(&settled, "x").unwrap();
        let offset = settled.npz.data_offset("x").unwrap();
        assert!(verified::checked(settled.version.unwrap(), offset));

        let mut bytes = std::fs::read(&path).unwrap();
        bytes[offset as usize + 8] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let changed = open_archive(&path, &options).unwrap();
        assert_ne!(changed.version, settled.version);
        let err = verify(&changed, "x").unwrap_err().to_string();
        assert!(err.contains("CRC"), "{err}");
        let unknown = OpenArchive {
            version: None,
            ..open_archive(&path, &options).unwrap()
        };
        assert!(verify(&unknown, "x").is_err());
        let behind = OpenArchive {
            version: settled.version,
            ..open_archive(&path, &options).unwrap()
        };
        verify(&behind, "x").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
