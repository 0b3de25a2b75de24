//! A miss of the planned tier in the middle of the array (a zero `NonZeroU8`, a `try_from`
//! on a field, on the whole record, on a scalar): the serde doors report `deserialize_slice`'s
//! error, wherever it happens.

use std::fmt::Debug;
use std::io::Cursor;
use std::num::NonZeroU8;

use npy_serde_tests::{npy, Logged, TempDir, Trickle};
use serde::Deserialize;

use super::data::*;
use super::doors::*;

#[test]
fn nonzero_flag_miss_mid_array_reports_like_from_slice() {
    let dir = TempDir::new("read-vec-nonzero");
    let path = dir.join("f.npy");
    let n = 10_000;
    let base = w2_records(n);
    // All good: the results equal the records (and `deserialize_slice`).
    let file = w2_raw_file(&base, false);
    let want: Vec<NzFlag> = base
        .iter()
        .map(|r| NzFlag {
            id: r.id,
            x: r.x,
            y: r.y,
            flag: NonZeroU8::new(r.flag).unwrap(),
            v: r.v,
        })
        .collect();
    assert_eq!(
        npy_serde::deserialize_slice::<Vec<NzFlag>>(&file).unwrap(),
        want
    );
    assert_all_eq(vec_all::<NzFlag>(&file, &path), &want);

    // Where the first block of a `Cursor` ends: the element straddling the end of the first
    // data read starts the second run.
    let boundary = {
        let mut logged = Logged {
            inner: Cursor::new(&file),
            reads: Vec::new(),
        };
        let got: Vec<NzFlag> = npy_serde::from_reader_serde(&mut logged).unwrap();
        assert_eq!(got.len(), n);
        let start = data_start(&file);
        let (_, first) = *logged
            .reads
            .iter()
            .find(|(at, _)| *at >= start)
            .expect("a data read");
        assert!(first < n * 33, "the data came in one read of {first} bytes");
        first / 33
    };
    // One zero flag: first element, start/middle/end of a 3-element run of the 99-byte reader,
    // around the first block boundary of a Cursor, the last one.
    let mut bads = vec![0, 1, 2, 2499, 2500, 2501, n - 2, n - 1];
    bads.extend([boundary - 1, boundary, boundary + 1, boundary + 2]);
    for bad in bads {
        for big in [false, true] {
            let mut recs = base.clone();
            recs[bad].flag = 0;
            let file = w2_raw_file(&recs, big);
            let start = data_start(&file);
            let want = npy_serde::deserialize_slice::<Vec<NzFlag>>(&file).unwrap_err();
            assert_eq!(want.position().record, Some(bad as u64), "{want}");
            assert_eq!(want.kind().code(), "message", "{want}");
            assert!(want.to_string().contains("nonzero"), "{want}");
            if let Some(b) = want.position().byte {
                // If a byte offset is given, it is the flag's (or the record's).
                assert!(
                    b == start + bad as u64 * 33 + 20 || b == start + bad as u64 * 33,
                    "{want}"
                );
            }
            let streamed = npy_serde::deserialize_reader::<_, Vec<NzFlag>>(Trickle {
                data: &file,
                step: 7,
            })
            .unwrap_err();
            assert_same_error(&streamed, &want, "from_reader::<Vec<_>> (Trickle 7)");
            let what = format!("bad record {bad}, big {big}");
            let results = named(&what, vec_all::<NzFlag>(&file, &path));
            assert_all_err(results, &want);
        }
    }
}

#[test]
fn try_from_newtype_miss_reports_like_from_slice() {
    let dir = TempDir::new("read-vec-tryfrom");
    let path = dir.join("f.npy");
    let n = 9_000;
    let mut base = w2_records(n);
    for r in &mut base {
        if r.flag == 42 {
            r.flag = 43;
        }
    }
    // No 42: everything reads, equal to the general path (by-name struct) and the records.
    let file = w2_raw_file(&base, true);
    let want: Vec<Not42Flag> = base
        .iter()
        .map(|r| Not42Flag {
            id: r.id,
            x: r.x,
            y: r.y,
            flag: Not42(r.flag),
            v: r.v,
        })
        .collect();
    assert_eq!(
        npy_serde::deserialize_slice::<Vec<Not42Flag>>(&file).unwrap(),
        want
    );
    #[derive(Deserialize, Debug, PartialEq)]
    struct ByName {
        flag: Not42,
        id: i64,
    }
    let by_name: Vec<ByName> = npy_serde::from_slice_serde(&file).unwrap();
    for (b, w) in by_name.iter().zip(&want) {
        assert_eq!((b.flag, b.id), (w.flag, w.id));
    }
    assert_all_eq(vec_all::<Not42Flag>(&file, &path), &want);

    for bad in [0, 5, 4321, 4322, 7943, n - 1] {
        let mut recs = base.clone();
        recs[bad].flag = 42;
        for big in [false, true] {
            let file = w2_raw_file(&recs, big);
            let want = npy_serde::deserialize_slice::<Vec<Not42Flag>>(&file).unwrap_err();
            assert_eq!(want.position().record, Some(bad as u64), "{want}");
            assert!(
                want.to_string().contains("the flag 42 is reserved"),
                "{want}"
            );
            // The by-name (general) path agrees on the kind and record.
            let general = npy_serde::deserialize_slice::<Vec<ByName>>(&file).unwrap_err();
            assert_eq!(general.kind().code(), want.kind().code());
            assert_eq!(general.position().record, want.position().record);
            let what = format!("bad record {bad}, big {big}");
            let results = named(&what, vec_all::<Not42Flag>(&file, &path));
            assert_all_err(results, &want);
        }
    }
}

