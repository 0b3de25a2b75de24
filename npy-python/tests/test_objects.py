"""Object arrays (dtype ``O``, records with ``O`` fields, NumPy 2's ``StringDType``) read with
``allow_pickle_data=True`` by the crate's data-only pickle reader: the values
``np.load(allow_pickle=True)`` gives (make_pickle.py's and make_pypi_objects.py's
expected.json), refused without the flag, and every hostile pickle refused in bounded time with
nothing run."""

import json
import os
import time

import numpy as np
import pytest

import npy_serde
from npy_serde import NpyError, NpyValueError
from conftest import FIXTURES
from make_pickle import flat, tojson

PICKLE = FIXTURES / "pickle"


def cases(sub):
    expected = json.loads((PICKLE / sub / "expected.json").read_text())
    return [(sub, name, e) for name, e in sorted(expected.items())]


def read(sub, name, **kw):
    archive, _, member = name.partition(".npz/")
    if member:
        with npy_serde.load(PICKLE / sub / f"{archive}.npz", **kw) as z:
            return z[member]
    return npy_serde.load(PICKLE / sub / name, **kw)


ALL = cases("np2") + cases("np1") + cases("pypi")


@pytest.mark.parametrize("sub,name,e", ALL, ids=lambda c: c if isinstance(c, str) else "")
def test_object_arrays_read_as_np_load_reads_them(sub, name, e):
    encoding = {"ascii": "ASCII"}.get(e["encoding"], e["encoding"])
    if any('"global"' in json.dumps(v) for v in e["values"]):
        # NumPy's own py*-objarr files hold the class `range`: never imported, refused.
        with pytest.raises(NpyValueError, match="builtins.range"):
            read(sub, name, allow_pickle_data=True, encoding=encoding)
        return
    if e["dtype"].startswith("StringDType") and int(np.__version__.split(".")[0]) < 2:
        with pytest.raises(NpyValueError, match="StringDType"):
            read(sub, name, allow_pickle_data=True, encoding=encoding)
        return
    a = read(sub, name, allow_pickle_data=True, encoding=encoding)
    assert list(a.shape) == e["shape"]
    assert str(a.dtype) == e["dtype"]
    assert [tojson(v) for v in flat(a)] == e["values"]
    with pytest.raises(NpyValueError, match="allow_pickle_data=True"):
        read(sub, name, encoding=encoding)


def test_there_are_object_fixtures():
    assert len(ALL) >= 70


def test_hostile_pickles_are_refused_and_nothing_runs(tmp_path):
    expected = json.loads((PICKLE / "hostile" / "expected.json").read_text())
    marker = tmp_path / "pwned"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for name in sorted(expected):
            start = time.monotonic()
            with pytest.raises(NpyError):
                npy_serde.load(PICKLE / "hostile" / name, allow_pickle_data=True)
            assert time.monotonic() - start < 10, name
    finally:
        os.chdir(cwd)
    assert not marker.exists()
    assert len(expected) >= 10


def test_object_arrays_are_not_memory_mapped():
    with pytest.raises(NpyValueError, match="memory-mapped"):
        npy_serde.load(PICKLE / "np2" / "strings.npy", mmap_mode="r", allow_pickle_data=True)
