//! Property tests of the dtype and header round trips.

use npy_serde::dtype::DType;
use npy_serde::header::{parse_header, Limits, Version, ARRAY_ALIGN};
use npy_serde_tests::strategies;
use proptest::prelude::*;

fn big_limits() -> Limits {
    Limits {
        max_header_size: 1 << 20,
        ..Limits::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// descr -> DType -> descr is the identity.
    #[test]
    fn descr_roundtrip(dt in strategies::dtype()) {
        let text = dt.descr();
        let back = DType::from_descr(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(back.descr(), text);
        prop_assert_eq!(back.itemsize(), dt.itemsize());
        prop_assert_eq!(back, dt);
    }

    /// write -> parse gives back the header, with NumPy's alignment and version choice.
    #[test]
    fn header_roundtrip(h in strategies::header(), version in strategies::version()) {
        let bytes = match h.to_bytes_with_version(version) {
            Ok(b) => b,
            Err(e) => {
                // Only a forced version that cannot hold the text may fail.
                prop_assert_eq!(version, Some(Version::V2_0), "{}", e);
                prop_assert!(h.dtype.descr().chars().any(|c| c as u32 > 0xff));
                return Ok(());
            }
        };
        prop_assert_eq!(bytes.len() % ARRAY_ALIGN, 0);
        prop_assert_eq!(*bytes.last().unwrap(), b'\n');
        let p = parse_header(&bytes, &big_limits()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(p.data_offset, bytes.len() as u64);
        if let Some(v) = version {
            prop_assert_eq!(p.version, v);
        } else {
            let latin1 = h.dtype.descr().chars().all(|c| c as u32 <= 0xff);
            prop_assert_eq!(p.version == Version::V3_0, !latin1);
        }
        prop_assert_eq!(p.header, h);
    }

    /// Any prefix of a valid header is an error (never a panic, never a success).
    #[test]
    fn truncated_headers_fail(h in strategies::header(), cut in 0.0f64..1.0) {
        let bytes = h.to_bytes().unwrap();
        let n = ((bytes.len() as f64) * cut) as usize;
        prop_assert!(parse_header(&bytes[..n], &big_limits()).is_err());
    }

    /// Arbitrary bytes after a valid magic never panic.
    #[test]
    fn garbage_headers_do_not_panic(mut tail in prop::collection::vec(any::<u8>(), 0..200), v in 1u8..4) {
        let mut bytes = b"\x93NUMPY".to_vec();
        bytes.extend_from_slice(&[v, 0]);
        bytes.append(&mut tail);
        let _ = parse_header(&bytes, &Limits::default());
    }
}
