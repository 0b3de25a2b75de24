#!/usr/bin/env bash
# Builds the seed corpora of every fuzz target from the NumPy-made fixtures under
# tests/fixtures into fuzz/corpus/<target>/ (gitignored). Idempotent: files are named by their
# content hash, so re-running only adds what is missing (and keeps what the fuzzer found).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
fixtures="$here/../tests/fixtures"
corpus="$here/corpus"

hash_of() {
    if command -v sha1sum >/dev/null 2>&1; then sha1sum "$1" | cut -c1-40; else cksum "$1" | tr ' ' '-'; fi
}

# add TARGET FILE...: copies each file into corpus/TARGET under its content hash.
add() {
    local target="$1"
    shift
    mkdir -p "$corpus/$target"
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        cp "$f" "$corpus/$target/seed-$(hash_of "$f")"
    done
}

shopt -s nullglob
npy=("$fixtures"/npy/*.npy)
bad=("$fixtures"/bad/*.npy)
npz=("$fixtures"/npz/*.npz)
regress=("$fixtures"/fuzz-regressions/*.bin)

# header, npy and records read a whole .npy: valid and malformed fixtures.
add header "${npy[@]}" "${bad[@]}"
add npy "${npy[@]}" "${bad[@]}"
add records "${npy[@]}" "${bad[@]}"
# npz reads archives; single .npy files are useful too (the fuzzer splices them).
add npz "${npz[@]}"
# roundtrip interprets its input through `arbitrary`; any bytes make a start.
add roundtrip "${npy[@]:0:20}"

# Earlier findings are the best seeds for the target that found them.
for f in "${regress[@]}"; do
    name="$(basename "$f")"
    add "${name%%-*}" "$f"
done

for d in "$corpus"/*/; do
    printf '%-10s %5d files\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)"
done
