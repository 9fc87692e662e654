//! Calendar arithmetic as Python's `time`/`datetime` do it, in UTC.

/// Days since 1970-01-01 to a proleptic Gregorian `(year, month, day)` (Howard Hinnant's
/// `civil_from_days`, for non-negative day counts).
pub fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// Python `time.asctime(time.gmtime(unix))`: `Sun Nov 22 02:50:41 2026`.
pub fn asctime(unix: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix / 86_400;
    let rem = unix % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let (y, mo, d) = civil_from_days(days);
    let wd = DAYS[(days % 7) as usize];
    let mon = MONTHS[((mo + 11) % 12) as usize];
    format!("{wd} {mon} {d:>2} {h:02}:{m:02}:{s:02} {y}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(2_932_896), (9999, 12, 31));
    }

    #[test]
    fn asctime_like_python() {
        // python: time.asctime(time.gmtime(0)) == 'Thu Jan  1 00:00:00 1970'
        assert_eq!(asctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(asctime(1_795_230_641), "Sat Nov 21 03:10:41 2026");
        assert_eq!(asctime(951_782_400), "Tue Feb 29 00:00:00 2000");
    }
}

/// The `_stamp` of an event as Salt 3008 writes it,
/// `datetime.datetime.now(datetime.timezone.utc).isoformat()`: `2026-11-27T12:00:00.123456+00:00`
/// (Python leaves out `.ffffff` when the microseconds are zero). Salt 3006/3007 wrote a naive
/// `utcnow().isoformat()` (no offset); no Salt tool of any version parses it.
pub fn event_stamp(unix: u64, micros: u32) -> String {
    let (y, mo, d) = civil_from_days(unix / 86_400);
    let rem = unix % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let frac = if micros == 0 {
        String::new()
    } else {
        format!(".{:06}", micros % 1_000_000)
    };
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}{frac}+00:00")
}

/// [`event_stamp`] of the current time.
pub fn event_stamp_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    event_stamp(now.as_secs(), now.subsec_micros())
}

#[cfg(test)]
mod stamp_tests {
    use super::*;

    #[test]
    fn event_stamp_is_pythons_aware_isoformat() {
        // 2026-11-27T12:00:00 UTC
        let t = 1_795_780_800;
        assert_eq!(event_stamp(t, 123_456), "2026-11-27T12:00:00.123456+00:00");
        assert_eq!(event_stamp(t, 0), "2026-11-27T12:00:00+00:00");
        assert_eq!(event_stamp(t + 61, 1), "2026-11-27T12:01:01.000001+00:00");
    }
}
