//! The `header` target (bytes -> parse_header / read_header).

use super::*;

// ---------------------------------------------------------------------------------------------
// header: bytes -> parse_header / read_header
// ---------------------------------------------------------------------------------------------

/// Target `header`: `parse_header` on the bytes and `read_header` through a 1-byte-per-read
/// reader, with NumPy's default limits and with raised ones. They must agree; an accepted
/// header has a representable data size and a data offset inside the input, and re-writing it
/// parses back to the same header.
pub fn header(data: &[u8]) {
    header_with(data, &Limits::default());
    header_with(data, &raised_limits());
}

fn header_with(data: &[u8], limits: &Limits) {
    let parsed = parse_header(data, limits);
    let trickled = read_header(&mut Chunked::new(data, 1), limits);
    match (&parsed, &trickled) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "slice and reader parse differ"),
        (Err(a), Err(b)) => assert_eq!(a.kind().code(), b.kind().code()),
        _ => panic!("slice and reader disagree: {parsed:?} vs {trickled:?}"),
    }
    // The header's kind: what parse_header accepts is `Typed` with the same header; an object
    // array is refused by parse_header for its dtype alone, with the same error; slice and
    // reader agree.
    let contents = parse_contents(data, limits);
    let contents_trickled = read_contents(&mut Chunked::new(data, 1), limits);
    match (&contents, &contents_trickled) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "slice and reader contents differ"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("slice and reader disagree: {contents:?} vs {contents_trickled:?}"),
    }
    match (&parsed, contents) {
        (Ok(p), Ok(Contents::Typed(c))) => assert_eq!(p, &c),
        (Err(e), Ok(Contents::Objects(h))) => {
            assert_eq!(e.to_string(), h.refusal().to_string());
            assert!(h.data_offset <= data.len() as u64);
            let count = h.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            assert!(
                count.is_some(),
                "accepted object header with overflowing count"
            );
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (p, c) => panic!("parse_header and parse_contents disagree: {p:?} vs {c:?}"),
    }
    let Ok(p) = parsed else { return };
    assert!(p.data_offset <= data.len() as u64);
    let len = p
        .header
        .data_len()
        .expect("accepted header with overflowing size");
    assert!(len <= i64::MAX as u64);
    // Top-level subarrays cannot be written (NumPy folds them into the shape); others can.
    if let Ok(bytes) = p.header.to_bytes() {
        let again = parse_header(&bytes, &raised_limits())
            .unwrap_or_else(|e| panic!("re-written header does not parse: {e}"));
        assert_eq!(again.header, p.header);
        assert_eq!(again.data_offset, bytes.len() as u64);
    }
}
