//! What the reader's and the writer's worker threads share: how many of them, how far ahead
//! of the caller they run, and locks that outlive a worker's panic.

use std::sync::{Condvar, Mutex, MutexGuard};

/// Batches queued ahead: waiting to be encoded by the writer's workers, or decoded and not yet
/// taken from the reader's worker of the row group being read.
pub const QUEUED_BATCHES: usize = 4;

/// Worker threads for `tasks` independent tasks: the available cores (one without feature
/// `parallel`), at most one per task.
pub(super) fn workers_for(tasks: usize) -> usize {
    let cores = if cfg!(feature = "parallel") {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    };
    cores.min(tasks).max(1)
}

/// Locks `state`, recovering it if a thread panicked holding the lock: the pools never
/// panic there (encoding and decoding run unlocked), so the state is whole.
pub(super) fn lock<T>(state: &Mutex<T>) -> MutexGuard<'_, T> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Waits on `signal` with `guard`, recovering the state as [`lock`].
pub(super) fn wait<'a, T>(signal: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    signal.wait(guard).unwrap_or_else(|p| p.into_inner())
}
