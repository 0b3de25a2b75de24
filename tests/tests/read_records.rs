//! `from_slice`, `from_reader`, `from_path`, their `ReaderBuilder`
//! variants and `MmapArray::to_vec`: every element of the array, flattened in logical C
//! order, into a `Vec<T>` for a `T: Deserialize + NpyRecord`.
//!
//! Their contract is that of the matching `from_*_serde` entry point (same values, same errors:
//! kind code, message and position), only faster: when the file's element layout is
//! `T::LAYOUT` (or `T::LAYOUT` byte-swapped throughout) and serde's field list is the file's
//! field names in order, elements go through the exact tier (`npy-serde/src/read/exact.rs`); any
//! request that does not match its layout is a miss, and that element and the rest of the array
//! continue on the other tiers.
//!
//! Every check here runs each `from_*` entry point next to its `from_*_serde` counterpart
//! (see [`same`]) on files written by `npy_serde::to_vec`, built from a [`Header`] and raw
//! bytes, or written by NumPy (the fixtures), and checks the values themselves too. `npy_serde::tier::take`
//! (feature `tier-hook`) counts the elements the exact tier decoded, to check that it engages where it should (and
//! where a miss happens).

use std::fmt::{self, Debug};
use std::fs;
use std::io::{Cursor, Read};
use std::path::Path;

use npy_serde::header::{parse_header, Limits};
use npy_serde::{tier, DType, MmapArray, NpyRecord, ReaderBuilder};
use npy_serde_tests::{entries, entry_path, fixture, npy, Logged, TempDir, Trickle, W2};
use serde::de::{self, DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A version 1.0 file with the header dict `dict` as given (the writer refuses some dtypes that
/// a file may still hold), then `data`.
fn raw_npy(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    let len = (dict.len() + 1 + 10).next_multiple_of(64) - 10;
    file.extend_from_slice(&(len as u16).to_le_bytes());
    file.extend_from_slice(dict.as_bytes());
    file.resize(10 + len - 1, b' ');
    file.push(b'\n');
    file.extend_from_slice(data);
    file
}

/// The offset of the first data byte of a whole file.
fn data_offset(file: &[u8]) -> usize {
    parse_header(file, &Limits::default()).unwrap().data_offset as usize
}

/// The `descr` of a whole file's dtype.
fn descr_of(file: &[u8]) -> String {
    parse_header(file, &Limits::default())
        .unwrap()
        .header
        .dtype
        .descr()
}

/// What every entry point returns.
type Got<T> = npy_serde::Result<Vec<T>>;

/// How the values `got` differ from `want`, if they do: element by element, the first 64 by
/// their `Debug` text (so that NaNs match and `-0.0` differs from `0.0`), the others (for speed
/// in debug builds) by `PartialEq`, then by `Debug`.
fn values_differ<T: PartialEq + Debug>(got: &[T], want: &[T]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} elements, want {}", got.len(), want.len()));
    }
    let dbg = |a: &T, b: &T| format!("{a:?}") == format!("{b:?}");
    let i = (0..want.len()).find(|&i| {
        let same = if i < 64 {
            dbg(&got[i], &want[i])
        } else {
            got[i] == want[i] || dbg(&got[i], &want[i])
        };
        !same
    })?;
    Some(format!("element {i}: got {:?}, want {:?}", got[i], want[i]))
}

/// How `got` differs from `want`, if it does: values as [`values_differ`], errors by kind code,
/// message and position.
fn differs<T: PartialEq + Debug>(got: &Got<T>, want: &Got<T>) -> Option<String> {
    match (got, want) {
        (Ok(g), Ok(w)) => values_differ(g, w),
        (Err(g), Err(w)) => {
            let (gt, wt) = (
                format!("[{}] {} / {:?}", g.kind().code(), g, g.position()),
                format!("[{}] {} / {:?}", w.kind().code(), w, w.position()),
            );
            (gt != wt).then(|| format!("error\n  got: {gt}\n want: {wt}"))
        }
        (Ok(g), Err(w)) => Some(format!(
            "Ok ({} elements), want the error [{}] {w}",
            g.len(),
            w.kind().code()
        )),
        (Err(g), Ok(w)) => Some(format!(
            "error [{}] {g}, want Ok ({} elements)",
            g.kind().code(),
            w.len()
        )),
    }
}

/// Which entry points [`compare_all`] runs, besides `from_slice` and
/// `from_reader(Cursor)` of `rb`.
struct Entries<'a> {
    rb: &'a ReaderBuilder,
    /// The free functions and `MmapArray::open` too (`rb` must be the default).
    free: bool,
    /// `from_reader` over a [`Trickle`] of each of these steps.
    steps: &'a [usize],
    /// `from_path` and `MmapArray::to_vec` on this file (holding the same bytes).
    path: Option<&'a Path>,
}

/// Every entry point `e` names on `file`, each `from_*` next to its `from_*_serde`
/// counterpart on the same input.
///
/// Panics unless every `from_*` outcome is its counterpart's (values, or error kind,
/// message and position), and, when `from_slice_serde` succeeds, unless every outcome is its
/// values. Returns `from_slice_serde`'s outcome, for the caller to check against the expected
/// values or error.
fn compare_all<T>(e: &Entries, file: &[u8]) -> Got<T>
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    let rb = e.rb;
    let want: Got<T> = rb.from_slice_serde(file);
    let mut failures = Vec::new();
    let mut check = |how: &str, records: Got<T>, vec: &Got<T>| {
        if let Some(d) = differs(&records, vec) {
            failures.push(format!("{how}: records_from vs vec_from: {d}"));
        }
        if want.is_ok() {
            if let Some(d) = differs(&records, &want) {
                failures.push(format!("{how}: vs from_slice_serde: {d}"));
            }
        }
    };
    check("from_slice", rb.from_slice(file), &want);
    let cursor = rb.from_reader_serde(Cursor::new(file));
    check(
        "from_reader(Cursor)",
        rb.from_reader(Cursor::new(file)),
        &cursor,
    );
    for &step in e.steps {
        check(
            &format!("from_reader(Trickle {step})"),
            rb.from_reader(Trickle { data: file, step }),
            &rb.from_reader_serde(Trickle { data: file, step }),
        );
    }
    let mut by_path = None;
    if let Some(path) = e.path {
        let vec = rb.from_path_serde(path);
        check("from_path", rb.from_path(path), &vec);
        // A file that cannot be mapped fails `to_vec` and `to_vec` alike, before either.
        let mapped = MmapArray::open_with(path, rb).ok().map(|map| {
            let vec = map.to_vec_serde();
            check("MmapArray::to_vec", map.to_vec(), &vec);
            vec
        });
        by_path = Some((path, vec, mapped));
    }
    if e.free {
        check("npy_serde::from_slice", npy_serde::from_slice(file), &want);
        check(
            "npy_serde::from_reader(Cursor)",
            npy_serde::from_reader(Cursor::new(file)),
            &cursor,
        );
        if let Some((path, vec, mapped)) = &by_path {
            check("npy_serde::from_path", npy_serde::from_path(path), vec);
            if let (Ok(map), Some(vec)) = (MmapArray::open(path), mapped) {
                check("MmapArray::open + to_vec", map.to_vec(), vec);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures ({}):\n{}",
        failures.len(),
        std::any::type_name::<T>(),
        failures.join("\n")
    );
    want
}

/// Trickle steps for a whole file: one byte at a time and odd sizes for small files, a few
/// pages for large ones (where runs of whole elements still end at odd places).
fn steps_for(file: &[u8]) -> &'static [usize] {
    if file.len() <= 1 << 14 {
        &[1, 33]
    } else {
        &[7, 4097]
    }
}

/// [`compare_all`] with every entry point of the default options, `file` written to `dir`.
fn same<T>(dir: &TempDir, file: &[u8]) -> Got<T>
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    let path = dir.join("records.npy");
    fs::write(&path, file).unwrap();
    let rb = ReaderBuilder::new();
    let e = Entries {
        rb: &rb,
        free: true,
        steps: steps_for(file),
        path: Some(&path),
    };
    compare_all(&e, file)
}

/// [`compare_all`] with every entry point of `rb` (not the free functions).
fn same_with<T>(rb: &ReaderBuilder, dir: &TempDir, file: &[u8]) -> Got<T>
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    let path = dir.join("records.npy");
    fs::write(&path, file).unwrap();
    let e = Entries {
        rb,
        free: false,
        steps: steps_for(file),
        path: Some(&path),
    };
    compare_all(&e, file)
}

/// [`same`], and the values must be `want`.
fn same_ok<T>(dir: &TempDir, file: &[u8], want: &[T])
where
    T: DeserializeOwned + NpyRecord + Send + PartialEq + Debug,
{
    let got = same::<T>(dir, file).unwrap_or_else(|e| panic!("from_slice_serde: {e}"));
    if let Some(d) = values_differ(&got, want) {
        panic!("{}: {d}", std::any::type_name::<T>());
    }
}

// ---------------------------------------------------------------------------------------------
// Seeing the exact tier
// ---------------------------------------------------------------------------------------------

/// `from_slice::<T>` on `file`: the values and how many elements the exact tier
/// decoded (counted by the library's `tier-hook`).
fn exact_count<T>(file: &[u8]) -> (Vec<T>, usize)
where
    T: DeserializeOwned + NpyRecord + Send,
{
    tier::take();
    let got: Vec<T> = npy_serde::from_slice(file).unwrap();
    (got, tier::take().exact as usize)
}

