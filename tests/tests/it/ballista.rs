//! Distributed SQL over `.npy` shards on Apache Ballista (feature `ballista`): a cluster in the
//! test process (a scheduler and two executors on localhost, from
//! `npy_datafusion::ballista::standalone`) answers GROUP BY, filter and ORDER BY/LIMIT queries as the
//! single-process DataFusion run does (and, live with `NPY_PYTHON`, as NumPy does); a shard
//! whose header is corrupted after registration fails the query with this crate's message;
//! the physical codec round-trips a scan node exactly. Writing through the cluster: `COPY ...
//! TO` a `.npy` file, an `.npz` archive (a member, or columns), a directory and an object
//! store (`memory://`, the store the in-process executors share with the client) writes the
//! bytes one process writes, with the statement's options; `INSERT INTO` a `STORED AS NPY`
//! table writes with the table's options; a failing write leaves no file. A table of hive
//! partitions declared sorted answers as in one process, and the cluster plans no sort where
//! one process plans none; grouped by its partition column, it answers as one process does.
//! A TopK's stage runs the TopK prefilter, under either planner.

use std::sync::Arc;

use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::physical_plan::{displayable, ExecutionPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_proto::physical_plan::AsExecutionPlan;
use datafusion_proto::protobuf::PhysicalPlanNode;
use npy_datafusion::ballista::{session_config, standalone, NpyPhysicalCodec};
use npy_datafusion::{NpyReadOptions, NpySessionExt, NpySource};
use npy_serde_tests::sql::{
    close, files_under, npy_files, numpy, obs, register_bad_bools, rows, rt, session,
    split_small_files, sql, sql_err, write_shards, Obs,
};
use npy_serde_tests::TempDir;

/// 8 shards of 0..1000 records (one empty), ids consecutive.
fn shards(dir: &TempDir) -> Vec<Obs> {
    write_shards(dir, &[997, 0, 1, 250, 1000, 3, 640, 999], obs)
}

/// Four partitions; files of any size split into byte ranges, so tasks cross record
/// boundaries.
fn configure(config: SessionConfig) -> SessionConfig {
    split_small_files(config.with_target_partitions(4))
}

/// A scheduler and two executors in this process (bound to localhost), and a session on them.
fn cluster(rt: &tokio::runtime::Runtime) -> SessionContext {
    rt.block_on(standalone(configure(session_config()), 2))
        .expect("a standalone Ballista cluster")
}

/// [`cluster`] with Ballista's static planner (its adaptive planner off).
fn static_cluster(rt: &tokio::runtime::Runtime) -> SessionContext {
    let config = session_config().set_bool("ballista.planner.adaptive.enabled", false);
    rt.block_on(standalone(configure(config), 2))
        .expect("a standalone Ballista cluster")
}

fn local() -> SessionContext {
    session(configure(SessionConfig::new()))
}

const GROUP_BY: &str = "SELECT flag, count(*), sum(id), avg(x), min(y), max(y) FROM t \
                        GROUP BY flag ORDER BY flag";
const FILTER: &str = "SELECT count(*), sum(x), sum(id) FROM t WHERE id % 7 = 0 AND name <> 'n1'";
const TOP: &str = "SELECT id, y, name FROM t ORDER BY y DESC, id ASC LIMIT 5";
const LIMIT: &str = "SELECT count(*) FROM (SELECT id FROM t LIMIT 17)";
/// A filter the scan takes (the codec carries it to the executors), under a limit.
const FILTER_LIMIT: &str = "SELECT count(*) FROM (SELECT id FROM t WHERE flag = 3 LIMIT 17)";
const FILTER_TOP: &str = "SELECT id, name FROM t WHERE flag = 3 AND x > 0 ORDER BY id LIMIT 9";

#[test]
fn queries_on_the_cluster_equal_single_process_datafusion_and_numpy() {
    let dir = TempDir::new("ballista-sql");
    let all = shards(&dir);
    let path = dir.path().to_str().unwrap();
    let rt = rt();
    let ballista = cluster(&rt);
    let local = local();
    for ctx in [&ballista, &local] {
        rt.block_on(ctx.register_npy("t", path, NpyReadOptions::new()))
            .unwrap();
    }
    for q in [GROUP_BY, FILTER, TOP, LIMIT, FILTER_LIMIT, FILTER_TOP] {
        assert_eq!(sql(&ballista, &rt, q), sql(&local, &rt, q), "{q}");
    }
    assert_eq!(sql(&ballista, &rt, FILTER_LIMIT), [["17"]]);

    // The answers themselves, from the records.
    let got = sql(&ballista, &rt, GROUP_BY);
    assert_eq!(got.len(), 5);
    for (flag, row) in got.iter().enumerate() {
        let g: Vec<&Obs> = all.iter().filter(|o| o.flag as usize == flag).collect();
        assert_eq!(row[1], g.len().to_string());
        assert_eq!(row[2], g.iter().map(|o| o.id).sum::<i64>().to_string());
        let avg = g.iter().map(|o| o.x).sum::<f64>() / g.len() as f64;
        assert!(close(&row[3], avg), "{row:?} vs {avg}");
    }
    let got = sql(&ballista, &rt, FILTER);
    let sel: Vec<&Obs> = all
        .iter()
        .filter(|o| o.id % 7 == 0 && o.name != "n1")
        .collect();
    assert_eq!(got[0][0], sel.len().to_string());
    assert!(close(&got[0][1], sel.iter().map(|o| o.x).sum()));
    let got = sql(&ballista, &rt, TOP);
    let mut sorted = all.clone();
    sorted.sort_by(|p, q| q.y.total_cmp(&p.y).then(p.id.cmp(&q.id)));
    let want: Vec<String> = sorted[..5].iter().map(|o| o.id.to_string()).collect();
    assert_eq!(got.iter().map(|r| r[0].clone()).collect::<Vec<_>>(), want);
    assert_eq!(sql(&ballista, &rt, LIMIT), [["17"]]);

    // SQL DDL on the cluster: the NPY format is registered, and its table is sent as well.
    rt.block_on(async {
        let ddl = format!("CREATE EXTERNAL TABLE ddl STORED AS NPY LOCATION '{path}/'");
        ballista.sql(&ddl).await?.collect().await
    })
    .unwrap();
    assert_eq!(
        sql(&ballista, &rt, "SELECT count(*) FROM ddl"),
        [[all.len().to_string()]]
    );

    // A glob's table reads the files it matches, on the cluster too (the codec once sent
    // the glob's prefix alone, and the executors read every shard under it).
    let glob = format!("{path}/shard0[03]*.npy");
    for ctx in [&ballista, &local] {
        rt.block_on(ctx.register_npy("g", &glob, NpyReadOptions::new()))
            .unwrap();
    }
    let q = "SELECT count(*), sum(id) FROM g";
    let ids: Vec<i64> = (0..997).chain(998..1248).collect();
    let matched = [[ids.len().to_string(), ids.iter().sum::<i64>().to_string()]];
    assert_eq!(sql(&local, &rt, q), matched);
    assert_eq!(sql(&ballista, &rt, q), matched);

    if let Some(np) = numpy(
        "out = []\n\
         for f in range(5):\n\
         \x20   g = a[a['flag'] == f]\n\
         \x20   out.append([f, len(g), int(g['id'].sum()), float(g['x'].mean())])\n\
         m = (a['id'] % 7 == 0) & (a['name'] != b'n1')\n\
         o = np.lexsort((a['id'], -a['y'].astype('f8')))[:5]\n\
         print(json.dumps([out, [int(m.sum()), float(a['x'][m].sum()), int(a['id'][m].sum())], a['id'][o].tolist()]))",
        &npy_files(dir.path()),
    ) {
        let got = sql(&ballista, &rt, GROUP_BY);
        for (row, n) in got.iter().zip(np[0].as_array().unwrap()) {
            assert_eq!(row[1], n[1].to_string());
            assert_eq!(row[2], n[2].to_string());
            assert!(close(&row[3], n[3].as_f64().unwrap()), "{row:?} vs {n}");
        }
        let got = sql(&ballista, &rt, FILTER);
        assert_eq!(got[0][0], np[1][0].to_string());
        assert!(close(&got[0][1], np[1][1].as_f64().unwrap()));
        assert_eq!(got[0][2], np[1][2].to_string());
        let ids: Vec<String> = np[2]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(ids, want);
    }
}

#[test]
fn a_corrupt_shard_fails_the_query_with_this_crates_message() {
    let dir = TempDir::new("ballista-corrupt");
    shards(&dir);
    let rt = rt();
    let ballista = cluster(&rt);
    rt.block_on(ballista.register_npy("t", dir.path().to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    assert_eq!(sql(&ballista, &rt, "SELECT count(*) FROM t"), [["3890"]]);

    // After registration, one shard's header dict is broken: the query reads it again.
    let shard = dir.join("shard03.npy");
    let mut bytes = std::fs::read(&shard).unwrap();
    let at = bytes.windows(5).position(|w| w == b"descr").unwrap();
    bytes[at..at + 5].copy_from_slice(b"dXscr");
    std::fs::write(&shard, &bytes).unwrap();
    let err = sql_err(&ballista, &rt, "SELECT sum(id) FROM t");
    assert!(err.contains("shard03.npy"), "{err}");
    assert!(err.contains("descr"), "{err}");
    assert!(!err.contains("panic"), "{err}");

    // A bool byte that is neither 0 nor 1, read by an executor: the record and byte are named.
    register_bad_bools(&ballista, &rt, &dir, "b");
    let err = sql_err(&ballista, &rt, "SELECT count(*) FROM b WHERE value");
    assert!(
        err.contains("bad_bool.npy") && err.contains("record 2"),
        "{err}"
    );

    // The data limit of the table's options reaches the executors.
    let ok = dir.join("ok.npy");
    npy_serde::to_path(&ok, &(0..100).map(obs).collect::<Vec<_>>()).unwrap();
    let limited = NpyReadOptions::new().max_data_size(1000);
    rt.block_on(ballista.register_npy("l", ok.to_str().unwrap(), limited))
        .unwrap();
    let err = sql_err(&ballista, &rt, "SELECT sum(id) FROM l");
    assert!(err.contains("ok.npy") && err.contains("data size"), "{err}");
}

/// The `DataSourceExec` of an `.npy` scan in `plan`.
fn find_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    if let Some(exec) = plan.downcast_ref::<DataSourceExec>() {
        if let Some(c) = exec.data_source().downcast_ref::<FileScanConfig>() {
            if c.file_source().downcast_ref::<NpySource>().is_some() {
                return Some(plan.clone());
            }
        }
    }
    plan.children().into_iter().find_map(find_scan)
}

/// What the scan node carries: file groups with their byte ranges, projection, pushed filter,
/// limit, and the source's options and batch size.
fn describe(scan: &Arc<dyn ExecutionPlan>) -> String {
    let exec = scan.downcast_ref::<DataSourceExec>().unwrap();
    let config = exec.data_source().downcast_ref::<FileScanConfig>().unwrap();
    let source = config.file_source().downcast_ref::<NpySource>().unwrap();
    let groups: Vec<Vec<String>> = config
        .file_groups
        .iter()
        .map(|g| {
            g.files()
                .iter()
                .map(|f| format!("{} {:?}", f.object_meta.location, f.range))
                .collect()
        })
        .collect();
    format!(
        "groups {groups:?}\nprojection {:?}\nfilter {:?}\nlimit {:?}\noptions {:?}\nbatch {}\n\
         schema {:?}",
        config.file_source().projection(),
        config.file_source().filter().map(|p| p.to_string()),
        config.limit,
        source.options(),
        source.batch_size(),
        config.file_schema(),
    )
}

#[test]
fn the_physical_codec_round_trips_a_scan_node_exactly() {
    let dir = TempDir::new("ballista-codec");
    // One file (more rows than a batch) over 3 partitions: it is split into byte ranges.
    let path = dir.join("big.npy");
    npy_serde::to_path(&path, &(0..20_000).map(obs).collect::<Vec<_>>()).unwrap();
    let rt = rt();
    let ctx =
        SessionContext::new_with_config(configure(SessionConfig::new()).with_target_partitions(3));
    let options = NpyReadOptions::new()
        .max_header_size(20_000)
        .max_data_size(1 << 20)
        .reader_options(
            npy_serde::ReaderBuilder::new()
                .max_header_size(20_000)
                .max_data_size(1 << 20)
                .max_dims(7)
                .max_depth(9)
                .max_empty_items(11),
        );
    rt.block_on(ctx.register_npy("t", path.to_str().unwrap(), options))
        .unwrap();
    let codec = NpyPhysicalCodec::default();
    for q in [
        "SELECT id, x FROM t LIMIT 7",
        "SELECT flag, sum(x) FROM t WHERE y > 3 GROUP BY flag",
    ] {
        let plan = rt
            .block_on(async { ctx.sql(q).await?.create_physical_plan().await })
            .unwrap();
        let node = PhysicalPlanNode::try_from_physical_plan(plan.clone(), &codec).unwrap();
        let mut bytes = Vec::new();
        node.try_encode(&mut bytes).unwrap();
        let back = PhysicalPlanNode::try_decode(&bytes)
            .unwrap()
            .try_into_physical_plan(&ctx.task_ctx(), &codec)
            .unwrap();
        assert_eq!(
            displayable(back.as_ref()).indent(true).to_string(),
            displayable(plan.as_ref()).indent(true).to_string(),
            "{q}"
        );
        let (before, after) = (find_scan(&plan).unwrap(), find_scan(&back).unwrap());
        let text = describe(&before);
        assert_eq!(describe(&after), text, "{q}");
        // The plan has what the test means to carry.
        assert!(
            q.contains("LIMIT") || text.matches("Some(FileRange").count() == 3,
            "{text}"
        );
        assert!(text.contains("max_header_size: 20000"), "{text}");
        assert!(text.contains("max_data_size: Some(1048576)"), "{text}");
        assert!(text.contains("max_empty_items: 11"), "{text}");
        if q.contains("LIMIT") {
            assert!(text.contains("limit Some(7)"), "{text}");
        } else {
            // The filter pushed into the scan travels with it.
            assert!(text.contains("filter Some(\"y@3 > 3\")"), "{text}");
        }
        // And the decoded plan runs to the same answer.
        let run = |p: Arc<dyn ExecutionPlan>| {
            let batches = rt
                .block_on(datafusion::physical_plan::collect(p, ctx.task_ctx()))
                .unwrap();
            let mut r = rows(&batches);
            r.sort();
            r
        };
        if q.contains("LIMIT") {
            assert_eq!(run(back).len(), 7, "{q}");
        } else {
            assert_eq!(run(back), run(plan), "{q}");
        }
    }
}

/// Four partitions, and one output file for a directory (as many as DataFusion's demultiplexer
/// would otherwise choose to write in parallel, and so which rows go where, may differ between
/// a cluster's final stage and one process).
fn one_file_per_output(config: SessionConfig) -> SessionConfig {
    configure(config)
        .set_usize("datafusion.execution.minimum_parallel_output_files", 1)
        .set_usize(
            "datafusion.execution.soft_max_rows_per_output_file",
            1 << 20,
        )
}

/// The bytes of each file under `dir`, in name order.
fn contents_under(dir: &std::path::Path) -> Vec<Vec<u8>> {
    files_under(dir)
        .iter()
        .map(|f| std::fs::read(f).unwrap())
        .collect()
}

/// Rows with nulls (every fifth `x`), the nested record, bytes, strings and datetimes.
const WRITTEN: &str = "SELECT id, CASE WHEN id % 5 = 0 THEN NULL ELSE x END AS x, name, ts, pos \
                       FROM t ORDER BY id";

#[test]
fn copy_to_through_the_cluster_writes_the_bytes_one_process_writes() {
    let dir = TempDir::new("ballista-copy");
    shards(&dir);
    let out = TempDir::new("ballista-copy-out");
    let rt = rt();
    let ballista = rt
        .block_on(standalone(one_file_per_output(session_config()), 2))
        .expect("a standalone Ballista cluster");
    let local = session(one_file_per_output(SessionConfig::new()));
    for ctx in [&ballista, &local] {
        rt.block_on(ctx.register_npy("t", dir.path().to_str().unwrap(), NpyReadOptions::new()))
            .unwrap();
    }
    // (target, STORED AS, OPTIONS): the options reach the executor's sink (without `nulls`
    // the null `x` fails the write).
    let cases = [
        ("rows.npy", "", "OPTIONS ('nulls' 'nan')"),
        (
            "member.npz",
            "",
            "OPTIONS ('nulls' 'fill=-7', 'member' 'obs')",
        ),
        (
            "cols.npz",
            "",
            "OPTIONS ('layout' 'columns', 'nulls' 'nan')",
        ),
        (
            "rows.dat",
            "STORED AS NPY",
            "OPTIONS ('nulls' 'nan', 'string_width.name' '9')",
        ),
        ("dir/", "STORED AS NPY", "OPTIONS ('nulls' 'nan')"),
        ("zdir/", "STORED AS NPZ", "OPTIONS ('nulls' 'nan')"),
    ];
    for (target, stored, options) in cases {
        let mut written = Vec::new();
        for (who, ctx) in [("local", &local), ("cluster", &ballista)] {
            let path = out.join(who).join(target.trim_end_matches('/'));
            let q = format!(
                "COPY ({WRITTEN}) TO '{}{}' {stored} {options}",
                path.display(),
                if target.ends_with('/') { "/" } else { "" },
            );
            assert_eq!(sql(ctx, &rt, &q), [["3890"]], "{q}");
            written.push(if target.ends_with('/') {
                // One file, and the record of its order (`ORDER BY id`) beside it.
                let files = files_under(&path);
                let data = files
                    .iter()
                    .filter(|f| !f.to_string_lossy().ends_with(".order"));
                assert_eq!(data.count(), 1, "{q}: {files:?}");
                contents_under(&path)
            } else {
                vec![std::fs::read(&path).unwrap()]
            });
        }
        assert!(
            written[0] == written[1],
            "{target}: the cluster wrote other bytes"
        );
    }
    // The cluster's archive of columns is the column table one process reads back.
    let cols = out.join("cluster").join("cols.npz");
    let table = npy_arrow::BatchReaderBuilder::new()
        .open_column_table(&cols)
        .unwrap();
    assert_eq!(table.num_rows(), 3890);

    // A directory of several files (DataFusion's parallel output) on the cluster: every row
    // once.
    let many = out.join("many");
    let q = format!(
        "COPY t TO '{}/' STORED AS NPY OPTIONS ('string_width' '4')",
        many.display()
    );
    let parallel = rt
        .block_on(standalone(configure(session_config()), 2))
        .expect("a standalone Ballista cluster");
    rt.block_on(parallel.register_npy("t", dir.path().to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    assert_eq!(sql(&parallel, &rt, &q), [["3890"]]);
    let back = local_session_over(&rt, &many);
    let check = "SELECT count(*), count(DISTINCT id), sum(id), sum(x) FROM";
    assert_eq!(
        sql(&back, &rt, &format!("{check} b")),
        sql(&local, &rt, &format!("{check} t"))
    );
}

/// A one-process session with the table `b` over `dir`.
fn local_session_over(rt: &tokio::runtime::Runtime, dir: &std::path::Path) -> SessionContext {
    let ctx = local();
    rt.block_on(ctx.register_npy("b", dir.to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    ctx
}

#[test]
fn insert_into_an_npy_table_through_the_cluster() {
    let dir = TempDir::new("ballista-insert");
    #[derive(serde::Serialize, npy_serde::NpyRecord)]
    struct Row {
        id: i64,
        x: f64,
    }
    let first: Vec<Row> = (0..10).map(|i| Row { id: i, x: i as f64 }).collect();
    let rt = rt();
    let ballista = rt
        .block_on(standalone(one_file_per_output(session_config()), 2))
        .expect("a standalone Ballista cluster");
    let local = session(one_file_per_output(SessionConfig::new()));
    let mut new_files = Vec::new();
    for (who, ctx) in [("cluster", &ballista), ("local", &local)] {
        let table = dir.join(who);
        std::fs::create_dir_all(&table).unwrap();
        npy_serde::to_path(table.join("first.npy"), &first).unwrap();
        let ddl = format!(
            "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}/' OPTIONS ('nulls' 'nan')",
            table.display()
        );
        sql(ctx, &rt, &ddl);
        // The table's write options reach the executor's sink with the table: one naming a
        // column the table has not fails the INSERT there, and no file is left.
        let bad = format!(
            "CREATE EXTERNAL TABLE u STORED AS NPY LOCATION '{}/' \
             OPTIONS ('nulls.nosuchcol' 'nan')",
            table.display()
        );
        sql(ctx, &rt, &bad);
        let e = sql_err(ctx, &rt, "INSERT INTO u VALUES (7, 7.5)");
        assert!(e.contains("nosuchcol"), "{who}: {e}");
        assert_eq!(files_under(&table).len(), 1, "{who}");
        let insert = "INSERT INTO t VALUES (100, 0.5), (101, 1.5), (102, 2.5)";
        assert_eq!(sql(ctx, &rt, insert), [["3"]], "{who}");
        assert_eq!(
            sql(
                ctx,
                &rt,
                "INSERT INTO t SELECT id + 1000, x FROM t WHERE id < 3"
            ),
            [["3"]],
            "{who}"
        );
        let files = files_under(&table);
        assert_eq!(files.len(), 3, "{who}: {files:?}");
        assert_eq!(
            sql(ctx, &rt, "SELECT count(*), sum(id), sum(x) FROM t"),
            [["16", &(45 + 303 + 3003).to_string(), "52.5"]],
            "{who}"
        );
        assert_eq!(sql(ctx, &rt, "SELECT x FROM t WHERE id = 101"), [["1.5"]]);
        // The inserted files' bytes (their names are DataFusion's, random).
        let mut inserted: Vec<Vec<u8>> = files
            .iter()
            .filter(|f| !f.ends_with("first.npy"))
            .map(|f| std::fs::read(f).unwrap())
            .collect();
        inserted.sort();
        new_files.push(inserted);
    }
    assert!(
        new_files[0] == new_files[1],
        "the cluster's INSERTs wrote other bytes"
    );
}

#[test]
fn a_failing_write_on_the_cluster_leaves_no_file() {
    let dir = TempDir::new("ballista-copy-fail");
    shards(&dir);
    let rt = rt();
    let ballista = cluster(&rt);
    rt.block_on(ballista.register_npy("t", dir.path().to_str().unwrap(), NpyReadOptions::new()))
        .unwrap();
    let out = TempDir::new("ballista-copy-fail-out");
    let target = out.join("out.npy");
    std::fs::write(&target, b"old").unwrap();
    // A null late in the rows, with the default policy (`error`): rows were written first.
    let late_null = "SELECT CASE WHEN id = 3800 THEN NULL ELSE id END AS v FROM t ORDER BY id";
    let e = sql_err(
        &ballista,
        &rt,
        &format!("COPY ({late_null}) TO '{}'", target.display()),
    );
    // The executor's error as text: the file and this crate's message (Ballista wraps it).
    assert!(
        e.contains(&format!("writing {}: ", target.display())) && e.contains("is null"),
        "{e}"
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    for (name, extra) in [
        ("out.npz", ""),
        ("cols.npz", "OPTIONS ('layout' 'columns')"),
    ] {
        let q = format!(
            "COPY ({late_null}) TO '{}' {extra}",
            out.join(name).display()
        );
        sql_err(&ballista, &rt, &q);
    }
    // A directory the statement would make.
    let made = out.join("made").join("deeper");
    let q = format!("COPY ({late_null}) TO '{}/' STORED AS NPY", made.display());
    sql_err(&ballista, &rt, &q);
    assert_eq!(files_under(out.path()), [target]);
    assert!(!out.join("made").exists());
}

#[test]
fn copy_to_an_object_store_through_the_cluster() {
    use datafusion::execution::object_store::ObjectStoreUrl;
    use datafusion::object_store::memory::InMemory;
    use datafusion::object_store::path::Path as ObjPath;
    use datafusion::object_store::{ObjectStore, ObjectStoreExt};

    let dir = TempDir::new("ballista-copy-store");
    shards(&dir);
    let rt = rt();
    let ballista = cluster(&rt);
    let local = local();
    // The in-process executors share the client's runtime, and so its stores.
    let mem: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let url = ObjectStoreUrl::parse("memory://").unwrap();
    ballista.register_object_store(url.as_ref(), mem.clone());
    for ctx in [&ballista, &local] {
        rt.block_on(ctx.register_npy("t", dir.path().to_str().unwrap(), NpyReadOptions::new()))
            .unwrap();
    }
    let get = |key: &str| {
        rt.block_on(async { mem.get(&ObjPath::from(key)).await?.bytes().await })
            .unwrap_or_else(|e| panic!("{key}: {e}"))
            .to_vec()
    };
    for name in ["rows.npy", "rows.npz"] {
        let q = format!("COPY ({WRITTEN}) TO 'memory:///out/{name}' OPTIONS ('nulls' 'nan')");
        assert_eq!(sql(&ballista, &rt, &q), [["3890"]]);
        let file = dir.join(name);
        let q = format!(
            "COPY ({WRITTEN}) TO '{}' OPTIONS ('nulls' 'nan')",
            file.display()
        );
        sql(&local, &rt, &q);
        assert!(
            get(&format!("out/{name}")) == std::fs::read(&file).unwrap(),
            "{name}"
        );
    }
    // The cluster reads back what it wrote there.
    rt.block_on(ballista.register_npy("back", "memory:///out/rows.npy", NpyReadOptions::new()))
        .unwrap();
    assert_eq!(
        sql(&ballista, &rt, "SELECT count(*), sum(id) FROM back"),
        sql(&local, &rt, "SELECT count(*), sum(id) FROM t")
    );
    // A failing write uploads nothing.
    let late_null = "SELECT CASE WHEN id = 3800 THEN NULL ELSE id END AS v FROM t ORDER BY id";
    let q = format!("COPY ({late_null}) TO 'memory:///out/failed.npy'");
    let e = sql_err(&ballista, &rt, &q);
    assert!(e.contains("failed.npy"), "{e}");
    let listed = rt
        .block_on(mem.list_with_delimiter(Some(&ObjPath::from("out"))))
        .unwrap();
    let mut keys: Vec<String> = (listed.objects.iter())
        .map(|m| m.location.to_string())
        .collect();
    keys.sort();
    // The `.npy` file's order (`ORDER BY id`) is recorded beside it, on the store too.
    assert_eq!(keys, ["out/rows.npy", "out/rows.npy.order", "out/rows.npz"]);
}

/// The physical plans of `query` the cluster ran, one section per stage (`EXPLAIN ANALYZE`,
/// which Ballista answers with the stages' executed plans), or one process's plan.
fn executed_plan(ctx: &SessionContext, rt: &tokio::runtime::Runtime, query: &str) -> String {
    sql(ctx, rt, &format!("EXPLAIN ANALYZE {query}"))
        .iter()
        .map(|row| row.join("\n"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A table of hive partitions (`p=0/` .. `p=2/`, each file sorted by `k`) declared sorted by
/// `k`: the cluster's scheduler gets the table with its partition column and its order
/// (the logical codec's `table/3`), so its answers equal one process's (the partition values
/// included, filters on them pruning directories) and, where one process plans no sort for
/// the declared order, neither does a cluster with Ballista's static planner. Under its
/// adaptive planner (the default), which loses an order across its shuffles, the table reports
/// no order and the cluster sorts, with the same answers.
#[test]
fn a_partitioned_sorted_table_on_the_cluster() {
    #[derive(serde::Serialize, npy_serde::NpyRecord)]
    struct Rec {
        k: i64,
        v: f64,
    }
    let dir = TempDir::new("ballista-partitions");
    for (p, n) in [(0i64, 700i64), (1, 1), (2, 1500)] {
        let part = dir.join(format!("p={p}"));
        std::fs::create_dir_all(&part).unwrap();
        let recs: Vec<Rec> = (0..n)
            .map(|i| Rec {
                k: i * 3 + p,
                v: ((i * 7919 + p) % 1000) as f64 / 4.0,
            })
            .collect();
        npy_serde::to_path(part.join("part.npy"), &recs).unwrap();
    }
    let rt = rt();
    let (adaptive, ballista) = (cluster(&rt), static_cluster(&rt));
    let local = local();
    for (how, ddl) in [
        (
            "WITH ORDER",
            "CREATE EXTERNAL TABLE {t} STORED AS NPY PARTITIONED BY (p) WITH ORDER (k ASC) \
             LOCATION '{dir}/'",
        ),
        (
            "sort_order, partitions inferred",
            "CREATE EXTERNAL TABLE {t} STORED AS NPY LOCATION '{dir}/' \
             OPTIONS ('sort_order' 'k')",
        ),
    ] {
        for ctx in [&ballista, &adaptive, &local] {
            let _ = ctx.deregister_table("t");
            let ddl = ddl
                .replace("{t}", "t")
                .replace("{dir}", &dir.path().display().to_string());
            sql(ctx, &rt, &ddl);
        }
        // Grouped by the partition column itself (see
        // `grouping_by_a_partition_column_on_the_cluster`), and by its text.
        let queries = [
            "SELECT p, count(*), sum(k), sum(v) FROM t GROUP BY p ORDER BY p",
            "SELECT CAST(p AS VARCHAR) AS q, count(*), sum(k), sum(v) FROM t GROUP BY q \
             ORDER BY q",
            "SELECT CAST(p AS VARCHAR), k, v FROM t WHERE p = '2' ORDER BY k LIMIT 9",
            "SELECT k, CAST(p AS VARCHAR) FROM t ORDER BY k LIMIT 12",
            "SELECT k, v FROM t WHERE p <> '1' AND k % 5 = 0 ORDER BY k",
            "SELECT count(*) FROM t WHERE p IN ('0', '1')",
        ];
        for q in queries {
            let want = sql(&local, &rt, q);
            assert_eq!(sql(&ballista, &rt, q), want, "{how}: {q}");
            assert_eq!(sql(&adaptive, &rt, q), want, "{how}, adaptive planner: {q}");
        }
        // The partition values themselves, from the records written.
        let groups: Vec<Vec<String>> = sql(&ballista, &rt, queries[0])
            .into_iter()
            .map(|r| r[..3].to_vec())
            .collect();
        let sum = |n: i64, p: i64| (0..n).map(|i| i * 3 + p).sum::<i64>().to_string();
        assert_eq!(
            groups,
            [
                ["0".to_string(), "700".into(), sum(700, 0)],
                ["1".into(), "1".into(), sum(1, 1)],
                ["2".into(), "1500".into(), sum(1500, 2)],
            ],
            "{how}"
        );
        // The declared order: one process sorts nothing for these, nor does the cluster.
        for q in [queries[2], queries[3], queries[4]] {
            let one = executed_plan(&local, &rt, q);
            assert!(
                !one.contains("SortExec"),
                "{how}: {q}: one process sorts:\n{one}"
            );
            let on_cluster = executed_plan(&ballista, &rt, q);
            assert!(
                on_cluster.contains("DataSourceExec") && on_cluster.contains("output_ordering"),
                "{how}: {q}:\n{on_cluster}"
            );
            assert!(
                !on_cluster.contains("SortExec"),
                "{how}: {q}: the cluster sorts:\n{on_cluster}"
            );
            let re_planned = executed_plan(&adaptive, &rt, q);
            assert!(
                !re_planned.contains("output_ordering") && re_planned.contains("SortExec"),
                "{how}: {q}: the adaptive planner's plan relies on the order:\n{re_planned}"
            );
        }
    }
}

/// Grouping by the partition column of a table of hive partitions (`p=a/`, `p=b/`, ...) on a
/// cluster of two executors, whose final stages read each other's shuffle output: the answers
/// are one process's, with the partition column declared (`PARTITIONED BY`), inferred, and
/// with a declared order. One process types the column `Dictionary(UInt16, Utf8)`; Ballista's
/// remote shuffle reads deliver a dictionary decoded (`Utf8`) under the plan's dictionary
/// type, and the final aggregation failed ("RowConverter column schema mismatch, expected
/// Dictionary(UInt16, Utf8) got Utf8"): a Ballista session's tables type it `Utf8`.
#[test]
fn grouping_by_a_partition_column_on_the_cluster() {
    #[derive(serde::Serialize, npy_serde::NpyRecord)]
    struct Rec {
        k: i64,
        v: f64,
    }
    let dir = TempDir::new("ballista-group-partitions");
    let parts = ["a", "b", "c", "d", "e", "f"];
    for (i, p) in parts.iter().enumerate() {
        for shard in 0..2i64 {
            let part = dir.join(format!("p={p}"));
            std::fs::create_dir_all(&part).unwrap();
            let n = 50 * (i as i64 + 1) + shard;
            let recs: Vec<Rec> = (0..n)
                .map(|j| Rec {
                    k: j * 3 + i as i64,
                    v: ((j * 7919 + shard) % 1000) as f64 / 4.0,
                })
                .collect();
            npy_serde::to_path(part.join(format!("part{shard}.npy")), &recs).unwrap();
        }
    }
    let rt = rt();
    let ballista = cluster(&rt);
    let local = local();
    let location = dir.path().display().to_string();
    for ddl in [
        "CREATE EXTERNAL TABLE t STORED AS NPY PARTITIONED BY (p) LOCATION '{dir}/'",
        "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{dir}/'",
        "CREATE EXTERNAL TABLE t STORED AS NPY PARTITIONED BY (p) WITH ORDER (k ASC) \
         LOCATION '{dir}/'",
    ] {
        for ctx in [&ballista, &local] {
            let _ = ctx.deregister_table("t");
            sql(ctx, &rt, &ddl.replace("{dir}", &location));
        }
        let queries = [
            "SELECT p, count(*), sum(k), sum(v) FROM t GROUP BY p ORDER BY p",
            "SELECT p, k % 2 AS odd, count(*), max(v) FROM t GROUP BY p, odd ORDER BY p, odd",
            "SELECT count(DISTINCT p) FROM t",
            "SELECT p FROM t GROUP BY p HAVING count(*) > 200 ORDER BY p DESC",
            "SELECT p, count(*) FROM t WHERE p <> 'c' GROUP BY p ORDER BY count(*) DESC LIMIT 3",
            "SELECT a.p, count(*) FROM t a JOIN t b ON a.p = b.p AND a.k = b.k GROUP BY a.p \
             ORDER BY a.p",
        ];
        for q in queries {
            assert_eq!(sql(&ballista, &rt, q), sql(&local, &rt, q), "{ddl}: {q}");
        }
        let types = "SELECT DISTINCT arrow_typeof(p) FROM t";
        assert_eq!(sql(&ballista, &rt, types), [["Utf8"]], "{ddl}");
        assert_eq!(
            sql(&local, &rt, types),
            [["Dictionary(UInt16, Utf8)"]],
            "{ddl}"
        );
        let got = sql(&ballista, &rt, queries[0]);
        let want: Vec<Vec<String>> = (parts.iter().enumerate())
            .map(|(i, p)| {
                let n = 50 * (i as i64 + 1);
                let k: i64 = (0..n).chain(0..n + 1).map(|j| j * 3 + i as i64).sum();
                vec![p.to_string(), (2 * n + 1).to_string(), k.to_string()]
            })
            .collect();
        let got: Vec<Vec<String>> = got.into_iter().map(|r| r[..3].to_vec()).collect();
        assert_eq!(got, want, "{ddl}");
    }
}

/// A sort with a fetch gets the TopK prefilter on the cluster as in one process (planned by
/// the scheduler, under the adaptive planner too, and sent to the executors by the codec),
/// and answers as one process does: over rows that rise through every shard and are asked in
/// the reverse order, each task's TopK would otherwise take every row into its heap.
#[test]
fn a_top_k_on_the_cluster_runs_the_prefilter() {
    let dir = TempDir::new("ballista-prefilter");
    shards(&dir);
    let path = dir.path().to_str().unwrap();
    let rt = rt();
    let (adaptive, ballista) = (cluster(&rt), static_cluster(&rt));
    let local = local();
    for ctx in [&adaptive, &ballista, &local] {
        rt.block_on(ctx.register_npy("t", path, NpyReadOptions::new()))
            .unwrap();
    }
    for q in [
        TOP,
        FILTER_TOP,
        "SELECT id, x FROM t ORDER BY id DESC LIMIT 7",
    ] {
        let want = sql(&local, &rt, q);
        assert_eq!(sql(&adaptive, &rt, q), want, "{q}");
        assert_eq!(sql(&ballista, &rt, q), want, "{q}");
    }
    // The job's first stage, as the scheduler planned it, has the prefilter under its TopK.
    for (how, ctx) in [("adaptive", &adaptive), ("static", &ballista)] {
        let explain = sql(ctx, &rt, &format!("EXPLAIN {TOP}"));
        let stages = explain.iter().find(|r| r[0] == "distributed_plan").unwrap();
        let stage = stages[1].split("=========").nth(2).unwrap();
        let lines: Vec<&str> = stage.lines().map(str::trim).collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("SortExec: TopK(fetch=5)"));
        let next = at.map(|i| lines[i + 1]).unwrap_or_default();
        assert!(
            next.starts_with("TopKPrefilterExec: expr=[y@1 DESC, id@0 ASC NULLS LAST], fetch=5"),
            "{how}: {stage}"
        );
    }
}
