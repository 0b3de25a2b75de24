//! The interactive `npy sql` session (features `datafusion` and `parquet`), driven through a
//! pseudo-terminal as a user types: the banner, `\d` and `\d NAME`, a statement over two
//! lines, `\format`, `\timing`, an error that leaves the session going, line editing
//! (backspace), history (the up arrow, and the history file), Ctrl-C dropping a typed line,
//! `\q`. Without a terminal and without a query, the statements come from standard input.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness::Dir;

#[derive(serde::Serialize, npy_serde::NpyRecord)]
struct Rec {
    id: i64,
    flag: u8,
}

/// A process on the slave side of a pseudo-terminal; what it writes is gathered from the
/// master side by a thread.
struct Terminal {
    master: std::fs::File,
    seen: Arc<Mutex<Vec<u8>>>,
    /// Where the next `expect` starts looking.
    from: usize,
    child: std::process::Child,
}

impl Terminal {
    fn spawn(cmd: &mut Command) -> Terminal {
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes the two descriptors it opens to the pointers, which point to
        // live locals; the name, termios and winsize arguments may be null.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors were just opened by openpty and are owned by nothing else.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
        cmd.stdin(io(&slave)).stdout(io(&slave)).stderr(io(&slave));
        // SAFETY: between fork and exec the closure calls only async-signal-safe functions
        // (setsid, ioctl): the child leads a new session whose controlling terminal is the
        // pseudo-terminal (its standard input), so that Ctrl-C reaches it as a terminal would.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                libc::ioctl(0, libc::TIOCSCTTY, 0);
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        drop(slave);
        let master = std::fs::File::from(master);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once the child has exited and the slave side is closed.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal {
            master,
            seen,
            from: 0,
            child,
        }
    }

    fn send(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits until the output since the last match holds `text` (10 s at most); returns the
    /// output up to it and moves past it.
    fn expect(&mut self, text: &str) -> String {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            {
                let seen = self.seen.lock().unwrap();
                let now = String::from_utf8_lossy(&seen[self.from..]).into_owned();
                if let Some(at) = now.find(text) {
                    self.from += now[..at + text.len()].len();
                    return now[..at + text.len()].to_string();
                }
                if Instant::now() > end {
                    panic!("waited 10 s for {text:?}; the terminal shows:\n{now}");
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_interactive_session_on_a_terminal() {
    let d = Dir::new("shell");
    let recs: Vec<Rec> = (0..10)
        .map(|i| Rec {
            id: i,
            flag: (i % 2) as u8,
        })
        .collect();
    npy_serde::to_path(d.file("t.npy"), &recs).unwrap();
    let history = d.file("history");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_npy"));
    cmd.args(["sql", "-t", &format!("t={}", d.join("t.npy"))])
        .args(["-t", &format!("u={}", d.join("t.npy"))])
        .env("NPY_SQL_HISTORY", &history)
        .env("TERM", "xterm");
    let mut term = Terminal::spawn(&mut cmd);
    term.expect("2 tables: t, u");
    term.expect("npy> ");

    term.send("\\d\r");
    let shown = term.expect("npy> ");
    assert!(shown.contains("| t ") && shown.contains("| u "), "{shown}");
    term.send("\\d t\r");
    let shown = term.expect("npy> ");
    assert!(
        shown.contains("| id ") && shown.contains("Int64"),
        "{shown}"
    );
    assert!(
        shown.contains("| flag ") && shown.contains("UInt8"),
        "{shown}"
    );

    // A statement over two lines.
    term.send("SELECT flag, count(*) AS n\r");
    term.expect("  -> ");
    term.send("FROM t GROUP BY flag ORDER BY flag;\r");
    let shown = term.expect("npy> ");
    assert!(
        shown.contains("| 0    | 5 |") && shown.contains("| 1    | 5 |"),
        "{shown}"
    );
    assert!(shown.contains("2 rows in "), "{shown}");

    term.send("\\format csv\r");
    term.expect("format is csv");
    term.expect("npy> ");
    term.send("\\timing off\r");
    term.expect("timing is off");
    term.expect("npy> ");
    term.send("SELECT sum(id) AS s FROM u;\r");
    let shown = term.expect("npy> ");
    assert!(shown.contains("s\r\n45\r\n"), "{shown}");
    assert!(!shown.contains("rows in"), "{shown}");

    // An error, and the session goes on.
    term.send("SELECT nope FROM t;\r");
    let shown = term.expect("npy> ");
    assert!(
        shown.contains("Error: ") && shown.contains("nope"),
        "{shown}"
    );

    // Line editing: a backspace; then the up arrow recalls it from the history.
    term.send("SELECT 4X\x7f1 + 1 AS x;\r");
    let shown = term.expect("npy> ");
    assert!(shown.contains("x\r\n42\r\n"), "{shown}");
    term.send("\x1b[A");
    term.expect("SELECT 41 + 1 AS x;");
    term.send("\r");
    let shown = term.expect("npy> ");
    assert!(shown.contains("x\r\n42\r\n"), "{shown}");

    // Ctrl-C drops the line being typed.
    term.send("SELECT 'dropped'\x03");
    term.expect("npy> ");
    term.send("\\bogus\r");
    let shown = term.expect("npy> ");
    assert!(shown.contains("unknown command \\bogus"), "{shown}");

    term.send("\\q\r");
    let end = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = term.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "npy sql did not leave on \\q");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(kept.contains("SELECT 41 + 1 AS x;"), "{kept}");
    assert!(!kept.contains("dropped"), "{kept}");
}

#[test]
fn without_a_terminal_or_a_query_the_statements_come_from_standard_input() {
    let d = Dir::new("shell-stdin");
    let recs: Vec<Rec> = (0..4).map(|i| Rec { id: i, flag: 0 }).collect();
    npy_serde::to_path(d.file("t.npy"), &recs).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_npy"))
        .args(["sql", "--csv", "-t", &format!("t={}", d.join("t.npy"))])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"CREATE VIEW v AS SELECT id FROM t WHERE id > 1;\nSELECT count(*) AS n FROM v;\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n\n2\n");
}
