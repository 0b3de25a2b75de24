#!/usr/bin/env bash
# Runs the tests that reach the crate's `unsafe` code under AddressSanitizer (Miri cannot be
# installed here). The `unsafe` blocks (grep -rn 'unsafe' npy-serde/src) and what reaches them:
#   - memory maps: MmapArray::open_with (npy-serde/src/read/mmap.rs) and MmapArrayMut's
#     open_rw/open_cow/create (npy-serde/src/write/mmap.rs), the CLI's mapped input
#     (npy-cli/src/input/file.rs): read_fixtures, hostile, fuzz_regressions, views, the
#     CLI tests;
#   - typed views and raw writes of plain data (npy-serde/src/pod.rs: cast, cast_mut,
#     bytes_of; the Pod proofs in record.rs and the derive's): views, streaming, tiers, and
#     the ndarray views over maps (npy-serde/src/ndarray/view.rs, no unsafe of its own): ndarray;
#   - one-copy reads into zeroed and huge-page-advised Vecs (npy-serde/src/read/bulk.rs,
#     read/vecalloc.rs: zeroed, grow_zeroed, madvise): views, read_records, read_vec, the
#     vecalloc unit tests;
#   - the exact tier decoding into uninitialized slots and the parallel decode's partial drops
#     (npy-serde/src/read/exact.rs run, read/parallel.rs): read_records, parallel;
#   - NpyWriter's cached exact tier (npy-serde/src/write/stream.rs exact_for): streaming;
#   - libc::fallocate (npy-serde/src/write/pipe.rs reserve) in to_path and in the writing
#     thread of NpyWriter::create / create_path / append_path: the write unit tests, streaming.
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
cargo +nightly test --target "$host" -p npy-serde-tests --no-default-features \
    --test read_fixtures --test hostile --test fuzz_regressions --test read_vec \
    --test read_records --test views --test streaming --test parallel --test tiers \
    --test ndarray "$@"
echo "=== npy-serde unit tests (write, read tiers, vecalloc, pod) under ASan"
cargo +nightly test --target "$host" -p npy-serde --lib "$@"
echo "=== npy CLI tests under ASan"
cargo +nightly test --target "$host" -p npy-cli --test cli "$@"
echo "=== asan-tests: no AddressSanitizer report"
