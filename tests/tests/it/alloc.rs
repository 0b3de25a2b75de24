//! The allocation watch of this test binary: one global allocator (a binary has one) that
//! counts, per thread, the bytes live and the largest single allocation, so that a test can
//! check the memory a call of the library used on the calling thread (tests run in parallel
//! threads; the tested calls spawn no threads of their own, or, where they do, what those
//! threads allocate is not counted).
//!
//! [`peak_alloc`] serves `hostile` and `npz_hostile` (bounded memory on hostile input),
//! [`largest_alloc_of`] serves `read_doors::limits` (no allocation sized by a lying header).

use std::cell::Cell;

#[path = "../../../npy-serde/benches/common/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::Counting;

thread_local! {
    /// Bytes live on this thread: allocated here less freed here, never below zero (a free of
    /// memory another thread allocated stops at zero, so what is allocated afterwards counts
    /// in full).
    static LIVE: Cell<usize> = const { Cell::new(0) };
    /// The most `LIVE` has been since [`peak_alloc`] reset it.
    static PEAK: Cell<usize> = const { Cell::new(0) };
    /// The largest single allocation (or reallocation's new size) since [`largest_alloc_of`]
    /// reset it.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

/// The allocator's hook: `freed` and `allocated` bytes of one call on this thread.
fn note(freed: usize, allocated: usize) {
    // `try_with`: the allocator can be called while thread-locals are being torn down.
    let _ = LIVE.try_with(|l| {
        let now = l.get().saturating_sub(freed) + allocated;
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
    let _ = LARGEST.try_with(|c| c.set(c.get().max(allocated)));
}

#[global_allocator]
static ALLOC: Counting = Counting(note);

/// Runs `f` and returns its result and the most bytes it had allocated at once on this thread
/// (beyond what was live before it).
pub fn peak_alloc<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    (r, (PEAK.with(Cell::get) - base) as u64)
}

/// Runs `f` and returns its result and the largest allocation it made on this thread.
pub fn largest_alloc_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST.with(|c| c.set(0));
    let r = f();
    (r, LARGEST.with(Cell::get))
}
