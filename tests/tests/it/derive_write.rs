//! `#[derive(Serialize, NpyRecord)]` structs written with `npy_serde::to_vec`: the header has the
//! derived dtype, `deserialize_slice` reads the records back, and (live, `NPY_PYTHON`) NumPy loads the
//! file with the dtype it builds from its own spelling and sees the same values.

use std::ffi::OsStr;
use std::path::PathBuf;

use half::f16;
use npy_serde::header::{parse_header, Limits};
use npy_serde::{deserialize_slice, to_vec, NpyRecord};
use npy_serde_tests::{live_python, run_python, TempDir};
use num_complex::Complex;
use serde::{Deserialize, Serialize};

/// The example of the issue.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone)]
struct Point {
    x: f64,
    y: f64,
    label: [u8; 8],
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Celsius(f32);

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone)]
#[npy(align)]
struct Inner {
    h: f16,
    x: f64,
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[npy(align)]
struct Station {
    station_id: u32,
    active: bool,
    #[npy(bytes = 6)]
    code: String,
    #[npy(unicode = 4)]
    name: String,
    #[npy(bytes = 4)]
    raw: [u8; 4],
    temps: [Celsius; 3],
    inner: Inner,
    grid: [[i16; 3]; 2],
    z: Complex<f64>,
    #[serde(rename = "note")]
    #[npy(bytes = 3)]
    bytes: Vec<u8>,
    #[serde(skip)]
    cache: Vec<f64>,
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone)]
#[npy(byte_order = "big")]
struct BigPair(i32, f64);

fn points() -> Vec<Point> {
    vec![
        Point {
            x: 1.5,
            y: -2.0,
            label: *b"origin\0\0",
        },
        Point {
            x: f64::MAX,
            y: 0.0,
            label: [255, 0, 1, 2, 3, 4, 5, 6],
        },
    ]
}

fn stations() -> Vec<Station> {
    vec![
        Station {
            station_id: 7,
            active: true,
            code: "ABC".into(),
            name: "Zoë".into(),
            raw: [1, 2, 3, 4],
            temps: [Celsius(20.5), Celsius(-3.25), Celsius(0.0)],
            inner: Inner {
                h: f16::from_f32(0.5),
                x: 1e300,
            },
            grid: [[1, -2, 3], [-4, 5, -6]],
            z: Complex::new(1.0, -1.0),
            bytes: b"xy".to_vec(),
            cache: vec![],
        },
        Station {
            station_id: u32::MAX,
            active: false,
            code: "ZZZZZZ".into(),
            name: "".into(),
            raw: [0, 0, 0, 255],
            temps: [Celsius(1.0), Celsius(2.0), Celsius(3.0)],
            inner: Inner {
                h: f16::NEG_INFINITY,
                x: -0.0,
            },
            grid: [[0; 3]; 2],
            z: Complex::new(0.0, 2.5),
            bytes: b"abc".to_vec(),
            cache: vec![],
        },
    ]
}

fn bigs() -> Vec<BigPair> {
    vec![BigPair(1, 0.25), BigPair(-300, -1e10)]
}

/// Writes, checks the header's dtype and shape, reads back.
fn round_trip<T>(records: &[T]) -> Vec<u8>
where
    T: Serialize + for<'de> Deserialize<'de> + NpyRecord + Sync + PartialEq + std::fmt::Debug,
{
    let bytes = to_vec(records).unwrap();
    let h = parse_header(&bytes, &Limits::default()).unwrap().header;
    assert_eq!(h.dtype.descr(), T::dtype().descr());
    assert_eq!(h.shape, [records.len() as u64]);
    assert!(!h.fortran_order);
    let back: Vec<T> = deserialize_slice(&bytes).unwrap();
    assert_eq!(back, records);
    bytes
}

#[test]
fn derived_structs_round_trip_through_to_vec_and_from_slice() {
    round_trip(&points());
    let bytes = round_trip(&stations());
    let h = parse_header(&bytes, &Limits::default()).unwrap();
    let itemsize = Station::dtype().itemsize();
    assert_eq!(bytes.len() as u64, h.data_offset + 2 * itemsize as u64);
    round_trip(&bigs());
}

