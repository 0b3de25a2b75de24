//! Decimals both ways: to `<f8` (the nearest double) or `<i8` (the unscaled value), and back
//! to the decimal type (exactly: `round(x * 10^s)` for a double, checked against the
//! precision; a value that does not fit is an error naming the column and row, never a null).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, DecimalType,
};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, PrimitiveArray};
use arrow_buffer::i256;
use arrow_schema::DataType;

use super::policy::DecimalPolicy;
use npy_serde::error::{Error, Result};

/// Exact powers of ten as doubles (10^22 is the largest exact one).
const P10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The precision and scale of a decimal type.
pub(crate) fn decimal_of(dt: &DataType) -> Option<(u8, i8)> {
    match dt {
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => Some((*p, *s)),
        _ => None,
    }
}

/// Whether every value of a `(p, s)` decimal is exact in `<f8` and comes back by rounding.
/// (A scale past 22, which Arrow allows above the precision, is not: 10^s is then no exact
/// double.)
pub(crate) fn fits_f8(p: u8, s: i8) -> bool {
    let digits = if s < 0 { p as i32 - s as i32 } else { p as i32 };
    digits <= 15 && s <= 22
}

/// The unscaled value of one decimal width.
trait Unscaled: Copy + std::fmt::Display {
    fn to_i128(self) -> Option<i128>;
    fn from_f64(v: f64) -> Option<Self>;
    fn from_i64(v: i64) -> Option<Self>;
}

macro_rules! small {
    ($t:ty) => {
        impl Unscaled for $t {
            fn to_i128(self) -> Option<i128> {
                Some(self as i128)
            }
            fn from_f64(v: f64) -> Option<Self> {
                // `as` saturates; a saturated value fails the precision check after.
                (v.is_finite() && v >= <$t>::MIN as f64 && v <= <$t>::MAX as f64).then(|| v as $t)
            }
            fn from_i64(v: i64) -> Option<Self> {
                <$t>::try_from(v).ok()
            }
        }
    };
}
small!(i32);
small!(i64);
small!(i128);

impl Unscaled for i256 {
    fn to_i128(self) -> Option<i128> {
        i256::to_i128(self)
    }
    fn from_f64(v: f64) -> Option<Self> {
        i256::from_f64(v)
    }
    fn from_i64(v: i64) -> Option<Self> {
        Some(i256::from_i128(v as i128))
    }
}

/// The nearest double of `u * 10^-s`.
fn nearest<U: Unscaled>(u: U, s: i8) -> f64 {
    if let Some(v) = u.to_i128()
        && v.unsigned_abs() < 1 << 53
    {
        // Both operands exact: one IEEE operation rounds the quotient (product) to nearest.
        let x = v as f64;
        if (0..=22).contains(&s) {
            return x / P10[s as usize];
        }
        if (-22..0).contains(&s) {
            return x * P10[-(s as i32) as usize];
        }
    }
    // Correctly rounded by the parser.
    format!("{u}e{}", -(s as i32)).parse().unwrap_or(f64::NAN)
}

/// The refusal of a decimal too wide for `<f8` under `auto`.
pub(crate) fn too_wide(path: &str, dt: &DataType) -> Error {
    Error::write(format!(
        "column `{path}` is {dt}: wider than 15 digits, so <f8 cannot hold every value exactly; \
         choose the decimal policy f8 (the nearest double, lossy) or scaled (<i8 holding the \
         unscaled value, exact while it fits): BatchWriterBuilder::decimals_for(\"{path}\", ..) \
         or `--decimals {path}:f8` / `--decimals {path}:scaled`"
    ))
}

/// A decimal column as `<f8` or `<i8` per `policy` (nulls kept).
pub(crate) fn write(
    a: &ArrayRef,
    policy: DecimalPolicy,
    path: &str,
    first_row: u64,
) -> Result<ArrayRef> {
    let dt = a.data_type();
    let (p, s) = decimal_of(dt).expect("a decimal column");
    match policy {
        DecimalPolicy::Auto if !fits_f8(p, s) => Err(too_wide(path, dt)),
        DecimalPolicy::Auto | DecimalPolicy::F8 => Ok(match dt {
            DataType::Decimal32(..) => to_f8::<Decimal32Type>(a, s),
            DataType::Decimal64(..) => to_f8::<Decimal64Type>(a, s),
            DataType::Decimal128(..) => to_f8::<Decimal128Type>(a, s),
            _ => to_f8::<Decimal256Type>(a, s),
        }),
        DecimalPolicy::Scaled => match dt {
            DataType::Decimal32(..) => to_i8::<Decimal32Type>(a, path, first_row),
            DataType::Decimal64(..) => to_i8::<Decimal64Type>(a, path, first_row),
            DataType::Decimal128(..) => to_i8::<Decimal128Type>(a, path, first_row),
            _ => to_i8::<Decimal256Type>(a, path, first_row),
        },
    }
}

