//! Unit tests of the element serializer.

use super::*;
use crate::dtype::DType;
use crate::value::Value;
use crate::write::elem::ElemSer;
use crate::write::plan::Plan;
use crate::write::shape::{infer_shape, ElemKind};
use serde::Serialize;

/// Encodes `value` as one element of `dtype`.
fn enc<T: Serialize + ?Sized>(dtype: &str, value: &T) -> Result<Vec<u8>> {
    let dt: DType = dtype.parse().unwrap();
    let plan = Plan::new(&dt).unwrap();
    let mut buf = vec![0xAAu8; plan.itemsize];
    value.serialize(ElemSer::new(&plan.root, &mut buf))?;
    Ok(buf)
}

fn ok<T: Serialize + ?Sized>(dtype: &str, value: &T) -> Vec<u8> {
    enc(dtype, value).unwrap_or_else(|e| panic!("{dtype}: {e}"))
}

fn err<T: Serialize + ?Sized>(dtype: &str, value: &T) -> String {
    match enc(dtype, value) {
        Ok(b) => panic!("{dtype}: expected an error, wrote {b:?}"),
        Err(e) => {
            assert_eq!(e.kind().code(), "write", "{e}");
            e.to_string()
        }
    }
}

#[test]
fn integers_both_orders_value_checked() {
    assert_eq!(ok("|b1", &true), [1]);
    assert_eq!(ok("|b1", &false), [0]);
    assert_eq!(ok("|i1", &-2i64), [0xfe]);
    assert_eq!(ok("|u1", &255u32), [255]);
    assert_eq!(ok("<i2", &-2i8), [0xfe, 0xff]);
    assert_eq!(ok(">i2", &-2i8), [0xff, 0xfe]);
    assert_eq!(ok("<u2", &0x1234u64), [0x34, 0x12]);
    assert_eq!(ok(">u2", &0x1234u64), [0x12, 0x34]);
    assert_eq!(ok("<i4", &7u64), 7i32.to_le_bytes());
    assert_eq!(ok(">i4", &-7i128), (-7i32).to_be_bytes());
    assert_eq!(ok("<u4", &7u8), 7u32.to_le_bytes());
    assert_eq!(ok(">u4", &7u8), 7u32.to_be_bytes());
    assert_eq!(ok("<i8", &i64::MIN), i64::MIN.to_le_bytes());
    assert_eq!(ok(">i8", &i64::MIN), i64::MIN.to_be_bytes());
    assert_eq!(ok("<u8", &u64::MAX), u64::MAX.to_le_bytes());
    assert_eq!(ok(">u8", &u64::MAX), u64::MAX.to_be_bytes());
    assert!(err("|i1", &128i32).contains("128 is out of range for |i1"));
    assert!(err("<u4", &-1i32).contains("out of range for <u4"));
    assert!(err("<i4", &(u64::MAX)).contains("out of range"));
    assert!(err("<u8", &u128::MAX).contains("out of range"));
    assert!(err("|b1", &1).contains("only a bool"));
    assert!(err("<i4", &1.0f64).contains("only lossless"));
    assert!(err("|u1", &true).contains("a bool cannot be stored as |u1"));
}

