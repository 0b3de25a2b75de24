"""Ctrl-C stops a long load: a process loading a large (sparse) file gets SIGINT while the
data is read and raises ``KeyboardInterrupt`` at once, ``load`` and ``load_many`` alike; and a
query whose result pyarrow is reading stops with an error saying it was interrupted."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

# Each child takes SIGINT as a terminal's Ctrl-C delivers it. A runner that ignores SIGINT
# (`nohup`, a script's background job) passes that on to its children, and Python then keeps
# ignoring it: the load ran to its end ("finished"), as it did in CI runs started that way.
SIGINT_DEFAULT = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"

CHILD = SIGINT_DEFAULT + """
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
    interrupt(CHILD, str(big), door, after=0.3)


def interrupt(child, *args, after):
    """Runs `child` with `args`, sends it SIGINT `after` seconds after it printed "start",
    and checks that it said "interrupted" within 3 seconds."""
    p = subprocess.Popen([sys.executable, "-c", child, *args], stdout=subprocess.PIPE,
                         text=True)
    assert p.stdout.readline().strip() == "start"
    time.sleep(after)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    waited = time.monotonic() - sent
    assert out.startswith("interrupted"), out
    assert waited < 3, f"{waited:.2f} s from SIGINT to the exception"


CHILD_SQL = SIGINT_DEFAULT + """
import sys, time, npy_serde, pyarrow as pa
q = npy_serde.sql("SELECT count(*) AS n FROM t a CROSS JOIN t b WHERE a.v * b.v = -1.0",
                  {"t": sys.argv[1]})
print("start", flush=True)
t = time.monotonic()
try:
    pa.table(q)
    print("finished", time.monotonic() - t, flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic() - t, flush=True)
except Exception as e:
    said = "interrupted" if "interrupted" in str(e) else f"failed: {e}"
    print(said, time.monotonic() - t, flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_sigint_interrupts_a_query_a_consumer_reads(tmp_path):
    """A query whose stream pyarrow consumes (the batches computed while pyarrow waits in
    the stream's get_next) stops on Ctrl-C."""
    import npy_serde

    pytest.importorskip("pyarrow")
    if getattr(npy_serde._native, "Query", None) is None:
        pytest.skip("built without the sql feature")
    path = tmp_path / "t.npy"
    np.save(path, np.zeros(200_000, dtype=[("v", "<f8")]))
    interrupt(CHILD_SQL, str(path), after=0.5)
