//! Every fixture NumPy wrote parses to the manifest's header; writing the same header
//! reproduces NumPy's bytes; every malformed fixture fails with the expected error kind.

use npy_serde::dtype::DType;
use npy_serde::header::{parse_header, Header, Limits, Version};
use npy_serde_tests::{fixtures_dir, manifest};

fn limits() -> Limits {
    // The v2.0 fixture's header is over 65535 bytes, beyond NumPy's default too.
    Limits {
        max_header_size: 1 << 20,
        ..Limits::default()
    }
}

fn version(v: &serde_json::Value) -> Version {
    let t = (v[0].as_u64().unwrap() as u8, v[1].as_u64().unwrap() as u8);
    Version::from_tuple(t.0, t.1).unwrap()
}

#[test]
fn fixtures_parse_to_manifest_headers() {
    let mut n = 0;
    for f in manifest()["npy"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        let bytes = std::fs::read(fixtures_dir().join(f["file"].as_str().unwrap())).unwrap();
        let p = parse_header(&bytes, &limits()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let shape: Vec<u64> = serde_json::from_value(f["shape"].clone()).unwrap();
        assert_eq!(p.header.shape, shape, "{name}");
        assert_eq!(
            p.header.fortran_order,
            f["fortran_order"].as_bool().unwrap(),
            "{name}"
        );
        assert_eq!(p.version, version(&f["version"]), "{name}");
        assert_eq!(p.data_offset, f["data_offset"].as_u64().unwrap(), "{name}");
        assert_eq!(
            p.header.dtype.itemsize() as u64,
            f["itemsize"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            p.header.count().unwrap(),
            f["count"].as_u64().unwrap(),
            "{name}"
        );
        let expected = DType::from_descr(f["descr_repr"].as_str().unwrap()).unwrap();
        assert_eq!(p.header.dtype, expected, "{name}");
        if f["written_by"] == "np.save" {
            // NumPy spells the descr exactly as we do.
            assert_eq!(
                p.header.dtype.descr(),
                f["descr_repr"].as_str().unwrap(),
                "{name}"
            );
        }
        n += 1;
    }
    assert!(n > 30, "only {n} fixtures");
}

#[test]
fn writing_reproduces_numpy_header_bytes() {
    let mut n = 0;
    for f in manifest()["npy"].as_array().unwrap() {
        if f["written_by"] != "np.save" {
            continue;
        }
        let name = f["name"].as_str().unwrap();
        let bytes = std::fs::read(fixtures_dir().join(f["file"].as_str().unwrap())).unwrap();
        let p = parse_header(&bytes, &limits()).unwrap();
        let h = Header {
            dtype: p.header.dtype.clone(),
            shape: p.header.shape.clone(),
            fortran_order: p.header.fortran_order,
        };
        let ours = h.to_bytes().unwrap();
        assert_eq!(
            ours,
            bytes[..p.data_offset as usize],
            "{name}: header bytes differ\nours:  {:?}\nnumpy: {:?}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&bytes[..p.data_offset as usize])
        );
        n += 1;
    }
    assert!(n > 20, "only {n} fixtures");
}

#[test]
fn malformed_headers_fail_with_expected_kind() {
    for f in manifest()["bad"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        let expected = f["error"].as_str().unwrap();
        let bytes = std::fs::read(fixtures_dir().join(f["file"].as_str().unwrap())).unwrap();
        let result = parse_header(&bytes, &Limits::default()).and_then(|p| {
            // Header-level checks passed: the data must also be complete.
            let need = p.data_offset + p.header.data_len()?;
            if (bytes.len() as u64) < need {
                return Err(npy_serde::Error::new(npy_serde::ErrorKind::UnexpectedEof {
                    what: "the array data",
                    expected: need,
                    found: bytes.len() as u64,
                }));
            }
            Ok(p)
        });
        match result {
            Err(e) => assert_eq!(e.kind().code(), expected, "{name}: {e}"),
            Ok(p) => panic!("{name}: expected {expected}, parsed {:?}", p.header),
        }
    }
}
