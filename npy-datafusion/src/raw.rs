//! Pushed conjuncts over `U<n>` columns evaluated on the columns' own bytes: NumPy's
//! fixed-width UTF-32 (`n` code units a value, NUL padded), before any value is made a Arrow
//! string.
//!
//! The scan of a column table reads a filter's columns for every row of a batch and the other
//! projected columns only for the rows that pass (see `scan`). A string column made `Utf8`
//! for the filter alone was the dearest part of it: TPC-H Q19 compares `l_shipmode` and
//! `l_shipinstruct` (`U10`, `U25`: 140 bytes a row) and returns neither, Q13 keeps the orders
//! whose `o_comment NOT LIKE '%special%requests%'` (`U79`), Q12 returns `l_shipmode` for the
//! 0.5% of the rows that pass. A [`Raw`] predicate compares the literals encoded once as the
//! column's UTF-32 with each row's bytes: `=`, `<>`, `IN`, `NOT IN`, `LIKE` and `NOT LIKE`
//! (without an escape character, case-sensitive) between a column and non-null string
//! literals, and `AND`, `OR` and `NOT` of those. A `U<n>` column holds no NULL, so the
//! predicate is two-valued, as the same predicate over the Arrow strings.
//!
//! The values stay what the Arrow strings are: a `U<n>` value's characters without its
//! trailing NULs. Equal strings are equal code points, so `=` is the equality of the padded
//! bytes (a literal longer than `n` characters, or ending in NUL, equals no value); `LIKE`'s
//! `_` is one code point, one code unit here. Only the code points of the rows that pass are
//! checked (when they are made strings): a value that is not Unicode in a row the filter drops
//! is not seen, as for the other columns of such rows (`filter` module docs).
//!
//! Comparisons of integer and `datetime64[D]` columns with literals or with each other are
//! evaluated on their bytes too (module `ints`).

use std::sync::Arc;

use arrow_buffer::{BooleanBuffer, BooleanBufferBuilder};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, Column, InListExpr, LikeExpr, Literal, NotExpr,
};
use datafusion::physical_plan::PhysicalExpr;
use memchr::arch::all::packedpair::HeuristicFrequencyRank;
use memchr::memmem::{Finder, FinderBuilder};

mod ints;
mod values;
pub(crate) use ints::{Int, IntCmp};
pub(crate) use values::Values;

/// A `U<n>` column's width: `n` code units of 4 bytes, big-endian or little-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Utf32 {
    pub(crate) chars: usize,
    pub(crate) big: bool,
}

impl Utf32 {
    fn unit(self, c: char) -> [u8; 4] {
        let u = c as u32;
        if self.big {
            u.to_be_bytes()
        } else {
            u.to_le_bytes()
        }
    }

    /// `s` encoded and padded to the width (`None`: longer than the width, or ending in NUL,
    /// which no value does).
    fn padded(self, s: &str) -> Option<Vec<u8>> {
        if s.ends_with('\0') || s.chars().count() > self.chars {
            return None;
        }
        let mut out = Vec::with_capacity(self.chars * 4);
        for c in s.chars() {
            out.extend_from_slice(&self.unit(c));
        }
        out.resize(self.chars * 4, 0);
        Some(out)
    }
}

/// A predicate over the raw bytes of `U<n>` columns; see the [module docs](self).
#[derive(Debug)]
pub(crate) enum Raw {
    /// The value of `column` is one of `values` (each encoded and padded), or with
    /// `negated`, none of them.
    In {
        column: usize,
        width: Utf32,
        values: Vec<Vec<u8>>,
        negated: bool,
    },
    /// The value of `column` matches the `LIKE` pattern, or with `negated`, does not.
    Like {
        column: usize,
        like: Box<Like>,
        negated: bool,
    },
    /// An integer or day column compared with a literal or another such column (`ints`).
    Int(IntCmp),
    And(Box<Raw>, Box<Raw>),
    Or(Box<Raw>, Box<Raw>),
    Not(Box<Raw>),
}

