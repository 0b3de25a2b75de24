//! A global allocator that forwards every call to `System` and tells a hook how the heap
//! changed: the memory bench (`benches/memory.rs`) and the allocation watch of the cross-crate
//! tests (`tests/tests/it/alloc.rs`, which includes this file by path: the tests crate cannot be
//! a dependency of the benches without compiling npy-serde twice) count with it.

use std::alloc::{GlobalAlloc, Layout, System};

/// `System`, calling the hook `self.0(freed, allocated)` after each call that succeeded:
/// `(0, size)` for an allocation, `(size, 0)` for a free, `(old, new)` for a reallocation.
///
/// The hook must neither allocate nor unwind (it runs inside the allocator).
pub struct Counting(pub fn(usize, usize));

// SAFETY: every method forwards to `System` unchanged; the hook, by its contract above, neither
// allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            (self.0)(0, layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            (self.0)(0, layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) };
        (self.0)(layout.size(), 0);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            (self.0)(layout.size(), new_size);
        }
        p
    }
}