#[test]
fn floats_exact_only() {
    assert_eq!(ok("<f8", &1.5f64), 1.5f64.to_le_bytes());
    assert_eq!(ok(">f8", &1.5f64), 1.5f64.to_be_bytes());
    assert_eq!(ok("<f4", &1.5f64), 1.5f32.to_le_bytes());
    assert_eq!(ok(">f4", &0.1f32), 0.1f32.to_be_bytes());
    assert_eq!(ok("<f8", &0.1f32), (0.1f32 as f64).to_le_bytes());
    assert!(err("<f4", &0.1f64).contains("not exactly representable as <f4"));
    assert_eq!(ok("<f4", &f64::NAN)[..], f32::NAN.to_le_bytes());
    assert_eq!(ok("<f4", &f64::INFINITY), f32::INFINITY.to_le_bytes());
    // Integers into floats when exact.
    assert_eq!(ok("<f8", &3i32), 3.0f64.to_le_bytes());
    assert_eq!(ok("<f4", &16777216i64), 16777216f32.to_le_bytes());
    assert!(err("<f4", &16777217i64).contains("not exactly representable"));
    assert!(err("<f8", &(i64::MAX)).contains("not exactly representable"));
    // f2
    // The `f2` bits of 1.5 and -2.0.
    #[cfg(feature = "half")]
    assert_eq!(
        [1.5f32, -2.0].map(|v| half::f16::from_f32(v).to_bits()),
        [0x3e00, 0xc000]
    );
    assert_eq!(ok("<f2", &1.5f64), 0x3e00u16.to_le_bytes());
    assert_eq!(ok(">f2", &-2.0f32), 0xc000u16.to_be_bytes());
    assert!(err("<f2", &0.1f32).contains("<f2"));
    assert!(err("<f2", &70000.0f64).contains("<f2"));
}

/// `half::f16` derives Serialize as a newtype "f16" around its bits (when its `serde`
/// feature is on); emulate exactly that shape.
struct F16(u16);
impl Serialize for F16 {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_newtype_struct("f16", &self.0)
    }
}

#[test]
fn half_bits_taken_exactly() {
    // `half::f16::from_f32(0.1)`, which is 0.0999755859375.
    let h = 0x2e66u16;
    #[cfg(feature = "half")]
    assert_eq!(half::f16::from_f32(0.1).to_bits(), h);
    assert_eq!(ok("<f2", &F16(h)), h.to_le_bytes());
    assert_eq!(ok(">f2", &F16(h)), h.to_be_bytes());
    assert_eq!(ok("<f4", &F16(h)), 0.099_975_586f32.to_le_bytes());
    // A NaN with payload survives bit for bit.
    assert_eq!(ok("<f2", &F16(0x7e01)), 0x7e01u16.to_le_bytes());
}

fn x87(v: f64) -> Vec<u8> {
    ok("<f16", &v)
}

#[test]
fn longdouble_encoding() {
    // Reference bytes from NumPy: np.array([...], dtype='<f16').tobytes()[:10].
    assert_eq!(x87(1.0)[..10], [0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f]);
    assert_eq!(x87(-2.0)[..10], [0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0xc0]);
    assert_eq!(
        x87(1e300)[..10],
        [0, 224, 172, 3, 64, 228, 33, 191, 227, 67]
    );
    assert_eq!(
        x87(0.1)[..10],
        [0, 208, 204, 204, 204, 204, 204, 204, 251, 63]
    );
    assert_eq!(x87(0.0), [0u8; 16]);
    assert_eq!(x87(-0.0)[9], 0x80);
    assert_eq!(
        x87(f64::INFINITY)[..10],
        [0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x7f]
    );
    assert_eq!(x87(f64::NAN)[..10], [0, 0, 0, 0, 0, 0, 0, 0xc0, 0xff, 0x7f]);
    // Smallest subnormal f64 2^-1074 is normal in x87: exponent 16383-1074.
    let e = 16383u16 - 1074;
    let mut want = vec![0, 0, 0, 0, 0, 0, 0, 0x80];
    want.extend_from_slice(&e.to_le_bytes());
    assert_eq!(x87(f64::from_bits(1))[..10], want[..]);
    // Padding bytes are zero; big-endian reverses all 16 bytes.
    assert_eq!(x87(1.0)[10..], [0u8; 6]);
    let mut be = ok(">f16", &1.0f64);
    be.reverse();
    assert_eq!(be, x87(1.0));
    // Integers: exact up to 64 bits of mantissa.
    assert_eq!(ok("<f16", &1i32), x87(1.0));
    let m = ok("<f16", &u64::MAX);
    assert_eq!(m[..8], [0xff; 8]);
    assert_eq!(u16::from_le_bytes([m[8], m[9]]), 16383 + 63);
    assert!(err("<f16", &((1i128 << 65) + 1)).contains("not exactly"));
}

