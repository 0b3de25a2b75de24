//! The streaming path of the common object array: the data list of `str`, `bytes` and `None`
//! items that NumPy 1.x and 2.x write (protocols 2 to 5), walked straight from the bytes with
//! no node of the object graph per element.
//!
//! The machine (`machine.rs`, when asked) stops at the `EMPTY_LIST` that is an array's data
//! (the fifth item of the state tuple `(version, shape, dtype, fortran, data)` being built
//! under the `_reconstruct` node) and [`walk`]s the items that follow: batches of `MARK items
//! APPENDS`, single `item APPEND`s, `FRAME`s, and after each item the memo puts NumPy's
//! pickler writes (`BINPUT`, `LONG_BINPUT`, `MEMOIZE`, each the next key in order). Every
//! length is checked against the bytes present and every `str` against UTF-8. Anything else in
//! the run (a memo get, a nested value, a Python 2 string, an unexpected key, a malformed
//! opcode) is not this shape: the walk says so, the machine goes back to the run's start and
//! interprets it opcode by opcode as always, so results and errors are the general path's.
//!
//! The machine keeps only the run's place ([`Run`]); the elements are decoded by a second
//! [`walk`] of the same bytes once the whole pickle is known good, so values, budget errors and
//! the caller's errors come in the order the general path gives them.

use super::cursor::Cursor;
use super::graph::Id;
use super::value::PyValue;
use crate::error::Result;

/// One item of a data list, borrowed from the pickle bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Item<'a> {
    Str(&'a str),
    Bytes(&'a [u8]),
    None,
}

impl Item<'_> {
    /// The bytes this item costs the budget (as `leaf_bytes` of its value).
    pub(crate) fn cost(self) -> u64 {
        match self {
            Item::Str(s) => s.len() as u64,
            Item::Bytes(b) => b.len() as u64,
            Item::None => 0,
        }
    }

    /// The value the general path builds for this item.
    pub(crate) fn value(self) -> PyValue {
        match self {
            Item::Str(s) => PyValue::Str(s.to_owned()),
            Item::Bytes(b) => PyValue::Bytes(b.to_vec()),
            Item::None => PyValue::None,
        }
    }
}

/// Where a walked run of data items is, as the machine recorded it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Run {
    /// The offset of the run's first opcode (after the list's own memo put).
    pub(crate) start: usize,
    /// The offset of the first opcode after the run.
    pub(crate) end: usize,
    /// How many items the run appends.
    pub(crate) count: u64,
    /// The data list's node (left empty in the graph).
    pub(crate) list: Id,
    /// The node the items' memo keys point to (nothing may refer to it).
    pub(crate) taken: Id,
    /// The memo key of the run's first put.
    pub(crate) first_key: u64,
}

/// What one walk found: the items and the memo keys they took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Walked {
    pub(crate) count: u64,
    pub(crate) puts: u64,
}

/// A memo put's key if `op` is one (`None` for other opcodes).
fn put_key(cur: &mut Cursor<'_>, op: u8, next: u64) -> Option<Option<u64>> {
    Some(match op {
        b'q' => Some(cur.u8("a BINPUT index").ok()?.into()),
        b'r' => Some(cur.u32("a LONG_BINPUT index").ok()?.into()),
        0x94 => Some(next),
        _ => None,
    })
}

/// The item whose opcode `op` was just taken, `None` if `op` is not a data item (or is
/// malformed: a length past the end, a `str` that is not UTF-8).
fn item<'a>(cur: &mut Cursor<'a>, op: u8) -> Option<Item<'a>> {
    let utf8 = |b: &'a [u8]| std::str::from_utf8(b).ok().map(Item::Str);
    match op {
        b'N' => Some(Item::None),
        0x8c => utf8(cur.counted(1, "a SHORT_BINUNICODE").ok()?),
        b'X' => utf8(cur.counted(4, "a BINUNICODE").ok()?),
        0x8d => utf8(cur.counted(8, "a BINUNICODE8").ok()?),
        b'C' => Some(Item::Bytes(cur.counted(1, "a bytes value").ok()?)),
        b'B' => Some(Item::Bytes(cur.counted(4, "a bytes value").ok()?)),
        0x8e | 0x96 => Some(Item::Bytes(cur.counted(8, "a bytes value").ok()?)),
        _ => None,
    }
}

