//! [`PlacedRecords`]: one result `Vec` filled in place from pieces of its data bytes that
//! arrive part by part, the parts in any order and each part's pieces in order, cut anywhere
//! (npy-remote: the body frames of the concurrent ranged GETs of a row range). Each piece is
//! decoded straight into its elements' slots of the result, on the exact tier (or copied, for
//! plain data), the general tiers taking over from an element the exact tier misses: the
//! values and errors of [`ReaderBuilder::from_slice`] on the same data.
//!
//! Calls the exact tier (`super::exact`), the plain-data check (`crate::pod`), the allocation
//! (`super::vecalloc`) and, on a miss, [`ReaderBuilder::records_in_slice`].

use std::collections::{BTreeMap, HashMap};

use serde::de::DeserializeOwned;

use super::exact::{self, ExactTier};
use super::options::ReaderBuilder;
use super::vecalloc;
use crate::error::{Error, Result};
use crate::header::{Header, ParsedHeader};
use crate::record::NpyRecord;
use crate::tier::{served, Tier};

/// The elements of an array's data (`count` elements of one dtype, in C order), decoded in
/// place from pieces of its bytes. The data is cut into parts of `per_part` elements (the last
/// may be shorter), each filled from its start by [`push`](PlacedRecords::push): pieces of a
/// part in order, parts in any order, a piece cut anywhere (inside an element too).
/// [`finish`](PlacedRecords::finish) returns the `Vec` once every part is complete; dropped
/// before, it drops the elements decoded so far.
///
/// Error positions count records and bytes from the first element of the data.
#[doc(hidden)]
pub struct PlacedRecords<T> {
    /// Room for `count` elements; its length stays 0 until `finish`.
    v: Vec<T>,
    /// The parts begun and not complete.
    active: HashMap<usize, Part>,
    /// Complete elements: disjoint ranges, `start -> end`, adjacent ones merged.
    complete: BTreeMap<usize, usize>,
    parts: usize,
    per_part: usize,
    count: usize,
    size: usize,
    dtype_header: ParsedHeader,
    rb: ReaderBuilder,
    tier: Option<ExactTier<T>>,
    /// Plain data (`T`'s memory is the element bytes): pieces are copied.
    plain: bool,
}

/// How far one part is filled: whole elements from its start, then the first bytes of the
/// next element when a piece ended inside it.
#[derive(Default)]
struct Part {
    filled: usize,
    carry: Vec<u8>,
}

impl<T: DeserializeOwned + NpyRecord + Send> PlacedRecords<T> {
    /// Room for `count` elements of `header`'s dtype (its shape and offset are not used) (the caller checked that the data holds
    /// them: the room is address space the kernel backs as elements are written), in parts
    /// of `per_part` elements. An error if the room cannot be had.
    pub fn new(
        rb: &ReaderBuilder,
        header: &ParsedHeader,
        count: u64,
        per_part: u64,
    ) -> Result<Self> {
        let size = header.header.dtype.itemsize();
        let too_big = || Error::overflow("the elements of a read");
        let count_n = usize::try_from(count).map_err(|_| too_big())?;
        let per_part = usize::try_from(per_part.max(1)).unwrap_or(usize::MAX);
        if size == 0 {
            return Err(Error::invalid_value(
                "elements of zero bytes are not placed",
            ));
        }
        let v = vecalloc::vec_for::<T>(count);
        if v.capacity() < count_n {
            return Err(too_big());
        }
        let nparts = count_n.div_ceil(per_part);
        let dtype_header = ParsedHeader {
            header: Header {
                dtype: header.header.dtype.clone(),
                shape: vec![0],
                fortran_order: false,
            },
            version: header.version,
            data_offset: 0,
        };
        let plain = super::bulk::plain::<T>(&dtype_header.header).is_some();
        Ok(PlacedRecords {
            v,
            active: HashMap::new(),
            complete: BTreeMap::new(),
            parts: nparts,
            per_part,
            count: count_n,
            size,
            tier: exact::tier::<T>(&header.header.dtype),
            plain,
            dtype_header,
            rb: rb.clone(),
        })
    }

    /// The number of parts.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// The data bytes of part `part` (elements `part * per_part ..`): its element range.
    pub fn part_elements(&self, part: usize) -> std::ops::Range<usize> {
        let start = part.saturating_mul(self.per_part).min(self.count);
        start..start.saturating_add(self.per_part).min(self.count)
    }

