//! The stored `.npz` members whose CRC-32 a scan in this process has checked, by the version
//! of their archive: a later scan of the same version reads them without checking again (a
//! session that queries a table many times checks each member once).
//!
//! A version is the archive's device, inode, size and modification and change times, read
//! from the open file the scan maps ([`FileVersion::of`]). Any write to the file changes its
//! change time, so a changed archive is checked again. File systems stamp times at a coarse
//! granularity (a few milliseconds), so a write just after another may leave the times as
//! they were: a check is remembered only for an archive whose change time is at least
//! [`SETTLED`] before the check ended (git's "racily clean" entries are the same problem).
//! The record holds at most [`LIMIT`] members; past that it starts again empty.

use std::collections::HashSet;
use std::fs::Metadata;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long before a check an archive must have last changed for the check to be remembered.
pub(crate) const SETTLED: Duration = Duration::from_secs(2);

/// The most members remembered.
const LIMIT: usize = 1 << 16;

/// One version of a file (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileVersion {
    dev: u64,
    ino: u64,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl FileVersion {
    /// The version of the file `meta` describes; `None` where the platform does not say
    /// (then nothing is remembered).
    #[cfg(unix)]
    pub(crate) fn of(meta: &Metadata) -> Option<FileVersion> {
        use std::os::unix::fs::MetadataExt;
        Some(FileVersion {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        })
    }

    /// The version of the file `meta` describes; `None` where the platform does not say
    /// (then nothing is remembered).
    #[cfg(not(unix))]
    pub(crate) fn of(_: &Metadata) -> Option<FileVersion> {
        None
    }

    /// Whether the file last changed at least [`SETTLED`] before `now`.
    fn settled(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let (secs, nanos) = self.changed;
        let changed = match (u64::try_from(secs), u32::try_from(nanos)) {
            (Ok(s), Ok(n)) if n < 1_000_000_000 => Duration::new(s, n),
            _ => return false,
        };
        now.checked_sub(changed).is_some_and(|d| d >= SETTLED)
    }
}

/// The members checked: each archive version with the offset of a member's data.
fn record() -> &'static Mutex<HashSet<(FileVersion, u64)>> {
    static CHECKED: OnceLock<Mutex<HashSet<(FileVersion, u64)>>> = OnceLock::new();
    CHECKED.get_or_init(Mutex::default)
}

/// Whether the member whose data starts at `offset` in `version` of its archive was checked.
pub(crate) fn checked(version: FileVersion, offset: u64) -> bool {
    record()
        .lock()
        .is_ok_and(|set| set.contains(&(version, offset)))
}

/// Remembers that the member whose data starts at `offset` in `version` of its archive has
/// just been checked, at `now`, unless the archive changed too recently (see the module docs).
pub(crate) fn remember(version: FileVersion, offset: u64, now: SystemTime) {
    if !version.settled(now) {
        return;
    }
    if let Ok(mut set) = record().lock() {
        if set.len() >= LIMIT {
            set.clear();
        }
        set.insert((version, offset));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(ino: u64, changed_secs: i64) -> FileVersion {
        FileVersion {
            dev: 1,
            ino,
            len: 100,
            modified: (changed_secs, 5),
            changed: (changed_secs, 5),
        }
    }

    #[test]
    fn a_check_is_remembered_only_once_the_archive_has_settled() {
        let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
        // Changed one second before the check: too recent to trust its times.
        let fresh = version(u64::MAX - 1, 1_000);
        remember(fresh, 64, at(1_001));
        assert!(!checked(fresh, 64));
        // Changed three seconds before: remembered, for that member only.
        let old = version(u64::MAX - 2, 1_000);
        remember(old, 64, at(1_003));
        assert!(checked(old, 64));
        assert!(!checked(old, 128));
        // Another version of the same file (written again: other times, or size) is not.
        let rewritten = FileVersion {
            changed: (1_004, 0),
            ..old
        };
        assert!(!checked(rewritten, 64));
        let grown = FileVersion { len: 200, ..old };
        assert!(!checked(grown, 64));
        // A change time after the check (a clock set back) is never settled.
        let ahead = version(u64::MAX - 3, 2_000);
        remember(ahead, 64, at(1_000));
        assert!(!checked(ahead, 64));
    }

    #[cfg(unix)]
    #[test]
    fn a_version_is_read_from_the_file_metadata() {
        let dir = std::env::temp_dir().join(format!("npy-verified-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.bin");
        std::fs::write(&path, b"abc").unwrap();
        let a = FileVersion::of(&std::fs::metadata(&path).unwrap()).unwrap();
        assert_eq!(a.len, 3);
        assert_eq!(FileVersion::of(&std::fs::metadata(&path).unwrap()), Some(a));
        // Just written: not settled now, settled a while after its change.
        assert!(!a.settled(SystemTime::now()));
        assert!(a.settled(SystemTime::now() + SETTLED + Duration::from_secs(1)));
        std::fs::write(&path, b"abcd").unwrap();
        assert_ne!(FileVersion::of(&std::fs::metadata(&path).unwrap()), Some(a));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
