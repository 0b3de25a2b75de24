//! The Arrow bridge (`npy_arrow`, feature `arrow`).
//!
//! Offline: every fixture through every reading door (path, reader, slice, borrowed and shared
//! map, batch sizes 1, 3 and whole) gives the same batches or the same error; every
//! `np.save`-made fixture written back from its batches is byte-identical (a Fortran-order N-d
//! array comes back in C order with the same values); projection; writing without metadata
//! (string widths, nulls, fill values); hostile files fail as through the other doors; the
//! zero-copy door borrows the map; proptest round trips over arbitrary dtypes.
//!
//! Live (`NPY_PYTHON`): in `arrow_live.rs`.

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch, StringArray};
use npy_arrow::{
    BatchReaderBuilder, BatchWriterBuilder, NpyBatchReader, NpyBatchWriter, NullPolicy,
};
use npy_serde::npz::{NpzArchive, NpzWriter};
use npy_serde::{Header, MmapArray, ReaderBuilder};
use npy_serde_tests::{entries, entry_path, fixtures_dir, TempDir};
use proptest::prelude::*;

fn collect(mut r: NpyBatchReader<'_>) -> npy_serde::Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    while let Some(b) = r.next_batch()? {
        out.push(b);
    }
    Ok(out)
}

/// One batch of all the rows of `batches` (compared row by row through slices).
fn rows_equal(a: &[RecordBatch], b: &[RecordBatch]) -> bool {
    let flat = |bs: &[RecordBatch]| -> Vec<Vec<ArrayRef>> {
        bs.iter()
            .flat_map(|b| (0..b.num_rows()).map(move |i| b.slice(i, 1).columns().to_vec()))
            .collect()
    };
    let (x, y) = (flat(a), flat(b));
    x.len() == y.len()
        && x.iter().zip(&y).all(|(p, q)| {
            p.len() == q.len() && p.iter().zip(q).all(|(u, v)| u.as_ref() == v.as_ref())
        })
}

/// Every door's batches of the file at `path` (or the error code of the first failure).
fn via_all_doors(path: &std::path::Path) -> Result<Vec<RecordBatch>, String> {
    let code = |e: npy_serde::Error| e.kind().code().to_string();
    let bytes = std::fs::read(path).unwrap();
    // Fixtures include a 2.0 header larger than NumPy's default limit.
    let rb = ReaderBuilder::new().max_header_size(1 << 20);
    let b = || BatchReaderBuilder::new().reader_options(rb.clone());
    let whole = collect(b().open(path).map_err(code)?).map_err(code)?;
    let mut doors: Vec<(&str, npy_serde::Result<Vec<RecordBatch>>)> = vec![
        (
            "reader, batches of 1",
            b().batch_size(1)
                .from_reader(Cursor::new(bytes.clone()))
                .and_then(collect),
        ),
        (
            "slice, batches of 3",
            b().batch_size(3).from_slice(&bytes).and_then(collect),
        ),
    ];
    let map = MmapArray::open_with(path, &rb).map_err(code)?;
    doors.push(("borrowed map", b().from_mmap(&map).and_then(collect)));
    let shared = Arc::new(MmapArray::open_with(path, &rb).map_err(code)?);
    doors.push((
        "shared map, batches of 2",
        b().batch_size(2).from_mmap_arc(shared).and_then(collect),
    ));
    if bytes.len() < 10_000 {
        doors.push(("read_batch", npy_arrow::read_batch(path).map(|b| vec![b])));
    }
    for (door, got) in doors {
        let got = got.map_err(|e| format!("{door}: {e}"))?;
        if !rows_equal(&whole, &got) {
            return Err(format!("{door}: batches differ from open()'s"));
        }
    }
    Ok(whole)
}

