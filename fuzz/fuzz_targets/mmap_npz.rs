//! bytes -> a mapped `.npz` archive, every stored member viewed in place (see
//! `npy_serde_fuzz::mmap_npz`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::mmap_npz(data));
