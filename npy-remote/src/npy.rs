//! [`RemoteNpy`]: a `.npy` file (or a stored `.npz` member) on an object store, opened with one
//! ranged GET and read by row ranges, one GET per chunk, chunks fetched concurrently.

use std::ops::Range;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{GetRange, ObjectStore};
use serde::de::DeserializeOwned;

use super::fetch::{open_with_defaults, FetchOptions, Object};
use npy_serde::error::{Error, Result};
use npy_serde::header::{parse_header, Header, ParsedHeader, Version, MAGIC};
use npy_serde::{NpyRecord, ReaderBuilder};

mod rows;

/// A `.npy` array on an object store: its header, read with one ranged GET (two if the header
/// is longer than the first GET), and any range of its rows read on demand.
///
/// A *row* is an item along the first axis (one element of a 1-D array; `3 × 4` elements of a
/// `(n, 3, 4)` array; the one element of a 0-d array), as in [`arrow`](npy_arrow) and SQL.
/// [`read_rows`](RemoteNpy::read_rows) returns the elements of the rows asked for, in C order.
///
/// ```
/// use std::sync::Arc;
/// use npy_remote::RemoteNpy;
/// use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt, PutPayload};
///
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     let store = Arc::new(InMemory::new());
///     let file = npy_serde::to_vec(&(0..1000i64).collect::<Vec<_>>())?;
///     let path = Path::from("data/x.npy");
///     store.put(&path, PutPayload::from(file)).await.unwrap();
///
///     let store: Arc<dyn ObjectStore> = store;
///     let npy = RemoteNpy::open(store, path, "memory:///data/x.npy", &Default::default()).await?;
///     assert_eq!(npy.len(), 1000);
///     let rows: Vec<i64> = npy.read_rows(10..13).await?;
///     assert_eq!(rows, [10, 11, 12]);
///     Ok::<(), npy_serde::Error>(())
/// })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct RemoteNpy {
    pub(crate) obj: Arc<Object>,
    /// Where the `.npy` stream starts in the object (0, or a stored member's data).
    base: u64,
    pub(crate) header: ParsedHeader,
    rb: ReaderBuilder,
    /// Elements per row, rows, bytes per element.
    per_row: u64,
    rows: u64,
    itemsize: u64,
    /// The `.npz` member this is, for messages.
    member: Option<String>,
    /// The stream's header bytes (magic to the first data byte).
    head: Bytes,
    /// A member's CRC-32 (of `head` and the data), checked when it is read whole.
    crc: Option<u32>,
}

impl RemoteNpy {
    open_with_defaults!(
        /// Opens the `.npy` object at `path` on `store` (`url` names it in errors) with the
        /// default [`FetchOptions`]: one ranged GET of its first 64 KiB, whose response also
        /// carries the object's size, and a second only if the header is longer. The header is
        /// checked against `reader`'s limits (`max_header_size` before anything more is fetched)
        /// and its declared data against the object's size.
        RemoteNpy
    );

    /// [`open`](RemoteNpy::open) with these fetch options (timeout, first GET's size, chunk
    /// size and concurrency of the row reads).
    pub async fn open_with(
        store: Arc<dyn ObjectStore>,
        path: Path,
        url: &str,
        reader: &ReaderBuilder,
        options: &FetchOptions,
    ) -> Result<RemoteNpy> {
        let probe = GetRange::Bounded(0..options.probe);
        let (obj, first) = Object::probe(store, path, url, options, probe).await?;
        let size = obj.size;
        Self::at(Arc::new(obj), 0, size, first, reader, None).await
    }

