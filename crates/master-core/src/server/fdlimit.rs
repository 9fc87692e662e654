//! The descriptor ceiling: Salt's `max_open_files` at start (raise the soft limit toward it,
//! up to the hard limit), Salt's check of the limit against the accepted keys, and the
//! admission budget that answers a new minion "full" before the descriptors the key store,
//! the job cache and the file server need are gone to sockets.
//!
//! libzmq accepts connections on its own threads and has no per-listener cap, so the budget
//! is kept where a connection starts to cost: a signed-in minion holds its request
//! connection and opens its publish connection. A new minion is admitted only while the
//! descriptors open, plus one per minion admitted since the last count, stay under the soft
//! limit less a reserve for files. Minions already signed in are always served.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// `__set_max_open_files` of Salt's `Master`: raise the soft `RLIMIT_NOFILE` to
/// `max_open_files`, capped at the hard limit, with Salt's log lines.
pub(crate) fn raise_max_open_files(max_open_files: u32) {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return;
    };
    // Salt: an unlimited hard limit is treated as the soft one (macOS refuses more).
    let hard = if hard == libc::RLIM_INFINITY {
        soft
    } else {
        hard
    };
    tracing::info!("Current values for max open files soft/hard setting: {soft}/{hard}");
    let mut want = u64::from(max_open_files);
    if want > hard {
        tracing::info!(
            "The value for the 'max_open_files' setting, {want}, is higher than the highest \
             value the user running salt is allowed to set ({hard}). Defaulting to {hard}."
        );
        want = hard;
    }
    if soft < want {
        tracing::info!("Raising max open files value to {want}");
        match setrlimit(Resource::RLIMIT_NOFILE, want, hard)
            .and_then(|()| getrlimit(Resource::RLIMIT_NOFILE))
        {
            Ok((s, h)) => {
                tracing::info!("New values for max open files soft/hard values: {s}/{h}")
            }
            Err(_) => tracing::error!(
                critical = true,
                "Failed to raise max open files setting to {want}. If this value is too low, \
                 the salt-master will most likely fail to run properly."
            ),
        }
    }
}

/// `salt.utils.verify.check_max_open_files`: log (at Salt's level) when the accepted keys
/// need more descriptors than a quarter of the soft limit.
pub(crate) fn check_max_open_files(max_open_files: u32, accepted: usize) {
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return;
    };
    tracing::debug!("This salt-master instance has accepted {accepted} minion keys.");
    let n = accepted as u64;
    if n * 4 <= soft {
        return;
    }
    let mut msg = format!(
        "The number of accepted minion keys({n}) should be lower than 1/4 of the max open \
         files soft setting({soft}). "
    );
    if n >= soft {
        msg.push_str("salt-master will crash pretty soon! ");
    }
    let want = u64::from(max_open_files);
    if want < hard {
        msg.push_str(&format!(
            "According to the system's hard limit, there's still a margin of {} to raise the \
             salt's max_open_files setting. ",
            hard - want
        ));
    }
    msg.push_str("Please consider raising this value.");
    if n * 2 >= soft {
        tracing::error!(critical = true, "{msg}");
    } else if n * 3 >= soft {
        tracing::warn!("{msg}");
    } else {
        tracing::info!("{msg}");
    }
}

/// How often the open descriptors are counted again (`/proc/self/fd`).
const RECOUNT: Duration = Duration::from_millis(100);

/// The admission budget of new minions against the soft descriptor limit.
#[derive(Debug, Default)]
pub(crate) struct FdCeiling {
    /// Last count of open descriptors, when it was taken, and minions admitted since.
    count: Mutex<Option<(Instant, u64, u64)>>,
}

/// A refusal at the ceiling: what was open and what the limit is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AtCeiling {
    /// Descriptors open (counted plus admitted since the count).
    pub(crate) open: u64,
    /// The soft `RLIMIT_NOFILE`.
    pub(crate) soft: u64,
    /// Descriptors kept for files.
    pub(crate) reserve: u64,
}

impl FdCeiling {
    /// Descriptors kept for the key store, the job cache, the file server and transient
    /// connections: a tenth of the soft limit, at least 64, at most 1024.
    pub(crate) fn reserve(soft: u64) -> u64 {
        (soft / 10).clamp(64, 1024)
    }

    /// Admit one new minion (it will hold a publish connection), or say the ceiling is met.
    pub(crate) fn admit(&self) -> Result<(), AtCeiling> {
        let Ok((soft, _)) = getrlimit(Resource::RLIMIT_NOFILE) else {
            return Ok(());
        };
        let reserve = Self::reserve(soft);
        let mut guard = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let (open, since) = match *guard {
            Some((at, open, since)) if now.duration_since(at) < RECOUNT => (open, since),
            _ => {
                // Reading the directory takes a descriptor: failing to is the ceiling.
                let open = count_open().unwrap_or(soft);
                *guard = Some((now, open, 0));
                (open, 0)
            }
        };
        let open = open + since;
        if open + 1 + reserve > soft {
            return Err(AtCeiling {
                open,
                soft,
                reserve,
            });
        }
        if let Some(g) = guard.as_mut() {
            g.2 += 1;
        }
        Ok(())
    }
}

/// The descriptors the patched libzmq keeps free of accepted connections (its
/// `tcp_listener_t::in_descriptor_reserve`): a twentieth of the soft limit, 32 to 512.
fn socket_reserve(soft: u64) -> u64 {
    (soft / 20).clamp(32, 512)
}

/// Watch the connections the publish and request ports refused at the descriptor limit
/// (the patched libzmq closes a connection accepted into the last twentieth of the soft
/// limit, or fails to accept one, and stops accepting for 100 ms: no spin): count them in
/// `salt_master_refused_connections_total{kind=port}` and log a WARNING at most every 10 s
/// naming the limit. Ends with `stop`.
pub(crate) async fn watch_refusals(
    shared: std::sync::Arc<crate::shared::Shared>,
    ports: [(&'static str, salt_transport::RefusedConnections); 2],
    stop: tokio_util::sync::CancellationToken,
) {
    let mut seen = [0u64; 2];
    super::watch_every_second(stop, |secs| {
        for ((port, refused), seen) in ports.iter().zip(seen.iter_mut()) {
            let now = refused.count();
            let new = now.saturating_sub(*seen);
            *seen = now;
            if new == 0 {
                continue;
            }
            shared.metrics.refused(port, new);
            if shared.log_limit.allow("fd-refused-connections") {
                let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(0, |(s, _)| s);
                tracing::warn!(
                    "Too many open files: the {port} port refused {new} new connections in the \
                     last {secs:.1} s at the max open files soft setting ({soft}, max_open_files; \
                     the last {} descriptors are kept for the key store, job cache and files). \
                     Connected minions are still served; the refused ones reconnect later.",
                    socket_reserve(soft)
                );
            }
        }
    })
    .await;
}

/// Descriptors open in this process (Linux's `/proc/self/fd`).
fn count_open() -> Option<u64> {
    let dir = std::fs::read_dir("/proc/self/fd").ok()?;
    // Less the one the listing itself holds.
    Some((dir.count() as u64).saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_is_bounded() {
        assert_eq!(FdCeiling::reserve(300), 64);
        assert_eq!(FdCeiling::reserve(20_000), 1024);
        assert_eq!(FdCeiling::reserve(5_000), 500);
    }

    #[test]
    fn counts_this_process() {
        let n = count_open().expect("/proc/self/fd");
        assert!(n >= 3, "{n}");
    }
}
