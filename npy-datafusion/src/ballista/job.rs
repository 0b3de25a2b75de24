//! The client's side of a distributed query: submit the job, follow it to its end, fetch its
//! result. [`JobExec`] does what Ballista's `DistributedQueryExec` does when the client polls
//! (`ballista.client.pull`, which [`session_config`](super::session_config) sets), with one
//! change: **when** it asks the scheduler for the job's status.
//!
//! Ballista's client sleeps a fixed 50 ms between two questions, so every job ends for its
//! client 0-50 ms (25 ms on average) after it ended on the cluster: for a query over little
//! data, half of what the cluster costs above one process (`BENCHMARKS.md`, issue 44). Here
//! the gap grows with the job's age, from [`FIRST_GAP`] by a third of the time waited so far,
//! up to Ballista's 50 ms ([`LAST_GAP`]): a job that ends after `t` is seen at most about
//! `t / 3` later (never more than 50 ms), and a job of seconds costs the scheduler about as
//! many questions as Ballista's client asks (a few more in its first 150 ms). The job's id is known as soon as the scheduler took
//! the query, as with Ballista's poll, so a query dropped while it runs cancels its job (see
//! `client.rs`).
//!
//! Everything else is Ballista's: the same request (the plan encoded with the session's
//! logical codec, the session's settings, Ballista's version header, checked in the answer),
//! the same connection settings (gRPC timeouts and message size, TLS, the endpoint hook and
//! metadata interceptor of the session's config), and each result partition fetched from the
//! executor holding it, or through the scheduler's Flight proxy when it names one.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ballista_core::client::BallistaClient;
use ballista_core::config::BallistaConfig;
use ballista_core::extension::SessionConfigExt;
use ballista_core::serde::protobuf::get_job_status_result::FlightProxy;
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use ballista_core::serde::protobuf::{
    execute_query_params::Query, execute_query_result, job_status, CancelJobParams,
    ExecuteQueryParams, GetJobStatusParams, GetJobStatusResult, KeyValuePair, PartitionLocation,
    SuccessfulJob,
};
use ballista_core::utils::{create_grpc_client_endpoint, GrpcClientConfig};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use datafusion::prelude::SessionConfig;
use datafusion_proto::logical_plan::AsLogicalPlan;
use datafusion_proto::protobuf::LogicalPlanNode;
use futures::{StreamExt, TryStreamExt};

/// The first wait before asking the scheduler for a job's status again.
pub(crate) const FIRST_GAP: Duration = Duration::from_millis(2);
/// The longest wait between two questions: Ballista's client's fixed one.
pub(crate) const LAST_GAP: Duration = Duration::from_millis(50);

/// The wait before the next question about a job submitted `waited` ago: [`FIRST_GAP`] plus a
/// third of `waited`, at most [`LAST_GAP`].
pub(crate) fn next_gap(waited: Duration) -> Duration {
    (FIRST_GAP + waited / 3).min(LAST_GAP)
}

/// A query run on the Ballista cluster whose scheduler is at `scheduler_url` (see the module
/// docs): one partition, the result's batches in the order of the last stage's partitions.
#[derive(Debug)]
pub(crate) struct JobExec {
    /// `http://host:port`.
    scheduler_url: String,
    plan: LogicalPlan,
    session_id: String,
    properties: Arc<PlanProperties>,
    /// The id the scheduler gave the job, once it did (shared with every copy of this plan).
    job_id: Arc<Mutex<Option<String>>>,
}

impl JobExec {
    pub(crate) fn new(scheduler_url: String, plan: LogicalPlan, session_id: String) -> JobExec {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(plan.schema().inner())),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        JobExec {
            scheduler_url,
            plan,
            session_id,
            properties,
            job_id: Arc::new(Mutex::new(None)),
        }
    }

    /// The id the scheduler gave this query's job, once it took the query.
    pub(crate) fn job_id(&self) -> Option<String> {
        self.job_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The request that submits the plan with the session's settings.
    fn query(&self, config: &SessionConfig) -> DfResult<ExecuteQueryParams> {
        let codec = config.ballista_logical_extension_codec();
        let node =
            LogicalPlanNode::try_from_logical_plan(&self.plan, codec.as_ref()).map_err(|e| {
                DataFusionError::Internal(format!("failed to serialize logical plan: {e:?}"))
            })?;
        let mut buf = Vec::new();
        node.try_encode(&mut buf).map_err(|e| {
            DataFusionError::Execution(format!("failed to encode logical plan: {e:?}"))
        })?;
        let settings = (config.options().entries().into_iter())
            .map(|e| KeyValuePair {
                key: e.key,
                value: e.value,
            })
            .collect();
        Ok(ExecuteQueryParams {
            query: Some(Query::LogicalPlan(buf)),
            settings,
            session_id: self.session_id.clone(),
            operation_id: operation_id(),
        })
    }
}