    /// The `.npy` stream of `len` bytes at byte `base` of `obj`, whose first bytes are
    /// `first` (possibly fewer than its header).
    pub(crate) async fn at(
        obj: Arc<Object>,
        base: u64,
        len: u64,
        first: Bytes,
        rb: &ReaderBuilder,
        member: Option<&str>,
    ) -> Result<RemoteNpy> {
        let named = |e: Error| match (member, e.kind()) {
            (_, npy_serde::ErrorKind::Remote { .. }) => e,
            (Some(m), _) => obj.error(format!("member {m}: {e}")),
            (None, _) => obj.error(e),
        };
        let first = first.slice(..first.len().min(usize::try_from(len).unwrap_or(usize::MAX)));
        let (header, head) = match parse_header(&first, &rb.limits) {
            Ok(h) => (h, first),
            Err(e) if e.is_eof() && (first.len() as u64) < len => {
                let need = header_end(&first, rb).map_err(named)?;
                if need > len {
                    let e = Error::eof("the header", need, len);
                    return Err(named(e));
                }
                let rest = obj.get(base + first.len() as u64..base + need).await?;
                let mut all = BytesMut::with_capacity(first.len() + rest.len());
                all.extend_from_slice(&first);
                all.extend_from_slice(&rest);
                let all = all.freeze();
                (parse_header(&all, &rb.limits).map_err(named)?, all)
            }
            Err(e) => return Err(named(e)),
        };
        let (_, data_len) = rb.check(&header.header).map_err(named)?;
        let end = header.data_offset.checked_add(data_len);
        // A member holds exactly its header and data (as `NpzArchive` checks); a file may
        // have bytes after its array.
        if end.is_none_or(|end| end > len || (member.is_some() && end != len)) {
            return Err(named(Error::invalid_value(format!(
                "the header declares {data_len} bytes of data from byte {}, the {} holds {len} \
                 bytes",
                header.data_offset,
                if member.is_some() { "member" } else { "object" }
            ))));
        }
        let h = &header.header;
        let (rows, per_row) = match h.shape.split_first() {
            None => (1, 1),
            Some((&rows, rest)) => {
                let per_row = rest.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
                (
                    rows,
                    per_row.ok_or_else(|| named(Error::overflow("a row's elements")))?,
                )
            }
        };
        Ok(RemoteNpy {
            itemsize: h.dtype.itemsize() as u64,
            obj,
            base,
            rb: rb.clone(),
            per_row,
            rows,
            member: member.map(str::to_string),
            head: head.slice(..(header.data_offset as usize).min(head.len())),
            crc: None,
            header,
        })
    }

    /// This member's CRC-32, checked when it is read whole.
    pub(crate) fn with_crc(mut self, crc: u32) -> Self {
        self.crc = Some(crc);
        self
    }

    /// The array's header: dtype, shape, order.
    pub fn header(&self) -> &Header {
        &self.header.header
    }

    /// The number of rows (the first axis; 1 for a 0-d array).
    pub fn len(&self) -> u64 {
        self.rows
    }

    /// True if the array has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The object's URL, as given to `open`.
    pub fn url(&self) -> &str {
        &self.obj.url
    }

    /// The object's size in bytes (from the first GET's response).
    pub fn object_size(&self) -> u64 {
        self.obj.size
    }

    /// Changes the fetch options of the reads that follow (chunk size, concurrency, timeout).
    pub fn set_options(&mut self, options: FetchOptions) {
        Arc::make_mut(&mut self.obj).opts = options;
    }

