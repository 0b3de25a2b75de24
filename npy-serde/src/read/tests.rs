//! Unit tests of the read doors and their byte sources.

use super::*;
use crate::dtype::DType;
use crate::header::{Header, Limits};
use crate::value::{Array, Value};
use serde::Deserialize;
use std::io;
use std::io::Cursor;

/// A whole `.npy` file: header for (descr, shape, order), then `data`.
pub(crate) fn npy(descr: &str, shape: &[u64], fortran: bool, data: &[u8]) -> Vec<u8> {
    let dtype: DType = descr.parse().unwrap();
    let mut h = Header::new(dtype, shape.to_vec());
    h.fortran_order = fortran;
    let mut out = h.to_bytes().unwrap();
    out.extend_from_slice(data);
    out
}

/// A reader that returns at most `step` bytes per call, to exercise block boundaries.
pub(crate) struct Trickle<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Reads through every entry point that yields owned values and checks they agree.
fn all<T: DeserializeOwned + PartialEq + std::fmt::Debug>(file: &[u8]) -> Result<T> {
    let a: T = deserialize_slice(file)?;
    let b: T = deserialize_reader(Cursor::new(file))?;
    let c: T = deserialize_reader(Trickle {
        data: file,
        step: 3,
    })?;
    assert_eq!(a, b);
    assert_eq!(a, c);
    Ok(a)
}

fn code<T: std::fmt::Debug>(r: Result<T>) -> &'static str {
    r.unwrap_err().kind().code()
}

macro_rules! both_orders {
    ($($t:ty, $code:literal, $vals:expr;)*) => {$({
        let vals: Vec<$t> = $vals;
        let le: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let be: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
        let n = vals.len() as u64;
        let got: Vec<$t> = all(&npy(concat!("<", $code), &[n], false, &le)).unwrap();
        assert_eq!(got, vals, "<{}", $code);
        let got: Vec<$t> = all(&npy(concat!(">", $code), &[n], false, &be)).unwrap();
        assert_eq!(got, vals, ">{}", $code);
    })*};
}

#[test]
fn every_integer_and_float_in_both_byte_orders() {
    both_orders! {
        i8, "i1", vec![-128, 0, 127];
        u8, "u1", vec![0, 1, 255];
        i16, "i2", vec![i16::MIN, -1, 0, i16::MAX];
        u16, "u2", vec![0, 0x1234, u16::MAX];
        i32, "i4", vec![i32::MIN, -7, i32::MAX];
        u32, "u4", vec![0, 0xdead_beef, u32::MAX];
        i64, "i8", vec![i64::MIN, 0x0102_0304_0506_0708, i64::MAX];
        u64, "u8", vec![0, 0x0102_0304_0506_0708, u64::MAX];
        f32, "f4", vec![1.5, -0.0, f32::INFINITY, f32::MIN_POSITIVE];
        f64, "f8", vec![0.1, -2.5e300, f64::NEG_INFINITY, 5e-324];
    }
}

/// `f2` files read into `f32`/`f64` with or without feature `half`; into `half::f16` with it.
#[test]
fn half_floats() {
    let vals = [1.0f32, -0.5, 65504.0, 5.960_464_5e-8];
    // What `half::f16::from_f32` gives for each (checked below when the feature is on).
    let bits: Vec<u16> = vec![0x3c00, 0xb800, 0x7bff, 0x0001];
    #[cfg(feature = "half")]
    assert_eq!(
        vals.iter()
            .map(|&v| half::f16::from_f32(v).to_bits())
            .collect::<Vec<_>>(),
        bits
    );
    let le: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let be: Vec<u8> = bits.iter().flat_map(|b| b.to_be_bytes()).collect();
    for file in [npy("<f2", &[4], false, &le), npy(">f2", &[4], false, &be)] {
        let f: Vec<f32> = all(&file).unwrap();
        assert_eq!(f, vals);
        let d: Vec<f64> = all(&file).unwrap();
        assert_eq!(d, vals.map(f64::from));
        let a = Array::from_slice(&file).unwrap();
        assert_eq!(a.values, vals.map(|v| Value::Float(v.into())));
        #[cfg(feature = "half")]
        {
            let h: Vec<half::f16> = deserialize_slice(&file).unwrap();
            assert_eq!(h.iter().map(|h| h.to_bits()).collect::<Vec<_>>(), bits);
        }
    }
}

#[cfg(feature = "half")]
#[test]
fn half_from_a_wider_float_is_refused() {
    // half::f16 from a wider float would round: refused.
    let f4 = npy("<f4", &[1], false, &1.0f32.to_le_bytes());
    assert_eq!(
        code(deserialize_slice::<Vec<half::f16>>(&f4)),
        "type_mismatch"
    );
}

