//! `npy-scheduler --partitions`: how many partitions a job is planned with when its client
//! sets none of its own.
//!
//! A Ballista client sends its whole session config with each job, and Ballista's client
//! config (`SessionConfig::new_with_ballista`, which `npy sql --cluster` and
//! `npy_datafusion::ballista::session_config` start from) plans with 16 partitions, whatever
//! the cluster. Each partition of each stage is a task: on a cluster of two one-task executors
//! a grouped query ran 16 tasks one after another in pairs, and over 1000 records the job
//! took 0.42 s where 2 partitions took 0.31 s (debug build). The scheduler knows the cluster:
//! by default (`slots`) a job that arrives with Ballista's 16 is planned with as many
//! partitions as the registered executors have task slots (their `--concurrent-tasks`
//! summed); a client that set another number (`SET datafusion.execution.target_partitions =
//! 8`) keeps it. `client` leaves every job as it came, a number `N` gives such jobs `N`.

use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_server::SchedulerServer;
use datafusion::prelude::SessionConfig;
use datafusion_proto::logical_plan::AsLogicalPlan;
use datafusion_proto::physical_plan::AsExecutionPlan;

/// The partitions of Ballista's client config: a job that arrives with them set none.
pub const BALLISTA_DEFAULT: usize = 16;

/// `--partitions`: `slots`, `client` or a number of partitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partitions {
    /// The registered executors' task slots, summed.
    Slots,
    /// The client's, as it sent them.
    Client,
    /// This many.
    Fixed(usize),
}

impl FromStr for Partitions {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "slots" => Ok(Partitions::Slots),
            "client" => Ok(Partitions::Client),
            n => match n.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Partitions::Fixed(n)),
                _ => Err(format!(
                    "{n:?} is not slots, client or a number of partitions above 0"
                )),
            },
        }
    }
}

/// The partitions a job whose client sent `config` is planned with: the client's, unless it
/// sent Ballista's default; then `partitions`' (`slots` the registered executors' task slots,
/// or the client's while none is registered).
pub fn for_job(config: &SessionConfig, partitions: Partitions, slots: usize) -> usize {
    let sent = config.target_partitions();
    if sent != BALLISTA_DEFAULT {
        return sent;
    }
    match partitions {
        Partitions::Client => sent,
        Partitions::Fixed(n) => n,
        Partitions::Slots if slots == 0 => sent,
        Partitions::Slots => slots,
    }
}

/// Plans every job `config`'s scheduler runs with [`for_job`]'s partitions, `slots` holding
/// the registered executors' task slots ([`track_slots`] keeps it).
pub fn plan_with(config: &mut SchedulerConfig, partitions: Partitions, slots: Arc<AtomicUsize>) {
    if partitions == Partitions::Client {
        return;
    }
    let base = config.override_session_builder.take();
    config.override_session_builder = Some(Arc::new(move |session: SessionConfig| {
        let n = for_job(&session, partitions, slots.load(Ordering::Relaxed));
        let session = session.with_target_partitions(n);
        match &base {
            Some(build) => build(session),
            None => ballista_core::utils::default_session_builder(session),
        }
    }));
}

/// Keeps `slots` at the task slots of `scheduler`'s registered executors, read every 250 ms
/// (in memory: the scheduler's own executor table).
pub fn track_slots<T, U>(scheduler: &SchedulerServer<T, U>, slots: Arc<AtomicUsize>)
where
    T: 'static + AsLogicalPlan,
    U: 'static + AsExecutionPlan,
{
    let state = scheduler.state.clone();
    tokio::spawn(async move {
        loop {
            if let Ok(executors) = state.executor_manager.get_executors_state().await {
                let n = executors
                    .iter()
                    .map(|(metadata, _, _)| metadata.specification.vcores as usize)
                    .sum();
                slots.store(n, Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_that_chose_keeps_its_partitions() {
        let default = SessionConfig::new().with_target_partitions(BALLISTA_DEFAULT);
        let chosen = SessionConfig::new().with_target_partitions(8);
        assert_eq!(for_job(&default, Partitions::Slots, 2), 2);
        assert_eq!(for_job(&default, Partitions::Slots, 0), BALLISTA_DEFAULT);
        assert_eq!(for_job(&default, Partitions::Fixed(5), 2), 5);
        assert_eq!(for_job(&default, Partitions::Client, 2), BALLISTA_DEFAULT);
        for p in [Partitions::Slots, Partitions::Fixed(5), Partitions::Client] {
            assert_eq!(for_job(&chosen, p, 2), 8, "{p:?}");
        }
    }

    #[test]
    fn the_flag_parses() {
        assert_eq!("slots".parse(), Ok(Partitions::Slots));
        assert_eq!("client".parse(), Ok(Partitions::Client));
        assert_eq!("12".parse(), Ok(Partitions::Fixed(12)));
        for bad in ["0", "-1", "many", ""] {
            let e = bad.parse::<Partitions>().unwrap_err();
            assert!(e.contains("slots, client or a number"), "{bad}: {e}");
        }
    }
}