/// An id for one execution of a query, which the scheduler logs beside the session's: the
/// process, the time, and a count.
fn operation_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "npy-{}-{nanos:x}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

impl DisplayAs for JobExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                writeln!(
                    f,
                    "DistributedQueryExec: scheduler_url={}",
                    self.scheduler_url
                )?;
                write!(f, "logical_plan:\n{}", self.plan.display_indent())
            }
            DisplayFormatType::TreeRender => writeln!(f, "scheduler_url={}", self.scheduler_url),
        }
    }
}

impl ExecutionPlan for JobExec {
    fn name(&self) -> &str {
        "DistributedQueryExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return Err(DataFusionError::Internal(
                "DistributedQueryExec has no children".into(),
            ));
        }
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "DistributedQueryExec has one partition, asked for {partition}"
            )));
        }
        let config = context.session_config().clone();
        let query = self.query(&config)?;
        let job = Job {
            scheduler_url: self.scheduler_url.clone(),
            ballista: config.ballista_config(),
            config,
            job_id: Arc::clone(&self.job_id),
        };
        let stream = futures::stream::once(job.run(query)).try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(self.properties.eq_properties.schema()),
            stream,
        )))
    }
}

/// One execution of a [`JobExec`].
struct Job {
    scheduler_url: String,
    config: SessionConfig,
    ballista: BallistaConfig,
    job_id: Arc<Mutex<Option<String>>>,
}

type Scheduler = SchedulerGrpcClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        ballista_core::extension::BallistaGrpcMetadataInterceptor,
    >,
>;

fn execution(e: impl fmt::Debug) -> DataFusionError {
    DataFusionError::Execution(format!("{e:?}"))
}

impl Job {
    /// Submits `query`, waits for its job's end, and returns the stream of its result.
    async fn run(
        self,
        query: ExecuteQueryParams,
    ) -> DfResult<impl futures::Stream<Item = DfResult<datafusion::arrow::array::RecordBatch>> + Send>
    {
        let started = Instant::now();
        let grpc = GrpcClientConfig::from(&self.ballista);
        let max_message = self.ballista.grpc_client_max_message_size();
        let customize = self.config.ballista_override_create_grpc_client_endpoint();
        let mut endpoint = create_grpc_client_endpoint(self.scheduler_url.clone(), Some(&grpc))
            .map_err(execution)?;
        if let Some(customize) = &customize {
            endpoint = customize.configure_endpoint(endpoint).map_err(execution)?;
        }
        let channel = endpoint.connect().await.map_err(execution)?;
        let interceptor = self.config.ballista_grpc_interceptor().as_ref().clone();
        let mut scheduler: Scheduler = SchedulerGrpcClient::with_interceptor(channel, interceptor)
            .max_encoding_message_size(max_message)
            .max_decoding_message_size(max_message);

        let mut request = tonic::Request::new(query);
        ballista_core::version::insert_version_header(request.metadata_mut());
        let response = scheduler.execute_query(request).await.map_err(execution)?;
        let version = check_version(response.metadata());
        let result = response.into_inner().result.ok_or_else(|| {
            DataFusionError::Execution("the scheduler answered the query with no result".into())
        })?;
        let accepted = match result {
            execute_query_result::Result::Success(s) => s,
            execute_query_result::Result::Failure(f) => {
                // A scheduler of another version is the likelier cause: say that first.
                version?;
                return Err(DataFusionError::Execution(format!(
                    "Fail to execute query due to {f:?}"
                )));
            }
        };
        let job = accepted.job_id;
        if let Err(e) = version {
            // An older scheduler queued the job without checking versions.
            let _ = (scheduler.cancel_job(CancelJobParams {
                job_id: job.clone(),
            }))
            .await;
            return Err(e);
        }
        *self.job_id.lock().unwrap_or_else(|p| p.into_inner()) = Some(job.clone());

        loop {
            let GetJobStatusResult {
                status,
                flight_proxy,
            } = scheduler
                .get_job_status(GetJobStatusParams {
                    job_id: job.clone(),
                })
                .await
                .map_err(execution)?
                .into_inner();
            match status.and_then(|s| s.status) {
                None
                | Some(job_status::Status::Queued(_))
                | Some(job_status::Status::Running(_)) => {
                    tokio::time::sleep(next_gap(started.elapsed())).await;
                }
                Some(job_status::Status::Failed(failed)) => {
                    return Err(DataFusionError::Execution(format!(
                        "Job {job} failed: {}",
                        failed.error
                    )));
                }
                Some(job_status::Status::Successful(SuccessfulJob {
                    partition_location, ..
                })) => {
                    let fetch = Fetch {
                        scheduler_url: self.scheduler_url,
                        flight_proxy,
                        max_message,
                        use_tls: self.config.ballista_use_tls(),
                        customize,
                        retries: grpc.io_retries_times,
                        retry_wait_ms: grpc.io_retry_wait_time_ms,
                    };
                    let fetch = Arc::new(fetch);
                    let streams = partition_location.into_iter().map(move |location| {
                        let fetch = Arc::clone(&fetch);
                        futures::stream::once(async move { fetch.partition(location).await })
                            .try_flatten()
                    });
                    return Ok(futures::stream::iter(streams).flatten());
                }
            }
        }
    }
}

