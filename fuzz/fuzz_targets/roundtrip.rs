//! fuzz bytes -> dtype, shape and values -> write -> read -> equal (see `npy_serde_fuzz::roundtrip`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::roundtrip(data));
