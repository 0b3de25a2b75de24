//! The bodies of the fuzz targets, one public function per target, and their helpers.
//!
//! Each `fuzz_targets/<name>.rs` is a one-line `fuzz_target!` calling [`header`], [`npy`],
//! [`npz`], [`mmap_npz`], [`records`], [`roundtrip`], [`writers`] or [`pickle`]. This file depends only on `npy-serde`,
//! `serde`, `arbitrary` and `std`, so that `tests/tests/it/fuzz_regressions.rs` can include it
//! with `#[path]` and replay every saved crash input through exactly the code the fuzzer ran,
//! on stable, in `cargo test` ([`writers_from_bytes`] for the `writers` target's structured
//! input). The roundtrip target decodes its dtype and values from the fuzz bytes with the
//! small [`ByteSource`] below; `writers` takes its typed records from `arbitrary`.
//!
//! Every function panics on a broken invariant; a returned error from the library is fine.

use std::io::{Cursor, Read};

use npy_serde::dtype::{ByteOrder, DType, Field, Record, Scalar, TimeUnit};
use npy_serde::header::{
    parse_contents, parse_header, read_contents, read_header, Contents, Limits,
};
use npy_serde::npz::{
    Compression, MmapNpz, NpzAppender, NpzArchive, NpzReaderBuilder, NpzStreamWriter, NpzWriter,
};
use npy_serde::{Array, NpyRecord, ReaderBuilder, Value, WriterBuilder};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A reader of unknown length that hands out at most `chunk` bytes per `read`, like a pipe or
/// socket (and exercises every short-read path).
pub struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl<'a> Chunked<'a> {
    /// A reader over `data` returning at most `chunk` (>= 1) bytes per call.
    pub fn new(data: &'a [u8], chunk: usize) -> Self {
        Chunked {
            data,
            chunk: chunk.max(1),
        }
    }
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.chunk).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Value equality where every NaN equals every NaN (a NaN's payload may change in a long double
/// or half conversion, and `NaN != NaN` would make a correct round trip look wrong).
pub fn same_value(a: &Value, b: &Value) -> bool {
    fn f(x: f64, y: f64) -> bool {
        (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
    }
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => f(*x, *y),
        (Value::Complex(xr, xi), Value::Complex(yr, yi)) => f(*xr, *yr) && f(*xi, *yi),
        (Value::List(x), Value::List(y)) => same_values(x, y),
        (Value::Record(x), Value::Record(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((n, v), (m, w))| n == m && same_value(v, w))
        }
        _ => a == b,
    }
}

/// [`same_value`] over two slices.
pub fn same_values(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}

fn raised_limits() -> Limits {
    Limits {
        max_header_size: 1 << 24,
        max_depth: 10_000,
        max_dims: 1024,
    }
}

// ---------------------------------------------------------------------------------------------
// header: bytes -> parse_header / read_header
// ---------------------------------------------------------------------------------------------

/// Target `header`: `parse_header` on the bytes and `read_header` through a 1-byte-per-read
/// reader, with NumPy's default limits and with raised ones. They must agree; an accepted
/// header has a representable data size and a data offset inside the input, and re-writing it
/// parses back to the same header.
pub fn header(data: &[u8]) {
    header_with(data, &Limits::default());
    header_with(data, &raised_limits());
}

fn header_with(data: &[u8], limits: &Limits) {
    let parsed = parse_header(data, limits);
    let trickled = read_header(&mut Chunked::new(data, 1), limits);
    match (&parsed, &trickled) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "slice and reader parse differ"),
        (Err(a), Err(b)) => assert_eq!(a.kind().code(), b.kind().code()),
        _ => panic!("slice and reader disagree: {parsed:?} vs {trickled:?}"),
    }
    // The header's kind: what parse_header accepts is `Typed` with the same header; an object
    // array is refused by parse_header for its dtype alone, with the same error; slice and
    // reader agree.
    let contents = parse_contents(data, limits);
    let contents_trickled = read_contents(&mut Chunked::new(data, 1), limits);
    match (&contents, &contents_trickled) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "slice and reader contents differ"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("slice and reader disagree: {contents:?} vs {contents_trickled:?}"),
    }
    match (&parsed, contents) {
        (Ok(p), Ok(Contents::Typed(c))) => assert_eq!(p, &c),
        (Err(e), Ok(Contents::Objects(h))) => {
            assert_eq!(e.to_string(), h.refusal().to_string());
            assert!(h.data_offset <= data.len() as u64);
            let count = h.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            assert!(
                count.is_some(),
                "accepted object header with overflowing count"
            );
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (p, c) => panic!("parse_header and parse_contents disagree: {p:?} vs {c:?}"),
    }
    let Ok(p) = parsed else { return };
    assert!(p.data_offset <= data.len() as u64);
    let len = p
        .header
        .data_len()
        .expect("accepted header with overflowing size");
    assert!(len <= i64::MAX as u64);
    // Top-level subarrays cannot be written (NumPy folds them into the shape); others can.
    if let Ok(bytes) = p.header.to_bytes() {
        let again = parse_header(&bytes, &raised_limits())
            .unwrap_or_else(|e| panic!("re-written header does not parse: {e}"));
        assert_eq!(again.header, p.header);
        assert_eq!(again.data_offset, bytes.len() as u64);
    }
}

// ---------------------------------------------------------------------------------------------
// npy: bytes -> Array / Value
// ---------------------------------------------------------------------------------------------

/// Target `npy`: the dynamic `Array` reader from a slice and from a chunked reader (which must
/// agree), serde into `Value`, and the streaming `RecordReader`, with default options and with
/// raised header limits plus data-size limits.
pub fn npy(data: &[u8]) {
    // Values without data bytes are the one thing whose count the input does not bound: a
    // small limit keeps every input fast (the code paths are those of the defaults).
    npy_with(data, &ReaderBuilder::new().max_empty_items(1 << 10));
    npy_with(
        data,
        &ReaderBuilder::new()
            .with_limits(raised_limits())
            .max_data_size(1 << 20)
            .max_empty_items(1 << 8),
    );
}

fn npy_with(data: &[u8], rb: &ReaderBuilder) {
    let chunk = 1 + data.last().copied().unwrap_or(0) as usize % 13;
    let deserialize_slice = rb.array_from_slice(data);
    let deserialize_reader = rb.read_array(Chunked::new(data, chunk));
    match (&deserialize_slice, &deserialize_reader) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.dtype, b.dtype);
            assert_eq!(a.shape, b.shape);
            assert!(
                same_values(&a.values, &b.values),
                "slice and reader values differ"
            );
        }
        (Err(_), Err(_)) => {}
        _ => panic!(
            "slice and reader disagree: {:?} vs {:?}",
            deserialize_slice.as_ref().map(|a| (&a.dtype, &a.shape)),
            deserialize_reader.as_ref().map(|a| (&a.dtype, &a.shape))
        ),
    }
    if let Ok(a) = &deserialize_slice {
        let count: u64 = a.shape.iter().product();
        assert_eq!(a.values.len() as u64, count);
        let _ = a.to_nested();
    }

    let _ = rb.deserialize_slice::<Value>(data);
    let _ = rb.deserialize_reader::<_, Value>(Chunked::new(data, chunk));
    let _ = rb.from_slice_serde::<Value>(data);
    let _ = rb.from_reader_serde::<_, Value>(Chunked::new(data, chunk));

    if let Ok(records) = rb.records_serde::<_, Value>(Chunked::new(data, chunk)) {
        let total = records.len();
        let mut n = 0u64;
        for r in records {
            if r.is_err() {
                break;
            }
            n += 1;
        }
        assert!(n <= total);
    }
}

