//! SQL over `.npy` files with DataFusion (feature `datafusion`): query results equal the same
//! computation in Rust over the records, and (live, with `NPY_PYTHON`) NumPy's over `np.load`;
//! directories of shards, globs, `.npz` members, byte-range splitting, projection of a nested
//! field, joins, dtype mismatches, truncated and hostile files.

use std::sync::Arc;

use datafusion::prelude::{SessionConfig, SessionContext};
use npy_datafusion::{NpyReadOptions, NpySessionExt};
use npy_serde_tests::sql::{
    close, npy_files, numpy, obs, register_bad_bools, rows, rt, session, split_small_files, sql,
    sql_err, write_shards, Obs, T0,
};
use npy_serde_tests::TempDir;
use tokio::runtime::Runtime;

fn ctx(target_partitions: usize) -> SessionContext {
    ctx_with(target_partitions, 8192)
}

fn ctx_with(target_partitions: usize, batch_size: usize) -> SessionContext {
    session(split_small_files(
        SessionConfig::new()
            .with_target_partitions(target_partitions)
            .with_batch_size(batch_size),
    ))
}

/// The shards of the test table: 10 files of 0..1000 records (one is empty), ids consecutive.
fn shards(dir: &TempDir) -> Vec<Obs> {
    write_shards(dir, &[997, 0, 1, 250, 1000, 3, 640, 512, 77, 999], obs)
}

