//! Every NumPy fixture through every door: as `Value` (against `deserialize_slice`,
//! flattened), as the widest types and W2, as their own scalar types; and a few typed reads.

use std::fs;
use std::io::Cursor;

use npy_serde::{tier, MmapArray, ReaderBuilder, Value};
use npy_serde_tests::{entries, entry_path, fixture, TempDir, Trickle, W2};
use serde::de::IgnoredAny;

use super::data::*;
use super::doors::*;

/// Compares values bit for bit (floats by their bits, so NaNs and signed zeros are checked).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Complex(a1, a2), Value::Complex(b1, b2)) => {
            a1.to_bits() == b1.to_bits() && a2.to_bits() == b2.to_bits()
        }
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Record(x), Value::Record(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((na, a), (nb, b))| na == nb && same_value(a, b))
        }
        _ => a == b,
    }
}

/// The elements of a nested `Value` (as `deserialize_slice::<Value>` gives it for an array of `ndim`
/// axes), flattened in C order.
fn flatten(v: Value, ndim: usize, out: &mut Vec<Value>) {
    if ndim == 0 {
        out.push(v);
        return;
    }
    match v {
        Value::List(items) => {
            for item in items {
                flatten(item, ndim - 1, out);
            }
        }
        other => panic!("expected a list for an axis, got {other:?}"),
    }
}

