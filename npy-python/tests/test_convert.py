"""``convert`` between ``.npy``, ``.npz`` members, column tables, Parquet and Arrow IPC, checked
with NumPy and pyarrow: values equal, ``.npy`` round trips byte for byte, string widths from the
whole input, the null and decimal policies, column choice, and no file left by a failure;
``scan(layout="columns")`` over archives NumPy wrote."""

import decimal
import os

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ipc = pytest.importorskip("pyarrow.ipc")

import npy_serde
from npy_serde import NpyError
from conftest import FIXTURES

NPY = FIXTURES / "npy"


def records(n=1000):
    a = np.zeros(n, dtype=[("id", "<i8"), ("x", "<f4"), ("name", "<U5"), ("v", "<f8", (2,))])
    a["id"] = np.arange(n)
    a["x"] = np.arange(n) / 4
    a["name"] = [f"n{i % 1000}" for i in range(n)]
    a["v"] = np.arange(2 * n).reshape(n, 2)
    return a


def test_npy_to_parquet_and_back_is_np_save_bytes(tmp_path):
    a = records()
    src = tmp_path / "a.npy"
    np.save(src, a)
    assert npy_serde.convert(src, tmp_path / "a.parquet") == []
    t = pq.read_table(tmp_path / "a.parquet")
    assert t.column("id").to_pylist() == a["id"].tolist()
    assert t.column("name").to_pylist() == a["name"].tolist()
    assert t.column("v").to_pylist() == a["v"].tolist()
    npy_serde.convert(tmp_path / "a.parquet", tmp_path / "b.npy")
    assert (tmp_path / "b.npy").read_bytes() == src.read_bytes()
    npy_serde.convert(src, tmp_path / "a.arrow")
    with ipc.open_file(tmp_path / "a.arrow") as f:
        assert f.read_all().column("x").to_pylist() == a["x"].tolist()
    npy_serde.convert(tmp_path / "a.arrow", tmp_path / "c.npy")
    assert (tmp_path / "c.npy").read_bytes() == src.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["a.arrow", "a.npy", "a.parquet", "b.npy", "c.npy"]


def test_table_strings_nulls_and_decimals_to_npy(tmp_path):
    # The longest string is in the last row group: the width comes from the whole file.
    names = ["a"] * 5000 + ["a much longer name"]
    t = pa.table({
        "name": names,
        "n": pa.array([1, None] * 2500 + [3], pa.int64()),
        "price": pa.array([decimal.Decimal("1.25")] * 5001, pa.decimal128(10, 2)),
    })
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=1000)
    with pytest.raises(NpyError, match="null"):
        npy_serde.convert(tmp_path / "t.parquet", tmp_path / "t.npy")
    assert not os.path.exists(tmp_path / "t.npy")
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []
    npy_serde.convert(tmp_path / "t.parquet", tmp_path / "t.npy", nulls={"n": "fill=-1"})
    a = np.load(tmp_path / "t.npy")
    assert a.dtype["name"] == np.dtype("<U18")
    assert a["name"][-1] == "a much longer name"
    assert a["n"][:4].tolist() == [1, -1, 1, -1]
    assert a["price"][0] == 1.25
    npy_serde.convert(tmp_path / "t.parquet", tmp_path / "s.npy", nulls="nan",
                      decimals="scaled")
    s = np.load(tmp_path / "s.npy")
    assert s.dtype["n"] == np.dtype("<f8") and np.isnan(s["n"][1])
    assert s["price"][0] == 125
    with pytest.raises(ValueError, match="nulls"):
        npy_serde.convert(tmp_path / "t.parquet", tmp_path / "x.npy", nulls="sometimes")
    with pytest.raises(NpyError, match="apply to .npy and .npz"):
        npy_serde.convert(tmp_path / "t.parquet", tmp_path / "x.parquet", nulls="nan")


