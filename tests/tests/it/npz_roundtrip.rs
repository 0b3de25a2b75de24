//! Writing `.npz` archives and reading them back: every way to add a member, stored and
//! deflate, seekable and streaming output; NumPy's exact local-header bytes; the checks that
//! keep an archive from being silently invalid (unfinished or over-long members, duplicate
//! keys, unsupported compression).

use std::io::{Cursor, Write};

use npy_serde::npz::{Compression, NpzArchive, NpzStreamWriter, NpzWriter};
use npy_serde::{Array, ByteOrder, Header, Value, WriterBuilder};
use npy_serde_tests::{Sample, TempDir};

fn samples(n: u32) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            id: i,
            t: f64::from(i) * 0.25,
            xyz: [i as f32, -(i as f32), 0.5],
            ok: i % 3 == 0,
        })
        .collect()
}

/// The same members through any writer flavour: a macro, since the two writers share methods
/// but no trait.
macro_rules! write_everything {
    ($w:expr) => {{
        let w = &mut $w;
        w.add("ints", &[1i32, -2, 3]).unwrap();
        w.add("samples", &samples(5)).unwrap();
        w.set_compression(Compression::Deflate);
        w.add("rows", &[[1.5f64, 2.5], [3.5, 4.5], [5.5, 6.5]])
            .unwrap();
        assert_eq!(w.add_positional(&[7u8, 8, 9]).unwrap(), "arr_0");
        w.set_compression(Compression::Stored);
        let be = WriterBuilder::new().byte_order(ByteOrder::Big);
        w.add_with("be", &be, &[1u16, 2]).unwrap();
        let array = Array {
            dtype: "<U3".parse().unwrap(),
            shape: vec![2],
            fortran_order: false,
            values: vec![Value::String("ab".into()), Value::String("été".into())],
        };
        w.add_array("text", &array).unwrap();
        assert_eq!(w.add_positional_array(&array).unwrap(), "arr_1");
        w.set_compression(Compression::Deflate);
        let mut r = w.start_records::<Sample>("streamed", 1000).unwrap();
        for s in samples(1000) {
            r.write_serde(&s).unwrap();
        }
        assert_eq!(r.len(), 1000);
        r.finish().unwrap();
        let mut m = w
            .start_member("raw", &Header::new("<i8".parse().unwrap(), vec![2, 2]))
            .unwrap();
        for v in [1i64, 2, 3, 4] {
            m.write_all(&v.to_le_bytes()).unwrap();
        }
        assert_eq!(m.remaining(), 0);
        m.finish().unwrap();
        w.add_raw("notes.txt", b"free text").unwrap();
    }};
}

fn check_everything(bytes: &[u8]) {
    let mut npz = NpzArchive::from_bytes(bytes).unwrap();
    assert_eq!(
        npz.keys().collect::<Vec<_>>(),
        [
            "ints",
            "samples",
            "rows",
            "arr_0",
            "be",
            "text",
            "arr_1",
            "streamed",
            "raw",
            "notes.txt"
        ]
    );
    let comp = |npz: &NpzArchive<_>, k: &str| npz.member(k).unwrap().compression;
    assert_eq!(comp(&npz, "ints"), Compression::Stored);
    assert_eq!(comp(&npz, "rows"), Compression::Deflate);
    assert_eq!(comp(&npz, "be"), Compression::Stored);
    assert_eq!(comp(&npz, "streamed"), Compression::Deflate);

    assert_eq!(npz.deserialize::<Vec<i32>>("ints").unwrap(), [1, -2, 3]);
    assert_eq!(
        npz.deserialize::<Vec<Sample>>("samples").unwrap(),
        samples(5)
    );
    assert_eq!(npz.header("rows").unwrap().header.shape, [3, 2]);
    assert_eq!(
        npz.deserialize::<Vec<[f64; 2]>>("rows").unwrap(),
        [[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]]
    );
    assert_eq!(npz.deserialize::<Vec<u8>>("arr_0").unwrap(), [7, 8, 9]);
    assert_eq!(npz.header("be").unwrap().header.dtype.descr(), "'>u2'");
    assert_eq!(npz.deserialize::<Vec<u16>>("be").unwrap(), [1, 2]);
    for k in ["text", "arr_1"] {
        assert_eq!(npz.deserialize::<Vec<String>>(k).unwrap(), ["ab", "été"]);
    }
    let streamed: Vec<Sample> = npz
        .records_serde::<Sample>("streamed")
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(streamed, samples(1000));
    assert_eq!(
        npz.deserialize::<Vec<Vec<i64>>>("raw").unwrap(),
        [[1, 2], [3, 4]]
    );
    assert_eq!(npz.read_raw("notes.txt").unwrap(), b"free text");
}

