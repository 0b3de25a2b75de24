//! [`NpyBatchReader`]: an array's rows as Arrow `RecordBatch`es, streamed from a path, any
//! `Read`, a memory map or an `.npz` member, with [`BatchReaderBuilder`]'s options.
//!
//! Bytes come from the reading layer's sources: blocks from an `io::Read` (the
//! `BlockReader` of `read/`), positioned reads of a file (`pread.rs`), or the checked data of a
//! slice or memory map. Each batch is a run of whole rows in logical C order, decoded by
//! `rows::Columns` (`decode.rs`).

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_buffer::Buffer;
use arrow_schema::{ArrowError, Schema, SchemaRef};

use super::decode::{arrow_err, At};
use super::fixed_array;
use super::objects::object_columns;
#[cfg(unix)]
use super::pread::FileData;
use super::rows::Columns;
use super::schema::{Layout, Node};
use npy_serde::error::{Error, Result};
use npy_serde::header::{parse_contents, read_contents, Contents, ObjectHeader, ParsedHeader};
#[cfg(feature = "npz")]
use npy_serde::npz::NpzMember;
use npy_serde::pickle::ObjectArray;
use npy_serde::read::{data_of, open_contents, BlockReader, MmapArray, ReaderBuilder};

/// Rows per batch unless [`BatchReaderBuilder::batch_size`] says otherwise (DataFusion's
/// default). Small batches stay in the CPU caches while their columns are gathered: on W2,
/// 8192 rows decode all columns 1.7x faster than 65536.
pub const DEFAULT_BATCH_SIZE: usize = 8_192;

/// A batch never holds more record bytes than this (unless one row is larger): memory stays
/// bounded whatever the batch size asked for.
pub const MAX_BATCH_BYTES: usize = 64 << 20;

/// Options for reading an array as record batches: batch size, projection, header limits.
///
/// ```
/// use npy_arrow::BatchReaderBuilder;
/// # let path = std::env::temp_dir().join(format!("arrow-builder-{}.npy", std::process::id()));
/// # #[derive(serde::Serialize, npy_serde::NpyRecord)] struct Rec { id: i64, x: f64, y: f32 }
/// # npy_serde::to_path(&path, &[Rec { id: 1, x: 0.5, y: 1.0 }, Rec { id: 2, x: 1.5, y: 2.0 }])?;
/// let reader = BatchReaderBuilder::new().batch_size(1).columns(["x"]).open(&path)?;
/// let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
/// assert_eq!(batches.len(), 2);
/// assert_eq!(batches[1].schema().field(0).name(), "x");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct BatchReaderBuilder {
    batch_size: usize,
    pub(crate) names: Option<Vec<String>>,
    pub(crate) indices: Option<Vec<usize>>,
    pub(crate) reader: ReaderBuilder,
    zero_copy: bool,
    parallel: bool,
}

impl Default for BatchReaderBuilder {
    fn default() -> Self {
        BatchReaderBuilder::new()
    }
}

impl BatchReaderBuilder {
    /// Batches of [`DEFAULT_BATCH_SIZE`] rows, every column, default header limits.
    pub fn new() -> Self {
        BatchReaderBuilder {
            batch_size: DEFAULT_BATCH_SIZE,
            names: None,
            indices: None,
            reader: ReaderBuilder::new(),
            zero_copy: true,
            parallel: true,
        }
    }

    /// Whether a batch's columns may be decoded on all cores (default true; feature
    /// `parallel`), for batches of at least 1 MiB of records with more than one column. The
    /// batches are the same either way.
    pub fn parallel(mut self, yes: bool) -> Self {
        self.parallel = yes;
        self
    }