    /// Reads the elements of rows `rows` (in C order) into a `Vec<T>` through the exact tier
    /// (`T: NpyRecord`, as [`from_slice`](npy_serde::from_slice)): one GET per chunk of
    /// [`FetchOptions::chunk_bytes`], up to [`FetchOptions::concurrency`] at once, each chunk
    /// decoded as it arrives. A Fortran-order array with more than one axis longer than 1 is
    /// read whole only (its rows are not contiguous). A decoding error keeps its kind, with the
    /// record index and byte offset of the whole array (the member, for an `.npz` member).
    ///
    /// Each chunk's response is decoded frame by frame, as the client returns them, straight
    /// into the result's memory, on a thread of tokio's blocking pool (not on the task that
    /// drives the requests), while the next chunks arrive.
    pub async fn read_rows<T: DeserializeOwned + NpyRecord + Send + 'static>(
        &self,
        rows: Range<u64>,
    ) -> Result<Vec<T>> {
        let elems = self.elements(&rows)?;
        let h = &self.header.header;
        let walk = h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() > 1;
        if walk || self.itemsize == 0 || elems.is_empty() {
            return self
                .read_with(rows, |rb, data, ph| rb.records_in_slice::<T>(data, ph))
                .await;
        }
        self.read_placed(elems, self.whole_crc(&rows)).await
    }

    /// [`read_rows`](RemoteNpy::read_rows) for any `Deserialize` element type (the
    /// [`from_slice_serde`](npy_serde::from_slice_serde) tiers): the same values and errors.
    pub async fn read_rows_serde<T: DeserializeOwned + Send>(
        &self,
        rows: Range<u64>,
    ) -> Result<Vec<T>> {
        self.read_with(rows, |rb, data, ph| {
            // The serde doors take a whole file: the chunk behind its own header.
            let head = ph.header.to_bytes()?;
            let mut file = Vec::with_capacity(head.len() + data.len());
            file.extend_from_slice(&head);
            file.extend_from_slice(data);
            rb.from_slice_serde::<T>(&file)
                .map_err(|e| unshift(e, head.len() as u64))
        })
        .await
    }

    /// Whole-file reads of one element type: `decode` turns a chunk's bytes (with a header
    /// whose data starts at byte 0) into elements.
    async fn read_with<T: Send>(
        &self,
        rows: Range<u64>,
        decode: impl Fn(&ReaderBuilder, &[u8], &ParsedHeader) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let elems = self.elements(&rows)?;
        let h = &self.header.header;
        // A member read whole has its CRC-32 checked, over its header and every data chunk.
        let mut crc = self.whole_crc(&rows);
        if h.fortran_order && h.shape.iter().filter(|&&d| d > 1).count() > 1 {
            if rows != (0..self.rows) {
                return Err(Error::invalid_value(format!(
                    "{}: a Fortran-order array with more than one axis longer than 1 has no \
                     contiguous rows: read rows 0..{} (all of them)",
                    self.obj.url, self.rows
                )));
            }
            let data = self.fetch_all().await?;
            if let Some((c, _)) = &mut crc {
                c.update(&data);
            }
            self.check_crc(crc)?;
            let ph = self.chunk_header(h.shape.clone(), true);
            return decode(&self.rb, &data, &ph).map_err(|e| self.locate(e, 0, 0));
        }
        let total =
            usize::try_from(elems.end - elems.start).map_err(|_| Error::overflow("rows"))?;
        let parts = futures::stream::iter(self.chunks(elems))
            .map(|c| self.chunk(c, &decode))
            .buffered(self.obj.opts.concurrency);
        let (all, crc) = parts
            .try_fold(
                (Vec::new(), crc),
                |(mut all, mut crc), (bytes, mut part)| async move {
                    if let Some((c, _)) = &mut crc {
                        c.update(&bytes);
                    }
                    if all.is_empty() {
                        // The first chunk's Vec becomes the result (no copy for one chunk).
                        std::mem::swap(&mut all, &mut part);
                        all.reserve(total.saturating_sub(all.len()));
                    } else {
                        all.append(&mut part);
                    }
                    Ok((all, crc))
                },
            )
            .await?;
        self.check_crc(crc)?;
        Ok(all)
    }

    /// For a member read whole (`rows` all of them), its CRC-32 started over its header, with
    /// the directory's; otherwise none.
    fn whole_crc(&self, rows: &Range<u64>) -> Option<(super::zipdir::Crc, u32)> {
        self.crc.filter(|_| *rows == (0..self.rows)).map(|want| {
            let mut c = super::zipdir::Crc::new();
            c.update(&self.head);
            (c, want)
        })
    }

    /// A whole member's CRC-32 against its directory entry.
    fn check_crc(&self, crc: Option<(super::zipdir::Crc, u32)>) -> Result<()> {
        match crc {
            Some((c, want)) if c.value() != want => Err(self.obj.error(format!(
                "member {:?}: CRC-32 {:#010x}, its directory entry says {want:#010x}",
                self.member.as_deref().unwrap_or(""),
                c.value()
            ))),
            _ => Ok(()),
        }
    }

    /// One chunk of elements: fetched, then decoded; its bytes with its elements.
    async fn chunk<T>(
        &self,
        elems: Range<u64>,
        decode: &impl Fn(&ReaderBuilder, &[u8], &ParsedHeader) -> Result<Vec<T>>,
    ) -> Result<(Bytes, Vec<T>)> {
        let bytes = self.obj.get(self.byte_range(&elems)).await?;
        let ph = self.chunk_header(vec![elems.end - elems.start], false);
        let at = self.header.data_offset + elems.start * self.itemsize;
        let v = decode(&self.rb, &bytes, &ph).map_err(|e| self.locate(e, elems.start, at))?;
        Ok((bytes, v))
    }

    /// The element range of `rows`, checked.
    fn elements(&self, rows: &Range<u64>) -> Result<Range<u64>> {
        if rows.start > rows.end || rows.end > self.rows {
            return Err(Error::invalid_value(format!(
                "{}: rows {rows:?} asked for, the array has {} rows",
                self.obj.url, self.rows
            )));
        }
        // Within the checked element count: no overflow.
        Ok(rows.start * self.per_row..rows.end * self.per_row)
    }

    /// Element ranges of at most one chunk's bytes each (at least one element).
    fn chunks(&self, elems: Range<u64>) -> Vec<Range<u64>> {
        if self.itemsize == 0 || elems.is_empty() {
            return vec![elems];
        }
        let per = (self.obj.opts.chunk / self.itemsize).max(1);
        let mut out = Vec::new();
        let mut at = elems.start;
        while at < elems.end {
            let end = elems.end.min(at.saturating_add(per));
            out.push(at..end);
            at = end;
        }
        out
    }

    /// The object's bytes holding elements `elems`.
    pub(crate) fn byte_range(&self, elems: &Range<u64>) -> Range<u64> {
        let start = self.base + self.header.data_offset;
        start + elems.start * self.itemsize..start + elems.end * self.itemsize
    }

    /// The data bytes of rows `rows` (checked against the array), fetched chunk by chunk,
    /// concurrently, into one buffer: what a column table's scan decodes. A member's CRC-32
    /// is checked, over its header and data, when every row is fetched and `check_crc` asks.
    pub async fn fetch_rows(&self, rows: Range<u64>, check_crc: bool) -> Result<Vec<u8>> {
        let whole = rows == (0..self.rows);
        let elems = self.elements(&rows)?;
        let data = self.obj.get_chunked(self.byte_range(&elems)).await?;
        if let (true, true, Some(want)) = (whole, check_crc, self.crc) {
            let mut c = super::zipdir::Crc::new();
            c.update(&self.head);
            c.update(&data);
            self.check_crc(Some((c, want)))?;
        }
        Ok(data)
    }

    /// The parsed header (with where the data starts in the `.npy` stream).
    pub fn parsed_header(&self) -> &ParsedHeader {
        &self.header
    }

    /// Where the data starts in the object.
    pub fn data_start(&self) -> u64 {
        self.base + self.header.data_offset
    }

    /// All the data bytes, chunk by chunk, concurrently, into one buffer.
    async fn fetch_all(&self) -> Result<Vec<u8>> {
        let n = self.rows * self.per_row;
        self.obj.get_chunked(self.byte_range(&(0..n))).await
    }

    /// A header for data of this dtype and `shape` starting at byte 0.
    fn chunk_header(&self, shape: Vec<u64>, fortran_order: bool) -> ParsedHeader {
        ParsedHeader {
            header: Header {
                dtype: self.header.header.dtype.clone(),
                shape,
                fortran_order,
            },
            version: self.header.version,
            data_offset: 0,
        }
    }

    /// A chunk's decoding error with the positions of the whole array: records from
    /// `first`, bytes from `at` (in the `.npy` stream).
    fn locate(&self, e: Error, first: u64, at: u64) -> Error {
        if matches!(e.kind(), npy_serde::ErrorKind::Remote { .. }) {
            return e;
        }
        let pos = e.position().clone();
        let mut out = Error::new(e.into_kind());
        if let Some(b) = pos.byte {
            out = out.at_byte(at + b);
        }
        if let Some(r) = pos.record {
            out = out.at_record(first + r);
        }
        if let Some(f) = pos.field {
            out = out.in_field(&f);
        }
        out
    }
}