#[test]
fn widening_allowed_and_lossy_refused() {
    let i4 = npy("<i4", &[2], false, &[0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0]);
    assert_eq!(all::<Vec<i64>>(&i4).unwrap(), [-1, 5]);
    assert_eq!(all::<Vec<f64>>(&i4).unwrap(), [-1.0, 5.0]);
    assert_eq!(all::<Vec<i128>>(&i4).unwrap(), [-1, 5]);
    for r in [
        code(deserialize_slice::<Vec<u32>>(&i4)),
        code(deserialize_slice::<Vec<i16>>(&i4)),
        code(deserialize_slice::<Vec<f32>>(&i4)),
        code(deserialize_slice::<Vec<bool>>(&i4)),
        code(deserialize_slice::<Vec<String>>(&i4)),
    ] {
        assert_eq!(r, "type_mismatch");
    }
    let u4 = npy(">u4", &[1], false, &u32::MAX.to_be_bytes());
    assert_eq!(all::<Vec<i64>>(&u4).unwrap(), [u32::MAX as i64]);
    assert_eq!(all::<Vec<u64>>(&u4).unwrap(), [u32::MAX as u64]);
    assert_eq!(code(deserialize_slice::<Vec<i32>>(&u4)), "type_mismatch");
    let u1 = npy("|u1", &[1], false, &[200]);
    assert_eq!(all::<Vec<u16>>(&u1).unwrap(), [200]);
    assert_eq!(all::<Vec<i16>>(&u1).unwrap(), [200]);
    assert_eq!(all::<Vec<f32>>(&u1).unwrap(), [200.0]);
    assert_eq!(code(deserialize_slice::<Vec<i8>>(&u1)), "type_mismatch");
    let i2 = npy("<i2", &[1], false, &(-300i16).to_le_bytes());
    assert_eq!(all::<Vec<f32>>(&i2).unwrap(), [-300.0]);
    let f4 = npy("<f4", &[1], false, &0.1f32.to_le_bytes());
    assert_eq!(all::<Vec<f64>>(&f4).unwrap(), [0.1f32 as f64]);
    assert_eq!(code(deserialize_slice::<Vec<i64>>(&f4)), "type_mismatch");
    let f8 = npy("<f8", &[1], false, &0.1f64.to_le_bytes());
    let e = deserialize_slice::<Vec<f32>>(&f8).unwrap_err();
    assert_eq!(e.kind().code(), "type_mismatch");
    assert_eq!(e.position().record, Some(0));
    assert_eq!(e.position().byte, Some(128));
    assert!(
        e.to_string().contains("<f8") && e.to_string().contains("f32"),
        "{e}"
    );
    let i8 = npy("<i8", &[1], false, &1i64.to_le_bytes());
    assert_eq!(code(deserialize_slice::<Vec<f64>>(&i8)), "type_mismatch");
    assert_eq!(code(deserialize_slice::<Vec<u64>>(&i8)), "type_mismatch");
    let u8_ = npy("<u8", &[1], false, &1u64.to_le_bytes());
    assert_eq!(code(deserialize_slice::<Vec<i64>>(&u8_)), "type_mismatch");
    assert_eq!(all::<Vec<i128>>(&u8_).unwrap(), [1]);
}

#[test]
fn bools_and_invalid_bool_bytes() {
    let ok = npy("|b1", &[3], false, &[1, 0, 1]);
    assert_eq!(all::<Vec<bool>>(&ok).unwrap(), [true, false, true]);
    let bad = npy("|b1", &[3], false, &[1, 0, 2]);
    let e = deserialize_slice::<Vec<bool>>(&bad).unwrap_err();
    assert_eq!(e.kind().code(), "invalid_value");
    assert_eq!(e.position().byte, Some(128 + 2));
    assert_eq!(e.position().record, Some(2));
    assert_eq!(code(Array::from_slice(&bad)), "invalid_value");
    assert_eq!(
        code(deserialize_reader::<_, Vec<bool>>(Cursor::new(&bad))),
        "invalid_value"
    );
}