#[test]
fn seekable_writer_round_trip() {
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    write_everything!(w);
    let bytes = w.finish().unwrap().into_inner();
    check_everything(&bytes);
}

#[test]
fn streaming_writer_round_trip_uses_data_descriptors() {
    let mut out = Vec::new();
    let mut w = NpzStreamWriter::new(&mut out);
    write_everything!(w);
    w.finish().unwrap();
    check_everything(&out);
    // Every local header has general-purpose flag bit 3: sizes follow the data.
    let mut headers = 0;
    for i in 0..out.len().saturating_sub(8) {
        if out[i..i + 4] == *b"PK\x03\x04" {
            assert_eq!(out[i + 6] & 0x08, 0x08, "local header at {i}");
            headers += 1;
        }
    }
    assert!(headers >= 10, "{headers}");
}

#[test]
fn writing_to_a_file_and_opening_it() {
    let dir = TempDir::new("npz-rt");
    let path = dir.join("everything.npz");
    let file = std::fs::File::create(&path).unwrap();
    let mut w = NpzWriter::new(std::io::BufWriter::new(file));
    write_everything!(w);
    w.finish().unwrap().flush().unwrap();
    let mut npz = NpzArchive::open(&path).unwrap();
    assert_eq!(
        npz.deserialize::<Vec<Sample>>("samples").unwrap(),
        samples(5)
    );
    let bytes = std::fs::read(&path).unwrap();
    check_everything(&bytes);
}

#[test]
fn local_headers_are_byte_identical_to_numpy() {
    // np.savez(f, a=np.arange(3, dtype='<i4')): local header with zip64 extra field (NumPy's
    // force_zip64), then the .npy bytes.
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    w.add("a", &[0i32, 1, 2]).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let mut numpy = Vec::new();
    numpy.extend_from_slice(b"PK\x03\x04"); // signature
    numpy.extend_from_slice(&[45, 0]); // version needed: 4.5 (zip64)
    numpy.extend_from_slice(&[0, 0, 0, 0]); // flags, method 0 (stored)
    numpy.extend_from_slice(&[0, 0, 0x21, 0]); // 1980-01-01 00:00:00
    numpy.extend_from_slice(&0xa9bd_ec02u32.to_le_bytes()); // CRC-32
    numpy.extend_from_slice(&[0xff; 8]); // sizes in the zip64 field
    numpy.extend_from_slice(&[5, 0, 20, 0]); // name length, extra length
    numpy.extend_from_slice(b"a.npy");
    numpy.extend_from_slice(&[1, 0, 16, 0]); // zip64 extra field
    numpy.extend_from_slice(&140u64.to_le_bytes());
    numpy.extend_from_slice(&140u64.to_le_bytes());
    numpy.extend_from_slice(&npy_serde::to_vec(&[0i32, 1, 2]).unwrap());
    assert_eq!(&bytes[..numpy.len()], &numpy[..]);

    // np.savez(f) with no arrays: the 22-byte empty archive.
    let empty = NpzWriter::new(Cursor::new(Vec::new()))
        .finish()
        .unwrap()
        .into_inner();
    let mut want = b"PK\x05\x06".to_vec();
    want.resize(22, 0);
    assert_eq!(empty, want);
    let mut out = Vec::new();
    NpzStreamWriter::new(&mut out).finish().unwrap();
    assert_eq!(out, want);
    assert!(NpzArchive::from_bytes(&empty).unwrap().is_empty());

    // np.savez_compressed: deflate (method 8) in the same layout.
    let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
    assert_eq!(w.compression(), Compression::Deflate);
    w.add("a", &[0i32, 1, 2]).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    assert_eq!(
        &bytes[..10],
        &numpy[..8]
            .iter()
            .chain(&[8, 0])
            .copied()
            .collect::<Vec<_>>()[..]
    );
    let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
    assert_eq!(npz.member("a").unwrap().compression, Compression::Deflate);
    assert_eq!(npz.deserialize::<Vec<i32>>("a").unwrap(), [0, 1, 2]);
}