#[test]
fn complex_pairs() {
    let mut want = 1.5f32.to_le_bytes().to_vec();
    want.extend_from_slice(&(-2f32).to_le_bytes());
    assert_eq!(ok("<c8", &(1.5f32, -2.0f32)), want);
    assert_eq!(ok("<c8", &[1.5f64, -2.0]), want);
    let mut want = 1.5f64.to_be_bytes().to_vec();
    want.extend_from_slice(&0f64.to_be_bytes());
    assert_eq!(ok(">c16", &1.5f64), want);
    let c = ok(">c32", &(1.0f64, 2.0f64));
    let mut re = x87(1.0);
    re.reverse();
    let mut im = x87(2.0);
    im.reverse();
    assert_eq!(c[..16], re[..]);
    assert_eq!(c[16..], im[..]);
    assert!(err("<c8", &(1.0f64, 0.1f64)).contains("imag"));
    assert!(err("<c16", &[1.0f64, 2.0, 3.0]).contains("pair"));
    assert!(err("<c16", &[1.0f64]).contains("1 items"));
}

#[test]
fn strings_exact_width_and_too_long() {
    assert_eq!(ok("|S5", "abc"), b"abc\0\0");
    assert_eq!(ok("|S5", "abcde"), b"abcde");
    assert_eq!(ok("|S3", &serde_bytes_like(b"a\0b")), b"a\0b");
    assert_eq!(ok("|S3", &[104u8, 105]), b"hi\0");
    assert_eq!(ok("|S2", &'x'), b"x\0");
    let e = err("|S5", "abcdef");
    assert!(e.contains("6 bytes") && e.contains("|S5"), "{e}");
    assert!(err("|S2", &[1u8, 2, 3]).contains("truncated"));
    let mut want = Vec::new();
    for c in ['é', '€', 0 as char] {
        want.extend_from_slice(&(c as u32).to_le_bytes());
    }
    assert_eq!(ok("<U3", "é€"), want);
    let mut want = Vec::new();
    for c in ['é', '€', 0 as char] {
        want.extend_from_slice(&(c as u32).to_be_bytes());
    }
    assert_eq!(ok(">U3", "é€"), want);
    assert_eq!(ok("<U2", "ab").len(), 8);
    let e = err("<U2", "abc");
    assert!(e.contains("3 characters") && e.contains("<U2"), "{e}");
    assert_eq!(ok("|V2", &serde_bytes_like(b"\x01\x02")), [1, 2]);
    assert_eq!(ok("|V2", &[1u8, 2]), [1, 2]);
    assert!(err("|V3", &serde_bytes_like(b"\x01")).contains("exactly 3"));
    assert!(err("<U3", &serde_bytes_like(b"x")).contains("bytes cannot be stored as <U3"));
}

/// Serializes as serde bytes.
struct Bytes<'a>(&'a [u8]);
impl Serialize for Bytes<'_> {
    fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}
fn serde_bytes_like(b: &[u8]) -> Bytes<'_> {
    Bytes(b)
}

#[test]
fn datetimes_and_nat() {
    assert_eq!(ok("<M8[D]", &5i64), 5i64.to_le_bytes());
    assert_eq!(ok(">m8[25ms]", &-5i32), (-5i64).to_be_bytes());
    assert_eq!(ok("<M8[ns]", "NaT"), i64::MIN.to_le_bytes());
    assert!(err("<M8[D]", &u64::MAX).contains("out of range"));
    assert!(err("<M8[D]", "2020-01-01").contains("string"));
}

#[test]
fn none_refused_some_written() {
    let e = err("<f8", &None::<f64>);
    assert!(e.contains("no null"), "{e}");
    assert_eq!(ok("<f8", &Some(1.0f64)), 1.0f64.to_le_bytes());
    assert!(err("<f8", &()).contains("`()`"));
}

#[derive(Serialize, Clone)]
struct Inner {
    x: u8,
    y: i16,
}

#[derive(Serialize)]
struct Outer {
    a: i32,
    inner: Inner,
    name: &'static str,
    v: [f32; 2],
}