def test_columns_exclude_members_and_compression(tmp_path):
    a = records(10)
    np.savez(tmp_path / "in.npz", recs=a, other=np.arange(3))
    npy_serde.convert(tmp_path / "in.npz", tmp_path / "r.parquet", member="recs",
                      columns=["name", "id"], compression="zstd:5", row_group_size=4)
    t = pq.read_table(tmp_path / "r.parquet")
    assert t.column_names == ["name", "id"]
    assert pq.ParquetFile(tmp_path / "r.parquet").metadata.num_row_groups == 3
    assert pq.ParquetFile(tmp_path / "r.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    npy_serde.convert(tmp_path / "r.parquet", tmp_path / "out.npz", key="table", exclude="name")
    with np.load(tmp_path / "out.npz") as z:
        assert z.files == ["table"]
        assert z["table"]["id"].tolist() == a["id"].tolist()
        assert z["table"].dtype.names == ("id",)
    with pytest.raises(NpyError, match="no column `nope`"):
        npy_serde.convert(tmp_path / "r.parquet", tmp_path / "x.npy", columns=["nope"])
    with pytest.raises(NpyError, match="no member"):
        npy_serde.convert(tmp_path / "in.npz", tmp_path / "x.npy", member="missing")
    with pytest.raises(ValueError, match="layout"):
        npy_serde.convert(tmp_path / "r.parquet", tmp_path / "x.npy", layout="diagonal")


def test_column_tables_written_and_scanned(tmp_path):
    a = records(100)
    np.save(tmp_path / "a.npy", a)
    for out in ["cols.npz", "cols"]:
        assert npy_serde.convert(tmp_path / "a.npy", tmp_path / out, layout="columns") == []
    with np.load(tmp_path / "cols.npz") as z:
        assert z.files == ["id", "x", "name", "v"]
        for n in z.files:
            assert np.array_equal(z[n], a[n]) and z[n].dtype == a[n].dtype, n
    for n in a.dtype.names:
        assert np.array_equal(np.load(tmp_path / "cols" / f"{n}.npy"), a[n]), n
    # Scanned back, and a column table converted to a row file equals the original's values.
    t = pa.table(npy_serde.scan(tmp_path / "cols.npz", layout="columns"))
    assert t.column_names == ["id", "x", "name", "v"]
    assert t.column("v").to_pylist() == a["v"].tolist()
    npy_serde.convert(tmp_path / "cols", tmp_path / "back.npy")
    back = np.load(tmp_path / "back.npy")
    assert back.dtype.names == ("id", "name", "v", "x")  # a directory's columns: name order
    for n in a.dtype.names:
        assert np.array_equal(back[n], a[n]), n
    with pytest.raises(NpyError, match="layout='columns'"):
        npy_serde.convert(tmp_path / "a.npy", tmp_path / "x.parquet", layout="columns")


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_scan_column_tables_numpy_wrote(tmp_path, save):
    rec = np.array([(1, 0.5), (2, 1.5), (3, 2.5)], dtype=[("a", "<i2"), ("b", ">f8")])
    cols = {"id": np.arange(3, dtype="<i8"), "m": np.arange(6, dtype="<f4").reshape(3, 2),
            "rec": rec, "s": np.array(["x", "yy", "zzz"])}
    save(tmp_path / "t.npz", **cols)
    s = npy_serde.scan(tmp_path / "t.npz", layout="columns", batch_size=2)
    t = pa.table(s)
    assert t.column_names == ["id", "m", "rec", "s"]
    assert t.column("m").to_pylist() == cols["m"].tolist()
    assert t.column("rec").to_pylist() == [{"a": 1, "b": 0.5}, {"a": 2, "b": 1.5},
                                           {"a": 3, "b": 2.5}]
    assert t.column("s").to_pylist() == ["x", "yy", "zzz"]
    one = pa.table(npy_serde.scan(tmp_path / "t.npz", layout="columns", columns=["s", "id"]))
    assert one.column_names == ["s", "id"]
    df = npy_serde.read_npy(tmp_path / "t.npz", layout="columns")
    assert df["id"].to_list() == [0, 1, 2]


def test_scan_column_table_refusals(tmp_path):
    np.savez(tmp_path / "bad.npz", a=np.arange(3), b=np.arange(4))
    with pytest.raises(NpyError, match="column `b` has 4 rows"):
        npy_serde.scan(tmp_path / "bad.npz", layout="columns")
    with pytest.raises(ValueError, match="no member"):
        npy_serde.scan(tmp_path / "bad.npz", layout="columns", member="a")
    with pytest.raises(ValueError, match="layout"):
        npy_serde.scan(tmp_path / "bad.npz", layout="sideways")