    /// Rows per batch (at least 1). A batch also holds at most [`MAX_BATCH_BYTES`] of record
    /// bytes (or one row), so it may have fewer rows.
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows.max(1);
        self
    }

    /// Only these columns (record fields by name, in this order); the others are never
    /// decoded. A plain array's one column is named `value`.
    pub fn columns<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.names = Some(names.into_iter().map(Into::into).collect());
        self.indices = None;
        self
    }

    /// Only the columns at these indices (record fields in file order), in this order.
    pub fn column_indices(mut self, indices: impl IntoIterator<Item = usize>) -> Self {
        self.indices = Some(indices.into_iter().collect());
        self.names = None;
        self
    }

    /// Header and data-size limits (for untrusted files), as for the other doors.
    pub fn reader_options(mut self, rb: ReaderBuilder) -> Self {
        self.reader = rb;
        self
    }

    /// Reads object arrays (`descr '|O'`, a record dtype with an `O` field, NumPy 2's
    /// `StringDType`) by interpreting their pickle as data, nothing imported or run (see
    /// [`ReaderBuilder::allow_pickle_data`]): a column whose elements are all `str` (or all
    /// `bytes`) becomes `Utf8` (`Binary`), `None` a null; any other element is an error naming
    /// its index and Python type (see `objects.rs` in the [module docs](crate)). Without
    /// it (the default) such a file is refused with an error naming this option. Object arrays
    /// are read whole (the pickle holds the whole array) from a path or a slice; a stream or an
    /// `.npz` member is refused.
    ///
    /// ```
    /// use arrow_array::{cast::AsArray, Array};
    /// use npy_arrow::BatchReaderBuilder;
    /// let file = npy_serde::pickle::strings_to_vec([Some("a"), None].into_iter());
    /// let e = BatchReaderBuilder::new().from_slice(&file).unwrap_err();
    /// assert!(e.to_string().contains("allow_pickle_data"), "{e}");
    /// let mut r = BatchReaderBuilder::new().allow_pickle_data(true).from_slice(&file)?;
    /// let batch = r.next_batch()?.unwrap();
    /// assert_eq!(batch.column(0).as_string::<i32>().value(0), "a");
    /// assert!(batch.column(0).is_null(1));
    /// # Ok::<(), npy_serde::Error>(())
    /// ```
    pub fn allow_pickle_data(mut self, yes: bool) -> Self {
        self.reader = self.reader.allow_pickle_data(yes);
        self
    }

    /// Whether [`from_mmap_arc`](Self::from_mmap_arc) may hand out the map's own bytes as the
    /// column buffer (default true; see there).
    pub fn zero_copy(mut self, yes: bool) -> Self {
        self.zero_copy = yes;
        self
    }

    /// Reads the `.npy` file at `path`, streamed (the file's size is checked against the header
    /// first). On Unix the batches decoded ahead on all cores also read their bytes there,
    /// each thread by position into a buffer of its own.
    pub fn open<P: AsRef<Path>>(&self, path: P) -> Result<NpyBatchReader<'static>> {
        let (file, header) = match open_contents(path.as_ref(), &self.reader)? {
            (file, Contents::Objects(h)) => return self.objects_after(&h, file),
            (file, other) => (file, other.typed()?),
        };
        #[cfg(unix)]
        if !needs_gather(&header) {
            let (_, len) = self.reader.check(&header.header)?;
            let data = FileData::new(file, header.data_offset, len);
            return self.build(Source::File(data), header);
        }
        self.after_header::<File>(file, header)
    }

    /// Reads one array from `reader`, streamed in blocks as the bytes arrive; the reader is
    /// left just after the array's data once the last batch was read.
    pub fn from_reader<'a, R: Read + Send + 'a>(
        &self,
        mut reader: R,
    ) -> Result<NpyBatchReader<'a>> {
        match read_contents(&mut reader, &self.reader.limits)? {
            Contents::Objects(h) => self.objects_after(&h, reader),
            other => self.after_header(reader, other.typed()?),
        }
    }

    /// Reads the `.npy` file held in `bytes`.
    pub fn from_slice<'a>(&self, bytes: &'a [u8]) -> Result<NpyBatchReader<'a>> {
        let header = match parse_contents(bytes, &self.reader.limits)? {
            Contents::Objects(h) => {
                return self.objects_after(&h, bytes.get(h.data_offset as usize..).unwrap_or(&[]));
            }
            other => other.typed()?,
        };
        let data = data_of(bytes, &header, &self.reader)?;
        self.in_memory(Bytes::Slice(data), header)
    }

    /// An object array's batches from its pickle, the rest of `rest` (read whole, as data), with
    /// [`allow_pickle_data`](Self::allow_pickle_data); without it the refusal naming the option,
    /// before any data is read.
    fn objects_after<'a>(
        &self,
        h: &ObjectHeader,
        mut rest: impl Read,
    ) -> Result<NpyBatchReader<'a>> {
        if !self.reader.allow_pickle_data {
            return Err(h.refusal());
        }
        let mut data = Vec::new();
        rest.read_to_end(&mut data)?;
        self.objects(self.reader.read_objects_with_header(h, &data)?)
    }

    /// The object array in the whole `.npy` file `bytes` as batches; `None` if its dtype holds
    /// no object (then the other doors read it).
    #[doc(hidden)]
    pub fn objects_from(&self, bytes: &[u8]) -> Result<Option<NpyBatchReader<'static>>> {
        match parse_contents(bytes, &self.reader.limits)? {
            Contents::Objects(h) => self
                .objects_after(&h, bytes.get(h.data_offset as usize..).unwrap_or(&[]))
                .map(Some),
            _ => Ok(None),
        }
    }

    /// An object array's values as batches of Arrow columns.
    fn objects<'a>(&self, array: ObjectArray) -> Result<NpyBatchReader<'a>> {
        let cols = object_columns(&array)?;
        let rows = cols.rows;
        // The dtype model has no object dtype: the header is the shape's, of an empty record.
        let elem =
            npy_serde::DType::Record(npy_serde::dtype::Record::packed(Vec::<(String, _)>::new())?);
        let header = ParsedHeader {
            header: npy_serde::Header::new(elem.clone(), array.shape.clone()),
            version: npy_serde::Version::V1_0,
            data_offset: 0,
        };
        let names: Vec<&str> = cols
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        let selected = self.select(&names)?;
        let fields: Vec<_> = selected
            .iter()
            .map(|&i| cols.schema.fields()[i].clone())
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            cols.schema.metadata().clone(),
        ));
        let layout = Layout {
            columns: Vec::new(),
            per_row: 1,
            row_bytes: 0,
            rows,
            elem,
            shape: array.shape,
            meta: Default::default(),
        };
        Ok(NpyBatchReader {
            schema,
            selected,
            batch_rows: self.batch_size,
            next_row: 0,
            source: Source::Objects(cols.columns),
            header,
            layout,
            zero_copy: None,
            parallel: false,
            done: false,
            ahead: Default::default(),
            ahead_err: None,
        })
    }

    /// Reads a memory-mapped file (batches copy their values out of the map).
    pub fn from_mmap<'a>(&self, map: &'a MmapArray) -> Result<NpyBatchReader<'a>> {
        self.in_memory(Bytes::Slice(map.data()), map.parsed_header().clone())
    }

    /// Reads a shared memory-mapped file. A plain 1-D array of little-endian integers or
    /// floats (on a little-endian machine, with the data aligned for the type, as `np.save`
    /// writes it) is not copied: each batch's buffer borrows the map, which stays alive as long
    /// as any batch does.
    pub fn from_mmap_arc(&self, map: Arc<MmapArray>) -> Result<NpyBatchReader<'static>> {
        let header = map.parsed_header().clone();
        self.in_memory(Bytes::Shared(map), header)
    }

    /// Reads an `.npz` member (see [`NpzArchive::by_key`](npy_serde::NpzArchive::by_key)),
    /// streamed as it is decompressed; its length and CRC-32 are checked when the last batch is
    /// read. An object array, with [`allow_pickle_data`](Self::allow_pickle_data), is read
    /// whole (CRC-checked) as [`open`](Self::open) reads one. Feature `npz` (default).
    #[cfg(feature = "npz")]
    pub fn from_npz_member<'a, R: Read + Send>(
        &self,
        mut member: NpzMember<'a, R>,
    ) -> Result<NpyBatchReader<'a>> {
        let header = match member.contents()?.clone() {
            Contents::Objects(h) => return self.objects_after(&h, &mut member),
            other => other.typed()?,
        };
        if member.position() != header.data_offset {
            return Err(Error::invalid_value(format!(
                "the member's data was already partly read ({} bytes)",
                member.position() - header.data_offset
            )));
        }
        self.after_header(member, header)
    }

    /// Reads an array whose header was parsed already (by the DataFusion scan, which
    /// fetches it once per file) from `data`, all of its data bytes.
    #[doc(hidden)]
    pub fn after_parsed(
        &self,
        header: ParsedHeader,
        data: Vec<u8>,
    ) -> Result<NpyBatchReader<'static>> {
        let (_, len) = self.reader.check(&header.header)?;
        if data.len() as u64 != len {
            return Err(Error::eof("the array data", len, data.len() as u64));
        }
        self.in_memory(Bytes::Owned(data), header)
    }

    fn after_header<'a, R: Read + Send + 'a>(
        &self,
        reader: R,
        header: ParsedHeader,
    ) -> Result<NpyBatchReader<'a>> {
        let (_, len) = self.reader.check(&header.header)?;
        let mut block = BlockReader::new(reader, header.data_offset, len);
        if needs_gather(&header) {
            // Logical C order needs random access: the data, read as it arrives.
            let data = block.read_all()?;
            return self.in_memory(Bytes::Owned(data), header);
        }
        let stream = Stream { block, left: len };
        self.build(Source::Stream(Box::new(stream)), header)
    }

    fn in_memory<'a>(&self, bytes: Bytes<'a>, header: ParsedHeader) -> Result<NpyBatchReader<'a>> {
        self.reader.check(&header.header)?;
        let fortran = needs_gather(&header);
        self.build(
            Source::Memory {
                bytes,
                fortran,
                scratch: Vec::new(),
            },
            header,
        )
    }

    fn build<'a>(&self, source: Source<'a>, header: ParsedHeader) -> Result<NpyBatchReader<'a>> {
        let layout = Layout::of(&header.header)?;
        if header.header.fortran_order
            && matches!(header.header.dtype, npy_serde::DType::Array(..))
            && needs_gather(&header)
        {
            return Err(Error::new(npy_serde::ErrorKind::UnsupportedDType(
                "a Fortran-order array whose dtype is a subarray".into(),
            )));
        }
        let names: Vec<&str> = layout
            .columns
            .iter()
            .map(|c| c.field.name().as_str())
            .collect();
        let selected = self.select(&names)?;
        let schema = Arc::new(layout.schema(&selected));
        let rows_cap = (MAX_BATCH_BYTES / layout.row_bytes.max(1)).max(1);
        let zero_copy = match &source {
            Source::Memory {
                bytes: Bytes::Shared(map),
                fortran: false,
                ..
            } if self.zero_copy && header.header.shape.len() == 1 => shared_buffer(map, &layout),
            _ => None,
        };
        Ok(NpyBatchReader {
            schema,
            selected,
            batch_rows: self.batch_size.min(rows_cap),
            next_row: 0,
            source,
            header,
            layout,
            zero_copy,
            parallel: self.parallel,
            done: false,
            ahead: Default::default(),
            ahead_err: None,
        })
    }

    fn select(&self, all: &[&str]) -> Result<Vec<usize>> {
        let n = all.len();
        if let Some(idx) = &self.indices {
            for &i in idx {
                if i >= n {
                    return Err(Error::invalid_value(format!(
                        "no column {i}: the array has {n} column(s)"
                    )));
                }
            }
            return Ok(idx.clone());
        }
        if let Some(names) = &self.names {
            return names
                .iter()
                .map(|name| {
                    all.iter().position(|c| c == name).ok_or_else(|| {
                        Error::invalid_value(format!(
                            "no column named {name:?}: the columns are {all:?}"
                        ))
                    })
                })
                .collect();
        }
        Ok((0..n).collect())
    }
}

