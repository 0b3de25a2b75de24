//! The processes of the test cluster: free ports, children that die with the test (a guard
//! that kills them on drop, and `PR_SET_PDEATHSIG` should the test process itself be killed),
//! their output in a log file each, and a watchdog that aborts a test running past its bound.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A port nobody listens on now (the OS's pick), and none this test process handed out
/// before: the OS may give the same port to two binds in a row once the first listener is
/// closed, which once gave an executor one port for both its Flight and its gRPC server. It
/// could still be taken by another process before it is used, which the test would report
/// as a process failing to start.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port on 127.0.0.1")
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// A child process, its output in `log`; killed (SIGKILL) and reaped on drop.
pub struct Proc {
    pub name: String,
    child: Option<Child>,
    log: PathBuf,
    /// With [`Log::Piped`]: the threads copying its stdout and stderr into `log`.
    copiers: Vec<JoinHandle<()>>,
}

/// Where a child writes its output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    /// Straight into its log file: what the file holds is what it wrote, at any moment.
    File,
    /// Into pipes that threads of the test copy into its log file, line by line: the child
    /// writes no file of its own, so a limit on the files it writes (RLIMIT_FSIZE) leaves its
    /// log whole; a line reaches the file a moment after it is written.
    Piped,
}

impl Proc {
    /// Starts `exe args` with stdout and stderr into `dir/name.log` (see [`Log`]), and `env`
    /// in its environment in place of the test's own `AWS_*` variables. The child gets
    /// SIGKILL when the thread that started it (this test's) exits, even if the test process
    /// is killed without unwinding.
    pub fn start(
        name: &str,
        exe: &str,
        args: &[String],
        env: &[(String, String)],
        dir: &Path,
        how: Log,
    ) -> Proc {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).expect("a log file");
        let (stdout, stderr) = match how {
            Log::File => (
                Stdio::from(out.try_clone().expect("a log file")),
                Stdio::from(out.try_clone().expect("a log file")),
            ),
            Log::Piped => (Stdio::piped(), Stdio::piped()),
        };
        let mut cmd = Command::new(exe);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
            cmd.env_remove(k);
        }
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{exe}: {e}"));
        let out = Arc::new(Mutex::new(out));
        let streams: [Option<Box<dyn Read + Send>>; 2] = [
            child.stdout.take().map(|s| Box::new(s) as _),
            child.stderr.take().map(|s| Box::new(s) as _),
        ];
        let copiers = streams
            .into_iter()
            .flatten()
            .map(|stream| {
                let out = Arc::clone(&out);
                std::thread::spawn(move || copy_lines(stream, &out))
            })
            .collect();
        Proc {
            name: name.to_string(),
            child: Some(child),
            log,
            copiers,
        }
    }

    /// The child's process id.
    fn pid(&self) -> libc::pid_t {
        let Some(child) = &self.child else {
            panic!("{} is not running", self.name);
        };
        libc::pid_t::try_from(child.id()).expect("a pid")
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
        let pid = self.pid();
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

    /// Sets the soft limit on the size of the files it writes (RLIMIT_FSIZE, through
    /// prlimit(2), which needs no privilege for one's own child; root is bound by it too):
    /// a write that would grow a regular file past `bytes` stops at the limit and then fails
    /// with EFBIG if the process ignores SIGXFSZ (`npy-executor` does); if not, the signal
    /// kills it. `None` lifts it to the hard limit again.
    pub fn limit_file_size(&self, bytes: Option<u64>) {
        let pid = self.pid();
        let mut now = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: prlimit(2) on our own unreaped child, reading into a local rlimit.
        let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, std::ptr::null(), &mut now) };
        assert_eq!(rc, 0, "prlimit({pid}): {}", std::io::Error::last_os_error());
        let new = libc::rlimit {
            rlim_cur: bytes.map_or(now.rlim_max, |b| b.min(now.rlim_max)),
            rlim_max: now.rlim_max,
        };
        // SAFETY: as above, with a local rlimit to set.
        let rc = unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, &new, std::ptr::null_mut()) };
        assert_eq!(
            rc,
            0,
            "prlimit({pid}, {bytes:?}): {}",
            std::io::Error::last_os_error()
        );
    }

    /// The errors of the tasks it ran that failed (`npy-executor --log-tasks` logs Ballista's
    /// `Task N failed: ERROR`), from `log`, a copy of its log taken at some moment.
    pub fn task_failures(log: &str) -> Vec<&str> {
        log.lines()
            .filter_map(|l| {
                let (_, rest) = l.split_once(" Task ")?;
                let (n, error) = rest.split_once(" failed: ")?;
                n.parse::<u64>().ok().map(|_| error)
            })
            .collect()
    }

    /// SIGKILL, and reaps it; its log is whole then.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for copier in self.copiers.drain(..) {
            let _ = copier.join();
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

/// Copies `stream` into `out` a line at a time (whole lines, so that two streams' lines do not
/// mix), until its end.
fn copy_lines(stream: Box<dyn Read + Send>, out: &Mutex<File>) {
    let mut lines = BufReader::new(stream);
    let mut line = Vec::new();
    while matches!(lines.read_until(b'\n', &mut line), Ok(n) if n > 0) {
        let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(&line);
        line.clear();
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
