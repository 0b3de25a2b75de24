//! The client's view of a lost scheduler: a query whose scheduler dies fails with an error
//! that says so.
//!
//! Ballista's client polls its scheduler for the job's status every 50 ms; when the scheduler
//! is gone, that poll fails with the transport's own words, in the `Debug` form of a gRPC
//! status (`Status { code: Unknown, message: "h2 protocol error: ..." }`), which names neither
//! the scheduler nor what happened to the job. [`watch_scheduler`] wraps Ballista's query
//! planner so that each distributed query's stream checks, when it fails, whether the
//! scheduler still accepts connections, and if it does not, says that the scheduler at its
//! URL is gone and the job with it. Errors of a scheduler that is still there (a failed task,
//! a refused plan) pass through unchanged, except a task out of memory, which names the
//! executors' `--memory-limit` (see `out_of_memory`), and a task that found no room to write
//! its output, which names their `--work-dir` (see `out_of_room`).
//!
//! The same wrapper cancels the job of a query dropped before its end (`CancelJobParams` to
//! the scheduler, which stops its tasks on the executors): Ballista's client would leave it
//! running. The cancellation is sent on a thread of its own; [`wait_for_cancellations`] waits
//! for the ones under way.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ballista_core::extension::SessionConfigExt;
use datafusion::catalog::Session;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::{SendableRecordBatchStream, SessionStateBuilder, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::job::JobExec;

/// How long the check for a live scheduler waits for a TCP connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// `ctx` (a Ballista client session on the scheduler at `url`, `df://host:port`) with its
/// query planner wrapped: a distributed query that fails because its scheduler is gone says
/// so (see the module docs). The session keeps its id, config and tables.
pub(crate) fn watch_scheduler(ctx: SessionContext, url: &str) -> SessionContext {
    let state = ctx.state();
    let scheduler = Scheduler {
        url: url.to_string(),
        addr: url
            .strip_prefix("df://")
            .unwrap_or(url)
            .trim_end_matches('/')
            .to_string(),
    };
    let planner = Arc::new(WatchPlanner {
        inner: Arc::clone(state.query_planner()),
        scheduler: Arc::new(scheduler),
    });
    let state = SessionStateBuilder::new_from_existing(state.clone())
        .with_session_id(state.session_id().to_string())
        .with_query_planner(planner)
        .build();
    SessionContext::new_with_state(state)
}

/// How many more times a transport-looking error checks the scheduler (see
/// [`Scheduler::explain`]).
const REPROBES: u32 = 5;
/// The wait between those checks.
const REPROBE_GAP: Duration = Duration::from_millis(100);

/// Whether an error's text reads as a failed connection rather than an answer of a
/// scheduler: the words of hyper, h2 and tonic for a closed or reset stream.
fn looks_like_transport(e: &str) -> bool {
    let e = e.to_ascii_lowercase();
    [
        "h2 protocol error",
        "transport error",
        "broken pipe",
        "connection reset",
        "connection refused",
        "error trying to connect",
        "stream closed",
        // hyper's end of a request whose connection closed under it (tonic's `Cancelled`).
        "connection closed",
    ]
    .iter()
    .any(|w| e.contains(w))
}

/// The scheduler a client talks to.
#[derive(Debug)]
struct Scheduler {
    /// As the user gave it (`df://host:port`).
    url: String,
    /// `host:port`, for the connection check.
    addr: String,
}

impl Scheduler {
    /// `e` as it is, if the scheduler still accepts connections; else an error saying that
    /// the scheduler is gone, with `e` after it.
    ///
    /// A scheduler that is being killed drops its open connections before its listening
    /// socket, so the client can see a broken connection while a new one is still accepted.
    /// An error that reads as a failed transport is therefore checked again, up to
    /// [`REPROBES`] times [`REPROBE_GAP`] apart, before it is passed on as the scheduler's.
    async fn explain(&self, e: DataFusionError) -> DataFusionError {
        let tries = if looks_like_transport(&e.to_string()) {
            1 + REPROBES
        } else {
            1
        };
        let mut why = None;
        for i in 0..tries {
            if i > 0 {
                tokio::time::sleep(REPROBE_GAP).await;
            }
            let probe =
                tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(&self.addr));
            match probe.await {
                Ok(Ok(_)) => continue,
                Ok(Err(io)) => why = Some(io.to_string()),
                Err(_) => {
                    why = Some(format!(
                        "no answer to a connection within {PROBE_TIMEOUT:?}"
                    ))
                }
            }
            break;
        }
        let Some(why) = why else {
            return out_of_room(out_of_memory(task_failure(e)));
        };
        DataFusionError::Execution(format!(
            "lost the Ballista scheduler at {}: it does not accept connections ({why}), and a \
             job it was running is lost with it: run the query again once a scheduler is back \
             (Ballista's error: {e})",
            self.url
        ))
    }
}

