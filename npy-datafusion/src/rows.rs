//! The opener of `.npy` row files ([`RowFileOpener`]): the whole records the partition owns,
//! decoded a batch at a time (only the projected columns; under a pushed filter, its columns
//! first and the others for the rows that pass: [`ChunkDecoder`]).
//!
//! - A local file (a `LocalFileSystem` store, not `access=read`) is mapped ([`mapped`]): its
//!   header is parsed from the map, its size checked against the data the header declares
//!   (a file cut short before the scan opens it fails naming it), and each batch's columns
//!   are gathered straight from the mapped pages, so the bytes of the fields a query does not
//!   use are never touched, nor copied. A file shortened by another process while a query
//!   reads it can raise `SIGBUS` (as [`MmapArray`](npy_serde::MmapArray) and NumPy's memmap can):
//!   `access=read` is for files that may change underneath.
//! - Otherwise the header comes in one ranged read, then byte ranges of whole records.
//!
//! A Fortran-order array with more than one axis longer than 1 has no contiguous rows: the
//! partition that owns the file's first byte reads its data whole and gathers them.

use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileOpenFuture, FileOpener};
use datafusion::error::Result as DfResult;
use futures::stream::{self, StreamExt};
use object_store::local::LocalFileSystem;
use object_store::{ObjectMeta, ObjectStoreExt};

use super::error::df_err;
use super::filter::ChunkDecoder;
use super::header::fetch_header;
use super::opener::{Batches, ScanFiles, PREFETCH};
use npy_arrow::{needs_gather, MAX_BATCH_BYTES};
use npy_serde::error::Error;
use npy_serde::header::{parse_header, ParsedHeader};

/// The size of one ranged read of a `.npy` file's records (rounded to whole batches).
const FETCH_BYTES: u64 = 4 << 20;

/// Opens one `.npy` file (or one byte range of it) of a scan.
pub(crate) struct RowFileOpener(pub(crate) Arc<ScanFiles>);

impl FileOpener for RowFileOpener {
    fn open(&self, file: PartitionedFile) -> DfResult<FileOpenFuture> {
        self.open_known(file, None)
    }
}

impl RowFileOpener {
    /// [`open`](FileOpener::open) with the file's header and size when they were fetched
    /// already (the opener of a table that allows object arrays reads the kind first): no
    /// second request for them.
    pub(crate) fn open_known(
        &self,
        file: PartitionedFile,
        known: Option<(ParsedHeader, u64)>,
    ) -> DfResult<FileOpenFuture> {
        // The last range of a file runs to its end, wherever that is now: the size the ranges
        // were cut from may come from a listing DataFusion cached before the file grew.
        let listed = file.object_meta.size;
        let range = file.range.map(|r| {
            let end = u64::try_from(r.end).unwrap_or(0);
            (
                u64::try_from(r.start).unwrap_or(0),
                if end >= listed { u64::MAX } else { end },
            )
        });
        let scan = self.0.clone();
        let object = file.object_meta;
        Ok(self.0.opened(async move {
            let map = if scan.map_local {
                Some(map_file(&object)?)
            } else {
                None
            };
            let (header, size) = match (&map, known) {
                (Some(map), _) => {
                    let limits = scan.options.reader.limits();
                    let header = parse_header(map, limits).map_err(|e| df_err(e, &object))?;
                    (header, map.len() as u64)
                }
                (None, Some(known)) => known,
                (None, None) => fetch_header(&scan.store, &object, &scan.options).await?,
            };
            let (start, end) = scan.check(&header, &object, size)?;
            let file = RowFile {
                scan,
                object,
                range,
                start,
                end,
            };
            match map {
                _ if needs_gather(&header.header) => file.whole(header).await,
                Some(map) => file.mapped(&header, map),
                None => file.ranged(&header),
            }
        }))
    }
}

/// One opened file (or byte range of it), its header read and checked.
struct RowFile {
    scan: Arc<ScanFiles>,
    object: ObjectMeta,
    /// The partition's byte range of the file (`None`: the whole file).
    range: Option<(u64, u64)>,
    /// Where the data starts and ends.
    start: u64,
    end: u64,
}

