//! bytes -> `parse_header` (and `read_header` through a reader that returns one byte at a time),
//! with NumPy's default limits and with raised ones.
//!
//! Checks beyond "no panic": a parsed header's data length is computable, its data offset lies
//! inside the input, the byte-at-a-time reader agrees with the slice parser, and the parsed
//! header written back out parses to the same header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use npy_serde::header::{parse_header, read_header, Limits};
use std::io::Read;

/// A reader that hands out at most one byte per `read`, to exercise short reads.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() || self.0.is_empty() {
            return Ok(0);
        }
        buf[0] = self.0[0];
        self.0 = &self.0[1..];
        Ok(1)
    }
}

fn check(data: &[u8], limits: &Limits) {
    let parsed = parse_header(data, limits);
    let trickled = read_header(&mut Trickle(data), limits);
    match (&parsed, &trickled) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "slice and reader parse differ"),
        (Err(a), Err(b)) => assert_eq!(a.kind().code(), b.kind().code()),
        _ => panic!("slice and reader disagree: {parsed:?} vs {trickled:?}"),
    }
    let Ok(p) = parsed else { return };
    assert!(p.data_offset <= data.len() as u64);
    // Accepted headers have a representable size.
    let len = p
        .header
        .data_len()
        .expect("accepted header with overflowing size");
    assert!(len <= i64::MAX as u64);
    // Re-writing an accepted header (when it is writable: top-level subarrays are not) and
    // parsing it again gives the same header.
    if let Ok(bytes) = p.header.to_bytes() {
        let big = Limits {
            max_header_size: u64::MAX,
            ..limits.clone()
        };
        let again = parse_header(&bytes, &big)
            .unwrap_or_else(|e| panic!("re-written header does not parse: {e}"));
        assert_eq!(again.header, p.header);
    }
}

fuzz_target!(|data: &[u8]| {
    check(data, &Limits::default());
    check(
        data,
        &Limits {
            max_header_size: 1 << 24,
            max_depth: 10_000,
            max_dims: 1024,
        },
    );
});
