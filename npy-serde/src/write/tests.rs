//! Unit tests of the write doors, the streaming writer and shapes.

use std::io::{Cursor, Seek, SeekFrom};

use super::stream::header_fitting;
use super::*;
use crate::dtype::{ByteOrder, DType, Record, Scalar};
use crate::header::parse_header;
use crate::header::{Limits, Version};
use crate::value::Array;
use crate::value::Value;

fn header_of(bytes: &[u8]) -> crate::header::ParsedHeader {
    parse_header(bytes, &Limits::default()).unwrap()
}

fn data_of(bytes: &[u8]) -> &[u8] {
    &bytes[header_of(bytes).data_offset as usize..]
}

fn le_bytes<T: Copy, const N: usize>(vals: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    vals.iter().flat_map(|&v| f(v)).collect()
}

#[test]
fn header_is_numpys_and_subarrays_fold_into_the_shape() {
    let bytes = to_vec(&[[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]]).unwrap();
    let want = Header::new("<f8".parse().unwrap(), vec![2, 3]);
    let hb = want.to_bytes().unwrap();
    assert_eq!(&bytes[..hb.len()], &hb[..]);
    assert_eq!(
        &bytes[hb.len()..],
        le_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], f64::to_le_bytes)
    );
    // Nested arrays flatten: [[[u8; 2]; 3]] of length 4 is (4, 3, 2).
    let bytes = to_vec(&[[[7u8; 2]; 3]; 4]).unwrap();
    let h = header_of(&bytes);
    assert_eq!(h.header.shape, [4, 3, 2]);
    assert_eq!(h.header.dtype.descr(), "'|u1'");
    assert_eq!(data_of(&bytes), [7u8; 24]);
}

#[test]
fn zero_d_and_empty_arrays() {
    let b = WriterBuilder::new().shape([]).to_vec(&[2.5f32]).unwrap();
    assert!(header_of(&b).header.shape.is_empty());
    assert_eq!(data_of(&b), 2.5f32.to_le_bytes());
    let e = WriterBuilder::new()
        .shape([])
        .to_vec(&[1u8, 2])
        .unwrap_err();
    assert!(e.to_string().contains("shape () holds 1 elements"), "{e}");

    let b = to_vec::<f64>(&[]).unwrap();
    assert_eq!(header_of(&b).header.shape, [0]);
    assert!(data_of(&b).is_empty());
    let b = to_vec::<[i16; 3]>(&[]).unwrap();
    assert_eq!(header_of(&b).header.shape, [0, 3]);
    let b = WriterBuilder::new()
        .shape([2, 0])
        .to_vec::<f64>(&[])
        .unwrap();
    assert_eq!(header_of(&b).header.shape, [2, 0]);
    // An empty record dtype: itemsize 0, any number of elements.
    let empty = DType::Record(Record::packed::<&str>([]).unwrap());
    let b = WriterBuilder::new().dtype(empty).serialize(
        Vec::new(),
        &vec![std::collections::BTreeMap::<String, u8>::new(); 3],
    );
    assert!(b.is_ok(), "{b:?}");
}

#[test]
fn reshape_checks_the_element_count() {
    let b = WriterBuilder::new()
        .shape([2, 3])
        .to_vec(&[0i32, 1, 2, 3, 4, 5])
        .unwrap();
    assert_eq!(header_of(&b).header.shape, [2, 3]);
    let e = WriterBuilder::new()
        .shape([4])
        .to_vec(&[0i32, 1, 2, 3, 4, 5])
        .unwrap_err();
    assert_eq!(e.kind().code(), "write");
    assert!(e.to_string().contains("6 records give 6"), "{e}");
}

