//! Property tests of the serde round trip: for an arbitrary dtype (`strategies::dtype()`),
//! shape, order and values, writing with the writer's `Array` API and reading back with the
//! reader's `Array` API gives the same array (NaN-aware), from a slice, from a reader of
//! unknown length, and through an `.npz` member.

use std::io::{Cursor, Read};

use npy_serde::dtype::{DType, Scalar};
use npy_serde::npz::{NpzArchive, NpzWriter};
use npy_serde::{Array, ReaderBuilder, Value, WriterBuilder};
use npy_serde_tests::strategies;
use proptest::prelude::*;

/// Any bit pattern as a float: NaNs (with payloads), infinities, subnormals, zeros.
fn f64_bits() -> impl Strategy<Value = f64> {
    any::<u64>().prop_map(f64::from_bits)
}

fn f32_bits() -> impl Strategy<Value = f64> {
    any::<u32>().prop_map(|b| f32::from_bits(b) as f64)
}

/// A value of `dtype` that a write and a read keep unchanged: strings without trailing NULs
/// (NumPy strips them), floats exactly representable in the dtype.
fn value(dtype: &DType) -> BoxedStrategy<Value> {
    match dtype {
        DType::Record(r) => {
            let names: Vec<String> = r.fields().iter().map(|f| f.name.clone()).collect();
            let fields: Vec<BoxedStrategy<Value>> =
                r.fields().iter().map(|f| value(&f.dtype)).collect();
            fields
                .prop_map(move |vals| Value::Record(names.iter().cloned().zip(vals).collect()))
                .boxed()
        }
        DType::Array(base, shape) => sub_value(base, shape),
        DType::Plain(p) => match p.scalar() {
            Scalar::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
            Scalar::I8 => any::<i8>().prop_map(|v| Value::Int(v as i64)).boxed(),
            Scalar::I16 => any::<i16>().prop_map(|v| Value::Int(v as i64)).boxed(),
            Scalar::I32 => any::<i32>().prop_map(|v| Value::Int(v as i64)).boxed(),
            Scalar::I64 => any::<i64>().prop_map(Value::Int).boxed(),
            Scalar::U8 => any::<u8>().prop_map(|v| Value::UInt(v as u64)).boxed(),
            Scalar::U16 => any::<u16>().prop_map(|v| Value::UInt(v as u64)).boxed(),
            Scalar::U32 => any::<u32>().prop_map(|v| Value::UInt(v as u64)).boxed(),
            Scalar::U64 => any::<u64>().prop_map(Value::UInt).boxed(),
            Scalar::F16 => any::<u16>()
                .prop_map(|b| Value::Float(half::f16::from_bits(b).to_f64()))
                .boxed(),
            Scalar::F32 => f32_bits().prop_map(Value::Float).boxed(),
            Scalar::F64 | Scalar::LongDouble => f64_bits().prop_map(Value::Float).boxed(),
            Scalar::Complex64 => (f32_bits(), f32_bits())
                .prop_map(|(a, b)| Value::Complex(a, b))
                .boxed(),
            Scalar::Complex128 | Scalar::ComplexLongDouble => (f64_bits(), f64_bits())
                .prop_map(|(a, b)| Value::Complex(a, b))
                .boxed(),
            Scalar::Bytes(n) => prop::collection::vec(any::<u8>(), 0..=n)
                .prop_map(|mut b| {
                    while b.last() == Some(&0) {
                        b.pop();
                    }
                    Value::Bytes(b)
                })
                .boxed(),
            Scalar::Unicode(n) => prop::collection::vec(any::<char>(), 0..=n)
                .prop_map(|c| {
                    let s: String = c.into_iter().collect();
                    Value::String(s.trim_end_matches('\0').to_string())
                })
                .boxed(),
            Scalar::Void(n) => prop::collection::vec(any::<u8>(), n)
                .prop_map(Value::Void)
                .boxed(),
            Scalar::DateTime(..) => any::<i64>().prop_map(Value::DateTime).boxed(),
            Scalar::TimeDelta(..) => any::<i64>().prop_map(Value::TimeDelta).boxed(),
        },
    }
}

fn sub_value(base: &DType, dims: &[u64]) -> BoxedStrategy<Value> {
    match dims.split_first() {
        None => value(base),
        Some((&n, rest)) => prop::collection::vec(sub_value(base, rest), n as usize)
            .prop_map(Value::List)
            .boxed(),
    }
}

