//! A session inside a memory limit: [`memory_limited_context`] builds a `SessionContext` whose
//! sorts, aggregations and joins take their memory from one pool of a fixed size
//! ([`MemoryLimit`]), and spill to a temporary directory when it is full.
//!
//! ```
//! use datafusion::prelude::SessionConfig;
//! use npy_datafusion::{memory_limited_context, MemoryLimit};
//!
//! let limit: MemoryLimit = "256MiB".parse()?;
//! assert_eq!(limit.bytes(), 256 << 20);
//! let ctx = memory_limited_context(SessionConfig::new(), limit)?;
//! assert_eq!(ctx.runtime_env().memory_pool.reserved(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::num::NonZeroUsize;
use std::str::FromStr;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::{
    FairSpillPool, MemoryConsumer, MemoryLimit as PoolLimit, MemoryPool, MemoryReservation,
    TrackConsumersPool,
};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

/// A memory limit in bytes, parsed from `256MiB`, `1GiB`, `512M`, `2G`, `1000000` (bytes):
/// `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB` are powers of 1024, `KB`, `MB`, `GB`, `TB` powers of
/// 1000; a fraction is allowed (`1.5GiB`). Zero is refused.
///
/// ```
/// use npy_datafusion::MemoryLimit;
/// assert_eq!("1GiB".parse::<MemoryLimit>()?.bytes(), 1 << 30);
/// assert_eq!("1.5k".parse::<MemoryLimit>()?.bytes(), 1536);
/// assert_eq!("2MB".parse::<MemoryLimit>()?.bytes(), 2_000_000);
/// assert!("0".parse::<MemoryLimit>().is_err());
/// assert_eq!(MemoryLimit::new(3 << 20).unwrap().to_string(), "3.0 MiB");
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryLimit(NonZeroUsize);

impl MemoryLimit {
    /// A limit of `bytes` bytes (`None` for zero).
    ///
    /// ```
    /// assert_eq!(npy_datafusion::MemoryLimit::new(1024).unwrap().bytes(), 1024);
    /// ```
    pub fn new(bytes: usize) -> Option<Self> {
        NonZeroUsize::new(bytes).map(Self)
    }

    /// The limit in bytes.
    ///
    /// ```
    /// assert_eq!(npy_datafusion::MemoryLimit::new(7).unwrap().bytes(), 7);
    /// ```
    pub fn bytes(self) -> usize {
        self.0.get()
    }
}

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bytes() as f64;
        let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
        match units.iter().find(|(_, size)| b >= *size as f64) {
            Some((unit, size)) => write!(f, "{:.1} {unit}", b / *size as f64),
            None => write!(f, "{} bytes", self.bytes()),
        }
    }
}

impl FromStr for MemoryLimit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let text = s.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "t" | "tib" => 1 << 40,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            "tb" => 1_000_000_000_000,
            other => {
                return Err(format!(
                    "memory limit {s:?}: unknown unit {other:?} (use B, KiB, MiB, GiB, TiB, or \
                     KB, MB, GB, TB)"
                ))
            }
        };
        let value: f64 = number
            .parse()
            .map_err(|_| format!("memory limit {s:?}: expected a size such as 256MiB or 1GiB"))?;
        let bytes = value * scale as f64;
        if !(bytes >= 1.0 && bytes < usize::MAX as f64) {
            return Err(format!(
                "memory limit {s:?}: must be at least 1 byte and below {} bytes",
                usize::MAX
            ));
        }
        Self::new(bytes as usize).ok_or_else(|| format!("memory limit {s:?}: must not be zero"))
    }
}