#[test]
fn every_fixture_through_every_door_and_back() {
    let dir = TempDir::new("arrow-fixtures");
    let mut identical = 0;
    for e in entries("npy") {
        let name = e["name"].as_str().unwrap();
        let path = entry_path(e);
        let batches = match via_all_doors(&path) {
            Ok(b) => b,
            Err(msg) => {
                // Only files every door rejects the same way: a bool byte that is not 0/1.
                assert!(
                    name == "custom_bool_byte_2" && msg == "invalid_value",
                    "{name}: {msg}"
                );
                continue;
            }
        };
        // Back to .npy.
        let out = dir.join(format!("{name}.npy"));
        let schema = batches.first().map(|b| b.schema()).unwrap_or_else(|| {
            let rb = ReaderBuilder::new().max_header_size(1 << 20);
            let r = BatchReaderBuilder::new()
                .reader_options(rb)
                .open(&path)
                .unwrap();
            r.schema_ref().clone()
        });
        let mut w = NpyBatchWriter::create(&out, &schema).unwrap();
        for b in &batches {
            w.write(b).unwrap_or_else(|err| panic!("{name}: {err}"));
        }
        w.finish().unwrap_or_else(|err| panic!("{name}: {err}"));
        let original = std::fs::read(&path).unwrap();
        let written = std::fs::read(&out).unwrap();
        let fortran_nd = e["fortran_order"] == true
            && e["shape"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d.as_u64() > Some(1))
                .count()
                > 1;
        let rb = ReaderBuilder::new().max_header_size(1 << 20);
        let mut ours = rb.read_array(Cursor::new(written.clone())).unwrap();
        let theirs = rb.read_array(Cursor::new(original.clone())).unwrap();
        ours.fortran_order = theirs.fortran_order;
        assert_eq!(
            format!("{:?}", ours),
            format!("{:?}", theirs),
            "{name}: values differ after the round trip"
        );
        // Long doubles (f16, c32) are rounded to f64 (see the mapping table).
        let descr = e["descr_repr"].as_str().unwrap_or("");
        let longdouble = descr.contains("f16") || descr.contains("c32");
        if e["written_by"] == "np.save" && !fortran_nd && !longdouble {
            assert!(original == written, "{name}: not byte-identical");
            identical += 1;
        }
    }
    assert!(
        identical >= 79,
        "only {identical} byte-identical round trips"
    );
}

#[test]
fn projection_decodes_only_the_columns_asked_for() {
    let path = fixtures_dir().join("npy/rec_w2_le.npy");
    let all = collect(NpyBatchReader::open(&path).unwrap()).unwrap();
    let names: Vec<String> = all[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let last = names.last().unwrap().clone();
    let got = collect(
        BatchReaderBuilder::new()
            .columns([last.as_str(), names[0].as_str()])
            .open(&path)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(got[0].num_columns(), 2);
    assert_eq!(got[0].schema().field(0).name(), &last);
    assert_eq!(
        got[0].column(0).as_ref(),
        all[0].column(names.len() - 1).as_ref()
    );
    let by_index = collect(
        BatchReaderBuilder::new()
            .column_indices([0])
            .open(&path)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(by_index[0].column(0).as_ref(), all[0].column(0).as_ref());
    let err = BatchReaderBuilder::new()
        .columns(["nope"])
        .open(&path)
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    // A bad bool byte in a column not asked for is never decoded.
    let bad = fixtures_dir().join("npy/custom_bool_byte_2.npy");
    assert!(collect(NpyBatchReader::open(&bad).unwrap()).is_err());
}

#[test]
fn zero_copy_borrows_the_map() {
    let dir = TempDir::new("arrow-zero-copy");
    let path = dir.join("f8.npy");
    let values: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
    npy_serde::to_path(&path, &values).unwrap();
    let map = Arc::new(MmapArray::open(&path).unwrap());
    let data = map.data().as_ptr() as usize;
    let batches = collect(
        BatchReaderBuilder::new()
            .batch_size(300)
            .from_mmap_arc(map.clone())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(batches.len(), 4);
    let col = batches[1].column(0).as_primitive::<Float64Type>();
    assert_eq!(
        col.values().as_ptr() as usize,
        data + 300 * 8,
        "not the map's bytes"
    );
    assert_eq!(col.value(0), 150.0);
    drop(map);
    // The batches keep the map alive.
    assert_eq!(
        batches[3].column(0).as_primitive::<Float64Type>().value(99),
        499.5
    );
}

#[test]
fn writing_without_metadata() {
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef),
        (
            "name",
            Arc::new(StringArray::from(vec!["a", "ünïcode", "bc"])) as ArrayRef,
        ),
    ])
    .unwrap();
    let mut w = NpyBatchWriter::new(Cursor::new(Vec::new()), &batch.schema()).unwrap();
    w.write(&batch).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let h = npy_serde::header::parse_header(&bytes, &Default::default()).unwrap();
    assert_eq!(h.header.dtype.descr(), "[('id', '<i4'), ('name', '<U7')]");
    assert_eq!(h.header.shape, [3]);

    // A longer string in a later batch names the column and the fix.
    let longer = RecordBatch::try_from_iter([
        ("id", Arc::new(Int32Array::from(vec![4])) as ArrayRef),
        (
            "name",
            Arc::new(StringArray::from(vec!["much longer"])) as ArrayRef,
        ),
    ])
    .unwrap();
    let mut w = NpyBatchWriter::new(Cursor::new(Vec::new()), &batch.schema()).unwrap();
    w.write(&batch).unwrap();
    let err = w.write(&longer).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("string_width"), "{msg}");
    assert_eq!(err.position().field.as_deref(), Some("name"));
    assert_eq!(err.position().record, Some(3));

    // Nulls: an error naming column and row, unless filled.
    let nulls = RecordBatch::try_from_iter([(
        "x",
        Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
    )])
    .unwrap();
    let mut w = NpyBatchWriter::new(Cursor::new(Vec::new()), &nulls.schema()).unwrap();
    let err = w.write(&nulls).unwrap_err();
    assert_eq!(err.position().field.as_deref(), Some("x"));
    assert_eq!(err.position().record, Some(1));
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Fill("-7".into()))
        .writer(Cursor::new(Vec::new()), &nulls.schema())
        .unwrap();
    w.write(&nulls).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let v: Vec<i32> = npy_serde::deserialize_slice::<Vec<(i32,)>>(&bytes)
        .unwrap()
        .into_iter()
        .map(|t| t.0)
        .collect();
    assert_eq!(v, [1, -7]);
    // Under `mask`, a placeholder and a `x_valid` field that tells it from data.
    let mut w = BatchWriterBuilder::new()
        .nulls(NullPolicy::Mask)
        .writer(Cursor::new(Vec::new()), &nulls.schema())
        .unwrap();
    w.write(&nulls).unwrap();
    let bytes = w.finish().unwrap().into_inner();
    let v: Vec<(i32, bool)> = npy_serde::deserialize_slice(&bytes).unwrap();
    assert_eq!(v, [(1, true), (0, false)]);
}