// ---------------------------------------------------------------------------------------------
// records: bytes -> derived structs
// ---------------------------------------------------------------------------------------------

/// A nested record.
#[derive(Serialize, Deserialize, NpyRecord, Debug)]
pub struct Inner {
    /// `<f4`
    pub x: f32,
    /// `<i2`
    pub y: i16,
}

/// The record type of the `records` target: most field kinds the derive supports.
#[derive(Serialize, Deserialize, NpyRecord, Debug)]
pub struct Rec {
    /// `<i8`
    pub id: i64,
    /// `|b1`
    pub flag: bool,
    /// `('<f4', (3,))`
    pub v: [f32; 3],
    /// `|S5`
    #[npy(bytes = 5)]
    pub name: String,
    /// `<U3`
    #[npy(unicode = 3)]
    pub label: String,
    /// a nested record
    pub inner: Inner,
    /// `|u1`
    pub h: u8,
    /// `('<u2', (2, 2))`
    pub m: [[u16; 2]; 2],
}

/// `Rec` without its strings: a type with a constant layout, which `from_*` decode on
/// their exact tier when the file's dtype is this one (in either byte order).
#[derive(Serialize, Deserialize, NpyRecord, Debug)]
pub struct Pod {
    /// `<i8`
    pub id: i64,
    /// `|b1`
    pub flag: bool,
    /// `('<f4', (3,))`
    pub v: [f32; 3],
    /// a nested record
    pub inner: Inner,
    /// `|u1`
    pub h: u8,
    /// `('<u2', (2, 2))`
    pub m: [[u16; 2]; 2],
}

/// Borrows its strings from the input.
#[derive(Deserialize, Debug)]
#[allow(dead_code)] // only decoded
struct Borrowed<'a> {
    id: i64,
    name: &'a str,
    raw: Option<&'a [u8]>,
}

/// A subset of fields, in another order, some widened.
#[derive(Deserialize, Debug)]
#[allow(dead_code)] // only decoded
struct Subset {
    h: u16,
    id: i64,
    inner: (f64, i32),
}

fn records_roundtrip(recs: &[Rec]) {
    let bytes = npy_serde::to_vec(recs).expect("writing what was read");
    let again: Vec<Rec> =
        npy_serde::deserialize_slice(&bytes).expect("re-reading what was written");
    let bytes2 = npy_serde::to_vec(&again).expect("re-writing");
    assert_eq!(bytes, bytes2, "write -> read -> write changed the bytes");
}

