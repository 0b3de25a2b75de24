//! Ctrl-C during long reads: the work runs on a worker thread while the calling thread, the
//! GIL released between checks, polls for signals every 50 ms. On `KeyboardInterrupt` (or any
//! exception a signal handler raises) the worker is told to stop at its next chunk, and the
//! exception is raised once it has.

use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::IntoPy;

/// How long the calling thread waits between checks for signals.
const POLL: Duration = Duration::from_millis(50);

/// Bytes read between two looks at the cancel flag.
const CHUNK: usize = 8 << 20;

/// Runs `work` (given the cancel flag) on a worker thread, raising what a signal handler
/// raises (`KeyboardInterrupt` for Ctrl-C) as soon as the worker has stopped.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> npy_serde::Result<T> + Send,
) -> PyResult<T> {
    let cancel = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (tx, mut rx) = mpsc::sync_channel(1);
        let cancel = &cancel;
        let worker = s.spawn(move || {
            let _ = tx.send(work(cancel));
        });
        loop {
            // The receiver goes into the GIL-free wait and comes back (it is `Send`, not `Sync`).
            let (got, back) = py.detach(move || (rx.recv_timeout(POLL), rx));
            rx = back;
            match got {
                Ok(result) => return result.py(),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // The worker ended without sending: it panicked.
                    let why = worker
                        .join()
                        .err()
                        .and_then(|p| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "the reading thread stopped".into());
                    return Err(crate::errors::value_error(format!("internal error: {why}")));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        cancel.store(true, Ordering::Relaxed);
                        py.detach(move || {
                            let _ = rx.recv();
                        });
                        return Err(e);
                    }
                }
            }
        }
    })
}

/// The error a read stopped by the flag returns (replaced by the signal's exception).
fn cancelled() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "interrupted")
}

/// Fills `buf` from `r` in chunks, stopping early when `cancel` is set.
pub fn read_exact_cancellable<R: Read + ?Sized>(
    r: &mut R,
    buf: &mut [u8],
    cancel: &AtomicBool,
) -> io::Result<()> {
    for chunk in buf.chunks_mut(CHUNK) {
        if cancel.load(Ordering::Relaxed) {
            return Err(cancelled());
        }
        r.read_exact(chunk)?;
    }
    Ok(())
}

/// `true` once the flag is set (for loops over files).
pub fn is_cancelled(cancel: &AtomicBool) -> bool {
    cancel.load(Ordering::Relaxed)
}

/// The error a loop stopped by the flag returns.
pub fn stopped() -> npy_serde::Error {
    cancelled().into()
}
