//! Distributed SQL over `.npy` shards on [Apache Ballista](https://datafusion.apache.org/ballista/)
//! 55 (feature `ballista`): the [DataFusion scan](crate) of this crate, run by a
//! Ballista scheduler and its executors.
//!
//! Ballista sends plans between processes as protobuf, and its protobuf layer knows only the
//! built-in file formats (Parquet, CSV, JSON, Avro, Arrow). This module adds what a `.npy`
//! table needs:
//! - [`NpyLogicalCodec`]: the client's `.npy` tables ([`NpyTable`]: paths, file extension, read
//!   and write options, declared orders, hive partition columns) to the scheduler, which lists
//!   the files and plans the scan; and the
//!   `NPY` / `NPZ` format of a `COPY ... TO`;
//! - [`NpyPhysicalCodec`]: the scan node (file groups, byte ranges, projection, limit and the
//!   header/data limits of [`NpyReadOptions`](crate::NpyReadOptions)) from the
//!   scheduler to the executors; and the sink of `COPY ... TO` and `INSERT INTO`
//!   ([`NpySink`](crate::NpySink): the output, the [`NpyWriteOptions`](crate::NpyWriteOptions),
//!   the kind of file);
//! - [`NpyTableRule`]: on the client, each scan of a `.npy` listing table (from
//!   [`register_npy`](crate::NpySessionExt::register_npy), `read_npy` or
//!   `CREATE EXTERNAL TABLE ... STORED AS NPY`), and the table an `INSERT INTO` writes to,
//!   becomes an [`NpyTable`]; a `COPY ... TO`'s `OPTIONS` go into its format.
//!
//! Both codecs hand every other node to Ballista's own codecs.
//!
//! # Where the work goes
//! The scheduler groups a table's files into `target_partitions` groups (one task each), and
//! splits files of at least `datafusion.optimizer.repartition_file_min_size` bytes into byte
//! ranges, each reading the whole records whose first byte it holds. Tasks go to whichever
//! executor has a free slot. A hostile or truncated shard fails its task, and the query, with
//! this crate's error (the file, and the record, field and byte where it applies).
//!
//! # Partition columns
//! A `STORED AS NPY` table of hive partitions (`p=a/`, `p=b/`, ...) created on a Ballista
//! session ([`remote`], [`standalone`]) has its partition columns as plain `Utf8`, where one
//! process has DataFusion's `Dictionary(UInt16, Utf8)`. Ballista's remote shuffle reads
//! (block or Arrow Flight transport) deliver a dictionary column decoded, as its values'
//! type, while the plan and the reads of an executor's own shuffle files keep the
//! dictionary: a stage fed by two executors, such as the final aggregation of a `GROUP BY p`,
//! then failed with `RowConverter column schema mismatch, expected Dictionary(UInt16, Utf8)
//! got Utf8`. The values and answers are the same; `arrow_typeof(p)` says `Utf8`. A listing
//! table built by hand with dictionary partition columns keeps them, and the failure.
//!
//! # Writing: `COPY TO` and `INSERT INTO`
//! `COPY (query) TO 'out.npy' | 'out.npz' | 'dir/'` and `INSERT INTO` a `STORED AS NPY` (or
//! `NPZ`) directory table run on a cluster as in one process (the crate's
//! [Writing](crate#writing-copy-to-and-insert-into)): the same rows and options give the same
//! bytes. The client applies the statement's `OPTIONS` to the format ([`NpyTableRule`]; a bad
//! one fails there), the scheduler plans the sink, and the executor that runs the last stage
//! (which gathers the query's rows) writes every file:
//! - **Where**: through the object store that executor's own runtime has for the output URL.
//!   A local path is a path on the executor's machine: for the client (and the other
//!   executors) to see the files, it must be a shared filesystem, as for the shards. An
//!   `s3://` output needs its bucket's store on every executor (`npy-executor --store`,
//!   [`executor_config_with_stores`]); an `INSERT INTO` also on the scheduler, which lists the
//!   table's files.
//! - **Nothing half-written**: each file is staged (beside a local target; for an object
//!   store, in the executor's temporary directory, then uploaded) and put in place only once
//!   every file is written and the query has succeeded. A failed write fails the query with an
//!   error naming the file, and leaves no file, no upload and no directory it made.
//! - **Options**: the format's (`nulls`, `decimals`, `string_width`, `strings`, `layout`,
//!   `member`, read limits) travel with the plan. DataFusion's two options of the statement
//!   itself do not (datafusion-proto's `COPY` message carries the format, not the
//!   statement's options), and are refused on a cluster: `single_file_output` (a path with an
//!   extension is one file, one ending in `/` a directory) and
//!   `execution.keep_partition_by_columns` (set `datafusion.execution.keep_partition_by_columns`
//!   on the session, whose settings go with every query).
//!
//! ```no_run
//! use npy_datafusion::{NpyReadOptions, NpySessionExt};
//!
//! # async fn run() -> datafusion::error::Result<()> {
//! let ctx = npy_datafusion::ballista::remote(
//!     "df://sched.lan:50050",
//!     npy_datafusion::ballista::session_config(),
//! )
//! .await?;
//! ctx.register_npy("events", "/shared/shards/", NpyReadOptions::new()).await?;
//! // One archive of columns, written by an executor on the shared filesystem.
//! let copy = "COPY (SELECT kind, x FROM events WHERE x > 0 ORDER BY kind) \
//!             TO '/shared/out/positive.npz' OPTIONS ('layout' 'columns', 'nulls' 'nan')";
//! ctx.sql(copy).await?.collect().await?;
//! ctx.sql("CREATE EXTERNAL TABLE log STORED AS NPY LOCATION '/shared/log/' OPTIONS ('nulls' 'nan')")
//!     .await?;
//! ctx.sql("INSERT INTO log SELECT * FROM events WHERE kind = 3").await?.collect().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # A cluster
//! Every process of the cluster needs the codecs: the scheduler decodes the client's tables
//! and encodes the stages' scans, the executors decode them.
//! - **Scheduler**: [`scheduler_config`] adds the codecs to a `SchedulerConfig`.
//! - **Executors**: [`executor_config`] does the same for an `ExecutorProcessConfig`.
//! - **Object stores**: [`scheduler_config_with_stores`] and
//!   [`executor_config_with_stores`] also register a [`ClusterStores`]' `s3://` and
//!   `http(s)://` stores in every runtime the process builds.
//! - **Client**: [`remote`] connects to the scheduler (`df://host:port`) with the codecs and
//!   the `NPY` format registered; [`standalone`] runs a scheduler and executors in the
//!   client's process (tests, one machine).
//!
//! # Deployment
//! The tool's crate has both programs, `npy-scheduler` and `npy-executor`, behind its
//! `ballista` feature (`cargo install npy-cli --features ballista`; `--help` lists every
//! flag):
//!
//! ```text
//! # one scheduler (gRPC for clients and executors on 50050)
//! npy-scheduler --bind 0.0.0.0 --port 50050 --external-host sched.lan \
//!     --executor-timeout 180 --expire-interval 15
//! # on each worker machine: Arrow Flight (shuffle and results) on --port, gRPC on --grpc-port
//! npy-executor --scheduler sched.lan:50050 --bind 0.0.0.0 --external-host node1.lan \
//!     --port 50051 --grpc-port 50052 --work-dir /scratch/npy --concurrent-tasks 8 \
//!     --heartbeat-interval 60 --memory-limit 16GiB
//! ```
//!
//! - **Ports**: the scheduler's `--port` must be reachable from the executors and the
//!   clients; each executor's `--port` (Arrow Flight) from the other executors, which fetch
//!   its shuffle output, and from the clients, which fetch the results; its `--grpc-port`
//!   from the scheduler, which pushes tasks to it. `--external-host` is the name the others
//!   reach a process at (default: `--bind`).
//! - **Partitions**: each partition of each stage is one task. A job whose client left
//!   Ballista's default of 16 partitions ([`session_config`], `npy sql --cluster`) is planned
//!   by `npy-scheduler` with as many partitions as its executors have task slots
//!   (`--concurrent-tasks` summed; `npy-scheduler --partitions client|N` to change that); a
//!   client that sets `datafusion.execution.target_partitions` keeps its own. More
//!   partitions than slots run in turns, each turn a round trip to the scheduler.
//! - **Work directory**: an executor writes its stages' shuffle output to `--work-dir`
//!   (default: a temporary directory); give it local disk with room for the largest
//!   stage's output. `--memory-limit` bounds its tasks' memory, spilling to the same place.
//! - **Failures**: an executor heartbeats every `--heartbeat-interval` seconds; the scheduler
//!   checks every `--expire-interval` seconds for executors silent for longer than
//!   `--executor-timeout`, declares them dead and runs their lost tasks, and the stages whose
//!   shuffle output they held, on the others (a task fails the job after
//!   `--task-max-failures` attempts). A client whose scheduler dies fails at its next status
//!   poll (every 50 ms) with an error that names the scheduler's URL and says the job is lost
//!   with it (a client from [`remote`] checks, when a query fails, whether its scheduler
//!   still accepts connections).
//! - **The shards**: the scheduler lists a table's files and each executor reads its byte
//!   ranges itself, through its own DataFusion `ObjectStore` registry. Local paths
//!   (`/data/shards/`) must be the same files at the same paths on the scheduler and every
//!   executor (a shared filesystem: NFS, a parallel filesystem, a read-only volume). For
//!   `s3://` and `http(s)://` tables, the client, the scheduler and every
//!   executor need the table's store (its bucket's or host's) registered in their runtime,
//!   each with credentials and endpoint from its own `AWS_*` environment (`AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//!   `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint; `~/.aws` is not read, see
//!   [`npy_remote::store_for_url`]):
//!   - the programs (`cargo install npy-cli --features ballista`): `--store URL` once per
//!     bucket or host, on the scheduler (it lists the files) **and every executor** (each
//!     reads its byte ranges), with `--timeout` and `--retries` for each request:
//!
//!     ```text
//!     AWS_REGION=eu-west-1 AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \
//!         npy-scheduler --bind 0.0.0.0 --store s3://shards/ --store https://data.lan/
//!     AWS_REGION=eu-west-1 AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... \
//!         npy-executor --scheduler sched.lan:50050 --store s3://shards/ --store https://data.lan/
//!     ```
//!
//!   - in code: a [`ClusterStores`] with the stores, given to [`scheduler_config_with_stores`]
//!     and [`executor_config_with_stores`] in place of [`scheduler_config`] and
//!     [`executor_config`];
//!   - the client: its session with `npy_datafusion::register_store_for` (`npy sql`
//!     does it for its `-t` tables).
//!
//!   A scheduler or executor without the table's store fails the query with an error that
//!   names the process, the store and `--store` (`the Ballista scheduler has no object store
//!   for s3://shards/: start the scheduler and every executor with --store s3://shards/ ...`).
//! - **Read limits**: a table's header and data limits
//!   ([`NpyReadOptions`](crate::NpyReadOptions)) are set by the client and travel
//!   with its scan to every executor, which reads under them; an executor's
//!   `--max-header-size` and `--max-data-size`
//!   ([`NpyPhysicalCodec::with_read_ceiling`]) lower them, never raise them.
//! - **Which executor ran what**: `npy-executor --log-tasks` prints a line per task to stderr.
//!
//! `npy-cli/tests/cluster` runs this: a scheduler and two executors as processes on
//! loopback, an executor killed mid-query, the scheduler killed, a hostile shard.
//!
//! ```no_run
//! use npy_datafusion::ballista;
//! use npy_datafusion::{NpyReadOptions, NpySessionExt};
//!
//! # async fn run() -> datafusion::error::Result<()> {
//! // A scheduler started with `scheduler_config`, executors with `executor_config`.
//! let ctx = ballista::remote("df://127.0.0.1:50050", ballista::session_config()).await?;
//! ctx.register_npy("events", "/data/shards/", NpyReadOptions::new().max_data_size(1 << 30))
//!     .await?;
//! let df = ctx.sql("SELECT kind, count(*), avg(x) FROM events GROUP BY kind").await?;
//! df.show().await?;
//! # Ok(())
//! # }
//! ```

