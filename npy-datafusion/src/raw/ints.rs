//! Comparisons of integer and day columns evaluated on their bytes: `=`, `<>`, `<`, `<=`,
//! `>`, `>=` between such a column and a literal of the column's Arrow type, or two columns
//! of one kind (TPC-H's `l_commitdate < l_receiptdate`, `l_shipdate >= date '1994-01-01'`,
//! `p_size = 15`). The column need not become an Arrow array for the filter: a filter's date
//! columns were copied, converted to Date32 and compared by DataFusion for every row, and most
//! of them are returned by no query.
//!
//! The values compared are the Arrow values the scan would make: an integer is itself, a
//! `datetime64[D]` count its Date32 days. NaT is Date32's null, which a comparison keeps
//! false (as a filter counts NULL); a count past 32 bits has no Date32 value, and the batch is
//! decoded instead to report it (`evaluate` answers `None`).

use std::sync::Arc;

use arrow_buffer::{BooleanBuffer, Buffer};
use arrow_schema::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_plan::PhysicalExpr;

use super::values::Values;

/// NumPy's NaT.
const NAT: i64 = i64::MIN;

/// A column of integers whose Arrow values are the numbers stored (`<i4` as Int32, `>u2` as
/// UInt16), or of `datetime64[D]` counts made Date32 days.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Int {
    /// Bytes a value: 1, 2, 4 or 8 (an unsigned one at most 4: all fit `i64`).
    pub(crate) width: usize,
    pub(crate) signed: bool,
    pub(crate) big: bool,
    /// `datetime64[D]` (8 bytes, signed): NaT is null, other counts must fit 32 bits.
    pub(crate) days: bool,
}

impl Int {
    /// The column whose values have the Arrow type `dt` (an integer type of at most 4 bytes
    /// unsigned, or Date32 from `datetime64[D]`), stored in the given order.
    pub(crate) fn of(dt: &DataType, big: bool) -> Option<Int> {
        let (width, signed, days) = match dt {
            DataType::Int8 => (1, true, false),
            DataType::Int16 => (2, true, false),
            DataType::Int32 => (4, true, false),
            DataType::Int64 => (8, true, false),
            DataType::UInt8 => (1, false, false),
            DataType::UInt16 => (2, false, false),
            DataType::UInt32 => (4, false, false),
            DataType::Date32 => (8, true, true),
            _ => return None,
        };
        Some(Int {
            width,
            signed,
            big,
            days,
        })
    }

    /// The Arrow type of its values.
    pub(crate) fn arrow(self) -> Option<DataType> {
        Some(match (self.days, self.width, self.signed) {
            (true, 8, true) => DataType::Date32,
            (true, ..) => return None,
            (false, 1, true) => DataType::Int8,
            (false, 2, true) => DataType::Int16,
            (false, 4, true) => DataType::Int32,
            (false, 8, true) => DataType::Int64,
            (false, 1, false) => DataType::UInt8,
            (false, 2, false) => DataType::UInt16,
            (false, 4, false) => DataType::UInt32,
            _ => return None,
        })
    }
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl Op {
    fn of(op: &Operator) -> Option<Op> {
        Some(match op {
            Operator::Eq => Op::Eq,
            Operator::NotEq => Op::NotEq,
            Operator::Lt => Op::Lt,
            Operator::LtEq => Op::LtEq,
            Operator::Gt => Op::Gt,
            Operator::GtEq => Op::GtEq,
            _ => return None,
        })
    }

    /// The operator with its operands swapped (`5 < x` is `x > 5`).
    fn flipped(self) -> Op {
        match self {
            Op::Lt => Op::Gt,
            Op::LtEq => Op::GtEq,
            Op::Gt => Op::Lt,
            Op::GtEq => Op::LtEq,
            same => same,
        }
    }
}

/// What a column is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Other {
    Value(i64),
    Column(usize),
}

