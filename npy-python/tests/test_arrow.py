"""``scan`` through the Arrow PyCapsule interface: pyarrow, Polars and DuckDB read the same
values ``np.load`` gives; scans of directories, globs and archive members; a consumer's
``requested_schema`` honoured; ``scan_npy`` with projection, ``head`` and a filter equal to
Polars over ``np.load``'s array."""

import numpy as np
import pytest

# The NumPy 1.26 venv of CI runs the load and save tests only: these three are not in it.
duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

import npy_serde
from npy_serde import NpyError, NpyValueError
from conftest import FIXTURES

NPY = FIXTURES / "npy"
FILES = ["rec_w2_le.npy", "rec_padded_leading.npy", "rec_aligned.npy", "rec_subarray_be.npy",
         "rec_str_unicode.npy", "f4_le_1d.npy", "f8_le_1d.npy", "i2_le_1d.npy", "i4_le_1d.npy",
         "i8_le_1d.npy"]


def columns(a):
    """np.load's array as lists per column (a plain array is the column `value`)."""
    if a.dtype.names is None:
        return {None: a.tolist()}
    return {n: a[n].tolist() for n in a.dtype.names}


def same_values(x, y):
    """Equal, NaN equal to NaN, through nested lists."""
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(same_values(a, b) for a, b in zip(x, y))
    if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
        return True
    return x == y


def check_table(t, a, where):
    cols = columns(a)
    assert t.num_rows == len(a), where
    if None in cols:
        assert t.num_columns == 1, where
        assert same_values(t.column(0).to_pylist(), cols[None]), where
        return
    assert t.column_names == list(cols), where
    for n, v in cols.items():
        assert same_values(t.column(n).to_pylist(), v), f"{where}: {n}"


@pytest.mark.parametrize("name", FILES)
def test_pyarrow_polars_and_duckdb_read_what_np_load_gives(name):
    a = np.load(NPY / name)
    s = npy_serde.scan(NPY / name)
    check_table(pa.table(s), a, name)
    check_table(pa.table(s), a, f"{name} (again)")  # scannable more than once
    df = pl.DataFrame(s)
    assert df.height == len(a)
    for n, v in columns(a).items():
        col = df.to_series(0) if n is None else df[n]
        assert same_values(col.to_list(), v), f"{name}: {n}"
    # DuckDB takes every Arrow type here but float16 (`f2`): those columns are left out.
    t = pa.table(s)
    keep = [f.name for f in t.schema if f.type != pa.float16()]
    d = npy_serde.scan(NPY / name, columns=keep if a.dtype.names else None)
    assert duckdb.sql("SELECT count(*) FROM d").fetchall()[0][0] == len(a)


def test_requested_schema_selects_and_orders_columns():
    s = npy_serde.scan(NPY / "rec_w2_le.npy")
    full = pa.table(s)
    want = pa.schema([full.schema.field("x"), full.schema.field("id")])
    r = pa.RecordBatchReader.from_stream(s, schema=want)
    t = r.read_all()
    assert t.column_names == ["x", "id"]
    assert same_values(t.column("x").to_pylist(), full.column("x").to_pylist())
    with pytest.raises(Exception, match="no cast"):
        pa.RecordBatchReader.from_stream(s, schema=pa.schema([("x", pa.int32())])).read_all()


def test_directories_globs_and_members(tmp_path):
    rec = np.load(NPY / "rec_w2_le.npy")
    for i in range(3):
        np.save(tmp_path / f"part-{i}.npy", rec[i:])
    whole = np.concatenate([rec[i:] for i in range(3)])
    for source in (tmp_path, str(tmp_path / "part-*.npy"),
                   [tmp_path / f"part-{i}.npy" for i in range(3)]):
        check_table(pa.table(npy_serde.scan(source, batch_size=2)), whole, str(source))
    np.save(tmp_path / "part-9.npy", np.arange(3))
    with pytest.raises(Exception, match="part-9.npy"):
        pa.table(npy_serde.scan(tmp_path))
    with np.load(FIXTURES / "npz" / "records.npz") as z:
        t = pa.table(npy_serde.scan(FIXTURES / "npz" / "records.npz", member="rec"))
        check_table(t, z["rec"], "records.npz:rec")
    with pytest.raises(NpyValueError, match="without .npy files"):
        npy_serde.scan(FIXTURES / "npz")
    with pytest.raises(NpyError):
        npy_serde.scan(FIXTURES / "bad" / "shape_negative_dim.npy")


def test_scan_npy_pushes_projection_and_n_rows_and_filters_exactly():
    path = NPY / "rec_w2_le.npy"
    a = np.load(path)
    plain = pl.DataFrame({n: a[n] for n in a.dtype.names if a[n].ndim == 1})
    lf = npy_serde.scan_npy(path, batch_size=2)
    got = lf.filter(pl.col("flag") == 1).select("id", "x").collect()
    want = plain.filter(pl.col("flag") == 1).select("id", "x")
    assert got.equals(want)
    assert lf.head(3).collect().height == 3
    assert lf.select("y").collect()["y"].to_list() == a["y"].tolist()
    assert npy_serde.read_npy(path, columns=["id"])["id"].to_list() == a["id"].tolist()
