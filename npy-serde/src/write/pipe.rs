//! Writing a file's blocks on a second thread while the caller encodes the next ones.
//!
//! A streaming writer made from a path ([`NpyWriter::create`](crate::NpyWriter::create),
//! [`WriterBuilder::create_path`](crate::WriterBuilder::create_path),
//! [`WriterBuilder::append_path`](crate::WriterBuilder::append_path)) hands each full block to
//! a [`Pipe`]: a thread that owns a duplicate of the file's descriptor (sharing its offset)
//! and writes the blocks in order, reserving the file's space ahead of them
//! (`fallocate`, as NumPy does before writing). Encoding and the kernel's copy into the page
//! cache then overlap. At most [`BUFFERS`] blocks exist at once, so memory stays bounded
//! whatever the file's size.
//!
//! Owns: the thread, its buffers and the space reservation. Calls only `std` and `libc`.

use std::fs::File;
use std::io::{self, Seek, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Blocks in existence at most: one being filled, the others queued or being written.
const BUFFERS: usize = 3;

/// Space reserved ahead of the data at least, and at most (the step grows with the file).
const RESERVE_MIN: u64 = 64 << 20;
const RESERVE_MAX: u64 = 1 << 30;

/// A full block and how many of its bytes to write.
type Job = (Vec<u8>, usize);

/// The writing thread of one file, and the blocks it gives back.
pub(super) struct Pipe {
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Vec<u8>>,
    /// Blocks handed to the thread and not yet given back.
    out: usize,
    /// Blocks made so far.
    made: usize,
    /// Blocks given back while draining, reused before waiting for more.
    spare: Vec<Vec<u8>>,
    /// The first write error, until it is reported.
    error: Arc<Mutex<Option<io::Error>>>,
    /// Set once an error was reported: every later write fails too.
    failed: bool,
    worker: Option<JoinHandle<()>>,
    /// The file (a duplicate of the caller's descriptor), for [`Pipe::release`].
    file: File,
}

impl Pipe {
    /// A thread writing to a duplicate of `file` at its current offset (which it shares with
    /// `file`: the caller must not write to or seek `file` until [`Pipe::drain`] returns).
    pub(super) fn new(file: &File) -> io::Result<Pipe> {
        let mut theirs = file.try_clone()?;
        let ours = file.try_clone()?;
        let (jobs, todo) = sync_channel::<Job>(BUFFERS);
        let (back, done) = sync_channel::<Vec<u8>>(BUFFERS);
        let error = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&error);
        let worker = std::thread::Builder::new()
            .name("npy-serde writer".into())
            .spawn(move || {
                let mut pos = theirs.stream_position().ok();
                let mut reserved = pos.unwrap_or(0);
                let mut failed = false;
                for (buf, n) in todo {
                    if !failed {
                        // Reserve ahead (best effort: without it the writes allocate as they go).
                        if let Some(p) = pos {
                            let end = p.saturating_add(n as u64);
                            if end > reserved {
                                let step = (p / 4).clamp(RESERVE_MIN, RESERVE_MAX);
                                let to = end.saturating_add(step);
                                reserve(&theirs, reserved, to - reserved);
                                reserved = to;
                            }
                            pos = Some(end);
                        }
                        if let Err(e) = theirs.write_all(&buf[..n]) {
                            failed = true;
                            if let Ok(mut slot) = slot.lock() {
                                *slot = Some(e);
                            }
                        }
                    }
                    if back.send(buf).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Pipe {
            jobs: Some(jobs),
            done,
            out: 0,
            made: 0,
            spare: Vec::new(),
            error,
            failed: false,
            worker: Some(worker),
            file: ours,
        })
    }

    /// Hands `buf[..n]` to the thread and returns an empty block of `len` bytes in its place
    /// (a new one while fewer than [`BUFFERS`] exist, else one the thread gave back). Reports
    /// an error of an earlier write.
    pub(super) fn swap(&mut self, buf: Vec<u8>, n: usize, len: usize) -> io::Result<Vec<u8>> {
        self.check()?;
        if self.made == 0 {
            self.made = 1; // `buf`, made by the caller
        }
        let jobs = self.jobs.as_ref().ok_or_else(stopped)?;
        jobs.send((buf, n)).map_err(|_| stopped())?;
        self.out += 1;
        let mut next = match self.spare.pop() {
            Some(b) => b,
            None if self.made < BUFFERS => {
                self.made += 1;
                Vec::new()
            }
            None => {
                let b = self.done.recv().map_err(|_| stopped())?;
                self.out -= 1;
                b
            }
        };
        // Every block has the same length; a new one is sized (and zeroed) once.
        next.resize(len, 0);
        Ok(next)
    }

    /// Waits until every block handed over is written; reports the first error.
    pub(super) fn drain(&mut self) -> io::Result<()> {
        while self.out > 0 {
            let b = self.done.recv().map_err(|_| stopped())?;
            self.out -= 1;
            self.spare.push(b);
        }
        self.check()
    }

    /// After [`drain`](Self::drain): gives back the space reserved past the end of the file
    /// (truncating to its own length frees it).
    pub(super) fn release(&mut self) -> io::Result<()> {
        let len = self.file.metadata()?.len();
        self.file.set_len(len)
    }

    fn check(&mut self) -> io::Result<()> {
        if self.failed {
            return Err(io::Error::other(
                "an earlier write of this file failed; the file is incomplete",
            ));
        }
        let e = self.error.lock().ok().and_then(|mut slot| slot.take());
        match e {
            Some(e) => {
                self.failed = true;
                Err(e)
            }
            None => Ok(()),
        }
    }
}

impl Drop for Pipe {
    /// The blocks already handed over are written (as if by `write`), then the thread ends.
    fn drop(&mut self) {
        self.jobs = None;
        // Unblock a thread waiting to give a block back.
        while self.done.try_recv().is_ok() {}
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn stopped() -> io::Error {
    io::Error::other("the writing thread stopped")
}

/// Reserves `len` bytes of `file` from `offset` without changing its size (Linux
/// `fallocate` with `FALLOC_FL_KEEP_SIZE`, so an error or a short write never leaves zeros
/// behind). Best effort: a file system without support, or another platform, skips it.
pub(super) fn reserve(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) {
            // SAFETY: `fallocate` takes plain integers and touches no memory of ours; the
            // descriptor is open for the whole call because `file` is borrowed. Failure only
            // sets errno, which we ignore (the writes then allocate as they go).
            let _ = unsafe {
                libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len)
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}