#[test]
fn byte_order_converts_every_multibyte_scalar() {
    let dt: DType = "[('a', '<i4'), ('b', '|u1'), ('c', '<U1', (2,))]"
        .parse()
        .unwrap();
    let rec = Value::Record(vec![
        ("a".into(), Value::Int(0x01020304)),
        ("b".into(), Value::UInt(9)),
        (
            "c".into(),
            Value::List(vec![Value::String("A".into()), Value::String("".into())]),
        ),
    ]);
    let b = WriterBuilder::new()
        .dtype(dt)
        .byte_order(ByteOrder::Big)
        .serialize(Vec::new(), &[rec])
        .map(|_| ());
    assert!(b.is_ok());
    let mut out = Vec::new();
    WriterBuilder::new()
        .dtype(
            "[('a', '<i4'), ('b', '|u1'), ('c', '<U1', (2,))]"
                .parse()
                .unwrap(),
        )
        .byte_order(ByteOrder::Big)
        .serialize(
            &mut out,
            &[serde_json::json!({"a": 0x01020304, "b": 9, "c": ["A", ""]})],
        )
        .unwrap();
    let h = header_of(&out);
    assert_eq!(
        h.header.dtype.descr(),
        "[('a', '>i4'), ('b', '|u1'), ('c', '>U1', (2,))]"
    );
    assert_eq!(data_of(&out), [1, 2, 3, 4, 9, 0, 0, 0, 65, 0, 0, 0, 0]);
    let b = WriterBuilder::new()
        .byte_order(ByteOrder::Big)
        .to_vec(&[1.0f64])
        .unwrap();
    assert_eq!(header_of(&b).header.dtype.descr(), "'>f8'");
    assert_eq!(data_of(&b), 1.0f64.to_be_bytes());
}

#[test]
fn fortran_order_transposes_c_input() {
    // 2x3: C order 0..6, Fortran order column by column.
    let b = WriterBuilder::new()
        .shape([2, 3])
        .fortran_order(true)
        .to_vec(&[0u8, 1, 2, 3, 4, 5])
        .unwrap();
    let h = header_of(&b);
    assert!(h.header.fortran_order);
    assert_eq!(data_of(&b), [0, 3, 1, 4, 2, 5]);
    // 2x3x4 against the index formula: F offset of (i, j, k) is i + 2j + 6k.
    let vals: Vec<u16> = (0..24).collect();
    let b = WriterBuilder::new()
        .shape([2, 3, 4])
        .fortran_order(true)
        .to_vec(&vals)
        .unwrap();
    let data = data_of(&b);
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                let c = (i * 12 + j * 4 + k) as u16;
                let f = i + 2 * j + 6 * k;
                assert_eq!(u16::from_le_bytes([data[2 * f], data[2 * f + 1]]), c);
            }
        }
    }
    // Subarray records folded into the shape transpose too.
    let b = WriterBuilder::new()
        .fortran_order(true)
        .to_vec(&[[0u8, 1, 2], [3, 4, 5]])
        .unwrap();
    assert_eq!(data_of(&b), [0, 3, 1, 4, 2, 5]);
    // And nested serialize().
    let mut out = Vec::new();
    WriterBuilder::new()
        .dtype("|u1".parse().unwrap())
        .fortran_order(true)
        .serialize(&mut out, &vec![vec![0u8, 1, 2], vec![3, 4, 5]])
        .unwrap();
    assert_eq!(data_of(&out), [0, 3, 1, 4, 2, 5]);
    // 1-D: nothing to transpose, the flag is written as asked.
    let b = WriterBuilder::new()
        .fortran_order(true)
        .to_vec(&[1u8, 2])
        .unwrap();
    assert!(header_of(&b).header.fortran_order);
    assert_eq!(data_of(&b), [1, 2]);
}

#[test]
fn forced_versions() {
    let b = WriterBuilder::new()
        .version(Version::V2_0)
        .to_vec(&[1u8])
        .unwrap();
    assert_eq!(&b[6..8], &[2, 0]);
    assert_eq!(header_of(&b).version, Version::V2_0);
    let b = WriterBuilder::new()
        .version(Version::V3_0)
        .to_vec(&[1u8])
        .unwrap();
    assert_eq!(&b[6..8], &[3, 0]);
    // 2000 fields with long names: too big for 1.0.
    let fields: Vec<(String, DType)> = (0..2000)
        .map(|i| {
            (
                format!("field_with_a_long_name_{i:05}"),
                DType::scalar(Scalar::U8),
            )
        })
        .collect();
    let dt = DType::Record(Record::packed(fields).unwrap());
    let e = WriterBuilder::new()
        .dtype(dt.clone())
        .version(Version::V1_0)
        .serialize(Vec::new(), &Vec::<()>::new())
        .unwrap_err();
    assert!(e.to_string().contains("1.0"), "{e}");
    let mut out = Vec::new();
    WriterBuilder::new()
        .dtype(dt)
        .serialize(&mut out, &Vec::<()>::new())
        .unwrap();
    assert_eq!(&out[6..8], &[2, 0]);
}