    /// Decodes the next `bytes` of part `part` into their slots. Bytes past the part's end are
    /// an error (nothing of them is decoded), as is a decoding error (with its position in the
    /// data); the part then stays as it was filled before the failing element.
    pub fn push(&mut self, part: usize, bytes: &[u8]) -> Result<()> {
        let range = self.part_elements(part);
        let begun = self.active.get(&part);
        if part >= self.parts || (begun.is_none() && self.is_complete(range.start)) {
            return Err(Error::invalid_value(format!(
                "bytes pushed to part {part} of {}, which is complete or does not exist",
                self.parts
            )));
        }
        let (filled, carried) = begun.map_or((0, 0), |p| (p.filled, p.carry.len()));
        let room = (range.len() - filled) * self.size - carried;
        if bytes.len() > room {
            return Err(Error::invalid_value(format!(
                "{} bytes pushed to part {part}, which has room for {room} more",
                bytes.len()
            )));
        }
        if bytes.is_empty() {
            return Ok(());
        }
        let mut bytes = bytes;
        let p = self.active.entry(part).or_default();
        if !p.carry.is_empty() {
            let take = (self.size - p.carry.len()).min(bytes.len());
            p.carry.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if p.carry.len() < self.size {
                return Ok(());
            }
            let one = std::mem::take(&mut p.carry);
            self.fill(part, range.start, &one)?;
        }
        let whole = bytes.len() / self.size * self.size;
        self.fill(part, range.start, &bytes[..whole])?;
        let p = self.active.entry(part).or_default();
        p.carry.extend_from_slice(&bytes[whole..]);
        if p.filled == range.len() {
            self.active.remove(&part);
            self.completed(range);
        }
        Ok(())
    }

    /// True if element `at` is in a complete range.
    fn is_complete(&self, at: usize) -> bool {
        (self.complete.range(..=at).next_back()).is_some_and(|(_, &end)| end > at)
    }

    /// Records the elements `range` complete, merged with their neighbours.
    fn completed(&mut self, range: std::ops::Range<usize>) {
        let (mut start, mut end) = (range.start, range.end);
        if let Some(after) = self.complete.remove(&end) {
            end = after;
        }
        if let Some((&s, &e)) = self.complete.range(..start).next_back()
            && e == start
        {
            self.complete.remove(&s);
            start = s;
        }
        self.complete.insert(start, end);
    }

    /// Decodes `bytes` (whole elements) into the next slots of part `part` (which starts at
    /// element `start`), counting each slot filled as it is.
    fn fill(&mut self, part: usize, start: usize, bytes: &[u8]) -> Result<()> {
        let n = bytes.len() / self.size;
        if n == 0 {
            return Ok(());
        }
        let first = start + self.active.entry(part).or_default().filled;
        let slots = &mut self.v.spare_capacity_mut()[first..first + n];
        let mut done = 0;
        if self.plain && crate::pod::check_bools(&T::LAYOUT, bytes, 0).is_ok() {
            let dst = slots.as_mut_ptr().cast::<u8>();
            // SAFETY: `slots` is `n` elements of `T`, `n * size_of::<T>()` bytes (the plain
            // check says `size_of::<T>()` is the dtype's item size, so `bytes` holds exactly
            // that many), and does not overlap `bytes` (the `Vec` is ours). The plain proof
            // says `T`'s memory is its layout, every leaf of which takes any bit pattern but
            // `bool`, whose bytes were just checked: the slots hold valid `T`s after the copy.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
            done = n;
        } else if let Some(t) = &self.tier {
            done = (t.run_into)(bytes, &t.plan, slots).min(n);
        }
        self.active.entry(part).or_default().filled += done;
        served(Tier::Exact, done as u64);
        if done == n {
            return Ok(());
        }
        // From the element the exact tier missed, the general tiers, which give its value or
        // its error.
        let rest = &bytes[done * self.size..];
        let mut h = self.dtype_header.clone();
        h.header.shape = vec![(n - done) as u64];
        let at = first + done;
        let values = self
            .rb
            .records_in_slice::<T>(rest, &h)
            .map_err(|e| shift(e, at as u64, (at * self.size) as u64))?;
        let want = n - done;
        if values.len() != want {
            return Err(Error::invalid_value(format!(
                "the general tiers decoded {} of {want} elements",
                values.len()
            )));
        }
        let slots = &mut self.v.spare_capacity_mut()[at..at + want];
        let p = self.active.entry(part).or_default();
        for (slot, value) in slots.iter_mut().zip(values) {
            slot.write(value);
            p.filled += 1;
        }
        Ok(())
    }

    /// Every element, once every part is complete; otherwise an error saying how many were
    /// decoded (those are dropped).
    pub fn finish(mut self) -> Result<Vec<T>> {
        if self.count > 0 && self.complete.get(&0) != Some(&self.count) {
            let done: usize = self.complete.iter().map(|(s, e)| e - s).sum();
            return Err(Error::invalid_value(format!(
                "{done} of the {} elements were decoded",
                self.count
            )));
        }
        let mut v = std::mem::take(&mut self.v);
        self.complete.clear();
        self.active.clear();
        // SAFETY: every slot of `0..count` was written: one complete range covers them all
        // (ranges are recorded when every element of a part was written, counted as each
        // was), and `count <= capacity` (checked in `new`).
        unsafe { v.set_len(self.count) };
        Ok(v)
    }
}

