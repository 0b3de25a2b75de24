//! A Ballista scheduler that plans queries over `.npy` tables: Ballista's scheduler with this
//! crate's codecs (`npy_serde::ballista::scheduler_config`).
//!
//! ```text
//! cargo run --release --features ballista --example ballista_scheduler -- 127.0.0.1 50050
//! ```
//! Arguments: the address to bind (default 127.0.0.1) and the port (default 50050).

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let host = args.next().unwrap_or_else(|| "127.0.0.1".into());
    let port: u16 = args.next().map_or(Ok(50050), |p| p.parse())?;
    let mut config = SchedulerConfig::default()
        .with_hostname(host.clone())
        .with_port(port);
    config.bind_host = host.clone();
    let config = npy_serde::ballista::scheduler_config(config);
    let addr: SocketAddr = format!("{host}:{port}").parse()?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let cluster = BallistaCluster::new_from_config(&config).await?;
        start_server(cluster, addr, Arc::new(config)).await
    })?;
    Ok(())
}