/// An error from a chunk behind a header of `head` bytes, its byte offset from the data.
fn unshift(e: Error, head: u64) -> Error {
    let pos = e.position().clone();
    let Some(b) = pos.byte else { return e };
    let mut out = Error::new(e.into_kind()).at_byte(b.saturating_sub(head));
    if let Some(r) = pos.record {
        out = out.at_record(r);
    }
    if let Some(f) = pos.field {
        out = out.in_field(&f);
    }
    out
}

/// Where the header of the stream starting with `first` ends (prefix and text), its length
/// field checked against the limit; `first` holds at least the prefix.
fn header_end(first: &[u8], rb: &ReaderBuilder) -> Result<u64> {
    if first.len() < 8 || &first[..6] != MAGIC {
        return Err(Error::eof("the header prefix", 8, first.len() as u64));
    }
    let version = Version::from_tuple(first[6], first[7])?;
    let prefix = version.prefix_len();
    let Some(field) = first.get(8..prefix) else {
        return Err(Error::eof(
            "the header length",
            prefix as u64,
            first.len() as u64,
        ));
    };
    let hlen = match *field {
        [a, b] => u64::from(u16::from_le_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
        _ => return Err(Error::header("a header length field of 2 or 4 bytes")),
    };
    if hlen > rb.limits.max_header_size {
        return Err(Error::new(npy_serde::ErrorKind::HeaderTooLarge {
            len: hlen,
            limit: rb.limits.max_header_size,
        }));
    }
    Ok(prefix as u64 + hlen)
}