#[test]
fn serialize_infers_and_checks_shapes() {
    let f8: DType = "<f8".parse().unwrap();
    let mut out = Vec::new();
    let v = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]];
    WriterBuilder::new()
        .dtype(f8.clone())
        .serialize(&mut out, &v)
        .unwrap();
    assert_eq!(header_of(&out).header.shape, [3, 2]);
    assert_eq!(
        data_of(&out),
        le_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], f64::to_le_bytes)
    );
    // A bare element is 0-d.
    let mut out = Vec::new();
    WriterBuilder::new()
        .dtype(f8.clone())
        .serialize(&mut out, &1.5)
        .unwrap();
    assert!(header_of(&out).header.shape.is_empty());
    // Ragged input: an error naming the element index.
    let ragged = vec![vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0]];
    let e = WriterBuilder::new()
        .dtype(f8.clone())
        .serialize(Vec::new(), &ragged)
        .unwrap_err();
    assert!(e.to_string().contains("not rectangular"), "{e}");
    assert_eq!(e.position().record, Some(4));
    let ragged = vec![vec![1.0], vec![3.0, 4.0]];
    let e = WriterBuilder::new()
        .dtype(f8.clone())
        .serialize(Vec::new(), &ragged)
        .unwrap_err();
    assert!(e.to_string().contains("not rectangular"), "{e}");
    // Explicit shape must match.
    let e = WriterBuilder::new()
        .dtype(f8.clone())
        .shape([2, 3])
        .serialize(Vec::new(), &v)
        .unwrap_err();
    assert!(e.to_string().contains("axis 0"), "{e}");
    // Scalars where a sequence was expected.
    let e = WriterBuilder::new()
        .dtype(f8)
        .shape([2])
        .serialize(Vec::new(), &1.0)
        .unwrap_err();
    assert!(e.to_string().contains("expected a sequence"), "{e}");
    // Strings are elements of S dtypes.
    let mut out = Vec::new();
    WriterBuilder::new()
        .dtype("|S2".parse().unwrap())
        .serialize(&mut out, &["a", "bc", ""])
        .unwrap();
    assert_eq!(header_of(&out).header.shape, [3]);
    assert_eq!(data_of(&out), b"a\0bc\0\0");
    // A subarray dtype: the value's shape must end with it.
    let sub: DType = "('<i2', (2,))".parse().unwrap();
    let mut out = Vec::new();
    WriterBuilder::new()
        .dtype(sub.clone())
        .serialize(&mut out, &vec![[1i16, 2]; 3])
        .unwrap();
    let h = header_of(&out);
    assert_eq!(h.header.shape, [3, 2]);
    assert_eq!(h.header.dtype.descr(), "'<i2'");
    let e = WriterBuilder::new()
        .dtype(sub)
        .serialize(Vec::new(), &vec![[1i16, 2, 3]; 3])
        .unwrap_err();
    assert!(e.to_string().contains("subarray shape (2,)"), "{e}");
    // No dtype.
    let e = WriterBuilder::new()
        .serialize(Vec::new(), &[1.0])
        .unwrap_err();
    assert!(e.to_string().contains("no dtype"), "{e}");
}

#[test]
fn errors_name_the_record_index() {
    let e = WriterBuilder::new()
        .dtype("|i1".parse().unwrap())
        .to_vec(&[1i32, 2, 3, 4, 5, 300, 7])
        .unwrap_err();
    assert_eq!(e.position().record, Some(5));
    assert!(e.to_string().contains("300 is out of range for |i1"), "{e}");
    // Across block boundaries too.
    let vals: Vec<i32> = (0..100).map(|i| if i == 77 { 1000 } else { i }).collect();
    let e = WriterBuilder::new()
        .dtype("|i1".parse().unwrap())
        .buffer_size(10)
        .to_vec(&vals)
        .unwrap_err();
    assert_eq!(e.position().record, Some(77));
}

