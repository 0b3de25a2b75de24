"""np.load reference timings for the npy-serde read benchmark.

Usage: python numpy_ref.py REPS FILE [FILE ...]
Prints one line per file: "<path> <best seconds> <data bytes>" (the best of REPS loads after a
warm-up: on a noisy machine interference only adds time).
Run by benches/read.rs when NPY_PYTHON is set, or by hand on the files it leaves with
NPY_BENCH_KEEP=1.
"""
import sys
import time

import numpy as np


def main() -> None:
    reps = int(sys.argv[1])
    for path in sys.argv[2:]:
        np.load(path)  # warm the page cache
        times = []
        nbytes = 0
        for _ in range(reps):
            t = time.perf_counter()
            a = np.load(path)
            times.append(time.perf_counter() - t)
            nbytes = a.nbytes
            del a
        print(path, min(times), nbytes, flush=True)


if __name__ == "__main__":
    main()
