//! The exact tier of element encoding: a serializer specialized on a type's compile-time
//! layout, the writing twin of `crate::read::exact`.
//!
//! When the dtype being written has `T::LAYOUT` (in the same byte order, or the opposite one
//! throughout), each record is serialized by [`ExactSer`], whose every method finds its step
//! in `T::LAYOUT` at an index that is a constant once `T`'s derived `Serialize` inlines: the
//! kind check, the offset and the byte swap fold away and a record becomes the stores a
//! hand-written encoder would make. Field keys are checked against the dtype's names by the
//! address of serde's `&'static str` (by content the first time).
//!
//! Anything else (a value of another type, which the general path may convert; a key that is
//! not the dtype's next field; a skipped field; bytes for a subarray) is a miss: the writer
//! serializes that record again with the general serializer (`crate::write::general`), which writes every
//! byte of the slot or reports the error, and uses it for the rest of the records.

use std::cell::Cell;
use std::marker::PhantomData;

use serde::ser::{self, Impossible, Serialize};

use crate::datetime::time_of_name;
use crate::dtype::DType;
use crate::kind::{numbers, Kind};
use crate::layout::{time_tag, Op, MAX_STEPS};
use crate::miss::{miss, Miss, Result};
use crate::record::{flip_of, step_of};
use crate::NpyRecord;

/// The per-array state of the tier: the dtype's field name at each step that is a record
/// field, and the address of the serde key found equal to it.
pub(crate) struct WritePlan {
    names: Vec<Option<String>>,
    verified: [Cell<usize>; MAX_STEPS],
}

/// Encodes records into consecutive `itemsize`-byte slots of `out` (as many as both hold) up to
/// the first miss, and returns how many it encoded.
pub(crate) type WriteRunFn<T> = fn(&[T], &mut [u8], &WritePlan) -> usize;

/// The tier for writing one array of `T`.
pub(crate) struct WriteTier<T> {
    pub(crate) plan: WritePlan,
    pub(crate) run: WriteRunFn<T>,
    /// Whether the dtype is `T::LAYOUT` in the opposite byte order.
    pub(crate) flip: bool,
    /// For plain data without padding whose dtype is `T`'s own in native order: the records'
    /// bytes as they are in memory, written with one copy (see `crate::pod`).
    pub(crate) raw: Option<RawFn<T>>,
}

/// The bytes of a slice of records, if they can be written as they are.
pub(crate) type RawFn<T> = fn(&[T]) -> Option<&[u8]>;

/// The tier for writing `T`s as elements of `dtype`, if `dtype`'s layout is `T::LAYOUT` (or
/// `T::LAYOUT` in the opposite byte order throughout).
pub(crate) fn write_tier<T: Serialize + NpyRecord>(dtype: &DType) -> Option<WriteTier<T>> {
    let flip = flip_of::<T>(dtype)?;
    let run: WriteRunFn<T> = match flip {
        false => <T as WriteRun>::write_run::<false>,
        true => <T as WriteRun>::write_run::<true>,
    };
    let raw: Option<RawFn<T>> = match T::POD {
        Some(_) if !flip && !T::LAYOUT.has_gaps() && *dtype == T::dtype() => {
            Some(|v| crate::pod::bytes_of(T::POD?, v))
        }
        _ => None,
    };
    let mut names = Vec::with_capacity(T::LAYOUT.steps().len());
    field_names(dtype, None, &mut names);
    debug_assert_eq!(names.len(), T::LAYOUT.steps().len());
    Some(WriteTier {
        plan: WritePlan {
            names,
            verified: std::array::from_fn(|_| Cell::new(0)),
        },
        run,
        flip,
        raw,
    })
}