fn needs_gather(h: &ParsedHeader) -> bool {
    super::rows::needs_gather(&h.header)
}

/// The whole data of a shared map as one Arrow buffer owned by the map, when a plain 1-D
/// array of native-order fixed-width numbers can be handed out as it is.
fn shared_buffer(map: &Arc<MmapArray>, layout: &Layout) -> Option<Buffer> {
    let [col] = layout.columns.as_slice() else {
        return None;
    };
    let Node::Fixed {
        width, swap: false, ..
    } = col.node
    else {
        return None;
    };
    let data = map.data();
    if !(data.as_ptr() as usize).is_multiple_of(width) || data.is_empty() {
        return None;
    }
    let ptr = std::ptr::NonNull::new(data.as_ptr() as *mut u8)?;
    // SAFETY: `ptr` points to `data.len()` initialised bytes inside the map owned by `*map`;
    // the `Arc` handed to the buffer keeps that `MmapArray` (and so the map) alive, unmoved and
    // unmodified through it, for as long as the buffer or any slice of it exists. The bytes
    // are only ever read (Arrow buffers are immutable; `Buffer::into_mutable` fails on a custom
    // allocation). File changes by other processes are the caller's contract documented on
    // `MmapArray`.
    let buf = unsafe { Buffer::from_custom_allocation(ptr, data.len(), map.clone()) };
    Some(buf)
}

