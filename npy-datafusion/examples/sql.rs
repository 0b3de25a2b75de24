//! SQL over a directory of `.npy` shards with DataFusion: register the directory as a table,
//! then query it as any other.
//!
//! ```sh
//! cargo run -p npy-datafusion --example sql [DIR]
//! ```
//!
//! Without a directory the example writes four shards of 250,000 records each. The `npy` tool
//! runs the same queries: `npy sql "SELECT .." DIR/`.

use datafusion::prelude::SessionContext;
use npy_datafusion::{NpyReadOptions, NpySessionExt};
use npy_serde::NpyRecord;
use serde::Serialize;

#[derive(Serialize, NpyRecord)]
struct Trip {
    id: i64,
    distance_km: f64,
    fare: f32,
    passengers: u8,
}

fn write_shards(dir: &std::path::Path) -> Result<(), npy_serde::Error> {
    std::fs::create_dir_all(dir)?;
    for shard in 0..4i64 {
        let trips: Vec<Trip> = (0..250_000i64)
            .map(|i| {
                let id = shard * 250_000 + i;
                Trip {
                    id,
                    distance_km: (id % 300) as f64 / 10.0,
                    fare: 3.0 + (id % 300) as f32 * 0.25,
                    passengers: (id % 4) as u8 + 1,
                }
            })
            .collect();
        npy_serde::to_path(dir.join(format!("trips-{shard}.npy")), &trips)?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => {
            let d = std::env::temp_dir().join("npy-datafusion-example-trips");
            write_shards(&d)?;
            d
        }
    };

    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let ctx = SessionContext::new();
        // Every .npy file of the directory, one dtype: a table (a file, a glob or `.npz`
        // members work the same; the options set limits for untrusted files).
        let table = format!("{}/", dir.display());
        ctx.register_npy("trips", &table, NpyReadOptions::new())
            .await?;
        ctx.sql(
            "SELECT passengers, count(*) AS trips, round(avg(distance_km), 2) AS avg_km, \
             sum(fare) AS fares FROM trips GROUP BY passengers ORDER BY passengers",
        )
        .await?
        .show()
        .await?;
        Ok::<_, datafusion::error::DataFusionError>(())
    })?;
    Ok(())
}
