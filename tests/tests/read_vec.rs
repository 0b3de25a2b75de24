//! `from_reader_serde`, `from_slice_serde`, `from_path_serde` and
//! `MmapArray::to_vec`: every element of the array, flattened in logical C order, into a
//! `Vec<T>`.
//!
//! Each element is first offered to the fast tier (`npy-serde/src/read/planned.rs`); any error there is
//! a miss and the same element is decoded again by the general deserializer, which then reads
//! the rest of the array. These tests check that the results and the errors are those of
//! `deserialize_slice::<Vec<T>>` (for 1-D arrays; flattened for N-d), whichever entry point is used,
//! wherever the miss happens (first element, middle of a run, a block boundary of a reader) and
//! whatever the shape and byte order.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Debug;
use std::fs;
use std::io::{Cursor, Read};
use std::num::NonZeroU8;
use std::path::Path;

use npy_serde::header::Limits;
use npy_serde::{DType, Error, Header, MmapArray, ReaderBuilder, Value};
use npy_serde_tests::{entries, entry_path, fixture, npy, Logged, TempDir, Trickle, W2};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;

// ---------------------------------------------------------------------------------------------
// Allocation watch (for the hostile-header tests)
// ---------------------------------------------------------------------------------------------

/// The system allocator, remembering per thread the largest allocation that succeeded (the
/// library spawns no threads, so a test sees exactly the allocations of its own calls).
struct WatchAlloc;

thread_local! {
    static LARGEST_ALLOC: Cell<usize> = const { Cell::new(0) };
}

fn note_alloc(size: usize) {
    // `try_with`: allocations can happen while the thread's locals are being torn down.
    let _ = LARGEST_ALLOC.try_with(|c| c.set(c.get().max(size)));
}

/// Runs `f` and returns its result and the largest allocation it made on this thread.
fn largest_alloc_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST_ALLOC.with(|c| c.set(0));
    let r = f();
    (r, LARGEST_ALLOC.with(Cell::get))
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the only
// addition is an update of a thread-local `Cell` (const-initialized, no destructor), which
// touches no allocated memory and never allocates.
unsafe impl GlobalAlloc for WatchAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (the caller upholds `GlobalAlloc::alloc`'s contract).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note_alloc(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: WatchAlloc = WatchAlloc;

/// Far more than any array of these tests needs (the largest are a few MiB).
const GIANT: usize = 1 << 30;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The offset of the first data byte of a whole file.
fn data_offset(file: &[u8]) -> u64 {
    npy_serde::header::parse_header(file, &Limits::default())
        .unwrap()
        .data_offset
}

/// Every `from_*_serde` entry point of `rb` (and `MmapArray::to_vec`) on `file`, also written to
/// `path`: `(name, result)` pairs. Readers are a `Cursor` and [`Trickle`]s of several steps.
fn vec_with<T: DeserializeOwned + Send>(
    rb: &ReaderBuilder,
    file: &[u8],
    path: &Path,
) -> Vec<(String, npy_serde::Result<Vec<T>>)> {
    fs::write(path, file).unwrap();
    let mut out: Vec<(String, npy_serde::Result<Vec<T>>)> = vec![
        ("from_slice_serde".into(), rb.from_slice_serde(file)),
        (
            "from_reader_serde(Cursor)".into(),
            rb.from_reader_serde(Cursor::new(file)),
        ),
    ];
    for step in [1, 7, 33, 99, 4097] {
        out.push((
            format!("from_reader_serde(Trickle {step})"),
            rb.from_reader_serde(Trickle { data: file, step }),
        ));
    }
    out.push(("from_path_serde".into(), rb.from_path_serde(path)));
    out.push((
        "MmapArray::to_vec".into(),
        MmapArray::open_with(path, rb).and_then(|m| m.to_vec_serde::<T>()),
    ));
    out
}

/// [`vec_with`] the default options, plus the free functions and `MmapArray::open`.
fn vec_all<T: DeserializeOwned + Send>(
    file: &[u8],
    path: &Path,
) -> Vec<(String, npy_serde::Result<Vec<T>>)> {
    let mut out = vec_with(&ReaderBuilder::new(), file, path);
    out.push((
        "npy_serde::from_slice_serde".into(),
        npy_serde::from_slice_serde(file),
    ));
    out.push((
        "npy_serde::from_reader_serde".into(),
        npy_serde::from_reader_serde(Cursor::new(file)),
    ));
    out.push((
        "npy_serde::from_path_serde".into(),
        npy_serde::from_path_serde(path),
    ));
    out.push((
        "MmapArray::open".into(),
        MmapArray::open(path).and_then(|m| m.to_vec_serde::<T>()),
    ));
    out
}

/// Checks that two errors are the same: kind code, position (record, field path, byte) and
/// message.
fn assert_same_error(got: &Error, want: &Error, what: &str) {
    assert_eq!(
        got.kind().code(),
        want.kind().code(),
        "{what}: kind differs\n got: {got}\nwant: {want}"
    );
    assert_eq!(
        got.position(),
        want.position(),
        "{what}: position differs\n got: {got}\nwant: {want}"
    );
    assert_eq!(got.to_string(), want.to_string(), "{what}: message differs");
}

/// Every entry point gives `want`.
fn assert_all_eq<T: PartialEq + Debug>(
    results: Vec<(String, npy_serde::Result<Vec<T>>)>,
    want: &[T],
) {
    for (how, r) in results {
        match r {
            Ok(got) => {
                assert_eq!(got.len(), want.len(), "{how}: length");
                if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
                    panic!("{how}: element {i}: got {:?}, want {:?}", got[i], want[i]);
                }
            }
            Err(e) => panic!("{how}: {e}"),
        }
    }
}