/// Pushes one entry per step of `Layout::of(dtype)`, in the same order: the field's name at
/// the first step of each record field (`name`), `None` elsewhere.
fn field_names(dtype: &DType, name: Option<&str>, out: &mut Vec<Option<String>>) {
    out.push(name.map(str::to_owned));
    match dtype {
        DType::Plain(_) => {}
        DType::Array(base, shape) => {
            let Some((&n, rest)) = shape.split_first() else {
                return;
            };
            // This axis's step was pushed above; each item is the next axis, or a base element.
            let inner = if rest.is_empty() {
                (**base).clone()
            } else {
                DType::Array(base.clone(), rest.to_vec())
            };
            for _ in 0..n {
                field_names(&inner, None, out);
            }
        }
        DType::Record(r) => {
            for f in r.fields() {
                field_names(&f.dtype, Some(&f.name), out);
            }
        }
    }
}

impl WritePlan {
    /// True if `key` is the name of the record field whose value is at step `at`.
    #[inline(always)]
    fn key_matches(&self, at: usize, key: &'static str) -> bool {
        match self.verified.get(at) {
            Some(v) if v.get() == key.as_ptr() as usize && !key.is_empty() => true,
            _ => self.check_key(at, key),
        }
    }

    #[cold]
    #[inline(never)]
    fn check_key(&self, at: usize, key: &'static str) -> bool {
        let equal = matches!(self.names.get(at), Some(Some(name)) if name == key);
        if equal && let Some(v) = self.verified.get(at) {
            v.set(key.as_ptr() as usize);
        }
        equal
    }
}

/// The encoding loop, a method of a blanket impl on `T` so that rustc compiles it next to
/// `T::serialize` (see `crate::read::exact`'s `Run` for why that matters).
trait WriteRun: Sized {
    fn write_run<const FLIP: bool>(recs: &[Self], out: &mut [u8], plan: &WritePlan) -> usize;
}

impl<T: Serialize + NpyRecord> WriteRun for T {
    #[inline(never)]
    fn write_run<const FLIP: bool>(recs: &[T], out: &mut [u8], plan: &WritePlan) -> usize {
        // Constants: the slot's bounds checks fold against the size, and only layouts with
        // padding (NumPy writes zeros there) clear the slot first.
        let size = const { T::LAYOUT.size as usize };
        let gaps = const { T::LAYOUT.has_gaps() };
        if size == 0 {
            return 0;
        }
        let mut n = 0;
        for (rec, slot) in recs.iter().zip(out.chunks_exact_mut(size)) {
            if gaps {
                slot.fill(0);
            }
            let encoded = rec.serialize(ExactSer::<T, FLIP> {
                out: slot,
                at: 0,
                plan,
                _t: PhantomData,
            });
            if encoded.is_err() {
                break;
            }
            n += 1;
        }
        n
    }
}

impl<T: Serialize + NpyRecord> WriteTier<T> {
    /// Encodes one record into its slot (exactly the itemsize); false on a miss. Called
    /// directly (not through `run`'s pointer) so that a writer taking one record at a time
    /// pays no call per record: `S` names the call site (the writer's type), and the record's
    /// encoder inlines into it.
    #[inline(always)]
    pub(crate) fn one<S: ?Sized>(&self, rec: &T, slot: &mut [u8]) -> bool {
        match self.flip {
            false => rec.write_one::<false, S>(slot, &self.plan),
            true => rec.write_one::<true, S>(slot, &self.plan),
        }
    }
}

/// One record, on a site of its own (so that `write_run` stays the only caller of its
/// `T::serialize`: with a second caller, the call stopped inlining and the slice loop ran at two
/// thirds of its speed), and compiled next to `T::serialize` (see `WriteRun`).
///
/// The site is `OneSite<S>`, `S` the writer's type: a program writing records of one type to a
/// file and to a `BufWriter` (or a `Vec`) has one `T::serialize` per writer type, each with one
/// caller. With one site for all of them, the second writer type gave `write_one` and
/// `T::serialize` two callers, LLVM stopped inlining them into `NpyWriter::write`, and the
/// record-at-a-time loop lost a quarter of its speed.
trait WriteOne: Sized {
    fn write_one<const FLIP: bool, S: ?Sized>(&self, slot: &mut [u8], plan: &WritePlan) -> bool;
}

