//! Per-array decoding plans, computed once and shared by every element: the plan of a
//! value (how a scalar or 1-D subarray request is decoded without the general path), how a
//! record is presented to a struct ([`StructPlan`]: positionally or by name), and the
//! per-array cache of those ([`Ctx`]).
//!
//! Owns no deserializer. Used by the general tier (`super::general`), the runtime-planned
//! tier (`super::planned`) and the shape walk (`super::shape`); calls nothing above it.

use std::cell::OnceCell;

use crate::dtype::{DType, PlainType, Record};
use crate::kind::Kind;

/// Default limit on the number of items of a zero-byte element type (`V0`, an empty record) in
/// one array or subarray: their count is not bounded by the size of the data.
pub(crate) const DEFAULT_MAX_EMPTY_ITEMS: u64 = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Shared per-deserialization state
// ---------------------------------------------------------------------------------------------

/// State shared by all element deserializers of one array: limits and the per-struct field
/// selection cache. Shared (`&Ctx`) by every deserializer of the array: the cache only grows,
/// so a plan found once can be borrowed for as long as the `Ctx` lives, with no per-record
/// reference counting.
pub(crate) struct Ctx {
    /// Largest count of zero-byte items accepted in one sequence.
    pub(crate) max_empty_items: u64,
    pub(super) plans: [OnceCell<CacheEntry>; MAX_CACHE_ENTRIES],
}

/// How to present a given record dtype (by address) to a given struct (`fields` list).
pub(super) struct CacheEntry {
    pub(super) key: (usize, usize, usize),
    pub(super) plan: StructPlan,
    /// Set (once, for the rest of the array) when `plan` is positional but the struct's
    /// visitor took fewer fields than it was offered: see [`Ctx::read_by_name`].
    pub(super) by_name: OnceCell<StructPlan>,
}

impl CacheEntry {
    pub(super) fn plan(&self) -> &StructPlan {
        self.by_name.get().unwrap_or(&self.plan)
    }
}

pub(super) const MAX_CACHE_ENTRIES: usize = 32;

impl Ctx {
    pub(crate) fn new(max_empty_items: u64) -> Ctx {
        Ctx {
            max_empty_items,
            plans: std::array::from_fn(|_| OnceCell::new()),
        }
    }

    /// How to present the record to the struct (serde-derive lists every field name and alias
    /// in `fields`), computed once per record dtype and struct type; `None` once the cache is
    /// full (the caller computes the plan itself).
    #[inline]
    pub(crate) fn plan(
        &self,
        rec: &Record,
        fields: &'static [&'static str],
    ) -> Option<&StructPlan> {
        self.cached(self.plan_index(rec, fields)?)
    }

    /// The cache slot of [`Ctx::plan`]'s plan, filling it if needed.
    #[inline]
    pub(crate) fn plan_index(
        &self,
        rec: &Record,
        fields: &'static [&'static str],
    ) -> Option<usize> {
        let key = (
            rec as *const Record as usize,
            fields.as_ptr() as usize,
            fields.len(),
        );
        for (i, cell) in self.plans.iter().enumerate() {
            match cell.get() {
                Some(e) if e.key == key => return Some(i),
                Some(_) => {}
                None => {
                    Ctx::insert(cell, rec, fields, key);
                    return Some(i);
                }
            }
        }
        None
    }

    /// The plan in cache slot `i`.
    #[inline]
    pub(crate) fn cached(&self, i: usize) -> Option<&StructPlan> {
        self.plans.get(i)?.get().map(CacheEntry::plan)
    }

    /// From now on, present the record in slot `i` to its struct by name.
    ///
    /// Reading positionally stands in for reading by name when serde's `fields` list is the
    /// record's names in order, and the struct's visitor takes every field. One that takes
    /// fewer is either a hand-written visitor that stops early (by name it gets the same
    /// values) or a derived struct with a `#[serde(alias)]`, which serde lists in `fields`
    /// too, so that its fields are not the first items (by name, such a file gives the
    /// aliased field twice, and serde reports that). The fast tiers detect it on the first
    /// element, miss, and call this before the general path decodes that element again.
    #[cold]
    pub(crate) fn read_by_name(&self, i: usize, rec: &Record, fields: &'static [&'static str]) {
        if let Some(e) = self.plans.get(i).and_then(OnceCell::get) {
            e.by_name.get_or_init(|| StructPlan::by_name(rec, fields));
        }
    }

    #[cold]
    pub(super) fn insert<'c>(
        cell: &'c OnceCell<CacheEntry>,
        rec: &Record,
        fields: &'static [&'static str],
        key: (usize, usize, usize),
    ) -> &'c StructPlan {
        &cell
            .get_or_init(|| CacheEntry {
                key,
                plan: StructPlan::new(rec, fields),
                by_name: OnceCell::new(),
            })
            .plan
    }
}

// ---------------------------------------------------------------------------------------------
// Fast paths: precomputed per-field plans
// ---------------------------------------------------------------------------------------------

/// The directly decoded kind of a scalar type and whether its bytes need swapping. `bool`
/// is not one: its byte must be checked (0 or 1), which the general tier does.
fn planned_kind(p: PlainType) -> Option<(Kind, bool)> {
    match Kind::of(p.scalar()) {
        Some(Kind::Bool) | None => None,
        Some(k) => Some((k, p.order().needs_swap())),
    }
}

