//! Hostile headers: the magic, version and length, the dict, shapes and descrs.

use super::*;

// ---------------------------------------------------------------------------------------------
// Magic, version, header length
// ---------------------------------------------------------------------------------------------

#[test]
fn bad_and_truncated_magic() {
    for (bytes, code) in [
        (&b""[..], "unexpected_eof"),
        (b"\x93", "unexpected_eof"),
        (b"\x93NUMP", "unexpected_eof"),
        (b"\x93NUMPZ\x01\x00", "bad_magic"),
        (b"NUMPY\x01\x00", "bad_magic"),
        (b"PK\x03\x04\x14\x00", "bad_magic"),
        (b"\x00\x00\x00\x00\x00\x00\x00\x00", "bad_magic"),
        (b"\x93NUMPY", "unexpected_eof"),
        (b"\x93NUMPY\x01", "unexpected_eof"),
    ] {
        let e = header_err(bytes);
        assert_eq!(e.kind().code(), code, "{bytes:?}: {e}");
        assert!(e.position().byte.is_some(), "{bytes:?}: no position");
    }
}

#[test]
fn unsupported_versions() {
    for (maj, min) in [(0, 0), (1, 1), (2, 1), (3, 1), (4, 0), (255, 255), (0, 1)] {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[maj, min, 10, 0, 0, 0]);
        let e = header_err(&b);
        assert_eq!(e.kind().code(), "unsupported_version", "{maj}.{min}: {e}");
        assert!(e.to_string().contains(&format!("{maj}.{min}")), "{e}");
    }
}

#[test]
fn truncated_length_fields() {
    for b in [
        &b"\x93NUMPY\x01\x00"[..],
        b"\x93NUMPY\x01\x00\x10",
        b"\x93NUMPY\x02\x00\x10\x00\x00",
        b"\x93NUMPY\x03\x00",
    ] {
        assert_eq!(header_err(b).kind().code(), "unexpected_eof", "{b:?}");
    }
}

#[test]
fn header_length_past_eof() {
    // v1: says 200 bytes, has 5.
    let mut b = MAGIC.to_vec();
    b.extend_from_slice(&[1, 0, 200, 0]);
    b.extend_from_slice(b"{'des");
    let e = header_err(&b);
    assert_eq!(e.kind().code(), "unexpected_eof", "{e}");
    // v2 and v3: a length just within raised limits, with nothing after it; from a slice and
    // from a reader of unknown length, the failure must not allocate the declared length.
    for v in [2u8, 3] {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[v, 0]);
        b.extend_from_slice(&(100 * MIB as u32).to_le_bytes());
        b.extend_from_slice(b"{'descr'");
        let limits = Limits {
            max_header_size: u32::MAX as u64,
            ..Limits::default()
        };
        fails_small("v{v} slice", "unexpected_eof", MIB, || {
            parse_header(&b, &limits)
        });
        fails_small("v{v} reader", "unexpected_eof", MIB, || {
            read_header(&mut chunked(b.clone(), 7), &limits)
        });
    }
}

#[test]
fn v2_header_length_ffffffff() {
    for v in [2u8, 3] {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[v, 0, 0xff, 0xff, 0xff, 0xff]);
        b.extend_from_slice(b"{'descr': '<f8'");
        // Default limit: refused before reading.
        fails_small("ffffffff default", "header_too_large", 4096, || {
            parse_header(&b, &Limits::default())
        });
        let e = header_err(&b);
        assert_eq!(e.position().byte, Some(8));
        assert!(e.to_string().contains("4294967295"), "{e}");
        // Unlimited: the file is short, and the reader must find out without a 4 GiB buffer.
        let unlimited = Limits {
            max_header_size: u64::MAX,
            ..Limits::default()
        };
        fails_small("ffffffff unlimited", "unexpected_eof", MIB, || {
            parse_header(&b, &unlimited)
        });
        fails_small("ffffffff unlimited reader", "unexpected_eof", MIB, || {
            read_header(&mut chunked(b.clone(), 3), &unlimited)
        });
    }
}

#[test]
fn v1_header_over_numpy_limit() {
    let text = format!(
        "{{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }}{}\n",
        " ".repeat(10_050)
    );
    let b = npy((1, 0), text.as_bytes(), &[0; 8]);
    assert_eq!(header_err(&b).kind().code(), "header_too_large");
    // Raising the limit (as NumPy's allow_pickle/max_header_size override) accepts it.
    let p = parse_header(&b, &big_header_limits()).unwrap();
    assert_eq!(p.header.shape, vec![1]);
}

