//! bytes -> an object on an in-memory store, read through `npy_remote` as a `.npy` and
//! an `.npz`, with injected short reads, errors and stalls (see `fuzz/src/remote.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../src/remote.rs"]
mod remote;

fuzz_target!(|data: &[u8]| remote::remote(data));