// ---------------------------------------------------------------------------------------------
// W2 records
// ---------------------------------------------------------------------------------------------

/// W2 (`tests/src/lib.rs`) with every multi-byte field big-endian.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
#[npy(byte_order = "big")]
struct W2Be {
    id: i64,
    x: f64,
    y: f32,
    flag: u8,
    v: [f32; 3],
}

impl From<W2> for W2Be {
    fn from(r: W2) -> W2Be {
        W2Be {
            id: r.id,
            x: r.x,
            y: r.y,
            flag: r.flag,
            v: r.v,
        }
    }
}

/// `n` distinct W2 records (no NaN, so that `PartialEq` compares them), with a few extremes.
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

/// `recs` written by `npy_serde::to_vec`, little-endian (W2 as derived) or big-endian (W2Be).
fn w2_file(recs: &[W2], big: bool) -> Vec<u8> {
    if big {
        let be: Vec<W2Be> = recs.iter().map(|&r| r.into()).collect();
        npy_serde::to_vec(&be).unwrap()
    } else {
        npy_serde::to_vec(recs).unwrap()
    }
}

#[test]
fn w2_written_by_to_vec_both_byte_orders() {
    let dir = TempDir::new("read-records-w2");
    let recs = w2_records(700);
    for big in [false, true] {
        let file = w2_file(&recs, big);
        let order = if big { '>' } else { '<' };
        assert_eq!(
            descr_of(&file),
            format!(
                "[('id', '{order}i8'), ('x', '{order}f8'), ('y', '{order}f4'), ('flag', '|u1'), \
                 ('v', '{order}f4', (3,))]"
            )
        );
        // Into the native-order struct and into the big-endian one: the same values.
        same_ok::<W2>(&dir, &file, &recs);
        let be: Vec<W2Be> = recs.iter().map(|&r| r.into()).collect();
        same_ok::<W2Be>(&dir, &file, &be);
        // The exact tier decodes every record, whichever the byte orders.
        let (got, n) = exact_count::<W2>(&file);
        assert_eq!((got, n), (recs.clone(), recs.len()), "big {big}");
        let (got, n) = exact_count::<W2Be>(&file);
        assert_eq!((got, n), (be, recs.len()), "big {big}");
        // The nested reader agrees.
        assert_eq!(
            npy_serde::deserialize_slice::<Vec<W2>>(&file).unwrap(),
            recs
        );
    }
}

#[test]
fn w2_many_records_span_reader_blocks() {
    let dir = TempDir::new("read-records-w2-many");
    let recs = w2_records(16_500); // 544.5 KB: three 256 KiB blocks of a reader
    let path = dir.join("many.npy");
    for big in [false, true] {
        let file = w2_file(&recs, big);
        fs::write(&path, &file).unwrap();
        // (`from_*_serde` gives these values too: see read_vec.rs.) Both byte orders from a
        // Cursor and a Trickle; little-endian through every entry point.
        let mut all: Vec<(&str, Got<W2>)> = vec![
            ("Cursor", npy_serde::from_reader(Cursor::new(&file))),
            (
                "Trickle 65537",
                npy_serde::from_reader(Trickle {
                    data: &file,
                    step: 65_537,
                }),
            ),
        ];
        if !big {
            all.push(("slice", npy_serde::from_slice(&file)));
            all.push(("path", npy_serde::from_path(&path)));
            let map = MmapArray::open(&path).unwrap();
            all.push(("map", map.to_vec()));
        }
        for (how, got) in all {
            let got = got.unwrap_or_else(|e| panic!("{how}, big {big}: {e}"));
            assert_eq!(values_differ(&got, &recs), None, "{how}, big {big}");
        }
        assert_eq!(exact_count::<W2>(&file).1, recs.len());
    }
}

#[test]
fn w2_fixtures_written_by_numpy() {
    let dir = TempDir::new("read-records-w2-fixtures");
    for name in ["rec_w2_le", "rec_w2_be", "rec_w2_2x3", "rec_w2_0d"] {
        let file = fixture(name);
        // They hold a NaN: `same` compares these small arrays by their Debug text.
        let got = same::<W2>(&dir, &file).unwrap();
        let nested: Vec<W2> = match name {
            "rec_w2_2x3" => npy_serde::deserialize_slice::<Vec<Vec<W2>>>(&file)
                .unwrap()
                .concat(),
            "rec_w2_0d" => vec![npy_serde::deserialize_slice::<W2>(&file).unwrap()],
            _ => npy_serde::deserialize_slice(&file).unwrap(),
        };
        assert_eq!(format!("{got:?}"), format!("{nested:?}"), "{name}");
        // The manifest's second record (the 0-d fixture holds only that one).
        let second = got[got.len().min(2) - 1];
        assert_eq!(second.id, -2, "{name}");
        assert_eq!(second.v, [-0.25, 0.0, 0.25], "{name}");
        let (_, n) = exact_count::<W2>(&file);
        assert_eq!(n, got.len(), "{name}");
    }
    let empty = same::<W2>(&dir, &fixture("rec_w2_empty")).unwrap();
    assert!(empty.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Misses in the middle of the array
// ---------------------------------------------------------------------------------------------

/// 13-byte records with a bool: `[('id', '<u4'), ('ok', '|b1'), ('x', '<f8')]`.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Flagged {
    id: u32,
    ok: bool,
    x: f64,
}

#[derive(Serialize, NpyRecord)]
#[npy(byte_order = "big")]
struct FlaggedBe {
    id: u32,
    ok: bool,
    x: f64,
}

fn flagged(n: usize) -> Vec<Flagged> {
    (0..n)
        .map(|i| Flagged {
            id: i as u32 * 7,
            ok: i % 3 == 0,
            x: i as f64 / 8.0 - 3.0,
        })
        .collect()
}

fn flagged_be(recs: &[Flagged]) -> Vec<u8> {
    let be: Vec<FlaggedBe> = recs
        .iter()
        .map(|r| FlaggedBe {
            id: r.id,
            ok: r.ok,
            x: r.x,
        })
        .collect();
    npy_serde::to_vec(&be).unwrap()
}

/// `file` with the `ok` byte of record `k` set to 2, and the error every entry point gives
/// (through `run`): an invalid bool at record `k`, field `ok`, its byte; the exact tier decodes
/// the records before it and misses there.
fn bad_bool_at(file: &[u8], k: usize, run: impl FnOnce(&[u8]) -> Got<Flagged>) {
    let file = bad_bool_checked(file, k, run);
    tier::take();
    let probed = npy_serde::from_slice::<Flagged>(&file).unwrap_err();
    assert_eq!(
        tier::take().exact as usize,
        k,
        "{k}: exact-tier records before the miss"
    );
    assert_eq!(probed.position().record, Some(k as u64));
}

/// [`bad_bool_at`] without the count of exact-tier records; returns the bad file.
fn bad_bool_checked(file: &[u8], k: usize, run: impl FnOnce(&[u8]) -> Got<Flagged>) -> Vec<u8> {
    let mut file = file.to_vec();
    let at = data_offset(&file) + k * 13 + 4;
    assert!(file[at] <= 1);
    file[at] = 2;
    let err = run(&file).unwrap_err();
    assert_eq!(err.kind().code(), "invalid_value", "{k}: {err}");
    assert_eq!(err.position().record, Some(k as u64), "{k}: {err}");
    assert_eq!(err.position().field.as_deref(), Some("ok"), "{k}: {err}");
    assert_eq!(err.position().byte, Some(at as u64), "{k}: {err}");
    file
}

#[test]
fn invalid_bool_mid_array_same_error() {
    let dir = TempDir::new("read-records-bool");
    let n = 1000;
    let recs = flagged(n);
    let le = npy_serde::to_vec(&recs).unwrap();
    let be = flagged_be(&recs);
    assert_eq!(
        descr_of(&be),
        "[('id', '>u4'), ('ok', '|b1'), ('x', '>f8')]"
    );
    for file in [&le, &be] {
        same_ok::<Flagged>(&dir, file, &recs);
        assert_eq!(exact_count::<Flagged>(file).1, n);
        for k in [0, 1, 2, 499, n - 2, n - 1] {
            bad_bool_at(file, k, |f| same(&dir, f));
        }
    }

    // Around the end of the first 256 KiB block of a reader.
    let n = 21_000; // 273 KB
    let recs = flagged(n);
    // Built from the bytes (quicker than the serializer in debug builds).
    let raw = |big: bool| {
        let o = if big { '>' } else { '<' };
        let mut data = Vec::with_capacity(n * 13);
        for r in &recs {
            if big {
                data.extend(r.id.to_be_bytes());
                data.push(r.ok.into());
                data.extend(r.x.to_be_bytes());
            } else {
                data.extend(r.id.to_le_bytes());
                data.push(r.ok.into());
                data.extend(r.x.to_le_bytes());
            }
        }
        let descr = format!("[('id','{o}u4'),('ok','|b1'),('x','{o}f8')]");
        npy(&descr, &[n as u64], false, &data)
    };
    let (le, be) = (raw(false), raw(true));
    let start = data_offset(&le);
    let boundary = {
        let mut logged = Logged {
            inner: Cursor::new(&le),
            reads: Vec::new(),
        };
        let got: Vec<Flagged> = npy_serde::from_reader(&mut logged).unwrap();
        assert!(got == recs);
        let (_, first) = *logged
            .reads
            .iter()
            .find(|(at, _)| *at >= start as u64)
            .expect("a data read");
        assert!(first < n * 13, "the data came in one read of {first} bytes");
        first / 13
    };
    let cursor = |f: &[u8]| {
        let records = npy_serde::from_reader(Cursor::new(f));
        let vec = npy_serde::from_reader_serde(Cursor::new(f));
        assert_eq!(differs(&records, &vec), None);
        records
    };
    for k in [boundary, boundary + 1] {
        bad_bool_checked(&le, k, cursor);
    }
    bad_bool_checked(&be, boundary, cursor);
}

/// `[('tag', '|u1'), ('val', '<f4')]`, read by a hand-written `Deserialize` that asks for `val`
/// as an `f32`, except: tag 7 asks for an `f64` (a lossless widening: the exact tier misses,
/// the general path reads it), tag 9 for an `i64` (an error on every path).
#[derive(NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Picky {
    tag: u8,
    val: f32,
}