/// The call site of [`WriteOne::write_one`] from a writer of type `S`.
struct OneSite<S: ?Sized>(PhantomData<fn(&S)>);

impl<T: Serialize + NpyRecord> WriteOne for T {
    #[inline(always)]
    fn write_one<const FLIP: bool, S: ?Sized>(&self, slot: &mut [u8], plan: &WritePlan) -> bool {
        let size = const { T::LAYOUT.size as usize };
        let Some(slot) = slot.get_mut(..size) else {
            return false;
        };
        if const { T::LAYOUT.has_gaps() } {
            slot.fill(0);
        }
        self.serialize(ExactSer::<T, FLIP, OneSite<S>> {
            out: slot,
            at: 0,
            plan,
            _t: PhantomData,
        })
        .is_ok()
    }
}

/// Writes the value at step `at` of `T::LAYOUT` into an element's bytes.
///
/// `S` names the call site: each site gets its own instance of `T::serialize`, so each
/// instance has one caller and inlines into it (see `crate::read::exact`'s `ExactDe`).
struct ExactSer<'b, 'p, T, const FLIP: bool, S = ()> {
    out: &'b mut [u8],
    at: usize,
    plan: &'p WritePlan,
    _t: PhantomData<fn() -> (T, S)>,
}

impl<'b, 'p, T: NpyRecord, const FLIP: bool, S> ExactSer<'b, 'p, T, FLIP, S> {
    /// Where a leaf of `kind` goes, and whether to swap its bytes.
    #[inline(always)]
    fn leaf<const N: usize>(self, kind: Kind) -> Option<(&'b mut [u8; N], bool)> {
        let s = step_of::<T>(self.at)?;
        if s.op != Op::Leaf(kind) {
            return None;
        }
        let at = s.arg as usize;
        let b = self.out.get_mut(at..at.checked_add(N)?)?;
        Some((b.try_into().ok()?, s.swap ^ FLIP))
    }

    /// The items of the record or subarray at this step, if it has `len` of them.
    #[inline(always)]
    fn items(self, len: usize, keyed: bool) -> Result<ExactItems<'b, 'p, T, FLIP, S>> {
        match step_of::<T>(self.at) {
            Some(s) if matches!(s.op, Op::Record | Op::Array) && s.arg as usize == len => {
                Ok(ExactItems {
                    out: self.out,
                    next: self.at + 1,
                    left: s.arg,
                    keyed,
                    plan: self.plan,
                    _t: PhantomData,
                })
            }
            _ => Err(miss()),
        }
    }
}

macro_rules! leaves {
    ($($k:ident $t:ty, $u:ty, $code:literal, $de:ident, $visit:ident, $method:ident, $from:expr, $conv:expr;)*) => {
        $(
            #[inline(always)]
            fn $method(self, v: $t) -> Result<()> {
                #[allow(clippy::redundant_closure_call)]
                let x: $u = ($conv)(v);
                match self.leaf::<{ std::mem::size_of::<$u>() }>(Kind::$k) {
                    Some((dst, swap)) => {
                        *dst = if swap { x.swap_bytes() } else { x }.to_ne_bytes();
                        Ok(())
                    }
                    None => Err(miss()),
                }
            }
        )*
    };
}

impl<'b, 'p, T: NpyRecord, const FLIP: bool, S> ser::Serializer for ExactSer<'b, 'p, T, FLIP, S> {
    type Ok = ();
    type Error = Miss;
    type SerializeSeq = ExactItems<'b, 'p, T, FLIP, S>;
    type SerializeTuple = ExactItems<'b, 'p, T, FLIP, S>;
    type SerializeTupleStruct = ExactItems<'b, 'p, T, FLIP, S>;
    type SerializeTupleVariant = Impossible<(), Miss>;
    type SerializeMap = Impossible<(), Miss>;
    type SerializeStruct = ExactItems<'b, 'p, T, FLIP, S>;
    type SerializeStructVariant = Impossible<(), Miss>;