/// A non-null string literal.
fn string(e: &Arc<dyn PhysicalExpr>) -> Option<&str> {
    match e.downcast_ref::<Literal>()?.value() {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

impl Raw {
    /// `e` as a raw predicate, when it is one of the forms in the [module docs](self) and
    /// every column it reads is a `U<n>` one: `utf32(i)` says where the column `i` of `e`
    /// is read (its position in the scan's columns) and its width (`None`: not a `U<n>`
    /// column).
    #[cfg(test)]
    pub(crate) fn compile(
        e: &Arc<dyn PhysicalExpr>,
        utf32: &dyn Fn(usize) -> Option<(usize, Utf32)>,
    ) -> Option<Raw> {
        Raw::compile_with(e, utf32, &|_| None)
    }

    /// [`compile`](Self::compile), and comparisons of integer and day columns too
    /// (`ints`): `int(i)` says where the column `i` of `e` is read and what it holds
    /// (`None`: not such a column).
    pub(crate) fn compile_with(
        e: &Arc<dyn PhysicalExpr>,
        utf32: &dyn Fn(usize) -> Option<(usize, Utf32)>,
        int: &dyn Fn(usize) -> Option<(usize, Int)>,
    ) -> Option<Raw> {
        let column = |c: &Arc<dyn PhysicalExpr>| utf32(c.downcast_ref::<Column>()?.index());
        let sub = |e: &Arc<dyn PhysicalExpr>| Raw::compile_with(e, utf32, int).map(Box::new);
        if let Some(b) = e.downcast_ref::<BinaryExpr>() {
            let (l, r) = (b.left(), b.right());
            return match b.op() {
                Operator::And => Some(Raw::And(sub(l)?, sub(r)?)),
                Operator::Or => Some(Raw::Or(sub(l)?, sub(r)?)),
                op @ (Operator::Eq | Operator::NotEq)
                    if column(l).is_some() || column(r).is_some() =>
                {
                    let ((at, width), s) = match (column(l), string(r)) {
                        (Some(c), Some(s)) => (c, s),
                        _ => (column(r)?, string(l)?),
                    };
                    Some(Raw::In {
                        column: at,
                        width,
                        values: width.padded(s).into_iter().collect(),
                        negated: *op == Operator::NotEq,
                    })
                }
                op => IntCmp::compile(l, op, r, int).map(Raw::Int),
            };
        }
        if let Some(i) = e.downcast_ref::<InListExpr>() {
            let (at, width) = column(i.expr())?;
            let mut values = Vec::with_capacity(i.len());
            for v in i.list() {
                values.extend(width.padded(string(v)?));
            }
            return Some(Raw::In {
                column: at,
                width,
                values,
                negated: i.negated(),
            });
        }
        if let Some(l) = e.downcast_ref::<LikeExpr>() {
            if l.case_insensitive() {
                return None;
            }
            let (at, width) = column(l.expr())?;
            return Some(Raw::Like {
                column: at,
                like: Box::new(Like::new(string(l.pattern())?, width)?),
                negated: l.negated(),
            });
        }
        if let Some(n) = e.downcast_ref::<NotExpr>() {
            // A comparison that can be NULL is kept false, which `NOT` would make true.
            return sub(n.arg()).filter(|a| !a.nullable()).map(Raw::Not);
        }
        None
    }

    /// Whether a row's value can be NULL (kept false).
    fn nullable(&self) -> bool {
        match self {
            Raw::In { .. } | Raw::Like { .. } => false,
            Raw::Int(c) => c.nullable(),
            Raw::And(a, b) | Raw::Or(a, b) => a.nullable() || b.nullable(),
            Raw::Not(a) => a.nullable(),
        }
    }

    /// The columns it reads (positions in the scan's columns), each once.
    pub(crate) fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Raw::Int(c) => c.columns(out),
            Raw::In { column, .. } | Raw::Like { column, .. } => {
                if !out.contains(column) {
                    out.push(*column);
                }
            }
            Raw::And(a, b) | Raw::Or(a, b) => {
                a.columns(out);
                b.columns(out);
            }
            Raw::Not(a) => a.columns(out),
        }
    }

    /// The rows of a batch of `rows` rows it keeps; `data[c]` holds those rows' values of
    /// the column at position `c`. `None` when a value of a day column has no Date32 value
    /// (`ints`): decoding the column says which.
    pub(crate) fn evaluate(&self, rows: usize, data: &[Values<'_>]) -> Option<BooleanBuffer> {
        Some(match self {
            Raw::In {
                column,
                width,
                values,
                negated,
            } => {
                let w = width.chars * 4;
                let at = data[*column];
                let value = |i: usize| at.value(i, w);
                // The first 8 bytes (4 for `U1`) compared as one number first: most values
                // differ there, and a call of `memcmp` for each value cost more than the rest.
                let heads: Vec<u64> = values.iter().map(|v| head(v)).collect();
                let equal = |v: &[u8], k: usize| head(v) == heads[k] && v == values[k];
                match values.len() {
                    0 => BooleanBuffer::collect_bool(rows, |_| *negated),
                    1 => BooleanBuffer::collect_bool(rows, |i| equal(value(i), 0) != *negated),
                    n => BooleanBuffer::collect_bool(rows, |i| {
                        let v = value(i);
                        (0..n).any(|k| equal(v, k)) != *negated
                    }),
                }
            }
            Raw::Like {
                column,
                like,
                negated,
            } => {
                let at = data[*column];
                let w = like.width.chars * 4;
                if like.searches_batch() && at.stride == w && at.start == 0 {
                    let found = like.search_batch(rows, at.bytes);
                    return Some(if *negated { !&found } else { found });
                }
                BooleanBuffer::collect_bool(rows, |i| like.matches(at.value(i, w)) != *negated)
            }
            Raw::Int(c) => c.evaluate(rows, data)?,
            Raw::And(a, b) => &a.evaluate(rows, data)? & &b.evaluate(rows, data)?,
            Raw::Or(a, b) => &a.evaluate(rows, data)? | &b.evaluate(rows, data)?,
            Raw::Not(a) => !&a.evaluate(rows, data)?,
        })
    }
}

/// The first 8 bytes of a value (its first two code units), or its 4 of a `U1` one.
#[inline]
fn head(v: &[u8]) -> u64 {
    match v.first_chunk::<8>() {
        Some(h) => u64::from_ne_bytes(*h),
        None => v
            .first_chunk::<4>()
            .map_or(0, |h| u64::from(u32::from_ne_bytes(*h))),
    }
}

/// A piece of a `LIKE` pattern between its `%`s: code units (their 4 bytes as the column
/// has them, read as a native number), `None` for `_`; and without a `_`, a SIMD substring
/// searcher for its bytes.
#[derive(Debug)]
struct Piece {
    units: Vec<Option<u32>>,
    finder: Option<Finder<'static>>,
}

/// Byte frequencies for choosing the bytes of a piece that `memmem`'s prefilter looks for
/// first (the rarer, the fewer false candidates): in a `U<n>` column most bytes are NUL (three
/// of each ASCII character's four, and the padding), which the default ranking, made for
/// UTF-8 text, takes for a rare byte.
struct Utf32Rank;

impl HeuristicFrequencyRank for Utf32Rank {
    fn rank(&self, byte: u8) -> u8 {
        // English letters by frequency, then the rest of printable ASCII; NUL the most common.
        const LETTERS: &[u8] = b" etaoinsrhldcumfpgwybvkxjqz";
        match byte {
            0 => 255,
            b if b.is_ascii_lowercase() || b == b' ' => {
                let at = LETTERS
                    .iter()
                    .position(|&l| l == b)
                    .unwrap_or(LETTERS.len());
                250 - 4 * at as u8
            }
            b if b.is_ascii_uppercase() || b.is_ascii_digit() => 120,
            b if b.is_ascii_punctuation() => 100,
            _ => 60,
        }
    }
}

/// The `k`-th code unit of `v` (its bytes as a native number: compared, not decoded).
#[inline]
fn unit(v: &[u8], k: usize) -> u32 {
    u32::from_ne_bytes([v[k * 4], v[k * 4 + 1], v[k * 4 + 2], v[k * 4 + 3]])
}

impl Piece {
    fn len(&self) -> usize {
        self.units.len()
    }

    /// Whether the piece matches the code units of `v` (at least its length) from the first.
    fn at(&self, v: &[u8]) -> bool {
        v.len() >= self.len() * 4
            && self
                .units
                .iter()
                .enumerate()
                .all(|(k, u)| u.is_none_or(|u| u == unit(v, k)))
    }

    /// The piece of the pattern text `s` over a column of `width`.
    fn new(s: &str, width: Utf32) -> Piece {
        let units: Vec<Option<u32>> = s
            .chars()
            .map(|c| (c != '_').then(|| u32::from_ne_bytes(width.unit(c))))
            .collect();
        let finder = (!units.is_empty() && units.iter().all(Option::is_some)).then(|| {
            let bytes: Vec<u8> = units
                .iter()
                .flatten()
                .flat_map(|u| u.to_ne_bytes())
                .collect();
            FinderBuilder::new()
                .build_forward_with_ranker(Utf32Rank, &bytes)
                .into_owned()
        });
        Piece { units, finder }
    }

    /// The first code unit of `v` from which the piece matches, if any.
    fn find(&self, v: &[u8]) -> Option<usize> {
        if let Some(finder) = &self.finder {
            return aligned(finder, v, 0).map(|at| at / 4);
        }
        let n = v.len() / 4;
        let last = n.checked_sub(self.len())?;
        match self.units.first().copied().flatten() {
            // The first unit is a literal one: scan for it.
            Some(first) => (0..=last).find(|&k| unit(v, k) == first && self.at(&v[k * 4..])),
            None => (0..=last).find(|&k| self.at(&v[k * 4..])),
        }
    }
}

/// The first place at or after `from` where `finder` matches in `v` at a whole code unit (a
/// multiple of 4 bytes: a match that starts inside a code unit is not a match of the units).
#[inline]
fn aligned(finder: &Finder<'_>, v: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let at = from + finder.find(v.get(from..)?)?;
        if at.is_multiple_of(4) {
            return Some(at);
        }
        from = at + 1;
    }
}

