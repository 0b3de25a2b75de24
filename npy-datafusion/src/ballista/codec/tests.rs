use super::*;
use datafusion::common::config::ConfigOptions;
use datafusion::datasource::file_format::file_type_to_format;
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_plan::displayable;
use datafusion::prelude::SessionContext;
use datafusion_proto::physical_plan::AsExecutionPlan;
use datafusion_proto::protobuf::PhysicalPlanNode;

use crate::ballista::{NpyTable, NpyTableRule};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

fn session() -> SessionContext {
    let ctx = SessionContext::new();
    crate::register_npy_format(&ctx).unwrap();
    ctx
}

/// `plan` encoded by the physical codec and decoded again.
fn physical_round_trip(
    ctx: &SessionContext,
    plan: Arc<dyn ExecutionPlan>,
) -> Arc<dyn ExecutionPlan> {
    let codec = NpyPhysicalCodec::default();
    let node = PhysicalPlanNode::try_from_physical_plan(plan, &codec).unwrap();
    let mut bytes = Vec::new();
    node.try_encode(&mut bytes).unwrap();
    PhysicalPlanNode::try_decode(&bytes)
        .unwrap()
        .try_into_physical_plan(&ctx.task_ctx(), &codec)
        .unwrap()
}

/// What a sink node carries, for comparing a plan with its decoded copy.
fn sink_of(plan: &Arc<dyn ExecutionPlan>) -> (String, NpyWriteOptions, Kind, Option<String>) {
    let (exec, sink) = npy_sink(plan.as_ref()).expect("an NpySink node");
    let config = FileSink::config(sink);
    let text = format!(
        "url {} store {} paths {:?} files {:?} partitions {:?} keep {} op {:?} ext {} \
         mode {:?} schema {:?}",
        config.original_url,
        config.object_store_url,
        // What datafusion-proto's message carries of them (not a URL's table reference,
        // nor a file's e-tag: the sink uses neither).
        (config.table_paths.iter())
            .map(|u| u.to_string())
            .collect::<Vec<_>>(),
        (config.file_group.files().iter())
            .map(|f| (f.object_meta.location.to_string(), f.object_meta.size))
            .collect::<Vec<_>>(),
        config.table_partition_cols,
        config.keep_partition_by_columns,
        config.insert_op,
        config.file_extension,
        config.file_output_mode,
        config.output_schema,
    );
    let order = exec.sort_order().as_ref().map(|o| {
        (o.iter())
            .map(|r| PhysicalSortExpr::from(r.clone()).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    });
    (text, sink.options().clone(), sink.kind().clone(), order)
}

#[test]
fn the_physical_codec_round_trips_the_sink_of_copy_to() {
    let (rt, ctx) = (runtime(), session());
    let dir = std::env::temp_dir().join(format!("npy-sink-codec-{}", std::process::id()));
    let query = "SELECT * FROM (VALUES (1, 2.5, 'a', CAST(1.25 AS DECIMAL(10, 2)))) \
                 AS t(id, x, s, d)";
    let cases = [
        (
            format!(
                "COPY ({query}) TO '{}/a.npz' OPTIONS ('member' 'rec', 'nulls' 'fill=-1', \
                 'nulls.x' 'nan', 'decimals' 'scaled', 'string_width.s' '7')",
                dir.display()
            ),
            Kind::Member("rec".into()),
        ),
        (
            format!(
                "COPY ({query}) TO '{}/b.npz' OPTIONS ('layout' 'columns', 'decimals.d' 'f8')",
                dir.display()
            ),
            Kind::Columns,
        ),
        (
            format!(
                "COPY ({query}) TO '{}/parts/' STORED AS NPY PARTITIONED BY (s) \
                 OPTIONS ('nulls' 'mask', 'string_width' '3')",
                dir.display()
            ),
            Kind::Npy,
        ),
    ];
    for (sql, kind) in cases {
        let plan = rt
            .block_on(async { ctx.sql(&sql).await?.create_physical_plan().await })
            .unwrap();
        let back = physical_round_trip(&ctx, plan.clone());
        let (before, after) = (sink_of(&plan), sink_of(&back));
        assert_eq!(after, before, "{sql}");
        assert_eq!(before.2, kind, "{sql}");
        assert_ne!(before.1, NpyWriteOptions::new(), "{sql}");
        assert!(
            before.0.contains(&dir.display().to_string()),
            "{}",
            before.0
        );
        assert_eq!(
            displayable(back.as_ref()).indent(true).to_string(),
            displayable(plan.as_ref()).indent(true).to_string(),
            "{sql}"
        );
    }
    assert!(!dir.exists(), "planning wrote nothing");
}

#[test]
fn the_sink_of_an_insert_carries_the_tables_files_and_order() {
    let (rt, ctx) = (runtime(), session());
    let dir = std::env::temp_dir().join(format!("npy-insert-codec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    npy_serde::to_path(dir.join("first.npy"), &[3i64, 1, 2]).unwrap();
    let plan = rt
        .block_on(async {
            let ddl = format!(
                "CREATE EXTERNAL TABLE t (value BIGINT) STORED AS NPY WITH ORDER (value) \
                 LOCATION '{}/' OPTIONS ('nulls' 'fill=0')",
                dir.display()
            );
            ctx.sql(&ddl).await?.collect().await?;
            let insert = "INSERT INTO t VALUES (5), (4)";
            ctx.sql(insert).await?.create_physical_plan().await
        })
        .unwrap();
    let back = physical_round_trip(&ctx, plan.clone());
    let (before, after) = (sink_of(&plan), sink_of(&back));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(after, before);
    // The table's one file, its write options (with the declared order, which the sink
    // verifies and records) and its order travel.
    assert!(before.0.contains("first.npy"), "{}", before.0);
    assert_eq!(
        before.1,
        NpyWriteOptions::new()
            .set("nulls", "fill=0")
            .unwrap()
            .sorted_by([crate::SortColumn::asc("value")])
    );
    let order = before.3.clone().unwrap_or_default();
    assert!(order.starts_with("value@0 ASC"), "{before:?}");
}

#[test]
fn the_logical_codec_carries_the_formats_and_a_tables_write_options() {
    let (rt, ctx) = (runtime(), session());
    let codec = NpyLogicalCodec::default();
    let task = ctx.task_ctx();
    let read = NpyReadOptions::new().max_header_size(5000);
    let write = NpyWriteOptions::new()
        .set("nulls", "fill=-1")
        .unwrap()
        .set("string_width.s", "4")
        .unwrap();
    let factories: [Arc<dyn FileFormatFactory>; 2] = [
        Arc::new(NpyFormatFactory::new(read.clone()).with_write_options(write.clone())),
        Arc::new(NpzFormatFactory::new(read.clone(), write.clone())),
    ];
    for factory in factories {
        let mut buf = Vec::new();
        codec
            .try_encode_file_format(&mut buf, factory.clone())
            .unwrap();
        let back = codec.try_decode_file_format(&buf, &task).unwrap();
        assert_eq!(back.get_ext(), factory.get_ext());
        let (options, written) = match back.downcast_ref::<NpyFormatFactory>() {
            Some(f) => (f.options(), f.write_options()),
            None => {
                let f = back.downcast_ref::<NpzFormatFactory>().unwrap();
                (f.options(), f.write_options())
            }
        };
        assert_eq!(format!("{options:?}"), format!("{read:?}"));
        assert_eq!(written, &write);
    }

    // A STORED AS NPY table's write options (for its INSERTs) travel with it.
    let dir = std::env::temp_dir().join(format!("npy-table-codec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    npy_serde::to_path(dir.join("a.npy"), &[1i64, 2]).unwrap();
    let provider = rt
        .block_on(async {
            let ddl = format!(
                "CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '{}/' \
                 OPTIONS ('nulls' 'nan', 'decimals' 'f8')",
                dir.display()
            );
            ctx.sql(&ddl).await?.collect().await?;
            ctx.table_provider("t").await
        })
        .unwrap();
    let (_, back) = table_round_trip(&ctx, NpyTable::try_wrap(&provider).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let back = back.downcast_ref::<NpyTable>().unwrap();
    let want = NpyWriteOptions::new()
        .set("nulls", "nan")
        .unwrap()
        .set("decimals", "f8")
        .unwrap();
    assert_eq!(back.write_options(), &want);
}

/// The directory of a test's table (`label` its own).
fn part_dir(label: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("npy-part-codec-{label}-{}", std::process::id()))
}

/// A table of hive partitions `p=a/`, `p=b/` (files sorted by `value`) in the directory
/// `label`, created by `ddl` (`{dir}` its location), as the client wraps it.
fn partitioned_table(
    rt: &tokio::runtime::Runtime,
    ctx: &SessionContext,
    label: &str,
    ddl: &str,
) -> NpyTable {
    let dir = part_dir(label);
    for (p, values) in [("a", [1i64, 4, 9]), ("b", [2, 3, 10])] {
        std::fs::create_dir_all(dir.join(format!("p={p}"))).unwrap();
        npy_serde::to_path(dir.join(format!("p={p}/f.npy")), &values).unwrap();
    }
    let provider = rt
        .block_on(async {
            let ddl = ddl.replace("{dir}", &dir.display().to_string());
            ctx.sql(&ddl).await?.collect().await?;
            ctx.table_provider("t").await
        })
        .unwrap();
    NpyTable::try_wrap(&provider).unwrap()
}

/// `table` encoded by the logical codec (its bytes) and decoded again.
fn table_round_trip(ctx: &SessionContext, table: NpyTable) -> (Vec<u8>, Arc<dyn TableProvider>) {
    let codec = NpyLogicalCodec::default();
    let table: Arc<dyn TableProvider> = Arc::new(table);
    let name = TableReference::bare("t");
    let mut buf = Vec::new();
    codec
        .try_encode_table_provider(&name, table.clone(), &mut buf)
        .unwrap();
    let back = codec
        .try_decode_table_provider(&buf, &name, table.schema(), &ctx.task_ctx())
        .unwrap();
    (buf, back)
}

/// The scan a table plans (all columns), as plans show it, and its output ordering.
fn scan_of(
    rt: &tokio::runtime::Runtime,
    ctx: &SessionContext,
    table: &dyn TableProvider,
) -> (String, Option<String>) {
    let state = ctx.state();
    let scan = rt.block_on(table.scan(&state, None, &[], None)).unwrap();
    let ordering = (scan.properties().output_ordering()).map(|o| o.to_string());
    (
        displayable(scan.as_ref()).indent(true).to_string(),
        ordering,
    )
}

#[test]
fn a_decoded_table_keeps_its_partition_columns_and_declared_order() {
    let rt = runtime();
    for (ddl, order) in [
        (
            "CREATE EXTERNAL TABLE t STORED AS NPY PARTITIONED BY (p) WITH ORDER (value DESC) \
             LOCATION '{dir}/'",
            "value@0 DESC",
        ),
        (
            "CREATE EXTERNAL TABLE t STORED AS NPY PARTITIONED BY (p) LOCATION '{dir}/' \
             OPTIONS ('sort_order' 'value')",
            "value@0 ASC NULLS LAST",
        ),
        (
            // The partitions inferred from the directories.
            "CREATE EXTERNAL TABLE t STORED AS NPY WITH ORDER (value ASC) LOCATION '{dir}/'",
            "value@0 ASC NULLS LAST",
        ),
    ] {
        let ctx = session();
        let table = partitioned_table(&rt, &ctx, "order", ddl);
        let (options, partitions) = (table.options().clone(), table.partition_columns().to_vec());
        assert_eq!(partitions, ["p"], "{ddl}");
        assert_eq!(options.sort_order().len(), 1, "{ddl}");
        let before = scan_of(&rt, &ctx, &table);
        let (_, back) = table_round_trip(&ctx, table);
        let back_table = back.downcast_ref::<NpyTable>().unwrap();
        assert_eq!(back_table.partition_columns(), partitions, "{ddl}");
        assert_eq!(
            format!("{:?}", back_table.options()),
            format!("{options:?}"),
            "{ddl}"
        );
        let after = scan_of(&rt, &ctx, back.as_ref());
        assert_eq!(after, before, "{ddl}");
        let ordering = after.1.unwrap_or_default();
        assert!(ordering.starts_with(order), "{ddl}: {ordering}");
        // The decoded table answers as the client's, partition values and all.
        let answer = || {
            let q = "SELECT p, value FROM t WHERE p = 'b' OR value > 3 ORDER BY value";
            let got = rt
                .block_on(async { ctx.sql(q).await?.collect().await })
                .unwrap_or_else(|e| panic!("{ddl}: {e}"));
            let text = datafusion::arrow::util::pretty::pretty_format_batches(&got)
                .unwrap()
                .to_string();
            (text.lines().filter(|l| l.starts_with("| ")).skip(1))
                .map(|l| l.split_whitespace().collect::<String>())
                .collect::<Vec<_>>()
        };
        let want = answer();
        assert_eq!(
            want,
            ["|b|2|", "|b|3|", "|a|4|", "|a|9|", "|b|10|"],
            "{ddl}"
        );
        ctx.deregister_table("t").unwrap();
        ctx.register_table("t", back).unwrap();
        assert_eq!(answer(), want, "{ddl}");
    }
    let _ = std::fs::remove_dir_all(part_dir("order"));
}

/// Hostile or foreign bytes under the table's tag fail with an error, never a panic: every
/// truncation and every flipped byte of a real message, partition columns the schema does
/// not end in, and a message of another version.
#[test]
fn a_table_message_it_cannot_read_is_refused() {
    let rt = runtime();
    let ctx = session();
    let table = partitioned_table(
        &rt,
        &ctx,
        "hostile",
        "CREATE EXTERNAL TABLE t STORED AS NPY PARTITIONED BY (p) LOCATION '{dir}/' \
         OPTIONS ('sort_order' 'value')",
    );
    let schema = table.schema();
    let (buf, _) = table_round_trip(&ctx, table);
    let codec = NpyLogicalCodec::default();
    let name = TableReference::bare("t");
    let task = ctx.task_ctx();
    let decode = |bytes: &[u8], schema: arrow_schema::SchemaRef| {
        codec.try_decode_table_provider(bytes, &name, schema, &task)
    };
    for n in TABLE_TAG.len()..buf.len() {
        let _ = decode(&buf[..n], schema.clone());
        let mut flipped = buf.clone();
        flipped[n] ^= 0xa5;
        let _ = decode(&flipped, schema.clone());
    }
    // Partition columns that are not the schema's last columns.
    let mut proto: TableProto = TableProto::decode(&buf[TABLE_TAG.len()..]).unwrap();
    for bad in [
        vec!["value".to_string()],
        vec!["q".into()],
        vec!["p".into(); 3],
    ] {
        proto.partition_columns = bad.clone();
        let mut bytes = TABLE_TAG.to_vec();
        proto.encode(&mut bytes).unwrap();
        let e = decode(&bytes, schema.clone()).unwrap_err().to_string();
        assert!(
            e.contains("malformed") && e.contains("partition column"),
            "{bad:?}: {e}"
        );
    }
    // A table of version 2 (which had no partition columns).
    let mut old = b"\0npy-serde/table/2\0".to_vec();
    old.extend_from_slice(&buf[TABLE_TAG.len()..]);
    let e = decode(&old, schema.clone()).unwrap_err().to_string();
    assert!(
        e.contains("\"table/2\"") && e.contains("table/3") && e.contains("same build"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(part_dir("hostile"));
}

#[test]
fn the_table_rule_puts_a_copys_options_in_its_format() {
    let (rt, ctx) = (runtime(), session());
    let copy = |options: &str| {
        let sql = format!("COPY (SELECT 1 AS v) TO '/nowhere/x.npz' {options}");
        rt.block_on(async {
            Ok::<_, DataFusionError>(ctx.sql(&sql).await?.into_unoptimized_plan())
        })
        .unwrap()
    };
    let plan = copy("OPTIONS ('member' 'm', 'nulls.v' 'fill=7', 'format.layout' 'rows')");
    let plan = NpyTableRule
        .analyze(plan, &ConfigOptions::default())
        .unwrap();
    let LogicalPlan::Copy(copy_to) = &plan else {
        panic!("{plan}")
    };
    let factory = file_type_to_format(&copy_to.file_type).unwrap();
    let factory = factory.downcast_ref::<NpzFormatFactory>().unwrap();
    assert_eq!(factory.options().member.as_deref(), Some("m"));
    assert_eq!(
        factory.write_options(),
        &NpyWriteOptions::new().set("nulls.v", "fill=7").unwrap()
    );
    // A bad option fails on the client, naming it.
    let plan = copy("OPTIONS ('nulls' 'zero')");
    let e = NpyTableRule
        .analyze(plan, &ConfigOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("nulls") && e.contains("zero"), "{e}");
    // The statement's own options do not reach the scheduler: refused, saying so.
    let plan = copy("OPTIONS ('single_file_output' 'true')");
    let e = NpyTableRule
        .analyze(plan, &ConfigOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("single_file_output") && e.contains("Ballista"),
        "{e}"
    );
}

fn limits(o: &NpyReadOptions) -> Vec<(String, Option<String>)> {
    o.entries()
        .into_iter()
        .filter(|e| e.key.starts_with("max_") && e.key.ends_with("_size"))
        .map(|e| (e.key, e.value))
        .collect()
}

#[test]
fn an_executor_ceiling_lowers_the_clients_limits_never_raises_them() {
    let codec = NpyPhysicalCodec::default().with_read_ceiling(Some(20_000), Some(5000));
    let asked = NpyReadOptions::new()
        .max_header_size(50_000)
        .max_data_size(100);
    let got = limits(&codec.limit_options(asked).unwrap());
    assert!(
        got.contains(&("max_header_size".into(), Some("20000".into()))),
        "{got:?}"
    );
    assert!(
        got.contains(&("max_data_size".into(), Some("100".into()))),
        "{got:?}"
    );
    // The client set no data limit: the executor's applies.
    let got = limits(&codec.limit_options(NpyReadOptions::new()).unwrap());
    assert!(
        got.contains(&("max_data_size".into(), Some("5000".into()))),
        "{got:?}"
    );
    // Without a ceiling the client's options pass as they are.
    let plain = NpyPhysicalCodec::default();
    let asked = NpyReadOptions::new().max_header_size(50_000);
    assert_eq!(
        limits(&plain.limit_options(asked.clone()).unwrap()),
        limits(&asked)
    );
}

#[test]
fn the_physical_codec_round_trips_the_topk_prefilter() {
    let dir = part_dir("prefilter");
    std::fs::create_dir_all(&dir).unwrap();
    npy_serde::to_path(dir.join("v.npy"), &[3.0f64, 1.0, 2.0]).unwrap();
    let rt = runtime();
    let ctx = SessionContext::new_with_state(crate::with_topk_prefilter(session().state()));
    let path = dir.to_str().unwrap();
    rt.block_on(crate::NpySessionExt::register_npy(
        &ctx,
        "t",
        path,
        NpyReadOptions::new(),
    ))
    .unwrap();
    let sql = "SELECT value FROM t ORDER BY value DESC NULLS LAST LIMIT 2";
    let plan = rt
        .block_on(async { ctx.sql(sql).await?.create_physical_plan().await })
        .unwrap();
    let text = |p: &Arc<dyn ExecutionPlan>| displayable(p.as_ref()).indent(true).to_string();
    assert!(text(&plan).contains("TopKPrefilterExec: expr=[value@0 DESC NULLS LAST], fetch=2"));
    let decoded = physical_round_trip(&ctx, Arc::clone(&plan));
    // The sort and the prefilter as they were (the scan's dynamic filter travels as its
    // current value, `true`).
    let top = |p: &Arc<dyn ExecutionPlan>| text(p).lines().take(2).collect::<Vec<_>>().join("\n");
    assert_eq!(top(&decoded), top(&plan));
    let got = rt
        .block_on(datafusion::physical_plan::collect(decoded, ctx.task_ctx()))
        .unwrap();
    let got = datafusion::arrow::util::pretty::pretty_format_batches(&got).unwrap();
    assert!(got.to_string().contains("| 3.0   |\n| 2.0   |"), "{got}");

    // A message with no rows to keep, or no order, is refused.
    let codec = NpyPhysicalCodec::default();
    let input: Arc<dyn ExecutionPlan> = Arc::new(datafusion::physical_plan::empty::EmptyExec::new(
        plan.schema(),
    ));
    for proto in [
        super::super::prefilter::PrefilterProto::default(),
        super::super::prefilter::PrefilterProto {
            fetch: 3,
            ..Default::default()
        },
    ] {
        let mut buf = PREFILTER_TAG.to_vec();
        proto.encode(&mut buf).unwrap();
        let err = codec
            .try_decode(
                &buf,
                &[Arc::clone(&input)],
                &ctx.task_ctx(),
                &datafusion_proto::physical_plan::DefaultPhysicalProtoConverter {},
            )
            .unwrap_err();
        assert!(err.to_string().contains("malformed message"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