/// The [`shards`] in a new directory `label`, registered as the table `t` of a session of
/// `partitions` target partitions: the directory (removed on drop), the records, the runtime
/// and the session.
fn shard_table(label: &str, partitions: usize) -> (TempDir, Vec<Obs>, Runtime, SessionContext) {
    let dir = TempDir::new(label);
    let all = shards(&dir);
    let rt = rt();
    let ctx = ctx(partitions);
    rt.block_on(ctx.register_npy("t", dir.path().to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    (dir, all, rt, ctx)
}

#[test]
fn group_by_over_a_directory_of_shards_equals_numpy() {
    let (dir, all, rt, ctx) = shard_table("sql-groupby", 4);
    let got = sql(
        &ctx,
        &rt,
        "SELECT flag, count(*), sum(id), avg(x), min(y), max(y) FROM t GROUP BY flag ORDER BY flag",
    );
    assert_eq!(got.len(), 5);
    for (flag, row) in got.iter().enumerate() {
        let g: Vec<&Obs> = all.iter().filter(|o| o.flag as usize == flag).collect();
        assert_eq!(row[0], flag.to_string());
        assert_eq!(row[1], g.len().to_string());
        assert_eq!(row[2], g.iter().map(|o| o.id).sum::<i64>().to_string());
        let avg = g.iter().map(|o| o.x).sum::<f64>() / g.len() as f64;
        assert!(close(&row[3], avg), "{row:?} vs {avg}");
        let min = g.iter().map(|o| o.y).fold(f32::INFINITY, f32::min);
        let max = g.iter().map(|o| o.y).fold(f32::NEG_INFINITY, f32::max);
        assert!(
            close(&row[4], min as f64) && close(&row[5], max as f64),
            "{row:?}"
        );
    }
    let np = numpy(
        "out = []\n\
         for f in range(5):\n\
         \x20   g = a[a['flag'] == f]\n\
         \x20   out.append([f, len(g), int(g['id'].sum()), float(g['x'].mean()), float(g['y'].min()), float(g['y'].max())])\n\
         print(json.dumps(out))",
        &npy_files(dir.path()),
    );
    if let Some(np) = np {
        for (row, n) in got.iter().zip(np.as_array().unwrap()) {
            let n = n.as_array().unwrap();
            assert_eq!(row[1], n[1].to_string());
            assert_eq!(row[2], n[2].to_string());
            for k in 3..6 {
                assert!(
                    close(&row[k], n[k].as_f64().unwrap()),
                    "{row:?} vs numpy {n:?}"
                );
            }
        }
    }
}

#[test]
fn where_on_numbers_strings_and_datetimes_equals_numpy() {
    let (dir, all, rt, ctx) = shard_table("sql-where", 3);
    let got = sql(&ctx, &rt, "SELECT count(*), sum(x) FROM t WHERE id % 7 = 0");
    let sel: Vec<&Obs> = all.iter().filter(|o| o.id % 7 == 0).collect();
    assert_eq!(got[0][0], sel.len().to_string());
    assert!(close(&got[0][1], sel.iter().map(|o| o.x).sum()));

    let got = sql(&ctx, &rt, "SELECT count(*) FROM t WHERE name = 'n2'");
    let n2 = all.iter().filter(|o| o.name == "n2").count();
    assert_eq!(got[0][0], n2.to_string());

    // NaT is NULL: count(ts) skips it, and a comparison with it is not true.
    let cut = T0 + 2000 * 1_000_000_000;
    let got = sql(
        &ctx,
        &rt,
        "SELECT count(ts), count(*) FILTER (WHERE ts IS NULL), \
         count(*) FILTER (WHERE ts >= to_timestamp_nanos(1700000000000000000) + INTERVAL '2000 seconds') FROM t",
    );
    let valid = all.iter().filter(|o| o.ts.is_some()).count();
    let late = all
        .iter()
        .filter(|o| o.ts.is_some_and(|t| t >= cut))
        .count();
    assert_eq!(
        got[0],
        [
            valid.to_string(),
            (all.len() - valid).to_string(),
            late.to_string()
        ]
    );

    let np = numpy(
        &format!(
            "m = a['id'] % 7 == 0\n\
             ts = a['ts']\n\
             print(json.dumps([int(m.sum()), float(a['x'][m].sum()), int((a['name'] == b'n2').sum()),\n\
             int((~np.isnat(ts)).sum()), int(np.isnat(ts).sum()), int((ts >= np.datetime64({cut}, 'ns')).sum())]))"
        ),
        &npy_files(dir.path()),
    );
    if let Some(np) = np {
        assert_eq!(np[0].as_u64().unwrap() as usize, sel.len());
        assert!(close(
            &sql(&ctx, &rt, "SELECT sum(x) FROM t WHERE id % 7 = 0")[0][0],
            np[1].as_f64().unwrap()
        ));
        assert_eq!(np[2].as_u64().unwrap() as usize, n2);
        assert_eq!(np[3].as_u64().unwrap() as usize, valid);
        assert_eq!(np[4].as_u64().unwrap() as usize, all.len() - valid);
        assert_eq!(np[5].as_u64().unwrap() as usize, late);
    }
}

#[test]
fn order_by_limit_nested_field_and_limit() {
    let (dir, all, rt, ctx) = shard_table("sql-order", 4);
    let got = sql(
        &ctx,
        &rt,
        "SELECT id, y FROM t ORDER BY y DESC, id ASC LIMIT 4",
    );
    let mut sorted = all.clone();
    sorted.sort_by(|p, q| q.y.total_cmp(&p.y).then(p.id.cmp(&q.id)));
    let want: Vec<String> = sorted[..4].iter().map(|o| o.id.to_string()).collect();
    assert_eq!(got.iter().map(|r| r[0].clone()).collect::<Vec<_>>(), want);

    // One field of a nested record: only the `pos` column is decoded.
    let got = sql(&ctx, &rt, "SELECT sum(get_field(pos, 'a')) FROM t");
    assert!(close(&got[0][0], all.iter().map(|o| o.pos.a as f64).sum()));
    let got = sql(&ctx, &rt, "SELECT pos FROM t WHERE id = 5");
    assert_eq!(got, [["{a: 2.5, b: -5.0}"]]);

    let got = sql(&ctx, &rt, "SELECT * FROM t LIMIT 3");
    assert_eq!(got.len(), 3);
    assert_eq!(got[0].len(), 7);

    if let Some(np) = numpy(
        "o = np.lexsort((a['id'], -a['y'].astype('f8')))[:4]\n\
         print(json.dumps([a['id'][o].tolist(), float(a['pos']['a'].astype('f8').sum())]))",
        &npy_files(dir.path()),
    ) {
        let ids: Vec<String> = np[0]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(ids, want);
    }
}

#[test]
fn a_file_split_across_partitions_gives_the_same_answers() {
    let dir = TempDir::new("sql-split");
    // 100003 records of 55 bytes (5.5 MB): ranges cut records in the middle, and a partition
    // reads its range in several ranged reads (4 MiB each) of several batches each.
    let recs: Vec<Obs> = (0..100_003).map(obs).collect();
    let path = dir.join("big.npy");
    npy_serde::to_path(&path, &recs).unwrap();
    let rt = rt();
    let want_sum: i64 = recs.iter().map(|o| o.id).sum();
    let mut answers = Vec::new();
    for (parts, batch) in [(1, 8192), (2, 1000), (3, 8192), (7, 777), (16, 8192)] {
        let ctx = ctx_with(parts, batch);
        rt.block_on(ctx.register_npy("t", path.to_str().unwrap(), NpyReadOptions::new()))
            .unwrap();
        let plan = sql(&ctx, &rt, "EXPLAIN SELECT sum(id) FROM t WHERE flag = 1");
        let text = format!("{plan:?}");
        if parts > 1 {
            assert!(text.contains("big.npy:0.."), "{parts} partitions: {text}");
        }
        let got = sql(
            &ctx,
            &rt,
            "SELECT count(*), sum(id), min(id), max(id), sum(x) FROM t WHERE flag < 5",
        );
        assert_eq!(got[0][0], recs.len().to_string());
        assert_eq!(got[0][1], want_sum.to_string());
        assert_eq!(got[0][2..4], ["0".to_string(), "100002".to_string()]);
        answers.push(sql(
            &ctx,
            &rt,
            "SELECT flag, count(*), sum(id) FROM t GROUP BY flag ORDER BY flag",
        ));
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn a_join_of_two_files_and_a_glob() {
    let dir = TempDir::new("sql-join");
    let left: Vec<Obs> = (0..300).map(obs).collect();
    let right: Vec<Obs> = (150..600).map(obs).collect();
    npy_serde::to_path(dir.join("left.npy"), &left).unwrap();
    npy_serde::to_path(dir.join("right.npy"), &right).unwrap();
    let rt = rt();
    let ctx = ctx(2);
    let l = dir.join("left.npy");
    let r = dir.join("right.npy");
    rt.block_on(async {
        ctx.register_npy("l", l.to_str().unwrap(), NpyReadOptions::new())
            .await?;
        ctx.register_npy("r", r.to_str().unwrap(), NpyReadOptions::new())
            .await
    })
    .unwrap();
    let got = sql(
        &ctx,
        &rt,
        "SELECT count(*), sum(l.x + r.y) FROM l JOIN r ON l.id = r.id",
    );
    assert_eq!(got[0][0], "150");
    let want: f64 = (150..300).map(|i| obs(i).x + obs(i).y as f64).sum();
    assert!(close(&got[0][1], want));

    let glob = format!("{}/*.npy", dir.path().display());
    let df = rt
        .block_on(ctx.read_npy(&glob, NpyReadOptions::new()))
        .unwrap();
    let n = rt.block_on(df.count()).unwrap();
    assert_eq!(n, 750);
}

#[test]
fn an_npz_member_is_a_table() {
    let dir = TempDir::new("sql-npz");
    let recs: Vec<Obs> = (0..100).map(obs).collect();
    let path = dir.join("arch.npz");
    let mut w = npy_serde::npz::NpzWriter::new(std::fs::File::create(&path).unwrap());
    w.add("other", &[1i32, 2, 3]).unwrap();
    w.set_compression(npy_serde::npz::Compression::Deflate);
    w.add("obs", &recs).unwrap();
    w.finish().unwrap();
    let rt = rt();
    let ctx = ctx(2);
    let create = format!(
        "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}' OPTIONS ('member' 'obs')",
        path.display()
    );
    sql(&ctx, &rt, &create);
    let got = sql(&ctx, &rt, "SELECT count(*), sum(id) FROM t WHERE flag = 2");
    assert_eq!(got[0][0], "20");
    assert_eq!(
        got[0][1],
        recs.iter()
            .filter(|o| o.flag == 2)
            .map(|o| o.id)
            .sum::<i64>()
            .to_string()
    );
    let df = rt
        .block_on(ctx.read_npy(
            path.to_str().unwrap(),
            NpyReadOptions::new().npz_member("other"),
        ))
        .unwrap();
    let b = rt.block_on(df.collect()).unwrap();
    assert_eq!(rows(&b), [["1"], ["2"], ["3"]]);
    let err = rt
        .block_on(ctx.read_npy(
            path.to_str().unwrap(),
            NpyReadOptions::new().npz_member("nope"),
        ))
        .unwrap_err()
        .to_string();
    assert!(err.contains("arch.npz") && err.contains("nope"), "{err}");
}

#[test]
fn a_shard_with_another_dtype_is_an_error_naming_it() {
    let dir = TempDir::new("sql-mismatch");
    shards(&dir);
    npy_serde::to_path(dir.join("shard99.npy"), &[1.5f64, 2.5]).unwrap();
    let rt = rt();
    let ctx = ctx(2);
    let err = rt
        .block_on(ctx.register_npy("t", dir.path().to_str().unwrap(), NpyReadOptions::new()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("shard99.npy") && err.contains("<f8"), "{err}");
    assert!(err.contains("differs from the table's"), "{err}");
}

/// A declared schema over plain (non-record) arrays: one column of the file's type, under the
/// declared name, reads (SQL DDL, and a listing table given its schema); filters and
/// aggregates see the declared name. One that does not fit (another type, more columns)
/// fails the query naming the file, what the file holds and what was declared. Over record
/// arrays, the declared columns are the fields' own names and types, and a datetime field
/// (NaT is its null) is declared nullable.
#[test]
fn a_declared_schema_over_plain_and_record_arrays() {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::listing::{ListingTable, ListingTableConfig, ListingTableUrl};

    #[derive(serde::Serialize, npy_serde::NpyRecord)]
    struct Rec {
        k: i64,
        v: f64,
    }
    let dir = TempDir::new("sql-declared");
    let plain = dir.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    npy_serde::to_path(plain.join("a.npy"), &[1i64, 2, 3]).unwrap();
    npy_serde::to_path(plain.join("b.npy"), &[10i64, 20]).unwrap();
    #[derive(serde::Serialize, npy_serde::NpyRecord)]
    struct Time {
        #[npy(dtype = "<M8[ns]")]
        t: Option<i64>,
    }
    let times = dir.join("times.npy");
    npy_serde::to_path(&times, &[Time { t: None }]).unwrap();
    let recs = dir.join("recs.npy");
    let r: Vec<Rec> = (0..4)
        .map(|i| Rec {
            k: i,
            v: i as f64 / 2.0,
        })
        .collect();
    npy_serde::to_path(&recs, &r).unwrap();
    let (rt, ctx) = (rt(), ctx(2));
    let create = |name: &str, columns: &str, location: &str| {
        let ddl =
            format!("CREATE EXTERNAL TABLE {name} ({columns}) STORED AS NPY LOCATION '{location}'");
        sql(&ctx, &rt, &ddl);
    };
    let plain_dir = format!("{}/", plain.display());
    create("p", "n BIGINT", &plain_dir);
    assert_eq!(
        sql(&ctx, &rt, "SELECT count(*), sum(n), max(n) FROM p"),
        [["5", "36", "20"]]
    );
    assert_eq!(
        sql(&ctx, &rt, "SELECT n FROM p WHERE n > 2 ORDER BY n"),
        [["3"], ["10"], ["20"]]
    );
    assert_eq!(
        sql(&ctx, &rt, "SELECT arrow_typeof(n) FROM p LIMIT 1"),
        [["Int64"]]
    );

    // The library's door: a listing table of the format given a schema.
    let url = ListingTableUrl::parse(&plain_dir).unwrap();
    let declared = Schema::new(vec![Field::new("m", DataType::Int64, false)]);
    let config = ListingTableConfig::new(url)
        .with_listing_options(NpyReadOptions::new().listing_options())
        .with_schema(Arc::new(declared));
    ctx.register_table("lib", Arc::new(ListingTable::try_new(config).unwrap()))
        .unwrap();
    assert_eq!(
        sql(&ctx, &rt, "SELECT sum(m) FROM lib WHERE m < 10"),
        [["6"]]
    );

    // Declarations the files do not hold: the file, what it holds, what was declared.
    let refused = |name: &str, columns: &str, location: &str, expect: &[&str]| {
        create(name, columns, location);
        let e = sql_err(&ctx, &rt, &format!("SELECT * FROM {name}"));
        for want in expect {
            assert!(e.contains(want), "{columns}: {want:?} in {e}");
        }
        assert!(
            e.contains("the table declares the columns"),
            "{columns}: {e}"
        );
    };
    refused(
        "wrong_type",
        "n INT",
        &plain_dir,
        &[
            ".npy",
            "expected column n of type Int64",
            "<i8",
            "found Int32 declared",
        ],
    );
    refused(
        "two",
        "n BIGINT, m BIGINT",
        &plain_dir,
        &[
            "expected one column",
            "plain array",
            "Int64",
            "found 2 declared",
        ],
    );
    refused(
        "not_null",
        "t TIMESTAMP NOT NULL",
        times.to_str().unwrap(),
        &[
            "times.npy",
            "expected column t to be nullable",
            "NaT",
            "found NOT NULL declared",
        ],
    );
    create("nullable_t", "t TIMESTAMP", times.to_str().unwrap());
    assert_eq!(
        sql(&ctx, &rt, "SELECT count(*), count(t) FROM nullable_t"),
        [["1", "0"]]
    );

    // Record arrays: the fields' names and types.
    create("r", "k BIGINT, v DOUBLE", recs.to_str().unwrap());
    assert_eq!(
        sql(&ctx, &rt, "SELECT sum(k), sum(v) FROM r WHERE v > 0"),
        [["6", "3.0"]]
    );
    refused(
        "renamed",
        "k BIGINT, w DOUBLE",
        recs.to_str().unwrap(),
        &[
            "recs.npy",
            "expected column 2 to be v: Float64",
            "found w: Float64 declared",
        ],
    );
    refused(
        "fewer",
        "k BIGINT",
        recs.to_str().unwrap(),
        &[
            "expected 2 columns",
            "k: Int64, v: Float64",
            "found 1 declared",
        ],
    );
}

#[test]
fn truncated_and_hostile_files_fail_the_query_with_this_crates_message() {
    let dir = TempDir::new("sql-hostile");
    let recs: Vec<Obs> = (0..1000).map(obs).collect();
    let mut bytes = npy_serde::to_vec(&recs).unwrap();
    bytes.truncate(bytes.len() - 10);
    let trunc = dir.join("trunc.npy");
    std::fs::write(&trunc, &bytes).unwrap();
    let rt = rt();
    let ctx = ctx(2);
    let err = rt
        .block_on(ctx.register_npy("t", trunc.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("trunc.npy") && err.contains("end of"), "{err}");

    // A header whose length field is over the limit: refused before it is fetched.
    let mut huge = b"\x93NUMPY\x02\x00".to_vec();
    huge.extend_from_slice(&(1u32 << 30).to_le_bytes());
    huge.extend_from_slice(&[b' '; 64]);
    let hp = dir.join("huge.npy");
    std::fs::write(&hp, &huge).unwrap();
    let err = rt
        .block_on(ctx.register_npy("h", hp.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("huge.npy") && err.contains("max_header_size"),
        "{err}"
    );

    // Not a .npy file at all.
    let junk = dir.join("junk.npy");
    std::fs::write(&junk, b"PK\x03\x04 not an npy file").unwrap();
    let err = rt
        .block_on(ctx.register_npy("j", junk.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("junk.npy") && err.contains("magic"), "{err}");

    // A bool byte that is neither 0 nor 1: the record and byte are named.
    register_bad_bools(&ctx, &rt, &dir, "b");
    let err = sql_err(&ctx, &rt, "SELECT count(*) FROM b WHERE value");
    assert!(
        err.contains("bad_bool.npy") && err.contains("record 2"),
        "{err}"
    );

    // The data limit applies as in every other door.
    let limited = NpyReadOptions::new().max_data_size(1000);
    let ok = dir.join("ok.npy");
    npy_serde::to_path(&ok, &recs).unwrap();
    rt.block_on(ctx.register_npy("l", ok.to_str().unwrap(), limited))
        .unwrap();
    let err = sql_err(&ctx, &rt, "SELECT sum(id) FROM l");
    assert!(err.contains("ok.npy") && err.contains("data size"), "{err}");
}

/// The queries a file cut short must fail whatever they ask: `count(*)` (which DataFusion
/// answers from the statistics' exact row count), `min`/`max`, a `LIMIT` that needs only the
/// rows present, and a `sum` that reads them all.
const CUT_SHORT_QUERIES: [&str; 6] = [
    "SELECT count(*) FROM t",
    "SELECT count(value) FROM t",
    "SELECT min(value), max(value) FROM t",
    "SELECT * FROM t LIMIT 1",
    "SELECT value FROM t WHERE value > 1e9 LIMIT 1",
    "SELECT sum(value) FROM t",
];

/// A file that `cut` shortens after the table `t` at `location` (read with `options`) was
/// registered over its whole version (`whole` writes it): every query of `queries` fails with
/// a message holding each of `expect`, with statistics and without, on 1 and 4 partitions.
fn every_query_fails(
    location: &str,
    options: &NpyReadOptions,
    (whole, cut): (&dyn Fn(), &dyn Fn()),
    queries: &[&str],
    expect: &[&str],
) {
    let rt = rt();
    for collect_statistics in [true, false] {
        for partitions in [1, 4] {
            let config = split_small_files(
                SessionConfig::new()
                    .with_target_partitions(partitions)
                    .with_collect_statistics(collect_statistics),
            );
            let ctx = session(config);
            whole();
            rt.block_on(ctx.register_npy("t", location, options.clone()))
                .unwrap();
            cut();
            for query in queries {
                let err = sql_err(&ctx, &rt, query);
                assert!(
                    expect.iter().all(|e| err.contains(e)),
                    "{query} (statistics {collect_statistics}, {partitions} partitions): {err}"
                );
            }
        }
    }
}

#[test]
fn a_file_cut_short_after_its_header_fails_every_query() {
    let dir = TempDir::new("sql-cut-short");
    let values: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
    let bytes = npy_serde::to_vec(&values).unwrap();
    assert_eq!(bytes.len(), 800_128);
    let path = dir.join("t.npy");
    let location = path.to_str().unwrap();
    let whole = || std::fs::write(&path, &bytes).unwrap();
    let cut = || std::fs::write(&path, &bytes[..5000]).unwrap();
    let expect = [
        "t.npy",
        "needed 800128 bytes for the array data, found 5000",
    ];
    // Registered whole, then cut: every query fails, count(*) included.
    let options = NpyReadOptions::new();
    every_query_fails(
        location,
        &options,
        (&whole, &cut),
        &CUT_SHORT_QUERIES,
        &expect,
    );
    // Registering the cut file fails with the same message.
    let rt = rt();
    let ctx = ctx(4);
    let err = rt
        .block_on(ctx.register_npy("t", location, NpyReadOptions::new()))
        .unwrap_err()
        .to_string();
    assert!(expect.iter().all(|e| err.contains(e)), "{err}");

    // A directory with a whole file beside it: registering it fails, and so does every query
    // that touches the file once it is cut after registration (a LIMIT that DataFusion fills
    // from the whole file's exact row count lists no other file).
    let shards = TempDir::new("sql-cut-short-dir");
    std::fs::write(shards.join("a.npy"), &bytes).unwrap();
    let b = shards.join("b.npy");
    let whole = || std::fs::write(&b, &bytes).unwrap();
    let cut = || std::fs::write(&b, &bytes[..5000]).unwrap();
    let location = shards.path().to_str().unwrap();
    let touching = [
        CUT_SHORT_QUERIES[0],
        CUT_SHORT_QUERIES[2],
        CUT_SHORT_QUERIES[5],
    ];
    let expect = [
        "b.npy",
        "needed 800128 bytes for the array data, found 5000",
    ];
    every_query_fails(location, &options, (&whole, &cut), &touching, &expect);
    let err = rt
        .block_on(ctx.register_npy("d", location, NpyReadOptions::new()))
        .unwrap_err()
        .to_string();
    assert!(expect.iter().all(|e| err.contains(e)), "{err}");

    // Whole again, the table answers from its files' exact row counts.
    whole();
    rt.block_on(ctx.register_npy("d", location, NpyReadOptions::new()))
        .unwrap();
    assert_eq!(
        sql(&ctx, &rt, "SELECT count(*), min(value), max(value) FROM d"),
        [["200000", "0.0", "99999.0"]]
    );
}

#[test]
fn an_npz_member_shorter_than_its_header_declares_fails_every_query() {
    let dir = TempDir::new("sql-cut-member");
    let values: Vec<f64> = (0..1000).map(|i| i as f64).collect();
    let bytes = npy_serde::to_vec(&values).unwrap();
    for compression in [
        npy_serde::npz::Compression::Stored,
        npy_serde::npz::Compression::Deflate,
    ] {
        let path = dir.join(format!("a{}.npz", compression.method()));
        let archive = |member: &[u8]| {
            let mut w = npy_serde::npz::NpzWriter::new(std::fs::File::create(&path).unwrap());
            w.set_compression(compression);
            w.add("other", &values).unwrap();
            w.add_raw("value.npy", member).unwrap();
            w.finish().unwrap();
        };
        let whole = || archive(&bytes);
        let cut = || archive(&bytes[..500]);
        let location = path.to_str().unwrap();
        let expect = [
            location.trim_start_matches('/'),
            "\"value.npy\" does not hold what its .npy header declares",
            "128 header bytes plus 8000 data bytes, but the member is 500 bytes",
        ];
        let options = NpyReadOptions::new().npz_member("value");
        every_query_fails(
            location,
            &options,
            (&whole, &cut),
            &CUT_SHORT_QUERIES,
            &expect,
        );
        let rt = rt();
        let ctx = ctx(2);
        let err = rt
            .block_on(ctx.register_npy("t", location, options.clone()))
            .unwrap_err()
            .to_string();
        assert!(expect.iter().all(|e| err.contains(e)), "{err}");
        // The whole member beside it answers.
        let other = NpyReadOptions::new().npz_member("other");
        rt.block_on(ctx.register_npy("w", location, other)).unwrap();
        assert_eq!(
            sql(&ctx, &rt, "SELECT count(*), max(value) FROM w"),
            [["1000", "999.0"]]
        );
    }
}

#[test]
fn tables_in_an_in_memory_object_store() {
    use datafusion::object_store::{
        memory::InMemory, path::Path as ObjPath, ObjectStoreExt, PutPayload,
    };
    let store = Arc::new(InMemory::new());
    let rt = rt();
    let mut all = Vec::new();
    for k in 0..3i64 {
        let recs: Vec<Obs> = (k * 400..k * 400 + 400).map(obs).collect();
        let bytes = npy_serde::to_vec(&recs).unwrap();
        let path = ObjPath::from(format!("shards/s{k}.npy"));
        rt.block_on(store.put(&path, PutPayload::from(bytes)))
            .unwrap();
        all.extend(recs);
    }
    let ctx = ctx(4);
    let url = datafusion::execution::object_store::ObjectStoreUrl::parse("memory://").unwrap();
    ctx.register_object_store(url.as_ref(), store);
    rt.block_on(ctx.register_npy("t", "memory:///shards/", NpyReadOptions::new()))
        .unwrap();
    let got = sql(
        &ctx,
        &rt,
        "SELECT count(*), sum(id), max(x) FROM t WHERE flag = 3",
    );
    let sel: Vec<&Obs> = all.iter().filter(|o| o.flag == 3).collect();
    assert_eq!(got[0][0], sel.len().to_string());
    assert_eq!(got[0][1], sel.iter().map(|o| o.id).sum::<i64>().to_string());
    assert!(close(
        &got[0][2],
        sel.iter().map(|o| o.x).fold(f64::MIN, f64::max)
    ));
}

/// Queries whose answers must not depend on whether their filters are pushed into the scan,
/// on how the scan reads (mapped or ranged reads), or on the partitions: filters on numbers,
/// strings, datetimes with NULLs and nested fields, none passing, all passing, under joins
/// (whose dynamic filters reach the scan too), grouping and ordering.
const FILTERED: &[&str] = &[
    "SELECT id, flag, x FROM t WHERE flag = 1 ORDER BY id",
    "SELECT count(*), sum(x), min(id), max(id) FROM t WHERE id % 7 = 0",
    "SELECT name, count(*), sum(y) FROM t WHERE name = 'n1' AND x > 0 GROUP BY name",
    "SELECT id, ts FROM t WHERE ts IS NULL AND id > 2000 ORDER BY id",
    "SELECT count(*), min(ts), max(ts) FROM t WHERE ts IS NOT NULL AND flag IN (2, 3)",
    "SELECT id, pos.a FROM t WHERE pos.b < -4000 ORDER BY id",
    "SELECT id FROM t WHERE y > 8 OR name LIKE 'n2%' ORDER BY id",
    "SELECT sum(id), count(*) FROM t WHERE x = 100",
    "SELECT count(*), sum(id) FROM t WHERE flag < 5",
    "SELECT flag, count(*), sum(y) FROM t WHERE id BETWEEN 100 AND 3000 GROUP BY flag ORDER BY flag",
    "SELECT a.id, b.x FROM t a JOIN t b ON a.id = b.id + 1 WHERE b.flag = 2 AND a.y < 4 \
     ORDER BY a.id",
    "SELECT id, x FROM t WHERE x > 1.5 ORDER BY x DESC, id",
];

#[test]
fn answers_do_not_depend_on_filter_pushdown_access_or_partitions() {
    let dir = TempDir::new("sql-pushdown");
    let all = shards(&dir);
    let rt = rt();
    let path = dir.path().to_str().unwrap();
    let register = |partitions: usize, batch: usize, options: NpyReadOptions| {
        let ctx = ctx_with(partitions, batch);
        rt.block_on(ctx.register_npy("t", path, options)).unwrap();
        ctx
    };
    let run = |partitions: usize, batch: usize, options: NpyReadOptions, q: &str| {
        sql(&register(partitions, batch, options), &rt, q)
    };
    let limited = |q: &str| format!("{q} LIMIT 7");
    let reference = register(
        1,
        8192,
        NpyReadOptions::new()
            .filter_pushdown(false)
            .memory_map(false),
    );
    let want: Vec<_> = FILTERED.iter().map(|q| sql(&reference, &rt, q)).collect();
    let want_limited: Vec<_> = FILTERED
        .iter()
        .map(|q| sql(&reference, &rt, &limited(q)))
        .collect();
    // Every count up to 8, one per shard (10), and more partitions than shards (11, 16: files
    // split): every count up to 16 took a minute of a debug build and found nothing more.
    for partitions in (1..=8).chain([10, 11, 16]) {
        for (pushdown, mmap) in [(true, true), (true, false), (false, true)] {
            // Small batches on some runs: a filter leaves some of them empty.
            let batch = if partitions % 3 == 0 { 100 } else { 8192 };
            let options = NpyReadOptions::new()
                .filter_pushdown(pushdown)
                .memory_map(mmap);
            let ctx = register(partitions, batch, options);
            for (k, &q) in FILTERED.iter().enumerate() {
                let label =
                    format!("{q}: {partitions} partitions, pushdown {pushdown}, mmap {mmap}");
                assert_eq!(sql(&ctx, &rt, q), want[k], "{label}");
                if q.contains("ORDER BY") {
                    assert_eq!(sql(&ctx, &rt, &limited(q)), want_limited[k], "{label}");
                }
            }
        }
    }
    // The answers themselves, from the records.
    let ones: Vec<String> = all
        .iter()
        .filter(|o| o.flag == 1)
        .map(|o| o.id.to_string())
        .collect();
    let got: Vec<String> = run(4, 8192, NpyReadOptions::new(), FILTERED[0])
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(got, ones);
    let nested: Vec<String> = all
        .iter()
        .filter(|o| o.pos.b < -4000.0)
        .map(|o| o.id.to_string())
        .collect();
    let got: Vec<String> = run(4, 8192, NpyReadOptions::new(), FILTERED[5])
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(got, nested);
    assert!(!nested.is_empty());
}

#[test]
fn a_limit_under_a_pushed_filter_counts_the_rows_that_pass() {
    let (_dir, all, rt, _) = shard_table("sql-filter-limit", 1);
    let path = _dir.path().to_str().unwrap();
    for partitions in [1, 2, 5, 16] {
        for pushdown in [true, false] {
            let ctx = ctx(partitions);
            let options = NpyReadOptions::new().filter_pushdown(pushdown);
            rt.block_on(ctx.register_npy("t", path, options)).unwrap();
            // The filter is in the scan, or not, as asked.
            let plan = format!(
                "{:?}",
                sql(&ctx, &rt, "EXPLAIN SELECT id FROM t WHERE flag = 4")
            );
            assert_eq!(plan.contains("predicate=flag@1 = 4"), pushdown, "{plan}");
            let matching = all.iter().filter(|o| o.flag == 4).count();
            for limit in [1, 3, 100, 1000, 100_000] {
                let got = sql(
                    &ctx,
                    &rt,
                    &format!("SELECT id, flag FROM t WHERE flag = 4 LIMIT {limit}"),
                );
                assert_eq!(
                    got.len(),
                    limit.min(matching),
                    "{partitions} {pushdown} {limit}"
                );
                assert!(got.iter().all(|r| r[1] == "4"), "{got:?}");
                let n = sql(
                    &ctx,
                    &rt,
                    &format!(
                        "SELECT count(*) FROM (SELECT id FROM t WHERE flag = 4 LIMIT {limit})"
                    ),
                );
                assert_eq!(n[0][0], limit.min(matching).to_string());
            }
            // count(*) under a pushed filter is not the statistics' row count.
            let n = sql(&ctx, &rt, "SELECT count(*) FROM t WHERE flag = 4");
            assert_eq!(n[0][0], matching.to_string());
        }
    }
}

#[test]
fn filters_over_an_npz_member_do_not_depend_on_pushdown() {
    let dir = TempDir::new("sql-npz-filter");
    let recs: Vec<Obs> = (0..5000).map(obs).collect();
    let path = dir.join("arch.npz");
    let mut w = npy_serde::npz::NpzWriter::new(std::fs::File::create(&path).unwrap());
    w.set_compression(npy_serde::npz::Compression::Deflate);
    w.add("obs", &recs).unwrap();
    w.finish().unwrap();
    let rt = rt();
    let mut answers = Vec::new();
    for pushdown in [true, false] {
        let ctx = ctx_with(3, 700);
        let options = NpyReadOptions::new()
            .npz_member("obs")
            .filter_pushdown(pushdown);
        rt.block_on(ctx.register_npy("t", path.to_str().unwrap(), options))
            .unwrap();
        let plan = format!(
            "{:?}",
            sql(&ctx, &rt, "EXPLAIN SELECT id FROM t WHERE flag = 4")
        );
        assert_eq!(plan.contains("predicate="), pushdown, "{plan}");
        let mut got = Vec::new();
        for &q in FILTERED {
            got.push(sql(&ctx, &rt, q));
        }
        let n = sql(
            &ctx,
            &rt,
            "SELECT count(*) FROM (SELECT id FROM t WHERE flag = 4 LIMIT 9)",
        );
        assert_eq!(n, [["9"]]);
        answers.push(got);
    }
    assert_eq!(answers[0], answers[1]);
    let ones = recs.iter().filter(|o| o.flag == 1).count();
    assert_eq!(answers[0][0].len(), ones);
}
