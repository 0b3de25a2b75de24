//! every writer on arbitrary arrays and typed records, read back (see `npy_serde_fuzz::writers`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: npy_serde_fuzz::WritersInput| npy_serde_fuzz::writers(input));
