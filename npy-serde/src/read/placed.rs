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

    /// Elements alive: a [`Counted`] or [`Empty`] adds one when made and takes it back when
    /// dropped (per thread: the tests decode on their own thread, `parallel(false)`).
    mod live {
        use std::cell::Cell;

        thread_local! {
            static LIVE: Cell<isize> = const { Cell::new(0) };
        }

        pub fn now() -> isize {
            LIVE.with(Cell::get)
        }

        /// Made by serde's `skip` (`Default`) once every other field decoded, so exactly
        /// once per element made; a heap allocation too, for LeakSanitizer and a double free.
        #[derive(Debug)]
        pub struct Live(#[allow(dead_code)] Box<u8>);

        impl Default for Live {
            fn default() -> Self {
                LIVE.with(|l| l.set(l.get() + 1));
                Live(Box::new(1))
            }
        }

        impl Drop for Live {
            fn drop(&mut self) {
                LIVE.with(|l| {
                    l.set(l.get() - 1);
                    assert!(l.get() >= 0, "an element dropped twice");
                });
            }
        }

        /// Zero-sized.
        #[derive(Debug)]
        pub struct Tick;

        impl Default for Tick {
            fn default() -> Self {
                LIVE.with(|l| l.set(l.get() + 1));
                Tick
            }
        }

        impl Drop for Tick {
            fn drop(&mut self) {
                LIVE.with(|l| {
                    l.set(l.get() - 1);
                    assert!(l.get() >= 0, "an element dropped twice");
                });
            }
        }
    }

    /// A record with drop glue, on the exact tier for [`EXACT`] (its layout) and on the
    /// general tiers for [`GENERAL`] (`>i4` widened).
    #[derive(serde::Deserialize, Debug)]
    struct Counted {
        id: i64,
        ok: bool,
        #[serde(skip)]
        _live: live::Live,
    }

    impl NpyRecord for Counted {
        fn dtype() -> crate::DType {
            EXACT.parse().unwrap()
        }
        const LAYOUT: crate::layout::Layout =
            crate::layout::Layout::record(&[&i64::LAYOUT, &bool::LAYOUT], false);
    }

    const EXACT: &str = "[('id','<i8'),('ok','|b1')]";
    const GENERAL: &str = "[('id','>i4'),('ok','|b1')]";

    /// `n` records of `descr` (EXACT or GENERAL): id `i * 3 - 5`, ok `i % 2`; and its header.
    fn counted(descr: &str, n: usize) -> (ParsedHeader, Vec<u8>, usize) {
        let wide = descr == EXACT;
        let mut data = Vec::new();
        for i in 0..n as i64 {
            if wide {
                data.extend((i * 3 - 5).to_le_bytes());
            } else {
                data.extend((i as i32 * 3 - 5).to_be_bytes());
            }
            data.push((i % 2) as u8);
        }
        let h = ParsedHeader {
            header: Header::new(descr.parse().unwrap(), vec![n as u64]),
            version: crate::Version::V1_0,
            data_offset: 0,
        };
        (h, data, if wide { 9 } else { 5 })
    }

    fn rb() -> ReaderBuilder {
        ReaderBuilder::new().parallel(false)
    }

    fn check(v: &[Counted], n: usize) {
        assert_eq!(v.len(), n);
        for (i, c) in v.iter().enumerate() {
            assert_eq!((c.id, c.ok), (i as i64 * 3 - 5, i % 2 == 1), "element {i}");
        }
    }

    #[test]
    fn every_cut_of_every_part_in_any_order_on_both_tiers() {
        for descr in [EXACT, GENERAL] {
            let n = 23;
            let (h, data, size) = counted(descr, n);
            // Byte by byte, parts 4, 2, 0, 3, 1 (the last is 3 elements).
            let mut p = PlacedRecords::<Counted>::new(&rb(), &h, n as u64, 5).unwrap();
            assert_eq!(p.tier.is_some(), descr == EXACT, "{descr}");
            assert!(!p.plain);
            for part in [4, 2, 0, 3, 1] {
                let r = p.part_elements(part);
                for b in &data[r.start * size..r.end * size] {
                    p.push(part, std::slice::from_ref(b)).unwrap();
                }
            }
            let v = p.finish().unwrap();
            check(&v, n);
            assert_eq!(live::now(), n as isize);
            drop(v);
            assert_eq!(live::now(), 0);
            // Each part in two pieces cut at every byte (after an empty one; nothing, even
            // an empty piece, is pushed to a complete part), parts in reverse order.
            let per = 4;
            for cut in 0..=per * size {
                let mut p = PlacedRecords::<Counted>::new(&rb(), &h, n as u64, per as u64).unwrap();
                for part in (0..p.parts()).rev() {
                    let r = p.part_elements(part);
                    let bytes = &data[r.start * size..r.end * size];
                    let cut = cut.min(bytes.len());
                    p.push(part, &[]).unwrap();
                    p.push(part, &bytes[..cut]).unwrap();
                    if cut < bytes.len() {
                        p.push(part, &bytes[cut..]).unwrap();
                    }
                }
                let v = p.finish().unwrap();
                check(&v, n);
                drop(v);
                assert_eq!(live::now(), 0, "{descr}, cut at {cut}");
            }
        }
    }

    #[test]
    fn a_long_piece_is_refused_whole_and_a_short_part_fails_the_finish() {
        for descr in [EXACT, GENERAL] {
            let (h, data, size) = counted(descr, 10);
            let mut p = PlacedRecords::<Counted>::new(&rb(), &h, 10, 4).unwrap();
            // Part 1 (elements 4..8) begun inside element 5, then a piece one byte too long.
            p.push(1, &data[4 * size..5 * size + 2]).unwrap();
            let err = p.push(1, &data[5 * size + 2..8 * size + 1]).unwrap_err();
            let room = 3 * size - 2;
            assert!(
                err.to_string().contains(&format!("room for {room} more")),
                "{err}"
            );
            assert_eq!(
                live::now(),
                1,
                "{descr}: only element 4, nothing of the long piece"
            );
            // The right piece completes it; part 2 short by a byte, part 0 never begun.
            p.push(1, &data[5 * size + 2..8 * size]).unwrap();
            p.push(2, &data[8 * size..10 * size - 1]).unwrap();
            assert_eq!(live::now(), 5);
            let err = p.finish().unwrap_err();
            assert!(err.to_string().contains("4 of the 10 elements"), "{err}");
            assert_eq!(live::now(), 0, "{descr}: the decoded elements dropped once");
        }
    }

    #[test]
    fn an_error_mid_piece_keeps_the_elements_before_it_and_drops_them_once() {
        for descr in [EXACT, GENERAL] {
            let (h, mut data, size) = counted(descr, 20);
            // Element 7's bool is 2: the exact tier misses it, the general tiers report it.
            data[7 * size + size - 1] = 2;
            let mut p = PlacedRecords::<Counted>::new(&rb(), &h, 20, 5).unwrap();
            p.push(0, &data[..5 * size]).unwrap();
            p.push(3, &data[15 * size..17 * size + 3]).unwrap();
            // Part 1 (5..10): a piece ending inside element 5, then one from there into 8.
            p.push(1, &data[5 * size..5 * size + 1]).unwrap();
            let err = p.push(1, &data[5 * size + 1..8 * size + 2]).unwrap_err();
            assert_eq!(err.kind().code(), "invalid_value", "{err}");
            assert_eq!(err.position().record, Some(7), "{err}");
            // The bool's byte.
            assert_eq!(err.position().byte, Some((8 * size - 1) as u64), "{err}");
            // Parts 0 and 3's two, element 5 (completed from the carry), and element 6 on
            // the exact tier (the general tiers decode 6 and 7 in one call, which fails whole).
            let before = if descr == EXACT { 7 } else { 6 };
            assert_eq!(live::now(), 5 + 2 + before - 5, "{descr}");
            drop(p);
            assert_eq!(live::now(), 0, "{descr}");
        }
    }

    #[test]
    fn dropped_before_completion_drops_each_decoded_element_once() {
        for descr in [EXACT, GENERAL] {
            let (h, data, size) = counted(descr, 30);
            let mut p = PlacedRecords::<Counted>::new(&rb(), &h, 30, 6).unwrap();
            // Parts 1, 0 (merged with 1), 4 complete; 2 with a carried byte; 3 not begun.
            for part in [1, 0, 4] {
                let r = p.part_elements(part);
                p.push(part, &data[r.start * size..r.end * size]).unwrap();
            }
            p.push(2, &data[12 * size..14 * size + 1]).unwrap();
            assert_eq!(p.complete.len(), 2);
            assert_eq!(live::now(), 20);
            drop(p);
            assert_eq!(live::now(), 0, "{descr}");
            // And one never pushed to.
            drop(PlacedRecords::<Counted>::new(&rb(), &h, 30, 6).unwrap());
            assert_eq!(live::now(), 0);
        }
    }

    /// Zero-sized, with drop glue.
    #[derive(serde::Deserialize, Debug)]
    struct Empty {
        #[serde(skip)]
        _tick: live::Tick,
    }

    impl NpyRecord for Empty {
        fn dtype() -> crate::DType {
            "[('a','<i2')]".parse().unwrap()
        }
    }

    #[test]
    fn zero_sized_records_and_elements_of_no_bytes() {
        assert_eq!(size_of::<Empty>(), 0);
        // Zero-sized elements of 2-byte data: placed like any other (the general tiers).
        let h = ParsedHeader {
            header: Header::new(Empty::dtype(), vec![9]),
            version: crate::Version::V1_0,
            data_offset: 0,
        };
        let data = [7u8; 18];
        let mut p = PlacedRecords::<Empty>::new(&rb(), &h, 9, 4).unwrap();
        p.push(2, &data[..2]).unwrap();
        p.push(1, &data[..3]).unwrap();
        p.push(1, &data[..5]).unwrap();
        p.push(0, &data[..8]).unwrap();
        assert_eq!(live::now(), 9);
        assert_eq!(p.finish().unwrap().len(), 9);
        assert_eq!(live::now(), 0);
        let mut p = PlacedRecords::<Empty>::new(&rb(), &h, 9, 4).unwrap();
        p.push(1, &data[..5]).unwrap();
        assert_eq!(live::now(), 2);
        drop(p);
        assert_eq!(live::now(), 0);
        // Elements of no bytes are refused (the caller reads those whole).
        let h = ParsedHeader {
            header: Header::new("[]".parse().unwrap(), vec![9]),
            version: crate::Version::V1_0,
            data_offset: 0,
        };
        let err = PlacedRecords::<Empty>::new(&rb(), &h, 9, 4).err().unwrap();
        assert!(err.to_string().contains("zero bytes"), "{err}");
        // No elements: no parts, every push refused, an empty result.
        let (h, _, _) = counted(EXACT, 0);
        let mut p = PlacedRecords::<Counted>::new(&rb(), &h, 0, 4).unwrap();
        assert_eq!(p.parts(), 0);
        assert!(p.push(0, &[]).is_err());
        assert!(p.finish().unwrap().is_empty());
    }
}