/// How to decode one value of a dtype, computed once per file (not per element): a scalar
/// decoded directly when the request is its exact Rust type, a 1-D subarray of such scalars,
/// or anything else (the general `ElemDe` path). Eight bytes, passed in a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `Kind as u8`, with [`Plan::SWAP`] set if the bytes need swapping and [`Plan::VECTOR`]
    /// for a subarray; [`Plan::OTHER`]'s code otherwise. Byte order is part of the code so
    /// that the common case (native order, exact type) is a single comparison.
    pub(super) code: u8,
    /// Byte size of the scalar (of one item, for a subarray).
    pub(super) size: u8,
    /// Subarray length.
    pub(super) n: u32,
}

impl Plan {
    const VECTOR: u8 = 0x80;
    const SWAP: u8 = 0x40;
    const OTHER_CODE: u8 = 0xff;
    /// The general path.
    pub(crate) const OTHER: Plan = Plan {
        code: Plan::OTHER_CODE,
        size: 0,
        n: 0,
    };

    /// The plan of a value of `dtype` (with no extra subarray axes).
    pub(crate) fn of(dtype: &DType) -> Plan {
        let other = Plan::OTHER;
        let scalar = |p: &PlainType| {
            let (k, swap) = planned_kind(*p)?;
            let code = if swap { k as u8 | Plan::SWAP } else { k as u8 };
            Some((code, u8::try_from(p.itemsize()).ok()?))
        };
        match dtype {
            DType::Plain(p) => match scalar(p) {
                Some((code, size)) => Plan { code, size, n: 0 },
                None => other,
            },
            DType::Array(base, shape) => match (&**base, shape.as_slice()) {
                (DType::Plain(p), &[n]) => match (scalar(p), u32::try_from(n)) {
                    (Some((code, size)), Ok(n)) => Plan {
                        code: code | Plan::VECTOR,
                        size,
                        n,
                    },
                    _ => other,
                },
                _ => other,
            },
            DType::Record(_) => other,
        }
    }

    /// `Some(swap)` if this is a scalar of kind `k`.
    #[inline(always)]
    pub(crate) fn scalar(self, k: Kind) -> Option<bool> {
        if self.code == k as u8 {
            Some(false)
        } else if self.code == k as u8 | Plan::SWAP {
            Some(true)
        } else {
            None
        }
    }

    /// For a 1-D subarray plan: the items' plan, their count and byte size.
    #[inline(always)]
    pub(crate) fn vector(self) -> Option<(Plan, usize, usize)> {
        if self.code & Plan::VECTOR == 0 || self.code == Plan::OTHER_CODE {
            return None;
        }
        let item = Plan {
            code: self.code & !Plan::VECTOR,
            n: 0,
            ..self
        };
        Some((item, self.n as usize, self.size as usize))
    }
}

/// One field of a record read positionally: its byte range in the record and its plan.
#[derive(Debug)]
pub(crate) struct FieldPlan {
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) plan: Plan,
    /// For the fast tier (`crate::read::planned`): the offset as a `u32` (so that adding a scalar's
    /// size cannot overflow and one comparison bounds the read) and the plan, which is
    /// [`Plan::OTHER`] when the field does not end below 4 GiB.
    pub(crate) at: u32,
    pub(crate) fast: Plan,
}

/// How a record is presented to a given struct.
pub(crate) enum StructPlan {
    /// The file's fields are exactly the struct's, in order: a sequence of field values (one
    /// [`FieldPlan`] per field of the record, in the same order).
    Seq(Box<[FieldPlan]>),
    /// A map of these (field index, byte size) pairs: the fields the struct names.
    Map(Box<[(u32, usize)]>),
}

impl StructPlan {
    pub(super) fn new(rec: &Record, fields: &'static [&'static str]) -> StructPlan {
        let exact = rec.fields().len() == fields.len()
            && rec
                .fields()
                .iter()
                .zip(fields)
                .all(|(f, name)| f.name == *name);
        if exact {
            return StructPlan::Seq(
                rec.fields()
                    .iter()
                    .map(|f| {
                        let size = f.dtype.itemsize();
                        let plan = Plan::of(&f.dtype);
                        let end = f.offset.checked_add(size).map(u32::try_from);
                        let (at, fast) = match (u32::try_from(f.offset), end) {
                            (Ok(at), Some(Ok(_))) => (at, plan),
                            _ => (0, Plan::OTHER),
                        };
                        FieldPlan {
                            offset: f.offset,
                            size,
                            plan,
                            at,
                            fast,
                        }
                    })
                    .collect(),
            );
        }
        StructPlan::by_name(rec, fields)
    }

    /// The fields of `rec` the struct names, by name.
    pub(super) fn by_name(rec: &Record, fields: &'static [&'static str]) -> StructPlan {
        StructPlan::Map(
            rec.fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| fields.contains(&f.name.as_str()))
                .map(|(i, f)| (i as u32, f.dtype.itemsize()))
                .collect(),
        )
    }
}
