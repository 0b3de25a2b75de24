//! `npy-executor`: a Ballista executor that runs `.npy` scans (feature `ballista`): Ballista's
//! executor process with npy-serde's codecs (`npy_datafusion::ballista::executor_config`). It
//! registers with the scheduler (`npy-scheduler`) and serves its shuffle output over Arrow
//! Flight on `--port`. The deployment guide is in the `npy_datafusion::ballista` docs.
//!
//! ```text
//! npy-executor --scheduler sched.example:50050 --bind 0.0.0.0 --external-host node1 \
//!     --port 50051 --grpc-port 50052 --work-dir /scratch/npy --concurrent-tasks 8
//! ```
//!
//! Its log goes to stderr, filtered by `RUST_LOG` as Ballista's own executor reads it
//! (warnings and errors when unset); `--log-tasks` adds Ballista's line per task it runs
//! (`Execute task  : [TID JOB/STAGE.ATTEMPT/TASK.ATTEMPT]`) and per task that failed (`Task N
//! failed: ERROR`): which executor ran what.
//!
//! `--store URL` (repeatable) registers the
//! object store of a bucket (`s3://BUCKET/`) or host (`http(s)://HOST/`) the cluster's
//! tables live in, with credentials and endpoint from this process's `AWS_*` environment
//! (`npy_datafusion::ballista::executor_config_with_stores`); the scheduler needs the same
//! `--store`s, and so does every executor:
//!
//! ```text
//! AWS_REGION=eu-west-1 AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \
//!     npy-executor --scheduler sched.example:50050 --store s3://shards/
//! ```

use std::process::ExitCode;
use std::sync::Arc;

use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use clap::Parser;
use npy_datafusion::ballista::NpyPhysicalCodec;
use npy_datafusion::MemoryLimit;

#[path = "../cluster_log.rs"]
mod cluster_log;
#[path = "../cluster_stores.rs"]
mod cluster_stores;

/// A Ballista executor for SQL over .npy tables (npy-serde's codecs): registers with the
/// scheduler and runs the tasks it is given. Every executor must read a table's files at the
/// same paths as the scheduler (a shared filesystem) or through the same object stores
/// (--store).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The scheduler's HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:50050", value_name = "HOST:PORT")]
    scheduler: String,
    /// The address to listen on (0.0.0.0 for every interface).
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    bind: String,
    /// The host name the scheduler, the other executors and clients reach this one at
    /// (default: --bind).
    #[arg(long, value_name = "HOST")]
    external_host: Option<String>,
    /// The Arrow Flight port others fetch this executor's shuffle output from.
    #[arg(long, default_value_t = 50051)]
    port: u16,
    /// The executor's gRPC port (the scheduler pushes tasks to it).
    #[arg(long, default_value_t = 50052)]
    grpc_port: u16,
    /// Where shuffle output is written (default: a new temporary directory).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<String>,
    /// Tasks run at once (default: the machine's cores).
    #[arg(long, value_name = "N")]
    concurrent_tasks: Option<usize>,
    /// Seconds between heartbeats to the scheduler (shorter than its --executor-timeout).
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    heartbeat_interval: u64,
    /// Memory the executor's tasks share (256MiB, 8GiB, ...), split evenly over
    /// --concurrent-tasks; sorts and aggregations spill to --work-dir past it (default: a
    /// fraction of the machine's or cgroup's memory).
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
    /// The largest .npy header this executor reads, whatever a table's options ask for.
    #[arg(long, value_name = "BYTES")]
    max_header_size: Option<u64>,
    /// The largest array data per file this executor reads, whatever a table's options ask
    /// for (default: the table's limit).
    #[arg(long, value_name = "BYTES")]
    max_data_size: Option<u64>,
    /// Log a line per task to stderr (Ballista's `Execute task` line, and `Task N failed`
    /// with the error of one that failed, whatever RUST_LOG says): which job, stage and task
    /// this executor ran.
    #[arg(long)]
    log_tasks: bool,
    #[command(flatten)]
    stores: cluster_stores::StoreArgs,
}

fn main() -> ExitCode {
    ignore_file_size_signal();
    let a = Args::parse();
    // The task lines: the executor server's (tasks pushed by the scheduler, Ballista's
    // default), the execution loop's (pulled), and the crate root's line per failed task
    // (`Task N failed: ERROR`); the crate's other modules' info lines (start-up, clean-up,
    // handshakes) stay out.
    let tasks: &[&str] = match a.log_tasks {
        true => &[
            "ballista_executor=info",
            "ballista_executor::executor_process=warn",
            "ballista_executor::flight_service=warn",
            "ballista_executor::health=warn",
            "ballista_executor::standalone=warn",
        ],
        false => &[],
    };
    cluster_log::init("npy-executor", tasks);
    match run(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("npy-executor: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Ignores SIGXFSZ, as PostgreSQL does for the same reason: under a file-size limit
/// (RLIMIT_FSIZE: `ulimit -f`, `prlimit --fsize`, a container's or batch system's limits) a write
/// past it then fails with EFBIG ("File too large"), like a full disk, instead of the signal's
/// default action killing the process. A shuffle or spill write over the limit fails its task
/// with that I/O error, which Ballista's scheduler retries and the client is told of; killed, the
/// executor would take its other running tasks and every shuffle output it holds with it, with
/// no word in its log of why.
fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread starts; no handler
    // runs, and no memory is touched.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let (scheduler_host, scheduler_port) = a
        .scheduler
        .rsplit_once(':')
        .ok_or_else(|| format!("--scheduler {}: expected HOST:PORT", a.scheduler))?;
    let scheduler_port: u16 = scheduler_port
        .parse()
        .map_err(|e| format!("--scheduler {}: {e}", a.scheduler))?;
    let memory = match &a.memory_limit {
        Some(text) => Some(
            text.parse::<MemoryLimit>()
                .map_err(|e| format!("--memory-limit: {e}"))?
                .bytes() as u64,
        ),
        None => None,
    };
    let mut config = ExecutorProcessConfig {
        bind_host: a.bind.clone(),
        external_host: a.external_host.clone(),
        port: a.port,
        grpc_port: a.grpc_port,
        scheduler_host: scheduler_host.to_string(),
        scheduler_port,
        work_dir: a.work_dir.clone(),
        executor_heartbeat_interval_seconds: a.heartbeat_interval.max(1),
        memory_pool_size: memory,
        ..Default::default()
    };
    if let Some(n) = a.concurrent_tasks {
        config.vcores = n.max(1);
    }
    let mut config = {
        let stores = a.stores.stores()?;
        if !stores.is_empty() {
            eprintln!("npy-executor: object stores {stores:?}");
        }
        npy_datafusion::ballista::executor_config_with_stores(config, stores)
    };
    if a.max_header_size.is_some() || a.max_data_size.is_some() {
        let codec =
            NpyPhysicalCodec::default().with_read_ceiling(a.max_header_size, a.max_data_size);
        config.override_physical_codec = Some(Arc::new(codec));
    }
    eprintln!(
        "npy-executor {}: flight {}:{}, grpc {}:{}, scheduler {}, work dir {}",
        config.executor_id,
        a.bind,
        a.port,
        a.bind,
        a.grpc_port,
        a.scheduler,
        a.work_dir
            .as_deref()
            .unwrap_or("(a new temporary directory)")
    );
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(start_executor_process(Arc::new(config)))?;
    Ok(())
}