/// `column op other`; see the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IntCmp {
    column: usize,
    int: Int,
    op: Op,
    other: Other,
}

/// A non-null literal of type `arrow`, as a number.
fn literal(e: &Arc<dyn PhysicalExpr>, arrow: &DataType) -> Option<i64> {
    let v = e.downcast_ref::<Literal>()?.value();
    if v.data_type() != *arrow {
        return None;
    }
    match v {
        ScalarValue::Int8(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Int16(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Int32(Some(x)) | ScalarValue::Date32(Some(x)) => Some(i64::from(*x)),
        ScalarValue::Int64(Some(x)) => Some(*x),
        ScalarValue::UInt8(Some(x)) => Some(i64::from(*x)),
        ScalarValue::UInt16(Some(x)) => Some(i64::from(*x)),
        ScalarValue::UInt32(Some(x)) => Some(i64::from(*x)),
        _ => None,
    }
}

impl IntCmp {
    /// `l op r` as a comparison of an integer or day column (`int(i)`: where the column `i`
    /// of the expression is read, and its kind) with a literal of its Arrow type or another
    /// column of its kind.
    pub(crate) fn compile(
        l: &Arc<dyn PhysicalExpr>,
        op: &Operator,
        r: &Arc<dyn PhysicalExpr>,
        int: &dyn Fn(usize) -> Option<(usize, Int)>,
    ) -> Option<IntCmp> {
        let op = Op::of(op)?;
        let column = |e: &Arc<dyn PhysicalExpr>| int(e.downcast_ref::<Column>()?.index());
        let (column, int, op, other) = match (column(l), column(r)) {
            (Some((a, x)), Some((b, y))) if x == y => (a, x, op, Other::Column(b)),
            (Some((a, x)), None) => (a, x, op, Other::Value(literal(r, &x.arrow()?)?)),
            (None, Some((b, y))) => (b, y, op.flipped(), Other::Value(literal(l, &y.arrow()?)?)),
            _ => return None,
        };
        Some(IntCmp {
            column,
            int,
            op,
            other,
        })
    }

    /// Whether a row's result can be NULL (a NaT): then it is false, which `NOT` would
    /// turn true, where SQL keeps it NULL.
    pub(crate) fn nullable(&self) -> bool {
        self.int.days
    }

    /// The columns it reads.
    pub(crate) fn columns(&self, out: &mut Vec<usize>) {
        let other = match self.other {
            Other::Column(c) => Some(c),
            Other::Value(_) => None,
        };
        for c in std::iter::once(self.column).chain(other) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }

    /// The rows of a batch of `rows` rows it keeps (`data[c]` the values of column `c`);
    /// `None` when a day count of a column it reads has no Date32 value.
    pub(crate) fn evaluate(&self, rows: usize, data: &[Values<'_>]) -> Option<BooleanBuffer> {
        let a = data[self.column];
        let b = match self.other {
            Other::Column(c) => Some(data[c]),
            Other::Value(_) => None,
        };
        let Int {
            width,
            signed,
            big,
            days,
        } = self.int;
        macro_rules! run {
            ($t:ty) => {
                if big {
                    self.run::<$t, true>(rows, a, b, days)
                } else {
                    self.run::<$t, false>(rows, a, b, days)
                }
            };
        }
        match (width, signed) {
            (1, true) => run!(i8),
            (2, true) => run!(i16),
            (4, true) => run!(i32),
            (8, true) => run!(i64),
            (1, false) => run!(u8),
            (2, false) => run!(u16),
            (4, false) => run!(u32),
            _ => unreachable!("an Int is 1, 2 or 4 bytes, or 8 signed"),
        }
    }

    /// [`evaluate`](Self::evaluate) over values of type `T`.
    #[inline]
    fn run<T: Load, const BIG: bool>(
        &self,
        rows: usize,
        a: Values<'_>,
        b: Option<Values<'_>>,
        days: bool,
    ) -> Option<BooleanBuffer> {
        let x = values::<T, BIG>(a, rows);
        if days && !fits(&x) {
            return None;
        }
        match (b, self.other) {
            (Some(b), _) => {
                let y = values::<T, BIG>(b, rows);
                if days && !fits(&y) {
                    return None;
                }
                Some(compare(&x, Right::Values(&y), self.op, days))
            }
            (None, Other::Value(v)) => Some(compare(&x, Right::Value(v), self.op, days)),
            (None, Other::Column(_)) => None,
        }
    }
}

/// A fixed-width integer read from its bytes as an `i64`.
trait Load {
    const W: usize;
    fn load<const BIG: bool>(bytes: &[u8]) -> i64;
}

macro_rules! load {
    ($($t:ty),*) => {$(
        impl Load for $t {
            const W: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn load<const BIG: bool>(bytes: &[u8]) -> i64 {
                let x = bytes[..Self::W].try_into().expect("W bytes");
                (if BIG { <$t>::from_be_bytes(x) } else { <$t>::from_le_bytes(x) }) as i64
            }
        }
    )*};
}
load!(i8, i16, i32, i64, u8, u16, u32);

/// The `rows` values of `v` as `i64`s (one pass that vectorises when they lie one after
/// another).
#[inline]
fn values<T: Load, const BIG: bool>(v: Values<'_>, rows: usize) -> Vec<i64> {
    let bytes = &v.bytes[v.start..];
    if v.stride == T::W {
        bytes[..rows * T::W]
            .chunks_exact(T::W)
            .map(T::load::<BIG>)
            .collect()
    } else {
        (0..rows)
            .map(|i| T::load::<BIG>(&bytes[i * v.stride..]))
            .collect()
    }
}

/// Whether every day count of `x` has a Date32 value (NaT is null).
#[inline]
fn fits(x: &[i64]) -> bool {
    x.iter().fold(true, |ok, &v| {
        ok & ((v == NAT) | (i64::from(v as i32) == v))
    })
}

/// The right operand of a comparison: a value per row, or one for all.
#[derive(Clone, Copy)]
enum Right<'a> {
    Values(&'a [i64]),
    Value(i64),
}

/// The rows where `x op right` holds; with `nat`, none where either is NaT.
#[inline]
fn compare(x: &[i64], right: Right<'_>, op: Op, nat: bool) -> BooleanBuffer {
    macro_rules! keep {
        ($f:expr) => {{
            let f = $f;
            match (right, nat) {
                (Right::Value(y), false) => pack(x, |v| f(v, y)),
                (Right::Value(y), true) => pack(x, |v| f(v, y) & (v != NAT)),
                (Right::Values(y), false) => pack_pairs(x, y, f),
                (Right::Values(y), true) => {
                    pack_pairs(x, y, |v, w| f(v, w) & (v != NAT) & (w != NAT))
                }
            }
        }};
    }
    match op {
        Op::Eq => keep!(|x, y| x == y),
        Op::NotEq => keep!(|x, y| x != y),
        Op::Lt => keep!(|x, y| x < y),
        Op::LtEq => keep!(|x, y| x <= y),
        Op::Gt => keep!(|x, y| x > y),
        Op::GtEq => keep!(|x, y| x >= y),
    }
}

/// The bits of `f` over `x`, 64 to a word (a loop over slices, which vectorises).
#[inline]
fn pack(x: &[i64], f: impl Fn(i64) -> bool) -> BooleanBuffer {
    let words: Vec<u64> = x
        .chunks(64)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u64, |w, (k, &v)| w | (u64::from(f(v)) << k))
        })
        .collect();
    BooleanBuffer::new(Buffer::from_vec(words), 0, x.len())
}