/// The bytes of an array held in memory.
enum Bytes<'a> {
    Slice(&'a [u8]),
    Shared(Arc<MmapArray>),
    Owned(Vec<u8>),
}

impl Bytes<'_> {
    fn get(&self) -> &[u8] {
        match self {
            Bytes::Slice(s) => s,
            Bytes::Shared(m) => m.data(),
            Bytes::Owned(v) => v,
        }
    }
}

/// Blocks from an `io::Read`, C order.
struct Stream<R> {
    block: BlockReader<R>,
    /// Data bytes not yet handed out.
    left: u64,
}

/// The byte stream of a [`Source::Stream`], object-safe.
trait Blocks: Send {
    /// The next `n` bytes, and their stream offset.
    fn next(&mut self, n: usize) -> Result<(&[u8], u64)>;
    /// Reads the rest of the data (the reader is then just after the array).
    fn drain(&mut self) -> Result<()>;
}

impl<R: Read + Send> Blocks for Stream<R> {
    fn next(&mut self, n: usize) -> Result<(&[u8], u64)> {
        let offset = self.block.offset();
        let bytes = self.block.next(n)?;
        self.left -= (n as u64).min(self.left);
        Ok((bytes, offset))
    }

    fn drain(&mut self) -> Result<()> {
        self.block.drain()
    }
}

