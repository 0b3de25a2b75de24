//! [`NpyDataFrameExt`]: `write_npy` on a DataFrame, the `COPY ... TO` of the DataFrame API (as
//! DataFusion's own `write_parquet` / `write_csv`).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use async_trait::async_trait;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::file_format::{format_as_file_type, FileFormatFactory};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::LogicalPlanBuilder;

use crate::{NpyFormatFactory, NpyReadOptions, NpyWriteOptions, NpzFormatFactory};

/// `write_npy` on a DataFusion `DataFrame`.
#[async_trait]
pub trait NpyDataFrameExt {
    /// Writes the frame's rows to `path` as `COPY (...) TO 'path'` does, with `options` (see
    /// the crate's [Writing](crate#writing-copy-to-and-insert-into)): a path ending in `.npz`
    /// (any case) is an archive (of the member `arr_0`, or of columns with
    /// [`TableLayout::Columns`](crate::TableLayout::Columns)), any other path with an extension
    /// a `.npy` file, and a path ending in `/` a directory of `.npy` files. Returns the
    /// statement's result: the count of rows written.
    ///
    /// ```
    /// use datafusion::prelude::SessionContext;
    /// use npy_datafusion::{NpyDataFrameExt, NpyWriteOptions};
    /// # let path = std::env::temp_dir().join(format!("df-write-npy-{}.npy", std::process::id()));
    /// let rt = tokio::runtime::Runtime::new()?;
    /// rt.block_on(async {
    ///     let ctx = SessionContext::new();
    ///     let df = ctx.sql("SELECT 1.5 AS x UNION ALL SELECT NULL").await?;
    ///     let options = NpyWriteOptions::new().set("nulls", "nan")?;
    ///     df.write_npy(path.to_str().unwrap(), options).await?;
    ///     #[derive(serde::Deserialize)]
    ///     struct Row { x: f64 }
    ///     let back: Vec<Row> = npy_serde::from_path_serde(&path)?;
    ///     // The two sides of a UNION ALL may arrive in either order.
    ///     assert_eq!(back.len(), 2);
    ///     assert!(back.iter().any(|r| r.x == 1.5) && back.iter().any(|r| r.x.is_nan()));
    ///     Ok::<_, Box<dyn std::error::Error>>(())
    /// })?;
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    async fn write_npy(self, path: &str, options: NpyWriteOptions) -> DfResult<Vec<RecordBatch>>;
}

#[async_trait]
impl NpyDataFrameExt for DataFrame {
    async fn write_npy(self, path: &str, options: NpyWriteOptions) -> DfResult<Vec<RecordBatch>> {
        let archive = std::path::Path::new(path)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("npz"));
        let factory: Arc<dyn FileFormatFactory> = if archive {
            Arc::new(NpzFormatFactory::new(NpyReadOptions::new(), options))
        } else {
            Arc::new(NpyFormatFactory::new(NpyReadOptions::new()).with_write_options(options))
        };
        let (state, plan) = self.into_parts();
        let plan = LogicalPlanBuilder::copy_to(
            plan,
            path.to_string(),
            format_as_file_type(factory),
            HashMap::new(),
            Vec::new(),
        )?
        .build()?;
        DataFrame::new(state, plan).collect().await
    }
}