/// The bits of `f` over the pairs of `x` and `y` (as long), 64 to a word.
#[inline]
fn pack_pairs(x: &[i64], y: &[i64], f: impl Fn(i64, i64) -> bool) -> BooleanBuffer {
    let words: Vec<u64> = x
        .chunks(64)
        .zip(y.chunks(64))
        .map(|(c, d)| {
            c.iter()
                .zip(d)
                .enumerate()
                .fold(0u64, |w, (k, (&v, &u))| w | (u64::from(f(v, u)) << k))
        })
        .collect();
    BooleanBuffer::new(Buffer::from_vec(words), 0, x.len())
}

#[cfg(test)]
mod tests {
    use super::super::Raw;
    use super::*;
    use arrow_array::{Array, ArrayRef, BooleanArray, Date32Array, Int16Array, RecordBatch};
    use arrow_array::{Int64Array, Int8Array, UInt32Array};
    use arrow_schema::{Field, Schema};
    use datafusion::physical_expr::expressions::{binary, col, lit, not};

    /// Two columns `a`, `b` of one kind: their values as the scan would make them, and their
    /// bytes as a `width`-byte integer each (`i64::MIN` stands for NaT in day columns).
    struct Pair {
        int: Int,
        a: Vec<i64>,
        b: Vec<i64>,
    }