/// Where Ballista's message about a failed task gives the task's last error.
const LAST_FAILURE: &str = "most recent failure reason: \"";

/// The wrappers Ballista's task error is printed in (`Debug`, one inside the other) around
/// what went wrong: `DataFusionError(Shared(External(DataFusionError(IoError(..)))))`.
const WRAPPERS: [&str; 6] = [
    "DataFusionError(",
    "Shared(",
    "External(",
    "IoError(",
    "ArrowError(",
    "Execution(",
];

/// `e` with its failed task's error unwrapped: Ballista prints it as nested `Debug` forms,
/// after retries as the last failure's reason (`.. failed 3 times, fail the stage, most recent
/// failure reason: "Task failed due to IO error: DataFusionError(Shared(External(
/// DataFusionError(IoError(Custom { kind: Other, error: \"ChaosExec: Injected ..\" })))))"`),
/// or straight after the stage (`Task failed due to runtime execution error:
/// DataFusionError(Shared(External(DataFusionError(Execution("ChaosExec: .."))))))`). This
/// keeps the job, stage, task and attempts, then the error's own words (`.. fail the stage; its
/// last failure: Task failed due to IO error: ChaosExec: Injected ..`). An `Os` I/O error keeps
/// its code and kind. Any other error is returned as it is.
fn task_failure(e: DataFusionError) -> DataFusionError {
    let text = e.to_string();
    let text = text.strip_prefix("Execution error: ").unwrap_or(&text);
    // The reason given after retries is quoted, its own quotes escaped.
    let (head, reason, quote) = match text.find(LAST_FAILURE) {
        Some(at) => {
            let reason = text[at + LAST_FAILURE.len()..].trim_end();
            let Some(reason) = reason.strip_suffix('"') else {
                return e;
            };
            let head = text[..at].trim_end().trim_end_matches(',');
            (format!("{head}; its last failure: "), reason, "\\\"")
        }
        None => (String::new(), text.trim_end(), "\""),
    };
    let Some(start) = reason.find(WRAPPERS[0]) else {
        return e;
    };
    let (what, mut body) = (&reason[..start], &reason[start..]);
    loop {
        let inner = WRAPPERS
            .iter()
            .find_map(|w| body.strip_prefix(w)?.strip_suffix(')'));
        match inner {
            Some(inner) => body = inner,
            None => break,
        }
    }
    // An error made from words (`io::Error::other`), or a message (`Execution("..")`): the
    // words.
    let custom = body
        .strip_prefix("Custom { kind: ")
        .and_then(|r| r.split_once(&format!(", error: {quote}")))
        .and_then(|(_, r)| r.strip_suffix(&format!("{quote} }}")));
    let quoted = body.strip_prefix(quote).and_then(|r| r.strip_suffix(quote));
    let body = custom
        .or(quoted)
        .map_or_else(|| body.to_string(), |words| words.replace(quote, "\""));
    DataFusionError::Execution(format!("{head}{what}{body}"))
}

/// `e` with what to do about it when a task ran out of its executor's memory pool: Ballista
/// passes on DataFusion's words (how many bytes a reservation wanted and how many the pool had
/// left), which name neither the executor's setting nor the remedy.
fn out_of_memory(e: DataFusionError) -> DataFusionError {
    let text = e.to_string();
    if !(text.contains("Resources exhausted") || text.contains("ResourcesExhausted")) {
        return e;
    }
    DataFusionError::Execution(format!(
        "a task ran out of its executor's memory: the executors' --memory-limit, shared by their \
         --concurrent-tasks (Ballista's default: a fraction of the machine's memory), is too \
         small for this query even with spilling; give them more, or run fewer tasks at once \
         (Ballista's error: {text})"
    ))
}

