//! bytes -> Arrow record batches (slice and reader) -> .npy again (see `npy_serde_fuzz::arrow`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::arrow(data));
