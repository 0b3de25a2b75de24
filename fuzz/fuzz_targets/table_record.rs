//! bytes -> the records kept with a table (see `npy_serde_fuzz::table_record`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| npy_serde_fuzz::table_record(data));
