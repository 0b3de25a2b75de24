//! Reads every NumPy-generated fixture through `Array` (exact `Value` variants), checks the
//! values against the manifest, reads some into typed structs, and checks that every malformed
//! file fails with the manifest's error code.
//!
//! The values are compared with `npy_serde_tests::compare` (the manifest's JSON convention).

use std::fs;
use std::io::Cursor;

use npy_serde::{Array, MmapArray, ReaderBuilder, RecordReader, Value};
use npy_serde_tests::{compare, entries, entry_path, entry_shape, fixture, W2};
use serde::Deserialize;

#[test]
fn every_npy_fixture_reads_with_the_manifest_values() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for e in entries("npy") {
        let name = e["name"].as_str().unwrap();
        let path = entry_path(e);
        let bytes = fs::read(&path).unwrap();
        // NumPy's own default max_header_size refuses headers over 10000 bytes too.
        let rb = if e["data_offset"].as_u64().unwrap() > 10_000 {
            ReaderBuilder::new().max_header_size(1 << 20)
        } else {
            ReaderBuilder::new()
        };
        let results = [
            ("from_path", rb.array_from_path(&path)),
            ("from_slice", rb.array_from_slice(&bytes)),
            ("from_reader", rb.read_array(Cursor::new(&bytes))),
            (
                "mmap",
                MmapArray::open_with(&path, &rb).and_then(|m| m.to_array()),
            ),
        ];
        for (how, r) in results {
            if e["bool_bytes_invalid"].as_bool() == Some(true) {
                match r {
                    Err(err) if err.kind().code() == "invalid_value" => {}
                    other => {
                        failures.push(format!("{name} ({how}): bool byte not refused: {other:?}"))
                    }
                }
                continue;
            }
            let a = match r {
                Ok(a) => a,
                Err(err) => {
                    failures.push(format!("{name} ({how}): {err}"));
                    continue;
                }
            };
            let shape = entry_shape(e);
            if a.shape != shape || a.fortran_order != e["fortran_order"].as_bool().unwrap() {
                failures.push(format!(
                    "{name} ({how}): shape/order {:?}",
                    (a.shape, a.fortran_order)
                ));
                continue;
            }
            if a.values.len() as u64 != e["count"].as_u64().unwrap() {
                failures.push(format!("{name} ({how}): {} values", a.values.len()));
                continue;
            }
            if let Err(d) = compare(&a.to_nested(), &e["values"], name) {
                failures.push(format!("{name} ({how}): {d}"));
            }
        }
        // Value through serde (nearest types) must read every valid file too.
        if e["bool_bytes_invalid"].as_bool() != Some(true) {
            if let Err(err) = rb.deserialize_slice::<Value>(&bytes) {
                failures.push(format!("{name} (serde Value): {err}"));
            }
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 90, "only {checked} fixtures");
}