/// Target `records`: `deserialize_slice::<Vec<Rec>>` (and borrowing, subset, 0-d and nested
/// variants), the chunked-reader path (which must agree with the slice) and the streaming
/// reader. A file of exactly `Rec`'s dtype that reads successfully is written back and must
/// re-read and re-write identically.
pub fn records(data: &[u8]) {
    let chunk = 1 + data.len() % 7;
    let rb = ReaderBuilder::new().max_data_size(1 << 22);
    let slice = rb.deserialize_slice::<Vec<Rec>>(data);
    let reader = rb.deserialize_reader::<_, Vec<Rec>>(Chunked::new(data, chunk));
    assert_eq!(
        slice.is_ok(),
        reader.is_ok(),
        "slice and reader disagree: {:?} vs {:?}",
        slice.as_ref().err(),
        reader.as_ref().err()
    );
    // Reading converts losslessly from other layouts (wider strings, other byte orders, extra
    // fields), which `Rec`'s own dtype may not hold; a file of exactly that dtype must write
    // back. (Found by the fuzzer: a file with `name` as `|S7` reads a 6-byte string that
    // `|S5` cannot hold.)
    let exact = parse_header(data, &Limits::default())
        .is_ok_and(|p| p.header.dtype == Rec::dtype() && !p.header.fortran_order);
    if let (true, Ok(recs)) = (exact, &slice) {
        records_roundtrip(recs);
    }
    // The flat readers (fast tier first, general path after a miss) agree with the nested
    // one on 1-D arrays: the same records, or an error of the same kind.
    let flat = rb.from_slice_serde::<Rec>(data);
    let flat_reader = rb.from_reader_serde::<_, Rec>(Chunked::new(data, chunk));
    assert_eq!(
        flat.is_ok(),
        flat_reader.is_ok(),
        "flat slice and reader disagree: {:?} vs {:?}",
        flat.as_ref().err(),
        flat_reader.as_ref().err()
    );
    let one_d = parse_header(data, &Limits::default()).is_ok_and(|p| p.header.shape.len() == 1);
    if one_d {
        match (&slice, &flat) {
            (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
            (Err(a), Err(b)) => assert_eq!(a.kind().code(), b.kind().code(), "{a} vs {b}"),
            (a, b) => panic!("nested and flat readers disagree: {a:?} vs {b:?}"),
        }
    }
    // The exact tier (`from_*`) gives exactly what the flat readers give, from the
    // same source: the same values, or the same error.
    let same =
        |what: &str, a: &npy_serde::Result<Vec<Pod>>, b: &npy_serde::Result<Vec<Pod>>| match (a, b)
        {
            (Ok(a), Ok(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{what}"),
            (a, b) => panic!("{what}: {a:?} vs {b:?}"),
        };
    same(
        "from_slice vs from_slice_serde",
        &rb.from_slice::<Pod>(data),
        &rb.from_slice_serde::<Pod>(data),
    );
    same(
        "from_reader vs from_reader_serde",
        &rb.from_reader::<_, Pod>(Chunked::new(data, chunk)),
        &rb.from_reader_serde::<_, Pod>(Chunked::new(data, chunk)),
    );
    // A 1-D file of exactly Pod's dtype (either byte order) that reads is written back
    // through the exact tier of writing to the same data bytes (Pod has no padding).
    if let (Ok(p), Ok(pods)) = (
        parse_header(data, &Limits::default()),
        rb.from_slice::<Pod>(data),
    ) {
        let h = &p.header;
        let le = Pod::dtype();
        let be = le.to_byte_order(ByteOrder::Big);
        if h.shape.len() == 1 && (h.dtype == le || h.dtype == be) {
            let order = if h.dtype == le {
                ByteOrder::Little
            } else {
                ByteOrder::Big
            };
            let out = WriterBuilder::new()
                .byte_order(order)
                .to_vec(&pods)
                .expect("writing what was read");
            let start = p.data_offset as usize;
            let len = pods.len() * le.itemsize();
            let written = parse_header(&out, &Limits::default()).expect("our own header");
            assert_eq!(
                out.get(written.data_offset as usize..),
                data.get(start..start + len),
                "read -> write changed the data bytes"
            );
        }
    }
    let _ = rb.from_slice_serde::<Borrowed>(data);
    let _ = rb.deserialize_slice::<Vec<Borrowed>>(data);
    let _ = rb.deserialize_slice::<Vec<Subset>>(data);
    let _ = rb.deserialize_slice::<Rec>(data);
    let _ = rb.deserialize_slice::<Vec<Vec<Rec>>>(data);
    if let Ok(stream) = rb.records_serde::<_, Rec>(Chunked::new(data, chunk)) {
        let mut out = Vec::new();
        for r in stream {
            match r {
                Ok(r) => out.push(r),
                Err(_) => return,
            }
        }
        if exact {
            records_roundtrip(&out);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// npz: bytes -> every member
// ---------------------------------------------------------------------------------------------

/// Target `npz`: open the bytes as an archive (default limits, and small ones), then read every
/// member every way the public API offers: header, `Array`, serde `Value`, streamed records,
/// raw bytes, a member dropped half read; by index and by key.
pub fn npz(data: &[u8]) {
    npz_with(&NpzReaderBuilder::new(), data);
    npz_with(
        &NpzReaderBuilder::new()
            .max_members(64)
            .max_member_size(1 << 20)
            .max_header_size(1 << 16)
            .reject_duplicate_names(true),
        data,
    );
}

fn npz_with(builder: &NpzReaderBuilder, data: &[u8]) {
    let Ok(mut archive) = builder.from_bytes(data) else {
        return;
    };
    let n = archive.len();
    assert_eq!(archive.members().len(), n);
    let keys: Vec<String> = archive.keys().map(str::to_string).collect();
    for i in 0..n {
        if let Ok(mut m) = archive.by_index(i) {
            let _ = m.header();
        }
        if let Ok(m) = archive.by_index(i) {
            if let Ok(a) = m.read_array() {
                assert_eq!(a.values.len() as u64, a.shape.iter().product::<u64>());
            }
        }
        if let Ok(m) = archive.by_index(i) {
            let _ = m.deserialize::<Value>();
        }
        if let Ok(m) = archive.by_index(i) {
            if let Ok(records) = m.records_serde::<Value>() {
                for r in records {
                    if r.is_err() {
                        break;
                    }
                }
            }
        }
        let size = archive.members()[i].size;
        if let Ok(m) = archive.by_index(i) {
            if let Ok(raw) = m.read_raw() {
                // Reading is checked against the declared size.
                assert_eq!(raw.len() as u64, size);
            }
        }
        if let Ok(mut m) = archive.by_index(i) {
            let mut two = [0u8; 2];
            let _ = m.read(&mut two);
        }
    }
    for k in &keys {
        let _ = archive.header(k);
        let _ = archive.read_array(k);
        let _ = archive.deserialize::<Vec<i64>>(k);
    }
}

// ---------------------------------------------------------------------------------------------
// mmap_npz: bytes -> the mapped archive, every stored member viewed in place
// ---------------------------------------------------------------------------------------------

/// Target `mmap_npz`: the bytes as a mapped archive ([`MmapNpz`], default and small limits):
/// opening checks every member's place, so whatever it hands out must lie inside the archive;
/// each stored member viewed in place (slices, records, one record, the whole array) must
/// agree with the copying reader where both succeed (the copying reader also checks the
/// CRC-32, which the views skip).
pub fn mmap_npz(data: &[u8]) {
    mmap_npz_with(&NpzReaderBuilder::new(), data);
    mmap_npz_with(
        &NpzReaderBuilder::new()
            .max_members(64)
            .max_header_size(1 << 16)
            .reject_duplicate_names(true),
        data,
    );
}

fn mmap_npz_with(builder: &NpzReaderBuilder, data: &[u8]) {
    let Ok(npz) = MmapNpz::from_bytes_with(data, builder) else {
        return;
    };
    let whole = npz.as_bytes().as_ptr_range();
    let inside = |b: &[u8]| {
        b.is_empty() || (whole.contains(&b.as_ptr()) && b.as_ptr_range().end <= whole.end)
    };
    let mut copy = npz.archive().ok();
    for (i, m) in npz.members().iter().enumerate() {
        if let Ok(b) = npz.stored_bytes(&m.key) {
            assert!(inside(b), "{}: stored bytes outside the map", m.name);
            assert_eq!(b.len() as u64, m.compressed_size, "{}", m.name);
        }
        let Ok(a) = npz.array_at(i) else { continue };
        assert!(
            inside(a.as_bytes()) && inside(a.data()),
            "{}: outside the map",
            m.name
        );
        assert_eq!(
            a.as_bytes().len() as u64,
            m.size,
            "{}: the member is the .npy",
            m.name
        );
        let off = npz
            .data_offset(&m.key)
            .expect("data_offset of a mapped member");
        assert_eq!(
            a.data().as_ptr() as usize - whole.start as usize,
            off as usize,
            "{}",
            m.name
        );
        if let Ok(v) = a.as_slice::<u8>() {
            assert_eq!(v.len(), a.data().len());
        }
        let _ = a.as_slice::<f64>();
        let _ = a.as_slice::<[u16; 2]>();
        let n = a.len();
        if n > 0 {
            let _ = a.record_serde::<Value>(n - 1);
        }
        assert!(a.record_serde::<Value>(n).is_err(), "record past the end");
        if let Ok(records) = a.records_serde::<Value>() {
            for r in records.take(64) {
                if r.is_err() {
                    break;
                }
            }
        }
        let mapped = a.to_array();
        // A duplicate name lists the last entry, which both readers read by name.
        if let (Ok(mapped), Some(Ok(copied))) = (
            &mapped,
            copy.as_mut()
                .map(|c| c.by_name(&m.name).and_then(|mm| mm.read_array())),
        ) {
            assert!(
                same_values(&mapped.values, &copied.values),
                "{}: mapped and copied arrays differ",
                m.name
            );
            assert_eq!(mapped.shape, copied.shape);
        }
        let _ = npz.verify(&m.key);
    }
}

// ---------------------------------------------------------------------------------------------
// roundtrip: fuzz bytes -> dtype and values -> write -> read
// ---------------------------------------------------------------------------------------------

/// Decodes structured choices from fuzz bytes (like `arbitrary::Unstructured`, without the
/// dependency): every call consumes bytes from the front; an exhausted source yields zeros, so
/// every input decodes to something.
pub struct ByteSource<'a> {
    data: &'a [u8],
}

impl<'a> ByteSource<'a> {
    /// A source over the fuzz input.
    pub fn new(data: &'a [u8]) -> Self {
        ByteSource { data }
    }

    /// `N` bytes (zero-filled once the input is exhausted).
    pub fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        out
    }

    /// A byte.
    pub fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }

    /// An integer in `0..=max`.
    pub fn upto(&mut self, max: usize) -> usize {
        if max == 0 {
            return 0;
        }
        let v = if max < 256 {
            self.u8() as usize
        } else {
            u32::from_le_bytes(self.bytes::<4>()) as usize
        };
        v % (max + 1)
    }

    /// A bool.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// 8 bytes as a little-endian `u64`.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes::<8>())
    }
}

const UNITS: [TimeUnit; 14] = [
    TimeUnit::Generic,
    TimeUnit::Year,
    TimeUnit::Month,
    TimeUnit::Week,
    TimeUnit::Day,
    TimeUnit::Hour,
    TimeUnit::Minute,
    TimeUnit::Second,
    TimeUnit::Millisecond,
    TimeUnit::Microsecond,
    TimeUnit::Nanosecond,
    TimeUnit::Picosecond,
    TimeUnit::Femtosecond,
    TimeUnit::Attosecond,
];

/// A scalar type (string widths kept small).
pub fn arbitrary_scalar(u: &mut ByteSource) -> Scalar {
    use Scalar::*;
    let time = |u: &mut ByteSource| {
        let unit = UNITS[u.upto(UNITS.len() - 1)];
        let mult = if unit == TimeUnit::Generic || u.bool() {
            1
        } else {
            1 + u.upto(999) as u32
        };
        (unit, mult)
    };
    match u.upto(20) {
        0 => Bool,
        1 => I8,
        2 => I16,
        3 => I32,
        4 => I64,
        5 => U8,
        6 => U16,
        7 => U32,
        8 => U64,
        9 => F16,
        10 => F32,
        11 => F64,
        12 => LongDouble,
        13 => Complex64,
        14 => Complex128,
        15 => ComplexLongDouble,
        16 => Bytes(u.upto(9)),
        17 => Unicode(u.upto(5)),
        18 => Void(u.upto(9)),
        19 => {
            let (t, m) = time(u);
            DateTime(t, m)
        }
        _ => {
            let (t, m) = time(u);
            TimeDelta(t, m)
        }
    }
}

/// Field names: mostly identifiers, sometimes ones that need escaping or are not latin-1
/// (which forces a v3.0 header).
fn arbitrary_name(u: &mut ByteSource, i: usize) -> String {
    const PIECES: [&str; 12] = [
        "a", "x", "id", "pos", "'", "\"", "\\", "é", "π", "名", "\n", " ",
    ];
    let n = u.upto(3);
    let mut s = String::new();
    for _ in 0..n {
        s.push_str(PIECES[u.upto(PIECES.len() - 1)]);
    }
    // Non-empty and distinct (an empty name is NumPy's padding marker).
    format!("{s}{i}")
}

/// A dtype: scalars, subarrays (not at the top level, which NumPy folds into the shape) and
/// records with padding, titles and nesting, at most `depth` levels deep and with at most
/// `max_leaves` scalar values per element.
pub fn arbitrary_dtype(u: &mut ByteSource, depth: u32, top: bool, max_leaves: u64) -> DType {
    let kind = if depth == 0 { 0 } else { u.upto(4) };
    match kind {
        3 if !top => {
            let base = arbitrary_dtype(u, depth - 1, false, max_leaves);
            let n = 1 + u.upto(2);
            let shape: Vec<u64> = (0..n).map(|_| u.upto(3) as u64).collect();
            // At most `max_leaves` values per element (a few subarrays deep would otherwise make
            // thousands, each built, written, read, compared and dropped for every input).
            if leaves(&base).saturating_mul(shape.iter().product()) > max_leaves {
                return base;
            }
            // Zero-size bases cannot be subarrays (NumPy refuses them too).
            DType::array(base.clone(), shape).unwrap_or(base)
        }
        3 | 4 => {
            let n = u.upto(4);
            let mut fields: Vec<Field> = Vec::with_capacity(n);
            let mut offset = 0usize;
            for i in 0..n {
                offset += u.upto(3);
                let dt = arbitrary_dtype(u, depth - 1, false, max_leaves);
                // At most `max_leaves` values per element here too.
                let so_far: u64 = fields.iter().map(|f| leaves(&f.dtype)).sum();
                if so_far + leaves(&dt) > max_leaves {
                    break;
                }
                let size = dt.itemsize();
                let mut f = Field::new(arbitrary_name(u, i), dt, offset);
                if u.upto(7) == 0 {
                    f.title = Some(format!("title of {i}"));
                }
                fields.push(f);
                offset += size;
            }
            let itemsize = offset + u.upto(3);
            DType::Record(Record::new(fields, itemsize).expect("a valid layout by construction"))
        }
        _ => {
            let order = [ByteOrder::Little, ByteOrder::Big, ByteOrder::NotApplicable][u.upto(2)];
            DType::with_order(arbitrary_scalar(u), order)
        }
    }
}

/// IEEE half-precision bits to `f64` (exact).
pub fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((bits >> 10) & 0x1f) as i32;
    let mant = (bits & 0x3ff) as f64;
    match exp {
        0 => sign * mant * 2f64.powi(-24),
        31 if mant == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + mant / 1024.0) * 2f64.powi(e - 15),
    }
}

