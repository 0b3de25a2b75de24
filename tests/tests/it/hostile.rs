//! Hostile inputs: every way a `.npy` file can lie, each checked to fail with the right error,
//! without a panic, and — where a declared size could make a naive reader allocate — with the
//! peak allocation of the failing call measured by the binary's counting global allocator
//! ([`crate::alloc`], which counts per thread: a measurement only sees what the code under test
//! allocated on the calling thread).

use std::io::Read;

use npy_serde::header::{parse_header, read_header, Limits, MAGIC};
use npy_serde::npz::{Compression, NpzArchive, NpzReaderBuilder, NpzWriter};
use npy_serde::{Array, Error, Header, MmapArray, NpyRecord, ReaderBuilder, Value};
use serde::Deserialize;

use crate::alloc::peak_alloc;

const MIB: u64 = 1 << 20;

/// Asserts that `f` fails with `code` (or one of `a|b`) while allocating less than `budget`
/// bytes.
fn fails_small<T: std::fmt::Debug>(
    what: &str,
    code: &str,
    budget: u64,
    f: impl FnOnce() -> Result<T, Error>,
) {
    let (r, peak) = peak_alloc(f);
    match r {
        Ok(v) => panic!("{what}: expected {code}, got Ok({v:?})"),
        Err(e) => assert!(
            code.split('|').any(|c| c == e.kind().code()),
            "{what}: expected {code}, got {e}"
        ),
    }
    assert!(
        peak < budget,
        "{what}: allocated {peak} bytes (budget {budget})"
    );
}

// ---------------------------------------------------------------------------------------------
// Building hostile files
// ---------------------------------------------------------------------------------------------

/// A `.npy` with the given version, raw header text (no padding added) and data.
fn npy(version: (u8, u8), text: &[u8], data: &[u8]) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    v.extend_from_slice(&[version.0, version.1]);
    if version.0 == 1 {
        v.extend_from_slice(&(text.len() as u16).to_le_bytes());
    } else {
        v.extend_from_slice(&(text.len() as u32).to_le_bytes());
    }
    v.extend_from_slice(text);
    v.extend_from_slice(data);
    v
}

/// A v1.0 `.npy` with a header dict built from descr, fortran_order and shape text.
fn npy_dict(descr: &str, fortran: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let text = format!("{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}\n");
    npy((1, 0), text.as_bytes(), data)
}

fn header_err(bytes: &[u8]) -> Error {
    match parse_header(bytes, &Limits::default()) {
        Ok(p) => panic!("expected an error, parsed {:?}", p.header),
        Err(e) => e,
    }
}

fn big_header_limits() -> Limits {
    Limits {
        max_header_size: 16 * MIB,
        ..Limits::default()
    }
}

