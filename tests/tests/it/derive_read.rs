//! NumPy files read into `#[derive(NpyRecord)]` structs with `npy_serde::deserialize_slice`: the
//! derived dtype is the file's dtype, and the records come out field for field.
//!
//! The fixtures were written by NumPy (`tests/fixtures/make_fixtures.py`); the live test has
//! NumPy write a file whose dtype it builds from our derived descr text.

use std::ffi::OsStr;

use half::f16;
use npy_serde::header::{parse_header, Limits};
use npy_serde::{deserialize_slice, NpyRecord};
use npy_serde_tests::{fixture, live_python, run_python, TempDir, W2};
use serde::Deserialize;

/// The file's dtype, as its descr text, equals the derived one.
fn assert_file_dtype<T: NpyRecord>(bytes: &[u8]) {
    let parsed = parse_header(bytes, &Limits::default()).unwrap();
    let file = &parsed.header.dtype;
    let ours = T::dtype();
    assert_eq!(file.descr(), ours.descr(), "{}", std::any::type_name::<T>());
    assert_eq!(file.itemsize(), ours.itemsize());
}

#[test]
fn record_fixture_reads_into_derived_struct() {
    let bytes = fixture("rec_w2_le");
    assert_file_dtype::<W2>(&bytes);
    let recs: Vec<W2> = deserialize_slice(&bytes).unwrap();
    assert_eq!(recs.len(), 5);
    assert_eq!(
        recs[0],
        W2 {
            id: 1,
            x: 0.5,
            y: 1.5,
            flag: 0,
            v: [-1.0, -0.75, -0.5]
        }
    );
    assert_eq!(recs[2].id, i64::MAX);
    assert!(recs[2].x.is_nan());
    assert_eq!(recs[2].flag, 255);
    assert_eq!(recs[3].id, i64::MIN);
    assert_eq!(recs[3].x, f64::INFINITY);
    assert_eq!(recs[3].y, f32::from_bits(1)); // the smallest subnormal
    assert_eq!(recs[4].y, f32::NEG_INFINITY);
    assert_eq!(recs[4].v, [2.0, 2.25, 2.5]);
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
#[npy(byte_order = "big")]
struct W2Big {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

#[test]
fn big_endian_fixture_matches_byte_order_attribute() {
    let bytes = fixture("rec_w2_be");
    assert_file_dtype::<W2Big>(&bytes);
    let recs: Vec<W2Big> = deserialize_slice(&bytes).unwrap();
    assert_eq!(recs[1].id, -2);
    assert_eq!(recs[1].x, -1.25);
    assert_eq!(recs[1].v, [-0.25, 0.0, 0.25]);
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
#[npy(align)]
#[repr(C)]
struct RecAligned {
    a: u8,
    b: i64,
    c: u8,
    d: f16,
}

#[test]
fn aligned_fixture_matches_npy_align() {
    // np.dtype([('a','u1'),('b','<i8'),('c','u1'),('d','<f2')], align=True)
    let bytes = fixture("rec_aligned");
    assert_file_dtype::<RecAligned>(&bytes);
    let recs: Vec<RecAligned> = deserialize_slice(&bytes).unwrap();
    assert_eq!(
        recs,
        [
            RecAligned {
                a: 1,
                b: -3,
                c: 5,
                d: f16::from_f32(0.5)
            },
            RecAligned {
                a: 2,
                b: 4,
                c: 6,
                d: f16::NEG_INFINITY
            },
        ]
    );
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct Deep {
    z: u8,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct InnerMixed {
    x: f64,
    // The fixture's inner record mixes byte orders; the derive gives `y` its own order through
    // a big-endian newtype.
    y: BigI16,
    deep: Deep,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
#[npy(byte_order = "big")]
struct BigI16(i16);

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct RecNested {
    a: i32,
    inner: InnerMixed,
    b: bool,
}

#[test]
fn nested_fixture_reads_into_nested_structs() {
    let bytes = fixture("rec_nested");
    assert_file_dtype::<RecNested>(&bytes);
    let recs: Vec<RecNested> = deserialize_slice(&bytes).unwrap();
    assert_eq!(
        recs[1],
        RecNested {
            a: 2,
            inner: InnerMixed {
                x: -1.0,
                y: BigI16(300),
                deep: Deep { z: 8 }
            },
            b: false
        }
    );
    assert_eq!(recs[2].inner.x, 1e100);
    assert_eq!(recs[2].inner.y, BigI16(32767));
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct Pt {
    x: f32,
    y: f32,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct Polyline {
    pts: [Pt; 2],
    n: i16,
}

#[test]
fn subarray_of_records_fixture() {
    let bytes = fixture("rec_subarray_of_records");
    assert_file_dtype::<Polyline>(&bytes);
    let recs: Vec<Polyline> = deserialize_slice(&bytes).unwrap();
    assert_eq!(
        recs[1],
        Polyline {
            pts: [Pt { x: 3.0, y: -3.0 }, Pt { x: 4.0, y: -4.0 }],
            n: 2
        }
    );
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct Labels {
    #[npy(bytes = 6)]
    name: String,
    #[npy(unicode = 4)]
    label: String,
    n: i16,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct LabelsBorrowed<'a> {
    #[npy(bytes = 6)]
    name: &'a [u8],
    #[npy(unicode = 4)]
    label: String,
    #[serde(skip)]
    unused: Vec<u64>,
    n: i16,
}

#[test]
fn string_fixture_reads_into_width_attributed_fields() {
    let bytes = fixture("rec_str_unicode");
    assert_file_dtype::<Labels>(&bytes);
    assert_file_dtype::<LabelsBorrowed>(&bytes);
    let recs: Vec<Labels> = deserialize_slice(&bytes).unwrap();
    assert_eq!(
        recs,
        [
            Labels {
                name: "alpha".into(),
                label: "été".into(),
                n: 1
            },
            Labels {
                name: "a\0b".into(),
                label: "😀x".into(),
                n: -1
            },
            Labels {
                name: String::new(),
                label: String::new(),
                n: 0
            },
        ]
    );
    let borrowed: Vec<LabelsBorrowed> = deserialize_slice(&bytes).unwrap();
    assert_eq!(borrowed[1].name, b"a\0b");
    assert!(borrowed[1].unused.is_empty());
}

/// A derived struct with every kind of field, written by NumPy from our descr text.
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[npy(align)]
struct Everything {
    sensor_id: u16,
    ok: bool,
    half_val: f16,
    grid: [[i32; 2]; 2],
    #[npy(bytes = 5)]
    tag: String,
    #[npy(unicode = 3)]
    word: String,
    pos: Pt,
    #[serde(rename = "Z")]
    z: f64,
    raw: [u8; 3],
}

#[test]
fn numpy_written_file_reads_into_derived_struct() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping the live NumPy check");
        return;
    }
    let dir = TempDir::new("derive-read");
    let path = dir.join("everything.npy");
    let descr = Everything::dtype().descr();
    let script = r#"
import ast, sys
import numpy as np
from numpy.lib.format import descr_to_dtype
dt = descr_to_dtype(ast.literal_eval(sys.argv[1]))
a = np.zeros(2, dtype=dt)
a[0] = (7, True, 0.5, [[1, 2], [3, 4]], b'abc', 'xé', (1.5, -1.5), 2.25, [1, 2, 3])
a[1] = (65535, False, -2.0, [[-5, 6], [7, -8]], b'hello', 'ok!', (0.0, 3.0), -1e300, [255, 0, 9])
np.save(sys.argv[2], a)
"#;
    run_python(script, &[OsStr::new(&descr), path.as_os_str()]);
    let bytes = std::fs::read(&path).unwrap();
    assert_file_dtype::<Everything>(&bytes);
    let recs: Vec<Everything> = deserialize_slice(&bytes).unwrap();
    assert_eq!(
        recs,
        [
            Everything {
                sensor_id: 7,
                ok: true,
                half_val: f16::from_f32(0.5),
                grid: [[1, 2], [3, 4]],
                tag: "abc".into(),
                word: "xé".into(),
                pos: Pt { x: 1.5, y: -1.5 },
                z: 2.25,
                raw: [1, 2, 3],
            },
            Everything {
                sensor_id: 65535,
                ok: false,
                half_val: f16::from_f32(-2.0),
                grid: [[-5, 6], [7, -8]],
                tag: "hello".into(),
                word: "ok!".into(),
                pos: Pt { x: 0.0, y: 3.0 },
                z: -1e300,
                raw: [255, 0, 9],
            },
        ]
    );
}