/// A `SessionContext` with `config` whose operators share a memory pool of `limit` bytes
/// (DataFusion's `FairSpillPool`) and spill to a temporary directory. The `NPY` format is not
/// registered: call [`register_npy_format`](super::register_npy_format) for `STORED AS NPY`.
///
/// - **The pool**: DataFusion's `FairSpillPool`, not its `GreedyMemoryPool`. A query runs one
///   sort or aggregation per partition at once (`target_partitions` of them); the fair pool
///   gives each spilling consumer an equal share, so every partition spills a little rather
///   than the first ones taking everything and the later ones failing. Consumers that cannot
///   spill (a hash join's build side, a `GROUP BY`'s final merge of partial results) take what
///   is left over.
/// - **Sorts** set aside part of their share for merging what they spilled
///   (`datafusion.execution.sort_spill_reservation_bytes`, 10 MiB by default): at most a
///   quarter of each partition's share of the limit here.
/// - **Spilling**: DataFusion's disk manager, in a directory it creates under the OS's
///   temporary directory (`$TMPDIR`) and removes when the session ends.
/// - **Where it cannot spill**: the query fails with DataFusion's "Resources exhausted" error,
///   prefixed by this pool with the limit (`memory limit 256.0 MiB exceeded: ...`) and the
///   largest consumers.
///
/// # What the pool does not count
/// The pool counts what operators reserve, not every allocation. A `.npy` scan holds, per
/// partition, the batch being decoded and up to
/// 2 ranged reads (its prefetch) of `batch_size` records in flight:
/// at most `3 * batch_size * record_size` bytes, i.e. 1.5 MiB per partition for 64-byte records
/// at the default `batch_size` of 8192, and `target_partitions` times that in all.
/// This function leaves `batch_size` and `target_partitions` as `config` sets them;
/// lower them to shrink this further.
///
/// ```
/// use datafusion::prelude::SessionConfig;
/// use npy_datafusion::{memory_limited_context, MemoryLimit};
///
/// let rt = tokio::runtime::Runtime::new()?;
/// // Far too little to sort 100 000 rows in memory: the sort spills and still answers.
/// let ctx = memory_limited_context(SessionConfig::new(), MemoryLimit::new(2 << 20).unwrap())?;
/// let sql = "SELECT v FROM (SELECT (value * 7919) % 100003 AS v FROM range(100000)) \
///            ORDER BY v DESC LIMIT 1";
/// let batches = rt.block_on(async { ctx.sql(sql).await?.collect().await })?;
/// let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches)?.to_string();
/// assert!(text.contains("| 100002 |"), "{text}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn memory_limited_context(
    config: SessionConfig,
    limit: MemoryLimit,
) -> DfResult<SessionContext> {
    // A sort sets this much aside per partition for merging its spill files (DataFusion's
    // default: 10 MiB): at most a quarter of each partition's share of the limit.
    let share = limit.bytes() / (4 * config.target_partitions().max(1));
    let reserve = config.options().execution.sort_spill_reservation_bytes;
    let config = config.set_usize(
        "datafusion.execution.sort_spill_reservation_bytes",
        reserve.min(share.max(1)),
    );
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(NamedLimitPool::new(limit)))
        .with_disk_manager_builder(
            DiskManagerBuilder::default().with_mode(DiskManagerMode::OsTmpDirectory),
        )
        .build_arc()?;
    Ok(SessionContext::new_with_config_rt(config, runtime))
}

/// The pool of [`memory_limited_context`]: a `FairSpillPool` of `limit` bytes whose failures
/// name the limit and the five largest consumers.
#[derive(Debug)]
struct NamedLimitPool {
    limit: MemoryLimit,
    inner: TrackConsumersPool<FairSpillPool>,
}

impl NamedLimitPool {
    fn new(limit: MemoryLimit) -> Self {
        let top = NonZeroUsize::new(5).expect("5 is not zero");
        Self {
            limit,
            inner: TrackConsumersPool::new(FairSpillPool::new(limit.bytes()), top),
        }
    }
}

impl fmt::Display for NamedLimitPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "memory limit {} ({})", self.limit, self.inner)
    }
}

impl MemoryPool for NamedLimitPool {
    fn name(&self) -> &str {
        "npy_datafusion::memory_limited_context"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        self.inner.register(consumer)
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.inner.unregister(consumer)
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.inner.grow(reservation, additional)
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.inner.shrink(reservation, shrink)
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> DfResult<()> {
        self.inner
            .try_grow(reservation, additional)
            .map_err(|e| match e {
                DataFusionError::ResourcesExhausted(what) => {
                    DataFusionError::ResourcesExhausted(format!(
                        "memory limit {} ({} bytes) exceeded by an operator that cannot spill \
                         further: {what}",
                        self.limit,
                        self.limit.bytes()
                    ))
                }
                other => other,
            })
    }

    fn reserved(&self) -> usize {
        self.inner.reserved()
    }

    fn memory_limit(&self) -> PoolLimit {
        PoolLimit::Finite(self.limit.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_and_decimal_units() {
        let p = |s: &str| s.parse::<MemoryLimit>().map(MemoryLimit::bytes);
        assert_eq!(p("256MiB"), Ok(256 << 20));
        assert_eq!(p("256 mib"), Ok(256 << 20));
        assert_eq!(p("1G"), Ok(1 << 30));
        assert_eq!(p("1GB"), Ok(1_000_000_000));
        assert_eq!(p("4096"), Ok(4096));
        assert_eq!(p("0.5KiB"), Ok(512));
        assert!(p("").unwrap_err().contains("expected a size"));
        assert!(p("12 parsecs").unwrap_err().contains("unknown unit"));
        assert!(p("0MiB").unwrap_err().contains("at least 1 byte"));
        assert!(p("1e30").is_err());
        assert!(p("99999999999TiB").unwrap_err().contains("below"));
    }

    #[test]
    fn an_exhausted_pool_names_the_limit() {
        let pool: Arc<dyn MemoryPool> =
            Arc::new(NamedLimitPool::new(MemoryLimit::new(1000).unwrap()));
        let r = MemoryConsumer::new("the test's hash table").register(&pool);
        r.try_grow(600).unwrap();
        let err = r.try_grow(600).unwrap_err().to_string();
        assert!(err.contains("Resources exhausted"), "{err}");
        assert!(
            err.contains("memory limit 1000 bytes (1000 bytes) exceeded"),
            "{err}"
        );
        assert!(err.contains("the test's hash table"), "{err}");
        assert_eq!(pool.reserved(), 600);
        assert!(matches!(pool.memory_limit(), PoolLimit::Finite(1000)));
    }
}
