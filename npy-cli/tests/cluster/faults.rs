//! Faults that strike tasks mid-query on Ballista's own engine (issue 44), beyond `main.rs`'s
//! lost executors:
//!
//! 1. An executor that can no longer write its shuffle files: its file-size limit
//!    (RLIMIT_FSIZE, set on the running process with prlimit(2): it binds root as it binds a
//!    user, where a read-only directory does not) drops to 4 KiB while it runs tasks of a query.
//!    `npy-executor` ignores SIGXFSZ, so a shuffle write past the limit fails its task with
//!    EFBIG ("File too large"), as a full disk fails it with ENOSPC, and the executor lives on.
//!    With the room back after the first failure, the failed tasks run again and the answer is
//!    one process's; with the limit left in place, the query fails with an error that names the
//!    executors' `--work-dir` and the cause, or answers if the retries all land on the other
//!    executor. Both end within a bound of the settings.
//! 2. Ballista's chaos settings (`ballista.testing.chaos_execution.*`, sent with the client's
//!    session and read by the scheduler's planner, which wraps one node of the plan in a
//!    `ChaosExec`): with a fixed seed, a "transient" fault (an I/O error, which Ballista
//!    retries) is retried up to `--task-max-failures` attempts before the query fails, and a
//!    "fatal" one (an execution error) fails it at its first attempt; both with an error that
//!    names the injected fault, within a bound; the next query answers as one process does.
//!    A transient chaos fault cannot be outlived: `ChaosExec` draws a partition's fate from the
//!    seed (fixed in the plan, whether given or not) and the partition's number, so every
//!    attempt of the task fails alike. The retry that ends in the answer is fault 1's.
//!
//! `NPY_FAULT_LOOPS=N` runs each fault N times in its test (one cluster), printing each run's
//! times: the loop the issue asks for, with no flake, on a quiet machine.

use super::*;

/// How many times each fault test strikes (`NPY_FAULT_LOOPS`, 1 when unset).
fn fault_loops() -> u32 {
    match std::env::var("NPY_FAULT_LOOPS") {
        Ok(n) => n
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| panic!("NPY_FAULT_LOOPS={n}: expected a count of runs")),
        Err(_) => 1,
    }
}

/// A watchdog for a test of `loops` runs: 150 s, and `each` more per further run.
fn watchdog_for(loops: u32, each: Duration) -> procs::Watchdog {
    watchdog(Duration::from_secs(150) + each * (loops - 1))
}

/// The file-size limit an executor is cut down to: the first 4 KiB of a file go down, the
/// write that crosses them fails, as a filling disk fails a write mid-file.
const ROOM: u64 = 4096;

/// The scheduler's attempts of a task (its `--task-max-failures`).
const ATTEMPTS: u32 = 3;

impl Ready {
    /// A copy of each executor's log now, and where it ends.
    fn logs(&self) -> [(String, usize); 2] {
        [self.a.log(), self.b.log()].map(|l| {
            let n = l.len();
            (l, n)
        })
    }

    /// The query `query`'s result, `bound` at most after now.
    fn within(&self, query: JoinHandle<DfResult<String>>, bound: Duration) -> DfResult<String> {
        let got = self
            .rt
            .block_on(async { tokio::time::timeout(bound, query).await });
        got.unwrap_or_else(|_| panic!("the query did not end within {bound:?}"))
            .unwrap()
    }
}

/// The scheduler's flag for [`ATTEMPTS`].
fn max_failures() -> [String; 2] {
    ["--task-max-failures".to_string(), ATTEMPTS.to_string()]
}

/// The failures in each of `logs` (copies of the executors' logs) after its offset, whose
/// error says `what`.
fn failures(logs: &[(String, usize)], what: &str) -> usize {
    logs.iter()
        .flat_map(|(log, from)| Proc::task_failures(&log[*from..]))
        .filter(|e| e.contains(what))
        .count()
}