/// A `LIKE` pattern over `U<n>` values: `%` any characters, `_` one (no escape character).
#[derive(Debug)]
pub(crate) struct Like {
    width: Utf32,
    /// The piece before the first `%` (the whole pattern if there is none).
    head: Piece,
    /// The pieces between `%`s (not empty ones), and the piece after the last `%`.
    middle: Vec<Piece>,
    tail: Option<Piece>,
    /// The pattern ends with `%` and has no `_`: then its pieces (which hold no NUL) match
    /// a value's padded bytes where they match the value, and the padding need not be found.
    padding_free: bool,
}

impl Like {
    /// The pattern `p` over values of `width` (`None` with a `\`, which Arrow takes as an
    /// escape, or a NUL, which the padding would match).
    fn new(p: &str, width: Utf32) -> Option<Like> {
        if p.contains(['\\', '\0']) {
            return None;
        }
        let piece = |s: &str| Piece::new(s, width);
        let mut parts: Vec<&str> = p.split('%').collect();
        let head = piece(parts.remove(0));
        let tail = parts.pop().map(piece);
        let middle = parts
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(piece)
            .collect();
        let padding_free = p.ends_with('%') && !p.contains('_');
        Some(Like {
            width,
            head,
            middle,
            tail,
            padding_free,
        })
    }

