//! Which tier serves each element on every reading and writing path, through the library's
//! `tier-hook` (`npy_serde::tier::take`): the exact tier for `NpyRecord` types whose layout is
//! the file's, the runtime-planned tier for exact requests of any `Deserialize`, and the
//! general tier for conversions and after a miss.

use std::io::Cursor;

use npy_serde::tier::{self, Served};
use npy_serde::{MmapArray, NpyWriter, ReaderBuilder, RecordReader, Value, WriterBuilder};
use npy_serde_tests::{TempDir, W2};
use serde::{Deserialize, Serialize};

fn w2(n: usize) -> Vec<W2> {
    (0..n)
        .map(|i| W2 {
            id: i as i64,
            x: i as f64 * 0.5,
            y: i as f32,
            flag: (i % 7) as u8,
            v: [i as f32, 1.0, 2.0],
        })
        .collect()
}

fn served(exact: u64, planned: u64, general: u64) -> Served {
    Served {
        exact,
        planned,
        general,
    }
}

/// W2's fields, without `NpyRecord`: only the runtime tiers can serve it.
#[derive(Deserialize, Debug, PartialEq)]
struct W2Plain {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

/// Two of W2's fields: read by name on the general tier's planned entrance.
#[derive(Deserialize, Debug, PartialEq)]
struct XY {
    x: f64,
    id: i64,
}

#[test]
fn flat_readers() {
    let rows = w2(100);
    let file = npy_serde::to_vec(&rows).unwrap();
    tier::take();

    let got: Vec<W2> = npy_serde::from_slice(&file).unwrap();
    assert_eq!(got, rows);
    assert_eq!(tier::take(), served(100, 0, 0), "from_slice");

    let got: Vec<W2> = npy_serde::from_reader(file.as_slice()).unwrap();
    assert_eq!(got, rows);
    assert_eq!(tier::take(), served(100, 0, 0), "from_reader");

    let got: Vec<W2Plain> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got.len(), 100);
    assert_eq!(tier::take(), served(0, 100, 0), "from_slice_serde");

    let got: Vec<W2Plain> = npy_serde::deserialize_slice(&file).unwrap();
    assert_eq!(got.len(), 100);
    assert_eq!(tier::take(), served(0, 100, 0), "from_slice::<Vec<_>>");

    // Fewer fields than the file: the planned tier misses on the first element, and the
    // general tier reads every element by name.
    let got: Vec<XY> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got[7], XY { x: 3.5, id: 7 });
    assert_eq!(tier::take(), served(0, 0, 100), "a subset of the fields");
}

#[test]
fn conversions_go_to_the_general_tier() {
    let file = npy_serde::to_vec(&[1i32, 2, 3]).unwrap();
    tier::take();
    // i4 -> i64 is a conversion: the planned tier serves only a type's own kind.
    let got: Vec<i64> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, [1, 2, 3]);
    assert_eq!(tier::take(), served(0, 0, 3));
    // As its own type, the exact tier (from_*) or the planned tier (from_*_serde).
    let got: Vec<i32> = npy_serde::from_slice(&file).unwrap();
    assert_eq!(got, [1, 2, 3]);
    assert_eq!(tier::take(), served(3, 0, 0));
    let got: Vec<i32> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, [1, 2, 3]);
    assert_eq!(tier::take(), served(0, 3, 0));
}

#[test]
fn a_miss_mid_array_hands_the_rest_to_the_general_tier() {
    // A bool byte of 2 at element 5: the fast tiers miss there, the general tier reports it.
    let mut file = npy_serde::to_vec(&[true; 10]).unwrap();
    let at = file.len() - 10 + 5;
    file[at] = 2;
    tier::take();
    let err = npy_serde::from_slice::<bool>(&file).unwrap_err();
    assert_eq!(err.position().record, Some(5));
    let s = tier::take();
    assert_eq!((s.exact, s.general), (5, 1), "{s:?}");
}