#[test]
fn npz_members_both_ways() {
    let path = fixtures_dir().join("npy/rec_w2_le.npy");
    let batches = collect(NpyBatchReader::open(&path).unwrap()).unwrap();
    let reader = NpyBatchReader::open(&path).unwrap();
    let mut npz = NpzWriter::new_compressed(Cursor::new(Vec::new()));
    let n =
        npy_arrow::write_npz_member(&mut npz, "w2", reader, &BatchWriterBuilder::new()).unwrap();
    assert_eq!(n, batches.iter().map(|b| b.num_rows() as u64).sum::<u64>());
    let bytes = npz.finish().unwrap().into_inner();
    let mut archive = NpzArchive::from_bytes(&bytes).unwrap();
    assert_eq!(
        archive.read_raw("w2").unwrap(),
        std::fs::read(&path).unwrap()
    );
    let member = archive.by_key("w2").unwrap();
    let got = collect(
        BatchReaderBuilder::new()
            .batch_size(2)
            .from_npz_member(member)
            .unwrap(),
    )
    .unwrap();
    assert!(rows_equal(&batches, &got));
}

/// Zero-size elements: N-d arrays of `V0` (as `np.save` writes `np.zeros((3, 2), 'V0')`), of
/// `U0`/`S0` (headers NumPy reads; it makes `U1`/`S1` arrays itself), and subarrays of the empty
/// record (`np.dtype([('a', [], (2,))])`, whose descr NumPy writes as `[('a', [], (2,))]`)
/// come back byte-identical; the rows of an N-d array of them were a subarray of a zero-size
/// type, which `DType::array` refuses.
#[test]
fn zero_size_elements_round_trip_exactly() {
    let cases: [(&str, &[u64]); 8] = [
        ("|V0", &[3, 2]),
        ("<U0", &[0, 0]),
        ("<U0", &[2, 0]),
        ("|S0", &[4, 1, 3]),
        ("[('a', [], (2,))]", &[2, 2]),
        ("[('a', [], (2,))]", &[3]),
        ("[('x', '<i4'), ('b', [('c', [], (3,))], (2,))]", &[4]),
        ("[('x', '<i4'), ('b', [('c', [], (3,))], (2,))]", &[2, 3]),
    ];
    for (descr, shape) in cases {
        let h = Header::new(descr.parse().unwrap(), shape.to_vec());
        let mut file = h.to_bytes().unwrap();
        let n: u64 = shape.iter().product();
        file.extend((0..n as usize * h.dtype.itemsize()).map(|i| i as u8));
        let batches = collect(NpyBatchReader::from_slice(&file).unwrap()).unwrap();
        let schema = NpyBatchReader::from_slice(&file)
            .unwrap()
            .schema_ref()
            .clone();
        let mut w = NpyBatchWriter::new(Cursor::new(Vec::new()), &schema).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        let back = w.finish().unwrap().into_inner();
        assert!(back == file, "{descr} {shape:?}: not byte-identical");
    }
    // What np.save wrote for np.zeros((3, 2), 'V0') and np.zeros((2, 2), [('a', [], (2,))]).
    let v0 = Header::new("|V0".parse().unwrap(), vec![3, 2])
        .to_bytes()
        .unwrap();
    assert!(v0.starts_with(
        b"\x93NUMPY\x01\x00v\x00{'descr': '|V0', 'fortran_order': False, 'shape': (3, 2), }"
    ));
    let rec = Header::new("[('a', [], (2,))]".parse().unwrap(), vec![2, 2])
        .to_bytes()
        .unwrap();
    assert!(rec.starts_with(b"\x93NUMPY\x01\x00v\x00{'descr': [('a', [], (2,))], 'fortran_order': False, 'shape': (2, 2), }"));
}

