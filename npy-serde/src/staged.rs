//! Files written under a temporary name beside their target and renamed over it only when
//! complete, so that a failed or interrupted write never leaves a half-written file under the
//! target's name (and an existing target stays as it was until the rename).
//!
//! What each kind of target gets:
//!
//! | target | what happens |
//! |---|---|
//! | no file yet | a temporary file in the same directory, renamed to the target on success; permissions as [`File::create`] gives (`0o666` less the umask) |
//! | a regular file | the same; the new file takes the old one's permissions (not its owner, group or extended attributes); on Linux a large old file (16 MiB or more, one link) is freed on a background thread after the rename, so replacing a file costs no more than writing a new one |
//! | a symbolic link | followed: the file it points to is replaced beside itself, the link is kept |
//! | a regular file with other hard links | the target's name gets the new file; the other names keep the old contents (a rename cannot change an inode in place) |
//! | a FIFO, a device (`/dev/null`, `/dev/stdout`), any other non-regular file | written directly: there is nothing to rename over |
//! | a regular file in a directory where no file may be created | written in place (truncated first), as [`File::create`] would: a rename is impossible there |
//!
//! The temporary file is named `.NAME.PID-N.npy-tmp` (hidden, in the target's directory, so the
//! rename never crosses file systems) and is removed if the write fails or is dropped before it
//! completes; a process killed mid-write leaves it behind, under that name. Nothing is synced to disk: like `numpy.save`, a completed write is in the page
//! cache, and [`File::sync_all`] on [`StagedFile::file`] before [`StagedFile::commit`] makes it
//! durable.
//!
//! [`MmapArrayMut::create`](crate::MmapArrayMut::create) is the exception among the writers: it
//! maps the file at its full size and the caller writes through the map, so it creates the
//! file under the target name directly.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written under a temporary name, renamed over its target by
/// [`commit`](Self::commit) (see the [module docs](self) for each kind of target). Dropped
/// without a commit, it removes its temporary file and leaves the target as it was.
///
/// ```
/// use std::io::Write;
/// # let dir = std::env::temp_dir().join(format!("staged-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let path = dir.join("out.txt");
/// std::fs::write(&path, "old")?;
///
/// let mut f = npy_serde::staged::StagedFile::create(&path)?;
/// f.write_all(b"new")?;
/// assert_eq!(std::fs::read(&path)?, b"old"); // not yet replaced
/// f.commit()?;
/// assert_eq!(std::fs::read(&path)?, b"new");
///
/// let mut f = npy_serde::staged::StagedFile::create(&path)?;
/// f.write_all(b"half")?;
/// drop(f); // a failed write: the target is untouched, no temporary file is left
/// assert_eq!(std::fs::read(&path)?, b"new");
/// assert_eq!(std::fs::read_dir(&dir)?.count(), 1);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct StagedFile {
    file: File,
    pending: Option<PendingRename>,
}

/// The rename of a [`StagedFile`] still to be done, held apart from the file by writers that
/// own the file as their sink and commit when they finish ([`StagedFile::into_parts`]).
/// Dropped without [`commit`](Self::commit), it removes the temporary file.
#[derive(Debug)]
pub struct PendingRename {
    tmp: PathBuf,
    target: PathBuf,
    keep: Option<Permissions>,
}

