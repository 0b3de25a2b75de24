use super::*;
use crate::dtype::Scalar;

fn hdr(dict: &str) -> Vec<u8> {
    let mut v = MAGIC.to_vec();
    v.extend_from_slice(&[1, 0]);
    v.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    v.extend_from_slice(dict.as_bytes());
    v
}

fn err(bytes: &[u8]) -> Error {
    parse_header(bytes, &Limits::default()).unwrap_err()
}

#[test]
fn numpy_exact_bytes() {
    // np.save(b, np.zeros((), 'i4'))
    let h = Header::new(DType::scalar(Scalar::I32), vec![]);
    let b = h.to_bytes().unwrap();
    let expect = b"\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (), }";
    assert_eq!(&b[..expect.len()], expect);
    assert_eq!(b.len(), 128);
    assert_eq!(*b.last().unwrap(), b'\n');
    assert!(b[expect.len()..b.len() - 1].iter().all(|&c| c == b' '));
}

#[test]
fn growth_padding_keeps_length() {
    let a = Header::new(DType::scalar(Scalar::F64), vec![0])
        .to_bytes()
        .unwrap();
    let b = Header::new(DType::scalar(Scalar::F64), vec![u64::MAX / 16])
        .to_bytes()
        .unwrap();
    assert_eq!(a.len(), b.len());
    let mut f = Header::new(DType::scalar(Scalar::F64), vec![3, 1000]);
    f.fortran_order = true;
    let fb = f.to_bytes().unwrap();
    let text = std::str::from_utf8(&fb[10..]).unwrap();
    assert!(text.starts_with("{'descr': '<f8', 'fortran_order': True, 'shape': (3, 1000), }"));
    // 21 - 4 digits of shape[-1]
    assert!(text.contains("(3, 1000), }                 "));
}

#[test]
fn versions_chosen_like_numpy() {
    let r = dtype::Record::packed([("π", DType::scalar(Scalar::U8))]).unwrap();
    let b = Header::new(DType::Record(r.clone()), vec![1])
        .to_bytes()
        .unwrap();
    assert_eq!(&b[6..8], &[3, 0]);
    assert!(Header::new(DType::Record(r), vec![1])
        .to_bytes_with_version(Some(Version::V1_0))
        .is_err());
    let many: Vec<(String, DType)> = (0..3000)
        .map(|i| (format!("field_number_{i}"), DType::scalar(Scalar::U8)))
        .collect();
    let big = Header::new(DType::Record(dtype::Record::packed(many).unwrap()), vec![1]);
    let b = big.to_bytes().unwrap();
    assert_eq!(&b[6..8], &[2, 0]);
    assert_eq!(b.len() % 64, 0);
    assert!(big.to_bytes_with_version(Some(Version::V1_0)).is_err());
    let p = parse_header(
        &b,
        &Limits {
            max_header_size: 1 << 20,
            ..Limits::default()
        },
    )
    .unwrap();
    assert_eq!(p.header, big);
    assert_eq!(p.version, Version::V2_0);
    assert_eq!(err(&b).kind().code(), "header_too_large");
}

#[test]
fn lenient_inputs_numpy_accepts() {
    for d in [
        "{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}",
        "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (3L,)}",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,)}\n",
        "{'descr': '<i4', 'descr': '<f8', 'fortran_order': False, 'shape': (3,),}",
    ] {
        let p = parse_header(&hdr(d), &Limits::default()).unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(p.header.shape, vec![3]);
        assert_eq!(p.header.dtype.descr(), "'<f8'");
        assert_eq!(p.data_offset, 10 + d.len() as u64);
    }
}

