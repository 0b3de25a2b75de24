//! Hostile data: huge shapes over tiny data, lying content, truncation, through every reader.

use super::*;

// ---------------------------------------------------------------------------------------------
// Huge shapes, tiny data: the data readers
// ---------------------------------------------------------------------------------------------

#[derive(Deserialize, NpyRecord, Debug)]
#[allow(dead_code)] // only decoded
struct Rec {
    a: f64,
    b: i32,
}

#[test]
fn huge_shape_tiny_data_fails_fast_from_a_slice() {
    for (descr, fortran, shape) in [
        ("'<f8'", false, "(1000000000000,)"),
        ("'<f8'", true, "(1000000, 1000000)"),
        ("'<f8'", false, "(1000000, 1000000)"),
        ("[('a', '<f8'), ('b', '<i4')]", false, "(1000000000000,)"),
        ("'|b1'", false, "(1000000000000000000,)"),
        ("'<U100'", false, "(10000000000000,)"),
        ("[('v', '<f8', (1000,))]", false, "(1000000000,)"),
    ] {
        let b = huge_shape(descr, fortran, shape);
        let what = format!("{descr} {shape} fortran={fortran}");
        fails_small(&format!("{what} Array"), "unexpected_eof", MIB, || {
            Array::from_slice(&b)
        });
        fails_small(&format!("{what} Vec<Value>"), "unexpected_eof", MIB, || {
            npy_serde::deserialize_slice::<Vec<Value>>(&b)
        });
        fails_small(&format!("{what} Value"), "unexpected_eof", MIB, || {
            npy_serde::deserialize_slice::<Value>(&b)
        });
        fails_small(&format!("{what} Vec<f64>"), "unexpected_eof", MIB, || {
            npy_serde::deserialize_slice::<Vec<f64>>(&b)
        });
        fails_small(&format!("{what} Vec<Rec>"), "unexpected_eof", MIB, || {
            npy_serde::deserialize_slice::<Vec<Rec>>(&b)
        });
        // A data-size limit refuses it before anything is read.
        fails_small(
            &format!("{what} limited"),
            "limit_exceeded",
            64 * 1024,
            || {
                ReaderBuilder::new()
                    .max_data_size(1 << 30)
                    .array_from_slice(&b)
            },
        );
    }
}

/// From a `Read`, data arrives through a block buffer of a fixed 1 MiB (plus a page or two),
/// whatever the declared size: the budget is that constant plus the same 1 MiB as for slices.
const READER_BUDGET: u64 = 2 * MIB + 16 * 1024;

#[test]
fn huge_shape_tiny_data_fails_fast_from_a_reader_of_unknown_length() {
    // A reader yielding a valid header declaring 10^12 elements, then a few bytes.
    for (descr, fortran, shape) in [
        ("'<f8'", false, "(1000000000000,)"),
        ("'<f8'", true, "(1000000, 1000000)"),
        ("[('a', '<f8'), ('b', '<i4')]", false, "(1000000000000,)"),
        ("'|u1'", false, "(1000000000000,)"),
    ] {
        let b = huge_shape(descr, fortran, shape);
        let what = format!("{descr} {shape} fortran={fortran}");
        fails_small(
            &format!("{what} Array"),
            "unexpected_eof",
            READER_BUDGET,
            || Array::from_reader(chunked(b.clone(), 5)),
        );
        fails_small(
            &format!("{what} Vec<Value>"),
            "unexpected_eof",
            READER_BUDGET,
            || npy_serde::deserialize_reader::<_, Vec<Value>>(chunked(b.clone(), 5)),
        );
        fails_small(
            &format!("{what} Vec<f64>"),
            if descr == "'<f8'" {
                "unexpected_eof"
            } else {
                "type_mismatch|unexpected_eof"
            },
            READER_BUDGET,
            || npy_serde::deserialize_reader::<_, Vec<f64>>(chunked(b.clone(), 5)),
        );
        // Reading element by element, a dtype that is not `Rec`'s fails on the first one (a
        // Fortran-order array is read whole first, and fails on the missing data).
        let code = if descr.starts_with('[') {
            "unexpected_eof"
        } else {
            "type_mismatch|unexpected_eof"
        };
        fails_small(&format!("{what} Vec<Rec>"), code, READER_BUDGET, || {
            npy_serde::deserialize_reader::<_, Vec<Rec>>(chunked(b.clone(), 5))
        });
        // Streaming: the first records may come out; then the data ends. (A Fortran-order
        // array needs the whole data for logical C order, so opening the stream fails.)
        let (r, peak) = peak_alloc(|| {
            match ReaderBuilder::new().records_serde::<_, Value>(chunked(b.clone(), 5)) {
                Ok(records) => {
                    assert_eq!(records.len(), 1_000_000_000_000);
                    records.into_iter().find_map(|r| r.err())
                }
                Err(e) => Some(e),
            }
        });
        let e = r.expect("the stream must end in an error");
        assert!(e.is_eof(), "{what}: {e}");
        assert!(peak < READER_BUDGET, "{what}: streaming allocated {peak}");
    }
}