/// The tasks each of `logs` ran after its offset.
fn runs(logs: &[(String, usize)]) -> Vec<TaskId> {
    logs.iter()
        .flat_map(|(log, from)| Proc::task_runs(&log[*from..]))
        .map(|(t, _)| t)
        .collect()
}

/// Waits (30 s at most) until executor `b`, which had run `before` tasks, starts another while
/// `running()`, then cuts its room down to [`ROOM`]: the moment of the fault, which landed
/// while the query still ran.
fn out_of_room(b: &Proc, before: usize, running: &mut dyn FnMut() -> bool) -> Instant {
    let end = Instant::now() + Duration::from_secs(30);
    while b.tasks() == before {
        assert!(
            Instant::now() < end && running(),
            "executor b took no task of the query:\n{}",
            b.log()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    b.limit_file_size(Some(ROOM));
    let struck = Instant::now();
    assert!(
        running(),
        "the query ended before executor b's room ran out: the fault did not land mid-query"
    );
    struck
}

const TOO_LARGE: &str = "File too large";

#[test]
fn an_executor_out_of_room_for_its_shuffle_files_mid_query() {
    let _one = one_at_a_time();
    let loops = fault_loops();
    let _watchdog = watchdog_for(loops, Duration::from_secs(60));
    // The executors' logs through pipes: the limit on the files they write leaves them whole.
    let r = ready("npy-cluster-full", Log::Piped, &max_failures());
    let (b, want, clean) = (&r.b, &r.want, r.clean);
    // From the fault: each attempt of a failed task (at most the whole query's time each),
    // and the rest of the query.
    let bound = clean * (2 + ATTEMPTS) + Duration::from_secs(5);

    for round in 1..=loops {
        // The room comes back after the first failed write: the failed tasks run again and
        // the answer is one process's.
        let logs = r.logs();
        let query = start(&r.rt, &r.ctx, STAGES);
        let struck = out_of_room(b, b.tasks(), &mut || !query.is_finished());
        let (job, running) = running_tasks(b);
        let end = Instant::now() + Duration::from_secs(30);
        while failures(&[(b.log(), logs[1].1)], TOO_LARGE) == 0 {
            assert!(
                Instant::now() < end && !query.is_finished(),
                "no task of executor b failed to write past {ROOM} bytes:\n{}",
                b.log()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let failed_at = struck.elapsed();
        b.limit_file_size(None);
        let got = r.within(query, bound * 2);
        let took = struck.elapsed();
        assert_eq!(
            &got.unwrap_or_else(|e| panic!("run {round}: with the room back: {e}\n{}", b.log())),
            want
        );
        let logs = [r.a.log(), b.log()]
            .into_iter()
            .zip(logs)
            .map(|(log, (_, from))| (log, from))
            .collect::<Vec<_>>();
        let failed = failures(&logs, TOO_LARGE);
        let again: Vec<(u64, u64, u64)> = runs(&logs)
            .into_iter()
            .filter(|t| t.job == job && t.task_attempt > 0)
            .map(|t| (t.stage, t.task, t.task_attempt))
            .collect();
        eprintln!(
            "run {round}: executor b out of room mid-query (running {:?} of job {job}): its \
             first task failed {failed_at:?} after, {failed} failed in all ({TOO_LARGE}), \
             {again:?} ran again; the answer {took:?} after the fault, the room back at the \
             first failure (bound {bound:?}; {clean:?} without the fault)",
            running
                .iter()
                .map(|t| (t.stage, t.task))
                .collect::<Vec<_>>(),
        );
        assert!(
            !again.is_empty(),
            "no task ran again after failing:\n{}",
            logs[1].0
        );
        assert!(took < bound, "run {round}: {took:?} past {bound:?}");

        // The room stays gone: every task b runs fails. Either the query fails with an error
        // that names the cause and where (the executors' --work-dir), or the retries land on a
        // and it answers.
        let logs = r.logs();
        let query = start(&r.rt, &r.ctx, STAGES);
        let struck = out_of_room(b, b.tasks(), &mut || !query.is_finished());
        let got = r.within(query, bound * 2);
        let took = struck.elapsed();
        let failed = failures(&[(b.log(), logs[1].1)], TOO_LARGE);
        let on_a = Proc::task_runs(&r.a.log()[logs[0].1..]).len();
        let outcome = match got {
            Ok(got) => {
                assert_eq!(&got, want);
                "the answer".to_string()
            }
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains(TOO_LARGE) && e.contains("--work-dir") && !e.contains("panic"),
                    "{e}"
                );
                format!("the error: {e}")
            }
        };
        eprintln!(
            "run {round}: executor b out of room for good: {failed} of its tasks failed, a ran \
             {on_a}; {took:?} after the fault (bound {bound:?}), {outcome}"
        );
        assert!(failed > 0, "no task of b failed:\n{}", b.log());
        assert!(took < bound, "run {round}: {took:?} past {bound:?}");
        b.limit_file_size(None);
        assert_eq!(&answer(&r.rt, &r.ctx, STAGES), want);
    }

    // `npy sql --cluster` with b out of room: the answer `npy sql` prints, or that error with
    // exit status 1.
    let tool = |cluster: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_npy"));
        cmd.args(["sql", "--csv", STAGES, "-t", &format!("t={}", r.table)]);
        if let Some(url) = cluster {
            cmd.args(["--cluster", url]);
        }
        cmd.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let printed = tool(None).wait_with_output().unwrap();
    assert!(printed.status.success());
    let url = format!("df://127.0.0.1:{}", r.cluster.scheduler_port);
    let before = b.tasks();
    let mut npy = tool(Some(&url));
    let struck = out_of_room(b, before, &mut || npy.try_wait().unwrap().is_none());
    let out = npy.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "npy sql --cluster with executor b out of room: {}, {:?} after the fault: {stderr}",
        out.status,
        struck.elapsed()
    );
    if out.status.success() {
        assert_eq!(out.stdout, printed.stdout);
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("--work-dir") && stderr.contains("EFBIG"),
            "{stderr}"
        );
    }
}

