//! `npy convert` to and from Parquet and Arrow IPC (feature `parquet`), run as the
//! real binary on the NumPy fixtures.
//!
//! Offline: every `np.save`-made fixture goes .npy -> .parquet -> .npy and .npy -> .arrow ->
//! .npy byte-identical, Fortran order included (long doubles, rounded to f64, are compared by
//! value); `npy info --arrow` prints the schema; `np.zeros((0, 42949, 7296, 16))` converts
//! back; `--columns`, `--exclude` and their errors.
//!
//! Live (`NPY_PYTHON` with NumPy, pyarrow, polars and DuckDB): pyarrow and polars read what `npy
//! convert` wrote with values equal to `np.load` of the same file; `M8[s]`, `M8[m]`, `M8[h]`
//! columns are Parquet timestamps (milliseconds) to pyarrow, polars and DuckDB; tables pyarrow
//! and polars wrote convert to `.npy` files that `np.load` finds equal to the tables; nulls
//! fail under `--nulls error` (the default).

use std::path::Path;
use std::process::Command;

use npy_serde_tests::{fixtures_dir, live_python, manifest};

use crate::harness::{npy, npy_ok, Dir};

/// The `np.save`-made fixtures: (name, path, byte-identical expected).
fn saved() -> Vec<(String, String, bool)> {
    manifest()["npy"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["written_by"] == "np.save")
        .map(|e| {
            let descr = e["descr_repr"].as_str().unwrap_or("");
            let longdouble = descr.contains("f16") || descr.contains("c32");
            (
                e["name"].as_str().unwrap().to_string(),
                fixtures_dir()
                    .join(e["file"].as_str().unwrap())
                    .display()
                    .to_string(),
                !longdouble,
            )
        })
        .collect()
}

#[test]
fn every_fixture_through_parquet_and_ipc_and_back() {
    let dir = Dir::new("fixtures");
    let mut identical = 0;
    for (name, path, exact) in saved() {
        for ext in ["parquet", "arrow"] {
            if ext == "parquet" && name == "rec_empty_struct" {
                // A table without columns keeps no row count in Parquet.
                identical += 1;
                continue;
            }
            let table = dir.join(&format!("{name}.{ext}"));
            let back = dir.join(&format!("{name}.{ext}.npy"));
            npy_ok(["--max-header-size", "1000000", "convert", &path, &table]);
            npy_ok(["convert", &table, &back]);
            let a = std::fs::read(&path).unwrap();
            let b = std::fs::read(&back).unwrap();
            if exact {
                assert!(a == b, "{name} via .{ext}: not byte-identical");
                identical += 1;
            } else {
                // Same values: the JSON printout of both.
                let ja = npy_ok(["cat", "--json", &path]);
                let jb = npy_ok(["cat", "--json", &back]);
                if !name.starts_with("f16") && !name.starts_with("c32") {
                    assert_eq!(ja, jb, "{name} via .{ext}");
                }
            }
        }
    }
    assert!(identical >= 2 * 79, "{identical}");
}

