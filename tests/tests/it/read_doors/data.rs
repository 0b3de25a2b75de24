//! The arrays the checks read: W2 records (the shared `W2`, its big-endian twin, written by
//! `to_vec` or from raw bytes), the 13-byte `Flagged` records, same-layout `Xy`/`Yx`, element
//! types whose conversion fails for some values, and the header helpers.

use std::num::NonZeroU8;

use npy_serde::header::{parse_header, Limits};
use npy_serde::{DType, Header, NpyRecord};
use npy_serde_tests::W2;
use serde::{Deserialize, Serialize};

/// A version 1.0 file with the header dict `dict` as given (the writer refuses some dtypes that
/// a file may still hold), then `data`.
pub fn raw_npy(dict: &str, data: &[u8]) -> Vec<u8> {
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
pub fn data_offset(file: &[u8]) -> usize {
    parse_header(file, &Limits::default()).unwrap().data_offset as usize
}

/// The `descr` of a whole file's dtype.
pub fn descr_of(file: &[u8]) -> String {
    parse_header(file, &Limits::default())
        .unwrap()
        .header
        .dtype
        .descr()
}

/// The offset of the first data byte of a whole file, as error positions give it.
pub fn data_start(file: &[u8]) -> u64 {
    data_offset(file) as u64
}

/// W2 (`tests/src/lib.rs`) with every multi-byte field big-endian.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
#[npy(byte_order = "big")]
pub struct W2Be {
    pub id: i64,
    pub x: f64,
    pub y: f32,
    pub flag: u8,
    pub v: [f32; 3],
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
pub fn w2_records(n: usize) -> Vec<W2> {
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
pub fn w2_file(recs: &[W2], big: bool) -> Vec<u8> {
    if big {
        let be: Vec<W2Be> = recs.iter().map(|&r| r.into()).collect();
        npy_serde::to_vec(&be).unwrap()
    } else {
        npy_serde::to_vec(recs).unwrap()
    }
}

/// The W2 records' dtype, little-endian.
pub const W2_DESCR: &str = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]";

pub fn w2_descr(big: bool) -> String {
    if big {
        W2_DESCR.replace('<', ">")
    } else {
        W2_DESCR.to_string()
    }
}

/// The data bytes of `recs` in the W2 layout (33 bytes a record), in either byte order.
pub fn w2_data(recs: &[W2], big: bool) -> Vec<u8> {
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
pub fn w2_bits(recs: &[W2]) -> Vec<(i64, u64, u32, u8, [u32; 3])> {
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

/// A 1-D W2 file of `recs`, built with `Header::new(dtype, vec![n]).to_bytes()` (the bytes of
/// [`w2_file`]'s, from another writer).
pub fn w2_raw_file(recs: &[W2], big: bool) -> Vec<u8> {
    let dtype: DType = w2_descr(big).parse().unwrap();
    let mut file = Header::new(dtype, vec![recs.len() as u64])
        .to_bytes()
        .unwrap();
    file.extend(w2_data(recs, big));
    file
}
/// 13-byte records with a bool: `[('id', '<u4'), ('ok', '|b1'), ('x', '<f8')]`.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
pub struct Flagged {
    pub id: u32,
    pub ok: bool,
    pub x: f64,
}

#[derive(Serialize, NpyRecord)]
#[npy(byte_order = "big")]
pub struct FlaggedBe {
    pub id: u32,
    pub ok: bool,
    pub x: f64,
}

pub fn flagged(n: usize) -> Vec<Flagged> {
    (0..n)
        .map(|i| Flagged {
            id: i as u32 * 7,
            ok: i % 3 == 0,
            x: i as f64 / 8.0 - 3.0,
        })
        .collect()
}

pub fn flagged_be(recs: &[Flagged]) -> Vec<u8> {
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

/// A whole record with a `try_from` on the element itself: the exact tier decodes the W2, then
/// the conversion fails (a miss there), and the other tiers report the error.
#[derive(Deserialize, NpyRecord, Debug, PartialEq)]
#[serde(try_from = "W2")]
pub struct EvenId(pub W2);

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

/// The dangerous case: the same layout with other names. Values must be matched by name.
#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
pub struct Xy {
    pub x: f64,
    pub y: f64,
}

#[derive(Serialize, Deserialize, NpyRecord, Debug, PartialEq, Clone, Copy)]
pub struct Yx {
    pub y: f64,
    pub x: f64,
}
#[derive(Deserialize, Debug, PartialEq)]
pub struct NzFlag {
    pub id: i64,
    pub x: f64,
    pub y: f32,
    pub flag: NonZeroU8,
    pub v: [f32; 3],
}

/// A `u8` that is never 42: its visitor gets the value it asked for, and fails on this one.
#[derive(Deserialize, Debug, PartialEq, Clone, Copy)]
#[serde(try_from = "u8")]
pub struct Not42(pub u8);

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
pub struct Not42Flag {
    pub id: i64,
    pub x: f64,
    pub y: f32,
    pub flag: Not42,
    pub v: [f32; 3],
}

/// Two fields of W2, by name.
#[derive(Deserialize, Debug, PartialEq)]
pub struct Subset {
    pub flag: u8,
    pub x: f64,
}
