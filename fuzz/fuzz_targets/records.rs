//! bytes -> derived structs through serde (see `npy_serde_fuzz::records`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::records(data));