    numbers!(leaves);

    #[inline(always)]
    fn serialize_bool(self, v: bool) -> Result<()> {
        match self.leaf::<1>(Kind::Bool) {
            Some((dst, _)) => {
                *dst = [v as u8];
                Ok(())
            }
            None => Err(miss()),
        }
    }

    #[inline(always)]
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Self::SerializeStruct> {
        match step_of::<T>(self.at) {
            Some(s) if s.op == Op::Record => self.items(len, true),
            _ => Err(miss()),
        }
    }

    #[inline(always)]
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple> {
        self.items(len, false)
    }

    #[inline(always)]
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.items(len, false)
    }

    #[inline(always)]
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq> {
        match len {
            Some(len) => self.items(len, false),
            None => Err(miss()),
        }
    }

    #[inline(always)]
    fn serialize_some<V: ?Sized + Serialize>(self, value: &V) -> Result<()> {
        value.serialize(self)
    }

    #[inline(always)]
    fn serialize_newtype_struct<V: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &V,
    ) -> Result<()> {
        // `half::f16`, which the general path takes bit for bit.
        if name == "f16" {
            return Err(miss());
        }
        // A `DateTime64<U>`/`TimeDelta64<U>` only where `T::LAYOUT` has its unit.
        if let Some((delta, unit)) = time_of_name(name) {
            match step_of::<T>(self.at) {
                Some(s) if s.tag == time_tag(delta, unit) => {}
                _ => return Err(miss()),
            }
        }
        value.serialize(self)
    }

    fn serialize_i128(self, _v: i128) -> Result<()> {
        Err(miss())
    }

    fn serialize_u128(self, _v: u128) -> Result<()> {
        Err(miss())
    }

    fn serialize_char(self, _v: char) -> Result<()> {
        Err(miss())
    }

    fn serialize_str(self, _v: &str) -> Result<()> {
        Err(miss())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<()> {
        Err(miss())
    }

    #[inline(always)]
    fn serialize_none(self) -> Result<()> {
        // A datetime's `None` is NaT (a constant test: the tag is `T::LAYOUT`'s).
        if const { &T::LAYOUT }.is_time(self.at) {
            return ser::Serializer::serialize_i64(self, i64::MIN);
        }
        Err(miss())
    }

    fn serialize_unit(self) -> Result<()> {
        Err(miss())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<()> {
        Err(miss())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<()> {
        Err(miss())
    }

    fn serialize_newtype_variant<V: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &V,
    ) -> Result<()> {
        Err(miss())
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(miss())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(miss())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(miss())
    }

    fn is_human_readable(&self) -> bool {
        false
    }
}

/// The fields of a record (by key, in dtype order) or the items of a subarray or positional
/// record, each written at its own step.
struct ExactItems<'b, 'p, T, const FLIP: bool, S> {
    out: &'b mut [u8],
    /// The step of the next item.
    next: usize,
    left: u32,
    /// Struct fields, whose keys must be the dtype's names in order.
    keyed: bool,
    plan: &'p WritePlan,
    _t: PhantomData<fn() -> (T, S)>,
}

impl<T: NpyRecord, const FLIP: bool, S> ExactItems<'_, '_, T, FLIP, S> {
    #[inline(always)]
    fn item<V: ?Sized + Serialize>(&mut self, key: Option<&'static str>, value: &V) -> Result<()> {
        if self.left == 0 {
            return Err(miss());
        }
        let at = self.next;
        let Some(s) = step_of::<T>(at) else {
            return Err(miss());
        };
        if let Some(key) = key
            && !self.plan.key_matches(at, key)
        {
            return Err(miss());
        }
        self.left -= 1;
        self.next = s.end as usize;
        value.serialize(ExactSer::<T, FLIP, S> {
            out: &mut *self.out,
            at,
            plan: self.plan,
            _t: PhantomData,
        })
    }

    /// Every item must have been written (the general path reports what is missing).
    #[inline(always)]
    fn done(self) -> Result<()> {
        match self.left {
            0 => Ok(()),
            _ => Err(miss()),
        }
    }
}

impl<T: NpyRecord, const FLIP: bool, S> ser::SerializeStruct for ExactItems<'_, '_, T, FLIP, S> {
    type Ok = ();
    type Error = Miss;

    #[inline(always)]
    fn serialize_field<V: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &V,
    ) -> Result<()> {
        if !self.keyed {
            return Err(miss());
        }
        self.item(Some(key), value)
    }

    fn skip_field(&mut self, _key: &'static str) -> Result<()> {
        Err(miss())
    }

    #[inline(always)]
    fn end(self) -> Result<()> {
        self.done()
    }
}

