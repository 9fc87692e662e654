//! Job ids as Salt formats them: UTC `%Y%m%d%H%M%S%f`, 20 decimal digits (§7.5).
//!
//! Two jobs started in the same microsecond would share a jid, so the generator keeps the
//! last one and moves forward by one microsecond when the clock has not advanced.

use std::sync::Mutex;

use chrono::{DateTime, Duration, Utc};

/// Hands out strictly increasing jids.
#[derive(Debug, Default)]
pub struct JidGenerator {
    last: Mutex<Option<DateTime<Utc>>>,
}

impl JidGenerator {
    /// A generator with no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next jid for `now` (normally `Utc::now()`).
    pub fn next_at(&self, now: DateTime<Utc>) -> String {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let t = match *last {
            Some(prev) if now <= prev => prev + Duration::microseconds(1),
            _ => now,
        };
        *last = Some(t);
        format_jid(t)
    }

    /// The next jid now.
    pub fn next(&self) -> String {
        self.next_at(Utc::now())
    }
}

/// Format a time as a jid.
pub fn format_jid(t: DateTime<Utc>) -> String {
    t.format("%Y%m%d%H%M%S%6f").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn format_is_twenty_digits_utc() {
        let t =
            Utc.with_ymd_and_hms(2025, 11, 22, 1, 23, 45).unwrap() + Duration::microseconds(678901);
        assert_eq!(format_jid(t), "20251122012345678901");
    }

    #[test]
    fn strictly_increasing() {
        let g = JidGenerator::new();
        let t = Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0).unwrap();
        let a = g.next_at(t);
        let b = g.next_at(t);
        let c = g.next_at(t - Duration::seconds(5));
        assert_eq!(a, "20250101000000000000");
        assert_eq!(b, "20250101000000000001");
        assert_eq!(c, "20250101000000000002");
        let d = g.next();
        assert_eq!(d.len(), 20);
        assert!(d.chars().all(|c| c.is_ascii_digit()));
    }
}
