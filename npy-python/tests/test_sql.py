"""``sql`` (the package's ``sql`` feature): queries over the table specs ``npy sql -t`` takes,
equal to DuckDB over the same TPC-H SF0.01 tables (tpchgen-cli's Parquet, and the same rows as
``.npy`` record arrays), results read more than once, as Arrow and as a record array."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import npy_serde
from npy_serde import NpyError, NpyValueError
from conftest import FIXTURES

if not hasattr(npy_serde._native, "Query"):
    if os.environ.get("NPY_PYTHON_SQL") == "1":
        pytest.fail("NPY_PYTHON_SQL=1 but the package was built without the sql feature",
                    pytrace=False)
    pytest.skip("built without the sql feature", allow_module_level=True)

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

Q1 = """SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
  sum(l_extendedprice) AS sum_base_price, avg(l_discount) AS avg_disc, count(*) AS count_order
FROM lineitem WHERE l_shipdate <= DATE '1998-09-02'
GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus"""


@pytest.fixture(scope="module")
def tpch(tmp_path_factory):
    d = tmp_path_factory.mktemp("tpch")
    gen = shutil.which("tpchgen-cli") or str(Path(sys.executable).parent / "tpchgen-cli")
    subprocess.run([gen, "parquet", "-s", "0.01", "--tables=lineitem", f"--output-dir={d}"],
                   check=True, capture_output=True)
    return d / "lineitem.parquet"


def rows(table):
    """A result as sorted tuples, decimals as floats."""
    t = pa.table(table) if not isinstance(table, pa.Table) else table
    cols = [c.to_pylist() for c in t.columns]
    return sorted(tuple(float(v) if hasattr(v, "as_tuple") else v for v in r)
                  for r in zip(*cols))


def close(got, want):
    """Equal rows, numbers within 1e-6 relative (sums in another order, and an average of
    decimals that DataFusion keeps to 6 places where DuckDB gives a double)."""
    assert len(got) == len(want), (got, want)
    for g, w in zip(got, want):
        assert len(g) == len(w), (g, w)
        for a, b in zip(g, w):
            if isinstance(a, float) or isinstance(b, float):
                assert abs(a - b) <= 1e-6 * max(1.0, abs(b)), (g, w)
            else:
                assert a == b, (g, w)


def test_tpch_q1_over_parquet_and_npy_equals_duckdb(tpch, tmp_path):
    lineitem = duckdb.read_parquet(str(tpch))  # noqa: F841 - the table DuckDB's query names
    want = rows(duckdb.sql(Q1).arrow())
    q = npy_serde.sql(Q1, {"lineitem": tpch})
    close(rows(q), want)
    close(rows(q), want)  # run again
    # The same rows as a .npy record array (numbers and a date as datetime64[D]).
    t = pq.read_table(tpch, columns=["l_returnflag", "l_linestatus", "l_quantity",
                                     "l_extendedprice", "l_discount", "l_shipdate"])
    rec = np.empty(t.num_rows, dtype=[("l_returnflag", "S1"), ("l_linestatus", "S1"),
                                      ("l_quantity", "<f8"), ("l_extendedprice", "<f8"),
                                      ("l_discount", "<f8"), ("l_shipdate", "<M8[D]")])
    for name in rec.dtype.names:
        col = t.column(name).to_numpy(zero_copy_only=False)
        rec[name] = col.astype(rec.dtype[name]) if name != "l_shipdate" else col.astype("M8[D]")
    np.save(tmp_path / "lineitem.npy", rec)
    got = npy_serde.sql(Q1, {"lineitem": tmp_path / "lineitem.npy"})
    # `S1` columns come back as binary: compared as text.
    close([tuple(v.decode() if isinstance(v, bytes) else v for v in r) for r in rows(got)],
          want)


def test_results_as_record_arrays_and_errors():
    path = FIXTURES / "npy" / "rec_w2_le.npy"
    a = np.load(path)
    q = npy_serde.sql("SELECT id, x FROM w2 ORDER BY id", {"w2": path})
    assert q.column_names == ["id", "x"]
    r = q.to_numpy()
    order = np.argsort(a["id"], kind="stable")
    assert r["id"].tolist() == a["id"][order].tolist()
    np.testing.assert_array_equal(r["x"], a["x"][order])
    with pytest.raises(NpyValueError, match="memory_limit"):
        npy_serde.sql("SELECT 1", {}, memory_limit="lots")
    with pytest.raises(NpyValueError, match="nope"):
        npy_serde.sql("SELECT * FROM nope", {})
    with pytest.raises(NpyError):
        npy_serde.sql("SELECT * FROM t", {"t": FIXTURES / "npy" / "no-such.npy"})


def test_top_k_over_data_in_the_reverse_order_equals_numpy(tmp_path):
    # Rising values asked in descending order, with ties and a NaN: the TopK prefilter the
    # package's sessions plan (as `npy sql` does) keeps the answer NumPy's.
    x = np.concatenate([np.arange(20_000, dtype="f8") // 3, [np.nan], np.arange(5_000, dtype="f8")])
    a = np.zeros(len(x), dtype=[("id", "<i8"), ("x", "<f8")])
    a["id"] = np.arange(len(x))
    a["x"] = x
    path = tmp_path / "rising.npy"
    np.save(path, a)
    # SQL's order: x descending with NaN above every number (DataFusion's total order), then id.
    nan = np.isnan(x)
    rest = np.lexsort((a["id"][~nan], -x[~nan]))
    want = np.concatenate([a[nan], a[~nan][rest]])[:7]
    for memory_limit in [None, "1GiB"]:
        q = npy_serde.sql("SELECT id, x FROM t ORDER BY x DESC, id LIMIT 7",
                          {"t": path}, memory_limit=memory_limit)
        r = q.to_numpy()
        assert r["id"].tolist() == want["id"].tolist()
        np.testing.assert_array_equal(r["x"], want["x"])
