//! Job ids for the master: `salt_proto::JidGenerator` (the one jid formatter, §7.5: UTC
//! `%Y%m%d%H%M%S%f`, strictly increasing) behind a lock, fed by the system clock.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Hands out strictly increasing jids.
#[derive(Debug, Default)]
pub struct JidGenerator {
    inner: Mutex<salt_proto::JidGenerator>,
}

impl JidGenerator {
    /// A generator with no history.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next jid for the time `since_epoch` after the Unix epoch (UTC).
    pub fn next_at(&self, since_epoch: Duration) -> String {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.next(since_epoch, None)
    }

    /// The next jid now.
    pub fn next(&self) -> String {
        self.next_at(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        )
    }
}

/// A jid we accept as a directory name: Salt's 20 digits, optionally `_<pid>` or other
/// alphanumerics (no separators, no dots).
pub(crate) fn safe_jid(jid: &str) -> bool {
    !jid.is_empty()
        && jid.len() <= 64
        && jid
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictly_increasing() {
        let g = JidGenerator::new();
        let t = Duration::from_secs(1_735_689_600); // 2025-01-01T00:00:00Z
        let a = g.next_at(t);
        let b = g.next_at(t);
        let c = g.next_at(t - Duration::from_secs(5));
        assert_eq!(a, "20250101000000000000");
        assert_eq!(b, "20250101000000000001");
        assert_eq!(c, "20250101000000000002");
        let d = g.next();
        assert_eq!(d.len(), 20);
        assert!(d.chars().all(|c| c.is_ascii_digit()));
    }
}
