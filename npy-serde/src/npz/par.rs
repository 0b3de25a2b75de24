//! Deflated members compressed on all cores (feature `parallel`), pigz-style.
//!
//! A member's bytes are cut into chunks of [`CHUNK`] bytes, each raw-deflated as an independent
//! task on rayon's pool, primed with the last 32 KiB of the chunk before it (so matches reach
//! back across the cut as in one stream, and the ratio stays zlib's). Every chunk but the last
//! ends with a sync flush (an empty stored block), which leaves it on a byte boundary with no
//! final block; the last ends the stream. Their concatenation is one valid deflate stream, and
//! the CRC-32s of the chunks combine into the member's. A member of one chunk is deflated
//! exactly as a single stream is.
//!
//! Members are queued: adding one hands its chunks to the pool and returns, so small members are
//! compressed in parallel with each other, and the writer thread packs the next member while
//! the pool deflates. Members are written to the archive in the order they were added, as soon
//! as all their chunks are done; at most [`Pipeline::max_outstanding`] chunks are in flight, so
//! the uncompressed bytes held are bounded whatever the member's size (the compressed bytes of a
//! member are held until it is written).
//!
//! The zip crate (9.4) has no public way to add a member whose data is already deflated except
//! copying it from another archive. A finished member is therefore framed as a one-member
//! archive in memory (local header with NumPy's zip64 extra field, the data, a central
//! directory, zip64 end records) and moved into the output with [`ZipWriter::merge_archive`],
//! which copies the member's bytes verbatim and takes its directory entry. No `unsafe` is
//! involved.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Cursor, Seek, Write};
use std::sync::mpsc;

use flate2::{Compress, Compression, FlushCompress, Status};
use zip::{ZipArchive, ZipWriter};

use super::{from_zip, quote, zip_error};
use crate::error::Result;

/// Uncompressed bytes deflated as one task.
pub(crate) const CHUNK: usize = 1 << 20;

/// The deflate window: how much of the previous chunk primes the next.
const WINDOW: usize = 32 << 10;

/// zlib's default level, `numpy.savez_compressed`'s and the zip crate's.
const LEVEL: u32 = 6;

/// One deflated chunk: its bytes and the CRC-32 state of its input.
struct Done {
    data: Vec<u8>,
    crc: crc32fast::Hasher,
    /// Uncompressed bytes.
    len: u64,
}

type Task = mpsc::Receiver<io::Result<Done>>;

/// A member whose chunks are handed to the pool.
struct Member {
    name: String,
    tasks: VecDeque<Task>,
    done: Vec<Done>,
    /// All its chunks were handed over ([`Sink::finish`]).
    sealed: bool,
}

/// The members queued for writing, in order.
pub(super) struct Pipeline {
    members: VecDeque<Member>,
    /// Chunks handed to the pool and not received yet.
    outstanding: usize,
    /// Bytes per chunk: [`CHUNK`] (smaller in tests).
    chunk: usize,
    /// Members' sizes and CRC-32 follow their data in a data descriptor (the output cannot
    /// seek: what the zip crate and NumPy write there).
    descriptor: bool,
}

impl Pipeline {
    /// A pipeline for a seekable output, or with `descriptor` for a stream.
    pub(super) fn new(descriptor: bool) -> Self {
        Pipeline {
            members: VecDeque::new(),
            outstanding: 0,
            chunk: CHUNK,
            descriptor,
        }
    }

    /// Cuts members into chunks of `chunk` bytes (at least 1) instead of [`CHUNK`].
    #[cfg(test)]
    pub(super) fn set_chunk(&mut self, chunk: usize) {
        self.chunk = chunk.max(1);
    }

    /// Chunks in flight at most: enough to keep every thread of the pool busy while the writer
    /// thread packs the next ones.
    fn max_outstanding() -> usize {
        rayon::current_num_threads()
            .saturating_mul(2)
            .saturating_add(2)
    }

