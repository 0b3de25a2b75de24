//! Arrays back to back in one stream, read in turn by the reader doors; readers that fail.

use std::fmt::Debug;
use std::io::{Cursor, Read};

use npy_serde::{NpyRecord, ReaderBuilder};
use npy_serde_tests::{npy, Trickle, W2};
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::data::*;
use super::doors::*;

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

#[test]
fn back_to_back_arrays_read_in_turn_serde() {
    let recs = w2_records(9_000); // ~290 KiB: more than one block
    let floats: Vec<f64> = (0..40_000).map(|i| i as f64 / 3.0).collect();
    let fdata: Vec<u8> = floats.iter().flat_map(|f| f.to_be_bytes()).collect();
    let mut stream = w2_raw_file(&recs, false);
    stream.extend(npy(">f8", &[200, 200], false, &fdata));
    stream.extend(npy("|S3", &[2], false, b"abcde\0"));
    stream.extend(w2_raw_file(&recs[..10], true));
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
