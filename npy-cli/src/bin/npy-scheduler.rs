//! `npy-scheduler`: a Ballista scheduler that plans SQL over `.npy` tables (feature
//! `ballista`): Ballista's scheduler with npy-serde's codecs
//! (`npy_datafusion::ballista::scheduler_config`). Clients connect with
//! `npy_datafusion::ballista::remote("df://HOST:PORT", ...)`; executors (`npy-executor`) register
//! with it. The deployment guide is in the `npy_datafusion::ballista` docs.
//!
//! ```text
//! npy-scheduler --bind 0.0.0.0 --port 50050 --external-host sched.example
//! ```
//!
//! Its log goes to stderr, filtered by `RUST_LOG` as Ballista's own scheduler reads it
//! (`RUST_LOG=info`: jobs submitted, stages planned, executors registered and lost; warnings
//! and errors when unset).
//!
//! `--store URL` (repeatable) registers the
//! object store of a bucket (`s3://BUCKET/`) or host (`http(s)://HOST/`) the cluster's
//! tables live in, with credentials and endpoint from this process's `AWS_*` environment
//! (`npy_datafusion::ballista::scheduler_config_with_stores`): the scheduler lists the tables'
//! files there. Every executor needs the same `--store`s:
//!
//! ```text
//! AWS_REGION=eu-west-1 AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \
//!     npy-scheduler --bind 0.0.0.0 --store s3://shards/
//! ```

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::{create_scheduler, start_grpc_service};
use clap::Parser;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};

#[path = "../cluster_log.rs"]
mod cluster_log;
#[path = "../cluster_partitions.rs"]
mod cluster_partitions;
#[path = "../cluster_stores.rs"]
mod cluster_stores;

/// A Ballista scheduler for SQL over .npy tables (npy-serde's codecs). Executors
/// (npy-executor --scheduler HOST:PORT) register with it; clients connect to df://HOST:PORT.
/// Tables on object stores need their stores registered here and on every executor
/// (--store).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The address to listen on (0.0.0.0 for every interface).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    bind: String,
    /// The gRPC port clients and executors connect to.
    #[arg(long, default_value_t = 50050)]
    port: u16,
    /// The host name executors and clients reach this scheduler at (default: --bind).
    #[arg(long, value_name = "HOST")]
    external_host: Option<String>,
    /// An executor whose last heartbeat is older than this is dead: its tasks, and the
    /// stages whose output it held, run again on the others (longer than the executors'
    /// --heartbeat-interval).
    #[arg(long, default_value_t = 180, value_name = "SECS")]
    executor_timeout: u64,
    /// How often to look for executors past --executor-timeout.
    #[arg(long, default_value_t = 15, value_name = "SECS")]
    expire_interval: u64,
    /// With no executor left, fail the running jobs after this long (default:
    /// --executor-timeout).
    #[arg(long, value_name = "SECS")]
    no_executors_grace: Option<u64>,
    /// Attempts of one task before its job fails.
    #[arg(long, default_value_t = 4)]
    task_max_failures: usize,
    /// How many partitions a job is planned with when its client left Ballista's default
    /// (16): `slots`, as many as the registered executors' task slots (their
    /// --concurrent-tasks summed); `client`, the client's 16; or a number. A client that set
    /// its own (SET datafusion.execution.target_partitions = 8) keeps it. Each partition of
    /// each stage is a task: more partitions than slots run in turns.
    #[arg(long, default_value = "slots", value_name = "slots|client|N")]
    partitions: cluster_partitions::Partitions,
    #[command(flatten)]
    stores: cluster_stores::StoreArgs,
}

fn main() -> ExitCode {
    let a = Args::parse();
    cluster_log::init("npy-scheduler", &[]);
    match run(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("npy-scheduler: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let addr: SocketAddr = format!("{}:{}", a.bind, a.port)
        .parse()
        .map_err(|e| format!("--bind {} --port {}: {e}", a.bind, a.port))?;
    let mut config = SchedulerConfig::default()
        .with_hostname(a.external_host.clone().unwrap_or_else(|| a.bind.clone()))
        .with_port(a.port)
        .with_no_executors_grace_period_seconds(a.no_executors_grace.unwrap_or(a.executor_timeout));
    config.bind_host = a.bind.clone();
    config.executor_timeout_seconds = a.executor_timeout;
    config.expire_dead_executor_interval_seconds = a.expire_interval.max(1);
    config.task_max_failures = a.task_max_failures.max(1);
    let mut config = {
        let stores = a.stores.stores()?;
        if !stores.is_empty() {
            eprintln!("npy-scheduler: object stores {stores:?}");
        }
        npy_datafusion::ballista::scheduler_config_with_stores(config, stores)
    };
    let slots = Arc::new(AtomicUsize::new(0));
    cluster_partitions::plan_with(&mut config, a.partitions, slots.clone());
    config.validate()?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let cluster = BallistaCluster::new_from_config(&config).await?;
        let scheduler =
            create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, Arc::new(config))
                .await?;
        cluster_partitions::track_slots(&scheduler, slots);
        eprintln!("npy-scheduler: listening on {addr}");
        start_grpc_service(addr, scheduler).await
    })?;
    Ok(())
}
