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
add arrow "${npy[@]}" "${bad[@]}"
# npz reads archives; single .npy files are useful too (the fuzzer splices them).
add npz "${npz[@]}"
# mmap_npz maps archives: the same seeds, and the scipy.sparse ones (stored and deflated).
add mmap_npz "${npz[@]}" "$fixtures"/sparse/*.npz
# pickle reads object arrays (.npy) and bare pickles: the NumPy 1.x/2.x and hostile fixtures,
# and the pickles inside them alone.
add pickle "$fixtures"/pickle/np1/*.npy "$fixtures"/pickle/np2/*.npy "$fixtures"/pickle/hostile/*.npy \
    "$fixtures"/pickle/written/*.npy
# roundtrip interprets its input through `arbitrary`; any bytes make a start.
add roundtrip "${npy[@]:0:20}"

# The records target reads one fixed struct (npy_serde_fuzz::Rec): seed files of exactly its
# dtype, made with NumPy when a Python with NumPy is at hand (NPY_PYTHON, the repo's .venv, or
# python3); without one the fuzzer has to find the dtype by itself, which takes longer.
py=""
for cand in "${NPY_PYTHON:-}" "$here/../.venv/bin/python" python3; do
    if [ -n "$cand" ] && "$cand" -c 'import numpy' >/dev/null 2>&1; then
        py="$cand"
        break
    fi
done
if [ -n "$py" ]; then
    mkdir -p "$corpus/records"
    "$py" - "$corpus/records" <<'PY'
import io, sys, hashlib, numpy as np
out = sys.argv[1]
rec = np.dtype([('id', '<i8'), ('flag', '?'), ('v', '<f4', (3,)), ('name', 'S5'), ('label', '<U3'),
                ('inner', [('x', '<f4'), ('y', '<i2')]), ('h', 'u1'), ('m', '<u2', (2, 2))])
arrays = [
    np.zeros(2, rec),
    np.array([(1, True, (1, 2, 3), b'ab', 'xé', (0.5, -2), 7, ((1, 2), (3, 4)))], rec),
    np.zeros(0, rec),
    np.zeros((), rec),
    np.zeros((2, 2), rec, order='F'),
    np.zeros(3, rec.newbyteorder('>')),
    np.zeros(2, [('h', 'u1'), ('id', '<i4'), ('inner', [('x', '<f2'), ('y', 'i1')])]),
]
# npy_serde_fuzz::Pod, which records_from_* read on their exact tier.
pod = np.dtype([('id', '<i8'), ('flag', '?'), ('v', '<f4', (3,)), ('inner', [('x', '<f4'), ('y', '<i2')]),
                ('h', 'u1'), ('m', '<u2', (2, 2))])
arrays += [
    np.array([(1, True, (1, 2, 3), (0.5, -2), 7, ((1, 2), (3, 4)))] * 3, pod),
    np.array([(-5, False, (0, -1, 2.5), (1e30, 300), 255, ((9, 8), (7, 6)))] * 2, pod.newbyteorder('>')),
    np.zeros((2, 3), pod, order='F'),
]
for a in arrays:
    b = io.BytesIO()
    np.save(b, a)
    data = b.getvalue()
    open(f"{out}/seed-np-{hashlib.sha1(data).hexdigest()}", "wb").write(data)
PY
fi

# Earlier findings are the best seeds for the target that found them.
for f in "${regress[@]}"; do
    name="$(basename "$f")"
    add "${name%%-*}" "$f"
done

for d in "$corpus"/*/; do
    printf '%-10s %5d files\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)"
done