const OUTER: &str = "[('a', '<i4'), ('inner', [('x', '|u1'), ('', '|V1'), ('y', '>i2')]), \
                     ('', '|V2'), ('name', '|S4'), ('v', '<f4', (2,))]";

#[test]
fn nested_records_with_zeroed_padding() {
    let rec = Outer {
        a: -1,
        inner: Inner { x: 7, y: 0x102 },
        name: "ab",
        v: [1.0, 2.0],
    };
    let b = ok(OUTER, &rec);
    let mut want = (-1i32).to_le_bytes().to_vec();
    want.extend_from_slice(&[7, 0, 1, 2]); // x, pad, y big-endian
    want.extend_from_slice(&[0, 0]); // pad
    want.extend_from_slice(b"ab\0\0");
    want.extend_from_slice(&1f32.to_le_bytes());
    want.extend_from_slice(&2f32.to_le_bytes());
    assert_eq!(b, want);
}

#[test]
fn record_errors_name_the_field_path() {
    let rec = Outer {
        a: 1,
        inner: Inner { x: 1, y: 2 },
        name: "toolong",
        v: [0.0; 2],
    };
    let e = enc(OUTER, &rec).unwrap_err();
    assert_eq!(e.position().field.as_deref(), Some("name"));
    assert!(e.to_string().contains("7 bytes"), "{e}");

    let dt = "[('inner', [('x', '|i1'), ('y', '<i2')])]";
    #[derive(Serialize)]
    struct W {
        inner: Inner,
    }
    let e = enc(
        dt,
        &W {
            inner: Inner { x: 200, y: 0 },
        },
    )
    .unwrap_err();
    assert_eq!(e.position().field.as_deref(), Some("inner.x"));

    let e = enc(
        "[('v', '<i2', (2, 2))]",
        &serde_json::json!({"v": [[1, 2], [3, 70000]]}),
    )
    .unwrap_err();
    assert_eq!(e.position().field.as_deref(), Some("v[1][1]"));
}

#[test]
fn records_by_name_map_tuple_and_missing_fields() {
    let dt = "[('a', '<i4'), ('b', '|u1')]";
    #[derive(Serialize)]
    struct Rev {
        b: u8,
        a: i32,
    }
    let want = [1, 0, 0, 0, 2];
    assert_eq!(ok(dt, &Rev { b: 2, a: 1 }), want);
    assert_eq!(ok(dt, &serde_json::json!({"b": 2, "a": 1})), want);
    assert_eq!(ok(dt, &(1i32, 2u8)), want);
    #[derive(Serialize)]
    struct OnlyA {
        a: i32,
    }
    assert!(err(dt, &OnlyA { a: 1 }).contains("no value for field(s) b"));
    #[derive(Serialize)]
    struct Extra {
        a: i32,
        b: u8,
        c: u8,
    }
    assert!(err(dt, &Extra { a: 1, b: 2, c: 3 }).contains("no field `c`"));
    assert!(err(dt, &(1i32,)).contains("1 items"));
    assert!(err("<f8", &Rev { b: 1, a: 1 }).contains("struct `Rev`"));
    // Titles are accepted as keys.
    let titled = DType::Record(
        crate::dtype::Record::packed([("a", DType::scalar(Scalar::U8))])
            .unwrap()
            .with_title("a", "Alpha")
            .unwrap(),
    );
    assert_eq!(ok(&titled.descr(), &serde_json::json!({"Alpha": 9})), [9]);
}

#[test]
fn subarrays_nested_and_bytes() {
    assert_eq!(
        ok("('<i2', (2, 2))", &[[1i16, 2], [3, 4]]),
        [1, 0, 2, 0, 3, 0, 4, 0]
    );
    assert!(err("('<i2', (2, 2))", &[1i16, 2, 3, 4]).contains("4 items"));
    assert!(err("('<i2', (2, 2))", &vec![vec![1i16, 2], vec![3]]).contains("1 items"));
    assert_eq!(ok("('|u1', (3,))", &serde_bytes_like(b"abc")), b"abc");
    assert!(err("('|u1', (3,))", &serde_bytes_like(b"ab")).contains("2 bytes"));
    // A nested subarray descr flattens.
    assert_eq!(
        ok("(('|u1', (2,)), (2,))", &[[1u8, 2], [3, 4]]),
        [1, 2, 3, 4]
    );
}

