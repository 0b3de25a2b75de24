//! The sink on an object store that is not the local file system: each file is written in the
//! temporary directory and uploaded (a large one in parts), and the object is the bytes the
//! same statement writes to a local path; a failing statement uploads nothing.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::prelude::{SessionConfig, SessionContext};
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;

/// A session of one partition with the formats and an in-memory store at `memory://bucket`.
fn session_with_store() -> (SessionContext, Arc<InMemory>) {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    crate::register_npy_format(&ctx).unwrap();
    let store = Arc::new(InMemory::new());
    let url = ObjectStoreUrl::parse("memory://bucket").unwrap();
    ctx.register_object_store(url.as_ref(), store.clone());
    (ctx, store)
}

async fn run(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

async fn object(store: &InMemory, key: &str) -> Option<Vec<u8>> {
    match store.get(&ObjectPath::from(key)).await {
        Ok(r) => Some(r.bytes().await.unwrap().to_vec()),
        Err(object_store::Error::NotFound { .. }) => None,
        Err(e) => panic!("{key}: {e}"),
    }
}

#[test]
fn copy_uploads_the_bytes_of_a_local_copy() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (ctx, store) = session_with_store();
        // 1.2 million rows: 9.6 MB of int64, uploaded in parts.
        let n = 1_200_000i64;
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("n{}", i % 1000)),
        ));
        let big = RecordBatch::try_from_iter([("id", ids), ("name", names)]).unwrap();
        ctx.register_batch("big", big).unwrap();
        let dir = std::env::temp_dir().join(format!("npy-df-upload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, query, options) in [
            ("small.npy", "SELECT id FROM big WHERE id < 1000", ""),
            ("big.npy", "SELECT id, name FROM big", ""),
            (
                "big.npz",
                "SELECT id, name FROM big",
                "OPTIONS ('layout' 'columns')",
            ),
        ] {
            let local = dir.join(name);
            let copy = |to: &str| format!("COPY ({query}) TO '{to}' {options}");
            run(&ctx, &copy(local.to_str().unwrap())).await.unwrap();
            let remote = format!("memory://bucket/out/{name}");
            let done = run(&ctx, &copy(&remote)).await.unwrap();
            let rows = done[0]
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::UInt64Array>()
                .unwrap()
                .value(0);
            let uploaded = object(&store, &format!("out/{name}")).await.unwrap();
            assert_eq!(uploaded, std::fs::read(&local).unwrap(), "{name}");
            assert!(rows > 0, "{name}");
        }
        // A failing statement uploads nothing.
        let bad = "COPY (SELECT CAST(CASE WHEN id < 5000 THEN '1' ELSE 'x' END AS INT) AS v \
                   FROM big) TO 'memory://bucket/out/bad.npy'";
        assert!(run(&ctx, bad).await.is_err());
        assert_eq!(object(&store, "out/bad.npy").await, None);
        std::fs::remove_dir_all(&dir).unwrap();
        // No temporary file of the uploads is left.
        let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.contains("npy-datafusion-") && n.contains(&format!(".{}-", std::process::id()))
            })
            .collect();
        assert_eq!(left, Vec::<String>::new());
    });
}
