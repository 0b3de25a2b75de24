//! A Ballista executor that runs `.npy` scans: Ballista's executor process with this crate's
//! codecs (`npy_serde::ballista::executor_config`).
//!
//! ```text
//! cargo run --release --features ballista --example ballista_executor -- 127.0.0.1:50050 50051
//! ```
//! Arguments: the scheduler's `host:port` (default `127.0.0.1:50050`) and the port to serve
//! on (default 50051; its gRPC port is the next one). The executor binds to 127.0.0.1.

use std::sync::Arc;

use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let scheduler = args.next().unwrap_or_else(|| "127.0.0.1:50050".into());
    let port: u16 = args.next().map_or(Ok(50051), |p| p.parse())?;
    let (host, scheduler_port) = scheduler
        .rsplit_once(':')
        .ok_or("the scheduler is host:port")?;
    let config = ExecutorProcessConfig {
        bind_host: "127.0.0.1".into(),
        port,
        grpc_port: port + 1,
        scheduler_host: host.into(),
        scheduler_port: scheduler_port.parse()?,
        ..Default::default()
    };
    let config = npy_serde::ballista::executor_config(config);
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(start_executor_process(Arc::new(config)))?;
    Ok(())
}