enum Source<'a> {
    Stream(Box<dyn Blocks + 'a>),
    /// A file read by position (C order).
    #[cfg(unix)]
    File(FileData),
    Memory {
        bytes: Bytes<'a>,
        /// Fortran order with more than one axis longer than 1: rows are gathered.
        fortran: bool,
        scratch: Vec<u8>,
    },
    /// An object array's columns, whole (`objects.rs`): batches are slices of them.
    Objects(Vec<ArrayRef>),
}

/// An array's rows as Arrow record batches; see the [module docs](crate).
///
/// Implements `Iterator<Item = Result<RecordBatch, ArrowError>>` and Arrow's
/// [`RecordBatchReader`] (errors are this crate's [`Error`] inside
/// `ArrowError::ExternalError`); [`next_batch`](Self::next_batch) gives them as this crate's
/// errors.
///
/// ```
/// use npy_arrow::NpyBatchReader;
/// use arrow_array::{cast::AsArray, types::Float64Type};
/// # let path = std::env::temp_dir().join(format!("arrow-reader-{}.npy", std::process::id()));
/// # #[derive(serde::Serialize, npy_serde::NpyRecord)] struct Rec { id: i64, x: f64 }
/// # npy_serde::to_path(&path, &[Rec { id: 1, x: 0.5 }, Rec { id: 2, x: 1.5 }])?;
/// let mut reader = NpyBatchReader::open(&path)?;
/// let batch = reader.next_batch()?.unwrap();
/// assert_eq!(batch.num_rows(), 2);
/// assert_eq!(batch.column(1).as_primitive::<Float64Type>().value(1), 1.5);
/// assert!(reader.next_batch()?.is_none());
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub struct NpyBatchReader<'a> {
    schema: SchemaRef,
    selected: Vec<usize>,
    batch_rows: usize,
    next_row: u64,
    source: Source<'a>,
    header: ParsedHeader,
    layout: Layout,
    zero_copy: Option<Buffer>,
    parallel: bool,
    done: bool,
    /// Batches decoded ahead (on all cores), not yet handed out.
    ahead: std::collections::VecDeque<RecordBatch>,
    /// The error met decoding ahead, returned after the batches before it.
    ahead_err: Option<Error>,
}

impl std::fmt::Debug for NpyBatchReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpyBatchReader")
            .field("schema", &self.schema)
            .field("batch_rows", &self.batch_rows)
            .field("next_row", &self.next_row)
            .finish_non_exhaustive()
    }
}

impl NpyBatchReader<'static> {
    /// [`BatchReaderBuilder::open`] with the default options.
    pub fn open<P: AsRef<Path>>(path: P) -> Result<Self> {
        BatchReaderBuilder::new().open(path)
    }

    /// [`BatchReaderBuilder::from_mmap_arc`] with the default options (zero copy where the
    /// bytes allow it).
    pub fn from_mmap_arc(map: Arc<MmapArray>) -> Result<Self> {
        BatchReaderBuilder::new().from_mmap_arc(map)
    }
}

