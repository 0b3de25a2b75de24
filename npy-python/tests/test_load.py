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


def same(ours, theirs, where, aligned=True):
    assert type(ours) is type(theirs) or isinstance(ours, np.ndarray), where
    assert ours.dtype == theirs.dtype, f"{where}: {ours.dtype} != {theirs.dtype}"
    assert ours.dtype.descr == theirs.dtype.descr, where
    assert ours.shape == theirs.shape, where
    assert ours.flags.f_contiguous == theirs.flags.f_contiguous, where
    assert ours.flags.c_contiguous == theirs.flags.c_contiguous, where
    if aligned:
        assert ours.flags.aligned == theirs.flags.aligned, where
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
    # A map of a header not padded to 16 bytes is unaligned, as NumPy's own memmap of it.
    same(np.asarray(mapped), theirs, "mmap", aligned=False)


def test_loaded_arrays_own_writable_memory():
    """The array owns the bytes read (its base the package's memory object, no bytes or uint8
    array), writeable, in the file's order, through a path, bytes, a file object and
    load_many."""
    w2 = FIXTURES / "npy" / "rec_w2_le.npy"
    fortran = FIXTURES / "npy" / "f8_le_2x3_fortran.npy"
    with open(fortran, "rb") as f:
        from_file = npy_serde.load(f)
    arrays = [npy_serde.load(w2), npy_serde.load(fortran), npy_serde.load(fortran.read_bytes()),
              from_file, *npy_serde.load_many([w2, fortran])]
    for a in arrays:
        assert type(a) is np.ndarray
        assert a.flags.writeable and a.flags.aligned
        assert type(a.base) is npy_serde._native.ArrayMemory, type(a.base)
        assert not isinstance(a.base, (bytes, bytearray, memoryview, np.ndarray))
        assert "memory of" in repr(a.base)
    for a in arrays[1:4] + arrays[5:]:
        assert a.flags.f_contiguous and not a.flags.c_contiguous
        assert a.shape == (2, 3) and a.strides == (8, 16)
        np.testing.assert_array_equal(a, np.load(fortran))
    a = arrays[0]
    a[0] = a[1]
    assert a[0] == a[1]
    # The memory outlives the array while a view of it lives.
    view = npy_serde.load(w2)["x"]
    np.testing.assert_array_equal(view, np.load(w2)["x"])
    assert view.base.base.__class__ is npy_serde._native.ArrayMemory


def test_load_many_copies_record_dtypes_and_shares_plain_ones():
    w2 = FIXTURES / "npy" / "rec_w2_le.npy"
    f8 = FIXTURES / "npy" / "f8_le_2x3_fortran.npy"
    a, b, c, d = npy_serde.load_many([w2, w2, f8, f8])
    assert a.dtype == b.dtype and a.dtype is not b.dtype
    a.dtype.names = tuple(f"n{i}" for i in range(len(a.dtype.names)))
    assert b.dtype == np.load(w2).dtype
    assert c.dtype == d.dtype == np.float64


def test_top_level_subarray_descrs_as_np_load():
    """A descr of a subarray type (a hand-written header): np.load refuses it unless the array
    is empty, where it keeps the subarray's base dtype and the header's shape."""
    def npy(descr, shape, data):
        h = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': {shape!r}, }}".encode()
        h += b" " * (63 - (10 + len(h)) % 64) + b"\n"
        return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + data

    empty = npy(("<f4", (3,)), (0, 5), b"")
    ours, theirs = npy_serde.load(empty), np.load(io.BytesIO(empty))
    same(ours, theirs, "empty subarray")
    assert ours.dtype == np.float32 and ours.shape == (0, 5)
    full = npy(("<f4", (3,)), (2,), np.arange(6, dtype="<f4").tobytes())
    with pytest.raises(ValueError):
        np.load(io.BytesIO(full))
    with pytest.raises(NpyValueError, match="subarray"):
        npy_serde.load(full)


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