    /// Whether [`search_batch`](Self::search_batch) answers for the pattern: `%` first and
    /// last, no `_`, a piece between.
    fn searches_batch(&self) -> bool {
        self.padding_free && self.head.len() == 0 && !self.middle.is_empty()
    }

    /// The rows of a batch (`rows` values, their padded bytes `bytes`) that match a pattern
    /// [`searches_batch`](Self::searches_batch) takes: the first piece searched for through
    /// the whole batch at once (most rows hold none of it and cost no call of their own), the
    /// other pieces after it in the row it was found in. The first place of the first piece in
    /// a row leaves the most room for the others, so a row whose first find fails fails.
    fn search_batch(&self, rows: usize, bytes: &[u8]) -> BooleanBuffer {
        let w = self.width.chars * 4;
        let mut found = BooleanBufferBuilder::new(rows);
        found.append_n(rows, false);
        let (first, rest) = self.middle.split_first().expect("a piece");
        let finder = first.finder.as_ref().expect("no `_`");
        let bytes = &bytes[..rows * w];
        let mut from = 0;
        while let Some(at) = aligned(finder, bytes, from) {
            let row = at / w;
            let (end, row_end) = (at + first.len() * 4, (row + 1) * w);
            if end > row_end {
                // Across two values: not a match in either; the next unit on.
                from = at + 4;
                continue;
            }
            if self.rest_after(rest, &bytes[end..row_end]) {
                found.set_bit(row, true);
            }
            from = row_end;
        }
        found.finish()
    }

    /// Whether the pieces `rest` match one after the other in `v`, each at its first place
    /// after the previous one.
    fn rest_after(&self, rest: &[Piece], v: &[u8]) -> bool {
        let mut from = 0;
        for piece in rest {
            match piece.find(&v[from * 4..]) {
                Some(k) => from += k + piece.len(),
                None => return false,
            }
        }
        true
    }