impl<'a> NpyBatchReader<'a> {
    /// [`BatchReaderBuilder::from_reader`] with the default options.
    pub fn from_reader<R: Read + Send + 'a>(reader: R) -> Result<Self> {
        BatchReaderBuilder::new().from_reader(reader)
    }

    /// [`BatchReaderBuilder::from_slice`] with the default options.
    pub fn from_slice(bytes: &'a [u8]) -> Result<Self> {
        BatchReaderBuilder::new().from_slice(bytes)
    }

    /// [`BatchReaderBuilder::from_mmap`] with the default options.
    pub fn from_mmap(map: &'a MmapArray) -> Result<Self> {
        BatchReaderBuilder::new().from_mmap(map)
    }

    /// [`BatchReaderBuilder::from_npz_member`] with the default options. Feature `npz` (default).
    #[cfg(feature = "npz")]
    pub fn from_npz_member<R: Read + Send>(member: NpzMember<'a, R>) -> Result<Self> {
        BatchReaderBuilder::new().from_npz_member(member)
    }

    /// The Arrow schema of the batches (the selected columns, with the NumPy metadata).
    pub fn schema_ref(&self) -> &SchemaRef {
        &self.schema
    }

    /// The array's header. For an object array (read with
    /// [`BatchReaderBuilder::allow_pickle_data`]) it has the array's shape but, as the dtype
    /// model has no object dtype, an empty record as its dtype: the schema's `numpy.descr`
    /// metadata holds the pickled dtype (`'|O'`, `StringDType()`).
    pub fn header(&self) -> &npy_serde::Header {
        &self.header.header
    }

    /// Rows in the whole array.
    pub fn num_rows(&self) -> u64 {
        self.layout.rows
    }

    /// Rows not yet returned.
    pub fn remaining_rows(&self) -> u64 {
        self.layout.rows - self.next_row
    }

    /// The next batch, `None` after the last one (then a streamed reader has read the whole
    /// array, and an `.npz` member has checked its CRC).
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if let Some(b) = self.ahead.pop_front() {
            self.next_row += b.num_rows() as u64;
            return Ok(Some(b));
        }
        if let Some(e) = self.ahead_err.take() {
            self.done = true;
            return Err(e);
        }
        if self.done {
            return Ok(None);
        }
        let left = self.layout.rows - self.next_row;
        if left == 0 {
            self.done = true;
            if let Source::Stream(s) = &mut self.source {
                s.drain()?;
            }
            return Ok(None);
        }
        let rows = (self.batch_rows as u64).min(left) as usize;
        if let Source::Objects(cols) = &self.source {
            let first = self.next_row as usize;
            let cols = self
                .selected
                .iter()
                .map(|&i| cols[i].slice(first, rows))
                .collect();
            let batch = self.batch(cols, rows)?;
            self.next_row += rows as u64;
            return Ok(Some(batch));
        }
        if let Some(k) = self.batches_ahead(left)
            && self.decode_ahead(k)
        {
            return self.next_batch();
        }
        let result = self.decode_rows(rows);
        if result.is_err() {
            self.done = true;
        }
        let batch = result?;
        self.next_row += rows as u64;
        Ok(Some(batch))
    }

    /// How many batches to decode at once on all cores: small batches of a C-order array,
    /// several left, feature `parallel`.
    fn batches_ahead(&self, left: u64) -> Option<usize> {
        if !cfg!(feature = "parallel")
            || !self.parallel
            || self.zero_copy.is_some()
            || matches!(self.source, Source::Memory { fortran: true, .. })
        {
            return None;
        }
        let bytes = self.batch_rows.checked_mul(self.layout.row_bytes)?;
        if bytes == 0 || bytes > AHEAD_BYTES / 2 {
            return None;
        }
        let batches = left.div_ceil(self.batch_rows as u64);
        #[allow(unused_mut)]
        let mut k = (AHEAD_BYTES / bytes).min(batches as usize);
        // A multiple of the cores, which decode a batch each at a time.
        #[cfg(feature = "parallel")]
        {
            let cores = rayon::current_num_threads();
            if k > cores {
                k -= k % cores;
            }
        }
        (k >= 2).then_some(k)
    }

    /// Decodes the next `k` batches at once, a batch per core at a time, into `ahead`; an
    /// error is kept for after the batches before it. False if their bytes are not all there
    /// (a truncated input: then batch by batch, to the error).
    fn decode_ahead(&mut self, k: usize) -> bool {
        let first = self.next_row;
        let row_bytes = self.layout.row_bytes;
        let left = self.layout.rows - first;
        let total = (self.batch_rows as u64 * k as u64).min(left) as usize;
        let per = self.batch_rows;
        let (per_row, itemsize) = (self.layout.per_row, self.layout.elem.itemsize());
        // Batch `j`'s rows, and where its bytes start in the data.
        let rows_of = |j: usize| (per.min(total - j * per), (j * per * row_bytes) as u64);
        let at_of = |j: usize, offset: u64| At {
            first_elem: (first + (j * per) as u64) * per_row,
            itemsize,
            offset: Some(offset),
        };
        // Each batch's columns together (tile by tile, on one core), the batches on all cores.
        let cols = Columns {
            layout: &self.layout,
            selected: &self.selected,
            schema: &self.schema,
            parallel: false,
        };
        let batches = match &mut self.source {
            // Each batch read where it is decoded.
            #[cfg(unix)]
            Source::File(f) => {
                let f = &*f;
                let start = first * row_bytes as u64;
                each_batch(k, |j| {
                    let (rows, skip) = rows_of(j);
                    f.with(start + skip, rows * row_bytes, |bytes, offset| {
                        cols.decode(bytes, rows, &at_of(j, offset))
                    })
                })
            }
            source => {
                let Ok((chunk, offset)) = contiguous(
                    source,
                    self.header.data_offset,
                    row_bytes,
                    first,
                    total * row_bytes,
                ) else {
                    return false;
                };
                each_batch(k, |j| {
                    let (rows, skip) = rows_of(j);
                    let bytes = &chunk[skip as usize..skip as usize + rows * row_bytes];
                    cols.decode(bytes, rows, &at_of(j, offset + skip))
                })
            }
        };
        for b in batches {
            match b {
                Ok(b) => self.ahead.push_back(b),
                Err(e) => {
                    self.ahead_err = Some(e);
                    break;
                }
            }
        }
        true
    }

    fn decode_rows(&mut self, rows: usize) -> Result<RecordBatch> {
        let first = self.next_row;
        let row_bytes = self.layout.row_bytes;
        let len = rows
            .checked_mul(row_bytes)
            .ok_or_else(|| Error::overflow("a batch's bytes"))?;
        let itemsize = self.layout.elem.itemsize();
        let first_elem = first * self.layout.per_row;
        if let Some(buf) = &self.zero_copy {
            let col = &self.layout.columns[0];
            let start = first as usize * row_bytes;
            let Node::Fixed { dt, .. } = &col.node else {
                unreachable!("a zero-copy column is fixed-width")
            };
            let cols = self
                .selected
                .iter()
                .map(|_| fixed_array(dt, buf.slice_with_length(start, len), rows))
                .collect();
            return self.batch(cols, rows);
        }
        let (chunk, offset): (&[u8], Option<u64>) = match &mut self.source {
            Source::Memory {
                bytes,
                fortran: true,
                scratch,
            } => {
                gather_fortran(
                    bytes.get(),
                    &self.layout.shape,
                    itemsize,
                    first_elem,
                    rows as u64 * self.layout.per_row,
                    scratch,
                )?;
                (scratch.as_slice(), None)
            }
            _ => {
                let (c, o) = contiguous(
                    &mut self.source,
                    self.header.data_offset,
                    row_bytes,
                    first,
                    len,
                )?;
                (c, Some(o))
            }
        };
        let at = At {
            first_elem,
            itemsize,
            offset,
        };
        Columns {
            layout: &self.layout,
            selected: &self.selected,
            schema: &self.schema,
            parallel: self.parallel,
        }
        .decode(chunk, rows, &at)
    }

    fn batch(&self, cols: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(arrow_err)
    }
}