/// A value of `dtype` that survives a write and a read unchanged: strings without trailing
/// NULs (which NumPy and this crate strip), floats exactly representable in the dtype.
pub fn arbitrary_value(u: &mut ByteSource, dtype: &DType) -> Value {
    match dtype {
        DType::Record(r) => Value::Record(
            r.fields()
                .iter()
                .map(|f| (f.name.clone(), arbitrary_value(u, &f.dtype)))
                .collect(),
        ),
        DType::Array(base, shape) => arbitrary_sub(u, base, shape),
        DType::Plain(p) => match p.scalar() {
            Scalar::Bool => Value::Bool(u.bool()),
            Scalar::I8 => Value::Int(u.u8() as i8 as i64),
            Scalar::I16 => Value::Int(i16::from_le_bytes(u.bytes()) as i64),
            Scalar::I32 => Value::Int(i32::from_le_bytes(u.bytes()) as i64),
            Scalar::I64 => Value::Int(i64::from_le_bytes(u.bytes())),
            Scalar::U8 => Value::UInt(u.u8() as u64),
            Scalar::U16 => Value::UInt(u16::from_le_bytes(u.bytes()) as u64),
            Scalar::U32 => Value::UInt(u32::from_le_bytes(u.bytes()) as u64),
            Scalar::U64 => Value::UInt(u.u64()),
            Scalar::F16 => Value::Float(f16_to_f64(u16::from_le_bytes(u.bytes()))),
            Scalar::F32 => Value::Float(f32::from_bits(u32::from_le_bytes(u.bytes())) as f64),
            Scalar::F64 | Scalar::LongDouble => Value::Float(f64::from_bits(u.u64())),
            Scalar::Complex64 => Value::Complex(
                f32::from_bits(u32::from_le_bytes(u.bytes())) as f64,
                f32::from_bits(u32::from_le_bytes(u.bytes())) as f64,
            ),
            Scalar::Complex128 | Scalar::ComplexLongDouble => {
                Value::Complex(f64::from_bits(u.u64()), f64::from_bits(u.u64()))
            }
            Scalar::Bytes(n) => {
                let len = u.upto(n);
                let mut b: Vec<u8> = (0..len).map(|_| u.u8()).collect();
                while b.last() == Some(&0) {
                    b.pop();
                }
                Value::Bytes(b)
            }
            Scalar::Unicode(n) => {
                let len = u.upto(n);
                let s: String = (0..len)
                    .map(|_| {
                        let c = u32::from_le_bytes(u.bytes()) % 0x11_0000;
                        char::from_u32(c).unwrap_or('\u{fffd}')
                    })
                    .collect();
                Value::String(s.trim_end_matches('\0').to_string())
            }
            Scalar::Void(n) => Value::Void((0..n).map(|_| u.u8()).collect()),
            Scalar::DateTime(..) => Value::DateTime(i64::from_le_bytes(u.bytes())),
            Scalar::TimeDelta(..) => Value::TimeDelta(i64::from_le_bytes(u.bytes())),
        },
    }
}

