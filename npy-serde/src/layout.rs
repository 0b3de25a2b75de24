//! Element layouts as compile-time constants: the plan of the exact decoding tier
//! (`crate::read::exact`).
//!
//! A [`Layout`] is a flat tape of [`Step`]s describing one element: a record or subarray is a
//! *sequence* step followed by its items' steps, a scalar is a *leaf* step with its byte offset
//! in the element. The same `const fn`s build it for a Rust type at compile time
//! ([`NpyRecord::LAYOUT`](crate::NpyRecord::LAYOUT), composed by `#[derive(NpyRecord)]`) and for
//! a file's dtype at run time ([`Layout::of`]); when the two are equal, a deserializer
//! specialized on the type's constant layout reads the file, and every check it makes on a
//! step folds away at compile time.
//!
//! Layouts only describe what the exact tier decodes: booleans, integers and `f32`/`f64` in
//! either byte order, `datetime64`/`timedelta64` of one unit (an `i64` tagged with its unit), records and subarrays of them, at offsets below 4 GiB, in at most
//! [`MAX_STEPS`] steps. Anything else is [`Layout::OPAQUE`], and such elements go through the
//! other tiers.

use crate::dtype::{ByteOrder, DType, Scalar, TimeUnit};
use crate::kind::Kind;

/// The tag of a `datetime64` (`delta == false`) or `timedelta64` leaf of `unit` (never 0).
pub(crate) const fn time_tag(delta: bool, unit: TimeUnit) -> u8 {
    (unit as u8) | if delta { 0x40 } else { 0x80 }
}

/// The most steps a layout holds (a record of 63 scalars, a `[f64; 63]`, ...); larger elements
/// are opaque and take the other tiers. Bounds the size of every `LAYOUT` constant.
pub const MAX_STEPS: usize = 64;

/// What a step decodes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    /// A record: `arg` fields follow.
    Record,
    /// A subarray axis: `arg` items follow.
    Array,
    /// A scalar of one of the table's kinds, at byte offset `arg`.
    Leaf(Kind),
}

impl Op {
    /// Byte size of a leaf (0 for sequences).
    pub const fn size(self) -> u32 {
        match self {
            Op::Record | Op::Array => 0,
            Op::Leaf(k) => k.size(),
        }
    }
}

/// One step of a [`Layout`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Step {
    pub(crate) op: Op,
    /// For a multi-byte leaf: its bytes are in the opposite of native order.
    pub(crate) swap: bool,
    /// For an `I64` leaf that is a `datetime64`/`timedelta64` with a unit: [`time_tag`] of it
    /// (so that layouts of different units, or of times and plain integers, differ); 0 else.
    pub(crate) tag: u8,
    /// Index of the step just after this value's steps (its next sibling).
    pub(crate) end: u16,
    /// A leaf's byte offset in the element; a sequence's item count.
    pub(crate) arg: u32,
}

const BLANK: Step = Step {
    op: Op::Record,
    swap: false,
    tag: 0,
    end: 0,
    arg: 0,
};

/// The layout of one element: a flat tape of steps (see `layout.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub(crate) steps: [Step; MAX_STEPS],
    /// Steps in use; 0 for an opaque layout.
    pub(crate) len: u16,
    /// The element's itemsize.
    pub(crate) size: u32,
    /// Its alignment in an `align=True` record (as [`DType::alignment`]).
    align: u32,
}

impl PartialEq for Layout {
    /// Same steps and itemsize (alignment is not part of a file, as for [`Record`](crate::Record)).
    fn eq(&self, other: &Layout) -> bool {
        self.len == other.len
            && self.size == other.size
            && self.steps[..self.len as usize] == other.steps[..other.len as usize]
    }
}

impl Layout {
    /// Not decoded by the exact tier.
    pub const OPAQUE: Layout = Layout {
        steps: [BLANK; MAX_STEPS],
        len: 0,
        size: 0,
        align: 1,
    };

    /// True unless [`OPAQUE`](Layout::OPAQUE).
    #[inline]
    pub const fn is_exact(&self) -> bool {
        self.len > 0
    }

    /// A scalar of `kind` in native byte order.
    pub const fn leaf(kind: Kind) -> Layout {
        let size = kind.size();
        let mut out = Layout::OPAQUE;
        out.steps[0] = Step {
            op: Op::Leaf(kind),
            swap: false,
            tag: 0,
            end: 1,
            arg: 0,
        };
        out.len = 1;
        out.size = size;
        out.align = size;
        out
    }

