#!/usr/bin/env bash
# Runs the tests that reach the crate's `unsafe` code under AddressSanitizer (Miri cannot be
# installed here). The `unsafe` blocks (grep -rn unsafe npy-serde/src):
#   - npy_serde::MmapArray::open_with (npy-serde/src/mmap.rs) maps a file, reached by the
#     npy-serde-tests read_fixtures (every fixture through MmapArray), hostile and
#     fuzz_regressions tests;
#   - the `npy` CLI's mapped input (npy-serde/src/bin/npy/input.rs), reached by the CLI tests;
#   - libc::fallocate in WriterBuilder::to_path (npy-serde/src/write.rs), reached by the
#     write module's unit tests;
#   - libc::madvise(MADV_HUGEPAGE) on a new Vec's spare capacity (npy-serde/src/vecalloc.rs),
#     reached by its unit tests and by the npy-serde-tests read_vec tests (every vec_from_*
#     entry point).
# Needs a nightly toolchain (rustup toolchain install nightly). Builds into target/asan so the
# normal build is untouched.
#
#   bash fuzz/asan-tests.sh            # all of the above
#   bash fuzz/asan-tests.sh -- NAME    # extra arguments go to the test binaries
set -euo pipefail
cd "$(dirname "$0")/.."

host="$(rustc +nightly -vV | sed -n 's/^host: //p')"
# --target makes RUSTFLAGS apply to the tests and the library only, not to build scripts and
# proc macros (which cannot be built with a sanitizer).
export RUSTFLAGS="-Zsanitizer=address ${RUSTFLAGS:-}"
export RUSTDOCFLAGS="-Zsanitizer=address"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/asan}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}"

echo "=== npy-serde-tests under ASan ($host)"
cargo +nightly test --target "$host" -p npy-serde-tests \
    --test read_fixtures --test hostile --test fuzz_regressions --test read_vec "$@"
echo "=== npy-serde write (to_path) and vecalloc unit tests under ASan"
cargo +nightly test --target "$host" -p npy-serde --lib -- write:: vecalloc:: fast:: "$@"
echo "=== npy CLI tests under ASan"
cargo +nightly test --target "$host" -p npy-serde --features cli --test cli "$@"
echo "=== asan-tests: no AddressSanitizer report"
