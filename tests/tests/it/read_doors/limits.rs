//! Truncated data, `ReaderBuilder` limits, zero-size elements, and hostile shapes that
//! claim far more data than there is (no reservation for them).

use std::fs;
use std::io::Cursor;

use npy_serde::header::Limits;
use npy_serde::{MmapArray, ReaderBuilder, Value};
use npy_serde_tests::{fixture, npy, TempDir, Trickle, W2};
use serde::de::IgnoredAny;

use super::data::*;
use super::doors::*;
use super::GIANT;
use crate::alloc::largest_alloc_of;

#[test]
fn truncated_data_same_errors() {
    let dir = TempDir::new("read-records-trunc");
    let recs = w2_records(200); // 6600 bytes
    for big in [false, true] {
        let full = w2_file(&recs, big);
        for cut in [1, 33, 40, 6600] {
            let file = &full[..full.len() - cut];
            let err = same::<W2>(&dir, file).unwrap_err();
            assert_eq!(err.kind().code(), "unexpected_eof", "cut {cut}: {err}");
            let text = err.to_string();
            assert!(
                text.contains("needed 6600 bytes")
                    && text.contains(&format!("found {}", 6600 - cut)),
                "cut {cut}: {text}"
            );
        }
    }
    // Over more than one block of a reader (the reader's error, where the data ends).
    let recs = w2_records(10_000); // 330 KB
    let full = w2_file(&recs, false);
    let rb = ReaderBuilder::new();
    let cursor = Entries {
        rb: &rb,
        free: false,
        streams: true,
        steps: &[],
        path: None,
    };
    let err = compare_all::<W2>(&cursor, &full[..full.len() - 40]).unwrap_err();
    assert_eq!(err.kind().code(), "unexpected_eof");
    let reader =
        npy_serde::from_reader::<_, W2>(Cursor::new(&full[..full.len() - 40])).unwrap_err();
    assert!(reader.to_string().contains("found 329960"), "{reader}");
    // Scalars, and a 0-d record with no data.
    let file = npy("<f8", &[1000], false, &[0; 7999]);
    let err = same::<f64>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "unexpected_eof");
    let file = npy(
        "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]",
        &[],
        false,
        &[],
    );
    let err = same::<W2>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "unexpected_eof");
}

#[test]
fn reader_builder_limits_same_errors() {
    let dir = TempDir::new("read-records-limits");
    let recs = w2_records(100); // 3300 data bytes
    let file = w2_file(&recs, false);
    let tight = ReaderBuilder::new().max_data_size(3299);
    let err = same_with::<W2>(&tight, &dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "limit_exceeded");
    let exact = ReaderBuilder::new().max_data_size(3300);
    let got = same_with::<W2>(&exact, &dir, &file).unwrap();
    assert_eq!(got, recs);
    // A long header needs a larger max_header_size.
    let long = fixture("rec_v2_header");
    let small = ReaderBuilder::new().max_header_size(1000);
    let err = same_with::<W2>(&small, &dir, &long).unwrap_err();
    assert_eq!(err.kind().code(), "header_too_large");
    let err = same::<u8>(&dir, &long).unwrap_err();
    assert_eq!(err.kind().code(), "header_too_large", "{err}");
    let big = ReaderBuilder::new().max_header_size(1 << 20);
    // 1500 `|u1` fields: not a layout the exact tier holds (too many steps), nor a `u8`.
    let err = big.from_slice::<u8>(&long).unwrap_err();
    assert_eq!(err.kind().code(), "type_mismatch", "{err}");
    let want = big.from_slice_serde::<u8>(&long).unwrap_err();
    assert_eq!(err.to_string(), want.to_string());
}