fn to_f8<T: DecimalType>(a: &ArrayRef, s: i8) -> ArrayRef
where
    T::Native: Unscaled,
{
    let d = a.as_primitive::<T>();
    let vals: Vec<f64> = d.values().iter().map(|&u| nearest(u, s)).collect();
    Arc::new(Float64Array::new(vals.into(), d.nulls().cloned()))
}

fn to_i8<T: DecimalType>(a: &ArrayRef, path: &str, first_row: u64) -> Result<ArrayRef>
where
    T::Native: Unscaled,
{
    let d = a.as_primitive::<T>();
    let mut vals = Vec::with_capacity(d.len());
    for (i, &u) in d.values().iter().enumerate() {
        let v = match u.to_i128().and_then(|v| i64::try_from(v).ok()) {
            Some(v) => v,
            None if d.is_null(i) => 0,
            None => {
                return Err(Error::write(format!(
                    "column `{path}`, row {}: the unscaled value {u} of {} does not fit <i8 \
                     (choose the decimal policy f8 for the nearest double, or leave the column \
                     out with exclude)",
                    first_row + i as u64,
                    a.data_type()
                )));
            }
        };
        vals.push(v);
    }
    Ok(Arc::new(Int64Array::new(vals.into(), d.nulls().cloned())))
}

/// A decimal column of type `to` from the doubles of `a` (`round(x * 10^s)`; NaN is a null,
/// as the `nan` policy writes one) or the unscaled integers of an `Int64` column.
pub(crate) fn read(a: &ArrayRef, to: &DataType, path: &str, first_row: u64) -> Result<ArrayRef> {
    let (p, s) = decimal_of(to).expect("a decimal type");
    match to {
        DataType::Decimal32(..) => back::<Decimal32Type>(a, p, s, path, first_row),
        DataType::Decimal64(..) => back::<Decimal64Type>(a, p, s, path, first_row),
        DataType::Decimal128(..) => back::<Decimal128Type>(a, p, s, path, first_row),
        _ => back::<Decimal256Type>(a, p, s, path, first_row),
    }
}

/// Whether a column of `from` can come back as the decimal `to`.
pub(crate) fn readable(from: &DataType) -> bool {
    matches!(from, DataType::Float64 | DataType::Int64)
}

fn back<T: DecimalType>(a: &ArrayRef, p: u8, s: i8, path: &str, first_row: u64) -> Result<ArrayRef>
where
    T::Native: Unscaled,
{
    let n = a.len();
    let mut vals = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    let bad = |i: usize, what: String| {
        Error::invalid_value(format!(
            "column `{path}`, row {}: {what} does not fit Decimal({p}, {s}), the type its title \
             names",
            first_row + i as u64
        ))
    };
    let mut push = |v: Option<T::Native>| {
        valid.push(v.is_some());
        vals.push(v.unwrap_or(T::Native::default()));
    };
    match a.data_type() {
        DataType::Float64 => {
            let f = a.as_primitive::<arrow_array::types::Float64Type>();
            if p <= 18 && (0..=22).contains(&s) {
                // The general loop below when a value does not fit: it names the value.
                if let Some(out) = back_fast::<T>(f, p, s) {
                    return out;
                }
            }
            for i in 0..n {
                let x = f.value(i);
                if f.is_null(i) || x.is_nan() {
                    push(None);
                    continue;
                }
                let r = if s >= 0 {
                    x * P10.get(s as usize).copied().unwrap_or(10f64.powi(s as i32))
                } else {
                    x / P10
                        .get(-(s as i32) as usize)
                        .copied()
                        .unwrap_or(10f64.powi(-(s as i32)))
                }
                .round();
                let u = T::Native::from_f64(r)
                    .filter(|&u| T::is_valid_decimal_precision(u, p))
                    .ok_or_else(|| bad(i, format!("{x}")))?;
                push(Some(u));
            }
        }
        _ => {
            let f = a.as_primitive::<arrow_array::types::Int64Type>();
            for i in 0..n {
                if f.is_null(i) {
                    push(None);
                    continue;
                }
                let x = f.value(i);
                let u = T::Native::from_i64(x)
                    .filter(|&u| T::is_valid_decimal_precision(u, p))
                    .ok_or_else(|| bad(i, format!("the unscaled value {x}")))?;
                push(Some(u));
            }
        }
    }
    let nulls = valid.iter().any(|v| !v).then(|| valid.into());
    let out = PrimitiveArray::<T>::new(vals.into(), nulls)
        .with_precision_and_scale(p, s)
        .map_err(super::arrow_err)?;
    Ok(Arc::new(out))
}