#[test]
fn try_from_whole_record_miss_reports_like_from_slice() {
    let dir = TempDir::new("read-vec-evenid");
    let path = dir.join("f.npy");
    let mut recs = w2_records(6_000);
    for r in &mut recs {
        r.id = (r.id / 2) * 2;
    }
    let file = w2_raw_file(&recs, false);
    let want: Vec<EvenId> = recs.iter().map(|r| EvenId(*r)).collect();
    assert_all_eq(vec_all::<EvenId>(&file, &path), &want);
    recs[3333].id = 7;
    let file = w2_raw_file(&recs, false);
    let want = npy_serde::deserialize_slice::<Vec<EvenId>>(&file).unwrap_err();
    assert_eq!(want.kind().code(), "message");
    assert_eq!(want.kind().to_string(), "odd id 7");
    // `deserialize_slice::<Vec<_>>` leaves out the record index of an error raised by the element's
    // own conversion (see `element_conversion_errors_name_their_record`); every `from_*_serde`
    // names it, like `RecordReader`.
    assert_all_err_at(vec_all::<EvenId>(&file, &path), &want, 3333);
}

/// An error raised by the element type's own conversion (`#[serde(try_from)]` on the element)
/// names its record in every reader: `from_*_serde`, `RecordReader` and `MmapArray::record` do;
/// `deserialize_slice`/`deserialize_reader::<Vec<T>>` must too (the brief's contract: `from_*_serde` errors are
/// those of `deserialize_slice::<Vec<T>>`, same record index).
#[test]
fn element_conversion_errors_name_their_record() {
    let mut recs = w2_records(6_000);
    for r in &mut recs {
        r.id = (r.id / 2) * 2;
    }
    recs[3333].id = 7;
    let file = w2_raw_file(&recs, false);
    let vec = npy_serde::from_slice_serde::<EvenId>(&file).unwrap_err();
    assert_eq!(vec.position().record, Some(3333), "{vec}");
    let mut rr = npy_serde::RecordReader::<_, EvenId>::new_serde(Cursor::new(&file)).unwrap();
    let streamed = rr.nth(3333).unwrap().unwrap_err();
    assert_eq!(streamed.position().record, Some(3333), "{streamed}");
    let nested = npy_serde::deserialize_slice::<Vec<EvenId>>(&file).unwrap_err();
    assert_same_error(&vec, &nested, "from_slice::<Vec<EvenId>>");
    let nested = npy_serde::deserialize_reader::<_, Vec<EvenId>>(Cursor::new(&file)).unwrap_err();
    assert_same_error(&vec, &nested, "from_reader::<Vec<EvenId>>");
    let bytes = npy("|u1", &[3], false, &[1, 42, 3]);
    let vec = npy_serde::from_slice_serde::<Not42>(&bytes).unwrap_err();
    assert_eq!(vec.position().record, Some(1), "{vec}");
    let nested = npy_serde::deserialize_slice::<Vec<Not42>>(&bytes).unwrap_err();
    assert_same_error(&vec, &nested, "from_slice::<Vec<Not42>>");
}

#[test]
fn scalar_visitor_miss_mid_array() {
    // `|u1` into NonZeroU8 directly (a scalar element), and into the try_from newtype.
    let dir = TempDir::new("read-vec-scalar-miss");
    let path = dir.join("f.npy");
    // Every byte nonzero and not 42.
    let data: Vec<u8> = (0..5000u32)
        .map(|i| match (i % 250) as u8 + 1 {
            42 => 43,
            b => b,
        })
        .collect();
    let file = npy("|u1", &[5000], false, &data);
    let want: Vec<NonZeroU8> = data.iter().map(|&b| NonZeroU8::new(b).unwrap()).collect();
    assert_all_eq(vec_all::<NonZeroU8>(&file, &path), &want);
    for bad in [0usize, 1, 2500, 4999] {
        let mut d = data.clone();
        d[bad] = 0;
        d[(bad + 7) % 5000] = 42;
        let file = npy("|u1", &[5000], false, &d);
        let want = npy_serde::deserialize_slice::<Vec<NonZeroU8>>(&file).unwrap_err();
        assert_eq!(want.position().record, Some(bad as u64), "{want}");
        assert_all_err(vec_all::<NonZeroU8>(&file, &path), &want);
        // The conversion of the element itself fails: see `try_from_whole_record_miss_...`.
        let want = npy_serde::deserialize_slice::<Vec<Not42>>(&file).unwrap_err();
        assert_eq!(want.kind().to_string(), "the flag 42 is reserved");
        assert_all_err_at(
            vec_all::<Not42>(&file, &path),
            &want,
            (bad as u64 + 7) % 5000,
        );
    }
}