    /// True if no member is queued.
    pub(super) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// A writer for the bytes of member `name`, queued after the others; [`Sink::finish`]
    /// completes it, [`abandon_unsealed`](Self::abandon_unsealed) takes it out of the queue.
    pub(super) fn member(&mut self, name: String) -> Sink<'_> {
        self.members.push_back(Member {
            name,
            tasks: VecDeque::new(),
            done: Vec::new(),
            sealed: false,
        });
        Sink {
            pipe: self,
            buf: Vec::new(),
            dict: Vec::new(),
        }
    }

    /// Takes the last member out of the queue if it is not complete (its chunks in flight
    /// finish unused).
    pub(super) fn abandon_unsealed(&mut self) {
        if self.members.back().is_some_and(|m| !m.sealed)
            && let Some(m) = self.members.pop_back()
        {
            self.outstanding = self.outstanding.saturating_sub(m.tasks.len());
        }
    }

    /// Receives the oldest chunk in flight.
    fn receive_one(&mut self) -> Result<()> {
        let Some(m) = self.members.iter_mut().find(|m| !m.tasks.is_empty()) else {
            return Ok(());
        };
        if let Some(task) = m.tasks.pop_front() {
            self.outstanding = self.outstanding.saturating_sub(1);
            m.done.push(wait(&task, &m.name)?);
        }
        Ok(())
    }

    /// Writes the queued members whose chunks are all done, in order; with `all`, waits for
    /// every queued member and writes it.
    pub(super) fn write_ready<Z: Write + Seek>(
        &mut self,
        zip: &mut ZipWriter<Z>,
        all: bool,
    ) -> Result<()> {
        while let Some(m) = self.members.front_mut() {
            if !m.sealed {
                break;
            }
            while let Some(task) = m.tasks.front() {
                let done = if all {
                    wait(task, &m.name)?
                } else {
                    match task.try_recv() {
                        Ok(done) => done?,
                        Err(mpsc::TryRecvError::Empty) => return Ok(()),
                        Err(mpsc::TryRecvError::Disconnected) => return Err(lost(&m.name)),
                    }
                };
                m.tasks.pop_front();
                self.outstanding = self.outstanding.saturating_sub(1);
                m.done.push(done);
            }
            let Some(m) = self.members.pop_front() else {
                break;
            };
            let archive = one_member_archive(&m.name, m.done, self.descriptor)?;
            let archive = ZipArchive::new(Cursor::new(archive))
                .map_err(|e| from_zip(&format!("cannot frame member {}", quote(&m.name)), e))?;
            zip.merge_archive(archive)
                .map_err(|e| from_zip(&format!("cannot write member {}", quote(&m.name)), e))?;
        }
        Ok(())
    }
}

/// Waits for a chunk. On a thread of rayon's pool (an archive written from a parallel task),
/// runs other tasks of the pool meanwhile instead of blocking it: the chunk may be queued
/// behind them on this very thread.
fn wait(task: &Task, name: &str) -> Result<Done> {
    loop {
        match task.try_recv() {
            Ok(done) => return Ok(done?),
            Err(mpsc::TryRecvError::Disconnected) => return Err(lost(name)),
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            // Nothing queued here (or not a pool thread): the chunk is being deflated
            // elsewhere, so blocking cannot deadlock.
            return match task.recv() {
                Ok(done) => Ok(done?),
                Err(_) => Err(lost(name)),
            };
        }
    }
}

fn lost(name: &str) -> crate::Error {
    zip_error(format!(
        "member {}: a deflate task ended without a result",
        quote(name)
    ))
}

/// Takes a member's bytes, cuts them into chunks and hands each to the pool.
pub(super) struct Sink<'a> {
    pipe: &'a mut Pipeline,
    /// The chunk being filled.
    buf: Vec<u8>,
    /// The last [`WINDOW`] bytes of the chunk before `buf`.
    dict: Vec<u8>,
}

