//! bytes -> the data-only pickle reader: a `.npy` object array or a bare pickle (see `npy_serde_fuzz::pickle`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::pickle(data));
