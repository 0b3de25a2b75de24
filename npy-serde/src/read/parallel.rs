//! Parallel decoding of large arrays on the exact tier, or on the runtime-planned tier for
//! types without a compile-time layout (feature `parallel`, on by default; off per reader
//! with [`ReaderBuilder::parallel`], threshold [`ReaderBuilder::parallel_threshold`]).
//!
//! The elements are split into chunks of about [`CHUNK_BYTES`], each decoded by one of rayon's
//! threads straight into its own disjoint part of the result `Vec` (from memory, or from a file
//! with positional reads into a per-thread buffer, so that the kernel's copies run in parallel
//! too). Arrays smaller than the reader's threshold (16 MiB by default) never start threads.
//!
//! Results are those of the sequential tiers: if any chunk cannot be decoded exactly (a miss:
//! a bool byte other than 0 or 1, a type that asks for something else, a short read), every
//! value decoded so far is dropped and the caller decodes the whole array sequentially, which
//! gives its values or its first error (the lowest index), as always.
//!
//! Calls the exact and runtime-planned tiers (`super::exact`, `super::planned`) and the
//! allocation (`super::vecalloc`).

use std::mem::MaybeUninit;

use serde::de::Deserialize;

use super::exact;
use super::options::ReaderBuilder;
use super::planned::{LastPlan, PlannedRun};
use crate::dtype::DType;
use crate::record::NpyRecord;
use crate::tier::Tier;

/// Bytes of data per parallel task.
const CHUNK_BYTES: usize = 4 << 20;

/// True if an array of `len` data bytes is worth decoding in parallel with these options.
pub(crate) fn worth(len: u64, rb: &ReaderBuilder) -> bool {
    rb.parallel && cfg!(feature = "parallel") && len >= rb.parallel_min && len > 0
}

/// Elements per task: about [`CHUNK_BYTES`], and at least 64 tasks for smaller arrays (so that
/// a low threshold still splits them).
fn chunk_len(count: usize, size: usize) -> usize {
    (CHUNK_BYTES / size).min(count.div_ceil(64)).max(1)
}

/// Every element of `data` (complete, `count` elements of `dtype` in C order) as a `T`,
/// decoded in parallel; `None` on any miss (nothing is kept) or when the exact tier does not
/// apply.
pub(super) fn from_bytes<'de, T: Deserialize<'de> + NpyRecord + Send>(
    data: &'de [u8],
    dtype: &DType,
    count: usize,
) -> Option<Vec<T>> {
    exact::tier::<T>(dtype)?;
    let size = dtype.itemsize();
    if size == 0 || data.len() / size < count {
        return None;
    }
    let chunk = chunk_len(count, size);
    decode_into(
        count,
        chunk,
        Tier::Exact,
        |first, part: &mut [MaybeUninit<T>], _| {
            let tier = exact::tier::<T>(dtype)?;
            let bytes = data.get(first * size..(first + part.len()) * size)?;
            Some((tier.run_into)(bytes, &tier.plan, part))
        },
    )
}

/// [`from_bytes`] on the runtime-planned tier, for any `Deserialize` type (each task with its
/// own plan caches).
pub(super) fn planned_from_bytes<'de, T: Deserialize<'de> + Send>(
    data: &'de [u8],
    dtype: &DType,
    count: usize,
    rb: &ReaderBuilder,
) -> Option<Vec<T>> {
    let size = dtype.itemsize();
    if size == 0 || data.len() / size < count {
        return None;
    }
    let chunk = chunk_len(count, size);
    decode_into(count, chunk, Tier::Planned, |first, part, _| {
        let bytes = data.get(first * size..(first + part.len()) * size)?;
        Some(planned_into(bytes, dtype, rb, part))
    })
}

/// [`from_file`] on the runtime-planned tier.
#[cfg(unix)]
pub(super) fn planned_from_file<T: serde::de::DeserializeOwned + Send>(
    file: &std::fs::File,
    offset: u64,
    dtype: &DType,
    count: usize,
    rb: &ReaderBuilder,
) -> Option<Vec<T>> {
    let size = dtype.itemsize();
    if size == 0 {
        return None;
    }
    let chunk = chunk_len(count, size);
    decode_into(count, chunk, Tier::Planned, |first, part, buf| {
        in_blocks(file, offset, size, first, part, buf, |bytes, out| {
            planned_into(bytes, dtype, rb, out)
        })
    })
}

/// Sequential everywhere but unix (no positional reads).
#[cfg(not(unix))]
pub(super) fn planned_from_file<T: serde::de::DeserializeOwned + Send>(
    _file: &std::fs::File,
    _offset: u64,
    _dtype: &DType,
    _count: usize,
    _rb: &ReaderBuilder,
) -> Option<Vec<T>> {
    None
}

/// Decodes the whole elements of `bytes` into the first slots of `out` on the runtime-planned
/// tier, up to its first miss; returns how many slots it filled, in order.
fn planned_into<'de, T: Deserialize<'de>>(
    bytes: &'de [u8],
    dtype: &DType,
    rb: &ReaderBuilder,
    out: &mut [MaybeUninit<T>],
) -> usize {
    let (ctx, last) = (rb.ctx(), LastPlan::default());
    let mut slots = out.iter_mut();
    T::planned_run::<ParallelSite, _>(bytes, dtype, &ctx, &last, |v| match slots.next() {
        Some(slot) => {
            slot.write(v);
            true
        }
        None => false,
    })
}

