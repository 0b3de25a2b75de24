//! [`StatsCollector`]: a writer's statistics of the values it writes, batch after batch, made
//! into a [`RecordedStats`] when the table is finished (a column table's writer, and
//! [`NpyBatchWriter::write_collecting`](crate::NpyBatchWriter::write_collecting) for a row file).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use std::io::{Seek, Write};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, Float32Array, Float64Array, RecordBatch};
use arrow_schema::{DataType, TimeUnit};

use super::{ColumnStats, RecordedStats, MAX_VALUE};
use crate::writer::NpyBatchWriter;

/// A least or greatest value seen.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
enum Value {
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
    Str(String),
}

/// What is known of one column so far.
#[derive(Debug)]
struct Column {
    name: String,
    /// The type of its first batch; `None` before it.
    data_type: Option<DataType>,
    /// False once a batch had a type with no recorded values, or another type.
    usable: bool,
    nulls: u64,
    range: Option<(Value, Value)>,
    distinct: Sketch,
}

/// The statistics of the columns of a table being written: each column's nulls and least and
/// greatest values (NaN left out of a float column's), over the arrays as they are written.
/// A column of a type with no text for its values (see the
/// [module docs](super#the-statistics-record-stats-version-1)) gets no record.
///
/// ```
/// # use std::sync::Arc;
/// # use arrow_array::{ArrayRef, Int64Array};
/// use npy_arrow::order::StatsCollector;
/// let mut stats = StatsCollector::new(["k".to_string()]);
/// let k: ArrayRef = Arc::new(Int64Array::from(vec![Some(3), None, Some(1)]));
/// stats.add(&[k], 3);
/// assert_eq!(
///     stats.finish().to_string(),
///     r#"npy-serde/stats1:rows=3;"k","Int64",1,2,"1","3""#
/// );
/// ```
#[derive(Debug)]
pub struct StatsCollector {
    columns: Vec<Column>,
    rows: u64,
}

impl StatsCollector {
    /// A collector of the columns `names`, in this order.
    pub fn new(names: impl IntoIterator<Item = String>) -> StatsCollector {
        let columns = names
            .into_iter()
            .map(|name| Column {
                name,
                data_type: None,
                usable: true,
                nulls: 0,
                range: None,
                distinct: Sketch::default(),
            })
            .collect();
        StatsCollector { columns, rows: 0 }
    }

    /// Adds the rows of `arrays`, one per column (in the order of [`new`](Self::new)), all of
    /// `rows` rows.
    pub fn add(&mut self, arrays: &[ArrayRef], rows: usize) {
        self.rows += rows as u64;
        for (c, a) in self.columns.iter_mut().zip(arrays) {
            c.add(a);
        }
    }

    /// Adds the rows of the named `columns`, all of `rows` rows: each of the collector's
    /// columns takes the array of its name; one that has none gets no record.
    pub fn add_named<'a>(
        &mut self,
        columns: impl IntoIterator<Item = (&'a str, &'a ArrayRef)>,
        rows: usize,
    ) {
        let given: Vec<(&str, &ArrayRef)> = columns.into_iter().collect();
        self.rows += rows as u64;
        for c in &mut self.columns {
            match given.iter().find(|(name, _)| *name == c.name) {
                Some((_, a)) => c.add(a),
                None => c.usable = false,
            }
        }
    }

    /// The record of what was seen.
    pub fn finish(self) -> RecordedStats {
        let columns = self
            .columns
            .into_iter()
            .filter_map(|c| {
                let data_type = c.data_type.filter(|_| c.usable)?;
                let values = self.rows.saturating_sub(c.nulls);
                let mut stats = ColumnStats::new(c.name, data_type.to_string())
                    .with_nulls(c.nulls.min(self.rows))
                    .with_distinct(c.distinct.estimate().min(values));
                if let Some((min, max)) = c.range {
                    let (min, max) = (text(&min, &data_type), text(&max, &data_type));
                    if min.len() <= MAX_VALUE && max.len() <= MAX_VALUE {
                        stats = stats.with_range(min, max);
                    }
                }
                Some(stats)
            })
            .collect();
        RecordedStats::new(self.rows, columns)
    }
}

