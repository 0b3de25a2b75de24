//! `TryFrom` between [`DateTime64`]/[`TimeDelta64`] and jiff's `civil::Date`, `Timestamp` and
//! `SignedDuration` (feature `jiff`). NaT, values outside the other type's range and values
//! that are not a whole number of the target unit are errors.

use jiff::civil::Date;
use jiff::{SignedDuration, Timestamp};

use super::{from_nanos, to_nanos, DateTime64, FixedUnit, TimeDelta64, D};
use crate::error::{Error, Result};

/// Day 0 of `M8[D]`.
const EPOCH: Date = jiff::civil::date(1970, 1, 1);

/// `M8[D]` as a calendar date.
///
/// ```
/// use jiff::civil::date;
/// use npy_serde::datetime::{DateTime64, D};
///
/// let day = DateTime64::<D>::new(19_782);
/// assert_eq!(jiff::civil::Date::try_from(day)?, date(2024, 2, 29));
/// assert_eq!(DateTime64::<D>::try_from(date(1969, 12, 31))?.count(), -1);
/// assert!(jiff::civil::Date::try_from(DateTime64::<D>::NAT).is_err());
/// assert!(jiff::civil::Date::try_from(DateTime64::<D>::new(10_000_000)).is_err(), "after 9999");
/// # Ok::<(), npy_serde::Error>(())
/// ```
impl TryFrom<DateTime64<D>> for Date {
    type Error = Error;
    fn try_from(t: DateTime64<D>) -> Result<Date> {
        if t.is_nat() {
            return Err(Error::invalid_value(
                "NaT (datetime64[D]) has no jiff::civil::Date",
            ));
        }
        t.count()
            .checked_mul(86_400)
            .and_then(|secs| EPOCH.checked_add(SignedDuration::from_secs(secs)).ok())
            .ok_or_else(|| {
                Error::invalid_value(format!(
                    "{} days since 1970-01-01 is out of jiff::civil::Date's range",
                    t.count()
                ))
            })
    }
}

impl TryFrom<Date> for DateTime64<D> {
    type Error = Error;
    /// Always succeeds (every `Date` is a day count far inside `i64`); `TryFrom` for symmetry
    /// with the other conversions.
    fn try_from(d: Date) -> Result<DateTime64<D>> {
        Ok(DateTime64::new(d.duration_since(EPOCH).as_secs() / 86_400))
    }
}

/// `M8[unit]` (a unit of fixed length: `W` down to `ns`) as an instant.
///
/// ```
/// use jiff::Timestamp;
/// use npy_serde::datetime::{DateTime64, Ns, S};
///
/// let t = DateTime64::<Ns>::new(1_700_000_000_123_456_789);
/// let ts = Timestamp::try_from(t)?;
/// assert_eq!(ts.to_string(), "2023-11-14T22:13:20.123456789Z");
/// assert_eq!(DateTime64::<Ns>::try_from(ts)?, t);
/// assert!(DateTime64::<S>::try_from(ts).is_err(), "seconds cannot hold the nanoseconds");
/// # Ok::<(), npy_serde::Error>(())
/// ```
impl<U: FixedUnit> TryFrom<DateTime64<U>> for Timestamp {
    type Error = Error;
    fn try_from(t: DateTime64<U>) -> Result<Timestamp> {
        let ns = to_nanos::<U>(t.count(), false, "jiff::Timestamp")?;
        Timestamp::from_nanosecond(ns)
            .map_err(|_| Error::invalid_value(format!("{t:?} is out of jiff::Timestamp's range")))
    }
}

impl<U: FixedUnit> TryFrom<Timestamp> for DateTime64<U> {
    type Error = Error;
    fn try_from(t: Timestamp) -> Result<DateTime64<U>> {
        from_nanos::<U>(t.as_nanosecond(), false, &format!("jiff::Timestamp {t}"))
            .map(DateTime64::new)
    }
}

/// `m8[unit]` as a duration.
///
/// ```
/// use jiff::SignedDuration;
/// use npy_serde::datetime::{TimeDelta64, Ms};
///
/// let d = TimeDelta64::<Ms>::new(-1_500);
/// assert_eq!(SignedDuration::try_from(d)?, SignedDuration::from_millis(-1_500));
/// assert_eq!(TimeDelta64::<Ms>::try_from(SignedDuration::from_millis(-1_500))?, d);
/// assert!(SignedDuration::try_from(TimeDelta64::<Ms>::NAT).is_err());
/// # Ok::<(), npy_serde::Error>(())
/// ```
impl<U: FixedUnit> TryFrom<TimeDelta64<U>> for SignedDuration {
    type Error = Error;
    fn try_from(t: TimeDelta64<U>) -> Result<SignedDuration> {
        let ns = to_nanos::<U>(t.count(), true, "jiff::SignedDuration")?;
        SignedDuration::try_from_nanos_i128(ns).ok_or_else(|| {
            Error::invalid_value(format!("{t:?} is out of jiff::SignedDuration's range"))
        })
    }
}

impl<U: FixedUnit> TryFrom<SignedDuration> for TimeDelta64<U> {
    type Error = Error;
    fn try_from(t: SignedDuration) -> Result<TimeDelta64<U>> {
        from_nanos::<U>(t.as_nanos(), true, &format!("jiff::SignedDuration {t:?}"))
            .map(TimeDelta64::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datetime::{Ns, S, W};

    #[test]
    fn edges() {
        assert!(Timestamp::try_from(DateTime64::<S>::new(i64::MAX)).is_err());
        assert!(Timestamp::try_from(DateTime64::<W>::new(-1)).is_ok());
        assert!(
            DateTime64::<Ns>::try_from(Timestamp::MIN).is_err(),
            "before 1677"
        );
        let min = DateTime64::<S>::try_from(Timestamp::MIN).unwrap();
        assert_eq!(Timestamp::try_from(min).unwrap(), Timestamp::MIN);
        assert_eq!(
            Date::try_from(DateTime64::<D>::try_from(Date::MIN).unwrap()).unwrap(),
            Date::MIN
        );
        assert_eq!(
            Date::try_from(DateTime64::<D>::try_from(Date::MAX).unwrap()).unwrap(),
            Date::MAX
        );
        assert!(Date::try_from(DateTime64::<D>::new(i64::MIN + 1)).is_err());
        assert!(SignedDuration::try_from(TimeDelta64::<W>::new(i64::MAX)).is_err());
        let max = SignedDuration::try_from(TimeDelta64::<Ns>::new(i64::MAX)).unwrap();
        assert_eq!(TimeDelta64::<Ns>::try_from(max).unwrap().count(), i64::MAX);
        assert!(TimeDelta64::<Ns>::try_from(SignedDuration::MAX).is_err());
        assert!(
            TimeDelta64::<Ns>::try_from(SignedDuration::from_nanos(i64::MIN)).is_err(),
            "NaT"
        );
    }
}