#[test]
fn padding_is_zero_even_when_the_block_is_reused() {
    let dt = DType::Record(
        Record::aligned([
            ("a", DType::scalar(Scalar::U8)),
            ("b", DType::scalar(Scalar::I32)),
        ])
        .unwrap(),
    );
    let recs: Vec<(u8, i32)> = (0..50).map(|i| (0xff, -1 - i)).collect();
    let mut out = Vec::new();
    WriterBuilder::new()
        .dtype(dt)
        .buffer_size(16)
        .serialize(&mut out, &recs)
        .unwrap();
    let data = data_of(&out);
    assert_eq!(data.len(), 50 * 8);
    for (i, rec) in data.chunks(8).enumerate() {
        assert_eq!(rec[..4], [0xff, 0, 0, 0]);
        assert_eq!(
            i32::from_le_bytes(rec[4..].try_into().unwrap()),
            -1 - i as i32
        );
    }
}

#[test]
fn write_array_round_trips() {
    let arr = Array {
        dtype: "[('x', '<f4'), ('s', '|S3'), ('v', '>i2', (2,))]"
            .parse()
            .unwrap(),
        shape: vec![2, 1],
        fortran_order: false,
        values: vec![
            Value::Record(vec![
                ("x".into(), Value::Float(0.5)),
                ("s".into(), Value::Bytes(b"ab".to_vec())),
                ("v".into(), Value::List(vec![Value::Int(1), Value::Int(-1)])),
            ]),
            Value::Record(vec![
                ("x".into(), Value::Float(-2.0)),
                ("s".into(), Value::Bytes(b"xyz".to_vec())),
                ("v".into(), Value::List(vec![Value::Int(3), Value::Int(4)])),
            ]),
        ],
    };
    let mut out = Vec::new();
    WriterBuilder::new().write_array(&mut out, &arr).unwrap();
    assert_eq!(Array::from_slice(&out).unwrap(), arr);
    let h = header_of(&out);
    assert_eq!(h.header.shape, [2, 1]);
    let mut want = 0.5f32.to_le_bytes().to_vec();
    want.extend_from_slice(b"ab\0\0\x01\xff\xff");
    want.extend_from_slice(&(-2.0f32).to_le_bytes());
    want.extend_from_slice(b"xyz\0\x03\0\x04");
    assert_eq!(data_of(&out), want);

    let bad = Array {
        values: arr.values[..1].to_vec(),
        ..arr
    };
    let e = WriterBuilder::new()
        .write_array(Vec::new(), &bad)
        .unwrap_err();
    assert!(e.to_string().contains("1 values"), "{e}");
}

#[test]
fn counted_writer() {
    let mut w = NpyWriter::with_len::<u16>(Vec::new(), 3).unwrap();
    w.write_serde(&1u16).unwrap();
    w.write_all_serde(&[2u16, 3]).unwrap();
    assert_eq!(w.len(), 3);
    let e = w.write_serde(&4u16).unwrap_err();
    assert!(e.to_string().contains("only 3 were declared"), "{e}");
    assert_eq!(w.finish().unwrap(), to_vec(&[1u16, 2, 3]).unwrap());

    let mut w = NpyWriter::with_len::<u16>(Vec::new(), 3).unwrap();
    w.write_serde(&1u16).unwrap();
    // A failing record is not written and the writer goes on.
    assert!(w.write_serde(&-1i32).is_err());
    w.write_serde(&2u16).unwrap();
    let e = w.finish().unwrap_err();
    assert!(e.to_string().contains("2 records written but 3"), "{e}");

    // Subarray records: shape (n, 2); a shape option is refused.
    let mut w = NpyWriter::with_len::<[f32; 2]>(Vec::new(), 2).unwrap();
    w.write_all_serde(&[[1.0f32, 2.0], [3.0, 4.0]]).unwrap();
    let b = w.finish().unwrap();
    assert_eq!(b, to_vec(&[[1.0f32, 2.0], [3.0, 4.0]]).unwrap());
    let e = WriterBuilder::new()
        .record::<u8>()
        .shape([2])
        .writer_with_len(Vec::new(), 2)
        .unwrap_err();
    assert!(e.to_string().contains("shape"), "{e}");
    let e = WriterBuilder::new()
        .record::<[u8; 2]>()
        .fortran_order(true)
        .writer_with_len(Vec::new(), 2)
        .unwrap_err();
    assert!(e.to_string().contains("Fortran"), "{e}");
}

