#!/usr/bin/env bash
# Builds every fuzz target and runs each for SECONDS (default 60) after seeding the corpora
# from tests/fixtures. Exits non-zero if any target crashes (panics, aborts, leaks past the RSS
# limit, or times out on one input). Crash inputs are left in fuzz/artifacts/<target>/.
#
#   bash fuzz/run.sh 60            # every target, 60 s each (CI runs 30), FUZZ_JOBS at once
#   bash fuzz/run.sh 600 header    # only the named targets
set -euo pipefail
secs="${1:-60}"
shift || true
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: a nightly toolchain is needed (rustup toolchain install nightly)" >&2
    exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: cargo-fuzz not found, installing it"
    cargo install cargo-fuzz --locked
fi

bash "$here/seed.sh"
cargo +nightly fuzz build

if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

# One input may take at most this long (the promise is time linear in the input). The limit is
# wall-clock time: a campaign under `nice -n 19` on a busy machine can wait that long for a CPU
# (10-38 s seen on a shared 2-core box, on inputs that replay in 1 ms), so niced campaigns want
# FUZZ_TIMEOUT=120 and a replay of whatever timeout they report.
per_input_timeout="${FUZZ_TIMEOUT:-10}"
# libFuzzer runs one process on one core: FUZZ_JOBS targets (default: every core) run at once,
# each with its output kept in a log and printed when it ends, so a 2-core CI run of ten 30 s
# targets takes 150 s, not 300.
jobs_max="${FUZZ_JOBS:-$(nproc)}"
logs="$(mktemp -d)"
run_target() {
    local t="$1"
    mkdir -p "corpus/$t" "artifacts/$t"
    # Inputs up to 4 KiB (every code path is reachable with small inputs: a header's length
    # field claims sizes, it does not need them) and no allocation stacks kept by ASan: the
    # 72 KiB fixture seeds and the stack collection held the npy target at 170-630 exec/s.
    if ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=0}" cargo +nightly fuzz run "$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout="$per_input_timeout" \
        -max_len="${FUZZ_MAX_LEN:-4096}" -dict="$here/npy.dict" -print_final_stats=1 \
        >"$logs/$t.log" 2>&1; then
        echo ok >"$logs/$t.rc"
    else
        echo crash >"$logs/$t.rc"
    fi
}
for t in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
        wait -n || true
    done
    echo "=== fuzz target $t for ${secs}s (started)"
    run_target "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
    echo "=== fuzz target $t for ${secs}s"
    cat "$logs/$t.log"
    if [ "$(cat "$logs/$t.rc" 2>/dev/null)" = ok ]; then
        echo "=== $t: no crash"
    else
        echo "=== $t: CRASH (input in fuzz/artifacts/$t/)" >&2
        failed+=("$t")
    fi
done
rm -rf "$logs"

if [ "${#failed[@]}" -gt 0 ]; then
    echo "fuzz/run.sh: crashes in: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz/run.sh: all ${#targets[@]} targets ran ${secs}s without a crash"