#[test]
fn streaming_and_maps() {
    let rows = w2(50);
    let dir = TempDir::new("tiers");
    let path = dir.join("w2.npy");
    npy_serde::to_path(&path, &rows).unwrap();
    let file = std::fs::read(&path).unwrap();
    tier::take();

    let got: Vec<W2Plain> = RecordReader::new_serde(Cursor::new(&file))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), 50);
    assert_eq!(tier::take(), served(0, 50, 0), "RecordReader");

    let got: Vec<W2Plain> = ReaderBuilder::new()
        .records_serde(Cursor::new(&file))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), 50);
    assert_eq!(
        tier::take(),
        served(0, 50, 0),
        "ReaderBuilder::records_serde"
    );

    let map = MmapArray::open(&path).unwrap();
    let got: Vec<W2Plain> = map
        .records_serde()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), 50);
    assert_eq!(tier::take(), served(0, 50, 0), "MmapArray::records_serde");

    let got: Vec<W2> = map.to_vec().unwrap();
    assert_eq!(got, rows);
    assert_eq!(tier::take(), served(50, 0, 0), "MmapArray::to_vec");

    let got: Vec<XY> = map
        .records_serde()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got.len(), 50);
    assert_eq!(
        tier::take(),
        served(0, 0, 50),
        "MmapArray::records_serde by name"
    );
}

/// W2's fields in reverse order.
#[derive(Serialize)]
struct Reordered {
    v: [f32; 3],
    flag: u8,
    y: f32,
    x: f64,
    id: i64,
}

/// W2 with an `i32` id (widened to `<i8` when written).
#[derive(Serialize)]
struct Narrow {
    id: i32,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

#[test]
fn writers() {
    let rows = w2(20);
    tier::take();
    let file = npy_serde::to_vec(&rows).unwrap();
    assert_eq!(tier::take(), served(20, 0, 0), "to_vec");

    // W2 in the other byte order throughout: still the exact tier, with every value swapped.
    let be = WriterBuilder::new()
        .byte_order(npy_serde::ByteOrder::Big)
        .to_vec(&rows)
        .unwrap();
    assert_eq!(
        tier::take(),
        served(20, 0, 0),
        "to_vec, big-endian (flipped)"
    );
    assert_ne!(be, file);

    // Record by record through NpyWriter's serde door: the runtime-planned tier.
    let mut w = NpyWriter::with_len::<W2>(Vec::new(), 20).unwrap();
    for r in &rows {
        w.write_serde(r).unwrap();
    }
    assert_eq!(w.finish().unwrap(), file);
    assert_eq!(tier::take(), served(0, 20, 0), "NpyWriter::write_serde");
    let mut w = NpyWriter::with_len::<W2>(Vec::new(), 20).unwrap();
    w.write_all_serde(&rows).unwrap();
    assert_eq!(w.finish().unwrap(), file);
    assert_eq!(tier::take(), served(0, 20, 0), "NpyWriter::write_all_serde");

    // Fields in another order, or a conversion: the first record misses the planned tier,
    // and every record goes to the general tier, with the same bytes.
    let mut w = NpyWriter::with_len::<W2>(Vec::new(), 20).unwrap();
    for r in &rows {
        w.write_serde(&Reordered {
            v: r.v,
            flag: r.flag,
            y: r.y,
            x: r.x,
            id: r.id,
        })
        .unwrap();
    }
    assert_eq!(w.finish().unwrap(), file);
    assert_eq!(
        tier::take(),
        served(0, 0, 20),
        "write_serde, fields reordered"
    );
    let mut w = NpyWriter::with_len::<W2>(Vec::new(), 20).unwrap();
    for r in &rows {
        let narrow = Narrow {
            id: i32::try_from(r.id).unwrap(),
            x: r.x,
            y: r.y,
            flag: r.flag,
            v: r.v,
        };
        w.write_serde(&narrow).unwrap();
    }
    assert_eq!(w.finish().unwrap(), file);
    assert_eq!(tier::take(), served(0, 0, 20), "write_serde, i32 into <i8");

    // Dynamic values: the general tier.
    let a = npy_serde::Array::from_slice(&file).unwrap();
    let mut out = Vec::new();
    WriterBuilder::new().write_array(&mut out, &a).unwrap();
    assert_eq!(out, file);
    let s = tier::take();
    assert_eq!((s.exact, s.planned), (0, 0), "{s:?}");
    assert!(matches!(a.values[0], Value::Record(_)));
}