mod client;
mod codec;
mod columns;
mod errors;
mod job;
mod order;
mod prefilter;
mod stores;
mod table;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use ::ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_executor::executor_process::ExecutorProcessConfig;
use ballista_scheduler::config::SchedulerConfig;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::SessionState;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

pub use client::wait_for_cancellations;
pub use codec::{NpyLogicalCodec, NpyPhysicalCodec};
pub use order::OrderAcrossShuffles;
pub use stores::{executor_config_with_stores, scheduler_config_with_stores, ClusterStores};
pub use table::{NpyTable, NpyTableRule};

use crate::session::register_npy_format_for_cluster;

/// A Ballista session config with this crate's codecs ([`NpyLogicalCodec`],
/// [`NpyPhysicalCodec`]); set DataFusion and Ballista options on it before passing it to
/// [`remote`] or [`standalone`].
///
/// The client follows its jobs by asking the scheduler for their status
/// (`ballista.client.pull`, every 50 ms while a job runs), which gives it the job's id as
/// soon as the scheduler accepts the query: a query dropped while it runs then cancels its
/// job on the cluster. (With Ballista's pushed status updates the id arrives with the first
/// update, which can come only when the first stage ends, too late to cancel.)
///
/// ```
/// let config = npy_datafusion::ballista::session_config().with_target_partitions(4);
/// assert_eq!(config.target_partitions(), 4);
/// ```
pub fn session_config() -> SessionConfig {
    with_codecs(
        SessionConfig::new_with_ballista()
            .set_bool(ballista_core::config::BALLISTA_CLIENT_PULL, true),
    )
}