impl StagedFile {
    /// Creates the temporary file for `target` (or opens a non-regular `target` for writing
    /// directly).
    pub fn create(target: impl AsRef<Path>) -> io::Result<StagedFile> {
        let target = target.as_ref();
        let (target, existing) = match std::fs::symlink_metadata(target) {
            Ok(m) if m.file_type().is_symlink() => {
                let resolved = std::fs::canonicalize(target)?;
                let m = std::fs::metadata(&resolved).ok();
                (resolved, m)
            }
            Ok(m) => (target.to_path_buf(), Some(m)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => (target.to_path_buf(), None),
            Err(e) => return Err(e),
        };
        if let Some(m) = &existing
            && !m.is_file()
        {
            // A FIFO, a device, a directory (which File::create refuses with its own error).
            return StagedFile::in_place(&target);
        }
        let (file, tmp) = match create_temp(&target) {
            Ok(created) => created,
            // No file may be created beside an existing target: write it in place.
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && existing.is_some() => {
                return StagedFile::in_place(&target);
            }
            Err(e) => return Err(e),
        };
        Ok(StagedFile {
            file,
            pending: Some(PendingRename {
                tmp,
                target,
                keep: existing.map(|m| m.permissions()),
            }),
        })
    }

    /// `target` opened for writing in place (truncated), with no rename to do.
    fn in_place(target: &Path) -> io::Result<StagedFile> {
        Ok(StagedFile {
            file: File::create(target)?,
            pending: None,
        })
    }

    /// The open file (the temporary one until the commit).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The open file, mutably.
    pub fn file_mut(&mut self) -> &mut File {
        &mut self.file
    }

    /// The temporary file's path; `None` for a target written in place (see the module docs).
    pub fn temp_path(&self) -> Option<&Path> {
        self.pending.as_ref().map(|p| p.tmp.as_path())
    }

    /// Renames the temporary file over the target (taking an existing target's permissions
    /// first) and returns the file, open, now under the target's name. On failure the
    /// temporary file is removed and the target is as it was.
    pub fn commit(self) -> io::Result<File> {
        let (file, pending) = self.into_parts();
        if let Some(p) = pending {
            p.commit()?;
        }
        Ok(file)
    }

    /// The file and the rename still to be done (`None` for a target written in place), for
    /// writers that hold the file as their sink and commit when they finish.
    pub fn into_parts(self) -> (File, Option<PendingRename>) {
        (self.file, self.pending)
    }
}

impl PendingRename {
    /// Renames the temporary file over the target (see [`StagedFile::commit`]).
    pub fn commit(mut self) -> io::Result<()> {
        let tmp = std::mem::take(&mut self.tmp);
        let done = (|| {
            if let Some(keep) = self.keep.take() {
                std::fs::set_permissions(&tmp, keep)?;
            }
            let old = release::hold(&self.target);
            std::fs::rename(&tmp, &self.target)?;
            release::in_background(old);
            Ok(())
        })();
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        done
    }
}

impl Drop for PendingRename {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// The storage of a replaced target, freed off the committing thread.
///
/// Renaming over a regular file unlinks it, and when the last reference goes the kernel frees
/// its pages and blocks in the thread that dropped it: for a large file written moments
/// before (its pages still cached) that costs as much as a third of writing the new one (an
/// 800 MB `<f8` file over itself: 4.3-4.7 GB/s with the rename freeing the old one, 6.5-7.2
/// GB/s with it freed on another thread; `np.save` over its own file truncates it in line,
/// 4.7 GB/s). So on Linux the old file is held open (`O_PATH`: no permission needed, nothing
/// read) across the rename and closed on a thread of its own; elsewhere, or for small files,
/// files with other links, or when no thread can be started, the rename frees it as before.
mod release {
    use std::fs::File;
    use std::path::Path;

    /// Files smaller than this are freed in line: a thread costs more than freeing them.
    pub(super) const MIN: u64 = 16 << 20;

    /// The target opened before the rename, if it is a large regular file with one link.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) fn hold(target: &Path) -> Option<File> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_NOFOLLOW)
            .open(target)
            .ok()?;
        let m = f.metadata().ok()?;
        (m.is_file() && m.nlink() == 1 && m.len() >= MIN).then_some(f)
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) fn hold(_target: &Path) -> Option<File> {
        None
    }