// ---------------------------------------------------------------------------------------------
// The header dict
// ---------------------------------------------------------------------------------------------

#[test]
fn non_dict_headers() {
    for text in [
        "[('descr', '<f8')]",
        "('<f8', False, (3,))",
        "'descr'",
        "3",
        "None",
        "True",
        "",
        "   \n",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,)} {}",
        "dict(descr='<f8', fortran_order=False, shape=(3,))",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,)",
        "{'descr': '<f8' 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '<f8',, 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,),}}",
        "{1: '<f8'}",
        "{('descr',): '<f8', 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': __import__('os')}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,) + (4,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1.5,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (0x10,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1e3,)}",
        "{'descr': b'<f8', 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '<f8\\', 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '<f8\n', 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '\\xZZ', 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '\\U00110000', 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '\\ud800', 'fortran_order': False, 'shape': (3,)}",
    ] {
        let e = header_err(&npy((1, 0), text.as_bytes(), &[]));
        assert!(
            matches!(e.kind().code(), "invalid_header" | "invalid_descr"),
            "{text:?}: {e}"
        );
        assert!(e.position().byte.is_some(), "{text:?}: no position");
    }
}

#[test]
fn missing_extra_misspelled_keys() {
    for text in [
        "{}",
        "{'descr': '<f8', 'shape': (3,)}",
        "{'fortran_order': False, 'shape': (3,)}",
        "{'descr': '<f8', 'fortran_order': False}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'extra': 1}",
        "{'descr': '<f8', 'fortan_order': False, 'shape': (3,)}",
        "{'Descr': '<f8', 'fortran_order': False, 'shape': (3,)}",
        "{'descr ': '<f8', 'fortran_order': False, 'shape': (3,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), '': 0}",
    ] {
        let e = header_err(&npy((1, 0), text.as_bytes(), &[0; 24]));
        assert_eq!(e.kind().code(), "invalid_header", "{text}: {e}");
        assert!(
            e.to_string()
                .contains("'descr', 'fortran_order' and 'shape'"),
            "{e}"
        );
    }
}