/// Batches until the first error: (the batches, the error's text).
fn until_error(mut r: NpyBatchReader<'_>) -> (Vec<RecordBatch>, Option<String>) {
    let mut out = Vec::new();
    loop {
        match r.next_batch() {
            Ok(Some(b)) => out.push(b),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e.to_string())),
        }
    }
}

/// Small batches are decoded several at a time on all cores (from a path, each read where it
/// is decoded), and the fixed-width columns of a batch a tile of rows at a time: the same
/// batches as one at a time on one thread, and on a bad value (a bool byte of 2), a truncated
/// stream or a file cut short after it was opened the same batches before the same error.
#[test]
fn batches_decoded_ahead_match_one_at_a_time() {
    let n = 50_000u64;
    let dt: npy_serde::DType = "[('id', '<i8'), ('ok', '|b1'), ('v', '>f4', (3,)), ('s', '<U2')]"
        .parse()
        .unwrap();
    let row = dt.itemsize();
    let mut file = Header::new(dt, vec![n]).to_bytes().unwrap();
    let data_at = file.len();
    for i in 0..n {
        file.extend_from_slice(&(i as i64).to_le_bytes());
        file.push((i % 2) as u8);
        for k in 0..3 {
            file.extend_from_slice(&((i + k) as f32).to_be_bytes());
        }
        let c = b'a' + (i % 26) as u8;
        file.extend_from_slice(&[c, 0, 0, 0, 0, 0, 0, 0]);
    }
    let mut bad = file.clone();
    bad[data_at + 30_500 * row + 8] = 2;
    let truncated = &file[..data_at + 40_123 * row + 5];
    let dir = TempDir::new("arrow-ahead");
    for (what, bytes) in [
        ("good", &file[..]),
        ("bad bool", &bad[..]),
        ("truncated", truncated),
    ] {
        for batch in [1000, 777, 40_000] {
            let b = |par: bool| BatchReaderBuilder::new().batch_size(batch).parallel(par);
            let serial = until_error(b(false).from_reader(Cursor::new(bytes)).unwrap());
            let streamed = until_error(b(true).from_reader(Cursor::new(bytes)).unwrap());
            assert_eq!(serial.1, streamed.1, "{what}, batches of {batch}");
            assert!(
                serial.0 == streamed.0,
                "{what}, batches of {batch}: streamed"
            );
            if what != "truncated" {
                let sliced = until_error(b(true).from_slice(bytes).unwrap());
                assert_eq!(serial.1, sliced.1, "{what}, batches of {batch}");
                assert!(serial.0 == sliced.0, "{what}, batches of {batch}: slice");
                // From a path: each batch read where it is decoded (positioned reads).
                let path = dir.join(format!("{batch}.npy"));
                std::fs::write(&path, bytes).unwrap();
                for par in [true, false] {
                    let opened = until_error(b(par).open(&path).unwrap());
                    assert_eq!(serial.1, opened.1, "{what}, batches of {batch}, open");
                    assert!(serial.0 == opened.0, "{what}, batches of {batch}: open");
                }
            } else {
                // A file that is cut short after it was opened: the same batches before the
                // same error as a truncated stream.
                let path = dir.join(format!("{batch}-cut.npy"));
                std::fs::write(&path, &file).unwrap();
                for par in [true, false] {
                    std::fs::write(&path, &file).unwrap();
                    let r = b(par).open(&path).unwrap();
                    std::fs::OpenOptions::new()
                        .write(true)
                        .open(&path)
                        .unwrap()
                        .set_len(bytes.len() as u64)
                        .unwrap();
                    let opened = until_error(r);
                    assert_eq!(serial.1, opened.1, "{what}, batches of {batch}, open");
                    assert!(serial.0 == opened.0, "{what}, batches of {batch}: open");
                }
            }
            let rows: usize = serial.0.iter().map(|b| b.num_rows()).sum();
            match what {
                "good" => assert_eq!(rows, n as usize),
                "bad bool" => {
                    assert_eq!(rows, 30_500 / batch * batch);
                    let e = serial.1.unwrap();
                    assert!(e.contains("record 30500"), "{e}");
                }
                _ => assert_eq!(rows, 40_123 / batch * batch),
            }
        }
    }
}