/// [`back`] for doubles into a decimal of at most 18 digits and a scale of 0 to 22: every
/// unscaled value then fits an `i64`, `round(x * 10^s)` is an integer below 10^18 < 2^63
/// where it fits, and rounding half away from zero (as `f64::round`) is done on the
/// truncated integer and the exact remainder (`y - trunc(y)` is exact below 2^53, and above
/// it `y` is an integer): no call of `round` and no 128-bit conversion a value (they were
/// a sixth of TPC-H Q6 over a row file). `None` when a value does not fit (the caller names
/// it); NaN and nulls are nulls.
fn back_fast<T: DecimalType>(
    f: &PrimitiveArray<arrow_array::types::Float64Type>,
    p: u8,
    s: i8,
) -> Option<Result<ArrayRef>>
where
    T::Native: Unscaled,
{
    let scale = P10[s as usize];
    // 10^p, exact as a double for p <= 22.
    let limit = P10[p as usize];
    let top = limit as i64;
    let mut fits = true;
    let vals: Vec<i64> = f
        .values()
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let y = x * scale;
            // Below 10^p <= 10^18 < 2^63 (NaN is not: a null, as is any value of a null).
            if y.is_nan() || y.abs() >= limit {
                fits &= y.is_nan() || f.is_null(i);
                return 0;
            }
            let t = y as i64;
            let rest = y - t as f64;
            let r = t + i64::from(rest >= 0.5) - i64::from(rest <= -0.5);
            // Rounded up to 10^p: past the precision.
            fits &= r.abs() < top || f.is_null(i);
            r
        })
        .collect();
    let nan = f.values().iter().any(|x| x.is_nan());
    if !fits {
        return None;
    }
    let nulls = match (f.nulls(), nan) {
        (nulls, false) => nulls.cloned(),
        (nulls, true) => {
            let valid = f
                .values()
                .iter()
                .enumerate()
                .map(|(i, x)| !x.is_nan() && nulls.is_none_or(|n| n.is_valid(i)));
            Some(valid.collect())
        }
    };
    let unscaled: Vec<T::Native> = vals
        .into_iter()
        .map(|v| T::Native::from_i64(v).unwrap_or_default())
        .collect();
    Some(
        PrimitiveArray::<T>::new(unscaled.into(), nulls)
            .with_precision_and_scale(p, s)
            .map(|a| Arc::new(a) as ArrayRef)
            .map_err(super::arrow_err),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Decimal128Array;

    /// The fast path agrees with `f64::round` of `x * 10^s` and the precision check, value by
    /// value: halves both ways, the edges of the precision, NaN and nulls.
    #[test]
    fn doubles_come_back_as_round_says() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.005,
            -0.005,
            0.015,
            2.675,
            -2.675,
            1.005,
            0.49999999999999994,
            9.995,
            99.994,
            99.995,
            -99.995,
            123.456,
            1e13,
            -1e13,
            4503599627370495.5,
            f64::NAN,
        ];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..2000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let half = (seed % 2_000_000) as f64 / 2.0 - 500_000.0;
            xs.push(half / 100.0);
            xs.push(f64::from_bits(seed >> 12 | 0x4000_0000_0000_0000) - 3.0);
        }
        for (p, s) in [(15u8, 2i8), (5, 2), (4, 0), (18, 2), (7, 7), (2, 0)] {
            for x in &xs {
                let a: ArrayRef = Arc::new(Float64Array::from(vec![Some(*x), None]));
                let got = read(&a, &DataType::Decimal128(p, s), "x", 0);
                let want = (*x * P10[s as usize]).round();
                let limit = P10[p as usize];
                match got {
                    _ if x.is_nan() => assert!(got.unwrap().is_null(0)),
                    Ok(d) => {
                        let d = d.as_primitive::<Decimal128Type>();
                        assert!(want.abs() < limit, "{x} ({p}, {s})");
                        assert_eq!(d.value(0), want as i128, "{x} ({p}, {s})");
                        assert!(d.is_valid(0) && d.is_null(1));
                    }
                    Err(e) => {
                        assert!(want.abs() >= limit, "{x} ({p}, {s}): {e}");
                        assert!(e.to_string().contains("row 0"), "{e}");
                    }
                }
            }
        }
        // A null's value is not looked at, however large.
        let a: ArrayRef = Arc::new(Float64Array::new(
            vec![1.5, 1e300].into(),
            Some(vec![true, false].into()),
        ));
        let d = read(&a, &DataType::Decimal64(5, 1), "x", 0).unwrap();
        assert_eq!(d.as_primitive::<Decimal64Type>().value(0), 15);
        assert!(d.is_null(1));
    }

    fn dec(vals: Vec<Option<i128>>, p: u8, s: i8) -> ArrayRef {
        Arc::new(
            Decimal128Array::from(vals)
                .with_precision_and_scale(p, s)
                .unwrap(),
        )
    }

    /// At the edge of exactness (p = 15) every value is the nearest double and comes back.
    #[test]
    fn p15_is_nearest_and_comes_back() {
        let edge = 999_999_999_999_999i128;
        let vals = vec![
            Some(edge),
            Some(-edge),
            Some(1),
            Some(123_456_789_012_345),
            None,
        ];
        for s in [0i8, 2, 7, 15] {
            let a = dec(vals.clone(), 15, s);
            let f = write(&a, DecimalPolicy::Auto, "x", 0).unwrap();
            let fv = f.as_primitive::<arrow_array::types::Float64Type>();
            for (i, v) in vals.iter().enumerate() {
                if let Some(v) = v {
                    let want: f64 = format!("{v}e{}", -s).parse().unwrap();
                    assert_eq!(fv.value(i), want, "{v}e-{s}");
                }
            }
            assert!(f.is_null(4));
            let back = read(&f, a.data_type(), "x", 0).unwrap();
            assert_eq!(&back, &a);
        }
    }

    #[test]
    fn negative_scale_and_width_limits() {
        let a = dec(vec![Some(12_345), Some(-7)], 10, -5);
        let f = write(&a, DecimalPolicy::Auto, "x", 0).unwrap();
        assert_eq!(
            f.as_primitive::<arrow_array::types::Float64Type>().value(0),
            1_234_500_000.0
        );
        assert_eq!(&read(&f, a.data_type(), "x", 0).unwrap(), &a);
        let wide = dec(vec![Some(1)], 11, -5);
        let e = write(&wide, DecimalPolicy::Auto, "price", 0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`price`") && e.contains("Decimal128(11, -5)"),
            "{e}"
        );
        assert!(e.contains("f8") && e.contains("scaled"), "{e}");
        let wide = dec(vec![Some(10i128.pow(37))], 38, 2);
        let e = write(&wide, DecimalPolicy::Auto, "p", 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Decimal128(38, 2)"), "{e}");
        let f = write(&wide, DecimalPolicy::F8, "p", 0).unwrap();
        assert_eq!(
            f.as_primitive::<arrow_array::types::Float64Type>().value(0),
            1e35
        );
        let e = write(&wide, DecimalPolicy::Scaled, "p", 10)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`p`, row 10") && e.contains("f8"), "{e}");
    }

    #[test]
    fn scaled_and_decimal256() {
        use arrow_array::Decimal256Array;
        let a: ArrayRef = Arc::new(
            Decimal256Array::from(vec![
                Some(i256::from_i128(-5)),
                None,
                Some(i256::from_i128(i64::MAX as i128)),
            ])
            .with_precision_and_scale(40, 3)
            .unwrap(),
        );
        let i = write(&a, DecimalPolicy::Scaled, "d", 0).unwrap();
        assert_eq!(
            i.as_primitive::<arrow_array::types::Int64Type>().value(2),
            i64::MAX
        );
        assert_eq!(&read(&i, a.data_type(), "d", 0).unwrap(), &a);
        let f = write(&a, DecimalPolicy::F8, "d", 0).unwrap();
        assert_eq!(
            f.as_primitive::<arrow_array::types::Float64Type>().value(0),
            -0.005
        );
    }

    /// A double that does not fit the precision is an error naming the column and row.
    #[test]
    fn a_value_too_wide_on_the_way_back_is_an_error() {
        let f: ArrayRef = Arc::new(Float64Array::from(vec![1.5, 1234.5]));
        let e = read(&f, &DataType::Decimal128(4, 1), "q", 100)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`q`, row 101") && e.contains("1234.5"), "{e}");
        let f: ArrayRef = Arc::new(Float64Array::from(vec![f64::INFINITY]));
        assert!(read(&f, &DataType::Decimal64(4, 1), "q", 0).is_err());
    }
}