#[test]
fn every_fixture_as_values_equals_from_slice_flattened() {
    let dir = TempDir::new("read-vec-fixtures");
    let path = dir.join("f.npy");
    let mut checked = 0;
    let mut failures = Vec::new();
    for e in entries("npy") {
        let name = e["name"].as_str().unwrap();
        let bytes = fs::read(entry_path(e)).unwrap();
        // NumPy's own default max_header_size refuses headers over 10000 bytes too.
        let (rb, results) = if e["data_offset"].as_u64().unwrap() > 10_000 {
            let rb = ReaderBuilder::new().max_header_size(1 << 20);
            let results = vec_with::<Value>(&rb, &bytes, &path);
            (rb, results)
        } else {
            (ReaderBuilder::new(), vec_all::<Value>(&bytes, &path))
        };
        let ndim = e["shape"].as_array().unwrap().len();
        let count = e["count"].as_u64().unwrap() as usize;
        if e["bool_bytes_invalid"].as_bool() == Some(true) {
            // The file is 1-D: the error must be `deserialize_slice::<Vec<Value>>`'s (and `Value`'s).
            assert_eq!(ndim, 1, "{name}");
            let want = rb.deserialize_slice::<Vec<Value>>(&bytes).unwrap_err();
            assert_eq!(want.kind().code(), "invalid_value", "{name}");
            let nested = rb.deserialize_slice::<Value>(&bytes).unwrap_err();
            assert_same_error(&nested, &want, name);
            for Outcome { how, stream, got } in results {
                match got {
                    Err(err) if stream => assert_eq!(
                        err.kind().code(),
                        want.kind().code(),
                        "{name} ({how}): {err}"
                    ),
                    Err(err) => assert_same_error(&err, &want, &format!("{name} ({how})")),
                    Ok(v) => failures.push(format!("{name} ({how}): bad bool accepted: {v:?}")),
                }
            }
            checked += 1;
            continue;
        }
        let nested: Value = rb
            .deserialize_slice(&bytes)
            .unwrap_or_else(|err| panic!("{name}: deserialize_slice::<Value>: {err}"));
        let mut want = Vec::new();
        flatten(nested, ndim, &mut want);
        assert_eq!(want.len(), count, "{name}: manifest count");
        for Outcome { how, got, .. } in results {
            match got {
                Ok(got) if got.len() != want.len() => failures.push(format!(
                    "{name} ({how}): {} elements, want {}",
                    got.len(),
                    want.len()
                )),
                Ok(got) => {
                    if let Some(i) = (0..got.len()).find(|&i| !same_value(&got[i], &want[i])) {
                        failures.push(format!(
                            "{name} ({how}): element {i}: got {:?}, want {:?}",
                            got[i], want[i]
                        ));
                    }
                }
                Err(err) => failures.push(format!("{name} ({how}): {err}")),
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
    assert!(checked >= 100, "only {checked} fixtures");
}

#[test]
fn fixtures_into_typed_vecs() {
    // 0-d: one element.
    let one: Vec<f64> = npy_serde::from_slice_serde(&fixture("f8_le_0d")).unwrap();
    assert_eq!(
        one,
        [npy_serde::deserialize_slice::<f64>(&fixture("f8_le_0d")).unwrap()]
    );
    let w: Vec<W2> = npy_serde::from_slice_serde(&fixture("rec_w2_0d")).unwrap();
    assert_eq!(
        w,
        [npy_serde::deserialize_slice::<W2>(&fixture("rec_w2_0d")).unwrap()]
    );
    // N-d: flattened in C order.
    let grid: Vec<Vec<W2>> = npy_serde::deserialize_slice(&fixture("rec_w2_2x3")).unwrap();
    let flat: Vec<W2> = npy_serde::from_slice_serde(&fixture("rec_w2_2x3")).unwrap();
    assert_eq!(w2_bits(&flat), w2_bits(&grid.concat()));
    let cube: Vec<Vec<Vec<u16>>> = npy_serde::deserialize_slice(&fixture("u2_le_2x3x4")).unwrap();
    let flat: Vec<u16> = npy_serde::from_reader_serde(Cursor::new(fixture("u2_le_2x3x4"))).unwrap();
    assert_eq!(flat, cube.concat().concat());
    // Empty arrays, including zero-length axes.
    for name in [
        "f8_le_empty",
        "rec_w2_empty",
        "i2_be_empty_2x0",
        "u8_le_empty_0x3",
    ] {
        let bytes = fixture(name);
        let v: Vec<Value> = npy_serde::from_slice_serde(&bytes).unwrap();
        assert!(v.is_empty(), "{name}");
        let v: Vec<IgnoredAny> = npy_serde::from_reader_serde(Cursor::new(&bytes)).unwrap();
        assert!(v.is_empty(), "{name}");
    }
    // W2 fixtures written by NumPy, both byte orders, into the derived struct (fast tier).
    for name in ["rec_w2_le", "rec_w2_be"] {
        let bytes = fixture(name);
        // They hold a NaN: compared by bits.
        let want: Vec<W2> = npy_serde::deserialize_slice(&bytes).unwrap();
        assert_eq!(want.len(), 5);
        let want = w2_bits(&want);
        assert_eq!(
            w2_bits(&npy_serde::from_slice_serde::<W2>(&bytes).unwrap()),
            want
        );
        let streamed = npy_serde::from_reader_serde::<_, W2>(Trickle {
            data: &bytes,
            step: 7,
        });
        assert_eq!(w2_bits(&streamed.unwrap()), want);
        let dir = TempDir::new("read-vec-fixture-w2");
        let path = dir.join("w2.npy");
        fs::write(&path, &bytes).unwrap();
        assert_eq!(
            w2_bits(&npy_serde::from_path_serde::<_, W2>(&path).unwrap()),
            want
        );
        let map = MmapArray::open(&path).unwrap();
        assert_eq!(w2_bits(&map.to_vec_serde::<W2>().unwrap()), want);
    }
}

#[test]
fn every_fixture_with_generic_types() {
    let dir = TempDir::new("read-records-fixtures");
    let path = dir.join("fixture.npy");
    let rb = ReaderBuilder::new();
    let e = Entries {
        rb: &rb,
        free: false,
        streams: true,
        steps: &[7],
        path: Some(&path),
    };
    let (mut ok, mut exact) = (0, 0);
    for entry in entries("npy") {
        let name = entry["name"].as_str().unwrap();
        if entry["data_offset"].as_u64().unwrap() > 10_000 {
            // rec_v2_header (1500 fields, slow to parse in debug builds): see
            // `reader_builder_limits_same_errors`.
            continue;
        }
        let file = fs::read(entry_path(entry)).unwrap();
        fs::write(&path, &file).unwrap();
        let count = entry["count"].as_u64().unwrap() as usize;
        macro_rules! each {
            ($($t:ty),*) => {$(
                if let Ok(v) = compare_all::<$t>(&e, &file) {
                    ok += 1;
                    assert_eq!(v.len(), count, "{name}");
                    tier::take();
                    let probed: Vec<$t> = rb.from_slice(&file).unwrap();
                    assert_eq!(values_differ(&probed, &v), None, "{name}");
                    if tier::take().exact as usize == count && count > 0 {
                        exact += 1;
                    }
                }
            )*};
        }
        // Every fixture as the widest types and as W2; plain scalars as their own type too.
        each!(f64, W2);
        let descr = entry["descr"].as_str().unwrap_or("");
        match descr.trim_start_matches(['<', '>', '|', '=']) {
            "b1" => each!(bool),
            "i1" => each!(i8),
            "i2" => each!(i16),
            "i4" => each!(i32),
            "u1" => each!(u8),
            "u2" => each!(u16),
            "u4" => each!(u32),
            "i8" => each!(i64),
            "u8" => each!(u64),
            "f4" => each!(f32),
            _ => {}
        }
    }
    // Numbers read as themselves and as wider types, W2 records as W2.
    assert!(ok >= 85, "only {ok} (fixture, type) pairs read");
    assert!(
        exact >= 40,
        "the exact tier decoded whole fixtures only {exact} times"
    );
}
