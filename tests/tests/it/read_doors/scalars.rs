//! Top-level scalar arrays: through the record doors next to their twins (with the exact
//! tier's count), and through the serde doors against `deserialize_slice`; widening and lossy
//! requests.

use npy_serde_tests::{fixture, npy, TempDir, Trickle};

use super::data::*;
use super::doors::*;

/// `$t` arrays of both byte orders, the values `$val(i)`: the first 300 through the record doors
/// next to their twins (every element on the exact tier), the first `$n_serde` through the serde
/// doors against `deserialize_slice`.
macro_rules! scalar_case {
    ($dir:expr, $t:ty, $code:literal, $n_serde:expr, $val:expr) => {{
        let val = $val;
        let vals: Vec<$t> = (0..300u32).map(val).collect();
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
        let vals: Vec<$t> = (0..$n_serde).map(val).collect();
        let n = vals.len() as u64;
        let le: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        let be: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
        for (descr, data) in [(concat!("<", $code), le), (concat!(">", $code), be)] {
            if n == 0 {
                break;
            }
            let file = npy(descr, &[n], false, &data);
            let reference: Vec<$t> = npy_serde::deserialize_slice(&file).unwrap();
            assert_eq!(reference, vals, "{descr}");
            let path = $dir.join(concat!($code, ".npy"));
            assert_all_eq(named(descr, vec_all::<$t>(&file, &path)), &vals);
        }
    }};
}

#[test]
fn top_level_scalars() {
    let dir = TempDir::new("read-doors-scalars");
    let n: u32 = 20_000;
    scalar_case!(dir, f64, "f8", n, |i| (i as f64 - 7.0) / 3.0);
    scalar_case!(dir, f32, "f4", n, |i| i as f32 * -0.75);
    scalar_case!(dir, i32, "i4", n, |i| (i as i32 - 10_000) * 104_729);
    scalar_case!(dir, i64, "i8", n, |i| (i as i64) << 40 | i as i64);
    scalar_case!(dir, u16, "u2", n, |i| (i * 3) as u16);
    scalar_case!(dir, u64, "u8", n, |i| u64::MAX - i as u64);
    scalar_case!(dir, i16, "i2", n, |i| i as i16 ^ 0x5555);
    scalar_case!(dir, i8, "i1", n, |i| i as i8);
    scalar_case!(dir, u8, "u1", 0, |i| (i % 251) as u8);

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
        let got: Vec<f64> = npy_serde::from_reader_serde(Trickle {
            data: &file,
            step: 7,
        })
        .unwrap();
        assert_eq!(bits(&got), bits(&specials));
        assert_eq!(
            bits(&npy_serde::from_slice_serde::<f64>(&file).unwrap()),
            bits(&specials)
        );
    }

    // Booleans: a byte of 2 at record k is the serde twin's error.
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

    // Widening requests at top level: no tier, the serde twin's values; narrowing: its error.
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
    assert_eq!(want.position().byte, Some(data_start(&file)));
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