impl Sink<'_> {
    /// Hands `buf` to the pool, waiting first for the oldest chunk if too many are in flight.
    fn submit(&mut self, last: bool) -> Result<()> {
        while self.pipe.outstanding >= Pipeline::max_outstanding() {
            self.pipe.receive_one()?;
        }
        let input = std::mem::take(&mut self.buf);
        let dict = std::mem::take(&mut self.dict);
        if !last {
            let from = input.len().saturating_sub(WINDOW);
            self.dict = input[from..].to_vec();
        }
        let (tx, rx) = mpsc::sync_channel(1);
        rayon::spawn(move || {
            // The receiver is gone if the member was abandoned: nothing to do then.
            let _ = tx.send(deflate_chunk(&dict, &input, last));
        });
        let Some(m) = self.pipe.members.back_mut() else {
            return Err(zip_error("the member being deflated left the queue"));
        };
        m.tasks.push_back(rx);
        self.pipe.outstanding = self.pipe.outstanding.saturating_add(1);
        Ok(())
    }

    /// Hands the last chunk to the pool: the member is complete and will be written in turn.
    pub(super) fn finish(mut self) -> Result<()> {
        self.submit(true)?;
        if let Some(m) = self.pipe.members.back_mut() {
            m.sealed = true;
        }
        Ok(())
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, mut data: &[u8]) -> io::Result<usize> {
        let n = data.len();
        let chunk = self.pipe.chunk;
        while !data.is_empty() {
            if self.buf.len() >= chunk {
                // More bytes follow this full chunk: it is not the last.
                self.submit(false)?;
            }
            if self.buf.capacity() == 0 {
                self.buf.reserve_exact(chunk);
            }
            let take = data.len().min(chunk.saturating_sub(self.buf.len()));
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

thread_local! {
    /// Each pool thread's compressor, reset between chunks (its state is ~300 KB to set up).
    static DEFLATE: RefCell<Option<Compress>> = const { RefCell::new(None) };
}

/// Raw-deflates `input` primed with `dict`: ended by a sync flush (byte-aligned, no final
/// block), or, if `last`, as the end of the stream. Returns the bytes and the CRC-32 of `input`.
fn deflate_chunk(dict: &[u8], input: &[u8], last: bool) -> io::Result<Done> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(input);
    let data = DEFLATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        let c = match cell.as_mut() {
            Some(c) => {
                c.reset();
                c
            }
            None => cell.insert(Compress::new(Compression::new(LEVEL), false)),
        };
        deflate_with(c, dict, input, last)
    })?;
    Ok(Done {
        data,
        crc,
        len: input.len() as u64,
    })
}

fn deflate_with(c: &mut Compress, dict: &[u8], input: &[u8], last: bool) -> io::Result<Vec<u8>> {
    if !dict.is_empty() {
        c.set_dictionary(dict).map_err(io::Error::other)?;
    }
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    let mut out = Vec::with_capacity(input.len() / 4 + 4096);
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(4096));
        }
        let read = usize::try_from(c.total_in()).map_err(io::Error::other)?;
        let rest = input.get(read..).unwrap_or_default();
        let status = c
            .compress_vec(rest, &mut out, flush)
            .map_err(io::Error::other)?;
        let all_in = usize::try_from(c.total_in()).ok() == Some(input.len());
        match status {
            Status::StreamEnd => break,
            // A sync flush is complete when all the input is in and the output has room left.
            _ if !last && all_in && out.len() < out.capacity() => break,
            _ => {}
        }
    }
    out.shrink_to_fit();
    Ok(out)
}

/// Appends a little-endian number.
fn put<const N: usize>(out: &mut Vec<u8>, bytes: [u8; N]) {
    out.extend_from_slice(&bytes);
}

