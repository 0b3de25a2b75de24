//! bytes -> `parse_header` / `read_header` and `parse_contents` / `read_contents` (the kind) with default and raised limits (see `npy_serde_fuzz::header`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::header(data));
