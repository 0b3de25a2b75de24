use super::*;

#[test]
fn names_round_trip() {
    assert_eq!(
        time_of_name(Ns::DATETIME_NAME),
        Some((false, TimeUnit::Nanosecond))
    );
    assert_eq!(
        time_of_name(Mo::TIMEDELTA_NAME),
        Some((true, TimeUnit::Month))
    );
    assert_eq!(
        time_of_name(Min::DATETIME_NAME),
        Some((false, TimeUnit::Minute))
    );
    assert_eq!(time_of_name("f16"), None);
    assert_eq!(time_of_name("npy_serde::datetime64[xx]"), None);
}