#[test]
fn uncounted_writer_patches_the_header() {
    let vals: Vec<f64> = (0..100_000).map(|i| i as f64 * 0.25).collect();
    let mut w = NpyWriter::new::<f64>(Cursor::new(Vec::new())).unwrap();
    for v in &vals[..10] {
        w.write_serde(v).unwrap();
    }
    w.write_all_serde(&vals[10..]).unwrap();
    let out = w.finish().unwrap().into_inner();
    assert_eq!(out, to_vec(&vals).unwrap());

    // Zero records and a writer starting mid-stream.
    let mut cur = Cursor::new(b"prefix".to_vec());
    cur.seek(SeekFrom::End(0)).unwrap();
    let w = WriterBuilder::new().record::<u8>().writer(cur).unwrap();
    let out = w.finish().unwrap().into_inner();
    assert_eq!(&out[..6], b"prefix");
    assert_eq!(out[6..], to_vec::<u8>(&[]).unwrap()[..]);

    // Fortran 1-D and forced versions keep working through the patch.
    let mut w = WriterBuilder::new()
        .record::<i8>()
        .fortran_order(true)
        .version(Version::V3_0)
        .writer(Cursor::new(Vec::new()))
        .unwrap();
    w.write_all_serde(&[1i8, 2, 3]).unwrap();
    let out = w.finish().unwrap().into_inner();
    let want = WriterBuilder::new()
        .fortran_order(true)
        .version(Version::V3_0)
        .to_vec(&[1i8, 2, 3])
        .unwrap();
    assert_eq!(out, want);
}

#[test]
fn dropped_writer_leaves_an_unreadable_file() {
    let mut w = NpyWriter::new::<u32>(Cursor::new(Vec::new())).unwrap();
    w.write_all_serde(&[1u32; 1000]).unwrap();
    let partial = w.get_ref().get_ref().clone();
    drop(w);
    assert_eq!(&partial[..6], UNFINISHED_MAGIC);
    let e = parse_header(&partial, &Limits::default()).unwrap_err();
    assert_eq!(e.kind().code(), "bad_magic");

    // On disk, the same.
    let path = temp_path("dropped");
    {
        let mut w = NpyWriter::new::<u32>(File::create(&path).unwrap()).unwrap();
        w.write_all_serde(&[7u32; 5000]).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    assert!(parse_header(&bytes, &Limits::default()).is_err());
    std::fs::remove_file(&path).unwrap();

    // A counted writer dropped early leaves data shorter than its header says.
    let mut w = NpyWriter::with_len::<u32>(Vec::new(), 10).unwrap();
    w.write_all_serde(&[1u32; 4]).unwrap();
    w.blocks.flush(&mut w.inner).unwrap();
    let partial = w.get_ref().clone();
    let h = header_of(&partial);
    assert!(
        (partial.len() as u64) < h.data_offset + h.header.data_len().unwrap(),
        "a truncated counted file must be detectably short"
    );
}

fn temp_path(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "npy-serde-write-{tag}-{}-{:?}.npy",
        std::process::id(),
        std::thread::current().id()
    ))
}

