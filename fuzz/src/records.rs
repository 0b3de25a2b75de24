//! The `records` target (bytes -> derived structs).

use super::*;

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

/// A file of `Pod`s read by `from_path` with a threshold of one byte, so that it is decoded
/// by positional reads in blocks on rayon's threads (`read::parallel::from_file`): the same
/// records as from the slice. The file is in `/dev/shm` where there is one (no disk per input).
fn from_file_in_parallel(data: &[u8], pods: &[Pod]) {
    let dir = std::path::Path::new("/dev/shm");
    let dir = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("npy-serde-fuzz-records-{}.npy", std::process::id()));
    std::fs::write(&path, data).expect("writing the input to a file");
    let got = ReaderBuilder::new()
        .max_data_size(1 << 22)
        .parallel_threshold(1)
        .from_path::<_, Pod>(&path)
        .expect("from_path of what from_slice read");
    assert_eq!(
        format!("{got:?}"),
        format!("{pods:?}"),
        "from_path in parallel"
    );
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
            from_file_in_parallel(data, &pods);
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