#[test]
fn errors_name_what_and_where() {
    let e = err(&hdr(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3)}",
    ));
    assert_eq!(
        e.to_string(),
        "invalid .npy header: 'shape' must be a tuple of non-negative integers, found (3) (at byte 60)"
    );
    assert_eq!(
        err(b"\x93NUMPY\x04\x00").kind().code(),
        "unsupported_version"
    );
    assert_eq!(err(b"\x93NUM").kind().code(), "unexpected_eof");
    assert_eq!(err(b"PK\x03\x04").kind().code(), "bad_magic");
    assert_eq!(err(b"").kind().code(), "unexpected_eof");
    assert_eq!(
        err(b"\x93NUMPY\x02\x00\xff\xff\xff\xff").kind().code(),
        "header_too_large"
    );
    assert_eq!(
        err(b"\x93NUMPY\x01\x00\x50\x00{'descr'").kind().code(),
        "unexpected_eof"
    );
    for (d, code) in [
        ("[1]", "invalid_header"),
        ("{'descr': '<f8', 'shape': (3,)}", "invalid_header"),
        (
            "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'x': 1}",
            "invalid_header",
        ),
        (
            "{'descr': '<f8', 'fortran_order': 0, 'shape': (3,)}",
            "invalid_header",
        ),
        (
            "{'descr': '<f8', 'fortran_order': False, 'shape': (-1,)}",
            "invalid_header",
        ),
        (
            "{'descr': '<f8', 'fortran_order': False, 'shape': [3]}",
            "invalid_header",
        ),
        (
            "{'descr': '<x8', 'fortran_order': False, 'shape': (3,)}",
            "invalid_descr",
        ),
        (
            "{'descr': '|O', 'fortran_order': False, 'shape': (3,)}",
            "unsupported_dtype",
        ),
        (
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16)}",
            "overflow",
        ),
        (
            "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "overflow",
        ),
    ] {
        assert_eq!(err(&hdr(d)).kind().code(), code, "{d}");
    }
    let dims = vec!["1"; 65].join(", ");
    let d = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({dims})}}");
    assert_eq!(err(&hdr(&d)).kind().code(), "limit_exceeded");
    let deep = format!(
        "{{'descr': {}'<f8'{}, 'fortran_order': False, 'shape': ()}}",
        "[('a', ".repeat(2000),
        ")]".repeat(2000)
    );
    let mut v3 = MAGIC.to_vec();
    v3.extend_from_slice(&[3, 0]);
    v3.extend_from_slice(&(deep.len() as u32).to_le_bytes());
    v3.extend_from_slice(deep.as_bytes());
    let big = Limits {
        max_header_size: 1 << 20,
        ..Limits::default()
    };
    assert_eq!(
        parse_header(&v3, &big).unwrap_err().kind().code(),
        "limit_exceeded"
    );
}

#[test]
fn empty_value_counts() {
    let h = |descr: &str, shape: &[u64]| {
        Header::new(descr.parse::<DType>().unwrap(), shape.to_vec()).empty_value_count()
    };
    assert_eq!(h("<f8", &[]), 0);
    assert_eq!(h("<f8", &[5, 7]), 0);
    assert_eq!(h("[]", &[]), 1);
    assert_eq!(h("|V0", &[4]), 5);
    assert_eq!(h("[]", &[2, 3]), 1 + 2 + 6);
    // Lists above a zero-length axis; nothing below it.
    assert_eq!(h("<f8", &[0]), 1);
    assert_eq!(h("<f8", &[10, 0, 99]), 1 + 10);
    assert_eq!(h("<f8", &[u64::MAX, 0]), u64::MAX);
    // Zero-size parts of non-empty elements: per element, times the count.
    assert_eq!(h("[('a', [], (4000,)), ('b', '|u1')]", &[10]), 10 * 4001);
    assert_eq!(h("[('a', '|S0'), ('b', '|u1')]", &[3]), 3);
    assert_eq!(
        h("[('a', [('b', [], (4000,)), ('c', '|u1')], (4000,))]", &[5]),
        5 * 4000 * 4001
    );
    // A record whose only field is an empty subarray is itself zero-size: the axis list,
    // each record, its subarray list and the two empty inner lists.
    assert_eq!(h("[('a', '<f4', (2, 0))]", &[3]), 1 + 3 * (1 + 1 + 2));
    // Everything saturates.
    assert_eq!(
        h(
            "[('a', [('b', [], (1000000000,))], (1000000000, 1000000000))]",
            &[1 << 40]
        ),
        u64::MAX
    );
}

#[test]
fn v3_utf8_checked() {
    let mut v = MAGIC.to_vec();
    v.extend_from_slice(&[3, 0, 4, 0, 0, 0]);
    v.extend_from_slice(b"{\xff}\n");
    let e = err(&v);
    assert_eq!(e.kind().code(), "invalid_utf8");
    assert_eq!(e.position().byte, Some(13));
}
