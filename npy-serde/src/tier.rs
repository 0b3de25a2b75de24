//! Which tier served each element: a hook for tests, so that a test can check that the fast
//! tiers engage where they should (and where a miss happens) without guessing from type names.
//!
//! Reading and writing go through up to three tiers per element (see [`read`](crate::read)):
//! the exact tier of `NpyRecord` types, the runtime-planned tier, and the general tier, which
//! decodes an element again after a miss. With the `tier-hook` feature, every element served
//! is counted per thread by the tier that produced the result, and [`take`] returns (and
//! resets) the counts. Without the feature the counting compiles to nothing.
//!
//! The feature is for tests only: the counts are per thread, and their meaning may change
//! with the tiers.
//!
//! ```
//! # #[cfg(feature = "tier-hook")] {
//! let file = npy_serde::to_vec(&[1.5f64, 2.5])?;
//! npy_serde::tier::take();
//! let v: Vec<f64> = npy_serde::from_slice(&file)?;
//! assert_eq!(npy_serde::tier::take().exact, 2);
//! # }
//! # Ok::<(), npy_serde::Error>(())
//! ```

/// A decoding (or encoding) tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// The compile-time layout of an `NpyRecord` type (`from_*`, `to_*`).
    Exact,
    /// The runtime-planned tier: exact requests, planned once per array.
    Planned,
    /// The general tier: every request and conversion, errors with their position.
    General,
}

/// Elements served by each tier on this thread since the last [`take`].
#[cfg_attr(not(feature = "tier-hook"), allow(dead_code))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Served {
    /// By [`Tier::Exact`].
    pub exact: u64,
    /// By [`Tier::Planned`].
    pub planned: u64,
    /// By [`Tier::General`] (including elements it decoded again after a miss, and elements
    /// whose decoding failed: the general tier reports every error).
    pub general: u64,
}

#[cfg(feature = "tier-hook")]
thread_local! {
    static SERVED: std::cell::Cell<Served> = const {
        std::cell::Cell::new(Served { exact: 0, planned: 0, general: 0 })
    };
}

/// Counts `n` elements served by `tier` (nothing without the `tier-hook` feature).
#[inline(always)]
pub(crate) fn served(tier: Tier, n: u64) {
    #[cfg(feature = "tier-hook")]
    SERVED.with(|c| {
        let mut s = c.get();
        match tier {
            Tier::Exact => s.exact += n,
            Tier::Planned => s.planned += n,
            Tier::General => s.general += n,
        }
        c.set(s);
    });
    #[cfg(not(feature = "tier-hook"))]
    let _ = (tier, n);
}

/// The counts on this thread since the last call, reset to zero (feature `tier-hook`).
#[cfg(feature = "tier-hook")]
pub fn take() -> Served {
    SERVED.with(|c| c.replace(Served::default()))
}