/// `config()` with Ballista's chaos settings: the scheduler's planner wraps one node of each
/// query's plan, picked by `seed`, in a `ChaosExec` that fails each partition of it on its first
/// batch with `probability` (drawn from `seed` and the partition's number: the same partitions
/// on every attempt of every run), with a fault of `kind`.
fn chaos(kind: &str, probability: f64, seed: u64) -> SessionConfig {
    config()
        .set_bool("ballista.testing.chaos_execution.enabled", true)
        .set_str(
            "ballista.testing.chaos_execution.probability",
            &probability.to_string(),
        )
        .set_str("ballista.testing.chaos_execution.fault_type", kind)
        .set_str("ballista.testing.chaos_execution.seed", &seed.to_string())
}

/// The chaos seed: with this table and [`STAGES`], it wraps a node of the query's last stage
/// (stage 2 of 0, 1, 2), so the fault strikes after the first two stages ran on both
/// executors; seeds 3 and 4 strike in stage 1, 2 and 7 in stage 0.
const SEED: u64 = 1;

/// A query with chaos of `kind` on `ctx`: its time, its error (it must fail), how many of its
/// tasks failed with the injected fault, and its tasks (all attempts).
fn chaos_query(
    r: &Ready,
    ctx: &SessionContext,
    kind: &str,
) -> (Duration, String, usize, Vec<TaskId>) {
    let logs = r.logs();
    let t = Instant::now();
    let e = r
        .within(start(&r.rt, ctx, STAGES), Duration::from_secs(60))
        .expect_err("the fault fails the query")
        .to_string();
    let took = t.elapsed();
    let logs: Vec<(String, usize)> = [r.a.log(), r.b.log()]
        .into_iter()
        .zip(logs)
        .map(|(log, (_, from))| (log, from))
        .collect();
    let injected = format!("Injected {} FAILURE", kind.to_uppercase());
    (took, e, failures(&logs, &injected), runs(&logs))
}

