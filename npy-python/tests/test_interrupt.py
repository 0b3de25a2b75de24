"""Ctrl-C stops a long load: a process loading a large (sparse) file gets SIGINT while the
data is read and raises ``KeyboardInterrupt`` at once, ``load`` and ``load_many`` alike."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

CHILD = """
import sys, time, npy_serde
print("start", flush=True)
t = time.monotonic()
try:
    if sys.argv[2] == "many":
        npy_serde.load_many([sys.argv[1]] * 4, threads=2)
    else:
        npy_serde.load(sys.argv[1])
    print("finished", time.monotonic() - t, flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic() - t, flush=True)
"""


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """An 8 GiB `<f8` file whose data is a hole: reading it costs time, not disk."""
    path = tmp_path_factory.mktemp("big") / "big.npy"
    a = np.lib.format.open_memmap(path, mode="w+", dtype="<f8", shape=(1 << 30,))
    del a
    return path


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
@pytest.mark.parametrize("door", ["one", "many"])
def test_sigint_interrupts_a_long_load(big, door):
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(big), door],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "start"
    time.sleep(0.3)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    waited = time.monotonic() - sent
    assert out.startswith("interrupted"), out
    assert waited < 3, f"{waited:.2f} s from SIGINT to the exception"