/// A batch writer made from a path hands its blocks to a writing thread: a padded record over
/// many blocks and odd batch sizes gives the original file's bytes (zero padding included).
#[test]
fn a_file_written_through_its_writing_thread_is_byte_identical() {
    let rec = npy_serde::Record::aligned([
        ("a", "|u1".parse::<npy_serde::DType>().unwrap()),
        ("b", "<f8".parse().unwrap()),
        ("c", "<u2".parse().unwrap()),
    ])
    .unwrap();
    let dt = npy_serde::DType::Record(rec);
    let n = 300_000u64;
    let mut file = Header::new(dt.clone(), vec![n]).to_bytes().unwrap();
    for i in 0..n {
        let mut row = [0u8; 24];
        row[0] = i as u8;
        row[8..16].copy_from_slice(&(i as f64 * 0.25).to_le_bytes());
        row[16..18].copy_from_slice(&(i as u16).to_le_bytes());
        file.extend_from_slice(&row[..dt.itemsize()]);
    }
    let dir = TempDir::new("arrow-piped");
    for batch in [777, 65_536, 300_000] {
        let r = BatchReaderBuilder::new()
            .batch_size(batch)
            .from_slice(&file)
            .unwrap();
        let out = dir.join(format!("{batch}.npy"));
        let mut w = NpyBatchWriter::create(&out, r.schema_ref()).unwrap();
        for b in r {
            w.write(&b.unwrap()).unwrap();
        }
        w.finish().unwrap();
        assert!(std::fs::read(&out).unwrap() == file, "batches of {batch}");
    }
}

#[test]
fn hostile_files_fail_as_through_the_other_doors() {
    for e in entries("bad") {
        let name = e["name"].as_str().unwrap();
        let want = e["error"].as_str().or(e["code"].as_str()).unwrap_or("");
        let path = entry_path(e);
        let bytes = std::fs::read(&path).unwrap();
        let other = npy_serde::read_array(Cursor::new(bytes.clone())).map(|_| ());
        let ours = NpyBatchReader::from_reader(Cursor::new(bytes.clone())).and_then(collect);
        match (&other, &ours) {
            (Err(a), Err(b)) => assert_eq!(
                a.kind().code(),
                b.kind().code(),
                "{name}: read_array says {a}, the Arrow reader {b}"
            ),
            (Ok(()), Ok(_)) => {}
            _ => panic!(
                "{name} ({want}): read_array {other:?}, Arrow reader {:?}",
                ours.map(|_| ())
            ),
        }
        let sliced = NpyBatchReader::from_slice(&bytes).and_then(collect);
        assert_eq!(sliced.is_ok(), other.is_ok(), "{name}");
    }
    // A huge declared shape over a few bytes allocates nothing first and fails as truncated.
    let h = Header::new("<f8".parse().unwrap(), vec![1 << 40]);
    let mut file = h.to_bytes().unwrap();
    file.extend_from_slice(&[0; 64]);
    let err = NpyBatchReader::from_reader(Cursor::new(file))
        .and_then(collect)
        .unwrap_err();
    assert!(err.is_eof(), "{err}");
    // Limits apply.
    let err = BatchReaderBuilder::new()
        .reader_options(ReaderBuilder::new().max_data_size(10))
        .open(fixtures_dir().join("npy/rec_w2_le.npy"))
        .unwrap_err();
    assert_eq!(err.kind().code(), "limit_exceeded");
}