/// The I/O errors of a write that finds no room: each as Rust names its kind (the `Debug` form
/// in which Ballista passes a task's error on), its OS error number, and what it means.
const NO_ROOM: [(&str, u32, &str); 4] = [
    ("StorageFull", 28, "no space left on its device (ENOSPC)"),
    (
        "FileTooLarge",
        27,
        "a file grew past the executor's file-size limit (EFBIG: RLIMIT_FSIZE, `ulimit -f`)",
    ),
    ("QuotaExceeded", 122, "its disk quota is used up (EDQUOT)"),
    (
        "ReadOnlyFilesystem",
        30,
        "its file system is read-only (EROFS)",
    ),
];

/// `e` with where and what to do when a task could not write its output on an executor (a full
/// or read-only `--work-dir`, a quota, a file-size limit): Ballista passes on the I/O error's
/// `Debug` form (`IoError(Os { code: 27, kind: FileTooLarge, .. })`) after retrying the task,
/// which names neither the directory nor the remedy.
fn out_of_room(e: DataFusionError) -> DataFusionError {
    let text = e.to_string();
    let Some((_, _, what)) = NO_ROOM.iter().find(|(kind, code, _)| {
        text.contains(&format!("kind: {kind}")) || text.contains(&format!("(os error {code})"))
    }) else {
        return e;
    };
    DataFusionError::Execution(format!(
        "a task could not write its output on an executor: {what}. The executors write their \
         shuffle output and spill files under their --work-dir: give it room (or lift the \
         limit), then run the query again (Ballista's error: {text})"
    ))
}

/// Ballista's query planner, with each distributed query wrapped in a [`WatchExec`].
struct WatchPlanner {
    inner: Arc<dyn QueryPlanner + Send + Sync>,
    scheduler: Arc<Scheduler>,
}

impl fmt::Debug for WatchPlanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchPlanner")
            .field("scheduler", &self.scheduler.url)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl QueryPlanner for WatchPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session_state: &dyn Session,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let plan = self
            .inner
            .create_physical_plan(logical_plan, session_state)
            .await?;
        // Plans run on the client (information_schema, an empty relation) need no watch.
        if plan.name() != "DistributedQueryExec" {
            return Ok(plan);
        }
        // A polling client follows the job with a gap that grows with its age (`job.rs`).
        let plan: Arc<dyn ExecutionPlan> = if session_state.config().ballista_config().client_pull()
        {
            Arc::new(JobExec::new(
                format!("http://{}", self.scheduler.addr),
                logical_plan.clone(),
                session_state.session_id().to_string(),
            ))
        } else {
            plan
        };
        Ok(Arc::new(WatchExec {
            properties: plan.properties().clone(),
            input: plan,
            scheduler: Arc::clone(&self.scheduler),
        }))
    }
}

/// A distributed query whose stream's errors go through [`Scheduler::explain`].
#[derive(Debug)]
struct WatchExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
    scheduler: Arc<Scheduler>,
}

impl DisplayAs for WatchExec {
    fn fmt_as(&self, _: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WatchSchedulerExec: scheduler={}", self.scheduler.url)
    }
}