impl<T> Drop for PlacedRecords<T> {
    fn drop(&mut self) {
        if !std::mem::needs_drop::<T>() {
            return;
        }
        let slots = self.v.spare_capacity_mut();
        let begun = self.active.iter().map(|(&i, p)| {
            let start = i * self.per_part;
            start..start + p.filled
        });
        let complete = self.complete.iter().map(|(&s, &e)| s..e);
        for range in begun.chain(complete) {
            for slot in &mut slots[range] {
                // SAFETY: the slots of complete ranges and the first `filled` of each begun
                // part were written (counted as each was) and are disjoint; each is dropped
                // once, here. The `Vec`'s length is 0, so it never drops them again (`finish`
                // clears the records before exposing them).
                unsafe { slot.assume_init_drop() };
            }
        }
    }
}

/// `e` with its record and byte positions moved `records` and `bytes` further.
fn shift(e: Error, records: u64, bytes: u64) -> Error {
    let pos = e.position().clone();
    let mut out = Error::new(e.into_kind());
    if let Some(b) = pos.byte {
        out = out.at_byte(bytes + b);
    }
    if let Some(r) = pos.record {
        out = out.at_record(records + r);
    }
    if let Some(f) = pos.field {
        out = out.in_field(&f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::parse_header;

    fn parts_of<T: serde::Serialize + NpyRecord + Sync>(values: &[T]) -> (ParsedHeader, Vec<u8>) {
        let file = crate::to_vec(values).unwrap();
        let h = parse_header(&file, &Default::default()).unwrap();
        let data = file[h.data_offset as usize..].to_vec();
        (h, data)
    }

    #[test]
    fn parts_in_any_order_pieces_cut_anywhere() {
        // Big-endian `f8` as `f64`: the exact tier (byte-swapped), not a plain copy.
        let values: Vec<f64> = (0..100).map(|i| i as f64 / 3.0).collect();
        let dtype = crate::DType::from_descr("'>f8'").unwrap();
        let h = ParsedHeader {
            header: Header::new(dtype, vec![100]),
            version: crate::Version::V1_0,
            data_offset: 0,
        };
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        let rb = ReaderBuilder::new();
        let mut p = PlacedRecords::<f64>::new(&rb, &h, 100, 30).unwrap();
        assert!(!p.plain && p.tier.is_some());
        assert_eq!(p.parts(), 4);
        assert_eq!(p.part_elements(3), 90..100);
        // Parts 3, 1, 0, 2, each in pieces of 5 bytes (elements cut across them).
        for part in [3, 1, 0, 2] {
            let r = p.part_elements(part);
            for piece in data[r.start * 8..r.end * 8].chunks(5) {
                p.push(part, piece).unwrap();
            }
        }
        assert_eq!(p.finish().unwrap(), values);
    }

    #[test]
    fn too_many_bytes_and_unfinished_parts_are_errors() {
        let values: Vec<i64> = (0..10).collect();
        let (h, data) = parts_of(&values);
        let rb = ReaderBuilder::new();
        let mut p = PlacedRecords::<i64>::new(&rb, &h, 10, 4).unwrap();
        // Part 2 is elements 8..10: one byte more is refused, nothing of it decoded.
        let err = p.push(2, &data[7 * 8..]).unwrap_err();
        assert!(err.to_string().contains("room for 16 more"), "{err}");
        p.push(2, &data[8 * 8..]).unwrap();
        assert!(p.push(2, &[0]).is_err(), "part 2 is complete");
        assert!(p.push(3, &[0]).is_err(), "no part 3");
        // Part 0 half-filled, part 1 never: an error.
        p.push(0, &data[..2 * 8 + 1]).unwrap();
        let err = p.finish().unwrap_err();
        assert!(err.to_string().contains("2 of the 10 elements"), "{err}");
    }

    #[test]
    fn a_miss_continues_on_the_general_tiers_with_the_datas_positions() {
        // bools: the plain copy refuses a 2, then the general tiers report it.
        let values = vec![true; 50];
        let (h, mut data) = parts_of(&values);
        data[37] = 2;
        let rb = ReaderBuilder::new();
        let mut p = PlacedRecords::<bool>::new(&rb, &h, 50, 20).unwrap();
        p.push(0, &data[..20]).unwrap();
        let err = p.push(1, &data[20..40]).unwrap_err();
        assert_eq!(err.kind().code(), "invalid_value", "{err}");
        assert_eq!(
            (err.position().record, err.position().byte),
            (Some(37), Some(37))
        );
        // What `from_slice` says of the whole file.
        let mut file = crate::to_vec(&values).unwrap();
        file[h.data_offset as usize + 37] = 2;
        let whole = crate::from_slice::<bool>(&file).unwrap_err();
        assert_eq!(whole.kind().code(), err.kind().code());
        assert_eq!(whole.position().record, Some(37));
        assert_eq!(whole.position().byte, Some(h.data_offset + 37));
    }
}
