//! bytes -> the `Array`/`Value` readers, slice and reader, and the streaming reader (see `npy_serde_fuzz::npy`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::npy(data));