fn arbitrary_sub(u: &mut ByteSource, base: &DType, dims: &[u64]) -> Value {
    match dims.split_first() {
        None => arbitrary_value(u, base),
        Some((&n, rest)) => Value::List((0..n).map(|_| arbitrary_sub(u, base, rest)).collect()),
    }
}

/// Most scalar values in one element of the roundtrip target's dtypes, and a quarter of the
/// most in one of its arrays: the cost of an input is mostly in its values (built, written,
/// read back, compared, dropped) and in its header's text (one field per leaf at most), and
/// the code paths are the same for a few of them as for thousands.
pub const MAX_LEAVES: u64 = 32;

/// The number of scalar values in one element of `dtype` (a record's fields, a subarray's
/// elements).
pub fn leaves(dtype: &DType) -> u64 {
    match dtype {
        DType::Plain(_) => 1,
        DType::Array(base, shape) => leaves(base).saturating_mul(shape.iter().product()),
        DType::Record(r) => r.fields().iter().map(|f| leaves(&f.dtype)).sum(),
    }
}

/// A whole array: a top-level scalar or record dtype (at most `max_leaves` scalars per
/// element), a small shape, either order, values (at most `4 * max_leaves` scalars: the
/// largest dimensions shrink, none disappears).
pub fn arbitrary_array(u: &mut ByteSource, max_leaves: u64) -> Array {
    let dtype = arbitrary_dtype(u, 3, true, max_leaves);
    let ndim = u.upto(3);
    let mut shape: Vec<u64> = (0..ndim).map(|_| u.upto(4) as u64).collect();
    let per = leaves(&dtype).max(1);
    while !shape.is_empty() && shape.iter().product::<u64>().saturating_mul(per) > 4 * max_leaves {
        let big = (0..shape.len())
            .max_by_key(|&i| shape[i])
            .expect("a non-empty shape");
        shape[big] -= 1;
    }
    let count: u64 = shape.iter().product();
    let fortran_order = u.bool();
    let values = (0..count).map(|_| arbitrary_value(u, &dtype)).collect();
    Array {
        dtype,
        shape,
        fortran_order,
        values,
    }
}

fn check_same(want: &Array, got: npy_serde::Result<Array>, how: &str) {
    let got = got.unwrap_or_else(|e| panic!("{how}: reading back {}: {e}", want.dtype));
    assert_eq!(got.dtype, want.dtype, "{how}: dtype");
    assert_eq!(got.shape, want.shape, "{how}: shape");
    assert_eq!(got.fortran_order, want.fortran_order, "{how}: order");
    assert!(
        same_values(&got.values, &want.values),
        "{how}: values differ\nwrote {:?}\nread  {:?}",
        want.values,
        got.values
    );
}

/// Target `roundtrip`: a dtype, shape, order and values decoded from the bytes -> written with
/// `WriterBuilder::write_array` and as an `.npz` member (stored or deflated) -> read back from
/// a slice, a chunked reader and the archive -> the same array (NaN-aware); the npz member's
/// bytes are the `.npy` file's.
pub fn roundtrip(data: &[u8]) {
    let mut u = ByteSource::new(data);
    // The options come first: most inputs run out of bytes inside the array, and an exhausted
    // source gives zeros. The npz part for one input in four (the writers target puts its
    // arrays through npz too), deflate for one in sixteen: an archive costs as much as the
    // rest of the input under the sanitizer, a deflate stream's setup (zeroed window and hash
    // tables) and the inflate of reading it back several times that.
    let opts = u.u8();
    let npz = opts & 0x03 == 0x03;
    let compressed = npz && opts & 0x0c == 0x0c;
    let chunk = 1 + (opts >> 4) as usize;
    let array = arbitrary_array(&mut u, MAX_LEAVES);

    let mut bytes = Vec::new();
    WriterBuilder::new()
        .write_array(&mut bytes, &array)
        .unwrap_or_else(|e| panic!("writing {} {:?}: {e}", array.dtype, array.shape));
    // The header is parsed by both reads below (and its dtype, shape and order checked by
    // their equality); a third parse of it cost a tenth of the target's time.
    check_data_offset(&bytes, "write_array");
    check_same(&array, Array::from_slice(&bytes), "from_slice");
    check_same(
        &array,
        ReaderBuilder::new().read_array(Chunked::new(&bytes, chunk)),
        "read_array",
    );
    if !npz {
        return;
    }

    let mut zip = Cursor::new(Vec::new());
    let mut w = if compressed {
        NpzWriter::new_compressed(&mut zip)
    } else {
        NpzWriter::new(&mut zip)
    };
    w.add_array("a", &array)
        .expect("adding the array to an npz");
    w.finish().expect("finishing the npz");
    let zip = zip.into_inner();
    let mut archive = NpzArchive::from_bytes(&zip).expect("opening our npz");
    check_same(&array, archive.read_array("a"), "npz");
    let raw = archive.read_raw("a").expect("raw member");
    assert_eq!(raw, bytes, "the npz member is not the .npy file");
}

// ---------------------------------------------------------------------------------------------
// writers: arbitrary arrays and typed records through one writer per input, read back
// ---------------------------------------------------------------------------------------------

/// A typed record for the writers target: numbers, a bool, a subarray and a nested aligned
/// record, so that `to_vec` takes its exact tier (and, `#[repr(C)]`, its raw path).
#[derive(
    arbitrary::Arbitrary, Serialize, Deserialize, NpyRecord, Debug, Clone, Copy, PartialEq,
)]
#[npy(align)]
#[repr(C)]
pub struct Typed {
    /// `<i8`
    pub id: i64,
    /// `|b1`
    pub flag: bool,
    /// `('<f4', (3,))`
    pub v: [f32; 3],
    /// `<u2`
    pub h: u16,
}

/// The writer one input of the writers target goes through.
///
/// One writer per input, not all of them: writing, header-checking and reading back through
/// every writer made each input cost six writes, about ten header parses and an archive, which
/// held the target at 550-650 exec/s under ASan (most of it in header text writing and
/// parsing, and in npz). Across inputs every writer still runs, each with its read-back and
/// header checks, and the fuzzer keeps the inputs of each writer apart (they cover different
/// code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    /// `WriterBuilder::to_vec` of the typed records.
    ToVec,
    /// `NpyWriter` with a declared length, record by record; the same bytes as `to_vec`.
    Counted,
    /// `NpyWriter` on a seekable sink (header patched at `finish`), by slices and records.
    Uncounted,
    /// `WriterBuilder::write_array` of the dynamic array.
    Array,
    /// An npz archive (the dynamic array and the typed records), stored.
    Npz,
    /// The same archive with the typed member deflated (and cut to [`MAX_DEFLATED_TYPED`]
    /// records).
    NpzDeflate,
    /// `NpzStreamWriter` (no seeking): `start_records`, `add_positional`, `add_raw`, and a
    /// key added twice.
    NpzStream,
    /// An archive appended to with `NpzAppender` (aligned or not): a member added, a
    /// positional one, a duplicate refused, a member left half written and the archive
    /// restored.
    NpzAppend,
}