/// `to_path` preallocates large files: the result must be byte-identical to `to_vec`, with
/// exactly the written length (no preallocated tail), also when writing fails half-way.
#[test]
fn to_path_preallocation_leaves_exact_files() {
    let path = temp_path("prealloc");
    let vals: Vec<f64> = (0..300_000).map(|i| i as f64 * 0.25).collect();
    to_path(&path, &vals).unwrap();
    let on_disk = std::fs::read(&path).unwrap();
    assert_eq!(on_disk, to_vec(&vals).unwrap());
    assert!(on_disk.len() as u64 >= PREALLOCATE_MIN);
    // Overwriting with a smaller array truncates; no bytes of the old file remain.
    let small: Vec<f64> = vals[..1000].to_vec();
    to_path(&path, &small).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), to_vec(&small).unwrap());

    // A record that cannot be encoded stops the write: the file holds only what was
    // written (header and the blocks before the bad record), never the preallocated size.
    let rows: Vec<(i64, String)> = (0..200_000)
        .map(|i| {
            (
                i,
                if i == 150_000 {
                    "x".repeat(9)
                } else {
                    "ok".into()
                },
            )
        })
        .collect();
    let builder = WriterBuilder::new().dtype("[('a','<i8'),('s','S4')]".parse().unwrap());
    let e = builder
        .clone()
        .serialize(File::create(&path).unwrap(), &rows)
        .unwrap_err();
    assert_eq!(e.position().record, Some(150_000));
    #[derive(serde::Serialize)]
    struct Row {
        a: i64,
        s: String,
    }
    impl crate::NpyRecord for Row {
        fn dtype() -> DType {
            "[('a','<i8'),('s','S4')]".parse().unwrap()
        }
    }
    let rows: Vec<Row> = rows.into_iter().map(|(a, s)| Row { a, s }).collect();
    // to_path writes under a temporary name: the failed write leaves the file as it was, and
    // no temporary file.
    std::fs::write(&path, to_vec(&small).unwrap()).unwrap();
    let e = to_path(&path, &rows).unwrap_err();
    assert_eq!(e.position().record, Some(150_000));
    assert_eq!(std::fs::read(&path).unwrap(), to_vec(&small).unwrap());
    assert!(
        temp_files_of(&path).is_empty(),
        "{:?}",
        temp_files_of(&path)
    );
    std::fs::remove_file(&path).unwrap();
}

/// The temporary files of writes to `path` still in its directory.
fn temp_files_of(path: &std::path::Path) -> Vec<std::ffi::OsString> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(&format!(".{name}.")))
        .collect()
}

/// `NpyWriter::create` writes under a temporary name: the target appears (or is replaced)
/// only by `finish`; a writer dropped unfinished leaves the old file and no temporary one.
#[test]
fn create_path_replaces_the_target_on_finish_only() {
    let path = temp_path("create-staged");
    to_path(&path, &[1u32, 2]).unwrap();
    let old = std::fs::read(&path).unwrap();
    for parallel in [true, false] {
        let builder = WriterBuilder::new().record::<u32>().parallel(parallel);
        let mut w = builder.create_path(&path).unwrap();
        let many: Vec<u32> = (0..300_000).collect();
        w.write_all(&many).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), old);
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), old);
        assert!(temp_files_of(&path).is_empty());

        let mut w = builder.create_path(&path).unwrap();
        w.write_all(&many).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), old);
        w.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), to_vec(&many).unwrap());
        assert!(temp_files_of(&path).is_empty());
        to_path(&path, &[1u32, 2]).unwrap();
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn append_to_an_existing_file() {
    let mut cur = Cursor::new(to_vec(&[1u32, 2, 3]).unwrap());
    let mut w = NpyWriter::append(cur).unwrap();
    assert_eq!(w.len(), 3);
    w.write_all_serde(&[4u32, 5]).unwrap();
    cur = w.finish().unwrap();
    assert_eq!(cur.get_ref(), &to_vec(&[1u32, 2, 3, 4, 5]).unwrap());
    // And again, many more (the digit count grows).
    let mut w = NpyWriter::append(Cursor::new(cur.into_inner())).unwrap();
    let more: Vec<u32> = (6..=20_000).collect();
    w.write_all_serde(&more).unwrap();
    let out = w.finish().unwrap().into_inner();
    let all: Vec<u32> = (1..=20_000).collect();
    assert_eq!(out, to_vec(&all).unwrap());

    // Big-endian file: records are written in the file's order.
    let be = WriterBuilder::new()
        .byte_order(ByteOrder::Big)
        .to_vec(&[1u32])
        .unwrap();
    let mut w = WriterBuilder::new()
        .record::<u32>()
        .append(Cursor::new(be))
        .unwrap();
    w.write_serde(&2u32).unwrap();
    let out = w.finish().unwrap().into_inner();
    assert_eq!(
        out,
        WriterBuilder::new()
            .byte_order(ByteOrder::Big)
            .to_vec(&[1u32, 2])
            .unwrap()
    );

    // Subarray records onto an (n, 2) file.
    let f = to_vec(&[[1i16, 2]]).unwrap();
    let mut w = WriterBuilder::new()
        .record::<[i16; 2]>()
        .append(Cursor::new(f))
        .unwrap();
    w.write_serde(&[3i16, 4]).unwrap();
    let out = w.finish().unwrap().into_inner();
    assert_eq!(out, to_vec(&[[1i16, 2], [3, 4]]).unwrap());
}