fn with_codecs(config: SessionConfig) -> SessionConfig {
    config
        .with_ballista_logical_extension_codec(Arc::new(NpyLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(NpyPhysicalCodec::default()))
}

/// A session state with `config` (the codecs added, if it came from elsewhere than
/// [`session_config`]), DataFusion's default functions and planners, [`OrderAcrossShuffles`]
/// and the TopK prefilter ([`crate::with_topk_prefilter`]; the in-process scheduler plans in
/// this state).
fn session_state(config: SessionConfig) -> SessionState {
    crate::with_topk_prefilter(with_order_across_shuffles(
        SessionStateBuilder::new()
            .with_config(with_codecs(config))
            .with_default_features()
            .build(),
    ))
}

/// `state` with [`OrderAcrossShuffles`] as its last physical optimizer rule.
fn with_order_across_shuffles(state: SessionState) -> SessionState {
    let id = state.session_id().to_string();
    SessionStateBuilder::new_from_existing(state)
        .with_session_id(id)
        .with_physical_optimizer_rule(Arc::new(OrderAcrossShuffles))
        .build()
}

/// The client side of a session: the `NPY` format (`CREATE EXTERNAL TABLE ... STORED AS
/// NPY`) and the rule that makes its tables sendable.
fn prepare(ctx: &SessionContext) -> DfResult<()> {
    register_npy_format_for_cluster(ctx)?;
    ctx.add_analyzer_rule(Arc::new(NpyTableRule));
    Ok(())
}

fn ballista_err(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// A session on the Ballista cluster whose scheduler is at `url` (`df://host:port`), with the
/// codecs of `config` (see [`session_config`]) and the `NPY` format registered. The
/// scheduler and executors need the codecs too: [`scheduler_config`], [`executor_config`].
///
/// ```no_run
/// # async fn run() -> datafusion::error::Result<()> {
/// let ctx = npy_datafusion::ballista::remote(
///     "df://127.0.0.1:50050",
///     npy_datafusion::ballista::session_config(),
/// )
/// .await?;
/// ctx.sql("CREATE EXTERNAL TABLE t STORED AS NPY LOCATION '/data/shards/'").await?;
/// ctx.sql("SELECT count(*) FROM t").await?.show().await?;
/// # Ok(())
/// # }
/// ```
pub async fn remote(url: &str, config: SessionConfig) -> DfResult<SessionContext> {
    let ctx = SessionContext::remote_with_state(url, session_state(config)).await?;
    let ctx = client::watch_scheduler(ctx, url);
    prepare(&ctx)?;
    Ok(ctx)
}

/// A Ballista cluster in this process: a scheduler and `executors` executors (at least
/// one), each bound to a free port on localhost and running
/// `config.ballista_standalone_parallelism()` tasks at once, all with this crate's codecs;
/// and a session on it with the `NPY` format registered. The cluster lives as long as the
/// process's Tokio runtime.
///
/// ```no_run
/// # async fn run() -> datafusion::error::Result<()> {
/// use npy_datafusion::{NpyReadOptions, NpySessionExt};
/// let ctx = npy_datafusion::ballista::standalone(npy_datafusion::ballista::session_config(), 2).await?;
/// ctx.register_npy("t", "/data/shards/", NpyReadOptions::new()).await?;
/// ctx.sql("SELECT count(*) FROM t").await?.show().await?;
/// # Ok(())
/// # }
/// ```
pub async fn standalone(config: SessionConfig, executors: usize) -> DfResult<SessionContext> {
    let state = session_state(config);
    let addr = ballista_scheduler::standalone::new_standalone_scheduler_from_state(&state)
        .await
        .map_err(ballista_err)?;
    let scheduler_url = format!("http://localhost:{}", addr.port());
    for _ in 0..executors.max(1) {
        start_executor(&scheduler_url, &state).await?;
    }
    let url = format!("df://localhost:{}", addr.port());
    let ctx = SessionContext::remote_with_state(&url, state).await?;
    let ctx = client::watch_scheduler(ctx, &url);
    prepare(&ctx)?;
    Ok(ctx)
}

/// Starts an executor in this process for the scheduler at `scheduler_url`
/// (`http://host:port`), with the codecs and config of `state`.
async fn start_executor(scheduler_url: &str, state: &SessionState) -> DfResult<()> {
    // The scheduler's server was spawned just now: it may take a moment to accept.
    let mut tries = 0;
    let scheduler = loop {
        match SchedulerGrpcClient::connect(scheduler_url.to_string()).await {
            Ok(client) => break client,
            Err(e) if tries >= 100 => return Err(ballista_err(e)),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let vcores = state.config().ballista_standalone_parallelism();
    ballista_executor::new_standalone_executor_from_state(scheduler, vcores, state)
        .await
        .map_err(ballista_err)
}

/// `config` with this crate's codecs: the config of a scheduler that plans queries over
/// `.npy` tables (start it with `ballista_scheduler::scheduler_process::start_server`, as
/// `npy-scheduler` does).
///
/// ```
/// use ballista_scheduler::config::SchedulerConfig;
/// let config = npy_datafusion::ballista::scheduler_config(SchedulerConfig::default().with_port(50050));
/// assert!(config.override_logical_codec.is_some() && config.override_physical_codec.is_some());
/// ```
pub fn scheduler_config(mut config: SchedulerConfig) -> SchedulerConfig {
    config.override_logical_codec = Some(Arc::new(NpyLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(NpyPhysicalCodec::default()));
    // The sessions it plans in keep orders across its shuffles (see `OrderAcrossShuffles`),
    // and put the TopK prefilter under the sorts with a fetch of a job's stages (each task's
    // TopK has a threshold of its own there: see `crate::TopKPrefilterExec`).
    let base = config.override_session_builder.take();
    config.override_session_builder = Some(Arc::new(move |session_config| {
        let state = match &base {
            Some(base) => base(session_config)?,
            None => ballista_core::utils::default_session_builder(session_config)?,
        };
        Ok(crate::with_topk_prefilter(with_order_across_shuffles(
            state,
        )))
    }));
    config
}

/// `config` with this crate's codecs: the config of an executor that runs `.npy` scans
/// (start it with `ballista_executor::executor_process::start_executor_process`, as
/// `npy-executor` does).
///
/// ```
/// use ballista_executor::executor_process::ExecutorProcessConfig;
/// let config = npy_datafusion::ballista::executor_config(ExecutorProcessConfig::default());
/// assert!(config.override_logical_codec.is_some() && config.override_physical_codec.is_some());
/// ```
pub fn executor_config(mut config: ExecutorProcessConfig) -> ExecutorProcessConfig {
    config.override_logical_codec = Some(Arc::new(NpyLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(NpyPhysicalCodec::default()));
    config
}
