#!/usr/bin/env python3
"""Speed of the Python package against its anchors, in one run (ratios > 1: npy_serde faster).

Usage (a release build of the package in the venv: ``pip install ./npy-python``):

    NPY_BENCH_SCALE=0.5 .venv/bin/python npy-python/benches/python.py [case ...]

Cases (the workloads of the Rust benches, generated here into a temporary directory):

* ``load``: W1 (100M ``<f8``), W2 (20M 33-byte records ``[('id','<i8'), ('x','<f8'),
  ('y','<f4'), ('flag','u1'), ('v','<f4',(3,))]``), W3 (W2 big-endian): ``load`` against
  ``np.load``.
* ``mmap``: ``load(mmap_mode='r')`` plus a sum of field ``x`` against ``np.load(mmap_mode='r')``.
* ``many``: ``load_many`` of 100k small ``(3, 64, 64) <f4`` files against a loop of
  ``np.load`` (numpy#22898's case).
* ``scan``: ``scan_npy`` of W2 with ``x`` summed against
  ``pl.from_numpy(np.load(...))`` summed.
* ``savez``: ``savez_compressed`` of W2's columns against ``np.savez_compressed``.

Sizes scale with ``NPY_BENCH_SCALE`` (default 1.0). Each timing is the best of ``NPY_BENCH_REPS``
(default 3) runs; the page cache is warm for both sides (each file is read once first).
"""

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import npy_serde

SCALE = float(os.environ.get("NPY_BENCH_SCALE", "1.0"))
REPS = int(os.environ.get("NPY_BENCH_REPS", "3"))
W2 = np.dtype([("id", "<i8"), ("x", "<f8"), ("y", "<f4"), ("flag", "u1"), ("v", "<f4", (3,))])


def best(f):
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def row(case, ours, theirs, anchor):
    print(f"| {case} | {ours:.3f} s | {theirs:.3f} s | {theirs / ours:.2f}x {anchor} |", flush=True)


def w2(n, byteorder="<"):
    rng = np.random.default_rng(7)
    a = np.empty(n, dtype=W2.newbyteorder(byteorder) if byteorder == ">" else W2)
    a["id"] = np.arange(n)
    a["x"] = rng.standard_normal(n)
    a["y"] = rng.standard_normal(n).astype("<f4")
    a["flag"] = (np.arange(n) % 3).astype("u1")
    a["v"] = rng.standard_normal((n, 3)).astype("<f4")
    return a


def case_load(d):
    files = {
        "W1": (d / "w1.npy", lambda: np.arange(int(100e6 * SCALE), dtype="<f8")),
        "W2": (d / "w2.npy", lambda: w2(int(20e6 * SCALE))),
        "W3": (d / "w3.npy", lambda: w2(int(20e6 * SCALE), ">")),
    }
    for name, (path, make) in files.items():
        if not path.exists():
            np.save(path, make())
        np.load(path)
        row(f"`load` {name}", best(lambda: npy_serde.load(path)),
            best(lambda: np.load(path)), "`np.load`")


def case_mmap(d):
    path = d / "w2.npy"
    if not path.exists():
        np.save(path, w2(int(20e6 * SCALE)))
    row("`load(mmap_mode='r')` W2 + sum of x",
        best(lambda: npy_serde.load(path, mmap_mode="r")["x"].sum()),
        best(lambda: np.load(path, mmap_mode="r")["x"].sum()), "NumPy's memmap")


def case_many(d):
    n = int(100_000 * SCALE)
    small = d / "small"
    if not small.exists():
        small.mkdir()
        a = np.ones((3, 64, 64), dtype="<f4")
        for i in range(n):
            np.save(small / f"{i:06d}.npy", a)
    files = sorted(str(p) for p in small.glob("*.npy"))
    row(f"`load_many` {n} `(3, 64, 64) <f4` files", best(lambda: npy_serde.load_many(files)),
        best(lambda: [np.load(f) for f in files]), "a loop of `np.load`")


def case_scan(d):
    import polars as pl

    path = d / "w2.npy"
    if not path.exists():
        np.save(path, w2(int(20e6 * SCALE)))

    def theirs():
        a = np.load(path)
        return pl.from_numpy(a[["id", "x", "y", "flag"]]).select(pl.col("x").sum()).item()

    def ours():
        return npy_serde.scan_npy(path).select(pl.col("x").sum()).collect().item()

    assert np.isclose(ours(), theirs())
    row("`scan_npy` W2, x summed", best(ours), best(theirs), "`pl.from_numpy(np.load(...))`")


def case_savez(d):
    a = w2(int(20e6 * SCALE / 4))
    cols = {n: np.ascontiguousarray(a[n]) for n in W2.names}
    row("`savez_compressed` W2/4's columns",
        best(lambda: npy_serde.savez_compressed(d / "ours.npz", **cols)),
        best(lambda: np.savez_compressed(d / "theirs.npz", **cols)), "`np.savez_compressed`")


CASES = {"load": case_load, "mmap": case_mmap, "many": case_many, "scan": case_scan,
         "savez": case_savez}


def main():
    chosen = sys.argv[1:] or list(CASES)
    print(f"npy_serde vs NumPy {np.__version__}, scale {SCALE}, best of {REPS}")
    print("| case | npy_serde | anchor | ratio |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="npy-bench-") as t:
        d = Path(t)
        for c in chosen:
            CASES[c](d)


if __name__ == "__main__":
    main()
