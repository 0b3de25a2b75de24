//! The processes of the test cluster: free ports, children that die with the test (a guard
//! that kills them on drop, and `PR_SET_PDEATHSIG` should the test process itself be killed),
//! their output in a log file each, and a watchdog that aborts a test running past its bound.

use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on now (the OS's pick; it could be taken again before it is used,
/// which the test would report as a process failing to start).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// A child process, its output in `log`; killed (SIGKILL) and reaped on drop.
pub struct Proc {
    pub name: String,
    child: Option<Child>,
    log: PathBuf,
}

impl Proc {
    /// Starts `exe args` with stdout and stderr into `dir/name.log`, and `env` in its
    /// environment in place of the test's own `AWS_*` variables. The child gets SIGKILL
    /// when the thread that started it (this test's) exits, even if the test process is
    /// killed without unwinding.
    pub fn start(
        name: &str,
        exe: &str,
        args: &[String],
        env: &[(String, String)],
        dir: &Path,
    ) -> Proc {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).expect("a log file");
        let err = out.try_clone().expect("a log file");
        let mut cmd = Command::new(exe);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap_or_else(|e| panic!("{exe}: {e}"));
        Proc {
            name: name.to_string(),
            child: Some(child),
            log,
        }
    }

    /// What the process printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The tasks it ran: Ballista's own line per task (`npy-executor --log-tasks`), tasks
    /// pushed by the scheduler or pulled.
    pub fn tasks(&self) -> usize {
        let log = self.log();
        log.matches("Execute task  : [").count() + log.matches("Received task: [").count()
    }

    /// The tasks pushed to it that it started (`Execute task  : [TID ...]`), in order, each
    /// with whether it finished (`Finished task : [TID ...]`); from `log`, a copy of its log
    /// taken at some moment.
    pub fn task_runs(log: &str) -> Vec<(TaskId, bool)> {
        let ids = |marker: &str| -> Vec<TaskId> {
            log.match_indices(marker)
                .filter_map(|(i, _)| TaskId::parse(&log[i + marker.len()..]))
                .collect()
        };
        let finished = ids("Finished task : [");
        ids("Execute task  : [")
            .into_iter()
            .map(|t| {
                let done = finished.contains(&t);
                (t, done)
            })
            .collect()
    }

    /// Sends `signal` (SIGSTOP: the process hangs with its sockets open; SIGCONT: it goes on).
    pub fn signal(&self, signal: libc::c_int) {
        let Some(child) = &self.child else {
            panic!("{} is not running", self.name);
        };
        let pid = libc::pid_t::try_from(child.id()).expect("a pid");
        // SAFETY: kill(2) with the pid of our own unreaped child: it cannot name another
        // process, and touches no memory.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(
            rc,
            0,
            "kill({pid}, {signal}): {}",
            std::io::Error::last_os_error()
        );
    }

    /// SIGKILL, and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits until something accepts connections on `port`, failing with the log if the
    /// process exits or `within` passes first.
    pub fn wait_listening(&mut self, port: u16, within: Duration) {
        let end = Instant::now() + within;
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("{} exited ({status}):\n{}", self.name, self.log());
            }
            assert!(
                Instant::now() < end,
                "{} not listening on {port} after {within:?}:\n{}",
                self.name,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A task as Ballista's executor names it: `TID JOB/STAGE.STAGE_ATTEMPT/TASK.TASK_ATTEMPT`.
/// A stage's first tasks are numbered from 0, one per partition; the scheduler gives a task it
/// runs again (its executor lost) the next free number of the stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskId {
    pub job: String,
    pub stage: u64,
    pub stage_attempt: u64,
    pub task: u64,
    pub task_attempt: u64,
}

impl TaskId {
    /// The id at the start of `s` (`TID j/s.a/t.a]...`).
    fn parse(s: &str) -> Option<TaskId> {
        let s = s.strip_prefix("TID ")?;
        let s = &s[..s.find(']')?];
        let (job, rest) = s.split_once('/')?;
        let (stage, task) = rest.split_once('/')?;
        let pair = |t: &str| -> Option<(u64, u64)> {
            let (a, b) = t.split_once('.')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        };
        let ((stage, stage_attempt), (task, task_attempt)) = (pair(stage)?, pair(task)?);
        Some(TaskId {
            job: job.to_string(),
            stage,
            stage_attempt,
            task,
            task_attempt,
        })
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Aborts the test process (its children die with it: `PR_SET_PDEATHSIG`) if the test is
/// still running `bound` after this call; dropping the guard (the test's end) disarms it.
#[must_use = "the watchdog is disarmed when its guard is dropped"]
pub fn watchdog(bound: Duration) -> Watchdog {
    let (disarm, armed) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = armed.recv_timeout(bound) {
            eprintln!("the cluster test ran past its bound of {bound:?}: aborting");
            std::process::abort();
        }
    });
    Watchdog { _disarm: disarm }
}

/// A running [`watchdog`]: disarmed on drop.
pub struct Watchdog {
    _disarm: std::sync::mpsc::Sender<()>,
}