#[test]
fn ballistas_chaos_faults_in_tasks() {
    let _one = one_at_a_time();
    let loops = fault_loops();
    let _watchdog = watchdog_for(loops, Duration::from_secs(30));
    let r = ready("npy-cluster-chaos", Log::File, &max_failures());
    let clean = r.clean;
    // Sessions with chaos: every partition of the wrapped node fails.
    let transient = sessions(&r.rt, &r.cluster, chaos("transient", 1.0, SEED), &r.table).0;
    let fatal = sessions(&r.rt, &r.cluster, chaos("fatal", 1.0, SEED), &r.table).0;

    for round in 1..=loops {
        // A transient fault (an I/O error): the scheduler runs the failed task again, up to
        // its --task-max-failures attempts; the partition fails on each (its draw is seeded),
        // and the query fails with the injected error, having run the stages before it.
        let (took, e, failed, ran) = chaos_query(&r, &transient, "transient");
        let again: Vec<&TaskId> = ran.iter().filter(|t| t.task_attempt > 0).collect();
        let last = again.iter().map(|t| t.task_attempt).max();
        let stage = again.iter().map(|t| t.stage).max();
        // From the first task: the stages before the fault (at most the query), then each
        // attempt of the failed task (at most the query each).
        let bound = clean * (1 + ATTEMPTS) + Duration::from_secs(5);
        eprintln!(
            "run {round}, transient: {failed} attempts failed, {:?} ran again, of stage \
             {stage:?}; the query failed {took:?} after it started (bound {bound:?}; {clean:?} \
             without the fault): {e}",
            again
                .iter()
                .map(|t| (t.task, t.task_attempt))
                .collect::<Vec<_>>(),
        );
        let injected = "Injected TRANSIENT FAILURE";
        assert!(
            e.contains(injected) && e.contains(&format!("failed {ATTEMPTS} times")),
            "{e}"
        );
        // The task's error in its own words, not Ballista's nested `Debug` forms.
        assert!(
            e.contains("its last failure: ") && !e.contains("DataFusionError("),
            "{e}"
        );
        assert_eq!(last, Some(u64::from(ATTEMPTS) - 1), "{ran:?}");
        assert!(failed >= ATTEMPTS as usize, "{failed} failed: {ran:?}");
        // Mid-query: the tasks of the stages before the failed one ran first.
        let stage = stage.expect("a failed stage");
        assert!(stage > 0 && ran.iter().any(|t| t.stage < stage), "{ran:?}");
        assert!(took < bound, "run {round}: {took:?} past {bound:?}");

        // A fatal fault (an execution error): not run again; the query fails at once.
        let (took, e, failed, ran) = chaos_query(&r, &fatal, "fatal");
        let bound = clean * 2 + Duration::from_secs(5);
        eprintln!(
            "run {round}, fatal: {failed} tasks failed, {} ran; the query failed {took:?} after \
             it started (bound {bound:?}): {e}",
            ran.len()
        );
        assert!(
            e.contains("Injected FATAL FAILURE") && !e.contains("panic"),
            "{e}"
        );
        assert!(!e.contains("DataFusionError("), "{e}");
        assert!(failed > 0, "no task failed: {ran:?}");
        assert!(
            ran.iter().all(|t| t.task_attempt == 0),
            "a task failed by a fatal fault ran again: {ran:?}"
        );
        assert!(took < bound, "run {round}: {took:?} past {bound:?}");

        // The cluster is none the worse.
        assert_eq!(answer(&r.rt, &r.ctx, STAGES), r.want);
    }
    // The settings reached the scheduler's planner with the client's session.
    assert!(
        r.scheduler
            .log()
            .contains("A ChaosExec node has been injected"),
        "{}",
        r.scheduler.log()
    );
}