impl ExecutionPlan for WatchExec {
    fn name(&self) -> &str {
        "WatchSchedulerExec"
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
        vec![&self.input]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(format!(
                "WatchSchedulerExec has one child, got {}",
                children.len()
            )));
        }
        let input = children.remove(0);
        Ok(Arc::new(WatchExec {
            properties: input.properties().clone(),
            input,
            scheduler: Arc::clone(&self.scheduler),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let stream = self.input.execute(partition, context)?;
        let schema = stream.schema();
        let scheduler = Arc::clone(&self.scheduler);
        let stream = stream.then(move |item| {
            let scheduler = Arc::clone(&scheduler);
            async move {
                match item {
                    Err(e) => Err(scheduler.explain(e).await),
                    ok => ok,
                }
            }
        });
        let stream = CancelOnDrop {
            inner: Box::pin(stream),
            input: Arc::clone(&self.input),
            scheduler: Arc::clone(&self.scheduler),
            ended: false,
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// A distributed query's stream that cancels its job when it is dropped before it ended: the
/// caller stopped reading (a `LIMIT` met on the client, a dropped future, Ctrl-C in the
/// shell). Ballista's client only polls the job; without this the cluster would run the job
/// to its end for nobody.
struct CancelOnDrop<S> {
    inner: std::pin::Pin<Box<S>>,
    /// The [`JobExec`] (or Ballista's `DistributedQueryExec`), which knows the job's id once
    /// the scheduler took it.
    input: Arc<dyn ExecutionPlan>,
    scheduler: Arc<Scheduler>,
    /// Set at the stream's end or first error: nothing left to cancel.
    ended: bool,
}

impl<S: futures::Stream> futures::Stream for CancelOnDrop<S> {
    type Item = S::Item;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        let item = self.inner.as_mut().poll_next(cx);
        if let std::task::Poll::Ready(None) = item {
            self.ended = true;
        }
        item
    }
}

impl<S> Drop for CancelOnDrop<S> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let Some(job) = job_of(&self.input) else {
            return; // not submitted yet: the scheduler never got it
        };
        // On a thread of its own, with a runtime of its own: a stream may be dropped outside
        // any runtime (a command-line tool's loop over the batches), or inside a
        // current-thread one that is about to stop; `wait_for_cancellations` waits for it.
        let scheduler = Arc::clone(&self.scheduler);
        PENDING.start();
        let sent = std::thread::Builder::new()
            .name("npy-cancel-job".into())
            .spawn(move || {
                let _done = Finished;
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async {
                    let _ = tokio::time::timeout(CANCEL_TIMEOUT, scheduler.cancel(&job)).await;
                });
            });
        if sent.is_err() {
            PENDING.finish();
        }
    }
}

/// How long a cancellation waits for the scheduler's answer.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// The cancellations sent and not yet answered, in the whole process.
static PENDING: Pending = Pending {
    count: std::sync::Mutex::new(0),
    done: std::sync::Condvar::new(),
};

struct Pending {
    count: std::sync::Mutex<usize>,
    done: std::sync::Condvar,
}

impl Pending {
    fn start(&self) {
        *self.count.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    }

    fn finish(&self) {
        let mut n = self.count.lock().unwrap_or_else(|p| p.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            self.done.notify_all();
        }
    }
}

/// Ends one pending cancellation when dropped, however its thread ends.
struct Finished;

impl Drop for Finished {
    fn drop(&mut self) {
        PENDING.finish();
    }
}

/// Waits until every distributed query dropped before its end has had its job's cancellation
/// answered by its scheduler (or the cancellation failed), for at most `timeout`; returns
/// whether none is left.
///
/// A dropped query's stream sends `CancelJob` to its scheduler on a thread of its own, so the
/// drop does not block; a program that exits right after dropping a query (on Ctrl-C, say)
/// calls this first, or its exit would cut the cancellation off and leave the cluster running
/// the job for nobody. Each cancellation gives up after 5 s by itself.
///
/// ```
/// use std::time::Duration;
/// // Nothing was dropped here: nothing to wait for.
/// assert!(npy_datafusion::ballista::wait_for_cancellations(Duration::from_millis(10)));
/// ```
pub fn wait_for_cancellations(timeout: Duration) -> bool {
    let n = PENDING.count.lock().unwrap_or_else(|p| p.into_inner());
    let (n, _) = PENDING
        .done
        .wait_timeout_while(n, timeout, |n| *n > 0)
        .unwrap_or_else(|p| p.into_inner());
    *n == 0
}

