//! Calendar arithmetic: datetime64 counts as ISO 8601 text, as NumPy prints them, and time
//! units as NumPy spells them in a dtype.

use npy_serde::TimeUnit;

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i128) -> (i128, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A datetime64 count as ISO 8601 text, as NumPy prints it (`2024-01-31`,
/// `2024-01-31T12:00:00.500`); `None` for the generic unit.
pub fn datetime_text(count: i64, unit: TimeUnit, mult: u32) -> Option<String> {
    let n = count as i128 * mult as i128;
    let date = |days: i128| {
        let (y, m, d) = civil_from_days(days);
        format!("{y:04}-{m:02}-{d:02}")
    };
    // (sub-second digits, units per second) for units below a day.
    let (per_sec, digits): (i128, usize) = match unit {
        TimeUnit::Generic => return None,
        TimeUnit::Year => return Some(format!("{:04}", 1970 + n)),
        TimeUnit::Month => {
            let y = 1970 + n.div_euclid(12);
            return Some(format!("{y:04}-{:02}", n.rem_euclid(12) + 1));
        }
        TimeUnit::Week => return Some(date(n * 7)),
        TimeUnit::Day => return Some(date(n)),
        TimeUnit::Hour => {
            return Some(format!(
                "{}T{:02}",
                date(n.div_euclid(24)),
                n.rem_euclid(24)
            ))
        }
        TimeUnit::Minute => {
            let m = n.rem_euclid(1440);
            return Some(format!(
                "{}T{:02}:{:02}",
                date(n.div_euclid(1440)),
                m / 60,
                m % 60
            ));
        }
        TimeUnit::Second => (1, 0),
        TimeUnit::Millisecond => (1_000, 3),
        TimeUnit::Microsecond => (1_000_000, 6),
        TimeUnit::Nanosecond => (1_000_000_000, 9),
        TimeUnit::Picosecond => (1_000_000_000_000, 12),
        TimeUnit::Femtosecond => (1_000_000_000_000_000, 15),
        TimeUnit::Attosecond => (1_000_000_000_000_000_000, 18),
    };
    let secs = n.div_euclid(per_sec);
    let frac = n.rem_euclid(per_sec);
    let s = secs.rem_euclid(86_400);
    let mut out = format!(
        "{}T{:02}:{:02}:{:02}",
        date(secs.div_euclid(86_400)),
        s / 3600,
        s / 60 % 60,
        s % 60
    );
    if digits > 0 {
        out.push_str(&format!(".{frac:0digits$}"));
    }
    Some(out)
}

/// The unit of a datetime/timedelta as NumPy spells it in a dtype: `D`, `25ms`, or empty.
pub fn unit_text(unit: TimeUnit, mult: u32) -> String {
    match (unit, mult) {
        (TimeUnit::Generic, _) => String::new(),
        (u, 1) => u.code().to_string(),
        (u, m) => format!("{m}{}", u.code()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datetimes_like_numpy() {
        // np.datetime64(0, 'D') etc.
        assert_eq!(datetime_text(0, TimeUnit::Day, 1).unwrap(), "1970-01-01");
        assert_eq!(
            datetime_text(19_753, TimeUnit::Day, 1).unwrap(),
            "2024-01-31"
        );
        assert_eq!(datetime_text(-1, TimeUnit::Day, 1).unwrap(), "1969-12-31");
        assert_eq!(
            datetime_text(54 * 12 + 1, TimeUnit::Month, 1).unwrap(),
            "2024-02"
        );
        assert_eq!(
            datetime_text(-1, TimeUnit::Millisecond, 1).unwrap(),
            "1969-12-31T23:59:59.999"
        );
        assert_eq!(
            datetime_text(3, TimeUnit::Second, 10).unwrap(),
            "1970-01-01T00:00:30"
        );
        assert_eq!(datetime_text(5, TimeUnit::Generic, 1), None);
    }
}
