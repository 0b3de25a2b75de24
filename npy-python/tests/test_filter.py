"""``scan_npy``'s filter: the conjuncts of a Polars predicate that compare a column with a
literal are evaluated in the scan (fewer rows reach Polars), and every answer equals Polars'
own over ``np.load``'s array, NaN, -0.0 and literals the column cannot hold included."""

import numpy as np
import pytest

pl = pytest.importorskip("polars")

import npy_serde
from npy_serde import _polars_filter


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    n = 5000
    a = np.zeros(n, dtype=[("id", "<i4"), ("x", "<f8"), ("y", "<f4"), ("flag", "?"),
                           ("name", "<U4"), ("u", "<u1")])
    a["id"] = np.arange(n)
    x = np.arange(n) / 7 - 100
    x[::11] = np.nan
    x[::13] = -0.0
    a["x"] = x
    a["y"] = np.arange(n) / 2
    a["flag"] = np.arange(n) % 3 == 0
    a["name"] = [f"n{i % 50}" for i in range(n)]
    a["u"] = np.arange(n) % 256
    path = tmp_path_factory.mktemp("filter") / "t.npy"
    np.save(path, a)
    return path, pl.from_numpy(a)


PREDICATES = [
    pl.col("id") > 4000,
    (pl.col("id") >= 100) & (pl.col("id") < 200),
    pl.lit(10) >= pl.col("id"),
    pl.col("x") > 0.5,
    pl.col("x") == 0.0,
    pl.col("x") >= 0,
    pl.col("x") < float("inf"),
    pl.col("x").is_nan(),
    pl.col("y") == 2.5,
    pl.col("y") == 0.1,  # not exact in float32: left to Polars
    pl.col("flag") == True,  # noqa: E712
    pl.col("name") == "n7",
    (pl.col("name") != "n7") & (pl.col("u") <= 3),
    pl.col("u") < 300,  # past u1: left to Polars
    pl.col("u") > -1,
    pl.col("id").is_between(10, 20),
    pl.col("id").is_between(10, 20, closed="none"),
    (pl.col("id") < 10) | (pl.col("id") > 4990),
    pl.col("id").is_in([1, 2, 3]),
    pl.col("x").is_not_null() & (pl.col("id") % 2 == 0),
    pl.col("x").is_null(),
]


@pytest.mark.parametrize("i", range(len(PREDICATES)))
def test_filtered_scan_equals_polars(table, i):
    path, df = table
    pred = PREDICATES[i]
    got = npy_serde.scan_npy(path, batch_size=700).filter(pred).collect()
    assert got.equals(df.filter(pred)), str(pred)
    got = npy_serde.scan_npy(path).filter(pred).select("id").head(5).collect()
    assert got.equals(df.filter(pred).select("id").head(5)), str(pred)


def test_pushed_terms(table):
    path, _ = table
    assert _polars_filter((pl.col("id") >= 100) & (pl.lit(7) > pl.col("x"))) == [
        ("id", ">=", 100), ("x", "<", 7)]
    assert _polars_filter(pl.col("id").is_between(1, 2)) == [("id", ">=", 1), ("id", "<=", 2)]
    assert _polars_filter(pl.col("name").is_null()) == [("name", "is_null", None)]
    assert _polars_filter((pl.col("id") < 1) | (pl.col("id") > 2)) == []
    # The scan's batches hold only the rows the terms keep.
    s = npy_serde.scan(path)
    rows = sum(b.num_rows for b in s.batches(None, [("id", ">=", 4990), ("name", "==", "n40")]))
    assert rows == 1
    with pytest.raises(ValueError, match="operator"):
        s.batches(None, [("id", "~", 1)])
    with pytest.raises(ValueError, match="literal"):
        s.batches(None, [("id", "==", None)])
