"""``save``, ``savez`` and ``savez_compressed`` against NumPy's: the bytes ``np.save`` writes
for every fixture array it writes without a pickle, archives NumPy reads back with each
member's bytes equal to ``np.save``'s, and object arrays of strings through the crate's pickle
writer, which NumPy loads."""

import io
import os
import stat
import zipfile

import numpy as np
import pytest

import npy_serde
from npy_serde import NpyValueError
from conftest import FIXTURES

ARRAYS = []
for p in sorted((FIXTURES / "npy").glob("*.npy")):
    try:
        ARRAYS.append((p.name, np.load(p)))
    except Exception:  # noqa: BLE001 - the ones NumPy cannot load are not saved
        pass


def np_save_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def our_save_bytes(a):
    b = io.BytesIO()
    npy_serde.save(b, a)
    return b.getvalue()


@pytest.mark.parametrize("name,a", ARRAYS, ids=[n for n, _ in ARRAYS])
def test_save_writes_np_save_bytes(name, a):
    if a.dtype.hasobject:
        pytest.skip("object arrays: test_strings_round_trip")
    assert our_save_bytes(a) == np_save_bytes(a)
    # Views that are neither C- nor Fortran-contiguous are written as NumPy writes them.
    if a.ndim >= 1 and a.shape[0] > 1:
        assert our_save_bytes(a[::2]) == np_save_bytes(a[::2])


def test_save_to_a_path_appends_npy(tmp_path):
    npy_serde.save(tmp_path / "x", np.arange(4))
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), np.arange(4))


@pytest.mark.parametrize("compressed", [False, True])
def test_savez_members_are_np_save_bytes(tmp_path, compressed):
    arrays = dict(ARRAYS[:20])
    positional = [np.arange(5), np.eye(2, order="F")]
    kw = {n.replace(".npy", ""): a for n, a in arrays.items() if not a.dtype.hasobject}
    save = npy_serde.savez_compressed if compressed else npy_serde.savez
    save(tmp_path / "out", *positional, **kw)
    path = tmp_path / "out.npz"
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        kinds = {i.compress_type for i in z.infolist()}
        assert kinds == {zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED}
        for i, a in enumerate(positional):
            assert z.read(f"arr_{i}.npy") == np_save_bytes(a)
        for k, a in kw.items():
            assert z.read(f"{k}.npy") == np_save_bytes(a)
    with np.load(path) as back:
        assert set(back.files) == {"arr_0", "arr_1", *kw}
    with pytest.raises(ValueError, match="arr_0"):
        npy_serde.savez(tmp_path / "dup", np.arange(2), arr_0=np.arange(3))


def test_savez_replaces_an_archive_when_complete(tmp_path):
    # Written under a temporary name beside the target and renamed over it: the old archive's
    # permissions are kept and no temporary file is left.
    path = tmp_path / "a.npz"
    np.savez(path, x=np.arange(3))
    os.chmod(path, 0o640)
    npy_serde.savez(path, y=np.arange(4))
    assert os.listdir(tmp_path) == ["a.npz"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    with np.load(path) as z:
        assert z.files == ["y"]
        np.testing.assert_array_equal(z["y"], np.arange(4))


def test_savez_to_a_file_object():
    b = io.BytesIO()
    npy_serde.savez(b, a=np.arange(3))
    b.seek(0)
    with np.load(b) as z:
        np.testing.assert_array_equal(z["a"], np.arange(3))


def test_strings_round_trip(tmp_path):
    values = np.array(["a", None, "優良", ""], dtype=object)
    npy_serde.save(tmp_path / "s.npy", values)
    back = np.load(tmp_path / "s.npy", allow_pickle=True)
    assert back.dtype == object and back.tolist() == values.tolist()
    ours = npy_serde.load(tmp_path / "s.npy", allow_pickle_data=True)
    assert ours.tolist() == values.tolist()
    # Other element types and shapes: test_save_objects.py.
    with pytest.raises(NpyValueError, match="this writer takes str, bytes"):
        npy_serde.save(tmp_path / "o.npy", np.array([1, {1}], dtype=object))
