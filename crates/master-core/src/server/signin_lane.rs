//! Back-pressure for sign-in storms (issue 39 item 2): a sign-in (`_auth`, an RSA private
//! operation each) waits in a lane of its own behind the requests of the minions already
//! signed in (their returns, file and pillar requests), runs on all workers but one, and is
//! dropped unanswered when it waited longer than a Salt minion waits for its answer, or when
//! more than [`CAPACITY`] wait (the oldest goes). The minion's own timeout and retry bring
//! it back; the master never works for a sign-in nobody waits for any more, so a storm of
//! several times its capacity keeps it signing in at its peak rate instead of collapsing,
//! and a `salt '*' test.ping` to the minions it holds still returns.
//!
//! Every answer a Salt minion accepts to `_auth` is signed (even "full"), so answering the
//! overflow would cost what serving it does: silence is Salt's own answer when its request
//! queue overflows (libzmq drops at the high-water mark).

use std::sync::Arc;
use std::time::Duration;

use salt_transport::{Deferrable, Dropped};

use crate::shared::Shared;

/// At most this many sign-ins wait (about 1 KiB each: ~16 MiB at most). A bound on memory
/// only: the age bound drops what waited too long; this many are ~10 s of sign-ins at this
/// host's peak (1,400/s), so a storm is not cut short by count (4,096 cut a storm of 7,045
/// at 5x the peak: 828 waited out their timeout, goodput 76% of the peak).
pub(crate) const CAPACITY: usize = 16384;

/// A sign-in that waited longer is dropped at its turn: a Salt minion's default
/// `auth_timeout` (5 s), after which it has sent its request again.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(5);

/// The sign-in lane of the request server with `worker_threads` workers: sign-ins run on
/// all but one (on one, when there is only one).
pub(crate) fn deferrable(worker_threads: u32) -> Deferrable {
    Deferrable {
        matches: Arc::new(looks_like_signin),
        capacity: CAPACITY,
        max_running: (worker_threads.max(2) - 1) as usize,
        max_wait: MAX_WAIT,
    }
}

/// Whether an envelope carries `"enc": "clear"` and `"cmd": "_auth"` in its first bytes,
/// where Salt's minions put them (a miss only loses the priority: it is served as any
/// other request).
pub(crate) fn looks_like_signin(body: &[u8]) -> bool {
    const CMD_AUTH: &[u8] = b"\xa3cmd\xa5_auth";
    super::looks_clear(body)
        && body[..body.len().min(160)]
            .windows(CMD_AUTH.len())
            .any(|w| w == CMD_AUTH)
}

/// Count the dropped sign-ins in `salt_master_signins_total{kind="dropped_full"|
/// "dropped_stale"}` and log a WARNING at most every 10 s saying why. Ends with `stop`.
pub(crate) async fn watch_dropped(
    shared: Arc<Shared>,
    dropped: Dropped,
    stop: tokio_util::sync::CancellationToken,
) {
    let (mut full, mut stale) = (0u64, 0u64);
    super::watch_every_second(stop, |secs| {
        let (f, s) = (dropped.full(), dropped.stale());
        let (new_full, new_stale) = (f.saturating_sub(full), s.saturating_sub(stale));
        (full, stale) = (f, s);
        if new_full + new_stale == 0 {
            return;
        }
        shared.metrics.signins_dropped("dropped_full", new_full);
        shared.metrics.signins_dropped("dropped_stale", new_stale);
        if shared.log_limit.allow("signin-dropped") {
            tracing::warn!(
                "Sign-in storm: {} sign-ins dropped unanswered in the last {secs:.1} s ({new_stale} \
                 waited over {} s, {new_full} beyond the {CAPACITY} waiting); the minions sign in \
                 again after their auth_timeout. Minions already signed in are served first.",
                new_full + new_stale,
                MAX_WAIT.as_secs()
            );
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use rmpv::Value;

    fn env(enc: &str, cmd: &str) -> Vec<u8> {
        salt_proto::encode(&Value::Map(vec![
            ("enc".into(), enc.into()),
            (
                "load".into(),
                Value::Map(vec![
                    ("cmd".into(), cmd.into()),
                    ("id".into(), "minion-with-a-long-id-0001".into()),
                ]),
            ),
            ("version".into(), 3.into()),
        ]))
    }

    #[test]
    fn only_clear_auth_requests_are_sign_ins() {
        assert!(super::looks_like_signin(&env("clear", "_auth")));
        assert!(!super::looks_like_signin(&env("clear", "publish")));
        assert!(!super::looks_like_signin(&env("aes", "_auth")));
    }
}
