//! `TryFrom` between [`DateTime64`]/[`TimeDelta64`] and chrono's `NaiveDate`, `NaiveDateTime`,
//! `DateTime<Utc>` and `TimeDelta` (feature `chrono`). NaT, values outside the other type's
//! range and values that are not a whole number of the target unit are errors.

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, TimeDelta, Utc};

use super::{from_nanos, to_nanos, DateTime64, FixedUnit, TimeDelta64, D};
use crate::error::{Error, Result};

/// Days from 0001-01-01 (chrono's day 1 of the common era) to 1970-01-01.
const EPOCH_DAYS_FROM_CE: i64 = 719_163;

/// `M8[D]` as a calendar date.
///
/// ```
/// use chrono::NaiveDate;
/// use npy_serde::datetime::{DateTime64, D};
///
/// let day = DateTime64::<D>::new(19_782);
/// let date = NaiveDate::try_from(day)?;
/// assert_eq!(date, NaiveDate::from_ymd_opt(2024, 2, 29).unwrap());
/// assert_eq!(DateTime64::<D>::try_from(date)?, day);
/// assert!(NaiveDate::try_from(DateTime64::<D>::NAT).is_err());
/// assert!(NaiveDate::try_from(DateTime64::<D>::new(i64::MAX)).is_err(), "out of range");
/// # Ok::<(), npy_serde::Error>(())
/// ```
impl TryFrom<DateTime64<D>> for NaiveDate {
    type Error = Error;
    fn try_from(t: DateTime64<D>) -> Result<NaiveDate> {
        if t.is_nat() {
            return Err(Error::invalid_value(
                "NaT (datetime64[D]) has no chrono::NaiveDate",
            ));
        }
        t.count()
            .checked_add(EPOCH_DAYS_FROM_CE)
            .and_then(|d| i32::try_from(d).ok())
            .and_then(NaiveDate::from_num_days_from_ce_opt)
            .ok_or_else(|| {
                Error::invalid_value(format!(
                    "{} days since 1970-01-01 is out of chrono::NaiveDate's range",
                    t.count()
                ))
            })
    }
}

impl TryFrom<NaiveDate> for DateTime64<D> {
    type Error = Error;
    /// Always succeeds (every `NaiveDate` is a day count far inside `i64`); `TryFrom` for
    /// symmetry with the other conversions.
    fn try_from(d: NaiveDate) -> Result<DateTime64<D>> {
        Ok(DateTime64::new(
            i64::from(d.num_days_from_ce()) - EPOCH_DAYS_FROM_CE,
        ))
    }
}

/// `M8[unit]` (a unit of fixed length: `W` down to `ns`) as a UTC instant.
///
/// ```
/// use chrono::{DateTime, Utc};
/// use npy_serde::datetime::{DateTime64, Ns, S};
///
/// let t = DateTime64::<Ns>::new(1_700_000_000_123_456_789);
/// let utc = DateTime::<Utc>::try_from(t)?;
/// assert_eq!(utc.to_rfc3339(), "2023-11-14T22:13:20.123456789+00:00");
/// assert_eq!(DateTime64::<Ns>::try_from(utc)?, t);
/// // Seconds cannot hold the nanoseconds: an error, not a truncation.
/// assert!(DateTime64::<S>::try_from(utc).is_err());
/// # Ok::<(), npy_serde::Error>(())
/// ```
impl<U: FixedUnit> TryFrom<DateTime64<U>> for DateTime<Utc> {
    type Error = Error;
    fn try_from(t: DateTime64<U>) -> Result<DateTime<Utc>> {
        let ns = to_nanos::<U>(t.count(), false, "chrono::DateTime<Utc>")?;
        let (secs, nanos) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
        i64::try_from(secs)
            .ok()
            .and_then(|s| DateTime::from_timestamp(s, nanos as u32))
            .ok_or_else(|| {
                Error::invalid_value(format!("{t:?} is out of chrono::DateTime<Utc>'s range"))
            })
    }
}

impl<U: FixedUnit> TryFrom<DateTime<Utc>> for DateTime64<U> {
    type Error = Error;
    fn try_from(t: DateTime<Utc>) -> Result<DateTime64<U>> {
        let ns = i128::from(t.timestamp()) * 1_000_000_000 + i128::from(t.timestamp_subsec_nanos());
        from_nanos::<U>(ns, false, &format!("chrono::DateTime {t}")).map(DateTime64::new)
    }
}