#[derive(Serialize, NpyRecord)]
struct PickyOut {
    tag: u8,
    val: f32,
}

impl<'de> Deserialize<'de> for Picky {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Picky;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a (tag, val) record")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Picky, A::Error> {
                let tag: u8 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let val = match tag {
                    7 => seq.next_element::<f64>()?.map(|v| v as f32),
                    9 => seq.next_element::<i64>()?.map(|v| v as f32),
                    _ => seq.next_element::<f32>()?,
                };
                let val = val.ok_or_else(|| de::Error::invalid_length(1, &self))?;
                Ok(Picky { tag, val })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Picky, A::Error> {
                let mut tag = None;
                let mut val = None;
                while let Some(k) = map.next_key::<String>()? {
                    match (k.as_str(), tag) {
                        ("tag", _) => tag = Some(map.next_value::<u8>()?),
                        ("val", Some(7)) => val = Some(map.next_value::<f64>()? as f32),
                        ("val", Some(9)) => val = Some(map.next_value::<i64>()? as f32),
                        ("val", _) => val = Some(map.next_value::<f32>()?),
                        _ => {
                            map.next_value::<de::IgnoredAny>()?;
                        }
                    }
                }
                let tag = tag.ok_or_else(|| de::Error::missing_field("tag"))?;
                Ok(Picky {
                    tag,
                    val: val.ok_or_else(|| de::Error::missing_field("val"))?,
                })
            }
        }
        d.deserialize_struct("Picky", &["tag", "val"], V)
    }
}

#[test]
fn data_dependent_requests_miss_mid_array() {
    let dir = TempDir::new("read-records-picky");
    let n = 1200usize;
    let tags = |sevens: &[usize], nine: Option<usize>| -> Vec<Picky> {
        (0..n)
            .map(|i| {
                let tag = match (i % 50) as u8 {
                    7 | 9 => 8,
                    t => t,
                };
                let tag = if sevens.contains(&i) {
                    7
                } else if nine == Some(i) {
                    9
                } else {
                    tag
                };
                Picky {
                    tag,
                    val: i as f32 * 0.5 - 100.0,
                }
            })
            .collect()
    };
    let write = |recs: &[Picky]| {
        let out: Vec<PickyOut> = recs
            .iter()
            .map(|r| PickyOut {
                tag: r.tag,
                val: r.val,
            })
            .collect();
        npy_serde::to_vec(&out).unwrap()
    };
    // No 7 or 9: the exact tier reads everything.
    let recs = tags(&[], None);
    let file = write(&recs);
    same_ok::<Picky>(&dir, &file, &recs);
    assert_eq!(exact_count::<Picky>(&file), (recs.clone(), n));
    // A 7 (an f64 request) at record k: values still right after the miss.
    for k in [0, 1, 601, 602, n - 1] {
        let recs = tags(&[k, k + 5, k + 1000], None);
        let file = write(&recs);
        same_ok::<Picky>(&dir, &file, &recs);
        let (got, exact) = exact_count::<Picky>(&file);
        assert_eq!(got, recs, "7 at {k}");
        assert_eq!(exact, k, "7 at {k}: the exact tier stops at the first miss");
    }
    // A 9 (an i64 request over `<f4`) after a 7: the general path's type mismatch, at its
    // record, from every entry point.
    let recs = tags(&[100], Some(1001));
    let file = write(&recs);
    let err = same::<Picky>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "type_mismatch", "{err}");
    assert_eq!(err.position().record, Some(1001), "{err}");
    assert_eq!(err.position().field.as_deref(), Some("val"), "{err}");
}

/// `[('a', '<i4'), ('b', '<f4')]` as written, and structs asking for other types.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Narrow {
    a: i32,
    b: f32,
}

/// Lossless widenings of Narrow: its layout is not the file's.
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct Widened {
    a: i64,
    b: f64,
}

/// Same sizes as Narrow, other kinds: the reader refuses `i4` as `u32` (a type mismatch).
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct SignFlipped {
    a: u32,
    b: f32,
}

#[test]
fn widened_fields_do_not_engage() {
    let dir = TempDir::new("read-records-widen");
    let recs: Vec<Narrow> = (0..800)
        .map(|i| Narrow {
            a: (i - 400) * 5_368_709,
            b: i as f32 / 7.0,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(descr_of(&file), "[('a', '<i4'), ('b', '<f4')]");
    let want: Vec<Widened> = recs
        .iter()
        .map(|r| Widened {
            a: r.a.into(),
            b: r.b.into(),
        })
        .collect();
    same_ok::<Widened>(&dir, &file, &want);
    let (got, n) = exact_count::<Widened>(&file);
    assert_eq!((got, n), (want, 0));
    // The file's own layout engages.
    assert_eq!(exact_count::<Narrow>(&file), (recs.clone(), recs.len()));
    // Same sizes, other kinds: not the file's layout either; the error is vec_from's.
    let want = npy_serde::deserialize_slice::<Vec<SignFlipped>>(&file).unwrap_err();
    let err = same::<SignFlipped>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), want.kind().code(), "{err}");
    assert_eq!(err.position(), want.position(), "{err}");
    assert_eq!(err.position().field.as_deref(), Some("a"), "{err}");
}