#[test]
fn member_writer_checks_the_declared_length() {
    let h = Header::new("<u2".parse().unwrap(), vec![2]);
    // Too much data.
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    let mut m = w.start_member("a", &h).unwrap();
    let err = m.write_all(&[0u8; 5]).unwrap_err();
    assert!(err.to_string().contains("more data"), "{err}");
    // Too little, then finish.
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    let mut m = w.start_member("a", &h).unwrap();
    m.write_all(&[1, 0, 2]).unwrap();
    assert_eq!(m.remaining(), 1);
    let err = m.finish().unwrap_err();
    assert!(err.to_string().contains("3 data bytes"), "{err}");

    // Dropped unfinished: the archive refuses to go on, and to finish.
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    {
        let mut m = w.start_member("a", &h).unwrap();
        m.write_all(&[1, 0]).unwrap();
    } // dropped without finish
    let err = w.add("b", &[1u8]).unwrap_err();
    assert_eq!(err.kind().code(), "zip");
    assert!(
        err.to_string().contains("\"a.npy\" was not finished"),
        "{err}"
    );
    assert!(w.finish().is_err());

    // The same for a records writer dropped early, and for a wrong count.
    let mut w = NpzStreamWriter::new(Vec::new());
    let mut r = w.start_records::<f32>("r", 3).unwrap();
    r.write_serde(&1.0f32).unwrap();
    drop(r);
    assert!(w.finish().unwrap_err().to_string().contains("\"r.npy\""));
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    let mut r = w.start_records::<f32>("r", 3).unwrap();
    r.write_all_serde(&[1.0f32, 2.0]).unwrap();
    let err = r.finish().unwrap_err();
    assert!(err.to_string().contains("3 were declared"), "{err}");
}

#[test]
fn names_and_methods_are_checked() {
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    w.add("arr_0", &[1u8]).unwrap();
    // A second member with the same name (NumPy: "Cannot use un-named variables and keyword").
    let err = w.add_positional(&[2u8]).unwrap_err();
    assert_eq!(err.kind().code(), "zip", "{err}");
    assert!(err.to_string().contains("arr_0.npy"), "{err}");
    // The archive is still usable: the duplicate was refused before anything was written.
    w.add("b", &[3u8]).unwrap();
    w.set_compression(Compression::Other(12));
    let err = w.add("c", &[4u8]).unwrap_err();
    assert!(err.to_string().contains("bzip2"), "{err}");
    w.set_compression(Compression::Stored);
    let bytes = w.finish().unwrap().into_inner();
    let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
    assert_eq!(npz.keys().collect::<Vec<_>>(), ["arr_0", "b"]);
    assert_eq!(npz.deserialize::<Vec<u8>>("b").unwrap(), [3]);
}

#[test]
fn a_failed_member_write_poisons_the_archive() {
    // A value that does not fit the dtype fails inside the member; the archive cannot be
    // completed with a half-written member in it.
    let mut w = NpzWriter::new(Cursor::new(Vec::new()));
    let opts = WriterBuilder::new().dtype("|u1".parse().unwrap());
    let err = w.add_with("bad", &opts, &[1u32, 300]).unwrap_err();
    assert_ne!(err.kind().code(), "zip", "{err}");
    let err = w.add("next", &[1u8]).unwrap_err();
    assert!(err.to_string().contains("\"bad.npy\""), "{err}");
    assert!(w.finish().is_err());
}