    impl Pair {
        fn arrow(&self, v: &[i64]) -> ArrayRef {
            let some = |x: i64| (x != NAT || !self.int.days).then_some(x);
            match self.int.arrow().unwrap() {
                DataType::Date32 => Arc::new(Date32Array::from_iter(
                    v.iter().map(|&x| some(x).map(|x| x as i32)),
                )),
                DataType::Int8 => Arc::new(Int8Array::from_iter_values(v.iter().map(|&x| x as i8))),
                DataType::Int16 => {
                    Arc::new(Int16Array::from_iter_values(v.iter().map(|&x| x as i16)))
                }
                DataType::Int64 => Arc::new(Int64Array::from_iter_values(v.iter().copied())),
                DataType::UInt32 => {
                    Arc::new(UInt32Array::from_iter_values(v.iter().map(|&x| x as u32)))
                }
                other => panic!("{other}"),
            }
        }

        /// The values of `v` in records of `stride` bytes, at `start` in each.
        fn bytes(&self, v: &[i64], stride: usize, start: usize) -> Vec<u8> {
            let w = self.int.width;
            let mut out = vec![0xAB; v.len() * stride];
            for (i, x) in v.iter().enumerate() {
                let le = x.to_le_bytes();
                let mut b = le[..w].to_vec();
                if self.int.big {
                    b.reverse();
                }
                out[i * stride + start..][..w].copy_from_slice(&b);
            }
            out
        }

        fn batch(&self) -> RecordBatch {
            let t = self.int.arrow().unwrap();
            let schema = Schema::new(vec![
                Field::new("a", t.clone(), true),
                Field::new("b", t, true),
            ]);
            RecordBatch::try_new(
                Arc::new(schema),
                vec![self.arrow(&self.a), self.arrow(&self.b)],
            )
            .unwrap()
        }

