//! SQL over `.npy` files that keep a foreign Arrow type in their field titles (the Arrow
//! bridge's `foreign` restore, seen through a table).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Int64Type, Time64MicrosecondType};
use arrow_array::{ArrayRef, Decimal128Array, Int32Array, RecordBatch, Time64MicrosecondArray};
use arrow_schema::DataType;
use npy_arrow::{BatchWriterBuilder, NullPolicy};

use crate::{NpyReadOptions, NpySessionExt};

fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(cols).unwrap()
}

fn write(b: &RecordBatch, o: &BatchWriterBuilder) -> npy_serde::Result<Vec<u8>> {
    let mut w = o.writer(std::io::Cursor::new(Vec::new()), &b.schema())?;
    w.write(b)?;
    Ok(w.finish()?.into_inner())
}

fn dec128(v: Vec<Option<i128>>, p: u8, s: i8) -> ArrayRef {
    Arc::new(
        Decimal128Array::from(v)
            .with_precision_and_scale(p, s)
            .unwrap(),
    )
}

/// SQL over a titled file with masks: the restored types in the table's schema and in its
/// batches alike, the masks folded into the nulls (also when only the column is projected).
#[test]
fn sql_over_a_titled_file_sees_the_restored_types() {
    use datafusion::prelude::SessionContext;
    let b = batch(vec![
        ("price", dec128(vec![Some(1999), None, Some(-5)], 12, 2)),
        (
            "n",
            Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
        ),
        (
            "tod",
            Arc::new(Time64MicrosecondArray::from(vec![10, 20, 30])),
        ),
    ]);
    let dir = std::env::temp_dir().join(format!("foreign-sql-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.npy");
    std::fs::write(
        &path,
        write(&b, &BatchWriterBuilder::new().nulls(NullPolicy::Mask)).unwrap(),
    )
    .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let got = rt.block_on(async {
        let ctx = SessionContext::new();
        ctx.register_npy("t", path.to_str().unwrap(), NpyReadOptions::new())
            .await?;
        let df = ctx
            .sql("SELECT sum(price) AS s, count(n) AS c, max(tod) AS m, count(*) AS k FROM t")
            .await?;
        let all = df.collect().await?;
        let only = ctx
            .sql("SELECT n FROM t WHERE n IS NULL")
            .await?
            .collect()
            .await?;
        Ok::<_, datafusion::error::DataFusionError>((all, only))
    });
    std::fs::remove_dir_all(&dir).unwrap();
    let (all, only) = got.unwrap();
    let r = &all[0];
    assert_eq!(r.column(0).as_primitive::<Decimal128Type>().value(0), 1994);
    assert!(matches!(
        r.schema().field(0).data_type(),
        DataType::Decimal128(_, 2)
    ));
    assert_eq!(r.column(1).as_primitive::<Int64Type>().value(0), 2);
    assert_eq!(
        r.column(2).as_primitive::<Time64MicrosecondType>().value(0),
        30
    );
    assert_eq!(r.column(3).as_primitive::<Int64Type>().value(0), 3);
    assert_eq!(only.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
}
