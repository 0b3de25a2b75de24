//! Encoding records into a reusable block buffer, written out a block at a time: each record
//! first through the exact tier (`super::exact`) when the type has one, then the general
//! serializer (`super::general`), which serves the rest of the records after a miss.
//! The mirror of the read side's `collect_elements`.

use std::io::Write;
use std::sync::mpsc::sync_channel;

use serde::Serialize;

use super::elem::ElemSer;

use super::exact::{write_tier, WriteTier};
use super::pipe::Pipe;
use super::plan::{Node, Plan};
use super::shape::Sink;
use crate::dtype::DType;
use crate::error::Result;
use crate::record::NpyRecord;

/// Records encoded into a reusable block, written out a block at a time.
pub(super) struct Blocks {
    pub(super) plan: Plan,
    pub(super) buf: Vec<u8>,
    pub(super) filled: usize,
    /// Records encoded so far (including ones already in the file, when appending).
    pub(super) count: u64,
    pub(super) block_bytes: usize,
    pub(super) expected: Option<u64>,
    /// The thread that writes full blocks, for writers made from a path (see `super::pipe`).
    pub(super) pipe: Option<Pipe>,
    /// Whether the serde doors still try the runtime-planned tier (`super::planned`) first:
    /// cleared by its first miss.
    pub(super) planned: bool,
}

impl Blocks {
    pub(super) fn new(plan: Plan, block_bytes: usize, expected: Option<u64>) -> Blocks {
        Blocks {
            plan,
            buf: Vec::new(),
            filled: 0,
            count: 0,
            block_bytes,
            expected,
            pipe: None,
            planned: true,
        }
    }

    pub(super) fn starting_at(mut self, count: u64) -> Blocks {
        self.count = count;
        self
    }