impl Writer {
    /// The writer for a selector byte (the streaming and appending archive writers, added
    /// later, take the top 32 values). The weights follow the cost: an archive written and
    /// read costs two to three times another writer's input, and deflate about twice that
    /// again (its stream's setup allocates and zeroes a window and hash tables), so npz gets
    /// one selector value in eight, deflate one of those four; the dynamic array (any dtype)
    /// gets the most. (How often each writer runs in the end is the corpus's doing: inputs
    /// that reach new code are kept and mutated, mostly keeping their first byte.)
    pub fn from_byte(b: u8) -> Writer {
        match b {
            224..=239 => return Writer::NpzStream,
            240..=255 => return Writer::NpzAppend,
            _ => {}
        }
        match b % 32 {
            0..=5 => Writer::ToVec,
            6..=10 => Writer::Counted,
            11..=16 => Writer::Uncounted,
            17..=27 => Writer::Array,
            28..=30 => Writer::Npz,
            _ => Writer::NpzDeflate,
        }
    }
}

/// The writers target's input: which writer, typed records, the writers' options and a
/// dynamic array (any dtype and shape, from the bytes, as the roundtrip target makes them).
#[derive(Debug)]
pub struct WritersInput {
    /// The writer this input goes through.
    pub writer: Writer,
    /// Records for the typed writers.
    pub typed: Vec<Typed>,
    /// Write big-endian (the typed `.npy` writers).
    pub big: bool,
    /// Reader chunk size.
    pub chunk: u8,
    /// The uncounted writer's block buffer size, in 8-byte units (at least one record).
    pub buffer: u8,
    /// Bytes that `arbitrary_array` turns into a dynamic array.
    pub array_bytes: Vec<u8>,
}

/// Most scalar values per element of the writers target's dynamic arrays (a quarter of the
/// roundtrip target's [`MAX_LEAVES`]): every dtype kind and nesting is still made (a record
/// holding a subarray of records needs two), and the headers stay short. A header's text is
/// most of the cost of an array input here, where each is written and parsed several times
/// (write, parse, read back; npz adds a second write and read), and roundtrip already covers
/// the larger dtypes through the same writers.
pub const WRITERS_MAX_LEAVES: u64 = 8;

/// Most typed records in the deflated member of an npz input: a payload big enough for every
/// path of this crate's compressed members, too small for the fuzzer to explore zlib-rs
/// with (see `writers`).
pub const MAX_DEFLATED_TYPED: usize = 2;

/// Most typed records in one input: the typed writers' code paths (a block flush, a header
/// patched at the end) are all reached with a few records and a small block buffer.
pub const MAX_TYPED: usize = 16;

impl<'a> arbitrary::Arbitrary<'a> for WritersInput {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        // The selector comes first, so that every input, however short, picks its writer.
        let writer = Writer::from_byte(u.arbitrary()?);
        let typed: Vec<Typed> = u
            .arbitrary_iter()?
            .take(MAX_TYPED)
            .collect::<Result<_, _>>()?;
        Ok(WritersInput {
            writer,
            typed,
            big: u.arbitrary()?,
            chunk: u.arbitrary()?,
            buffer: u.arbitrary()?,
            array_bytes: {
                let n = u.len();
                u.bytes(n)?.to_vec()
            },
        })
    }
}

/// [`writers`] on the input `arbitrary` makes of `data` (for replaying saved inputs on stable).
pub fn writers_from_bytes(data: &[u8]) {
    use arbitrary::Arbitrary;
    if let Ok(input) = WritersInput::arbitrary(&mut arbitrary::Unstructured::new(data)) {
        writers(input);
    }
}

fn same_typed(a: &[Typed], b: &[Typed]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.id == y.id
                && x.flag == y.flag
                && x.h == y.h
                && x.v
                    .iter()
                    .zip(&y.v)
                    .all(|(p, q)| p.to_bits() == q.to_bits())
        })
}

/// `WriterBuilder::write_array` into a `Vec`.
fn write_array(array: &Array) -> Vec<u8> {
    let mut npy = Vec::new();
    WriterBuilder::new()
        .write_array(&mut npy, array)
        .unwrap_or_else(|e| panic!("writing {} {:?}: {e}", array.dtype, array.shape));
    npy
}

/// The header check of the typed writers' outputs: it parses, its data starts at a multiple
/// of 64 bytes inside the output, and it has `dtype` and `shape`.
fn check_header(bytes: &[u8], dtype: &DType, shape: &[u64], how: &str) {
    let p = parse_header(bytes, &Limits::default())
        .unwrap_or_else(|e| panic!("{how}: our header does not parse: {e}"));
    assert_eq!(p.data_offset % 64, 0, "{how}: data offset");
    assert!(p.data_offset <= bytes.len() as u64, "{how}: data offset");
    assert_eq!(&p.header.dtype, dtype, "{how}: dtype");
    assert_eq!(p.header.shape, shape, "{how}: shape");
}

/// The data offset an `.npy` file's preamble gives (magic, version, header length; the header
/// text itself is parsed by the read-back) is a multiple of 64 inside the file.
fn check_data_offset(bytes: &[u8], how: &str) {
    assert!(bytes.starts_with(b"\x93NUMPY"), "{how}: magic");
    let offset = match bytes.get(6) {
        Some(1) => 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize,
        Some(2 | 3) => 12 + u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
        v => panic!("{how}: version {v:?}"),
    };
    assert_eq!(offset % 64, 0, "{how}: data offset");
    assert!(offset <= bytes.len(), "{how}: data offset");
}

