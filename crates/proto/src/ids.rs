//! Job ids and request nonces, from a time and randomness the caller supplies.

use std::time::Duration;

use salt_compat::time::civil_from_days;

/// Formats a job id (§7.5): the UTC time `since_epoch` after 1970-01-01 as
/// `%Y%m%d%H%M%S%f`, 20 decimal digits (years past 9999 give more digits, which
/// Python could not produce).
pub fn format_jid(since_epoch: Duration) -> String {
    let micros = since_epoch.as_micros();
    format_micros(u64::try_from(micros).unwrap_or(u64::MAX))
}

fn format_micros(micros: u64) -> String {
    let secs = micros / 1_000_000;
    let frac = micros % 1_000_000;
    let days = secs / 86_400;
    let sod = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}{frac:06}",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

/// Generates job ids like Salt's `gen_jid`, strictly increasing: a time not after the
/// previous one is bumped by 1 µs (so two jobs in one microsecond never share a jid).
/// With `unique_jid` (a pid given) `_<pid>` is appended.
#[derive(Clone, Debug, Default)]
pub struct JidGenerator {
    last_micros: Option<u64>,
}

impl JidGenerator {
    /// A generator that has issued nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next jid for wall-clock time `since_epoch` (UTC, since the Unix epoch).
    /// `unique_pid: Some(pid)` is Salt's `unique_jid: True` (`_pid` suffix).
    pub fn next(&mut self, since_epoch: Duration, unique_pid: Option<u32>) -> String {
        let now = u64::try_from(since_epoch.as_micros()).unwrap_or(u64::MAX);
        let micros = match self.last_micros {
            Some(last) if last >= now => last.saturating_add(1),
            _ => now,
        };
        self.last_micros = Some(micros);
        match unique_pid {
            Some(pid) => format!("{}_{pid}", format_micros(micros)),
            None => format_micros(micros),
        }
    }
}

/// Salt's `is_jid`: 20 characters, or more with `_` at index 20, whose first 20
/// characters parse as an integer.
pub fn is_jid(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 20 && (b.len() <= 21 || b.get(20) != Some(&b'_')) {
        return false;
    }
    b.get(..20)
        .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
}

/// A request nonce as Salt makes them: `uuid.uuid4().hex` (32 lowercase hex
/// characters, version and variant bits set) from 16 random bytes.
pub fn nonce_from_bytes(random: [u8; 16]) -> String {
    uuid::Builder::from_random_bytes(random)
        .into_uuid()
        .simple()
        .to_string()
}

/// A fresh request nonce drawn from `rng` (use a CSPRNG such as `rand::rngs::OsRng`).
pub fn gen_nonce<R: rand::RngCore + ?Sized>(rng: &mut R) -> String {
    let mut b = [0u8; 16];
    rng.fill_bytes(&mut b);
    nonce_from_bytes(b)
}

/// Whether `s` has the shape of a Salt nonce: exactly 32 lowercase hex characters.
pub fn is_nonce(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jid_format_matches_python() {
        // datetime(2025, 11, 22, 1, 23, 45, 678901) UTC.
        let t = Duration::from_secs(1_763_774_625) + Duration::from_micros(678_901);
        assert_eq!(format_jid(t), "20251122012345678901");
        assert_eq!(format_jid(Duration::ZERO), "19700101000000000000");
        // Leap day.
        assert_eq!(
            format_jid(Duration::from_secs(951_782_400)),
            "20000229000000000000"
        );
        assert!(is_jid(&format_jid(t)));
    }

    #[test]
    fn unique_jids_increase() {
        let mut g = JidGenerator::new();
        let t = Duration::from_secs(1_763_774_625);
        let a = g.next(t, Some(42));
        let b = g.next(t, Some(42));
        let c = g.next(t - Duration::from_secs(5), Some(42));
        assert_eq!(a, "20251122012345000000_42");
        assert_eq!(b, "20251122012345000001_42");
        assert_eq!(c, "20251122012345000002_42");
        assert!(is_jid(&c));
        assert_eq!(g.next(t, None), "20251122012345000003");
        let mut g = JidGenerator::new();
        assert_eq!(g.next(t, None), "20251122012345000000");
    }

    #[test]
    fn is_jid_rules() {
        assert!(is_jid("20251122012345678901"));
        assert!(is_jid("20251122012345678901_1"));
        assert!(!is_jid("20251122012345678901_"));
        assert!(!is_jid("2025112201234567890x"));
        assert!(!is_jid("req"));
    }

    #[test]
    fn nonce_is_uuid4_hex() {
        let n = nonce_from_bytes([0xff; 16]);
        assert_eq!(n, "ffffffffffff4fffbfffffffffffffff");
        assert!(is_nonce(&n));
        let mut rng = rand::rngs::mock::StepRng::new(1, 1);
        let g = gen_nonce(&mut rng);
        assert!(is_nonce(&g));
        assert_eq!(g.as_bytes()[12], b'4');
        assert!(!is_nonce("ABCDEF0123456789abcdef0123456789"));
    }
}