/// `f(0)`, ..., `f(k - 1)`, on all cores (feature `parallel`).
fn each_batch(
    k: usize,
    f: impl Fn(usize) -> Result<RecordBatch> + Sync + Send,
) -> Vec<Result<RecordBatch>> {
    #[cfg(feature = "parallel")]
    {
        use rayon::prelude::*;
        (0..k).into_par_iter().map(f).collect()
    }
    #[cfg(not(feature = "parallel"))]
    (0..k).map(f).collect()
}

/// The `len` record bytes from row `first` of a C-order source, and their stream offset.
fn contiguous<'s>(
    source: &'s mut Source<'_>,
    data_offset: u64,
    row_bytes: usize,
    first: u64,
    len: usize,
) -> Result<(&'s [u8], u64)> {
    match source {
        Source::Stream(s) => s.next(len),
        #[cfg(unix)]
        Source::File(f) => f.get(first * row_bytes as u64, len),
        Source::Objects(_) => Err(Error::invalid_value(
            "an object array's batches are slices of its columns, not bytes",
        )),
        Source::Memory { bytes, .. } => {
            let start = (first as usize) * row_bytes;
            let data = bytes.get();
            let c = data.get(start..start + len).ok_or_else(|| {
                Error::eof("the array data", (start + len) as u64, data.len() as u64)
            })?;
            Ok((c, data_offset + start as u64))
        }
    }
}