/// Target `writers`: one writer per input (see [`Writer`]) — `WriterBuilder::to_vec`,
/// `NpyWriter` counted and uncounted, `WriterBuilder::write_array`, npz stored or deflate — on
/// arbitrary typed records or an arbitrary dynamic array: the output's header is checked and
/// it reads back equal.
pub fn writers(input: WritersInput) {
    let chunk = 1 + input.chunk as usize % 17;
    let typed = &input.typed;
    let order = if input.big {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    // The typed `.npy` writers' options and the dtype their files must declare, made only for
    // them (a record dtype is a tree of allocations).
    let typed_writer = || {
        let wb = WriterBuilder::new().record::<Typed>().byte_order(order);
        (wb, Typed::dtype().to_byte_order(order))
    };
    let typed_shape = [typed.len() as u64];
    match input.writer {
        Writer::ToVec => {
            let (wb, typed_dtype) = typed_writer();
            let bytes = wb.to_vec(typed).expect("typed records write");
            check_header(&bytes, &typed_dtype, &typed_shape, "to_vec");
            let back: Vec<Typed> = npy_serde::from_slice(&bytes).expect("to_vec read back");
            assert!(same_typed(&back, typed), "to_vec -> from_slice");
        }
        Writer::Counted => {
            let (wb, typed_dtype) = typed_writer();
            let mut counted = wb
                .writer_with_len(Vec::new(), typed.len() as u64)
                .expect("counted writer");
            for t in typed {
                counted.write(t).expect("write");
            }
            let out = counted.finish().expect("finish counted");
            check_header(&out, &typed_dtype, &typed_shape, "counted NpyWriter");
            let back: Vec<Typed> = ReaderBuilder::new()
                .from_reader(Chunked::new(&out, chunk))
                .expect("counted read back from a reader");
            assert!(same_typed(&back, typed), "counted NpyWriter");
            // A declared length makes the file `to_vec` makes.
            assert_eq!(out, wb.to_vec(typed).expect("to_vec"), "counted vs to_vec");
        }
        Writer::Uncounted => {
            let (wb, typed_dtype) = typed_writer();
            // A small block buffer (the default is 1 MiB, zeroed for every input): the same
            // code, and more block flushes per input.
            let mut uncounted = wb
                .buffer_size(input.buffer as usize * 8)
                .writer(Cursor::new(Vec::new()))
                .expect("uncounted writer");
            let (a, b) = typed.split_at(typed.len() / 2);
            uncounted.write_all(a).expect("write_all");
            for t in b {
                uncounted.write_serde(t).expect("write");
            }
            let out = uncounted.finish().expect("finish uncounted").into_inner();
            check_header(&out, &typed_dtype, &typed_shape, "uncounted NpyWriter");
            let back: Vec<Typed> = ReaderBuilder::new()
                .from_reader(Chunked::new(&out, chunk))
                .expect("uncounted read back from a reader");
            assert!(same_typed(&back, typed), "uncounted NpyWriter");
        }
        Writer::Array => {
            let array =
                arbitrary_array(&mut ByteSource::new(&input.array_bytes), WRITERS_MAX_LEAVES);
            let npy = write_array(&array);
            // `Array::from_slice` is `parse_header` and the data: the header check is its
            // dtype, shape and order (in `check_same`) and the data offset (a second
            // `parse_header` of the same bytes would only double the cost of the input).
            check_data_offset(&npy, "write_array");
            check_same(&array, Array::from_slice(&npy), "write_array");
        }
        Writer::Npz | Writer::NpzDeflate => {
            // Two members (the typed records and the dynamic array), so that the archive has
            // a real central directory. With deflate, only the typed member is compressed (a
            // mixed archive, one deflate stream per input), and it holds at most
            // MAX_DEFLATED_TYPED records. Any more arbitrary bytes to compress and the fuzzer
            // breeds inputs that explore zlib-rs's compressor rather than this crate: with the
            // dynamic array deflated they were 18% of the corpus and 40% of the target's time
            // in a 9-minute run (at a selector weight of 1/32), and with up to 16 records
            // deflated, half of the inputs added in 10 minutes. This crate's code for a
            // compressed member, writing and reading, is the same for any payload.
            let typed = match input.writer {
                Writer::NpzDeflate => &typed[..typed.len().min(MAX_DEFLATED_TYPED)],
                _ => &typed[..],
            };
            let array =
                arbitrary_array(&mut ByteSource::new(&input.array_bytes), WRITERS_MAX_LEAVES);
            let mut zip = Cursor::new(Vec::new());
            let mut w = if input.writer == Writer::NpzDeflate {
                NpzWriter::new_compressed(&mut zip)
            } else {
                NpzWriter::new(&mut zip)
            };
            w.add("t", typed).expect("npz add");
            w.set_compression(Compression::Stored);
            w.add_array("a", &array).expect("npz add_array");
            w.finish().expect("npz finish");
            let zip = zip.into_inner();
            let mut archive = NpzArchive::from_bytes(&zip).expect("opening our npz");
            // The array member is the .npy file `write_array` makes, whose header the Array
            // writer checks (parsing it again here would double the cost of these inputs);
            // the typed member's header is the one `read` parses to give the records back.
            assert_eq!(
                archive.read_raw("a").expect("raw member"),
                write_array(&array),
                "the npz member is not the .npy file"
            );
            check_same(&array, archive.read_array("a"), "npz");
            let back: Vec<Typed> = archive.deserialize("t").expect("npz typed member");
            assert!(same_typed(&back, typed), "npz typed member");
        }
        Writer::NpzStream => npz_stream(&input),
        Writer::NpzAppend => npz_append(&input),
    }
}

/// The [`Writer::NpzStream`] input: records streamed into a member, a positional member, a raw
/// member, a duplicate refused; everything reads back.
fn npz_stream(input: &WritersInput) {
    let typed = &input.typed[..];
    let raw = &input.array_bytes[..input.array_bytes.len().min(64)];
    let mut out = Vec::new();
    let mut w = NpzStreamWriter::new(&mut out).align(input.big);
    let mut r = w
        .start_records::<Typed>("t", typed.len() as u64)
        .expect("start_records");
    for t in typed {
        r.write(t).expect("write");
    }
    r.finish().expect("finish records");
    assert!(w.add("t", typed).is_err(), "a key added twice");
    assert_eq!(w.add_positional(typed).expect("add_positional"), "arr_0");
    w.add_raw("raw.bin", raw).expect("add_raw");
    w.finish().expect("stream finish");
    let mut archive = NpzArchive::from_bytes(&out).expect("opening our streamed npz");
    assert_eq!(
        archive.keys().collect::<Vec<_>>(),
        ["t", "arr_0", "raw.bin"]
    );
    for key in ["t", "arr_0"] {
        let back: Vec<Typed> = archive.read(key).expect("streamed typed member");
        assert!(same_typed(&back, typed), "streamed member {key}");
    }
    assert_eq!(archive.read_raw("raw.bin").expect("raw member"), raw);
}

/// The [`Writer::NpzAppend`] input: an archive of the typed records, appended to (the dynamic
/// array, a positional member), with a duplicate refused and a member left half written
/// rolled back; the result reads back, and aligned stored members map in place.
fn npz_append(input: &WritersInput) {
    let typed = &input.typed[..];
    let array = arbitrary_array(&mut ByteSource::new(&input.array_bytes), WRITERS_MAX_LEAVES);
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    w.add("t", typed).expect("npz add");
    let base = w.finish().expect("npz finish").into_inner();

    // A member left half written: the archive is restored when the appender is dropped.
    let mut cur = Cursor::new(base.clone());
    let mut app = NpzAppender::new(&mut cur).expect("appender");
    let mut r = app
        .start_records::<Typed>("half", typed.len() as u64 + 1)
        .expect("start_records");
    for t in typed {
        r.write(t).expect("write");
    }
    drop(r);
    assert!(
        app.add("more", typed).is_err(),
        "an unfinished member stops the appender"
    );
    drop(app);
    assert_eq!(
        cur.get_ref(),
        &base,
        "a failed append must restore the archive"
    );

    let mut app = NpzAppender::new(Cursor::new(base))
        .expect("appender")
        .align(input.big);
    assert!(app.add("t", typed).is_err(), "the key is already there");
    app.add_array("a", &array).expect("append add_array");
    assert_eq!(app.add_positional(typed).expect("add_positional"), "arr_0");
    let zip = app.finish().expect("append finish").into_inner();
    let mut archive = NpzArchive::from_bytes(&zip).expect("opening our appended npz");
    assert_eq!(archive.keys().collect::<Vec<_>>(), ["t", "a", "arr_0"]);
    check_same(&array, archive.read_array("a"), "appended npz");
    for key in ["t", "arr_0"] {
        let back: Vec<Typed> = archive.read(key).expect("appended typed member");
        assert!(same_typed(&back, typed), "appended member {key}");
    }
    if input.big {
        let npz = MmapNpz::from_bytes_with(&zip, &NpzReaderBuilder::new()).expect("mapping");
        for key in ["a", "arr_0"] {
            let off = npz.data_offset(key).expect("an aligned member maps");
            assert_eq!(off % 64, 0, "aligned member {key} at {off}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// arrow: bytes -> npy -> Arrow record batches -> npy (feature `arrow`)
// ---------------------------------------------------------------------------------------------

/// Target `arrow`: the Arrow batch reader from a slice and from a chunked reader (which must
/// agree: the same batches or both an error), never succeeding where the dynamic `Array`
/// reader fails on the data; batches that read are written back with `NpyBatchWriter`, and
/// that file reads as the same `Array` values (long doubles are already rounded to f64 by
/// both readers).
#[cfg(feature = "arrow")]
pub fn arrow(data: &[u8]) {
    use npy_arrow::{BatchReaderBuilder, NpyBatchWriter};
    let rb = ReaderBuilder::new()
        .max_empty_items(1 << 10)
        .max_data_size(1 << 20);
    let batch = data.len() % 4 + 1;
    let b = BatchReaderBuilder::new()
        .batch_size(batch)
        .reader_options(rb.clone());
    let collect = |r: npy_serde::Result<npy_arrow::NpyBatchReader<'_>>| {
        let mut r = r?;
        let schema = r.schema_ref().clone();
        let mut out = Vec::new();
        while let Some(b) = r.next_batch()? {
            out.push(b);
        }
        Ok::<_, npy_serde::Error>((schema, out))
    };
    let sliced = collect(b.from_slice(data));
    let streamed = collect(b.from_reader(Chunked::new(data, 7)));
    match (&sliced, &streamed) {
        (Ok((_, x)), Ok((_, y))) => assert!(x == y, "slice and reader batches differ"),
        // A slice's size is checked before any value is decoded, so a truncated slice is an
        // end-of-input error where the reader, decoding as bytes arrive, may first meet a bad
        // value in the records that did arrive (fuzz-regressions/arrow-1.bin).
        (Err(a), Err(e)) => assert!(
            a.kind().code() == e.kind().code() || a.kind().code() == "unexpected_eof",
            "{a} vs {e}"
        ),
        (a, e) => panic!(
            "slice {:?} vs reader {:?}",
            a.as_ref().err().map(|e| e.to_string()),
            e.as_ref().err().map(|e| e.to_string())
        ),
    }
    let array = rb.read_array(data);
    let Ok((schema, batches)) = sliced else {
        return;
    };
    let array = array.expect("the Arrow reader read a file the Array reader rejects");
    let mut w = NpyBatchWriter::new(std::io::Cursor::new(Vec::new()), &schema)
        .expect("a writer for the reader's schema");
    for b in &batches {
        w.write(b).expect("writing back the batches just read");
    }
    let bytes = w.finish().expect("finishing the writer").into_inner();
    let back = ReaderBuilder::new()
        .max_empty_items(1 << 10)
        .read_array(bytes.as_slice())
        .expect("reading the file written back");
    if !matches!(array.dtype, npy_serde::DType::Array(..)) {
        assert_eq!(back.shape, array.shape);
        assert!(
            same_values(&back.values, &array.values),
            "values differ after the round trip"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// pickle: the data-only pickle reader, on a whole `.npy` object array or a bare pickle
// ---------------------------------------------------------------------------------------------

/// The `pickle` target: the input as a `.npy` file (an object array, read with
/// `allow_pickle_data`) when it starts with the magic string, else as a bare pickle, under each
/// Python 2 string encoding and with small expansion limits (the code paths are the defaults').
/// Invariants: an object array holds exactly shape-product values, and reading is
/// deterministic; the element door (`from_slice_serde`, strings moved out of the graph) gives
/// what the whole expansion gives; any value deserializes through serde without a panic; the scan of
/// `npy info` finishes.
pub fn pickle(data: &[u8]) {
    use npy_serde::pickle::{load, Encoding, PickleOptions, PyValue};
    let last = data.last().copied().unwrap_or(0);
    let encoding = match last % 3 {
        0 => Encoding::Ascii,
        1 => Encoding::Latin1,
        _ => Encoding::Bytes,
    };
    let opts = PickleOptions::default()
        .encoding(encoding)
        .max_depth(64)
        .max_values(1 << 16)
        .max_bytes(1 << 20);
    let check = |v: PyValue| {
        let _ = serde::de::IgnoredAny::deserialize(v.clone());
        let _ = Vec::<Option<String>>::deserialize(v.clone());
        let _ = <(f64, Vec<u8>)>::deserialize(v);
    };
    if data.starts_with(b"\x93NUMPY") {
        let rb = ReaderBuilder::new()
            .allow_pickle_data(true)
            .pickle_options(opts);
        let first = rb.read_objects_slice(data);
        let again = rb.read_objects_slice(data);
        assert_eq!(first.is_ok(), again.is_ok(), "reading twice differs");
        // The element door moves strings out of the graph one at a time: when both doors read
        // the file, the same values (a file of another dtype, such as an empty '|G' array,
        // reads through the element door's other paths: fuzz-regressions/pickle-1.bin).
        // The streaming door over any `Read` gives the slice door's elements (both take the
        // streaming path of a NumPy-made array of strings: stream.rs).
        let fast = rb.from_slice_serde::<Option<String>>(data);
        if let (Ok(f), Ok(r)) = (&fast, rb.from_reader_serde::<_, Option<String>>(data)) {
            assert_eq!(*f, r, "the Read door differs from the slice door");
        }
        if let (Ok(fast), Ok(a)) = (fast, &first) {
            if let Ok(slow) = a
                .values
                .iter()
                .map(|v| Option::<String>::deserialize(v.clone()))
                .collect::<Result<Vec<_>, _>>()
            {
                assert_eq!(fast, slow, "the element door differs from the expansion");
            }
        }
        if let Ok(a) = first {
            let n = a.shape.iter().product::<u64>();
            assert_eq!(
                a.values.len() as u64,
                n,
                "an object array of shape {:?}",
                a.shape
            );
            for v in a.values {
                check(v);
            }
        }
    } else {
        // The scan `npy info` runs sees every opcode the reader does, refusing nothing.
        let scanned = npy_serde::pickle::scan(data);
        assert!(
            scanned.globals.len() <= data.len(),
            "more globals than bytes"
        );
        let first = load(data, &opts);
        let again = load(data, &opts);
        assert_eq!(first.is_ok(), again.is_ok(), "reading twice differs");
        if let Ok(v) = first {
            check(v);
        }
    }
}
