//! bytes -> an `.npz` archive, every member read every way (see `npy_serde_fuzz::npz`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::npz(data));
