"""``load`` of ``http://`` and ``s3://`` URLs (nginx and s3s-fs on loopback, started here):
the same arrays as from the local files, archives by their directory and the members asked
for, and missing objects raised as ``NpyOSError`` naming the URL."""

import numpy as np
import pytest

import npy_serde
from npy_serde import NpyOSError, NpyValueError
from conftest import FIXTURES
from servers import S3, Nginx
from test_load import same

FILES = ["npy/rec_w2_le.npy", "npy/f8_le_2x3_fortran.npy", "npy/U3_le_2x2_fortran.npy", "npy/i2_be_3x2_fortran.npy"]


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    server = Nginx(FIXTURES, tmp_path_factory.mktemp("nginx"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    server = S3(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()


def files():
    return FILES


def test_http_npy_and_npz(nginx):
    for f in files():
        same(npy_serde.load(nginx.url(f)), np.load(FIXTURES / f), f)
    with np.load(FIXTURES / "npz" / "mixed.npz") as theirs:
        with npy_serde.load(nginx.url("npz/mixed.npz")) as ours:
            assert list(ours) == list(theirs)
            for k in theirs:
                if not isinstance(theirs[k], bytes):
                    same(ours[k], theirs[k], k)
    with pytest.raises(NpyOSError, match="nope.npy"):
        npy_serde.load(nginx.url("nope.npy"))
    with pytest.raises(NpyValueError, match="local files"):
        npy_serde.load(nginx.url(files()[0]), mmap_mode="r")


def test_s3_npy_npz_and_objects(s3, monkeypatch):
    for k, v in s3.env.items():
        monkeypatch.setenv(k, v)
    for f in files():
        url = s3.put(f, (FIXTURES / f).read_bytes())
        same(npy_serde.load(url), np.load(FIXTURES / f), url)
    url = s3.put("a/records.npz", (FIXTURES / "npz" / "records.npz").read_bytes())
    with np.load(FIXTURES / "npz" / "records.npz") as theirs, npy_serde.load(url) as ours:
        for k in theirs:
            same(ours[k], theirs[k], k)
    url = s3.put("o/strings.npy", (FIXTURES / "pickle" / "np2" / "strings.npy").read_bytes())
    assert npy_serde.load(url, allow_pickle_data=True).tolist() == np.load(
        FIXTURES / "pickle" / "np2" / "strings.npy", allow_pickle=True).tolist()
    with pytest.raises(NpyOSError, match="s3://npy/missing.npy"):
        npy_serde.load("s3://npy/missing.npy")
    with pytest.raises(NpyOSError, match="s3://"):
        npy_serde.load("ftp://host/x.npy")