/// Every entry point fails with `want`.
fn assert_all_err<T: Debug>(results: Vec<(String, npy_serde::Result<Vec<T>>)>, want: &Error) {
    for (how, r) in results {
        match r {
            Ok(v) => panic!(
                "{how}: want the error {want}, got Ok ({} elements)",
                v.len()
            ),
            Err(e) => assert_same_error(&e, want, &how),
        }
    }
}

/// Every entry point fails with `want`'s error (kind, message, field path and byte offset), at
/// record `record`.
fn assert_all_err_at<T: Debug>(
    results: Vec<(String, npy_serde::Result<Vec<T>>)>,
    want: &Error,
    record: u64,
) {
    for (how, r) in results {
        match r {
            Ok(v) => panic!(
                "{how}: want the error {want}, got Ok ({} elements)",
                v.len()
            ),
            Err(e) => {
                assert_eq!(e.kind().code(), want.kind().code(), "{how}: {e} vs {want}");
                assert_eq!(e.kind().to_string(), want.kind().to_string(), "{how}");
                assert_eq!(e.position().field, want.position().field, "{how}: {e}");
                assert_eq!(e.position().byte, want.position().byte, "{how}: {e}");
                assert_eq!(e.position().record, Some(record), "{how}: {e}");
            }
        }
    }
}

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

// ---------------------------------------------------------------------------------------------
// W2 records
// ---------------------------------------------------------------------------------------------

const W2_DESCR: &str = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]";

fn w2_descr(big: bool) -> String {
    if big {
        W2_DESCR.replace('<', ">")
    } else {
        W2_DESCR.to_string()
    }
}

/// `n` distinct W2 records (no NaN, so that `PartialEq` compares them), with a few extremes;
/// every `flag` is nonzero.
fn w2_records(n: usize) -> Vec<W2> {
    (0..n)
        .map(|i| {
            let f = i as f32;
            let mut r = W2 {
                id: (i as i64 - 1000) * 1_000_003,
                x: i as f64 * 0.37 - 123.0,
                y: f * 0.5 - 7.25,
                flag: (i % 255) as u8 + 1,
                v: [f, -f * 0.25, 1.0 / (f + 1.0)],
            };
            match i % 1000 {
                1 => r.id = i64::MIN,
                2 => r.id = i64::MAX,
                3 => r.x = -0.0,
                4 => r.y = f32::MAX,
                5 => r.x = f64::MIN_POSITIVE,
                6 => r.v[1] = f32::NEG_INFINITY,
                _ => {}
            }
            r
        })
        .collect()
}

/// The data bytes of `recs` in the W2 layout (33 bytes a record), in either byte order.
fn w2_data(recs: &[W2], big: bool) -> Vec<u8> {
    let mut d = Vec::with_capacity(recs.len() * 33);
    macro_rules! put {
        ($v:expr) => {
            if big {
                d.extend_from_slice(&$v.to_be_bytes())
            } else {
                d.extend_from_slice(&$v.to_le_bytes())
            }
        };
    }
    for r in recs {
        put!(r.id);
        put!(r.x);
        put!(r.y);
        d.push(r.flag);
        for v in r.v {
            put!(v);
        }
    }
    assert_eq!(d.len(), recs.len() * 33);
    d
}

/// The records' bits, to compare records holding NaNs.
fn w2_bits(recs: &[W2]) -> Vec<(i64, u64, u32, u8, [u32; 3])> {
    recs.iter()
        .map(|r| {
            (
                r.id,
                r.x.to_bits(),
                r.y.to_bits(),
                r.flag,
                r.v.map(f32::to_bits),
            )
        })
        .collect()
}

/// A 1-D W2 file of `recs`, built with `Header::new(dtype, vec![n]).to_bytes()`.
fn w2_file(recs: &[W2], big: bool) -> Vec<u8> {
    let dtype: DType = w2_descr(big).parse().unwrap();
    let mut file = Header::new(dtype, vec![recs.len() as u64])
        .to_bytes()
        .unwrap();
    file.extend(w2_data(recs, big));
    file
}