    /// Whether the value whose padded bytes are `v` matches.
    fn matches(&self, v: &[u8]) -> bool {
        // The value's code units: up to its last one that is not NUL (all of them, padding
        // included, where the padding cannot change the answer).
        let mut n = v.len() / 4;
        while !self.padding_free && n > 0 && unit(v, n - 1) == 0 {
            n -= 1;
        }
        let h = self.head.len();
        let Some(tail) = &self.tail else {
            // No `%`: the whole value.
            return n == h && self.head.at(v);
        };
        if h + tail.len() > n || !self.head.at(v) || !tail.at(&v[(n - tail.len()) * 4..]) {
            return false;
        }
        // Each middle piece at its first place after the previous one, before the tail: the
        // first place leaves the most room for the rest.
        let (mut from, to) = (h, n - tail.len());
        for piece in &self.middle {
            match piece.find(&v[from * 4..to * 4]) {
                Some(k) => from += k + piece.len(),
                None => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, BooleanArray, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{binary, col, in_list, like, lit, not};

    /// `values` as a `U<chars>` column's bytes, in either order.
    fn column(values: &[&str], width: Utf32) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| width.padded(v).expect("fits"))
            .collect()
    }

    /// Whether `e` (over the column `s`) keeps the same rows evaluated raw as DataFusion
    /// keeps over the Arrow strings, for both byte orders; `false` when it does not compile.
    fn agrees(e: Arc<dyn PhysicalExpr>, values: &[&str]) -> bool {
        let schema = Schema::new(vec![Field::new("s", DataType::Utf8, false)]);
        let batch = RecordBatch::try_new(
            Arc::new(schema),
            vec![Arc::new(StringArray::from(values.to_vec()))],
        )
        .unwrap();
        let want = e
            .evaluate(&batch)
            .unwrap()
            .into_array(values.len())
            .unwrap();
        let want = want.as_any().downcast_ref::<BooleanArray>().unwrap();
        // As wide as the longest value: one fills it.
        let chars = values.iter().map(|v| v.chars().count()).max().unwrap_or(0);
        for big in [false, true] {
            let width = Utf32 { chars, big };
            let Some(raw) = Raw::compile(&e, &|i| (i == 0).then_some((0, width))) else {
                return false;
            };
            let bytes = column(values, width);
            let w = chars * 4;
            let got = raw
                .evaluate(values.len(), &[Values::packed(&bytes, w)])
                .unwrap();
            assert_eq!(&got, want.values(), "{e} over {values:?}, big-endian {big}");
            // The same values as a field of records, 3 bytes in and 5 after.
            let records: Vec<u8> = bytes
                .chunks(w.max(1))
                .take(values.len())
                .flat_map(|v| [&[7u8; 3][..], v, &[9u8; 5][..]].concat())
                .collect();
            let strided = Values {
                bytes: &records,
                stride: w + 8,
                start: 3,
            };
            let got = raw.evaluate(values.len(), &[strided]).unwrap();
            assert_eq!(
                &got,
                want.values(),
                "{e} over records of {values:?}, big {big}"
            );
        }
        true
    }

    const VALUES: [&str; 10] = [
        "MAIL",
        "SHIP",
        "",
        "MAI",
        "MAILS",
        "AIR REG",
        "AIR",
        "sp\0ecial",
        "ésp😀x_%y",
        "12345678901",
    ];

    #[test]
    fn comparisons_and_lists_agree_with_datafusion() {
        let schema = Schema::new(vec![Field::new("s", DataType::Utf8, false)]);
        let s = col("s", &schema).unwrap();
        let cmp = |op, v: &str| binary(s.clone(), op, lit(v), &schema).unwrap();
        for v in [
            "MAIL",
            "",
            "AIR REG",
            "sp\0ecial",
            "ésp😀x_%y",
            "MAIL\0",
            "too long a value",
        ] {
            assert!(agrees(cmp(Operator::Eq, v), &VALUES), "{v}");
            assert!(agrees(cmp(Operator::NotEq, v), &VALUES), "{v}");
            // The literal on the left.
            let e = binary(lit(v), Operator::Eq, s.clone(), &schema).unwrap();
            assert!(agrees(e, &VALUES), "{v}");
        }
        for negated in [false, true] {
            let list = vec![
                lit("MAIL"),
                lit("SHIP"),
                lit("far too long a value"),
                lit(""),
            ];
            let e = in_list(s.clone(), list, &negated, &schema).unwrap();
            assert!(agrees(e, &VALUES));
        }
        let either = binary(
            cmp(Operator::Eq, "MAIL"),
            Operator::Or,
            cmp(Operator::Eq, "AIR"),
            &schema,
        )
        .unwrap();
        assert!(agrees(either.clone(), &VALUES));
        let both = binary(
            not(either).unwrap(),
            Operator::And,
            cmp(Operator::NotEq, ""),
            &schema,
        )
        .unwrap();
        assert!(agrees(both, &VALUES));
    }

    #[test]
    fn like_patterns_agree_with_datafusion() {
        let schema = Schema::new(vec![Field::new("s", DataType::Utf8, false)]);
        let s = col("s", &schema).unwrap();
        let values = [
            "special requests",
            "the special, quiet requests",
            "requests special",
            "specialrequests",
            "special",
            "",
            "aaa",
            "ab",
            "abab",
            "x",
            "ésp😀x_%y",
            "Special Requests",
        ];
        for p in [
            "%special%requests%",
            "%special%",
            "special%",
            "%requests",
            "special requests",
            "%",
            "%%",
            "",
            "_",
            "__",
            "a%a",
            "a%b%b",
            "ab%ab",
            "%a_a%",
            "_b%",
            "%😀_%",
            "é%y",
            "%s%s%",
        ] {
            for negated in [false, true] {
                let e = like(negated, false, s.clone(), lit(p), &schema).unwrap();
                assert!(agrees(e, &values), "{p}");
            }
        }
        // Not compiled: case-insensitive, an escape, a pattern that is not a literal.
        assert!(!agrees(
            like(false, true, s.clone(), lit("%special%"), &schema).unwrap(),
            &values
        ));
        assert!(!agrees(
            like(false, false, s.clone(), lit("50\\%"), &schema).unwrap(),
            &values
        ));
        assert!(!agrees(
            like(false, false, s.clone(), s.clone(), &schema).unwrap(),
            &values
        ));
    }

    #[test]
    fn a_batch_search_finds_no_piece_across_two_values() {
        let schema = Schema::new(vec![Field::new("s", DataType::Utf8, false)]);
        let s = col("s", &schema).unwrap();
        // Every value as wide as the column: a piece can run from one into the next, and
        // NUL-free units can sit at a place inside a unit (`aligned`).
        let values = [
            "xx special",
            "requests x",
            "a specials",
            "pecial req",
            "uests spec",
            "ial reques",
            "tsspecialr",
            "equestsabc",
            // "special" shifted by a byte inside the units (little-endian).
            "\u{7300}\u{7000}\u{6500}\u{6300}\u{6900}\u{6100}\u{6c00}\u{2000}yz",
            "specialreq",
        ];
        for p in ["%special%requests%", "%special%", "%requests%", "%ts%sp%"] {
            for negated in [false, true] {
                let e = like(negated, false, s.clone(), lit(p), &schema).unwrap();
                assert!(agrees(e, &values), "{p}");
            }
        }
    }

    #[test]
    fn only_string_literals_against_utf32_columns_compile() {
        let schema = Schema::new(vec![
            Field::new("s", DataType::Utf8, false),
            Field::new("t", DataType::Utf8, true),
        ]);
        let (s, t) = (col("s", &schema).unwrap(), col("t", &schema).unwrap());
        let width = Utf32 {
            chars: 4,
            big: false,
        };
        // Only column 0 is a `U<n>` one, read at position 3.
        let utf32 = |i: usize| (i == 0).then_some((3, width));
        let compiles = |e: Arc<dyn PhysicalExpr>| Raw::compile(&e, &utf32).is_some();
        assert!(compiles(
            binary(s.clone(), Operator::Eq, lit("a"), &schema).unwrap()
        ));
        assert!(!compiles(
            binary(t.clone(), Operator::Eq, lit("a"), &schema).unwrap()
        ));
        assert!(!compiles(
            binary(s.clone(), Operator::Eq, t.clone(), &schema).unwrap()
        ));
        assert!(!compiles(
            binary(s.clone(), Operator::Lt, lit("a"), &schema).unwrap()
        ));
        let null = lit(ScalarValue::Utf8(None));
        assert!(!compiles(
            binary(s.clone(), Operator::Eq, null.clone(), &schema).unwrap()
        ));
        assert!(!compiles(
            in_list(s.clone(), vec![lit("a"), null], &false, &schema).unwrap()
        ));
        // An OR with a side it cannot evaluate is not taken.
        let mixed = binary(
            binary(s.clone(), Operator::Eq, lit("a"), &schema).unwrap(),
            Operator::Or,
            binary(t.clone(), Operator::Eq, lit("b"), &schema).unwrap(),
            &schema,
        )
        .unwrap();
        assert!(!compiles(mixed));
        let mut at = Vec::new();
        let e = binary(s.clone(), Operator::NotEq, lit("ab"), &schema).unwrap();
        Raw::compile(&e, &utf32).unwrap().columns(&mut at);
        assert_eq!(at, [3]);
    }
}