/// A reader of unknown length: yields `data`, then (optionally) an endless stream of `fill`
/// bytes up to `tail` bytes, in small chunks — as a socket or pipe would.
struct Chunked {
    data: Vec<u8>,
    pos: usize,
    chunk: usize,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf
            .len()
            .min(self.chunk)
            .min(self.data.len() - self.pos.min(self.data.len()));
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn chunked(data: Vec<u8>, chunk: usize) -> Chunked {
    Chunked {
        data,
        pos: 0,
        chunk,
    }
}

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

// ---------------------------------------------------------------------------------------------
// Huge shapes, tiny data: the data readers
// ---------------------------------------------------------------------------------------------

#[derive(Deserialize, NpyRecord, Debug)]
#[allow(dead_code)] // only decoded
struct Rec {
    a: f64,
    b: i32,
}

/// A 10^12-element array header followed by 16 data bytes.
fn huge_shape(descr: &str, fortran: bool, shape: &str) -> Vec<u8> {
    npy_dict(
        descr,
        if fortran { "True" } else { "False" },
        shape,
        &[1; 16],
    )
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

// ---------------------------------------------------------------------------------------------
// npz
// ---------------------------------------------------------------------------------------------

/// An archive with one member `a` holding `data` as a `|u1` array (stored or deflated).
fn npz_with(data: &[u8], compression: Compression) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = NpzWriter::new(&mut out).with_compression(compression);
    let mut m = w
        .start_member(
            "a",
            &Header::new("|u1".parse().unwrap(), vec![data.len() as u64]),
        )
        .unwrap();
    std::io::Write::write_all(&mut m, data).unwrap();
    m.finish().unwrap();
    w.finish().unwrap();
    out.into_inner()
}

/// Offsets of every occurrence of a 4-byte zip signature.
fn find_sig(zip: &[u8], sig: &[u8; 4]) -> Vec<usize> {
    zip.windows(4)
        .enumerate()
        .filter(|(_, w)| w == sig)
        .map(|(i, _)| i)
        .collect()
}

/// The (compressed, uncompressed) size fields of the central directory entry at `cd`, as
/// offsets into the archive: the 8-byte zip64 extra fields if the entry has them, else the
/// 4-byte ones.
fn size_fields(zip: &[u8], cd: usize) -> (usize, usize, usize) {
    let u16_at = |o: usize| u16::from_le_bytes([zip[o], zip[o + 1]]) as usize;
    let name_len = u16_at(cd + 28);
    let extra_len = u16_at(cd + 30);
    let mut p = cd + 46 + name_len;
    let end = p + extra_len;
    while p + 4 <= end {
        let (id, len) = (u16_at(p), u16_at(p + 2));
        if id == 1 {
            // zip64: [uncompressed][compressed] as 8-byte values, present when the 4-byte
            // field is 0xFFFFFFFF.
            let mut q = p + 4;
            let mut fields = (cd + 20, cd + 24, 4);
            if zip[cd + 24..cd + 28] == [0xff; 4] {
                fields.1 = q;
                fields.2 = 8;
                q += 8;
            }
            if zip[cd + 20..cd + 24] == [0xff; 4] {
                fields.0 = q;
            }
            return fields;
        }
        p += 4 + len;
    }
    (cd + 20, cd + 24, 4)
}

fn put(zip: &mut [u8], at: usize, width: usize, v: u64) {
    zip[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
}

#[test]
fn npz_corrupt_crc() {
    for c in [Compression::Stored, Compression::Deflate] {
        let mut zip = npz_with(&[7; 1000], c);
        // Flip the CRC in the central directory and in the local header.
        for cd in find_sig(&zip, b"PK\x01\x02") {
            zip[cd + 16] ^= 0x55;
        }
        for lh in find_sig(&zip, b"PK\x03\x04") {
            zip[lh + 14] ^= 0x55;
        }
        let mut a = NpzArchive::from_bytes(&zip).unwrap();
        let e = a.read_raw("a").unwrap_err();
        assert_eq!(e.kind().code(), "zip", "{c:?}: {e}");
        let e = a.read_array("a").unwrap_err();
        assert_eq!(e.kind().code(), "zip", "{c:?}: {e}");
        let e = a.deserialize::<Vec<u8>>("a").unwrap_err();
        assert_eq!(e.kind().code(), "zip", "{c:?}: {e}");
    }
    // A corrupt data byte (stored) is caught by the CRC.
    let mut zip = npz_with(&[7; 1000], Compression::Stored);
    let at = zip.windows(8).position(|w| w == [7; 8]).unwrap() + 500;
    zip[at] = 8;
    let mut a = NpzArchive::from_bytes(&zip).unwrap();
    assert_eq!(a.read_raw("a").unwrap_err().kind().code(), "zip");
    assert_eq!(a.read_array("a").unwrap_err().kind().code(), "zip");
}

#[test]
fn npz_corrupt_deflate_stream() {
    let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    let good = npz_with(&data, Compression::Deflate);
    let lh = find_sig(&good, b"PK\x03\x04")[0];
    let name_len = u16::from_le_bytes([good[lh + 26], good[lh + 27]]) as usize;
    let extra_len = u16::from_le_bytes([good[lh + 28], good[lh + 29]]) as usize;
    let start = lh + 30 + name_len + extra_len;
    let mut failures = 0;
    for i in 0..64 {
        let mut zip = good.clone();
        let at = start + (i * 37) % 400;
        zip[at] ^= 0xa5;
        let Ok(mut a) = NpzArchive::from_bytes(&zip) else {
            continue;
        };
        match a.read_raw("a") {
            Ok(raw) => assert_eq!(raw, {
                // A flip the deflate format absorbs must still decode to the right bytes
                // (the CRC guarantees it).
                NpzArchive::from_bytes(&good)
                    .unwrap()
                    .read_raw("a")
                    .unwrap()
            }),
            Err(e) => {
                assert!(matches!(e.kind().code(), "zip" | "io"), "{e}");
                failures += 1;
            }
        }
        let _ = a.read_array("a");
    }
    assert!(failures > 32, "only {failures} of 64 corruptions detected");
}

#[test]
fn npz_bomb_and_lying_sizes() {
    // 32 MiB of zeros deflate to ~32 KiB.
    let n = 32 << 20;
    let bomb = npz_with(&vec![0u8; n], Compression::Deflate);
    assert!(bomb.len() < 256 * 1024, "{}", bomb.len());
    // A member-size limit refuses it before inflating anything.
    fails_small("bomb with a 1 MiB limit", "zip", 256 * 1024, || {
        NpzReaderBuilder::new()
            .max_member_size(MIB)
            .from_bytes(&bomb)?
            .read_raw("a")
    });
    // The directory lies: says the member inflates to 1000 bytes (and to something absurd).
    for claim in [1000u64, 100, 0] {
        let mut zip = bomb.clone();
        for cd in find_sig(&zip, b"PK\x01\x02") {
            let (_, uncomp, w) = size_fields(&zip, cd);
            put(&mut zip, uncomp, w, claim);
        }
        let what = format!("bomb claiming {claim} bytes");
        let (r, peak) = peak_alloc(|| -> Result<(), Error> {
            let mut a = NpzArchive::from_bytes(&zip)?;
            let raw = a.read_raw("a");
            let arr = a.read_array("a");
            match (raw, arr) {
                (Err(e), _) | (_, Err(e)) => Err(e),
                _ => Ok(()),
            }
        });
        let e = r.expect_err(&what);
        assert_eq!(e.kind().code(), "zip", "{what}: {e}");
        assert!(peak < 4 * MIB, "{what}: allocated {peak}");
    }
    // Claims larger than deflate can produce from the compressed bytes (zip64-sized lies).
    for claim in [u32::MAX as u64 - 1, 1 << 40, u64::MAX] {
        let mut zip = bomb.clone();
        for cd in find_sig(&zip, b"PK\x01\x02") {
            let (_, uncomp, w) = size_fields(&zip, cd);
            put(&mut zip, uncomp, w, claim);
        }
        let what = format!("claiming {claim} bytes");
        fails_small(&what, "zip", 4 * MIB, || {
            NpzArchive::from_bytes(&zip)?.read_raw("a")
        });
    }
    // Stored members whose compressed and uncompressed sizes disagree.
    let stored = npz_with(&[1; 4096], Compression::Stored);
    for claim in [10u64, 1 << 33, u64::MAX] {
        let mut zip = stored.clone();
        for cd in find_sig(&zip, b"PK\x01\x02") {
            let (_, uncomp, w) = size_fields(&zip, cd);
            put(&mut zip, uncomp, w, claim);
        }
        let what = format!("stored claiming {claim}");
        fails_small(&what, "zip", MIB, || {
            NpzArchive::from_bytes(&zip)?.read_array("a")
        });
    }
}

#[test]
fn npz_member_header_lies() {
    // A member whose .npy header declares 10^12 elements, with 16 bytes of data.
    let npy = huge_shape("'<f8'", false, "(1000000000000,)");
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = NpzWriter::new(&mut out);
    w.add_raw("a.npy", &npy).unwrap();
    w.finish().unwrap();
    let zip = out.into_inner();
    for code_ok in [
        peak_alloc(|| NpzArchive::from_bytes(&zip).unwrap().read_array("a")),
        peak_alloc(|| {
            NpzArchive::from_bytes(&zip)
                .unwrap()
                .deserialize::<Vec<f64>>("a")
                .map(|_| Array::from_slice(&[]).unwrap())
        }),
    ] {
        let (r, peak) = code_ok;
        let e = r.unwrap_err();
        assert!(matches!(e.kind().code(), "unexpected_eof" | "zip"), "{e}");
        assert!(peak < MIB, "{e}: allocated {peak}");
    }
}

#[test]
fn npz_garbage() {
    for bytes in [
        &b""[..],
        b"PK",
        b"PK\x05\x06",
        b"PK\x03\x04\x14\x00\x00\x00\x00\x00",
        b"\x93NUMPY\x01\x00",
    ] {
        assert!(NpzArchive::from_bytes(bytes).is_err(), "{bytes:?}");
    }
    // An end-of-central-directory record claiming 65535 entries at a bogus offset.
    let mut eocd = b"PK\x05\x06\x00\x00\x00\x00\xff\xff\xff\xff".to_vec();
    eocd.extend_from_slice(&u32::MAX.to_le_bytes());
    eocd.extend_from_slice(&0u32.to_le_bytes());
    eocd.extend_from_slice(&[0, 0]);
    fails_small("eocd claiming 65535 entries", "zip", MIB, || {
        NpzArchive::from_bytes(&eocd).map(|_| ())
    });
}