#[test]
fn aligned_padding_bytes_are_zero() {
    let bytes = to_vec(&stations()).unwrap();
    let h = parse_header(&bytes, &Limits::default()).unwrap();
    let dt = Station::dtype();
    let rec = dt.as_record().unwrap();
    let mut covered = vec![false; rec.itemsize()];
    for f in rec.fields() {
        covered[f.offset..f.offset + f.dtype.itemsize()].fill(true);
    }
    assert!(covered.iter().any(|c| !c), "the aligned record has padding");
    for (i, item) in bytes[h.data_offset as usize..]
        .chunks(rec.itemsize())
        .enumerate()
    {
        for (b, (&byte, &cov)) in item.iter().zip(&covered).enumerate() {
            if !cov {
                assert_eq!(byte, 0, "record {i}, padding byte {b}");
            }
        }
    }
}

#[test]
fn numpy_loads_what_the_derive_writes() {
    if live_python().is_none() {
        eprintln!("NPY_PYTHON not set: skipping the live NumPy check");
        return;
    }
    let files = [
        ("points", to_vec(&points()).unwrap()),
        ("stations", to_vec(&stations()).unwrap()),
        ("bigs", to_vec(&bigs()).unwrap()),
    ];
    let dir = TempDir::new("derive-write");
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|(name, bytes)| {
            let p = dir.join(format!("{name}.npy"));
            std::fs::write(&p, bytes).unwrap();
            p
        })
        .collect();
    let script = r#"
import sys
import numpy as np

points, stations, bigs = (np.load(p) for p in sys.argv[1:4])

assert points.dtype == np.dtype([('x', 'f8'), ('y', 'f8'), ('label', 'u1', (8,))]), points.dtype
assert points.shape == (2,)
assert points['x'].tolist() == [1.5, np.finfo('f8').max]
assert points['label'][0].tobytes() == b'origin\0\0'
assert points['label'][1].tolist() == [255, 0, 1, 2, 3, 4, 5, 6]

inner = np.dtype([('h', 'f2'), ('x', 'f8')], align=True)
want = np.dtype([('STATION_ID', 'u4'), ('ACTIVE', '?'), ('CODE', 'S6'), ('NAME', 'U4'),
                 ('RAW', 'S4'), ('TEMPS', 'f4', (3,)), ('INNER', inner), ('GRID', 'i2', (2, 3)),
                 ('Z', 'c16'), ('note', 'S3')], align=True)
assert stations.dtype == want, (stations.dtype, want)
assert stations.dtype.itemsize == want.itemsize
assert [stations.dtype.fields[n][1] for n in want.names] == [want.fields[n][1] for n in want.names]
s0, s1 = stations
assert s0['STATION_ID'] == 7 and s1['STATION_ID'] == 2**32 - 1
assert s0['ACTIVE'] and not s1['ACTIVE']
assert s0['CODE'] == b'ABC' and s1['CODE'] == b'ZZZZZZ'
assert s0['NAME'] == 'Zoë' and s1['NAME'] == ''
assert s0['RAW'] == b'\x01\x02\x03\x04' and s1['RAW'] == b'\x00\x00\x00\xff'
assert s0['TEMPS'].tolist() == [20.5, -3.25, 0.0]
assert s0['INNER']['h'] == 0.5 and s0['INNER']['x'] == 1e300
assert np.isneginf(s1['INNER']['h']) and np.signbit(s1['INNER']['x'])
assert s0['GRID'].tolist() == [[1, -2, 3], [-4, 5, -6]]
assert s0['Z'] == 1 - 1j and s1['Z'] == 2.5j
assert s0['note'] == b'xy' and s1['note'] == b'abc'

assert bigs.dtype == np.dtype([('f0', '>i4'), ('f1', '>f8')]), bigs.dtype
assert bigs.dtype.descr == [('f0', '>i4'), ('f1', '>f8')]
assert bigs['f0'].tolist() == [1, -300] and bigs['f1'].tolist() == [0.25, -1e10]
print("ok")
"#;
    let args: Vec<&OsStr> = paths.iter().map(|p| p.as_os_str()).collect();
    let out = run_python(script, &args);
    assert_eq!(out.trim(), "ok");
}
