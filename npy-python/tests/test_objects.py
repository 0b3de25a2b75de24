"""Object arrays (dtype ``O``, records with ``O`` fields, NumPy 2's ``StringDType``) read with
``allow_pickle_data=True`` by the crate's data-only pickle reader: the values
``np.load(allow_pickle=True)`` gives (make_pickle.py's and make_pypi_objects.py's
expected.json), refused without the flag, and every hostile pickle refused in bounded time with
nothing run."""

import datetime as dt
import decimal
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


def same(a, b):
    """Whether two values from an object array are the same Python objects: type for type,
    datetimes with their fold and time zone (repr), Decimals by their text (NaN, sNaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, decimal.Decimal):
        return str(a) == str(b)
    if isinstance(a, (dt.datetime, dt.time)):
        return a == b and a.fold == b.fold and repr(a) == repr(b)
    if isinstance(a, dt.timezone):
        return repr(a) == repr(b) and (a is dt.timezone.utc) == (b is dt.timezone.utc)
    return a == b and repr(a) == repr(b)


STDLIB = [("stdlib.npy", "ASCII")] + [(f"stdlib_protocol{p}.npy", "ASCII") for p in (0, 2, 3, 5)] + [
    ("python2_datetimes.npy", "latin1")]


@pytest.mark.parametrize("name,encoding", STDLIB, ids=lambda c: c)
def test_datetimes_and_decimals_are_the_objects_np_load_builds(name, encoding):
    path = PICKLE / "np2" / name
    ours = npy_serde.load(path, allow_pickle_data=True, encoding=encoding)
    theirs = np.load(path, allow_pickle=True, encoding=encoding)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    kinds = set()
    for a, b in zip(ours.tolist(), theirs.tolist()):
        assert same(a, b), (a, b)
        kinds.add(type(a))
    assert {dt.datetime, dt.date, dt.time} <= kinds
    if not name.startswith("python2"):
        assert {dt.timedelta, dt.timezone, decimal.Decimal, dict, list} <= kinds
        # timezone.utc is the singleton, as unpickling makes it.
        assert ours[18] is dt.timezone.utc


def test_invalid_datetime_states_are_refused_naming_the_field():
    for name, part in [("datetime_bad_day.npy", "day 30"), ("datetime_bad_month.npy", "month 13"),
                       ("timezone_past_a_day.npy", "24 hours")]:
        with pytest.raises(NpyError, match=part):
            npy_serde.load(PICKLE / "hostile" / name, allow_pickle_data=True)


@pytest.mark.parametrize("sub", ["np1", "np2"])
def test_numpy_scalars_in_object_arrays_keep_their_dtype(sub):
    # make_pickle.py's `scalars`: one scalar of each kind in an object array.
    path = PICKLE / sub / "scalars.npy"
    ours = npy_serde.load(path, allow_pickle_data=True)
    want = [np.float32, np.int64, np.uint8, np.bool_, np.complex128, np.str_, np.bytes_,
            np.datetime64]
    assert [type(x) for x in ours] == want
    assert ours[7].dtype == np.dtype("M8[D]") and ours[7] == np.datetime64("2020-01-02")
    assert ours[0] == np.float32(1.5) and ours[2] == 200
    if int(np.__version__.split(".")[0]) >= 2:
        theirs = np.load(path, allow_pickle=True)
        for a, b in zip(ours, theirs):
            assert type(a) is type(b) and a.dtype == b.dtype and a == b, (a, b)