impl RowFile {
    /// Whether this partition owns byte `at` of the file.
    fn owns(&self, at: u64) -> bool {
        self.range.is_none_or(|(s, e)| s <= at && at < e)
    }

    /// The rows `lo..hi` this partition reads: those whose first byte lies in its range, no
    /// more than the limit.
    fn rows(&self, rows: u64, row_bytes: u64) -> (u64, u64) {
        let start = self.start;
        // Rows of no bytes all start at the data offset.
        let first_at = |at: u64| -> u64 {
            if row_bytes == 0 {
                if at <= start {
                    0
                } else {
                    rows
                }
            } else {
                at.saturating_sub(start).div_ceil(row_bytes).min(rows)
            }
        };
        let (mut lo, mut hi) = match self.range {
            None => (0, rows),
            Some((s, e)) => (first_at(s), first_at(e)),
        };
        if row_bytes == 0 && !self.owns(start) {
            (lo, hi) = (0, 0);
        }
        // Under a filter the limit counts the rows that pass: DataFusion's file stream stops
        // there.
        if let (Some(limit), None) = (self.scan.limit, &self.scan.filter) {
            hi = hi.min(lo.saturating_add(limit as u64));
        }
        (lo, hi)
    }

    /// The decoder of the partition's rows, their range, and the rows per batch.
    fn plan(&self, header: &ParsedHeader) -> DfResult<(ChunkDecoder, u64, u64, u64)> {
        let decoder = ChunkDecoder::new(
            &header.header,
            &self.scan.indices,
            self.scan.filter.as_ref(),
        )
        .map_err(|e| df_err(e, &self.object))?;
        let row_bytes = decoder.row_bytes() as u64;
        let (lo, hi) = self.rows(decoder.rows(), row_bytes);
        let per_batch = (self.scan.batch_size as u64)
            .min((MAX_BATCH_BYTES as u64 / row_bytes.max(1)).max(1))
            .max(1);
        Ok((decoder, lo, hi, per_batch))
    }

    /// The partition's rows from the mapped file, a batch at a time, each decoded from its
    /// rows' mapped bytes in place.
    fn mapped(self, header: &ParsedHeader, map: Arc<memmap2::Mmap>) -> DfResult<Batches> {
        let (decoder, lo, hi, per_batch) = self.plan(header)?;
        let row_bytes = decoder.row_bytes() as u64;
        let step = usize::try_from(per_batch).unwrap_or(usize::MAX);
        let batches = (lo..hi).step_by(step).map(move |first| {
            let n = per_batch.min(hi - first);
            let at = self.start + first * row_bytes;
            // Within the data the size check found in the map.
            let (s, e) = (at as usize, (at + n * row_bytes) as usize);
            let projected = &self.scan.projected;
            decoder.decode(&map[s..e], first, n as usize, at, projected, &self.object)
        });
        Ok(stream::iter(batches).filter(non_empty).boxed())
    }

    /// The partition's rows through ranged reads of about [`FETCH_BYTES`] (a whole number of
    /// batches each), decoded a batch at a time: one read per batch cost a file open and a
    /// blocking task per 8192 rows.
    fn ranged(self, header: &ParsedHeader) -> DfResult<Batches> {
        let (decoder, lo, hi, per_batch) = self.plan(header)?;
        let row_bytes = decoder.row_bytes() as u64;
        let per_fetch = per_batch * (FETCH_BYTES / (per_batch * row_bytes.max(1))).max(1);
        let fetches: Vec<(u64, u64)> = (lo..hi)
            .step_by(usize::try_from(per_fetch).unwrap_or(usize::MAX))
            .map(|first| (first, per_fetch.min(hi - first)))
            .collect();
        let chunk = Chunk {
            scan: self.scan,
            object: self.object,
            decoder: Arc::new(decoder),
            start: self.start,
            row_bytes,
            per_batch,
        };
        let fetched = stream::iter(fetches)
            .map(move |(first, n)| chunk.clone().fetch(first, n))
            .buffered(PREFETCH);
        Ok(fetched
            .flat_map(|fetched| match fetched {
                Err(e) => stream::once(async { Err(e) }).boxed(),
                Ok((chunk, first, n, bytes)) => chunk.decode(first, n, bytes),
            })
            .filter(non_empty)
            .boxed())
    }