#[test]
fn append_refusals() {
    let file = to_vec(&[1u32, 2]).unwrap();
    let e = WriterBuilder::new()
        .record::<i64>()
        .append(Cursor::new(file.clone()))
        .unwrap_err();
    assert!(e.to_string().contains("dtype"), "{e}");
    let two_d = to_vec(&[[1u32, 2]]).unwrap();
    let e = NpyWriter::append(Cursor::new(two_d)).unwrap_err();
    assert!(e.to_string().contains("shape (n,)"), "{e}");
    let mut trailing = file.clone();
    trailing.push(0);
    let e = NpyWriter::append(Cursor::new(trailing)).unwrap_err();
    assert!(e.to_string().contains("1 bytes follow"), "{e}");
    let short = file[..file.len() - 1].to_vec();
    let e = NpyWriter::append(Cursor::new(short)).unwrap_err();
    assert_eq!(e.kind().code(), "unexpected_eof");
}

/// A header written without growth padding, exactly as long as its text.
fn tight_file(count: u64) -> Vec<u8> {
    let canon = Header::new("|u1".parse().unwrap(), vec![count])
        .to_bytes()
        .unwrap();
    let mut end = canon.len();
    while matches!(canon[end - 1], b' ' | b'\n') {
        end -= 1;
    }
    let text = &canon[10..end];
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&((text.len() + 1) as u16).to_le_bytes());
    out.extend_from_slice(text);
    out.push(b'\n');
    out.extend(std::iter::repeat_n(1u8, count as usize));
    out
}

#[test]
fn append_without_growth_room() {
    // Room for one digit: up to 9 records.
    let mut w = NpyWriter::append(Cursor::new(tight_file(3))).unwrap();
    w.write_all_serde(&[2u8; 6]).unwrap();
    let e = w.write_serde(&2u8).unwrap_err();
    assert!(e.to_string().contains("fit in the file's header"), "{e}");
    let out = w.finish().unwrap().into_inner();
    let h = header_of(&out);
    assert_eq!(h.header.shape, [9]);
    assert_eq!(data_of(&out), [1, 1, 1, 2, 2, 2, 2, 2, 2]);
    // No room at all for a tenth record.
    let e = NpyWriter::append(Cursor::new(tight_file(9))).unwrap_err();
    assert!(e.to_string().contains("growth padding"), "{e}");
}