#[test]
fn datetimes_nat_and_units() {
    let path = fixtures_dir().join("npy/M8_ns_be_1d.npy");
    let b = npy_arrow::read_batch(&path).unwrap();
    let raw: Vec<i64> = npy_serde::deserialize_path(&path).unwrap();
    let col = b.column(0);
    assert_eq!(
        col.data_type(),
        &arrow_schema::DataType::Timestamp(arrow_schema::TimeUnit::Nanosecond, None)
    );
    let col = col.as_primitive::<arrow_array::types::TimestampNanosecondType>();
    for (i, r) in raw.iter().enumerate() {
        if *r == i64::MIN {
            assert!(col.is_null(i));
        } else {
            assert_eq!(col.value(i), *r);
        }
    }
    // A unit with a multiplier stays the raw count, with the unit in the metadata.
    let b = npy_arrow::read_batch(fixtures_dir().join("npy/m8_25ms_le_1d.npy")).unwrap();
    assert_eq!(b.schema().field(0).metadata()["numpy.unit"], "25ms");
    let col = b.column(0).as_primitive::<Int64Type>();
    assert_eq!(col.value(4), i64::MAX);
    assert!(col.is_null(3));
}

// ---------------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------------

/// Makes random element bytes valid for `dt` (bools 0/1, code points, datetimes that fit
/// every Arrow unit, zero padding), leaving everything else as it is.
fn sanitize(dt: &npy_serde::DType, b: &mut [u8]) {
    use npy_serde::{DType, Scalar};
    match dt {
        DType::Record(r) => {
            let mut covered = vec![false; b.len()];
            for f in r.fields() {
                let end = f.offset + f.dtype.itemsize();
                sanitize(&f.dtype, &mut b[f.offset..end]);
                covered[f.offset..end].iter_mut().for_each(|c| *c = true);
            }
            for (x, c) in b.iter_mut().zip(covered) {
                if !c {
                    *x = 0;
                }
            }
        }
        DType::Array(base, _) => {
            let n = base.itemsize();
            if n > 0 {
                b.chunks_exact_mut(n).for_each(|c| sanitize(base, c));
            }
        }
        DType::Plain(p) => {
            let big = p.order() == npy_serde::ByteOrder::Big;
            match p.scalar() {
                Scalar::Bool => b[0] &= 1,
                Scalar::Unicode(_) => b.chunks_exact_mut(4).for_each(|c| {
                    let v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) % 0xD800;
                    c.copy_from_slice(&if big {
                        v.to_be_bytes()
                    } else {
                        v.to_le_bytes()
                    });
                }),
                Scalar::DateTime(..) | Scalar::TimeDelta(..) => {
                    let v = i64::from_le_bytes(b[..8].try_into().unwrap());
                    let v = if v % 7 == 0 { i64::MIN } else { v % 1000 };
                    b.copy_from_slice(&if big {
                        v.to_be_bytes()
                    } else {
                        v.to_le_bytes()
                    });
                }
                Scalar::LongDouble | Scalar::ComplexLongDouble => {
                    // Values an f64 holds exactly: x87 encodings of small integers.
                    b.fill(0);
                }
                _ => {}
            }
        }
    }
}