// ---------------------------------------------------------------------------------------------
// 1. Every valid fixture, as Value
// ---------------------------------------------------------------------------------------------

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
            for (how, r) in results {
                match r {
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
        for (how, r) in results {
            match r {
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

// ---------------------------------------------------------------------------------------------
// 2. Typed records
// ---------------------------------------------------------------------------------------------

#[derive(Deserialize, Debug, PartialEq)]
struct Reordered {
    v: [f32; 3],
    flag: u8,
    y: f32,
    x: f64,
    id: i64,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Subset {
    flag: u8,
    x: f64,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Prefix {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
}

#[derive(Deserialize, Debug, PartialEq)]
struct VVec {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: Vec<f32>,
}

#[derive(Deserialize, Debug, PartialEq)]
struct VTuple {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: (f32, f32, f32),
}

/// Every conversion here is documented as exact: `i8` -> `i128`, `f8` -> `f8`, `f4` -> `f64`,
/// `u1` -> `u16`/`i16`/`f32`, `f4` -> `f64` items.
#[derive(Deserialize, Debug, PartialEq)]
struct Widened {
    id: i128,
    x: f64,
    y: f64,
    flag: u16,
    v: [f64; 3],
}

#[derive(Deserialize, Debug, PartialEq)]
struct WidenedFlag {
    id: i64,
    x: f64,
    y: f32,
    flag: f32,
    v: [f32; 3],
}

#[derive(Deserialize, Debug, PartialEq)]
struct Id(i64);

#[derive(Deserialize, Debug, PartialEq)]
struct Wrapped {
    id: Id,
    x: Option<f64>,
    y: f32,
    flag: Option<u8>,
    v: [Option<f32>; 3],
}

#[derive(Deserialize, Debug, PartialEq)]
struct WithDefault {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
    #[serde(default)]
    missing: Option<u32>,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Renamed {
    #[serde(rename = "id")]
    ident: i64,
    x: f64,
    y: f32,
    flag: u8,
    #[serde(rename = "v")]
    vel: [f32; 3],
}

type W2Tuple = (i64, f64, f32, u8, [f32; 3]);

/// Checks `T` through every entry point against `deserialize_slice::<Vec<T>>` and against `want`
/// (computed independently from the records).
fn typed_case<T: DeserializeOwned + Send + PartialEq + Debug>(
    file: &[u8],
    path: &Path,
    what: &str,
    want: impl Fn(&W2) -> T,
    recs: &[W2],
) {
    let reference: Vec<T> =
        npy_serde::deserialize_slice(file).unwrap_or_else(|e| panic!("{what}: {e}"));
    let want: Vec<T> = recs.iter().map(want).collect();
    assert_eq!(reference.len(), want.len(), "{what}");
    if let Some(i) = (0..want.len()).find(|&i| reference[i] != want[i]) {
        panic!(
            "{what}: deserialize_slice element {i}: {:?} vs {:?}",
            reference[i], want[i]
        );
    }
    let results = vec_all::<T>(file, path)
        .into_iter()
        .map(|(how, r)| (format!("{what}: {how}"), r))
        .collect();
    assert_all_eq(results, &want);
}

#[test]
fn w2_records_into_structs_every_way() {
    let dir = TempDir::new("read-vec-w2");
    let recs = w2_records(3000);
    for big in [false, true] {
        let file = w2_file(&recs, big);
        let path = dir.join(if big { "be.npy" } else { "le.npy" });
        let order = if big { ">" } else { "<" };
        typed_case(
            &file,
            &path,
            &format!("{order} W2 (exact, fast)"),
            |r| *r,
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Reordered (by name)"),
            |r| Reordered {
                v: r.v,
                flag: r.flag,
                y: r.y,
                x: r.x,
                id: r.id,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Subset"),
            |r| Subset {
                flag: r.flag,
                x: r.x,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Prefix"),
            |r| Prefix {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} VVec"),
            |r| VVec {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
                v: r.v.to_vec(),
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} VTuple"),
            |r| VTuple {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
                v: (r.v[0], r.v[1], r.v[2]),
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Widened"),
            |r| Widened {
                id: r.id.into(),
                x: r.x,
                y: r.y.into(),
                flag: r.flag.into(),
                v: r.v.map(f64::from),
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} WidenedFlag"),
            |r| WidenedFlag {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag.into(),
                v: r.v,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Wrapped"),
            |r| Wrapped {
                id: Id(r.id),
                x: Some(r.x),
                y: r.y,
                flag: Some(r.flag),
                v: r.v.map(Some),
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} WithDefault"),
            |r| WithDefault {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
                v: r.v,
                missing: None,
            },
            &recs,
        );
        typed_case(
            &file,
            &path,
            &format!("{order} Renamed"),
            |r| Renamed {
                ident: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag,
                vel: r.v,
            },
            &recs,
        );
        typed_case::<W2Tuple>(
            &file,
            &path,
            &format!("{order} tuple"),
            |r| (r.id, r.x, r.y, r.flag, r.v),
            &recs,
        );
        // Value (always the general path) agrees with the typed reads.
        let vals: Vec<Value> = npy_serde::from_slice_serde(&file).unwrap();
        assert_eq!(vals.len(), recs.len());
        for (v, r) in vals.iter().zip(&recs) {
            assert_eq!(v.get("id"), Some(&Value::Int(r.id)));
            assert_eq!(v.get("flag"), Some(&Value::UInt(r.flag.into())));
        }
    }
}

#[test]
fn w2_lossy_field_requests_fail_like_from_slice() {
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct XAsF32 {
        id: i64,
        x: f32,
        y: f32,
        flag: u8,
        v: [f32; 3],
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct ShortV {
        id: i64,
        x: f64,
        y: f32,
        flag: u8,
        v: [f32; 2],
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct ItemAsI32 {
        id: i64,
        x: f64,
        y: f32,
        flag: u8,
        v: [i32; 3],
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct FlagAsI8ByName {
        flag: i8,
        id: i64,
    }
    let dir = TempDir::new("read-vec-w2-lossy");
    let recs = w2_records(700);
    for big in [false, true] {
        let file = w2_file(&recs, big);
        let path = dir.join("f.npy");
        let start = data_offset(&file);
        let rb = ReaderBuilder::new();

        let want = npy_serde::deserialize_slice::<Vec<XAsF32>>(&file).unwrap_err();
        assert_eq!(want.kind().code(), "type_mismatch");
        assert_eq!(want.position().record, Some(0));
        assert_eq!(want.position().field.as_deref(), Some("x"));
        assert_eq!(want.position().byte, Some(start + 8));
        assert_all_err(vec_with::<XAsF32>(&rb, &file, &path), &want);

        let want = npy_serde::deserialize_slice::<Vec<ShortV>>(&file).unwrap_err();
        assert_eq!(want.kind().code(), "type_mismatch");
        assert_all_err(vec_with::<ShortV>(&rb, &file, &path), &want);

        let want = npy_serde::deserialize_slice::<Vec<ItemAsI32>>(&file).unwrap_err();
        assert_eq!(want.position().field.as_deref(), Some("v[0]"));
        assert_eq!(want.position().byte, Some(start + 21));
        assert_all_err(vec_with::<ItemAsI32>(&rb, &file, &path), &want);

        let want = npy_serde::deserialize_slice::<Vec<FlagAsI8ByName>>(&file).unwrap_err();
        assert_eq!(want.kind().code(), "type_mismatch");
        assert_eq!(want.position().field.as_deref(), Some("flag"));
        assert_all_err(vec_with::<FlagAsI8ByName>(&rb, &file, &path), &want);
    }
}

// ---------------------------------------------------------------------------------------------
// 3. A miss in the middle of the array
// ---------------------------------------------------------------------------------------------

#[derive(Deserialize, Debug, PartialEq)]
struct NzFlag {
    id: i64,
    x: f64,
    y: f32,
    flag: NonZeroU8,
    v: [f32; 3],
}

/// A `u8` that is never 42: its visitor gets the value it asked for, and fails on this one.
#[derive(Deserialize, Debug, PartialEq, Clone, Copy)]
#[serde(try_from = "u8")]
struct Not42(u8);

impl TryFrom<u8> for Not42 {
    type Error = String;
    fn try_from(v: u8) -> Result<Self, String> {
        if v == 42 {
            Err(format!("the flag {v} is reserved"))
        } else {
            Ok(Not42(v))
        }
    }
}

#[derive(Deserialize, Debug, PartialEq)]
struct Not42Flag {
    id: i64,
    x: f64,
    y: f32,
    flag: Not42,
    v: [f32; 3],
}

/// A whole record with a `try_from` on the element itself: the fast tier reads it positionally,
/// then the conversion rejects some records.
#[derive(Deserialize, Debug, PartialEq)]
#[serde(try_from = "W2")]
struct EvenId(W2);

impl TryFrom<W2> for EvenId {
    type Error = String;
    fn try_from(w: W2) -> Result<Self, String> {
        if w.id % 2 == 0 {
            Ok(EvenId(w))
        } else {
            Err(format!("odd id {}", w.id))
        }
    }
}

#[test]
fn nonzero_flag_miss_mid_array_reports_like_from_slice() {
    let dir = TempDir::new("read-vec-nonzero");
    let path = dir.join("f.npy");
    let n = 10_000;
    let base = w2_records(n);
    // All good: the results equal the records (and `deserialize_slice`).
    let file = w2_file(&base, false);
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
        let start = data_offset(&file);
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
            let file = w2_file(&recs, big);
            let start = data_offset(&file);
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
            let results = vec_all::<NzFlag>(&file, &path)
                .into_iter()
                .map(|(how, r)| (format!("bad record {bad}, big {big}: {how}"), r))
                .collect();
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
    let file = w2_file(&base, true);
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
            let file = w2_file(&recs, big);
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
            let results = vec_all::<Not42Flag>(&file, &path)
                .into_iter()
                .map(|(how, r)| (format!("bad record {bad}, big {big}: {how}"), r))
                .collect();
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
    let file = w2_file(&recs, false);
    let want: Vec<EvenId> = recs.iter().map(|r| EvenId(*r)).collect();
    assert_all_eq(vec_all::<EvenId>(&file, &path), &want);
    recs[3333].id = 7;
    let file = w2_file(&recs, false);
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
    let file = w2_file(&recs, false);
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

// ---------------------------------------------------------------------------------------------
// 4. Borrowing
// ---------------------------------------------------------------------------------------------

#[test]
fn borrowed_strings_from_slices_and_maps() {
    let dir = TempDir::new("read-vec-borrow");
    // Top-level S5 (NumPy's): its fifth value, b"\xff", is not UTF-8.
    let bytes = fixture("S5_1d");
    let want: Vec<&[u8]> = npy_serde::deserialize_slice(&bytes).unwrap();
    assert_eq!(want[2], b"hello");
    let got: Vec<&[u8]> = npy_serde::from_slice_serde(&bytes).unwrap();
    assert_eq!(got, want);
    assert!(got
        .iter()
        .all(|g| bytes.as_ptr_range().contains(&g.as_ptr()) || g.is_empty()));
    let str_err = npy_serde::deserialize_slice::<Vec<&str>>(&bytes).unwrap_err();
    assert_eq!(str_err.position().record, Some(4));
    assert_same_error(
        &npy_serde::from_slice_serde::<&str>(&bytes).unwrap_err(),
        &str_err,
        "S5 as &str",
    );
    let path = dir.join("s5.npy");
    fs::write(&path, &bytes).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.to_vec_serde::<&[u8]>().unwrap(), want);
    assert_same_error(
        &map.to_vec_serde::<&str>().unwrap_err(),
        &str_err,
        "S5 as &str (mmap)",
    );
    // Owned strings from a reader: the same error.
    let owned = npy_serde::from_reader_serde::<_, String>(Trickle {
        data: &bytes,
        step: 7,
    });
    assert_same_error(&owned.unwrap_err(), &str_err, "S5 as String (reader)");
    // The legacy `|a5` fixture is all ASCII.
    let bytes = fixture("custom_legacy_a5");
    let want: Vec<&str> = npy_serde::deserialize_slice(&bytes).unwrap();
    assert_eq!(want, ["ab", "hello"]);
    assert_eq!(npy_serde::from_slice_serde::<&str>(&bytes).unwrap(), want);

    // A record with a borrowed `&str` field, in file order (the fast tier misses on it).
    #[derive(Deserialize, Debug, PartialEq)]
    struct Names<'a> {
        name: &'a str,
        label: String,
        n: i16,
    }
    let bytes = fixture("rec_str_unicode");
    let want: Vec<Names> = npy_serde::deserialize_slice(&bytes).unwrap();
    let got: Vec<Names> = npy_serde::from_slice_serde(&bytes).unwrap();
    assert_eq!(got, want);
    assert_eq!(got[0].name, "alpha");
    let path = dir.join("names.npy");
    fs::write(&path, &bytes).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.to_vec_serde::<Names>().unwrap(), want);

    // Many borrowed strings in one run: every one points at its own element.
    let mut data = Vec::new();
    let words: Vec<String> = (0..4000).map(|i| format!("w{i}")).collect();
    for w in &words {
        let mut b = w.as_bytes().to_vec();
        b.resize(8, 0);
        data.extend(b);
    }
    let file = npy("|S8", &[4000], false, &data);
    let got: Vec<&str> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, words);
    for (g, w) in got.iter().zip(&data.chunks(8).collect::<Vec<_>>()) {
        // Borrowed from the input (not copied).
        let inside = file.as_ptr_range().contains(&g.as_ptr());
        assert!(inside && w.starts_with(g.as_bytes()), "{g:?}");
    }
}

/// A record `[('n', 'u1'), ('s', 'S4')]` read with a visitor that only reads `s` (borrowed)
/// when `n` is 0: elements with `n != 0` pass the fast tier, the first `n == 0` misses there
/// (in the middle of a run), and the general path must borrow from that same element onwards.
#[derive(Debug, PartialEq)]
enum Item<'a> {
    Num(u8),
    Str(&'a str),
}

impl<'de: 'a, 'a> Deserialize<'de> for Item<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Item<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an (n, s) record")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Item<'de>, A::Error> {
                let n: u8 = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(0, &self))?;
                if n != 0 {
                    // `s` is skipped (a visitor that stopped here would be read by name from
                    // the first element on: see `read.rs`).
                    seq.next_element::<IgnoredAny>()?;
                    return Ok(Item::Num(n));
                }
                let s: &'de str = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(1, &self))?;
                Ok(Item::Str(s))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Item<'de>, A::Error> {
                let mut n = None;
                let mut s = None;
                // Owned keys: field names come from the header, not from the data.
                while let Some(k) = map.next_key::<String>()? {
                    match k.as_str() {
                        "n" => n = Some(map.next_value::<u8>()?),
                        "s" => s = Some(map.next_value::<&'de str>()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                match (n, s) {
                    (Some(0), Some(s)) => Ok(Item::Str(s)),
                    (Some(n), _) => Ok(Item::Num(n)),
                    _ => Err(serde::de::Error::missing_field("n")),
                }
            }
        }
        d.deserialize_struct("Item", &["n", "s"], V)
    }
}

#[test]
fn borrowing_after_a_mid_run_miss() {
    let n = 3000usize;
    let mut data = Vec::new();
    let mut want = Vec::new();
    let mut strs = Vec::new();
    for i in 0..n {
        let s = format!("{:04}", i % 10_000);
        strs.push(s);
    }
    for (i, s) in strs.iter().enumerate() {
        let num = if i >= 1234 && i % 3 == 0 {
            0
        } else {
            (i % 200) as u8 + 1
        };
        data.push(num);
        data.extend_from_slice(s.as_bytes());
        want.push(if num == 0 {
            Item::Str(s)
        } else {
            Item::Num(num)
        });
    }
    let file = npy("[('n','u1'),('s','S4')]", &[n as u64], false, &data);
    let reference: Vec<Item> = npy_serde::deserialize_slice(&file).unwrap();
    assert_eq!(reference, want);
    let got: Vec<Item> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(got, want);
    let dir = TempDir::new("read-vec-borrow-mid");
    let path = dir.join("items.npy");
    fs::write(&path, &file).unwrap();
    let map = MmapArray::open(&path).unwrap();
    assert_eq!(map.to_vec_serde::<Item>().unwrap(), want);
}

// ---------------------------------------------------------------------------------------------
// 5. Arrays back to back
// ---------------------------------------------------------------------------------------------

#[test]
fn back_to_back_arrays_read_in_turn() {
    let recs = w2_records(9_000); // ~290 KiB: more than one block
    let floats: Vec<f64> = (0..40_000).map(|i| i as f64 / 3.0).collect();
    let fdata: Vec<u8> = floats.iter().flat_map(|f| f.to_be_bytes()).collect();
    let mut stream = w2_file(&recs, false);
    stream.extend(npy(">f8", &[200, 200], false, &fdata));
    stream.extend(npy("|S3", &[2], false, b"abcde\0"));
    stream.extend(w2_file(&recs[..10], true));
    stream.extend(npy("<i4", &[], false, &(-5i32).to_le_bytes()));

    let check = |r: &mut dyn Read, how: &str| {
        let a: Vec<W2> = npy_serde::from_reader_serde(&mut *r).unwrap();
        assert_eq!(a, recs, "{how}");
        let b: Vec<f64> = npy_serde::from_reader_serde(&mut *r).unwrap();
        assert_eq!(b, floats, "{how}");
        let c: Vec<String> = npy_serde::from_reader_serde(&mut *r).unwrap();
        assert_eq!(c, ["abc", "de"], "{how}");
        // A by-name struct (general path from the first element).
        let d: Vec<Subset> = npy_serde::from_reader_serde(&mut *r).unwrap();
        assert_eq!(d.len(), 10, "{how}");
        assert_eq!((d[9].flag, d[9].x), (recs[9].flag, recs[9].x), "{how}");
        let e: Vec<i64> = npy_serde::from_reader_serde(&mut *r).unwrap();
        assert_eq!(e, [-5], "{how}");
        let end: Result<Vec<i64>, _> = npy_serde::from_reader_serde(&mut *r);
        assert_eq!(end.unwrap_err().kind().code(), "unexpected_eof", "{how}");
    };
    let mut cur = Cursor::new(&stream);
    check(&mut cur, "Cursor");
    assert_eq!(cur.position(), stream.len() as u64);
    for step in [1, 7, 100, 65_537] {
        let mut t = Trickle {
            data: &stream,
            step,
        };
        check(&mut t, &format!("Trickle {step}"));
        assert!(t.data.is_empty());
    }
    // Mixed with the nested reader: each leaves the stream just after its array.
    let mut cur = Cursor::new(&stream);
    let a: Vec<W2> = npy_serde::deserialize_reader(&mut cur).unwrap();
    assert_eq!(a, recs);
    let b: Vec<f64> = npy_serde::from_reader_serde(&mut cur).unwrap();
    assert_eq!(b, floats);
    let c: Vec<Vec<u8>> = npy_serde::deserialize_reader(&mut cur).unwrap();
    assert_eq!(c, [b"abc".to_vec(), b"de".to_vec()]);
    // A Vec of ignored elements still leaves the stream after the array.
    let d: Vec<IgnoredAny> = npy_serde::from_reader_serde(&mut cur).unwrap();
    assert_eq!(d.len(), 10);
    let e: i32 = npy_serde::deserialize_reader(&mut cur).unwrap();
    assert_eq!(e, -5);
}

// ---------------------------------------------------------------------------------------------
// 6. Hostile input and limits
// ---------------------------------------------------------------------------------------------

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
                .map(|(how, r)| (how, r.map(|v| vec![Value::UInt(v.len() as u64)]))),
        );
        for (how, r) in results {
            let err = r.unwrap_err();
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

#[test]
fn fortran_order_comes_out_in_c_order() {
    let dir = TempDir::new("read-vec-fortran");
    let path = dir.join("f.npy");
    // (rows, cols) = (3, 4), value = 10 * row + col; Fortran storage is column by column.
    let (rows, cols) = (3u64, 4u64);
    let mut fdata = Vec::new();
    for c in 0..cols {
        for r in 0..rows {
            fdata.extend_from_slice(&((10 * r + c) as i32).to_be_bytes());
        }
    }
    let file = npy(">i4", &[rows, cols], true, &fdata);
    let want: Vec<i32> = (0..rows)
        .flat_map(|r| (0..cols).map(move |c| (10 * r + c) as i32))
        .collect();
    let nested: Vec<Vec<i32>> = npy_serde::deserialize_slice(&file).unwrap();
    assert_eq!(nested.concat(), want);
    assert_all_eq(vec_all::<i32>(&file, &path), &want);
    assert_all_eq(
        vec_all::<i64>(&file, &path),
        &want.iter().map(|&v| i64::from(v)).collect::<Vec<_>>(),
    );

    // Fixtures written by NumPy.
    let f: Vec<f64> = npy_serde::from_slice_serde(&fixture("f8_le_2x3_fortran")).unwrap();
    assert_eq!(f, [0.0, 1.5, 3.0, 4.5, 6.0, 7.5]);
    let u: Vec<String> = npy_serde::from_reader_serde(Trickle {
        data: &fixture("U3_le_2x2_fortran"),
        step: 7,
    })
    .unwrap();
    assert_eq!(u, ["a", "bc", "déf", "\u{1F600}"]);
    let b = fixture("u1_2x3x2_fortran");
    let nested: Vec<Vec<Vec<u8>>> = npy_serde::deserialize_slice(&b).unwrap();
    assert_eq!(
        npy_serde::from_slice_serde::<u8>(&b).unwrap(),
        nested.concat().concat()
    );

    // W2 records in Fortran order (40 x 50), both byte orders, fast and general paths, and a
    // miss in the middle (reported with the C-order record index).
    let recs = w2_records(2000);
    for big in [false, true] {
        let mut storage = Vec::new();
        for c in 0..50 {
            for r in 0..40 {
                storage.push(recs[r * 50 + c]);
            }
        }
        let dtype: DType = w2_descr(big).parse().unwrap();
        let mut h = Header::new(dtype, vec![40, 50]);
        h.fortran_order = true;
        let mut file = h.to_bytes().unwrap();
        file.extend(w2_data(&storage, big));
        let nested: Vec<Vec<W2>> = npy_serde::deserialize_slice(&file).unwrap();
        assert_eq!(nested.concat(), recs);
        assert_all_eq(vec_all::<W2>(&file, &path), &recs);
        let subset: Vec<Subset> = recs
            .iter()
            .map(|r| Subset {
                flag: r.flag,
                x: r.x,
            })
            .collect();
        assert_all_eq(vec_all::<Subset>(&file, &path), &subset);

        // Zero flag at C index 1234 (row 24, col 34).
        let mut bad = storage.clone();
        let at = 34 * 40 + 24;
        assert_eq!(bad[at].id, recs[1234].id);
        bad[at].flag = 0;
        let mut file = h.to_bytes().unwrap();
        file.extend(w2_data(&bad, big));
        let nested = npy_serde::deserialize_slice::<Vec<Vec<NzFlag>>>(&file).unwrap_err();
        assert_eq!(nested.position().record, Some(1234), "{nested}");
        for (how, r) in vec_all::<NzFlag>(&file, &path) {
            let e = r.unwrap_err();
            assert_eq!(e.kind().code(), nested.kind().code(), "{how}: {e}");
            assert_eq!(e.position(), nested.position(), "{how}: {e}");
        }
    }
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
    let file = w2_file(&recs, false);
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
    let mut file = w2_file(&recs, false);
    file.truncate(file.len() - 40);
    let want = npy_serde::deserialize_slice::<Vec<W2>>(&file).unwrap_err();
    assert_eq!(want.kind().code(), "unexpected_eof");
    assert_same_error(
        &npy_serde::from_slice_serde::<W2>(&file).unwrap_err(),
        &want,
        "slice",
    );
    for (how, r) in vec_all::<W2>(&file, &path) {
        let e = r.unwrap_err();
        assert_eq!(e.kind().code(), "unexpected_eof", "{how}: {e}");
        assert!(
            e.to_string().contains("needed 33000 bytes") && e.to_string().contains("found 32960"),
            "{how}: {e}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Scalar arrays
// ---------------------------------------------------------------------------------------------

macro_rules! scalar_case {
    ($dir:expr, $t:ty, $code:literal, $vals:expr) => {{
        let vals: Vec<$t> = $vals;
        let n = vals.len() as u64;
        let le: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let be: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
        for (descr, data) in [(concat!("<", $code), le), (concat!(">", $code), be)] {
            let file = npy(descr, &[n], false, &data);
            let reference: Vec<$t> = npy_serde::deserialize_slice(&file).unwrap();
            assert_eq!(reference, vals, "{descr}");
            let path = $dir.join(concat!($code, ".npy"));
            let results = vec_all::<$t>(&file, &path)
                .into_iter()
                .map(|(how, r)| (format!("{descr}: {how}"), r))
                .collect();
            assert_all_eq(results, &vals);
        }
    }};
}

#[test]
fn scalar_arrays_equal_from_slice() {
    let dir = TempDir::new("read-vec-scalars");
    let n: u32 = 20_000;
    scalar_case!(
        dir,
        f64,
        "f8",
        (0..n).map(|i| (i as f64 - 7.0) / 3.0).collect()
    );
    scalar_case!(dir, f32, "f4", (0..n).map(|i| i as f32 * -0.75).collect());
    scalar_case!(
        dir,
        i32,
        "i4",
        (0..n).map(|i| (i as i32 - 10_000) * 104_729).collect()
    );
    scalar_case!(
        dir,
        i64,
        "i8",
        (0..n).map(|i| (i as i64) << 40 | i as i64).collect()
    );
    scalar_case!(dir, u16, "u2", (0..n).map(|i| (i * 3) as u16).collect());
    scalar_case!(
        dir,
        u64,
        "u8",
        (0..n).map(|i| u64::MAX - i as u64).collect()
    );
    scalar_case!(dir, i16, "i2", (0..n).map(|i| i as i16 ^ 0x5555).collect());
    scalar_case!(dir, i8, "i1", (0..n).map(|i| i as i8).collect());

    // NaN payloads and signed zeros survive (compared by bits).
    let specials = [
        f64::NAN,
        -f64::NAN,
        -0.0,
        f64::INFINITY,
        f64::from_bits(0x7ff0_0000_dead_beef),
        5e-324,
    ];
    for big in [false, true] {
        let data: Vec<u8> = specials
            .iter()
            .flat_map(|v| {
                if big {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                }
            })
            .collect();
        let file = npy(if big { ">f8" } else { "<f8" }, &[6], false, &data);
        let got: Vec<f64> = npy_serde::from_reader_serde(Trickle {
            data: &file,
            step: 7,
        })
        .unwrap();
        let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&specials));
        assert_eq!(
            bits(&npy_serde::from_slice_serde::<f64>(&file).unwrap()),
            bits(&specials)
        );
    }
}

#[test]
fn widened_scalars_equal_from_slice() {
    let dir = TempDir::new("read-vec-widen");
    let path = dir.join("f.npy");
    let ints: Vec<i32> = (0..5000).map(|i| (i - 2500) * 858_993).collect();
    let file = npy(
        ">i4",
        &[5000],
        false,
        &ints
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect::<Vec<_>>(),
    );
    let want: Vec<i64> = ints.iter().map(|&v| v.into()).collect();
    assert_eq!(
        npy_serde::deserialize_slice::<Vec<i64>>(&file).unwrap(),
        want
    );
    assert_all_eq(vec_all::<i64>(&file, &path), &want);
    let want: Vec<f64> = ints.iter().map(|&v| v.into()).collect();
    assert_all_eq(vec_all::<f64>(&file, &path), &want);
    let want: Vec<i128> = ints.iter().map(|&v| v.into()).collect();
    assert_all_eq(vec_all::<i128>(&file, &path), &want);
    let floats: Vec<f32> = (0..5000).map(|i| i as f32 / 7.0).collect();
    let file = npy(
        "<f4",
        &[5000],
        false,
        &floats
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    );
    let want: Vec<f64> = floats.iter().map(|&v| v.into()).collect();
    assert_all_eq(vec_all::<f64>(&file, &path), &want);
    let bytes: Vec<u8> = (0..5000).map(|i| (i % 256) as u8).collect();
    let file = npy("|u1", &[5000], false, &bytes);
    let want: Vec<u16> = bytes.iter().map(|&v| v.into()).collect();
    assert_all_eq(vec_all::<u16>(&file, &path), &want);
    let want: Vec<Option<u8>> = bytes.iter().map(|&v| Some(v)).collect();
    assert_all_eq(vec_all::<Option<u8>>(&file, &path), &want);
}

#[test]
fn lossy_scalar_requests_fail_like_from_slice() {
    let dir = TempDir::new("read-vec-lossy");
    let path = dir.join("f.npy");
    let f8: Vec<u8> = (0..3000)
        .flat_map(|i| (i as f64 * 0.1).to_le_bytes())
        .collect();
    let file = npy("<f8", &[3000], false, &f8);
    let want = npy_serde::deserialize_slice::<Vec<f32>>(&file).unwrap_err();
    assert_eq!(want.kind().code(), "type_mismatch");
    assert_eq!(want.position().record, Some(0));
    assert_eq!(want.position().byte, Some(data_offset(&file)));
    assert!(
        want.to_string().contains("<f8") && want.to_string().contains("f32"),
        "{want}"
    );
    assert_all_err(vec_all::<f32>(&file, &path), &want);
    let want = npy_serde::deserialize_slice::<Vec<i64>>(&file).unwrap_err();
    assert_all_err(vec_all::<i64>(&file, &path), &want);

    let i8_be: Vec<u8> = (0..3000i64).flat_map(|i| i.to_be_bytes()).collect();
    let file = npy(">i8", &[3000], false, &i8_be);
    for want in [
        npy_serde::deserialize_slice::<Vec<f64>>(&file)
            .map(|_| ())
            .unwrap_err(),
        npy_serde::deserialize_slice::<Vec<i32>>(&file)
            .map(|_| ())
            .unwrap_err(),
        npy_serde::deserialize_slice::<Vec<u64>>(&file)
            .map(|_| ())
            .unwrap_err(),
    ] {
        assert_eq!(want.kind().code(), "type_mismatch");
    }
    assert_all_err(
        vec_all::<f64>(&file, &path),
        &npy_serde::deserialize_slice::<Vec<f64>>(&file).unwrap_err(),
    );
    assert_all_err(
        vec_all::<i32>(&file, &path),
        &npy_serde::deserialize_slice::<Vec<i32>>(&file).unwrap_err(),
    );
    assert_all_err(
        vec_all::<u64>(&file, &path),
        &npy_serde::deserialize_slice::<Vec<u64>>(&file).unwrap_err(),
    );
    // Invalid bool bytes in the middle: same error (record and byte) everywhere.
    let mut b1: Vec<u8> = (0..5000).map(|i| (i % 2) as u8).collect();
    b1[3210] = 7;
    let file = npy("|b1", &[5000], false, &b1);
    let want = npy_serde::deserialize_slice::<Vec<bool>>(&file).unwrap_err();
    assert_eq!(want.kind().code(), "invalid_value");
    assert_eq!(want.position().record, Some(3210));
    assert_all_err(vec_all::<bool>(&file, &path), &want);
}

/// Fortran-order arrays go element by element (a walk, not runs): an error raised by the
/// element's own conversion still names the element, by its C-order index, from every entry
/// point; and the nested reader names the same one.
#[test]
fn fortran_conversion_errors_name_the_c_order_element() {
    // 3 x 4, stored column by column: storage position of C index i*4+j is j*3+i.
    let mut data = vec![1u8; 12];
    let (i, j) = (2usize, 1usize); // C index 9
    data[j * 3 + i] = 42;
    let file = npy("|u1", &[3, 4], true, &data);
    let want_record = Some(9);
    let slice = npy_serde::from_slice_serde::<Not42>(&file).unwrap_err();
    assert_eq!(slice.position().record, want_record, "{slice}");
    let reader = npy_serde::from_reader_serde::<_, Not42>(Cursor::new(&file)).unwrap_err();
    assert_eq!(reader.position().record, want_record, "{reader}");
    let nested = npy_serde::deserialize_slice::<Vec<Vec<Not42>>>(&file).unwrap_err();
    assert_eq!(nested.position().record, want_record, "{nested}");
    assert_eq!(slice.kind().code(), nested.kind().code());
}