#[test]
fn interrupted_append_keeps_the_original_array() {
    let path = temp_path("append");
    to_path(&path, &[1.5f64, 2.5]).unwrap();
    {
        let mut w = WriterBuilder::new().append_path(&path).unwrap();
        // More than one block, so some of it reaches the file.
        w.write_all_serde(&vec![9.0f64; 300_000]).unwrap();
        // dropped without finish
    }
    let bytes = std::fs::read(&path).unwrap();
    let arr = Array::from_slice(&bytes).unwrap();
    assert_eq!(arr.values, [Value::Float(1.5), Value::Float(2.5)]);
    let e = WriterBuilder::new().append_path(&path).unwrap_err();
    assert!(e.to_string().contains("follow the array data"), "{e}");
    // Truncated back, appending works.
    let f = File::options().write(true).open(&path).unwrap();
    f.set_len(128 + 16).unwrap();
    drop(f);
    let mut w = WriterBuilder::new().append_path(&path).unwrap();
    w.write_serde(&3.5f64).unwrap();
    w.finish().unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        to_vec(&[1.5f64, 2.5, 3.5]).unwrap()
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn header_fitting_repads() {
    let h = Header::new("<f8".parse().unwrap(), vec![5]);
    let canon = h.to_bytes().unwrap();
    assert_eq!(
        header_fitting(&h, Version::V1_0, canon.len()).unwrap(),
        canon
    );
    let longer = header_fitting(&h, Version::V1_0, 192).unwrap();
    assert_eq!(longer.len(), 192);
    let p = header_of(&longer);
    assert_eq!(p.header, h);
    assert_eq!(p.data_offset, 192);
    assert!(header_fitting(&h, Version::V1_0, 40).is_err());
}

/// A writer that fails (or panics) once it has taken `limit` bytes.
struct FailsAfter {
    taken: Vec<u8>,
    limit: usize,
    panic: bool,
}

impl std::io::Write for FailsAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.taken.len() + buf.len() > self.limit {
            assert!(!self.panic, "a writer that panics");
            return Err(std::io::Error::other("disk full (test)"));
        }
        self.taken.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn background_writers_give_the_same_bytes() {
    let vals: Vec<[f32; 3]> = (0..50_001).map(|i| [i as f32, 0.5, -1.0]).collect();
    let want = to_vec(&vals).unwrap();
    // Small blocks: many of them go through the thread, and the last one is partial.
    for (parallel, buffer) in [(true, 1000), (true, 1 << 20), (false, 1000)] {
        let b = WriterBuilder::new()
            .record::<[f32; 3]>()
            .buffer_size(buffer)
            .parallel(parallel);
        let mut w = b.background(Cursor::new(Vec::new())).unwrap();
        for v in &vals[..7] {
            w.write(v).unwrap();
        }
        w.write_serde(&vals[7]).unwrap();
        w.write_all(&vals[8..]).unwrap();
        assert_eq!(w.len(), vals.len() as u64);
        let out = w.finish().unwrap().into_inner().unwrap().into_inner();
        assert_eq!(out, want, "parallel {parallel}, buffer {buffer}");

        let mut w = b
            .background_with_len(Vec::new(), vals.len() as u64)
            .unwrap();
        w.write_all_serde(&vals).unwrap();
        assert_eq!(w.finish().unwrap().into_inner().unwrap(), want);
    }
    // Mid-stream, as `writer` allows; and the NpyWriter shorthand.
    let mut cur = Cursor::new(b"prefix".to_vec());
    cur.seek(SeekFrom::End(0)).unwrap();
    let mut w = NpyWriter::background::<[f32; 3]>(cur).unwrap();
    w.write_all(&vals).unwrap();
    let out = w.finish().unwrap().into_inner().unwrap().into_inner();
    assert_eq!(&out[..6], b"prefix");
    assert_eq!(out[6..], want[..]);
}

#[test]
fn background_write_errors_are_reported_not_lost() {
    let vals: Vec<u64> = (0..100_000).collect();
    let b = WriterBuilder::new().record::<u64>().buffer_size(4096);
    let sink = FailsAfter {
        taken: Vec::new(),
        limit: 50_000,
        panic: false,
    };
    let mut w = b.background_with_len(sink, vals.len() as u64).unwrap();
    // The thread's error reaches a later write or `finish`, never silently.
    let err = match w.write_all(&vals) {
        Err(e) => e,
        Ok(()) => w.finish().unwrap_err(),
    };
    assert!(err.to_string().contains("disk full (test)"), "{err}");

    // A writer that panics on the thread: an error here, not a panic. (Without the `parallel`
    // feature, or on one core, there is no thread: the writer runs on the caller's, and its
    // panic is the caller's, as with any writer.)
    if !b.pipelined() {
        return;
    }
    let sink = FailsAfter {
        taken: Vec::new(),
        limit: 50_000,
        panic: true,
    };
    let mut w = b.background_with_len(sink, vals.len() as u64).unwrap();
    // Record by record, so every block goes through the thread (`write_all` of plain data
    // writes the slice itself, on this thread).
    let err = match vals.iter().try_for_each(|v| w.write(v)) {
        Err(e) => e,
        Ok(()) => w.finish().unwrap_err(),
    };
    assert!(
        err.to_string().contains("writing thread stopped") || err.to_string().contains("panicked"),
        "{err}"
    );
}