#[test]
fn values_without_data_are_bounded() {
    // Values that no data byte pays for: zero-size elements, zero-size subarrays nested inside
    // (a per-level check would let them multiply), and the lists above a zero-length axis.
    // Each case is a file of ~150 bytes; each must fail before decoding anything.
    for (descr, shape) in [
        ("[]", "(1000000000000000,)"),
        ("'|V0'", "(1000000000000000,)"),
        ("[]", "(2000000,)"),
        ("'<f8'", "(10000000, 0)"),
        ("'<f8'", "(1000000000000000000, 0)"),
        ("'|u1'", "(1, 1000000000000000000, 0, 5)"),
        ("[('a', [], (1000000000,))]", "(1000000,)"),
        ("[('a', [], (1000000000, 1000000000))]", "(1,)"),
        ("[('a', [], (4000,))]", "(4000,)"),
        ("[('a', [], (2000000,))]", "(1,)"),
        (
            "[('a', [('b', [], (4000,)), ('c', '|u1')], (4000,))]",
            "(1,)",
        ),
        ("[('a', [], (1100000,)), ('b', '|u1')]", "(1,)"),
    ] {
        let b = npy_dict(descr, "False", shape, &[0; 4000]);
        let what = format!("{descr} {shape}");
        fails_small(&format!("{what} Array"), "limit_exceeded", MIB, || {
            Array::from_slice(&b)
        });
        fails_small(&format!("{what} Value"), "limit_exceeded", MIB, || {
            npy_serde::deserialize_slice::<Value>(&b)
        });
        fails_small(&format!("{what} reader"), "limit_exceeded", MIB, || {
            Array::from_reader(chunked(b.clone(), 3))
        });
        fails_small(&format!("{what} stream"), "limit_exceeded", MIB, || {
            ReaderBuilder::new()
                .records_serde::<_, Value>(chunked(b.clone(), 3))
                .map(|_| ())
        });
        let h = parse_header(&b, &Limits::default()).unwrap().header;
        assert!(h.empty_value_count() > 1 << 20, "{what}");
    }
    // Realistic empty arrays are fine: a million rows of nothing, a few empty records, and an
    // empty field in each of many records; a raised limit reads bigger ones.
    for (descr, shape, n) in [
        ("'<f8'", "(1000000, 0)", 1_000_000),
        ("[]", "(1000,)", 1000),
        ("[('a', '|S0'), ('b', '|u1')]", "(4000,)", 4000),
    ] {
        let b = npy_dict(descr, "False", shape, &[0; 4000]);
        let a = Array::from_slice(&b).unwrap_or_else(|e| panic!("{descr} {shape}: {e}"));
        assert_eq!(a.shape[0], n);
    }
    let b = npy_dict("[]", "False", "(2000000,)", &[]);
    let a = ReaderBuilder::new()
        .max_empty_items(1 << 22)
        .array_from_slice(&b)
        .unwrap();
    assert_eq!(a.values.len(), 2_000_000);
}

// ---------------------------------------------------------------------------------------------
// Data content
// ---------------------------------------------------------------------------------------------