/// `M8[unit]` as a date and time without a time zone (NumPy's datetimes have none).
///
/// ```
/// use chrono::NaiveDateTime;
/// use npy_serde::datetime::{DateTime64, Ms};
///
/// let t = DateTime64::<Ms>::new(-1);
/// let naive = NaiveDateTime::try_from(t)?;
/// assert_eq!(naive.to_string(), "1969-12-31 23:59:59.999");
/// assert_eq!(DateTime64::<Ms>::try_from(naive)?, t);
/// # Ok::<(), npy_serde::Error>(())
/// ```
impl<U: FixedUnit> TryFrom<DateTime64<U>> for NaiveDateTime {
    type Error = Error;
    fn try_from(t: DateTime64<U>) -> Result<NaiveDateTime> {
        DateTime::<Utc>::try_from(t).map(|d| d.naive_utc())
    }
}

impl<U: FixedUnit> TryFrom<NaiveDateTime> for DateTime64<U> {
    type Error = Error;
    fn try_from(t: NaiveDateTime) -> Result<DateTime64<U>> {
        DateTime64::try_from(t.and_utc())
    }
}

/// `m8[unit]` as a duration.
///
/// ```
/// use chrono::TimeDelta;
/// use npy_serde::datetime::{TimeDelta64, Us};
///
/// let d = TimeDelta64::<Us>::new(-1_500_000);
/// let td = TimeDelta::try_from(d)?;
/// assert_eq!(td, TimeDelta::milliseconds(-1_500));
/// assert_eq!(TimeDelta64::<Us>::try_from(td)?, d);
/// assert!(TimeDelta::try_from(TimeDelta64::<Us>::NAT).is_err());
/// # Ok::<(), npy_serde::Error>(())
/// ```
impl<U: FixedUnit> TryFrom<TimeDelta64<U>> for TimeDelta {
    type Error = Error;
    fn try_from(t: TimeDelta64<U>) -> Result<TimeDelta> {
        let ns = to_nanos::<U>(t.count(), true, "chrono::TimeDelta")?;
        let (secs, nanos) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
        i64::try_from(secs)
            .ok()
            .and_then(|s| TimeDelta::new(s, nanos as u32))
            .ok_or_else(|| {
                Error::invalid_value(format!("{t:?} is out of chrono::TimeDelta's range"))
            })
    }
}

impl<U: FixedUnit> TryFrom<TimeDelta> for TimeDelta64<U> {
    type Error = Error;
    fn try_from(t: TimeDelta) -> Result<TimeDelta64<U>> {
        let ns = i128::from(t.num_seconds()) * 1_000_000_000 + i128::from(t.subsec_nanos());
        from_nanos::<U>(ns, true, &format!("chrono::TimeDelta {t}")).map(TimeDelta64::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datetime::{Ns, S, W};

    #[test]
    fn edges() {
        let min = DateTime::<Utc>::MIN_UTC;
        assert!(
            DateTime64::<Ns>::try_from(min).is_err(),
            "ns cannot reach year -262143"
        );
        assert_eq!(
            DateTime::<Utc>::try_from(DateTime64::<S>::try_from(min).unwrap()).unwrap(),
            min
        );
        assert!(DateTime::<Utc>::try_from(DateTime64::<S>::new(i64::MAX)).is_err());
        assert!(DateTime::<Utc>::try_from(DateTime64::<W>::new(i64::MAX)).is_err());
        let week = DateTime::<Utc>::try_from(DateTime64::<W>::new(1)).unwrap();
        assert_eq!(week.to_rfc3339(), "1970-01-08T00:00:00+00:00");
        assert!(TimeDelta::try_from(TimeDelta64::<S>::new(i64::MAX)).is_err());
        let max_ns = TimeDelta::try_from(TimeDelta64::<Ns>::new(i64::MAX)).unwrap();
        assert_eq!(
            TimeDelta64::<Ns>::try_from(max_ns).unwrap().count(),
            i64::MAX
        );
        assert!(TimeDelta64::<Ns>::try_from(max_ns + TimeDelta::nanoseconds(1)).is_err());
        let min_ns = TimeDelta::try_from(TimeDelta64::<Ns>::new(i64::MIN + 1)).unwrap();
        assert!(
            TimeDelta64::<Ns>::try_from(min_ns - TimeDelta::nanoseconds(1)).is_err(),
            "i64::MIN nanoseconds is NaT, not a duration"
        );
        assert_eq!(
            DateTime64::<D>::try_from(NaiveDate::MIN).unwrap().count(),
            i64::from(NaiveDate::MIN.num_days_from_ce()) - EPOCH_DAYS_FROM_CE
        );
        assert!(NaiveDate::try_from(DateTime64::<D>::new(i64::MIN + 1)).is_err());
    }
}