#[test]
fn unit_variants_into_strings() {
    #[derive(Serialize)]
    enum Color {
        Red,
    }
    assert_eq!(ok("|S4", &Color::Red), b"Red\0");
    assert!(err("<i4", &Color::Red).contains("Red"));
}

#[test]
fn value_serializes_back() {
    let v = Value::Record(vec![
        ("a".into(), Value::Int(-1)),
        ("c".into(), Value::Complex(1.0, 2.0)),
        ("s".into(), Value::Bytes(b"hi".to_vec())),
        ("u".into(), Value::String("é".into())),
        ("t".into(), Value::DateTime(Value::NAT)),
        (
            "l".into(),
            Value::List(vec![Value::Float(0.5), Value::UInt(2)]),
        ),
        ("v".into(), Value::Void(vec![9, 8])),
        ("b".into(), Value::Bool(true)),
    ]);
    let dt = "[('a', '<i2'), ('c', '<c8'), ('s', '|S3'), ('u', '<U1'), ('t', '<M8[s]'), \
              ('l', '<f4', (2,)), ('v', '|V2'), ('b', '|b1')]";
    let b = ok(dt, &v);
    let mut want = (-1i16).to_le_bytes().to_vec();
    want.extend_from_slice(&1f32.to_le_bytes());
    want.extend_from_slice(&2f32.to_le_bytes());
    want.extend_from_slice(b"hi\0");
    want.extend_from_slice(&0xe9u32.to_le_bytes());
    want.extend_from_slice(&i64::MIN.to_le_bytes());
    want.extend_from_slice(&0.5f32.to_le_bytes());
    want.extend_from_slice(&2f32.to_le_bytes());
    want.extend_from_slice(&[9, 8, 1]);
    assert_eq!(b, want);
}

#[test]
fn shape_inference() {
    let k = ElemKind::Scalar;
    assert_eq!(infer_shape(&1.0f64, k).unwrap(), Vec::<u64>::new());
    assert_eq!(infer_shape(&vec![1.0f64; 3], k).unwrap(), [3]);
    assert_eq!(infer_shape(&vec![[1i32; 2]; 3], k).unwrap(), [3, 2]);
    assert_eq!(infer_shape(&Vec::<f64>::new(), k).unwrap(), [0]);
    assert_eq!(infer_shape(&vec![Vec::<f64>::new(); 2], k).unwrap(), [2, 0]);
    // Complex: pairs of numbers are elements.
    let c = vec![(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)];
    assert_eq!(infer_shape(&c, ElemKind::Complex).unwrap(), [3]);
    assert_eq!(
        infer_shape(&[[1.0, 2.0]; 2], ElemKind::Scalar).unwrap(),
        [2, 2]
    );
    // Byte strings from sequences of u8.
    assert_eq!(
        infer_shape(&vec![[1u8, 2]; 4], ElemKind::ByteLike).unwrap(),
        [4]
    );
    assert_eq!(
        infer_shape(&vec!["ab"; 4], ElemKind::ByteLike).unwrap(),
        [4]
    );
    // Records: structs and positional tuples are elements.
    assert_eq!(
        infer_shape(&vec![(1, 2.0); 5], ElemKind::Record).unwrap(),
        [5]
    );
    let recs = vec![vec![Inner { x: 1, y: 2 }]; 2];
    assert_eq!(infer_shape(&recs, ElemKind::Record).unwrap(), [2, 1]);
    // A fixed-size array (a tuple) of structs is an axis, not a positional record.
    assert_eq!(
        infer_shape(&[Inner { x: 1, y: 2 }], ElemKind::Record).unwrap(),
        [1]
    );
    let mut deep = serde_json::json!(1);
    for _ in 0..70 {
        deep = serde_json::json!([deep]);
    }
    assert_eq!(
        infer_shape(&deep, k).unwrap_err().kind().code(),
        "limit_exceeded"
    );
}