/// An array of any dtype but a top-level subarray (which NumPy, and the writer, fold into the
/// shape), with a small shape, either order, and values.
fn array() -> impl Strategy<Value = Array> {
    let dt =
        strategies::dtype().prop_filter("top-level subarray", |d| !matches!(d, DType::Array(..)));
    (dt, prop::collection::vec(0u64..4, 0..4), any::<bool>()).prop_flat_map(
        |(dtype, shape, fortran_order)| {
            let count = shape.iter().product::<u64>() as usize;
            prop::collection::vec(value(&dtype), count).prop_map(move |values| Array {
                dtype: dtype.clone(),
                shape: shape.clone(),
                fortran_order,
                values,
            })
        },
    )
}

fn same(a: &Value, b: &Value) -> bool {
    let f = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => f(*x, *y),
        (Value::Complex(a, b), Value::Complex(c, d)) => f(*a, *c) && f(*b, *d),
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Record(x), Value::Record(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|((n, p), (m, q))| n == m && same(p, q))
        }
        _ => a == b,
    }
}

fn assert_same(
    want: &Array,
    got: npy_serde::Result<Array>,
    how: &str,
) -> Result<(), TestCaseError> {
    let got = got
        .map_err(|e| TestCaseError::fail(format!("{how}: {} {:?}: {e}", want.dtype, want.shape)))?;
    prop_assert_eq!(&got.dtype, &want.dtype, "{}", how);
    prop_assert_eq!(&got.shape, &want.shape, "{}", how);
    prop_assert_eq!(got.fortran_order, want.fortran_order, "{}", how);
    prop_assert_eq!(got.values.len(), want.values.len(), "{}", how);
    for (i, (g, w)) in got.values.iter().zip(&want.values).enumerate() {
        prop_assert!(
            same(g, w),
            "{}: value {} differs: wrote {:?}, read {:?}",
            how,
            i,
            w,
            g
        );
    }
    Ok(())
}

/// A reader of unknown length handing out `chunk` bytes per call.
struct Chunked<'a>(&'a [u8], usize);

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// write_array -> Array::from_slice / from a chunked reader is the identity.
    #[test]
    fn array_write_read_roundtrip(a in array(), chunk in 1usize..50) {
        let mut bytes = Vec::new();
        WriterBuilder::new()
            .write_array(&mut bytes, &a)
            .map_err(|e| TestCaseError::fail(format!("writing {} {:?}: {e}", a.dtype, a.shape)))?;
        assert_same(&a, Array::from_slice(&bytes), "from_slice")?;
        assert_same(&a, ReaderBuilder::new().read_array(Chunked(&bytes, chunk)), "read_array")?;
        // Two arrays back to back in one stream read in turn.
        let mut two = bytes.clone();
        two.extend_from_slice(&bytes);
        let mut r = Chunked(&two, chunk);
        assert_same(&a, Array::from_reader(&mut r), "first of two")?;
        assert_same(&a, Array::from_reader(&mut r), "second of two")?;
        // Every proper prefix fails cleanly.
        let cut = bytes.len() * chunk / 50;
        prop_assert!(Array::from_slice(&bytes[..cut]).is_err());
    }

    /// The same through an .npz member, stored and deflated; the member holds the .npy bytes.
    #[test]
    fn array_npz_roundtrip(a in array(), compressed in any::<bool>()) {
        let mut npy = Vec::new();
        WriterBuilder::new().write_array(&mut npy, &a).unwrap();
        let mut zip = Cursor::new(Vec::new());
        let mut w = if compressed { NpzWriter::new_compressed(&mut zip) } else { NpzWriter::new(&mut zip) };
        w.add_array("a", &a).map_err(|e| TestCaseError::fail(e.to_string()))?;
        w.finish().map_err(|e| TestCaseError::fail(e.to_string()))?;
        let zip = zip.into_inner();
        let mut archive = NpzArchive::from_bytes(&zip).map_err(|e| TestCaseError::fail(e.to_string()))?;
        assert_same(&a, archive.read_array("a"), "npz")?;
        prop_assert_eq!(archive.read_raw("a").unwrap(), npy);
    }
}