    /// A `datetime64` (`delta == false`) or `timedelta64` of one `unit` (not generic) in
    /// native byte order: an `I64` leaf tagged with its unit. The tiers decode it as an `i64`;
    /// the tag only keeps it from matching an `i8` or another unit.
    pub const fn time(delta: bool, unit: TimeUnit) -> Layout {
        let mut out = Layout::leaf(Kind::I64);
        out.steps[0].tag = time_tag(delta, unit);
        out
    }

    /// True if the leaf at step `at` is a `datetime64`/`timedelta64` (its NaT may be `None`).
    #[inline(always)]
    pub(crate) const fn is_time(&self, at: usize) -> bool {
        at < self.len as usize && self.steps[at].tag != 0
    }

    /// A subarray of `n` items of `item` (`[T; N]`; nest for more axes).
    pub const fn array(item: &Layout, n: usize) -> Layout {
        let per = item.len as usize;
        if per == 0 || n > u32::MAX as usize {
            return Layout::OPAQUE;
        }
        let (Some(steps), Some(size)) = (per.checked_mul(n), (item.size as usize).checked_mul(n))
        else {
            return Layout::OPAQUE;
        };
        if steps >= MAX_STEPS || size > u32::MAX as usize {
            return Layout::OPAQUE;
        }
        let mut out = Layout::OPAQUE;
        out.steps[0] = Step {
            op: Op::Array,
            swap: false,
            tag: 0,
            end: (steps + 1) as u16,
            arg: n as u32,
        };
        out.len = 1;
        let mut i = 0;
        while i < n {
            out = out.push(item, i * item.size as usize);
            i += 1;
        }
        out.size = size as u32;
        out.align = item.align;
        out
    }

    /// A record of `fields` laid out as `#[derive(NpyRecord)]` and NumPy do: packed, or
    /// C-aligned (`align=True`: each field at a multiple of its alignment, the itemsize rounded
    /// up to the largest).
    pub const fn record(fields: &[&Layout], aligned: bool) -> Layout {
        let mut offsets = [0usize; MAX_STEPS];
        if fields.len() >= MAX_STEPS {
            return Layout::OPAQUE;
        }
        let mut offset = 0usize;
        let mut max_align = 1usize;
        let mut i = 0;
        while i < fields.len() {
            let f = fields[i];
            if aligned {
                let a = f.align as usize;
                if a > max_align {
                    max_align = a;
                }
                offset = offset.div_ceil(a) * a;
            }
            offsets[i] = offset;
            offset += f.size as usize;
            i += 1;
        }
        let size = if aligned {
            offset.div_ceil(max_align) * max_align
        } else {
            offset
        };
        let mut out = Layout::placed(fields, &offsets, size);
        out.align = if aligned { max_align as u32 } else { 1 };
        out
    }

    /// A record of `fields` at `offsets` (parallel to `fields`) in an itemsize of `size`.
    const fn placed(fields: &[&Layout], offsets: &[usize], size: usize) -> Layout {
        if fields.len() > offsets.len() || size > u32::MAX as usize {
            return Layout::OPAQUE;
        }
        let mut out = Layout::OPAQUE;
        out.steps[0] = Step {
            op: Op::Record,
            swap: false,
            tag: 0,
            end: 0,
            arg: fields.len() as u32,
        };
        out.len = 1;
        let mut i = 0;
        while i < fields.len() {
            let f = fields[i];
            if f.len == 0 || out.len as usize + f.len as usize > MAX_STEPS {
                return Layout::OPAQUE;
            }
            match offsets[i].checked_add(f.size as usize) {
                Some(end) if end <= size => {}
                _ => return Layout::OPAQUE,
            }
            out = out.push(f, offsets[i]);
            i += 1;
        }
        out.steps[0].end = out.len;
        out.size = size as u32;
        out.align = 1;
        out
    }

    /// Appends `item`'s steps with its leaves moved by `offset` bytes (room checked by the
    /// caller; `offset + item.size` fits in `u32`).
    const fn push(mut self, item: &Layout, offset: usize) -> Layout {
        let base = self.len;
        let mut j = 0;
        while j < item.len as usize {
            let mut s = item.steps[j];
            s.end += base;
            if !matches!(s.op, Op::Record | Op::Array) {
                s.arg += offset as u32;
            }
            self.steps[base as usize + j] = s;
            j += 1;
        }
        self.len += item.len;
        self
    }

