//! Distributed SQL over `.npy` shards on Apache Ballista (feature `ballista`): a cluster in the
//! test process (a scheduler and two executors on localhost, from
//! `npy_datafusion::ballista::standalone`) answers GROUP BY, filter and ORDER BY/LIMIT queries as the
//! single-process DataFusion run does (and, live with `NPY_PYTHON`, as NumPy does); a shard
//! whose header is corrupted after registration fails the query with this crate's message;
//! the physical codec round-trips a scan node exactly.

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
    close, npy_files, numpy, obs, register_bad_bools, rows, rt, session, split_small_files, sql,
    sql_err, write_shards, Obs,
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