impl<W: Write + Seek> NpyBatchWriter<W> {
    /// [`write`](Self::write), adding the values as a reader of the file gets them back (the
    /// null and decimal policies applied, a float's null NaN) to `stats`, column by name: the
    /// statistics `npy convert` records beside a `.npy` file, as a column table's writer
    /// records them with the table. An object array's strings are not collected (its columns
    /// then get no record).
    pub fn write_collecting(
        &mut self,
        batch: &RecordBatch,
        stats: &mut StatsCollector,
    ) -> npy_serde::error::Result<()> {
        let Some(ready) = self.write_ready(batch)? else {
            // An object array's rows (none of its columns recorded), or no rows.
            if batch.num_rows() > 0 {
                stats.add_named([], batch.num_rows());
            }
            return Ok(());
        };
        let read: Vec<ArrayRef> = (ready.columns().iter().cloned()).map(as_read).collect();
        let names = ready
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str());
        stats.add_named(names.zip(&read), ready.num_rows());
        Ok(())
    }
}

impl Column {
    fn add(&mut self, a: &ArrayRef) {
        if !self.usable {
            return;
        }
        match &self.data_type {
            Some(t) if t != a.data_type() => {
                self.usable = false;
                return;
            }
            Some(_) => {}
            None => self.data_type = Some(a.data_type().clone()),
        }
        let Some(range) = range_of(a) else {
            self.usable = false;
            return;
        };
        self.nulls += a.logical_null_count() as u64;
        self.distinct.add(a);
        let Some((lo, hi)) = range else { return };
        self.range = Some(match self.range.take() {
            None => (lo, hi),
            Some((min, max)) => (
                if lo < min { lo } else { min },
                if hi > max { hi } else { max },
            ),
        });
    }
}

/// A HyperLogLog sketch of the distinct values of a column (nulls not counted): 2^12 registers
/// of one byte (made at the first value), a standard error of about 1.6%.
#[derive(Debug, Default)]
struct Sketch {
    registers: Vec<u8>,
}

/// The sketch's registers are indexed by a hash's first `BITS` bits.
const BITS: u32 = 12;

impl Sketch {
    /// Adds the values of `a` (a type `range_of` records).
    fn add(&mut self, a: &ArrayRef) {
        fn prim<T: ArrowPrimitiveType>(
            s: &mut Sketch,
            a: &ArrayRef,
            bits: impl Fn(T::Native) -> u64,
        ) {
            let p = a.as_primitive::<T>();
            if p.null_count() == 0 {
                p.values().iter().for_each(|&v| s.hash(bits(v)));
            } else {
                p.iter().flatten().for_each(|v| s.hash(bits(v)));
            }
        }
        fn strs<'a>(s: &mut Sketch, values: impl Iterator<Item = &'a str>) {
            values.for_each(|v| s.hash(bytes_hash(v.as_bytes())));
        }
        if self.registers.is_empty() {
            self.registers = vec![0; 1 << BITS];
        }
        macro_rules! ints {
            ($t:ty) => {
                prim::<$t>(self, a, |v| v as u64)
            };
        }
        match a.data_type() {
            DataType::Int8 => ints!(Int8Type),
            DataType::Int16 => ints!(Int16Type),
            DataType::Int32 => ints!(Int32Type),
            DataType::Date32 => ints!(Date32Type),
            DataType::UInt8 => ints!(UInt8Type),
            DataType::UInt16 => ints!(UInt16Type),
            DataType::UInt32 => ints!(UInt32Type),
            DataType::UInt64 => prim::<UInt64Type>(self, a, |v| v),
            DataType::Int64 => ints!(Int64Type),
            DataType::Date64 => ints!(Date64Type),
            DataType::Timestamp(TimeUnit::Second, _) => ints!(TimestampSecondType),
            DataType::Timestamp(TimeUnit::Millisecond, _) => ints!(TimestampMillisecondType),
            DataType::Timestamp(TimeUnit::Microsecond, _) => ints!(TimestampMicrosecondType),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => ints!(TimestampNanosecondType),
            DataType::Duration(TimeUnit::Second) => ints!(DurationSecondType),
            DataType::Duration(TimeUnit::Millisecond) => ints!(DurationMillisecondType),
            DataType::Duration(TimeUnit::Microsecond) => ints!(DurationMicrosecondType),
            DataType::Duration(TimeUnit::Nanosecond) => ints!(DurationNanosecondType),
            // -0.0 and 0.0 are one value; every NaN another.
            DataType::Float32 => prim::<Float32Type>(self, a, |v| f64::from(v + 0.0).to_bits()),
            DataType::Float64 => prim::<Float64Type>(self, a, |v| (v + 0.0).to_bits()),
            DataType::Boolean => a
                .as_boolean()
                .iter()
                .flatten()
                .for_each(|v| self.hash(v as u64)),
            DataType::Utf8 => strs(self, a.as_string::<i32>().iter().flatten()),
            DataType::LargeUtf8 => strs(self, a.as_string::<i64>().iter().flatten()),
            DataType::Utf8View => strs(self, a.as_string_view().iter().flatten()),
            _ => {}
        }
    }

    /// Adds a value whose bits (or bytes' hash) are `bits`.
    fn hash(&mut self, bits: u64) {
        let h = mix(bits);
        let index = (h >> (64 - BITS)) as usize;
        // The rank of the first 1 among the other bits (a sentinel bit ends the count).
        let rank = ((h << BITS) | (1 << (BITS - 1))).leading_zeros() as u8 + 1;
        let r = &mut self.registers[index];
        *r = (*r).max(rank);
    }

    /// The estimate of the number of distinct values added.
    fn estimate(&self) -> u64 {
        if self.registers.is_empty() {
            return 0;
        }
        let m = self.registers.len() as f64;
        let sum: f64 = self.registers.iter().map(|&r| (-f64::from(r)).exp2()).sum();
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        let estimate = if raw <= 2.5 * m && zeros > 0 {
            // Few values: linear counting of the empty registers.
            m * (m / zeros as f64).ln()
        } else {
            raw
        };
        estimate.round() as u64
    }
}