/// A whole record with a `try_from` on the element itself: the exact tier decodes the W2, then
/// the conversion fails (a miss there), and the other tiers report the error.
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
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
fn element_conversion_error_mid_array() {
    let dir = TempDir::new("read-records-evenid");
    let mut recs = w2_records(800);
    for r in &mut recs {
        r.id = (r.id / 2) * 2;
    }
    let file = w2_file(&recs, true);
    let want: Vec<EvenId> = recs.iter().map(|&r| EvenId(r)).collect();
    same_ok::<EvenId>(&dir, &file, &want);
    assert_eq!(exact_count::<EvenId>(&file).1, 800);
    recs[333].id = 7;
    for big in [false, true] {
        let file = w2_file(&recs, big);
        let err = same::<EvenId>(&dir, &file).unwrap_err();
        assert_eq!(err.kind().to_string(), "odd id 7");
        assert_eq!(err.position().record, Some(333), "{err}");
    }
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Renamed {
    #[serde(rename = "ID")]
    id: i64,
    #[serde(rename = "pos x")]
    x: f64,
    flag: u8,
}

#[test]
fn serde_rename_engages_and_reads_right() {
    let dir = TempDir::new("read-records-rename");
    let recs: Vec<Renamed> = (0..600)
        .map(|i| Renamed {
            id: i * 31 - 7,
            x: i as f64 * 1.25,
            flag: (i % 200) as u8,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(
        descr_of(&file),
        "[('ID', '<i8'), ('pos x', '<f8'), ('flag', '|u1')]"
    );
    same_ok::<Renamed>(&dir, &file, &recs);
    assert_eq!(exact_count::<Renamed>(&file), (recs, 600));

    // NumPy's fixtures with names that need escaping, and UTF-8 names.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Escaped {
        #[serde(rename = "it's")]
        a: i16,
        #[serde(rename = "a\"b")]
        b: i16,
        #[serde(rename = "line\nbreak")]
        c: i16,
        #[serde(rename = "tab\t")]
        d: i16,
        #[serde(rename = "back\\slash")]
        e: i16,
        #[serde(rename = "é")]
        f: i16,
    }
    let file = fixture("rec_escaped_names");
    let want = [
        Escaped {
            a: 0,
            b: 1,
            c: 2,
            d: 3,
            e: 4,
            f: 5,
        },
        Escaped {
            a: 0,
            b: -1,
            c: -2,
            d: -3,
            e: -4,
            f: -5,
        },
    ];
    same_ok::<Escaped>(&dir, &file, &want);
    assert_eq!(exact_count::<Escaped>(&file).1, 2);

    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Utf8Names {
        #[serde(rename = "π")]
        pi: f64,
        #[serde(rename = "名")]
        name: i32,
        #[serde(rename = "é")]
        e: u8,
    }
    let file = fixture("rec_v3_utf8_names");
    // The fixture's value (not π).
    #[allow(clippy::approx_constant)]
    let want = [
        Utf8Names {
            pi: 3.14159,
            name: 1,
            e: 3,
        },
        Utf8Names {
            pi: -0.0,
            name: 2,
            e: 4,
        },
    ];
    same_ok::<Utf8Names>(&dir, &file, &want);
    assert_eq!(exact_count::<Utf8Names>(&file).1, 2);

    // Titles are not names: `x` and `y` are.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Titled {
        x: f64,
        y: i32,
    }
    let file = fixture("rec_titled");
    let want = [Titled { x: 1.0, y: -1 }, Titled { x: 2.0, y: -2 }];
    same_ok::<Titled>(&dir, &file, &want);
}

#[test]
fn serde_alias_reads_by_name() {
    let dir = TempDir::new("read-records-alias");
    #[derive(Serialize, NpyRecord)]
    struct Old {
        x_old: f64,
        y: f64,
    }
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct New {
        #[serde(alias = "x_old")]
        x: f64,
        y: f64,
    }
    let old: Vec<Old> = (0..600)
        .map(|i| Old {
            x_old: i as f64,
            y: -(i as f64) / 4.0,
        })
        .collect();
    let want: Vec<New> = old.iter().map(|o| New { x: o.x_old, y: o.y }).collect();
    let file = npy_serde::to_vec(&old).unwrap();
    same_ok::<New>(&dir, &file, &want);
    // serde's field list holds the alias as well: never the file's names, never the tier.
    assert_eq!(exact_count::<New>(&file), (want, 0));
    // A file with the new names reads the same way.
    let renamed = npy(
        "[('x','<f8'),('y','<f8')]",
        &[600],
        false,
        &file[data_offset(&file)..],
    );
    let want: Vec<New> = old.iter().map(|o| New { x: o.x_old, y: o.y }).collect();
    same_ok::<New>(&dir, &renamed, &want);
}

#[test]
fn skip_deserializing_fields_do_not_shift_later_fields() {
    let dir = TempDir::new("read-records-skip");
    // The skipped field is serialized, so it is in the dtype (and in the file); serde's
    // `visit_seq` skips it, so reading positionally would put `b` into `c`.
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct Skips {
        a: f64,
        #[serde(skip_deserializing, default)]
        b: f64,
        c: f64,
    }
    let recs: Vec<Skips> = (0..600)
        .map(|i| Skips {
            a: i as f64,
            b: 1000.0 + i as f64,
            c: -(i as f64),
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(
        descr_of(&file),
        "[('a', '<f8'), ('b', '<f8'), ('c', '<f8')]"
    );
    let want: Vec<Skips> = recs.iter().map(|r| Skips { b: 0.0, ..*r }).collect();
    same_ok::<Skips>(&dir, &file, &want);
    assert_eq!(exact_count::<Skips>(&file), (want, 0));

    // Skipped first and last.
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct Ends {
        #[serde(skip_deserializing)]
        first: u16,
        mid: u16,
        #[serde(skip_deserializing)]
        last: u16,
    }
    let recs: Vec<Ends> = (0..500u16)
        .map(|i| Ends {
            first: i,
            mid: i * 2,
            last: i * 3,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    let want: Vec<Ends> = recs
        .iter()
        .map(|r| Ends {
            first: 0,
            mid: r.mid,
            last: 0,
        })
        .collect();
    same_ok::<Ends>(&dir, &file, &want);

    // A skipped field inside a nested struct.
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct Outer {
        id: u32,
        inner: Skips,
        tail: i8,
    }
    let recs: Vec<Outer> = (0..500)
        .map(|i| Outer {
            id: i,
            inner: Skips {
                a: i as f64,
                b: 5.0,
                c: 6.0 + i as f64,
            },
            tail: (i % 100) as i8 - 50,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    let want: Vec<Outer> = recs
        .iter()
        .map(|r| Outer {
            inner: Skips { b: 0.0, ..r.inner },
            ..*r
        })
        .collect();
    same_ok::<Outer>(&dir, &file, &want);
}

/// The dangerous case: the same layout with other names. Values must be matched by name.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Xy {
    x: f64,
    y: f64,
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Yx {
    y: f64,
    x: f64,
}

#[test]
fn swapped_field_order_matches_by_name() {
    let dir = TempDir::new("read-records-swapped");
    let n = 600;
    let yx: Vec<Yx> = (0..n)
        .map(|i| Yx {
            y: -(i as f64) - 0.5,
            x: i as f64,
        })
        .collect();
    let file = npy_serde::to_vec(&yx).unwrap();
    assert_eq!(descr_of(&file), "[('y', '<f8'), ('x', '<f8')]");
    let want: Vec<Xy> = yx.iter().map(|r| Xy { x: r.x, y: r.y }).collect();
    same_ok::<Xy>(&dir, &file, &want);
    assert_eq!(exact_count::<Xy>(&file), (want.clone(), 0));
    // Its own order engages.
    assert_eq!(exact_count::<Yx>(&file), (yx.clone(), n));
    // Big-endian too.
    #[derive(Serialize, NpyRecord)]
    #[npy(byte_order = "big")]
    struct YxBe {
        y: f64,
        x: f64,
    }
    let be: Vec<YxBe> = yx.iter().map(|r| YxBe { y: r.y, x: r.x }).collect();
    let file = npy_serde::to_vec(&be).unwrap();
    same_ok::<Xy>(&dir, &file, &want);
    assert_eq!(exact_count::<Xy>(&file).1, 0);

    // Swapped inside a nested record only: the outer names agree, the inner ones do not.
    #[derive(Serialize, NpyRecord)]
    struct OuterYx {
        id: u32,
        p: Yx,
    }
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct OuterXy {
        id: u32,
        p: Xy,
    }
    let out: Vec<OuterYx> = yx
        .iter()
        .enumerate()
        .map(|(i, &p)| OuterYx { id: i as u32, p })
        .collect();
    let file = npy_serde::to_vec(&out).unwrap();
    let want: Vec<OuterXy> = out
        .iter()
        .map(|o| OuterXy {
            id: o.id,
            p: Xy { x: o.p.x, y: o.p.y },
        })
        .collect();
    same_ok::<OuterXy>(&dir, &file, &want);
    assert_eq!(exact_count::<OuterXy>(&file).1, 0);

    // Other names of the same layout: a missing field, as vec_from reports it.
    let file = npy("[('x','<f8'),('z','<f8')]", &[3], false, &[0u8; 48]);
    let err = same::<Xy>(&dir, &file).unwrap_err();
    assert!(err.to_string().contains("missing field `y`"), "{err}");
    assert_eq!(err.position().record, Some(0), "{err}");

    // Over more than one block of a reader.
    let yx: Vec<Yx> = (0..17_000)
        .map(|i| Yx {
            y: i as f64,
            x: -(i as f64),
        })
        .collect();
    let file = npy_serde::to_vec(&yx).unwrap();
    let got: Vec<Xy> = npy_serde::from_reader(Cursor::new(&file)).unwrap();
    assert!(got.iter().zip(&yx).all(|(g, w)| (g.x, g.y) == (w.x, w.y)));
    assert_eq!(got.len(), yx.len());
}

#[test]
fn alias_naming_another_file_field_is_an_error_everywhere() {
    // serde's field list for this struct is ["x", "y"] (the alias included, the skipped field
    // left out): the file's names. By name serde refuses the record (`y` is an alias of `x`: a
    // duplicate field, as serde_json says); read by position, `x` would come from the file's `x`
    // and the file's `y` would be dropped without a word. Every reader (the nested one too)
    // refuses it, with the same error.
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct AliasSkip {
        #[serde(alias = "y")]
        x: f64,
        #[serde(skip_deserializing)]
        y: f64,
    }
    let dir = TempDir::new("read-records-alias-skip");
    let recs: Vec<AliasSkip> = (0..100)
        .map(|i| AliasSkip {
            x: i as f64,
            y: -(i as f64),
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(descr_of(&file), "[('x', '<f8'), ('y', '<f8')]");
    let want = npy_serde::deserialize_slice::<Vec<AliasSkip>>(&file);
    let got = same::<AliasSkip>(&dir, &file);
    assert_eq!(differs(&got, &want), None);
    let err = got.unwrap_err();
    assert_eq!(err.kind().code(), "message");
    assert_eq!(err.to_string(), "duplicate field `x` (at record 0)");
}

/// A hand-written visitor whose `visit_seq` stops before the last field (for some records) is
/// read by name from the first element on, with the values its `visit_map` gives, whichever
/// tier saw it first.
#[test]
fn early_stopping_visitors_are_read_by_name() {
    #[derive(Debug, PartialEq, Clone, Copy)]
    struct Head {
        id: i64,
        x: Option<f64>,
    }
    impl<'de> Deserialize<'de> for Head {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Head;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an (id, x) record")
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Head, A::Error> {
                    let id: i64 = seq.next_element()?.unwrap_or_default();
                    // Odd ids stop after `id`.
                    let x = if id % 2 == 0 {
                        seq.next_element()?
                    } else {
                        None
                    };
                    Ok(Head { id, x })
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Head, A::Error> {
                    let (mut id, mut x) = (0, None);
                    while let Some(k) = map.next_key::<String>()? {
                        match k.as_str() {
                            "id" => id = map.next_value()?,
                            _ => x = Some(map.next_value()?),
                        }
                    }
                    Ok(Head { id, x })
                }
            }
            d.deserialize_struct("Head", &["id", "x"], V)
        }
    }
    impl NpyRecord for Head {
        fn dtype() -> DType {
            "[('id', '<i8'), ('x', '<f8')]".parse().unwrap()
        }
        const LAYOUT: npy_serde::record::__private::Layout =
            npy_serde::record::__private::Layout::record(&[&i64::LAYOUT, &f64::LAYOUT], false);
    }
    #[derive(Serialize, NpyRecord)]
    struct Row {
        id: i64,
        x: f64,
    }
    let dir = TempDir::new("read-records-early-stop");
    // The first records take both fields; record 3 is the first that stops early.
    let rows: Vec<Row> = [0, 2, 4, 7, 8, 9]
        .iter()
        .map(|&id| Row {
            id,
            x: id as f64 / 2.0,
        })
        .collect();
    let file = npy_serde::to_vec(&rows).unwrap();
    let want: Vec<Head> = rows
        .iter()
        .map(|r| Head {
            id: r.id,
            x: Some(r.x),
        })
        .collect();
    same_ok(&dir, &file, &want);
    assert_eq!(
        npy_serde::deserialize_slice::<Vec<Head>>(&file).unwrap(),
        want
    );
    // A first record that stops early: by name from the start.
    let file = npy_serde::to_vec(&rows[3..]).unwrap();
    same_ok(&dir, &file, &want[3..]);
    assert_eq!(
        npy_serde::deserialize_slice::<Vec<Head>>(&file).unwrap(),
        want[3..]
    );
}

// ---------------------------------------------------------------------------------------------
// Nested, aligned, tuple, newtype and subarray types
// ---------------------------------------------------------------------------------------------

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Pt {
    x: f32,
    y: f32,
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Seg {
    id: u16,
    a: Pt,
    b: Pt,
    w: [Pt; 2],
    ok: bool,
}

#[test]
fn nested_structs_and_subarrays_of_records() {
    let dir = TempDir::new("read-records-nested");
    let p = |i: usize, k: f32| Pt {
        x: i as f32 + k,
        y: -(i as f32) * k,
    };
    let recs: Vec<Seg> = (0..800)
        .map(|i| Seg {
            id: i as u16,
            a: p(i, 0.5),
            b: p(i, 2.0),
            w: [p(i, 3.0), p(i, 4.0)],
            ok: i % 2 == 1,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(
        descr_of(&file),
        "[('id', '<u2'), ('a', [('x', '<f4'), ('y', '<f4')]), ('b', [('x', '<f4'), ('y', '<f4')]), \
         ('w', [('x', '<f4'), ('y', '<f4')], (2,)), ('ok', '|b1')]"
    );
    same_ok::<Seg>(&dir, &file, &recs);
    assert_eq!(exact_count::<Seg>(&file), (recs.clone(), recs.len()));

    // A bad bool at the end of the nested record: same error.
    let mut bad = file.clone();
    let size = 2 + 8 + 8 + 16 + 1;
    let at = data_offset(&file) + 432 * size + size - 1;
    bad[at] = 3;
    let err = same::<Seg>(&dir, &bad).unwrap_err();
    assert_eq!(err.kind().code(), "invalid_value");
    assert_eq!(err.position().record, Some(432));
    assert_eq!(err.position().byte, Some(at as u64));

    // A bad bool inside a subarray field: its item's path.
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct Bools {
        id: u16,
        bits: [bool; 4],
    }
    let recs: Vec<Bools> = (0..500u16)
        .map(|i| Bools {
            id: i,
            bits: [i % 2 == 0, i % 3 == 0, i % 5 == 0, true],
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    same_ok::<Bools>(&dir, &file, &recs);
    assert_eq!(exact_count::<Bools>(&file).1, recs.len());
    let mut bad = file.clone();
    let at = data_offset(&file) + 77 * 6 + 2 + 2;
    bad[at] = 0xff;
    let err = same::<Bools>(&dir, &bad).unwrap_err();
    assert_eq!(err.kind().code(), "invalid_value", "{err}");
    assert_eq!(err.position().record, Some(77), "{err}");
    assert_eq!(err.position().field.as_deref(), Some("bits[2]"), "{err}");
    assert_eq!(err.position().byte, Some(at as u64), "{err}");

    // NumPy's subarray of records.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Pts {
        pts: [Pt; 2],
        n: i16,
    }
    let file = fixture("rec_subarray_of_records");
    let want = [
        Pts {
            pts: [Pt { x: 1.0, y: -1.0 }, Pt { x: 2.0, y: -2.0 }],
            n: 2,
        },
        Pts {
            pts: [Pt { x: 3.0, y: -3.0 }, Pt { x: 4.0, y: -4.0 }],
            n: 2,
        },
    ];
    same_ok::<Pts>(&dir, &file, &want);
    assert_eq!(exact_count::<Pts>(&file).1, 2);
}

/// NumPy's mixed byte orders in one record: `[('a', '<i4'), ('inner', [('x', '<f8'),
/// ('y', '>i2'), ('deep', [('z', '|u1')])]), ('b', '|b1')]`.
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
#[npy(byte_order = "big")]
struct BeI16(i16);

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct Deep {
    z: u8,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct InnerMixed {
    x: f64,
    y: BeI16,
    deep: Deep,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct NestedMixed {
    a: i32,
    inner: InnerMixed,
    b: bool,
}

/// The same record read into native-order types: not the file's layout.
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct InnerNative {
    x: f64,
    y: i16,
    deep: Deep,
}

#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
struct NestedNative {
    a: i32,
    inner: InnerNative,
    b: bool,
}

#[test]
fn mixed_byte_orders_in_nested_records() {
    let dir = TempDir::new("read-records-mixed");
    let file = fixture("rec_nested");
    let rows = [(1, 0.25, -1, 9, true), (2, -1.0, 300, 8, false)];
    let mut want: Vec<NestedMixed> = rows
        .iter()
        .map(|&(a, x, y, z, b)| NestedMixed {
            a,
            inner: InnerMixed {
                x,
                y: BeI16(y),
                deep: Deep { z },
            },
            b,
        })
        .collect();
    want.push(NestedMixed {
        a: -3,
        inner: InnerMixed {
            x: 1e100,
            y: BeI16(32767),
            deep: Deep { z: 7 },
        },
        b: true,
    });
    same_ok::<NestedMixed>(&dir, &file, &want);
    assert_eq!(exact_count::<NestedMixed>(&file).1, 3);
    let native: Vec<NestedNative> = want
        .iter()
        .map(|w| NestedNative {
            a: w.a,
            inner: InnerNative {
                x: w.inner.x,
                y: w.inner.y.0,
                deep: Deep { z: w.inner.deep.z },
            },
            b: w.b,
        })
        .collect();
    same_ok::<NestedNative>(&dir, &file, &native);
    assert_eq!(exact_count::<NestedNative>(&file).1, 0);
}

/// `#[npy(align)]`: `[('a', 'u1'), ('b', '<i8'), ('c', 'u1'), ('d', '<f4')]` at offsets 0, 8,
/// 16, 20, itemsize 24.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
#[npy(align)]
struct Aligned {
    a: u8,
    b: i64,
    c: u8,
    d: f32,
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
#[npy(align)]
struct AlignedOuter {
    h: u8,
    s: Aligned,
    t: u16,
}

#[test]
fn aligned_structs_with_padding() {
    let dir = TempDir::new("read-records-aligned");
    let recs: Vec<Aligned> = (0..600)
        .map(|i| Aligned {
            a: (i % 256) as u8,
            b: i as i64 * -99_991,
            c: (i % 7) as u8,
            d: i as f32 * 0.125,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    let h = parse_header(&file, &Limits::default()).unwrap();
    assert_eq!(h.header.dtype.itemsize(), 24);
    same_ok::<Aligned>(&dir, &file, &recs);
    assert_eq!(exact_count::<Aligned>(&file), (recs.clone(), recs.len()));

    // NumPy's form with explicit padding, the padding bytes full of garbage.
    let mut data = Vec::new();
    for r in &recs {
        data.push(r.a);
        data.extend([0xAA; 7]);
        data.extend(r.b.to_le_bytes());
        data.push(r.c);
        data.extend([0x55; 3]);
        data.extend(r.d.to_le_bytes());
    }
    let padded = npy(
        "[('a','u1'),('','|V7'),('b','<i8'),('c','u1'),('','|V3'),('d','<f4')]",
        &[recs.len() as u64],
        false,
        &data,
    );
    same_ok::<Aligned>(&dir, &padded, &recs);
    assert_eq!(exact_count::<Aligned>(&padded).1, recs.len());
    // The same fields packed: not this layout, still the same values by name.
    let packed: Vec<u8> = recs
        .iter()
        .flat_map(|r| {
            let mut b = vec![r.a];
            b.extend(r.b.to_le_bytes());
            b.push(r.c);
            b.extend(r.d.to_le_bytes());
            b
        })
        .collect();
    let packed = npy(
        "[('a','u1'),('b','<i8'),('c','u1'),('d','<f4')]",
        &[recs.len() as u64],
        false,
        &packed,
    );
    same_ok::<Aligned>(&dir, &packed, &recs);
    assert_eq!(exact_count::<Aligned>(&packed).1, 0);

    // Nested aligned records: `s` at 8, `t` at 32, itemsize 40.
    let outer: Vec<AlignedOuter> = recs
        .iter()
        .take(300)
        .enumerate()
        .map(|(i, &s)| AlignedOuter {
            h: i as u8,
            s,
            t: i as u16 * 3,
        })
        .collect();
    let file = npy_serde::to_vec(&outer).unwrap();
    let h = parse_header(&file, &Limits::default()).unwrap();
    assert_eq!(h.header.dtype.itemsize(), 40);
    same_ok::<AlignedOuter>(&dir, &file, &outer);
    assert_eq!(exact_count::<AlignedOuter>(&file).1, outer.len());

    // NumPy's `align=True` record with an `f2`: no exact layout (half floats are not on the
    // exact tier), vec_from's values.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    #[npy(align)]
    struct WithHalf {
        a: u8,
        b: i64,
        c: u8,
        d: half::f16,
    }
    let file = fixture("rec_aligned");
    let want = [
        WithHalf {
            a: 1,
            b: -3,
            c: 5,
            d: half::f16::from_f32(0.5),
        },
        WithHalf {
            a: 2,
            b: 4,
            c: 6,
            d: half::f16::NEG_INFINITY,
        },
    ];
    same_ok::<WithHalf>(&dir, &file, &want);
    assert_eq!(exact_count::<WithHalf>(&file).1, 0);
}

/// A tuple struct: NumPy's default names `f0`, `f1`, `f2`.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Triple(i32, f64, [u8; 2]);

/// A newtype: the dtype of its field.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Meters(f64);

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Walk {
    id: u32,
    dist: Meters,
    legs: [Meters; 3],
}

#[test]
fn tuple_structs_and_newtypes() {
    let dir = TempDir::new("read-records-tuples");
    let recs: Vec<Triple> = (0..600)
        .map(|i| Triple(i - 300, i as f64 / 3.0, [i as u8, (i / 256) as u8]))
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(
        descr_of(&file),
        "[('f0', '<i4'), ('f1', '<f8'), ('f2', '|u1', (2,))]"
    );
    same_ok::<Triple>(&dir, &file, &recs);
    assert_eq!(exact_count::<Triple>(&file), (recs.clone(), recs.len()));
    // A plain tuple reads the same records (positionally, no tier: not NpyRecord).
    let tuples: Vec<(i32, f64, [u8; 2])> = npy_serde::from_slice_serde(&file).unwrap();
    assert_eq!(tuples[123], (recs[123].0, recs[123].1, recs[123].2));

    let walks: Vec<Walk> = (0..600)
        .map(|i| Walk {
            id: i,
            dist: Meters(i as f64 * 2.5),
            legs: [Meters(1.0), Meters(-(i as f64)), Meters(i as f64 / 7.0)],
        })
        .collect();
    let file = npy_serde::to_vec(&walks).unwrap();
    assert_eq!(
        descr_of(&file),
        "[('id', '<u4'), ('dist', '<f8'), ('legs', '<f8', (3,))]"
    );
    same_ok::<Walk>(&dir, &file, &walks);
    assert_eq!(exact_count::<Walk>(&file), (walks.clone(), walks.len()));

    // Top-level newtypes: a `<f8` array.
    let meters: Vec<Meters> = (0..600).map(|i| Meters(i as f64 - 0.5)).collect();
    let file = npy_serde::to_vec(&meters).unwrap();
    assert_eq!(descr_of(&file), "'<f8'");
    same_ok::<Meters>(&dir, &file, &meters);
    assert_eq!(exact_count::<Meters>(&file), (meters.clone(), meters.len()));
    let floats: Vec<f64> = meters.iter().map(|m| m.0).collect();
    same_ok::<f64>(&dir, &file, &floats);
}

#[test]
fn two_d_subarray_fields() {
    let dir = TempDir::new("read-records-2d");
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct Grid {
        m: [[f32; 3]; 2],
        id: u16,
    }
    #[derive(Serialize, NpyRecord)]
    #[npy(byte_order = "big")]
    struct GridBe {
        m: [[f32; 3]; 2],
        id: u16,
    }
    let recs: Vec<Grid> = (0..500u16)
        .map(|i| {
            let f = f32::from(i);
            Grid {
                m: [[f, f + 0.5, -f], [f * 2.0, 1.0 / (f + 1.0), 0.0]],
                id: i,
            }
        })
        .collect();
    let le = npy_serde::to_vec(&recs).unwrap();
    assert_eq!(descr_of(&le), "[('m', '<f4', (2, 3)), ('id', '<u2')]");
    let be: Vec<GridBe> = recs.iter().map(|g| GridBe { m: g.m, id: g.id }).collect();
    let be = npy_serde::to_vec(&be).unwrap();
    for file in [le, be] {
        same_ok::<Grid>(&dir, &file, &recs);
        assert_eq!(exact_count::<Grid>(&file).1, recs.len());
    }

    // NumPy's.
    let file = fixture("rec_subarray_2x3");
    let want = [
        Grid {
            m: [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
            id: 10,
        },
        Grid {
            m: [[6.0, 7.0, 8.0], [9.0, 10.0, 11.0]],
            id: 20,
        },
    ];
    same_ok::<Grid>(&dir, &file, &want);
    assert_eq!(exact_count::<Grid>(&file).1, 2);
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct SubSub {
        a: [[f32; 2]; 3],
    }
    let want = [
        SubSub {
            a: [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]],
        },
        SubSub {
            a: [[6.0, 7.0], [8.0, 9.0], [10.0, 11.0]],
        },
    ];
    let file = fixture("rec_subarray_of_subarray");
    same_ok::<SubSub>(&dir, &file, &want);
    assert_eq!(exact_count::<SubSub>(&file).1, 2);
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Be22 {
        v: [[i32; 2]; 2],
    }
    let file = fixture("rec_subarray_be");
    let want = [
        Be22 {
            v: [[-4, -3], [-2, -1]],
        },
        Be22 {
            v: [[0, 1], [2, 3]],
        },
    ];
    same_ok::<Be22>(&dir, &file, &want);
    assert_eq!(exact_count::<Be22>(&file).1, 2);
    // The wrong axes: the same layout size, another shape; vec_from's error.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Flat4 {
        v: [i32; 4],
    }
    let err = same::<Flat4>(&dir, &file).unwrap_err();
    assert_eq!(err.position().record, Some(0), "{err}");
}

/// The exact tier holds layouts of up to 64 steps (a record step, then one per field, subarray
/// axis and item): 1 + (1 + 7 * (1 + 7)) + (1 + 5) = 64 steps here, 65 with one more byte.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Steps64 {
    m: [[u16; 7]; 7],
    t: [u8; 5],
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
struct Steps65 {
    m: [[u16; 7]; 7],
    t: [u8; 6],
}

#[test]
fn largest_layouts() {
    let dir = TempDir::new("read-records-steps");
    let m = |i: u16| std::array::from_fn(|r| std::array::from_fn(|c| i * 49 + (r * 7 + c) as u16));
    fn t<const N: usize>(i: u16) -> [u8; N] {
        std::array::from_fn(|k| (i as usize + k) as u8)
    }
    let recs: Vec<Steps64> = (0..100).map(|i| Steps64 { m: m(i), t: t(i) }).collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    same_ok::<Steps64>(&dir, &file, &recs);
    assert_eq!(exact_count::<Steps64>(&file).1, recs.len());
    let recs: Vec<Steps65> = (0..100).map(|i| Steps65 { m: m(i), t: t(i) }).collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    same_ok::<Steps65>(&dir, &file, &recs);
    assert_eq!(exact_count::<Steps65>(&file).1, 0);
}

// ---------------------------------------------------------------------------------------------
// Top-level scalars and subarrays
// ---------------------------------------------------------------------------------------------

macro_rules! scalar_case {
    ($dir:expr, $t:ty, $code:literal, $vals:expr) => {{
        let vals: Vec<$t> = $vals;
        let n = vals.len() as u64;
        let le: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let be: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
        for (descr, data) in [(concat!("<", $code), le), (concat!(">", $code), be)] {
            let file = npy(descr, &[n], false, &data);
            same_ok::<$t>(&$dir, &file, &vals);
            let (got, exact) = exact_count::<$t>(&file);
            assert!(got == vals, "{descr}");
            assert_eq!(exact, vals.len(), "{descr}");
        }
    }};
}

#[test]
fn top_level_scalars() {
    let dir = TempDir::new("read-records-scalars");
    let n: u32 = 300;
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
    scalar_case!(dir, u8, "u1", (0..n).map(|i| (i % 251) as u8).collect());

    // NaN payloads and signed zeros survive (compared by bits).
    let specials = [
        f64::NAN,
        -f64::NAN,
        -0.0,
        f64::INFINITY,
        f64::from_bits(0x7ff0_0000_dead_beef),
        5e-324,
    ];
    let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
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
        let got = same::<f64>(&dir, &file).unwrap();
        assert_eq!(bits(&got), bits(&specials));
        let got: Vec<f64> = npy_serde::from_reader(Trickle {
            data: &file,
            step: 3,
        })
        .unwrap();
        assert_eq!(bits(&got), bits(&specials));
    }

    // Booleans: a byte of 2 at record k is vec_from's error.
    let mut b1: Vec<u8> = (0..1000).map(|i| (i % 2) as u8).collect();
    let file = npy("|b1", &[1000], false, &b1);
    let want: Vec<bool> = b1.iter().map(|&b| b == 1).collect();
    same_ok::<bool>(&dir, &file, &want);
    assert_eq!(exact_count::<bool>(&file).1, 1000);
    b1[321] = 2;
    let file = npy("|b1", &[1000], false, &b1);
    let err = same::<bool>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "invalid_value");
    assert_eq!(err.position().record, Some(321));
    let err = same::<bool>(&dir, &fixture("custom_bool_byte_2")).unwrap_err();
    assert_eq!(err.kind().code(), "invalid_value");

    // Widening requests at top level: no tier, vec_from's values; narrowing: its error.
    let ints: Vec<i32> = (0..600).map(|i| (i - 300) * 7_158_278).collect();
    let data: Vec<u8> = ints.iter().flat_map(|v| v.to_be_bytes()).collect();
    let file = npy(">i4", &[600], false, &data);
    let want: Vec<i64> = ints.iter().map(|&v| v.into()).collect();
    same_ok::<i64>(&dir, &file, &want);
    assert_eq!(exact_count::<i64>(&file).1, 0);
    let want: Vec<f64> = ints.iter().map(|&v| v.into()).collect();
    same_ok::<f64>(&dir, &file, &want);
    let err = same::<i16>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "type_mismatch");
    let err = same::<u32>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "type_mismatch");
}

#[test]
fn top_level_subarrays() {
    let dir = TempDir::new("read-records-top-sub");
    let vals: Vec<[u16; 4]> = (0..600u16).map(|i| [i, i.wrapping_mul(3), !i, 7]).collect();
    let data: Vec<u8> = vals
        .iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    // A subarray dtype at top level (NumPy never writes one: it moves the subarray's shape
    // into the array's).
    let file = raw_npy(
        "{'descr': ('<u2', (4,)), 'fortran_order': False, 'shape': (600,), }",
        &data,
    );
    same_ok::<[u16; 4]>(&dir, &file, &vals);
    assert_eq!(exact_count::<[u16; 4]>(&file), (vals.clone(), vals.len()));
    // A 2-D array of `<u2`: its elements are scalars, not `[u16; 4]`.
    let file = npy("<u2", &[600, 4], false, &data);
    let want = npy_serde::from_slice_serde::<[u16; 4]>(&file).map(|_| ());
    let got = same::<[u16; 4]>(&dir, &file).map(|_| ());
    assert_eq!(
        got.map_err(|e| e.to_string()),
        want.map_err(|e| e.to_string())
    );
    let flat: Vec<u16> = vals.iter().flatten().copied().collect();
    same_ok::<u16>(&dir, &file, &flat);
    // Arrays of records at top level.
    let pts: Vec<[Pt; 2]> = (0..500)
        .map(|i| {
            let f = i as f32;
            [Pt { x: f, y: -f }, Pt { x: f / 2.0, y: 3.0 }]
        })
        .collect();
    let data: Vec<u8> = pts
        .iter()
        .flatten()
        .flat_map(|p| [p.x.to_le_bytes(), p.y.to_le_bytes()].concat())
        .collect();
    let file = raw_npy(
        "{'descr': ([('x', '<f4'), ('y', '<f4')], (2,)), 'fortran_order': False, \
         'shape': (500,), }",
        &data,
    );
    same_ok::<[Pt; 2]>(&dir, &file, &pts);
    assert_eq!(exact_count::<[Pt; 2]>(&file), (pts.clone(), pts.len()));
}

// ---------------------------------------------------------------------------------------------
// Shapes: N-d, Fortran order, empty, 0-d
// ---------------------------------------------------------------------------------------------

#[test]
fn nd_and_fortran_order_flatten_in_c_order() {
    let dir = TempDir::new("read-records-nd");
    let (rows, cols) = (15, 20);
    let recs = w2_records(rows * cols);
    /// W2 with `flag` a bool.
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct BoolFlag {
        id: i64,
        x: f64,
        y: f32,
        flag: bool,
        v: [f32; 3],
    }
    for big in [false, true] {
        let descr = if big {
            "[('id','>i8'),('x','>f8'),('y','>f4'),('flag','u1'),('v','>f4',(3,))]"
        } else {
            "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]"
        };
        let data_of = |recs: &[W2]| {
            let file = w2_file(recs, big);
            file[data_offset(&file)..].to_vec()
        };
        // C order, 3-D.
        let file = npy(descr, &[3, 10, 10], false, &data_of(&recs));
        same_ok::<W2>(&dir, &file, &recs);
        assert_eq!(exact_count::<W2>(&file).1, recs.len());
        // Fortran order, rows x cols: stored column by column.
        let fortran = |recs: &[W2]| {
            let mut storage = Vec::new();
            for c in 0..cols {
                for r in 0..rows {
                    storage.push(recs[r * cols + c]);
                }
            }
            data_of(&storage)
        };
        let file = npy(descr, &[rows as u64, cols as u64], true, &fortran(&recs));
        same_ok::<W2>(&dir, &file, &recs);
        let nested: Vec<Vec<W2>> = npy_serde::deserialize_slice(&file).unwrap();
        assert_eq!(nested.concat(), recs);

        // As bools: a bad one at C index 237 (row 11, column 17) is reported there, in either
        // order.
        let descr_b = descr.replace("'u1'", "'|b1'");
        let mut bools: Vec<W2> = recs
            .iter()
            .map(|r| W2 {
                flag: r.flag % 2,
                ..*r
            })
            .collect();
        let want: Vec<BoolFlag> = bools
            .iter()
            .map(|r| BoolFlag {
                id: r.id,
                x: r.x,
                y: r.y,
                flag: r.flag == 1,
                v: r.v,
            })
            .collect();
        let shape = [rows as u64, cols as u64];
        same_ok::<BoolFlag>(&dir, &npy(&descr_b, &shape, true, &fortran(&bools)), &want);
        same_ok::<BoolFlag>(&dir, &npy(&descr_b, &shape, false, &data_of(&bools)), &want);
        bools[11 * cols + 17].flag = 5;
        for file in [
            npy(&descr_b, &shape, true, &fortran(&bools)),
            npy(&descr_b, &shape, false, &data_of(&bools)),
        ] {
            let err = same::<BoolFlag>(&dir, &file).unwrap_err();
            assert_eq!(err.kind().code(), "invalid_value", "{err}");
            assert_eq!(err.position().record, Some(237), "{err}");
        }
    }
    // Fortran order with one axis longer than 1 is stored as C order: runs, and the exact tier.
    let recs = w2_records(100);
    let w2 = w2_file(&recs, false);
    let descr = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]";
    for shape in [[1, 100], [100, 1]] {
        let file = npy(descr, &shape, true, &w2[data_offset(&w2)..]);
        same_ok::<W2>(&dir, &file, &recs);
        assert_eq!(exact_count::<W2>(&file).1, recs.len(), "{shape:?}");
    }
    // NumPy's N-d and Fortran fixtures, as scalars.
    let f = same::<f64>(&dir, &fixture("f8_le_2x3_fortran")).unwrap();
    assert_eq!(f, [0.0, 1.5, 3.0, 4.5, 6.0, 7.5]);
    let cube = same::<u16>(&dir, &fixture("u2_le_2x3x4")).unwrap();
    let nested: Vec<Vec<Vec<u16>>> = npy_serde::deserialize_slice(&fixture("u2_le_2x3x4")).unwrap();
    assert_eq!(cube, nested.concat().concat());
    let i2 = same::<i16>(&dir, &fixture("i2_be_3x2_fortran")).unwrap();
    let nested: Vec<Vec<i16>> =
        npy_serde::deserialize_slice(&fixture("i2_be_3x2_fortran")).unwrap();
    assert_eq!(i2, nested.concat());
}

#[test]
fn empty_and_zero_d_arrays() {
    let dir = TempDir::new("read-records-empty");
    let w2 = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]";
    for shape in [&[0u64][..], &[3, 0], &[0, 5], &[2, 0, 2]] {
        for fortran in [false, true] {
            let file = npy(w2, shape, fortran, &[]);
            assert_eq!(same::<W2>(&dir, &file).unwrap(), Vec::<W2>::new());
            let file = npy("<f8", shape, fortran, &[]);
            assert_eq!(same::<f64>(&dir, &file).unwrap(), Vec::<f64>::new());
        }
    }
    for name in ["f8_le_empty", "i2_be_empty_2x0", "u8_le_empty_0x3"] {
        assert_eq!(same::<i64>(&dir, &fixture(name)).map(|v| v.len()).ok(), {
            let v = npy_serde::from_slice_serde::<i64>(&fixture(name));
            v.map(|v| v.len()).ok()
        });
    }
    // 0-d: one element.
    let rec = w2_records(5)[4];
    let one = w2_file(&[rec], false);
    let file = npy(w2, &[], false, &one[data_offset(&one)..]);
    same_ok::<W2>(&dir, &file, &[rec]);
    assert_eq!(exact_count::<W2>(&file), (vec![rec], 1));
    let file = npy(">f8", &[], false, &(-2.5f64).to_be_bytes());
    same_ok::<f64>(&dir, &file, &[-2.5]);
    same_ok::<i32>(
        &dir,
        &fixture("i4_be_0d"),
        &[npy_serde::deserialize_slice(&fixture("i4_be_0d")).unwrap()],
    );
    let b = same::<bool>(&dir, &fixture("b1_0d")).unwrap();
    assert_eq!(
        b,
        [npy_serde::deserialize_slice::<bool>(&fixture("b1_0d")).unwrap()]
    );

    // A struct with no fields over NumPy's `[]` dtype (zero-size elements).
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct Nothing {}
    let got = same::<Nothing>(&dir, &fixture("rec_empty_struct")).unwrap();
    assert_eq!(got.len(), 3);
    // Zero-size elements count against max_empty_items, as for vec_from.
    let file = npy("[]", &[1 << 20], false, &[]);
    let err = same::<Nothing>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "limit_exceeded", "{err}");
    let rb = ReaderBuilder::new().max_empty_items(1000);
    let got = same_with::<Nothing>(&rb, &dir, &npy("[]", &[999], false, &[])).unwrap();
    assert_eq!(got.len(), 999);
    let err = same_with::<Nothing>(&rb, &dir, &npy("[]", &[1000], false, &[])).unwrap_err();
    assert_eq!(err.kind().code(), "limit_exceeded", "{err}");
    // A zero-length subarray field.
    #[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
    struct WithNothing {
        a: u16,
        none: [f32; 0],
        b: u16,
    }
    let recs: Vec<WithNothing> = (0..100)
        .map(|i| WithNothing {
            a: i,
            none: [],
            b: !i,
        })
        .collect();
    let file = npy_serde::to_vec(&recs).unwrap();
    same_ok::<WithNothing>(&dir, &file, &recs);
}

// ---------------------------------------------------------------------------------------------
// Truncated data, limits, arrays back to back
// ---------------------------------------------------------------------------------------------

#[test]
fn truncated_data_same_errors() {
    let dir = TempDir::new("read-records-trunc");
    let recs = w2_records(200); // 6600 bytes
    for big in [false, true] {
        let full = w2_file(&recs, big);
        for cut in [1, 33, 40, 6600] {
            let file = &full[..full.len() - cut];
            let err = same::<W2>(&dir, file).unwrap_err();
            assert_eq!(err.kind().code(), "unexpected_eof", "cut {cut}: {err}");
            let text = err.to_string();
            assert!(
                text.contains("needed 6600 bytes")
                    && text.contains(&format!("found {}", 6600 - cut)),
                "cut {cut}: {text}"
            );
        }
    }
    // Over more than one block of a reader (the reader's error, where the data ends).
    let recs = w2_records(10_000); // 330 KB
    let full = w2_file(&recs, false);
    let rb = ReaderBuilder::new();
    let cursor = Entries {
        rb: &rb,
        free: false,
        steps: &[],
        path: None,
    };
    let err = compare_all::<W2>(&cursor, &full[..full.len() - 40]).unwrap_err();
    assert_eq!(err.kind().code(), "unexpected_eof");
    let reader =
        npy_serde::from_reader::<_, W2>(Cursor::new(&full[..full.len() - 40])).unwrap_err();
    assert!(reader.to_string().contains("found 329960"), "{reader}");
    // Scalars, and a 0-d record with no data.
    let file = npy("<f8", &[1000], false, &[0; 7999]);
    let err = same::<f64>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "unexpected_eof");
    let file = npy(
        "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]",
        &[],
        false,
        &[],
    );
    let err = same::<W2>(&dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "unexpected_eof");
}

#[test]
fn reader_builder_limits_same_errors() {
    let dir = TempDir::new("read-records-limits");
    let recs = w2_records(100); // 3300 data bytes
    let file = w2_file(&recs, false);
    let tight = ReaderBuilder::new().max_data_size(3299);
    let err = same_with::<W2>(&tight, &dir, &file).unwrap_err();
    assert_eq!(err.kind().code(), "limit_exceeded");
    let exact = ReaderBuilder::new().max_data_size(3300);
    let got = same_with::<W2>(&exact, &dir, &file).unwrap();
    assert_eq!(got, recs);
    // A long header needs a larger max_header_size.
    let long = fixture("rec_v2_header");
    let small = ReaderBuilder::new().max_header_size(1000);
    let err = same_with::<W2>(&small, &dir, &long).unwrap_err();
    assert_eq!(err.kind().code(), "header_too_large");
    let err = same::<u8>(&dir, &long).unwrap_err();
    assert_eq!(err.kind().code(), "header_too_large", "{err}");
    let big = ReaderBuilder::new().max_header_size(1 << 20);
    // 1500 `|u1` fields: not a layout the exact tier holds (too many steps), nor a `u8`.
    let err = big.from_slice::<u8>(&long).unwrap_err();
    assert_eq!(err.kind().code(), "type_mismatch", "{err}");
    let want = big.from_slice_serde::<u8>(&long).unwrap_err();
    assert_eq!(err.to_string(), want.to_string());
}

#[test]
fn back_to_back_arrays_read_in_turn() {
    let recs = w2_records(9_000); // ~290 KiB: more than one block
    let floats: Vec<f64> = (0..6000).map(|i| i as f64 / 3.0).collect();
    let fdata: Vec<u8> = floats.iter().flat_map(|f| f.to_be_bytes()).collect();
    let yx: Vec<Yx> = (0..777)
        .map(|i| Yx {
            y: i as f64,
            x: -(i as f64),
        })
        .collect();
    let mut stream = w2_file(&recs, false);
    stream.extend(npy(">f8", &[60, 100], false, &fdata));
    stream.extend(npy_serde::to_vec(&yx).unwrap());
    stream.extend(w2_file(&recs[..10], true));
    stream.extend(npy("<i4", &[], false, &(-5i32).to_le_bytes()));
    let flagged = flagged(50);
    stream.extend(npy_serde::to_vec(&flagged).unwrap());

    let check = |r: &mut dyn Read, how: &str| {
        let a: Vec<W2> = npy_serde::from_reader(&mut *r).unwrap();
        assert_eq!(a, recs, "{how}");
        let b: Vec<f64> = npy_serde::from_reader(&mut *r).unwrap();
        assert_eq!(b, floats, "{how}");
        // By name (no tier).
        let c: Vec<Xy> = npy_serde::from_reader(&mut *r).unwrap();
        assert_eq!(c.len(), 777, "{how}");
        assert_eq!((c[5].x, c[5].y), (-5.0, 5.0), "{how}");
        let d: Vec<W2Be> = ReaderBuilder::new().from_reader(&mut *r).unwrap();
        assert_eq!(d.len(), 10, "{how}");
        assert_eq!(d[9], W2Be::from(recs[9]), "{how}");
        let e: Vec<i64> = npy_serde::from_reader(&mut *r).unwrap();
        assert_eq!(e, [-5], "{how}");
        let f: Vec<Flagged> = npy_serde::from_reader(&mut *r).unwrap();
        assert_eq!(f, flagged, "{how}");
        let end: Result<Vec<i64>, _> = npy_serde::from_reader(&mut *r);
        assert_eq!(end.unwrap_err().kind().code(), "unexpected_eof", "{how}");
    };
    let mut cur = Cursor::new(&stream);
    check(&mut cur, "Cursor");
    assert_eq!(cur.position(), stream.len() as u64);
    for step in [7, 65_537] {
        let mut t = Trickle {
            data: &stream,
            step,
        };
        check(&mut t, &format!("Trickle {step}"));
        assert!(t.data.is_empty());
    }
    // Mixed with from_reader_serde and the nested reader: each leaves the stream just after
    // its array.
    let mut cur = Cursor::new(&stream);
    let a: Vec<W2> = npy_serde::from_reader_serde(&mut cur).unwrap();
    assert_eq!(a, recs);
    let b: Vec<f64> = npy_serde::from_reader(&mut cur).unwrap();
    assert_eq!(b, floats);
    let c: Vec<Yx> = npy_serde::deserialize_reader(&mut cur).unwrap();
    assert_eq!(c, yx);
    // A bad element stops the read with an error; the stream is then somewhere in the array.
    let mut bad = w2_file(&recs[..100], false);
    let at = data_offset(&bad) + 50 * 33 + 20;
    bad[at] = 0;
    /// A `u8` that is never 0 (`NonZeroU8` has no `NpyRecord`).
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    #[serde(try_from = "u8")]
    struct Nz(u8);
    impl TryFrom<u8> for Nz {
        type Error = &'static str;
        fn try_from(v: u8) -> Result<Nz, &'static str> {
            if v == 0 {
                Err("a zero flag")
            } else {
                Ok(Nz(v))
            }
        }
    }
    #[derive(Deserialize, NpyRecord, Debug, PartialEq)]
    struct NzFlag {
        id: i64,
        x: f64,
        y: f32,
        flag: Nz,
        v: [f32; 3],
    }
    let err = npy_serde::from_reader::<_, NzFlag>(Cursor::new(&bad)).unwrap_err();
    let want = npy_serde::from_reader_serde::<_, NzFlag>(Cursor::new(&bad)).unwrap_err();
    assert_eq!(err.to_string(), want.to_string());
    assert_eq!(err.position().record, Some(50));
}

/// A reader that fails (`io::ErrorKind::Other`) once `ok` bytes were read.
struct Failing<'a> {
    data: &'a [u8],
    ok: usize,
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.ok == 0 {
            return Err(std::io::Error::other("the disk caught fire"));
        }
        let n = buf.len().min(self.ok).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.ok -= n;
        Ok(n)
    }
}

#[test]
fn reader_io_errors_same_errors() {
    let recs = w2_records(10_000); // 330 KB: the error comes in the first or the second block
    let file = w2_file(&recs, false);
    let start = data_offset(&file);
    for ok in [start - 1, start, start + 33 * 100 + 7, 300_000] {
        let records = npy_serde::from_reader::<_, W2>(Failing { data: &file, ok }).unwrap_err();
        let vec = npy_serde::from_reader_serde::<_, W2>(Failing { data: &file, ok }).unwrap_err();
        assert_eq!(differs::<W2>(&Err(records), &Err(vec)), None, "{ok}");
    }
    let err = npy_serde::from_reader::<_, W2>(Failing {
        data: &file,
        ok: 300_000,
    })
    .unwrap_err();
    assert_eq!(err.kind().code(), "io", "{err}");
    assert!(err.to_string().contains("the disk caught fire"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Every fixture, with generic types
// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_with_generic_types() {
    let dir = TempDir::new("read-records-fixtures");
    let path = dir.join("fixture.npy");
    let rb = ReaderBuilder::new();
    let e = Entries {
        rb: &rb,
        free: false,
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