#[test]
fn zero_size_elements_respect_max_empty_items() {
    let dir = TempDir::new("read-vec-empty");
    let path = dir.join("f.npy");
    for descr in ["|V0", "[]"] {
        // Default limit (2^20 values without data, the list included).
        let file = npy(descr, &[1 << 20], false, &[]);
        let want = npy_serde::deserialize_slice::<Vec<IgnoredAny>>(&file).unwrap_err();
        assert_eq!(want.kind().code(), "limit_exceeded", "{descr}");
        assert_all_err(vec_all::<IgnoredAny>(&file, &path), &want);
        assert_all_err(vec_all::<Value>(&file, &path), &want);
        // Far too many: still the limit, at once.
        let file = npy(descr, &[1 << 40], false, &[]);
        let want = npy_serde::deserialize_slice::<Vec<IgnoredAny>>(&file).unwrap_err();
        assert_eq!(want.kind().code(), "limit_exceeded", "{descr}");
        assert_all_err(vec_all::<IgnoredAny>(&file, &path), &want);

        // A custom limit: up to it reads (equal to deserialize_slice), one more is refused.
        let rb = ReaderBuilder::new().max_empty_items(1000);
        let ok = npy(descr, &[999], false, &[]);
        let h = npy_serde::header::parse_header(&ok, &Limits::default()).unwrap();
        assert_eq!(h.header.empty_value_count(), 1000);
        let want: Vec<Value> = rb.deserialize_slice(&ok).unwrap();
        assert_eq!(want.len(), 999);
        assert_all_eq(vec_with::<Value>(&rb, &ok, &path), &want);
        let too_many = npy(descr, &[1000], false, &[]);
        let want = rb.deserialize_slice::<Vec<Value>>(&too_many).unwrap_err();
        assert_eq!(want.kind().code(), "limit_exceeded");
        assert_all_err(vec_with::<Value>(&rb, &too_many, &path), &want);
        // 2-D: the lists count too.
        let two_d = npy(descr, &[10, 99], false, &[]);
        let want = rb.deserialize_slice::<Vec<Vec<Value>>>(&two_d).unwrap_err();
        assert_eq!(want.kind().code(), "limit_exceeded");
        assert_all_err(vec_with::<Value>(&rb, &two_d, &path), &want);
    }
    // A zero-size field inside a non-empty record counts per element.
    let rb = ReaderBuilder::new().max_empty_items(100);
    let file = npy("[('a','<i4'),('z','V0')]", &[101], false, &[0; 404]);
    let want = rb.deserialize_slice::<Vec<Value>>(&file).unwrap_err();
    assert_eq!(want.kind().code(), "limit_exceeded");
    assert_all_err(vec_with::<Value>(&rb, &file, &path), &want);
    let file = npy("[('a','<i4'),('z','V0')]", &[100], false, &[7; 400]);
    let want: Vec<Value> = rb.deserialize_slice(&file).unwrap();
    assert_all_eq(vec_with::<Value>(&rb, &file, &path), &want);
}

#[test]
fn max_data_size_is_honoured() {
    let dir = TempDir::new("read-vec-maxdata");
    let path = dir.join("f.npy");
    let recs = w2_records(100); // 3300 data bytes
    let file = w2_raw_file(&recs, false);
    let tight = ReaderBuilder::new().max_data_size(3299);
    let want = tight.deserialize_slice::<Vec<W2>>(&file).unwrap_err();
    assert_eq!(want.kind().code(), "limit_exceeded");
    assert_all_err(vec_with::<W2>(&tight, &file, &path), &want);
    assert_all_err(vec_with::<Value>(&tight, &file, &path), &want);
    let exact = ReaderBuilder::new().max_data_size(3300);
    assert_all_eq(vec_with::<W2>(&exact, &file, &path), &recs);
    // Checked before any data is read: a huge claim over no data is the limit, not EOF.
    let huge = npy("<f8", &[1 << 40], false, &[]);
    let want = tight.deserialize_slice::<Vec<f64>>(&huge).unwrap_err();
    assert_eq!(want.kind().code(), "limit_exceeded");
    assert_all_err(vec_with::<f64>(&tight, &huge, &path), &want);
}

#[test]
fn truncated_data_errors_match_from_slice() {
    let dir = TempDir::new("read-vec-trunc");
    let path = dir.join("f.npy");
    let recs = w2_records(1000);
    let mut file = w2_raw_file(&recs, false);
    file.truncate(file.len() - 40);
    let want = npy_serde::deserialize_slice::<Vec<W2>>(&file).unwrap_err();
    assert_eq!(want.kind().code(), "unexpected_eof");
    assert_same_error(
        &npy_serde::from_slice_serde::<W2>(&file).unwrap_err(),
        &want,
        "slice",
    );
    for Outcome { how, stream, got } in vec_all::<W2>(&file, &path) {
        let e = got.unwrap_err();
        assert_eq!(e.kind().code(), "unexpected_eof", "{how}: {e}");
        // (A streaming door reports the element it could not read.)
        assert!(
            stream
                || e.to_string().contains("needed 33000 bytes")
                    && e.to_string().contains("found 32960"),
            "{how}: {e}"
        );
    }
}