#[test]
fn bool_bytes_other_than_0_and_1() {
    let b = npy_dict("'|b1'", "False", "(4,)", &[0, 1, 2, 255]);
    for e in [
        npy_serde::deserialize_slice::<Vec<bool>>(&b).unwrap_err(),
        npy_serde::deserialize_reader::<_, Vec<bool>>(chunked(b.clone(), 1)).unwrap_err(),
        npy_serde::deserialize_slice::<Vec<Value>>(&b).unwrap_err(),
        Array::from_slice(&b).unwrap_err(),
    ] {
        assert_eq!(e.kind().code(), "invalid_value", "{e}");
        assert_eq!(e.position().record, Some(2), "{e}");
        assert_eq!(e.position().byte, Some(b.len() as u64 - 2), "{e}");
    }
    // In a record field too, with the field named.
    let r = npy_dict("[('x', '|u1'), ('ok', '|b1')]", "False", "(1,)", &[7, 9]);
    let e = npy_serde::deserialize_slice::<Vec<Value>>(&r).unwrap_err();
    assert_eq!(e.kind().code(), "invalid_value", "{e}");
    assert_eq!(e.position().field.as_deref(), Some("ok"), "{e}");
    // The raw bytes are readable as they are: from a memory map, and as a V1 view.
    let dir = std::env::temp_dir().join(format!("npy-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bools.npy");
    std::fs::write(&path, &b).unwrap();
    let m = MmapArray::open(&path).unwrap();
    assert_eq!(m.data(), &[0, 1, 2, 255]);
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
    let raw = npy_dict("'|V1'", "False", "(4,)", &[0, 1, 2, 255]);
    let a = Array::from_slice(&raw).unwrap();
    assert_eq!(a.values[2], Value::Void(vec![2]));
}

#[test]
fn object_dtype_through_the_readers() {
    let b = npy_dict("'|O'", "False", "(1,)", b"\x80\x04K\x01.");
    for e in [
        Array::from_slice(&b).unwrap_err(),
        npy_serde::deserialize_slice::<Value>(&b).unwrap_err(),
        npy_serde::deserialize_reader::<_, Value>(chunked(b.clone(), 2)).unwrap_err(),
    ] {
        assert_eq!(e.kind().code(), "unsupported_dtype", "{e}");
    }
}

#[test]
fn invalid_strings_in_data() {
    // U: a code point past U+10FFFF and a surrogate.
    for cp in [0x0011_0000u32, 0xd800, u32::MAX] {
        let b = npy_dict("'<U1'", "False", "(1,)", &cp.to_le_bytes());
        for e in [
            Array::from_slice(&b).unwrap_err(),
            npy_serde::deserialize_slice::<Vec<String>>(&b).unwrap_err(),
        ] {
            assert_eq!(e.kind().code(), "invalid_value", "{cp:#x}: {e}");
        }
    }
    // S into String: must be UTF-8; as bytes it is fine.
    let b = npy_dict("'|S2'", "False", "(1,)", b"\xff\xfe");
    assert_eq!(
        npy_serde::deserialize_slice::<Vec<String>>(&b)
            .unwrap_err()
            .kind()
            .code(),
        "invalid_value"
    );
    let a = Array::from_slice(&b).unwrap();
    assert_eq!(a.values, [Value::Bytes(vec![0xff, 0xfe])]);
}

#[test]
fn truncated_data_at_every_length() {
    let full = npy_dict(
        "[('a', '<f8'), ('s', '|S3'), ('v', '>i2', (2,)), ('u', '<U2')]",
        "False",
        "(3,)",
        &[0; 3 * 23],
    );
    let data_start = parse_header(&full, &Limits::default()).unwrap().data_offset as usize;
    Array::from_slice(&full).unwrap();
    for cut in data_start..full.len() {
        let b = &full[..cut];
        for e in [
            Array::from_slice(b).unwrap_err(),
            Array::from_reader(chunked(b.to_vec(), 4)).unwrap_err(),
            npy_serde::deserialize_slice::<Vec<Value>>(b).unwrap_err(),
            npy_serde::deserialize_reader::<_, Vec<Value>>(chunked(b.to_vec(), 3)).unwrap_err(),
        ] {
            assert!(e.is_eof(), "cut at {cut}: {e}");
        }
    }
    // And every prefix of the header is an error too.
    for cut in 0..data_start {
        assert!(Array::from_slice(&full[..cut]).is_err(), "cut at {cut}");
    }
}