#[test]
fn bad_fortran_order() {
    for v in ["0", "1", "'False'", "None", "()", "false"] {
        let e = header_err(&npy_dict("'<f8'", v, "(1,)", &[0; 8]));
        assert_eq!(e.kind().code(), "invalid_header", "{v}: {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

#[test]
fn shape_not_a_tuple_of_ints() {
    for s in [
        "3", "[3]", "'3'", "None", "{3: 3}", "(3.0,)", "('3',)", "((3,),)", "(None,)", "(True,)",
        "([],)",
    ] {
        let e = header_err(&npy_dict("'<f8'", "False", s, &[0; 24]));
        assert_eq!(e.kind().code(), "invalid_header", "{s}: {e}");
    }
}

#[test]
fn negative_dims() {
    for s in [
        "(-1,)",
        "(-3, -1)",
        "(2, -1)",
        "(-9223372036854775808,)",
        "(-0x1,)",
    ] {
        let e = header_err(&npy_dict("'<f8'", "False", s, &[0; 24]));
        assert_eq!(e.kind().code(), "invalid_header", "{s}: {e}");
    }
    // -0 is 0 in Python: an empty array, which is fine.
    let p = parse_header(
        &npy_dict("'<f8'", "False", "(-0,)", &[]),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(p.header.shape, vec![0]);
}

#[test]
fn shape_products_overflow() {
    for (descr, shape) in [
        // count overflows u64
        ("'|u1'", "(4294967296, 4294967296)"),
        ("'<f8'", "(4294967296, 4294967296, 16)"),
        ("'|u1'", "(18446744073709551615, 2)"),
        // a dimension that does not fit u64 / i128
        ("'|u1'", "(18446744073709551616,)"),
        (
            "'|u1'",
            "(1000000000000000000000000000000000000000000000000,)",
        ),
        // count fits u64 but not i64
        ("'|u1'", "(9223372036854775808,)"),
        ("'|u1'", "(3037000500, 3037000500)"),
        // byte count overflows u64, or i64
        ("'<f8'", "(2305843009213693952,)"),
        ("'<f8'", "(1152921504606846976,)"),
        ("'<c32'", "(288230376151711744,)"),
        ("[('a', '<f8', (1000,))]", "(10000000000000000,)"),
    ] {
        let e = header_err(&npy_dict(descr, "False", shape, &[0; 64]));
        assert_eq!(e.kind().code(), "overflow", "{descr} {shape}: {e}");
    }
    // A zero dimension makes any product zero: legal, like NumPy.
    let p = parse_header(
        &npy_dict("'<f8'", "False", "(0, 18446744073709551615)", &[]),
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(p.header.data_len().unwrap(), 0);
}

#[test]
fn too_many_dims() {
    let ok = format!("({})", vec!["1"; 64].join(", "));
    parse_header(
        &npy_dict("'<f8'", "False", &ok, &[0; 8]),
        &Limits::default(),
    )
    .unwrap();
    for n in [65, 1000, 100_000] {
        let shape = format!("({})", vec!["1"; n].join(", "));
        let b = npy(
            (2, 0),
            format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}}}").as_bytes(),
            &[0; 8],
        );
        let e = parse_header(&b, &big_header_limits()).unwrap_err();
        assert_eq!(e.kind().code(), "limit_exceeded", "{n}: {e}");
    }
    // In a subarray too.
    let sub = format!("[('a', '<f8', ({}))]", vec!["1"; 65].join(", "));
    let e = header_err(&npy_dict(&sub, "False", "(1,)", &[0; 8]));
    assert_eq!(e.kind().code(), "limit_exceeded", "{e}");
}

// ---------------------------------------------------------------------------------------------
// Descr
// ---------------------------------------------------------------------------------------------

#[test]
fn descr_nested_10000_levels() {
    let n = 10_000;
    let cases = [
        (
            "records",
            format!("{}'<f8'{}", "[('a', ".repeat(n), ")]".repeat(n)),
        ),
        (
            "subarrays",
            format!("{}'<f8'{}", "(".repeat(n), ", (1,))".repeat(n)),
        ),
        ("lists", format!("{}{}", "[".repeat(n), "]".repeat(n))),
        ("tuples", format!("{}{}", "(".repeat(n), ",)".repeat(n))),
        ("dicts", format!("{}1{}", "{'a': ".repeat(n), "}".repeat(n))),
        ("unclosed", "[".repeat(n)),
    ];
    for (what, descr) in cases {
        for v in [(2, 0), (3, 0)] {
            let text = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': ()}}");
            let b = npy(v, text.as_bytes(), &[0; 8]);
            // The header size limit is raised so that the nesting limit is what trips.
            let e = parse_header(&b, &big_header_limits()).unwrap_err();
            assert_eq!(e.kind().code(), "limit_exceeded", "{what}: {e}");
            assert!(e.to_string().contains("nesting"), "{what}: {e}");
        }
    }
    // At the limit it still parses: 128 containers deep including the header dict.
    let ok = format!("{}'<f8'{}", "[('a', ".repeat(63), ")]".repeat(63));
    let b = npy_dict(&ok, "False", "()", &[0; 8]);
    parse_header(&b, &big_header_limits()).unwrap();
}

#[test]
fn raised_nesting_limit_does_not_overflow_the_stack() {
    // A caller who raises max_depth far beyond the default gets an error, not a stack
    // overflow, even on a thread with a small stack.
    let n = 50_000;
    let descr = format!("{}'<f8'{}", "[('a', ".repeat(n), ")]".repeat(n));
    let text = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': ()}}");
    let b = npy((2, 0), text.as_bytes(), &[0; 8]);
    let limits = Limits {
        max_header_size: 64 * MIB,
        max_depth: usize::MAX,
        ..Limits::default()
    };
    let r = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn({
            let limits = limits.clone();
            move || parse_header(&b, &limits).map(|_| ())
        })
        .unwrap()
        .join()
        .expect("no panic");
    let e = r.unwrap_err();
    assert_eq!(e.kind().code(), "limit_exceeded", "{e}");
    // The deepest header CPython (and so NumPy) can parse, 200 nested brackets counting the
    // dict and the innermost shape tuple, is accepted with the raised limit, on a 1 MiB stack
    // even in a debug build.
    let n = 198;
    let descr = format!("{}'<f8'{}", "(".repeat(n), ", (1,))".repeat(n));
    let text = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': ()}}");
    let b = npy((1, 0), text.as_bytes(), &[0; 8]);
    let r = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(move || parse_header(&b, &limits).map(|p| p.header.dtype.itemsize()))
        .unwrap()
        .join()
        .expect("no panic");
    assert_eq!(r.unwrap(), 8);
}

#[test]
fn descr_wide_record_is_linear() {
    // Records of n and 4n fields (up to a 2 MiB header, with a raised limit): the time must
    // grow about 4x, not 16x as a quadratic duplicate-name check did. Best of three runs each,
    // to ride out a busy machine.
    let file = |n: usize, dup: bool| {
        let mut fields: Vec<String> = (0..n).map(|i| format!("('f{i}', '|u1')")).collect();
        if dup {
            fields.push("('f0', '|u1')".to_string());
        }
        let descr = format!("[{}]", fields.join(", "));
        let text = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': (1,)}}");
        npy((2, 0), text.as_bytes(), &vec![0; n + 1])
    };
    let time = |b: &[u8]| {
        (0..3)
            .map(|_| {
                let t = std::time::Instant::now();
                let p = parse_header(b, &big_header_limits()).unwrap();
                assert_eq!(
                    p.header.dtype.itemsize() + 1,
                    b.len() - p.data_offset as usize
                );
                t.elapsed()
            })
            .min()
            .unwrap()
    };
    let n = 25_000;
    let small = time(&file(n, false));
    let large = time(&file(4 * n, false));
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-6);
    assert!(ratio < 10.0, "{n} fields: {small:?}, {}: {large:?}", 4 * n);
    // A duplicate at the very end is still found.
    let e = parse_header(&file(4 * n, true), &big_header_limits()).unwrap_err();
    assert_eq!(e.kind().code(), "invalid_descr", "{e}");
}

#[test]
fn descr_sizes_overflow() {
    for (descr, code) in [
        ("'|S99999999999999999999'", "invalid_descr"),
        ("'<U1000000000'", "invalid_descr"),
        ("'|V2147483648'", "invalid_descr"),
        (
            "[('a', '|S2000000000'), ('b', '|S2000000000')]",
            "limit_exceeded",
        ),
        ("[('a', '<f8', (4294967296, 4294967296))]", "overflow"),
        ("[('a', '<f8', (268435456,))]", "limit_exceeded"),
        ("('<f8', (-1,))", "invalid_descr"),
        ("[('a', '|S0', (2,))]", "invalid_descr"),
        ("[('a', '<M8[0s]')]", "invalid_descr"),
        ("[('a', '<M8[99999999999s]')]", "invalid_descr"),
    ] {
        let e = header_err(&npy_dict(descr, "False", "(1,)", &[0; 8]));
        assert_eq!(e.kind().code(), code, "{descr}: {e}");
    }
}

#[test]
fn invalid_utf8_in_v3_header() {
    for (bad, at) in [
        (&b"\xff"[..], 0),
        (b"\xe9", 0),
        (b"\xc3", 0),
        (b"\xed\xa0\x80", 0),
        (b"\xf4\x90\x80\x80", 0),
        (b"ok\xc0\x80", 2),
    ] {
        let mut text = b"{'descr': [('".to_vec();
        let name_at = text.len();
        text.extend_from_slice(bad);
        text.extend_from_slice(b"', '<f8')], 'fortran_order': False, 'shape': (1,)}\n");
        let b = npy((3, 0), &text, &[0; 8]);
        let e = header_err(&b);
        assert_eq!(e.kind().code(), "invalid_utf8", "{bad:?}: {e}");
        assert_eq!(e.position().byte, Some((12 + name_at + at) as u64));
        // The same bytes in a latin-1 (v1/v2) header are characters.
        let mut v2 = b.clone();
        v2[6] = 2;
        let p = parse_header(&v2, &Limits::default()).unwrap();
        assert_eq!(p.header.dtype.as_record().unwrap().fields().len(), 1);
    }
}

#[test]
fn object_dtype_is_refused() {
    for descr in [
        "'|O'",
        "'O'",
        "'<O'",
        "[('a', '|O')]",
        "[('a', '<f8'), ('b', [('c', '|O')])]",
        "('|O', (2,))",
    ] {
        let e = header_err(&npy_dict(descr, "False", "(1,)", &[0; 8]));
        assert_eq!(e.kind().code(), "unsupported_dtype", "{descr}: {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Huge shapes, tiny data: header level
// ---------------------------------------------------------------------------------------------

#[test]
fn huge_shape_header_costs_nothing() {
    // 10^12 f8 elements declared, 16 bytes present: parsing the header is fine and cheap; it
    // is the data reader's job to notice the data is missing (see the reader tests below).
    let b = npy_dict("'<f8'", "False", "(1000000000000,)", &[0; 16]);
    let (p, peak) = peak_alloc(|| parse_header(&b, &Limits::default()).unwrap());
    assert_eq!(p.header.data_len().unwrap(), 8_000_000_000_000);
    assert!(peak < 64 * 1024, "header parse allocated {peak}");
    let h = Header::new(p.header.dtype.clone(), p.header.shape.clone());
    assert_eq!(h.count().unwrap(), 1_000_000_000_000);
}
