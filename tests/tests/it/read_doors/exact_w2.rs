//! W2 records through the record doors (both byte orders, many blocks, NumPy's files),
//! and misses in the middle of the array: a bad bool, data-dependent requests, widened fields, an
//! element conversion that fails.

use std::fmt::{self, Debug};
use std::fs;
use std::io::Cursor;

use npy_serde::{tier, MmapArray, NpyRecord};
use npy_serde_tests::{fixture, npy, Logged, TempDir, Trickle, W2};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::data::*;
use super::doors::*;

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
        // (`from_*_serde` gives these values too: see `serde_types::w2_records_into_structs_every_way`.) Both byte orders from a
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
    // Same sizes, other kinds: not the file's layout either; the error is the serde twin's.
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
