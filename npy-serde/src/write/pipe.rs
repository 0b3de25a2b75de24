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
//! A writer on a [`Background`] (any `Write + Seek + Send + 'static`,
//! [`WriterBuilder::background`](crate::WriterBuilder::background)) gets the same thread,
//! which writes the blocks to the shared writer (no space is reserved: only a file can).
//!
//! Owns: the thread, its buffers and the space reservation. Calls only `std` and `libc`.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::aligned::AlignedWriter;

/// Blocks in existence at most: one being filled, the others queued or being written.
const BUFFERS: usize = 3;

/// Space reserved ahead of the data at least, and at most (the step grows with the file).
const RESERVE_MIN: u64 = 64 << 20;
const RESERVE_MAX: u64 = 1 << 30;

/// A full block and how many of its bytes to write.
type Job = (Vec<u8>, usize);

/// What the thread does with each block.
type Sink = Box<dyn FnMut(&[u8]) -> io::Result<()> + Send>;

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
    /// The file (a duplicate of the caller's descriptor), for [`Pipe::release`]; `None` for a
    /// [`Background`] writer.
    file: Option<File>,
}

impl Pipe {
    /// A thread writing to a duplicate of `file` at its current offset (which it shares with
    /// `file`: the caller must not write to or seek `file` until [`Pipe::drain`] returns).
    pub(super) fn new(file: &File) -> io::Result<Pipe> {
        let mut theirs = file.try_clone()?;
        let ours = file.try_clone()?;
        let mut pos = theirs.stream_position().ok();
        let mut reserved = pos.unwrap_or(0);
        // Written in 2 MiB pieces aligned in the file, which later maps of it fault in at a
        // fraction of the cost (see `AlignedWriter`); an empty block writes out the rest.
        let mut out = AlignedWriter::at(theirs, pos.unwrap_or(0));
        let sink = move |block: &[u8]| {
            if block.is_empty() {
                return out.flush();
            }
            // Reserve ahead (best effort: without it the writes allocate as they go).
            if let Some(p) = pos {
                let end = p.saturating_add(block.len() as u64);
                if end > reserved {
                    let step = (p / 4).clamp(RESERVE_MIN, RESERVE_MAX);
                    let to = end.saturating_add(step);
                    reserve(out.get_ref(), reserved, to - reserved);
                    reserved = to;
                }
                pos = Some(end);
            }
            out.write_all(block)
        };
        Pipe::spawn(Box::new(sink), Some(ours))
    }

    /// A thread writing to the writer `shared` holds (the caller must not use it until
    /// [`Pipe::drain`] returns).
    pub(super) fn shared<W: Write + Send + 'static>(shared: &Background<W>) -> io::Result<Pipe> {
        let theirs = Arc::clone(&shared.inner);
        let sink = move |block: &[u8]| lock(&theirs)?.write_all(block);
        Pipe::spawn(Box::new(sink), None)
    }

    fn spawn(mut sink: Sink, file: Option<File>) -> io::Result<Pipe> {
        let (jobs, todo) = sync_channel::<Job>(BUFFERS);
        let (back, done) = sync_channel::<Vec<u8>>(BUFFERS);
        let error = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&error);
        let worker = std::thread::Builder::new()
            .name("npy-serde writer".into())
            .spawn(move || {
                let mut failed = false;
                for (buf, n) in todo {
                    if !failed && let Err(e) = sink(&buf[..n]) {
                        failed = true;
                        if let Ok(mut slot) = slot.lock() {
                            *slot = Some(e);
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
            file,
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

    /// Waits until every block handed over is written (and whatever the thread holds back to
    /// write in aligned pieces); reports the first error.
    pub(super) fn drain(&mut self) -> io::Result<()> {
        if let Some(jobs) = &self.jobs {
            // An empty block: the sink writes out what it holds.
            jobs.send((Vec::new(), 0)).map_err(|_| stopped())?;
            self.out += 1;
        }
        while self.out > 0 {
            let b = self.done.recv().map_err(|_| stopped())?;
            self.out -= 1;
            if b.capacity() > 0 {
                self.spare.push(b);
            }
        }
        self.check()
    }

    /// After [`drain`](Self::drain): gives back the space reserved past the end of the file
    /// (truncating to its own length frees it).
    pub(super) fn release(&mut self) -> io::Result<()> {
        match &self.file {
            Some(file) => file.set_len(file.metadata()?.len()),
            None => Ok(()),
        }
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

/// A writer whose records an [`NpyWriter`](crate::NpyWriter) hands to a thread of its own:
/// made by [`WriterBuilder::background`](crate::WriterBuilder::background) and
/// [`NpyWriter::background`](crate::NpyWriter::background), given back by
/// [`NpyWriter::finish`](crate::NpyWriter::finish); [`into_inner`](Self::into_inner) then
/// unwraps the writer.
///
/// While the `NpyWriter` is writing, a second thread writes its full blocks to the writer
/// while the caller encodes the next ones (the thread a writer made from a path gets, for any
/// `Write + Seek + Send + 'static`: a `BufWriter<File>`, a socket wrapper, a writer into an
/// object store). The writer sits behind a mutex that only one side uses at a time.
pub struct Background<W> {
    inner: Arc<Mutex<W>>,
}

impl<W> Background<W> {
    pub(crate) fn new(w: W) -> Background<W> {
        Background {
            inner: Arc::new(Mutex::new(w)),
        }
    }

    /// The writer, after [`NpyWriter::finish`](crate::NpyWriter::finish) (its writing thread
    /// has ended then). Fails only if that thread panicked inside the writer's own `write`.
    pub fn into_inner(self) -> io::Result<W> {
        let mutex = Arc::try_unwrap(self.inner)
            .map_err(|_| io::Error::other("the writing thread still holds the writer"))?;
        mutex.into_inner().map_err(|_| poisoned())
    }
}

impl<W> std::fmt::Debug for Background<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background").finish_non_exhaustive()
    }
}

impl<W: Write> Write for Background<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        lock(&self.inner)?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        lock(&self.inner)?.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        lock(&self.inner)?.flush()
    }
}

impl<W: Seek> Seek for Background<W> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        lock(&self.inner)?.seek(pos)
    }
}

fn lock<W>(m: &Mutex<W>) -> io::Result<MutexGuard<'_, W>> {
    m.lock().map_err(|_| poisoned())
}

fn poisoned() -> io::Error {
    io::Error::other("the writer panicked on the writing thread; the file is incomplete")
}

fn stopped() -> io::Error {
    io::Error::other("the writing thread stopped")
}

/// Reserves `len` bytes of `file` from `offset` without changing its size (Linux
/// `fallocate` with `FALLOC_FL_KEEP_SIZE`, so an error or a short write never leaves zeros
/// behind). Best effort: a file system without support, or another platform, skips it.
pub(crate) fn reserve(file: &File, offset: u64, len: u64) {
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
