//! A cluster job's timeline, read from the lines Ballista logs at `info`: the scheduler's
//! `Job queued: [JOB]`, `Job [JOB] planning took ..`, `Job finished successfully: [JOB]`, and
//! each executor's `Finished task : [TID JOB/STAGE.ATTEMPT/PARTITION.ATTEMPT] in DURATION`.
//! Times are the logs' UTC clock, the client's start and exit read from the same clock.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the epoch of `t` (the clock the logs print in UTC).
pub fn epoch(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// A log line's time, `2026-11-29T22:02:27.742257Z ..`, as seconds since the epoch.
fn stamp(line: &str) -> Option<f64> {
    let s = line.get(..27)?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let time = time.strip_suffix('Z')?;
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<f64>().ok()?,
        t.next()?.parse::<f64>().ok()?,
    );
    let sec = t.next()?.parse::<f64>().ok()?;
    // Days since the epoch of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(days as f64 * 86400.0 + h * 3600.0 + min * 60.0 + sec)
}

/// A duration as Ballista's executors print it (`4.872385ms`, `1.2s`, `35µs`), in seconds.
fn seconds(text: &str) -> Option<f64> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (n, unit) = text.split_at(split);
    let n: f64 = n.parse().ok()?;
    Some(match unit {
        "s" => n,
        "ms" => n / 1e3,
        "µs" | "us" => n / 1e6,
        "ns" => n / 1e9,
        _ => return None,
    })
}

/// One stage's tasks: the first start and the last end, and how many ran.
#[derive(Debug, Clone, Copy)]
pub struct Stage {
    pub start: f64,
    pub end: f64,
    pub tasks: usize,
}

/// The job the client started at `client_start` ran: when it was queued, planned and
/// finished, and its stages in order.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub client_start: f64,
    pub client_exit: f64,
    pub queued: f64,
    pub planning: f64,
    pub finished: f64,
    pub stages: Vec<Stage>,
}

impl Timeline {
    /// The timeline of the first job queued after `client_start`, from the scheduler's log
    /// and the executors' logs in `dir` (`scheduler.log`, `executor*.log`).
    pub fn read(dir: &Path, client_start: SystemTime, client_exit: SystemTime) -> Option<Self> {
        let (client_start, client_exit) = (epoch(client_start), epoch(client_exit));
        let scheduler = std::fs::read(dir.join("scheduler.log")).ok()?;
        let scheduler = String::from_utf8_lossy(&scheduler);
        let (mut job, mut queued, mut planning, mut finished) = (None, 0.0, 0.0, 0.0);
        for line in scheduler.lines() {
            let Some(t) = stamp(line) else { continue };
            if t < client_start {
                continue;
            }
            if job.is_none() {
                if let Some(rest) = line.split("Job queued: [").nth(1) {
                    job = Some(rest.trim_end_matches(']').to_string());
                    queued = t;
                }
            }
            let Some(id) = &job else { continue };
            if line.contains(&format!("Job [{id}] planning took")) {
                planning = line.rsplit(' ').next().and_then(seconds).unwrap_or(0.0);
            } else if line.contains(&format!("Job finished successfully: [{id}]")) {
                finished = t;
            }
        }
        let job = job?;
        let mut stages: Vec<(usize, Stage)> = Vec::new();
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("executor") {
                continue;
            }
            let log = std::fs::read(entry.path()).ok()?;
            for line in String::from_utf8_lossy(&log).lines() {
                let Some(end) = stamp(line) else { continue };
                let Some(rest) = line.split(&format!("Finished task : [TID {job}/")).nth(1) else {
                    continue;
                };
                let stage: usize = rest.split('.').next()?.parse().ok()?;
                let took = rest.rsplit(' ').next().and_then(seconds)?;
                let start = end - took;
                match stages.iter_mut().find(|(s, _)| *s == stage) {
                    Some((_, s)) => {
                        s.start = s.start.min(start);
                        s.end = s.end.max(end);
                        s.tasks += 1;
                    }
                    None => stages.push((
                        stage,
                        Stage {
                            start,
                            end,
                            tasks: 1,
                        },
                    )),
                }
            }
        }
        stages.sort_by_key(|(s, _)| *s);
        Some(Timeline {
            client_start,
            client_exit,
            queued,
            planning,
            finished,
            stages: stages.into_iter().map(|(_, s)| s).collect(),
        })
    }

    /// The whole command's time.
    pub fn whole(&self) -> Duration {
        Duration::from_secs_f64(self.client_exit - self.client_start)
    }

    /// One line: the whole, then each part in milliseconds: the client's start to the job's
    /// queueing, its planning, then for each stage the wait before its first task and its
    /// tasks' span (with their count), and the last task's end to the job's end and to the
    /// client's exit.
    pub fn line(&self) -> String {
        let ms = |s: f64| s * 1e3;
        let mut out = format!(
            "whole {:.0} | client to queued {:.0} | planning {:.0}",
            ms(self.client_exit - self.client_start),
            ms(self.queued - self.client_start),
            ms(self.planning),
        );
        let mut last = self.queued + self.planning;
        for (i, s) in self.stages.iter().enumerate() {
            let _ = write!(
                out,
                " | wait {:.0}, stage {i} {:.0} ({} tasks)",
                ms(s.start - last),
                ms(s.end - s.start),
                s.tasks
            );
            last = s.end;
        }
        let _ = write!(
            out,
            " | to job end {:.0} | to client exit {:.0}",
            ms(self.finished - last),
            ms(self.client_exit - self.finished)
        );
        out
    }
}

/// The parsers on known lines (the bench's harness runs no `#[test]`): called before a run.
pub fn check_parsers() {
    let t = stamp("2026-11-29T22:02:27.742257Z  INFO x").unwrap();
    let want = 1_795_989_747.742257; // date -u -d 2026-11-29T22:02:27.742257Z +%s.%N
    assert!((t - want).abs() < 1e-5, "{t}");
    assert_eq!(seconds("4.5ms"), Some(0.0045));
    assert_eq!(seconds("2s"), Some(2.0));
}