        /// Whether `e` keeps the rows raw that DataFusion keeps over the Arrow columns
        /// (NULL as false), packed and in records, in both byte orders; `false` when it does
        /// not compile.
        fn agrees(&self, e: &Arc<dyn PhysicalExpr>) -> bool {
            let batch = self.batch();
            let want = e
                .evaluate(&batch)
                .unwrap()
                .into_array(batch.num_rows())
                .unwrap();
            let want = want.as_any().downcast_ref::<BooleanArray>().unwrap();
            let want: Vec<bool> = (0..want.len())
                .map(|i| want.is_valid(i) && want.value(i))
                .collect();
            for big in [false, true] {
                let int = Int { big, ..self.int };
                let pair = Pair {
                    int,
                    a: self.a.clone(),
                    b: self.b.clone(),
                };
                let compiled = Raw::compile_with(e, &|_| None, &|i| (i < 2).then_some((i, int)));
                let Some(raw) = compiled else {
                    return false;
                };
                let n = self.a.len();
                let (ap, bp) = (
                    pair.bytes(&self.a, int.width, 0),
                    pair.bytes(&self.b, int.width, 0),
                );
                let packed = [
                    Values::packed(&ap, int.width),
                    Values::packed(&bp, int.width),
                ];
                let records: Vec<u8> = {
                    let (ra, rb) = (pair.bytes(&self.a, 19, 3), pair.bytes(&self.b, 19, 11));
                    ra.iter()
                        .zip(&rb)
                        .enumerate()
                        .map(|(k, (x, y))| {
                            if (11..11 + int.width).contains(&(k % 19)) {
                                *y
                            } else {
                                *x
                            }
                        })
                        .collect()
                };
                let strided = [
                    Values {
                        bytes: &records,
                        stride: 19,
                        start: 3,
                    },
                    Values {
                        bytes: &records,
                        stride: 19,
                        start: 11,
                    },
                ];
                for data in [&packed, &strided] {
                    let got = raw
                        .evaluate(n, data)
                        .expect("every value has an Arrow value");
                    let got: Vec<bool> = got.iter().collect();
                    assert_eq!(got, want, "{e}, big-endian {big}");
                }
            }
            true
        }
    }

    fn ops() -> [Operator; 6] {
        [
            Operator::Eq,
            Operator::NotEq,
            Operator::Lt,
            Operator::LtEq,
            Operator::Gt,
            Operator::GtEq,
        ]
    }

    /// Every comparison of a column with a literal (either side) and with the other column,
    /// and `AND`, `OR` of them, give DataFusion's rows, for day counts with NaT and for
    /// integers of every width the scan reads, at their extremes.
    #[test]
    fn integer_and_day_comparisons_on_the_bytes_keep_datafusions_rows() {
        let days = Int {
            width: 8,
            signed: true,
            big: false,
            days: true,
        };
        let edge = [
            i64::from(i32::MIN),
            -1,
            0,
            1,
            8766,
            9131,
            i64::from(i32::MAX),
        ];
        let a: Vec<i64> = (0..200)
            .map(|i| [edge[i % 7], NAT, 8766 + (i as i64 % 5) - 2][i % 3])
            .collect();
        let b: Vec<i64> = (0..200)
            .map(|i| [8766, NAT, edge[(i * 3) % 7], 9131][i % 4])
            .collect();
        let pairs = [
            (
                Pair {
                    int: days,
                    a: a.clone(),
                    b: b.clone(),
                },
                ScalarValue::Date32(Some(8766)),
            ),
            (
                Pair {
                    int: Int {
                        width: 1,
                        signed: true,
                        big: false,
                        days: false,
                    },
                    a: (0..200).map(|i| (i % 256) as i64 - 128).collect(),
                    b: (0..200).map(|i| (i * 7 % 256) as i64 - 128).collect(),
                },
                ScalarValue::Int8(Some(-1)),
            ),
            (
                Pair {
                    int: Int {
                        width: 2,
                        signed: true,
                        big: false,
                        days: false,
                    },
                    a: (0..200).map(|i| i * 331 - 32768).collect(),
                    b: (0..200).map(|i| 32767 - i * 313).collect(),
                },
                ScalarValue::Int16(Some(100)),
            ),
            (
                Pair {
                    int: Int {
                        width: 8,
                        signed: true,
                        big: false,
                        days: false,
                    },
                    a: (0..200)
                        .map(|i| [i64::MIN, i64::MAX, 15, -15][i % 4])
                        .collect(),
                    b: (0..200)
                        .map(|i| [15, i64::MIN, 0, i64::MAX, 14][i % 5])
                        .collect(),
                },
                ScalarValue::Int64(Some(15)),
            ),
            (
                Pair {
                    int: Int {
                        width: 4,
                        signed: false,
                        big: false,
                        days: false,
                    },
                    a: (0..200)
                        .map(|i| [0, u32::MAX as i64, 7, 1 << 31][i % 4])
                        .collect(),
                    b: (0..200).map(|i| [7, 0, u32::MAX as i64][i % 3]).collect(),
                },
                ScalarValue::UInt32(Some(1 << 31)),
            ),
        ];
        for (pair, value) in &pairs {
            let s = pair.batch().schema();
            let (ca, cb) = (col("a", &s).unwrap(), col("b", &s).unwrap());
            let v = lit(value.clone());
            let cmp = |l: &Arc<dyn PhysicalExpr>, op, r: &Arc<dyn PhysicalExpr>| {
                binary(l.clone(), op, r.clone(), &s).unwrap()
            };
            for op in ops() {
                for e in [cmp(&ca, op, &v), cmp(&v, op, &cb), cmp(&ca, op, &cb)] {
                    assert!(pair.agrees(&e), "{e} compiles");
                }
                let both = cmp(
                    &cmp(&ca, op, &v),
                    Operator::And,
                    &cmp(&cb, Operator::Lt, &ca),
                );
                let either = cmp(
                    &cmp(&ca, op, &v),
                    Operator::Or,
                    &cmp(&v, Operator::GtEq, &cb),
                );
                assert!(pair.agrees(&both) && pair.agrees(&either));
                // `NOT` of a comparison that can be NULL is left to DataFusion.
                let negated = not(cmp(&ca, op, &cb)).unwrap();
                assert_eq!(pair.agrees(&negated), !pair.int.days, "{negated}");
            }
        }
    }