/// Frames deflated `chunks` as the single member `name` of an archive in memory: a local header
/// as NumPy writes it (`force_zip64=True`: sizes in a zip64 extra field; with `descriptor`,
/// zeros there and the CRC-32 and sizes in a zip64 data descriptor after the data, as for a
/// stream), the data, its central directory entry (mode 0600, 1980-01-01) and the zip64 and
/// classic end records.
fn one_member_archive(name: &str, chunks: Vec<Done>, descriptor: bool) -> Result<Vec<u8>> {
    let mut crc = crc32fast::Hasher::new();
    let (mut size, mut compressed) = (0u64, 0u64);
    for c in &chunks {
        crc.combine(&c.crc);
        size = size.saturating_add(c.len);
        compressed = compressed.saturating_add(c.data.len() as u64);
    }
    let crc = crc.finalize();
    let name_len = u16::try_from(name.len())
        .map_err(|_| zip_error(format!("member name {} is too long", quote(name))))?;
    // Bit 11: the name is UTF-8 (set, as Python's zipfile does, only when it is not ASCII);
    // bit 3: a data descriptor follows the data.
    let utf8: u16 = if name.is_ascii() { 0 } else { 1 << 11 };
    let flags = if descriptor { utf8 | (1 << 3) } else { utf8 };
    const ZIP64_VERSION: u16 = 45;
    const DOS_DATE_1980: u16 = (1 << 5) | 1;
    // Both sizes (their 32-bit fields hold 0xFFFFFFFF); the local header's offset, 0, fits.
    let zip64_extra = |out: &mut Vec<u8>, (size, compressed): (u64, u64)| {
        put(out, 1u16.to_le_bytes());
        put(out, 16u16.to_le_bytes());
        put(out, size.to_le_bytes());
        put(out, compressed.to_le_bytes());
    };
    // The local header's: zeros when a data descriptor carries them.
    let (local_crc, local_sizes, local_32) = if descriptor {
        (0, (0, 0), 0)
    } else {
        (crc, (size, compressed), u32::MAX)
    };

    let data_len = usize::try_from(compressed).map_err(|_| zip_error("member too large"))?;
    let mut out = Vec::with_capacity(data_len.saturating_add(256 + 3 * name.len()));
    put(&mut out, 0x0403_4b50u32.to_le_bytes());
    put(&mut out, ZIP64_VERSION.to_le_bytes());
    put(&mut out, flags.to_le_bytes());
    put(&mut out, 8u16.to_le_bytes()); // deflate
    put(&mut out, 0u16.to_le_bytes()); // 00:00:00
    put(&mut out, DOS_DATE_1980.to_le_bytes());
    put(&mut out, local_crc.to_le_bytes());
    put(&mut out, local_32.to_le_bytes());
    put(&mut out, local_32.to_le_bytes());
    put(&mut out, name_len.to_le_bytes());
    put(&mut out, 20u16.to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    zip64_extra(&mut out, local_sizes);
    for c in chunks {
        out.extend_from_slice(&c.data);
    }
    if descriptor {
        put(&mut out, 0x0807_4b50u32.to_le_bytes());
        put(&mut out, crc.to_le_bytes());
        put(&mut out, compressed.to_le_bytes());
        put(&mut out, size.to_le_bytes());
    }

    let cd_start = out.len() as u64;
    put(&mut out, 0x0201_4b50u32.to_le_bytes());
    put(&mut out, ((3u16 << 8) | ZIP64_VERSION).to_le_bytes()); // made by: Unix
    put(&mut out, ZIP64_VERSION.to_le_bytes());
    put(&mut out, flags.to_le_bytes());
    put(&mut out, 8u16.to_le_bytes());
    put(&mut out, 0u16.to_le_bytes());
    put(&mut out, DOS_DATE_1980.to_le_bytes());
    put(&mut out, crc.to_le_bytes());
    put(&mut out, u32::MAX.to_le_bytes());
    put(&mut out, u32::MAX.to_le_bytes());
    put(&mut out, name_len.to_le_bytes());
    put(&mut out, 20u16.to_le_bytes()); // extra
    put(&mut out, 0u16.to_le_bytes()); // comment
    put(&mut out, 0u16.to_le_bytes()); // disk
    put(&mut out, 0u16.to_le_bytes()); // internal attributes
    put(&mut out, (0o100_600u32 << 16).to_le_bytes()); // a regular file, mode 0600
    put(&mut out, 0u32.to_le_bytes()); // local header at 0
    out.extend_from_slice(name.as_bytes());
    zip64_extra(&mut out, (size, compressed));
    let cd_end = out.len() as u64;
    let cd_size = cd_end - cd_start;

    // Zip64 end of central directory record and locator.
    put(&mut out, 0x0606_4b50u32.to_le_bytes());
    put(&mut out, 44u64.to_le_bytes());
    put(&mut out, ZIP64_VERSION.to_le_bytes());
    put(&mut out, ZIP64_VERSION.to_le_bytes());
    put(&mut out, 0u32.to_le_bytes());
    put(&mut out, 0u32.to_le_bytes());
    put(&mut out, 1u64.to_le_bytes());
    put(&mut out, 1u64.to_le_bytes());
    put(&mut out, cd_size.to_le_bytes());
    put(&mut out, cd_start.to_le_bytes());
    put(&mut out, 0x0706_4b50u32.to_le_bytes());
    put(&mut out, 0u32.to_le_bytes());
    put(&mut out, cd_end.to_le_bytes());
    put(&mut out, 1u32.to_le_bytes());
    // End of central directory.
    put(&mut out, 0x0605_4b50u32.to_le_bytes());
    put(&mut out, 0u16.to_le_bytes());
    put(&mut out, 0u16.to_le_bytes());
    put(&mut out, 1u16.to_le_bytes());
    put(&mut out, 1u16.to_le_bytes());
    put(
        &mut out,
        u32::try_from(cd_size).unwrap_or(u32::MAX).to_le_bytes(),
    );
    put(&mut out, u32::MAX.to_le_bytes());
    put(&mut out, 0u16.to_le_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Read, Write};

    use proptest::prelude::*;

    use super::{deflate_chunk, CHUNK, WINDOW};
    use crate::npz::{Compression, NpzArchive, NpzStreamWriter, NpzWriter};
    use crate::WriterBuilder;

    /// `n` bytes that deflate neither trivially nor not at all: runs, a counter and noise,
    /// so matches cross chunk boundaries.
    fn data(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match (i / 4096) % 3 {
                    0 => (i % 251) as u8,
                    1 => (x % 7) as u8,
                    _ => x as u8,
                }
            })
            .collect()
    }

    fn inflate(raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::DeflateDecoder::new(raw)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    /// A member's deflate stream as stored in the archive, and the crc/sizes zip lists.
    fn stored_stream(archive: &[u8], name: &str) -> (Vec<u8>, u32, u64) {
        let mut zip = zip::ZipArchive::new(Cursor::new(archive)).unwrap();
        let f = zip.by_name(name).unwrap();
        assert_eq!(f.compression(), zip::CompressionMethod::Deflated);
        let (crc, size) = (f.crc32(), f.size());
        drop(f);
        let mut raw = Vec::new();
        let mut f = zip.by_name_raw(name.as_bytes()).unwrap();
        f.read_to_end(&mut raw).unwrap();
        (raw, crc, size)
    }

    /// Writes `members` (name, bytes) deflated with chunks of `chunk` bytes.
    fn archive(chunk: usize, members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
        w.set_chunk(chunk);
        for (name, bytes) in members {
            w.add_raw(name, bytes).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn chunks_concatenate_into_one_stream() {
        let input = data(3 * WINDOW + 1000, 7);
        let cut = [0, 1000, WINDOW + 1000, input.len()];
        let mut stream = Vec::new();
        let mut crc = crc32fast::Hasher::new();
        for (i, w) in cut.windows(2).enumerate() {
            let dict = &input[w[0].saturating_sub(WINDOW)..w[0]];
            let done = deflate_chunk(dict, &input[w[0]..w[1]], i == 2).unwrap();
            assert_eq!(done.len, (w[1] - w[0]) as u64);
            if i < 2 {
                // A sync flush ends with an empty stored block: 00 00 ff ff.
                assert!(done.data.ends_with(&[0, 0, 0xff, 0xff]), "chunk {i}");
            }
            crc.combine(&done.crc);
            stream.extend_from_slice(&done.data);
        }
        assert_eq!(inflate(&stream), input);
        assert_eq!(crc.finalize(), crc32fast::hash(&input));
    }

    #[test]
    fn a_priming_window_keeps_the_ratio() {
        // The same 16 KiB twice (zlib finds matches up to 32 KiB - 262 bytes back): the second
        // chunk, primed with the first, is nearly free.
        let half = data(16 << 10, 3);
        let primed = deflate_chunk(&half, &half, true).unwrap();
        let cold = deflate_chunk(&[], &half, true).unwrap();
        assert!(
            primed.data.len() * 10 < cold.data.len(),
            "{}",
            primed.data.len()
        );
    }

    #[test]
    fn chunk_boundaries() {
        let chunk = 4096;
        for n in [
            0,
            1,
            chunk - 1,
            chunk,
            chunk + 1,
            2 * chunk,
            2 * chunk + 1,
            5 * chunk + 77,
        ] {
            let bytes = data(n, n as u64);
            let zip = archive(chunk, &[("m.bin", &bytes)]);
            let (raw, crc, size) = stored_stream(&zip, "m.bin");
            assert_eq!(inflate(&raw), bytes, "{n} bytes");
            assert_eq!(crc, crc32fast::hash(&bytes), "{n} bytes");
            assert_eq!(size, n as u64);
            // Our reader checks the CRC and both sizes.
            let mut npz = NpzArchive::from_bytes(&zip).unwrap();
            assert_eq!(npz.read_raw("m.bin").unwrap(), bytes, "{n} bytes");
        }
    }

    #[test]
    fn one_chunk_members_match_the_in_line_writer() {
        // Same local headers and central directory as the zip crate writes (the deflate bytes
        // may differ: zlib-rs codes a one-call stream a little differently).
        let values: Vec<f64> = (0..5000).map(|i| f64::from(i) * 0.5).collect();
        let write = |mut w: NpzWriter<Cursor<Vec<u8>>>| {
            w.set_compression(Compression::Deflate);
            w.add("données", &values).unwrap();
            w.add("b", &values[..7]).unwrap();
            w.finish().unwrap().into_inner()
        };
        let ours = write(NpzWriter::new(Cursor::new(Vec::new())));
        let theirs = write(NpzWriter::new_in_line(Cursor::new(Vec::new())));
        let mut a = zip::ZipArchive::new(Cursor::new(&ours[..])).unwrap();
        let mut b = zip::ZipArchive::new(Cursor::new(&theirs[..])).unwrap();
        assert_eq!(a.len(), b.len());
        for i in 0..a.len() {
            let mut x = a.by_index(i).unwrap();
            let mut y = b.by_index(i).unwrap();
            assert_eq!(x.name().unwrap(), y.name().unwrap());
            assert_eq!(x.crc32(), y.crc32());
            assert_eq!(x.size(), y.size());
            assert_eq!(x.unix_mode(), y.unix_mode());
            assert_eq!(x.last_modified(), y.last_modified());
            assert_eq!(x.version_made_by(), y.version_made_by());
            // The zip64 extra field: its id, length and the size; then the compressed size.
            let (ex, ey) = (x.extra_data().unwrap(), y.extra_data().unwrap());
            assert_eq!((ex.len(), &ex[..12]), (ey.len(), &ey[..12]));
            let (mut p, mut q) = (Vec::new(), Vec::new());
            x.read_to_end(&mut p).unwrap();
            y.read_to_end(&mut q).unwrap();
            assert_eq!(p, q);
        }
        // The first local header: only the compressed size (in the zip64 extra field) differs.
        let name = "données.npy".len();
        let header = 30 + name + 20;
        let mut h = ours[..header].to_vec();
        h[30 + name + 12..header].copy_from_slice(&theirs[30 + name + 12..header]);
        assert_eq!(h, theirs[..header]);
    }

    #[test]
    fn streamed_one_chunk_members_match_the_in_line_writer() {
        // Data descriptors as the zip crate (and NumPy, on a stream) writes them.
        let values: Vec<f64> = (0..5000).map(|i| f64::from(i) * 0.5).collect();
        let write = |mut w: NpzStreamWriter<&mut Vec<u8>>| {
            w.set_compression(Compression::Deflate);
            w.add("données", &values).unwrap();
            w.add("b", &values[..7]).unwrap();
            w.finish().unwrap();
        };
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        write(NpzStreamWriter::new(&mut ours));
        write(NpzStreamWriter::new_in_line(&mut theirs));
        let name = "données.npy".len();
        let header = 30 + name + 20;
        assert_eq!(ours[..header], theirs[..header]);
        let mut a = zip::ZipArchive::new(Cursor::new(&ours[..])).unwrap();
        let mut b = zip::ZipArchive::new(Cursor::new(&theirs[..])).unwrap();
        for i in 0..2 {
            let (mut x, mut y) = (a.by_index(i).unwrap(), b.by_index(i).unwrap());
            assert_eq!((x.crc32(), x.size()), (y.crc32(), y.size()));
            assert_eq!(x.flags(), y.flags());
            let (mut p, mut q) = (Vec::new(), Vec::new());
            x.read_to_end(&mut p).unwrap();
            y.read_to_end(&mut q).unwrap();
            assert_eq!(p, q);
        }
        // The descriptor after the first member's data: signature, CRC, compressed size.
        let (at, crc) = {
            let f = a.by_index(0).unwrap();
            (f.data_start().unwrap() + f.compressed_size(), f.crc32())
        };
        let at = usize::try_from(at).unwrap();
        assert_eq!(ours[at..at + 4], *b"PK\x07\x08");
        assert_eq!(ours[at + 4..at + 8], crc.to_le_bytes());
    }

    #[test]
    fn queued_members_keep_their_order_among_the_others() {
        let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
        w.set_chunk(1000);
        let big = data(10_000, 1);
        w.add_raw("a.bin", &big).unwrap();
        w.add("b", &[1u8, 2, 3]).unwrap();
        w.set_compression(Compression::Stored);
        w.add("c", &[4u16]).unwrap();
        w.set_compression(Compression::Deflate);
        w.add_raw("d.bin", &big[..5000]).unwrap();
        // A streamed member writes the queue first.
        let mut r = w.start_records::<u32>("e", 3).unwrap();
        r.write_all(&[7, 8, 9]).unwrap();
        r.finish().unwrap();
        w.add_positional(&[0.5f32]).unwrap();
        let bytes = w.finish().unwrap().into_inner();
        let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
        assert_eq!(
            npz.keys().collect::<Vec<_>>(),
            ["a.bin", "b", "c", "d.bin", "e", "arr_0"]
        );
        assert_eq!(npz.read_raw("a.bin").unwrap(), big);
        assert_eq!(npz.read::<u8>("b").unwrap(), [1, 2, 3]);
        assert_eq!(npz.read::<u16>("c").unwrap(), [4]);
        assert_eq!(npz.read_raw("d.bin").unwrap(), big[..5000]);
        assert_eq!(npz.read::<u32>("e").unwrap(), [7, 8, 9]);
        assert_eq!(npz.read::<f32>("arr_0").unwrap(), [0.5]);
    }

    #[test]
    fn duplicates_and_failures_while_queued() {
        let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
        w.add("a", &[1u8]).unwrap();
        // Refused before anything is queued; the archive stays usable.
        let err = w.add("a", &[2u8]).unwrap_err();
        assert!(err.to_string().contains("a.npy"), "{err}");
        let err = w.add_raw("a.npy", b"x").unwrap_err();
        assert!(err.to_string().contains("a.npy"), "{err}");
        assert!(w.start_records::<u8>("a", 1).is_err());
        w.add("b", &[3u8]).unwrap();
        let bytes = w.finish().unwrap().into_inner();
        let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
        assert_eq!(npz.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(npz.read::<u8>("a").unwrap(), [1]);

        // A value that does not fit the dtype fails half-way: the archive is unusable.
        let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
        w.add("ok", &[1u8]).unwrap();
        let opts = WriterBuilder::new().dtype("|u1".parse().unwrap());
        assert!(w.add_with("bad", &opts, &[1u32, 300]).is_err());
        let err = w.add("next", &[1u8]).unwrap_err();
        assert!(err.to_string().contains("\"bad.npy\""), "{err}");
        assert!(w.finish().is_err());
    }

    #[test]
    fn a_stream_writer_queues_too() {
        let big = data(CHUNK + 3, 9);
        let mut out = Vec::new();
        let mut w = NpzStreamWriter::new_compressed(&mut out);
        w.add_raw("x.bin", &big).unwrap();
        w.add("y", &[1i64, -1]).unwrap();
        w.finish().unwrap();
        let mut npz = NpzArchive::from_bytes(&out).unwrap();
        assert_eq!(npz.read_raw("x.bin").unwrap(), big);
        assert_eq!(npz.read::<i64>("y").unwrap(), [1, -1]);
    }

    #[test]
    fn archives_written_from_pool_threads_do_not_deadlock() {
        use rayon::prelude::*;
        let big = data(20_000, 5);
        let archives: Vec<Vec<u8>> = (0..8)
            .into_par_iter()
            .map(|i| archive(1000 + i, &[("a", &big), ("b", &big[..i * 100])]))
            .collect();
        for (i, zip) in archives.iter().enumerate() {
            let mut npz = NpzArchive::from_bytes(zip).unwrap();
            assert_eq!(npz.read_raw("a").unwrap(), big);
            assert_eq!(npz.read_raw("b").unwrap(), big[..i * 100]);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_chunking_round_trips(
            seed in any::<u64>(),
            sizes in proptest::collection::vec(0usize..6000, 1..4),
            chunk in 1usize..3000,
        ) {
            let members: Vec<(String, Vec<u8>)> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| (format!("m{i}"), data(n, seed ^ i as u64)))
                .collect();
            let refs: Vec<(&str, &[u8])> =
                members.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
            let zip = archive(chunk, &refs);
            let mut npz = NpzArchive::from_bytes(&zip).unwrap();
            for (name, bytes) in &members {
                prop_assert_eq!(&npz.read_raw(name).unwrap(), bytes);
                let (raw, crc, _) = stored_stream(&zip, name);
                prop_assert_eq!(&inflate(&raw), bytes);
                prop_assert_eq!(crc, crc32fast::hash(bytes));
            }
        }
    }

    #[test]
    fn the_sink_counts_what_it_takes() {
        let mut w = NpzWriter::new_compressed(Cursor::new(Vec::new()));
        w.set_chunk(10);
        let mut m = w.start_raw("plain.bin").unwrap();
        m.write_all(b"streamed members are deflated in line")
            .unwrap();
        w.add_raw("queued.bin", &[9; 25]).unwrap();
        let bytes = w.finish().unwrap().into_inner();
        let mut npz = NpzArchive::from_bytes(&bytes).unwrap();
        assert_eq!(npz.read_raw("queued.bin").unwrap(), [9; 25]);
        assert_eq!(
            npz.read_raw("plain.bin").unwrap(),
            b"streamed members are deflated in line"
        );
    }
}