/// [`from_bytes`] for the data of a file (`count` elements from byte `offset`), read with
/// positional reads so that the threads read in parallel too; the file's own position is not
/// moved.
#[cfg(unix)]
pub(super) fn from_file<T: serde::de::DeserializeOwned + NpyRecord + Send>(
    file: &std::fs::File,
    offset: u64,
    dtype: &DType,
    count: usize,
) -> Option<Vec<T>> {
    exact::tier::<T>(dtype)?;
    let size = dtype.itemsize();
    if size == 0 {
        return None;
    }
    let chunk = chunk_len(count, size);
    decode_into(
        count,
        chunk,
        Tier::Exact,
        |first, part: &mut [MaybeUninit<T>], buf| {
            let tier = exact::tier::<T>(dtype)?;
            in_blocks(file, offset, size, first, part, buf, |bytes, out| {
                (tier.run_into)(bytes, &tier.plan, out)
            })
        },
    )
}

/// Bytes read per positional read in [`from_file`] and [`planned_from_file`]: small enough
/// that the block is still in the core's L2 cache when it is decoded, so the decode does not
/// read it from memory a second time (a task's whole chunk read at once, 4 MiB, was).
#[cfg(unix)]
const BLOCK_BYTES: usize = 128 << 10;

/// Fills `part` (the elements from index `first`, `size` bytes each, of the data at `offset`
/// in `file`) by blocks of about [`BLOCK_BYTES`]: each read into `buf`, then decoded into its
/// slots by `decode`, which returns how many leading slots it filled. Returns how many leading
/// slots of `part` were filled (fewer than all at the first miss), or `None` if a read failed.
#[cfg(unix)]
fn in_blocks<T>(
    file: &std::fs::File,
    offset: u64,
    size: usize,
    first: usize,
    part: &mut [MaybeUninit<T>],
    buf: &mut Vec<u8>,
    mut decode: impl FnMut(&[u8], &mut [MaybeUninit<T>]) -> usize,
) -> Option<usize> {
    use std::os::unix::fs::FileExt;
    let per_block = (BLOCK_BYTES / size).max(1);
    let mut done = 0;
    for out in part.chunks_mut(per_block) {
        buf.resize(out.len() * size, 0);
        let index = (first + done) as u64;
        let at = offset.checked_add(index.checked_mul(size as u64)?)?;
        file.read_exact_at(buf, at).ok()?;
        let n = decode(buf, out);
        done += n;
        if n < out.len() {
            break;
        }
    }
    Some(done)
}

/// Sequential everywhere but unix (no positional reads).
#[cfg(not(unix))]
pub(super) fn from_file<T: serde::de::DeserializeOwned + NpyRecord + Send>(
    _file: &std::fs::File,
    _offset: u64,
    _dtype: &DType,
    _count: usize,
) -> Option<Vec<T>> {
    None
}

/// A `Vec` of `count` elements, its chunks of `chunk` elements filled in parallel by `fill`
/// (given the first element's index, the chunk's slots and a per-thread scratch buffer, it
/// returns how many leading slots it filled, or `None`). `None` unless every slot was filled.
/// `tier` is the tier `fill` decodes on (for the tier hook).
#[cfg(feature = "parallel")]
fn decode_into<T: Send>(
    count: usize,
    chunk: usize,
    tier: Tier,
    fill: impl Fn(usize, &mut [MaybeUninit<T>], &mut Vec<u8>) -> Option<usize> + Sync,
) -> Option<Vec<T>> {
    use rayon::prelude::*;
    let mut v = super::vecalloc::vec_for::<T>(count as u64);
    if v.capacity() < count {
        return None;
    }
    let slots = &mut v.spare_capacity_mut()[..count];
    let filled: Vec<usize> = slots
        .par_chunks_mut(chunk)
        .enumerate()
        .map_init(Vec::new, |buf, (i, part)| {
            fill(i * chunk, part, buf).unwrap_or(0).min(part.len())
        })
        .collect();
    let complete = filled
        .iter()
        .zip(slots.chunks(chunk))
        .all(|(&n, part)| n == part.len());
    if !complete {
        for (part, &n) in slots.chunks_mut(chunk).zip(&filled) {
            for slot in &mut part[..n] {
                // SAFETY: `fill` wrote the first `n` slots of this chunk (the exact tier's
                // `run_into` and `planned_into` fill slots in order and return how many they
                // wrote), and each is
                // dropped once, here; the `Vec`'s length stays 0, so it never drops them again.
                unsafe { slot.assume_init_drop() };
            }
        }
        return None;
    }
    // SAFETY: every one of the first `count` slots was written (each chunk reported all its
    // slots filled), and `count <= capacity`.
    unsafe { v.set_len(count) };
    crate::tier::served(tier, count as u64);
    Some(v)
}

#[cfg(not(feature = "parallel"))]
fn decode_into<T: Send>(
    _count: usize,
    _chunk: usize,
    _tier: Tier,
    _fill: impl Fn(usize, &mut [MaybeUninit<T>], &mut Vec<u8>) -> Option<usize> + Sync,
) -> Option<Vec<T>> {
    None
}

/// The call site of this module's runtime-planned tier (see `super::planned::RowDe`).
struct ParallelSite;