    /// This layout with every multi-byte leaf in byte order `order` (a container's
    /// `#[npy(byte_order = ...)]`); `None` leaves it as it is.
    pub const fn with_order(self, order: Option<ByteOrder>) -> Layout {
        match order {
            None | Some(ByteOrder::NotApplicable) => self,
            Some(o) => {
                let swap = !matches!(
                    (o, ByteOrder::NATIVE),
                    (ByteOrder::Little, ByteOrder::Little) | (ByteOrder::Big, ByteOrder::Big)
                );
                self.map_swap(swap, false)
            }
        }
    }

    /// This layout with the byte order of every multi-byte leaf reversed.
    pub(crate) const fn flipped(self) -> Layout {
        self.map_swap(true, true)
    }

    /// Sets (`xor == false`) or toggles (`xor == true`) `swap` on every multi-byte leaf.
    const fn map_swap(mut self, swap: bool, xor: bool) -> Layout {
        let mut j = 0;
        while j < self.len as usize {
            let s = &mut self.steps[j];
            if s.op.size() > 1 {
                s.swap = if xor { s.swap ^ swap } else { swap };
            }
            j += 1;
        }
        self
    }

    /// The layout of a file's element dtype ([`OPAQUE`](Layout::OPAQUE) if the exact tier
    /// cannot decode it).
    pub(crate) fn of(dtype: &DType) -> Layout {
        match dtype {
            DType::Plain(p) => match (Kind::of(p.scalar()), p.scalar()) {
                (Some(k), _) => Layout::leaf(k).map_swap(p.order().needs_swap(), false),
                (None, Scalar::DateTime(unit, 1)) if unit != TimeUnit::Generic => {
                    Layout::time(false, unit).map_swap(p.order().needs_swap(), false)
                }
                (None, Scalar::TimeDelta(unit, 1)) if unit != TimeUnit::Generic => {
                    Layout::time(true, unit).map_swap(p.order().needs_swap(), false)
                }
                _ => Layout::OPAQUE,
            },
            DType::Array(base, shape) => {
                let mut out = Layout::of(base);
                for &n in shape.iter().rev() {
                    out = match usize::try_from(n) {
                        Ok(n) => Layout::array(&out, n),
                        Err(_) => Layout::OPAQUE,
                    };
                }
                out
            }
            DType::Record(r) => {
                let fields = r.fields();
                if fields.len() >= MAX_STEPS {
                    return Layout::OPAQUE;
                }
                let layouts: Vec<Layout> = fields.iter().map(|f| Layout::of(&f.dtype)).collect();
                let refs: Vec<&Layout> = layouts.iter().collect();
                let offsets: Vec<usize> = fields.iter().map(|f| f.offset).collect();
                Layout::placed(&refs, &offsets, r.itemsize())
            }
        }
    }

    /// True if some bytes of the element belong to no leaf (padding, which NumPy fills with
    /// zeros).
    pub(crate) const fn has_gaps(&self) -> bool {
        let mut covered = 0u64;
        let mut j = 0;
        while j < self.len as usize {
            covered += self.steps[j].op.size() as u64;
            j += 1;
        }
        covered != self.size as u64
    }

    /// True if some leaf is in the opposite of native byte order.
    pub(crate) const fn has_swaps(&self) -> bool {
        let mut j = 0;
        while j < self.len as usize {
            if self.steps[j].swap {
                return true;
            }
            j += 1;
        }
        false
    }

    /// For a record: its number of fields.
    pub const fn field_count(&self) -> Option<usize> {
        if self.len > 0 && matches!(self.steps[0].op, Op::Record) {
            Some(self.steps[0].arg as usize)
        } else {
            None
        }
    }

    /// For a record: the byte offset of field `i` (that of its first leaf: records and
    /// subarrays start with their first item); `None` if this is not a record, it has no field
    /// `i`, or the field has no leaf.
    pub const fn field_offset(&self, i: usize) -> Option<usize> {
        if self.len == 0 || !matches!(self.steps[0].op, Op::Record) {
            return None;
        }
        if i >= self.steps[0].arg as usize {
            return None;
        }
        // Field `k + 1` starts where field `k`'s steps end.
        let mut j = 1usize;
        let mut k = 0;
        while k < i {
            j = self.steps[j].end as usize;
            k += 1;
        }
        let end = self.steps[j].end as usize;
        while j < end {
            if let Op::Leaf(_) = self.steps[j].op {
                return Some(self.steps[j].arg as usize);
            }
            j += 1;
        }
        None
    }