/// Small batches are decoded this many record bytes at a time (several batches at once, a
/// batch per core at a time); a batch of at least half of it is decoded alone. Small enough that
/// each core's share stays in its cache (4 MiB at once took 1.5x the CPU time on W2), large
/// enough that the cores rarely wait for each other (a core taken by another process stalls
/// every such meeting).
const AHEAD_BYTES: usize = 2 << 20;

/// Copies elements `first..first + n` (logical C order) of a Fortran-order array into `out`.
fn gather_fortran(
    data: &[u8],
    shape: &[u64],
    itemsize: usize,
    first: u64,
    n: u64,
    out: &mut Vec<u8>,
) -> Result<()> {
    out.clear();
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    // Fortran strides (in elements): the first axis varies fastest.
    let mut strides = vec![1usize; dims.len()];
    for k in 1..dims.len() {
        strides[k] = strides[k - 1] * dims[k - 1];
    }
    // The C multi-index of `first`.
    let mut idx = vec![0usize; dims.len()];
    let mut rest = first as usize;
    for k in (0..dims.len()).rev() {
        idx[k] = rest % dims[k].max(1);
        rest /= dims[k].max(1);
    }
    out.reserve(n as usize * itemsize);
    for _ in 0..n {
        let pos: usize = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
        let start = pos * itemsize;
        let bytes = data.get(start..start + itemsize).ok_or_else(|| {
            Error::eof(
                "the array data",
                (start + itemsize) as u64,
                data.len() as u64,
            )
        })?;
        out.extend_from_slice(bytes);
        for k in (0..dims.len()).rev() {
            idx[k] += 1;
            if idx[k] < dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    Ok(())
}

impl Iterator for NpyBatchReader<'_> {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_batch().map_err(to_arrow).transpose()
    }
}

impl RecordBatchReader for NpyBatchReader<'_> {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// This crate's error as an `ArrowError` (`ExternalError`, from which it can be downcast back).
pub fn to_arrow(e: Error) -> ArrowError {
    ArrowError::ExternalError(Box::new(e))
}

/// The Arrow schema of the `.npy` file at `path` (only its header is read).
pub fn schema_of_path<P: AsRef<Path>>(path: P) -> Result<Schema> {
    let mut f = File::open(path)?;
    let h = npy_serde::header::read_header(&mut f, &Default::default())?;
    super::schema_for(&h.header)
}

/// The whole `.npy` file at `path` as one `RecordBatch` (all rows, all columns).
///
/// ```
/// # let path = std::env::temp_dir().join(format!("arrow-read-batch-{}.npy", std::process::id()));
/// npy_serde::to_path(&path, &[1.0f64, 2.0, 3.0])?;
/// let batch = npy_arrow::read_batch(&path)?;
/// assert_eq!(batch.num_rows(), 3);
/// assert_eq!(batch.schema().field(0).name(), "value");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), npy_serde::Error>(())
/// ```
pub fn read_batch<P: AsRef<Path>>(path: P) -> Result<RecordBatch> {
    let mut r = BatchReaderBuilder::new()
        .batch_size(usize::MAX)
        .open(path)?;
    r.batch_rows = usize::MAX;
    let schema = r.schema.clone();
    match r.next_batch()? {
        Some(b) => {
            r.next_batch()?;
            Ok(b)
        }
        None => Ok(RecordBatch::new_empty(schema)),
    }
}

/// The `.npy` file at `path` as batches of [`DEFAULT_BATCH_SIZE`] rows.
pub fn read_batches<P: AsRef<Path>>(path: P) -> Result<Vec<RecordBatch>> {
    let mut r = NpyBatchReader::open(path)?;
    let mut out = Vec::new();
    while let Some(b) = r.next_batch()? {
        out.push(b);
    }
    Ok(out)
}