    /// A literal of another type than the column's values, or a column of another kind, is
    /// left to DataFusion; so is a comparison that is not one of the six.
    #[test]
    fn other_types_are_not_compared_raw() {
        let int = Int {
            width: 4,
            signed: true,
            big: false,
            days: false,
        };
        let schema = Schema::new(vec![
            Field::new("a", DataType::Int32, false),
            Field::new("b", DataType::Int32, false),
        ]);
        let a = col("a", &schema).unwrap();
        let compiles = |e: Arc<dyn PhysicalExpr>| {
            Raw::compile_with(&e, &|_| None, &|i| match i {
                0 => Some((0, int)),
                1 => Some((1, Int { width: 8, ..int })),
                _ => None,
            })
            .is_some()
        };
        let with = |op, v: ScalarValue| binary(a.clone(), op, lit(v), &schema).unwrap();
        assert!(compiles(with(Operator::Lt, ScalarValue::Int32(Some(3)))));
        assert!(!compiles(with(Operator::Lt, ScalarValue::Int64(Some(3)))));
        assert!(!compiles(with(Operator::Lt, ScalarValue::Int32(None))));
        assert!(!compiles(with(Operator::Plus, ScalarValue::Int32(Some(3)))));
        let b = col("b", &schema).unwrap();
        assert!(!compiles(
            binary(a.clone(), Operator::Eq, b, &schema).unwrap()
        ));
    }

    /// A day count past 32 bits has no Date32 value: no answer, so the scan decodes the
    /// column and reports it.
    #[test]
    fn a_day_count_past_date32_has_no_answer() {
        let days = Int {
            width: 8,
            signed: true,
            big: false,
            days: true,
        };
        let schema = Schema::new(vec![Field::new("a", DataType::Date32, true)]);
        let e = binary(
            col("a", &schema).unwrap(),
            Operator::Lt,
            lit(ScalarValue::Date32(Some(5))),
            &schema,
        )
        .unwrap();
        let raw = Raw::compile_with(&e, &|_| None, &|i| (i == 0).then_some((0, days))).unwrap();
        let bytes: Vec<u8> = [1i64, NAT, 1 << 40]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert!(raw.evaluate(3, &[Values::packed(&bytes, 8)]).is_none());
        let got = raw.evaluate(2, &[Values::packed(&bytes[..16], 8)]).unwrap();
        assert_eq!(got.iter().collect::<Vec<_>>(), [true, false]);
    }
}