/// The 64-bit finalizer of SplitMix64: every input bit moves every output bit.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A hash of `bytes` (eight at a time), for [`mix`] to finish.
fn bytes_hash(bytes: &[u8]) -> u64 {
    let mut h = bytes.len() as u64;
    for chunk in bytes.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
    h
}

/// The least and greatest values of `a` (`Some(None)`: no value, all nulls or NaN), or `None`
/// for a type whose values are not recorded.
fn range_of(a: &ArrayRef) -> Option<Option<(Value, Value)>> {
    fn ints<T: ArrowPrimitiveType>(
        a: &ArrayRef,
        v: impl Fn(T::Native) -> Value,
    ) -> Option<(Value, Value)>
    where
        T::Native: Ord,
    {
        let p = a.as_primitive::<T>();
        let (lo, hi) = if p.null_count() == 0 {
            let values = p.values().iter().copied();
            (values.clone().min()?, values.max()?)
        } else {
            (p.iter().flatten().min()?, p.iter().flatten().max()?)
        };
        Some((v(lo), v(hi)))
    }
    fn floats<T: ArrowPrimitiveType>(
        a: &ArrayRef,
        f: impl Fn(T::Native) -> f64,
    ) -> Option<(Value, Value)> {
        let p = a.as_primitive::<T>();
        let mut range: Option<(f64, f64)> = None;
        for x in p.iter().flatten().map(f).filter(|x| !x.is_nan()) {
            range = Some(match range {
                None => (x, x),
                Some((lo, hi)) => (lo.min(x), hi.max(x)),
            });
        }
        range.map(|(lo, hi)| (Value::Float(lo), Value::Float(hi)))
    }
    fn strs<'a>(values: impl Iterator<Item = &'a str> + Clone) -> Option<(Value, Value)> {
        let lo = values.clone().min()?;
        let hi = values.max()?;
        Some((Value::Str(lo.to_string()), Value::Str(hi.to_string())))
    }
    let i = Value::Int;
    Some(match a.data_type() {
        DataType::Int8 => ints::<Int8Type>(a, |x| i(x.into())),
        DataType::Int16 => ints::<Int16Type>(a, |x| i(x.into())),
        DataType::Int32 => ints::<Int32Type>(a, |x| i(x.into())),
        DataType::Int64 => ints::<Int64Type>(a, i),
        DataType::UInt8 => ints::<UInt8Type>(a, |x| Value::UInt(x.into())),
        DataType::UInt16 => ints::<UInt16Type>(a, |x| Value::UInt(x.into())),
        DataType::UInt32 => ints::<UInt32Type>(a, |x| Value::UInt(x.into())),
        DataType::UInt64 => ints::<UInt64Type>(a, Value::UInt),
        DataType::Date32 => ints::<Date32Type>(a, |x| i(x.into())),
        DataType::Date64 => ints::<Date64Type>(a, i),
        DataType::Timestamp(TimeUnit::Second, _) => ints::<TimestampSecondType>(a, i),
        DataType::Timestamp(TimeUnit::Millisecond, _) => ints::<TimestampMillisecondType>(a, i),
        DataType::Timestamp(TimeUnit::Microsecond, _) => ints::<TimestampMicrosecondType>(a, i),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => ints::<TimestampNanosecondType>(a, i),
        DataType::Duration(TimeUnit::Second) => ints::<DurationSecondType>(a, i),
        DataType::Duration(TimeUnit::Millisecond) => ints::<DurationMillisecondType>(a, i),
        DataType::Duration(TimeUnit::Microsecond) => ints::<DurationMicrosecondType>(a, i),
        DataType::Duration(TimeUnit::Nanosecond) => ints::<DurationNanosecondType>(a, i),
        DataType::Float32 => floats::<Float32Type>(a, f64::from),
        DataType::Float64 => floats::<Float64Type>(a, |x| x),
        DataType::Boolean => {
            let b = a.as_boolean();
            let lo = b.iter().flatten().min();
            let hi = b.iter().flatten().max();
            lo.zip(hi)
                .map(|(lo, hi)| (Value::Bool(lo), Value::Bool(hi)))
        }
        DataType::Utf8 => strs(a.as_string::<i32>().iter().flatten()),
        DataType::LargeUtf8 => strs(a.as_string::<i64>().iter().flatten()),
        DataType::Utf8View => strs(a.as_string_view().iter().flatten()),
        _ => return None,
    })
}