    /// Closes `old` (the replaced file, now unlinked) on a detached thread, so that thread
    /// frees its storage; the process exiting first closes it as any open file.
    pub(super) fn in_background(old: Option<File>) {
        if let Some(f) = old {
            // If the thread cannot start, the closure (and `f`) is dropped here instead.
            let _ = std::thread::Builder::new()
                .name("npy-release".into())
                .spawn(move || drop(f));
        }
    }
}

/// Temporary files created by this process so far (part of their names).
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new, empty file beside `target` under a name no other file has (created exclusively).
fn create_temp(target: &Path) -> io::Result<(File, PathBuf)> {
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let mut tries = 0;
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.{}-{n}.npy-tmp", std::process::id()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            // A leftover of an earlier process with the same id: take the next number.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 100 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

impl Write for StagedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.file.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Read for StagedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

impl Seek for StagedFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.file.seek(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("npy-staged-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_new_target_appears_only_on_commit() {
        let d = dir("new");
        let target = d.join("a.npy");
        let mut f = StagedFile::create(&target).unwrap();
        f.write_all(b"data").unwrap();
        assert!(!target.exists());
        assert_eq!(names(&d).len(), 1);
        assert!(names(&d)[0].starts_with(".a.npy.") && names(&d)[0].ends_with(".npy-tmp"));
        let mut file = f.commit().unwrap();
        file.write_all(b"!").unwrap(); // still open, now under the target's name
        assert_eq!(std::fs::read(&target).unwrap(), b"data!");
        assert_eq!(names(&d), ["a.npy"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn dropped_without_commit_leaves_the_old_target() {
        let d = dir("drop");
        let target = d.join("a.npy");
        std::fs::write(&target, b"old").unwrap();
        let mut f = StagedFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&target).unwrap(), b"old");
        assert_eq!(names(&d), ["a.npy"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn permissions_kept_links_followed_devices_written_directly() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let d = dir("kinds");
        let target = d.join("a.npy");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, Permissions::from_mode(0o640)).unwrap();
        let mut f = StagedFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        let m = std::fs::metadata(&target).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o640);

        // A symbolic link stays a link; the file it names is replaced.
        let link = d.join("link.npy");
        symlink("a.npy", &link).unwrap();
        let mut f = StagedFile::create(&link).unwrap();
        f.write_all(b"via link").unwrap();
        f.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"via link");

        // Another hard link keeps the old contents.
        let other = d.join("other.npy");
        std::fs::hard_link(&target, &other).unwrap();
        let mut f = StagedFile::create(&target).unwrap();
        f.write_all(b"newer").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"newer");
        assert_eq!(std::fs::read(&other).unwrap(), b"via link");
        assert_eq!(names(&d), ["a.npy", "link.npy", "other.npy"]);

        // A device is written directly.
        let mut f = StagedFile::create("/dev/null").unwrap();
        assert!(f.temp_path().is_none());
        f.write_all(b"gone").unwrap();
        f.commit().unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_large_replaced_file_is_released_off_the_thread_that_commits() {
        let d = dir("release");
        let target = d.join("a.npy");
        let big = File::create(&target).unwrap();
        big.set_len(release::MIN).unwrap(); // sparse: as large as it gets, no data written
        drop(big);
        assert!(release::hold(&target).is_some());
        let mut f = StagedFile::create(&target).unwrap();
        f.write_all(b"new").unwrap();
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(names(&d), ["a.npy"]);

        // Small files, files with other links, links and missing files are freed in line.
        assert!(release::hold(&target).is_none());
        let other = d.join("b.npy");
        std::fs::File::create(&other)
            .unwrap()
            .set_len(release::MIN)
            .unwrap();
        std::fs::hard_link(&other, d.join("c.npy")).unwrap();
        assert!(release::hold(&other).is_none());
        std::os::unix::fs::symlink("b.npy", d.join("link.npy")).unwrap();
        assert!(release::hold(&d.join("link.npy")).is_none());
        assert!(release::hold(&d.join("missing.npy")).is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_missing_directory_is_the_error_of_creating_the_file() {
        let e = StagedFile::create("/nonexistent-dir-npy/a.npy").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
