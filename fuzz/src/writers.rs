//! The `writers` target (arbitrary arrays and typed records through one writer per input, read back).

use super::*;

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
    /// `NpyWriter` on a seekable sink (header patched at `finish`), by slices and records;
    /// for odd buffer sizes, with its blocks written on a second thread (`background`).
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
            // An odd buffer size: the same writer with its blocks written on a second thread
            // (`WriterBuilder::background`).
            let wb = wb.buffer_size(input.buffer as usize * 8);
            let (a, b) = typed.split_at(typed.len() / 2);
            let out = if input.buffer % 2 == 1 {
                let mut w = wb
                    .background(Cursor::new(Vec::new()))
                    .expect("background writer");
                w.write_all(a).expect("write_all");
                for t in b {
                    w.write(t).expect("write");
                }
                let w = w.finish().expect("finish background");
                w.into_inner().expect("the background writer").into_inner()
            } else {
                let mut uncounted = wb
                    .writer(Cursor::new(Vec::new()))
                    .expect("uncounted writer");
                uncounted.write_all(a).expect("write_all");
                for t in b {
                    uncounted.write_serde(t).expect("write");
                }
                uncounted.finish().expect("finish uncounted").into_inner()
            };
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