/// The text of `v`, a value of a column of type `t`.
fn text(v: &Value, t: &DataType) -> String {
    match v {
        Value::Int(x) => x.to_string(),
        Value::UInt(x) => x.to_string(),
        // Rust writes the shortest text that reads back as the same value.
        Value::Float(x) if *t == DataType::Float32 => (*x as f32).to_string(),
        Value::Float(x) => x.to_string(),
        Value::Bool(x) => x.to_string(),
        Value::Str(x) => x.clone(),
    }
}

/// `ready` (a NumPy-ready column, as the batch writer encodes it) as a reader of the written
/// array gets it back: a float's null is written as NaN, so it is NaN, not a null. Every other
/// column is as it is (a datetime's null is `NaT`, which reads back as a null; the null
/// policies `fill` and `nan` already replaced the others' nulls).
pub(crate) fn as_read(ready: ArrayRef) -> ArrayRef {
    if ready.null_count() == 0 {
        return ready;
    }
    match ready.data_type() {
        DataType::Float32 => {
            let p = ready.as_primitive::<Float32Type>();
            let values = p.iter().map(|v| v.unwrap_or(f32::NAN));
            Arc::new(Float32Array::from_iter_values(values))
        }
        DataType::Float64 => {
            let p = ready.as_primitive::<Float64Type>();
            let values = p.iter().map(|v| v.unwrap_or(f64::NAN));
            Arc::new(Float64Array::from_iter_values(values))
        }
        _ => ready,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        BooleanArray, Float32Array, Float64Array, Int32Array, StringArray,
        TimestampNanosecondArray, UInt64Array,
    };

    use super::*;

    #[test]
    fn a_float_null_reads_back_as_nan() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![Some(1.0), None]));
        let read = as_read(a);
        assert_eq!(read.null_count(), 0);
        let p = read.as_primitive::<Float64Type>();
        assert_eq!(p.value(0), 1.0);
        assert!(p.value(1).is_nan());
        let ints: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![Some(1), None]));
        assert_eq!(as_read(ints.clone()).null_count(), 1);
    }

    #[test]
    fn ranges_and_nulls_over_batches() {
        let names = ["i", "f", "s", "t", "u", "b", "f4"].map(String::from);
        let mut c = StatsCollector::new(names);
        let batch = |i: Vec<Option<i32>>, f: Vec<f64>, s: Vec<Option<&str>>| -> Vec<ArrayRef> {
            let n = i.len();
            vec![
                Arc::new(Int32Array::from(i)),
                Arc::new(Float64Array::from(f)),
                Arc::new(StringArray::from(s)),
                Arc::new(TimestampNanosecondArray::from(vec![None; n]).with_timezone("UTC")),
                Arc::new(UInt64Array::from(vec![u64::MAX; n])),
                Arc::new(BooleanArray::from(vec![true; n])),
                Arc::new(Float32Array::from(vec![0.1f32; n])),
            ]
        };
        c.add(
            &batch(
                vec![Some(3), None],
                vec![f64::NAN, 2.5],
                vec![Some("b"), None],
            ),
            2,
        );
        c.add(
            &batch(
                vec![Some(-7), Some(1)],
                vec![-0.5, f64::NAN],
                vec![Some("a\"\n"), Some("c")],
            ),
            2,
        );
        // Another type for `u` in a later batch: no record of it.
        let mut third = batch(vec![Some(0)], vec![1.0], vec![Some("b")]);
        third[4] = Arc::new(Int32Array::from(vec![1]));
        c.add(&third, 1);
        let stats = c.finish();
        assert_eq!(stats.rows(), 5);
        let want = [
            (ColumnStats::new("i", "Int32")
                .with_nulls(1)
                .with_distinct(4))
            .with_range("-7", "3"),
            (ColumnStats::new("f", "Float64")
                .with_nulls(0)
                .with_distinct(4))
            .with_range("-0.5", "2.5"),
            (ColumnStats::new("s", "Utf8").with_nulls(1).with_distinct(3)).with_range("a\"\n", "c"),
            ColumnStats::new("t", "Timestamp(ns, \"UTC\")")
                .with_nulls(5)
                .with_distinct(0),
            (ColumnStats::new("b", "Boolean")
                .with_nulls(0)
                .with_distinct(1))
            .with_range("true", "true"),
            (ColumnStats::new("f4", "Float32")
                .with_nulls(0)
                .with_distinct(1))
            .with_range("0.1", "0.1"),
        ];
        assert_eq!(stats.columns(), want);
        assert_eq!(
            RecordedStats::parse(stats.to_string().as_bytes()),
            Some(stats)
        );
    }

    #[test]
    fn long_strings_and_other_types_are_left_out() {
        let long = "x".repeat(MAX_VALUE + 1);
        let mut c = StatsCollector::new(["s".to_string(), "l".to_string()]);
        let list = arrow_array::FixedSizeListArray::from_iter_primitive::<Int32Type, _, _>(
            [Some(vec![Some(1)])],
            1,
        );
        c.add(
            &[
                Arc::new(StringArray::from(vec![long.as_str()])),
                Arc::new(list),
            ],
            1,
        );
        let stats = c.finish();
        let want = ColumnStats::new("s", "Utf8").with_nulls(0).with_distinct(1);
        assert_eq!(stats.columns(), [want]);
    }

    #[test]
    fn distinct_values_are_estimated_within_a_few_percent() {
        for n in [10u64, 1000, 100_000] {
            let mut c = StatsCollector::new(["k".to_string(), "s".to_string()]);
            // Each value four times, over batches.
            for chunk in (0..4 * n).collect::<Vec<_>>().chunks(4096) {
                let k: Vec<i64> = chunk.iter().map(|&i| (i % n) as i64 * 7).collect();
                let s: Vec<String> = k.iter().map(|v| format!("value {v}")).collect();
                c.add(
                    &[
                        Arc::new(arrow_array::Int64Array::from(k)),
                        Arc::new(StringArray::from(s)),
                    ],
                    chunk.len(),
                );
            }
            for col in c.finish().columns() {
                let d = col.distinct().unwrap() as f64;
                assert!((d / n as f64 - 1.0).abs() < 0.05, "{n}: {col:?}");
            }
        }
    }
}
