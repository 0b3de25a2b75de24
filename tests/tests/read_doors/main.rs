//! The read doors: every way to read a whole array into a `Vec<T>`, checked by one suite.
//!
//! The doors are the rows of the tables in [`doors`]: the serde doors (`from_slice_serde`,
//! `from_reader_serde`, `from_path_serde`, `MmapArray::to_vec_serde`, the streaming
//! `records_serde` of a reader and of a map, collected; each as a `ReaderBuilder` method and,
//! where one exists, as a free function) for any `Deserialize` type, and the record doors
//! (`from_slice`, `from_reader`, `from_path`, `MmapArray::to_vec`, `records`, ...) for a type that
//! derives `NpyRecord`. Adding a door is one row: every check below then runs it.
//!
//! The contract checked:
//!
//! * every door gives every element of the array, flattened in logical C order, with the values
//!   and errors of `deserialize_slice::<Vec<T>>` (for 1-D arrays; flattened for N-d), wherever a
//!   miss of the fast tiers happens (first element, middle of a run, a block boundary of a
//!   reader) and whatever the shape and byte order;
//! * a record door's outcome is exactly its serde twin's (values, or error kind, message and
//!   position), only faster: when the file's element layout is `T::LAYOUT` (or byte-swapped
//!   throughout) and serde's field list is the file's names in order, elements go through the
//!   exact tier (`npy-serde/src/read/exact.rs`), whose count `npy_serde::tier::take` (feature
//!   `tier-hook`) gives, to check that it engages where it should (and where a miss happens).
//!
//! The inputs are written by `npy_serde::to_vec`, built from a `Header` and raw bytes, or written
//! by NumPy (the fixtures).

mod borrow;
mod data;
mod doors;
mod exact_w2;
mod fixtures;
mod limits;
mod names;
mod scalars;
mod serde_misses;
mod serde_types;
mod shapes;
mod streams;
mod types;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

// ---------------------------------------------------------------------------------------------
// Allocation watch (for the hostile-header tests)
// ---------------------------------------------------------------------------------------------

/// The system allocator, remembering per thread the largest allocation that succeeded (the
/// library spawns no threads, so a test sees exactly the allocations of its own calls).
struct WatchAlloc;

thread_local! {
    static LARGEST_ALLOC: Cell<usize> = const { Cell::new(0) };
}

fn note_alloc(size: usize) {
    // `try_with`: allocations can happen while the thread's locals are being torn down.
    let _ = LARGEST_ALLOC.try_with(|c| c.set(c.get().max(size)));
}

/// Runs `f` and returns its result and the largest allocation it made on this thread.
pub fn largest_alloc_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST_ALLOC.with(|c| c.set(0));
    let r = f();
    (r, LARGEST_ALLOC.with(Cell::get))
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the only
// addition is an update of a thread-local `Cell` (const-initialized, no destructor), which
// touches no allocated memory and never allocates.
unsafe impl GlobalAlloc for WatchAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged (the caller upholds `GlobalAlloc::alloc`'s contract).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            note_alloc(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note_alloc(new_size);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: WatchAlloc = WatchAlloc;

/// Far more than any array of these tests needs (the largest are a few MiB).
pub const GIANT: usize = 1 << 30;