/// The id the scheduler gave the job of `plan` (a [`JobExec`] or Ballista's
/// `DistributedQueryExec`), once it did.
fn job_of(plan: &Arc<dyn ExecutionPlan>) -> Option<String> {
    use ballista_core::execution_plans::DistributedQueryExec;
    use datafusion_proto::protobuf::LogicalPlanNode;
    if let Some(exec) = plan.downcast_ref::<JobExec>() {
        return exec.job_id();
    }
    let exec = plan.downcast_ref::<DistributedQueryExec<LogicalPlanNode>>()?;
    exec.job_id().map(|id| id.to_string())
}

impl Scheduler {
    /// Asks the scheduler to cancel job `job` (its running tasks are stopped on the executors,
    /// nothing more is scheduled). Failures are ignored: the job may have just ended, or the
    /// scheduler be gone.
    async fn cancel(&self, job: &str) {
        use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
        use ballista_core::serde::protobuf::CancelJobParams;
        use ballista_core::utils::{create_grpc_client_connection, GrpcClientConfig};
        let url = format!("http://{}", self.addr);
        let Ok(channel) = create_grpc_client_connection(url, &GrpcClientConfig::default()).await
        else {
            return;
        };
        let _ = SchedulerGrpcClient::new(channel)
            .cancel_job(CancelJobParams {
                job_id: job.to_string(),
            })
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scheduler(addr: String) -> Scheduler {
        Scheduler {
            url: format!("df://{addr}"),
            addr,
        }
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_live_scheduler_keeps_the_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = scheduler(listener.local_addr().unwrap().to_string());
        let e = block_on(s.explain(DataFusionError::Execution("task failed".into())));
        assert_eq!(e.to_string(), "Execution error: task failed");
    }

    #[test]
    fn a_scheduler_dying_as_its_connection_breaks_is_named() {
        // The listener still accepts at the first check and is gone 150 ms later, as when a
        // killed process closes its connections before its listening socket.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            drop(listener);
        });
        let s = scheduler(addr.clone());
        let e = block_on(s.explain(DataFusionError::Execution(
            "h2 protocol error: error reading a body from connection: broken pipe".into(),
        )))
        .to_string();
        closer.join().unwrap();
        assert!(
            e.contains(&format!("lost the Ballista scheduler at df://{addr}")),
            "{e}"
        );
    }

    #[test]
    fn a_task_out_of_memory_names_the_executors_limit() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = scheduler(listener.local_addr().unwrap().to_string());
        let e = block_on(s.explain(DataFusionError::Execution(
            "Job failed: Task failed due to runtime execution error: ResourcesExhausted(\"Failed \
             to allocate additional 1.2 MB for GroupedHashAggregateStream[0]\")"
                .into(),
        )))
        .to_string();
        assert!(e.contains("--memory-limit"), "{e}");
        assert!(e.contains("Failed to allocate additional 1.2 MB"), "{e}");
        let e = block_on(s.explain(DataFusionError::ResourcesExhausted("no room".into())));
        assert!(e.to_string().contains("--concurrent-tasks"), "{e}");
    }

    #[test]
    fn a_task_without_room_to_write_names_the_work_dir() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = scheduler(listener.local_addr().unwrap().to_string());
        let ballista = "Job 038H8PBHEE000 failed: Job failed due to stage 0 failed: Task 4 in \
                        Stage 0 failed 3 times, fail the stage, most recent failure reason: \
                        \"Task failed due to IO error: DataFusionError(Shared(IoError(Os { \
                        code: 27, kind: FileTooLarge, message: \\\"File too large\\\" })))\"";
        let e = block_on(s.explain(DataFusionError::Execution(ballista.into()))).to_string();
        assert!(e.contains("--work-dir") && e.contains("EFBIG"), "{e}");
        assert!(e.contains("Job 038H8PBHEE000 failed"), "{e}");
        assert!(
            e.contains(
                "its last failure: Task failed due to IO error: Os { code: 27, kind: \
                 FileTooLarge, message: \\\"File too large\\\" }"
            ),
            "{e}"
        );
        let e = block_on(s.explain(DataFusionError::Execution(
            "Job failed: No space left on device (os error 28)".into(),
        )));
        assert!(e.to_string().contains("no space left"), "{e}");
        let other = "Job failed: Task failed due to IO error: IoError(Os { code: 2, kind: \
                     NotFound, message: \"No such file or directory\" })";
        let e = block_on(s.explain(DataFusionError::Execution(other.into()))).to_string();
        assert_eq!(e, format!("Execution error: {other}"));
    }

    /// Ballista's words for a task that failed by Ballista's chaos settings (from the fault
    /// tests' log), with the error unwrapped: the job, the stage, the task, its attempts and
    /// the error's own words, without `DataFusionError(Shared(External(..)))`.
    #[test]
    fn a_failed_tasks_last_error_is_unwrapped() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = scheduler(listener.local_addr().unwrap().to_string());
        let head = "Job 038H8PT2E8000 failed: Job failed due to stage 2 failed: Task 5 in Stage \
                    2 failed 3 times, fail the stage";
        let words = "ChaosExec: Injected TRANSIENT FAILURE (recoverable) on partition 0";
        for wrapped in [
            format!(
                "DataFusionError(Shared(External(DataFusionError(IoError(Custom {{ kind: \
                     Other, error: \\\"{words}\\\" }})))))"
            ),
            format!(
                "DataFusionError(Shared(IoError(Custom {{ kind: Other, error: \\\"{words}\\\" \
                     }})))"
            ),
        ] {
            let ballista = format!(
                "{head}, most recent failure reason: \"Task failed due to IO error: {wrapped}\"\n"
            );
            let e = block_on(s.explain(DataFusionError::Execution(ballista))).to_string();
            assert_eq!(
                e,
                format!(
                    "Execution error: {head}; its last failure: Task failed due to IO error: \
                     {words}"
                )
            );
        }
        // A fatal fault, as Ballista words it (not retried): the error straight after the stage.
        let straight = "Job 038H9GBVEA000 failed: Job failed due to stage 2 failed: Task failed \
                        due to runtime execution error: DataFusionError(Shared(External(\
                        DataFusionError(Execution(\"ChaosExec: Injected FATAL FAILURE on \
                        partition 0 (chaos testing)\")))))";
        let e = block_on(s.explain(DataFusionError::Execution(straight.into()))).to_string();
        assert_eq!(
            e,
            "Execution error: Job 038H9GBVEA000 failed: Job failed due to stage 2 failed: Task \
             failed due to runtime execution error: ChaosExec: Injected FATAL FAILURE on \
             partition 0 (chaos testing)"
        );
        // An execution error as the last of several attempts' reason: its words kept.
        let fatal = format!(
            "{head}, most recent failure reason: \"Task failed due to Runtime execution \
             error: DataFusionError(Execution(\\\"ChaosExec: Injected FATAL FAILURE\\\"))\""
        );
        let e = block_on(s.explain(DataFusionError::Execution(fatal))).to_string();
        assert!(
            e.ends_with(
                "its last failure: Task failed due to Runtime execution error: ChaosExec: \
                 Injected FATAL FAILURE"
            ),
            "{e}"
        );
        assert!(!e.contains("DataFusionError("), "{e}");
    }

    #[test]
    fn transport_words_are_told_from_a_schedulers_answer() {
        assert!(looks_like_transport(
            "Execution error: code: 'Unknown error', message: \"h2 protocol error: error \
             reading a body from connection\""
        ));
        assert!(looks_like_transport("transport error: Connection refused"));
        // A killed scheduler closing the connection of a status question in flight.
        assert!(looks_like_transport(
            "Execution error: Status { code: Cancelled, message: \"operation was canceled\", \
             source: Some(tonic::transport::Error(Transport, hyper::Error(Canceled, \
             \"connection closed\"))) }"
        ));
        assert!(!looks_like_transport("Execution error: task failed"));
    }

    #[test]
    fn a_gone_scheduler_is_named() {
        // A port that was free a moment ago: nothing listens there.
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        };
        let s = scheduler(addr.clone());
        let e = block_on(s.explain(DataFusionError::Execution(
            "Status { h2 protocol error }".into(),
        )))
        .to_string();
        assert!(
            e.contains(&format!("lost the Ballista scheduler at df://{addr}")),
            "{e}"
        );
        assert!(e.contains("run the query again"), "{e}");
        assert!(e.contains("h2 protocol error"), "{e}");
    }
}