    /// A Fortran-order N-d file: the partition that owns the file's first byte reads the data
    /// whole (the header is the one already read) and gathers the rows.
    async fn whole(self, header: ParsedHeader) -> DfResult<Batches> {
        if !self.owns(0) {
            return Ok(stream::empty().boxed());
        }
        let data = self
            .scan
            .store
            .get_range(&self.object.location, self.start..self.end)
            .await?;
        if data.len() as u64 != self.end - self.start {
            let e = Error::eof("the array data", self.end, self.start + data.len() as u64);
            return Err(df_err(e, &self.object));
        }
        let reader = self
            .scan
            .batch_builder()
            .after_parsed(header, Vec::from(data))
            .map_err(|e| df_err(e, &self.object))?;
        Ok(self.scan.forward(reader, self.object))
    }
}

/// What a ranged read of rows needs to fetch and decode them.
#[derive(Clone)]
struct Chunk {
    scan: Arc<ScanFiles>,
    object: ObjectMeta,
    decoder: Arc<ChunkDecoder>,
    /// Where the data starts.
    start: u64,
    row_bytes: u64,
    per_batch: u64,
}

impl Chunk {
    /// Fetches rows `first..first + n`.
    async fn fetch(self, first: u64, n: u64) -> DfResult<(Chunk, u64, u64, Bytes)> {
        let at = self.start + first * self.row_bytes;
        let len = n * self.row_bytes;
        let bytes = if len == 0 {
            Bytes::new()
        } else {
            self.scan
                .store
                .get_range(&self.object.location, at..at + len)
                .await?
        };
        // A store that answers a range with fewer bytes (the object shortened since the
        // header was read) fails here, not in the slicing of `decode`.
        if bytes.len() as u64 != len {
            let e = Error::eof("the array data", at + len, at + bytes.len() as u64);
            return Err(df_err(e, &self.object));
        }
        Ok((self, first, n, bytes))
    }

    /// Decodes the fetched rows `first..first + n`, a batch at a time.
    fn decode(self, first: u64, n: u64, bytes: Bytes) -> Batches {
        let step = usize::try_from(self.per_batch).unwrap_or(usize::MAX);
        let batches = (0..n).step_by(step).map(move |k| {
            let m = self.per_batch.min(n - k);
            let rb = self.row_bytes;
            let (s, e) = ((k * rb) as usize, ((k + m) * rb) as usize);
            let at = self.start + (first + k) * rb;
            let projected = &self.scan.projected;
            self.decoder.decode(
                &bytes[s..e],
                first + k,
                m as usize,
                at,
                projected,
                &self.object,
            )
        });
        stream::iter(batches).boxed()
    }
}

/// Keeps errors and batches with rows (a pushed filter can leave a batch none).
fn non_empty(b: &DfResult<RecordBatch>) -> std::future::Ready<bool> {
    std::future::ready(b.as_ref().map_or(true, |b| b.num_rows() > 0))
}

/// Maps the local file `object` (of a `LocalFileSystem` store rooted at `/`).
fn map_file(object: &ObjectMeta) -> DfResult<Arc<memmap2::Mmap>> {
    let path = LocalFileSystem::new().path_to_filesystem(&object.location)?;
    let file = std::fs::File::open(&path).map_err(|e| df_err(Error::from(e), object))?;
    // SAFETY: `Mmap::map` is unsafe because the mapped memory can change under us: another
    // process writing the file changes the bytes we read, and truncating it makes access to
    // the lost pages raise SIGBUS. The scan only reads bytes, and every byte value is valid
    // for every decode path (a bad value is an error, never UB); the size is checked against
    // the header when the scan opens the file, and the module docs and the `access` option
    // say that a file shortened while mapped can raise SIGBUS (`access=read` avoids it).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| df_err(Error::from(e), object))?;
    Ok(Arc::new(map))
}