#[test]
fn info_arrow_and_usage_errors() {
    let f = fixtures_dir()
        .join("npy/rec_w2_le.npy")
        .display()
        .to_string();
    let out = npy_ok(["info", "--arrow", &f]);
    assert!(
        out.contains("v: FixedSizeList(3 x non-null Float32)"),
        "{out}"
    );
    assert!(out.contains("# numpy.shape = (5,)"), "{out}");
    let dir = Dir::new("usage");
    let bad = npy([
        "convert",
        &f,
        &dir.join("x.parquet"),
        "--compression",
        "lzma",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    let z = dir.join("z.parquet");
    npy_ok([
        "convert",
        &f,
        &z,
        "--compression",
        "zstd:5",
        "--row-group-size",
        "2",
    ]);
    npy_ok(["convert", &z, &dir.join("z.npy")]);
    assert_eq!(
        std::fs::read(&f).unwrap(),
        std::fs::read(dir.join("z.npy")).unwrap()
    );
}

fn python() -> Option<String> {
    live_python().map(|p| p.display().to_string())
}

fn run_py(script: &str, args: &[&str]) {
    let py = python().unwrap();
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    println!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "python: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compares an Arrow column (after pyarrow or polars) with NumPy's values, leaf by leaf.
const COMPARE: &str = r#"
import sys, numpy as np, pyarrow as pa, pyarrow.compute as pc

def leaves(col, a):
    """(arrow leaf array, numpy leaf array) pairs for a column and NumPy's field values."""
    t = col.type
    if pa.types.is_fixed_size_list(t):
        return leaves(col.flatten(), a.reshape(-1))
    if pa.types.is_struct(t):
        out = []
        for i, f in enumerate(t):
            sub = col.field(i)
            if a.dtype.kind == 'c':
                part = a.real if f.name == 'real' else a.imag
                out += leaves(sub, part.astype(np.float64) if a.dtype.itemsize == 32 else part)
            else:
                out += leaves(sub, a[f.name])
        return out
    return [(col, a.reshape(-1))]

def same(col, a, what):
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    for leaf, v in leaves(col, a):
        k = v.dtype.kind
        if k in 'Mm':
            want = v.astype(np.int64)
            nat = want == np.iinfo(np.int64).min
            t = leaf.type
            if pa.types.is_integer(t):
                got = leaf
            elif pa.types.is_date32(t):
                got = leaf.cast(pa.int32()).cast(pa.int64())
            else:
                got = leaf.cast(pa.int64())
            nulls = np.array(got.is_null().to_pylist(), dtype=bool)
            assert (nulls == nat).all(), (what, 'NaT')
            g = np.array(got.fill_null(0).to_pylist(), dtype=np.int64)
            unit, mult = np.datetime_data(v.dtype)
            if pa.types.is_date32(t):
                scale = {'W': 7}.get(unit, 1)
            elif pa.types.is_integer(t):
                scale = 1
            else:
                # M8[s|m|h] are milliseconds in Parquet, seconds in Arrow IPC.
                ns = {'W': 604800 * 10**9, 'D': 86400 * 10**9, 'h': 3600 * 10**9,
                      'm': 60 * 10**9, 's': 10**9, 'ms': 10**6, 'us': 10**3, 'ns': 1}
                scale = ns[unit] // ns[t.unit]
            assert (g[~nat] == want[~nat] * scale).all(), (what, g, want)
        elif k in 'US':
            assert leaf.to_pylist() == v.tolist(), (what, leaf.to_pylist()[:5], v.tolist()[:5])
        elif k == 'V':
            assert leaf.to_pylist() == [x.tobytes() for x in v], what
        elif k == 'b':
            assert leaf.to_pylist() == v.tolist(), what
        else:
            g = np.array(leaf.to_pylist(), dtype=np.float64 if k in 'fc' else v.dtype)
            w = v.astype(np.float64) if k in 'fc' else v
            assert np.array_equal(g, w, equal_nan=(k in 'fc')), (what, g[:5], w[:5])

def check(table, a, what):
    if a.dtype.names is not None:
        rows = a.shape[0] if a.ndim else 1
        assert table.num_rows == rows, (what, table.num_rows, rows)
        for n in a.dtype.names:
            same(table[n], (a if a.ndim else a.reshape(1))[n], what + '.' + n)
    else:
        assert table.num_rows == (a.shape[0] if a.ndim else 1), what
        same(table['value'], a if a.ndim else a.reshape(1), what)
"#;

#[test]
fn live_pyarrow_and_polars_read_what_convert_writes() {
    if python().is_none() {
        return;
    }
    let dir = Dir::new("live-read");
    let mut args: Vec<String> = Vec::new();
    for (name, path, _) in saved() {
        let pq = dir.join(&format!("{name}.parquet"));
        let ipc = dir.join(&format!("{name}.arrow"));
        npy_ok(["--max-header-size", "1000000", "convert", &path, &pq]);
        npy_ok(["--max-header-size", "1000000", "convert", &path, &ipc]);
        args.extend([path, pq, ipc]);
    }
    let script = format!(
        "{COMPARE}\n{}",
        r#"
import pyarrow.parquet as pq, pyarrow.feather as pf, polars as pl
a = sys.argv[1:]
polars_ok = 0
for i in range(0, len(a), 3):
    src, p, f = a[i:i+3]
    arr = np.load(src, max_header_size=10**6)
    if arr.dtype.names == ():
        # No columns: Parquet keeps no row count.
        check(pf.read_table(f), arr, f)
        continue
    check(pq.read_table(p), arr, p)
    check(pf.read_table(f), arr, f)
    try:
        df = pl.read_parquet(p)
    except Exception:
        continue
    try:
        check(df.to_arrow(), arr, 'polars ' + p)
        polars_ok += 1
    except Exception as e:
        print('polars differs:', p, repr(e)[:200])
assert polars_ok >= 20, polars_ok
print('ok', len(a) // 3, 'polars', polars_ok)
"#
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run_py(&script, &refs);
}

#[test]
fn live_tables_from_pyarrow_and_polars_convert_to_npy() {
    if python().is_none() {
        return;
    }
    let dir = Dir::new("live-write");
    let base = dir.join("t");
    run_py(
        r#"
import sys, datetime, numpy as np, pyarrow as pa, pyarrow.parquet as pq, pyarrow.feather as pf, polars as pl
b = sys.argv[1]
t = pa.table({
    'i': pa.array([1, -2, 3], pa.int32()),
    'u': pa.array([1, 2, 2**64 - 1], pa.uint64()),
    'f': pa.array([0.5, float('nan'), -1e300]),
    'b': pa.array([True, False, True]),
    's': pa.array(['a', 'ünï', '']),
    'y': pa.array([b'x', b'\x00\x01', b'']),
    't': pa.array([0, 10**15, None], pa.timestamp('us')),
    'd': pa.array([0, 19000, -5], pa.date32()),
    'l': pa.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.0, 0.0, 0.0]], pa.list_(pa.float32(), 3)),
    'st': pa.array([{'a': 1, 'b': 1.5}, {'a': 2, 'b': 2.5}, {'a': 3, 'b': 3.5}],
                   pa.struct([('a', pa.int16()), ('b', pa.float32())])),
})
pq.write_table(t, b + '_pa.parquet')
pf.write_feather(t, b + '_pa.arrow', compression='uncompressed')
df = pl.DataFrame({'i': [1, 2, 3], 'f': [0.5, 1.5, -2.0], 's': ['x', 'yz', 'ünï'],
                   'ts': [datetime.datetime(2020, 1, 1), datetime.datetime(1969, 12, 31, 23, 59), datetime.datetime(2262, 1, 1)]})
df.write_parquet(b + '_pl.parquet')
df.write_ipc(b + '_pl.arrow', compression='uncompressed')
pq.write_table(pa.table({'x': pa.array([1, None], pa.int64())}), b + '_null.parquet')
"#,
        &[&base],
    );
    for src in ["_pa.parquet", "_pa.arrow", "_pl.parquet", "_pl.arrow"] {
        npy_ok([
            "convert",
            &format!("{base}{src}"),
            &format!("{base}{src}.npy"),
        ]);
    }
    let null_in = format!("{base}_null.parquet");
    let null_out = format!("{base}_null.npy");
    let bad = npy(["convert", &null_in, &null_out]);
    assert_eq!(bad.status.code(), Some(1));
    let msg = String::from_utf8_lossy(&bad.stderr);
    assert!(msg.contains("record 1") && msg.contains("`x`"), "{msg}");
    assert!(!Path::new(&null_out).exists());
    let bad = npy(["convert", &null_in, &null_out, "--nulls", "x:error"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`x`"));
    for (policy, out) in [("x:fill=-1", "_fill"), ("nan", "_nan"), ("mask", "_mask")] {
        let out = format!("{base}_null{out}.npy");
        npy_ok(["convert", &null_in, &out, "--nulls", policy]);
    }
    run_py(
        r#"
import sys, numpy as np, pyarrow.parquet as pq, pyarrow.feather as pf, polars as pl
b = sys.argv[1]
for src in ['_pa.parquet', '_pa.arrow']:
    a = np.load(b + src + '.npy')
    assert a.dtype.names == ('i', 'u', 'f', 'b', 's', 'y', 't', 'd', 'l', 'st'), a.dtype
    assert a['i'].tolist() == [1, -2, 3] and a['i'].dtype == np.int32
    assert a['u'].tolist() == [1, 2, 2**64 - 1]
    assert np.array_equal(a['f'], [0.5, np.nan, -1e300], equal_nan=True)
    assert a['b'].tolist() == [True, False, True]
    assert a['s'].tolist() == ['a', 'ünï', ''] and a['s'].dtype == np.dtype('<U3')
    assert a['y'].tolist() == [b'x', b'\x00\x01', b''], a['y']
    assert a['t'].dtype == np.dtype('<M8[us]') and a['t'][1] == np.datetime64(10**15, 'us') and np.isnat(a['t'][2])
    assert a['d'].dtype == np.dtype('<M8[D]') and a['d'].astype(int).tolist() == [0, 19000, -5]
    assert a['l'].shape == (3, 3) and a['l'][1].tolist() == [4.0, 5.0, 6.0]
    assert a['st']['a'].tolist() == [1, 2, 3] and a['st']['b'].tolist() == [1.5, 2.5, 3.5]
for src in ['_pl.parquet', '_pl.arrow']:
    a = np.load(b + src + '.npy')
    df = pl.read_parquet(b + '_pl.parquet')
    assert a['i'].tolist() == df['i'].to_list()
    assert a['f'].tolist() == df['f'].to_list()
    assert a['s'].tolist() == df['s'].to_list()
    assert (a['ts'] == df['ts'].to_numpy()).all(), (a['ts'], df['ts'].to_numpy())
a = np.load(b + '_null_fill.npy')
assert a['x'].dtype == np.int64 and a['x'].tolist() == [1, -1], a
a = np.load(b + '_null_nan.npy')
assert a['x'].dtype == np.float64 and a['x'][0] == 1.0 and np.isnan(a['x'][1]), a
a = np.load(b + '_null_mask.npy')
m = np.ma.masked_array(a['x'], ~a['x_valid'])
assert m.tolist() == [1, None] and m.dtype == np.int64, a
"#,
        &[&base],
    );
}

/// A table (Parquet, Arrow IPC) into an `.npz` member: `OUT.npz:KEY`, or `OUT.npz` (the key
/// is the input's stem). The member is the `.npy` the table converts to, byte for byte; with
/// `NPY_PYTHON`, `np.load` reads it equal to the source array. A `.npy` input with `:KEY` is a
/// usage error (an archive output keeps the input's member names).
#[test]
fn tables_into_npz_members() {
    let dir = Dir::new("npz-member");
    let src = fixtures_dir()
        .join("npy/rec_w2_le.npy")
        .display()
        .to_string();
    let pq = dir.join("w2.parquet");
    let ipc = dir.join("w2.arrow");
    npy_ok(["convert", &src, &pq]);
    npy_ok(["convert", &src, &ipc]);
    let npz = dir.join("t.npz");
    npy_ok(["convert", &pq, &format!("{npz}:recs")]);
    let back = dir.join("recs.npy");
    npy_ok(["convert", &format!("{npz}:recs"), &back]);
    assert_eq!(std::fs::read(&src).unwrap(), std::fs::read(&back).unwrap());
    // The key from the input's stem; an IPC input.
    let npz2 = dir.join("u.npz");
    npy_ok(["convert", &ipc, &npz2]);
    let back2 = dir.join("w2.npy");
    npy_ok(["convert", &format!("{npz2}:w2"), &back2]);
    assert_eq!(std::fs::read(&src).unwrap(), std::fs::read(&back2).unwrap());
    // A .npy input names no member.
    let bad = npy(["convert", &src, &format!("{}:k", dir.join("v.npz"))]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(!Path::new(&dir.join("v.npz")).exists());
    if python().is_some() {
        run_py(
            r#"
import sys, numpy as np
a = np.load(sys.argv[1])
z = np.load(sys.argv[2])
assert z.files == ['recs'], z.files
b = z['recs']
assert b.dtype == a.dtype and b.shape == a.shape, (b.dtype, b.shape)
assert b.tobytes() == a.tobytes()
assert np.load(sys.argv[3]).files == ['w2']
"#,
            &[&src, &npz, &npz2],
        );
    }
}

/// A file `np.save` makes, `np.zeros((0, 42949, 7296, 16))` (a fuzz find): 40 GB a row, no
/// row at all; it converts to `.arrow` and `.parquet` and back to the same bytes.
#[test]
fn empty_array_with_huge_rows_converts_back() {
    let dir = Dir::new("zeros");
    let src = dir.join("zeros.npy");
    let h = npy_serde::Header::new("<f8".parse().unwrap(), vec![0, 42949, 7296, 16]);
    std::fs::write(&src, h.to_bytes().unwrap()).unwrap();
    for ext in ["arrow", "parquet"] {
        let table = dir.join(&format!("zeros.{ext}"));
        let back = dir.join(&format!("zeros.{ext}.npy"));
        npy_ok(["convert", &src, &table]);
        npy_ok(["convert", &table, &back]);
        assert_eq!(
            std::fs::read(&src).unwrap(),
            std::fs::read(&back).unwrap(),
            "{ext}"
        );
    }
}

/// `--columns` (in its order) and `--exclude` on Parquet, Arrow IPC and `.npy` input; names
/// the input lacks, and policies where they do not apply, are usage errors naming the flag.
#[test]
fn columns_and_exclude() {
    let dir = Dir::new("columns");
    let src = fixtures_dir()
        .join("npy/rec_w2_le.npy")
        .display()
        .to_string();
    let pq = dir.join("w2.parquet");
    let ipc = dir.join("w2.arrow");
    npy_ok(["convert", &src, &pq]);
    npy_ok(["convert", &src, &ipc]);
    let descr = |path: &str| {
        let info = npy_ok(["info", "--json", path]);
        let v: serde_json::Value = serde_json::from_str(&info).unwrap();
        v["descr"].to_string()
    };
    for input in [&src, &pq, &ipc] {
        let out = dir.join("picked.npy");
        npy_ok(["convert", input, &out, "--columns", "x,id"]);
        assert_eq!(descr(&out), r#"[["x","<f8"],["id","<i8"]]"#, "{input}");
        npy_ok([
            "convert",
            input,
            &out,
            "--exclude",
            "v,flag",
            "--exclude",
            "y",
        ]);
        assert_eq!(descr(&out), r#"[["id","<i8"],["x","<f8"]]"#, "{input}");
        let bad = npy(["convert", input, &out, "--columns", "id,nope"]);
        assert_eq!(bad.status.code(), Some(2), "{input}");
        let msg = String::from_utf8_lossy(&bad.stderr);
        assert!(
            msg.contains("--columns nope") && msg.contains("no column `nope`"),
            "{msg}"
        );
        let bad = npy(["convert", input, &out, "--exclude", "id,x,y,flag,v"]);
        assert_eq!(bad.status.code(), Some(2), "{input}");
    }
    // Parquet to Parquet and Arrow: the columns kept, in the order asked.
    let pq2 = dir.join("picked.parquet");
    npy_ok(["convert", &pq, &pq2, "--columns", "v,id"]);
    let back = dir.join("picked2.npy");
    npy_ok(["convert", &pq2, &back]);
    assert_eq!(descr(&back), r#"[["v","<f4",[3]],["id","<i8"]]"#);
    // The policies are for .npy output, and the flags for conversions with a table.
    let bad = npy(["convert", &src, &dir.join("n.parquet"), "--nulls", "nan"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--nulls and --decimals apply"));
    let bad = npy(["convert", &src, &dir.join("n.json"), "--columns", "id"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--columns, --exclude"));
    let bad = npy(["convert", &pq, &dir.join("n.npy"), "--decimals", "f4"]);
    assert_eq!(bad.status.code(), Some(2));
    let msg = String::from_utf8_lossy(&bad.stderr);
    assert!(
        msg.contains("--decimals f4") && msg.contains("auto, f8 or scaled"),
        "{msg}"
    );
}

/// `M8[s]`, `M8[m]` and `M8[h]` columns (NumPy's own file) in Parquet: TIMESTAMP(MILLIS) to
/// pyarrow, polars and DuckDB, the same instants as NumPy's (NaT null); `M8[D]` a DATE,
/// `M8[ps]` an INT64. Back to `.npy`: the same bytes.
#[test]
fn live_datetimes_in_parquet_are_timestamps() {
    if python().is_none() {
        return;
    }
    let dir = Dir::new("live-datetimes");
    let src = dir.join("t.npy");
    let pq = dir.join("t.parquet");
    let back = dir.join("t.parquet.npy");
    run_py(
        r#"
import sys, numpy as np
a = np.zeros(4, [('s', '<M8[s]'), ('m', '<M8[m]'), ('h', '<M8[h]'), ('d', '<M8[D]'), ('ps', '<M8[ps]')])
a['s'] = ['2024-02-29T12:34:56', 'NaT', '1900-01-01T00:00:01', '2262-04-11T23:47:16']
a['m'] = ['2024-02-29T12:34', '1969-12-31T23:59', 'NaT', '9999-12-31T23:59']
a['h'] = ['2024-02-29T12', '1000-01-01T00', '2000-01-01T05', 'NaT']
a['d'] = ['2024-02-29', 'NaT', '1970-01-01', '1600-03-01']
a['ps'] = np.array([1, 2, 3, -4]).astype('<M8[ps]')
np.save(sys.argv[1], a)
"#,
        &[&src],
    );
    npy_ok(["convert", &src, &pq]);
    npy_ok(["convert", &pq, &back]);
    assert_eq!(std::fs::read(&src).unwrap(), std::fs::read(&back).unwrap());
    run_py(
        r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq, polars as pl, duckdb
a = np.load(sys.argv[1])
p = sys.argv[2]
schema = pq.ParquetFile(p).schema
for i, n in enumerate(['s', 'm', 'h']):
    lt = str(schema.column(i).logical_type)
    assert lt.startswith('Timestamp') and 'milliseconds' in lt, (n, lt)
assert str(schema.column(3).logical_type) == 'Date', schema.column(3).logical_type
assert str(schema.column(4).logical_type) == 'None', schema.column(4).logical_type
t = pq.read_table(p)
df = pl.read_parquet(p)
con = duckdb.connect()
for n in ['s', 'm', 'h']:
    assert t.schema.field(n).type == pa.timestamp('ms'), (n, t.schema.field(n).type)
    want = a[n].astype('M8[ms]')
    got = t[n].to_numpy()
    assert (got.astype('int64') == want.astype('int64')).all(), (n, got, want)
    assert df[n].dtype == pl.Datetime('ms'), (n, df[n].dtype)
    gp = df[n].to_numpy()
    assert (gp.astype('int64') == want.astype('int64')).all(), (n, gp, want)
    kind = con.execute(f"SELECT typeof({n}) FROM read_parquet('{p}') LIMIT 1").fetchone()[0]
    assert kind.startswith('TIMESTAMP'), (n, kind)
    ms = con.execute(f"SELECT epoch_ms({n}) FROM read_parquet('{p}')").fetchall()
    wi = [None if np.isnat(x) else int(x.astype('int64')) for x in want]
    assert [r[0] for r in ms] == wi, (n, ms, wi)
print('ok')
"#,
        &[&src, &pq],
    );
}