/// The scheduler's version (from its answer's metadata) checked against this client's, as
/// Ballista's client does: another major version is an error.
fn check_version(metadata: &tonic::metadata::MetadataMap) -> DfResult<()> {
    let theirs = ballista_core::version::version_from_metadata(metadata);
    ballista_core::version::check_compatibility(Some(ballista_core::BALLISTA_VERSION), theirs)
        .map_err(DataFusionError::Execution)
}

/// How a finished job's result partitions are fetched.
struct Fetch {
    scheduler_url: String,
    flight_proxy: Option<FlightProxy>,
    max_message: usize,
    use_tls: bool,
    customize: Option<Arc<ballista_core::extension::BallistaConfigGrpcEndpoint>>,
    retries: u8,
    retry_wait_ms: u64,
}

impl Fetch {
    /// The batches of the result partition at `location`.
    async fn partition(&self, location: PartitionLocation) -> DfResult<SendableRecordBatchStream> {
        let layout = location.layout();
        let executor = location.executor_meta.ok_or_else(|| {
            DataFusionError::Internal("Received empty executor metadata".to_owned())
        })?;
        let partition = location
            .partition_id
            .ok_or_else(|| DataFusionError::Internal("Received empty partition id".to_owned()))?;
        let (host, port) = self.address(&executor.host, executor.port)?;
        let mut client = BallistaClient::try_new(
            &host,
            port,
            self.max_message,
            self.use_tls,
            self.customize.clone(),
            self.retries,
            self.retry_wait_ms,
            0,
            0,
        )
        .await
        .map_err(execution)?;
        let executor_port = u16::try_from(executor.port).map_err(execution)?;
        client
            .fetch_partition_proxied(
                &executor.id,
                &partition.into(),
                location.file_id,
                layout,
                &executor.host,
                executor_port,
                true,
            )
            .await
            .map_err(|e| e.into_datafusion())
    }