#[test]
fn huge_declared_shape_over_tiny_data_is_eof() {
    let dir = TempDir::new("read-vec-huge");
    let path = dir.join("huge.npy");
    for (descr, shape) in [
        ("<f8", vec![1u64 << 40]),
        ("<f8", vec![1 << 59]),
        ("<i4", vec![1 << 20, 1 << 20]),
        (W2_DESCR, vec![1 << 40]),
        ("|u1", vec![1 << 62]),
    ] {
        let file = npy(descr, &shape, false, &[1; 10]);
        let want = npy_serde::deserialize_slice::<Vec<Value>>(&file).unwrap_err();
        assert_eq!(
            want.kind().code(),
            "unexpected_eof",
            "{descr} {shape:?}: {want}"
        );
        let mut results = vec_all::<Value>(&file, &path);
        results.extend(
            vec_all::<IgnoredAny>(&file, &path)
                .into_iter()
                .map(|o| Outcome {
                    got: o.got.map(|v| vec![Value::UInt(v.len() as u64)]),
                    how: o.how,
                    stream: o.stream,
                }),
        );
        for Outcome { how, got, .. } in results {
            let err = got.unwrap_err();
            assert!(err.is_eof(), "{descr} {shape:?} ({how}): {err}");
            assert_eq!(err.kind().code(), "unexpected_eof", "{how}");
        }
        let e = npy_serde::from_slice_serde::<f64>(&file).unwrap_err();
        assert_same_error(
            &e,
            &npy_serde::deserialize_slice::<Vec<f64>>(&file).unwrap_err(),
            descr,
        );
        let e = npy_serde::from_slice_serde::<W2>(&file).unwrap_err();
        assert_eq!(e.kind().code(), "unexpected_eof");
        // From a reader, elements decode as the data arrives: a W2 request over `<f8` data
        // fails on the type of the first element before the data runs out.
        let e = npy_serde::from_reader_serde::<_, W2>(Cursor::new(&file)).unwrap_err();
        let want = if descr == W2_DESCR {
            "unexpected_eof"
        } else {
            "type_mismatch"
        };
        assert_eq!(e.kind().code(), want, "{descr}: {e}");
    }
    // A shape whose element count overflows: the header's overflow error, as for deserialize_slice.
    let dict = "{'descr': '<f8', 'fortran_order': False, \
                'shape': (4611686018427387904, 4611686018427387904), }";
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    let len = (dict.len() + 1 + 10).next_multiple_of(64) - 10;
    file.extend_from_slice(&(len as u16).to_le_bytes());
    file.extend_from_slice(dict.as_bytes());
    file.resize(10 + len - 1, b' ');
    file.push(b'\n');
    file.extend_from_slice(&[0; 10]);
    let want = npy_serde::deserialize_slice::<Vec<f64>>(&file).unwrap_err();
    assert_eq!(want.kind().code(), "overflow", "{want}");
    let got = npy_serde::from_slice_serde::<f64>(&file).unwrap_err();
    assert_same_error(&got, &want, "overflowing shape (slice)");
    let got = npy_serde::from_reader_serde::<_, f64>(Cursor::new(&file)).unwrap_err();
    assert_same_error(&got, &want, "overflowing shape (reader)");
}

/// From a plain reader, a header claiming a billion elements over 10 bytes of data must not
/// reserve memory (or address space) for them: "from a plain `io::Read` the data is read in
/// blocks as it arrives, so a header claiming terabytes costs nothing until the bytes exist"
/// (the "Untrusted input" docs of `npy_serde::read`), and `vecalloc::vec_for` requires a count
/// already bounded by the data present. `deserialize_slice`, `deserialize_path` and maps check the data size
/// first, so only the reader entry points are concerned.
///
/// The watch only sees reservations the system grants: with `vm.overcommit_memory = 0` an
/// allocation larger than RAM + swap is refused (and the reader falls back to growing), so the
/// shapes ask for 8 GiB.
#[test]
fn huge_declared_shape_from_a_reader_does_not_reserve_for_it() {
    for (descr, shape) in [("<f8", vec![1u64 << 30]), ("<i4", vec![1 << 15, 1 << 15])] {
        let file = npy(descr, &shape, false, &[1; 10]);
        // The nested reader (serde's cautious `Vec` growth) does not (1-D: `Vec<f64>` is
        // the whole array).
        if shape.len() == 1 {
            let (r, largest) = largest_alloc_of(|| {
                npy_serde::deserialize_reader::<_, Vec<f64>>(Cursor::new(&file))
            });
            assert_eq!(r.unwrap_err().kind().code(), "unexpected_eof");
            assert!(
                largest < GIANT,
                "from_reader: an allocation of {largest} bytes"
            );
        }
        for step in [3, usize::MAX] {
            let (r, largest) = largest_alloc_of(|| {
                npy_serde::from_reader_serde::<_, f64>(Trickle { data: &file, step })
            });
            assert_eq!(r.unwrap_err().kind().code(), "unexpected_eof");
            assert!(
                largest < GIANT,
                "from_reader_serde, {descr} {shape:?} over 10 bytes: an allocation of {largest} \
                 bytes succeeded"
            );
        }
    }
}

/// The same hostile headers through the entry points that check the data size first: no
/// giant allocation.
#[test]
fn huge_declared_shape_from_slices_and_files_does_not_reserve_for_it() {
    let dir = TempDir::new("read-vec-huge-noalloc");
    let path = dir.join("f.npy");
    for (descr, shape) in [("<f8", vec![1u64 << 30]), ("<i4", vec![1 << 15, 1 << 15])] {
        let file = npy(descr, &shape, false, &[1; 10]);
        fs::write(&path, &file).unwrap();
        let (codes, largest) = largest_alloc_of(|| {
            [
                npy_serde::from_slice_serde::<f64>(&file).map(|_| ()),
                npy_serde::from_path_serde::<_, f64>(&path).map(|_| ()),
                MmapArray::open(&path).and_then(|m| m.to_vec_serde::<f64>().map(|_| ())),
                ReaderBuilder::new()
                    .max_data_size(1 << 20)
                    .from_reader_serde::<_, f64>(Cursor::new(&file))
                    .map(|_| ()),
            ]
            .map(|r| r.unwrap_err().kind().code())
        });
        assert_eq!(
            codes,
            [
                "unexpected_eof",
                "unexpected_eof",
                "unexpected_eof",
                "limit_exceeded"
            ]
        );
        assert!(
            largest < GIANT,
            "{descr} {shape:?}: an allocation of {largest} bytes"
        );
    }
}
