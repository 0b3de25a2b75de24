//! Allocating the `Vec` that a whole array is read into: once, at its final size, backed by
//! huge pages where the kernel offers them.
//!
//! Building a large `Vec` element by element costs as much in page faults as in decoding: a
//! fresh 4 KiB page is faulted in (and zeroed) for every 4 KiB written. NumPy asks for
//! transparent huge pages (`madvise(MADV_HUGEPAGE)`) on arrays of 4 MiB or more, so that
//! one fault maps 2 MiB; so do we. Measured on a 2-core VM (Linux, THP in `madvise` mode),
//! decoding 20M 33-byte records into a fresh `Vec` ran at 1.3-1.4 GB/s with 4 KiB pages and
//! 1.9-2.1 GB/s with huge pages.

/// Allocations at least this large are advised to use huge pages (NumPy's threshold).
const HUGE_MIN: usize = 4 << 20;

/// An empty `Vec` with room for exactly `count` elements, or, when that much cannot be
/// reserved (or `count` does not fit in `usize`), an empty `Vec` that grows as elements are
/// pushed. Never aborts on a failed reservation.
///
/// `count` must already be bounded by the data actually present (each element has at least
/// one byte, or the count of zero-byte elements is limited separately): the reservation is
/// `count * size_of::<T>()` bytes of address space, which the kernel only backs with memory as
/// the elements are written.
pub(crate) fn vec_for<T>(count: u64) -> Vec<T> {
    let mut v = Vec::new();
    if let Ok(n) = usize::try_from(count)
        && v.try_reserve_exact(n).is_ok()
    {
        advise_huge_pages(&mut v);
    }
    v
}

/// An empty `Vec` with room for exactly `count` elements whose bytes are all zero, backed by
/// huge pages when large; `None` if the memory cannot be had. The allocator hands out large
/// zeroed blocks as fresh pages, so the zeroing costs nothing up front. For [`super::bulk`],
/// which reads bytes into that room before any element is exposed.
pub(crate) fn zeroed<T>(count: usize) -> Option<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(count).ok()?;
    if layout.size() == 0 {
        return Some(Vec::new());
    }
    // SAFETY: the layout has a non-zero size (checked).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return None;
    }
    // SAFETY: `ptr` was allocated by the global allocator with the layout of `count` `T`s,
    // which is what a `Vec<T>` of capacity `count` holds; its length 0 exposes no element.
    let mut v = unsafe { Vec::from_raw_parts(ptr, 0, count) };
    advise_huge_pages(&mut v);
    Some(v)
}

/// Grows an empty `Vec` from [`zeroed`] by `more` elements of room, keeping the bytes already
/// in its room and zeroing the new ones; false if the memory cannot be had.
pub(crate) fn grow_zeroed<T>(v: &mut Vec<T>, more: usize) -> bool {
    debug_assert!(v.is_empty());
    let old = v.capacity();
    let Some(want) = old.checked_add(more) else {
        return false;
    };
    // Relative to the length, 0: this makes the capacity at least `want`. The allocator's
    // reallocation keeps the old room's bytes.
    if v.try_reserve_exact(want).is_err() {
        return false;
    }
    let size = size_of::<T>();
    // SAFETY: `old * size .. capacity * size` lies inside `v`'s allocation; writing zero bytes
    // there (no element is exposed: the length is 0) makes the whole room initialized bytes.
    unsafe {
        v.as_mut_ptr()
            .cast::<u8>()
            .add(old * size)
            .write_bytes(0, (v.capacity() - old) * size);
    }
    true
}

/// Advises the kernel to back `v`'s spare capacity with transparent huge pages, if it is at
/// least [`HUGE_MIN`] bytes. Best effort: failures (no THP support, another platform) are
/// ignored and only cost the advice.
fn advise_huge_pages<T>(v: &mut Vec<T>) {
    let elem = std::mem::size_of::<T>();
    let spare = v.capacity() - v.len();
    // No overflow: the allocation of `capacity * size_of::<T>()` bytes succeeded.
    let bytes = spare * elem;
    if elem == 0 || bytes < HUGE_MIN {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `sysconf` reads a constant of the system and touches no memory of ours.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let Ok(page) = usize::try_from(page) else {
            return;
        };
        if page == 0 {
            return;
        }
        let base = v.spare_capacity_mut().as_mut_ptr().cast::<u8>();
        let addr = base as usize;
        let Some(start) = addr.checked_next_multiple_of(page) else {
            return;
        };
        let end = (addr + bytes) / page * page;
        if end <= start {
            return;
        }
        // SAFETY: the range `start..end` (page-aligned, as madvise requires) lies inside `v`'s
        // own allocation (its spare capacity, which holds no initialized values). Advice
        // `MADV_HUGEPAGE` only changes how the kernel backs the pages when they are first
        // touched; it never changes their contents or whether they are mapped. A failure only
        // sets errno, which we ignore.
        let _ = unsafe {
            libc::madvise(
                base.wrapping_add(start - addr).cast::<libc::c_void>(),
                end - start,
                libc::MADV_HUGEPAGE,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_capacity_small_and_large() {
        let v: Vec<u64> = vec_for(10);
        assert_eq!((v.len(), v.capacity()), (0, 10));
        // Large enough to be advised (8 MiB): still an ordinary, usable Vec.
        let mut v: Vec<u64> = vec_for(1 << 20);
        assert_eq!(v.capacity(), 1 << 20);
        v.extend(0..1 << 20);
        assert_eq!(v[(1 << 20) - 1], (1 << 20) - 1);
    }

    #[test]
    fn impossible_reservation_falls_back_to_growth() {
        let mut v: Vec<u64> = vec_for(u64::MAX);
        assert_eq!(v.capacity(), 0);
        v.push(1);
        assert_eq!(v, [1]);
        let v: Vec<[u8; 1 << 20]> = vec_for(1 << 50);
        assert_eq!(v.capacity(), 0);
    }

    #[test]
    fn zero_sized_elements() {
        let mut v: Vec<()> = vec_for(1 << 40);
        v.push(());
        assert_eq!(v.len(), 1);
    }
}