    /// Where to fetch a partition held by the executor at `host:port`: there, or the Flight
    /// proxy the scheduler named (its own address, or an external one).
    fn address(&self, host: &str, port: u32) -> DfResult<(String, u16)> {
        let split = |address: &str| -> DfResult<(String, u16)> {
            let url = url::Url::parse(address).map_err(|e| {
                DataFusionError::Execution(format!("Cannot parse host:port in {address:?}: {e}"))
            })?;
            let host = url
                .host_str()
                .ok_or_else(|| DataFusionError::Execution(format!("No host in {address:?}")))?;
            let port = url
                .port()
                .ok_or_else(|| DataFusionError::Execution(format!("No port in {address:?}")))?;
            Ok((host.to_string(), port))
        };
        match &self.flight_proxy {
            Some(FlightProxy::External(address)) => split(&format!("http://{address}")),
            Some(FlightProxy::Local(true)) => split(&self.scheduler_url),
            Some(FlightProxy::Local(false)) | None => {
                Ok((host.to_string(), u16::try_from(port).map_err(execution)?))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_grows_with_the_jobs_age_up_to_ballistas() {
        assert_eq!(next_gap(Duration::ZERO), FIRST_GAP);
        assert_eq!(
            next_gap(Duration::from_millis(30)),
            Duration::from_millis(12)
        );
        assert_eq!(next_gap(Duration::from_secs(10)), LAST_GAP);
        // A job ending at any moment up to 10 s is seen at most a third of its age (plus the
        // first gap) later, never more than 50 ms.
        let mut asked = Duration::ZERO;
        let mut questions = 0;
        while asked < Duration::from_secs(10) {
            let gap = next_gap(asked);
            assert!(
                gap <= FIRST_GAP + asked / 3 && gap <= LAST_GAP,
                "{gap:?} at {asked:?}"
            );
            asked += gap;
            questions += 1;
        }
        // Ballista's client asks 200 times in those 10 s.
        assert!(questions <= 215, "{questions} questions in 10 s");
    }

    #[test]
    fn a_proxy_named_by_the_scheduler_is_where_results_are_fetched() {
        let fetch = |proxy| Fetch {
            scheduler_url: "http://sched:50050".into(),
            flight_proxy: proxy,
            max_message: 1 << 20,
            use_tls: false,
            customize: None,
            retries: 0,
            retry_wait_ms: 0,
        };
        let at = |f: Fetch| f.address("exec", 50051).unwrap();
        assert_eq!(at(fetch(None)), ("exec".into(), 50051));
        assert_eq!(
            at(fetch(Some(FlightProxy::Local(false)))),
            ("exec".into(), 50051)
        );
        assert_eq!(
            at(fetch(Some(FlightProxy::Local(true)))),
            ("sched".into(), 50050)
        );
        assert_eq!(
            at(fetch(Some(FlightProxy::External("proxy:8815".into())))),
            ("proxy".into(), 8815)
        );
        assert!(fetch(None).address("exec", 1 << 20).is_err());
    }

    /// The job of a query's plan on a cluster (`JobExec` under the watch), if it has one.
    fn job_exec(plan: &Arc<dyn ExecutionPlan>) -> Option<&JobExec> {
        if let Some(job) = plan.downcast_ref::<JobExec>() {
            return Some(job);
        }
        plan.children().into_iter().find_map(job_exec)
    }

    #[test]
    fn a_polling_session_follows_its_jobs_here_and_a_pushed_one_through_ballista() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let ctx = crate::ballista::standalone(crate::ballista::session_config(), 1)
                .await
                .unwrap();
            let sql =
                "SELECT a, count(*) AS n FROM (VALUES (1), (2), (2)) AS t(a) GROUP BY a ORDER BY a";
            let df = ctx.sql(sql).await.unwrap();
            let plan = df.create_physical_plan().await.unwrap();
            let job = job_exec(&plan).expect("the session's plan runs as a JobExec");
            assert_eq!(job.job_id(), None, "no job before the plan runs");
            let batches = datafusion::physical_plan::collect(Arc::clone(&plan), ctx.task_ctx())
                .await
                .unwrap();
            let shown = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                .unwrap()
                .to_string();
            assert!(
                shown.contains("| 1 | 1 |") && shown.contains("| 2 | 2 |"),
                "{shown}"
            );
            let id = job
                .job_id()
                .expect("the scheduler's job id, kept for cancelling");
            assert!(!id.is_empty());

            // With Ballista's pushed status (`ballista.client.pull = false`) the plan stays
            // Ballista's own, and answers the same.
            ctx.sql("SET ballista.client.pull = false").await.unwrap();
            let df = ctx.sql(sql).await.unwrap();
            let plan = df.create_physical_plan().await.unwrap();
            assert!(
                job_exec(&plan).is_none(),
                "{}",
                datafusion::physical_plan::displayable(plan.as_ref()).indent(false)
            );
            let again = datafusion::physical_plan::collect(plan, ctx.task_ctx())
                .await
                .unwrap();
            let again = datafusion::arrow::util::pretty::pretty_format_batches(&again)
                .unwrap()
                .to_string();
            assert_eq!(again, shown);
        });
    }
}
