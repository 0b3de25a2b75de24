"""``load`` against ``np.load`` on every fixture NumPy wrote (tests/fixtures): the same dtype,
shape, order and bytes where NumPy loads a file, an ``NpyError`` where it refuses one, through
a path, bytes and a file object, and memory-mapped."""

import io
import json
import time

import numpy as np
import pytest

import npy_serde
from npy_serde import NpyError, NpyValueError
from conftest import FIXTURES

# Object arrays are tested in test_objects.py; hostile pickles are never given to NumPy.
NPY = sorted(p for p in FIXTURES.rglob("*.npy")
             if "pickle" not in p.parts and "fuzz" not in str(p) and "foreign" not in p.parts)
NPZ = sorted(p for p in FIXTURES.rglob("*.npz")
             if "pickle" not in p.parts and "fuzz" not in str(p) and "foreign" not in p.parts)


# What NumPy 2 (the manifest's) refuses: refused here too, whichever NumPy runs the tests
# (NumPy 1.26 loads a shape of (-1,), for one).
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
REFUSED = {FIXTURES / e["file"] for e in MANIFEST["bad"] if not e["numpy_accepts"]}


def numpy_load(path, **kw):
    try:
        return np.load(path, **kw), None
    except Exception as e:  # noqa: BLE001 - any refusal of NumPy's
        return None, e


def after_array(path, array):
    """The bytes of `path` after its header and `array`'s data (a few fixtures have some)."""
    with open(path, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read = (np.lib.format.read_array_header_1_0 if major == 1
                else np.lib.format.read_array_header_2_0)
        read(f, max_header_size=10**6)
        return f.read()[array.nbytes:]


def same(ours, theirs, where):
    assert type(ours) is type(theirs) or isinstance(ours, np.ndarray), where
    assert ours.dtype == theirs.dtype, f"{where}: {ours.dtype} != {theirs.dtype}"
    assert ours.dtype.descr == theirs.dtype.descr, where
    assert ours.shape == theirs.shape, where
    assert ours.flags.f_contiguous == theirs.flags.f_contiguous, where
    assert ours.flags.c_contiguous == theirs.flags.c_contiguous, where
    assert ours.tobytes(order="A") == theirs.tobytes(order="A"), where


def test_there_are_fixtures():
    assert len(NPY) >= 100 and len(NPZ) >= 10


@pytest.mark.parametrize("path", NPY, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_npy_as_np_load(path):
    theirs, refused = numpy_load(path)
    if refused is not None or path in REFUSED:
        with pytest.raises(NpyError):
            npy_serde.load(path)
        return
    same(npy_serde.load(path), theirs, "path")
    same(npy_serde.load(path.read_bytes()), theirs, "bytes")
    with open(path, "rb") as f:
        same(npy_serde.load(f), theirs, "file object")
        assert f.read() == after_array(path, theirs), "left right after the array"
    mapped = npy_serde.load(path, mmap_mode="r")
    assert isinstance(mapped, np.memmap)
    same(np.asarray(mapped), theirs, "mmap")


def test_loaded_arrays_own_writable_memory():
    a = npy_serde.load(FIXTURES / "npy" / "rec_w2_le.npy")
    assert a.flags.writeable and a.base is not None
    a[0] = a[1]


def test_file_objects_are_left_after_each_array():
    buf = io.BytesIO()
    np.save(buf, np.arange(3))
    np.save(buf, np.array([[1.5, 2.5]], order="F"))
    buf.seek(0)
    np.testing.assert_array_equal(npy_serde.load(buf), np.arange(3))
    np.testing.assert_array_equal(npy_serde.load(buf), [[1.5, 2.5]])


@pytest.mark.parametrize("path", NPZ, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_npz_as_np_load(path):
    theirs, refused = numpy_load(path)
    if refused is not None:
        with pytest.raises(NpyError):
            with npy_serde.load(path) as z:
                for k in z:
                    z[k]
        return
    with theirs, npy_serde.load(path) as ours:
        assert list(ours.keys()) == list(theirs.keys())
        for k in theirs:
            t = theirs[k]
            o = ours[k]
            if isinstance(t, bytes):
                assert o == t
            else:
                same(o, t, f"{path.name}:{k}")
                assert k + ".npy" in ours and k in ours


def test_npz_stored_members_map_in_place():
    path = FIXTURES / "npz" / "records.npz"
    with np.load(path) as theirs, npy_serde.load(path, mmap_mode="r") as ours:
        for k in theirs:
            o = ours[k]
            assert isinstance(o, np.memmap), k
            same(np.asarray(o), theirs[k], k)


def test_bad_files_raise_value_errors_naming_the_problem():
    bad = sorted((FIXTURES / "bad").glob("*.npy"))
    assert bad
    for p in bad:
        start = time.monotonic()
        try:
            npy_serde.load(p)
        except NpyError as e:
            assert str(e), p
        assert time.monotonic() - start < 5, p


def test_header_limit_and_options():
    path = FIXTURES / "npy" / "rec_w2_le.npy"
    with pytest.raises(NpyValueError, match="header"):
        npy_serde.load(path, max_header_size=16)
    with pytest.raises(ValueError, match="encoding"):
        npy_serde.load(path, encoding="utf8")
    with pytest.raises(FileNotFoundError):
        npy_serde.load(FIXTURES / "no-such.npy")


def test_the_module_docs_examples_run():
    import doctest

    failed, attempted = doctest.testmod(npy_serde)
    assert attempted > 0 and failed == 0


def test_load_many_gives_what_load_gives_in_order():
    good = [p for p in NPY if numpy_load(p)[1] is None and p not in REFUSED]
    for threads in (None, 1, 3):
        many = npy_serde.load_many(good, threads=threads)
        assert len(many) == len(good)
        for p, a in zip(good, many):
            same(a, np.load(p), str(p))
    bad = FIXTURES / "bad" / "shape_negative_dim.npy"
    with pytest.raises(NpyValueError, match="shape_negative_dim.npy"):
        npy_serde.load_many([good[0], bad])
    with pytest.raises(ValueError, match="threads"):
        npy_serde.load_many(good, threads=0)