macro_rules! positional {
    ($($trait:ident :: $method:ident;)*) => {
        $(
            impl<T: NpyRecord, const FLIP: bool, S> ser::$trait for ExactItems<'_, '_, T, FLIP, S> {
                type Ok = ();
                type Error = Miss;

                #[inline(always)]
                fn $method<V: ?Sized + Serialize>(&mut self, value: &V) -> Result<()> {
                    self.item(None, value)
                }

                #[inline(always)]
                fn end(self) -> Result<()> {
                    self.done()
                }
            }
        )*
    };
}

positional! {
    SerializeSeq::serialize_element;
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Layout;
    use crate::write::elem::ElemSer;
    use crate::write::plan::Plan;
    use serde::Serialize;

    /// `recs` as elements of `descr`, on the exact tier (records before its first miss, and
    /// how many) and through the general serializer (all of them), both into buffers filled
    /// with 0xAA first so that a byte either leaves unwritten shows.
    fn both<T: Serialize + NpyRecord>(descr: &str, recs: &[T]) -> (usize, Vec<u8>, Vec<u8>) {
        let dtype: DType = descr.parse().unwrap();
        let size = dtype.itemsize();
        let tier = write_tier::<T>(&dtype).expect("the exact tier engages");
        let mut exact = vec![0xAA; size * recs.len()];
        let n = (tier.run)(recs, &mut exact, &tier.plan);
        let plan = Plan::new(&dtype).unwrap();
        let mut general = vec![0xAA; size * recs.len()];
        for (r, slot) in recs.iter().zip(general.chunks_exact_mut(size)) {
            r.serialize(ElemSer::new(&plan.root, slot)).unwrap();
        }
        (n, exact, general)
    }

    // The records below derive `NpyRecord` (feature `derive`).
    #[cfg(feature = "derive")]
    #[derive(Serialize, crate::NpyRecord, Clone, Copy)]
    #[npy(crate = "crate")]
    struct Inner {
        a: u16,
        b: bool,
    }

    #[cfg(feature = "derive")]
    #[derive(Serialize, crate::NpyRecord, Clone, Copy)]
    #[npy(crate = "crate")]
    struct Rec {
        id: i64,
        x: f64,
        y: f32,
        flag: u8,
        v: [f32; 3],
        inner: Inner,
        m: [[i16; 2]; 2],
    }

    #[cfg(feature = "derive")]
    fn recs() -> Vec<Rec> {
        (0..40)
            .map(|i| Rec {
                id: i - 20,
                x: i as f64 * -0.5,
                y: f32::from_bits(0x7fc0_0001 + i as u32),
                flag: (i * 7) as u8,
                v: [1.5, -0.0, i as f32],
                inner: Inner {
                    a: 65535 - i as u16,
                    b: i % 3 == 0,
                },
                m: [[i as i16, -1], [i16::MIN, i16::MAX]],
            })
            .collect()
    }

    #[cfg(feature = "derive")]
    #[test]
    fn same_bytes_as_the_general_serializer_in_both_byte_orders() {
        let le = "[('id','<i8'),('x','<f8'),('y','<f4'),('flag','u1'),('v','<f4',(3,)),\
                  ('inner',[('a','<u2'),('b','?')]),('m','<i2',(2,2))]";
        let recs = recs();
        for descr in [le.to_owned(), le.replace('<', ">")] {
            let (n, exact, general) = both(&descr, &recs);
            assert_eq!(n, recs.len(), "{descr}");
            assert!(exact == general, "{descr}");
        }
    }

    #[cfg(feature = "derive")]
    #[test]
    fn padding_is_zeroed() {
        #[derive(Serialize, crate::NpyRecord)]
        #[npy(crate = "crate", align)]
        struct Padded {
            a: u8,
            b: i64,
            c: bool,
        }
        let recs = [
            Padded {
                a: 1,
                b: -2,
                c: true,
            },
            Padded {
                a: 255,
                b: i64::MAX,
                c: false,
            },
        ];
        let (n, exact, general) = both(
            "[('a','u1'),('','|V7'),('b','<i8'),('c','?'),('','|V7')]",
            &recs,
        );
        assert_eq!(n, 2);
        assert_eq!(exact, general);
        assert_eq!(&exact[1..8], &[0; 7]);
        assert_eq!(&exact[17..24], &[0; 7]);
    }

    #[test]
    fn plain_scalars_and_subarrays() {
        let (n, exact, general) = both("<f8", &[1.5f64, -0.0, f64::INFINITY]);
        assert_eq!((n, &exact), (3, &general));
        let (n, exact, general) = both(">u2", &[1u16, 0xff00]);
        assert_eq!((n, &exact), (2, &general));
        assert_eq!(exact, [0, 1, 0xff, 0]);
        let (n, exact, general) = both("('<i4', (2, 3))", &[[[1i32, 2, 3], [4, 5, 6]]]);
        assert_eq!((n, &exact), (1, &general));
    }

    /// Records serialized otherwise than as the layout says stop the tier at that record.
    #[test]
    fn misses_where_the_serialization_differs() {
        struct Odd {
            id: i64,
            how: u8,
        }
        impl Serialize for Odd {
            fn serialize<S: ser::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                use ser::SerializeStruct;
                let mut st = s.serialize_struct("Odd", 2)?;
                match self.how {
                    // As the layout says.
                    0 => {
                        st.serialize_field("id", &self.id)?;
                        st.serialize_field("x", &(self.id as f64))?;
                    }
                    // Keys in another order (the general path matches them by name).
                    1 => {
                        st.serialize_field("x", &(self.id as f64))?;
                        st.serialize_field("id", &self.id)?;
                    }
                    // A narrower integer (the general path widens it).
                    _ => {
                        st.serialize_field("id", &(self.id as i32))?;
                        st.serialize_field("x", &(self.id as f64))?;
                    }
                }
                st.end()
            }
        }
        impl NpyRecord for Odd {
            fn dtype() -> DType {
                "[('id','<i8'),('x','<f8')]".parse().unwrap()
            }
            const LAYOUT: Layout = Layout::record(&[&i64::LAYOUT, &f64::LAYOUT], false);
        }
        for how in [1, 2] {
            let recs: Vec<Odd> = (0..6)
                .map(|i| Odd {
                    id: i,
                    how: if i >= 4 { how } else { 0 },
                })
                .collect();
            let (n, exact, general) = both("[('id','<i8'),('x','<f8')]", &recs);
            assert_eq!(n, 4, "how {how}");
            assert_eq!(exact[..4 * 16], general[..4 * 16], "how {how}");
        }
        // Another field name in the file: the first record misses.
        let recs = [Odd { id: 1, how: 0 }];
        let dtype: DType = "[('id','<i8'),('z','<f8')]".parse().unwrap();
        let tier = write_tier::<Odd>(&dtype).unwrap();
        assert_eq!((tier.run)(&recs, &mut [0; 16], &tier.plan), 0);
        // Other layouts: no tier at all.
        for descr in [
            "[('id','<i4'),('x','<f8')]",
            "[('id','<i8'),('x','>f8')]",
            "<i8",
        ] {
            assert!(
                write_tier::<Odd>(&descr.parse().unwrap()).is_none(),
                "{descr}"
            );
        }
    }
}