#[test]
fn every_bad_fixture_fails_with_its_error_code() {
    let mut failures = Vec::new();
    for e in entries("bad") {
        let name = e["name"].as_str().unwrap();
        let want = e["error"].as_str().unwrap();
        let path = entry_path(e);
        let bytes = fs::read(&path).unwrap();
        let results = [
            ("from_path", Array::from_path(&path).map(|_| ())),
            ("from_slice", Array::from_slice(&bytes).map(|_| ())),
            (
                "from_reader",
                Array::from_reader(Cursor::new(&bytes)).map(|_| ()),
            ),
            (
                "serde",
                npy_serde::deserialize_slice::<Value>(&bytes).map(|_| ()),
            ),
            (
                "records",
                RecordReader::<_, Value>::new_serde(Cursor::new(&bytes))
                    .and_then(|r| r.collect::<Result<Vec<_>, _>>())
                    .map(|_| ()),
            ),
        ];
        for (how, r) in results {
            match r {
                Err(err) if err.kind().code() == want => {}
                Err(err) => failures.push(format!(
                    "{name} ({how}): want {want}, got {}: {err}",
                    err.kind().code()
                )),
                Ok(()) => failures.push(format!("{name} ({how}): want {want}, got Ok")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn w2_records_into_structs_match_dynamic_values() {
    for name in ["rec_w2_le", "rec_w2_be"] {
        let bytes = fixture(name);
        let recs: Vec<W2> = npy_serde::deserialize_slice(&bytes).unwrap();
        let streamed: Vec<W2> = RecordReader::new_serde(Cursor::new(&bytes))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let a = Array::from_slice(&bytes).unwrap();
        assert_eq!(recs.len(), a.values.len());
        for ((r, s), v) in recs.iter().zip(&streamed).zip(&a.values) {
            assert_eq!(v.get("id"), Some(&Value::Int(r.id)));
            assert_eq!(v.get("flag"), Some(&Value::UInt(r.flag as u64)));
            assert_eq!(v.get("y"), Some(&Value::Float(r.y as f64)));
            match v.get("x") {
                Some(Value::Float(x)) => assert!(x.to_bits() == r.x.to_bits()),
                other => panic!("{other:?}"),
            }
            assert_eq!(r.id, s.id);
            assert_eq!(r.v, s.v);
        }
        assert_eq!(recs[0].v, [-1.0, -0.75, -0.5]);
    }
    let grid: Vec<Vec<W2>> = npy_serde::deserialize_slice(&fixture("rec_w2_2x3")).unwrap();
    assert_eq!((grid.len(), grid[1].len()), (2, 3));
    assert_eq!(grid[0][1].id, -2);
    let one: W2 = npy_serde::deserialize_slice(&fixture("rec_w2_0d")).unwrap();
    assert_eq!(one.v, [-0.25, 0.0, 0.25]);
    let none: Vec<W2> = npy_serde::deserialize_slice(&fixture("rec_w2_empty")).unwrap();
    assert!(none.is_empty());
}

#[test]
fn nested_strings_and_subarrays_into_typed_values() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Deep {
        z: u8,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Inner {
        deep: Deep,
        y: i16,
        x: f64,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Nested {
        b: bool,
        inner: Inner,
    }
    let n: Vec<Nested> = npy_serde::deserialize_slice(&fixture("rec_nested")).unwrap();
    assert_eq!(
        n[1],
        Nested {
            b: false,
            inner: Inner {
                deep: Deep { z: 8 },
                y: 300,
                x: -1.0
            }
        }
    );

    #[derive(Deserialize, Debug, PartialEq)]
    struct Names<'a> {
        name: &'a str,
        label: String,
        n: i16,
    }
    let bytes = fixture("rec_str_unicode");
    let s: Vec<Names> = npy_serde::deserialize_slice(&bytes).unwrap();
    assert_eq!(s[0].name, "alpha");
    assert_eq!(s[0].label, "été");
    assert_eq!(s[1].name, "a\0b");
    assert_eq!(s[1].label, "\u{1F600}x");

    #[derive(Deserialize, Debug, PartialEq)]
    struct M {
        m: [[f32; 3]; 2],
        id: u16,
    }
    let m: Vec<M> = npy_serde::deserialize_slice(&fixture("rec_subarray_2x3")).unwrap();
    assert_eq!(m[1].m, [[6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]);
    assert_eq!(m[1].id, 20);

    #[derive(Deserialize, Debug, PartialEq)]
    struct P {
        x: f32,
        y: f32,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Pts {
        pts: Vec<P>,
        n: i16,
    }
    let p: Vec<Pts> = npy_serde::deserialize_slice(&fixture("rec_subarray_of_records")).unwrap();
    assert_eq!(p[1].pts[1], P { x: 4.0, y: -4.0 });

    let f: Vec<Vec<f64>> = npy_serde::deserialize_slice(&fixture("f8_le_2x3_fortran")).unwrap();
    assert_eq!(f, [[0.0, 1.5, 3.0], [4.5, 6.0, 7.5]]);
    let u: Vec<[String; 2]> = npy_serde::deserialize_slice(&fixture("U3_le_2x2_fortran")).unwrap();
    assert_eq!(u, [["a", "bc"], ["déf", "\u{1F600}"]]);
    let c: Vec<(f64, f64)> = npy_serde::deserialize_slice(&fixture("c32_be_1d")).unwrap();
    assert_eq!(c[0], (1.0 / 3.0, 2.0 / 3.0));
}