    /// The steps in use.
    #[inline]
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps[..self.len as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NpyRecord;

    fn of(descr: &str) -> Layout {
        Layout::of(&descr.parse().unwrap())
    }

    #[test]
    fn rust_types_match_their_dtypes() {
        fn check<T: NpyRecord>() {
            let from_dtype = Layout::of(&T::dtype());
            assert!(T::LAYOUT.is_exact(), "{}", T::dtype().descr());
            assert_eq!(T::LAYOUT, from_dtype, "{}", T::dtype().descr());
        }
        check::<bool>();
        check::<i8>();
        check::<u16>();
        check::<i32>();
        check::<u64>();
        check::<f32>();
        check::<f64>();
        check::<[f32; 3]>();
        check::<[[i16; 2]; 3]>();
        check::<[u8; 0]>();
    }

    #[test]
    fn w2_tape() {
        let l = of("[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,))]");
        let kinds: Vec<(Op, u32, u16)> = l.steps().iter().map(|s| (s.op, s.arg, s.end)).collect();
        assert_eq!(
            kinds,
            [
                (Op::Record, 5, 9),
                (Op::Leaf(Kind::I64), 0, 2),
                (Op::Leaf(Kind::F64), 8, 3),
                (Op::Leaf(Kind::F32), 16, 4),
                (Op::Leaf(Kind::U8), 20, 5),
                (Op::Array, 3, 9),
                (Op::Leaf(Kind::F32), 21, 7),
                (Op::Leaf(Kind::F32), 25, 8),
                (Op::Leaf(Kind::F32), 29, 9),
            ]
        );
        assert_eq!(l.size, 33);
        assert!(l.steps().iter().all(|s| !s.swap));
        let be = of("[('id','>i8'),('x','>f8'),('y','>f4'),('flag','u1'),('v','>f4',(3,))]");
        assert_ne!(be, l);
        assert_eq!(be, l.flipped());
        assert!(!be.steps()[4].swap, "single bytes never swap");
    }

    #[test]
    fn const_records_match_numpy_layouts() {
        const I64: Layout = Layout::leaf(Kind::I64);
        const U8: Layout = Layout::leaf(Kind::U8);
        const F32: Layout = Layout::leaf(Kind::F32);
        const V: Layout = Layout::array(&F32, 3);
        const PACKED: Layout = Layout::record(&[&I64, &U8, &V], false);
        const ALIGNED: Layout = Layout::record(&[&U8, &I64, &U8], true);
        const BIG: Layout = Layout::record(&[&I64, &U8], false).with_order(Some(ByteOrder::Big));
        assert_eq!(PACKED, of("[('a','<i8'),('b','u1'),('c','<f4',(3,))]"));
        // align=True: u1 at 0, i8 at 8, u1 at 16, itemsize 24.
        assert_eq!(
            ALIGNED,
            of("[('a','u1'),('','|V7'),('b','<i8'),('c','u1'),('','|V7')]")
        );
        assert_eq!(BIG, of("[('a','>i8'),('b','u1')]"));
        const NESTED: Layout = Layout::record(&[&U8, &ALIGNED], true);
        let nested = of("[('p','u1'),('','|V7'),\
             ('q',[('a','u1'),('','|V7'),('b','<i8'),('c','u1'),('','|V7')])]");
        assert_eq!(NESTED, nested);
    }

    #[test]
    fn what_stays_opaque() {
        for descr in [
            "<f2",
            "<c8",
            "|S4",
            "<U2",
            "|V8",
            "<M8",
            "<M8[10s]",
            "<f16",
            "[('a','<i4'),('s','|S3')]",
            "('<f8', (64,))",
        ] {
            assert!(!of(descr).is_exact(), "{descr}");
        }
        assert!(of("('<f8', (63,))").is_exact());
        // A datetime of one unit is an i64 leaf that matches only its own kind and unit.
        assert_eq!(of("<M8[s]"), Layout::time(false, TimeUnit::Second));
        assert_eq!(
            of(">m8[ns]"),
            Layout::time(true, TimeUnit::Nanosecond).flipped()
        );
        assert_ne!(of("<M8[s]"), of("<M8[ms]"));
        assert_ne!(of("<M8[s]"), of("<m8[s]"));
        assert_ne!(of("<M8[s]"), of("<i8"));
        // Padding is part of the offsets and the itemsize.
        let padded = of("[('','|V4'),('a','<i4'),('','|V4')]");
        assert_eq!(padded.size, 12);
        assert_eq!(padded.steps()[1].arg, 4);
        assert_ne!(padded, of("[('a','<i4')]"));
    }
}