    /// Writes out the filled part of the block (with a pipe: hands it to the writing thread,
    /// which may still be writing it on return; see [`settle`](Self::settle)).
    pub(super) fn flush<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        if self.filled > 0 {
            match &mut self.pipe {
                Some(pipe) => {
                    let len = self.buf.len();
                    let full = std::mem::take(&mut self.buf);
                    self.buf = pipe.swap(full, self.filled, len)?;
                }
                None => w.write_all(&self.buf[..self.filled])?,
            }
            self.filled = 0;
        }
        Ok(())
    }

    /// [`flush`](Self::flush), and waits until every block is in the writer: after it the
    /// caller may write to or seek the writer itself.
    pub(super) fn settle<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        self.flush(w)?;
        if let Some(pipe) = &mut self.pipe {
            pipe.drain()?;
        }
        Ok(())
    }

    /// Makes room for at least one record, flushing and (first time) allocating the block.
    #[cold]
    pub(super) fn make_room<W: Write + ?Sized>(&mut self, w: &mut W) -> Result<()> {
        self.flush(w)?;
        let isz = self.plan.itemsize;
        if self.buf.len() < isz {
            let mut per = (self.block_bytes / isz).max(1);
            if let Some(e) = self.expected {
                per = per.min(usize::try_from(e).unwrap_or(usize::MAX).max(1));
            }
            self.buf = vec![0; per * isz];
        }
        Ok(())
    }

    #[inline(always)]
    pub(super) fn push<W: Write + ?Sized, T: Serialize + ?Sized>(
        &mut self,
        w: &mut W,
        rec: &T,
    ) -> Result<()> {
        let isz = self.plan.itemsize;
        if self.filled + isz > self.buf.len() {
            self.make_room(w)?;
        }
        let slot = &mut self.buf[self.filled..self.filled + isz];
        encode(&self.plan.root, slot, rec, &mut self.planned)
            .map_err(|e| e.at_record(self.count))?;
        self.filled += isz;
        self.count += 1;
        Ok(())
    }

    /// One record through the exact tier when it has one (after its first miss, `tier` is
    /// `None` and records go to the general serializer).
    #[inline]
    pub(super) fn push_exact<W: Write + ?Sized, T: Serialize + NpyRecord>(
        &mut self,
        w: &mut W,
        rec: &T,
        tier: &mut Option<WriteTier<T>>,
    ) -> Result<()> {
        if let Some(t) = tier {
            let isz = self.plan.itemsize;
            if self.filled + isz > self.buf.len() {
                self.make_room(w)?;
            }
            let slot = &mut self.buf[self.filled..self.filled + isz];
            if t.one::<W>(rec, slot) {
                self.filled += isz;
                self.count += 1;
                crate::tier::served(crate::tier::Tier::Exact, 1);
                return Ok(());
            }
            *tier = None;
        }
        self.push(w, rec)
    }

    /// `n` records already encoded as `bytes` (whole records), after the ones buffered: with a
    /// pipe, copied into its blocks, so that the caller encodes the next ones while the
    /// writing thread writes these; else as [`push_raw`](Self::push_raw).
    pub(super) fn push_raw_buffered<W: Write + ?Sized>(
        &mut self,
        w: &mut W,
        bytes: &[u8],
        n: u64,
    ) -> Result<()> {
        let isz = self.plan.itemsize;
        if self.pipe.is_none() || isz == 0 {
            return self.push_raw(w, bytes, n);
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.filled + isz > self.buf.len() {
                self.make_room(w)?;
            }
            let k = ((self.buf.len() - self.filled) / isz * isz).min(rest.len());
            self.buf[self.filled..self.filled + k].copy_from_slice(&rest[..k]);
            self.filled += k;
            rest = &rest[k..];
        }
        self.count += n;
        crate::tier::served(crate::tier::Tier::Exact, n);
        Ok(())
    }

    /// `n` records already encoded as `bytes` (plain data), after the ones buffered.
    pub(super) fn push_raw<W: Write + ?Sized>(
        &mut self,
        w: &mut W,
        bytes: &[u8],
        n: u64,
    ) -> Result<()> {
        self.settle(w)?;
        w.write_all(bytes)?;
        self.count += n;
        crate::tier::served(crate::tier::Tier::Exact, n);
        Ok(())
    }

    /// Encodes `recs`, on the exact tier first if there is one (`None` after its first miss).
    pub(super) fn push_all<W: Write + ?Sized, T: Serialize>(
        &mut self,
        w: &mut W,
        recs: &[T],
        exact: &mut Option<WriteTier<T>>,
    ) -> Result<()> {
        let isz = self.plan.itemsize;
        if isz == 0 {
            return recs.iter().try_for_each(|r| self.push(w, r));
        }
        let mut rest = recs;
        while !rest.is_empty() {
            if self.filled + isz > self.buf.len() {
                self.make_room(w)?;
            }
            let room = (self.buf.len() - self.filled) / isz;
            let n = room.min(rest.len());
            let start = self.filled;
            let root = &self.plan.root;
            let buf = &mut self.buf[start..start + n * isz];
            let mut off = 0;
            if let Some(t) = exact {
                let k = (t.run)(&rest[..n], buf, &t.plan);
                off = k * isz;
                crate::tier::served(crate::tier::Tier::Exact, k as u64);
                if k < n {
                    // A miss: the general path encodes that record again, and the rest.
                    *exact = None;
                }
            }
            for rec in &rest[off / isz..n] {
                if let Err(e) = encode(root, &mut buf[off..off + isz], rec, &mut self.planned) {
                    let k = off / isz;
                    self.filled += off;
                    self.count += k as u64;
                    return Err(e.at_record(self.count));
                }
                off += isz;
            }
            self.filled += n * isz;
            self.count += n as u64;
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Encodes `recs` on the exact tier in a second thread while this one writes: buffers of
    /// about [`PIPE_BYTES`] go back and forth between the two, so that encoding and the
    /// kernel's copy into the file overlap. After the exact tier's first miss, the rest of the
    /// records go through [`push_all`](Self::push_all)'s general path on this thread, which
    /// encodes that record again or reports its error (at its index, as always).
    pub(super) fn push_pipelined<W: Write + ?Sized, T: Serialize + NpyRecord + Sync>(
        &mut self,
        w: &mut W,
        recs: &[T],
        elem: &DType,
    ) -> Result<()> {
        let isz = self.plan.itemsize;
        if isz == 0 {
            return self.push_all(w, recs, &mut None);
        }
        self.settle(w)?;
        let per = (PIPE_BYTES / isz).max(1);
        let (full_tx, full_rx) = sync_channel::<(Vec<u8>, usize, usize)>(1);
        let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(2);
        let _ = empty_tx.send(Vec::new());
        let _ = empty_tx.send(Vec::new());
        let mut done = 0usize;
        let count = &mut self.count;
        std::thread::scope(|s| -> Result<()> {
            s.spawn(move || {
                let Some(tier) = write_tier::<T>(elem) else {
                    return;
                };
                for chunk in recs.chunks(per) {
                    let Ok(mut buf) = empty_rx.recv() else {
                        return;
                    };
                    buf.resize(chunk.len() * isz, 0);
                    let k = (tier.run)(chunk, &mut buf, &tier.plan);
                    if full_tx.send((buf, k, chunk.len())).is_err() || k < chunk.len() {
                        return;
                    }
                }
            });
            // On every way out the channels close, so the encoder never waits for a writer
            // that has stopped.
            let (empty_tx, full_rx) = (empty_tx, full_rx);
            for (buf, k, n) in full_rx.iter() {
                w.write_all(&buf[..k * isz])?;
                done += k;
                *count += k as u64;
                crate::tier::served(crate::tier::Tier::Exact, k as u64);
                if k < n {
                    break;
                }
                let _ = empty_tx.send(buf);
            }
            Ok(())
        })?;
        match recs.get(done..) {
            Some(rest) if !rest.is_empty() => self.push_all(w, rest, &mut None),
            _ => Ok(()),
        }
    }
}

pub(super) struct BlockSink<'a, W: ?Sized> {
    pub(super) blocks: &'a mut Blocks,
    pub(super) w: &'a mut W,
}

impl<W: Write + ?Sized> Sink for BlockSink<'_, W> {
    #[inline]
    fn element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<()> {
        self.blocks.push(self.w, value)
    }

    fn position(&self) -> u64 {
        self.blocks.count
    }
}

/// One record into `slot` on the runtime-planned tier (`super::planned`) while `planned`
/// holds, else, or after a miss (which clears `planned` for the records after it), on the
/// general tier.
#[inline(always)]
fn encode<T: ?Sized + Serialize>(
    root: &Node,
    slot: &mut [u8],
    rec: &T,
    planned: &mut bool,
) -> Result<()> {
    if *planned {
        if super::planned::encode(root, slot, rec) {
            crate::tier::served(crate::tier::Tier::Planned, 1);
            return Ok(());
        }
        *planned = false;
    }
    crate::tier::served(crate::tier::Tier::General, 1);
    rec.serialize(ElemSer::new(root, slot))
}

/// [`Blocks::push_pipelined`] for a record type known to qualify, chosen where its bounds are.
pub(super) type PipeFn<W, T> = fn(&mut Blocks, &mut W, &[T], &DType) -> Result<()>;

/// Bytes per buffer of [`Blocks::push_pipelined`].
const PIPE_BYTES: usize = 4 << 20;