#[test]
fn long_double_rounds_to_nearest_even_like_numpy() {
    // (first 10 bytes of '<f16', f64 bits that NumPy 2.4 gives for .astype('<f8'))
    let cases: [(&str, u64); 16] = [
        ("abaaaaaaaaaaaaaafd3f", 4599676419421066581),
        ("0000000000000080cc3b", 0),
        ("00000000000000c0cc3b", 1),
        ("00000000000000c0cd3b", 2),
        ("00000000000000a0ce3b", 2),
        ("0000000000000080ff43", 9218868437227405312),
        ("00000000002000000080", 9223372036854775808),
        ("0004000000000080ff3f", 4607182418800017408),
        ("0104000000000080ff3f", 4607182418800017409),
        ("000c000000000080ff3f", 4607182418800017410),
        ("00fcfffffffffffffe43", 9218868437227405312),
        ("f0ffffffffffffff003c", 4503599627370496),
        ("00000000000000000080", 9223372036854775808),
        ("0000000000000080ff7f", 9218868437227405312),
        ("0000000000000080ffff", 18442240474082181120),
        ("01000000000000000000", 0),
    ];
    let mut le = Vec::new();
    let mut be = Vec::new();
    for (hex, _) in cases {
        let mut b = [0u8; 16];
        for i in 0..10 {
            b[i] = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
        }
        le.extend_from_slice(&b);
        b.reverse();
        be.extend_from_slice(&b);
    }
    let want: Vec<u64> = cases.iter().map(|c| c.1).collect();
    for file in [
        npy("<f16", &[16], false, &le),
        npy(">f16", &[16], false, &be),
    ] {
        let got: Vec<f64> = all(&file).unwrap();
        assert_eq!(got.iter().map(|f| f.to_bits()).collect::<Vec<_>>(), want);
        assert_eq!(code(deserialize_slice::<Vec<f32>>(&file)), "type_mismatch");
    }
    // NaN, pseudo-denormal and unnormal never panic.
    let nan = longdouble_to_f64([1, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0x7f, 0, 0, 0, 0, 0, 0]);
    assert!(nan.is_nan());
    let pseudo = longdouble_to_f64([0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(pseudo, 0.0);
    let unnormal = longdouble_to_f64([0, 0, 0, 0, 0, 0, 0, 0x40, 0xff, 0x3f, 0, 0, 0, 0, 0, 0]);
    assert!(unnormal.is_nan());
}

#[test]
fn complex_numbers() {
    let mut le = Vec::new();
    for v in [1.5f64, -2.0, 0.25, 4.0] {
        le.extend_from_slice(&v.to_le_bytes());
    }
    let be: Vec<u8> = le.chunks(8).flat_map(|c| c.iter().rev().copied()).collect();
    for file in [npy("<c16", &[2], false, &le), npy(">c16", &[2], false, &be)] {
        assert_eq!(
            all::<Vec<(f64, f64)>>(&file).unwrap(),
            [(1.5, -2.0), (0.25, 4.0)]
        );
        assert_eq!(
            all::<Vec<[f64; 2]>>(&file).unwrap(),
            [[1.5, -2.0], [0.25, 4.0]]
        );
        assert_eq!(
            code(deserialize_slice::<Vec<(f32, f32)>>(&file)),
            "type_mismatch"
        );
        assert_eq!(code(deserialize_slice::<Vec<f64>>(&file)), "type_mismatch");
        let a = Array::from_slice(&file).unwrap();
        assert_eq!(
            a.values,
            [Value::Complex(1.5, -2.0), Value::Complex(0.25, 4.0)]
        );
    }
    let c8: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let file = npy("<c8", &[1], false, &c8);
    assert_eq!(all::<Vec<(f32, f32)>>(&file).unwrap(), [(1.0, 2.0)]);
    assert_eq!(all::<Vec<(f64, f64)>>(&file).unwrap(), [(1.0, 2.0)]);
    #[cfg(feature = "complex")]
    {
        let z: Vec<num_complex::Complex<f64>> = deserialize_slice(&file).unwrap();
        assert_eq!(z, [num_complex::Complex::new(1.0, 2.0)]);
    }
}

#[test]
fn strings_bytes_void_and_datetimes() {
    let s = npy("|S4", &[3], false, b"ab\0\0abcd\0\0\0\0");
    assert_eq!(all::<Vec<String>>(&s).unwrap(), ["ab", "abcd", ""]);
    assert_eq!(
        all::<Vec<Vec<u8>>>(&s).unwrap(),
        [b"ab".to_vec(), b"abcd".to_vec(), vec![]]
    );
    assert_eq!(all::<Vec<[u8; 4]>>(&s).unwrap()[0], *b"ab\0\0");
    let borrowed: Vec<&str> = deserialize_slice(&s).unwrap();
    assert_eq!(borrowed, ["ab", "abcd", ""]);
    let bytes: Vec<&[u8]> = deserialize_slice(&s).unwrap();
    assert_eq!(bytes[1], b"abcd");
    // Borrowing is impossible from a reader: serde's own error.
    assert!(deserialize_reader::<_, Vec<String>>(Cursor::new(&s)).is_ok());

    let bad_utf8 = npy("|S2", &[1], false, b"a\xff");
    let e = deserialize_slice::<Vec<String>>(&bad_utf8).unwrap_err();
    assert_eq!(e.kind().code(), "invalid_value");
    assert_eq!(e.position().byte, Some(129));
    assert_eq!(all::<Vec<Vec<u8>>>(&bad_utf8).unwrap(), [b"a\xff".to_vec()]);

    let mut u_le = Vec::new();
    for c in "hé\u{1F600}".chars().chain(['z', '\0', '\0']) {
        u_le.extend_from_slice(&(c as u32).to_le_bytes());
    }
    let u_be: Vec<u8> = u_le
        .chunks(4)
        .flat_map(|c| c.iter().rev().copied())
        .collect();
    for file in [
        npy("<U3", &[2], false, &u_le),
        npy(">U3", &[2], false, &u_be),
    ] {
        assert_eq!(all::<Vec<String>>(&file).unwrap(), ["hé\u{1F600}", "z"]);
        assert_eq!(
            Array::from_slice(&file).unwrap().values,
            [
                Value::String("hé\u{1F600}".into()),
                Value::String("z".into())
            ]
        );
    }
    let c = npy("<U1", &[2], false, &[0x41, 0, 0, 0, 0xe9, 0, 0, 0]);
    assert_eq!(all::<Vec<char>>(&c).unwrap(), ['A', 'é']);
    let bad_cp = npy("<U2", &[1], false, &[0x41, 0, 0, 0, 0x00, 0xd8, 0, 0]);
    let e = deserialize_slice::<Vec<String>>(&bad_cp).unwrap_err();
    assert_eq!(e.kind().code(), "invalid_value");
    assert_eq!(e.position().byte, Some(132));
    assert_eq!(code(Array::from_slice(&bad_cp)), "invalid_value");
    let too_big = npy("<U1", &[1], false, &0x11_0000u32.to_le_bytes());
    assert_eq!(
        code(deserialize_slice::<Vec<String>>(&too_big)),
        "invalid_value"
    );

    let v = npy("|V3", &[1], false, &[0, 1, 0]);
    assert_eq!(all::<Vec<Vec<u8>>>(&v).unwrap(), [vec![0, 1, 0]]);
    assert_eq!(
        Array::from_slice(&v).unwrap().values,
        [Value::Void(vec![0, 1, 0])]
    );
    assert_eq!(
        Array::from_slice(&s).unwrap().values[0],
        Value::Bytes(b"ab".to_vec())
    );

    let m = npy(
        ">M8[D]",
        &[2],
        false,
        &[&7i64.to_be_bytes()[..], &i64::MIN.to_be_bytes()].concat(),
    );
    assert_eq!(all::<Vec<i64>>(&m).unwrap(), [7, i64::MIN]);
    assert_eq!(code(deserialize_slice::<Vec<i32>>(&m)), "type_mismatch");
    assert_eq!(
        Array::from_slice(&m).unwrap().values,
        [Value::DateTime(7), Value::DateTime(Value::NAT)]
    );
    let td = npy("<m8[25ms]", &[1], false, &(-3i64).to_le_bytes());
    assert_eq!(
        Array::from_slice(&td).unwrap().values,
        [Value::TimeDelta(-3)]
    );
}

#[derive(Deserialize, Debug, PartialEq)]
struct Inner {
    a: u8,
    b: i32,
}

#[derive(Deserialize, Debug, PartialEq)]
struct Outer {
    v: [f32; 3],
    pos: Inner,
    #[serde(rename = "name")]
    label: String,
    missing: Option<u8>,
    #[serde(default)]
    also_missing: u32,
    #[serde(alias = "idx")]
    id: i64,
}

fn nested_file(order: char) -> Vec<u8> {
    // id, 3 bytes padding, pos (a, b), name S3, v (3,) f4, 2 bytes padding
    let o = order;
    let descr = format!(
        "[('idx', '{o}i8'), ('', '|V3'), ('pos', [('a', '|u1'), ('b', '{o}i4')]), \
         ('name', '|S3'), ('v', '{o}f4', (3,)), ('extra', '{o}f8'), ('', '|V2')]"
    );
    let mut data = Vec::new();
    for r in 0..2i64 {
        let p = |d: &mut Vec<u8>, le: &[u8]| {
            if order == '<' {
                d.extend_from_slice(le)
            } else {
                d.extend(le.iter().rev())
            }
        };
        p(&mut data, &(r * 100).to_le_bytes());
        data.extend_from_slice(&[9, 9, 9]);
        data.push(r as u8 + 1);
        p(&mut data, &(-(r as i32)).to_le_bytes());
        data.extend_from_slice(if r == 0 { b"ab\0" } else { b"xyz" });
        for k in 0..3 {
            p(&mut data, &(r as f32 + k as f32 / 2.0).to_le_bytes());
        }
        p(&mut data, &f64::NAN.to_le_bytes());
        data.extend_from_slice(&[7, 7]);
    }
    npy(&descr, &[2], false, &data)
}

#[test]
fn nested_padded_subarray_records_by_name() {
    for order in ['<', '>'] {
        let file = nested_file(order);
        let got: Vec<Outer> = all(&file).unwrap();
        assert_eq!(
            got,
            [
                Outer {
                    v: [0.0, 0.5, 1.0],
                    pos: Inner { a: 1, b: 0 },
                    label: "ab".into(),
                    missing: None,
                    also_missing: 0,
                    id: 0
                },
                Outer {
                    v: [1.0, 1.5, 2.0],
                    pos: Inner { a: 2, b: -1 },
                    label: "xyz".into(),
                    missing: None,
                    also_missing: 0,
                    id: 100
                }
            ]
        );
        // Positional: a tuple of all fields in dtype order.
        type Row = (i64, (u8, i32), String, Vec<f32>, f64);
        let rows: Vec<Row> = all_nan_ok(&file);
        assert_eq!(rows[1].0, 100);
        assert_eq!(rows[1].1, (2, -1));
        assert_eq!(rows[1].3, [1.0, 1.5, 2.0]);
        // Dynamic values keep every field, in dtype order, padding omitted.
        let a = Array::from_slice(&file).unwrap();
        let names: Vec<&str> = match &a.values[0] {
            Value::Record(f) => f.iter().map(|(n, _)| n.as_str()).collect(),
            other => panic!("{other:?}"),
        };
        assert_eq!(names, ["idx", "pos", "name", "v", "extra"]);
        assert_eq!(
            a.values[1].get("v"),
            Some(&Value::List(vec![
                Value::Float(1.0),
                Value::Float(1.5),
                Value::Float(2.0)
            ]))
        );
    }
}

fn all_nan_ok<T: DeserializeOwned>(file: &[u8]) -> T {
    deserialize_reader(Trickle {
        data: file,
        step: 7,
    })
    .unwrap()
}

#[test]
fn mismatch_names_field_path_record_and_dtypes() {
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct BadInner {
        a: u8,
        b: i16,
    }
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Bad {
        pos: BadInner,
    }
    let file = nested_file('>');
    let start = parse_header(&file, &Limits::default()).unwrap().data_offset;
    assert_eq!(start, 256);
    let e = deserialize_slice::<Vec<Bad>>(&file).unwrap_err();
    assert_eq!(e.kind().code(), "type_mismatch");
    assert_eq!(e.position().field.as_deref(), Some("pos.b"));
    assert_eq!(e.position().record, Some(0));
    assert_eq!(e.position().byte, Some(256 + 12));
    assert_eq!(
        e.to_string(),
        "cannot read dtype >i4 as i16 (at record 0, field `pos.b`, byte 268)"
    );
    let e = deserialize_reader::<_, Vec<Bad>>(Trickle {
        data: &file,
        step: 1,
    })
    .unwrap_err();
    assert_eq!(e.position().byte, Some(256 + 12));
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct BadV {
        v: [i32; 3],
    }
    let e = deserialize_slice::<Vec<BadV>>(&nested_file('<')).unwrap_err();
    assert_eq!(e.position().field.as_deref(), Some("v[0]"));
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct ShortV {
        v: [f32; 2],
    }
    assert_eq!(
        code(deserialize_slice::<Vec<ShortV>>(&nested_file('<'))),
        "type_mismatch"
    );
}

#[test]
fn fortran_order_reads_in_logical_c_order() {
    // np.arange(6).reshape(2, 3) stored column-major: 0 3 1 4 2 5
    let data: Vec<u8> = [0i32, 3, 1, 4, 2, 5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let file = npy("<i4", &[2, 3], true, &data);
    assert_eq!(all::<Vec<Vec<i32>>>(&file).unwrap(), [[0, 1, 2], [3, 4, 5]]);
    assert_eq!(all::<Vec<[i32; 3]>>(&file).unwrap(), [[0, 1, 2], [3, 4, 5]]);
    let a = Array::from_slice(&file).unwrap();
    assert_eq!(a.values, (0..6).map(Value::Int).collect::<Vec<_>>());
    let b = Array::from_reader(Trickle {
        data: &file,
        step: 5,
    })
    .unwrap();
    assert_eq!(a, b);
    let mut rr = RecordReader::<_, i32>::new_serde(Cursor::new(&file)).unwrap();
    assert_eq!(
        rr.by_ref().collect::<Result<Vec<_>>>().unwrap(),
        [0, 1, 2, 3, 4, 5]
    );
    rr.seek_to_record(4).unwrap();
    assert_eq!(rr.next().unwrap().unwrap(), 4);
    // 3-D
    let shape = [2u64, 3, 4];
    let mut f = [0i16; 24];
    for i in 0..2 {
        for j in 0..3 {
            for k in 0..4 {
                f[i + 2 * j + 6 * k] = (i * 12 + j * 4 + k) as i16;
            }
        }
    }
    let data: Vec<u8> = f.iter().flat_map(|v| v.to_be_bytes()).collect();
    let file = npy(">i2", &shape, true, &data);
    let got: Vec<Vec<Vec<i16>>> = all(&file).unwrap();
    let flat: Vec<i16> = got.into_iter().flatten().flatten().collect();
    assert_eq!(flat, (0..24).collect::<Vec<i16>>());
}

#[test]
fn zero_d_empty_and_wrong_shapes() {
    let f = npy("<f8", &[], false, &2.5f64.to_le_bytes());
    assert_eq!(all::<f64>(&f).unwrap(), 2.5);
    assert_eq!(code(deserialize_slice::<Vec<f64>>(&f)), "type_mismatch");
    let a = Array::from_slice(&f).unwrap();
    assert_eq!((a.shape.len(), a.values.len()), (0, 1));
    let empty = npy("<f8", &[0], false, &[]);
    assert_eq!(all::<Vec<f64>>(&empty).unwrap(), Vec::<f64>::new());
    let e2 = npy("<i2", &[2, 0], false, &[]);
    assert_eq!(
        all::<Vec<Vec<i16>>>(&e2).unwrap(),
        [Vec::<i16>::new(), vec![]]
    );
    assert!(Array::from_slice(&e2).unwrap().values.is_empty());
    let one = npy("<i2", &[3], false, &[1, 0, 2, 0, 3, 0]);
    assert_eq!(code(deserialize_slice::<i16>(&one)), "type_mismatch");
    assert_eq!(code(deserialize_slice::<[i16; 2]>(&one)), "type_mismatch");
    assert_eq!(all::<(i16, i16, i16)>(&one).unwrap(), (1, 2, 3));
    // Zero-byte items: allowed, but bounded.
    let v0 = npy("|V0", &[5], false, &[]);
    assert_eq!(all::<Vec<Vec<u8>>>(&v0).unwrap().len(), 5);
    let huge = npy("|V0", &[1 << 40], false, &[]);
    assert_eq!(code(deserialize_slice::<Vec<()>>(&huge)), "limit_exceeded");
    assert_eq!(code(Array::from_slice(&huge)), "limit_exceeded");
}

#[test]
fn back_to_back_arrays_in_one_stream() {
    let mut stream = npy("<i4", &[2], false, &[1, 0, 0, 0, 2, 0, 0, 0]);
    stream.extend(npy("|S2", &[1], false, b"hi"));
    stream.extend(npy("<f8", &[], false, &1.0f64.to_le_bytes()));
    let mut r = Cursor::new(&stream);
    assert_eq!(deserialize_reader::<_, Vec<i32>>(&mut r).unwrap(), [1, 2]);
    assert_eq!(
        deserialize_reader::<_, Vec<String>>(&mut r).unwrap(),
        ["hi"]
    );
    assert_eq!(deserialize_reader::<_, f64>(&mut r).unwrap(), 1.0);
    assert_eq!(code(deserialize_reader::<_, f64>(&mut r)), "unexpected_eof");
    // A target that reads only part of the array still leaves the stream after it.
    let mut r = Cursor::new(&stream);
    deserialize_reader::<_, serde::de::IgnoredAny>(&mut r).unwrap();
    assert_eq!(
        deserialize_reader::<_, Vec<String>>(&mut r).unwrap(),
        ["hi"]
    );
    // Through RecordReader::into_inner.
    let mut r = Cursor::new(&stream);
    let mut rr = RecordReader::<_, i32>::new_serde(&mut r).unwrap();
    assert_eq!(rr.next().unwrap().unwrap(), 1);
    rr.into_inner().unwrap();
    assert_eq!(
        Array::from_reader(&mut r).unwrap().values,
        [Value::Bytes(b"hi".to_vec())]
    );
    // Trailing bytes after an array in a slice are ignored.
    assert_eq!(deserialize_slice::<Vec<i32>>(&stream).unwrap(), [1, 2]);
}

#[test]
fn truncated_data_is_eof_with_counts() {
    let mut file = npy("<f8", &[4], false, &[0; 32]);
    file.truncate(file.len() - 5);
    for e in [
        deserialize_slice::<Vec<f64>>(&file).unwrap_err(),
        deserialize_reader::<_, Vec<f64>>(Cursor::new(&file)).unwrap_err(),
        deserialize_reader::<_, Vec<f64>>(Trickle {
            data: &file,
            step: 2,
        })
        .unwrap_err(),
        Array::from_slice(&file).unwrap_err(),
        Array::from_reader(Cursor::new(&file)).unwrap_err(),
    ] {
        assert_eq!(e.kind().code(), "unexpected_eof", "{e}");
        assert!(
            e.to_string().contains("needed 32 bytes") && e.to_string().contains("found 27"),
            "{e}"
        );
        assert_eq!(e.position().byte, Some(128 + 27));
    }
    // A huge declared shape with no data fails without allocating.
    let huge = npy("<f8", &[1 << 59], false, &[]);
    assert_eq!(code(deserialize_slice::<Vec<f64>>(&huge)), "unexpected_eof");
    assert_eq!(
        code(deserialize_reader::<_, Vec<f64>>(Cursor::new(&huge))),
        "unexpected_eof"
    );
    assert_eq!(
        code(Array::from_reader(Cursor::new(&huge))),
        "unexpected_eof"
    );
    let rb = ReaderBuilder::new().max_data_size(1000);
    assert_eq!(
        code(rb.deserialize_slice::<Vec<f64>>(&huge)),
        "limit_exceeded"
    );
}

#[test]
fn from_path_and_mmap() {
    let dir = std::env::temp_dir().join(format!("npy-serde-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("names.npy");
    std::fs::write(&path, npy("|S5", &[3], false, b"alphabeta\0gamma")).unwrap();
    assert_eq!(
        deserialize_path::<_, Vec<String>>(&path).unwrap(),
        ["alpha", "beta", "gamma"]
    );
    assert_eq!(Array::from_path(&path).unwrap().values.len(), 3);
    let map = crate::MmapArray::open(&path).unwrap();
    assert_eq!(map.len(), 3);
    assert_eq!(map.data(), b"alphabeta\0gamma");
    let names: Vec<&str> = map.deserialize().unwrap();
    assert_eq!(names, ["alpha", "beta", "gamma"]);
    let second: &[u8] = map.record_serde(1).unwrap();
    assert_eq!(second, b"beta");
    assert_eq!(code(map.record_serde::<&str>(3)), "limit_exceeded");
    let all: Vec<&str> = map.records_serde().unwrap().collect::<Result<_>>().unwrap();
    assert_eq!(all, names);
    assert_eq!(
        map.to_array().unwrap().values[2],
        Value::Bytes(b"gamma".to_vec())
    );
    let short = dir.join("short.npy");
    std::fs::write(&short, npy("|S5", &[3], false, b"alpha")).unwrap();
    assert_eq!(
        code(deserialize_path::<_, Vec<String>>(&short)),
        "unexpected_eof"
    );
    assert_eq!(code(crate::MmapArray::open(&short)), "unexpected_eof");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn record_reader_streams_and_seeks() {
    let data: Vec<u8> = (0..10_000i64).flat_map(|v| v.to_be_bytes()).collect();
    let file = npy(">i8", &[100, 100], false, &data);
    let mut rr = ReaderBuilder::new()
        .records_serde::<_, i64>(Cursor::new(&file))
        .unwrap();
    assert_eq!(rr.len(), 10_000);
    assert_eq!(rr.header().shape, [100, 100]);
    assert_eq!(rr.next().unwrap().unwrap(), 0);
    rr.seek_to_record(9_998).unwrap();
    assert_eq!(
        rr.by_ref().collect::<Result<Vec<_>>>().unwrap(),
        [9_998, 9_999]
    );
    assert!(rr.next().is_none());
    rr.seek_to_record(17).unwrap();
    assert_eq!(rr.next().unwrap().unwrap(), 17);
    assert_eq!(code(rr.seek_to_record(10_001)), "limit_exceeded");
    // from_parts: the caller parsed the header.
    let mut cur = Cursor::new(&file);
    let ph = read_header(&mut cur, &Limits::default()).unwrap();
    let rr = RecordReader::<_, i64>::from_parts(&mut cur, ph.clone()).unwrap();
    assert_eq!(
        rr.map(|r| r.unwrap()).sum::<i64>(),
        (0..10_000i64).sum::<i64>()
    );
    let mut cur = Cursor::new(&file);
    cur.set_position(ph.data_offset);
    let v: Vec<Vec<i64>> = ReaderBuilder::new()
        .from_reader_with_header(&mut cur, &ph)
        .unwrap();
    assert_eq!(v[99][99], 9_999);
    // A bad element is an error for that element only; truncation ends the iteration.
    let bad = npy("|b1", &[3], false, &[1, 5, 0]);
    let got: Vec<_> = RecordReader::<_, bool>::new_serde(Cursor::new(&bad))
        .unwrap()
        .collect();
    assert!(got[0].as_ref().unwrap() & got[1].is_err() & !got[2].as_ref().unwrap());
    let trunc = &bad[..bad.len() - 1];
    let got: Vec<_> = RecordReader::<_, bool>::new_serde(Cursor::new(trunc))
        .unwrap()
        .collect();
    assert_eq!(got.len(), 3);
    assert!(got[2].as_ref().unwrap_err().is_eof());
}

/// Records whose fields are exactly the struct's take the positional fast path; the values,
/// conversions and error positions must be those of the by-name path.
#[test]
fn exact_field_structs_read_positionally_with_the_same_results() {
    fn rec_bytes(order: char) -> Vec<u8> {
        let mut d = Vec::new();
        for i in 0..3u32 {
            macro_rules! put {
                ($v:expr) => {
                    if order == '>' {
                        d.extend_from_slice(&$v.to_be_bytes())
                    } else {
                        d.extend_from_slice(&$v.to_le_bytes())
                    }
                };
            }
            put!(i as i64 - 1);
            put!(i as f64 * 0.5);
            put!(i as f32 + 0.25);
            d.push(i as u8 + 7);
            for k in 0..3 {
                put!((i * 10 + k) as f32);
            }
        }
        let descr = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]"
            .replace('<', &order.to_string());
        npy(&descr, &[3], false, &d)
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Exact {
        id: i64,
        x: f64,
        y: f32,
        flag: u8,
        v: [f32; 3],
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Reordered {
        v: Vec<f32>,
        flag: u8,
        y: f32,
        x: f64,
        id: i64,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Widened {
        id: Option<i64>,
        x: f64,
        y: f64,
        flag: u16,
        v: (f64, f32, f64),
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Skipping {
        id: i64,
        x: f64,
        #[serde(skip_deserializing)]
        extra: u32,
        y: f32,
        flag: u8,
        v: [f32; 3],
    }
    for order in ['<', '>'] {
        let file = rec_bytes(order);
        let exact: Vec<Exact> = deserialize_slice(&file).unwrap();
        let skipping: Vec<Skipping> = deserialize_slice(&file).unwrap();
        for (s, e) in skipping.iter().zip(&exact) {
            assert_eq!(
                (s.id, s.x, s.extra, s.y, s.flag, s.v),
                (e.id, e.x, 0, e.y, e.flag, e.v)
            );
        }
        let by_name: Vec<Reordered> = deserialize_slice(&file).unwrap();
        let widened: Vec<Widened> = deserialize_slice(&file).unwrap();
        let streamed: Vec<Exact> = deserialize_reader(Trickle {
            data: &file,
            step: 5,
        })
        .unwrap();
        assert_eq!(exact, streamed);
        for (i, ((e, r), w)) in exact.iter().zip(&by_name).zip(&widened).enumerate() {
            let i = i as u32;
            let want = Exact {
                id: i as i64 - 1,
                x: i as f64 * 0.5,
                y: i as f32 + 0.25,
                flag: i as u8 + 7,
                v: [(i * 10) as f32, (i * 10 + 1) as f32, (i * 10 + 2) as f32],
            };
            assert_eq!(e, &want);
            assert_eq!(
                (r.id, r.x, r.y, r.flag, &r.v[..]),
                (e.id, e.x, e.y, e.flag, &e.v[..])
            );
            assert_eq!(w.id, Some(e.id));
            assert_eq!((w.y, w.flag), (e.y as f64, e.flag as u16));
            assert_eq!(w.v, (e.v[0] as f64, e.v[1], e.v[2] as f64));
        }

        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct BadY {
            id: i64,
            x: f64,
            y: i16,
            flag: u8,
            v: [f32; 3],
        }
        let start = parse_header(&file, &Limits::default()).unwrap().data_offset;
        for e in [
            deserialize_slice::<Vec<BadY>>(&file).unwrap_err(),
            deserialize_reader::<_, Vec<BadY>>(Trickle {
                data: &file,
                step: 3,
            })
            .unwrap_err(),
        ] {
            assert_eq!(e.kind().code(), "type_mismatch");
            assert_eq!(e.position().field.as_deref(), Some("y"));
            assert_eq!(e.position().record, Some(0));
            assert_eq!(e.position().byte, Some(start + 16));
        }
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct BadV {
            id: i64,
            x: f64,
            y: f32,
            flag: u8,
            v: [f32; 2],
        }
        assert_eq!(
            code(deserialize_slice::<Vec<BadV>>(&file)),
            "type_mismatch",
            "a subarray of 3 is not a [f32; 2]"
        );
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct BadItem {
            id: i64,
            x: f64,
            y: f32,
            flag: u8,
            v: [i32; 3],
        }
        let e = deserialize_slice::<Vec<BadItem>>(&file).unwrap_err();
        assert_eq!(e.position().field.as_deref(), Some("v[0]"));
        assert_eq!(e.position().byte, Some(start + 21));
    }
}

#[test]
fn maps_enums_values_and_unknown_fields() {
    use std::collections::BTreeMap;
    let file = nested_file('<');
    let maps: Vec<BTreeMap<String, Value>> = deserialize_slice(&file).unwrap();
    assert_eq!(maps[1]["idx"], Value::Int(100));
    assert_eq!(maps[1]["name"], Value::Bytes(b"xyz".to_vec()));
    assert_eq!(
        maps[0]["pos"],
        Value::Record(vec![
            ("a".into(), Value::UInt(1)),
            ("b".into(), Value::Int(0))
        ])
    );
    let vals: Vec<Value> = deserialize_slice(&file).unwrap();
    assert_eq!(vals[0].get("name"), Some(&Value::Bytes(b"ab".to_vec())));

    #[derive(Deserialize, Debug, PartialEq)]
    enum Color {
        Red,
        Blue,
    }
    #[derive(Deserialize, Debug, PartialEq)]
    struct Row {
        c: Color,
    }
    let f = npy("[('x', '<i4'), ('c', '<U4')]", &[2], false, &{
        let mut d = Vec::new();
        for w in ["Red", "Blue"] {
            d.extend_from_slice(&0i32.to_le_bytes());
            let mut u: Vec<u32> = w.chars().map(|c| c as u32).collect();
            u.resize(4, 0);
            d.extend(u.iter().flat_map(|c| c.to_le_bytes()));
        }
        d
    });
    assert_eq!(
        all::<Vec<Row>>(&f).unwrap(),
        [Row { c: Color::Red }, Row { c: Color::Blue }]
    );
    // An unnamed field with an undecodable value is never decoded.
    #[derive(Deserialize, Debug, PartialEq)]
    struct OnlyX {
        x: i32,
    }
    let f = npy(
        "[('x', '<i4'), ('flag', '|b1')]",
        &[1],
        false,
        &[3, 0, 0, 0, 9],
    );
    assert_eq!(all::<Vec<OnlyX>>(&f).unwrap(), [OnlyX { x: 3 }]);
    assert_eq!(code(deserialize_slice::<Vec<Value>>(&f)), "invalid_value");
    // Missing required field: serde's message, with the record index.
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct NeedsY {
        y: i32,
    }
    let e = deserialize_slice::<Vec<NeedsY>>(&f).unwrap_err();
    assert_eq!(e.kind().code(), "message");
    assert_eq!(e.position().record, Some(0));
}

#[test]
fn to_nested_with_a_zero_axis_before_axes_whose_product_overflows() {
    // Found by the npy fuzz target (tests/fixtures/fuzz-regressions/npy-2.bin): 0 elements,
    // so the file is valid, but the product of the axes below the 0 overflowed in to_nested.
    let file = npy("<f8", &[1, 0, 3, i64::MAX as u64], false, &[]);
    let a = Array::from_slice(&file).unwrap();
    assert!(a.values.is_empty());
    assert_eq!(a.to_nested(), Value::List(vec![Value::List(Vec::new())]));
    let file = npy("<f8", &[2, 1 << 40, 1 << 40, 0], false, &[]);
    assert!(
        Array::from_slice(&file).is_err(),
        "2^81 empty lists: over the limit"
    );
}