/// Walks the items of a data list from the cursor, calling `each` with every item in order,
/// up to the first opcode that is not part of the run (the cursor is left before it). The
/// memo keys the items take must be `first_key`, `first_key + 1`, ...
///
/// `Ok(None)` when the run is not of the streaming shape (the cursor is then anywhere: the
/// caller goes back); an error only from `each`.
pub(crate) fn walk<'a>(
    cur: &mut Cursor<'a>,
    first_key: u64,
    mut each: impl FnMut(Item<'a>) -> Result<()>,
) -> Result<Option<Walked>> {
    let mut next_key = first_key;
    let mut count = 0u64;
    // Inside `MARK ... APPENDS`.
    let mut in_batch = false;
    // An item outside a batch, waiting for its `APPEND`.
    let mut pending = false;
    // The stack's top is an item (a memo put may follow).
    let mut top_is_item = false;
    loop {
        let Some(op) = cur.peek() else {
            return Ok(None);
        };
        let before = cur.pos();
        let _ = cur.u8("an opcode");
        match op {
            0x95 => {
                if cur.u64("a frame length").is_err() {
                    return Ok(None);
                }
            }
            b'(' if !in_batch && !pending => {
                in_batch = true;
                top_is_item = false;
            }
            b'e' if in_batch => {
                in_batch = false;
                top_is_item = false;
            }
            b'a' if pending => {
                pending = false;
                top_is_item = false;
            }
            b'q' | b'r' | 0x94 if top_is_item => match put_key(cur, op, next_key) {
                Some(Some(k)) if k == next_key => next_key += 1,
                _ => return Ok(None),
            },
            _ if in_batch || !pending => match item(cur, op) {
                Some(it) => {
                    each(it)?;
                    count += 1;
                    top_is_item = true;
                    pending = !in_batch;
                }
                // Not an item: the end of the run if nothing is open, else not our shape.
                None if !in_batch && is_item_op(op) => return Ok(None),
                None if !in_batch => {
                    cur.seek(before);
                    return Ok(Some(Walked {
                        count,
                        puts: next_key - first_key,
                    }));
                }
                None => return Ok(None),
            },
            _ => return Ok(None),
        }
    }
}

/// Whether `op` is an item opcode (so failing to take it is a malformed item, not the run's
/// end).
fn is_item_op(op: u8) -> bool {
    matches!(op, b'N' | 0x8c | b'X' | 0x8d | b'C' | b'B' | 0x8e | 0x96)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(bytes: &[u8], first_key: u64) -> Option<(Vec<Item<'_>>, Walked, usize)> {
        let mut cur = Cursor::new(bytes);
        let mut v = Vec::new();
        let w = walk(&mut cur, first_key, |it| {
            v.push(it);
            Ok(())
        })
        .unwrap()?;
        Some((v, w, cur.pos()))
    }

    #[test]
    fn batches_single_appends_frames_and_puts() {
        // (  'a' put5  None  b'x' put6  e  FRAME  'b' MEMOIZE(7)  a  t
        let b = b"(\x8c\x01aq\x05NC\x01xq\x06e\x95\x01\x00\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00b\x94at";
        let (v, w, end) = items(b, 5).unwrap();
        assert_eq!(
            v,
            [
                Item::Str("a"),
                Item::None,
                Item::Bytes(b"x"),
                Item::Str("b")
            ]
        );
        assert_eq!(w, Walked { count: 4, puts: 3 });
        assert_eq!(b[end], b't');
    }

    #[test]
    fn other_shapes_are_refused() {
        // A memo get, a key out of order, a nested list, a Python 2 string, an item without
        // its APPEND, a length past the end, a str that is not UTF-8, no end.
        for b in [
            &b"(h\x00et"[..],
            b"(\x8c\x01aq\x09et",
            b"(]et",
            b"(U\x01aet",
            b"\x8c\x01at",
            b"(\x8c\x09aet",
            b"(\x8c\x01\xffet",
            b"(\x8c\x01a",
        ] {
            assert!(items(b, 0).is_none(), "{b:?}");
        }
    }
}