/// A C-order `.npy` file of `dtype` and `shape` with pseudo-random valid values from `seed`.
fn random_file(dtype: &npy_serde::DType, shape: &[u64], seed: u64) -> Vec<u8> {
    let header = Header::new(dtype.clone(), shape.to_vec());
    let count: u64 = shape.iter().product();
    let isz = dtype.itemsize();
    let mut data = vec![0u8; count as usize * isz];
    let mut x = seed | 1;
    for b in data.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    if isz > 0 {
        data.chunks_exact_mut(isz).for_each(|c| sanitize(dtype, c));
    }
    let mut file = header.to_bytes().unwrap();
    file.extend_from_slice(&data);
    file
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Any dtype: one batch of many rows (the fixed-width values gathered a tile of rows at a
    /// time, across tile boundaries; past 1 MiB, split over the cores by column) holds the
    /// same values as batches of 61 rows, on all cores or on one.
    #[test]
    fn tiled_batches_match_small_ones(
        dtype in npy_serde_tests::strategies::dtype()
            .prop_filter("top-level subarray", |d| !matches!(d, npy_serde::DType::Array(..)))
            .prop_filter("zero-size", |d| d.itemsize() > 0),
        rows in 1usize..3000,
        large in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let isz = dtype.itemsize();
        let rows = if large && isz >= 8 { rows + (1 << 20) / isz } else { rows };
        let file = random_file(&dtype, &[rows as u64], seed);
        let read = |batch: usize, par: bool| {
            BatchReaderBuilder::new()
                .batch_size(batch)
                .parallel(par)
                .from_slice(&file)
                .and_then(collect)
                .map_err(|e| e.to_string())
        };
        let small = read(61, false);
        for par in [true, false] {
            let whole = read(usize::MAX, par);
            match (&small, &whole) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(b.len(), 1);
                    let mut at = 0;
                    for x in a {
                        prop_assert!(
                            *x == b[0].slice(at, x.num_rows()),
                            "{}: {} rows, rows from {}", dtype, rows, at
                        );
                        at += x.num_rows();
                    }
                    prop_assert_eq!(at, rows);
                }
                (a, b) => prop_assert_eq!(
                    a.as_ref().err(),
                    b.as_ref().err(),
                    "{}: {} rows",
                    dtype,
                    rows
                ),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any dtype, shape and valid values: npy -> Arrow -> npy is byte-identical (C order), and
    /// the batches read back are equal.
    #[test]
    fn arbitrary_dtypes_round_trip(
        dtype in npy_serde_tests::strategies::dtype()
            .prop_filter("top-level subarray", |d| !matches!(d, npy_serde::DType::Array(..))),
        shape in prop::collection::vec(0u64..4, 0..3),
        seed in any::<u64>(),
        batch in 1usize..4,
    ) {
        let file = random_file(&dtype, &shape, seed);
        let first = BatchReaderBuilder::new().batch_size(batch).from_slice(&file).and_then(collect);
        let first = match first {
            Ok(b) => b,
            // Strings too wide for one batch column, zero-size limits: the same error via read_array.
            // A datetime count times its unit's factor beyond Arrow's range is an error.
            Err(e) => {
                prop_assert!(e.to_string().contains("does not fit"), "{}: {}", dtype, e);
                return Ok(());
            }
        };
        let schema = NpyBatchReader::from_slice(&file).unwrap().schema_ref().clone();
        let mut w = NpyBatchWriter::new(Cursor::new(Vec::new()), &schema).unwrap();
        for b in &first {
            w.write(b).unwrap_or_else(|e| panic!("{dtype}: {e}"));
        }
        let back = w.finish().unwrap_or_else(|e| panic!("{dtype}: {e}")).into_inner();
        prop_assert!(back == file, "{}: {:?} not byte-identical", dtype, shape);
        let again = collect(NpyBatchReader::from_slice(&back).unwrap()).unwrap();
        prop_assert!(rows_equal(&first, &again));
    }
}

/// `NpyBatchWriter::create` writes under a temporary name: the file appears (or replaces the
/// old one) only when `finish` completes; a writer dropped unfinished leaves the old file and
/// nothing else.
#[test]
fn batch_writer_create_replaces_the_file_on_finish_only() {
    let dir = TempDir::new("batch-create");
    let path = dir.join("t.npy");
    npy_serde::to_path(&path, &[7i64]).unwrap();
    let old = std::fs::read(&path).unwrap();
    let batch = RecordBatch::try_from_iter([(
        "x",
        Arc::new(arrow_array::Int64Array::from(vec![1, 2, 3])) as ArrayRef,
    )])
    .unwrap();
    let listing = || {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let mut w = NpyBatchWriter::create(&path, &batch.schema()).unwrap();
    w.write(&batch).unwrap();
    drop(w);
    assert_eq!(std::fs::read(&path).unwrap(), old);
    assert_eq!(listing(), ["t.npy"]);

    let mut w = NpyBatchWriter::create(&path, &batch.schema()).unwrap();
    w.write(&batch).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), old);
    w.finish().unwrap();
    #[derive(serde::Deserialize)]
    struct X {
        x: i64,
    }
    let back = npy_serde::from_path_serde::<_, X>(&path).unwrap();
    assert_eq!(back.iter().map(|r| r.x).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(listing(), ["t.npy"]);
}
