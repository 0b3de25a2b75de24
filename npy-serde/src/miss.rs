//! [`Miss`]: the one error of the runtime-planned and exact tiers, reading and writing. A miss
//! carries nothing: the caller decodes (or encodes) the element again on the general tier,
//! which reports real errors with their position.

use serde::de;

/// A miss (out of line: the hot loops keep only the branch).
#[cold]
#[inline(never)]
pub(crate) fn miss() -> Miss {
    Miss
}

/// The only error of the fast and exact tiers: not decoded (or encoded) here. Never shown to users (the
/// element is decoded again by the general path, which reports real errors). Zero-sized, so
/// that `Result<T, Miss>` is `T` plus a flag, which the optimizer keeps in registers; with the
/// crate's boxed error overlaid on `T`, every element went through a stack temporary, whose
/// narrow stores the copy into the `Vec` then read back wide (a store-forwarding stall).
#[derive(Debug)]
pub(crate) struct Miss;

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not on the fast path")
    }
}

impl std::error::Error for Miss {}

impl de::Error for Miss {
    #[cold]
    fn custom<M: std::fmt::Display>(_msg: M) -> Self {
        Miss
    }
}

/// The exact tier of writing (`crate::write::exact`) misses the same way.
impl serde::ser::Error for Miss {
    #[cold]
    fn custom<M: std::fmt::Display>(_msg: M) -> Self {
        Miss
    }
}

pub(crate) type Result<T> = std::result::Result<T, Miss>;
